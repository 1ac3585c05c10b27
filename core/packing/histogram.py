"""Histogram packing (Krell et al. 2021): pack sequences of many lengths into rows of `max_sequence_length` tokens.

All three algorithms work on the length histogram (histogram[i] = number of sequences of length i + 1), so their
cost does not grow with the number of sequences, only with the number of distinct lengths.

SPFHP, shortest-pack-first: lengths from longest to shortest; each group of equal-length sequences goes into the
    open pack with the most room left that still fits it (the shortest pack), a group of identical packs splitting
    when only some of them are needed; where nothing fits, a new pack opens. A pack closes when full or when it holds
    `max_sequences_per_pack` sequences.
LPFHP, longest-pack-first: the same sweep, but into the open pack with the least room that fits (best fit), and a
    length may go into a pack several times at once when it fits several times.
NNLSHP: enumerate every multiset of at most `max_sequences_per_pack` lengths that fills a row exactly, and solve the
    non-negative least squares  A x ~ h  (A[l, s] = how often length l + 1 occurs in strategy s), with the residuals
    of lengths below 8 weighted 0.09; round x; leftover sequences go into two-sequence packs [l, L - l] whose second
    slot stays empty where it has no sequence.

Efficiency = real tokens / (packs x max length); speed-up = sequences / packs (one pack costs what one padded
sequence costs); the bound is the speed-up of a perfect packing, 1 / (1 - mean padding fraction).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

METHODS = ("spfhp", "lpfhp", "nnlshp")
Strategy = list[tuple[tuple[int, ...], int]]  # (lengths in one pack, how many such packs)


@dataclass
class PackingResult:
    method: str
    max_sequence_length: int
    max_sequences_per_pack: int
    strategy: Strategy
    num_sequences: int
    num_tokens: int
    num_packs: int
    seconds: float
    histogram: np.ndarray = field(repr=False)

    @property
    def efficiency(self) -> float:
        """Real tokens over token slots in the packs."""
        return self.num_tokens / (self.num_packs * self.max_sequence_length) if self.num_packs else 1.0

    @property
    def speedup(self) -> float:
        """Padded sequences per pack: the throughput gain over padding every sequence to the max length."""
        return self.num_sequences / self.num_packs if self.num_packs else 1.0

    @property
    def speedup_bound(self) -> float:
        return speedup_bound(self.histogram, self.max_sequence_length)

    @property
    def padding_fraction_unpacked(self) -> float:
        return 1.0 - self.num_tokens / (self.num_sequences * self.max_sequence_length) if self.num_sequences else 0.0


def check_histogram(histogram: Sequence[int] | np.ndarray, max_sequence_length: int) -> np.ndarray:
    """The histogram as int64 of length max_sequence_length; clear errors for anything that cannot be packed."""
    if isinstance(max_sequence_length, bool) or not isinstance(max_sequence_length, int | np.integer):
        raise ValueError(f"max_sequence_length={max_sequence_length!r} must be a positive integer")
    if max_sequence_length < 1:
        raise ValueError(f"max_sequence_length={max_sequence_length} must be at least 1")
    h = np.asarray(histogram)
    if h.ndim != 1:
        raise ValueError(f"histogram must be one-dimensional (histogram[i] = count of length i + 1), got {h.shape}")
    if h.dtype.kind not in "iuf" or (h.dtype.kind == "f" and not np.all(np.isfinite(h))):
        raise ValueError(f"histogram entries must be non-negative integers, got dtype {h.dtype}")
    if h.dtype.kind == "f" and np.any(h != np.round(h)):
        i = int(np.flatnonzero(h != np.round(h))[0])
        raise ValueError(f"histogram[{i}] = {h[i]} is not an integer count")
    if np.any(h < 0):
        i = int(np.flatnonzero(h < 0)[0])
        raise ValueError(f"histogram[{i}] = {h[i]} is negative: counts must be >= 0")
    h = h.astype(np.int64)
    if h.size > max_sequence_length and h[max_sequence_length:].any():
        i = int(np.flatnonzero(h[max_sequence_length:])[0]) + max_sequence_length
        raise ValueError(
            f"{h[i]} sequence(s) of length {i + 1} exceed max_sequence_length={max_sequence_length}: "
            "truncate or drop them first"
        )
    out = np.zeros(max_sequence_length, np.int64)
    out[: min(h.size, max_sequence_length)] = h[:max_sequence_length]
    return out


def speedup_bound(histogram: np.ndarray, max_sequence_length: int) -> float:
    """1 / (1 - sum h(l) (1 - l/L) / sum h): the speed-up if packing left no padding at all."""
    h = check_histogram(histogram, max_sequence_length)
    lengths = np.arange(1, max_sequence_length + 1)
    n = h.sum()
    return float(1.0 / (1.0 - (h * (1.0 - lengths / max_sequence_length)).sum() / n)) if n else 1.0


def pack_histogram(
    histogram: Sequence[int] | np.ndarray, max_sequence_length: int, max_sequences_per_pack: int, method: str = "spfhp"
) -> PackingResult:
    """Pack a length histogram with `method` (spfhp, lpfhp or nnlshp). Every input is checked before any work."""
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not known: choose one of {', '.join(METHODS)}")
    h = check_histogram(histogram, max_sequence_length)
    if isinstance(max_sequences_per_pack, bool) or not isinstance(max_sequences_per_pack, int | np.integer):
        raise ValueError(f"max_sequences_per_pack={max_sequences_per_pack!r} must be an integer >= 1")
    if max_sequences_per_pack < 1:
        raise ValueError(f"max_sequences_per_pack={max_sequences_per_pack} must be at least 1")
    limit = int(max_sequences_per_pack)
    start = time.perf_counter()
    if method == "nnlshp":
        strategy = _nnlshp(h, max_sequence_length, limit)
    else:
        strategy = _sweep(h, max_sequence_length, limit, best_fit=method == "lpfhp")
    seconds = time.perf_counter() - start
    lengths = np.arange(1, max_sequence_length + 1)
    return PackingResult(
        method=method,
        max_sequence_length=max_sequence_length,
        max_sequences_per_pack=limit,
        strategy=strategy,
        num_sequences=int(h.sum()),
        num_tokens=int((h * lengths).sum()),
        num_packs=int(sum(c for _, c in strategy)),
        seconds=seconds,
        histogram=h,
    )


def _sweep(h: np.ndarray, L: int, limit: int, best_fit: bool) -> Strategy:
    """SPFHP (best_fit=False) and LPFHP (best_fit=True): one sweep from the longest length to the shortest."""
    open_packs: dict[int, list[list]] = defaultdict(list)  # room left -> stack of [count, lengths]
    closed: Strategy = []

    def add(lengths: tuple[int, ...], count: int, room: int) -> None:
        if count <= 0:
            return
        if room == 0 or len(lengths) == limit:
            closed.append((lengths, count))
        else:
            open_packs[room].append([count, lengths])

    for length in range(L, 0, -1):
        n = int(h[length - 1])
        if best_fit:
            room = length  # least room that fits first
            while n > 0:
                if room > L:  # fits nowhere: new packs, each holding as many copies as fit
                    repeat = max(1, min(L // length, limit, n))
                    add((length,) * repeat, n // repeat, L - repeat * length)
                    n -= (n // repeat) * repeat
                    continue
                if room not in open_packs:
                    room += 1
                    continue
                stack = open_packs[room]
                count, pack = stack.pop()
                repeat = max(1, min(room // length, limit - len(pack), n))
                take = min(count, n // repeat)
                if count > take:
                    stack.append([count - take, pack])
                if not stack:
                    del open_packs[room]
                n -= take * repeat
                add(pack + (length,) * repeat, take, room - repeat * length)
                room = length  # the best fit may have changed
        else:
            room = L  # most room first: the shortest pack
            while n > 0:
                if room < length:  # fits nowhere: a new group of one-sequence packs
                    add((length,), n, L - length)
                    break
                if room not in open_packs:
                    room -= 1
                    continue
                stack = open_packs[room]
                count, pack = stack.pop()
                take = min(count, n)
                if count > take:
                    stack.append([count - take, pack])
                if not stack:
                    del open_packs[room]
                n -= take
                add((*pack, length), take, room - length)
    for room in sorted(open_packs):
        closed += [(pack, count) for count, pack in open_packs[room]]
    return [(tuple(sorted(p)), c) for p, c in closed]


def exact_fill_strategies(L: int, depth: int) -> list[tuple[int, ...]]:
    """Every non-decreasing tuple of at most `depth` lengths >= 1 that sums to exactly L."""
    out: list[tuple[int, ...]] = []

    def extend(prefix: tuple[int, ...], smallest: int, left: int) -> None:
        if len(prefix) == depth - 1:
            if left >= smallest:
                out.append((*prefix, left))
            return
        for nxt in range(smallest, left // 2 + 1):  # nxt <= what remains after it, so the tuple stays sorted
            extend((*prefix, nxt), nxt, left - nxt)
        if left >= smallest:
            out.append((*prefix, left))

    if depth >= 1:
        extend((), 1, L)
    return out


def _nnlshp(h: np.ndarray, L: int, depth: int) -> Strategy:
    strategies = exact_fill_strategies(L, depth)
    A = np.zeros((L, len(strategies)))
    for j, s in enumerate(strategies):
        for length in s:
            A[length - 1, j] += 1
    weight = np.ones(L)
    weight[:8] = 0.09  # short sequences are few tokens: their residual matters less
    x, _ = optimize.nnls(weight[:, None] * A, weight * h, maxiter=50 * A.shape[1])
    counts = np.rint(x).astype(np.int64)
    residual = h - A.astype(np.int64) @ counts
    extra: dict[tuple[int, ...], int] = defaultdict(int)
    for length in np.flatnonzero(residual > 0) + 1:  # leftovers: packs [l, L - l] (or [L])
        pack = (int(length),) if length == L or depth == 1 else tuple(sorted((int(length), L - int(length))))
        extra[pack] += int(residual[length - 1])
    packs: dict[tuple[int, ...], int] = defaultdict(int)
    for s, c in zip(strategies, counts.tolist(), strict=True):
        if c:
            packs[s] += c
    for s, c in extra.items():
        packs[s] += c
    return _drop_surplus(packs, h)


def _drop_surplus(packs: dict[tuple[int, ...], int], h: np.ndarray) -> Strategy:
    """Remove slots for which there is no sequence (the packs keep their number; the slot becomes padding)."""
    have = np.zeros_like(h)
    for s, c in packs.items():
        for length in s:
            have[length - 1] += c
    surplus = have - h
    if np.any(surplus < 0):
        raise AssertionError("NNLSHP left sequences unpacked")  # cannot happen: leftovers were given packs
    packs = dict(packs)
    for length in np.flatnonzero(surplus) + 1:
        need = int(surplus[length - 1])
        while need:  # empty the slot in the shortest strategies first
            s = min((s for s, c in packs.items() if c and length in s), key=lambda s: (len(s), s))
            take = min(need, packs[s])
            packs[s] -= take
            reduced = list(s)
            reduced.remove(int(length))
            if reduced:  # a pack left with nothing in it is no pack at all
                packs[tuple(reduced)] = packs.get(tuple(reduced), 0) + take
            need -= take
    return [(s, c) for s, c in packs.items() if c > 0]


def published_histogram(name: str) -> tuple[np.ndarray, int]:
    """A length histogram published with the paper: `wikipedia_512` (BERT pre-training, L=512) or `squad_1_1_384`
    (SQuAD 1.1 fine-tuning, L=384). Returns (histogram, max_sequence_length). Source and licence in the JSON file."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "data" / "histograms.json").read_text())
    names = [k for k in data if not k.startswith("_")]
    if name not in names:
        raise ValueError(f"no published histogram {name!r}: choose one of {', '.join(names)}")
    h = np.asarray(data[name], np.int64)
    return h, h.size
