"""The character-LM papers compute what they computed when tests/fixtures/charlm_identity.json was recorded: every
arm's model (init, logits, loss, gradients), every SparQ decode method (settings, transfers, step output) and each
paper's smoke run, bit for bit (tests/papers/identity.py). Slow: about ten minutes on a 2-core CPU."""

import json

import pytest

from tests.papers.identity import FIXTURE, cases

pytestmark = pytest.mark.slow
RECORDED = json.loads(FIXTURE.read_text())
CASES = dict(cases())


def test_every_case_is_recorded_and_every_recorded_case_still_exists():
    assert sorted(CASES) == sorted(RECORDED)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_case_computes_what_was_recorded(name):
    assert CASES[name]() == RECORDED[name]
