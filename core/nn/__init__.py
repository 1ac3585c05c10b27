"""Small flax building blocks several papers share: pluggable-numerics ops and a transformer LM."""

from core.nn.ops import Ops
from core.nn.transformer import TransformerLM

__all__ = ["Ops", "TransformerLM"]
