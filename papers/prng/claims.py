"""The PRNG claims, declared from the config alone before any run, and the function that measures them from the
battery's results (one entry per generator and seed). The paper's side of each claim is in
papers/prng/REFERENCES.md: PRNG-PLUS-LOW, PRNG-AOX-PASS, PRNG-AOX-Z9, PRNG-CELLS."""

from __future__ import annotations

from core.report import Claim, Fact, at_least, at_most
from papers.prng import battery
from papers.prng.cost import gate_counts

# synthesised standard cells of the output functions (papers/prng/REFERENCES.md, PRNG-CELLS)
PAPER_CELLS = {"aox": 684, "kogge_stone": 1237}
# the battery's tests over 3 seeds x 64 bits x 2 tests at p < 1e-4: a perfect generator fails one of them with
# probability 1 - (1 - 1e-4)^384 = 3.8%
_TESTS = "3 seeds x 64 bits x 2 tests"

CLAIMS = {
    "aox-every-bit-passes": Claim(
        "aox-every-bit-passes",
        "xoroshiro128aox passes binary rank and linear complexity on every bit "
        "(failures counted over seeds, bits and both tests)",
        0,
        at_most(0),
        source="PRNG-AOX-PASS",
        statistic="tests failing at p < 1e-4, counted over seeds, bits and the rank and linear-complexity tests",
        confidence=1 - battery.FAIL_P,
        unit=f"{_TESTS} (2^20 outputs per seed)",
        resolution="a bit whose rank or linear complexity departs from random at p < 1e-4; a perfect generator "
        "fails one of the 384 tests with probability 3.8%",
    ),
    "aox-hamming-weight": Claim(
        "aox-hamming-weight",
        "xoroshiro128aox shows no Hamming-weight dependency at this sample size (smallest "
        "p-value over seeds); the paper reports a weakness in gjrand's z9 test, at far larger samples",
        "weak (gjrand z9)",
        at_least(battery.FAIL_P),
        source="PRNG-AOX-Z9",
        statistic="smallest Hamming-weight-dependency p-value over seeds",
        confidence=1 - battery.FAIL_P,
        unit="3 seeds (2^20 outputs each)",
        resolution="a dependency visible in 2^20 outputs per seed; the paper's z9 weakness needs far longer "
        "streams and is not resolved at this scale",
    ),
}

# Facts, not claims (ledger.py): they hold by construction and are reported beside the claims, never counted.
# plus-low-bits-fail: bit 0 of xoroshiro128+ is bit 0 of s0 + s1 = s0 ^ s1, a linear function of the 128-bit state
# (an LFSR), so its linear complexity is at most 128 and any n x n matrix of it (n > 128) is rank-deficient.
# aox-cheaper-than-adder: our own gate counts of our own netlists against our threshold 1.0 (not the paper's 0.553).
FACTS = {
    "plus-low-bits-fail": (
        "xoroshiro128+'s lowest bit fails the binary-rank and linear-complexity tests for every seed (a theorem: "
        "bit 0 of s0 + s1 is linear in the 128-bit state, so its linear complexity is at most 128)",
        "fails",
    ),
    "aox-cheaper-than-adder": (
        "Two-input gates of the AOX output netlist over those of a 64-bit Kogge-Stone adder (our netlists; the "
        "paper's 684 / 1237 synthesised cells)",
        PAPER_CELLS["aox"] / PAPER_CELLS["kogge_stone"],
    ),
}

NEEDS_GENERATOR = {  # claim or fact -> the generator whose streams it tests (None: a netlist count, no streams)
    "plus-low-bits-fail": "plus",
    "aox-every-bit-passes": "aox",
    "aox-hamming-weight": "aox",
    "aox-cheaper-than-adder": None,
}


def claims(cfg) -> list[Claim]:
    """The claims the configured generators can test, declared before the run (no seeds: no streams to test)."""
    tested = set(cfg.prng.generators) if cfg.prng.seeds else set()
    return [claim for cid, claim in CLAIMS.items() if NEEDS_GENERATOR[cid] in tested | {None}]


def measure(cfg, per_gen: dict[str, list[dict]]) -> list[Claim]:
    """Our figure for every declared claim, from the battery's results per generator (one entry per seed)."""
    c = cfg.prng
    fail = battery.FAIL_P
    found: dict[str, tuple] = {}  # claim id -> (ours, detail)
    if "aox" in per_gen:
        aox = per_gen["aox"]
        found["aox-every-bit-passes"] = (
            sum(int((r["rank_p"] < fail).sum() + (r["lc_p"] < fail).sum()) for r in aox),
            f"{len(aox)} seeds x 64 bits x 2 tests at p < {fail:g}; smallest p "
            f"{min(float(min(r['rank_p'].min(), r['lc_p'].min())) for r in aox):.2e}",
        )
        found["aox-hamming-weight"] = (
            min(r["hw_p"] for r in aox),
            f"{c.outputs:,} outputs per seed; the paper's weakness (gjrand z9) needs far longer streams",
        )
    return [claim.measured(*found[claim.id]) for claim in claims(cfg)]


def facts(cfg, per_gen: dict[str, list[dict]]) -> list[Fact]:
    """The analytic rows the run measures: xoroshiro128+'s linear low bit (where it was tested) and the gate ratio."""
    c = cfg.prng
    fail = battery.FAIL_P
    found: dict[str, tuple] = {}  # fact id -> (value, detail)
    if "plus" in per_gen and cfg.prng.seeds:
        plus = per_gen["plus"]
        found["plus-low-bits-fail"] = (
            all(r["rank_p"][0] < fail and r["lc_p"][0] < fail for r in plus),
            f"bit 0 linear complexity {[int(r['lc'][0]) for r in plus]} of {c.lc_bits} bits (random: about "
            f"{c.lc_bits // 2}); rank deficit of bit 0 {[float(r['rank_deficit'][0]) for r in plus]}",
        )
    counts = gate_counts()
    found["aox-cheaper-than-adder"] = (
        counts["aox"]["gates"] / counts["kogge_stone"]["gates"],
        f"AOX output {counts['aox']['gates']} gates (depth {counts['aox']['depth']}); 64-bit Kogge-Stone adder "
        f"{counts['kogge_stone']['gates']} (depth {counts['kogge_stone']['depth']}); ripple-carry "
        f"{counts['ripple']['gates']} (depth {counts['ripple']['depth']})",
    )
    return [
        Fact(fid, FACTS[fid][0], found[fid][0], "analytic", found[fid][1], paper=FACTS[fid][1])
        for fid in FACTS
        if fid in found
    ]


__all__ = ["CLAIMS", "FACTS", "PAPER_CELLS", "claims", "facts", "measure"]
