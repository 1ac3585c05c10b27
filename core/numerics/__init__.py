"""Low-precision numerics: number formats, exact casts (nearest-even and stochastic, with or without saturation),
FP8 codes, casts with a separate gradient format, simulated low-precision matmuls, and scaling strategies.

Low precision is simulated: values stay float32 in memory but lie exactly on the format's grid, bit for bit what
ml_dtypes (or gfloat, for formats ml_dtypes lacks) gives.

    FORMATS, FloatFormat, get_format, make_format   the named formats (e4m3, e5m2, e2m1, fp16, bf16, ...), any ExMy
    cast_to_format          round to a format's grid: nearest-even or stochastic, overflow to Inf/NaN or saturate
    stochastic_rounding     a block that keys every stochastic cast inside it (cast_to_format and quantise)
    fast_random_bits        cheap counter-based random bits for stochastic rounding
    encode, decode, code_values   a format's integer codes (uint8 for FP8) and the value of every code
    quantise                differentiable cast: the value to one format, its gradient to another
    quantised_dot           a matmul with low-precision operands and FP32 accumulation
    scale_loss, unscale_grads, all_finite, dynamic_loss_scale_init/update, DynamicLossScale
                            loss scaling that backs off on overflow
    amax, amax_scale_bias, scaled_cast, amax_scaled_dot
                            per-tensor power-of-two scaling from the current absolute maximum
    delayed_scaling_init/update, delayed_scaled_cast, DelayedScaling
                            scaling from a history of absolute maxima
    format_stats, log2_histogram   how much of a tensor a format keeps (underflow, overflow) and its exponents
    max_abs                 max |x| that keeps NaN (XLA's CPU max-reduction drops it from 4,096 elements)
core.numerics.fp8 (not imported here) is FP8 training's per-tensor scale biases (`fp8_dot`, `update_meta`);
core.numerics.mx (not imported here) the OCP MX block-scaled formats (`mx_quantise`, whose gradient is zero unless
`straight_through=True`; `mx_encode`, `mx_decode`, `mx_dot`), also FP8 training's "mx" policy.
"""

from core.numerics.bits import fast_random_bits, stochastic_rounding
from core.numerics.cast import cast_to_format, code_values, decode, encode
from core.numerics.formats import FORMATS, FloatFormat, get_format, make_format
from core.numerics.quantise import quantise, quantised_dot
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
from core.numerics.stats import format_stats, log2_histogram, max_abs

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
    "max_abs",
    "quantise",
    "quantised_dot",
    "scale_loss",
    "scaled_cast",
    "stochastic_rounding",
    "unscale_grads",
]
