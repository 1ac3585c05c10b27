"""One package per paper. Each exposes `reproduce(cfg, run) -> core.report.Report` (and optionally `Config`, the
dataclass schema of its config section). Papers import `core` and `ipu_model`, never each other."""
