"""The Engine: running codelets and control flow, host streams, and the checks made at compile time."""

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from core.random.ipu import ipu_seed_state
from core.random.xoroshiro import aox_generate
from ipu_model import (
    Copy,
    DeviceToHost,
    DynamicCopy,
    Engine,
    Execute,
    Graph,
    GraphError,
    HostToDevice,
    If,
    OutOfMemoryError,
    RemoteAccessError,
    Repeat,
    RepeatWhileTrue,
    Sequence,
    WriteConflictError,
    codelet,
    get_device,
)

SYNC = get_device("mk2").sync_cycles


@codelet(inputs=("a",), outputs=("out",))
def copy_vertex(a):
    return {"out": a.copy()}


@codelet(inouts=("c",))
def increment(c):
    return {"c": c + 1}


def on_tile(g, shape, tile, dtype="int32", name="x"):
    t = g.add_variable(shape, dtype, name)
    g.set_tile_mapping(t, tile)
    return t


# ------------------------------------------------------------------------------------------------ codelets
def test_handwritten_codelet_with_inout_fields_matches_numpy():
    seen_shapes = []

    @codelet(inputs=("alpha", "x"), inouts=("y",), outputs=("norm",))
    def axpy(alpha, x, y):
        seen_shapes.append((alpha.shape, x.shape, y.shape))
        y_new = y + alpha[..., None] * x  # alpha [vertices, rows], x and y [vertices, rows, cols]
        return {"y": y_new, "norm": np.sum(y_new * y_new, axis=-1, keepdims=True)}

    g = Graph(4)
    rows, cols = 6, 5
    alpha = g.add_variable(rows, "float32", "alpha")
    x = g.add_variable((rows, cols), "float32", "x")
    y = g.add_variable((rows, cols), "float32", "y")
    norm = g.add_variable((rows, 1), "float32", "norm")
    cs = g.add_compute_set("axpy")
    tile_of_row = [0, 0, 1, 2, 3, 3]
    for r, tile in enumerate(tile_of_row):
        for t in (alpha[r], x[r], y[r], norm[r]):
            g.set_tile_mapping(t, tile)
    for r, tile in enumerate(tile_of_row[:4]):  # rows 0..3: one vertex per row
        g.add_vertex(cs, axpy, tile, alpha=alpha[r : r + 1], x=x[r : r + 1], y=y[r : r + 1], norm=norm[r : r + 1])
    g.add_vertex(cs, axpy, 3, alpha=alpha[4:6], x=x[4:6], y=y[4:6], norm=norm[4:6])  # rows 4, 5: other shapes
    engine = Engine(g, Repeat(2, Execute(cs)))
    rng = np.random.default_rng(0)
    a0, x0, y0 = (rng.standard_normal(s).astype(np.float32) for s in (rows, (rows, cols), (rows, cols)))
    for t, v in ((alpha, a0), (x, x0), (y, y0)):
        engine.write(t, v)
    engine.run()
    ref = y0.copy()
    for _ in range(2):
        ref = ref + a0[:, None] * x0
    np.testing.assert_array_equal(engine.read(y), ref)
    np.testing.assert_allclose(engine.read(norm)[:, 0], np.sum(ref**2, axis=1), rtol=1e-6)
    # vertices sharing a signature run as one batched call, with a leading vertex axis
    one_run = {((4, 1), (4, 1, cols), (4, 1, cols)), ((1, 2), (1, 2, cols), (1, 2, cols))}
    assert len(seen_shapes) == 4 and set(seen_shapes) == one_run


def test_codelet_errors_are_graph_errors():
    @codelet(inputs=("a",), outputs=("out",))
    def wrong_shape(a):
        return {"out": a[:, :-1]}

    @codelet(inputs=("a",), outputs=("out",))
    def not_a_dict(a):
        return a

    @codelet(inputs=("a",), outputs=("out",))
    def missing(a):
        return {"result": a}

    for code, match in ((wrong_shape, r"shape \(2, 3\), expected \(2, 4\)"), (not_a_dict, "dict"), (missing, "out")):
        g = Graph(2)
        a, out = on_tile(g, (2, 4), 0, name="a"), on_tile(g, (2, 4), 0, name="out")
        cs = g.add_compute_set()
        for r in range(2):
            g.add_vertex(cs, code, 0, a=a[r], out=out[r])
        engine = Engine(g, Execute(cs))
        with pytest.raises(GraphError, match=match):
            engine.run()


def test_random_codelet_draws_from_its_workers_stream_in_turn():
    """7 vertices on one tile: 6 workers start one each; the 7th waits for worker 0 and continues its stream."""

    @codelet(outputs=("out",), random=True)
    def draw2(rng, shapes):
        assert shapes == {"out": (2,)}
        return {"out": rng(2)}

    g = Graph(get_device("mk2", tiles=2))
    out = on_tile(g, (7, 2), 1, "uint32", "out")  # uint32 keeps the low 32 bits of each 64-bit output
    cs = g.add_compute_set()
    for v in range(7):
        g.add_vertex(cs, draw2, 1, out=out[v])
    engine = Engine(g, Execute(cs), seed=1234, seed_modifier=5)
    engine.run()
    s0, s1 = ipu_seed_state(1234, 5, 2, 6)
    stream = aox_generate(s0[1], s1[1], 4)  # [worker, 4 outputs]
    expected = np.concatenate([stream[:, :2], stream[:1, 2:4]]).astype(np.uint32)
    np.testing.assert_array_equal(engine.read(out), expected)
    engine.run()  # the streams continue: worker 0 drew 4 values, the others 2
    stream = aox_generate(s0[1], s1[1], 8)
    expected = np.concatenate([stream[:1, 4:6], stream[1:, 2:4], stream[:1, 6:8]]).astype(np.uint32)
    np.testing.assert_array_equal(engine.read(out), expected)


def test_per_vertex_jax_codelet_is_vmapped_over_the_batch():
    import jax.numpy as jnp

    @codelet(inputs=("a", "b"), outputs=("out",), inouts=("acc",), vectorised=False)
    def dot_step(a, b, acc):  # one vertex: a, b [n], acc [1]
        return {"out": a * b + 1, "acc": acc + jnp.sum(a * b)}

    g = Graph(4)
    a, b, out = (g.add_variable((4, 5), "int32", n) for n in ("a", "b", "out"))
    acc = g.add_variable((4, 1), "int32", "acc")
    for t in (a, b, out, acc):
        g.map_linearly(t)  # one row per tile
    cs = g.add_compute_set("dot")
    for r in range(4):
        g.add_vertex(cs, dot_step, r, a=a[r], b=b[r], out=out[r], acc=acc[r])
    engine = Engine(g, Repeat(3, Execute(cs)))
    rng = np.random.default_rng(3)
    x, y = rng.integers(-9, 10, (4, 5)), rng.integers(-9, 10, (4, 5))
    engine.write(a, x)
    engine.write(b, y)
    engine.write(acc, 7)
    engine.run()
    np.testing.assert_array_equal(engine.read(out), x * y + 1)
    np.testing.assert_array_equal(engine.read(acc)[:, 0], 7 + 3 * (x * y).sum(axis=1))
    assert engine.read(acc).dtype == np.int32


@pytest.mark.slow  # ~21 s (2026-11-29): 15 compilations against a cache keyed by address (engine._VMAPPED is keyed
# by the codelet itself); test_per_vertex_jax_codelet_is_vmapped_over_the_batch checks per-vertex codelets in make test
def test_per_vertex_codelets_are_never_confused():
    import gc

    def add_k(k):
        code = codelet(inputs=("a",), outputs=("out",), vectorised=False)(lambda a: {"out": a + k})
        g = Graph(1)
        a, out = on_tile(g, 3, 0, "float32", "a"), on_tile(g, 3, 0, "float32", "out")
        cs = g.add_compute_set()
        g.add_vertex(cs, code, 0, a=a, out=out)
        engine = Engine(g, Execute(cs))
        engine.run()
        return engine.read(out)

    for k in range(15):  # codelets die with their graphs; CPython soon reuses an address (within ~5-12 here)
        gc.collect()
        np.testing.assert_array_equal(add_k(k), [k, k, k], err_msg=f"codelet {k}")


# ------------------------------------------------------------------------------------------------ control flow
def test_repeat_runs_its_body_count_times():
    g = Graph(2)
    c = on_tile(g, (), 1, name="c")
    cs = g.add_compute_set("inc")
    g.add_vertex(cs, increment, 1, c=c)
    body = Execute(cs)
    prog = Sequence(Repeat(5, body), Repeat(0, body))
    engine = Engine(g, prog)
    engine.run()
    assert engine.read(c) == 5
    engine.run()
    assert engine.read(c) == 10
    assert engine.profile.steps[body.id].runs == 10
    assert engine.profile.steps[prog.id].runs == 2
    assert engine.profile.runs == 2


@pytest.mark.parametrize("predicate", [1, 0, 7, -1])
def test_if_takes_the_branch_the_predicate_says(predicate):
    g = Graph(4)
    pred = on_tile(g, (1,), 2, name="pred")
    then_src = g.add_constant(np.array([10, 11, 12], np.int32), name="then", tile=0)
    else_src = g.add_constant(np.array([20, 21, 22], np.int32), name="else", tile=1)
    out = on_tile(g, 3, 3, name="out")
    then, otherwise = Copy(then_src, out, name="then"), Copy(else_src, out, name="else")
    prog = If(pred, then, otherwise, name="if")
    engine = Engine(g, prog)
    engine.write(pred, predicate)
    engine.run()
    np.testing.assert_array_equal(engine.read(out), [10, 11, 12] if predicate else [20, 21, 22])
    steps = engine.profile.steps
    assert (steps[then.id].runs, steps[otherwise.id].runs) == ((1, 0) if predicate else (0, 1))
    assert steps[prog.id].sync == SYNC  # the branch decision is one sync


def test_if_without_else_does_nothing_when_false():
    g = Graph(2)
    pred = on_tile(g, (), 0, "float32", "pred")
    c = on_tile(g, (), 0, name="c")
    cs = g.add_compute_set()
    g.add_vertex(cs, increment, 0, c=c)
    engine = Engine(g, Repeat(3, If(pred, Execute(cs))))
    engine.write(pred, 0.0)
    engine.run()
    assert engine.read(c) == 0
    engine.write(pred, 0.5)
    engine.run()
    assert engine.read(c) == 3


def counter_loop(n: int, max_iterations: int = 1_000_000):
    """c += 1 while c < n: the condition is a codelet computing p = c < n."""
    g = Graph(2)
    c, p = on_tile(g, (), 1, name="c"), on_tile(g, (), 1, name="p")
    limit = g.add_constant(np.int32(n), name="n", tile=1)

    @codelet(inputs=("c", "n"), outputs=("p",))
    def less(c, n):
        return {"p": (c < n).astype(np.int32)}

    cond_cs, body_cs = g.add_compute_set("cond"), g.add_compute_set("body")
    g.add_vertex(cond_cs, less, 1, c=c, n=limit, p=p)
    g.add_vertex(body_cs, increment, 1, c=c)
    cond, body = Execute(cond_cs), Execute(body_cs)
    loop = RepeatWhileTrue(cond, p, body, name="loop", max_iterations=max_iterations)
    return g, c, loop, cond, body


@pytest.mark.parametrize("n", [0, 1, 6])
def test_repeat_while_true_counts_to_n(n):
    g, c, loop, cond, body = counter_loop(n)
    engine = Engine(g, loop)
    engine.run()
    assert engine.read(c) == n
    steps = engine.profile.steps
    assert (steps[loop.id].runs, steps[cond.id].runs, steps[body.id].runs) == (1, n + 1, n)
    assert steps[loop.id].sync == (n + 1) * SYNC  # one sync per predicate test
    engine.run()  # c is not reset: the condition fails at once
    assert engine.read(c) == max(n, 0)
    assert steps[cond.id].runs == n + 2


def test_repeat_while_true_gives_up_after_max_iterations():
    g, _, loop, _, _ = counter_loop(50, max_iterations=10)
    engine = Engine(g, loop)
    with pytest.raises(RuntimeError, match="10 iterations"):
        engine.run()


def test_repeat_while_true_may_run_exactly_max_iterations():
    g, c, loop, _, _ = counter_loop(3, max_iterations=3)
    engine = Engine(g, loop)
    engine.run()
    assert engine.read(c) == 3


# --------------------------------------------------------------------------------------------------- host I/O
def test_host_streams_lists_are_consumed_per_read_and_outputs_collected():
    g = Graph(4)
    x = g.add_variable((2, 3), "float32", "x")
    g.map_linearly(x)
    y = g.add_variable((2, 3), "float32", "y")
    g.map_linearly(y, tiles=[3, 2])

    @codelet(inputs=("a",), outputs=("out",))
    def double(a):
        return {"out": 2 * a}

    cs = g.add_compute_set("double")
    tmp = g.add_variable((2, 3), "float32", "tmp")
    g.map_linearly(tmp)
    for i, tile in enumerate(x.tiles().reshape(-1)):
        g.add_vertex(cs, double, int(tile), a=x.flatten()[i], out=tmp.flatten()[i])
    prog = Repeat(
        3,
        Sequence(HostToDevice("in", x), Execute(cs), Copy(tmp, y), DeviceToHost(y, "out"), DeviceToHost(x, "echo")),
    )
    engine = Engine(g, prog)
    rng = np.random.default_rng(1)
    feeds = [rng.standard_normal((2, 3)) for _ in range(3)]  # float64: cast to the tensor's float32
    result = engine.run({"in": feeds})
    assert sorted(result.outputs) == ["echo", "out"]
    assert len(result.outputs["out"]) == 3
    for got, echo, fed in zip(result.outputs["out"], result.outputs["echo"], feeds, strict=True):
        np.testing.assert_array_equal(got, 2 * fed.astype(np.float32))
        np.testing.assert_array_equal(echo, fed.astype(np.float32))
    assert result.outputs["out"][0] is not result.outputs["out"][1]
    # an array (not a list) is reused by every read
    result = engine.run({"in": feeds[0]})
    for got in result.outputs["out"]:
        np.testing.assert_array_equal(got, 2 * feeds[0].astype(np.float32))
    assert result.cycles > 0 and result.seconds == pytest.approx(result.cycles / 1.33e9)
    with pytest.raises(ValueError, match="ran out"):
        engine.run({"in": feeds[:2]})
    with pytest.raises(KeyError, match="in"):
        engine.run({})
    with pytest.raises(ValueError, match="shape"):
        engine.run({"in": np.zeros(6)})


def test_run_result_cycles_are_the_profile_increase():
    g = Graph(2)
    x = on_tile(g, 8, 0, "float32", "x")
    y = on_tile(g, 8, 1, "float32", "y")
    engine = Engine(g, Sequence(HostToDevice("x", x), Copy(x, y), DeviceToHost(y, "y")))
    r1 = engine.run({"x": np.arange(8)})
    r2 = engine.run({"x": np.arange(8)})
    assert r1.cycles == r2.cycles == engine.profile.total_cycles / 2
    np.testing.assert_array_equal(r2.outputs["y"][0], np.arange(8))


def test_engine_write_and_read():
    g = Graph(2)
    t = on_tile(g, (3, 4), 0, "int32", "t")
    engine = Engine(g, Sequence())
    engine.write(t, np.arange(12).reshape(3, 4) + 0.7)  # cast to int32
    np.testing.assert_array_equal(engine.read(t), np.arange(12).reshape(3, 4))
    engine.write(t[:, 1], 5)  # a scalar fills the view; the rest is untouched
    ref = np.arange(12).reshape(3, 4)
    ref[:, 1] = 5
    np.testing.assert_array_equal(engine.read(t), ref)
    engine.write(t.T[2], [7, 8, 9])
    ref[:, 2] = [7, 8, 9]
    np.testing.assert_array_equal(engine.read(t), ref)
    with pytest.raises(ValueError, match="shape"):
        engine.write(t, np.zeros((4, 3)))
    assert engine.profile.total_cycles == 0  # host access is free


# ----------------------------------------------------------------------------------------------- compile checks
def test_unmapped_variable_is_named_at_engine_construction():
    g = Graph(4)
    on_tile(g, 4, 0, name="fine")
    partly = g.add_variable((2, 5), "float32", "partly")
    g.set_tile_mapping(partly[0], 1)
    with pytest.raises(GraphError, match=r"'partly' has 5 of 10 elements without a tile"):
        Engine(g, Sequence())


def test_remote_access_names_both_tiles():
    g = Graph(4)
    a = on_tile(g, 4, 2, "float32", "a")
    out = on_tile(g, 4, 1, "float32", "out")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, copy_vertex, 1, a=a, out=out)
    with pytest.raises(RemoteAccessError) as info:
        Engine(g, Execute(cs))
    msg = str(info.value)
    assert "'a'" in msg and "on tile 1" in msg and "lives on tile 2" in msg


def test_remote_access_to_an_output_field_is_caught_too():
    g = Graph(4)
    a = on_tile(g, 4, 1, "float32", "a")
    out = g.add_variable(4, "float32", "out")
    g.set_tile_mapping(out, 1)
    g.set_tile_mapping(out[3], 0)
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, copy_vertex, 1, a=a[3:], out=out[3:])
    with pytest.raises(RemoteAccessError, match="tile 0"):
        Engine(g, Execute(cs))


def test_remote_access_message_names_the_remote_tile_when_a_row_straddles_tiles():
    g = Graph(4)
    x = g.add_variable((2, 8), "float32", "x")
    g.set_tile_mapping(x[:, :4], 0)
    g.set_tile_mapping(x[:, 4:], 1)
    out = on_tile(g, 8, 0, "float32", "out")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, copy_vertex, 0, a=x[0], out=out)
    with pytest.raises(RemoteAccessError, match="lives on tile 1"):
        Engine(g, Execute(cs))


def test_two_vertices_writing_one_element_conflict():
    g = Graph(2)
    a, out = on_tile(g, 8, 0, name="a"), on_tile(g, 8, 0, name="out")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, copy_vertex, 0, a=a[0:4], out=out[0:4])
    g.add_vertex(cs, copy_vertex, 0, a=a[4:8], out=out[3:7])  # element 3 again
    with pytest.raises(WriteConflictError, match="element 3 of 'out'"):
        Engine(g, Execute(cs))


def test_vertex_reading_what_another_writes_conflicts():
    g = Graph(2)
    a = on_tile(g, 8, 0, name="a")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, copy_vertex, 0, a=a[0:4], out=a[4:8])
    g.add_vertex(cs, copy_vertex, 0, a=a[5:6], out=a[0:1])  # reads a[5], written by the first vertex
    with pytest.raises(WriteConflictError, match="reads 'a'"):
        Engine(g, Execute(cs))


def test_disjoint_accesses_and_own_reads_do_not_conflict():
    g = Graph(2)
    a = on_tile(g, 12, 0, name="a")
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, copy_vertex, 0, a=a[0:4], out=a[4:8])
    g.add_vertex(cs, copy_vertex, 0, a=a[0:2], out=a[8:10])  # reads what the first reads: fine
    g.add_vertex(cs, copy_vertex, 0, a=a[10:12], out=a[11:9:-1])  # reads what it writes itself: fine
    engine = Engine(g, Execute(cs))
    engine.write(a, np.arange(12))
    engine.run()
    np.testing.assert_array_equal(engine.read(a), [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 11, 10])


def test_copy_to_a_broadcast_destination_conflicts():
    g = Graph(2)
    src = on_tile(g, (3, 4), 0, name="src")
    dst = on_tile(g, 4, 1, name="dst")
    with pytest.raises(WriteConflictError, match="'dst'"):
        Engine(g, Copy(src, dst.expand_dims(0).broadcast_to((3, 4))))
    with pytest.raises(WriteConflictError, match="'dst'"):  # two pairs writing one element
        Engine(g, Copy([src[0], src[1, :2]], [dst, dst[2:]]))


def test_copy_from_a_broadcast_source_is_fine():
    g = Graph(4)
    src = on_tile(g, 4, 0, name="src")
    dst = g.add_variable((3, 4), "int32", "dst")
    g.map_linearly(dst, tiles=[1, 2, 3])
    engine = Engine(g, Copy(src.expand_dims(0).broadcast_to((3, 4)), dst))
    engine.write(src, [4, 3, 2, 1])
    engine.run()
    np.testing.assert_array_equal(engine.read(dst), np.tile([4, 3, 2, 1], (3, 1)))


def test_pairs_of_one_copy_read_their_sources_before_any_write():
    g = Graph(2)
    a, b = on_tile(g, 4, 0, name="a"), on_tile(g, 4, 1, name="b")
    engine = Engine(g, Copy([a, b], [b, a]))  # a swap: each pair reads its source before any pair writes
    engine.write(a, [1, 2, 3, 4])
    engine.write(b, [5, 6, 7, 8])
    engine.run()
    np.testing.assert_array_equal(engine.read(a), [5, 6, 7, 8])
    np.testing.assert_array_equal(engine.read(b), [1, 2, 3, 4])


# brute-force reference for the conflict check: element sets of every field
VIEW_KINDS = st.sampled_from(["slice", "strided", "reversed", "fancy", "2d", "2dT"])


@st.composite
def field_views(draw, var_names=("x", "y")):
    return draw(st.sampled_from(var_names)), draw(VIEW_KINDS), draw(st.integers(0, 12)), draw(st.data())


def make_view(t, kind, start, data):
    if kind == "slice":
        return t[start : start + 4]
    if kind == "strided":
        return t[start : start + 8 : 2]
    if kind == "reversed":
        return t[start : start + 4][::-1]
    if kind == "fancy":
        return t[np.array(data.draw(st.lists(st.integers(0, 23), min_size=4, max_size=4)))]
    if kind == "2d":
        return t.reshape(4, 6)[start % 3 : start % 3 + 2, 1:3].reshape(4)
    return t.reshape(4, 6)[:2, start % 5 : start % 5 + 2].T.reshape(4)


@settings(max_examples=60, deadline=None)
@given(vertices=st.lists(st.tuples(field_views(), field_views()), min_size=1, max_size=4))
def test_conflict_check_matches_brute_force(vertices):
    g = Graph(1)
    tensors = {name: on_tile(g, 24, 0, name=name) for name in ("x", "y")}
    cs = g.add_compute_set("cs")
    reads, writes = [], []  # (vertex, variable, element)
    for v, ((rname, rkind, rstart, rdata), (wname, wkind, wstart, wdata)) in enumerate(vertices):
        a = make_view(tensors[rname], rkind, rstart, rdata)
        out = make_view(tensors[wname], wkind, wstart, wdata)
        g.add_vertex(cs, copy_vertex, 0, a=a, out=out)
        reads += [(v, rname, int(e)) for e in a.idx.reshape(-1)]
        writes += [(v, wname, int(e)) for e in out.idx.reshape(-1)]
    written = [(name, e) for _, name, e in writes]
    double_write = len(written) != len(set(written))
    writer = {(name, e): v for v, name, e in writes}
    read_write = any((name, e) in writer and writer[(name, e)] != v for v, name, e in reads)
    event(f"double write {double_write}, read-write {read_write}")
    if double_write or read_write:
        with pytest.raises(WriteConflictError):
            Engine(g, Execute(cs))
    else:
        engine = Engine(g, Execute(cs))
        x0 = np.arange(100, 124)
        engine.write(tensors["x"], x0)
        engine.write(tensors["y"], -x0)
        engine.run()
        # no vertex reads what another writes: every output gets its input's values from before the step
        ref = {"x": x0.copy(), "y": -x0}
        for v in range(len(vertices)):
            a_idx = [e for u, _, e in reads if u == v]
            r_name = next(name for u, name, _ in reads if u == v)
            w_idx = [e for u, _, e in writes if u == v]
            w_name = next(name for u, name, _ in writes if u == v)
            ref[w_name][w_idx] = (x0 if r_name == "x" else -x0)[a_idx]
        np.testing.assert_array_equal(engine.read(tensors["x"]), ref["x"])
        np.testing.assert_array_equal(engine.read(tensors["y"]), ref["y"])


# ------------------------------------------------------------------------------------------------------ memory
def test_out_of_memory_names_tile_bytes_and_largest_tensor():
    g = Graph(get_device("mk2", tiles=4, memory_per_tile=4096))
    big = on_tile(g, 2000, 2, "float32", "big")
    on_tile(g, 10, 2, "float32", "small")
    on_tile(g, 500, 1, "float32", "fits")
    del big
    with pytest.raises(OutOfMemoryError) as info:
        Engine(g, Sequence())
    msg = str(info.value)
    assert "tile 2" in msg and "needs 8,040 bytes" in msg and "4,096" in msg
    assert "big 8,000 B" in msg and "small 40 B" in msg
    assert msg.index("big") < msg.index("small")
    assert "fits" not in msg


def test_memory_counts_tensors_vertex_state_and_code_exactly():
    """Tile 0: two 100-element float32 tensors (800 B), a 2-field vertex (8 + 2 x 8 = 24 B), one codelet (256 B)."""
    needed = 800 + 24 + 256

    def build(capacity):
        g = Graph(get_device("mk2", tiles=2, memory_per_tile=capacity))
        a, out = on_tile(g, 100, 0, "float32", "a"), on_tile(g, 100, 0, "float32", "out")
        cs = g.add_compute_set()
        g.add_vertex(cs, copy_vertex, 0, a=a, out=out)
        return Engine(g, Execute(cs))

    engine = build(needed)
    mem = engine.profile.memory
    assert (mem.variables[0], mem.vertex_state[0], mem.code[0], mem.exchange_code[0]) == (800, 24, 256, 0)
    assert mem.total[1] == 0
    with pytest.raises(OutOfMemoryError, match=f"needs {needed:,} bytes"):
        build(needed - 1)


def test_tensors_share_memory_when_their_lifetimes_do_not_meet():
    """A chain a -> b -> c -> d of on-tile copies (float32, 100/200/300/400 elements): a is read at step 0 (set
    before the program), b lives over steps 0-1, c over 1-2, d from step 2 to the end (a result). The peak is at
    step 2, c + d = 2,800 bytes; counting every tensor as always live would need 4,000."""
    sizes = {"a": 100, "b": 200, "c": 300, "d": 400}

    def build(capacity):
        g = Graph(get_device("mk2", tiles=1, memory_per_tile=capacity))
        t = {name: on_tile(g, size, 0, "float32", name) for name, size in sizes.items()}
        prog = Sequence(Copy(t["a"], t["b"][:100]), Copy(t["b"][: 300 - 100], t["c"][:200]), Copy(t["c"], t["d"][:300]))
        return Engine(g, prog)

    assert build(2800).profile.memory.variables[0] == 2800
    with pytest.raises(OutOfMemoryError, match=r"needs 2,800 bytes") as info:
        build(2799)
    msg = str(info.value)  # the tensors live at the peak, largest first; a and b are dead by then
    assert "d 1,600 B, c 1,200 B" in msg and "a " not in msg.split("largest tensors there:")[1]


def test_what_a_loop_touches_lives_for_the_whole_loop():
    """tmp is written and read inside a Repeat: it stays live for the whole loop, so it overlaps big, which the loop
    body reads after tmp's last access in program order. Outside a loop the two would not meet."""

    def build(loop):
        g = Graph(get_device("mk2", tiles=1, memory_per_tile=1_000_000))
        src, tmp = on_tile(g, 100, 0, "float32", "src"), on_tile(g, 100, 0, "float32", "tmp")
        big, out = on_tile(g, 1000, 0, "float32", "big"), on_tile(g, 1000, 0, "float32", "out")
        body = Sequence(Copy(src, tmp), Copy(tmp, out[:100]), Copy(big, out))
        return Engine(g, Sequence(HostToDevice("big", big), Repeat(3, body) if loop else body))

    # straight: the peak is tmp + big + out at the second copy (src was last read by the first)
    assert build(loop=False).profile.memory.variables[0] == 400 + 4000 + 4000
    # looped: src, tmp, big and out all live across the loop
    assert build(loop=True).profile.memory.variables[0] == 400 + 400 + 4000 + 4000


def test_dynamic_copy_cycles_through_its_variants_and_keeps_one_exchange_code():
    """Run i performs variant i mod 2 (in a Repeat and across runs); each run is charged its own variant's exchange
    plus the slicing copy on its source tiles; the exchange code is the larger variant's, not the sum."""
    g = Graph(get_device("mk2", tiles=3))
    src = g.add_variable(8, "float32", "src")
    g.set_tile_mapping(src[:4], 0)
    g.set_tile_mapping(src[4:], 1)
    dst = on_tile(g, 4, 2, "float32", "dst")
    lo, hi = Copy(src[:4], dst), Copy(src[4:], dst)
    seen = []
    engine = Engine(g, Sequence(Repeat(3, Sequence(DynamicCopy([lo, hi]), DeviceToHost(dst, "out")))))
    engine.write(src, np.arange(8))
    out = engine.run().outputs["out"]
    seen += [o.tolist() for o in out]
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3]]
    assert engine.run().outputs["out"][0].tolist() == [4, 5, 6, 7]  # the counter goes on
    # one region sent by tile 0 or 1 and one received by tile 2, 8 bytes each: once, as for a single Copy
    np.testing.assert_array_equal(engine.profile.memory.exchange_code, [8, 8, 8])
    single = Engine(g, lo)
    assert single.profile.memory.exchange_code.tolist() == [8, 0, 8]
    step = next(s for s in engine.profile.steps.values() if s.kind == "DynamicCopy")
    per_run = SYNC + 16 / g.device.exchange_bytes_per_cycle + np.ceil(2 * 16 / g.device.memory_bytes_per_cycle)
    assert step.runs == 6 and step.cycles == pytest.approx(6 * per_run)


def test_exchange_code_counts_regions_sent_and_received():
    g = Graph(get_device("mk2", tiles=3))
    src = on_tile(g, 16, 0, "float32", "src")
    dst = g.add_variable(16, "float32", "dst")
    g.set_tile_mapping(dst[:8], 1)
    g.set_tile_mapping(dst[8:], 2)
    engine = Engine(g, Copy(src, dst))
    # tile 0 sends two regions, tiles 1 and 2 receive one each; 8 bytes of exchange code per region
    np.testing.assert_array_equal(engine.profile.memory.exchange_code, [16, 8, 8])
