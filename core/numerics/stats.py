"""Statistics of a tensor against a format, as in the papers' plots: what fraction of the values would underflow
to zero, land among the subnormals, or overflow, and the histogram of log2|x|."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from core.numerics.cast import cast_to_format
from core.numerics.formats import FloatFormat, get_format


def max_abs(x, axis=None, keepdims: bool = False) -> jax.Array:
    """max |x| over `axis` (all axes by default) in x's dtype, NaN where x holds a NaN.

    NaN is found apart: XLA's CPU max-reduction drops it from large tensors (jaxlib 0.10.2, its YNNPACK reduction
    fusion: one NaN among 4,096 float32 ones gives 1.0; float64, and reductions along an axis of a tensor of 8,192
    values, alike; jnp.min too), so `jnp.max(jnp.abs(x))` alone would return a finite value for a tensor holding
    NaN."""
    top = jnp.max(jnp.abs(x), axis, keepdims=keepdims)
    return jnp.where(jnp.any(jnp.isnan(x), axis, keepdims=keepdims), jnp.nan, top).astype(top.dtype)


def format_stats(x, fmt: str | FloatFormat) -> dict[str, float]:
    """Fractions of the elements of `x` (nearest-even cast, no saturation), each over all elements:

    - zero: x == 0 already;
    - underflow: x != 0 but the cast is 0;
    - subnormal: the cast is non-zero and below the smallest normal;
    - overflow: finite x whose cast is Inf/NaN (it exceeds max after rounding);
    - normal: the cast is a normal number of the format;
    - nonfinite: x is Inf or NaN already.
    """
    fmt = get_format(fmt)
    x = jnp.asarray(x, jnp.float32)
    c = cast_to_format(x, fmt)
    finite = jnp.isfinite(x)
    mag = jnp.abs(c)
    counts = {
        "zero": finite & (x == 0),
        "underflow": finite & (x != 0) & (c == 0),
        "subnormal": (mag > 0) & (mag < fmt.smallest_normal),
        "overflow": finite & ~jnp.isfinite(c),
        "normal": jnp.isfinite(c) & (mag >= fmt.smallest_normal),
        "nonfinite": ~finite,
    }
    n = max(int(x.size), 1)
    return {k: float(jnp.sum(v)) / n for k, v in counts.items()}


def log2_histogram(x, bins: int | np.ndarray = 64, range_: tuple[float, float] | None = None):
    """Histogram of log2|x| over the finite non-zero elements: (counts, bin_edges), as numpy arrays."""
    v = np.abs(np.asarray(x, np.float32).ravel())
    v = v[np.isfinite(v) & (v > 0)]
    return np.histogram(np.log2(v), bins=bins, range=range_)
