import json
import math

import numpy as np
import pytest

from core.claims import Claim, at_least, at_most, format_value, is_true, within_abs, within_rel
from core.report import SMOKE_NOTE, Figure, Report, Table, estimate_text, fixed, mean_std


def test_rules_decide_by_their_definitions():
    assert within_rel(0.01)(1.0099, 1.0)
    assert not within_rel(0.01)(1.0101, 1.0)
    assert within_rel(0.01)(-1.005, -1.0)
    assert within_abs(0.5)(2.5, 2.0) and not within_abs(0.5)(2.51, 2.0)
    assert at_most(3)(3, None) and not at_most(3)(3.0001, None)
    assert at_least(3)(3, None) and not at_least(3)(2.999, None)
    assert is_true("A beats B")(True, None) and not is_true("A beats B")(False, None)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "1.0", True])
def test_non_finite_or_non_numeric_never_holds(bad):
    for rule in (within_rel(1e9), within_abs(1e9), at_most(1e9), at_least(-1e9)):
        assert rule(bad, 1.0) is False


def test_rules_reject_negative_tolerances():
    with pytest.raises(ValueError, match="rel must be >= 0"):
        within_rel(-0.1)
    with pytest.raises(ValueError, match="tol must be >= 0"):
        within_abs(math.nan)


def test_holds_is_derived_from_the_rule_and_the_measurement():
    c = Claim("bpc", "Unit-scaled FP16 matches FP32", paper=1.540, rule=within_rel(0.02))
    assert c.holds is None and c.ours is None
    assert c.measured(1.55).holds is True
    assert c.measured(1.60).holds is False
    assert c.measured(np.float32(1.55)).ours == pytest.approx(1.55)  # numpy scalars become Python numbers
    assert isinstance(c.measured(np.float32(1.55)).ours, float)
    assert c.holds is None  # measured() returns a new claim


@pytest.mark.parametrize("bad_id", ["", "Has Upper", "with space", "-leading", "a|b"])
def test_claim_ids_are_checked(bad_id):
    with pytest.raises(ValueError, match="not a valid id"):
        Claim(bad_id, "x", 1.0, within_abs(1))


def test_claim_rule_must_be_a_rule():
    with pytest.raises(TypeError, match="rule must be"):
        Claim("x", "x", 1.0, lambda o, p: True)


def test_table_rows_must_match_columns():
    with pytest.raises(ValueError, match="row 1 has 1 values but there are 2 columns"):
        Table("t", "T", ["a", "b"], [[1, 2], [3]])


def test_markdown_escapes_pipes_and_puts_claims_first():
    r = Report("toy", "Toy", notes=["a note"])
    r.claims.append(Claim("c1", "x | y", 1.0, within_abs(0.1)).measured(1.05))
    r.claims.append(Claim("c2", "z", 1.0, within_abs(0.1)).measured(2.0))
    r.claims.append(Claim("c3", "not measured here", 1.0, within_abs(0.1)))
    r.tables.append(Table("t", "A table", ["k", "v"], [["a", 1.23456789]]))
    md = r.to_markdown(header={"paper": "toy"}, config_yaml="seed: 0\n", versions={"python": "3"})
    lines = md.splitlines()
    claims_at = lines.index("## Claims")
    assert claims_at < lines.index("## Notes") < lines.index("## A table") < lines.index("## Config")
    row = next(line for line in lines if line.startswith("| c1 "))
    assert "x \\| y" in row and row.count(" | ") == 9  # the pipe in the sentence does not split the cell
    assert "| c2 | z | 1 | 2 |" in md and "| fails |" in md and "not measured" in md
    assert "1 hold, 1 fail, 0 undecided of 3 claims (1 not measured)" in md
    assert "| a | 1.235 |" in md
    r.claims.append(Claim("c4", "w", 1.0, within_abs(0.1), unverified="from a compilation").measured(1.0))
    md = r.to_markdown(header={"paper": "toy"}, config_yaml="seed: 0\n", versions={"python": "3"})
    assert "| unverified (rule: holds) |" in md
    assert "1 hold, 1 fail, 0 undecided of 4 claims (1 unverified, 1 not measured)" in md


def test_a_smoke_reports_verdicts_say_they_check_the_plumbing_not_the_paper():
    r = Report("toy", "Toy")
    r.claims.append(Claim("c1", "x", 1.0, within_abs(0.1)).measured(2.0))
    smoke = r.to_markdown(header={"scale": "smoke"}, config_yaml="", versions={})
    default = r.to_markdown(header={"scale": "default"}, config_yaml="", versions={})
    assert "check the plumbing" in smoke and "not the paper" in smoke
    assert "plumbing" not in default
    lines = smoke.splitlines()  # right below the verdict count
    assert lines[lines.index(next(x for x in lines if x.startswith("0 hold, 1 fail"))) + 2].startswith("Smoke scale")


def test_report_dict_is_strict_json():
    r = Report("toy", "Toy", metrics={"nan": math.nan, "arr": np.float64(2.0), "n": np.int64(3)})
    r.claims.append(Claim("c", "s", 1.0, within_abs(0.1)).measured(math.nan))
    d = r.to_dict()
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert back["claims"][0]["holds"] is False
    assert back["claims"][0]["ours"] == "nan"
    assert back["metrics"] == {"nan": "nan", "arr": 2.0, "n": 3}


def test_duplicate_ids_are_rejected():
    r = Report("toy", "Toy")
    r.claims += [Claim("c", "s", 1.0, within_abs(0.1)), Claim("c", "s2", 1.0, within_abs(0.1))]
    with pytest.raises(ValueError, match=r"duplicate claim ids \['c'\]"):
        r.validate()


def test_figure_needs_a_matplotlib_figure():
    with pytest.raises(TypeError, match="expected a matplotlib Figure"):
        Figure("f", object())


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (True, "yes"),
        (3, "3"),
        (1.54, "1.54"),
        (1 / 3, "0.3333"),
        (123456.0, "1.235e+05"),
        (1e-5, "1.000e-05"),
        (0.0, "0"),
        (math.nan, "nan"),
        ("x", "x"),
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


def test_a_report_must_keep_the_claims_declared_before_the_run():
    declared = [Claim("a", "A", 1.0, within_rel(0.1)), Claim("b", "B", 2.0, at_most(3.0))]
    Report("p", "P", [declared[0].measured(1.05, "fine"), declared[1]]).check_declared(declared)  # ours filled in
    loosened = Claim("a", "A", 1.0, within_rel(0.5)).measured(1.3)
    with pytest.raises(ValueError, match=r"changed \['a'\], dropped none, added none"):
        Report("p", "P", [loosened, declared[1]]).check_declared(declared)
    with pytest.raises(ValueError, match=r"dropped \['b'\]"):
        Report("p", "P", [declared[0]]).check_declared(declared)


def test_mean_std_writes_the_seed_mean_and_sample_std_in_one_format():
    # [1, 2, 4]: mean 7/3, sample std sqrt(((4/3)^2 + (1/3)^2 + (5/3)^2) / 2) = sqrt(7/3) = 1.5275...
    assert mean_std([1.0, 2.0, 4.0]) == "2.3333 +- 1.5275"
    assert mean_std([1.0, 2.0, 4.0], ".1f") == "2.3 +- 1.5"
    assert mean_std([200, 203, 198], ".0f") == "200 +- 3"
    assert mean_std([0.01, 0.03], "+.2%") == "+2.00% +- 1.41%"  # the sign on the mean only
    assert mean_std([-0.012], "+.2%") == "-1.20%"  # one value: itself, no spread
    assert mean_std(np.array([271.84]), ".1f") == "271.8"
    assert mean_std([]) == "-"


def test_estimate_text_writes_an_interval_a_single_value_or_what_was_decided_instead():
    from core.claims import Interval

    assert estimate_text(Interval(0.0123, -0.004, 0.0286), "+.1%") == "+1.2% [-0.4%, +2.9%]"
    assert estimate_text(Interval(1.5, 1.25, 1.75), ".3f") == "1.500 [1.250, 1.750]"
    assert estimate_text(-0.0071, "+.2%") == "-0.71%"  # one seed: its value alone
    assert estimate_text(3, ".1f") == "3.0"
    assert estimate_text("diverged") == "diverged"
    assert estimate_text(None) == "-" and estimate_text(None, missing="n/a") == "n/a"
    assert estimate_text(True) == "True"  # not a number here: written as it is


def test_fixed_writes_decimals_and_names_a_missing_value():
    assert fixed(3.14159) == "3.14" and fixed(2.0, 3) == "2.000" and fixed(7, 1) == "7.0"
    assert fixed(None) == fixed(math.nan) == fixed(math.inf) == "n/a"
    assert fixed(math.inf, 3, missing="diverged") == "diverged"


def test_the_terminal_summary_of_a_smoke_run_says_it_checks_the_plumbing(tmp_path):
    from core.runner import summary_text

    r = Report("toy", "Toy")
    r.claims.append(Claim("c1", "x", 1.0, within_abs(0.1)).measured(2.0))
    smoke, default = (summary_text(r, tmp_path, 1.0, scale).splitlines() for scale in ("smoke", "default"))
    assert smoke[-2] == SMOKE_NOTE and smoke[-3].startswith("0 hold, 1 fail") and smoke[-1].startswith("report: ")
    assert SMOKE_NOTE not in default and len(default) == len(smoke) - 1


def test_the_history_counts_re_specifications_across_a_re_added_id_and_shows_the_last_replaced_rule():
    """A hand-made ledger: claim `old` re-specified once, then removed and re-added as `new`, which was re-specified
    again; `new-2` (a longer id with `new` as a prefix) is not taken for it."""
    from core.claims import Interval, interval_above
    from core.ledger import Change

    rule = interval_above(0.01)
    new = Claim("new", "A beats B", 0.0, rule).measured(Interval(0.02, 0.015, 0.025))
    other = Claim("new-2", "C", 0.0, rule).measured(Interval(0.02, 0.015, 0.025))
    ledger = [
        Change("2026-11-20", "old", "respecified", "ours >= 0.05", "ours >= 0.03", "r", old_verdict="fails"),
        Change("2026-11-21", "old", "removed", "ours >= 0.03", "-", "r", moved_to="claim new", old_verdict="holds"),
        Change("2026-11-22", "unrelated", "removed", "x", "-", "r", moved_to="claim new-2", old_verdict="holds"),
        Change(
            "2026-11-23",
            "new",
            "respecified",
            "interval low > 0.03",
            rule.description,
            "r",
            old_rule=interval_above(0.03),
        ),
    ]
    report = Report("p", "t", claims=[new, other], ledger=ledger)
    assert [e.date for e in report.lineage("new")] == ["2026-11-20", "2026-11-21", "2026-11-23"]
    assert report.history(new) == (
        "3 re-specifications; last replaced interval low > 0.03: fails on this run; "
        "original old: ours >= 0.05: fails (last recorded)"
    )
    assert report.history(other).startswith("1 re-specification; last replaced unrelated: x: holds")
    assert report.to_dict()["claims"][0]["history"] == report.history(new)
    assert report.history(Claim("lone", "x", 0.0, rule)) == "-"
