import itertools

import numpy as np
import pytest
from scipy import stats

from core.random.xoroshiro import aox_output, next_state, plus_output
from papers.prng import battery
from papers.prng import cost as netlists
from papers.prng.cost import MAPPINGS, Circuit, gate_counts, generator_cost, word_bits, word_value
from papers.prng.run import raw_outputs


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


def test_xoroshiro_plus_lowest_bit_is_linear_in_the_state():
    # the theorem behind xoroshiro128+'s failures (papers/prng/ledger.py: plus-low-bits-fail): bit 0 of s0 + s1 is
    # bit 0 of s0 ^ s1, a linear function of the 128-bit state, whose update is linear over GF(2); so the bit follows
    # a linear recurrence of order 128, and any n x n matrix of it (n > 128) has rank <= 128. The battery's two
    # tests fail it for every seed; AOX's bit 0 looks random (linear complexity n/2 +- a few)
    for seed in (1, 2, 7):
        bit0 = battery.bit_planes(raw_outputs("plus", seed, 2 * 160 * 160))[:1]
        lc_p, lc = battery.linear_complexity_test(bit0, 600)
        assert lc[0] == 128 and lc_p[0] < battery.FAIL_P
        assert (battery.gf2_ranks(bit0.reshape(2, 160, 160)) <= 128).all()
        rank_p, deficit = battery.matrix_rank_test(bit0, 160)
        assert rank_p[0] < battery.FAIL_P and deficit[0] >= 32
        aox_lc = battery.linear_complexity(battery.bit_planes(raw_outputs("aox", seed, 600))[:1])
        assert abs(aox_lc[0] - 300) <= 10


def aox_bit_by_hand(s0: int, s1: int, i: int) -> int:
    """Bit i of the AOX output as REFERENCES.md (PRNG-AOX-DEF) states it: x_i XOR (a_{i-1} OR a_{i-2}), x = s0 ^ s1,
    a = s0 & s1, indices mod 64; Python integers, not core.random's vectorised words."""
    x, a = s0 ^ s1, s0 & s1
    return ((x >> i) & 1) ^ (((a >> ((i - 1) % 64)) & 1) | ((a >> ((i - 2) % 64)) & 1))


def test_every_aox_bit_is_nonlinear_in_the_state():
    # the theorem behind aox-every-bit-passes leaving the claims (papers/prng/ledger.py, issue 62), the mirror of
    # xoroshiro128+'s linear bit 0 above: a OR b = a + b + ab over GF(2), so bit i of the AOX output is a polynomial of
    # degree 4 in the state bits, never affine. An affine function f of the state has f(u) ^ f(v) ^ f(w) ^ f(u^v^w)
    # = f(0) for all states u, v, w; every AOX bit breaks that (f(0) = 0), where xoroshiro128+'s bit 0 never does.
    # Nonlinear bits of a 128-bit linear state need not follow any recurrence of order 128, and measured, none of the
    # 64 follows one shorter than a random sequence's n/2: so the battery's rank and linear-complexity tests (which
    # see only recurrences shorter than their matrix size and sequence length) can fail AOX only by chance (3.8% of
    # the 384 tests at p < 1e-4 for a perfect generator) or through a wrong generator
    rng = np.random.default_rng(62)
    words = [tuple(int(v) for v in rng.integers(0, 2**64, 2, dtype=np.uint64)) for _ in range(3 * 256)]
    got = aox_output(np.array([w[0] for w in words], np.uint64), np.array([w[1] for w in words], np.uint64))
    for (s0, s1), out in zip(words, got, strict=True):  # the formula by hand is core.random's output
        assert int(out) == sum(aox_bit_by_hand(s0, s1, i) << i for i in range(64))
    broken, plus_bit0 = set(), set()
    for u, v, w in zip(words[0::3], words[1::3], words[2::3], strict=True):
        z = (u[0] ^ v[0] ^ w[0], u[1] ^ v[1] ^ w[1])
        for i in range(64):
            if aox_bit_by_hand(*u, i) ^ aox_bit_by_hand(*v, i) ^ aox_bit_by_hand(*w, i) ^ aox_bit_by_hand(*z, i):
                broken.add(i)
        plus_bit0.add((u[0] + u[1] + v[0] + v[1] + w[0] + w[1] + z[0] + z[1]) & 1)
    assert broken == set(range(64))  # every bit is nonlinear
    assert plus_bit0 == {0}  # bit 0 of s0 + s1 is s0_0 ^ s1_0: linear, the check sees it
    for seed in (1, 2, 3):  # the default seeds: every bit's linear complexity is a random sequence's (n/2 +- a few)
        lc = battery.linear_complexity(battery.bit_planes(raw_outputs("aox", seed, 600)))
        assert lc.shape == (64,) and (abs(lc - 300) <= 12).all(), (seed, lc.min(), lc.max())


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


def test_generator_cells_by_formula():
    ao21 = sum(63 - d for d in (1, 2, 4, 8, 16, 32))  # AND-OR pairs of the Kogge-Stone network: 315
    for m in MAPPINGS:
        aox, plus = generator_cost("aox", m), generator_cost("plus", m)
        # state update: 128 flip-flops, 64 XORs for x = s0 ^ s1, and s0' = rotl(s0, 55) ^ x ^ (x << 14): one XOR on
        # bits 0..13, two (or one XOR3) on bits 14..63
        assert aox.state == plus.state == 128 + 64 + 14 + (50 if m.complex_cells else 100)
        x = 0 if m.shared_x else 64
        reg = 64 if m.registered_output else 0
        # AOX: x, 64 ANDs, 64 ORs, 64 XORs; with complex cells one AO22 and one XOR (XOR3 when x is not shared)
        assert aox.output == (128 if m.complex_cells else x + 192) + reg
        assert plus.output == 1078 - (ao21 if m.complex_cells else 0) - (64 - x) + reg
        assert aox.total / plus.total == pytest.approx(netlists.cell_ratios()[m])


def _evaluate(build, complex_cells: bool, s0: np.ndarray, s1: np.ndarray):
    c = Circuit(complex_cells)
    return build(c, word_bits(s0), word_bits(s1))


def test_every_netlist_computes_its_function():
    # the counts are of working circuits: each netlist, evaluated on random states, gives core.random's output
    # functions and state update, and 64-bit addition
    rng = np.random.default_rng(5)
    s0, s1 = (rng.integers(0, 2**64, 512, dtype=np.uint64) for _ in range(2))
    s0[:2], s1[:2] = [2**64 - 1, 1], [1, 2**64 - 1]  # carries through every bit
    for complex_cells, shared in itertools.product((False, True), repeat=2):

        def x(c, a, b, shared=shared):
            return netlists.x_word(c, a, b) if shared else None

        out = _evaluate(lambda c, a, b: netlists.aox_output(c, a, b, x(c, a, b)), complex_cells, s0, s1)
        np.testing.assert_array_equal(word_value(out), aox_output(s0, s1))
        for kind in netlists.ADDERS:
            out = _evaluate(
                lambda c, a, b, k=kind: netlists.adder_output(c, a, b, x(c, a, b), k), complex_cells, s0, s1
            )
            np.testing.assert_array_equal(word_value(out), plus_output(s0, s1))
        new0, new1 = _evaluate(
            lambda c, a, b: netlists.state_update(c, a, b, netlists.x_word(c, a, b)), complex_cells, s0, s1
        )
        want0, want1 = next_state(s0, s1)
        np.testing.assert_array_equal(word_value(new0), want0)
        np.testing.assert_array_equal(word_value(new1), want1)
    with pytest.raises(ValueError, match="adder kind 'carry_save' is not one of"):
        netlists.adder_output(Circuit(False), word_bits(s0), word_bits(s1), None, "carry_save")


def test_noncentrality_for_one_df_is_the_normal_formula():
    # a 1-df chi-squared test is a two-sided z test: power = P(|Z + sqrt(lam)| > z), so lam ~ (z_{1-a/2} + z_power)^2
    lam = battery.chi2_noncentrality(1, 1e-4, 0.95)
    assert lam == pytest.approx((stats.norm.isf(0.5e-4) + stats.norm.isf(0.05)) ** 2, rel=1e-3)
    with pytest.raises(ValueError, match="need 0 < alpha < power < 1"):
        battery.chi2_noncentrality(8, 0.5, 0.4)


def test_the_power_of_the_hamming_table_matches_its_noncentrality():
    # a dependency planted in the 3 x 3 table of consecutive classes: at the sample the noncentral chi-squared says
    # gives power 0.8 at level 1e-4, simulated tables reject 80% of the time (2,000 tables: +- 3% at 3 sigma)
    p = battery.hamming_class_probabilities()
    null = np.outer(p, p)
    bump = np.array([[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]) * 1e-3  # margins unchanged
    alt = null + bump
    n = round(battery.chi2_noncentrality(battery.HW_DF, 1e-4, 0.8) / ((alt - null) ** 2 / null).sum())
    tables = np.random.default_rng(0).multinomial(n, alt.ravel(), size=2000).reshape(-1, 3, 3)
    rejected = np.mean([battery.pair_table_p(t) < 1e-4 for t in tables])
    assert abs(rejected - 0.8) < 0.03, rejected
