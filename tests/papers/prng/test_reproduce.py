"""The PRNG reproduction end to end at the smoke scale (claims declared before the run, the dieharder notice), and
its config checks."""

import json

import pytest

from core.config import ConfigError, validate_section
from papers.prng import Config, claims


def test_smoke_run_declares_its_claims_and_notes_a_missing_dieharder(cli, tmp_path):
    # a PATH without dieharder: the subset is skipped with a notice (whether or not this machine has it)
    r = cli(
        ["paper=prng", "scale=smoke", "logger=none", "prng.dieharder=true", f"output_root={tmp_path}"],
        toy=False,
        env={"PATH": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / "prng" / "latest"
    results = json.loads((run / "results.json").read_text())
    ids = [c["id"] for c in results["claims"]]
    assert ids == ["plus-low-bits-fail", "aox-every-bit-passes", "aox-hamming-weight", "aox-cheaper-than-adder"]
    declared = json.loads((run / "claims.json").read_text())["declared"]
    assert [c["id"] for c in declared] == ids  # declared before the run
    assert any("dieharder is not installed" in n for n in results["notes"])
    claims = {c["id"]: c for c in results["claims"]}
    assert all(c["holds"] is True for c in claims.values())
    # against theory, not the battery: bit 0 of xoroshiro128+ is the lowest bit of s0 + s1, a linear function of the
    # 128-bit state, so its linear complexity is 128 and any 160 x 160 matrix of it has rank <= 128 (deficit 32);
    # a random bit sequence of n = 300 has linear complexity n/2 +- a few (P(|L - n/2| > 8) ~ 2^-16 per bit)
    assert results["metrics"]["min_lc/plus"] == 128
    assert "linear complexity [128] of 300 bits" in claims["plus-low-bits-fail"]["detail"]
    assert "rank deficit of bit 0 [32.0]" in claims["plus-low-bits-fail"]["detail"]
    for generator in ("aox", "pcg64", "philox"):
        assert abs(results["metrics"][f"min_lc/{generator}"] - 150) <= 8, generator
    # the claims agree with the tables they summarise
    tables = {t["name"]: t for t in results["tables"]}
    aox_rows = [row for row in tables["failures"]["rows"] if row[0] == "xoroshiro128aox"]
    assert len(aox_rows) == 1 and claims["aox-every-bit-passes"]["ours"] == aox_rows[0][2] + aox_rows[0][3] == 0
    cost = {row[0]: row for row in tables["cost"]["rows"]}
    assert claims["aox-cheaper-than-adder"]["paper"] == pytest.approx(684 / 1237)  # REFERENCES.md, PRNG-CELLS
    assert claims["aox-cheaper-than-adder"]["ours"] == pytest.approx(
        cost["xoroshiro128aox output"][1] / cost["64-bit adder, Kogge-Stone (xoroshiro128+)"][1]
    )
    assert claims["aox-hamming-weight"]["ours"] >= 1e-4


def test_claims_follow_the_configured_generators():
    class Run:  # what reproduce gets: the paper's section as its Config
        def __init__(self, **kw):
            self.prng = Config(**kw)

    assert [c.id for c in claims(Run(generators=["pcg64"]))] == ["aox-cheaper-than-adder"]
    assert [c.id for c in claims(Run(generators=["aox"]))] == [
        "aox-every-bit-passes",
        "aox-hamming-weight",
        "aox-cheaper-than-adder",
    ]
    assert [c.id for c in claims(Run(generators=["plus", "aox"], seeds=[]))] == ["aox-cheaper-than-adder"]


def test_config_errors():
    with pytest.raises(ConfigError, match="generators='mt' is not allowed"):
        validate_section({"generators": ["mt"]}, Config, "prng")
    with pytest.raises(ConfigError, match=r"prng\.outputs=10 is out of range"):
        validate_section({"outputs": 10}, Config, "prng")
