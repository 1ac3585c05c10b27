"""The SparQ reproduction end to end at the smoke scale (the LM checkpoint is reused), and its config checks."""

import numpy as np
import pytest

from core.config import ConfigError, validate_section
from core.report import Interval, Verdict
from papers.sparq import Config
from papers.sparq.claims import CLAIMS, ratio_of_means
from papers.sparq.model import induction_windows


def test_smoke_run_reports_every_claim_and_reuses_the_model(smoke_run, cli):
    run = smoke_run("sparq")  # what every run record holds: tests/papers/test_contract.py
    results = run.results
    ids = [c["id"] for c in results["claims"]]
    assert ids == ["sparq-repetition", "sparq-bpc", "sparq-beats-h2o", "sparq-beats-local", "sparq-beats-streaming"]
    # the timed kernel at S=512, r=16, k=32, d=128 moves what the paper's formula says: a fact and a test
    formula = (2 + 2 * 32) * 128 + 128 + 512 * 16 + 2 * 128
    facts = {f["id"]: f for f in results["facts"]}
    assert facts["transfer-counted"]["kind"] == "analytic"
    assert facts["transfer-counted"]["value"] == facts["transfer-counted"]["paper"] == formula
    removed = {e["claim"]: e for e in results["ledger"] if e["kind"] == "removed"}
    assert "test_transfer.py::test_timed_kernels_move_the_papers_transfer" in removed["transfer-formula"]["moved_to"]
    assert "table decode_step" in removed["decode-speed"]["moved_to"]  # a table now, its old verdicts kept
    kernels = next(t for t in results["tables"] if t["name"] == "decode_step")
    # two operating points: the quality claims' (SparQ at the claim ratio on the LM's cache) and S=512's
    points = [row[0] for row in kernels["rows"]]
    assert points[0].startswith("quality claims' point") and points[-1].startswith("timing point S=512")
    assert [row[2] for row in kernels["rows"][-3:-1]] == [(2 + 2 * 512) * 128, formula]
    assert kernels["rows"][-2][6] == pytest.approx((2 + 2 * 512) * 128 / formula)  # theory: counted dense / SparQ
    sweep = next(t for t in results["tables"] if t["name"] == "sweep")
    assert sweep["columns"][1] == "transfer / dense (analytic)"
    labels = [row[0] for row in sweep["rows"]]
    assert labels[0] == "dense" and "sparq 1/4" in labels and "streaming 1/2" in labels
    assert (run.run_dir / "score_vs_transfer.png").stat().st_size > 1000
    assert list((run.output_root / "sparq" / "models").iterdir())  # the trained LM is kept
    again = cli(run.args(), toy=False)
    assert again.returncode == 0, again.stderr[-3000:]
    report = (run.output_root / "sparq" / "latest" / "report.md").read_text()
    assert "loaded from its checkpoint" in report


def test_config_errors_name_the_key():
    validate_section({}, Config, "sparq")
    with pytest.raises(ConfigError, match=r"sparq.methods='flash' is not allowed: choose one of sparq, h2o, local"):
        validate_section({"methods": ["flash"]}, Config, "sparq")
    with pytest.raises(ConfigError, match=r"claim_ratio=0.3 must be one of sparq.ratios"):
        validate_section({"claim_ratio": 0.3}, Config, "sparq")
    with pytest.raises(ConfigError, match=r"sparq.model.induction_span"):
        validate_section({"model": {"induction_len": 16, "induction_span": 9}}, Config, "sparq")
    with pytest.raises(ConfigError, match=r"sparq.model.induction_steps"):
        validate_section({"model": {"steps": 100, "induction_steps": 100}}, Config, "sparq")
    with pytest.raises(ConfigError, match="leaves a context of"):
        validate_section({"model": {"seq_len": 300, "repeat_span": 100}}, Config, "sparq")
    with pytest.raises(ConfigError, match=r"sparq.lm='llama' is not allowed: choose one of smollm2, charlm"):
        validate_section({"lm": "llama"}, Config, "sparq")
    with pytest.raises(ConfigError, match=r"sparq.smollm2.context=64 must hold prompt \+ generate = 146"):
        validate_section({"smollm2": {"context": 64, "prompt": 50}}, Config, "sparq")
    with pytest.raises(ConfigError, match=r"sparq.k=128 must be below the context of 100 tokens"):
        validate_section({"smollm2": {"context": 100, "generate": 20}}, Config, "sparq")
    with pytest.raises(ConfigError, match=r"sparq.page=7 must divide the character LM's cache"):
        validate_section({"lm": "charlm", "k": 8, "page": 7}, Config, "sparq")
    with pytest.raises(ConfigError, match=r"sparq.speed_k"):
        validate_section({"speed_seq": 100, "speed_k": 128}, Config, "sparq")


def test_the_default_declares_every_claim_and_times_the_papers_point():
    from omegaconf import OmegaConf

    from papers.sparq.claims import claims

    cfg = OmegaConf.create({"sparq": OmegaConf.structured(Config())})
    ids = [c.id for c in claims(cfg)]
    assert ids == [
        "sparq-repetition", "sparq-bpc", "sparq-needle", "sparq-beats-h2o", "sparq-beats-local",
        "sparq-beats-streaming",
    ]  # fmt: skip
    found = {c.id: c for c in claims(cfg)}
    assert found["sparq-needle"].paper == pytest.approx(0.794, abs=1e-4)  # Table 3, 1/8, 8k-16k tokens
    c = cfg.sparq
    assert (c.k, c.smollm2.context, c.ratios) == (128, 2048, [1 / 2, 1 / 4, 1 / 8, 1 / 16])
    # the paper's S=16384 point: r=32, k=128, d=128 moves (2+2k)d + d + Sr + 2d = 0.133 of dense (theory 7.5x)
    assert (c.speed_seq, c.speed_r, c.speed_k) == (16384, 32, 128)
    assert ((2 + 256) * 128 + 128 + 16384 * 32 + 256) / ((2 + 2 * 16384) * 128) == pytest.approx(0.133, abs=5e-4)


def test_induction_windows_end_with_a_copy_of_an_earlier_span():
    rng = np.random.default_rng(0)
    w = induction_windows(rng, 64, 33, 10, 65)
    assert w.shape == (64, 33) and w.min() >= 0 and w.max() < 65
    starts = set()
    for row in w:
        # the copy is the last 10 characters; its source starts somewhere in [0, 33 - 20)
        found = [j for j in range(33 - 20) if (row[j : j + 10] == row[-10:]).all()]
        assert found
        starts.add(found[0])
    assert len(starts) > 5  # at random offsets, not a fixed one


def test_the_margins_are_the_published_tables_decided_on_the_interval():
    repetition, bpc, needle = CLAIMS["sparq-repetition"], CLAIMS["sparq-bpc"], CLAIMS["sparq-needle"]
    # Table 2 at 1/8, Mistral 7B (the less favourable of the paper's two GQA models); Table 3 for the needle
    assert repetition.paper == pytest.approx(201 / 231, abs=1e-4)
    assert bpc.paper == pytest.approx(0.65 / 0.62 - 1, abs=1e-4)
    assert needle.paper == pytest.approx(0.794, abs=1e-4)
    # holds when the whole interval is at or above the paper's share, fails when all of it is below, else undecided
    assert repetition.measured(Interval(0.95, 0.9, 1.0)).verdict is Verdict.HOLDS
    assert repetition.measured(Interval(0.87, 0.8, 1.0)).verdict is Verdict.UNDECIDED
    assert repetition.measured(Interval(0.21, 0.17, 0.24)).verdict is Verdict.FAILS
    assert needle.measured(Interval(0.89, 0.82, 0.98)).verdict is Verdict.HOLDS
    assert needle.measured(Interval(0.5, 0.4, 0.6)).verdict is Verdict.FAILS
    assert bpc.measured(Interval(0.0, -0.01, 0.01)).verdict is Verdict.HOLDS
    assert bpc.measured(Interval(0.05, 0.0, 0.1)).verdict is Verdict.UNDECIDED
    assert bpc.measured(Interval(0.27, 0.22, 0.33)).verdict is Verdict.FAILS
    # where the dense model cannot do the task the claim is not measured (with the reason), not failed
    assert repetition.measured(None, "the dense model copies 3 characters").verdict is Verdict.NOT_MEASURED
    beats = CLAIMS["sparq-beats-h2o"]  # superiority: the gain's whole interval above 0
    assert beats.measured(Interval(30.0, 10.0, 50.0)).verdict is Verdict.HOLDS
    assert beats.measured(Interval(5.0, -2.0, 12.0)).verdict is Verdict.UNDECIDED
    assert beats.measured(Interval(-5.0, -9.0, -1.0)).verdict is Verdict.FAILS


def test_the_old_rules_show_beside_the_new_ones():
    from papers.sparq.ledger import LEDGER

    now = {e.claim: e for e in LEDGER if e.date == "2026-11-25" and e.kind == "respecified" and e.old_rule}
    assert {"sparq-repetition", "sparq-bpc", "sparq-needle"} <= set(now)
    # the notebook margins (186/207, 0.782/0.770 - 1, SQuAD's .727/.769) are evaluated on the present interval
    claim = CLAIMS["sparq-needle"].measured(Interval(0.9, 0.85, 0.95))
    assert now["sparq-needle"].original_verdict(claim) == "undecided on this run"
    assert claim.verdict is Verdict.HOLDS
    claim = CLAIMS["sparq-repetition"].measured(Interval(0.88, 0.875, 0.885))
    assert now["sparq-repetition"].original_verdict(claim) == "fails on this run"
    assert claim.verdict is Verdict.HOLDS


def test_the_model_key_changes_with_the_training_code(monkeypatch):
    import papers.sparq.model as model

    c = Config()
    key = model.model_key(c, 0)
    assert key == model.model_key(c, 0) and key != model.model_key(c, 1)
    monkeypatch.setattr(model, "paper_fingerprint", lambda paper, *paths: "other-code")
    assert model.model_key(c, 0) != key


def test_ratio_of_means_resamples_the_pairs():
    rng = np.random.default_rng(0)
    dense = rng.integers(0, 60, 400).astype(float)
    sparq = dense * 0.8
    r = ratio_of_means(sparq, dense)
    assert r.estimate == pytest.approx(0.8) and r.low == pytest.approx(0.8) and r.high == pytest.approx(0.8)
    noisy = np.clip(dense + rng.normal(0, 10, 400), 0, None)
    r = ratio_of_means(noisy, dense)
    assert r.estimate == pytest.approx(noisy.mean() / dense.mean())
    # against a numpy bootstrap of the same statistic: the percentile bounds agree to resampling noise
    idx = rng.integers(0, 400, (4000, 400))
    boot = noisy[idx].mean(1) / dense[idx].mean(1)
    assert r.low == pytest.approx(np.percentile(boot, 2.5), abs=0.01)
    assert r.high == pytest.approx(np.percentile(boot, 97.5), abs=0.01)
