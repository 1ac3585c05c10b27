"""The decoder LM SparQ is evaluated with: core.nn.TransformerLM trained on Shakespeare (characters), kept in the
run's memo store (core.memo, stage "lm") by its model settings and seed and by the code that trains it (what
`train_lm` can reach, with the corpus loader): a resumed run reuses it, a killed training resumes from its
checkpoints in the stage's work directory, and a change to the evaluation code keeps it.

A share of the training windows end with a copy of an earlier span of the same window ("repeat windows"), so the
small model learns the copying (induction) behaviour the repetition task measures; the rest are plain text. An
optional warm-up (`induction_steps`) first trains on short windows of random characters ending in a copy, where
induction heads form far sooner than in long windows of text. Both the repetition score and the held-out BPC are
measured on text the model never trained on.
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from core.charlm import SPARQ_ADAM, warmup_cosine, window_loss
from core.data.shakespeare import CharCorpus, sample_windows
from core.memo import kept
from core.nn import TransformerLM
from core.train import fit, init_state, optimizer_step


def build_model(cfg, corpus: CharCorpus) -> TransformerLM:
    m = cfg.model
    return TransformerLM(corpus.vocab_size, m.d_model, m.depth, m.heads, m.seq_len, position=m.position)


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


def train_lm(cfg, corpus: CharCorpus, seed: int, work: Path | None) -> tuple[Any, dict]:
    """The trained LM's (params, info), its checkpoints in `work/checkpoints` (the memo stage's work directory, so a
    killed training resumes there)."""
    checkpoints = None if work is None else Path(work) / "checkpoints"
    _, params, info = train_model(cfg, corpus, checkpoints, seed=seed, resume=True)
    return params, info


def save_lm(value: tuple[Any, dict], directory: Path) -> None:
    """The params as flax msgpack and the info as JSON; the training checkpoints are no longer needed."""
    params, info = value
    (directory / "params.msgpack").write_bytes(serialization.to_bytes(params))
    (directory / "info.json").write_text(json.dumps({k: v for k, v in info.items() if k != "loaded"}))
    shutil.rmtree(directory / "checkpoints", ignore_errors=True)


def load_lm(cfg, corpus: CharCorpus, directory: Path) -> tuple[Any, dict]:
    m = cfg.model
    template = build_model(cfg, corpus).init(jax.random.key(0), jnp.zeros((1, m.seq_len), jnp.int32))
    params = serialization.from_bytes(template, (directory / "params.msgpack").read_bytes())
    info = json.loads((directory / "info.json").read_text())
    info["train_loss"] = [(int(k), float(v)) for k, v in info["train_loss"]]
    return params, info


def kept_lm(cfg, corpus: CharCorpus, seed: int, store: Path | None, *, reuse: bool):
    """(model, params, info) of the LM trained on `corpus`, kept in the memo store `store` (None: nothing kept) by
    the model settings, the seed and the training code; info["loaded"]: it was reused, not trained here."""
    from core.data.shakespeare import load_shakespeare

    got = kept(
        store,
        "lm",
        {"model": cfg.model, "seed": seed},
        functools.partial(train_lm, cfg, corpus, seed),
        save=save_lm,
        load=functools.partial(load_lm, cfg, corpus),
        code=[load_shakespeare],
        reuse=reuse,
        work=True,
    )
    params, info = got.value
    return build_model(cfg, corpus), params, {**info, "loaded": got.reused}
