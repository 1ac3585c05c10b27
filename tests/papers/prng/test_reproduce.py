"""The PRNG reproduction end to end at the smoke scale (claims declared before the run, the facts beside them, the
dieharder notice), the claims' verdicts on hand-made battery results, and its config checks."""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from core.config import ConfigError, validate_section
from papers.prng import Config, claims, raw_outputs
from papers.prng.claims import facts, measure


def test_smoke_run_declares_its_claims_and_notes_a_missing_dieharder(smoke_run):
    # run with prng.dieharder=true and a PATH without dieharder (tests/papers/conftest.py): the subset is skipped with
    # a notice, whether or not this machine has it; what every run record holds: tests/papers/test_contract.py
    results = smoke_run("prng").results
    ids = [c["id"] for c in results["claims"]]
    assert ids == ["aox-every-bit-passes", "aox-hamming-weight"]
    assert any("dieharder is not installed" in n for n in results["notes"])
    claims = {c["id"]: c for c in results["claims"]}

    # the facts that left the claims (issue 41), with their kind and measured values
    found = {f["id"]: f for f in results["facts"]}
    assert {fid: f["kind"] for fid, f in found.items()} == {
        "plus-low-bits-fail": "analytic",
        "aox-cheaper-than-adder": "analytic",
    }
    assert {e["claim"]: e["kind"] for e in results["ledger"] if e["kind"] == "removed"} == {
        "plus-low-bits-fail": "removed",
        "aox-cheaper-than-adder": "removed",
    }
    # against theory, not the battery: bit 0 of xoroshiro128+ is the lowest bit of s0 + s1, a linear function of the
    # 128-bit state, so its linear complexity is 128 and any 160 x 160 matrix of it has rank <= 128 (deficit 32);
    # a random bit sequence of n = 300 has linear complexity n/2 +- a few (P(|L - n/2| > 8) ~ 2^-16 per bit)
    assert found["plus-low-bits-fail"]["value"] is True
    assert results["metrics"]["min_lc/plus"] == 128
    assert "linear complexity [128] of 300 bits" in found["plus-low-bits-fail"]["detail"]
    assert "rank deficit of bit 0 [32.0]" in found["plus-low-bits-fail"]["detail"]
    for generator in ("aox", "pcg64", "philox"):
        assert abs(results["metrics"][f"min_lc/{generator}"] - 150) <= 8, generator
    # the gate ratio by formula (tests/papers/prng/test_battery.py: AOX 4 gates per bit, Kogge-Stone 1078)
    assert found["aox-cheaper-than-adder"]["value"] == pytest.approx(4 * 64 / 1078)
    assert found["aox-cheaper-than-adder"]["paper"] == pytest.approx(684 / 1237)  # REFERENCES.md, PRNG-CELLS

    # aox-every-bit-passes: no bit of xoroshiro128aox shows a linear structure (every bit's linear complexity is
    # 150 +- 8 above), so its count is 0 and it holds
    assert claims["aox-every-bit-passes"]["ours"] == 0 and claims["aox-every-bit-passes"]["verdict"] == "holds"
    # aox-hamming-weight: the p-value recomputed here from the raw stream (popcount with numpy, the 3 x 3 table of
    # consecutive weight classes <= 29, 30..34, >= 35 against Binomial(64, 1/2), chi-squared with 8 df)
    words = raw_outputs("aox", 1, 65536)
    weights = np.unpackbits(words.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)
    cls = (weights >= 30).astype(int) + (weights >= 35)
    table = np.zeros((3, 3))
    np.add.at(table, (cls[:-1], cls[1:]), 1)
    pmf = stats.binom.pmf(np.arange(65), 64, 0.5)
    p = np.array([pmf[:30].sum(), pmf[30:35].sum(), pmf[35:].sum()])
    expected = np.outer(p, p) * (len(cls) - 1)
    p_value = stats.chi2.sf(((table - expected) ** 2 / expected).sum(), 8)
    assert claims["aox-hamming-weight"]["ours"] == pytest.approx(p_value, rel=1e-6)
    assert p_value > 0.01 and claims["aox-hamming-weight"]["verdict"] == "holds"


def _cfg(**kw):
    return SimpleNamespace(prng=Config(**kw))


def _seed_result(rank_p, lc_p, hw_p=0.5, lc_bit0=150):
    return {
        "rank_p": np.asarray(rank_p, float),
        "lc_p": np.asarray(lc_p, float),
        "rank_deficit": np.zeros(64),
        "lc": np.full(64, lc_bit0),
        "hw_p": hw_p,
    }


def test_claims_decide_hand_made_battery_results():
    cfg = _cfg(generators=["aox", "plus"], seeds=[1, 2])
    ok = np.full(64, 0.5)
    one_bad = ok.copy()
    one_bad[5] = 1e-6  # one bit fails the rank test at p < 1e-4 in one seed
    per_gen = {"aox": [_seed_result(ok, ok, 0.3), _seed_result(one_bad, ok, 2e-5)]}
    got = {c.id: c for c in measure(cfg, per_gen)}
    assert got["aox-every-bit-passes"].ours == 1 and got["aox-every-bit-passes"].verdict == "fails"
    assert got["aox-hamming-weight"].ours == 2e-5 and got["aox-hamming-weight"].verdict == "fails"
    per_gen = {"aox": [_seed_result(ok, ok, 0.3), _seed_result(ok, ok, 0.2)]}
    got = {c.id: c for c in measure(cfg, per_gen)}
    assert got["aox-every-bit-passes"].ours == 0 and got["aox-every-bit-passes"].verdict == "holds"
    assert got["aox-hamming-weight"].ours == 0.2 and got["aox-hamming-weight"].verdict == "holds"
    # the facts: bit 0 of plus failing both tests in both seeds; one seed passing makes it False
    bad0 = ok.copy()
    bad0[0] = 1e-9
    plus = [_seed_result(bad0, bad0, lc_bit0=128), _seed_result(bad0, bad0, lc_bit0=128)]
    assert {f.id: f.value for f in facts(cfg, {"plus": plus})}["plus-low-bits-fail"] is True
    plus[1] = _seed_result(bad0, ok)
    assert {f.id: f.value for f in facts(cfg, {"plus": plus})}["plus-low-bits-fail"] is False


def test_claims_follow_the_configured_generators():
    assert [c.id for c in claims(_cfg(generators=["pcg64"]))] == []
    assert [c.id for c in claims(_cfg(generators=["aox"]))] == ["aox-every-bit-passes", "aox-hamming-weight"]
    assert [c.id for c in claims(_cfg(generators=["plus", "aox"], seeds=[]))] == []
    assert [f.id for f in facts(_cfg(generators=["pcg64"]), {})] == ["aox-cheaper-than-adder"]


def test_config_errors():
    with pytest.raises(ConfigError, match="generators='mt' is not allowed"):
        validate_section({"generators": ["mt"]}, Config, "prng")
    with pytest.raises(ConfigError, match=r"prng\.outputs=10 is out of range"):
        validate_section({"outputs": 10}, Config, "prng")
