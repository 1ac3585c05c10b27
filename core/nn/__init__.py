"""Small flax building blocks several papers share: pluggable-numerics ops, a transformer LM and a packed
BERT-style encoder."""

from core.nn.encoder import TransformerEncoder, attention_mask
from core.nn.ops import Ops
from core.nn.transformer import TransformerLM

__all__ = ["Ops", "TransformerEncoder", "TransformerLM", "attention_mask"]
