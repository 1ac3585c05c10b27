"""Benchmark section "packing": histogram packing against per-sequence first-fit decreasing, and against the paper's
own run times (run by scripts/bench.py)."""

from __future__ import annotations

from core.bench import Comparison, by_size, section


@section("packing")
def bench_packing(size: str) -> list[Comparison]:
    """Histogram packing (SPFHP, LPFHP) against per-sequence first-fit decreasing, the textbook bin-packing peer,
    on the same sequences; and NNLSHP's time against SPFHP's."""
    import numpy as np

    from core.bench import time_call
    from core.packing import pack_histogram, published_histogram

    def first_fit_decreasing(lengths: np.ndarray, L: int, limit: int) -> int:
        rooms: list[int] = []  # room left per open pack (a pack leaves when full or at the limit)
        counts: list[int] = []
        packs = 0
        for x in np.sort(lengths)[::-1].tolist():
            for j, room in enumerate(rooms):
                if room >= x:
                    rooms[j] -= x
                    counts[j] += 1
                    if rooms[j] == 0 or counts[j] == limit:
                        rooms.pop(j)
                        counts.pop(j)
                    break
            else:
                packs += 1
                if L - x > 0 and limit > 1:
                    rooms.append(L - x)
                    counts.append(1)
        return packs

    full, L = published_histogram("squad_1_1_384")
    # the per-sequence peer is quadratic-ish: a random sample of SQuAD's lengths
    n = by_size(size, tiny=500, quick=5_000, full=20_000)
    lengths = np.random.default_rng(0).choice(np.repeat(np.arange(1, L + 1), full), n, replace=False)
    h = np.bincount(lengths - 1, minlength=L)
    t_ffd = time_call(lambda: first_fit_decreasing(lengths, L, 3), repeat=1, min_seconds=0.0, warmup=0)
    packs_ffd = first_fit_decreasing(lengths, L, 3)
    rows = []
    for method in ("spfhp", "lpfhp"):
        t = time_call(lambda m=method: pack_histogram(h, L, 3, m))
        packs = pack_histogram(h, L, 3, method).num_packs
        name = f"{n:,} SQuAD 1.1 lengths, L=384, 3/pack"
        size_note = f"packs: {packs:,} vs {packs_ffd:,}"
        rows.append(
            Comparison("packing", name, method.upper(), "per-sequence first-fit decreasing", t, t_ffd, size_note)
        )
    wiki, wl = published_histogram("wikipedia_512")
    t_spfhp = time_call(lambda: pack_histogram(wiki, wl, 12, "spfhp"))
    rows.append(
        Comparison(
            "packing",
            "Wikipedia (16.3M sequences, L=512, 12/pack)",
            "SPFHP",
            "the paper's SPFHP run (0.02 s)",
            t_spfhp,
            0.02,
        )
    )
    if size == "full":
        t_nnls = time_call(lambda: pack_histogram(wiki, wl, 3, "nnlshp"), repeat=1, min_seconds=0.0, warmup=0)
        rows.append(
            Comparison(
                "packing",
                "Wikipedia (16.3M sequences, L=512, 3/pack)",
                "NNLSHP",
                "the paper's NNLSHP run (28.4 s)",
                t_nnls,
                28.4,
            )
        )
    elif size == "tiny":  # NNLSHP's row at a size it packs in milliseconds: its cost grows with L, not with counts
        short = 64
        t_nnls = time_call(
            lambda: pack_histogram(wiki[:short], short, 3, "nnlshp"), repeat=1, min_seconds=0.0, warmup=0
        )
        rows.append(
            Comparison(
                "packing",
                f"Wikipedia's sequences of at most {short} tokens ({int(wiki[:short].sum()):,}, L={short}, 3/pack)",
                "NNLSHP",
                "the paper's NNLSHP run (28.4 s)",
                t_nnls,
                28.4,
            )
        )
    return rows
