import math

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import core.nn
from core.numerics.formats import get_format, make_format
from core.plots import close
from core.unit_scaling.analysis import TensorScale, tensor_scales
from core.unit_scaling.tracking import KINDS, format_range, out_of_range, plot_scale_tracks


@pytest.mark.parametrize(
    "name, dtype",
    [("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2), ("fp16", np.float16)],
)
def test_format_range_matches_ml_dtypes(name, dtype):
    # the project's "e4m3" is OCP E4M3FN (finite, max 448): make sure the reference dtype is the matching one
    assert get_format(name).ml_dtype == np.dtype(dtype)
    info = ml_dtypes.finfo(dtype)
    ranges = format_range(name)
    assert ranges["normal"] == (math.log2(float(info.tiny)), math.log2(float(info.max)))
    assert ranges["subnormal"] == (math.log2(float(info.smallest_subnormal)), math.log2(float(info.tiny)))
    assert format_range(get_format(name)) == ranges


def test_format_range_without_subnormals_and_bad_name():
    assert format_range(make_format(4, 3, special="fn", subnormals=False))["subnormal"] is None
    with pytest.raises(ValueError, match="unknown number format 'e9m9'"):
        format_range("e9m9")


def _ts(name, kind, std):
    return TensorScale(name, kind, std, (2, 2))


def test_out_of_range_bounds_zero_and_kinds():
    f = get_format("e4m3")
    lo, hi = f.smallest_normal, f.max
    tracks = {
        10: [
            _ts("a", "activation", lo * 1.01),  # in
            _ts("b", "activation", lo * 0.99),  # below
            _ts("c", "weight grad", 0.0),  # zero counts as below
            _ts("d", "weight", hi),  # the max itself is representable
            _ts("e", "activation grad", hi * 1.01),  # above
            _ts("f", "weight", float("nan")),  # a diverged step
        ],
        0: [_ts("a", "activation", lo)],  # the smallest normal itself is in range
    }
    got = out_of_range(tracks, "e4m3")
    assert [(s, r.name) for s, r in got] == [(10, "b"), (10, "c"), (10, "e"), (10, "f")]
    assert [r.name for _, r in out_of_range(tracks, f, kinds=["activation"])] == ["b"]
    assert [r.name for _, r in out_of_range(tracks, "e4m3", kinds="weight grad")] == ["c"]
    # e5m2's wider range takes in the tensors just past E4M3's max and just below its smallest normal
    assert [r.name for _, r in out_of_range(tracks, "e5m2")] == ["c", "f"]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="non-empty"):
        out_of_range({}, "e4m3")
    with pytest.raises(ValueError, match="'gradient'"):
        out_of_range({0: [_ts("a", "weight", 1.0)]}, "e4m3", kinds=["gradient"])
    with pytest.raises(ValueError, match="unknown number format 'fp7'"):
        out_of_range({0: [_ts("a", "weight", 1.0)]}, "fp7")
    with pytest.raises(ValueError, match="non-empty"):
        plot_scale_tracks({})
    with pytest.raises(ValueError, match="'bias'"):
        plot_scale_tracks({0: [_ts("a", "weight", 1.0)]}, kinds=("weight", "bias"))
    with pytest.raises(ValueError, match="steps must be integers"):
        plot_scale_tracks({"0": [_ts("a", "weight", 1.0)]})


def _check_figure(fig, kinds, tmp_path):
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == list(kinds)
    assert len(fig.axes) == len(kinds) + 1  # and the steps' colour bar
    path = tmp_path / "tracks.png"
    fig.savefig(path)
    assert path.stat().st_size > 1000
    close(fig)


def test_plot_scale_tracks_small(tmp_path):
    tracks = {s: [_ts(n, k, 2.0 ** (i - s)) for i, n in enumerate(["x", "y", "z"]) for k in KINDS] for s in (0, 5, 50)}
    tracks[50].append(_ts("w", "weight", 0.0))  # no log2: left off the plot, not an error
    fig = plot_scale_tracks(tracks, formats=("e4m3", "e5m2", "fp16"))
    ticks = [t.get_text() for t in fig.axes[KINDS.index("weight")].get_yticklabels()]
    assert ticks == ["x", "y", "z", "w"]
    _check_figure(fig, KINDS, tmp_path)
    fig = plot_scale_tracks(tracks, formats="e4m3", kinds=("weight",), lines=False)
    _check_figure(fig, ("weight",), tmp_path)


@pytest.mark.slow  # ~21 s (2026-11-28): a training; make test-all
def test_tracks_a_unit_scaled_transformer_over_training(tmp_path):
    model = core.nn.TransformerLM(
        vocab=16, d_model=16, depth=1, heads=2, seq_len=8, parametrization=core.nn.UnitScaled()
    )
    ids = jax.random.randint(jax.random.key(0), (4, 8), 0, 16)
    labels = jnp.roll(ids, -1, axis=1)
    variables = model.init(jax.random.key(1), ids)

    def loss_fn(m):
        return m.loss(ids, labels)

    # not jitted: three tiny steps run faster op by op than one compilation
    grad = jax.grad(lambda v: model.apply(v, ids, labels, method=type(model).loss))
    tracks = {0: tensor_scales(model, variables, loss_fn)}
    for _ in range(3):
        variables = jax.tree_util.tree_map(lambda w, g: w - 0.5 * g, variables, grad(variables))
    tracks[3] = tensor_scales(model, variables, loss_fn)

    assert [(r.name, r.kind) for r in tracks[0]] == [(r.name, r.kind) for r in tracks[3]]
    assert {r.kind for r in tracks[0]} == set(KINDS)
    weights = {r.name: r.std for r in tracks[0] if r.kind == "weight"}
    assert any(r.std != weights[r.name] for r in tracks[3] if r.kind == "weight")  # training moved them
    # unit scaling keeps every activation well inside E5M2's normal range
    assert out_of_range(tracks, "e5m2", kinds=("activation",)) == []
    # a layer norm's scale starts as all ones: a std of 0, which out_of_range reports as below the range
    zero = {r.name for s, r in out_of_range(tracks, "e5m2", kinds=("weight",)) if s == 0}
    assert "block_0/norm_attention/scale" in zero
    assert zero == {r.name for r in tracks[0] if r.kind == "weight" and r.std == 0}
    _check_figure(plot_scale_tracks(tracks), KINDS, tmp_path)
