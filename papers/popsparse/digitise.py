"""The paper's figures read off the images its analysis notebook drew, to the precision of their pixels.

    python -m papers.popsparse.digitise                       # read the vendored images, write the readings
    python -m papers.popsparse.digitise --extract NOTEBOOK    # first take the images out of Analysis.ipynb

The paper's benchmark repository (graphcore-research/sparsity-benchmarks) draws every figure from its measurements
in `analysis/Analysis.ipynb`; the measurements themselves (`202301_sparsity_benchmarks.json`, on the repository's
`data` branch) are not in the stored copy this project can reach, so the values come from the notebook's PNG outputs
(papers/popsparse/data/SOURCE.md). Three figures: `dense_ipu_gpu` (dense FLOP/s by batch n), `ipu_density` (FP16
non-zero FLOP/s by density, b = 1 and 16, at m = k = 4096) and `ipu_block_size` (FP16 at density 1/16 by block size).

How a value is read, and how precisely: papers.popsparse.plot_reading (each marker an interval at the figure's
pixel precision; a marker covered by a series drawn after it is left out). A speed-up is the ratio of two readings
and its interval spans both. The dense line of `ipu_density` and `ipu_block_size` is one number (the notebook plots
dense FLOP/s x density there), so the dense rate is the intersection of its markers' intervals, and the script
refuses readings that do not meet. The cells the paper's table prints (FP16, density 1/16, b = 1 and 16) are read
from both figures, and tests/papers/popsparse/test_digitise.py holds them to the table's digits.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from papers.popsparse.paper import READINGS_PATH
from papers.popsparse.plot_reading import (
    DARK,
    SNAP_PX,
    TAB10,
    Reading,
    colour_share,
    find_axes,
    find_markers,
    intersect,
    load_png,
    xtick_columns,
    y_scale,
)

DATA = Path(__file__).parent / "data"
SOURCE = {
    "repository": "graphcore-research/sparsity-benchmarks",
    "commit": "bab5449",  # main at the time of reading; the notebook is unchanged since 852a950
    "path": "analysis/Analysis.ipynb",
    "blob": "53caaf3b0deca19df32971d3feb3b166015e6805",
    "licence": "MIT",
}
M = 4096  # every figure read here is at m = k = 4096


@dataclass(frozen=True)
class Figure:
    """One notebook figure: the file its `save(name)` writes, the y limits and ticks it sets (log10 FLOP/s), how
    its x axis is labelled, and its series by colour."""

    name: str
    ylim: tuple[float, float]
    yticks: tuple[float, ...]
    xticks: tuple[float, ...]  # the major x ticks left to right; markers sit on them (or on powers of 2 between)
    series: dict[str, str]  # colour -> series name
    panels: int = 1


FIGURES = {
    f.name: f
    for f in (
        # one row per dtype (FP16 above FP32), one column per m = k (1024, 2048, 4096, 8192); IPU and GPU lines
        Figure(
            "dense_ipu_gpu",
            (3e12, 3e14),
            (3e12, 1e13, 3e13, 1e14, 3e14),
            (4, 64, 1024, 16384),
            {"C0": "IPU", "C1": "GPU"},
            panels=8,
        ),
        # the x axis is inverted: 1/4 on the left
        Figure(
            "ipu_density",
            (3e11, 1e14),
            (3e11, 1e12, 3e12, 1e13, 3e13, 1e14),
            (1 / 4, 1 / 8, 1 / 16, 1 / 32),
            {"C0": "dense", "C1": "static b=1", "C2": "static b=16", "C3": "dynamic b=1", "C4": "dynamic b=16"},
        ),
        Figure(
            "ipu_block_size",
            (4e12, 1e14),
            (1e13, 3e13, 1e14),
            (1, 2, 4, 8, 16),
            {"C0": "dense", "C1": "static", "C2": "dynamic"},
        ),
    )
}
DENSE_PANEL = {"float16": 2, "float32": 6}  # the m = k = 4096 panels of dense_ipu_gpu (row-major)


# ---------------------------------------------------------------------------------------------- readings


def read_figure(fig: Figure, img: np.ndarray) -> list[dict]:
    """Every visible marker of every panel: panel index, series, x (the tick value it sits on, or the power of 2
    for dense_ipu_gpu), row and its reading."""
    ink = img.max(axis=-1) < DARK
    axes = find_axes(ink)
    if len(axes) != fig.panels:
        raise ValueError(f"{fig.name}: {len(axes)} axes found, expected {fig.panels}")
    shares = {colour: colour_share(img, TAB10[colour]) for colour in fig.series}
    out = []
    for p, ax in enumerate(axes):
        scale = y_scale(ink, ax, fig.ylim, fig.yticks)
        cols = xtick_columns(ink, ax)
        if len(cols) != len(fig.xticks):
            raise ValueError(f"{fig.name}: {len(cols)} x ticks at columns {cols}, expected {fig.xticks}")
        # x: linear in log2 of the tick values (both axes are log2; the density axis is inverted)
        xs = np.log2(fig.xticks)
        fit_slope, fit_intercept = np.polyfit(cols, xs, 1)
        markers = [m for colour in fig.series for m in find_markers(shares, ax, colour)]
        for m in markers:
            log2x = fit_intercept + fit_slope * m.x
            x = 2.0 ** round(log2x)
            if abs(log2x - round(log2x)) > 0.2:
                raise ValueError(f"{fig.name}: a {fig.series[m.colour]} marker at column {m.x:.1f} is off the grid")
            out.append(
                {
                    "panel": p,
                    "series": fig.series[m.colour],
                    "x": x,
                    "row": round(m.y, 2),
                    "covered": m.covered,
                    "flops": scale.reading(m.y).to_list(),
                    "px_per_decade": round(scale.px_per_decade, 2),
                }
            )
    return out


def _frac(d: float) -> str:
    return f"1/{round(1 / d)}"


def derive(markers: dict[str, list[dict]]) -> dict:
    """From the markers: the FP16 dense rate (best over n) both density figures share, every FP16 speed-up over
    dense they give, and the dense figure's IPU rates at m = k = 4096 by n."""

    def visible(name, series=None, panel=None):
        return [
            m
            for m in markers[name]
            if not m["covered"] and (series is None or m["series"] == series) and (panel is None or m["panel"] == panel)
        ]

    # the dense line: dense FLOP/s x density (ipu_density at its x, ipu_block_size at 1/16)
    dense_reads = [Reading(*m["flops"]).scaled(1 / m["x"]) for m in visible("ipu_density", "dense")]
    dense_reads += [Reading(*m["flops"]).scaled(16) for m in visible("ipu_block_size", "dense")]
    rate = intersect(dense_reads)
    speedups: dict[str, list[float]] = {}
    for m in visible("ipu_density"):
        if m["series"] != "dense":
            kind, block = m["series"].split(" b=")
            key = f"{kind} b={block} d={_frac(m['x'])} (ipu_density)"
            speedups[key] = (Reading(*m["flops"]) / rate.scaled(m["x"])).to_list()
    for m in visible("ipu_block_size"):
        if m["series"] != "dense":
            key = f"{m['series']} b={round(m['x'])} d=1/16 (ipu_block_size)"
            speedups[key] = (Reading(*m["flops"]) / rate.scaled(1 / 16)).to_list()
    dense = {
        dtype: {str(round(m["x"])): m["flops"] for m in visible("dense_ipu_gpu", "IPU", panel)}
        for dtype, panel in DENSE_PANEL.items()
    }
    hidden = {
        dtype: [round(m["x"]) for m in markers["dense_ipu_gpu"] if m["covered"] and m["panel"] == panel]
        for dtype, panel in DENSE_PANEL.items()
    }
    return {
        "dense_fp16_best": {"flops": rate.to_list(), "readings": len(dense_reads)},
        "speedups": dict(sorted(speedups.items())),
        "dense_by_n": dense,
        "dense_by_n_covered": hidden,
    }


def digitise(data: Path = DATA) -> dict:
    """Read the three figures' images in `data` and derive the paper's values from them."""
    markers = {name: read_figure(fig, load_png(data / f"{name}.png")) for name, fig in FIGURES.items()}
    images = {name: hashlib.sha256((data / f"{name}.png").read_bytes()).hexdigest() for name in FIGURES}
    return {
        "source": {**SOURCE, "images_sha256": images},
        "snap_px": SNAP_PX,
        **derive(markers),
        "markers": markers,
    }


def extract(notebook: Path, data: Path = DATA) -> list[Path]:
    """Write the PNG output of each figure's notebook cell (the cell that calls `save("<name>")`) to `data`."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    written = []
    for name in FIGURES:
        pattern = re.compile(rf"save\(\"{name}\"\)")
        (cell,) = [c for c in cells if c["cell_type"] == "code" and pattern.search("".join(c["source"]))]
        (png,) = [o["data"]["image/png"] for o in cell["outputs"] if "image/png" in o.get("data", {})]
        path = data / f"{name}.png"
        path.write_bytes(base64.b64decode(png))
        written.append(path)
    return written


# ---------------------------------------------------------------------------------------------- the readings in use


def speedup(readings: dict, kind: str, block: int, density: float, figure: str = "ipu_density") -> Reading:
    """One FP16 speed-up over dense read off `figure` (KeyError where that figure has no such marker)."""
    return Reading(*readings["speedups"][f"{kind} b={block} d={_frac(density)} ({figure})"])


def _summary(readings: dict) -> str:
    """The readings beside the paper's table, as text."""
    from papers.popsparse.paper import PUBLISHED

    lines = [
        f"FP16 dense, best over n (m = k = {M}): {readings['dense_fp16_best']['flops'][1] / 1e12:.1f} TFLOP/s "
        f"[{readings['dense_fp16_best']['flops'][0] / 1e12:.1f}, {readings['dense_fp16_best']['flops'][2] / 1e12:.1f}]"
        f" from {readings['dense_fp16_best']['readings']} markers",
        "the table's FP16 cells (density 1/16): printed | ipu_density | ipu_block_size",
    ]
    for block in (1, 16):
        for kind, p in zip(("static", "dynamic"), PUBLISHED[(block, "float16")], strict=True):
            cells = [speedup(readings, kind, block, 1 / 16, f) for f in ("ipu_density", "ipu_block_size")]
            lines.append(
                f"  {kind:7s} b={block:<2d} {p:.1f} | "
                + " | ".join(f"{r.estimate:.3f} [{r.low:.3f}, {r.high:.3f}]" for r in cells)
            )
    lines.append("every speed-up read:")
    lines += [f"  {k}: {v[1]:.3f} [{v[0]:.3f}, {v[2]:.3f}]" for k, v in readings["speedups"].items()]
    return "\n".join(lines)


def to_json(readings: dict) -> str:
    """The readings as JSON, numbers to 6 significant digits, each list of numbers on one line."""

    def rounded(x):
        if isinstance(x, float):
            return float(f"{x:.6g}")
        if isinstance(x, dict):
            return {k: rounded(v) for k, v in x.items()}
        if isinstance(x, list):
            return [rounded(v) for v in x]
        return x

    text = json.dumps(rounded(readings), indent=1)
    return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m papers.popsparse.digitise", description=__doc__.split("\n")[0])
    parser.add_argument("--extract", type=Path, help="Analysis.ipynb of the paper's repository: extract its images")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the figures' images")
    parser.add_argument("--out", type=Path, default=READINGS_PATH, help="where to write the readings (JSON)")
    args = parser.parse_args(argv)
    if args.extract:
        for path in extract(args.extract, args.data):
            print(f"wrote {path}")
    readings = digitise(args.data)
    args.out.write_text(to_json(readings))
    print(_summary(readings))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
