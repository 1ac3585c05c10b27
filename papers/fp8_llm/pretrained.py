"""Post-training FP8 inference of a pretrained LLM, as the paper runs Llama 2: SmolLM2-135M (core.nn.gguf), every
linear layer of every block in simulated FP8 (E4M3 weights and activations) with per-tensor amax scale biases, scored
by perplexity on held-out Shakespeare against the same model in float32, with the no-scaling control (plain E4M3
casts, bias 0) and the biases each layer type used. The embedding, norms, attention's matmuls and the tied LM head
stay in float32, as in the training arms (the head policy of core.nn.formats).

    result = pretrained_fp8_inference(windows=64, window=512, policies=("amax", "none", "mxfp8", "mxfp4"))

"mxfp8" and "mxfp4" run the same layers with OCP MX block scaling instead (core.numerics.mx: blocks of 32 along the
contraction axis, E8M0 scales; MXFP8 E4M3 activations with E4M3 or E2M1 weights). Its settings
(PretrainedConfig) are papers/fp8_llm/config.py's, the PretrainedResult it returns papers/fp8_llm/results.py's (both
re-exported here).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from papers.fp8_llm.config import PretrainedConfig
from papers.fp8_llm.results import PretrainedResult

LAYER_TYPES = ("q", "k", "v", "o", "gate", "up", "down")

__all__ = [
    "LAYER_TYPES",
    "PretrainedConfig",
    "PretrainedResult",
    "held_out_windows",
    "pretrained_fp8_inference",
]


def held_out_windows(tokenizer, n: int, window: int, start_char: int = 0) -> tuple[np.ndarray, int]:
    """`n` consecutive, non-overlapping windows of `window` + 1 token ids from the held-out test plays of
    core.data.shakespeare, and the number of characters their scored tokens (all but each window's first) cover."""
    from core.data.shakespeare import token_stream

    if n < 1 or window < 2:
        raise ValueError(f"pretrained FP8 inference: need windows >= 1 and window >= 2, got {n} and {window}")
    ids = token_stream(tokenizer, "test", n * (window + 1), start_char)
    windows = ids[: n * (window + 1)].reshape(n, window + 1)
    chars = sum(len(tokenizer.decode(w[1:].tolist())) for w in windows)
    return windows, chars


def _amaxes(tree) -> dict[str, tuple]:
    """{layer path: (amax of x and w,)} from the sown "fp8_amax" intermediates, paths joined with '/'."""
    flat = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: isinstance(x, tuple))[0]
    out = {}
    for path, leaf in flat:
        keys = [getattr(k, "key", str(k)) for k in path if getattr(k, "key", None) != "fp8_amax"]
        out["/".join(keys)] = tuple(np.asarray(v) for v in leaf)
    return out


def _layer_type(path: str) -> str:
    name = path.split("/")[-1]
    if name not in LAYER_TYPES:
        raise ValueError(f"unexpected FP8 layer {path!r}")
    return name


def pretrained_fp8_inference(
    windows: int, window: int, policies: tuple[str, ...] = ("amax", "none"), progress=None, loader=None
) -> PretrainedResult:
    """`loader()` -> (Llama model, params, tokenizer); default core.nn.gguf.load_smollm2."""
    import time

    from core.nn import Formats
    from core.nn.fp8 import split_fp8
    from core.nn.gguf import load_smollm2
    from core.nn.llama import Llama
    from core.numerics.fp8 import MAX_BIAS, FP8Meta
    from core.numerics.scaling import amax_scale_bias
    from papers.fp8_llm.config import MX_VARIANTS

    t0 = time.perf_counter()
    model, params, tok = (loader or load_smollm2)()
    data, chars = held_out_windows(tok, windows, window)
    ids, labels = jnp.asarray(data[:, :-1]), jnp.asarray(data[:, 1:])

    def nats(logits, y):  # mean nats per token of one window
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits, -1), y[..., None], -1))

    fp32 = jax.jit(lambda p, x, y: nats(model.apply(p, x[None])[0], y))
    out = {"fp32": [float(fp32(params, ids[i], labels[i])) for i in range(windows)]}
    biases, values = {}, {}
    for policy in policies:
        mx = MX_VARIANTS.get(policy)
        fp8 = Llama(model.config, formats=Formats(fp8="mx", fp8_formats=mx) if mx else Formats(fp8=policy))
        variables = jax.eval_shape(fp8.init, jax.random.key(0), ids[:1, :4])
        _, meta_shape, probe_shape = split_fp8(variables)
        meta = jax.tree.map(
            lambda m: FP8Meta.init(m.history.shape[-1]), meta_shape, is_leaf=lambda x: isinstance(x, FP8Meta)
        )
        probes = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), probe_shape)

        def run(p, x, y, fp8=fp8, meta=meta, probes=probes):
            logits, found = fp8.apply({**p, "fp8_meta": meta, "fp8_probe": probes}, x[None], mutable=["intermediates"])
            return nats(logits[0], y), found["intermediates"]

        forward = jax.jit(run)
        per_type: dict[str, dict[str, list[int]]] = {t: {"x": [], "w": []} for t in LAYER_TYPES}
        losses = []
        for i in range(windows):
            loss, found = forward(params, ids[i], labels[i])
            losses.append(float(loss))
            if i == 0 and policy == "amax":  # its biases on the first window (per tensor, recomputed every window)
                for path, (amax,) in _amaxes(found).items():
                    x_bias, w_bias = (
                        amax_scale_bias(a, fmt, MAX_BIAS) for a, fmt in zip(amax, ("e4m3", "e4m3"), strict=True)
                    )
                    per_type[_layer_type(path)]["x"].append(int(x_bias))
                    per_type[_layer_type(path)]["w"].append(int(w_bias))
        out[policy] = losses
        if policy == "amax":  # the only policy with per-tensor biases (none scales nothing; MX scales per block)
            biases[policy] = {t: {k: float(np.median(v[k])) for k in ("x", "w")} for t, v in per_type.items()}
            values[policy] = {k: [b for v in per_type.values() for b in v[k]] for k in ("x", "w")}
        if progress is not None:
            progress(policy)
    return PretrainedResult(window, chars, out, biases, values, time.perf_counter() - t0)
