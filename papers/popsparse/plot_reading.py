"""Values read off a matplotlib figure's image (a PNG as a notebook stores it), to the precision of its pixels.

Matplotlib's Agg renderer snaps every marker, tick marks included, to the pixel grid: a drawn position is its true
position moved by less than a pixel, the same way for markers and ticks (SNAP_PX about the drawn pixel, once the
common offset is absorbed by the axis). A log axis is fixed by its tick marks: the true axis is any line through every
tick's pixel (`YScale`), the estimate the least-squares line. A marker is found by its colour where it is wider than
the lines through it; its centre is the whole pixel whose circle holds the most of that colour. A marker's reading is
an interval: every value a marker drawn at that pixel could have, over every axis line the ticks allow; one that a
series drawn after it covers is marked and not trusted.

tests/papers/popsparse/test_digitise.py draws figures with known values and reads them back inside these intervals.
Written for the PopSparse notebook's figures (papers.popsparse.digitise); nothing in it is specific to them but the
marker size (DISC_PX, FULL_DISC_PX) and the colours (matplotlib's default cycle, TAB10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SNAP_PX = 0.5  # a drawn marker or tick lies within half a pixel of its true position
CORE_PX = 2.5  # a disc's core: farther than this from any pixel not of its colour (lines are thinner)
FULL_DISC_PX = math.sqrt(13)  # the inscribed radius (pixel centres) of a whole marker disc in these images
DISC_PX = 4.0  # a marker disc's radius (6.24 pt at 100 dpi: 8.7 px across)
DARK = 100  # a pixel darker than this in every channel is ink (spines, ticks, text)
TAB10 = {"C0": (31, 119, 180), "C1": (255, 127, 14), "C2": (44, 160, 44), "C3": (214, 39, 40), "C4": (148, 103, 189)}


def _runs(line: np.ndarray, min_len: int) -> list[tuple[int, int]]:
    """(first, last) index of every run of True at least `min_len` long."""
    padded = np.concatenate(([False], line, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(a, b - 1) for a, b in zip(edges[::2], edges[1::2], strict=True) if b - a >= min_len]


@dataclass(frozen=True)
class Axes:
    """An axes box in pixel indices: the left spine's column, the bottom spine's row, their far ends."""

    left: int
    top: int
    bottom: int
    right: int


def find_axes(ink: np.ndarray, min_len: int = 100) -> list[Axes]:
    """Every axes of a figure: a vertical ink run (the left spine) whose lower end lies on a horizontal run (the
    bottom spine, which may start further left with the lowest y tick) reaching `min_len` past it; row-major."""
    out = []
    for x in range(ink.shape[1]):
        for top, bottom in _runs(ink[:, x], min_len):
            for x0, x1 in _runs(ink[bottom], min_len):
                if x0 <= x and x1 >= x + min_len:
                    out.append(Axes(x, top, bottom, x1))
    return sorted(out, key=lambda a: (a.top // 50, a.left))


def _tick_lengths(ink: np.ndarray, ax: Axes) -> dict[int, int]:
    """Row -> length of the tick mark left of the left spine, for every row with one."""
    out = {}
    for r in range(ax.top, ax.bottom + 1):
        n = 0
        while ax.left - 1 - n >= 0 and ink[r, ax.left - 1 - n]:
            n += 1
        if n:
            out[r] = n
    return out


def xtick_columns(ink: np.ndarray, ax: Axes) -> list[int]:
    """Columns of the tick marks below the bottom spine."""
    return [c for c in range(ax.left, ax.right + 1) if ink[ax.bottom + 2, c]]


@dataclass(frozen=True)
class Reading:
    """A value read off a figure: its estimate and the interval the pixel grid allows (FLOP/s, or a ratio)."""

    low: float
    estimate: float
    high: float

    def __truediv__(self, other: Reading) -> Reading:
        return Reading(self.low / other.high, self.estimate / other.estimate, self.high / other.low)

    def scaled(self, factor: float) -> Reading:
        return Reading(self.low * factor, self.estimate * factor, self.high * factor)

    def to_list(self) -> list[float]:
        return [self.low, self.estimate, self.high]


@dataclass(frozen=True)
class YScale:
    """A log axis as its tick marks fix it: each tick's drawn row is its true row rounded to a whole pixel, so the
    true axis is any line row = a + b log10(value) passing within SNAP_PX of every tick (`lines`)."""

    rows: tuple[float, ...]
    logs: tuple[float, ...]

    def lines(self, steps: int = 4001) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(b, lowest a, highest a) over a grid of the slopes b some line through every tick's pixel allows."""
        rows, logs = np.asarray(self.rows), np.asarray(self.logs)
        b0, _ = np.polyfit(logs, rows, 1)
        b = np.linspace(1.05 * b0, 0.95 * b0, steps)
        offsets = rows[None, :] - b[:, None] * logs[None, :]
        a_low, a_high = offsets.max(axis=1) - SNAP_PX, offsets.min(axis=1) + SNAP_PX
        ok = a_low <= a_high
        if not ok.any():
            raise ValueError(f"no line passes within {SNAP_PX} px of every tick at rows {self.rows}")
        return b[ok], a_low[ok], a_high[ok]

    def reading(self, row: float) -> Reading:
        """The value at a marker drawn at `row` (its true row within SNAP_PX): the least-squares estimate and the
        range over every true row and every line the ticks allow."""
        b, a_low, a_high = self.lines()
        ends = [(row + dr - a) / b for dr in (-SNAP_PX, SNAP_PX) for a in (a_low, a_high)]
        slope, intercept = np.polyfit(self.logs, self.rows, 1)
        estimate = (row - intercept) / slope
        return Reading(10 ** float(np.min(ends)), 10 ** float(estimate), 10 ** float(np.max(ends)))

    @property
    def px_per_decade(self) -> float:
        return -float(np.polyfit(self.logs, self.rows, 1)[0])


def _minor_values(low: float, high: float) -> list[float]:
    """The log locator's minor ticks between `low` and `high`: 2..9 x 10^e."""
    return [
        k * 10.0**e
        for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        for k in range(2, 10)
        if low <= k * 10.0**e <= high
    ]


def y_scale(ink: np.ndarray, ax: Axes, ylim: tuple[float, float], yticks: tuple[float, ...]) -> YScale:
    """A log y axis from its tick marks: the major ones (the longest marks) take the values `yticks` the figure set,
    in order, the minor ones the nearest 2..9 x 10^e within `ylim` not among them. Refuses an axis whose major tick
    count is not len(yticks)."""
    lengths = _tick_lengths(ink, ax)
    longest = max(lengths.values())
    majors = sorted(r for r, n in lengths.items() if n >= longest - 1)
    if len(majors) != len(yticks):
        raise ValueError(f"{len(majors)} major y ticks found at rows {majors}, expected {yticks}")
    rows = list(majors)
    logs = [math.log10(v) for v in sorted(yticks, reverse=True)]
    slope, intercept = np.polyfit(logs, rows, 1)
    minor = [v for v in _minor_values(*ylim) if all(abs(v / t - 1) > 1e-9 for t in yticks)]
    for r in sorted(set(lengths) - set(majors)):
        rows.append(r)
        logs.append(math.log10(min(minor, key=lambda v: abs(intercept + slope * math.log10(v) - r))))
    return YScale(tuple(float(r) for r in rows), tuple(logs))


def colour_share(img: np.ndarray, rgb: tuple[int, int, int], tolerance: float = 40.0) -> np.ndarray:
    """Per pixel, how much of `rgb` over the white background it shows (0..1; anti-aliased edges in between);
    0 where the pixel is not on the white-to-`rgb` line (another colour, ink)."""
    d = 255.0 - img[..., :3].astype(np.float64)
    v = 255.0 - np.asarray(rgb, np.float64)
    share = (d @ v) / (v @ v)
    off = np.linalg.norm(d - share[..., None] * v, axis=-1)
    return np.where(off < tolerance, np.clip(share, 0.0, 1.0), 0.0)


@dataclass(frozen=True)
class Marker:
    """A disc marker: its centre (pixel indices), the radius of the largest circle of its colour inside it, and
    whether a series drawn later (above it) touches it."""

    colour: str
    x: float
    y: float
    radius: float
    covered: bool = False


def find_markers(shares: dict[str, np.ndarray], ax: Axes, colour: str) -> list[Marker]:
    """The disc markers of one colour inside an axes, from each series' `colour_share` map (in drawing order).

    A disc is where the colour is wider than its lines (a distance transform: >= CORE_PX from any other pixel; a
    line is about 1.5 px wide). Its centre is the whole pixel (the renderer snaps markers to the pixel grid) whose
    circle of DISC_PX holds the most of the colour: a line leaving the disc on one side adds a pixel or two to a
    circle moved towards it but costs a row of the disc's edge on the other. A whole disc's inscribed radius is
    FULL_DISC_PX; one cut below that under a later series' colour (a marker or a line drawn over it) is `covered`,
    and its centre is not trusted."""
    from scipy import ndimage

    order = list(shares)
    share = shares[colour]
    dist = ndimage.distance_transform_edt(share > 0.5)
    box = np.zeros_like(dist, dtype=bool)
    box[ax.top : ax.bottom, ax.left + 1 : ax.right + 1] = True
    labels, count = ndimage.label((dist >= CORE_PX) & box)
    above = np.zeros_like(box)
    for later in order[order.index(colour) + 1 :]:
        above |= shares[later] > 0.5
    r = int(DISC_PX) + 1
    dy, dx = np.mgrid[-r : r + 1, -r : r + 1]
    disc = dy**2 + dx**2 <= DISC_PX**2
    out = []
    for i in range(1, count + 1):
        inside = np.where(labels == i, dist, 0.0)
        radius = float(inside.max())
        ys, xs = np.nonzero(inside == radius)
        y0, x0 = int(np.rint(ys.mean())), int(np.rint(xs.mean()))
        scores = {
            (y, x): float((share[y - r : y + r + 1, x - r : x + r + 1] * disc).sum())
            for y in range(y0 - 2, y0 + 3)
            for x in range(x0 - 2, x0 + 3)
        }
        best = max(scores.values())
        top = [c for c, v in scores.items() if v >= best - 1e-9]
        y, x = float(np.mean([c[0] for c in top])), float(np.mean([c[1] for c in top]))
        yi, xi = int(np.rint(y)), int(np.rint(x))
        covered = bool((above[yi - r : yi + r + 1, xi - r : xi + r + 1] & disc).any())
        out.append(Marker(colour, x, y, radius, covered))
    return sorted(out, key=lambda m: m.x)


def intersect(readings: list[Reading]) -> Reading:
    """The values every reading allows (one quantity read several times), the geometric mean as its estimate.
    Refuses readings that do not meet: the pixel model would be wrong."""
    low, high = max(r.low for r in readings), min(r.high for r in readings)
    if low > high:
        raise ValueError(f"readings of one quantity do not meet: {[r.to_list() for r in readings]}")
    estimate = math.exp(sum(math.log(r.estimate) for r in readings) / len(readings))
    return Reading(low, min(max(estimate, low), high), high)


def load_png(path: Path) -> np.ndarray:
    """An image as RGB pixels."""
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB"))
