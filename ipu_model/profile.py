"""The profile of an Engine: cycles per program step and per compute set, exchange traffic, tile balance, and the
memory map per tile, as text and as heat-maps (in the spirit of PopVision's execution and memory views)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ipu_model.device import DeviceSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ipu_model.programs import Program


@dataclass
class StepStats:
    """Totals over every execution of one program step. Cycle fields are the step's own (not its children's)."""

    name: str
    kind: str
    depth: int
    num_tiles: int
    runs: int = 0
    sync: float = 0.0
    exchange: float = 0.0
    compute: float = 0.0
    host: float = 0.0
    stream: float = 0.0  # copies from streaming memory
    exchanged: float = 0.0  # bytes received by tiles, summed over tiles
    flops: float = 0.0
    tile_cycles: np.ndarray = field(default=None)  # type: ignore[assignment]
    tile_bytes: np.ndarray = field(default=None)  # type: ignore[assignment]
    inclusive: float = 0.0  # own cycles + children's, filled in by Profile

    def __post_init__(self) -> None:
        self.tile_cycles = np.zeros(self.num_tiles)
        self.tile_bytes = np.zeros(self.num_tiles)

    def add(
        self,
        sync=0.0,
        exchange=0.0,
        compute=0.0,
        host=0.0,
        exchanged=0.0,
        flops=0.0,
        tile_cycles=None,
        tile_bytes=None,
        stream=0.0,
    ) -> None:
        self.stream += stream
        self.sync += sync
        self.exchange += exchange
        self.compute += compute
        self.host += host
        self.exchanged += exchanged
        self.flops += flops
        if tile_cycles is not None:
            self.tile_cycles += tile_cycles
        if tile_bytes is not None:
            self.tile_bytes += tile_bytes

    @property
    def cycles(self) -> float:
        return self.sync + self.exchange + self.compute + self.host + self.stream

    @property
    def tiles_used(self) -> int:
        return int(np.count_nonzero(self.tile_cycles)) or int(np.count_nonzero(self.tile_bytes))

    @property
    def balance(self) -> float:
        """Mean over the tiles that work of their compute cycles, over the busiest tile's (1 = even)."""
        busy = self.tile_cycles[self.tile_cycles > 0]
        return float(busy.mean() / busy.max()) if busy.size else float("nan")


@dataclass
class MemoryMap:
    variables: np.ndarray
    vertex_state: np.ndarray
    code: np.ndarray
    exchange_code: np.ndarray
    capacity: int

    @property
    def total(self) -> np.ndarray:
        return self.variables + self.vertex_state + self.code + self.exchange_code


class Profile:
    def __init__(self, device: DeviceSpec, order: list[tuple[Program, int]], memory: MemoryMap):
        self.device, self.memory, self.runs = device, memory, 0
        self._programs = [p for p, _ in order]
        self.steps: dict[int, StepStats] = {
            p.id: StepStats(p.name, type(p).__name__, depth, device.tiles) for p, depth in order
        }

    @property
    def total_cycles(self) -> float:
        return float(sum(s.cycles for s in self.steps.values()))

    def _fill_inclusive(self) -> None:
        def inclusive(p: Program) -> float:
            s = self.steps[p.id]
            s.inclusive = s.cycles + sum(inclusive(c) for c in p.children())
            return s.inclusive

        if self._programs:
            inclusive(self._programs[0])

    def totals(self) -> dict[str, float]:
        steps = list(self.steps.values())
        total = self.total_cycles
        per_run = total / max(self.runs, 1)
        flops = sum(s.flops for s in steps)
        return {
            "cycles": total,
            "cycles_per_run": per_run,
            "seconds_per_run": self.device.seconds(per_run),
            "sync": sum(s.sync for s in steps),
            "exchange": sum(s.exchange for s in steps),
            "compute": sum(s.compute for s in steps),
            "host": sum(s.host for s in steps),
            "stream": sum(s.stream for s in steps),
            "bytes_exchanged": sum(s.exchanged for s in steps),
            "flops": flops,
            "memory_bytes": float(self.memory.total.sum()),
            "memory_max_tile_bytes": float(self.memory.total.max(initial=0)),
        }

    def fraction_of_peak(self, flops_per_run: float, dtype: str) -> float:
        """Achieved FLOP/s over the device's peak for `dtype`, for a program doing `flops_per_run` per run."""
        seconds = self.totals()["seconds_per_run"]
        return flops_per_run / seconds / self.device.peak_flops(dtype) if seconds else float("nan")

    def to_dict(self) -> dict[str, Any]:
        self._fill_inclusive()
        return {
            "device": self.device.name,
            "runs": self.runs,
            "totals": self.totals(),
            "steps": [
                {
                    "name": s.name,
                    "kind": s.kind,
                    "depth": s.depth,
                    "runs": s.runs,
                    "cycles": s.inclusive,
                    "sync": s.sync,
                    "exchange": s.exchange,
                    "compute": s.compute,
                    "host": s.host,
                    "stream": s.stream,
                    "bytes_exchanged": s.exchanged,
                    "tiles_used": s.tiles_used,
                    "balance": s.balance if s.tile_cycles.any() else None,
                }
                for s in self.steps.values()
            ],
        }

    # ------------------------------------------------------------------------------------------------- text
    def report(self) -> str:
        self._fill_inclusive()
        d, tot = self.device, self.totals()
        cyc = tot["cycles"] or 1.0
        lines = [
            f"IPU profile: {d.name}, {d.tiles} tiles x {d.workers} workers at {d.clock_hz / 1e9:.2f} GHz; "
            f"{self.runs} run(s)",
            f"per run: {tot['cycles_per_run']:,.0f} cycles = {tot['seconds_per_run'] * 1e6:,.1f} us; "
            f"sync {tot['sync'] / cyc:.0%}, exchange {tot['exchange'] / cyc:.0%}, compute {tot['compute'] / cyc:.0%}, "
            f"host {tot['host'] / cyc:.0%}, streaming {tot['stream'] / cyc:.0%}; "
            f"{tot['bytes_exchanged'] / max(self.runs, 1) / 1e6:,.2f} MB exchanged",
            "",
            f"{'program step':<36}{'runs':>6}{'cycles':>14}{'share':>8}{'sync':>10}{'exchange':>11}{'compute':>11}"
            f"{'host':>9}{'stream':>11}{'exch. MB':>10}{'tiles':>7}{'balance':>9}",
        ]
        for s in self.steps.values():
            name = ("  " * s.depth + s.name)[:35]
            leaf = s.kind not in ("Sequence", "Repeat", "RepeatWhileTrue", "If")
            bal = f"{s.balance:.2f}" if leaf and s.tile_cycles.any() else ""
            tiles = f"{s.tiles_used}" if leaf and s.tiles_used else ""
            lines.append(
                f"{name:<36}{s.runs:>6}{s.inclusive:>14,.0f}{s.inclusive / cyc:>8.1%}{s.sync:>10,.0f}"
                f"{s.exchange:>11,.0f}{s.compute:>11,.0f}{s.host:>9,.0f}{s.stream:>11,.0f}{s.exchanged / 1e6:>10,.2f}"
                f"{tiles:>7}{bal:>9}"
            )
        lines += ["", *self.memory_report()]
        return "\n".join(lines)

    def memory_report(self) -> list[str]:
        m, d = self.memory, self.device
        total = m.total
        t = int(np.argmax(total)) if total.size else 0
        return [
            f"memory: {total.sum() / 1e6:,.2f} MB of {d.total_memory / 1e6:,.1f} MB "
            f"({total.sum() / d.total_memory:.1%});"
            f" busiest tile {t}: {total[t] / 1024:,.1f} KiB of {m.capacity / 1024:,.0f} KiB "
            f"({total[t] / m.capacity:.0%}); mean {total.mean() / 1024:,.1f} KiB",
            f"  tensors {m.variables.sum() / 1e6:,.2f} MB, vertex state {m.vertex_state.sum() / 1e6:,.3f} MB, "
            f"code {m.code.sum() / 1e6:,.3f} MB, exchange code {m.exchange_code.sum() / 1e6:,.3f} MB",
            "  fullest tiles (bytes: tensors + vertex state + code + exchange code = total):",
            *(
                f"    tile {i:>5}: {m.variables[i]:,.0f} + {m.vertex_state[i]:,.0f} + {m.code[i]:,.0f} + "
                f"{m.exchange_code[i]:,.0f} = {total[i]:,.0f}"
                for i in np.argsort(-total, kind="stable")[:3].tolist()
            ),
        ]

    # ----------------------------------------------------------------------------------------------- figure
    def figure(self, title: str = "") -> Figure:
        """Heat-maps of tile memory (KiB) and of compute cycles per tile over the profiled runs."""
        from core.plots import figure, heatmap

        cycles = sum((s.tile_cycles for s in self.steps.values()), np.zeros(self.device.tiles))
        fig, axes = figure(2, panel=(5.5, 4.2))
        for ax, values, label in (
            (axes[0], self.memory.total / 1024, f"memory per tile, KiB (capacity {self.memory.capacity / 1024:.0f})"),
            (axes[1], cycles, "compute cycles per tile"),
        ):
            heatmap(ax, _tile_grid(values), title=label, xlabel="tile % columns", ylabel="tile // columns")
        fig.suptitle(title or f"{self.device.name}: {self.device.tiles} tiles", fontsize=11)
        return fig


def _tile_grid(values: np.ndarray) -> np.ndarray:
    """Tiles laid out row by row in a near-square grid (NaN past the last tile)."""
    n = values.size
    cols = int(np.ceil(np.sqrt(n)))
    while n % cols and cols < n and cols * cols < 2 * n:  # prefer an exact factor close to the square root
        cols += 1
    cols = cols if n % cols == 0 else int(np.ceil(np.sqrt(n)))
    rows = -(-n // cols)
    grid = np.full(rows * cols, np.nan)
    grid[:n] = values
    return grid.reshape(rows, cols)
