"""Command line: profile library ops on a simulated IPU.

    python -m ipu_model matmul 2048 2048 2048 --dtype float16 --device mk2 --out outputs/ipu_model/mm
    python -m ipu_model ops --device mk2             # the ops table: simulated time and fraction of peak
    python -m ipu_model jax mypkg.mod:step --shapes f16[32,1,128] f16[32,16384,128] --device bow
                                                     # a jitted function of yours, lowered and costed

`matmul` prints the plan and the profile, checks the result against numpy, and with --out writes profile.txt,
profile.json and profile.png (tile memory and cycle heat-maps); `ops` prints the table, and with --out writes
ops.md and ops.json; `jax` lowers MODULE:FUNCTION at the given argument shapes (ipu_model.lowering), runs it cost-only
(or on random inputs with --evaluate, checked against JAX), prints the cost and the profile and writes the same
three files. The options --device, --tiles and --out go before or after the command's name.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from core.io import atomic_write_json, atomic_write_text
from ipu_model import Engine, Graph, Sequence, get_device, ops
from ipu_model.device import PRESETS


def profile_matmul(device, m: int, k: int, n: int, dtype: str, seed: int = 0) -> dict:
    """Build, compile and run A @ B on `device`; return timings, the plan, the engine and the error vs float64."""
    t0 = time.perf_counter()
    g = Graph(device)
    a = g.add_variable((m, k), dtype, "A")
    b = g.add_variable((k, n), dtype, "B")
    g.map_linearly(a)
    g.map_linearly(b)
    prog, c, plan = ops.matmul(g, a, b)
    engine = Engine(g, Sequence(prog, name="program"))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(dtype)
    y = rng.standard_normal((k, n)).astype(dtype)
    engine.write(a, x)
    engine.write(b, y)
    engine.run()
    wall = time.perf_counter() - t0
    ref = x.astype(np.float64) @ y.astype(np.float64)
    err = float(np.abs(engine.read(c).astype(np.float64) - ref).max() / np.abs(ref).max())
    return {"engine": engine, "plan": plan, "wall_seconds": wall, "relative_error": err, "flops": 2.0 * m * k * n}


def profile_unary(device, op: str, size: int, dtype: str = "float32") -> Engine:
    g = Graph(device)
    x = g.add_variable((size,), dtype, "x")
    g.map_linearly(x)
    if op == "reduce":
        prog, _ = ops.reduce(g, x, axis=0)
    else:
        y = g.add_variable((size,), dtype, "y")
        g.map_linearly(y)
        prog, _ = ops.elementwise(g, op, x, y)
    engine = Engine(g, Sequence(prog, name="program"))
    engine.write(x, np.arange(size) % 7)
    engine.run()
    return engine


def ops_table(device) -> list[dict]:
    """Simulated time of the library ops and the fraction of the relevant peak they reach, with where time goes."""
    rows = []
    for dtype in ("float16", "float32"):
        for size in (512, 1024, 2048):
            r = profile_matmul(device, size, size, size, dtype)
            e, p = r["engine"], r["plan"]
            tot = e.profile.totals()
            rows.append(
                {
                    "op": f"matmul {size}^3",
                    "dtype": dtype,
                    "plan": f"{p.pm}x{p.pk}x{p.pn}",
                    "sim_us": tot["seconds_per_run"] * 1e6,
                    "peak": "FLOP/s",
                    "fraction": e.profile.fraction_of_peak(r["flops"], dtype),
                    **_shares(tot),
                    "sim_wall_s": r["wall_seconds"],
                }
            )
    size = 1 << 22
    for op in ("add", "reduce"):
        t0 = time.perf_counter()
        e = profile_unary(device, op, size)
        wall = time.perf_counter() - t0
        tot = e.profile.totals()
        moved = size * 4 * (3 if op == "add" else 1)  # bytes each element costs in tile memory traffic
        peak_s = moved / (device.memory_bytes_per_cycle * device.tiles * device.clock_hz)
        rows.append(
            {
                "op": f"{op} {size:,}",
                "dtype": "float32",
                "plan": "linear",
                "sim_us": tot["seconds_per_run"] * 1e6,
                "peak": "memory B/s",
                "fraction": peak_s / tot["seconds_per_run"],
                **_shares(tot),
                "sim_wall_s": wall,
            }
        )
    return rows


def _shares(tot: dict) -> dict:
    c = tot["cycles"] or 1.0
    return {k: tot[k] / c for k in ("sync", "exchange", "compute")}


def format_table(rows: list[dict], device) -> str:
    lines = [
        f"Library ops on the simulated {device.name} ({device.tiles} tiles, {device.clock_hz / 1e9:.2f} GHz)",
        "| op | dtype | tile grid | simulated time (us) | fraction of peak | of | sync | exchange | compute | "
        "simulation wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['op']} | {r['dtype']} | {r['plan']} | {r['sim_us']:,.1f} | {r['fraction']:.0%} | {r['peak']} | "
            f"{r['sync']:.0%} | {r['exchange']:.0%} | {r['compute']:.0%} | {r['sim_wall_s']:.1f} |"
        )
    return "\n".join(lines)


SHAPE_DTYPES = {"f16": "float16", "f32": "float32", "i32": "int32", "u32": "uint32", "i8": "int8", "u8": "uint8",
                "bool": "bool", "i16": "int16", "u16": "uint16"}  # fmt: skip


def parse_shape(text: str):
    """'f16[32,1,128]' (or 'float16[32,1,128]', 'f32[]' for a scalar) -> jax.ShapeDtypeStruct."""
    import re

    import jax

    m = re.fullmatch(r"\s*([a-z0-9]+)\[([0-9,\s]*)\]\s*", text)
    names = {**SHAPE_DTYPES, **{v: v for v in SHAPE_DTYPES.values()}}
    if not m or m.group(1) not in names:
        raise ValueError(
            f"shape {text!r}: write DTYPE[d0,d1,...] with DTYPE one of {', '.join(sorted(names))}, e.g. f16[32,128]"
        )
    dims = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
    return jax.ShapeDtypeStruct(dims, names[m.group(1)])


def load_function(target: str):
    """'package.module:function' -> the function (the current directory is importable)."""
    import importlib

    module, sep, name = target.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"{target!r}: name the function as MODULE:FUNCTION, e.g. mypkg.steps:decode")
    if "" not in sys.path:
        sys.path.insert(0, "")
    fn = importlib.import_module(module)
    for part in name.split("."):
        if not hasattr(fn, part):
            raise ValueError(f"{target!r}: {module} has no attribute {name!r}")
        fn = getattr(fn, part)
    if not callable(fn):
        raise ValueError(f"{target!r} is not callable")
    return fn


def profile_jax(device, fn, shapes, evaluate: bool, seed: int = 0) -> dict:
    """Lower fn at `shapes`; cost it (cost-only), or run it on random inputs and compare with JAX."""
    import jax

    from ipu_model.lowering import lower

    low = lower(fn, *shapes, device=device)
    out = {"lowered": low, "max_abs_error": None}
    if evaluate:
        rng = np.random.default_rng(seed)
        args = [
            rng.standard_normal(s.shape).astype(s.dtype) if np.dtype(s.dtype).kind == "f"
            else rng.integers(0, 2 if s.dtype == np.bool_ else 8, s.shape).astype(s.dtype)
            for s in shapes
        ]  # fmt: skip
        got = jax.tree_util.tree_leaves(low.run(*args))
        want = jax.tree_util.tree_leaves(fn(*map(jax.numpy.asarray, args)))
        out["max_abs_error"] = max(
            (float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64)), initial=0))
             for g, w in zip(got, want, strict=True)), default=0.0)  # fmt: skip
    out["cost"] = low.cost()
    return out


def _add_global_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """The options every command takes, before or after the command's name. `defaults=False` (on each command's
    parser) leaves an option not given there unset, so a value given before the command's name stands."""

    def default(value):
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--device", default=default("mk2"), choices=sorted(PRESETS), help="the device (default: mk2)")
    parser.add_argument("--tiles", type=int, default=default(None), help="override the device's tile count")
    parser.add_argument("--out", type=Path, default=default(None), help="directory for the profile files")


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: the commands `matmul` and `ops`, each taking the global options before or after
    its name."""
    parser = argparse.ArgumentParser(prog="python -m ipu_model", description=__doc__.split("\n")[0])
    _add_global_options(parser, defaults=True)
    sub = parser.add_subparsers(dest="command", required=True)
    mm = sub.add_parser("matmul", help="profile one planned matmul")
    mm.add_argument("m", type=int)
    mm.add_argument("k", type=int)
    mm.add_argument("n", type=int)
    mm.add_argument("--dtype", default="float16", choices=["float16", "float32"])
    _add_global_options(mm, defaults=False)
    table = sub.add_parser("ops", help="the library ops table: simulated time and fraction of peak")
    _add_global_options(table, defaults=False)
    jx = sub.add_parser("jax", help="lower a jitted JAX function and cost it on the simulated IPU")
    jx.add_argument("function", help="MODULE:FUNCTION, importable from the current directory")
    jx.add_argument("--shapes", nargs="+", required=True, help="the arguments' DTYPE[d0,d1,...], e.g. f16[32,128]")
    jx.add_argument("--evaluate", action="store_true", help="also run it on random inputs and compare with JAX")
    _add_global_options(jx, defaults=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.tiles is not None and args.tiles < 1:
        parser.error(f"--tiles must be a positive tile count, got {args.tiles}")
    device = get_device(args.device, **({"tiles": args.tiles} if args.tiles is not None else {}))
    if args.command == "matmul":
        if min(args.m, args.k, args.n) < 1:
            parser.error(f"matmul sizes must be positive, got {args.m} {args.k} {args.n}")
        r = profile_matmul(device, args.m, args.k, args.n, args.dtype)
        e, p = r["engine"], r["plan"]
        frac = e.profile.fraction_of_peak(r["flops"], args.dtype)
        head = (
            f"matmul {args.m}x{args.k}x{args.n} {args.dtype}: tile grid m{p.pm} x k{p.pk} x n{p.pn} = {p.tiles} "
            f"tiles; {frac:.1%} of the {args.dtype} peak; max relative error vs float64 {r['relative_error']:.2e}; "
            f"simulated in {r['wall_seconds']:.1f} s"
        )
        text = head + "\n\n" + e.profile.report()
        print(text)
        if args.out:
            atomic_write_text(args.out / "profile.txt", text + "\n")
            atomic_write_json(args.out / "profile.json", json.loads(json.dumps(e.profile.to_dict(), default=float)))
            e.profile.figure(head.split(";")[0]).savefig(args.out / "profile.png", dpi=120)
            print(f"wrote {args.out}/profile.txt, profile.json, profile.png")
    elif args.command == "jax":
        try:
            fn = load_function(args.function)
            shapes = [parse_shape(t) for t in args.shapes]
        except (ValueError, ImportError) as e:
            parser.error(str(e))
        r = profile_jax(device, fn, shapes, args.evaluate)
        low, cost = r["lowered"], r["cost"]
        head = f"{args.function} at {' '.join(args.shapes)} on {device.name}: {cost.report()}"
        if r["max_abs_error"] is not None:
            head += f"; on random inputs the largest difference from JAX {r['max_abs_error']:.3g}"
        prims = ", ".join(f"{k} x{v}" for k, v in cost.primitives.items())
        wall = ", ".join(f"{k} {v:.1f} s" for k, v in cost.wall.items())
        text = f"{head}\nprimitives: {prims}\nhost time: {wall}"
        if cost.fits:
            text += "\n\n" + low.engine().profile.report()
        print(text)
        if args.out:
            atomic_write_text(args.out / "profile.txt", text + "\n")
            data = {"cost": cost.to_dict(), **({"profile": low.engine().profile.to_dict()} if cost.fits else {})}
            atomic_write_json(args.out / "profile.json", json.loads(json.dumps(data, default=float)))
            if cost.fits:
                low.engine().profile.figure(args.function).savefig(args.out / "profile.png", dpi=120)
            print(f"wrote {args.out}/profile.txt, profile.json" + (", profile.png" if cost.fits else ""))
    else:
        rows = ops_table(device)
        text = format_table(rows, device)
        print(text)
        if args.out:
            atomic_write_text(args.out / "ops.md", text + "\n")
            atomic_write_json(args.out / "ops.json", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
