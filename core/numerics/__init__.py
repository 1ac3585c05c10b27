"""Low-precision numerics: number formats, exact casts (nearest-even and stochastic, with or without saturation),
FP8 codes, casts with a separate gradient format, simulated low-precision matmuls, and scaling strategies.

Low precision is simulated: values stay float32 in memory but lie exactly on the format's grid, bit for bit what
ml_dtypes (or gfloat, for formats ml_dtypes lacks) gives.
"""

from core.numerics.cast import cast_to_format, code_values, decode, encode, fast_random_bits
from core.numerics.formats import FORMATS, FloatFormat, get_format, make_format
from core.numerics.quantise import quantise, quantised_dot, stochastic_rounding
from core.numerics.scaling import (
    DelayedScaling,
    DynamicLossScale,
    all_finite,
    amax,
    amax_scale_bias,
    amax_scaled_dot,
    delayed_scaled_cast,
    delayed_scaling_init,
    delayed_scaling_update,
    dynamic_loss_scale_init,
    dynamic_loss_scale_update,
    scale_loss,
    scaled_cast,
    unscale_grads,
)
from core.numerics.stats import format_stats, log2_histogram

__all__ = [
    "FORMATS",
    "DelayedScaling",
    "DynamicLossScale",
    "FloatFormat",
    "all_finite",
    "amax",
    "amax_scale_bias",
    "amax_scaled_dot",
    "cast_to_format",
    "code_values",
    "decode",
    "delayed_scaled_cast",
    "delayed_scaling_init",
    "delayed_scaling_update",
    "dynamic_loss_scale_init",
    "dynamic_loss_scale_update",
    "encode",
    "fast_random_bits",
    "format_stats",
    "get_format",
    "log2_histogram",
    "make_format",
    "quantise",
    "quantised_dot",
    "scale_loss",
    "scaled_cast",
    "stochastic_rounding",
    "unscale_grads",
]
