"""The QM1B claims decide on their intervals: each holds on data that shows the effect, fails on data that shows
the opposite, and is undecided where the interval straddles its margin (synthetic SchNet results and drop counts,
no training, no DFT). The expected intervals are computed here independently: per-seed slopes by the normal
equations and a t interval over them with numpy and scipy's t quantile, the drop share's bounds by solving the
binomial tails with scipy's binom, the accuracy maxima with numpy."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import optimize, stats

from core.report import Interval, Verdict
from papers.qm1b import Config, claims
from papers.qm1b.claims import proportion
from papers.qm1b.ledger import LEDGER
from papers.qm1b.report import measure

MANIFESTS = [{"rows": 99, "dropped": {"std": 1}, "seconds": 10.0, "skipped_smiles": {}}]
VALIDATION = {"gap_mev": np.array([0.05, -0.08, 0.02]), "energy_mev": np.array([0.3, -0.6, 0.5])}
SIZES = [16, 50, 160, 500]
ALL = [
    "gap-within-0.1mev",
    "energy-within-1mev",
    "drop-share",
    "valid-mae-falls",
    "beats-mean-predictor",
    "gap-narrows",
]


def _drops(dropped: int, conformers: int) -> dict:
    """A drop sample's manifest: `dropped` of `conformers` dropped by the std rule."""
    return {
        "rows": conformers - dropped,
        "dropped": {"std": dropped} if dropped else {},
        "seconds": 1.0,
        "skipped_smiles": {},
        "dft": {"iterations": 20},
    }


DROPS = _drops(0, 480)


def _config(seeds, drop_molecules=120):
    c = Config()
    c.schnet.seeds = seeds
    c.drops.molecules = drop_molecules
    return c


def _scaling(valid, train, mean=1600.0):
    """valid/train: [sizes][seeds] MAEs in meV; every seed's mean predictor at `mean`."""
    return [
        {
            "size": n,
            "steps": 600,
            "valid_mae": list(v),
            "train_mae": list(t),
            "mean_mae": [mean] * len(v),
            "valid_rows": 180,
            "valid_molecules": 60,
        }
        for n, v, t in zip(SIZES, valid, train, strict=True)
    ]


def _verdicts(scaling, validation=VALIDATION, seeds=3, drops=DROPS):
    cfg = SimpleNamespace(qm1b=_config(seeds))
    return {c.id: c for c in measure(cfg, MANIFESTS, validation, scaling, drops)}


def seed_slopes(values):
    """values [sizes][seeds] -> each seed's least-squares slope against ln(size), by the normal equations."""
    x = np.log(SIZES)
    design = np.stack([np.ones_like(x), x], axis=1)
    y = np.asarray(values, float)
    return [np.linalg.solve(design.T @ design, design.T @ y[:, k])[1] for k in range(y.shape[1])]


def mean_interval(values, confidence=0.95):
    v = np.asarray(values, float)
    half = stats.t.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return v.mean(), v.mean() - half, v.mean() + half


def _assert_interval(ours, expected):
    assert isinstance(ours, Interval)
    assert (ours.estimate, ours.low, ours.high) == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_claims_hold_when_mae_falls_below_the_mean_predictor_and_the_gap_narrows():
    valid = [[1500, 1520, 1490], [1100, 1130, 1080], [950, 960, 940], [850, 870, 845]]
    train = [[10, 12, 11], [300, 310, 290], [500, 520, 505], [600, 610, 590]]
    got = _verdicts(_scaling(valid, train))
    assert [c.id for c in claims(SimpleNamespace(qm1b=_config(3)))] == list(got) == ALL
    falls = mean_interval(seed_slopes([[v / 1600.0 for v in row] for row in valid]))
    gaps = [[v - t for v, t in zip(rv, rt, strict=True)] for rv, rt in zip(valid, train, strict=True)]
    narrows = mean_interval(seed_slopes(gaps))
    beats = mean_interval([v - 1600.0 for v in valid[-1]])
    _assert_interval(got["valid-mae-falls"].ours, falls)
    _assert_interval(got["gap-narrows"].ours, narrows)
    _assert_interval(got["beats-mean-predictor"].ours, beats)
    assert falls[2] < 0 and narrows[2] < 0 and beats[2] < 0  # all of each interval below zero, computed here
    for cid in ALL:
        assert got[cid].verdict is Verdict.HOLDS, (cid, got[cid].ours, got[cid].detail)
    assert "855 +- 13 meV against 1600 meV" in got["beats-mean-predictor"].detail  # mean +- std over seeds
    assert got["gap-within-0.1mev"].ours == pytest.approx(0.08) and got["energy-within-1mev"].ours == 0.6


def test_claims_fail_when_mae_rises_above_the_mean_predictor_and_the_gap_widens():
    valid = [[1500, 1510, 1490], [1700, 1720, 1690], [1900, 1910, 1880], [2100, 2120, 2090]]
    train = [[1400, 1410, 1390], [1300, 1310, 1290], [1200, 1210, 1190], [1100, 1110, 1090]]
    bad = {"gap_mev": np.array([0.05, -0.12, 0.02]), "energy_mev": np.array([1.0, -2.0, 0.5])}
    got = _verdicts(_scaling(valid, train), bad, drops=_drops(30, 300))
    falls = mean_interval(seed_slopes([[v / 1600.0 for v in row] for row in valid]))
    beats = mean_interval([v - 1600.0 for v in valid[-1]])
    assert falls[1] > 0 and beats[1] > 0  # all of each interval above zero
    for cid in ALL:
        assert got[cid].verdict is Verdict.FAILS, (cid, got[cid].ours)
    assert got["gap-within-0.1mev"].ours == pytest.approx(0.12) and got["energy-within-1mev"].ours == 2.0


def test_claims_are_undecided_on_flat_noisy_mae_at_the_mean_predictor():
    # no trend: each seed wanders around the mean predictor's MAE, and the gap with it
    valid = [[1620, 1580, 1600], [1590, 1615, 1585], [1610, 1590, 1620], [1595, 1610, 1590]]
    train = [[1550, 1560, 1540], [1560, 1545, 1555], [1545, 1555, 1560], [1555, 1550, 1545]]
    got = _verdicts(_scaling(valid, train), drops=_drops(2, 200))
    _, low, high = mean_interval(seed_slopes([[v / 1600.0 for v in row] for row in valid]))
    assert low < 0 < high  # straddles zero
    for cid in ("drop-share", "valid-mae-falls", "beats-mean-predictor", "gap-narrows"):
        assert got[cid].verdict is Verdict.UNDECIDED, (cid, got[cid].ours)
        assert got[cid].holds is None


def test_drop_share_is_the_clopper_pearson_interval_of_the_drop_sample():
    for dropped, total, verdict in ((0, 480, Verdict.HOLDS), (2, 200, Verdict.UNDECIDED), (30, 300, Verdict.FAILS)):
        ours = _verdicts(_scaling([[1500] * 3] * 4, [[10] * 3] * 4), drops=_drops(dropped, total))["drop-share"]
        # the exact bounds: where the binomial tail beyond the count is 2.5%
        high = optimize.brentq(lambda p, k=dropped, n=total: stats.binom.cdf(k, n, p) - 0.025, 1e-12, 1 - 1e-12)
        low = 0.0
        if dropped:
            low = optimize.brentq(lambda p, k=dropped, n=total: stats.binom.sf(k - 1, n, p) - 0.025, 1e-12, 0.5)
        _assert_interval(ours.ours, (dropped / total, low, high))
        assert ours.verdict is verdict and f"{dropped} of {total} conformers dropped at 20 fixed" in ours.detail
    assert 1 - 0.025 ** (1 / 480) < 0.01  # the default design: no drop in 480 decides the claim
    assert proportion(50, 50).high == 1 and proportion(50, 50).low == pytest.approx(0.025 ** (1 / 50))
    for bad in ((-1, 5), (6, 5), (1, 0), (1.5, 5)):
        with pytest.raises(ValueError, match="proportion"):
            proportion(*bad)
    # molecules ETKDG could not embed (and labelling errors) never had a DFT result: not QM1B's rules, not counted
    sample = {**_drops(0, 468), "dropped": {"embedding_failed": 12, "error:ValueError": 4}}
    ours = _verdicts(_scaling([[1500] * 3] * 4, [[10] * 3] * 4), drops=sample)["drop-share"]
    assert ours.ours.estimate == 0 and ours.ours.high == pytest.approx(1 - 0.025 ** (1 / 468))
    assert ours.verdict is Verdict.HOLDS and "not counted (no DFT result): {'embedding_failed': 12" in ours.detail
    sample = {**_drops(0, 468), "dropped": {"embedding_failed": 12, "not_finite": 1, "zero_gap": 1, "std": 3}}
    assert _verdicts(_scaling([[1500] * 3] * 4, [[10] * 3] * 4), drops=sample)["drop-share"].ours.estimate == 5 / 473


def test_one_bad_seed_at_the_largest_size_leaves_the_mean_predictor_claim_undecided():
    valid = [[1500, 1520, 1490], [1100, 1130, 1080], [950, 960, 940], [850, 870, 1700]]
    got = _verdicts(_scaling(valid, [[10, 12, 11]] * 4))
    _, low, high = mean_interval([850 - 1600.0, 870 - 1600.0, 1700 - 1600.0])
    assert low < 0 < high
    assert got["beats-mean-predictor"].verdict is Verdict.UNDECIDED


def test_one_seed_declares_no_seed_interval_and_no_drop_sample_no_drop_claim():
    cfg = SimpleNamespace(qm1b=_config(1, drop_molecules=0))
    assert [c.id for c in claims(cfg)] == ["gap-within-0.1mev", "energy-within-1mev"]
    got = {c.id: c for c in measure(cfg, MANIFESTS, {"gap_mev": np.array([]), "energy_mev": np.array([])}, [], None)}
    assert all(c.verdict is Verdict.NOT_MEASURED and c.detail == "not measured" for c in got.values())


def test_the_ledger_records_every_respecified_claim_with_its_last_verdict():
    entries = {(e.claim, e.kind, e.date): e for e in LEDGER}
    falls = entries["valid-mae-falls", "respecified", "2026-11-24"]
    assert "monotonically" in falls.old and falls.commit == "757875f"
    assert falls.original_verdict(None).startswith("holds (1658 -> 937 -> 868 -> 844")
    removed = entries["gap-accuracy", "removed", "2026-11-25"]
    assert "test_float32_on_12_held_out_qm9_molecules" in removed.moved_to
    for cid in ("drop-share", "valid-mae-falls", "beats-mean-predictor", "gap-narrows"):
        e = entries[cid, "respecified", "2026-11-26"]
        assert e.old_verdict.startswith("holds") and e.commit == "04448ef", cid
    for cid in ("gap-within-0.1mev", "energy-within-1mev"):
        assert (cid, "added", "2026-11-26") in entries
    # every current claim's latest rule text in the ledger names the statistic its measure computes
    assert "Clopper-Pearson" in entries["drop-share", "respecified", "2026-11-26"].new
