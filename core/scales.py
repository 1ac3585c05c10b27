"""The scale of a model's tensors as data, and the figures of them: what unit scaling's analyses (core.unit_scaling
.analysis, .tracking) measure with JAX, kept and drawn without it, so a stored record's report draws them.

    TensorScale(name, kind, std, shape)        one tensor's standard deviation (kinds: KINDS)
    out_of_range(tracks, fmt, kinds)           (step, tensor) pairs outside a format's normal range
    plot_scales(models), plot_scale_tracks(tracks, formats)   the figures (the caller saves and closes them)

A format is a core.numerics FloatFormat, a `FormatRange` (its name and range, as a record stores it) or a format's
name (looked up in core.numerics, which loads JAX).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

KINDS: tuple[str, ...] = ("activation", "activation grad", "weight", "weight grad")

# Format bands sit behind the step-coloured markers (viridis), so they take colours that viridis does not use.
_BAND_COLOURS = ("tab:red", "tab:blue", "tab:orange", "tab:gray", "tab:pink", "tab:brown")


@dataclass(frozen=True)
class TensorScale:
    name: str  # module path, e.g. "block_0/attention/qkv"
    kind: str  # "weight", "weight grad", "activation", "activation grad"
    std: float
    shape: tuple[int, ...]


@dataclass(frozen=True)
class FormatRange:
    """A number format's name and range: what a figure of scales against the format needs."""

    name: str
    smallest_subnormal: float | None  # None for a format without subnormals
    smallest_normal: float
    max: float

    @classmethod
    def of(cls, fmt: Any) -> FormatRange:
        """The range of a FloatFormat, a FormatRange, or a format's name."""
        if isinstance(fmt, FormatRange):
            return fmt
        if isinstance(fmt, str):
            from core.numerics.formats import get_format  # JAX: only where a name must be looked up

            fmt = get_format(fmt)
        sub = fmt.smallest_subnormal
        return cls(fmt.name, None if sub is None else float(sub), float(fmt.smallest_normal), float(fmt.max))


Tracks = Mapping[int, Sequence[TensorScale]]


def scales_table(rows: list[TensorScale]) -> str:
    """A plain-text table: name, kind, std, log2 std."""
    width = max(len(r.name) for r in rows)
    lines = [f"{'tensor'.ljust(width)}  {'kind':<15} {'std':>10} {'log2':>7}"]
    for r in rows:
        log2 = np.log2(r.std) if r.std > 0 else -np.inf
        lines.append(f"{r.name.ljust(width)}  {r.kind:<15} {r.std:>10.3g} {log2:>7.2f}")
    return "\n".join(lines)


def plot_scales(models: dict[str, list[TensorScale]], title: str = "Tensor scales at initialisation"):
    """The paper's style of plot: log2(std) of every tensor, one panel per kind, one marker per model."""
    from core.plots import figure

    kinds = ["weight", "activation", "weight grad", "activation grad"]
    names = {k: list(dict.fromkeys(r.name for rows in models.values() for r in rows if r.kind == k)) for k in kinds}
    heights = [max(len(names[k]), 1) for k in kinds]
    fig, axes = figure(4, panel=(4, 0.22 * max(heights) + 2))
    markers = ["o", "s", "^", "D"]
    for ax, kind in zip(axes, kinds, strict=True):
        ys = {n: i for i, n in enumerate(names[kind])}
        for (label, rows), marker in zip(models.items(), markers, strict=False):
            pts = [(np.log2(r.std), ys[r.name]) for r in rows if r.kind == kind and r.std > 0]
            if pts:
                xs, yy = zip(*pts, strict=True)
                ax.scatter(xs, yy, marker=marker, s=14, label=label, alpha=0.8)
        ax.axvline(0, color="k", lw=0.8)
        ax.set_yticks(range(len(names[kind])), names[kind], fontsize=6)
        ax.invert_yaxis()
        ax.set_title(kind)
        ax.set_xlabel("log2(std)")
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    return fig


def format_range(fmt: Any) -> dict[str, tuple[float, float] | None]:
    """log2 bounds of a format's ranges: {"subnormal": (log2 smallest subnormal, log2 smallest normal) or None for
    a format without subnormals, "normal": (log2 smallest normal, log2 max)}."""
    f = FormatRange.of(fmt)
    low = math.log2(f.smallest_normal)
    sub = f.smallest_subnormal
    return {"subnormal": None if sub is None else (math.log2(sub), low), "normal": (low, math.log2(f.max))}


def _check_kinds(kinds: Iterable[str] | None, where: str) -> tuple[str, ...]:
    if kinds is None:
        return KINDS
    if isinstance(kinds, str):  # a bare "weight" would otherwise be read as its letters
        kinds = (kinds,)
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise ValueError(f"{where}: unknown kind(s) {bad or kinds!r}; choose from {', '.join(map(repr, KINDS))}")
    return kinds


def _check_tracks(tracks: Tracks, where: str) -> list[int]:
    if not isinstance(tracks, Mapping) or not tracks:
        raise ValueError(f"{where}: tracks must be a non-empty dict of step -> list of TensorScale, got {tracks!r}")
    for step, rows in tracks.items():
        if isinstance(step, bool) or not isinstance(step, int | np.integer):
            raise ValueError(f"{where}: steps must be integers, got {step!r}")
        bad = next((r for r in rows if not isinstance(r, TensorScale)), None)
        if bad is not None:
            raise ValueError(f"{where}: step {step} holds {bad!r}; expected TensorScale (from tensor_scales)")
    return sorted(tracks)


def out_of_range(tracks: Tracks, fmt: Any, kinds: Iterable[str] | None = None) -> list[tuple[int, TensorScale]]:
    """(step, tensor) pairs, by step, whose std lies outside the format's normal range: below its smallest normal
    (a std of 0 included: such a tensor is all zeros or has underflowed) or above its max. A non-finite std (a
    diverged step) counts as out of range too. `kinds` keeps only those kinds (default: all)."""
    f = FormatRange.of(fmt)
    keep = _check_kinds(kinds, "out_of_range")
    out = []
    for step in _check_tracks(tracks, "out_of_range"):
        for r in tracks[step]:
            if r.kind in keep and not (f.smallest_normal <= r.std <= f.max):
                out.append((step, r))
    return out


def _step_colours(steps: list[int]):
    """One colour per step (by rank, so uneven steps such as 0, 10, 1000 stay distinguishable) and a mappable for a
    colour bar labelled with the steps."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import BoundaryNorm, ListedColormap

    n = len(steps)
    colours = colormaps["viridis"](np.linspace(0.0, 0.9, n) if n > 1 else [0.0])
    mappable = ScalarMappable(BoundaryNorm(np.arange(n + 1) - 0.5, n), ListedColormap(colours))
    return colours, mappable


def plot_scale_tracks(
    tracks: Tracks,
    formats: Sequence[Any] = ("e4m3", "e5m2"),
    kinds: Sequence[str] = KINDS,
    title: str = "Tensor scales over training",
    lines: bool = True,
):
    """log2(std) of every tensor at every tracked step, one panel per kind (tensors on the y axis in the order
    they first appear, as plot_scales), one marker per step coloured by step (colour bar on the last panel), joined
    across steps when `lines`. Behind them each format's normal range is shaded and its subnormal range hatched.
    Tensors with a std of 0 or a non-finite std have no log2 and are left out (out_of_range reports them).
    Returns the figure; the caller saves and closes it (core.plots.close)."""
    from matplotlib.patches import Patch

    from core.plots import figure

    steps = _check_tracks(tracks, "plot_scale_tracks")
    kinds = _check_kinds(kinds, "plot_scale_tracks")
    if isinstance(formats, str) or hasattr(formats, "smallest_normal"):  # one format, not a sequence of its letters
        formats = (formats,)
    fmts = [FormatRange.of(f) for f in formats]
    ranges = [format_range(f) for f in fmts]
    names = {k: list(dict.fromkeys(r.name for s in steps for r in tracks[s] if r.kind == k)) for k in kinds}
    height = max(max(len(names[k]), 1) for k in kinds)
    fig, axes = figure(len(kinds), panel=(4, 0.22 * height + 2), squeeze=False)
    axes = list(axes[0])
    colours, mappable = _step_colours(steps)

    handles = []
    for i, (f, rng) in enumerate(zip(fmts, ranges, strict=True)):
        c = _BAND_COLOURS[i % len(_BAND_COLOURS)]
        handles.append(Patch(facecolor=c, alpha=0.12, label=f"{f.name} normal"))
        if rng["subnormal"] is not None:
            handles.append(Patch(facecolor="none", edgecolor=c, alpha=0.5, hatch="///", label=f"{f.name} subnormal"))

    for ax, kind in zip(axes, kinds, strict=True):
        for i, rng in enumerate(ranges):
            c = _BAND_COLOURS[i % len(_BAND_COLOURS)]
            ax.axvspan(*rng["normal"], facecolor=c, alpha=0.12, lw=0, zorder=0)
            if rng["subnormal"] is not None:
                ax.axvspan(*rng["subnormal"], facecolor="none", edgecolor=c, alpha=0.5, hatch="///", lw=0, zorder=0)
        ys = {n: j for j, n in enumerate(names[kind])}
        log2 = {}  # name -> [(step index, log2 std)]
        for j, s in enumerate(steps):
            for r in tracks[s]:
                if r.kind == kind and r.std > 0 and math.isfinite(r.std):
                    log2.setdefault(r.name, []).append((j, math.log2(r.std)))
        if lines:
            for name, pts in log2.items():
                if len(pts) > 1:
                    ax.plot([x for _, x in pts], [ys[name]] * len(pts), color="0.6", lw=0.6, zorder=1)
        pts = [(x, ys[name], j) for name, p in log2.items() for j, x in p]
        if pts:
            xs, yy, js = zip(*pts, strict=True)
            ax.scatter(xs, yy, c=colours[list(js)], s=14, zorder=2, edgecolors="none")
        ax.axvline(0, color="k", lw=0.8, zorder=1)
        ax.set_yticks(range(len(names[kind])), names[kind], fontsize=6)
        ax.set_ylim(len(names[kind]) - 0.5, -0.5)  # first tensor at the top, as plot_scales' inverted axis
        ax.set_title(kind)
        ax.set_xlabel("log2(std)")

    bar = fig.colorbar(mappable, ax=axes[-1], ticks=_tick_positions(len(steps)))
    bar.ax.set_yticklabels([str(steps[t]) for t in _tick_positions(len(steps))])
    bar.set_label("step")
    if handles:
        # below the first panel, where it cannot hide a tensor's markers
        axes[0].legend(handles=handles, fontsize=7, ncols=2, loc="upper left", bbox_to_anchor=(0.0, -0.14))
    fig.suptitle(title)
    return fig


def _tick_positions(n: int, most: int = 10) -> list[int]:
    """At most `most` evenly spread step indices, first and last included, so a long track keeps a legible bar."""
    if n <= most:
        return list(range(n))
    return sorted(set(np.linspace(0, n - 1, most).round().astype(int).tolist()))


__all__ = [
    "KINDS",
    "FormatRange",
    "TensorScale",
    "format_range",
    "out_of_range",
    "plot_scale_tracks",
    "plot_scales",
    "scales_table",
]
