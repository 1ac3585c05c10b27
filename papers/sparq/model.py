"""The decoder LM SparQ is evaluated with: core.nn.TransformerLM trained on Shakespeare (characters), its checkpoint
kept under <output_root>/sparq/models/<hash of the model and training settings and of the code that trains it>
and reused by later runs.

A share of the training windows end with a copy of an earlier span of the same window ("repeat windows"), so the
small model learns the copying (induction) behaviour the repetition task measures; the rest are plain text. An
optional warm-up (`induction_steps`) first trains on short windows of random characters ending in a copy, where
induction heads form far sooner than in long windows of text. Both the repetition score and the held-out BPC are
measured on text the model never trained on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import OmegaConf

from core.charlm import SPARQ_ADAM, warmup_cosine, window_loss
from core.data.shakespeare import CharCorpus, sample_windows
from core.nn import TransformerLM
from core.provenance import paper_fingerprint
from core.train import fit, init_state, optimizer_step


def build_model(cfg, corpus: CharCorpus) -> TransformerLM:
    m = cfg.model
    return TransformerLM(corpus.vocab_size, m.d_model, m.depth, m.heads, m.seq_len, position=m.position)


# The code the trained weights depend on (core.provenance): this module, the LM and its ops, the training loop and its
# checkpoints, and the corpus. A change to any of them trains a new model instead of reusing one made by other code.
TRAINING_CODE = (
    "papers/sparq/model.py",
    "core/charlm.py",
    "core/nn",
    "core/numerics",
    "core/unit_scaling",
    "core/train.py",
    "core/checkpoint.py",
    "core/data/shakespeare.py",
)


def model_key(cfg, seed: int) -> str:
    """A hash of everything that determines the trained weights (and nothing else): the model section, the seed and
    the fingerprint of the code that trains it (TRAINING_CODE)."""
    model = OmegaConf.to_container(cfg.model, resolve=True) if hasattr(cfg.model, "_get_node") else asdict(cfg.model)
    code = paper_fingerprint("sparq", *TRAINING_CODE)
    blob = json.dumps({"model": model, "seed": seed, "code": code}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def repeat_windows(windows: np.ndarray, rng: np.random.Generator, share: float, span: int) -> np.ndarray:
    """Replace the last `span` ids of a `share` of the windows by a copy of an earlier span of the same window."""
    out = windows.copy()
    T = windows.shape[1]
    for i in np.flatnonzero(rng.random(len(windows)) < share):
        j = rng.integers(0, T - 2 * span)
        out[i, T - span :] = windows[i, j : j + span]
    return out


def induction_windows(rng: np.random.Generator, batch: int, length: int, span: int, vocab: int) -> np.ndarray:
    """Windows of `length` random characters whose last `span` copy an earlier span at a random offset: nothing but
    copying can be learnt from them, and on short windows a small model learns it within ~1000 steps."""
    return repeat_windows(rng.integers(0, vocab, (batch, length)), rng, 1.0, span)


def train_model(cfg, corpus: CharCorpus, directory: Path, *, seed: int, resume: bool = True):
    """Train (or load, when `directory` holds the finished run) the LM; returns (model, params, info)."""
    m = cfg.model
    model = build_model(cfg, corpus)
    optimizer = SPARQ_ADAM.optimizer(warmup_cosine(m.lr, m.warmup, m.steps))
    params = model.init(jax.random.key(seed), jnp.zeros((1, m.seq_len), jnp.int32))

    loss_fn = window_loss(model)

    def batch_of(i: int) -> np.ndarray:
        rng = np.random.default_rng([seed, i])
        if i < m.induction_steps:
            return induction_windows(rng, m.induction_batch, m.induction_len + 1, m.induction_span, corpus.vocab_size)
        w = sample_windows(
            corpus.train, m.seq_len + 1, m.batch_size, rng
        )  # rng also draws the repeats: not train_windows
        return repeat_windows(w, rng, m.repeat_share, m.repeat_span)

    run = fit(
        jax.jit(optimizer_step(loss_fn, optimizer)),
        init_state(params, optimizer),
        batch_of,
        steps=m.steps,
        log_every=50,
        checkpoint_dir=directory,
        checkpoint_every=m.checkpoint_every,
        resume=resume,
        name="lm",
    )
    steps, losses = run.history.series("train/loss")
    info = {
        "train_loss": [(int(k), float(v)) for k, v in zip(steps, losses, strict=True)],
        "seconds": run.wall_seconds,
        "loaded": run.resumed_from == m.steps,
    }
    return model, run.state["params"], info
