"""The Profile: totals, per-step statistics, the text report, the figure and the JSON form."""

import json

import numpy as np
import pytest

from ipu_model import (
    Copy,
    DeviceToHost,
    Engine,
    Execute,
    Graph,
    HostToDevice,
    Repeat,
    Sequence,
    codelet,
    get_device,
    ops,
)

DEV = get_device("mk2", tiles=8)


def profiled_program(runs=2):
    g = Graph(DEV)
    x = g.add_variable((16, 12), "float32", "x")
    g.map_linearly(x)
    y = g.add_variable((16, 12), "float32", "y")
    g.map_linearly(y, tiles=[7, 6, 5])
    scale, out = ops.elementwise(g, "mul", x, x, name="square")
    total, s = ops.reduce(g, out, axis=1, name="rowsum")
    prog = Sequence(
        HostToDevice("x", x, name="load"),
        Repeat(3, Sequence(scale, Copy(out, y, name="move"), name="body"), name="loop"),
        total,
        DeviceToHost(s, "s", name="store"),
        name="main",
    )
    engine = Engine(g, prog)
    for _ in range(runs):
        engine.run({"x": np.ones((16, 12))})
    return engine, prog


def test_totals_add_up():
    engine, _ = profiled_program(runs=2)
    p = engine.profile
    tot = p.totals()
    steps = list(p.steps.values())
    for key in ("sync", "exchange", "compute", "host"):
        assert tot[key] == pytest.approx(sum(getattr(s, key) for s in steps))
        assert tot[key] > 0
    assert tot["cycles"] == pytest.approx(tot["sync"] + tot["exchange"] + tot["compute"] + tot["host"])
    assert tot["cycles"] == p.total_cycles
    assert p.runs == 2 and tot["cycles_per_run"] == pytest.approx(tot["cycles"] / 2)
    assert tot["seconds_per_run"] == pytest.approx(tot["cycles"] / 2 / DEV.clock_hz)
    assert tot["memory_bytes"] == p.memory.total.sum()
    assert tot["memory_max_tile_bytes"] == p.memory.total.max()
    assert tot["flops"] == 2 * (3 * 16 * 12 + 16 * 12)  # 3 squarings and one row sum of 192 elements per run
    by_name = {s.name: s for s in steps}
    assert by_name["move"].runs == 6 and by_name["loop"].runs == 2 and by_name["main"].runs == 2
    assert by_name["move"].exchanged == pytest.approx(
        tot["bytes_exchanged"] - sum(s.exchanged for s in steps if s.name != "move")
    )


def test_inclusive_cycles_of_the_root_are_the_total():
    engine, _ = profiled_program(runs=1)
    d = engine.profile.to_dict()
    root = d["steps"][0]
    assert root["name"] == "main" and root["depth"] == 0
    assert root["cycles"] == pytest.approx(d["totals"]["cycles"])
    loop = next(s for s in d["steps"] if s["name"] == "loop")
    body = next(s for s in d["steps"] if s["name"] == "body")
    assert loop["cycles"] == pytest.approx(body["cycles"]) and body["runs"] == 3


def test_report_names_every_step_and_the_memory():
    engine, _ = profiled_program()
    text = engine.profile.report()
    names = {s.name for s in engine.profile.steps.values()}
    assert names >= {"main", "load", "loop", "body", "square", "move", "rowsum", "store"}  # the program's own names
    for name in names:
        assert name in text
    assert "memory:" in text and "busiest tile" in text
    assert f"{DEV.tiles} tiles x {DEV.workers} workers" in text
    per_run = engine.profile.totals()["cycles_per_run"]
    assert f"per run: {per_run:,.0f} cycles" in text


def test_figure_has_a_memory_and_a_cycle_map():
    from matplotlib.figure import Figure
    from matplotlib.pyplot import close

    engine, _ = profiled_program()
    fig = engine.profile.figure(title="test")
    try:
        assert isinstance(fig, Figure)
        maps = [ax for ax in fig.axes if ax.images]
        assert len(maps) == 2
        memory, cycles = (ax.images[0].get_array() for ax in maps)
        assert "memory" in maps[0].get_title() and "cycles" in maps[1].get_title()
        p = engine.profile
        assert np.nansum(memory) == pytest.approx(p.memory.total.sum() / 1024)
        assert np.nansum(cycles) == pytest.approx(sum(s.tile_cycles.sum() for s in p.steps.values()))
    finally:
        close(fig)


def test_to_dict_is_json():
    engine, _ = profiled_program()
    d = engine.profile.to_dict()
    text = json.dumps(d, default=float, allow_nan=False)
    back = json.loads(text)
    assert back["device"] == "mk2" and back["runs"] == 2
    assert len(back["steps"]) == len(engine.profile.steps)
    assert back["totals"]["cycles"] == pytest.approx(engine.profile.total_cycles)


def test_fraction_of_peak_by_hand():
    g = Graph(DEV)
    a, b = g.add_variable((48, 40), "float16", "A"), g.add_variable((40, 24), "float16", "B")
    g.map_linearly(a)
    g.map_linearly(b)
    prog, _, _ = ops.matmul(g, a, b)
    engine = Engine(g, prog)
    engine.run()
    engine.run()
    flops = 2 * 48 * 40 * 24
    seconds = engine.profile.total_cycles / 2 / DEV.clock_hz
    expected = flops / seconds / (128 * DEV.tiles * DEV.clock_hz)
    assert engine.profile.fraction_of_peak(flops, "float16") == pytest.approx(expected)
    assert engine.profile.fraction_of_peak(flops, "float32") == pytest.approx(4 * expected)
    assert 0 < expected < 1


def test_balance_and_tiles_used():
    code = codelet(inputs=("a",), outputs=("out",), cycles=lambda dev, a, out: 50.0 * a[0])(lambda a: {"out": a})
    g = Graph(DEV)
    x = g.add_variable(3, "float32", "x")
    g.set_tile_mapping(x[:2], 0)
    g.set_tile_mapping(x[2:], 4)
    cs = g.add_compute_set("uneven")
    g.add_vertex(cs, code, 0, a=x[:2], out=x[:2])  # 100 cycles on tile 0
    g.add_vertex(cs, code, 4, a=x[2:], out=x[2:])  # 50 cycles on tile 4
    ex = Execute(cs)
    engine = Engine(g, Sequence(ex, Copy(x[:1], x[2:])))
    engine.run()
    s = engine.profile.steps[ex.id]
    assert s.compute == 100 and s.tiles_used == 2
    assert s.balance == pytest.approx(0.75)  # mean 75 over the busiest 100
    np.testing.assert_array_equal(np.flatnonzero(s.tile_cycles), [0, 4])
    assert engine.profile.to_dict()["steps"][1]["balance"] == pytest.approx(0.75)
