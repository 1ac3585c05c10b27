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
    assert results["claims"][0]["holds"] is True
    assert any("dieharder is not installed" in n for n in results["notes"])


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
