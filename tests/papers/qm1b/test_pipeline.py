"""The labelling pipeline (papers.qm1b.dft.pipeline.Labeller): the same results as run_dft_batch, whatever the
workers and read-ahead; a conformer that cannot be prepared gets its exception, the rest of its batch is labelled."""

import numpy as np
import pytest

from papers.qm1b.dft import run_dft_batch
from papers.qm1b.dft.pipeline import Labeller

WATER = "O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692"
METHANE = (
    "C 0 0 0; H 0.6291 0.6291 0.6291; H -0.6291 -0.6291 0.6291; H -0.6291 0.6291 -0.6291; H 0.6291 -0.6291 -0.6291"
)
AMMONIA = "N 0 0 0.1; H 0 0.94 -0.27; H 0.81 -0.47 -0.27; H -0.81 -0.47 -0.27"
BATCHES = [[WATER, METHANE], [AMMONIA], [METHANE, WATER, AMMONIA]]


def _same(a, b):
    """Equal up to the last bits that threaded reductions (BLAS, PySCF's OpenMP J/K) may change between runs."""
    assert a["iterations"] == b["iterations"]
    for key in ("energy", "gap", "homo", "lumo"):
        assert abs(a[key] - b[key]) < 1e-10, key


@pytest.fixture(scope="module")
def expected():
    return [run_dft_batch(b, dtype="float64") for b in BATCHES]


@pytest.mark.parametrize(("workers", "prefetch"), [(0, 1), (1, 2)])
def test_labeller_equals_run_dft_batch(expected, workers, prefetch):
    with Labeller(dtype="float64", workers=workers, prefetch=prefetch) as labeller:
        got = list(labeller.map(iter(BATCHES)))
    assert [len(b) for b in got] == [len(b) for b in BATCHES]
    for batch, reference in zip(got, expected, strict=True):
        for a, b in zip(batch, reference, strict=True):
            _same(a, b)


def test_a_conformer_that_cannot_be_prepared_gets_its_exception(expected):
    radical = "O 0 0 0; H 0 0 1"  # 9 electrons
    with Labeller(dtype="float64", workers=0) as labeller:
        (got,) = labeller.map([[WATER, radical, METHANE], []][:1])
        assert list(labeller.map([[]])) == [[]]
    assert isinstance(got[1], ValueError) and "9 electrons" in str(got[1])
    _same(got[0], expected[0][0])
    assert np.isclose(got[2]["energy"], expected[0][1]["energy"], rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": -1}, r"workers=-1 must be an integer >= 0"),
        ({"prefetch": 0}, r"prefetch=0 must be an integer >= 1"),
        ({"dtype": "float16"}, r"dtype='float16': allowed are"),
    ],
)
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Labeller(**kwargs)
