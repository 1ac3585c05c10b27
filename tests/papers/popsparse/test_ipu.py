"""PopSparse on the simulated IPU: static and dynamic block-sparse matmuls equal the dense product, the dynamic
program runs different patterns without being rebuilt, bad inputs are refused clearly, the planners' estimates
are what the engine charges, and the benchmark cell reports consistent figures."""

import dataclasses
import json
import shutil

import numpy as np
import pytest

from core.sparsity.formats import BlockPattern, BlockSparseMatrix
from ipu_model import DeviceToHost, Engine, Graph, GraphError, HostToDevice, Sequence, get_device
from papers.popsparse.ipu import CellCache, simulate_cell, speedups
from papers.popsparse.ipu_common import (
    balanced_cuts,
    dynamic_block_cycles,
    elementwise_cycles,
    program_cycles,
    static_cycles,
    vertex_cycles,
)
from papers.popsparse.ipu_dynamic import assign_buckets, dynamic_sparse_matmul, plan_dynamic
from papers.popsparse.ipu_static import StaticPlan, plan_static, static_sparse_matmul

DEVICE = get_device("mk2", tiles=16)
# (block, m, k, n, density): every block size, shapes of 4 to 16 blocks a side
SHAPES = [(1, 64, 64, 16, 1 / 4), (4, 128, 64, 24, 1 / 4), (8, 64, 128, 8, 1 / 8), (16, 128, 128, 32, 1 / 2)]
TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float16": dict(rtol=2e-3, atol=2e-3)}


def _problem(m, k, n, block, density, dtype, seed=0):
    pattern = BlockPattern.random((m, k), block, density, seed)
    matrix = BlockSparseMatrix.random(pattern, seed=seed + 1, dtype=dtype)
    x = np.random.default_rng(seed + 2).normal(size=(k, n)).astype(dtype)
    return matrix, x


def _check(out, matrix, x, dtype):
    """out equals W X (exact inputs, float64 product), relative to the result's scale."""
    ref = matrix.to_dense().astype(np.float64) @ x.astype(np.float64)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(out.astype(np.float64) / scale, ref / scale, **TOL[dtype])


def _run_static(matrix, x, plan=None, device=DEVICE):
    g = Graph(device)
    w = g.add_variable(matrix.values.shape, matrix.dtype.name, "w")
    xt = g.add_variable(x.shape, x.dtype.name, "x")
    g.map_linearly(w)
    g.map_linearly(xt)
    prog, y, plan = static_sparse_matmul(g, matrix.pattern, w, xt, plan)
    engine = Engine(g, Sequence(HostToDevice("w", w), HostToDevice("x", xt), prog, DeviceToHost(y, "y")))
    out = engine.run({"w": matrix.values, "x": x}).outputs["y"][0]
    return out, engine, prog, plan


# ------------------------------------------------------------------------------------------------------ static
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(("block", "m", "k", "n", "density"), SHAPES)
def test_static_equals_dense_product(block, m, k, n, density, dtype):
    matrix, x = _problem(m, k, n, block, density, dtype)
    out, engine, prog, plan = _run_static(matrix, x)
    assert out.dtype == np.dtype(dtype) and out.shape == (m, n)
    _check(out, matrix, x, dtype)
    # only the blocks present cost FLOPs: 2 b^2 per block and column
    multiply = next(s for s in engine.profile.steps.values() if s.name.endswith("/multiply"))
    assert multiply.flops == 2 * matrix.pattern.nnz_blocks * block * block * n
    # the planner's estimate is what the engine charged, give or take the split of rows over workers
    assert program_cycles(engine, prog) == pytest.approx(plan.estimate, rel=0.15)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_static_bands_reduce_partials(dtype):
    """Three bands of uneven width, uneven row parts and two n splits: partials summed across bands."""
    matrix, x = _problem(96, 128, 20, 8, 0.3, dtype, seed=3)
    plan = StaticPlan(bands=(0, 3, 10, 16), row_cuts=((0, 12), (0, 5, 12), (0, 2, 7, 12)), n_splits=2)
    out, engine, _, _ = _run_static(matrix, x, plan)
    _check(out, matrix, x, dtype)
    assert any(s.name.endswith("/reduce") for s in engine.profile.steps.values())


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(
    "plan",
    [
        StaticPlan(bands=(0, 16), row_cuts=((0, 5, 12),), n_splits=2, serial=2),
        StaticPlan(bands=(0, 3, 10, 16), row_cuts=((0, 12), (0, 5, 12), (0, 2, 7, 12)), n_splits=2, serial=4),
    ],
    ids=["one band", "three bands"],
)
def test_static_serial_steps_over_n(plan, dtype):
    """Serial steps over n: W's blocks are exchanged once, each step brings a column chunk of X (one exchange
    program run once per step) and runs the same product; the result is right and every FLOP is done once."""
    matrix, x = _problem(96, 128, 24, 8, 0.3, dtype, seed=4)
    out, engine, _, _ = _run_static(matrix, x, plan)
    _check(out, matrix, x, dtype)
    steps = {s.name: s for s in engine.profile.steps.values()}
    assert steps["static/exchange_w"].runs == 1 and steps["static/exchange_x"].runs == plan.serial
    assert steps["static/multiply"].runs == plan.serial
    assert steps["static/multiply"].flops == 2 * matrix.pattern.nnz_blocks * 8 * 8 * 24


def test_planner_steps_over_n_when_one_step_does_not_fit():
    """On 16 tiles of 48 KiB a 64 x 64 x 1024 float32 product at density 1/4 fits only in serial steps over n;
    the program compiles within memory and is right."""
    device = get_device("mk2", tiles=16, memory_per_tile=48 * 1024)
    matrix, x = _problem(64, 64, 1024, 4, 1 / 4, "float32")
    plan = plan_static(device, matrix.pattern, 1024, "float32")
    assert plan.serial > 1
    out, engine, _, _ = _run_static(matrix, x, plan, device)
    _check(out, matrix, x, "float32")
    assert engine.profile.memory.total.max() <= device.memory_per_tile


def test_static_empty_rows_and_skewed_pattern():
    """Rows and a whole band without blocks still produce (zero) output."""
    mask = np.zeros((8, 8), bool)
    mask[0, :] = True
    mask[5, 1] = True
    pattern = BlockPattern.from_mask(mask, 4)
    matrix = BlockSparseMatrix.random(pattern, seed=0)
    x = np.random.default_rng(1).normal(size=(32, 12)).astype("float32")
    out, *_ = _run_static(matrix, x)
    _check(out, matrix, x, "float32")
    out, *_ = _run_static(matrix, x, StaticPlan((0, 2, 8), ((0, 3, 8), (0, 8)), 3))
    _check(out, matrix, x, "float32")


def test_static_refuses_bad_inputs():
    pattern = BlockPattern.random((64, 64), 4, 0.25)
    g = Graph(DEVICE)
    w = g.add_variable((pattern.nnz_blocks, 4, 4), "float32", "w")
    x = g.add_variable((64, 8), "float32", "x")
    with pytest.raises(GraphError, match="w must be"):
        static_sparse_matmul(g, pattern, w[1:], x)
    with pytest.raises(GraphError, match="x must be"):
        static_sparse_matmul(g, pattern, w, x[:32])
    with pytest.raises(GraphError, match="dtype"):
        static_sparse_matmul(g, pattern, w, g.add_variable((64, 8), "float16", "x16"))
    with pytest.raises(GraphError, match="does not fit"):
        static_sparse_matmul(g, pattern, w, x, StaticPlan((0, 8), ((0, 16),), 1))  # grid of 16 x 16 blocks
    with pytest.raises(GraphError, match="does not fit"):
        plan_static(get_device("mk2", tiles=2, memory_per_tile=4096), pattern, 4096, "float32")


@pytest.mark.parametrize(("shape", "block", "density", "message"), [
    ((60, 64), 8, 0.25, "not divisible"), ((64, 64), 3, 0.25, "block size"),
    ((64, 64), 4, 0.0, "density"), ((64, 64), 4, 1.5, "density")])  # fmt: skip
def test_bad_shapes_and_densities_are_refused(shape, block, density, message):
    with pytest.raises(ValueError, match=message):
        BlockPattern.random(shape, block, density)
    with pytest.raises(ValueError, match=message):
        dynamic_sparse_matmul(Graph(DEVICE), *shape, 8, block, density, "float32")


# ----------------------------------------------------------------------------------------------------- dynamic
def _dynamic_engine(m, k, n, block, max_density, dtype, plan=None, device=DEVICE):
    g = Graph(device)
    op = dynamic_sparse_matmul(g, m, k, n, block, max_density, dtype, plan=plan)
    engine = Engine(g, Sequence(HostToDevice("x", op.x), op.upload, op.program, DeviceToHost(op.y, "y")))
    return op, engine


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(("block", "m", "k", "n", "density"), SHAPES)
def test_dynamic_one_engine_runs_two_patterns(block, m, k, n, density, dtype):
    op, engine = _dynamic_engine(m, k, n, block, density, dtype)
    plan = op.plan
    for seed, d in ((1, density), (2, density / 2)):  # a different pattern, and a sparser one
        matrix, x = _problem(m, k, n, block, d, dtype, seed)
        inputs = op.inputs(matrix)
        before = program_cycles(engine, op.program)
        _check(engine.run({"x": x, **inputs}).outputs["y"][0], matrix, x, dtype)
        # the planner's estimate is what the engine charged, for the overflow rounds this pattern needed
        rounds = int(inputs[op.streams[2]].sum())
        expected = plan.estimate + (rounds - plan.expected_rounds) * plan.round_cycles
        assert program_cycles(engine, op.program) - before == pytest.approx(expected, rel=0.05)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("n", [7, 94])
def test_dynamic_estimate_holds_when_columns_split_unevenly(n, dtype):
    """Workers get near-equal column counts (n = 7 over six workers: 1 or 2 each); Graphcore's element-wise
    estimate is not monotonic in the columns (float's 2 and 4 are special cases), so the planner must cost the
    busier of the two counts, as the engine does."""
    device = get_device("mk2", tiles=4)
    op, engine = _dynamic_engine(32, 32, n, 1, 0.25, dtype, device=device)
    matrix, x = _problem(32, 32, n, 1, 0.25, dtype, 3)
    inputs = op.inputs(matrix)
    _check(engine.run({"x": x, **inputs}).outputs["y"][0], matrix, x, dtype)
    rounds = int(inputs[op.streams[2]].sum())
    expected = op.plan.estimate + (rounds - op.plan.expected_rounds) * op.plan.round_cycles
    assert program_cycles(engine, op.program) == pytest.approx(expected, rel=0.05)


@pytest.mark.parametrize(("gx", "gy", "gz", "main", "spill"), [(2, 2, 3, 3, 2), (2, 3, 2, 4, 1), (3, 2, 4, 1, 1)])
def test_dynamic_overflow_spills_to_other_partitions(gx, gy, gz, main, spill):
    """Small buckets force blocks into later partitions' spill areas; the extra propagation rounds (as many as
    the farthest spill) find them, and a cost-only run charges the same cycles."""
    m = k = 48
    base = plan_dynamic(get_device("mk2", tiles=24), m, k, 20, 4, 0.25, "float32")
    plan = dataclasses.replace(base, gx=gx, gy=gy, gz=gz, main=main, spill=spill)
    op, engine = _dynamic_engine(m, k, 20, 4, 0.25, "float32", plan, get_device("mk2", tiles=24))
    rounds_seen = set()
    for seed, density in ((0, 0.25), (1, 0.4), (3, 0.3), (4, 0.1)):
        matrix, x = _problem(m, k, 20, 4, density, "float32", seed)
        if matrix.pattern.nnz_blocks > plan.total_capacity:
            continue
        inputs = {"x": x, **op.inputs(matrix)}
        rounds_seen.add(int(inputs[op.streams[2]].sum()))
        full = engine.run(inputs)
        _check(full.outputs["y"][0], matrix, x, "float32")
        assert engine.run(inputs, evaluate=False).cycles == full.cycles
    assert max(rounds_seen) >= 1 and min(rounds_seen) == 0


def test_dynamic_refuses_patterns_over_capacity():
    op, _ = _dynamic_engine(64, 64, 8, 4, 1 / 8, "float32")
    dense, _ = _problem(64, 64, 8, 4, 0.5, "float32")
    with pytest.raises(
        ValueError, match=rf"{dense.pattern.nnz_blocks} non-zero blocks.*at most {op.plan.total_capacity}"
    ):
        op.inputs(dense)
    other, _ = _problem(64, 32, 8, 4, 0.1, "float32")
    with pytest.raises(ValueError, match="does not match"):
        op.inputs(other)
    # one crowded partition: its overflow exceeds the free spill slots although the total fits
    plan = dataclasses.replace(op.plan, gx=2, gy=2, gz=1, main=8, spill=2)  # 40 blocks, 10 per partition
    mask = np.zeros((16, 16), bool)
    mask[:4, :8] = True  # 32 blocks, all in partition 0
    with pytest.raises(ValueError, match="spill slots"):
        assign_buckets(plan, BlockPattern.from_mask(mask, 4))


def test_dynamic_program_does_not_depend_on_the_pattern():
    """Building twice gives the same graph; the pattern only enters as host stream values."""
    op, engine = _dynamic_engine(64, 64, 16, 8, 1 / 4, "float16")
    sizes = {t.name: t.shape for t in (op.x, op.y)}
    for seed in (5, 6):
        matrix, x = _problem(64, 64, 16, 8, 1 / 4, "float16", seed)
        inputs = op.inputs(matrix)
        values, meta, flags = (inputs[s] for s in op.streams)
        assert values.shape == (op.plan.partitions, op.plan.gz, op.plan.capacity * 64)
        assert meta.shape == (op.plan.partitions, op.plan.gz, op.plan.capacity * 3) and meta.dtype == np.int16
        assert flags.shape == (op.plan.partitions + 1,)
        _check(engine.run({"x": x, **inputs}).outputs["y"][0], matrix, x, "float16")
    assert sizes == {t.name: t.shape for t in (op.x, op.y)}


# ----------------------------------------------------------------------------------------------------- helpers
def test_elementwise_cycles_follow_graphcores_published_estimate():
    """poplibs PerformanceEstimation.hpp, sparseDenseElementwiseMultiply, worked by hand: worker cycles =
    overhead + (x overhead + inner) * rows, times 6 contexts, plus 120 supervisor cycles (one bucket)."""
    dev = get_device("mk2")
    cases = [
        # half, 8 columns, 2 rows, 5 non-zeros a row: 25 + (15 + 3 * 5) * 2 = 85
        (10, 2, 8, "float16", 85 * 6 + 120),
        # float, 4 columns, 3 rows, 2 a row: 22 + (13 + 3 * 2) * 3 = 79
        (6, 3, 4, "float32", 79 * 6 + 120),
        # half, 20 columns (two of 8, one of 4), 1 row of 4: 30 + (11 + (16 + 2 * 3 * 4) + (13 + 2 * 4)) = 102
        (4, 1, 20, "float16", 102 * 6 + 120),
        # float, 7 columns, 2 rows of 1: 27 + (12 + (12 + 3) + (8 + 3 * 2) + (8 + 2) + 3) * 2 = 135
        (2, 2, 7, "float32", 135 * 6 + 120),
    ]
    for nz, rows, cols, dtype, want in cases:
        assert elementwise_cycles(dev, nz, rows, cols, dtype) == want, (nz, rows, cols, dtype)
    got = elementwise_cycles(dev, np.array([10, 4]), np.array([2, 1]), np.array([8, 20]), "float16")
    np.testing.assert_array_equal(got, [85 * 6 + 120, 102 * 6 + 120])  # vectorised alike
    # far below the AMP: a long row of half non-zeros costs 3 x 6 tile cycles per 8 columns, 16 FLOP each
    per_nonzero = (
        elementwise_cycles(dev, 2000, 1, 8, "float16") - elementwise_cycles(dev, 1000, 1, 8, "float16")
    ) / 1000
    assert per_nonzero == 18 and 16 / per_nonzero < 128 / 16


def test_static_cycles_follow_graphcores_published_estimate():
    """poplibs StaticMatMulPartitioner.cpp, static_::matmulComputeCycles, worked by hand."""
    dev = get_device("mk2")
    cases = [
        # b = 1 half, 2 rows of 5 non-zeros, 8 columns: (31 + 2 (8 + 4 x 3)) x 6
        (10, 1, 2, 8, "float16", 71 * 6),
        # b = 1 float, 3 rows, ceil(7 / 3) = 3 a row, 10 columns: 31 + 3 (12 + 2 (10 + 2 x 3) + (10 + 2 x 2)) = 205
        (7, 1, 3, 10, "float32", 205 * 6),
        # b = 16 half, 4 rows of 3 blocks, 60 columns = 10 a worker: y = 19 + 9 x 4 = 55, coefficients 256 x 2 / 8;
        # 30 + 13 x 6 + 4 (1 x 6 + 17 + 3 (16 + 64 + 55 x 6))
        (12, 16, 4, 60, "float16", 30 + 78 + 4 * (23 + 3 * (80 + 330))),
        # b = 8 float, 2 rows of 1 block, 13 columns = 3 a worker: y = 19 + 2 x 8 = 35, coefficients 64 x 4 / 8;
        # 30 + 13 x 6 + 2 (4 x 6 + 17 + (16 + 32 + 35 x 6)), plus zeroing 2 x 8 x 13 float partials:
        # (12 + ceil(832 x 8 / 64 / 6)) x 6 = 180
        (2, 8, 2, 13, "float32", 30 + 78 + 2 * (41 + 258) + 180),
    ]
    for blocks, b, rows, cols, dtype, want in cases:
        assert static_cycles(dev, blocks, b, rows, cols, dtype) == want, (blocks, b, rows, cols, dtype)
    got = static_cycles(dev, np.array([10, 20]), 1, np.array([2, 2]), np.array([8, 8]), "float16")
    np.testing.assert_array_equal(got, [71 * 6, (31 + 2 * (8 + 9 * 3)) * 6])  # vectorised alike
    # the 16 x 16 half codelet runs at the AMP's peak: 4 worker cycles per block per column, 6 workers
    per_block = (
        static_cycles(dev, 2000, 16, 1, 6000, "float16") - static_cycles(dev, 1000, 16, 1, 6000, "float16")
    ) / 1000
    assert 2 * 256 * 6000 / per_block == pytest.approx(dev.tile_flops_per_cycle("float16"), rel=0.01)


def test_static_cycles_per_element_fall_with_block_size():
    """Why ipu-grows-with-block is a construction fact, not a claim: a tile's share of a 1/16-dense band of W (96 rows
    x 4096) costs fewer cycles per non-zero element at b = 16 than at b = 1, for every column count and both dtypes
    (each block's fixed overhead is shared by its b^2 elements), so the simulated static speed-up at b = 16 exceeds
    b = 1's whatever the plan. Not so for every pair of blocks: with few columns b = 4 costs more than b = 1."""
    dev = get_device("mk2")
    rows, k, density = 96, 4096, 1 / 16
    elements = int(rows * k * density)

    def per_element(b, cols, dtype):
        if b == 1:  # one worker vertex per sixth of the rows, the tile's time is its cycles (x workers inside)
            return static_cycles(dev, elements // 6, 1, rows // 6, cols, dtype) / elements
        return static_cycles(dev, elements // b**2, b, rows // b, cols, dtype) / elements

    for dtype in ("float16", "float32"):
        for cols in (1, 2, 3, 4, 7, 8, 16, 33, 64, 256, 1024, 4096):
            assert per_element(16, cols, dtype) < per_element(1, cols, dtype), (dtype, cols)
    assert per_element(4, 8, "float16") > per_element(1, 8, "float16")


def test_dynamic_block_cycles_follow_graphcores_published_estimate():
    """poplibs PerformanceEstimation.hpp, sparseDenseBlockMultiply (forward, one bucket, retainX), worked by hand:
    (worker overhead + blocks x loads x (inner + cols x per column - 3)) x 6 + 40 + 46 + 56 + blocks x
    (coefficient cycles + 3 + 12 x loads) + x-blocks + 2."""
    dev = get_device("mk2")
    assert dev.conv_units_per_tile("float16", "float32") == 8
    cases = [
        # b = 16 half, 8 conv units for float partials: 2 loads; 10 blocks over 2 rows, 20 columns a worker
        (dev, 10, 16, 2, 20, "float16", (23 + 10 * 2 * (24 + 80 - 3)) * 6 + 142 + 10 * (64 + 3 + 24) + 2 + 2),
        # the same with 16 conv units: 1 load
        (
            get_device("mk2", conv_units={"float16.float16": 16, "float16.float32": 16, "float32.float32": 8}),
            10, 16, 2, 20, "float16", (23 + 10 * (24 + 80 - 3)) * 6 + 142 + 10 * (64 + 3 + 12) + 2 + 2,
        ),
        # b = 4 float, 5 blocks on 5 rows, 3 columns: inner 14, 4 a column, coefficients 16 / 2
        (dev, 5, 4, 5, 3, "float32", (26 + 5 * (14 + 12 - 3)) * 6 + 142 + 5 * (8 + 3 + 12) + 5 + 2),
        # b = 8 half, 3 blocks on 1 row, 2 columns: overhead 20, inner 23, 4 a column, coefficients 64 / 4
        (dev, 3, 8, 1, 2, "float16", (20 + 3 * (23 + 8 - 3)) * 6 + 142 + 3 * (16 + 3 + 12) + 1 + 2),
    ]  # fmt: skip
    for device, blocks, b, xb, cols, dtype, want in cases:
        assert dynamic_block_cycles(device, blocks, b, xb, cols, dtype) == want, (blocks, b, xb, cols, dtype)
    # float 16 x 16: the static float codelet's two passes per block, 2 (29 + 8 n), within the dynamic estimate
    want = (23 + 4 * 2 * (32 + 8 * 5 - 3)) * 6 + 142 + 4 * (128 + 3 + 24) + 1 + 2
    assert dynamic_block_cycles(dev, 4, 16, 1, 5, "float32") == want
    assert 2 * (32 + 8 * 5 - 3) == 2 * (37 + 8 * (5 - 1))  # = the static estimate's y(n)
    # with float partials on 8 conv units the 16 x 16 half codelet peaks at half the AMP's float16 rate
    per_block = (
        dynamic_block_cycles(dev, 2000, 16, 1, 1000, "float16")
        - dynamic_block_cycles(dev, 1000, 16, 1, 1000, "float16")
    ) / 1000
    assert 2 * 256 * 6000 / per_block == pytest.approx(dev.tile_flops_per_cycle("float16") / 2, rel=0.01)


def test_balanced_cuts_and_cost_helpers():
    cuts = balanced_cuts(np.array([5, 0, 0, 0, 1, 1, 1, 1]), 3)
    assert cuts[0] == 0 and cuts[-1] == 8 and np.all(np.diff(cuts) > 0)
    assert list(balanced_cuts(np.array([1, 1]), 5)) == [0, 1, 2]
    from ipu_model.cost import default_vertex_cycles

    dev = get_device("mk2")
    for dtype in ("float16", "float32"):  # the planners' vectorised copy of the engine's formula
        assert vertex_cycles(dev, 3000.0, 500.0, dtype) == np.ceil(default_vertex_cycles(dev, 3000.0, 500.0, dtype))


# ------------------------------------------------------------------------------------------------ benchmark cell
def test_simulate_cell_reports_consistent_figures():
    dev = get_device("mk2", tiles=64)
    cells = {
        kind: simulate_cell(kind, 256, 256, 64, 16, 1 / 8, "float16", dev) for kind in ("dense", "static", "dynamic")
    }
    for cell in cells.values():
        assert cell["fits"], cell
        assert cell["seconds"] == pytest.approx(cell["cycles"] / dev.clock_hz)
        assert cell["tflops"] == pytest.approx(2 * 256 * 256 * 64 / cell["seconds"] / 1e12)
        assert cell["wall"]["total"] > 0 and cell["plan"]
    assert cells["static"]["tflops_actual"] == pytest.approx(cells["static"]["tflops"] / 8, rel=0.01)
    assert cells["dense"]["tflops_actual"] == pytest.approx(cells["dense"]["tflops"])
    with pytest.raises(ValueError, match="kind"):
        simulate_cell("sparse", 256, 256, 64, 16, 1 / 8, "float16", dev)
    tiny = get_device("mk2", tiles=2, memory_per_tile=2048)
    assert not simulate_cell("static", 256, 256, 64, 16, 1 / 8, "float16", tiny)["fits"]


def _strip_wall(rows):
    """The rows without the simulator's own wall times (which differ between runs)."""
    if isinstance(rows, dict):
        return {k: _strip_wall(v) for k, v in rows.items() if k != "wall"}
    if isinstance(rows, list):
        return [_strip_wall(v) for v in rows]
    return rows


def test_speedups_in_two_processes_and_resumed_equal_one_process(tmp_path, monkeypatch):
    dev = get_device("mk2", tiles=32)
    grid = (128, 128, [16, 32], [4, 16], [1 / 4], ["float16"], dev)
    serial = speedups(*grid)
    assert len(serial) == 2 and all(r["static_speedup"] > 0 for r in serial)
    store = tmp_path / "memo"
    calls = []
    parallel = speedups(*grid, cache=CellCache(store, dev), workers=2, log=lambda key, cell: calls.append(key))
    assert _strip_wall(parallel) == _strip_wall(serial)
    assert len(calls) == len(set(calls)) == 2 * (1 + 2 * 2)  # dense + (static, dynamic) x 2 blocks, at 2 ns
    entries = {json.loads(p.read_text())["key"]["cell"]: p.parent for p in store.glob("ipu_cell/*/entry.json")}
    assert set(entries) == set(calls)  # one memo entry per cell
    # a killed run: the store lost its last cells; the rerun simulates only those and gives the same rows
    lost = calls[4:]
    for key in lost:
        shutil.rmtree(entries[key])
    import papers.popsparse.ipu as ipu

    cache = CellCache(store, dev)  # before the stand-in below: the cache's code is the real task's
    simulated, simulate = [], ipu._simulate_task
    monkeypatch.setattr(ipu, "_simulate_task", lambda task: simulated.append(task[0]) or simulate(task))
    resumed_calls = []
    resumed = speedups(*grid, cache=cache, log=lambda key, cell: resumed_calls.append(key))
    assert _strip_wall(resumed) == _strip_wall(serial)
    assert sorted(simulated) == sorted(lost) and sorted(resumed_calls) == sorted(calls)
    assert len(list(store.glob("ipu_cell/*/entry.json"))) == len(calls)
    monkeypatch.undo()
    # resume=False reuses nothing; another device is another key
    assert calls[0] not in CellCache(store, dev, resume=False)
    assert calls[0] in CellCache(store, dev) and calls[0] not in CellCache(store, get_device("mk2", tiles=64))
    # a kind with its own batch sizes: static at n = 32 only, from the cells already simulated; static alone
    only = speedups(*grid, cache=CellCache(store, dev), kind_ns={"static": [32]}, kinds=("static",))
    assert [c["n"] for r in only for c in r["static"]["cells"]] == [32, 32] and "dynamic" not in only[0]
    assert [r["static_speedup"] for r in only] == [
        r["static"]["cells"][1]["tflops"] / r["dense"]["tflops"] for r in serial
    ]
    with pytest.raises(ValueError, match="non-empty subset"):
        speedups(*grid, kinds=("sparse",))


def test_speedups_over_pattern_seeds():
    """Each seed draws its own pattern for the sparse cells; dense (no pattern) is simulated once; a row holds every
    seed's speed-up, their mean, and the seeds' best cells as one (rates averaged)."""
    dev = get_device("mk2", tiles=32)
    grid = (128, 128, [16, 32], [4], [1 / 4], ["float16"], dev)
    calls = []
    (row,) = speedups(*grid, seeds=(0, 1, 2), log=lambda key, cell: calls.append(key))
    assert len(calls) == 2 + 3 * 2 * 2  # dense at 2 ns; (static, dynamic) x 2 ns per seed
    for kind in ("static", "dynamic"):
        alone = [speedups(*grid, seeds=(s,))[0][f"{kind}_speedup"] for s in (0, 1, 2)]
        assert row[f"{kind}_speedups"] == pytest.approx(alone)
        assert row[f"{kind}_speedup"] == pytest.approx(np.mean(alone))
        assert row[kind]["tflops"] / row["dense"]["tflops"] == pytest.approx(np.mean(alone))
    patterns = {tuple(BlockPattern.random((128, 128), 4, 1 / 4, s).cols) for s in (0, 1, 2)}
    assert len(patterns) == 3  # three different patterns behind the three seeds
    with pytest.raises(ValueError, match="distinct pattern seeds"):
        speedups(*grid, seeds=(1, 1))


@pytest.mark.slow
def test_static_fp16_block16_beats_dense_at_4096():
    """The paper's headline cell (m = k = 4096, density 1/16, b = 16, FP16): static sparse beats dense."""
    dev = get_device("mk2")
    dense = simulate_cell("dense", 4096, 4096, 1024, 16, 1 / 16, "float16", dev)
    static = simulate_cell("static", 4096, 4096, 1024, 16, 1 / 16, "float16", dev)
    assert static["tflops"] > 2 * dense["tflops"]
