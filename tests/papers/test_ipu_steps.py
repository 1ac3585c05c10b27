"""Every paper's main step for the simulated IPU (its `ipu_steps` part, ipu_model/steps.py), built at the smoke
config of its stored smoke Results (tests/fixtures/results/) and checked by the lowering (every primitive has a
rule, every dtype is the IPU's): which steps lower whole and what the others lack. A step that stops lowering, or a
primitive that gains a rule, changes this table; the costs themselves are `make ipu-step`'s (results/<paper>/)."""

from __future__ import annotations

import jax
import pytest

from core.record import read_record
from ipu_model.lowering import UnsupportedError
from ipu_model.lowering.builder import check_jaxpr
from tests.conftest import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "results"

# paper -> {step name: "lowers", or (primitives without a rule, a word of each refused equation)}
COVERAGE = {
    "packing": {"packed training step": "lowers", "padded training step": "lowers"},
    "fp8_llm": {"fp32 training step": "lowers", "amax training step": "lowers"},
    "umup": "lowers",
    "unit_scaling": "lowers",
    "prng": "lowers",
    "gps": "lowers",
    "qm1b": ({"while", "eigh", "lu", "triangular_solve", "custom_linear_solve", "sort", "scatter", "asinh"}, "gather"),
    "bess": ({"shard_map", "all_to_all", "psum_invariant", "pvary", "reshard"}, None),
    "sparq": "lowers",
}


def _check(step) -> str | tuple[set[str], list[str]]:
    leaves, tree = jax.tree_util.tree_flatten(step.args)
    closed = jax.make_jaxpr(lambda *xs: step.fn(*jax.tree_util.tree_unflatten(tree, xs)))(*leaves)
    try:
        check_jaxpr(closed.jaxpr)
    except UnsupportedError as e:
        return set(e.missing), e.problems
    return "lowers"


@pytest.mark.parametrize("paper", sorted(COVERAGE))
def test_each_papers_step_lowers_or_names_what_it_lacks(paper, tmp_path):
    (tmp_path / "results.json").write_bytes((FIXTURES / paper / "results.json").read_bytes())
    record = read_record(tmp_path)
    steps = record.paper.load("ipu_steps")(record.config())
    assert steps and len({s.name for s in steps}) == len(steps)
    want = COVERAGE[paper]
    for step in steps:
        got = _check(step)
        expected = want.get(step.name) if isinstance(want, dict) else want
        if expected == "lowers":
            assert got == "lowers", f"{paper} {step.name}: {got}"
            continue
        missing, word = expected
        assert got != "lowers", f"{paper} {step.name} lowers now: update COVERAGE and the README"
        assert missing <= got[0], f"{paper} {step.name}: missing {got[0]}"
        assert word is None or any(word in p for p in got[1]), f"{paper} {step.name}: refused {got[1]}"
