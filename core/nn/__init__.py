"""Small flax building blocks several papers share.

- `TransformerLM` (core.nn.transformer): a decoder-only LM whose parametrization and number formats are arguments.
- `parametrization`: `Standard` (GPT-2), `UnitScaled`, `MuP`, `UMuP`, each with its abc table; `by_name`,
  `lr_scales`.
- `Formats` (core.nn.formats): where a model's values and gradients are cast, and to what; `FP32` casts nothing.
- `TransformerEncoder`, `attention_mask` (core.nn.encoder): a packed BERT-style encoder.
- `Llama`, `LlamaConfig` (core.nn.llama) with `core.nn.gguf` (SmolLM2 from a GGUF file) and `core.nn.decoding`
  (KV-cache prefill and decode steps with any step attention); `core.nn.fp8`: training glue for FP8 linear layers.
- `core.nn.attention`: decode-time attention over a KV cache, each reporting the elements it moves: dense, SparQ
  (`sparq_attention`, `sparq_attention_gqa`), H2O, a local window, StreamingLLM (`streaming_attention_gqa`) and
  Quest (`quest_attention_gqa`); `core.nn.decode_methods`: each of them as an object (`Dense`, `SparQ`, `H2O`,
  `Local`, `Streaming`, `Quest`: its budget from a transfer ratio, its transfer formula and count, its decode step);
  `core.nn.transfer`: the elements a kernel reads and writes, counted from its traced program.

The models (JAX) load on first use, so core.nn.decode_methods' formulas import without JAX (a paper's decisions
read them).
"""

__all__ = [
    "FP32",
    "Formats",
    "MuP",
    "Standard",
    "TransformerEncoder",
    "TransformerLM",
    "UMuP",
    "UnitScaled",
    "attention_mask",
    "param_kinds",
]


def __getattr__(name: str):
    """The exports load their modules on first use. The imports are written out, so core.provenance follows them."""
    if name in ("TransformerEncoder", "attention_mask"):
        from core.nn import encoder

        return getattr(encoder, name)
    if name in ("FP32", "Formats"):
        from core.nn import formats

        return getattr(formats, name)
    if name in ("MuP", "Standard", "UMuP", "UnitScaled"):
        from core.nn import parametrization

        return getattr(parametrization, name)
    if name in ("TransformerLM", "param_kinds"):
        from core.nn import transformer

        return getattr(transformer, name)
    raise AttributeError(f"module 'core.nn' has no attribute {name!r}")
