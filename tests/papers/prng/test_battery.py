import itertools

import numpy as np
import pytest

from papers.prng import battery, raw_outputs
from papers.prng.cost import gate_counts


def rank_by_hand(m: np.ndarray) -> int:
    rows = [int("".join("1" if v else "0" for v in r), 2) for r in m]
    rank = 0
    for bit in reversed(range(m.shape[1])):
        pivot = next((r for r in rows if (r >> bit) & 1), None)
        if pivot is None:
            continue
        rows.remove(pivot)
        rows = [r ^ pivot if (r >> bit) & 1 else r for r in rows]
        rank += 1
    return rank


def test_gf2_ranks_match_a_plain_elimination():
    rng = np.random.default_rng(0)
    mats = rng.integers(0, 2, (20, 70, 70)).astype(bool)
    low = (rng.integers(0, 2, (10, 70, 5)) @ rng.integers(0, 2, (10, 5, 70)) % 2).astype(bool)  # rank <= 5
    for batch in (mats, low):
        np.testing.assert_array_equal(battery.gf2_ranks(batch), [rank_by_hand(m) for m in batch])
    assert (battery.gf2_ranks(low) <= 5).all()


def test_rank_probabilities():
    counts = np.zeros(3)
    for bits in itertools.product([0, 1], repeat=4):  # every 2x2 matrix over GF(2)
        r = rank_by_hand(np.array(bits, bool).reshape(2, 2))
        counts[min(2 - r, 2)] += 1
    np.testing.assert_allclose(battery.rank_probabilities(2), counts / 16)
    np.testing.assert_allclose(battery.rank_probabilities(256), [0.2888, 0.5776, 0.1336], atol=1e-4)
    assert battery.rank_tail(2, 1) == pytest.approx(10 / 16) and battery.rank_tail(2, 0) == 1.0
    assert battery.rank_tail(64, 8) < 2.0**-60  # a deficit of k has probability about 2^(-k^2)


def lfsr(taps: list[int], state: list[int], n: int) -> np.ndarray:
    out, s = [], list(state)
    for _ in range(n):
        out.append(s[0])
        new = 0
        for t in taps:
            new ^= s[t]
        s = [*s[1:], new]
    return np.array(out, bool)


def test_berlekamp_massey_finds_lfsr_lengths():
    seqs = np.stack(
        [
            lfsr([0, 1], [1, 0, 0, 0, 0, 0, 0], 200),  # s_{n+7} = s_n + s_{n+1}: length 7
            lfsr([0, 3, 5], [1] + [0] * 12, 200),  # a length-13 recurrence
            np.random.default_rng(1).integers(0, 2, 200).astype(bool),
        ]
    )
    lc = battery.linear_complexity(seqs)
    assert lc[0] == 7 and lc[1] == 13 and abs(lc[2] - 100) <= 4


def test_xoroshiro_plus_lowest_bit_is_linear_and_aox_is_not():
    for generator, expect_fail in (("plus", True), ("aox", False)):
        planes = battery.bit_planes(raw_outputs(generator, 7, 1 << 16))
        p, lc = battery.linear_complexity_test(planes, 600)
        assert (p[0] < battery.FAIL_P) == expect_fail
        assert (lc[0] == 128) == expect_fail  # the 128-bit state makes bit 0 of s0 + s1 an LFSR of length 128


def test_dependency_and_frequency_tests_detect_bad_streams():
    good = raw_outputs("pcg64", 3, 1 << 16)
    assert battery.hamming_dependency_test(good) > battery.FAIL_P
    assert battery.byte_frequency_test(good) > battery.FAIL_P
    assert (battery.monobit_test(battery.bit_planes(good)) > battery.FAIL_P).all()
    sticky = np.repeat(good[: 1 << 12], 16)  # every output repeated: consecutive weights are equal
    assert battery.hamming_dependency_test(sticky) < 1e-10
    biased = good & np.uint64(0xFFFFFFFFFFFFFFFE)  # bit 0 always 0
    assert battery.monobit_test(battery.bit_planes(biased))[0] < 1e-10


def test_gate_counts_by_formula():
    c = gate_counts()
    assert c["aox"] == {"gates": 4 * 64, "depth": 3}
    # ripple: 64 propagate XORs, 63 sum XORs, carry: 1 AND for bit 0 and 3 gates for bits 1..62
    assert c["ripple"]["gates"] == 64 + 63 + 1 + 3 * 62
    assert c["kogge_stone"]["depth"] <= 1 + 2 * 6 + 1  # p, six prefix levels of AND-OR, the sum XOR
    # Kogge-Stone over the 63 carries: 64 p and 63 g gates; at distance d = 1, 2, ..., 32 an AND-OR (2 gates) for
    # each of 63 - d group generates and, while a later level needs it (2d < 63), an AND for 64 - 2d group
    # propagates; then 63 sum XORs
    levels = [1, 2, 4, 8, 16, 32]
    expected = 64 + 63 + sum(2 * (63 - d) for d in levels) + sum(64 - 2 * d for d in levels if 2 * d < 63) + 63
    assert c["kogge_stone"]["gates"] == expected == 1078
    assert c["aox"]["gates"] < c["ripple"]["gates"] < c["kogge_stone"]["gates"]
