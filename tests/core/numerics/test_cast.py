import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from core.numerics import (
    FORMATS,
    cast_to_format,
    code_values,
    decode,
    encode,
    fast_random_bits,
    make_format,
    quantise,
    stochastic_rounding,
)
from tests.core.numerics.reference import (
    boundaries,
    exponent_sweep,
    gfloat_cast,
    gfloat_values,
    ml_dtypes_cast,
    same_bits,
)

# every format ml_dtypes has: the seven config names plus three more built with make_format
ML_FORMATS = [*FORMATS.values(), make_format(4, 3, 11, special="fnuz"), make_format(4, 3, 7), make_format(3, 4)]
# formats only gfloat knows
GFLOAT_ONLY = [
    make_format(4, 3, 4, special="fnuz"),
    make_format(4, 3, 12, special="fn"),
    make_format(5, 2, 10, special="ieee"),
    make_format(5, 2, 20, special="fnuz"),
    make_format(3, 2, special="ieee"),
    make_format(2, 5, 1, special="fnuz"),
    make_format(6, 1, 40, special="fn"),
    make_format(1, 6, 0, special="fnuz"),
    make_format(5, 7, special="ieee"),
    make_format(8, 3, 130, special="fnuz"),  # subnormals below float32's normal range: the general path
    make_format(8, 4, special="ieee"),
]


def assert_same(ours, ref, x):
    ok = same_bits(ours, ref)
    if not ok.all():
        i = np.flatnonzero(~ok)[:5]
        raise AssertionError(f"{(~ok).sum()} mismatches, e.g. x={x[i]} ours={np.asarray(ours)[i]} ref={ref[i]}")


@pytest.mark.parametrize("fmt", ML_FORMATS, ids=lambda f: f.name)
def test_matches_ml_dtypes_on_every_exponent_and_random_bit_patterns(fmt):
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [exponent_sweep(512), rng.integers(0, 2**32, 1 << 18, dtype=np.uint64).astype(np.uint32).view(np.float32)]
    )
    with np.errstate(all="ignore"):
        ref = ml_dtypes_cast(x, fmt)
    assert_same_as_ml_dtypes(cast_to_format(x, fmt), ref, x, fmt)


@pytest.mark.parametrize("fmt", ML_FORMATS, ids=lambda f: f.name)
def test_matches_ml_dtypes_at_every_rounding_boundary(fmt):
    codes = np.arange(2 ** min(fmt.bits, 16), dtype=np.uint32)
    if fmt.bits == 32:  # FP32: a cast to itself must be the identity, including subnormals, Inf and NaN
        x = exponent_sweep(64)
        assert_same(cast_to_format(x, fmt), x, x)
        return
    grid = codes.astype(np.uint8 if fmt.bits == 8 else np.uint16).view(fmt.ml_dtype).astype(np.float32)
    x = boundaries(grid)
    with np.errstate(all="ignore"):
        ref = ml_dtypes_cast(x, fmt)
    assert_same_as_ml_dtypes(cast_to_format(x, fmt), ref, x, fmt)


def assert_same_as_ml_dtypes(ours, ref, x, fmt) -> None:
    """assert_same, except that a format without NaN keeps NaN inputs NaN (documented), where ml_dtypes makes -0."""
    ours = np.asarray(ours)
    if not fmt.has_nan:
        assert np.isnan(x).any() and np.isnan(ours[np.isnan(x)]).all()
        keep = ~np.isnan(x)
        x, ours, ref = x[keep], ours[keep], ref[keep]
    assert_same(ours, ref, x)


@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("fmt", [*GFLOAT_ONLY, *ML_FORMATS[:4]], ids=lambda f: f.name)
def test_matches_gfloat_with_and_without_saturation(fmt, saturate):
    x = np.concatenate([exponent_sweep(64), boundaries(gfloat_values(fmt).astype(np.float32))])
    ref = gfloat_cast(x, fmt, saturate=saturate)
    assert_same(cast_to_format(x, fmt, saturate=saturate), ref, x)


def test_paper_rounding_checks():
    f32 = np.float32
    e4m3 = np.asarray(cast_to_format(f32([464.0, 464.01, -464.01, np.inf]), "e4m3"))
    assert e4m3[0] == 448 and np.isnan(e4m3[1:]).all()
    sat = np.asarray(cast_to_format(f32([464.01, np.inf, -np.inf, np.nan]), "e4m3", saturate=True))
    assert list(sat[:3]) == [448, 448, -448] and np.isnan(sat[3])
    assert list(np.asarray(cast_to_format(f32([61439.9, 61440.0, -61440.0]), "e5m2"))) == [57344, np.inf, -np.inf]
    assert list(np.asarray(cast_to_format(f32([241.0, 247.9, 248.0]), "e4m3fnuz", saturate=True))) == [240] * 3


def test_signed_zero_and_underflow():
    x = np.float32([-0.0, -1e-30, 1e-30])
    e4m3 = np.asarray(cast_to_format(x, "e4m3"))
    assert (e4m3 == 0).all() and list(np.signbit(e4m3)) == [True, True, False]
    fnuz = np.asarray(cast_to_format(x, "e4m3fnuz"))
    assert (fnuz == 0).all() and not np.signbit(fnuz).any()  # fnuz has no -0
    # exactly half the smallest subnormal is a tie: to even (zero); just above it rounds up
    half = np.float32(2.0**-10)
    out = np.asarray(cast_to_format(np.float32([half, np.nextafter(half, np.float32(1))]), "e4m3"))
    assert list(out) == [0.0, 2.0**-9]


def test_format_without_subnormals_rounds_to_zero_or_the_smallest_normal():
    f = make_format(4, 3, 7, special="fn", subnormals=False)
    grid = np.concatenate([[0.0], code_values(f)[1:128]])  # the non-negative values: 0, then normals
    grid = np.unique(grid[np.isfinite(grid)])
    x = np.abs(np.concatenate([exponent_sweep(32), boundaries(grid.astype(np.float32))]))
    x = x[np.isfinite(x) & (x <= f.max)]
    ours = np.asarray(cast_to_format(x, f))
    # brute force: nearest grid value, ties to the even code (grid index parity: 0 and even mantissas)
    idx = np.searchsorted(grid, x.astype(np.float64))
    lo, hi = grid[np.clip(idx - 1, 0, len(grid) - 1)], grid[np.clip(idx, 0, len(grid) - 1)]
    lo = np.where(grid[np.clip(idx, 0, len(grid) - 1)] == x, x, lo)
    d_lo, d_hi = x - lo, hi - x
    lo_index = np.clip(idx - 1, 0, len(grid) - 1)
    lo_even = np.array([(int(np.float32(v).view(np.uint32)) >> 20) & 1 == 0 if v else True for v in grid])[lo_index]
    ref = np.where(d_lo < d_hi, lo, np.where(d_hi < d_lo, hi, np.where(lo_even, lo, hi)))
    np.testing.assert_array_equal(ours, ref.astype(np.float32))
    assert not ((ours > 0) & (ours < f.smallest_normal)).any()


# ---------------------------------------------------------------------------------------------- stochastic rounding


@pytest.mark.parametrize(
    "fmt",
    [FORMATS["e4m3"], FORMATS["e5m2fnuz"], FORMATS["bf16"], make_format(4, 3, 11, special="fnuz")],
    ids=lambda f: f.name,
)
def test_stochastic_rounding_matches_gfloat_given_the_same_bits(fmt):
    rng = np.random.default_rng(2)
    n = 1 << 15
    lo, hi = np.log2(fmt.smallest_subnormal) - 6, np.log2(min(fmt.max, 2.0**100))
    x = (rng.choice([-1, 1], n) * np.exp2(rng.uniform(lo, hi, n))).astype(np.float32)
    r = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    ours = cast_to_format(x, fmt, rounding="stochastic", random_bits=jnp.asarray(r))
    # both round away when (dropped fraction scaled to 32 bits) + the random bits carries out of 32 bits
    ref = gfloat_cast(x, fmt, srbits=r.astype(np.int64))
    assert_same(ours, ref, x)


def test_stochastic_rounding_is_unbiased():
    key = jax.random.key(0)
    n = 1 << 20
    y = np.asarray(cast_to_format(jnp.full((n,), 1.1, jnp.float32), "e4m3", rounding="stochastic", key=key))
    assert set(np.unique(y)) == {1.0, 1.125}
    p = (np.float32(1.1) - 1.0) / 0.125
    se = 0.125 * np.sqrt(p * (1 - p) / n)
    assert abs(y.mean() - np.float64(np.float32(1.1))) < 5 * se

    # many values at once, each averaged over draws: every mean lands within 5 standard errors
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(256) * 10).astype(np.float32)
    draws = 2048
    xs = jnp.broadcast_to(jnp.asarray(x), (draws, 256))
    ys = np.asarray(cast_to_format(xs, "e4m3", rounding="stochastic", key=jax.random.key(1)), np.float64)
    lo, hi = ys.min(axis=0), ys.max(axis=0)
    gap = np.where(hi > lo, hi - lo, 1.0)
    p = (x - lo) / gap
    se = gap * np.sqrt(np.clip(p * (1 - p), 1e-12, None) / draws)
    assert (np.abs(ys.mean(axis=0) - x) < 5 * se + 1e-12).all()
    assert (hi - lo <= np.abs(x) * 0.125 + 1e-6).all()  # only the two neighbours ever appear


def test_stochastic_rounding_is_reproducible_per_key():
    x = jnp.linspace(-3, 3, 4096, dtype=jnp.float32)
    a = cast_to_format(x, "e5m2", rounding="stochastic", key=jax.random.key(5))
    b = cast_to_format(x, "e5m2", rounding="stochastic", key=jax.random.key(5))
    c = cast_to_format(x, "e5m2", rounding="stochastic", key=jax.random.key(6))
    assert (np.asarray(a) == np.asarray(b)).all() and (np.asarray(a) != np.asarray(c)).any()


def test_a_stochastic_rounding_block_keys_the_casts_inside_it():
    """cast_to_format without key= inside stochastic_rounding(key) takes the block's next key (the block's key folded
    with the count of casts drawn so far), as quantise does, from the same counter; rounding to nearest ignores the
    block."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(4096) * 10).astype(np.float32)
    fmt = FORMATS["e5m2"]

    def casts(key):
        with stochastic_rounding(key):
            first = cast_to_format(x, fmt, rounding="stochastic")
            second = cast_to_format(x, fmt, rounding="stochastic")
            nearest = cast_to_format(x, fmt)
            through_quantise = quantise(x, fmt, rounding="stochastic")
            third = cast_to_format(x, fmt, rounding="stochastic")
        return first, second, nearest, through_quantise, third

    key = jax.random.key(7)
    first, second, nearest, through_quantise, third = jax.jit(casts)(key)
    bits = [np.asarray(fast_random_bits(jax.random.fold_in(key, n), x.shape)) for n in (1, 2, 4)]
    for ours, r in zip((first, second, third), bits, strict=True):
        assert_same(ours, gfloat_cast(x, fmt, srbits=r.astype(np.int64)), x)
    assert (np.asarray(first) != np.asarray(second)).mean() > 0.2  # each cast its own bits
    assert_same(nearest, ml_dtypes_cast(x, fmt), x)
    # quantise drew the third key (its forward cast folds in 0)
    forward_key = jax.random.fold_in(jax.random.fold_in(key, 3), 0)
    assert_same(through_quantise, cast_to_format(x, fmt, rounding="stochastic", key=forward_key), x)
    # traced again with the same key: the same bits
    again = casts(key)
    for a, b in zip(again, (first, second, nearest, through_quantise, third), strict=True):
        assert_same(a, np.asarray(b), x)
    # after the block, nearest is the default again and a stochastic cast needs its own key
    assert_same(cast_to_format(x, fmt), ml_dtypes_cast(x, fmt), x)
    with pytest.raises(ValueError, match="needs key=, random_bits= or an enclosing"):
        cast_to_format(x, fmt, rounding="stochastic")


def test_fast_random_bits_are_uniform():
    bits = np.asarray(fast_random_bits(jax.random.key(0), (1 << 20,)))
    counts = np.bincount(bits >> 24, minlength=256)  # top byte
    expected = bits.size / 256
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 255 + 6 * np.sqrt(2 * 255)  # 6 sigma of a chi-square with 255 degrees of freedom
    per_bit = ((bits[:, None] >> np.arange(32, dtype=np.uint32)) & 1).mean(axis=0)
    assert np.abs(per_bit - 0.5).max() < 6 * 0.5 / np.sqrt(bits.size)
    other = np.asarray(fast_random_bits(jax.random.key(1), (1 << 20,)))
    assert abs(np.corrcoef(bits.astype(np.float64), other.astype(np.float64))[0, 1]) < 6 / np.sqrt(bits.size)


# ---------------------------------------------------------------------------------------------- transformations


def test_cast_under_jit_and_vmap():
    x = jnp.asarray(np.random.default_rng(4).standard_normal((8, 64)).astype(np.float32)) * 100
    direct = np.asarray(cast_to_format(x, "e4m3"))
    jitted = np.asarray(jax.jit(lambda v: cast_to_format(v, "e4m3"))(x))
    mapped = np.asarray(jax.vmap(lambda v: cast_to_format(v, "e4m3"))(x))
    np.testing.assert_array_equal(direct, jitted)
    np.testing.assert_array_equal(direct, mapped)
    keys = jax.random.split(jax.random.key(0), 8)
    sr = jax.vmap(lambda v, k: cast_to_format(v, "e4m3", rounding="stochastic", key=k))(x, keys)
    assert sr.shape == x.shape


# ---------------------------------------------------------------------------------------------- codes


@pytest.mark.parametrize("fmt", [f for f in ML_FORMATS if f.bits <= 16], ids=lambda f: f.name)
def test_codes_match_ml_dtypes(fmt):
    code_type = np.uint8 if fmt.bits <= 8 else np.uint16
    codes = np.arange(2**fmt.bits, dtype=np.uint32).astype(code_type)
    ref = codes.view(fmt.ml_dtype).astype(np.float32)
    assert same_bits(decode(codes, fmt), ref).all()
    ours = np.asarray(encode(ref, fmt))
    assert ours.dtype == code_type
    finite_or_inf = ~np.isnan(ref)
    np.testing.assert_array_equal(ours[finite_or_inf], codes[finite_or_inf])
    assert np.isnan(np.asarray(decode(ours[~finite_or_inf], fmt))).all()
    x = np.random.default_rng(5).standard_normal(4096).astype(np.float32) * 50
    with np.errstate(all="ignore"):
        direct = x.astype(fmt.ml_dtype)
    keep = ~np.isnan(direct.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(encode(x, fmt))[keep], direct.view(code_type)[keep])


@pytest.mark.parametrize("fmt", GFLOAT_ONLY, ids=lambda f: f.name)
def test_codes_match_gfloat(fmt):
    values = gfloat_values(fmt)
    assert same_bits(decode(np.arange(2**fmt.bits), fmt), values.astype(np.float32)).all()
    codes = np.asarray(encode(values.astype(np.float32), fmt)).astype(np.int64)
    ok = ~np.isnan(values)
    np.testing.assert_array_equal(codes[ok], np.arange(2**fmt.bits)[ok])


# ---------------------------------------------------------------------------------------------- bad input


def test_bad_input_is_rejected_clearly():
    x = jnp.ones(4)
    with pytest.raises(ValueError, match="needs key="):
        cast_to_format(x, "e4m3", rounding="stochastic")
    with pytest.raises(ValueError, match="rounding must be one of nearest, stochastic, got 'up'"):
        cast_to_format(x, "e4m3", rounding="up")
    with pytest.raises(TypeError, match="expected a floating-point array, got dtype int32"):
        cast_to_format(jnp.arange(4), "e4m3")
    with pytest.raises(ValueError, match="unknown number format 'e4m4'"):
        cast_to_format(x, "e4m4")
    with pytest.raises(ValueError, match=r"random_bits must be uint32 of shape \(4,\)"):
        cast_to_format(x, "e4m3", rounding="stochastic", random_bits=jnp.zeros(3, jnp.uint32))
    with pytest.raises(TypeError, match="codes must be integers"):
        decode(jnp.ones(3), "e4m3")
    with pytest.raises(ValueError, match="at most 16 bits"):
        encode(x, "fp32")


def test_half_precision_inputs_are_accepted():
    x16 = jnp.asarray([1.0, 300.0, 1e-3], jnp.float16)
    np.testing.assert_array_equal(
        np.asarray(cast_to_format(x16, "e4m3")),
        np.asarray(x16, np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float32),
    )
