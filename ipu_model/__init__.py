"""The simulated IPU: device specs, Graph/Tensor tile mapping, vertices, compute sets, programs, and an Engine
that executes them with a BSP cost model and reports a profile. Depends on `core` only.

    g = Graph("mk2")                                  # or Graph(get_device("mk2", tiles=46))
    a = g.add_variable((1024, 1024), "float16", "A"); g.map_linearly(a)
    ...
    prog, c, plan = ops.matmul(g, a, b)
    engine = Engine(g, prog)                          # checks mapping, locality, conflicts, memory
    engine.write(a, x); engine.write(b, y); engine.run()
    print(engine.profile.report())

    get_device, DeviceSpec, PRESETS, device_from_config   the Mk1, Mk2 and Bow devices' hardware facts
    Graph, Tensor, Codelet, codelet, ComputeSet, GraphError
                        variables mapped onto tiles, views of them, vertices and compute sets (Poplar's graph)
    Program, Sequence, Execute, Copy, DynamicCopy, Repeat, RepeatWhileTrue, If, HostToDevice, DeviceToHost
                        the control flow an Engine runs
    Engine, RunResult   compile (mapping, locality, conflict and memory checks) and run with the BSP cost model
    OutOfMemoryError, RemoteAccessError, WriteConflictError   what the compiler's checks raise
    Profile             cycles per step and compute set, exchange, tile balance and memory, as text and figures
    ops                 a small poplibs: elementwise maps, reductions and a planned dense matmul
    ipu_model.cost      the cost model itself: vertex cycles, worker scheduling, exchange and sync
    ipu_model.lowering  a jitted JAX function lowered onto the graph (`lower(fn, *args)`), run and costed
    python -m ipu_model profiles library ops, and a user's JAX function (`jax MODULE:FUNCTION`), from the command line
"""

from ipu_model import ops
from ipu_model.compiler import OutOfMemoryError, RemoteAccessError, WriteConflictError
from ipu_model.device import PRESETS, DeviceSpec, device_from_config, get_device
from ipu_model.engine import Engine, RunResult
from ipu_model.graph import Codelet, ComputeSet, Graph, GraphError, Tensor, codelet
from ipu_model.profile import Profile
from ipu_model.programs import (
    Copy,
    DeviceToHost,
    DynamicCopy,
    Execute,
    HostToDevice,
    If,
    Program,
    Repeat,
    RepeatWhileTrue,
    Sequence,
)

__all__ = [
    "PRESETS",
    "Codelet",
    "ComputeSet",
    "Copy",
    "DeviceSpec",
    "DeviceToHost",
    "DynamicCopy",
    "Engine",
    "Execute",
    "Graph",
    "GraphError",
    "HostToDevice",
    "If",
    "OutOfMemoryError",
    "Profile",
    "Program",
    "RemoteAccessError",
    "Repeat",
    "RepeatWhileTrue",
    "RunResult",
    "Sequence",
    "Tensor",
    "WriteConflictError",
    "codelet",
    "device_from_config",
    "get_device",
    "ops",
]
