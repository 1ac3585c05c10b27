"""Random programs on a small device against the same computation in numpy.

Random shapes and tile mappings (linear, on a subset of tiles, on one tile, element by element), elementwise ops and
reductions in int32 and float32, copies between differently mapped tensors (also transposed), and Repeat loops. Every
tensor a program makes is compared with numpy: exactly, except float32 sums (summation order differs)."""

from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ipu_model import Copy, Engine, Graph, Repeat, Sequence, Tensor, get_device, ops

DEV = get_device("mk2", tiles=8)
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
UNARY = {"neg": np.negative, "abs": np.abs, "square": np.square, "relu": lambda x: np.maximum(x, 0).astype(x.dtype)}
REDUCE = {"add": np.add.reduce, "max": np.maximum.reduce, "min": np.minimum.reduce, "mul": np.multiply.reduce}


@dataclass
class Entry:
    tensor: Tensor
    ref: np.ndarray  # the expected value (float64 for inexact entries)
    exact: bool = True
    scale: np.ndarray | None = None  # for inexact entries: sum of |terms|, to bound the rounding error


def map_randomly(data, g, t):
    kind = data.draw(st.sampled_from(["linear", "subset", "one tile", "explicit"]), label="mapping")
    if kind == "linear":
        g.map_linearly(t, grain=data.draw(st.integers(1, 4), label="grain"))
    elif kind == "subset":
        tiles = data.draw(st.permutations(range(8)), label="tiles")[: data.draw(st.integers(1, 8))]
        g.map_linearly(t, tiles=tiles)
    elif kind == "one tile":
        g.set_tile_mapping(t, data.draw(st.integers(0, 7), label="tile"))
    else:
        owners = data.draw(st.lists(st.integers(0, 7), min_size=t.size, max_size=t.size), label="owners")
        flat = t.flatten()
        for i, tile in enumerate(owners):
            g.set_tile_mapping(flat[i], tile)
    return kind


def host_value(rng, shape, dtype):
    if dtype == "int32":
        return rng.integers(-20, 21, shape).astype(np.int32)
    return rng.standard_normal(shape).astype(np.float32)


# derandomize: the same 30 programs every run, so that the suite is deterministic.
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_program_matches_numpy(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="value seed"))
    dtype = data.draw(st.sampled_from(["int32", "float32"]), label="dtype")
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3), label="shape"))
    g = Graph(DEV)
    writes: list[tuple[Tensor, np.ndarray]] = []
    pool: list[Entry] = []
    for i in range(data.draw(st.integers(1, 3), label="inputs")):
        t = g.add_variable(shape, dtype, f"in{i}")
        event(f"mapping: {map_randomly(data, g, t)}")
        value = host_value(rng, shape, dtype)
        writes.append((t, value))
        pool.append(Entry(t, value))

    steps = []
    for n in range(data.draw(st.integers(2, 6), label="steps")):
        usable = [e for e in pool if e.exact]
        kind = data.draw(st.sampled_from(["binary", "unary", "reduce", "copy", "repeat"]), label="step")
        event(f"step: {kind}")
        first = data.draw(st.sampled_from(usable), label="operand")
        x, ref = first.tensor, first.ref
        if kind == "binary":
            same = [e for e in usable if e.tensor.shape == x.shape and e is not first] or [first]
            second = data.draw(st.sampled_from(same), label="second operand")
            op = data.draw(st.sampled_from(sorted(BINARY)), label="op")
            prog, out = ops.elementwise(g, op, x, second.tensor, name=f"s{n}_{op}")
            pool.append(Entry(out, BINARY[op](ref, second.ref)))
        elif kind == "unary":
            op = data.draw(st.sampled_from(sorted(UNARY)), label="op")
            prog, out = ops.elementwise(g, op, x, name=f"s{n}_{op}")
            pool.append(Entry(out, UNARY[op](ref)))
        elif kind == "reduce":
            if not x.shape:
                continue
            axis = data.draw(st.integers(-len(x.shape), len(x.shape) - 1), label="axis")
            ops_allowed = ["add", "max", "min", "mul"] if dtype == "int32" else ["add", "max", "min"]
            op = data.draw(st.sampled_from(ops_allowed), label="op")
            prog, out = ops.reduce(g, x, axis=axis, op=op, name=f"s{n}_reduce_{op}")
            if dtype == "float32" and op == "add":
                exact = ref.astype(np.float64).sum(axis=axis)
                pool.append(Entry(out, exact, exact=False, scale=np.abs(ref.astype(np.float64)).sum(axis=axis)))
            else:
                pool.append(Entry(out, REDUCE[op](ref, axis=axis).astype(dtype)))
        elif kind == "copy":
            transpose = len(x.shape) > 1 and data.draw(st.booleans(), label="transpose")
            src, value = (x.T, ref.T) if transpose else (x, ref)
            dst = g.add_variable(src.shape, dtype, f"s{n}_copy")
            map_randomly(data, g, dst)
            prog = Copy(src, dst, name=f"s{n}_copy")
            pool.append(Entry(dst, value.copy()))
        else:  # acc += x, count times
            count = data.draw(st.integers(0, 3), label="count")
            acc = g.add_variable(x.shape, dtype, f"s{n}_acc")
            map_randomly(data, g, acc)
            acc0 = host_value(rng, x.shape, dtype)
            writes.append((acc, acc0))
            add, total = ops.elementwise(g, "add", acc, x, name=f"s{n}_add")
            prog = Repeat(count, Sequence(add, Copy(total, acc)))
            value = acc0.copy()
            for _ in range(count):
                value = (value + ref).astype(dtype)
            pool.append(Entry(acc, value))
            if count:
                pool.append(Entry(total, value))
        steps.append(prog)

    engine = Engine(g, Sequence(*steps))
    for t, value in writes:
        engine.write(t, value)
    engine.run()
    for e in pool:
        got = engine.read(e.tensor)
        assert got.shape == e.ref.shape and got.dtype == np.dtype(dtype), e.tensor.name
        if e.exact:
            np.testing.assert_array_equal(got, e.ref, err_msg=e.tensor.name)
        else:
            err = np.abs(got.astype(np.float64) - e.ref)
            assert np.all(err <= 1e-6 * e.scale + 1e-30), e.tensor.name
