"""MX block-scaled casts against a numpy + ml_dtypes reference written here from the OCP MX v1.0 conversion rule
(shared_exp = floor(log2 amax) - emax_elem, clipped to E8M0's [-127, 127]; elements rounded and clamped; NaN/Inf
make the block's scale NaN), and gfloat for stochastic rounding with the same random bits."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest
from gfloat import RoundMode, round_ndarray

from core.numerics import fast_random_bits, stochastic_rounding
from core.numerics.mx import (
    MX_FORMATS,
    get_mx_format,
    mx_decode,
    mx_encode,
    mx_quantise,
    mx_shared_exponents,
)
from tests.core.numerics.reference import gfloat_info, same_bits

# the element types as ml_dtypes has them, with each one's emax and max from its finfo (not from our formats)
ELEMENTS = {
    "mxfp8_e4m3": ml_dtypes.float8_e4m3fn,
    "mxfp8_e5m2": ml_dtypes.float8_e5m2,
    "mxfp6_e2m3": ml_dtypes.float6_e2m3fn,
    "mxfp6_e3m2": ml_dtypes.float6_e3m2fn,
    "mxfp4_e2m1": ml_dtypes.float4_e2m1fn,
    "mxint8": None,
}


def element_emax_max(name: str) -> tuple[int, float]:
    dtype = ELEMENTS[name]
    if dtype is None:
        return 0, 127 / 64
    info = ml_dtypes.finfo(dtype)
    return int(np.frexp(float(info.max))[1] - 1), float(info.max)


def blocks_of(x: np.ndarray, axis: int, k: int) -> tuple[np.ndarray, tuple]:
    x = np.moveaxis(x, axis, -1)
    moved = x.shape
    pad = -moved[-1] % k
    x = np.concatenate([x, np.zeros((*moved[:-1], pad), x.dtype)], -1) if pad else x
    return x.reshape(*moved[:-1], -1, k), moved


def unblock(b: np.ndarray, moved: tuple, axis: int) -> np.ndarray:
    return np.moveaxis(b.reshape(*moved[:-1], -1)[..., : moved[-1]], -1, axis)


def reference(
    x: np.ndarray, name: str, axis: int = -1, k: int = 32, srbits: np.ndarray | None = None, ceil: bool = False
):
    """(values, shared exponents) by the specification's rule, in float64 numpy and ml_dtypes (`ceil`: the scale
    rounded up instead, so that no block max exceeds the element's max)."""
    emax, top = element_emax_max(name)
    b, moved = blocks_of(x.astype(np.float64), axis, k)
    amax = np.abs(b).max(-1)
    bad = ~np.isfinite(amax)
    with np.errstate(all="ignore"):
        lead = np.frexp(np.where(bad | (amax == 0), 1.0, amax))[1] - 1  # floor(log2 amax), exact
    shared = lead - emax
    if ceil:
        shared = shared + (np.ldexp(np.where(bad, 0.0, amax), -shared) > top)
    shared = np.clip(shared, -127, 127)
    shared = np.where(amax == 0, -127, shared)
    scaled = np.ldexp(np.where(bad[..., None], 0.0, b), -shared[..., None])
    if ELEMENTS[name] is None:
        units = scaled * 64
        if srbits is None:
            q = np.rint(units)
        else:
            r, _ = blocks_of(srbits, axis, k)
            whole = np.floor(np.abs(units))
            threshold = np.floor((np.abs(units) - whole) * 2.0**32)
            q = np.sign(units) * (whole + (threshold + r.astype(np.float64) >= 2.0**32))
        elements = np.clip(q, -127, 127) / 64 + 0.0  # an integer has no -0
    elif srbits is None:
        elements = np.clip(scaled, -top, top).astype(np.float32).astype(ELEMENTS[name]).astype(np.float64)
    else:
        r, _ = blocks_of(srbits, axis, k)
        fmt = get_mx_format(name).element
        elements = np.asarray(
            round_ndarray(gfloat_info(fmt), np.clip(scaled, -top, top), RoundMode.Stochastic, True, r, 32), np.float64
        )
    values = np.where(bad[..., None], np.nan, np.ldexp(elements, shared[..., None]))
    with np.errstate(over="ignore"):  # "ceil" may round a block at float32's max beyond it: Inf, as ours
        return unblock(values, moved, axis).astype(np.float32), np.where(bad, 128, shared)


def held_out(seed: int, rows: int = 512, k: int = 32) -> np.ndarray:
    """Blocks whose scales sweep float32's exponents (subnormal blocks included), with zeros, ties and signed zeros."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, k)) * np.exp2(rng.integers(-150, 124, (rows, 1)))
    x[rng.random((rows, k)) < 0.05] = 0.0
    x[rng.random((rows, k)) < 0.02] *= -0.0
    ties = rng.integers(0, rows, rows // 8)  # element values halfway between grid points (ties go to even)
    x[ties] = np.round(rng.uniform(-8, 8, (len(ties), k)) * 16) / 16 + 1 / 32
    x = x.astype(np.float32)
    bits = rng.integers(0, 2**32, (rows // 4, k), dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([x, np.where(np.isfinite(bits), bits, 1.0).astype(np.float32)])


@pytest.mark.parametrize("name", list(MX_FORMATS))
def test_mx_quantise_matches_the_reference_bit_for_bit(name):
    x = held_out(seed=101)
    ours = np.asarray(mx_quantise(x, name))
    ref, shared = reference(x, name)
    mismatches = int((~same_bits(ours, ref)).sum())
    assert mismatches == 0, f"{name}: {mismatches} of {x.size} values differ"
    np.testing.assert_array_equal(np.asarray(mx_shared_exponents(x, name)), shared)


@pytest.mark.parametrize("name", list(MX_FORMATS))
def test_blocks_along_any_axis_with_padding(name):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((45, 3, 70)) * np.exp2(rng.integers(-20, 20, (45, 3, 1)))).astype(np.float32)
    for axis, k in ((0, 32), (2, 32), (-1, 16), (1, 2)):
        ours = np.asarray(mx_quantise(x, get_mx_format(name, block_size=k), axis=axis))
        assert same_bits(ours, reference(x, name, axis, k)[0]).all(), (axis, k)


@pytest.mark.parametrize("name", list(MX_FORMATS))
def test_stochastic_rounding_matches_gfloat_with_the_same_bits(name):
    x = held_out(seed=202, rows=256)
    bits = np.asarray(fast_random_bits(jax.random.key(3), x.shape))
    ours = np.asarray(mx_quantise(x, name, rounding="stochastic", random_bits=bits))
    assert same_bits(ours, reference(x, name, srbits=bits)[0]).all()
    with stochastic_rounding(jax.random.key(3)):
        blocked = np.asarray(mx_quantise(x, name, rounding="stochastic"))
    assert not same_bits(blocked, np.asarray(mx_quantise(x, name))).all()  # it does round some values up


@pytest.mark.parametrize("name", ["mxfp8_e4m3", "mxfp4_e2m1", "mxint8"])
def test_the_scale_rounded_up_never_clamps(name):
    x = held_out(seed=404, rows=256)
    fmt = get_mx_format(name, scale_rounding="ceil")
    ours = np.asarray(mx_quantise(x, fmt))
    ref, shared = reference(x, name, ceil=True)
    assert same_bits(ours, ref).all()
    np.testing.assert_array_equal(np.asarray(mx_shared_exponents(x, fmt)), shared)
    floor_shared = reference(x, name)[1]
    assert ((shared - floor_shared) == 1).sum() >= 5 and set(np.unique(shared - floor_shared)) <= {0, 1}
    with pytest.raises(ValueError, match="scale_rounding must be one of floor, ceil"):
        get_mx_format(name, scale_rounding="up")


def test_stochastic_rounding_is_unbiased_within_a_block():
    x = np.full((20000, 32), 0.0, np.float32)
    x[:, 0] = 4.0  # sets the scale: E2M1's grid step at 0.7 is 0.5 after scaling by 1
    x[:, 1] = 0.7
    q = np.asarray(mx_quantise(x, "mxfp4_e2m1", rounding="stochastic", key=jax.random.key(0)))
    assert set(np.unique(q[:, 1])) == {0.5, 1.0}
    assert abs(q[:, 1].mean() - 0.7) < 4 * 0.25 / np.sqrt(len(q))  # sd of a 0.5/1.0 draw with p=0.4 is ~0.245


# ---------------------------------------------------------------------------------------------- the scale rule


@pytest.mark.parametrize("name", list(MX_FORMATS))
def test_scale_rule_edge_cases(name):
    fmt = get_mx_format(name)
    emax, top = element_emax_max(name)
    z = np.zeros(32, np.float32)
    cases = {
        "zeros": z,
        "signed zeros": np.where(np.arange(32) % 2, -0.0, 0.0).astype(np.float32),
        "nan": np.r_[np.float32(np.nan), np.ones(31, np.float32)],
        "inf": np.r_[np.ones(31, np.float32), np.float32(-np.inf)],
        "power of two max": np.r_[np.float32(2.0**10), np.full(31, 3.0, np.float32)],
        "just below a power of two": np.r_[np.nextafter(np.float32(2.0**10), np.float32(0)), z[1:]],
        "float32 max": np.r_[np.float32(np.finfo(np.float32).max), np.float32(1e30), z[2:]],
        "float32 subnormals": np.r_[np.float32(2.0**-149), np.float32(-(2.0**-140)), z[2:]],
        "smallest normal": np.r_[np.float32(2.0**-126), z[1:]],
    }
    for what, block in cases.items():
        ours = np.asarray(mx_quantise(block, name))
        ref, shared = reference(block, name)
        assert same_bits(ours, ref).all(), what
        codes, scale = mx_encode(block, name)
        assert int(np.asarray(scale)[0]) == (255 if shared[0] == 128 else shared[0] + 127), what
        assert same_bits(np.asarray(mx_decode(codes, scale, name)), ours).all(), what
    # the rule itself, stated: zeros take the smallest scale; NaN or Inf anywhere makes every element NaN
    assert int(np.asarray(mx_shared_exponents(z, fmt))[0]) == -127
    assert np.isnan(np.asarray(mx_quantise(cases["inf"], name))).all()
    negative_zeros = np.signbit(np.asarray(mx_quantise(cases["signed zeros"], name))).sum()
    assert negative_zeros == (0 if name == "mxint8" else 16)  # two's complement has no -0
    # the largest element lands in the element's top binade: 2^10 takes shared exponent 10 - emax
    assert int(np.asarray(mx_shared_exponents(cases["power of two max"], name))[0]) == 10 - emax
    # float32's largest value: shared exponent 127 - emax, within E8M0's range, and the element clamps to max
    big = np.asarray(mx_quantise(cases["float32 max"], name))[0]
    assert big == np.float32(min(np.ldexp(top, 127 - emax), np.finfo(np.float32).max))


@pytest.mark.parametrize("name", ["mxfp8_e4m3", "mxint8"])
def test_a_nan_block_is_nan_in_a_tensor_of_any_size(name):
    """Many blocks at once: XLA's CPU max-reduction of 4,096 or more float32 values drops NaN (jaxlib 0.10.2), which
    once left a NaN block with a finite scale and its NaN element a garbage number."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 64)).astype(np.float32)  # 16,384 values, 512 blocks of 32
    x[17, 40], x[200, 3] = np.nan, np.inf
    ours = np.asarray(mx_quantise(x, name))
    ref = np.concatenate([reference(row, name)[0] for row in x])
    assert same_bits(ours.reshape(-1), ref.reshape(-1)).all()
    nan_blocks = np.isnan(ours).reshape(256, 2, 32).all(-1)
    assert {tuple(b) for b in np.argwhere(nan_blocks)} == {(17, 1), (200, 0)} and np.isnan(ours).sum() == 64
    assert list(np.flatnonzero(np.asarray(mx_encode(x, name)[1]) == 255)) == [17 * 2 + 1, 200 * 2]


def test_the_largest_element_is_clamped_as_the_specification_says():
    # E4M3: 480 is in [256, 512) with scale 1, above E4M3's max 448: clamped, not rounded to 512 or NaN
    assert float(mx_quantise(np.r_[np.float32(480), np.zeros(31, np.float32)], "mxfp8_e4m3")[0]) == 448.0
    # E2M1: 7.9 with scale 1 (emax 2) clamps to 6
    assert float(mx_quantise(np.r_[np.float32(7.9), np.zeros(31, np.float32)], "mxfp4_e2m1")[0]) == 6.0


@pytest.mark.parametrize("name", list(MX_FORMATS))
def test_codes_match_ml_dtypes_and_round_trip(name):
    x = held_out(seed=303, rows=128)
    codes, scales = (np.asarray(a) for a in mx_encode(x, name))
    ref, shared = reference(x, name)
    assert codes.dtype == np.uint8 and scales.dtype == np.uint8
    expected_scales = np.where(shared == 128, 255, shared + 127).astype(np.uint8)
    np.testing.assert_array_equal(scales, expected_scales)
    # scales as ml_dtypes' E8M0 reads them
    values = np.asarray(scales).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    finite = scales != 255
    np.testing.assert_array_equal(values[finite], np.exp2(shared[finite].astype(np.float64)))
    elements = np.asarray(ref, np.float64).reshape(-1, 32) / np.where(finite, values, 1.0)
    if ELEMENTS[name] is None:
        expected = np.round(elements * 64).astype(np.int8).view(np.uint8)
    else:
        expected = elements.astype(ELEMENTS[name]).view(np.uint8)
    keep = np.broadcast_to(finite, expected.shape)
    np.testing.assert_array_equal(codes.reshape(expected.shape)[keep], expected[keep])
    assert same_bits(np.asarray(mx_decode(codes, scales, name)), ref).all()


def test_bad_arguments_are_refused_with_what_is_allowed():
    x = np.ones((4, 32), np.float32)
    with pytest.raises(ValueError, match=r"unknown MX format 'mxfp5'.*mxfp8_e4m3"):
        mx_quantise(x, "mxfp5")
    with pytest.raises(ValueError, match="axis 2 is not an axis"):
        mx_quantise(x, "mxfp8", axis=2)
    with pytest.raises(ValueError, match="block_size must be an integer >= 1"):
        get_mx_format("mxfp4", block_size=0)
    with pytest.raises(ValueError, match="rounding must be one of"):
        mx_quantise(x, "mxfp8", rounding="down")
    with pytest.raises(ValueError, match="stochastic_rounding"):
        mx_quantise(x, "mxfp8", rounding="stochastic")
    with pytest.raises(TypeError, match="floating-point"):
        mx_quantise(np.ones((2, 32), np.int32), "mxfp8")


# ---------------------------------------------------------------------------------------------- the gradient


def gradient_cases(seed: int) -> np.ndarray:
    """held_out's blocks with a NaN block, an Inf block and a block whose max clamps (510: E4M3 448, E2M1 384, INT8
    508), 2,560 elements in all: under 4,096, since jaxlib 0.10.2's CPU max-reduction of 4,096 or more float32
    elements (its YNNPACK fusion) drops NaN, and a NaN block of a larger array comes out finite."""
    x = held_out(seed, rows=64)
    x[0, 3], x[1, 30] = np.nan, -np.inf
    x[2] = np.r_[np.float32(510), np.linspace(-3, 3, 31, dtype=np.float32)]
    return x


def weighted_sum_grad(x, w, **kwargs):
    """d/dx sum(w * mx_quantise(x, **kwargs)), and the same under jit."""

    def loss(x):
        return (w * mx_quantise(x, **kwargs)).sum()

    return np.asarray(jax.grad(loss)(x)), np.asarray(jax.jit(jax.grad(loss))(x))


@pytest.mark.parametrize("name", ["mxfp8_e4m3", "mxfp4_e2m1", "mxint8"])
def test_the_gradient_is_zero_by_default_and_the_identity_straight_through(name):
    x = gradient_cases(seed=505)
    w = np.random.default_rng(5).standard_normal(x.shape).astype(np.float32)
    ref = reference(x, name)[0]
    assert np.isnan(ref[:2]).all() and ref[2, 0] == {"mxfp8_e4m3": 448, "mxfp4_e2m1": 384, "mxint8": 508}[name]
    # the default: rounding's derivative, zero everywhere (the documented behaviour, not an error)
    for grad in weighted_sum_grad(x, w, fmt=name):
        np.testing.assert_array_equal(grad, np.zeros_like(x))
    # straight through: the same values bit for bit, and the cotangent w passed to x unchanged, at clamped, NaN and
    # underflowing elements too
    eager = np.asarray(mx_quantise(x, name, straight_through=True))
    jitted = np.asarray(jax.jit(lambda x: mx_quantise(x, name, straight_through=True))(x))
    assert same_bits(eager, ref).all() and same_bits(jitted, ref).all()
    for grad in weighted_sum_grad(x, w, fmt=name, straight_through=True):
        np.testing.assert_array_equal(grad, w)
    # along another axis, with padding, under vmap, and in forward mode
    x3 = x[:10].reshape(2, 5, 32)  # blocks of 5 padded to 32: 2,048 elements
    along = np.asarray(mx_quantise(x3, name, axis=1, straight_through=True))
    assert same_bits(along, reference(x3, name, axis=1)[0]).all()
    per_row = jax.vmap(jax.grad(lambda r, v: (v * mx_quantise(r, name, straight_through=True)).sum()))
    np.testing.assert_array_equal(np.asarray(per_row(x[:40], w[:40])), w[:40])
    value, tangent = jax.jvp(lambda x: mx_quantise(x, name, straight_through=True), (x,), (w,))
    assert same_bits(np.asarray(value), ref).all()
    np.testing.assert_array_equal(np.asarray(tangent), w)


@pytest.mark.parametrize("name", ["mxfp6_e3m2", "mxint8"])
def test_straight_through_with_stochastic_rounding(name):
    x = gradient_cases(seed=606)
    w = np.random.default_rng(6).standard_normal(x.shape).astype(np.float32)
    bits = np.asarray(fast_random_bits(jax.random.key(4), x.shape))
    ref = reference(x, name, srbits=bits)[0]
    ours = np.asarray(mx_quantise(x, name, rounding="stochastic", random_bits=bits, straight_through=True))
    assert same_bits(ours, ref).all()
    keyed = {"rounding": "stochastic", "key": jax.random.key(4), "straight_through": True}
    assert same_bits(
        np.asarray(mx_quantise(x, name, **keyed)),
        np.asarray(mx_quantise(x, name, **{**keyed, "straight_through": False})),
    ).all()
    for grad in weighted_sum_grad(x, w, fmt=name, rounding="stochastic", random_bits=bits, straight_through=True):
        np.testing.assert_array_equal(grad, w)
    for grad in weighted_sum_grad(x, w, fmt=name, **keyed):
        np.testing.assert_array_equal(grad, w)
    with stochastic_rounding(jax.random.key(4)):  # the enclosing block's bits, as for the default path
        blocked = np.asarray(mx_quantise(x, name, rounding="stochastic", straight_through=True))
    with stochastic_rounding(jax.random.key(4)):
        assert same_bits(blocked, np.asarray(mx_quantise(x, name, rounding="stochastic"))).all()
    with pytest.raises(TypeError, match="straight_through must be True or False, got 'yes'"):
        mx_quantise(x, name, straight_through="yes")


# ---------------------------------------------------------------------------------------------- the MX matmul


@pytest.mark.parametrize("w_format", ["mxfp8_e4m3", "mxfp4_e2m1"])
def test_mx_dot_forward_and_backward_against_numpy(w_format):
    from core.numerics.fp8 import FP8Formats, fp8_dot

    rng = np.random.default_rng(11)
    x = (rng.standard_normal((2, 40, 70)) * 3).astype(np.float32)
    w = (rng.standard_normal((70, 50)) * 0.05).astype(np.float32)
    g = (rng.standard_normal((2, 40, 50)) * 1e-3).astype(np.float32)
    formats = FP8Formats.of("e4m3", w_format.split("_")[1], "e5m2")

    def loss(x, w, probe):
        return (fp8_dot(x, w, None, probe, policy="mx", formats=formats) * g).sum()

    y = np.asarray(fp8_dot(x, w, policy="mx", formats=formats))
    dx, dw, stats = jax.grad(loss, argnums=(0, 1, 2))(x, w, np.zeros((3, 2), np.float32))
    q = reference
    np.testing.assert_allclose(
        y, q(x, "mxfp8_e4m3", -1)[0].astype(np.float64) @ q(w, w_format, 0)[0], rtol=1e-5, atol=1e-6
    )
    ref_dx = q(g, "mxfp8_e5m2", -1)[0].astype(np.float64) @ q(w, w_format, 1)[0].T
    np.testing.assert_allclose(np.asarray(dx), ref_dx, rtol=1e-5, atol=1e-9)
    x2, g2 = x.reshape(-1, 70), g.reshape(-1, 50)
    ref_dw = q(x2, "mxfp8_e4m3", 0)[0].astype(np.float64).T @ q(g2, "mxfp8_e5m2", 0)[0]
    np.testing.assert_allclose(np.asarray(dw), ref_dw, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(np.asarray(stats)[:, 0], [np.abs(x).max(), np.abs(w).max(), np.abs(g).max()], rtol=1e-6)
    assert not np.asarray(stats)[:, 1].any()  # no per-tensor biases
    # the quantisation is real: MXFP4 weights move the product more than MXFP8's
    exact = x.astype(np.float64) @ w
    assert np.abs(y - exact).max() > 0


@pytest.mark.slow  # ~30 s (2026-11-28): a training; the MX casts are tested against ml_dtypes in make test
def test_a_transformer_trains_with_mx_linear_layers():
    import jax.numpy as jnp

    from core.nn import Formats, TransformerLM
    from core.nn.fp8 import split_fp8

    ids = jnp.asarray(np.random.default_rng(0).integers(0, 30, (2, 16)))
    for fp8_formats in (None, ("mxfp8_e4m3", "mxfp4_e2m1", "mxfp8_e5m2"), ("mxfp8_e4m3_ceil",) * 3):
        model = TransformerLM(
            vocab=30, d_model=32, depth=1, heads=2, seq_len=16, formats=Formats(fp8="mx", fp8_formats=fp8_formats)
        )
        params, meta, probes = split_fp8(model.init(jax.random.key(0), ids))

        def loss(params, probes, model=model, meta=meta):
            variables = {"params": params, "fp8_meta": meta, "fp8_probe": probes}
            return model.apply(variables, ids, ids, method=model.loss)

        value, (grads, stats) = jax.value_and_grad(loss, argnums=(0, 1))(params, probes)
        assert np.isfinite(float(value))
        assert all(np.isfinite(np.asarray(leaf)).all() for leaf in jax.tree.leaves(grads))
        assert all(float(np.asarray(s)[2, 0]) > 0 for s in jax.tree.leaves(stats))  # gradient amaxes came back
    with pytest.raises(ValueError, match="unknown number format 'e9m9'"):
        Formats(fp8="mx", fp8_formats=("e4m3", "e9m9", "e5m2"))
