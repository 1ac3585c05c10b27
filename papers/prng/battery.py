"""A small statistical battery, vectorised over the 64 output bit positions: binary matrix rank and linear
complexity (Berlekamp-Massey) per bit, a Hamming-weight dependency test, and frequency tests.

Each test returns p-values (uniform on [0, 1] for a good generator) or, for linear complexity, the complexity
itself with its p-value. A test "fails" when p < FAIL_P. The theory each test compares with (GF(2) rank
probabilities, the linear complexity of random sequences, binomial Hamming weights) is cited in
papers/prng/REFERENCES.md (GF2-RANK, LC-RANDOM, HW-BINOM).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

FAIL_P = 1e-4


def bit_planes(words: np.ndarray) -> np.ndarray:
    """uint64 outputs [n] -> bool [64, n]: row b is the sequence of bit b."""
    shifts = np.arange(64, dtype=np.uint64)[:, None]
    return ((words[None, :] >> shifts) & np.uint64(1)).astype(bool)


# ---------------------------------------------------------------------------------------------- matrix rank


def gf2_ranks(bits: np.ndarray) -> np.ndarray:
    """Ranks over GF(2) of boolean matrices bits[..., rows, cols] (Gaussian elimination on bit-packed rows,
    vectorised over every leading dimension)."""
    *lead, rows, cols = bits.shape
    flat = bits.reshape(-1, rows, cols)
    m = flat.shape[0]
    words = (cols + 63) // 64
    padded = np.zeros((m, rows, words * 64), dtype=bool)
    padded[..., :cols] = flat
    weights = np.uint64(1) << np.arange(64, dtype=np.uint64)
    packed = (padded.reshape(m, rows, words, 64).astype(np.uint64) * weights).sum(axis=-1, dtype=np.uint64)
    used = np.zeros((m, rows), dtype=bool)
    rank = np.zeros(m, dtype=np.int64)
    row_index = np.arange(rows)[None, :]
    all_m = np.arange(m)
    for col in range(cols):
        w, mask = col // 64, np.uint64(1) << np.uint64(col % 64)
        has_bit = (packed[:, :, w] & mask) != 0
        candidates = has_bit & ~used
        found = candidates.any(axis=1)
        pivot = candidates.argmax(axis=1)
        pivot_rows = packed[all_m, pivot]  # [m, words]
        eliminate = has_bit & found[:, None] & (row_index != pivot[:, None])
        packed ^= np.where(eliminate[..., None], pivot_rows[:, None, :], np.uint64(0))
        used[all_m, pivot] |= found
        rank += found
    return rank.reshape(lead)


def _p_rank(n: int, r: int) -> float:
    """P(rank = r) for a uniformly random n x n matrix over GF(2): the number of such matrices over 2^(n^2)."""
    log2 = r * (2 * n - r) - n * n
    prod = 1.0
    for i in range(r):
        prod *= (1 - 2.0 ** (i - n)) ** 2 / (1 - 2.0 ** (i - r))
    return 2.0**log2 * prod


def rank_probabilities(n: int) -> np.ndarray:
    """P(rank = n), P(rank = n - 1), P(rank <= n - 2) for a uniformly random n x n matrix over GF(2)."""
    full, minus1 = _p_rank(n, n), _p_rank(n, n - 1)
    return np.array([full, minus1, 1 - full - minus1])


def rank_tail(n: int, deficit: int) -> float:
    """P(rank <= n - deficit) for a uniformly random n x n matrix over GF(2)."""
    if deficit <= 0:
        return 1.0
    return float(sum(_p_rank(n, r) for r in range(max(0, n - deficit - 40), n - deficit + 1)))


def matrix_rank_test(planes: np.ndarray, n: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """For each bit plane: cut it into n x n matrices and compare their ranks with theory, two ways: the usual
    chi-square over the classes n, n - 1, <= n - 2 (2 degrees of freedom; weak with few matrices), and the
    probability of the worst deficit seen (a union bound over the matrices). The p-value is the smaller of the two,
    doubled (Bonferroni). Returns (p-values [64], mean rank deficit [64])."""
    per = n * n
    count = planes.shape[1] // per
    if count < 1:
        raise ValueError(f"matrix rank test needs at least {per} outputs per bit for {n}x{n} matrices")
    mats = planes[:, : count * per].reshape(planes.shape[0], count, n, n)
    ranks = gf2_ranks(mats)
    observed = np.stack([(ranks == n).sum(1), (ranks == n - 1).sum(1), (ranks <= n - 2).sum(1)], axis=1)
    expected = rank_probabilities(n)[None, :] * count
    chi2 = ((observed - expected) ** 2 / expected).sum(axis=1)
    p_chi = stats.chi2.sf(chi2, df=2)
    worst = (n - ranks).max(axis=1)
    p_tail = np.array([min(1.0, count * rank_tail(n, int(d))) for d in worst])
    return np.minimum(1.0, 2 * np.minimum(p_chi, p_tail)), (n - ranks).mean(axis=1)


# ---------------------------------------------------------------------------------------------- linear complexity


def linear_complexity(seqs: np.ndarray) -> np.ndarray:
    """Berlekamp-Massey over GF(2) for each row of a boolean array [k, N]: the length of the shortest LFSR that
    generates the row."""
    k, n = seqs.shape
    s = seqs.astype(np.uint8)
    c = np.zeros((k, n + 1), np.uint8)
    b = np.zeros((k, n + 1), np.uint8)
    c[:, 0] = b[:, 0] = 1
    length = np.zeros(k, np.int64)
    m = np.full(k, -1, np.int64)
    rows = np.arange(k)
    for i in range(n):
        # discrepancy d = s_i + sum_{j=1..L} c_j s_{i-j}
        window = s[:, i::-1] if i > 0 else s[:, :1]
        d = (c[:, : i + 1] & window).sum(axis=1) & 1
        upd = d == 1
        if not upd.any():
            continue
        shift = i - m  # shift b by (i - m) and add into c
        t = c.copy()
        for r in rows[upd]:
            sh = shift[r]
            c[r, sh:] ^= b[r, : n + 1 - sh]
        grow = upd & (2 * length <= i)
        b[grow] = t[grow]
        length = np.where(grow, i + 1 - length, length)
        m = np.where(grow, i, m)
    return length


def linear_complexity_test(planes: np.ndarray, n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Linear complexity of the first n bits of each bit plane. For a random sequence L is n/2 + O(1), with
    P(|L - n/2| >= t) <= about 2^(2 - 2t) (Rueppel); the p-value uses that bound. Returns (p-values, L)."""
    lc = linear_complexity(planes[:, :n])
    dev = np.abs(lc - n / 2)
    p = np.minimum(1.0, 4.0 * np.power(2.0, -2.0 * np.maximum(dev - 1, 0)))
    return p, lc


# ---------------------------------------------------------------------------------------------- Hamming weights


def hamming_weights(words: np.ndarray) -> np.ndarray:
    b = words.view(np.uint8).reshape(-1, 8)
    return np.unpackbits(b, axis=1).sum(axis=1)


HW_CUTS = (30, 35)  # weight classes: <= 29, 30..34, >= 35
HW_DF = 8  # degrees of freedom of the 3 x 3 table against the product of its known margins


def hamming_class_probabilities() -> np.ndarray:
    """P(class) of the Hamming weight of a uniformly random 64-bit word (Binomial(64, 1/2))."""
    low, high = HW_CUTS
    below, middle = stats.binom.cdf(low - 1, 64, 0.5), stats.binom.cdf(high - 1, 64, 0.5)
    return np.array([below, middle - below, 1 - middle])


def hamming_pair_table(words: np.ndarray) -> np.ndarray:
    """The 3 x 3 table of (class of output t, class of output t + 1) counts."""
    cls = np.digitize(hamming_weights(words), HW_CUTS)
    return np.bincount(cls[:-1] * 3 + cls[1:], minlength=9).reshape(3, 3)


def pair_table_p(table: np.ndarray) -> float:
    """Chi-squared p-value of a 3 x 3 table of consecutive weight classes against independence with the
    Binomial(64, 1/2) class probabilities (HW_DF degrees of freedom: the margins are known, not estimated)."""
    probs = hamming_class_probabilities()
    expected = np.outer(probs, probs) * table.sum()
    return float(stats.chi2.sf(((table - expected) ** 2 / expected).sum(), df=HW_DF))


def hamming_dependency_test(words: np.ndarray) -> float:
    """Are the Hamming weights of consecutive outputs independent? Weights are classed low (<= 29), middle
    (30..34), high (>= 35); the 3x3 table of consecutive pairs is chi-squared against the product of the
    Binomial(64, 1/2) class probabilities (8 degrees of freedom)."""
    return pair_table_p(hamming_pair_table(words))


def chi2_noncentrality(df: int, alpha: float, power: float) -> float:
    """The noncentrality a chi-squared test with `df` degrees of freedom needs to reject at level `alpha` with
    probability `power` (noncentral chi-squared, scipy). A fixed departure from independence gives a noncentrality
    proportional to the sample size, so the ratio of two such values is the ratio of the samples two tests need."""
    if not (0 < alpha < 1 and alpha < power < 1):
        raise ValueError(f"chi2_noncentrality: need 0 < alpha < power < 1, got alpha={alpha}, power={power}")
    from scipy import optimize

    critical = stats.chi2.isf(alpha, df)
    return float(optimize.brentq(lambda lam: stats.ncx2.sf(critical, df, lam) - power, 1e-9, 1e6))


# ---------------------------------------------------------------------------------------------- frequency


def monobit_test(planes: np.ndarray) -> np.ndarray:
    """Two-sided p-value of the count of ones in each bit plane."""
    n = planes.shape[1]
    z = (planes.sum(axis=1) - n / 2) / math.sqrt(n / 4)
    return 2 * stats.norm.sf(np.abs(z))


def byte_frequency_test(words: np.ndarray) -> float:
    counts = np.bincount(words.view(np.uint8), minlength=256)
    expected = counts.sum() / 256
    return float(stats.chi2.sf(((counts - expected) ** 2 / expected).sum(), df=255))
