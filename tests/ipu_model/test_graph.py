"""Graph construction: tensor views, tile mappings, vertices, and the errors raised while building."""

import numpy as np
import pytest

from ipu_model import (
    Copy,
    Execute,
    Graph,
    GraphError,
    If,
    Repeat,
    RepeatWhileTrue,
    Sequence,
    codelet,
)
from ipu_model.graph import runs


@codelet(inputs=("a",), outputs=("out",))
def copy_vertex(a):
    return {"out": a}


def filled(g, shape, dtype="int32", name="x"):
    t = g.add_variable(shape, dtype, name)
    t.var.data[:] = np.arange(t.size)
    return t, np.arange(t.size, dtype=dtype).reshape(shape)


VIEWS = [
    lambda t: t[1],
    lambda t: t[:, 2:5],
    lambda t: t[::2, ::-1],
    lambda t: t[1:3].T,
    lambda t: t.transpose(1, 0, 2) if len(t.shape) == 3 else t.T,
    lambda t: t.reshape(-1)[3:17],
    lambda t: t.flatten()[::3],
    lambda t: t[..., 1],
]
# views whose numpy spelling differs: (Tensor view, numpy equivalent)
PAIRED_VIEWS = [(v, v) for v in VIEWS] + [
    (
        lambda t: t[0].expand_dims(0).broadcast_to((3, *t.shape[1:])),
        lambda x: np.broadcast_to(x[0][None], (3, *x.shape[1:])),
    ),
    (lambda t: t[:, :1].broadcast_to(t.shape), lambda x: np.broadcast_to(x[:, :1], x.shape)),
    (lambda t: t.expand_dims(1)[:, 0], lambda x: x),
]


@pytest.mark.parametrize("shape", [(4, 6), (3, 5, 4)])
@pytest.mark.parametrize("view", range(len(PAIRED_VIEWS)))
def test_views_read_like_numpy(shape, view):
    g = Graph(2)
    t, ref = filled(g, shape)
    on_tensor, on_array = PAIRED_VIEWS[view]
    v, r = on_tensor(t), on_array(ref)
    assert v.shape == r.shape
    np.testing.assert_array_equal(v.read(), r)
    # runs() must cover exactly the view's elements, in order
    starts, length = runs(v)
    expanded = (starts[:, None] + np.arange(length)[None, :]).reshape(-1)
    np.testing.assert_array_equal(expanded, v.idx.reshape(-1))


def test_runs_of_row_contiguous_view_are_one_per_row():
    g = Graph(2)
    t = g.add_variable((5, 8), "float32", "x")
    starts, length = runs(t[1:4, 2:7])
    np.testing.assert_array_equal(starts, [10, 18, 26])
    assert length == 5
    starts, length = runs(t.T)
    assert length == 1 and starts.size == 40


def test_views_share_storage():
    g = Graph(2)
    t, _ = filled(g, (3, 4))
    t.var.data[t.T[1, 2].idx] = 99  # element (2, 1) of t
    assert t.read()[2, 1] == 99
    assert t[:, 1:].idx.base is not None  # a view of the shared positions, not a copy


def test_variable_names_are_unique_and_shapes_checked():
    g = Graph(2)
    a = g.add_variable(3, "float32", "x")
    b = g.add_variable((2, 2), "float16", "x")
    assert (a.name, b.name, a.shape, b.dtype) == ("x", "x#2", (3,), np.float16)
    assert b.nbytes == 8 and b.var.nbytes == 8
    with pytest.raises(GraphError, match="negative"):
        g.add_variable((2, -1), "float32", "neg")
    with pytest.raises(GraphError, match="float64"):
        g.add_variable(3, "float64", "f64")


@pytest.mark.parametrize(
    ("n", "tiles", "kwargs", "expected"),
    [
        (10, 4, {}, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]),
        (10, 4, {"grain": 4}, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]),
        (10, 4, {"min_per_tile": 6}, [0] * 6 + [1] * 4),
        (3, 8, {}, [0, 1, 2]),
        (12, 8, {}, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]),
        (8, 8, {"tiles": [5, 2]}, [5, 5, 5, 5, 2, 2, 2, 2]),
        (7, 8, {"grain": 2, "tiles": [7, 6, 5, 4]}, [7, 7, 6, 6, 5, 5, 4]),
    ],
)
def test_map_linearly_hand_computed(n, tiles, kwargs, expected):
    g = Graph(tiles)
    t = g.add_variable(n, "float32", "x")
    g.map_linearly(t, **kwargs)
    np.testing.assert_array_equal(t.tiles(), expected)


def test_map_linearly_a_view_maps_only_that_view():
    g = Graph(4)
    t = g.add_variable((2, 4), "float32", "x")
    g.map_linearly(t[1], tiles=[2, 3])
    np.testing.assert_array_equal(t.tiles(), [[-1, -1, -1, -1], [2, 2, 3, 3]])


def test_map_blocks_and_set_tile_mapping():
    g = Graph(8)
    t = g.add_variable((3, 5), "int32", "x")
    g.map_blocks(t, [[0, 1, 3], [0, 2, 5]], lambda i, j: 2 * i + j + 1)
    expected = np.array([[1, 1, 2, 2, 2], [3, 3, 4, 4, 4], [3, 3, 4, 4, 4]])
    np.testing.assert_array_equal(t.tiles(), expected)
    g.set_tile_mapping(t[:, 0], 7)
    expected[:, 0] = 7
    np.testing.assert_array_equal(t.tiles(), expected)
    with pytest.raises(GraphError, match="out of range"):
        g.set_tile_mapping(t, 8)
    with pytest.raises(GraphError, match="out of range"):
        g.set_tile_mapping(t, -1)


def test_add_constant():
    g = Graph(4)
    c = g.add_constant([[1.5, 2.5]], "float32", "c", tile=3)
    np.testing.assert_array_equal(c.read(), [[1.5, 2.5]])
    assert c.var.constant and c.dtype == np.float32
    np.testing.assert_array_equal(c.tiles(), [[3, 3]])
    out = g.add_variable((1, 2), "float32", "out")
    cs = g.add_compute_set()
    g.add_vertex(cs, copy_vertex, 3, a=c, out=out)  # reading a constant is fine
    with pytest.raises(GraphError, match="constant"):
        g.add_vertex(cs, copy_vertex, 3, a=out, out=c)
    with pytest.raises(GraphError, match="constant"):
        Copy(out, c)


def test_codelet_decorator():
    @codelet(inputs=("x", "y"), outputs=("z",), inouts=("acc",))
    def fma(x, y, acc):
        return {"acc": acc + x * y, "z": x}

    assert fma.name == "fma"
    assert fma.fields == ("x", "y", "acc", "z")
    assert fma.reads == ("x", "y", "acc")
    assert fma.writes == ("acc", "z")


def test_add_vertex_checks_fields_and_tile():
    g = Graph(4)
    a = g.add_variable(4, "float32", "a")
    b = g.add_variable(4, "float32", "b")
    cs = g.add_compute_set("cs")
    with pytest.raises(GraphError, match=r"missing \['out'\]"):
        g.add_vertex(cs, copy_vertex, 0, a=a)
    with pytest.raises(GraphError, match=r"unknown \['oops'\]"):
        g.add_vertex(cs, copy_vertex, 0, a=a, out=b, oops=b)
    with pytest.raises(GraphError, match="must be a Tensor"):
        g.add_vertex(cs, copy_vertex, 0, a=np.zeros(4), out=b)
    with pytest.raises(GraphError, match="out of range"):
        g.add_vertex(cs, copy_vertex, 4, a=a, out=b)
    assert cs.vertices == []
    v = g.add_vertex(cs, copy_vertex, 1, a=a, out=b)
    assert v.tile == 1 and cs.vertices == [v]


def test_program_construction_errors():
    g = Graph(2)
    a = g.add_variable((2, 3), "float32", "a")
    b = g.add_variable((3, 2), "float32", "b")
    with pytest.raises(GraphError, match="shapes differ"):
        Copy(a, b)
    with pytest.raises(GraphError, match="2 sources but 1"):
        Copy([a, a], [b.T])
    Copy(a, b.T)  # fine
    with pytest.raises(GraphError, match="count"):
        Repeat(-1, Sequence())
    with pytest.raises(GraphError, match="one element"):
        If(a, Sequence())
    with pytest.raises(GraphError, match="one element"):
        RepeatWhileTrue(Sequence(), a[0], Sequence())
    with pytest.raises(GraphError, match="programs"):
        Sequence(Sequence(), "not a program")
    cs = g.add_compute_set("step")
    assert Execute(cs).name == "step"
    assert Sequence(name="s").name == "s"
