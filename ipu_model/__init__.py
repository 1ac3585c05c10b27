"""The simulated IPU: device specs, Graph/Tensor tile mapping, vertices, compute sets, programs, and an Engine
that executes them with a BSP cost model. Depends on `core` only."""
