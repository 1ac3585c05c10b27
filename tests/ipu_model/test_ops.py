"""Library ops against numpy: elementwise maps, reductions, the planned matmul, and fill_uniform's streams."""

import math

import numpy as np
import pytest

from core.random.ipu import ipu_seed_state, uniform_float32
from core.random.xoroshiro import aox_generate
from ipu_model import Engine, Graph, GraphError, OutOfMemoryError, Sequence, get_device, ops
from ipu_model.programs import walk

DEV = get_device("mk2", tiles=8)
RNG = np.random.default_rng(2024)


def mapped(g, shape, dtype, name, tiles=None):
    t = g.add_variable(shape, dtype, name)
    g.map_linearly(t, tiles=tiles)
    return t


def sample(shape, dtype, low=-50, high=50):
    if np.dtype(dtype).kind == "i":
        return RNG.integers(low, high, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def names(prog):
    return [p.name for p in walk(prog)]


# ------------------------------------------------------------------------------------------------- elementwise
BINARY_REF = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "max": lambda a, b: np.where(a >= b, a, b),
    "min": lambda a, b: np.where(a <= b, a, b),
}
UNARY_REF = {
    "neg": lambda a: -a,
    "abs": lambda a: np.where(a < 0, -a, a),
    "relu": lambda a: np.where(a > 0, a, 0).astype(a.dtype),
    "square": lambda a: a * a,
}


@pytest.mark.parametrize("dtype", ["int32", "float32", "float16"])
@pytest.mark.parametrize("op", sorted(BINARY_REF))
def test_binary_elementwise_matches_numpy(op, dtype):
    g = Graph(DEV)
    a = mapped(g, (9, 7), dtype, "a")
    b = mapped(g, (9, 7), dtype, "b", tiles=[7, 5, 3, 1])  # mapped differently: copied to a's tiles first
    prog, out = ops.elementwise(g, op, a, b)
    engine = Engine(g, prog)
    x, y = sample((9, 7), dtype), sample((9, 7), dtype)
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    got = engine.read(out)
    assert got.dtype == np.dtype(dtype) and got.shape == (9, 7)
    np.testing.assert_array_equal(got, BINARY_REF[op](x, y))
    np.testing.assert_array_equal(out.tiles(), a.tiles())  # computed where the first input lives
    assert engine.profile.totals()["exchange"] > 0


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("op", sorted(UNARY_REF))
def test_unary_elementwise_matches_numpy(op, dtype):
    g = Graph(DEV)
    a = mapped(g, 30, dtype, "a")
    prog, out = ops.elementwise(g, op, a)
    engine = Engine(g, prog)
    x = sample(30, dtype)
    engine.write(a, x)
    engine.run()
    np.testing.assert_array_equal(engine.read(out), UNARY_REF[op](x))


def test_float_only_elementwise_ops():
    g = Graph(DEV)
    a, b = mapped(g, 20, "float32", "a"), mapped(g, 20, "float32", "b")
    progs = {op: ops.elementwise(g, op, a) for op in ("exp", "sqrt")}
    progs["div"] = ops.elementwise(g, "div", a, b)
    engine = Engine(g, Sequence(*(p for p, _ in progs.values())))
    x, y = RNG.uniform(0.5, 4, 20).astype(np.float32), RNG.uniform(0.5, 4, 20).astype(np.float32)
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    np.testing.assert_allclose(engine.read(progs["exp"][1]), np.exp(x.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(engine.read(progs["sqrt"][1]), np.sqrt(x.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(engine.read(progs["div"][1]), x.astype(np.float64) / y, rtol=1e-6)


def test_elementwise_on_views_and_same_mapping_needs_no_exchange():
    g = Graph(DEV)
    a = mapped(g, (6, 4), "int32", "a")
    b = mapped(g, (4, 6), "int32", "b")
    same, out_same = ops.elementwise(g, "add", a, a.T.T)  # the same elements: no copy needed
    moved, out_moved = ops.elementwise(g, "mul", a.T, b)  # a transposed first operand; b is copied to it
    engine = Engine(g, Sequence(same, moved))
    x, y = sample((6, 4), "int32"), sample((4, 6), "int32")
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    np.testing.assert_array_equal(engine.read(out_same), x + x)
    np.testing.assert_array_equal(engine.read(out_moved), x.T * y)
    np.testing.assert_array_equal(out_moved.tiles(), a.T.tiles())
    kinds = lambda prog: [type(p).__name__ for p in walk(prog)]
    assert "Copy" not in kinds(same) and "Copy" in kinds(moved)
    assert engine.profile.steps[same.id].runs == 1


def test_elementwise_errors():
    g = Graph(DEV)
    a, b = mapped(g, 4, "float32", "a"), mapped(g, 5, "float32", "b")
    c = mapped(g, 4, "int32", "c")
    with pytest.raises(GraphError, match="pow"):
        ops.elementwise(g, "pow", a, a)
    with pytest.raises(GraphError, match="not known"):
        ops.elementwise(g, "add", a)  # add is binary
    with pytest.raises(GraphError, match="differs"):
        ops.elementwise(g, "add", a, b)
    with pytest.raises(GraphError, match="differs"):
        ops.elementwise(g, "add", a, c)


# ---------------------------------------------------------------------------------------------------- reduce
REDUCE_REF = {"add": np.sum, "max": np.max, "min": np.min, "mul": np.prod}


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("op", sorted(REDUCE_REF))
def test_int32_reduce_is_exact(op, axis):
    g = Graph(DEV)
    shape = (5, 7, 3)
    t = g.add_variable(shape, "int32", "t")
    g.map_linearly(t, tiles=[2, 6, 1])
    prog, out = ops.reduce(g, t, axis=axis, op=op)
    engine = Engine(g, prog)
    x = sample(shape, "int32", -9, 10)
    engine.write(t, x)
    engine.run()
    ref = REDUCE_REF[op](x, axis=axis).astype(np.int32)  # int32 products wrap alike in any order
    assert out.shape == ref.shape
    np.testing.assert_array_equal(engine.read(out), ref)


@pytest.mark.parametrize("axis", [0, 1])
def test_float32_reduce(axis):
    g = Graph(DEV)
    t = mapped(g, (33, 40), "float32", "t")
    progs = [ops.reduce(g, t, axis=axis, op=op) for op in ("add", "max", "min")]
    engine = Engine(g, Sequence(*(p for p, _ in progs)))
    x = sample((33, 40), "float32")
    engine.write(t, x)
    engine.run()
    (_, total), (_, hi), (_, lo) = progs
    ref = x.astype(np.float64).sum(axis=axis)
    np.testing.assert_allclose(engine.read(total), ref, rtol=0, atol=1e-6 * np.abs(x).sum(axis=axis).max())
    np.testing.assert_array_equal(engine.read(hi), x.max(axis=axis))
    np.testing.assert_array_equal(engine.read(lo), x.min(axis=axis))


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_full_reduction_of_a_long_vector_takes_two_stages(dtype):
    g = Graph(DEV)
    n = 4096
    t = mapped(g, n, dtype, "t")
    prog, out = ops.reduce(g, t, axis=0, op="add", name="total")
    engine = Engine(g, prog)
    x = sample(n, dtype)
    engine.write(t, x)
    engine.run()
    assert out.shape == ()
    if dtype == "int32":
        assert engine.read(out) == x.sum()
    else:
        assert engine.read(out) == pytest.approx(x.astype(np.float64).sum(), abs=1e-6 * float(np.abs(x).sum()))
    # two stages: every tile reduces its own 512 elements first, so only partials cross the exchange
    executes = [s for s in engine.profile.steps.values() if s.kind == "Execute"]
    assert len(executes) >= 2
    assert executes[0].tiles_used == 8
    assert engine.profile.totals()["bytes_exchanged"] <= 8 * 6 * 4  # at most one partial per worker


def test_float16_sums_accumulate_in_float32():
    """3000 ones: float16 accumulation would stop at 2048 (2049 is not a float16); float32 reaches 3000."""
    g = Graph(get_device("mk2", tiles=1))  # one tile: a single-stage sum by one vertex
    t = g.add_variable(3000, "float16", "t")
    g.map_linearly(t)
    p16, s16 = ops.reduce(g, t, op="add")
    p32, s32 = ops.reduce(g, t, op="add", out_dtype="float32")
    engine = Engine(g, Sequence(p16, p32))
    engine.write(t, np.ones(3000))
    engine.run()
    assert s16.dtype == np.float16 and engine.read(s16) == 3000
    assert s32.dtype == np.float32 and engine.read(s32) == 3000


def test_reduce_into_a_given_output_and_errors():
    g = Graph(DEV)
    t = mapped(g, (4, 6), "int32", "t")
    out = g.add_variable(6, "int32", "out")
    g.set_tile_mapping(out, 5)
    prog, got = ops.reduce(g, t, axis=0, op="max", out=out)
    assert got.var is out.var and got.shape == (6,)
    engine = Engine(g, prog)
    x = sample((4, 6), "int32")
    engine.write(t, x)
    engine.run()
    np.testing.assert_array_equal(engine.read(out), x.max(axis=0))
    with pytest.raises(GraphError, match="mean"):
        ops.reduce(g, t, op="mean")


# ---------------------------------------------------------------------------------------------------- matmul
def check_matmul(got, a, b, out_dtype):
    """Against float64: a float32 accumulation error bound, plus float16 rounding of the result if it is half."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    bound = 1e-5 * (np.abs(a64) @ np.abs(b64))  # >> k * 2^-24 * sum |a_i b_i|; << float16 accumulation error
    if out_dtype == "float16":
        bound = bound + 0.5 * np.spacing(np.abs(ref).astype(np.float16)).astype(np.float64)
    assert got.dtype == np.dtype(out_dtype)
    assert np.all(np.abs(got.astype(np.float64) - ref) <= bound)


PLANS = [(1, 1, 1), (2, 1, 4), (3, 1, 2), (2, 2, 2), (1, 4, 2), (1, 8, 1), (2, 3, 1)]


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: "x".join(map(str, p)))
@pytest.mark.parametrize(("in_dtype", "out_dtype"), [("float32", None), ("float16", None), ("float16", "float32")])
def test_matmul_matches_float64(plan, in_dtype, out_dtype):
    m, k, n = 37, 53, 29  # nothing divides evenly
    g = Graph(DEV)
    a, b = mapped(g, (m, k), in_dtype, "A"), mapped(g, (k, n), in_dtype, "B", tiles=[3, 4])
    prog, c, used = ops.matmul(g, a, b, out_dtype=out_dtype, plan=ops.MatmulPlan(*plan))
    assert (used.pm, used.pk, used.pn) == plan and c.shape == (m, n)
    assert any(name.endswith("reduce") for name in names(prog)) == (plan[1] > 1)
    engine = Engine(g, prog)
    x = RNG.uniform(-1, 1, (m, k)).astype(in_dtype)
    y = RNG.uniform(-1, 1, (k, n)).astype(in_dtype)
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    check_matmul(engine.read(c), x, y, out_dtype or in_dtype)
    # compute is spread over the plan's tiles
    multiply = next(s for s in engine.profile.steps.values() if s.name.endswith("multiply"))
    assert multiply.tiles_used == min(math.prod(plan), 8)
    assert multiply.flops == 2 * m * k * n


SERIAL_PLANS = [(1, 1, 1, 2, 1), (2, 1, 3, 4, 1), (1, 2, 2, 2, 3), (2, 3, 1, 1, 2), (1, 1, 2, 1, 5), (2, 2, 2, 3, 2)]


@pytest.mark.parametrize("plan", SERIAL_PLANS, ids=lambda p: "x".join(map(str, p)))
@pytest.mark.parametrize(("in_dtype", "out_dtype"), [("float32", None), ("float16", None), ("float16", "float32")])
def test_serial_steps_over_k_and_n_match_float64(plan, in_dtype, out_dtype):
    """sk x sn serial steps: the exchange runs once per step (a dynamic slice inside the loops), the product's
    compute sets run sk x sn times between them and do all of 2 m k n FLOPs, and C is right."""
    m, k, n = 23, 48, 30
    sk, sn = plan[3], plan[4]
    g = Graph(DEV)
    a, b = mapped(g, (m, k), in_dtype, "A"), mapped(g, (k, n), in_dtype, "B", tiles=[3, 4])
    prog, c, used = ops.matmul(g, a, b, out_dtype=out_dtype, plan=ops.MatmulPlan(*plan))
    assert (used.sk, used.sn) == (sk, sn) and c.shape == (m, n)
    engine = Engine(g, prog)
    x, y = RNG.uniform(-1, 1, (m, k)).astype(in_dtype), RNG.uniform(-1, 1, (k, n)).astype(in_dtype)
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    check_matmul(engine.read(c), x, y, out_dtype or in_dtype)
    steps = engine.profile.steps.values()
    assert next(s for s in steps if s.name.endswith("/broadcast")).runs == sk * sn
    multiply = [s for s in steps if "/multiply" in s.name]
    assert sum(s.runs for s in multiply) == sk * sn
    assert sum(s.flops for s in multiply) == 2 * m * k * n


def test_serial_plan_that_does_not_cut_evenly_is_refused():
    g = Graph(DEV)
    a, b = mapped(g, (4, 6), "float32", "A"), mapped(g, (6, 4), "float32", "B")
    with pytest.raises(GraphError, match="4 x 1 serial steps must cut k=6 and n=4 into equal chunks"):
        ops.matmul(g, a, b, plan=ops.MatmulPlan(1, 1, 1, 4, 1))
    with pytest.raises(GraphError, match=r"plan 1x4x1 does not fit 4x3x4 \(a serial step of 4x6x4\)"):
        ops.matmul(g, a, b, plan=ops.MatmulPlan(1, 4, 1, 2, 1))


def test_planner_steps_through_k_when_one_exchange_does_not_fit():
    """A 16 x 4096 x 16 float32 product on 4 tiles of 200 KiB: A and B take 131 KiB per tile where they start, so a
    plan that brings every tile its blocks in one exchange needs as much again; the planner steps over k instead,
    the program compiles within memory (tensors live only while used) and is right. The same grid in one step is
    refused at compile."""
    dev = get_device("mk2", tiles=4, memory_per_tile=200 * 1024)
    plan = ops.plan_matmul(dev, 16, 4096, 16, "float32")
    assert plan.sk * plan.sn > 1 and plan.memory <= 0.85 * dev.memory_per_tile

    def build(p):
        g = Graph(dev)
        a, b = mapped(g, (16, 4096), "float32", "A"), mapped(g, (4096, 16), "float32", "B")
        prog, c, _ = ops.matmul(g, a, b, plan=p)
        return Engine(g, prog), a, b, c

    engine, a, b, c = build(plan)
    assert engine.profile.memory.total.max() <= dev.memory_per_tile
    x, y = RNG.uniform(-1, 1, (16, 4096)).astype(np.float32), RNG.uniform(-1, 1, (4096, 16)).astype(np.float32)
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    check_matmul(engine.read(c), x, y, "float32")
    with pytest.raises(OutOfMemoryError):
        build(ops.MatmulPlan(plan.pm, plan.pk, plan.pn))


def test_matmul_check_is_not_vacuous():
    """The float16 check rejects a result accumulated in float16 (what the AMP unit avoids)."""
    x = RNG.uniform(0, 1, (8, 512)).astype(np.float16)
    y = RNG.uniform(0, 1, (512, 8)).astype(np.float16)
    acc = np.zeros((8, 8), np.float16)
    for i in range(512):
        acc = (acc + x[:, i : i + 1] * y[i : i + 1, :]).astype(np.float16)
    with pytest.raises(AssertionError):
        check_matmul(acc, x, y, "float16")
    check_matmul((x.astype(np.float32) @ y.astype(np.float32)).astype(np.float16), x, y, "float16")


@pytest.mark.parametrize(
    ("m", "k", "n", "dtype"), [(37, 53, 29, "float32"), (128, 96, 64, "float16"), (1, 300, 2, "float32")]
)
def test_planned_matmul_fits_and_is_right(m, k, n, dtype):
    dev = get_device("mk2", tiles=8, memory_per_tile=64 * 1024)
    plan = ops.plan_matmul(dev, m, k, n, dtype)
    assert 1 <= plan.tiles <= dev.tiles
    assert 0 < plan.memory <= dev.memory_per_tile and plan.estimate > 0
    g = Graph(dev)
    a, b = mapped(g, (m, k), dtype, "A"), mapped(g, (k, n), dtype, "B")
    prog, c, used = ops.matmul(g, a, b)
    assert used == plan
    engine = Engine(g, prog)  # no OutOfMemoryError
    assert engine.profile.memory.total.max() <= dev.memory_per_tile
    x, y = RNG.uniform(-1, 1, (m, k)).astype(dtype), RNG.uniform(-1, 1, (k, n)).astype(dtype)
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    check_matmul(engine.read(c), x, y, dtype)


def test_planner_prefers_more_tiles_for_bigger_problems():
    small = ops.plan_matmul(DEV, 4, 4, 4, "float32")
    big = ops.plan_matmul(DEV, 256, 256, 256, "float32")
    assert big.tiles == DEV.tiles and big.tiles >= small.tiles
    assert big.estimate > small.estimate


def test_planner_raises_when_nothing_fits():
    dev = get_device("mk2", tiles=2, memory_per_tile=4096)
    with pytest.raises(GraphError, match="512x512x512"):
        ops.plan_matmul(dev, 512, 512, 512, "float16")
    g = Graph(dev)
    a, b = mapped(g, (512, 512), "float16", "A"), mapped(g, (512, 512), "float16", "B")
    with pytest.raises(GraphError, match="does not fit"):
        ops.matmul(g, a, b)


def test_a_plan_that_is_too_big_for_memory_fails_at_compile():
    dev = get_device("mk2", tiles=2, memory_per_tile=16 * 1024)
    g = Graph(dev)
    a, b = mapped(g, (64, 64), "float32", "A"), mapped(g, (64, 64), "float32", "B")
    prog, _, _ = ops.matmul(g, a, b, plan=ops.MatmulPlan(1, 1, 1))
    with pytest.raises(OutOfMemoryError, match="matmul/"):
        Engine(g, prog)


def test_matmul_errors():
    g = Graph(DEV)
    a, b = mapped(g, (3, 4), "float32", "A"), mapped(g, (5, 2), "float32", "B")
    h = mapped(g, (4, 2), "float16", "H")
    with pytest.raises(GraphError, match="A \\[m, k\\]"):
        ops.matmul(g, a, b)
    with pytest.raises(GraphError, match="dtype"):
        ops.matmul(g, a, h)
    with pytest.raises(GraphError, match="needs 9 tiles"):
        ops.matmul(g, a, a.T, plan=ops.MatmulPlan(3, 1, 3))


def test_matmul_with_more_column_blocks_than_columns_is_refused():
    g = Graph(DEV)
    a, b = mapped(g, (5, 5), "float32", "A"), mapped(g, (5, 3), "float32", "B")
    with pytest.raises(GraphError, match=r"plan 1x1x8 does not fit 5x5x3: need 1 <= pm <= m, pk <= k, pn <= n"):
        ops.matmul(g, a, b, plan=ops.MatmulPlan(1, 1, 8))
    # one column block per column, the most the plan may have, is accepted and right
    prog, c, _ = ops.matmul(g, a, b, plan=ops.MatmulPlan(1, 1, 3))
    engine = Engine(g, prog)
    x, y = sample((5, 5), "float32"), sample((5, 3), "float32")
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    check_matmul(engine.read(c), x, y, "float32")


def test_matmul_on_a_full_mk2():
    g = Graph("mk2")
    a, b = mapped(g, (64, 64), "float16", "A"), mapped(g, (64, 64), "float16", "B")
    prog, c, plan = ops.matmul(g, a, b)
    assert plan.tiles <= 1472
    engine = Engine(g, prog)
    x, y = RNG.uniform(-1, 1, (64, 64)).astype(np.float16), RNG.uniform(-1, 1, (64, 64)).astype(np.float16)
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    check_matmul(engine.read(c), x, y, "float16")
    assert engine.profile.fraction_of_peak(2 * 64**3, "float16") < 0.05  # a small matmul is far from peak


# ---------------------------------------------------------------------------------------------------- random
def expected_uniforms(tile_of, seed, seed_modifier, runs, device):
    """Reference: each tile's elements (in flat order) split into `workers` consecutive chunks of ceil(n/workers);
    chunk c is drawn by worker c from its xoroshiro128aox stream, one 64-bit output per element."""
    tile_of = np.asarray(tile_of).reshape(-1)
    s0, s1 = ipu_seed_state(seed, seed_modifier, device.tiles, device.workers)
    out = np.zeros((runs, tile_of.size), np.float32)
    for tile in np.unique(tile_of):
        positions = np.flatnonzero(tile_of == tile)
        per = -(-positions.size // device.workers)
        for worker, start in enumerate(range(0, positions.size, per)):
            chunk = positions[start : start + per]
            raw = aox_generate(s0[tile, worker], s1[tile, worker], runs * chunk.size)
            out[:, chunk] = uniform_float32(raw).reshape(runs, chunk.size)
    return out


@pytest.mark.parametrize("layout", ["linear", "interleaved"])
def test_fill_uniform_matches_the_ipu_streams(layout):
    dev = get_device("mk2", tiles=4)
    g = Graph(dev)
    t = g.add_variable((5, 11), "float32", "u")
    if layout == "linear":
        g.map_linearly(t)  # 14, 14, 14, 13 elements: 5 workers busy per tile
    else:
        for i in range(t.size):  # tile = i % 3: every tile holds scattered elements
            g.set_tile_mapping(t.flatten()[i], i % 3)
    engine = Engine(g, ops.fill_uniform(g, t), seed=42)
    first = (engine.run(), engine.read(t))[1]
    second = (engine.run(), engine.read(t))[1]
    ref = expected_uniforms(t.tiles(), 42, 0, 2, dev)
    np.testing.assert_array_equal(first.reshape(-1), ref[0])
    np.testing.assert_array_equal(second.reshape(-1), ref[1])  # the streams continue
    assert first.dtype == np.float32 and np.all((first >= 0) & (first < 1))
    assert not np.any(first == second)


def test_fill_uniform_seeds_give_different_values():
    def values(seed, modifier=0):
        g = Graph(get_device("mk2", tiles=4))
        t = mapped(g, 40, "float32", "u")
        engine = Engine(g, ops.fill_uniform(g, t), seed=seed, seed_modifier=modifier)
        engine.run()
        return engine.read(t)

    a, b, c = values(1), values(2), values(1, 1)
    np.testing.assert_array_equal(a, values(1))  # reproducible
    assert not np.any(a == b) and not np.any(a == c)
    assert len(np.unique(a)) == a.size  # every worker stream is distinct


def test_fill_uniform_needs_float32():
    g = Graph(DEV)
    with pytest.raises(GraphError, match="float32"):
        ops.fill_uniform(g, mapped(g, 4, "float16", "h"))


def test_reduce_rows_spread_over_different_numbers_of_tiles():
    g = Graph(DEV)
    t = g.add_variable((2, 12), "int32", "t")
    for cols, tile in ((slice(0, 4), 0), (slice(4, 8), 1), (slice(8, 12), 2)):
        g.set_tile_mapping(t[0, cols], tile)  # row 0 over three tiles
    g.set_tile_mapping(t[1], 3)  # row 1 on one
    prog, out = ops.reduce(g, t, axis=1, op="add")
    engine = Engine(g, prog)
    x = sample((2, 12), "int32")
    engine.write(t, x)
    engine.run()
    np.testing.assert_array_equal(engine.read(out), x.sum(axis=1))
