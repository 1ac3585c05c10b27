"""core.nn.decode_methods: the formulas import without JAX; each method's step is its kernel on the grouped query
heads, given k + 1 positions (the current token free); the budgets' rules and their reach; the transfers counted from
the kernels against the formulas (what the counts add to them is tested in tests/papers/sparq/test_tasks.py)."""

from __future__ import annotations

import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from core.nn.attention import (
    h2o_attention_gqa,
    h2o_init_scores,
    local_attention_gqa,
    quest_attention_gqa,
    sparq_attention_gqa,
    streaming_attention_gqa,
)
from core.nn.decode_methods import DECODE_METHODS, H2O, Dense, Local, Quest, SparQ, Streaming

B, HKV, G, S, D = 2, 2, 3, 48, 8


def test_the_formulas_import_without_jax():
    code = (
        "import sys; from core.nn.decode_methods import SparQ; "
        "assert SparQ.for_ratio(1 / 8, 2048, 128).transfer(2048, 128, 1) > 0; assert 'jax' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture(scope="module")
def cache():
    rng = np.random.default_rng(60)
    q = jnp.asarray(rng.standard_normal((B, HKV * G, D)), jnp.float32)
    K, V = (jnp.asarray(rng.standard_normal((B, HKV, S, D)), jnp.float32) for _ in range(2))
    return q, K, V


def test_each_step_is_its_kernel_on_the_grouped_heads(cache):
    q, K, V = cache
    length = 37
    grouped = q.reshape(B, HKV, G, D)
    state = H2O(k=8, local_k=2).init_state([jnp.ones((B, HKV, S))], length)
    expected = {
        SparQ(r=3, k=8, local_k=2): sparq_attention_gqa(grouped, K, V, r=3, k=9, local_k=3, length=length),
        SparQ(r=3, k=8, reallocate=False): sparq_attention_gqa(
            grouped, K, V, r=3, k=9, local_k=1, length=length, reallocate=False
        ),
        H2O(k=8, local_k=2): h2o_attention_gqa(grouped, K, V, state[0], k=9, local_k=3, length=length)[:2],
        Local(k=8): local_attention_gqa(grouped, K, V, k=9, length=length),
        Streaming(k=8, sinks=2): streaming_attention_gqa(grouped, K, V, k=9, sinks=2, length=length),
        Quest(k=8, page=4): quest_attention_gqa(grouped, K, V, k=8, page=4, length=length),
    }
    for method, (want, want_transfer) in expected.items():
        out, transfer, _ = method.step(0, q, K, V, length, state[0] if isinstance(method, H2O) else None)
        assert out.shape == q.shape and transfer == want_transfer, method
        np.testing.assert_array_equal(np.asarray(out), np.asarray(want).reshape(q.shape), err_msg=str(method))
    # H2O's state: its kept set from the prefill's accumulated attention, k + 1 and local_k + 1 positions
    want = h2o_init_scores(jnp.ones((B, HKV, S)), length, k=9, local_k=3)
    np.testing.assert_array_equal(np.asarray(state[0].kept), np.asarray(want.kept))
    assert Dense().init_state([jnp.ones((B, HKV, S))], length) is None


def test_budgets_take_the_nearest_setting_within_reach():
    L, d, g = 40, 16, 2
    dense = 2 * g * d + 2 * L * d
    assert Dense.for_ratio(0.125, L, d, g) == Dense() and Dense().transfer(L, d, g) == dense
    # SparQ: k and its window fixed, r from the budget (each component reads L elements)
    m = SparQ.for_ratio(0.5, L, d, g, k=8)
    assert (m.r, m.k, m.local_k, m.ratio) == (8, 8, 2, 0.5)
    assert m.transfer(L, d, g) == 2 * g * d + L * 8 + 2 * 8 * d + d + 2 * d
    assert SparQ.for_ratio(0.125, L, d, g, k=8) is None  # r = 1 already moves more than 1.25x the target
    # the windows: at least sinks + 1 positions; StreamingLLM keeps its sinks, the local window none
    assert Local.for_ratio(0.125, L, d, g, sinks=2) == Local(ratio=0.125, k=3)
    assert Local.for_ratio(0.125, L, d, g) is None  # the floor of sinks + 1 = 5 positions moves too much
    assert Streaming.for_ratio(0.5, L, d, g, sinks=2) == Streaming(ratio=0.5, k=19, sinks=2)
    assert H2O.for_ratio(0.5, L, d, g) == H2O(ratio=0.5, k=18, local_k=4)
    # Quest: whole pages after every page's bounds (10 pages of 4: 320 elements): (672 - 64 - 320) / 128 = 2.25 pages
    assert Quest.for_ratio(0.5, L, d, g, page=4) == Quest(ratio=0.5, k=8, page=4)
    for m in (SparQ.for_ratio(0.5, L, d, g, k=8), H2O.for_ratio(0.5, L, d, g), Quest.for_ratio(0.5, L, d, g, page=4)):
        assert m.transfer(L, d, g) <= 1.25 * 0.5 * dense


def test_counted_transfer_is_the_formula_where_the_kernel_reads_what_it_counts():
    """Without step 5 SparQ's kernel reads what its formula says but for the new key's write (d, done by the cache
    update) and the current token's key and value (2d, free in the formula); dense and Quest (given its page bounds)
    count exactly their formulas; H2O's masked kernel is not counted."""
    L, d, g = 64, 16, 2
    assert Dense().counted_transfer(L, d, g) == Dense().transfer(L, d, g)
    assert Quest(k=16, page=8).counted_transfer(L, d, g) == Quest(k=16, page=8).transfer(L, d, g)
    sparq = SparQ(r=4, k=16, local_k=4, reallocate=False)
    assert sparq.counted_transfer(L, d, g) == sparq.transfer(L, d, g) - d + 2 * d
    assert H2O(k=16, local_k=4).counted_transfer(L, d, g) is None


def test_labels_settings_and_the_table_of_names():
    assert [m.label for m in (Dense(), SparQ(ratio=0.125, r=8, k=128), Quest(ratio=0.25, k=32, page=16))] == [
        "dense",
        "sparq 1/8",
        "quest 1/4",
    ]
    assert SparQ(r=8, k=128, local_k=32, reallocate=False).settings == "r=8 k=128 local=32 (no step 5)"
    assert Quest(k=32, page=16).settings == "k=32 (2 pages of 16)"
    assert {name: kind.name for name, kind in DECODE_METHODS.items()} == {n: n for n in DECODE_METHODS}
