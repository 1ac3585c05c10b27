import time

import pytest

from core.bench import SECTIONS, Comparison, by_size, compare, markdown_table, section, time_call, time_rounds


def test_time_call_measures_the_call():
    t = time_call(lambda: time.sleep(0.01), repeat=3, min_seconds=0.0, warmup=0)
    assert 0.009 < t < 0.5


def test_time_call_min_ignores_a_slow_round():
    def rounds():  # warmup, calibration, then three rounds: two slowed by other work
        sleeps = iter([0.0, 0.0, 0.05, 0.05, 0.01])
        return lambda: time.sleep(next(sleeps))

    assert 0.009 < time_call(rounds(), repeat=3, min_seconds=0.0, warmup=1, stat="min") < 0.03
    assert time_call(rounds(), repeat=3, min_seconds=0.0, warmup=1) > 0.045  # the median
    with pytest.raises(ValueError, match="stat"):
        time_call(rounds(), stat="mean")


def test_compare_reports_peer_over_ours():
    c = compare(
        "s",
        "sleep",
        ours=("fast", lambda: time.sleep(0.002)),
        peer=("slow", lambda: time.sleep(0.02)),
        repeat=3,
        min_seconds=0.0,
    )
    assert c.speedup > 2  # the peer sleeps 10x longer
    assert c.to_dict()["speedup"] == c.speedup


def test_markdown_table_has_one_row_per_comparison():
    rows = [Comparison("s", "n", "a", "b", 0.001, 0.002, "1x1")]
    table = markdown_table(rows)
    assert table.splitlines()[2] == "| s | n | 1x1 | a | b | 1.000 | 2.000 | 2.00x |"


def test_by_size_picks_the_size_and_rejects_others():
    assert by_size("quick", tiny=1, quick=2, full=3) == 2
    with pytest.raises(ValueError, match=r"'big'.*tiny, quick, full"):
        by_size("big", tiny=1, quick=2, full=3)


def test_section_registers_a_size_checked_function():
    calls = []

    @section("test_only_section")
    def bench_test_only(size: str) -> list[Comparison]:
        calls.append(size)
        return [Comparison("test_only_section", "n", "a", "b", 1.0, 2.0)]

    try:
        assert SECTIONS["test_only_section"]("tiny")[0].speedup == 2.0
        with pytest.raises(ValueError, match="'medium'"):
            SECTIONS["test_only_section"]("medium")
        assert calls == ["tiny"]  # the bad size was refused before the section ran
        assert bench_test_only("quick")  # the decorated function stays callable as it was

        with pytest.raises(ValueError, match="registered twice"):

            @section("test_only_section")
            def another(size: str) -> list[Comparison]:
                return []
    finally:
        SECTIONS.pop("test_only_section")


def test_time_rounds_interleaves_the_rounds_and_times_each_call():
    order = []

    def fn(name, seconds):
        return lambda: (order.append(name), time.sleep(seconds))

    t = time_rounds({"a": fn("a", 0.002), "b": fn("b", 0.01)}, repeat=3, min_seconds=0.0, warmup=1)
    assert set(t) == {"a", "b"} and all(len(v) == 3 for v in t.values())
    assert all(0.009 < x < 0.5 for x in t["b"]) and all(0.0019 < x < 0.5 for x in t["a"])
    assert order[4:] == ["a", "b"] * 3  # after warm-up and calibration (a, a, b, b): a round of each in turn
    with pytest.raises(ValueError, match="repeat must be >= 1"):
        time_rounds({"a": fn("a", 0.0)}, repeat=0)
