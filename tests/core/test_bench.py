import pytest

from core.bench import SECTIONS, Comparison, by_size, compare, markdown_table, section, time_call, time_rounds


class FakeClock:
    """A clock the timed functions advance: `work(seconds)` is a call that 'takes' that long, without sleeping."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def work(self, seconds: float):
        def call():
            self.now += seconds

        return call

    def sequence(self, seconds: list[float]):
        it = iter(seconds)

        def call():
            self.now += next(it)

        return call


def test_time_call_measures_the_call():
    clock = FakeClock()
    t = time_call(clock.work(0.01), repeat=3, min_seconds=0.0, warmup=0, clock=clock)
    assert t == pytest.approx(0.01)


def test_time_call_runs_enough_calls_per_round():
    clock, calls = FakeClock(), []

    def fn():
        calls.append(1)
        clock.now += 0.001

    assert time_call(fn, repeat=2, min_seconds=0.01, warmup=1, clock=clock) == pytest.approx(0.001)
    assert len(calls) == 1 + 1 + 2 * 10  # warm-up, calibration, two rounds of min_seconds / once = 10 calls


def test_time_call_min_ignores_a_slow_round():
    def rounds(clock):  # warmup, calibration, then three rounds: two slowed by other work
        return clock.sequence([0.0, 0.0, 0.05, 0.05, 0.01])

    c1, c2 = FakeClock(), FakeClock()
    assert time_call(rounds(c1), repeat=3, min_seconds=0.0, warmup=1, stat="min", clock=c1) == pytest.approx(0.01)
    assert time_call(rounds(c2), repeat=3, min_seconds=0.0, warmup=1, clock=c2) == pytest.approx(0.05)  # median
    with pytest.raises(ValueError, match="stat"):
        time_call(rounds(FakeClock()), stat="mean")


def test_compare_reports_peer_over_ours():
    clock = FakeClock()
    c = compare(
        "s",
        "sleep",
        ours=("fast", clock.work(0.002)),
        peer=("slow", clock.work(0.02)),
        repeat=3,
        min_seconds=0.0,
        clock=clock,
    )
    assert c.speedup == pytest.approx(10.0)  # the peer takes 10x longer
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
    order, clock = [], FakeClock()

    def fn(name, seconds):
        def call():
            order.append(name)
            clock.now += seconds

        return call

    t = time_rounds({"a": fn("a", 0.002), "b": fn("b", 0.01)}, repeat=3, min_seconds=0.0, warmup=1, clock=clock)
    assert set(t) == {"a", "b"} and all(len(v) == 3 for v in t.values())
    assert t["b"] == pytest.approx([0.01] * 3) and t["a"] == pytest.approx([0.002] * 3)
    assert order[4:] == ["a", "b"] * 3  # after warm-up and calibration (a, a, b, b): a round of each in turn
    with pytest.raises(ValueError, match="repeat must be >= 1"):
        time_rounds({"a": fn("a", 0.0)}, repeat=0)
