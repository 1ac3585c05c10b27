"""The BSP cost model: exchange, broadcast, compute, worker scheduling, sync and host transfers, each checked
against hand computations or brute-force references written here."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ipu_model import (
    Copy,
    DeviceToHost,
    Engine,
    Execute,
    Graph,
    GraphError,
    HostToDevice,
    Sequence,
    codelet,
    get_device,
    ops,
)
from ipu_model.cost import amp_matmul_cycles, schedule_workers

DEV = get_device("mk2", tiles=8)
SYNC, XRATE, MEMRATE, OVERHEAD, W = (
    DEV.sync_cycles,
    DEV.exchange_bytes_per_cycle,
    DEV.memory_bytes_per_cycle,
    DEV.vertex_overhead_cycles,
    DEV.workers,
)


@codelet(inputs=("a",), outputs=("out",))
def copy_vertex(a):
    return {"out": a.copy()}


@codelet(inputs=("a", "b"), outputs=("out",))
def add_vertex(a, b):
    return {"out": a + b}


def var(g, shape, tiles, dtype="float32", name="x"):
    """A variable with an explicit tile per element (`tiles` broadcast to `shape`)."""
    t = g.add_variable(shape, dtype, name)
    flat = np.broadcast_to(np.asarray(tiles), t.shape).reshape(-1)
    for i, tile in enumerate(flat):
        g.set_tile_mapping(t.flatten()[i], int(tile))
    return t


def run(g, prog, **kw):
    engine = Engine(g, prog)
    engine.run(**kw)
    return engine


# ---------------------------------------------------------------------------------------------------- exchange
def test_exchange_cycles_hand_computed():
    """x: elements 0-9 on tile 0, 10-15 on tile 1; y: 0-2 on tile 0, 3-15 on tile 2. Copy x -> y moves 13 float32:
    tile 0 sends 7 (28 B), tile 1 sends 6 (24 B), tile 2 receives 13 (52 B); 3 stay on tile 0 (12 B)."""
    g = Graph(DEV)
    x = var(g, 16, [0] * 10 + [1] * 6, name="x")
    y = var(g, 16, [0] * 3 + [2] * 13, name="y")
    copy = Copy(x, y)
    engine = run(g, copy)
    s = engine.profile.steps[copy.id]
    assert s.exchange == math.ceil(52 / XRATE) == 13
    assert s.sync == SYNC
    assert s.compute == math.ceil(2 * 12 / MEMRATE)  # the on-tile part: a load and a store per byte
    assert s.exchanged == 52
    np.testing.assert_array_equal(s.tile_bytes, [28, 24, 52, 0, 0, 0, 0, 0])


def test_exchange_rate_is_the_device_field():
    for rate in (1, 4, 8, 7):
        g = Graph(get_device("mk2", tiles=2, exchange_bytes_per_cycle=rate))
        x, y = var(g, 25, 0, name="x"), var(g, 25, 1, name="y")
        copy = Copy(x, y)
        assert run(g, copy).profile.steps[copy.id].exchange == math.ceil(100 / rate)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_twice_the_bytes_never_costs_fewer_exchange_cycles(dtype):
    size = np.dtype(dtype).itemsize
    previous = 0
    for n in range(1, 40):
        cost = []
        for m in (n, 2 * n):
            g = Graph(DEV)
            x = var(g, m, np.arange(m) % 3, dtype, "x")  # sources spread over tiles 0-2
            y = var(g, m, 3 + np.arange(m) % 5, dtype, "y")  # destinations over tiles 3-7
            copy = Copy(x, y)
            s = run(g, copy).profile.steps[copy.id]
            # brute force: the busiest sender or receiver
            sent = np.bincount(np.arange(m) % 3) * size
            received = np.bincount(3 + np.arange(m) % 5) * size
            assert s.exchange == math.ceil(max(sent.max(), received.max()) / XRATE)
            cost.append(s.exchange)
        assert cost[1] >= cost[0] >= previous
        previous = cost[0]


def test_broadcast_charges_the_sender_once_and_every_receiver():
    g = Graph(DEV)
    x = var(g, 3, 0, name="x")
    y = var(g, (7, 3), np.arange(1, 8)[:, None], name="y")  # row r on tile r + 1
    bcast = Copy(x.expand_dims(0).broadcast_to((7, 3)), y)
    engine = run(g, bcast)
    s = engine.profile.steps[bcast.id]
    assert s.exchange == math.ceil(12 / XRATE) == 3  # 12 B out of tile 0 once, 12 B into each receiver
    np.testing.assert_array_equal(s.tile_bytes, [12] * 8)
    assert s.exchanged == 7 * 12
    # the same traffic from 7 distinct rows makes tile 0 send 7 times as much
    g = Graph(DEV)
    x = var(g, (7, 3), 0, name="x")
    y = var(g, (7, 3), np.arange(1, 8)[:, None], name="y")
    copy = Copy(x, y)
    s = run(g, copy).profile.steps[copy.id]
    assert s.exchange == math.ceil(84 / XRATE) == 21
    np.testing.assert_array_equal(s.tile_bytes, [84] + [12] * 7)


def test_local_copy_costs_memory_cycles_and_no_sync():
    g = Graph(DEV)
    x, y = var(g, 100, 5, name="x"), var(g, 100, 5, name="y")
    copy = Copy(x, y)
    s = run(g, copy).profile.steps[copy.id]
    assert (s.sync, s.exchange, s.exchanged) == (0, 0, 0)
    assert s.compute == math.ceil(2 * 400 / MEMRATE) == 34
    assert s.tile_cycles[5] == 34


def random_mapping(data, n):
    kind = data.draw(st.sampled_from(["one", "linear", "explicit"]))
    if kind == "one":
        return np.full(n, data.draw(st.integers(0, 7)))
    if kind == "linear":
        per = data.draw(st.integers(1, max(n, 1)))
        first = data.draw(st.integers(0, 7))
        return (first + np.arange(n) // per) % 8
    return np.array(data.draw(st.lists(st.integers(0, 7), min_size=n, max_size=n)))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_copy_traffic_matches_brute_force(data):
    """Random mappings and views (transposed, sliced, broadcast sources, several pairs): per-tile bytes in and out
    computed element by element."""
    g = Graph(DEV)
    dtype = data.draw(st.sampled_from(["float32", "float16", "int8"]))
    size = np.dtype(dtype).itemsize
    rows, cols = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 7))
    n = rows * cols
    x = var(g, (rows, cols), random_mapping(data, n).reshape(rows, cols), dtype, "x")
    y = var(g, (rows, cols), random_mapping(data, n).reshape(rows, cols), dtype, "y")
    z = var(g, (cols, rows), random_mapping(data, n).reshape(cols, rows), dtype, "z")
    form = data.draw(st.sampled_from(["plain", "transpose", "slice", "broadcast", "two pairs"]))
    event(form)
    if form == "plain":
        pairs = [(x, y)]
    elif form == "transpose":
        pairs = [(x.T, z)]
    elif form == "slice":
        pairs = [(x[:, ::-1][:, : cols // 2 + 1], y[:, cols // 2 :][:, : cols // 2 + 1])]
        pairs = [(s, d) for s, d in pairs if s.shape == d.shape] or [(x, y)]
    elif form == "broadcast":
        pairs = [(x[:1].broadcast_to((rows, cols)), y)]
    else:
        pairs = [(x, y), (x.T, z)]
    copy = Copy([s for s, _ in pairs], [d for _, d in pairs])
    engine = Engine(g, copy)
    values = {t.name: np.arange(1, n + 1).astype(dtype).reshape(t.shape) for t in (x, y, z)}
    engine.write(x, values["x"])
    engine.run()
    # brute force
    bytes_in, local = np.zeros(8), np.zeros(8)
    sent = set()
    for s, d in pairs:
        st_, dt_ = s.tiles().reshape(-1), d.tiles().reshape(-1)
        for e, a, b in zip(s.idx.reshape(-1), st_, dt_, strict=True):
            if a != b:
                bytes_in[b] += size
                sent.add((s.name, int(e), int(a)))
            else:
                local[b] += size
        np.testing.assert_array_equal(d.read(), s.read())  # the data arrived
    bytes_out = np.bincount([a for _, _, a in sent], minlength=8) * size
    stats = engine.profile.steps[copy.id]
    np.testing.assert_array_equal(stats.tile_bytes, bytes_in + bytes_out)
    assert stats.exchanged == bytes_in.sum()
    assert stats.exchange == math.ceil(max(bytes_in.max(), bytes_out.max()) / XRATE)
    assert stats.sync == (SYNC if bytes_in.any() else 0)
    assert stats.compute == np.ceil(2 * local / MEMRATE).max()


@settings(max_examples=80, deadline=None)
@given(
    intervals=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=12),
    points=st.lists(st.integers(0, 60), min_size=1, max_size=10),
)
def test_covered_before_counts_the_union_of_overlapping_intervals(intervals, points):
    """The sent-bytes count of a Copy: positions below x covered by any of several (overlapping, nested, touching,
    empty) intervals, against marking every position."""
    from ipu_model.compiler import _covered_before

    starts = np.array([a for a, _ in intervals], np.int64)
    ends = np.array([a + ln for a, ln in intervals], np.int64)
    marked = np.zeros(80, bool)
    for a, b in zip(starts, ends, strict=True):
        marked[a:b] = True
    x = np.array(points, np.int64)
    np.testing.assert_array_equal(_covered_before(starts, ends, x), [marked[:p].sum() for p in points])


# ----------------------------------------------------------------------------------------------------- compute
def test_compute_bound_and_exchange_bound_are_told_apart():
    g = Graph(DEV)
    a, b = g.add_variable((48, 100), "float32", "a"), g.add_variable((48, 100), "float32", "b")
    g.map_linearly(a)
    g.map_linearly(b)
    prog, _ = ops.elementwise(g, "mul", a, b)  # operands already side by side: no exchange
    totals = run(g, prog).profile.totals()
    assert totals["exchange"] == 0 and totals["compute"] > 0
    assert totals["compute"] > totals["exchange"]

    g = Graph(DEV)
    big_src, big_dst = var(g, 16384, 0, name="src"), var(g, 16384, 1, name="dst")  # 64 KiB, tile 0 -> 1
    p, q = var(g, 1, 1, name="p"), var(g, 1, 1, name="q")
    tiny, _ = ops.elementwise(g, "add", p, q)
    totals = run(g, Sequence(Copy(big_src, big_dst), tiny)).profile.totals()
    assert totals["exchange"] == 16384 * 4 / XRATE
    assert totals["exchange"] > totals["compute"] > 0


def test_default_vertex_cycles_hand_computed():
    """One vertex: overhead + max(flops / per-worker FLOP rate, bytes / per-worker memory rate), rounded up."""
    for dtype, n in (("float32", 10), ("float16", 40), ("int32", 7)):
        g = Graph(DEV)
        a, b, out = (var(g, n, 3, dtype, name) for name in "abo")
        cs = g.add_compute_set()
        g.add_vertex(cs, add_vertex, 3, a=a, b=b, out=out)
        ex = Execute(cs)
        s = run(g, ex).profile.steps[ex.id]
        size = np.dtype(dtype).itemsize
        rate = 128 if dtype == "float16" else 32
        expected = math.ceil(OVERHEAD + max(n / (rate / W), 3 * n * size / (MEMRATE / W)))
        assert s.compute == expected, dtype
        assert s.tile_cycles[3] == expected and s.tile_cycles.sum() == expected
        assert s.flops == n
    # flops-heavy codelet: arithmetic dominates
    heavy = codelet(inputs=("a",), outputs=("out",), flops=lambda a, out: 1000 * a[0])(lambda a: {"out": a})
    g = Graph(DEV)
    a, out = var(g, 8, 0, "float16", "a"), var(g, 8, 0, "float16", "out")
    cs = g.add_compute_set()
    g.add_vertex(cs, heavy, 0, a=a, out=out)
    ex = Execute(cs)
    s = run(g, ex).profile.steps[ex.id]
    assert s.compute == math.ceil(OVERHEAD + 8000 / (128 / W)) == 405
    assert s.flops == 8000


def vertices_compute(count, tile=2, code=copy_vertex):
    g = Graph(DEV)
    a, out = var(g, count, tile, name="a"), var(g, count, tile, name="out")
    cs = g.add_compute_set()
    for v in range(count):
        g.add_vertex(cs, code, tile, a=a[v : v + 1], out=out[v : v + 1])
    ex = Execute(cs)
    return run(g, ex).profile.steps[ex.id].compute


def test_six_workers_run_six_vertices_at_once():
    one = vertices_compute(1)
    assert one == math.ceil(OVERHEAD + 8 / (MEMRATE / W))
    for count in range(1, 7):
        assert vertices_compute(count) == one
    assert vertices_compute(7) == 2 * one
    assert vertices_compute(12) == 2 * one
    assert vertices_compute(13) == 3 * one


def test_custom_cycles_are_scheduled_greedily():
    costs = [3, 1, 1, 1, 1, 1, 5, 4, 2]
    code = codelet(inputs=("a",), outputs=("out",), cycles=lambda dev, a, out: float(costs[a[0] - 1]))(
        lambda a: {"out": a}
    )
    g = Graph(DEV)
    cs = g.add_compute_set()
    for v in range(len(costs)):  # field shapes tell the cycles function which vertex it prices
        a, out = var(g, v + 1, 0, name="a"), var(g, v + 1, 0, name="o")
        g.add_vertex(cs, code, 0, a=a, out=out)
    ex = Execute(cs)
    # workers 0-5 take 3,1,1,1,1,1; 5 -> worker 1 (free first, at 1; ends 6); 4 -> worker 2 (ends 5); 2 -> worker 3
    assert run(g, ex).profile.steps[ex.id].compute == 6


def brute_force_schedule(tiles, cycles, num_tiles, workers):
    free = [[0.0] * workers for _ in range(num_tiles)]
    worker = []
    for t, c in zip(tiles, cycles, strict=True):
        w = min(range(workers), key=lambda k: (free[t][k], k))
        worker.append(w)
        free[t][w] += c
    return np.array(worker, dtype=np.int64), np.array([max(f) for f in free])


@settings(max_examples=60, deadline=None)
@given(
    num_tiles=st.integers(1, 5),
    workers=st.integers(1, 6),
    data=st.data(),
)
def test_schedule_workers_matches_brute_force(num_tiles, workers, data):
    n = data.draw(st.integers(0, 30))
    tiles = data.draw(st.lists(st.integers(0, num_tiles - 1), min_size=n, max_size=n))
    # positive costs, as every real vertex has (the launch overhead at least); integers make ties common
    cycles = data.draw(st.lists(st.one_of(st.integers(1, 20), st.floats(0.5, 100)), min_size=n, max_size=n))
    worker, makespan = schedule_workers(np.array(tiles, np.int64), np.array(cycles, float), num_tiles, workers)
    ref_worker, ref_makespan = brute_force_schedule(tiles, cycles, num_tiles, workers)
    np.testing.assert_array_equal(worker, ref_worker)
    np.testing.assert_array_equal(makespan, ref_makespan)


def test_schedule_workers_crowded_tile_example():
    tiles = np.array([0, 1, 0, 0, 0, 1, 0])
    cycles = np.array([5.0, 2.0, 1.0, 1.0, 3.0, 2.0, 1.0])
    worker, makespan = schedule_workers(tiles, cycles, 2, 2)
    # tile 0, 2 workers: 5->w0, 1->w1 (1), 1->w1 (2), 3->w1 (5), 1->w0 ties at 5: lowest id -> w0 (6)
    np.testing.assert_array_equal(worker, [0, 0, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(makespan, [6.0, 2.0])


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
def test_more_rows_never_fewer_cycles(dtype):
    previous = 0.0
    for rows in range(1, 41):
        g = Graph(DEV)
        a, b = g.add_variable((rows, 5), dtype, "a"), g.add_variable((rows, 5), dtype, "b")
        g.map_linearly(a)
        g.map_linearly(b)
        prog, _ = ops.elementwise(g, "add", a, b)
        compute = run(g, prog).profile.totals()["compute"]
        assert compute >= previous, rows
        previous = compute
    assert previous > vertices_compute(1)


# ---------------------------------------------------------------------------------------- AMP matmul vertex
def _amp_reference(rows, inner, cols, acts, partials, units, workers=6, load_bytes=8):
    """poplin's ConvPartial1x1Out estimate (lib/poplin/PerformanceEstimation.hpp), transcribed here case by case
    from the published functions, with the worker list as poplin builds it: the rows split near-equally over the
    contexts, a worker with no rows having no work list entry."""
    fa, fp = acts == "float32", partials == "float32"
    retention = (7, 3) if not fa and (fp or units == 16) else (0, 0)
    common = (not fa and units == 16) or fp
    core = 8 if fa else 4
    zpg = 8 if fa and units == 16 else 4 if fp else 2
    bounds = [round(i * rows / workers) for i in range(workers + 1)]
    parts = [b - a for a, b in itertools.pairwise(bounds)]

    def inner_loop(zeroing):
        z = 1 if zeroing else 0
        most, least = 0, None
        for e in parts:
            if e == 0:
                this = 0
            elif fa:
                this = {1: 47 + (2 + zpg) * z, 2: 46 + (2 + zpg * 2) * z}.get(
                    e, 46 + (2 + zpg * e) * z + (e - 3) * core
                )
            elif common:
                this = {1: 31 + (1 if z else 2), 2: 40 + (1 if z else 2)}.get(e, (37 if z else 38) + (e - 3) * core)
            else:
                this = {1: 39 + (2 + zpg) * z, 2: 40 + (2 + zpg * 2) * z}.get(
                    e, 41 + (2 + zpg * e) * z + (e - 3) * core
                )
            if e:
                this -= retention[0]
            most = max(most, workers * this)
            least = workers * this if least is None else min(least, workers * this)
        return max(most, least + 14)

    n_in, n_out = -(-inner // 16), -(-cols // units)
    loads = units * 16 * (4 if fa else 2) // load_bytes
    return (
        50
        + workers * (retention[0] + retention[1] * (n_in - 1))
        + 12
        + common
        + (n_in - 1) * (15 - common + 1 + n_out * (19 + 6 + loads + inner_loop(False)))
        + 10
        + 1
        + n_out * (19 - common + 7 + loads + inner_loop(True))
    )


def test_amp_matmul_cycles_hand_computed():
    """float16 with float16 partials (16 units), 12 x 32 x 16: two input groups, one output group, two rows per
    worker; half code path with retention savings (7, 3); 64 cycles of coefficient loads per pass.
    Worker: 40 + 1 - 7 = 34 (zeroing), 35 (not) thread cycles, x 6 = 204 / 210, + 14 for the tag = 218 / 224.
    50 + 6 (7 + 3) + 12 + 1 + (15 - 1 + 1 + (19 + 6 + 64 + 224)) + (10 + 1 + (19 - 1 + 7 + 64 + 218)) = 769.
    float32, 7 x 16 x 8 (8 units): 2 and 1 rows per worker: 6 (46 + 2 + 8) = 336 against 6 (47 + 6) + 14 = 332;
    50 + 12 + 1 + (10 + 1 + (19 - 1 + 7 + 64 + 336)) = 499."""
    assert amp_matmul_cycles(DEV, 12, 32, 16, "float16", "float16") == 769
    assert amp_matmul_cycles(DEV, 7, 16, 8, "float32", "float32") == 499


@pytest.mark.parametrize(("acts", "partials"), [("float16", "float16"), ("float16", "float32"), ("float32", "float32")])
def test_amp_matmul_cycles_match_the_published_estimate(acts, partials):
    """The vectorised estimate against the case-by-case transcription above, over shapes that hit every branch
    (1, 2, 3+ rows per worker, idle workers, partial groups), and the Mk1 device (8 half/half units: the non-common
    half path)."""
    rows = np.array([1, 2, 5, 6, 7, 12, 13, 100, 587])
    inner = np.array([1, 16, 17, 64, 300])
    cols = np.array([1, 8, 9, 16, 33, 256])
    r, i, c = (x.ravel() for x in np.meshgrid(rows, inner, cols, indexing="ij"))
    for dev in (DEV, get_device("mk1")):
        units = dev.conv_units_per_tile(acts, partials)
        got = amp_matmul_cycles(dev, r, i, c, acts, partials)
        want = [_amp_reference(int(a), int(b), int(d), acts, partials, units) for a, b, d in zip(r, i, c, strict=True)]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("acts", "partials", "peak"), [("float16", "float16", 128), ("float32", "float32", 32)])
def test_amp_matmul_approaches_the_tile_peak(acts, partials, peak):
    """A large block runs near the tile's peak FLOP/cycle (the worker loop's 4 / 8 cycles per row and group pair),
    thin ones far below it (an output group of 16 half or 8 float channels a quarter or half filled)."""
    big = 2 * 1200 * 512 * 256 / amp_matmul_cycles(DEV, 1200, 512, 256, acts, partials)
    assert 0.9 * peak < big <= peak
    thin = 2 * 1200 * 512 * 4 / amp_matmul_cycles(DEV, 1200, 512, 4, acts, partials)
    assert thin <= peak * 4 / DEV.conv_units_per_tile(acts, partials)  # 4 columns of an output group of 16 (8)
    # float16 inputs with float32 partials run on half the conv units (an assumption for Mk2: device.py)
    half_units = 2 * 1200 * 512 * 256 / amp_matmul_cycles(DEV, 1200, 512, 256, "float16", "float32")
    assert 0.45 * 128 < half_units <= 0.5 * 128


def test_engine_charges_each_tile_the_amp_estimate():
    """The matmul's multiply step costs its busiest tile's AMP estimate, the same figure the planner used."""
    g = Graph(DEV)
    a, b = g.add_variable((50, 40), "float16", "a"), g.add_variable((40, 70), "float16", "b")
    g.map_linearly(a)
    g.map_linearly(b)
    prog, _, _ = ops.matmul(g, a, b, plan=ops.MatmulPlan(2, 1, 3), partials="float16")
    engine = run(g, prog)
    multiply = next(s for s in engine.profile.steps.values() if s.name.endswith("multiply"))
    assert multiply.compute == amp_matmul_cycles(DEV, 25, 40, 24, "float16", "float16")
    assert multiply.tiles_used == 6


def test_matmul_partials_are_checked():
    g = Graph(DEV)
    a, b = g.add_variable((8, 8), "float32", "a"), g.add_variable((8, 8), "float32", "b")
    g.map_linearly(a)
    g.map_linearly(b)
    with pytest.raises(Exception, match="partials 'float16' with float32 inputs"):
        ops.matmul(g, a, b, partials="float16")
    with pytest.raises(Exception, match="partials 'int32'"):
        ops.matmul(g, a, b, partials="int32")


# -------------------------------------------------------------------------------------------------------- sync
def test_sync_is_paid_once_per_superstep():
    g = Graph(DEV)
    x, y = var(g, 6, 0, name="x"), var(g, 6, 1, name="y")
    z = var(g, 6, 1, name="z")
    cs_a, cs_b, cs_c = (g.add_compute_set(n) for n in "abc")
    for cs in (cs_a, cs_b, cs_c):
        g.add_vertex(cs, copy_vertex, 1, a=y, out=z)
    first = Execute(cs_a, name="first")
    remote = Copy(x, y, name="remote")
    after_copy = Execute(cs_b, name="after_copy")
    after_execute = Execute(cs_c, name="after_execute")
    local = Copy(z, y, name="local")
    after_local = Execute(cs_a, name="after_local")
    host = HostToDevice("in", x, name="host")
    after_host = Execute(cs_b, name="after_host")
    out = DeviceToHost(z, "out", name="out")
    prog = Sequence(first, remote, after_copy, after_execute, local, after_local, host, after_host, out)
    engine = run(g, prog, inputs={"in": np.zeros(6)})
    sync = {s.name: s.sync for s in engine.profile.steps.values()}
    assert sync == {
        prog.name: 0,
        "first": SYNC,  # the program's first superstep
        "remote": SYNC,  # an exchange starts with a sync...
        "after_copy": 0,  # ...which the compute after it shares
        "after_execute": SYNC,  # back-to-back compute sets: one sync each
        "local": 0,  # an on-tile copy needs no exchange
        "after_local": SYNC,
        "host": SYNC,
        "after_host": 0,
        "out": SYNC,
    }
    assert engine.profile.totals()["sync"] == 6 * SYNC


def test_host_transfer_cycles_hand_computed():
    """A host copy costs the slower of the link (one direction: 32 GB/s) and the busiest receiving tile."""
    link = 64e9 / 2 / 1.33e9  # bytes per cycle, about 24.06
    for tiles, expected in (([0], max(4000 / link, 4000 / XRATE)), (list(range(8)), max(4000 / link, 500 / XRATE))):
        g = Graph(DEV)
        x = g.add_variable(1000, "float32", "x")
        g.map_linearly(x, tiles=tiles)
        h2d, d2h = HostToDevice("in", x), DeviceToHost(x, "out")
        engine = run(g, Sequence(h2d, d2h), inputs={"in": np.ones(1000)})
        for p in (h2d, d2h):
            s = engine.profile.steps[p.id]
            assert s.host == math.ceil(expected)
            assert (s.sync, s.exchanged) == (SYNC, 4000)
    assert math.ceil(4000 / link) == 167  # spread over 8 tiles the link is the bottleneck


def test_a_remote_read_copies_the_rows_its_offsets_name_and_costs_the_streaming_link():
    """Streaming memory: 15.75 GB/s a direction (PCIe Gen4 x8: 16e9 x 8 x 128/130 / 8), so on an Mk2 at 1.33 GHz
    11.84 bytes a cycle; the slower of that link and the busiest receiving tile's exchange, after one sync."""
    from ipu_model.programs import RemoteBuffer, RemoteRead

    assert DEV.streaming_bytes_per_second == pytest.approx(16e9 * 8 * 128 / 130 / 8)
    link = DEV.streaming_bytes_per_second / DEV.clock_hz
    buf = RemoteBuffer("K", rows=50, row=20, dtype="float32")
    buf.data[:] = np.arange(1000, dtype=np.float32).reshape(50, 20)
    for tiles in ([0], list(range(8))):
        g = Graph(DEV)
        offsets = g.add_variable(6, "int32", "offsets")
        g.map_linearly(offsets)
        rows = g.add_variable((6, 20), "float32", "rows")
        g.map_linearly(rows, tiles=tiles)
        read = RemoteRead(buf, rows, offsets)
        engine = Engine(g, Sequence(read))
        engine.write(offsets, [3, 0, 49, 3, 7, 12])
        engine.run()
        np.testing.assert_array_equal(engine.read(rows), buf.data[[3, 0, 49, 3, 7, 12]])
        s = engine.profile.steps[read.id]
        nbytes = 6 * 20 * 4
        assert (s.sync, s.stream) == (SYNC, math.ceil(max(nbytes / link, nbytes / len(tiles) / XRATE)))
    engine.write(offsets, [50, 0, 0, 0, 0, 0])
    with pytest.raises(IndexError, match="offset 50 is outside 'K'"):
        engine.run()
    cost_only = engine.run(evaluate=False)  # the offsets are not read: the same bytes whatever they name
    assert cost_only.cycles == SYNC + math.ceil(max(480 / link, 60 / XRATE))
    with pytest.raises(GraphError, match="need a destination of 120 float32 elements"):
        RemoteRead(buf, g.add_variable((5, 20), "float32", "short"), offsets)
