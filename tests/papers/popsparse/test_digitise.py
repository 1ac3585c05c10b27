"""The digitiser of the paper's figures (papers.popsparse.digitise): its readings of the cells the paper's table prints
agree with the table to its digits, a figure drawn here with known values is read back inside the intervals the
method claims, a covered marker is left out rather than misread, and the committed readings are what the script
gives on the committed images."""

import io

import matplotlib
import numpy as np
import pytest

from papers.popsparse.digitise import DATA, Figure, digitise, read_figure, speedup, to_json
from papers.popsparse.paper import READINGS_PATH, load_readings
from papers.popsparse.plot_reading import Reading, intersect

matplotlib.use("Agg")

# the paper's table (REFERENCES.md, "speed-up table"), FP16 at density 1/16, as printed: written out here, not taken
# from the code under test
TABLE_FP16 = {("static", 1): 0.7, ("dynamic", 1): 0.4, ("static", 16): 4.9, ("dynamic", 16): 1.9}


@pytest.mark.parametrize("figure", ["ipu_density", "ipu_block_size"])
@pytest.mark.parametrize(("kind", "block"), list(TABLE_FP16))
def test_readings_of_the_tables_cells_agree_with_the_printed_table(figure, kind, block):
    """Each figure shows the table's FP16 cells; the table prints them to one decimal (0.7 is [0.65, 0.75]). The
    reading's estimate rounds to the printed figure, and its interval lies within 2.5% of the printed range."""
    printed = TABLE_FP16[(kind, block)]
    got = speedup(load_readings(), kind, block, 1 / 16, figure)
    assert round(got.estimate, 1) == printed
    assert printed - 0.05 <= got.estimate <= printed + 0.05
    assert got.low >= (printed - 0.05) * 0.975 and got.high <= (printed + 0.05) * 1.025
    assert got.high / got.low - 1 < 0.05  # a pixel-precision interval, not a loose one


def test_the_two_figures_read_the_shared_cells_alike():
    readings = load_readings()
    for kind, block in TABLE_FP16:
        a, b = (speedup(readings, kind, block, 1 / 16, f) for f in ("ipu_density", "ipu_block_size"))
        assert max(a.low, b.low) <= min(a.high, b.high), (kind, block, a, b)


def _draw(series: dict[str, list[float]], xs: list[float], order: list[str]) -> np.ndarray:
    """A log-log figure like the notebook's `ipu_block_size` (100 dpi, filled markers without edges), as pixels."""
    import matplotlib.pyplot as plt
    from PIL import Image

    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    for colour in order:
        ax.plot(xs, series[colour], color=colour, marker="o", markeredgewidth=0, markersize=6.24, lw=1.2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(4e12, 1e14)
    ax.set_yticks([1e13, 3e13, 1e14])
    ax.spines[["top", "right"]].set_visible(False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


SYNTHETIC = Figure("synthetic", (4e12, 1e14), (1e13, 3e13, 1e14), (1, 2, 4, 8, 16), {"C0": "a", "C1": "b", "C2": "c"})


def test_a_figure_drawn_with_known_values_reads_back_inside_its_intervals():
    rng = np.random.default_rng(0)
    xs = [1, 2, 4, 8, 16]
    checked = 0
    for _ in range(4):
        series = {c: list(10 ** rng.uniform(np.log10(5e12), np.log10(9e13), len(xs))) for c in SYNTHETIC.series}
        markers = read_figure(SYNTHETIC, _draw(series, xs, list(SYNTHETIC.series)))
        names = {v: k for k, v in SYNTHETIC.series.items()}
        for m in markers:
            if m["covered"]:
                continue
            true = series[names[m["series"]]][xs.index(m["x"])]
            low, estimate, high = m["flops"]
            assert low <= true <= high, (m, true)
            assert estimate == pytest.approx(true, rel=0.012)  # half a pixel is 0.7% at 165 px a decade
            checked += 1
    assert checked >= 50  # of 60 drawn: only markers under another colour are left out


def test_a_marker_under_a_later_series_is_left_out_not_misread():
    xs = [1, 2, 4, 8, 16]
    below = [1e13, 2e13, 3e13, 4e13, 5e13]
    above = [v * 1.05 if x == 4 else v * 3 for x, v in zip(xs, below, strict=True)]  # one overlap, at x = 4
    markers = read_figure(SYNTHETIC, _draw({"C0": below, "C1": above, "C2": [6e12] * 5}, xs, ["C0", "C1", "C2"]))
    first = {m["x"]: m for m in markers if m["series"] == "a"}
    assert 4 not in first or first[4]["covered"]  # C0 at x = 4 lies under C1's marker
    assert all(not first[x]["covered"] for x in (1, 2, 8, 16))
    on_top = [m for m in markers if m["series"] == "b" and m["x"] == 4]
    assert on_top and not on_top[0]["covered"]


def test_one_quantity_read_twice_must_agree():
    # the values both allow; the estimate their geometric mean, 1.149, brought inside them
    assert intersect([Reading(1.0, 1.1, 1.2), Reading(1.15, 1.2, 1.3)]).to_list() == pytest.approx([1.15, 1.15, 1.2])
    assert intersect([Reading(1.0, 1.1, 1.3), Reading(1.0, 1.2, 1.3)]).estimate == pytest.approx((1.1 * 1.2) ** 0.5)
    with pytest.raises(ValueError, match="do not meet"):
        intersect([Reading(1.0, 1.1, 1.2), Reading(1.3, 1.4, 1.5)])


def test_the_committed_readings_are_the_scripts_on_the_committed_images():
    assert to_json(digitise(DATA)) == READINGS_PATH.read_text()
