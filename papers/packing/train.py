"""Padded vs packed training of a BERT-style masked LM on Shakespeare's speeches (skewed lengths), and the
cross-contamination check of the packed model.

Both runs see the same sequences with the same masks: the sequences of an epoch come in a seeded order, a
sequence's masked positions depend only on (seed, epoch, sequence). The padded run takes `batch_size` sequences per
step, one per row; the packed run takes `round(batch_size / speed-up)` packs per step (SPFHP packs of the epoch's
sequences), so a step sees about as many sequences either way and the comparison is per sequence seen.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.checkpoint import Checkpointer
from core.data.shakespeare import load_shakespeare, speeches
from core.nn.encoder import TransformerEncoder
from core.packing import PackingResult, lengths_histogram, pack_histogram, pack_sequences, packed_arrays
from core.progress import progress
from core.tracking import log_metrics


@dataclass
class Corpus:
    """Sequences ([CLS] + speech, truncated to max_len) per split, and the special token ids."""

    train: list[np.ndarray]
    valid: list[np.ndarray]
    vocab: int  # model vocabulary: characters + [MASK] + [CLS]
    mask_id: int
    cls_id: int
    truncated: float  # fraction of training speeches cut at max_len
    packing: PackingResult  # SPFHP of the training sequences: the speed-up the packed run's batch size follows


def load_corpus(max_len: int, max_valid: int, max_sequences_per_pack: int) -> Corpus:
    chars = load_shakespeare().vocab_size
    mask_id, cls_id = chars, chars + 1

    def prepare(split: str) -> tuple[list[np.ndarray], float]:
        raw = speeches(split)
        cut = sum(len(s) + 1 > max_len for s in raw) / max(len(raw), 1)
        return [np.concatenate([[cls_id], np.asarray(s[: max_len - 1], np.int32)]) for s in raw], cut

    train, truncated = prepare("train")
    valid, _ = prepare("valid")
    hist = lengths_histogram([s.size for s in train], max_len)
    packing = pack_histogram(hist, max_len, max_sequences_per_pack, "spfhp")
    return Corpus(train, valid[:max_valid], chars + 2, mask_id, cls_id, truncated, packing)


def mask_sequence(seq: np.ndarray, rng: np.random.Generator, corpus: Corpus, prob: float) -> tuple[np.ndarray, ...]:
    """BERT's masking of one sequence (never its [CLS]): each token is a target with probability `prob`; a target
    becomes [MASK] 80% of the time, a random character 10%, stays 10%. Returns (inputs, labels with -1 = none)."""
    inputs, labels = seq.copy(), np.full(seq.size, -1, np.int32)
    target = rng.random(seq.size) < prob
    target[0] = False
    labels[target] = seq[target]
    roll = rng.random(seq.size)
    inputs[target & (roll < 0.8)] = corpus.mask_id
    swap = target & (roll >= 0.8) & (roll < 0.9)
    inputs[swap] = rng.integers(1, corpus.mask_id, int(swap.sum()))
    return inputs, labels


def masked(corpus: Corpus, seqs: list[np.ndarray], seed: int, epoch: int, prob: float) -> tuple[list, list]:
    pairs = [mask_sequence(s, np.random.default_rng([seed, epoch, i]), corpus, prob) for i, s in enumerate(seqs)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def batch_arrays(inputs, labels, packs, max_len: int, max_sequences: int) -> dict[str, np.ndarray]:
    a = packed_arrays(inputs, packs, max_len)
    lab = packed_arrays(labels, packs, max_len, pad_id=-1)["ids"]
    return {
        "ids": a["ids"],
        "sequence_ids": a["sequence_ids"],
        "positions": a["positions"],
        "labels": lab,
        "starts": _pad_columns(a["starts"], max_sequences),
        "index": _pad_columns(a["index"], max_sequences),
    }


def _pad_columns(x: np.ndarray, width: int) -> np.ndarray:
    out = np.full((x.shape[0], width), -1, np.int32)
    out[:, : x.shape[1]] = x
    return out


@dataclass
class RunResult:
    mode: str
    curve: list[tuple[int, float]] = field(default_factory=list)  # (sequences seen, validation loss)
    train_curve: list[tuple[int, float]] = field(default_factory=list)
    step_seconds: float = 0.0  # time in training steps (compilation excluded)
    real_tokens: int = 0
    slot_tokens: int = 0  # rows x max_len processed
    sequences: int = 0
    steps: int = 0
    rows_per_step: int = 0

    @property
    def tokens_per_second(self) -> float:
        return self.real_tokens / self.step_seconds if self.step_seconds else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "tokens_per_second": self.tokens_per_second}


def build_model(cfg, corpus: Corpus) -> TransformerEncoder:
    m = cfg.model
    return TransformerEncoder(corpus.vocab, m.d_model, m.depth, m.heads, cfg.max_len)


def train(
    cfg, corpus: Corpus, mode: str, seed: int, checkpoint_dir: Path | None, resume: bool
) -> tuple[Any, RunResult]:
    """Train in `mode` ('padded' or 'packed') until cfg.sequences sequences have been seen."""
    model = build_model(cfg, corpus)
    L, S = cfg.max_len, cfg.max_sequences_per_pack
    rows = cfg.batch_size if mode == "padded" else max(1, round(cfg.batch_size / corpus.packing.speedup))
    width = 1 if mode == "padded" else S
    # the same schedule in both modes: a step sees about batch_size sequences either way
    decay = max(cfg.sequences // cfg.batch_size, cfg.warmup + 1)
    schedule = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, cfg.warmup, decay, end_value=cfg.lr * 0.1)
    optimizer = optax.adamw(schedule, weight_decay=0.01)
    dummy = jnp.zeros((1, L), jnp.int32)
    params = model.init(jax.random.key(seed), dummy, dummy, dummy)
    state = {"params": params, "opt": optimizer.init(params)}

    def loss_fn(p, b, width):
        loss, _, _ = model.apply(
            p, b["ids"], b["sequence_ids"], b["positions"], b["labels"], width, method=TransformerEncoder.mlm_loss
        )
        return loss

    @jax.jit
    def step(s, b):
        loss, grads = jax.value_and_grad(loss_fn)(s["params"], b, width)
        updates, opt = optimizer.update(grads, s["opt"], s["params"])
        return {"params": optax.apply_updates(s["params"], updates), "opt": opt}, loss

    valid = _validation_batches(cfg, corpus, seed)
    eval_fn = jax.jit(lambda p, b: loss_fn(p, b, 1))

    def evaluate(p) -> float:
        return float(np.mean([float(eval_fn(p, b)) for b in valid]))

    result = RunResult(mode, rows_per_step=rows)
    ckpt = Checkpointer(checkpoint_dir, keep=1) if checkpoint_dir is not None else None
    if ckpt is not None and resume and ckpt.latest_step() is not None:
        _, state, meta = ckpt.restore(state)
        result = RunResult(
            **{
                **meta["result"],
                "curve": [tuple(c) for c in meta["result"]["curve"]],
                "train_curve": [tuple(c) for c in meta["result"]["train_curve"]],
            }
        )
    if not result.curve:
        result.curve.append((0, evaluate(state["params"])))
    next_eval = (result.sequences // cfg.eval_every + 1) * cfg.eval_every
    bar = progress(total=cfg.sequences, initial=result.sequences, desc=mode, unit="seq")
    losses: list[float] = []
    compiled = False  # the first step of every process compiles: keep it out of the timing
    while result.sequences < cfg.sequences:
        for b in _epoch_batches(cfg, corpus, mode, seed, result, rows, width):
            t0 = time.perf_counter()
            state, loss = step(state, {k: jnp.asarray(v) for k, v in b.items() if k not in ("starts", "index")})
            loss = float(loss)
            if compiled:
                result.step_seconds += time.perf_counter() - t0
                result.real_tokens += int((b["sequence_ids"] > 0).sum())
                result.slot_tokens += b["ids"].size
            compiled = True
            seen = int((b["index"] >= 0).sum())
            result.sequences += seen
            result.steps += 1
            losses.append(loss)
            bar.update(seen)
            if result.sequences >= next_eval or result.sequences >= cfg.sequences:
                v = evaluate(state["params"])
                result.curve.append((result.sequences, v))
                result.train_curve.append((result.sequences, float(np.mean(losses))))
                log_metrics(
                    {f"{mode}/valid_loss": v, f"{mode}/train_loss": float(np.mean(losses))}, step=result.sequences
                )
                losses = []
                next_eval += cfg.eval_every
                bar.set_postfix(valid=f"{v:.3f}", refresh=False)
                if ckpt is not None:
                    ckpt.save(result.steps, state, metadata={"result": result.to_dict()})
            if result.sequences >= cfg.sequences:
                break
    bar.close()
    return state["params"], result


def _epoch_batches(cfg, corpus: Corpus, mode: str, seed: int, result: RunResult, rows: int, width: int):
    """The batches of the epoch that contains sequence number `result.sequences`, from where the run stands."""
    n = len(corpus.train)
    epoch, offset = divmod(result.sequences, n)
    order = np.random.default_rng([seed, epoch, 1]).permutation(n)
    inputs, labels = masked(corpus, corpus.train, seed, epoch, cfg.mask_prob)
    if mode == "padded":
        packs = [[int(i)] for i in order]
    else:
        lengths = np.array([corpus.train[i].size for i in order])
        local, _ = pack_sequences(lengths, cfg.max_len, cfg.max_sequences_per_pack, "spfhp", seed=epoch)
        packs = [[int(order[i]) for i in p] for p in local]
        packs = [packs[i] for i in np.random.default_rng([seed, epoch, 2]).permutation(len(packs))]
    # skip what the run has already seen in this epoch (after a resume)
    seen, start = 0, 0
    while start < len(packs) and seen + len(packs[start]) <= offset:
        seen += len(packs[start])
        start += 1
    for i in range(start, len(packs), rows):
        chunk = packs[i : i + rows]
        chunk += [[] for _ in range(rows - len(chunk))]  # a short last batch keeps the compiled shape
        yield batch_arrays(inputs, labels, chunk, cfg.max_len, width)


def _validation_batches(cfg, corpus: Corpus, seed: int) -> list[dict[str, jax.Array]]:
    inputs, labels = masked(corpus, corpus.valid, seed, 10**6, cfg.mask_prob)
    out = []
    for i in range(0, len(inputs), cfg.batch_size):
        packs = [[j] for j in range(i, min(i + cfg.batch_size, len(inputs)))]
        b = batch_arrays(inputs, labels, packs, cfg.max_len, 1)
        out.append({k: jnp.asarray(v) for k, v in b.items() if k not in ("starts", "index")})
    return out


def contamination_check(cfg, corpus: Corpus, params, seed: int, count: int) -> dict[str, float]:
    """Run `count` validation sequences packed (SPFHP) and one per row through the same model: the largest
    differences of per-sequence MLM losses, [CLS] outputs and per-token hidden states, and how many packs."""
    model = build_model(cfg, corpus)
    seqs = corpus.valid[:count]
    inputs, labels = masked(corpus, seqs, seed, 10**6 + 1, cfg.mask_prob)
    L, S = cfg.max_len, cfg.max_sequences_per_pack
    packs, result = pack_sequences([s.size for s in seqs], L, S, "spfhp", seed=seed)
    alone = [[i] for i in range(len(seqs))]

    def run(pk, width):
        b = batch_arrays(inputs, labels, pk, L, width)
        args = [jnp.asarray(b[k]) for k in ("ids", "sequence_ids", "positions")]
        hidden = model.apply(params, *args)
        _, per_seq, _ = model.apply(params, *args, jnp.asarray(b["labels"]), width, method=TransformerEncoder.mlm_loss)
        cls = model.apply(params, hidden, jnp.asarray(b["starts"]), method=TransformerEncoder.pooled)
        by_seq = {}
        for r, p in enumerate(pk):
            for j, i in enumerate(p):
                start = int(b["starts"][r, j])
                by_seq[i] = (
                    float(per_seq[r, j]),
                    np.asarray(cls[r, j]),
                    np.asarray(hidden[r, start : start + seqs[i].size]),
                )
        return by_seq

    packed, single = run(packs, S), run(alone, 1)
    diff = {"loss": 0.0, "cls": 0.0, "hidden": 0.0}
    for i in range(len(seqs)):
        diff["loss"] = max(diff["loss"], abs(packed[i][0] - single[i][0]))
        diff["cls"] = max(diff["cls"], float(np.abs(packed[i][1] - single[i][1]).max()))
        diff["hidden"] = max(diff["hidden"], float(np.abs(packed[i][2] - single[i][2]).max()))
    return {**diff, "sequences": len(seqs), "packs": result.num_packs}
