"""Shared numerics, models and experiment plumbing, independent of any paper (core never imports papers).

Importing `core` is cheap: subpackages (and JAX) load when they are used. What other projects import, by path:

Numerics and models
    core.numerics        number formats (FP8, FP16, BF16, any ExMy), exact casts with nearest or stochastic
                         rounding and saturation, FP8 codes, differentiable casts (`quantise`), simulated
                         low-precision matmuls, loss and per-tensor scaling
    core.unit_scaling    unit scaling's scaled ops (Blake et al. 2023); .umup: u-muP's ops and hyperparameters;
                         .analysis / .tracking: the scale of every tensor of a model, at init and over training
    core.nn              flax models: the transformer LM (.transformer) with its parametrizations (.parametrization:
                         standard, unit-scaled, muP and u-muP, each an abc table) and number formats (.formats), a
                         Llama and SmolLM2-135M offline (.llama, .gguf), KV-cache decoding (.decoding), decode-time
                         attention (.attention: dense, SparQ, H2O, a local window), FP8 training glue (.fp8), a
                         packed BERT encoder (.encoder)
    core.random          the IPU's PRNG, xoroshiro128aox, bit-exact in numpy and JAX, with IPU-style seeding
    core.sparsity        block-sparse matrices and their static and dynamic matmuls
    core.packing         sequence packing (SPFHP, LPFHP, NNLSHP) and multi-constraint graph packing
    core.data            offline data: Shakespeare's plays as a character corpus, QM9 and NCI molecules, RDKit
                         conformers

Experiments
    core.claims, core.report   a claim declared before the run with its rule and three verdicts; the report
                               (claims, facts, tables, figures); the claims API is re-exported here
    core.paper, core.results, core.record   the paper contract (run -> Results -> decide -> render), Results as
                               JSON, and a run's record re-decided from its stored Results
    core.ledger, core.provenance   claim locks and their change ledger; fingerprints of the code behind a result
    core.stats           the statistics that decide claims: seed spreads, paired bootstraps, trends with intervals
    core.train           the one training loop (`fit`, `fit_seeds`): evaluation, checkpoints, resumption, logging
    core.checkpoint, core.io   atomic checkpoints and file writes
    core.context, core.memo, core.prune   what a run keeps: `ctx.memo(name, key, compute)` keeps a stage's value by
                               its settings and the code it reaches; `make prune` removes work of other code
    core.config, core.launch, core.runner   config schemas and validation, the command line, the run of a paper
    core.stopping                           how a run stops: Ctrl-C, SIGTERM or an error, and the line that resumes it
    core.devices         several JAX devices, real or simulated, over one or more processes
    core.tracking, core.progress, core.plots   wandb logging, progress bars, the figures' shared helpers
    core.bench           timing against a peer library, reported as ratios

README.md ("Use it as a library") has examples of the stable import paths.
"""

__all__ = [
    "Claim",
    "Fact",
    "Figure",
    "Interval",
    "Report",
    "Rule",
    "Table",
    "Verdict",
    "at_least",
    "at_most",
    "equivalent",
    "interval_above",
    "interval_below",
    "is_true",
    "printed",
    "within_abs",
    "within_rel",
]


def __getattr__(name: str):
    """The claims API (`from core import Claim`), loaded on first use: importing `core`, which every module of the
    package does, stays free of the report code, so the fingerprint of a run's code does not cover it."""
    if name in __all__:
        import importlib

        return getattr(importlib.import_module("core.report"), name)
    raise AttributeError(f"module 'core' has no attribute {name!r}")
