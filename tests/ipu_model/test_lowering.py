"""The JAX lowering (ipu_model.lowering): every rule's values against JAX's own on random inputs (bit for bit
where the IPU computes in JAX's order: elementwise maps, views, copies, max/min and arg reductions; within a few
float32 rounding steps of a float64 numpy reference where the summation order differs: sums and matmuls), the
unsupported primitives and dtypes named before anything is built, and the cost-only run's cycles equal to a full
run's."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ipu_model import get_device
from ipu_model.lowering import UnsupportedError, lower, supported_primitives

DEVICE = get_device("mk2", tiles=16)  # small: most tensors span several tiles, and vertices share workers
RNG = np.random.default_rng(0)


def _normal(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _same(fn, *args, device=DEVICE):
    """The lowered function's outputs equal JAX's bit for bit."""
    got = lower(fn, *args, device=device).run(*args)
    want = jax.tree_util.tree_map(np.asarray, fn(*map(jnp.asarray, args)))  # JAX's arrays: never numpy's operators
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


ELEMENTWISE_CASES = {
    "arithmetic": lambda x, y: (x + y, x - y, x * y, x / y, jnp.maximum(x, y), jnp.minimum(x, -y), -x, jnp.abs(y)),
    "transcendental": lambda x, y: (jnp.exp(x), jnp.log(jnp.abs(y)), jnp.tanh(x), jax.nn.sigmoid(y),
                                    jnp.sqrt(jnp.abs(x)), jax.lax.rsqrt(jnp.abs(y) + 1), jnp.sin(x), jnp.cos(y),
                                    jax.lax.erf(x)),
    "powers and rounding": lambda x, y: (x**2, x**3, jnp.floor(y), jnp.ceil(x), jnp.round(y), jnp.sign(x), x % 0.7),
    "comparisons and select": lambda x, y: (x < y, x >= y, x == x, jnp.where(x > y, x, y), jnp.clip(x, -0.5, 0.5),
                                            jnp.logical_and(x > 0, y > 0), ~(x > 0)),
    "casts": lambda x, y: (x.astype(jnp.float16), (10 * x).astype(jnp.int32), (x > 0).astype(jnp.float32),
                           x.astype(jnp.float32)),
    "scalars and size-1 broadcasts": lambda x, y: (x * 2.0, x + y[:1, :], 1.0 - y[:, :1], jnp.float32(3) / (1 + x * x)),
}  # fmt: skip


@pytest.mark.parametrize("case", ELEMENTWISE_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_elementwise_maps_equal_jax_bit_for_bit(case, dtype):
    _same(ELEMENTWISE_CASES[case], _normal(7, 45, dtype=dtype), _normal(7, 45, dtype=dtype) + 2)


def test_integer_maps_equal_jax():
    x, y = RNG.integers(-50, 50, (9, 13)).astype(np.int32), RNG.integers(1, 9, (9, 13)).astype(np.int32)
    _same(lambda a, b: (a + b, a * b, a // b, a % b, jnp.maximum(a, b), a > b, a & b, -a), x, y)


def test_views_and_new_tensors_equal_jax():
    x = _normal(4, 6, 10)

    def fn(a):
        return (
            a.reshape(24, 10), a.transpose(2, 0, 1), a[:, 1:5:2, ::3], jnp.flip(a, axis=(0, 2)), a[None, :, :, 2],
            jnp.broadcast_to(a[:, :1], (4, 6, 10)) + 0, jnp.squeeze(a[:, :1]), jnp.concatenate([a, a[:, :2] * 2], 1),
            jnp.pad(a, ((1, 0), (0, 2), (3, 1)), constant_values=-1.5), jnp.arange(10.0) * a,
            jax.lax.broadcasted_iota(jnp.int32, (3, 5), 1), a, jnp.stack([a[0], a[1] * 3, a[3]], axis=1),
        )  # fmt: skip

    _same(fn, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_max_min_and_arg_reductions_equal_jax(dtype):
    x = _normal(5, 37, 3, dtype=dtype)
    x[1, 4, :] = x[1, 9, :]  # ties: the first index wins, as in JAX
    _same(lambda a: (a.max(axis=1), a.min(axis=(0, 2)), a.max(), jnp.argmax(a, axis=1), jnp.argmin(a, axis=0)), x)


def _close_to_float64(got, x64, dtype, terms):
    """Within the rounding of a sum of `terms` products in float32 (and one final rounding to `dtype`)."""
    eps32, eps = np.finfo(np.float32).eps, np.finfo(dtype).eps
    bound = terms * eps32 * np.abs(x64).max() + eps * np.abs(x64)
    assert np.all(np.abs(got.astype(np.float64) - x64) <= bound + np.finfo(dtype).tiny)


def test_boolean_reductions_equal_jax_and_bitwise_ones_are_named():
    x = _normal(6, 40)
    x[2] = 1.0  # a row where every element passes
    _same(lambda a: (jnp.all(a > -0.5, axis=1), jnp.any(a > 1.5, axis=0), jnp.all(a > -9), jnp.any(a > 9)), x)
    with pytest.raises(UnsupportedError, match="reduce_or over int32"):
        lower(lambda a: jax.lax.reduce_or(a, (0,)), x.astype(np.int32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_sums_equal_float64_within_float32_rounding(dtype):
    x = _normal(6, 300, 5, dtype=dtype)
    got = lower(lambda a: (a.sum(axis=1), a.sum(axis=(0, 2)), a.sum()), x, device=DEVICE).run(x)
    x64 = x.astype(np.float64)
    for g, w, n in zip(got, (x64.sum(1), x64.sum((0, 2)), x64.sum()), (300, 30, x.size), strict=True):
        assert g.dtype == dtype
        _close_to_float64(g, w, dtype, n)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmuls_equal_float64_within_float32_rounding(dtype):
    a, b = _normal(33, 70, dtype=dtype), _normal(70, 19, dtype=dtype)
    q, k = _normal(3, 2, 16, dtype=dtype), _normal(3, 50, 16, dtype=dtype)

    def fn(a, b, q, k):
        return a @ b, jnp.einsum("hqd,hkd->hqk", q, k), a[0] @ b, jnp.einsum("hqd,hkd->qhk", q, k)  # batched: heads

    got = lower(fn, a, b, q, k, device=DEVICE).run(a, b, q, k)
    a64, b64, q64, k64 = (t.astype(np.float64) for t in (a, b, q, k))
    want = (a64 @ b64, np.einsum("hqd,hkd->hqk", q64, k64), a64[0] @ b64, np.einsum("hqd,hkd->qhk", q64, k64))
    for g, w, n in zip(got, want, (70, 16, 70, 16), strict=True):
        assert g.dtype == dtype and g.shape == w.shape
        _close_to_float64(g, w, dtype, n)


def test_nested_calls_are_inlined():
    @jax.jit
    def inner(x):
        return jax.nn.relu(x) * 3  # relu: a custom_jvp

    def fn(x):
        return jax.checkpoint(lambda z: jnp.sin(inner(z)))(x), jax.nn.gelu(x)

    x = _normal(8, 30)
    _same(fn, x)
    # softmax (a custom_jvp) sums its exponentials: within float32 rounding of float64's
    got = lower(lambda a: jax.nn.softmax(a, axis=-1), x, device=DEVICE).run(x)
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    _close_to_float64(got, e / e.sum(axis=-1, keepdims=True), np.float32, 30)


def test_unsupported_primitives_and_dtypes_are_named_before_anything_is_built():
    x = _normal(5, 8)
    with pytest.raises(UnsupportedError, match=r"no rule for .*cumsum \(x1\).*sort \(x1\).*Supported primitives: "):
        lower(lambda a: jnp.sort(a, 0).sum() + jnp.cumsum(a, 0), x)
    with pytest.raises(UnsupportedError, match=r"cumsum \(x1\)"):
        lower(lambda a: jnp.cumsum(a, 0), x)
    with pytest.raises(UnsupportedError, match=r"argument 0 .* is bfloat16"):
        lower(lambda a: a * 2, x.astype(jnp.bfloat16))
    with pytest.raises(UnsupportedError, match="dot_general of int32 and int32"):
        lower(lambda a: a @ a.T, x.astype(np.int32))
    assert {"add", "dot_general", "reduce_max", "argmax", "concatenate"} <= set(supported_primitives())


def test_a_cost_only_run_charges_the_full_runs_cycles_and_host_io_adds_the_transfers():
    x, w = _normal(16, 64), _normal(64, 32)
    fn = lambda a, b: jax.nn.softmax(a @ b, axis=-1).sum(axis=0)
    low = lower(fn, x, w, device=DEVICE)
    low.run(x, w)
    full = low.engine().profile.total_cycles
    costed = lower(fn, jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct(w.shape, w.dtype), device=DEVICE)
    cost = costed.cost()
    assert cost.fits and cost.cycles == full > 0
    assert math.isclose(sum(cost.phases.values()), cost.cycles)
    assert cost.phases["host"] == 0
    with_io = lower(fn, x, w, device=DEVICE, host_io=True)
    np.testing.assert_array_equal(with_io.run(x, w), low.run(x, w))
    assert with_io.cost().phases["host"] > 0


def test_a_function_too_large_for_tile_memory_lowers_and_its_cost_says_so():
    big = jax.ShapeDtypeStruct((2048, 2048), np.float32)  # 16 MiB on 2 tiles of 624 KiB
    cost = lower(lambda a: a * 2, big, device=get_device("mk2", tiles=2)).cost()
    assert not cost.fits and cost.cycles == 0
    assert "tile" in cost.message and "does not fit" in cost.report()


def test_arguments_that_do_not_match_the_lowered_shapes_are_refused():
    low = lower(lambda a: a + 1, _normal(3, 4), device=DEVICE)
    with pytest.raises(ValueError, match=r"argument 0: float32\[4, 3\], the lowered function takes float32\[3, 4\]"):
        low.run(_normal(4, 3))


def _poplibs_binary_half_add(n):  # BinaryOp2D, one region: 5 + ceil(n / 4) x (1 + 2) thread cycles
    return 5 + math.ceil(n / 4) * 3


def _poplibs_unary_float_exp(n):  # UnaryOp2D, one region: 20 + ceil(n / 2) x 6 (exp's float entry: 6 per 2)
    return 20 + math.ceil(n / 2) * 6


@pytest.mark.parametrize(
    "fn, dtype, thread",
    [(lambda a: a + a, np.float16, _poplibs_binary_half_add), (jnp.exp, np.float32, _poplibs_unary_float_exp),
     (lambda a: jnp.where(a > 0, a, a * a), np.float32, lambda n: 5 + 6 + 5 * n)],  # Select: 5 + 6 + 5 n
    ids=["half add", "float exp", "select"],
)  # fmt: skip
def test_an_elementwise_vertex_costs_poplibs_estimate_on_its_worker(fn, dtype, thread):
    """4096 elements on one tile: six worker vertices of 683 (the last 681); the compute set's time is the busiest
    worker's, six tile cycles per thread cycle (poplibs' formulas written out here from its estimators)."""
    low = lower(fn, jax.ShapeDtypeStruct((4096,), dtype), device=get_device("mk2", tiles=1))
    low.cost()
    steps = low.engine().profile.steps.values()
    last = [s for s in steps if s.compute and s.kind == "Execute"][-1]  # the select (or the only map)
    assert last.compute == 6 * thread(683)


@pytest.mark.parametrize(
    "shape, k, dtype",
    [((3, 10), 3, np.float32), ((2, 37), 8, np.float16), ((4, 16), 16, np.float32), ((5, 64), 1, np.float32),
     ((2, 3, 5), 5, np.float32), ((1, 100), 32, np.float16)],
)  # fmt: skip
def test_top_k_equals_jax_values_and_indices_ties_included(shape, k, dtype):
    """poplibs' bitonic network (ipu_model/lowering/topk.py), ordered by key and then the lower index, as JAX."""
    x = _normal(*shape, dtype=dtype)
    x.reshape(-1, shape[-1])[0, :3] = 0.5  # ties: the lower index first
    _same(lambda a: jax.lax.top_k(a, k), x)


@pytest.mark.parametrize("n, k", [(16, 4), (100, 32), (16384, 128), (8, 8), (64, 1)])
def test_top_k_runs_poplibs_number_of_passes(n, k):
    """BitonicTopK.cpp: ceil(log2 n) merge steps, step s (from 0) one pass at the merging distance and min(s, log2 k')
    sort passes; 84 at SparQ's n = 16384, k = 128. Each pass is one rearranging exchange and one compute set."""
    log_n, log_k = math.ceil(math.log2(n)), math.ceil(math.log2(k))
    want = sum(1 + min(s, log_k) for s in range(log_n))
    # the network's structure is that of one row; cost-only keeps this quick at n = 16384
    low = lower(lambda a: jax.lax.top_k(a, k), jax.ShapeDtypeStruct((1, n), np.float32), device=DEVICE)
    names = [p.name for p in low.program.steps]
    passes = [s for s in names if s.startswith(("top_k/sort", "top_k/merge"))]
    assert len([s for s in passes if not s.endswith("/rearrange")]) == want
    assert len([s for s in passes if s.endswith("/rearrange")]) == want


def test_top_k_of_integers_is_named_as_unsupported():
    with pytest.raises(UnsupportedError, match="top_k of int32"):
        lower(lambda a: jax.lax.top_k(a, 2), np.arange(8, dtype=np.int32))


def test_a_batched_matmul_runs_its_products_side_by_side_on_disjoint_tiles():
    """Four heads' products on 16 tiles take the time of one product on 4 tiles (the same plan, one sync and one
    exchange a step for all four), plus the on-tile copies that gather the results, not four times it."""
    q, k = jax.ShapeDtypeStruct((4, 8, 64), np.float32), jax.ShapeDtypeStruct((4, 64, 96), np.float32)
    batched = lower(lambda a, b: jnp.einsum("hmk,hkn->hmn", a, b), q, k, device=DEVICE)
    a1, b1 = jax.ShapeDtypeStruct((8, 64), np.float32), jax.ShapeDtypeStruct((64, 96), np.float32)
    one = lower(lambda a, b: a @ b, a1, b1, device=get_device("mk2", tiles=4))
    gather = [s for s in batched.program.steps if s.name == "dot_general/gather"]
    assert len(gather) == 1
    cost_b, cost_1 = batched.cost(), one.cost()
    copy_cycles = batched.engine().profile.steps[gather[0].id].cycles
    assert cost_b.cycles == pytest.approx(cost_1.cycles + copy_cycles)
    assert cost_b.phases["sync"] == cost_1.phases["sync"]


def _rows_case():
    K = _normal(4, 30, 8)
    i = RNG.integers(0, 30, (4, 5)).astype(np.int32)
    return K, i


@pytest.mark.parametrize("where", ["tile memory", "streaming memory"])
def test_row_gathers_equal_jax(where):
    """take_along_axis along the row axis (SparQ's K[i2] and V[i2]) and x[i] (a table lookup), on chip as poplibs'
    multiSlice and from streaming memory as one remote read of the rows."""
    remote = (0,) if where == "streaming memory" else ()
    K, i = _rows_case()
    fn = lambda k, j: jnp.take_along_axis(k, j[..., None], axis=-2) * 2
    low = lower(fn, K, i, device=DEVICE, remote=remote)
    np.testing.assert_array_equal(low.run(K, i), np.asarray(fn(jnp.asarray(K), jnp.asarray(i))))
    table, j = _normal(50, 7, dtype=np.float16), RNG.integers(0, 50, (9,)).astype(np.int32)
    low = lower(lambda t, j: t[j], table, j, device=DEVICE, remote=remote)
    np.testing.assert_array_equal(low.run(table, j), np.asarray(jnp.asarray(table)[jnp.asarray(j)]))
    if remote:
        streamed = [s for s in low.program.steps if type(s).__name__ == "RemoteRead"]
        assert len(streamed) == 1 and streamed[0].offsets is not None  # only the rows named: no whole-table read


def test_an_on_chip_gather_outside_the_table_fills_or_clips_as_jax():
    K, i = _rows_case()
    i[0, 0], i[2, 3] = 30, -31  # out of range (take_along_axis wraps -1..-30 first, so -31 stays outside)
    _same(lambda k, j: jnp.take_along_axis(k, j[..., None], axis=-2), K, i)  # fill: NaN rows
    _same(lambda k, j: jnp.take_along_axis(k, j[..., None], axis=-2, mode="clip"), K, i)


def test_a_streaming_memory_argument_used_whole_is_streamed_in_once():
    K = _normal(30, 8)
    fn = lambda k, q: jax.nn.softmax(k @ q) + k.sum()
    low = lower(fn, K, K[0], device=DEVICE, remote=(0,))
    np.testing.assert_allclose(low.run(K, K[0]), np.asarray(fn(jnp.asarray(K), jnp.asarray(K[0]))), rtol=1e-5)
    reads = [s for s in low.program.steps if type(s).__name__ == "RemoteRead"]
    assert len(reads) == 1 and reads[0].offsets is None
    cost = low.cost()
    link = DEVICE.streaming_bytes_per_second / DEVICE.clock_hz
    assert cost.phases["stream"] == math.ceil(max(K.nbytes / link, K.nbytes / 8 / DEVICE.exchange_bytes_per_cycle))


def test_a_multislice_vertex_costs_poplibs_estimate():
    """One batch of 12 lookups of rows of 8 float32 on 4 tiles: each tile holds every row of 2 columns and runs one
    MultiSlice vertex, 6 x (30 + ceil(12 / 6) x (19 + ceil(2 / 2) x 2)) = 6 x 72 cycles (getMultiSliceCycleEstimate,
    every offset in range)."""
    low = lower(lambda t, j: t[j], jax.ShapeDtypeStruct((40, 8), np.float32), jax.ShapeDtypeStruct((12,), np.int32),
                device=get_device("mk2", tiles=4))  # fmt: skip
    low.cost()
    steps = [s for s in low.engine().profile.steps.values() if s.kind == "Execute" and s.name.startswith("gather")]
    assert len(steps) == 1 and steps[0].compute == 6 * (30 + 2 * (19 + 2))


def test_gathers_of_whole_windows_equal_jax():
    """Gathers beyond a row gather, as the papers' steps make them: an element picked by two indices (GPS++'s per-graph
    features read at each node, `x[i, j]`), columns picked along the last axis (`take_along_axis(k, j, axis=-1)`) and
    SparQ's columns of K picked per head under batching axes (its exact dimension numbers): each the row gather of
    the operand permuted, two indices made one flat offset on chip. Out-of-range indices fill or clip as JAX does;
    a table in streaming memory that is not read by rows is streamed in whole first."""
    x = _normal(2, 9, 7)
    i = np.stack([RNG.integers(0, 2, (2, 20)), RNG.integers(0, 9, (2, 20))], -1).astype(np.int32)
    _same(lambda x, i: x[i[..., 0], i[..., 1]], x, i)
    i[0, 0, 1], i[1, 3, 0], i[1, 4] = 9, -3, (2, 9)  # outside along one axis, the other, both
    _same(lambda x, i: x.at[i[..., 0], i[..., 1]].get(mode="fill", fill_value=np.nan), x, i)
    _same(lambda x, i: x.at[i[..., 0], i[..., 1]].get(mode="clip"), x, i)
    k, j = _normal(4, 6, 8), RNG.integers(0, 8, (4, 6, 3)).astype(np.int32)
    _same(lambda k, j: jnp.take_along_axis(k, j, axis=-1), k, j)
    # three indices a lookup: 32 int32 a tile puts lookup 10's vector on two tiles (elements 30, 31 | 32)
    y, ijk = _normal(3, 4, 5, 6), RNG.integers(0, 3, (40, 3)).astype(np.int32)
    _same(lambda y, v: y[v[:, 0], v[:, 1], v[:, 2]], y, ijk)
    dn = jax.lax.GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(3,), start_index_map=(3,),
                                        operand_batching_dims=(0, 1), start_indices_batching_dims=(0, 1))  # fmt: skip
    K, r = _normal(2, 3, 10, 4), RNG.integers(0, 4, (2, 3, 5, 1)).astype(np.int32)
    _same(lambda K, r: jax.lax.gather(K, r, dn, (1, 1, 10, 1), mode="fill", fill_value=np.nan), K, r)
    fn = lambda x, i: x[i[..., 0], i[..., 1]] + 1
    i = np.clip(i, 0, (1, 8)).astype(np.int32)
    low = lower(fn, x, i, device=DEVICE, remote=(0,))
    np.testing.assert_array_equal(low.run(x, i), np.asarray(fn(jnp.asarray(x), jnp.asarray(i))))
    reads = [s for s in low.program.steps if type(s).__name__ == "RemoteRead"]
    assert len(reads) == 1 and reads[0].offsets is None  # not its rows: streamed in whole
    flat = [s for s in low.engine().profile.steps.values() if s.kind == "Execute" and "flat_offsets" in s.name]
    assert len(flat) == 1 and flat[0].compute > 0


def test_the_gradients_of_whole_window_gathers_equal_jax():
    """Their transposes, scatter-adds of whole windows (repeated picks summed), and a scatter-add by two indices
    that drops the updates outside, as JAX does."""
    x = _normal(2, 9, 7)
    i = np.stack([RNG.integers(0, 2, (2, 20)), RNG.integers(0, 9, (2, 20))], -1).astype(np.int32)
    i[0, 1] = i[0, 0]
    _same(lambda x, i: jax.grad(lambda x: (x[i[..., 0], i[..., 1]] ** 2).sum())(x), x, i)
    k, j = _normal(4, 6, 8), RNG.integers(0, 8, (4, 6, 3)).astype(np.int32)
    _same(lambda k, j: jax.grad(lambda k: (jnp.take_along_axis(k, j, axis=-1) ** 2).sum())(k), k, j)
    i[1, 2, 1], i[0, 5, 0] = 11, -1
    _same(lambda x, i, u: x.at[i[..., 0], i[..., 1]].add(u, mode="drop"), x, i, _normal(2, 20, 7))


def test_other_gathers_are_named_as_unsupported():
    dn = jax.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    with pytest.raises(UnsupportedError, match=r"only whole windows"):  # windows of 3 along the indexed axis
        lower(lambda x, j: jax.lax.gather(x, j, dn, (3,)), _normal(10), np.zeros((4, 1), np.int32))
    with pytest.raises(ValueError, match=r"remote=\[5\]: positions \[5\] are not among the 2 arguments"):
        lower(lambda a, b: a + b, _normal(3), _normal(3), remote=(5,))


def test_integer_bit_operations_and_gradients_equal_jax():
    x = (np.arange(40, dtype=np.uint32).reshape(5, 8) * 977) ^ np.uint32(0x9E3779B9)
    _same(lambda a: (a << 3, a >> 2, jax.lax.shift_right_arithmetic(a.astype(jnp.int32), 1),
                     jax.lax.bitcast_convert_type(a, jnp.float32)), x)  # fmt: skip
    w, inp = _normal(4, 3), _normal(2, 4)
    grad = lambda w, x: jax.grad(lambda w: (jnp.tanh(x @ w) ** 2).sum())(w)
    got = lower(grad, w, inp, device=DEVICE).run(w, inp)
    np.testing.assert_allclose(got, np.asarray(grad(jnp.asarray(w), jnp.asarray(inp))), rtol=1e-5, atol=1e-6)


def test_unsupported_loops_name_what_their_bodies_need_and_typed_key_arguments_are_refused():
    with pytest.raises(UnsupportedError, match=r"no rule for cumsum \(x1\), while \(x1\)"):
        lower(lambda a: jax.lax.while_loop(lambda c: c[0] < 3, lambda c: c + jnp.cumsum(a), a), _normal(4))
    with pytest.raises(UnsupportedError, match=r"no rule for cumsum \(x1\)\. Supported"):  # a static loop: a scan
        lower(lambda a: jax.lax.fori_loop(0, 3, lambda i, c: c + jnp.cumsum(a), a), _normal(4))
    with pytest.raises(UnsupportedError, match=r"argument 0 of <lambda> is key<fry>: .*jax.random.key_data"):
        lower(lambda k: jax.random.normal(k, (3,)), jax.random.key(0))


def test_scans_are_unrolled_and_equal_jax():
    from core.random import jax_xoroshiro

    words = tuple(RNG.integers(0, 2**32, (5, 3), dtype=np.uint32) for _ in range(4))
    for kind in ("aox", "plus"):  # the PRNG paper's generator in JAX: a scan of integer steps, bit for bit
        _same(lambda a, b, c, d, kind=kind: jax_xoroshiro.generate(((a, b), (c, d)), 6, kind), *words)
    c, xs = _normal(3, 4), _normal(5, 3, 4)
    _same(lambda c, xs: jax.lax.scan(lambda k, x: (k + x, (k * x, k - 1.0)), c, xs, reverse=True), c, xs)
    _same(lambda c: jax.lax.fori_loop(0, 4, lambda i, k: jnp.maximum(k, k[::-1]) + i, c), c)
    with pytest.raises(UnsupportedError, match=r"scan of 2000 iterations \(the lowering unrolls at most 1024\)"):
        lower(lambda c: jax.lax.fori_loop(0, 2000, lambda i, k: k + 1.0, c), c)


def test_split_is_views():
    _same(lambda x: [a * 2 for a in jnp.split(x, [2, 5], axis=1)], _normal(3, 7, 2))


def test_prng_keys_equal_jax_and_random_bits_come_from_the_ipus_generator():
    def keys(seed, step):
        k = jax.random.split(jax.random.fold_in(jax.random.key(seed), step), 3)
        return jax.random.key_data(k), jax.random.key_data(k[1:].reshape(2, 1)[::-1]), jax.random.key_data(k[0])

    _same(keys, np.int32(7), np.int32(3))
    fold = jax.vmap(lambda k: jax.random.fold_in(k, 5))  # a key array: random_fold_in of every key
    _same(lambda d: jax.random.key_data(fold(jax.random.wrap_key_data(d))), RNG.integers(0, 2**32, (4, 2), np.uint32))

    def uniform(seed, x):
        return x + jax.random.uniform(jax.random.key(seed), x.shape)

    x = np.zeros((64, 100), np.float32)
    u = np.asarray(lower(uniform, np.int32(0), x, device=DEVICE).run(np.int32(0), x))
    assert not np.array_equal(u, np.asarray(uniform(0, x)))  # not JAX's threefry: the hardware's xoroshiro128aox
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01 and abs(u.std() - 12**-0.5) < 0.01
    bits = np.asarray(lower(lambda s: jax.random.bits(jax.random.key(s), (6400,), jnp.uint32), np.int32(1),
                            device=DEVICE).run(np.int32(1)))  # fmt: skip
    ones = np.unpackbits(bits.view(np.uint8)).mean()
    assert abs(ones - 0.5) < 4 * 0.5 / math.sqrt(bits.size * 32)  # each bit fair within 4 sigma


def test_random_bits_cost_poprands_estimate():
    device = get_device("mk2", tiles=1)
    n = 4096
    low = lower(lambda s: jax.random.bits(jax.random.key(s), (n,), jnp.uint32), np.int32(0), device=device)
    step = [cs for cs in low.graph.compute_sets if cs.name.startswith("random_bits")]
    assert len(step) == 1 and len(step[0].vertices) == 1  # one supervisor vertex on the tile
    cycles = step[0].vertices[0].codelet.cycles(device, out=(n,))
    assert cycles == 4 + 22 * device.workers + n * 4 // 8  # poprand's Uniform, INT, scale 0


def test_platform_dependent_lowers_its_default_branch_and_a_data_dependent_cond_is_refused():
    """A kernel with a CPU-only form (jax.lax.platform_dependent) runs its default branch on the IPU, as JAX would
    on any platform it does not name; CPU runs its own (the branches differ here so the choice shows)."""
    fn = lambda a: jax.lax.platform_dependent(a, cpu=lambda x: x * 2, default=lambda x: jnp.sin(x) + 1)
    x = _normal(6, 20)
    np.testing.assert_array_equal(lower(fn, x, device=DEVICE).run(x), np.asarray(jnp.sin(jnp.asarray(x)) + 1))
    np.testing.assert_array_equal(np.asarray(jax.jit(fn)(x)), x * 2)  # this machine is a CPU
    with pytest.raises(UnsupportedError, match=r"platform_dependent for \[\('cpu',\), \('cuda',\)\] only"):
        lower(lambda a: jax.lax.platform_dependent(a, cpu=lambda x: x, cuda=lambda x: -x), x)
    with pytest.raises(UnsupportedError, match=r"no rule for cond \(x1\)"):
        lower(lambda p, a: jax.lax.cond(p, lambda y: y * 2, lambda y: y + 1, a), np.bool_(True), x)


def test_row_scatter_adds_equal_jax():
    """The gradients of the row gathers (scatter-add), repeated rows included: poplibs' multiUpdateAdd laid out as
    the gather is; cost per tile poplibs' MultiUpdateOp estimate."""
    K, i = _rows_case()
    i[0, 1] = i[0, 0]  # a row gathered twice: its gradient is the sum of both
    _same(lambda k, j: jax.grad(lambda k: (jnp.take_along_axis(k, j[..., None], axis=-2) ** 2).sum())(k), K, i)
    table, j = _normal(50, 7), RNG.integers(0, 50, (9,)).astype(np.int32)
    _same(lambda t, j: jax.grad(lambda t: (t[j] ** 2).sum())(t), table, j)
    low = lower(lambda t, j, u: t.at[j].add(u), jax.ShapeDtypeStruct((40, 8), np.float32),
                jax.ShapeDtypeStruct((12,), np.int32), jax.ShapeDtypeStruct((12, 8), np.float32),
                device=get_device("mk2", tiles=4))  # fmt: skip
    low.cost()
    steps = [s for s in low.engine().profile.steps.values() if s.kind == "Execute" and s.name.startswith("scatter")]
    # 4 tiles x 2 columns: per worker 3 + 29 + ceil(12 / 6) x (11 + (2 - 1) x 3), times 6 workers
    assert len(steps) == 1 and steps[0].compute == 6 * (3 + 29 + 2 * (11 + 3))


@pytest.mark.parametrize("start", [3, 0, 9, -2, 20])
def test_dynamic_slices_and_updates_equal_jax(start):
    """A block at a runtime start along one axis (clamped as JAX clamps: -2 and 20 fall outside), literal starts
    along the others; a KV cache written layer by layer at the decode position."""
    x = _normal(6, 10, 4)
    _same(lambda x, s: jax.lax.dynamic_slice(x, (1, s, 0), (3, 2, 4)), x, np.int32(start))
    _same(lambda x, u, s: jax.lax.dynamic_update_slice(x, u, (2, s, 0)), x, _normal(2, 1, 4), np.int32(start))

    def cache_write(c, u, s):
        c = c * 2
        for layer in range(3):
            c = jax.lax.dynamic_update_slice(c, u[layer][None], (layer, 0, s, 0))
        return c

    _same(cache_write, _normal(3, 2, 8, 4), _normal(3, 2, 1, 4), np.int32(start))


def test_a_dynamic_update_writes_in_place_only_over_a_dying_operand():
    """In place (no copy step) when the operand dies at the update, as XLA reuses its buffer; copied when it is read
    again after, an argument or a loop's input (each still equal to JAX). On one tile (32 floats) the base is laid
    out for slicing; its 4 columns go one a worker, each DynamicUpdateSlice2D vertex 27 + (29 + 1) x 1 + 13 = 70
    thread cycles (poplibs' estimate for one region of one float, one row)."""
    x, u, s = _normal(8, 4), _normal(1, 4), np.int32(5)
    dying = lambda x, u, s: jax.lax.dynamic_update_slice(x * 2, u, (s, 0)) + 1
    read_again = lambda x, u, s: (lambda y: (jax.lax.dynamic_update_slice(y, u, (s, 0)), y))(x * 2)
    argument = lambda x, u, s: jax.lax.dynamic_update_slice(x, u, (s, 0))
    looped = lambda x, u: jax.lax.scan(lambda c, i: (jax.lax.dynamic_update_slice(c, u, (i, 0)), c[0] * 2), x,
                                       jnp.arange(3))  # fmt: skip
    inner = jax.jit(lambda z, u, s: jax.lax.dynamic_update_slice(z, u, (s, 0)))  # an inlined call
    called = lambda x, u, s: inner(x * 2, u, s) + 1  # its caller's value dies at the call: in place
    called_kept = lambda x, u, s: (lambda y: (inner(y, u, s), y))(x * 2)  # the caller reads it after: copied
    copies = {}
    for name, fn, args in [("dying", dying, (x, u, s)), ("read again", read_again, (x, u, s)),
                           ("argument", argument, (x, u, s)), ("looped", looped, (x, u)),
                           ("called", called, (x, u, s)), ("called, kept", called_kept, (x, u, s))]:  # fmt: skip
        _same(fn, *args)
        low = lower(fn, *args, device=DEVICE)
        copies[name] = sum(st.name.startswith("dynamic_update_slice/copy") for st in low.program.steps)
    assert copies == {"dying": 0, "read again": 1, "argument": 1, "looped": 3, "called": 0, "called, kept": 1}
    low = lower(dying, x, u, s, device=DEVICE)
    low.cost()
    steps = [
        st for st in low.engine().profile.steps.values() if st.kind == "Execute" and st.name == "dynamic_update_slice"
    ]
    assert len(steps) == 1 and steps[0].compute == 6 * 70


def test_dynamic_updates_along_two_runtime_axes_are_named_as_unsupported():
    with pytest.raises(UnsupportedError, match=r"dynamic_update_slice with runtime starts along 2 axes \(0, 1\)"):
        lower(lambda x, u, i, j: jax.lax.dynamic_update_slice(x, u, (i, j)), _normal(6, 5), _normal(2, 2),
              np.int32(1), np.int32(2))  # fmt: skip
