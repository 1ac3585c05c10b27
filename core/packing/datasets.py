"""Packing real datasets: from sequences to packs (each sequence used exactly once) and to the padded arrays a packed
model reads (token ids, per-token sequence ids, positions restarting per sequence)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from core.packing.histogram import PackingResult, pack_histogram


def lengths_histogram(lengths: Sequence[int] | np.ndarray, max_sequence_length: int) -> np.ndarray:
    """histogram[i] = number of sequences of length i + 1; clear errors for empty or too long sequences."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and lengths.min() < 1:
        i = int(np.argmin(lengths))
        raise ValueError(f"sequence {i} is empty (length {lengths[i]}): every sequence needs at least one token")
    if lengths.size and lengths.max() > max_sequence_length:
        i = int(np.argmax(lengths))
        raise ValueError(
            f"sequence {i} has length {lengths[i]} > max_sequence_length={max_sequence_length}: truncate or drop it"
        )
    return np.bincount(lengths - 1, minlength=max_sequence_length)[:max_sequence_length]


def pack_sequences(
    lengths: Sequence[int] | np.ndarray,
    max_sequence_length: int,
    max_sequences_per_pack: int,
    method: str = "spfhp",
    seed: int | None = 0,
) -> tuple[list[list[int]], PackingResult]:
    """Packs of sequence indices, following the histogram strategy of `method`.

    Sequences of equal length are interchangeable to the strategy; which one goes into which pack is drawn with
    `seed` (None keeps the input order). Returns (packs, result); every index appears in exactly one pack.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    hist = lengths_histogram(lengths, max_sequence_length)
    result = pack_histogram(hist, max_sequence_length, max_sequences_per_pack, method)
    order = np.arange(lengths.size)
    if seed is not None:
        order = np.random.default_rng(seed).permutation(lengths.size)
    buckets: dict[int, list[int]] = defaultdict(list)
    for i in order[::-1].tolist():  # pop() from the end returns them in `order`
        buckets[int(lengths[i])].append(i)
    packs = []
    for strategy, count in result.strategy:
        for _ in range(count):
            packs.append([buckets[length].pop() for length in strategy])
    left = sum(len(b) for b in buckets.values())
    if left:
        raise AssertionError(f"{left} sequences were not packed")  # the strategies reproduce the histogram
    return packs, result


def packed_arrays(
    sequences: Sequence[np.ndarray], packs: Sequence[Sequence[int]], max_sequence_length: int, pad_id: int = 0
) -> dict[str, np.ndarray]:
    """The arrays of a packed batch, one row per pack:

    ids [P, L]            the tokens of the pack's sequences, one after another, then `pad_id`;
    sequence_ids [P, L]   1, 2, ... for the first, second, ... sequence of the row; 0 for padding;
    positions [P, L]      the position of each token within its own sequence (restarting at 0);
    starts [P, S]         the index of each sequence's first token in the row, -1 for no sequence (S = most
                          sequences in any pack);
    index [P, S]          which input sequence sits there, -1 for none.
    """
    rows, width = len(packs), max(1, max((len(p) for p in packs), default=1))
    ids = np.full((rows, max_sequence_length), pad_id, np.int32)
    seq = np.zeros((rows, max_sequence_length), np.int32)
    pos = np.zeros((rows, max_sequence_length), np.int32)
    starts = np.full((rows, width), -1, np.int32)
    index = np.full((rows, width), -1, np.int32)
    for r, pack in enumerate(packs):
        at = 0
        for j, i in enumerate(pack):
            s = np.asarray(sequences[i])
            if at + s.size > max_sequence_length:
                raise ValueError(f"pack {r} holds {at + s.size} tokens > max_sequence_length={max_sequence_length}")
            ids[r, at : at + s.size] = s
            seq[r, at : at + s.size] = j + 1
            pos[r, at : at + s.size] = np.arange(s.size)
            starts[r, j], index[r, j] = at, i
            at += s.size
    return {"ids": ids, "sequence_ids": seq, "positions": pos, "starts": starts, "index": index}
