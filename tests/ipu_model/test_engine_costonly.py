"""Cost-only runs (`Engine.run(evaluate=False)`): the same cycles as a full run, without computing values, while
data-dependent control flow still goes as in a full run."""

import numpy as np
import pytest

from ipu_model import (
    Copy,
    DeviceToHost,
    Engine,
    Execute,
    Graph,
    HostToDevice,
    If,
    RepeatWhileTrue,
    Sequence,
    codelet,
    get_device,
    ops,
)


def _step_cycles(engine):
    """Per program step, in program order: what the profile charged it."""
    return [(s.kind, s.runs, s.sync, s.exchange, s.compute, s.host, s.flops) for s in engine.profile.steps.values()]


def _twin_runs(build, inputs):
    """Build the same program twice; run one fully and one cost-only. Returns both engines and results."""
    full, cost = Engine(*build()), Engine(*build())
    return full, full.run(inputs), cost, cost.run(inputs, evaluate=False)


@pytest.mark.parametrize("shape", [(64, 96, 40), (8, 512, 8)])  # the second splits k: partials and a reduction
def test_matmul_costs_the_same_without_computing(shape):
    m, k, n = shape
    rng = np.random.default_rng(0)
    a_val, b_val = rng.normal(size=(m, k)).astype("float16"), rng.normal(size=(k, n)).astype("float16")

    def build():
        g = Graph(get_device("mk2", tiles=32))
        a, b = g.add_variable((m, k), "float16", "a"), g.add_variable((k, n), "float16", "b")
        g.map_linearly(a)
        g.map_linearly(b)
        prog, c, _ = ops.matmul(g, a, b)
        return g, Sequence(HostToDevice("a", a), HostToDevice("b", b), prog, DeviceToHost(c, "c"))

    full, r_full, cost, r_cost = _twin_runs(build, {"a": a_val, "b": b_val})
    assert r_cost.cycles == r_full.cycles > 0
    assert _step_cycles(cost) == _step_cycles(full)
    ref = (a_val.astype(np.float32) @ b_val.astype(np.float32)).astype("float16")
    np.testing.assert_allclose(r_full.outputs["c"][0].astype(np.float32), ref.astype(np.float32), rtol=2e-2, atol=2e-2)
    assert not r_cost.outputs["c"][0].any()  # nothing was computed: the result is still zero


@codelet(inouts=("count",))
def count_up(count):
    return {"count": count + 1}


@codelet(inputs=("count", "limit"), outputs=("go",))
def below(count, limit):
    return {"go": (count < limit).astype(np.int32)}


@codelet(inputs=("a",), outputs=("out",))
def double(a):
    return {"out": 2 * a}


def test_data_dependent_loop_and_branch_run_as_in_a_full_run():
    """The predicate comes from a vertex reading a counter another vertex increments and a host-streamed limit; a
    branch predicate is copied from the host. A cost-only run must iterate exactly as often."""

    def build():
        g = Graph(get_device("mk2", tiles=8))
        count, limit = g.add_variable(1, "int32", "count"), g.add_variable(1, "int32", "limit")
        go, flag = g.add_variable(1, "int32", "go"), g.add_variable(1, "int32", "flag")
        data = g.add_variable((8, 64), "float32", "data")
        out = g.add_variable((8, 64), "float32", "out")
        for t in (count, limit, go, flag):
            g.set_tile_mapping(t, 0)
        g.map_linearly(data)
        out.var.tile[:] = np.roll(data.var.tile, 64)  # another tile: the body exchanges
        inc, test, work = g.add_compute_set("inc"), g.add_compute_set("test"), g.add_compute_set("work")
        g.add_vertex(inc, count_up, 0, count=count)
        g.add_vertex(test, below, 0, count=count, limit=limit, go=go)
        for row in range(8):
            g.add_vertex(work, double, int(out.tiles()[row, 0]), a=out[row], out=out[row])
        body = Sequence(Copy(data, out), Execute(work), Execute(inc))
        loop = RepeatWhileTrue(Execute(test), go, body)
        branch = If(flag, Sequence(Copy(data, out), Execute(work)))
        prog = Sequence(HostToDevice("limit", limit), HostToDevice("flag", flag), loop, branch)
        return g, prog

    for limit, flag in ((3, 1), (0, 0), (5, 0)):
        full, r_full, cost, r_cost = _twin_runs(build, {"limit": np.array([limit]), "flag": np.array([flag])})
        assert r_cost.cycles == r_full.cycles
        assert _step_cycles(cost) == _step_cycles(full)
        loop_runs = {s.name: s.runs for s in cost.profile.steps.values()}
        assert loop_runs["inc"] == limit


def test_cost_only_runs_accumulate_like_full_runs():
    g = Graph(get_device("mk2", tiles=4))
    x = g.add_variable(256, "float32", "x")
    g.map_linearly(x)
    prog, _ = ops.elementwise(g, "exp", x)
    engine = Engine(g, prog)
    first = engine.run().cycles
    assert engine.run(evaluate=False).cycles == first
    assert engine.profile.runs == 2
    assert engine.profile.total_cycles == 2 * first
