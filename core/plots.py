"""The figure helpers every report shares, on matplotlib's object API.

Figures are `matplotlib.figure.Figure` objects made here, never pyplot's global state: nothing registers them
anywhere, no backend has to be chosen (saving picks the Agg canvas for PNG), and a sweep of many runs in one process
keeps no figure alive once its report is written (the runner calls `close` after saving).

    fig, ax = figure()
    curves(ax, {"FP32": (steps, bpc_per_seed), "FP8": (steps, bpc8)}, xlabel="step", ylabel="valid BPC")
    Figure("training_curves", fig, "...")          # core.report.Figure: the runner saves and closes it
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

Series = tuple[Sequence[float], Any]  # x, and y as [points] or [points, seeds]


def figure(ncols: int = 1, nrows: int = 1, *, panel: tuple[float, float] = (6.0, 4.0), **subplots: Any):
    """A figure of nrows x ncols panels of `panel` inches each: (figure, axes) with axes a single Axes for one panel,
    else an array shaped like the grid (squeezed as pyplot would, unless `squeeze=False`)."""
    fig = Figure(figsize=(panel[0] * ncols, panel[1] * nrows), layout="tight")
    axes = fig.subplots(nrows, ncols, **subplots)
    return fig, axes


def curves(
    ax,
    series: Mapping[str, Series],
    *,
    xlabel: str = "",
    ylabel: str = "",
    styles: Mapping[str, Mapping[str, Any]] | None = None,
    band: str = "minmax",
    logy: bool = False,
    legend: bool = True,
    marker: str | None = "o",
) -> None:
    """One line per label. y with a seed axis ([points, seeds]) is drawn as its mean with a shaded band over the
    seeds: their range (`band="minmax"`) or mean +- one standard deviation (`band="std"`). Non-finite points
    (a diverged run) are left out of the line. `styles[label]` adds keyword arguments to that line."""
    if band not in ("minmax", "std"):
        raise ValueError(f"curves: band must be 'minmax' or 'std', got {band!r}")
    for label, (x, y) in series.items():
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if y.ndim == 1:
            y = y[:, None]
        mean = y.mean(axis=1)
        kw = {"marker": marker, "ms": 3, **(styles or {}).get(label, {})}
        ok = np.isfinite(mean)
        (line,) = ax.plot(x[ok], mean[ok], label=label, **kw)
        if y.shape[1] > 1:
            lo, hi = (y.min(1), y.max(1)) if band == "minmax" else (mean - y.std(1), mean + y.std(1))
            ax.fill_between(x[ok], lo[ok], hi[ok], color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both" if logy else "major")
    if legend and series:
        ax.legend(fontsize=8)


def bars(
    ax,
    groups: Sequence[str],
    values: Mapping[str, Sequence[float]],
    *,
    ylabel: str = "",
    errors: Mapping[str, Sequence[float]] | None = None,
    rotation: float = 0,
    legend: bool = True,
) -> None:
    """Grouped bars: one group per entry of `groups`, one bar per key of `values` (its value for every group; NaN
    leaves a gap), optional error bars (`errors[key]`, one half-width per group)."""
    x = np.arange(len(groups))
    width = 0.8 / max(len(values), 1)
    for i, (label, ys) in enumerate(values.items()):
        offset = (i - (len(values) - 1) / 2) * width
        err = (errors or {}).get(label)
        ax.bar(x + offset, np.asarray(ys, np.float64), width, yerr=err, label=label, capsize=3 if err else 0)
    ax.set_xticks(x, list(groups), rotation=rotation, ha="right" if rotation else "center", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, axis="y")
    if legend and len(values) > 1:
        ax.legend(fontsize=8)


def heatmap(ax, values, *, title: str = "", xlabel: str = "", ylabel: str = "", cmap: str = "viridis", **kw: Any):
    """A matrix as an image with a colour bar."""
    image = ax.imshow(np.asarray(values), aspect="auto", cmap=cmap, interpolation="nearest", **kw)
    ax.figure.colorbar(image, ax=ax)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return image


def close(fig: Any) -> None:
    """Release a figure once it is saved: pyplot's figures leave its registry, ours drop their artists."""
    import sys

    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close(fig)
    fig.clear()


__all__ = ["Figure", "bars", "close", "curves", "figure", "heatmap"]
