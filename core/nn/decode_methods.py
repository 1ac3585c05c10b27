"""Decode-time attention methods as objects: dense attention, SparQ, H2O, a local window, StreamingLLM and Quest, each
a frozen dataclass of its settings with one of each of the things a decode sweep needs of it:

    for_ratio(ratio, L, d, g, *, k, sinks, page, reallocate)
                              the settings whose transfer is the nearest to `ratio` of dense's, or None
    transfer(L, d, g)         elements read or written per KV head and step: the paper's formula
    counted_transfer(L, d, g) the same counted from the traced program of its kernel (core.nn.transfer)
    kernel(q, K, V, length, state) -> (out, transfer, state)
                              its attention (core.nn.attention) in the grouped layout q [..., g, d], K, V [..., S, d]
    step                      its core.nn.decoding step attention (q [B, H, d] grouped over the cache's KV heads)
    init_state(column_sums, length)
                              its per-layer state after a dense prefill (H2O's kept set; None for the others)
    label, settings           how tables name it ("sparq 1/8") and show its settings ("r=8 k=128 local=32")

`DECODE_METHODS` maps each method's `name` to its class, for rebuilding a stored one (papers store a flat record of
every method's settings) and for reading a config's method names. core.nn.attention holds the kernels and states
their maths; this module holds the rules that choose their settings and count what they move. It imports no JAX: the
formulas serve decisions made again from stored results without it; the kernels, steps and counts import it when
called.

Positions: L is the cache length at the step, the current token's position included. `k` counts the cache positions a
step reads besides the current token's: the current key and value are produced by the step itself, so every method
attends to them for free, the convention of the authors' reference (llm-inference-research `ann_attention.py`: k + 1
positions, the local window local_k + 1), applied to every method alike; so each kernel is given k + 1 positions (SparQ
and H2O a recent window of local_k + 1), except Quest, whose k is the positions of its selected pages, the current
page among them.

Transfer, elements per KV head and step with g query heads sharing the KV head (the paper's formulas, Section 3 and
Appendix G, per KV head): q and the outputs, 2gd, plus what the method reads of the cache:
    Dense                 K and V of every position: 2Ld
    SparQ                 K[:, i1] (L r; a second, transposed copy of K makes these rows contiguous), K and V of its
                          k positions (2kd), the new key written to the transposed copy (d), and with step 5 the
                          running mean of V read and updated (2d)
    H2O                   K and V of its k positions (2kd) and their scores read and written (2k)
    Local, Streaming      K and V of its k positions (2kd)
    Quest                 every page's key min and max (2d ceil(L / page)) and K and V of its selected pages (2kd)

Budgets: the target is `ratio` x the dense transfer at cache length L; a method takes the settings whose transfer is
the nearest to it, and none where the smallest it allows moves more than 1.25 x the target. SparQ keeps k fixed (the
paper's k = 128, Table G1) with its local window k/4 and takes r from the budget, as the paper's Section 5.4 does
("setting k = 128 and tuning r"); the others take k from the budget: H2O as the paper's baseline (at least 4 positions,
its recent window k/4), the local window and StreamingLLM at least `sinks` + 1 positions (StreamingLLM's smallest
window, so the two windowed baselines share a floor), Quest whole pages (at least one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple


class FixedSettings(NamedTuple):
    """The settings a budget does not choose: SparQ's k and its step 5, StreamingLLM's sinks (the windows' floor),
    Quest's page size."""

    k: int
    sinks: int
    page: int
    reallocate: bool


@dataclass(frozen=True, kw_only=True)
class DecodeMethod:
    """What every method has: `name` (its class's, how a stored record names it) and `ratio`, the fraction of the
    dense transfer its budget was set for (1.0 where it was not set from a budget), with the interface of the module
    docstring. A subclass gives its settings, `budgeted`, `cache_transfer`, `kernel` and `settings`."""

    name: ClassVar[str]
    needs_column_sums: ClassVar[bool] = False  # whether `init_state` reads the prefill's accumulated attention
    ratio: float = 1.0

    @classmethod
    def for_ratio(
        cls, ratio: float, L: int, d: int, g: int = 1, *, k: int = 128, sinks: int = 4, page: int = 16,
        reallocate: bool = True,
    ) -> DecodeMethod | None:  # fmt: skip
        """The settings that move the nearest to `ratio` of the dense transfer at cache length L (head dimension d,
        g query heads per KV head), or None where the smallest budget moves more than 1.25x the target (module
        docstring, "Budgets"). `k`, `sinks`, `page`, `reallocate`: the settings the budget does not choose (each
        method reads those it has)."""
        target = ratio * Dense().transfer(L, d, g)
        method = cls.budgeted(target, ratio, L, d, g, FixedSettings(k, sinks, page, reallocate))
        return method if method.transfer(L, d, g) <= 1.25 * target else None

    @classmethod
    def budgeted(cls, target: float, ratio: float, L: int, d: int, g: int, fixed: FixedSettings) -> DecodeMethod:
        """The method's settings nearest to `target` elements per KV head and step (whether within reach or not)."""
        raise NotImplementedError

    def transfer(self, L: int, d: int, g: int) -> int:
        """Elements read or written per KV head and step at cache length L: q and the outputs (2gd) and what the
        method moves of the cache (module docstring, "Transfer")."""
        return 2 * g * d + self.cache_transfer(L, d)

    def cache_transfer(self, L: int, d: int) -> int:
        """What the method reads and writes of the cache per KV head and step."""
        raise NotImplementedError

    def kernel(self, q, K, V, length, state) -> tuple[Any, Any, Any]:
        """The method's attention for q [..., g, d] over K, V [..., S, d] with `length` valid positions: (out
        [..., g, d], transfer per KV head, the next state)."""
        raise NotImplementedError

    def step(self, layer: int, q, K, V, length, state) -> tuple[Any, Any, Any]:
        """The core.nn.decoding step attention: q [B, H, d] grouped as [B, Hkv, g, d] over the cache's KV heads
        (K, V [B, Hkv, S, d]; g = 1 without grouped-query attention), the kernel run on the groups."""
        (B, H, d), Hkv = q.shape, K.shape[1]
        out, transfer, state = self.kernel(q.reshape(B, Hkv, H // Hkv, d), K, V, length, state)
        return out.reshape(B, H, d), transfer, state

    def init_state(self, column_sums, length) -> tuple | None:
        """The per-layer state of the step after a dense prefill whose per-layer accumulated attention is
        `column_sums` (core.nn.decoding.prefill(column_sums=True); None unless `needs_column_sums`)."""
        return None

    def counted_transfer(self, L: int, d: int, g: int) -> int | None:
        """Elements the kernel reads and writes per KV head and step at cache length L, counted from its traced
        program (core.nn.transfer): q, what it reads of K and V, its outputs. The current token's key and value count
        among the positions read (the analytic `transfer` treats them as free). None where the count would not be
        the method's (H2O)."""
        import jax.numpy as jnp

        from core.nn.transfer import elements_moved

        def fn(q, K, V):
            return self.step(0, q, K, V, L, None)[0]

        return elements_moved(fn, jnp.zeros((1, g, d)), jnp.zeros((1, 1, L, d)), jnp.zeros((1, 1, L, d)))

    @property
    def label(self) -> str:
        """How tables and metrics name the method: its name and ratio ("sparq 1/8")."""
        return f"{self.name} 1/{round(1 / self.ratio)}"

    @property
    def settings(self) -> str:
        """The method's settings as a table shows them."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Dense(DecodeMethod):
    """Exact attention over every valid position: softmax(q K^T / sqrt(d)) V (core.nn.attention.dense_attention_gqa);
    the default step of core.nn.decoding."""

    name: ClassVar[str] = "dense"

    @classmethod
    def for_ratio(cls, ratio: float, L: int, d: int, g: int = 1, **fixed) -> Dense:
        """Dense attention whatever the ratio: it is the budget every other method's ratio is a fraction of."""
        return cls()

    def cache_transfer(self, L: int, d: int) -> int:
        return 2 * L * d

    def kernel(self, q, K, V, length, state):
        from core.nn.attention import dense_attention_gqa

        return (*dense_attention_gqa(q, K, V, length), state)

    @property
    def label(self) -> str:
        return "dense"

    @property
    def settings(self) -> str:
        return "-"


@dataclass(frozen=True, kw_only=True)
class SparQ(DecodeMethod):
    """SparQ (core.nn.attention.sparq_attention_gqa): the r largest components of q pick K's columns for approximate
    scores, which pick k positions (the last `local_k` always among them) for exact attention; `reallocate`: step 5,
    the mean-value reallocation, which the paper omits for grouped-query models (Section 4)."""

    name: ClassVar[str] = "sparq"
    r: int
    k: int
    local_k: int = 0
    reallocate: bool = True

    @classmethod
    def budgeted(cls, target, ratio, L, d, g, fixed):
        one = cls(ratio=ratio, r=1, k=fixed.k, local_k=fixed.k // 4, reallocate=fixed.reallocate)
        r = min(d, max(1, round((target - one.transfer(L, d, g) + L) / L)))  # each component of r reads L elements
        return cls(ratio=ratio, r=r, k=fixed.k, local_k=fixed.k // 4, reallocate=fixed.reallocate)

    def cache_transfer(self, L: int, d: int) -> int:
        return L * self.r + 2 * self.k * d + d + (2 * d if self.reallocate else 0)

    def kernel(self, q, K, V, length, state):
        from core.nn.attention import sparq_attention_gqa

        out, transfer = sparq_attention_gqa(
            q, K, V, r=self.r, k=self.k + 1, local_k=self.local_k + 1, length=length, reallocate=self.reallocate
        )
        return out, transfer, state

    @property
    def settings(self) -> str:
        return f"r={self.r} k={self.k} local={self.local_k}" + ("" if self.reallocate else " (no step 5)")


@dataclass(frozen=True, kw_only=True)
class H2O(DecodeMethod):
    """H2O (core.nn.attention.h2o_attention_gqa): a cache of the k positions with the most accumulated attention,
    the most recent `local_k` always kept, evicting one position per step; its state starts from the dense prefill's
    accumulated attention."""

    name: ClassVar[str] = "h2o"
    needs_column_sums: ClassVar[bool] = True
    k: int
    local_k: int = 0

    @classmethod
    def budgeted(cls, target, ratio, L, d, g, fixed):
        n = max(4, round((target - 2 * g * d) / (2 * d + 2)))
        return cls(ratio=ratio, k=n, local_k=n // 4)

    def cache_transfer(self, L: int, d: int) -> int:
        return 2 * self.k * d + 2 * self.k

    def kernel(self, q, K, V, length, state):
        from core.nn.attention import h2o_attention_gqa

        return h2o_attention_gqa(q, K, V, state, k=self.k + 1, local_k=self.local_k + 1, length=length)

    def init_state(self, column_sums, length) -> tuple:
        from core.nn.attention import h2o_init_scores

        return tuple(h2o_init_scores(s, length, k=self.k + 1, local_k=self.local_k + 1) for s in column_sums)

    def counted_transfer(self, L: int, d: int, g: int) -> None:
        """None: H2O's kernel is a masked attention over every position (the kept set is a mask, not a gather), so
        its count would be dense's."""
        return None

    @property
    def settings(self) -> str:
        return f"k={self.k} recent={self.local_k}"


def whole_pages(n: int, page: int) -> int:
    """n positions rounded up to whole pages of `page` (Quest splits the cache into pages)."""
    return -(-n // page) * page


def _window(target: float, d: int, g: int, sinks: int) -> int:
    """The positions of a window (with or without sinks) whose K and V reads are the nearest to `target`."""
    return max(sinks + 1, round((target - 2 * g * d) / (2 * d)))


@dataclass(frozen=True, kw_only=True)
class Local(DecodeMethod):
    """Attention over the last k valid positions only (core.nn.attention.local_attention_gqa)."""

    name: ClassVar[str] = "local"
    k: int

    @classmethod
    def budgeted(cls, target, ratio, L, d, g, fixed):
        return cls(ratio=ratio, k=_window(target, d, g, fixed.sinks))

    def cache_transfer(self, L: int, d: int) -> int:
        return 2 * self.k * d

    def kernel(self, q, K, V, length, state):
        from core.nn.attention import local_attention_gqa

        return (*local_attention_gqa(q, K, V, k=self.k + 1, length=length), state)

    @property
    def settings(self) -> str:
        return f"k={self.k}"


@dataclass(frozen=True, kw_only=True)
class Streaming(DecodeMethod):
    """StreamingLLM (core.nn.attention.streaming_attention_gqa): the first `sinks` valid positions and the last
    k - sinks."""

    name: ClassVar[str] = "streaming"
    k: int
    sinks: int = 4

    @classmethod
    def budgeted(cls, target, ratio, L, d, g, fixed):
        return cls(ratio=ratio, k=_window(target, d, g, fixed.sinks), sinks=fixed.sinks)

    def cache_transfer(self, L: int, d: int) -> int:
        return 2 * self.k * d

    def kernel(self, q, K, V, length, state):
        from core.nn.attention import streaming_attention_gqa

        return (*streaming_attention_gqa(q, K, V, k=self.k + 1, sinks=self.sinks, length=length), state)

    @property
    def settings(self) -> str:
        return f"k={self.k} sinks={self.sinks}"


@dataclass(frozen=True, kw_only=True)
class Quest(DecodeMethod):
    """Quest (core.nn.attention.quest_attention_gqa): the k/page pages of `page` positions with the highest bound on
    q . K from each page's key min and max, the newest page always among them."""

    name: ClassVar[str] = "quest"
    k: int
    page: int = 16

    @classmethod
    def budgeted(cls, target, ratio, L, d, g, fixed):
        page = fixed.page
        pages = max(1, round((target - 2 * g * d - 2 * d * math.ceil(L / page)) / (2 * d * page)))
        return cls(ratio=ratio, k=pages * page, page=page)

    def cache_transfer(self, L: int, d: int) -> int:
        return 2 * d * math.ceil(L / self.page) + 2 * self.k * d

    def kernel(self, q, K, V, length, state):
        from core.nn.attention import quest_attention_gqa

        return (*quest_attention_gqa(q, K, V, k=self.k, page=self.page, length=length), state)

    def counted_transfer(self, L: int, d: int, g: int) -> int:
        """Counted given the page bounds (core.nn.attention.quest_attention_from_bounds), as a kernel that keeps them
        up to date as keys are written runs it, over a cache of whole pages."""
        import jax.numpy as jnp

        from core.nn.attention import quest_attention_from_bounds
        from core.nn.transfer import elements_moved

        S = whole_pages(L, self.page)
        K, bounds = jnp.zeros((1, 1, S, d)), jnp.zeros((1, 1, S // self.page, d))

        def fn(q, K, V, lo, hi):
            grouped = q.reshape(1, 1, g, d)
            return quest_attention_from_bounds(grouped, K, V, lo, hi, k=self.k, page=self.page, length=L)[0]

        return elements_moved(fn, jnp.zeros((1, g, d)), K, K, bounds, bounds)

    @property
    def settings(self) -> str:
        return f"k={self.k} ({self.k // self.page} pages of {self.page})"


DECODE_METHODS: dict[str, type[DecodeMethod]] = {m.name: m for m in (Dense, SparQ, H2O, Local, Streaming, Quest)}
