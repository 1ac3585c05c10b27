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
  Quest (`quest_attention_gqa`).
"""

from core.nn.encoder import TransformerEncoder, attention_mask
from core.nn.formats import FP32, Formats
from core.nn.parametrization import MuP, Standard, UMuP, UnitScaled
from core.nn.transformer import TransformerLM, param_kinds

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
