"""The decoder LM SparQ is evaluated with: core.nn.TransformerLM trained on Shakespeare (characters), its checkpoint
kept under <output_root>/sparq/models/<hash of the model and training settings> and reused by later runs.

A share of the training windows end with a copy of an earlier span of the same window ("repeat windows"), so the
small model learns the copying (induction) behaviour the repetition task measures; the rest are plain text. An
optional warm-up (`induction_steps`) first trains on short windows of random characters ending in a copy, where
induction heads form far sooner than in long windows of text. Both the repetition score and the held-out BPC are
measured on text the model never trained on.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from omegaconf import OmegaConf

from core.checkpoint import Checkpointer
from core.data.shakespeare import CharCorpus, sample_windows
from core.nn import Ops, TransformerLM
from core.progress import progress
from core.tracking import log_metrics


def build_model(cfg, corpus: CharCorpus) -> TransformerLM:
    m = cfg.model
    return TransformerLM(corpus.vocab_size, m.d_model, m.depth, m.heads, m.seq_len, Ops(), position=m.position)


def model_key(cfg) -> str:
    """A hash of everything that determines the trained weights (and nothing else)."""
    blob = json.dumps(
        OmegaConf.to_container(cfg.model, resolve=True) if hasattr(cfg.model, "_get_node") else dict(cfg.model),
        sort_keys=True,
        default=str,
    )
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


def train_model(cfg, corpus: CharCorpus, directory: Path, resume: bool = True):
    """Train (or load) the LM; returns (model, params, info)."""
    m = cfg.model
    model = build_model(cfg, corpus)
    ckpt = Checkpointer(directory, keep=1)
    schedule = optax.warmup_cosine_decay_schedule(0.0, m.lr, m.warmup, max(m.steps, m.warmup + 1), m.lr * 0.1)
    optimizer = optax.adamw(schedule, b1=0.9, b2=0.99, weight_decay=0.01)
    dummy = jnp.zeros((1, m.seq_len), jnp.int32)
    params = model.init(jax.random.key(m.seed), dummy)
    state = {"params": params, "opt": optimizer.init(params)}
    start, info = 0, {"train_loss": [], "seconds": 0.0}
    if resume and ckpt.latest_step() is not None:
        start, state, meta = ckpt.restore(state)
        info = meta["info"]
    if start >= m.steps:
        return model, state["params"], {**info, "loaded": True}

    def loss_fn(p, w):
        return model.apply(p, w[:, :-1], w[:, 1:], method=TransformerLM.loss)

    @jax.jit
    def step(s, w):
        loss, grads = jax.value_and_grad(loss_fn)(s["params"], w)
        updates, opt = optimizer.update(grads, s["opt"], s["params"])
        return {"params": optax.apply_updates(s["params"], updates), "opt": opt}, loss

    t0 = time.perf_counter()
    losses = []
    bar = progress(range(start, m.steps), desc="train LM", total=m.steps, initial=start, unit="step")
    for i in bar:
        rng = np.random.default_rng([m.seed, i])
        if i < m.get("induction_steps", 0):
            w = induction_windows(rng, m.induction_batch, m.induction_len + 1, m.induction_span, corpus.vocab_size)
        else:
            w = sample_windows(corpus.train, m.seq_len + 1, m.batch_size, rng)
            w = repeat_windows(w, rng, m.repeat_share, m.repeat_span)
        state, loss = step(state, jnp.asarray(w))
        losses.append(float(loss))
        if (i + 1) % 50 == 0 or i + 1 == m.steps:
            mean = float(np.mean(losses))
            info["train_loss"].append((i + 1, mean))
            log_metrics({"lm/train_loss": mean}, step=i + 1)
            bar.set_postfix(loss=f"{mean:.3f}", refresh=False)
            losses = []
        if (i + 1) % m.checkpoint_every == 0 or i + 1 == m.steps:
            info["seconds"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            ckpt.save(i + 1, state, metadata={"info": info})
    bar.close()
    return model, state["params"], {**info, "loaded": False}
