"""Device specs of the simulated IPU: the hardware facts the cost model and the memory check use.

Every constant is a published figure or derived from one (sources below, with the full references in
ipu_model/README.md, "Constants and their sources"); none is fitted to a benchmark.

Mk2 GC200 (Graphcore IPU-M2000 / GC200 product brief, [GC200] in ipu_model/README.md):
    1472 tiles x 6 worker contexts, 624 KiB SRAM per tile (~900 MB), 1.33 GHz,
    250 TFLOP/s FP16 -> 250e12 / (1472 x 1.33e9) = 127.7, i.e. 128 FP16 FLOP/cycle/tile (64 MACs in the AMP unit);
    62.5 TFLOP/s FP32 -> 32 FLOP/cycle/tile (a quarter of FP16);
    47.5 TB/s in-processor memory bandwidth -> 47.5e12 / (1472 x 1.33e9) = 24.3, i.e. 24 bytes/cycle/tile;
    ~8 TB/s all-to-all exchange -> 8e12 / (1472 x 1.33e9) = 4.1, i.e. 4 bytes/cycle/tile;
    global sync ~600 cycles per exchange phase (approximate, no primary source: [SYNC] in ipu_model/README.md);
    PCIe Gen4 x16 host link, 64 GB/s (both directions together).
AMP conv units per tile (Poplar's Target::getFp16InFp16OutConvUnitsPerTile and its siblings, closed source): each
    unit does 4 half (2 float) multiply-accumulates per cycle, so Mk2's 128 / 32 FLOP/cycle are 16 float16.float16
    and 8 float32.float32 units. float16 inputs with float32 partials: 8 units, inferred from public poplibs code:
    tools/single_conv_layer.cpp derives them as min(half units, fp16 pipeline depth 4 x data path width / 32),
    8 on the IPU's 64-bit path; the 16x16 block-sparse assembler codelets have a two-AMP-set variant for half
    partials only (lib/popsparse/codelets/asm/Block16x16SparseDenseMatMul_half_half_2ampsets.S, none for half_float);
    and poplin's cycle estimator treats "half activations, half partials and 16 conv units" and "half activations,
    float partials and 8 conv units" as one code path (lib/poplin/PerformanceEstimation.hpp,
    getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat). Mk1: 8 / 8 / 4 (124.5 TFLOP/s "mixed precision").
Bow (Bow IPU product brief): the Mk2 tile at 1.85 GHz (wafer-on-wafer power delivery), hence 350 TFLOP/s FP16;
    per-cycle figures as Mk2.
Mk1 GC2 (Graphcore C2 card product brief; Jia et al. 2019, "Dissecting the Graphcore IPU architecture via
    microbenchmarking"): 1216 tiles, 256 KiB per tile (304 MB), 1.6 GHz, 124.5 TFLOP/s FP16 -> 64 FLOP/cycle/tile,
    31.1 TFLOP/s FP32 -> 16 FLOP/cycle/tile; 45 TB/s memory -> 23 bytes/cycle/tile; ~8 TB/s exchange -> 4
    bytes/cycle/tile; sync and host link taken as Mk2's (no separate published figure).

Modelling constants that are not hardware facts (vertex launch overhead, vertex-state and code bytes) are fields too,
so a user can see and change them; their defaults are stated as assumptions in ipu_model/README.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from core.config import ConfigError, check_range, validate_section

KIB = 1024


@dataclass
class DeviceSpec:
    """One IPU. Rates are per tile and per clock cycle unless the name says otherwise."""

    name: str = "mk2"
    tiles: int = 1472
    workers: int = 6  # worker contexts per tile (barrel-threaded: each issues every `workers`-th cycle)
    memory_per_tile: int = 624 * KIB  # bytes of SRAM
    clock_hz: float = 1.33e9
    flops_per_cycle: dict[str, int] = field(default_factory=lambda: {"float16": 128, "float32": 32})
    # AMP conv units per tile by "input.partials" type (Poplar's Target::get*ConvUnitsPerTile; see README): 4 half
    # (2 float) MACs each per cycle. float16.float16 and float32.float32 follow from the FLOP rates above;
    # float16.float32 is an assumption (see the module docstring)
    conv_units: dict[str, int] = field(
        default_factory=lambda: {"float16.float16": 16, "float16.float32": 8, "float32.float32": 8}
    )
    memory_bytes_per_cycle: int = 24  # loads + stores a tile's SRAM serves per cycle (all workers together)
    exchange_bytes_per_cycle: int = 4  # bytes a tile can send (and, at once, receive) per cycle
    sync_cycles: int = 600  # one global sync, paid before every exchange phase
    host_bytes_per_second: float = 64e9  # PCIe, both directions together; one direction gets half
    # streaming memory (off-chip DRAM behind the IPU-Machine's gateway) read by one IPU: PCIe Gen4 x8 between the
    # gateway and each IPU, 16 GT/s x 8 lanes x 128/130 / 8 bits = 15.75 GB/s a direction (Graphcore's IPU-M2000 BMC
    # user guide block diagram, as a secondary source reproduces it); an assumption: no Graphcore document gives a
    # streaming bandwidth (ipu_model/README.md, [STREAM])
    streaming_bytes_per_second: float = 16e9 * 8 * (128 / 130) / 8
    vertex_overhead_cycles: int = 30  # assumption: launching a vertex on a worker (see README)
    vertex_state_bytes: int = 8  # assumption: per vertex, plus `field_state_bytes` per connected field
    field_state_bytes: int = 8  # assumption: a pointer and a length per field
    codelet_code_bytes: int = 256  # assumption: code of one codelet type on a tile that runs it
    exchange_code_bytes_per_region: int = 8  # assumption: exchange instructions per contiguous region moved

    def __post_init__(self) -> None:
        check_range("device.tiles", self.tiles, ge=1, lt=2**15)
        check_range("device.workers", self.workers, ge=1, le=16)
        check_range("device.memory_per_tile", self.memory_per_tile, gt=0)
        check_range("device.clock_hz", self.clock_hz, gt=0)
        for dtype, rate in self.flops_per_cycle.items():
            check_range(f"device.flops_per_cycle.{dtype}", rate, gt=0)
        for types, units in self.conv_units.items():
            check_range(f"device.conv_units.{types}", units, gt=0)
        for name in ("memory_bytes_per_cycle", "exchange_bytes_per_cycle", "host_bytes_per_second",
                     "streaming_bytes_per_second"):  # fmt: skip
            check_range(f"device.{name}", getattr(self, name), gt=0)
        for name in ("sync_cycles", "vertex_overhead_cycles", "vertex_state_bytes", "field_state_bytes"):
            check_range(f"device.{name}", getattr(self, name), ge=0)
        for name in ("codelet_code_bytes", "exchange_code_bytes_per_region"):
            check_range(f"device.{name}", getattr(self, name), ge=0)

    # ----------------------------------------------------------------------------------------- derived rates
    def tile_flops_per_cycle(self, dtype: str) -> int:
        """Peak FLOP/cycle of one tile for arithmetic in `dtype` (float16 uses the AMP unit)."""
        key = _dtype_key(dtype)
        if key not in self.flops_per_cycle:
            allowed = ", ".join(sorted(self.flops_per_cycle))
            raise ValueError(f"no FLOP rate for dtype {dtype!r} on {self.name}: known dtypes are {allowed}")
        return self.flops_per_cycle[key]

    def conv_units_per_tile(self, in_dtype: str, partials_dtype: str) -> int:
        """AMP conv units of one tile for `in_dtype` inputs accumulating into `partials_dtype` partials."""
        key = f"{_dtype_key(in_dtype)}.{_dtype_key(partials_dtype)}"
        if key not in self.conv_units:
            allowed = ", ".join(sorted(self.conv_units))
            raise ValueError(f"no conv unit count for {key!r} on {self.name}: known are {allowed}")
        return self.conv_units[key]

    def peak_flops(self, dtype: str) -> float:
        """Peak FLOP/s of the whole IPU."""
        return self.tile_flops_per_cycle(dtype) * self.tiles * self.clock_hz

    @property
    def total_memory(self) -> int:
        return self.memory_per_tile * self.tiles

    @property
    def host_bytes_per_cycle(self) -> float:
        """One direction of the host link, in bytes per IPU cycle."""
        return self.host_bytes_per_second / 2 / self.clock_hz

    @property
    def streaming_bytes_per_cycle(self) -> float:
        """Streaming memory read by this IPU, in bytes per IPU cycle."""
        return self.streaming_bytes_per_second / self.clock_hz

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz

    def replace(self, **overrides: Any) -> DeviceSpec:
        return dataclasses.replace(self, **overrides)


def _dtype_key(dtype: Any) -> str:
    import numpy as np

    name = np.dtype(dtype).name
    # Integer and boolean arithmetic runs on the 32-bit path.
    return name if name in ("float16", "float32") else "float32"


PRESETS: dict[str, DeviceSpec] = {
    "mk2": DeviceSpec(),
    "bow": DeviceSpec(name="bow", clock_hz=1.85e9),
    "mk1": DeviceSpec(
        name="mk1",
        tiles=1216,
        memory_per_tile=256 * KIB,
        clock_hz=1.6e9,
        flops_per_cycle={"float16": 64, "float32": 16},
        conv_units={"float16.float16": 8, "float16.float32": 8, "float32.float32": 4},
        memory_bytes_per_cycle=23,
    ),
}


def get_device(name: str = "mk2", **overrides: Any) -> DeviceSpec:
    """A preset (`mk2`, `bow`, `mk1`) with any field overridden, e.g. `get_device("mk2", tiles=46)`."""
    if name not in PRESETS:
        raise ConfigError(f"device={name!r} is not a known IPU: choose one of {', '.join(PRESETS)}")
    unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(DeviceSpec)})
    if unknown:
        allowed = ", ".join(f.name for f in dataclasses.fields(DeviceSpec))
        raise ConfigError(f"unknown device field(s) {', '.join(unknown)}: allowed are {allowed}")
    return PRESETS[name].replace(**overrides)


def device_from_config(section: Any) -> DeviceSpec:
    """The DeviceSpec of a run's `device` config section (configs/device/<name>.yaml plus overrides)."""
    spec, _ = validate_section(section, DeviceSpec, "device")
    return spec
