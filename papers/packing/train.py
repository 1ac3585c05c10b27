"""Padded vs packed training of a BERT-style masked LM on Shakespeare's speeches (skewed lengths), the
cross-contamination check of the packed model, and the interleaved timing rounds of the throughput claim.

Both runs see the same sequences with the same masks: the sequences of an epoch come in a seeded order, a
sequence's masked positions depend only on (seed, epoch, sequence). The padded run takes `batch_size` sequences per
step, one per row; the packed run takes `round(batch_size / speed-up)` packs per step (SPFHP packs of the epoch's
sequences), so a step sees about as many sequences either way and the comparison is per sequence seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.data.shakespeare import load_shakespeare, speeches
from core.nn.encoder import TransformerEncoder
from core.packing import PackingResult, lengths_histogram, pack_histogram, pack_sequences, packed_arrays
from core.train import fit, init_state, optimizer_step
from papers.packing.results import Arm, Contamination, TrainRun


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


def build_model(cfg, corpus: Corpus) -> TransformerEncoder:
    m = cfg.model
    return TransformerEncoder(corpus.vocab, m.d_model, m.depth, m.heads, cfg.max_len)


class Plan:
    """Every step of a run, fixed in advance: the packs each step trains on, epoch by epoch, until `sequences`
    sequences have been seen. An epoch is a seeded order of the training sequences (packed: SPFHP packs of them, in a
    seeded order), cut into batches of `rows` packs; the last batch of an epoch is padded with empty rows."""

    def __init__(self, cfg, corpus: Corpus, mode: str, seed: int, rows: int):
        self.cfg, self.corpus, self.mode, self.seed, self.rows = cfg, corpus, mode, seed, rows
        self.width = 1 if mode == "padded" else cfg.max_sequences_per_pack
        self.packs: list[list[list[int]]] = []  # per epoch
        self.steps: list[tuple[int, int]] = []  # per step: (epoch, first pack)
        seen = []
        while not seen or seen[-1] < cfg.sequences:
            epoch = len(self.packs)
            self.packs.append(self._epoch_packs(epoch))
            for first in range(0, len(self.packs[epoch]), rows):
                self.steps.append((epoch, first))
                count = sum(len(p) for p in self.packs[epoch][first : first + rows])
                seen.append((seen[-1] if seen else 0) + count)
                if seen[-1] >= cfg.sequences:
                    break
        self.seen = np.asarray(seen)  # sequences seen after each step
        self._masked: tuple[int, tuple[list, list]] | None = None

    def _epoch_packs(self, epoch: int) -> list[list[int]]:
        n = len(self.corpus.train)
        order = np.random.default_rng([self.seed, epoch, 1]).permutation(n)
        if self.mode == "padded":
            return [[int(i)] for i in order]
        lengths = np.array([self.corpus.train[i].size for i in order])
        local, _ = pack_sequences(lengths, self.cfg.max_len, self.cfg.max_sequences_per_pack, "spfhp", seed=epoch)
        packs = [[int(order[i]) for i in p] for p in local]
        return [packs[i] for i in np.random.default_rng([self.seed, epoch, 2]).permutation(len(packs))]

    def batch(self, k: int) -> dict[str, np.ndarray]:
        """The model arrays of step k."""
        epoch, first = self.steps[k]
        if self._masked is None or self._masked[0] != epoch:  # masks depend on (seed, epoch, sequence) only
            self._masked = (epoch, masked(self.corpus, self.corpus.train, self.seed, epoch, self.cfg.mask_prob))
        inputs, labels = self._masked[1]
        chunk = self.packs[epoch][first : first + self.rows]
        chunk += [[] for _ in range(self.rows - len(chunk))]  # a short last batch keeps the compiled shape
        b = batch_arrays(inputs, labels, chunk, self.cfg.max_len, self.width)
        return {k: v for k, v in b.items() if k not in ("starts", "index")}

    def mean_tokens_per_step(self) -> float:
        """Real tokens of an average step (the sequences' lengths, [CLS] included), over every step of the plan."""
        lengths = [np.array([sum(self.corpus.train[i].size for i in p) for p in packs]) for packs in self.packs]
        return float(np.mean([lengths[e][first : first + self.rows].sum() for e, first in self.steps]))

    def evaluates(self, done: int) -> bool:
        """Evaluate after the step that crosses the next multiple of eval_every sequences, and at the end."""
        k = done - 1
        before = self.seen[k - 1] if k else 0
        return done == len(self.steps) or self.seen[k] // self.cfg.eval_every > before // self.cfg.eval_every


def _optimizer(cfg) -> optax.GradientTransformation:
    """AdamW on a warmup-cosine schedule, the same in both modes: a step sees about batch_size sequences either way."""
    decay = max(cfg.sequences // cfg.batch_size, cfg.warmup + 1)
    schedule = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, cfg.warmup, decay, end_value=cfg.lr * 0.1)
    return optax.adamw(schedule, weight_decay=0.01)


def mlm_loss_fn(model: TransformerEncoder, width: int):
    """(params, batch) -> the MLM loss averaged over the batch's real sequences (rows hold up to `width`)."""

    def loss(params, b):
        value, _, _ = model.apply(
            params, b["ids"], b["sequence_ids"], b["positions"], b["labels"], width, method=TransformerEncoder.mlm_loss
        )
        return value

    return loss


def packed_rows(cfg, corpus: Corpus) -> int:
    """Packs per packed step: about batch_size sequences, at the packing's sequences per pack."""
    return max(1, round(cfg.batch_size / corpus.packing.speedup))


def train(cfg, corpus: Corpus, mode: str, seed: int, checkpoint_dir: Path | None, resume: bool) -> tuple[Any, TrainRun]:
    """Train in `mode` ('padded' or 'packed') until cfg.sequences sequences have been seen."""
    model = build_model(cfg, corpus)
    L = cfg.max_len
    rows = cfg.batch_size if mode == "padded" else packed_rows(cfg, corpus)
    plan = Plan(cfg, corpus, mode, seed, rows)
    optimizer = _optimizer(cfg)
    dummy = jnp.zeros((1, L), jnp.int32)
    valid = _validation_batches(cfg, corpus, seed)
    eval_fn = jax.jit(mlm_loss_fn(model, 1))
    run = fit(
        jax.jit(optimizer_step(mlm_loss_fn(model, plan.width), optimizer)),
        init_state(model.init(jax.random.key(seed), dummy, dummy, dummy), optimizer),
        plan.batch,
        steps=len(plan.steps),
        evaluate=lambda s: {"valid/loss": float(np.mean([float(eval_fn(s["params"], b)) for b in valid]))},
        eval_every=plan.evaluates,
        eval_at_start=True,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=cfg.checkpoint_every,
        resume=resume,
        name=mode,
        count=lambda b: {"real_tokens": int((b["sequence_ids"] > 0).sum()), "slot_tokens": b["ids"].size},
    )

    def by_sequences(key: str) -> list[tuple[int, float]]:
        steps, values = run.history.series(key)
        return [(int(plan.seen[s - 1]) if s else 0, float(v)) for s, v in zip(steps, values, strict=True)]

    result = TrainRun(
        mode,
        curve=by_sequences("valid/loss"),
        train_curve=by_sequences("train/loss"),
        step_seconds=run.train_seconds,
        real_tokens=int(run.timed_counts.get("real_tokens", 0)),
        slot_tokens=int(run.timed_counts.get("slot_tokens", 0)),
        sequences=int(plan.seen[-1]),
        steps=len(plan.steps),
        rows_per_step=rows,
    )
    return run.state["params"], result


def throughput_rounds(cfg, corpus: Corpus, seed: int) -> dict[str, Arm]:
    """Seconds per training step of three arms, in `cfg.timing_rounds` interleaved rounds (core.bench.time_rounds:
    each arm warmed, then round i of every arm before round i + 1 of any, in one process with the same threads):
    padded (batch_size rows), packed (its packed_rows rows) and padded with the packed run's rows, the control that
    separates the cost of a row from the number of rows. A step's cost depends on the shapes only, so each arm
    times one batch of its plan; its real tokens per step are the plan's average over every step."""
    from core.bench import time_rounds

    model = build_model(cfg, corpus)
    optimizer = _optimizer(cfg)
    dummy = jnp.zeros((1, cfg.max_len), jnp.int32)
    state = init_state(model.init(jax.random.key(seed), dummy, dummy, dummy), optimizer)
    few = packed_rows(cfg, corpus)
    arms = {
        a.name: a
        for a in (
            Arm("padded", "padded", cfg.batch_size, 0.0),
            Arm("packed", "packed", few, 0.0),
            Arm("padded, packed rows", "padded", few, 0.0),
        )
    }
    fns = {}
    for arm in arms.values():
        plan = Plan(cfg, corpus, arm.mode, seed, arm.rows)
        arm.tokens_per_step = plan.mean_tokens_per_step()
        step = jax.jit(optimizer_step(mlm_loss_fn(model, plan.width), optimizer))
        batch = {k: jnp.asarray(v) for k, v in plan.batch(0).items()}
        fns[arm.name] = lambda step=step, batch=batch: step(state, batch)
    seconds = time_rounds(fns, repeat=cfg.timing_rounds, min_seconds=cfg.timing_seconds, warmup=2)
    for name, arm in arms.items():
        arm.seconds = seconds[name]
    return arms


def _validation_batches(cfg, corpus: Corpus, seed: int) -> list[dict[str, jax.Array]]:
    inputs, labels = masked(corpus, corpus.valid, seed, 10**6, cfg.mask_prob)
    out = []
    for i in range(0, len(inputs), cfg.batch_size):
        packs = [[j] for j in range(i, min(i + cfg.batch_size, len(inputs)))]
        b = batch_arrays(inputs, labels, packs, cfg.max_len, 1)
        out.append({k: jnp.asarray(v) for k, v in b.items() if k not in ("starts", "index")})
    return out


def contamination_check(cfg, corpus: Corpus, params, seed: int, count: int) -> Contamination:
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
    return Contamination(**diff, sequences=len(seqs), packs=result.num_packs)


IPU_ROWS = 4  # rows (packs, or padded sequences) of the micro-batch the simulated IPU costs a step on


def ipu_steps(cfg) -> list:
    """The training step of both modes (the jitted `optimizer_step` `train` fits) at the run's model and sequence
    length, for the simulated IPU (ipu_model.steps): a micro-batch of IPU_ROWS rows each, as an IPU replica takes a
    micro-batch of a few packs; a packed row holds the packing's mean sequences per pack, a padded row one."""
    from ipu_model.steps import Step

    t = cfg.packing.train
    corpus = load_corpus(t.max_len, 0, t.max_sequences_per_pack)
    model, optimizer = build_model(t, corpus), _optimizer(t)
    dummy = jnp.zeros((1, t.max_len), jnp.int32)
    state = jax.eval_shape(lambda: init_state(model.init(jax.random.key(0), dummy, dummy, dummy), optimizer))
    batch = {
        k: jax.ShapeDtypeStruct((IPU_ROWS, t.max_len), jnp.int32)
        for k in ("ids", "sequence_ids", "positions", "labels")
    }
    per_pack = corpus.packing.speedup
    size = f"d_model {t.model.d_model}, depth {t.model.depth}, {t.model.heads} heads, rows of {t.max_len} tokens"
    return [
        Step(
            "packed training step",
            jax.jit(optimizer_step(mlm_loss_fn(model, t.max_sequences_per_pack), optimizer)),
            (state, batch),
            f"{IPU_ROWS} packs (about {IPU_ROWS * per_pack:.1f} sequences: SPFHP's {per_pack:.2f} a pack); {size}",
            paper_figure="packed BERT-Large phase 2 pre-training about 2x faster (abstract; Section 6), on IPUs at the "
            "paper's sizes: context, not this step",
        ),
        Step(
            "padded training step",
            jax.jit(optimizer_step(mlm_loss_fn(model, 1), optimizer)),
            (state, batch),
            f"{IPU_ROWS} padded rows ({IPU_ROWS} sequences); {size}",
        ),
    ]
