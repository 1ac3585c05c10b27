"""The packed encoder against independent references: packing must change nothing a sequence computes (Krell et al.
2021, "Efficient Sequence Packing without Cross-contamination")."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf

from core.nn import FP32, Standard, UnitScaled
from core.nn.encoder import TransformerEncoder, attention_mask

VOCAB, D_MODEL, DEPTH, HEADS, MAX_LEN = 24, 32, 2, 2, 32
PAD, CLS, MASK = 0, 1, 2  # token ids; words are 3..VOCAB-1
T = 32
LENGTHS = [20, 9, 3, 17, 12, 1, 14]  # the length-1 sequence is a lone [CLS]: no MLM target
PACKS = [[0, 1, 2], [3, 4, 5], [6]]  # packed by hand: 32, 30 and 14 tokens in rows of 32
MAX_SEQUENCES = 4


def model(norm="pre", **kw):
    return TransformerEncoder(vocab=VOCAB, d_model=D_MODEL, depth=DEPTH, heads=HEADS, max_len=MAX_LEN, norm=norm, **kw)


def make_sequences(seed=0):
    """[CLS] + words, with about 30% of the words masked: (ids, labels) per sequence."""
    rng = np.random.default_rng(seed)
    out = []
    for n in LENGTHS:
        tokens = np.concatenate([[CLS], rng.integers(3, VOCAB, n - 1)])
        target = (rng.random(n) < 0.3) & (np.arange(n) > 0)
        if n > 1 and not target.any():
            target[rng.integers(1, n)] = True
        out.append((np.where(target, MASK, tokens), np.where(target, tokens, -1)))
    return out


def layout(sequences, packs, max_sequences):
    """Rows of T tokens holding the sequences of each pack one after another: ids, sequence ids 1..k, positions
    restarting at 0, labels, [CLS] positions, and where each sequence went (row, start)."""
    b = len(packs)
    ids, sids, pos = (np.zeros((b, T), np.int32) for _ in range(3))
    labels = np.full((b, T), -1, np.int32)
    cls = np.full((b, max_sequences), -1, np.int32)
    where = {}
    for r, pack in enumerate(packs):
        start = 0
        for k, j in enumerate(pack):
            seq_ids, seq_labels = sequences[j]
            n = len(seq_ids)
            ids[r, start : start + n], labels[r, start : start + n] = seq_ids, seq_labels
            sids[r, start : start + n], pos[r, start : start + n] = k + 1, np.arange(n)
            cls[r, k], where[j] = start, (r, start)
            start += n
        assert start <= T
    return [jnp.asarray(a) for a in (ids, sids, pos, labels, cls)], where


SEQUENCES = make_sequences()
PACKED, PACKED_AT = layout(SEQUENCES, PACKS, MAX_SEQUENCES)
ALONE, ALONE_AT = layout(SEQUENCES, [[j] for j in range(len(LENGTHS))], 1)


@pytest.fixture(scope="module")
def params():
    return model().init(jax.random.key(0), *PACKED[:3])


@partial(jax.jit, static_argnames=("max_sequences", "norm"))
def forward(params, ids, sids, pos, labels, cls, max_sequences, norm="pre"):
    m = model(norm)
    hidden = m.apply(params, ids, sids, pos)
    loss = m.apply(params, ids, sids, pos, labels, max_sequences, method=TransformerEncoder.mlm_loss)
    return (
        hidden,
        m.apply(params, hidden, method=TransformerEncoder.mlm_logits),
        m.apply(params, hidden, cls, method=TransformerEncoder.pooled),
        loss,
    )


@partial(jax.jit, static_argnames=("max_sequences",))
def loss_grad(params, ids, sids, pos, labels, max_sequences):
    def loss(p):
        return model().apply(p, ids, sids, pos, labels, max_sequences, method=TransformerEncoder.mlm_loss)[0]

    return jax.grad(loss)(params)


def per_sequence(x, at, j):
    r, start = at[j]
    return np.asarray(x[r, start : start + LENGTHS[j]])


# ---------------------------------------------------------------------------------------------- attention and mask
def test_attention_mask_is_block_diagonal_and_padding_attends_only_to_itself():
    sids = np.array([[1, 1, 1, 2, 2, 3, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1], [0] * 8])
    ref = np.zeros((3, 8, 8), bool)
    for b in range(3):
        for i in range(8):
            for j in range(8):
                ref[b, i, j] = (sids[b, i] == sids[b, j] != 0) or (sids[b, i] == 0 and i == j)
    np.testing.assert_array_equal(np.asarray(attention_mask(jnp.asarray(sids))), ref)
    # the first row's blocks, spelled out
    assert ref[0, :3, :3].all() and not ref[0, :3, 3:].any() and ref[0, 3:5, 3:5].all() and ref[0, 5, 5]


def test_masked_attention_is_a_masked_softmax_with_zero_rows_where_nothing_is_allowed():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 3, 6, 4)).astype(np.float32) for _ in range(3))
    mask = rng.random((2, 1, 6, 6)) < 0.5
    mask[0, 0, 2] = False  # a query with no key
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k) / 2.0
    e = np.where(mask, np.exp(s - s.max(-1, keepdims=True)), 0.0)
    ref = np.einsum("bhqk,bhkd->bhqd", e / np.maximum(e.sum(-1, keepdims=True), 1e-300), v)
    out, vjp = jax.vjp(lambda q, k, v: Standard().masked_attention(q, k, v, mask, FP32), q, k, v)
    np.testing.assert_allclose(np.asarray(out), ref, atol=1e-6)
    assert not np.asarray(out[0, :, 2]).any()
    grads = vjp(jnp.ones_like(out))
    assert all(np.isfinite(np.asarray(g)).all() for g in grads)


def test_masked_attention_refuses_unit_scaling():
    x = jnp.zeros((1, 4, 2))
    with pytest.raises(NotImplementedError, match="unit scaling"):
        UnitScaled().masked_attention(x, x, x, jnp.ones((4, 4), bool), FP32)


# ---------------------------------------------------------------------------------------------- independent reference
def reference_hidden(params, ids, positions, norm):
    """The encoder for one unpadded sequence, in float64 numpy, from the parameters alone."""
    p = jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), params["params"])

    def ln(x, scale):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * scale

    def attention(h, a):
        n, hd = len(h), D_MODEL // HEADS
        q, k, v = (h @ a["qkv"]["kernel"]).reshape(n, 3, HEADS, hd).transpose(1, 2, 0, 3)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        w = np.exp(s - s.max(-1, keepdims=True))
        y = (w / w.sum(-1, keepdims=True)) @ v  # [heads, n, hd]
        return y.transpose(1, 0, 2).reshape(n, D_MODEL) @ a["out"]["kernel"]

    def mlp(h, m):
        u = h @ m["up"]["kernel"]
        return 0.5 * u * (1 + erf(u / 2**0.5)) @ m["down"]["kernel"]

    x = p["token_embedding"][ids] + p["position_embedding"][positions]
    for i in range(DEPTH):
        b = p[f"block_{i}"]
        for kind, f in (("attention", attention), ("mlp", mlp)):
            scale = b[f"norm_{kind}"]["scale"]
            x = x + f(ln(x, scale), b[kind]) if norm == "pre" else ln(x + f(x, b[kind]), scale)
    return ln(x, p["final_norm"]["scale"]) if norm == "pre" else x


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_packed_hidden_states_match_an_independent_numpy_encoder(norm):
    m = model(norm)
    params = m.init(jax.random.key(3), *PACKED[:3])
    hidden = forward(params, *PACKED, max_sequences=MAX_SEQUENCES, norm=norm)[0]
    for j, (ids, _) in enumerate(SEQUENCES):
        ref = reference_hidden(params, ids, np.arange(len(ids)), norm)
        np.testing.assert_allclose(per_sequence(hidden, PACKED_AT, j), ref, atol=1e-5, err_msg=f"sequence {j}")


# ---------------------------------------------------------------------------------------------- packed == unpacked
def test_packed_equals_unpacked_hidden_states_pooled_outputs_and_losses(params):
    h_p, logits_p, pooled_p, (loss_p, seq_loss_p, count_p) = forward(params, *PACKED, max_sequences=MAX_SEQUENCES)
    h_a, logits_a, pooled_a, (loss_a, seq_loss_a, count_a) = forward(params, *ALONE, max_sequences=1)
    assert h_p.shape == (3, T, D_MODEL) and pooled_p.shape == (3, MAX_SEQUENCES, D_MODEL)
    assert seq_loss_p.shape == count_p.shape == (3, MAX_SEQUENCES)
    reference_losses, token_losses = [], []
    for j, (_, labels) in enumerate(SEQUENCES):
        r, start = PACKED_AT[j]
        k = PACKS[r].index(j)
        np.testing.assert_allclose(per_sequence(h_p, PACKED_AT, j), per_sequence(h_a, ALONE_AT, j), atol=1e-5)
        np.testing.assert_allclose(per_sequence(logits_p, PACKED_AT, j), per_sequence(logits_a, ALONE_AT, j), atol=1e-5)
        np.testing.assert_allclose(np.asarray(pooled_p[r, k]), np.asarray(pooled_a[j, 0]), atol=1e-5)
        np.testing.assert_array_equal(np.asarray(pooled_p[r, k]), np.asarray(h_p[r, start]))  # the [CLS] token
        assert int(count_p[r, k]) == int(count_a[j, 0]) == int((labels >= 0).sum())
        np.testing.assert_allclose(float(seq_loss_p[r, k]), float(seq_loss_a[j, 0]), atol=1e-5)
        # the per-sequence loss, from the unpacked logits by hand: mean cross-entropy over the sequence's targets
        logits = per_sequence(logits_a, ALONE_AT, j).astype(np.float64)
        logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        targets = np.flatnonzero(labels >= 0)
        if len(targets):
            token_losses.extend(-logp[targets, labels[targets]])
            reference_losses.append(-logp[targets, labels[targets]].mean())
            np.testing.assert_allclose(float(seq_loss_p[r, k]), reference_losses[-1], rtol=1e-5)
        else:
            assert float(seq_loss_p[r, k]) == 0.0
    assert len(reference_losses) == len(LENGTHS) - 1  # the lone [CLS] has no target and does not count
    # the batch loss is the mean over sequences, whatever the rows: not the mean over tokens or over rows
    np.testing.assert_allclose(float(loss_p), np.mean(reference_losses), rtol=1e-5)
    np.testing.assert_allclose(float(loss_p), float(loss_a), rtol=1e-6, atol=1e-6)
    assert abs(np.mean(token_losses) - float(loss_p)) > 1e-3  # a mean over tokens would be told apart
    assert not np.asarray(pooled_p[2, 1:]).any() and not np.asarray(seq_loss_p[2, 1:]).any()  # absent sequences


def test_packed_gradients_equal_unpacked_gradients(params):
    g_packed = loss_grad(params, *PACKED[:4], max_sequences=MAX_SEQUENCES)
    g_alone = loss_grad(params, *ALONE[:4], max_sequences=1)
    flat_p, flat_a = jax.tree_util.tree_leaves_with_path(g_packed), jax.tree_util.tree_leaves(g_alone)
    for (path, gp), ga in zip(flat_p, flat_a, strict=True):
        gp, ga = np.asarray(gp), np.asarray(ga)
        assert np.isfinite(gp).all()
        np.testing.assert_allclose(gp, ga, atol=1e-6 + 1e-4 * np.abs(ga).max(), err_msg=jax.tree_util.keystr(path))
    assert np.abs(np.asarray(g_packed["params"]["block_0"]["attention"]["qkv"]["kernel"])).max() > 0


def test_changing_one_sequence_changes_only_its_own_outputs(params):
    ids, sids, pos, labels, cls = PACKED
    r, start = PACKED_AT[1]  # the middle sequence of the first pack
    n = LENGTHS[1]
    changed = ids.at[r, start + 1 : start + n].set((ids[r, start + 1 : start + n] + 5) % VOCAB)
    before = forward(params, *PACKED, max_sequences=MAX_SEQUENCES)
    after = forward(params, changed, sids, pos, labels, cls, max_sequences=MAX_SEQUENCES)
    for j in range(len(LENGTHS)):
        h0, h1 = per_sequence(before[0], PACKED_AT, j), per_sequence(after[0], PACKED_AT, j)
        if j == 1:
            assert np.abs(h0 - h1).max() > 1e-2
        else:
            np.testing.assert_allclose(h1, h0, atol=1e-6, err_msg=f"sequence {j} saw sequence 1")
    seq_loss0, seq_loss1 = np.asarray(before[3][1]), np.asarray(after[3][1])
    others = np.ones_like(seq_loss0, bool)
    others[r, 1] = False
    np.testing.assert_allclose(seq_loss1[others], seq_loss0[others], atol=1e-6)
    assert seq_loss1[r, 1] != seq_loss0[r, 1]


@pytest.mark.parametrize("wrong", ["positions not restarted", "one sequence per row"])
def test_a_wrongly_packed_batch_differs_from_unpacked(params, wrong):
    ids, sids, pos, labels, cls = PACKED
    if wrong == "positions not restarted":
        pos = jnp.broadcast_to(jnp.arange(T, dtype=jnp.int32), ids.shape)
    else:  # the mask of a row is then one block: sequences see each other (cross-contamination)
        sids = (sids > 0).astype(jnp.int32)
    hidden = forward(params, ids, sids, pos, labels, cls, max_sequences=MAX_SEQUENCES)[0]
    alone = forward(params, *ALONE, max_sequences=1)[0]
    diff = [np.abs(per_sequence(hidden, PACKED_AT, j) - per_sequence(alone, ALONE_AT, j)).max() for j in range(7)]
    assert max(diff) > 1e-2  # the regression test would fail on this batch
    if wrong == "positions not restarted":
        assert diff[0] < 1e-5  # the first sequence of a row sits where it would alone, so it still agrees


# ---------------------------------------------------------------------------------------------- robustness
def test_padding_rows_give_finite_outputs_and_gradients(params):
    # the packed rows (the last one half padding) and a row of padding only
    fills = (PAD, 0, 0, -1, -1)  # ids, sequence ids, positions, labels, [CLS] positions
    batch = [jnp.concatenate([a, jnp.full_like(a[:1], fill)]) for a, fill in zip(PACKED, fills, strict=True)]
    hidden, logits, pooled, (loss, seq_loss, count) = forward(params, *batch, max_sequences=MAX_SEQUENCES)
    for x in (hidden, logits, pooled, loss, seq_loss):
        assert np.isfinite(np.asarray(x)).all()
    assert not np.asarray(pooled[-1]).any() and not np.asarray(count[-1]).any()
    for g in jax.tree_util.tree_leaves(loss_grad(params, *batch[:4], max_sequences=MAX_SEQUENCES)):
        assert np.isfinite(np.asarray(g)).all()
    # no target anywhere: a zero loss with zero (not NaN) gradients
    none = jnp.full_like(batch[3], -1)
    assert float(forward(params, *batch[:3], none, batch[4], max_sequences=MAX_SEQUENCES)[3][0]) == 0.0
    for g in jax.tree_util.tree_leaves(loss_grad(params, *batch[:3], none, max_sequences=MAX_SEQUENCES)):
        assert not np.asarray(g).any()


def test_init_creates_every_parameter_and_methods_work_through_apply(params):
    p = params["params"]
    assert p["mlm_head"]["kernel"].shape == (D_MODEL, VOCAB) and "bias" not in p["mlm_head"]
    assert p["position_embedding"].shape == (MAX_LEN, D_MODEL)
    h = jnp.zeros((2, 5, D_MODEL))
    assert model().apply(params, h, method=TransformerEncoder.mlm_logits).shape == (2, 5, VOCAB)


def test_bad_inputs_get_clear_errors(params):
    ids, sids, pos, labels, cls = PACKED
    m = model()
    too_long = jnp.zeros((1, MAX_LEN + 1), jnp.int32)
    with pytest.raises(ValueError, match=f"rows of {MAX_LEN + 1} tokens exceed max_len {MAX_LEN}"):
        m.apply(params, too_long, too_long, too_long)
    with pytest.raises(ValueError, match="d_model 30 is not divisible by heads 4"):
        TransformerEncoder(vocab=8, d_model=30, depth=1, heads=4, max_len=8).init(jax.random.key(0), ids, sids, pos)
    with pytest.raises(ValueError, match="norm must be 'pre' or 'post', got 'mid'"):
        model("mid").init(jax.random.key(0), ids, sids, pos)
    with pytest.raises(ValueError, match=r"sequence_ids has shape \(3, 31\), ids has \(3, 32\)"):
        m.apply(params, ids, sids[:, :-1], pos)
    with pytest.raises(ValueError, match=r"ids must be \[batch, tokens\], got shape \(32,\)"):
        m.apply(params, ids[0], sids[0], pos[0])
    with pytest.raises(ValueError, match="positions must be integers"):
        m.apply(params, ids, sids, pos.astype(jnp.float32))
    with pytest.raises(ValueError, match=r"labels has shape \(3, 31\)"):
        m.apply(params, ids, sids, pos, labels[:, 1:], 4, method=TransformerEncoder.mlm_loss)
    with pytest.raises(ValueError, match="max_sequences must be a positive int, got 0"):
        m.apply(params, ids, sids, pos, labels, 0, method=TransformerEncoder.mlm_loss)
    with pytest.raises(ValueError, match=r"cls_positions must be \[batch, max_sequences\] with batch 3"):
        m.apply(params, jnp.zeros((3, T, D_MODEL)), cls[0], method=TransformerEncoder.pooled)
    with pytest.raises(NotImplementedError, match="unit scaling"):
        model(parametrization=UnitScaled()).init(jax.random.key(0), ids, sids, pos)
