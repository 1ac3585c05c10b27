"""Knowledge-graph datasets: triples (head, relation, tail) as integer ids, with the names they came from.

`load_builtin(name)` reads the vendored Nations, Kinships and UMLS (papers/bess/data, from the pykeen wheel);
`load_triples(train, valid, test)` reads a user's TSV files of names (or of integer ids, `ids=True`), so that larger
graphs (ogbl-wikikg2, WikiKG90Mv2) can be used by anyone who has them. Entity and relation ids are assigned from
the training split first (sorted names), then any name new in valid/test would be an error: a triple naming an
entity or relation the model never trained on cannot be scored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
BUILTIN = ("nations", "kinships", "umls")
SPLITS = ("train", "valid", "test")


class KGError(ValueError):
    """Bad knowledge-graph input (unknown names, empty splits, malformed lines)."""


@dataclass(frozen=True)
class KGDataset:
    name: str
    train: np.ndarray  # [n, 3] int64 (head, relation, tail)
    valid: np.ndarray
    test: np.ndarray
    entities: list[str]  # id -> name
    relations: list[str]

    def __post_init__(self) -> None:
        for split in SPLITS:
            t = getattr(self, split)
            if t.ndim != 2 or t.shape[1] != 3:
                raise KGError(f"{self.name}: the {split} split must be [n, 3] triples, got shape {t.shape}")
            if len(t) == 0:
                raise KGError(f"{self.name}: the {split} split is empty")
            bad = (t[:, [0, 2]] < 0) | (t[:, [0, 2]] >= self.num_entities)
            if bad.any() or (t[:, 1] < 0).any() or (t[:, 1] >= self.num_relations).any():
                raise KGError(
                    f"{self.name}: the {split} split has ids outside {self.num_entities} entities / "
                    f"{self.num_relations} relations"
                )

    @property
    def num_entities(self) -> int:
        return len(self.entities)

    @property
    def num_relations(self) -> int:
        return len(self.relations)

    def all_triples(self) -> np.ndarray:
        return np.concatenate([self.train, self.valid, self.test])


def _read(path: Path) -> list[tuple[str, str, str]]:
    if not path.is_file():
        raise FileNotFoundError(f"no triple file {path}")
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3:
            raise KGError(f"{path}:{number}: expected 3 tab-separated fields (head, relation, tail), got {len(parts)}")
        rows.append((parts[0], parts[1], parts[2]))
    return rows


def load_triples(
    train: str | os.PathLike, valid: str | os.PathLike, test: str | os.PathLike, *, name: str = "", ids: bool = False
) -> KGDataset:
    """Triples from three TSV files (head<TAB>relation<TAB>tail). With `ids=True` the fields are integer ids
    (entities 0..max, relations 0..max); else names, numbered in sorted order of the training split."""
    rows = {split: _read(Path(p)) for split, p in zip(SPLITS, (train, valid, test), strict=True)}
    for split, r in rows.items():
        if not r:
            raise KGError(f"the {split} split ({[train, valid, test][SPLITS.index(split)]}) has no triples")
    if ids:
        try:
            arrays = {s: np.array(r, dtype=np.int64) for s, r in rows.items()}
        except ValueError as e:
            raise KGError(f"ids=True but a field is not an integer: {e}") from None
        every = np.concatenate(list(arrays.values()))
        n_ent = int(every[:, [0, 2]].max()) + 1
        n_rel = int(every[:, 1].max()) + 1
        return KGDataset(
            name or Path(train).parent.name,
            arrays["train"],
            arrays["valid"],
            arrays["test"],
            [str(i) for i in range(n_ent)],
            [str(i) for i in range(n_rel)],
        )
    entities = sorted({h for h, _, _ in rows["train"]} | {t for _, _, t in rows["train"]})
    relations = sorted({r for _, r, _ in rows["train"]})
    ent_id = {e: i for i, e in enumerate(entities)}
    rel_id = {r: i for i, r in enumerate(relations)}
    arrays = {}
    for split, r in rows.items():
        try:
            arrays[split] = np.array([(ent_id[h], rel_id[rel], ent_id[t]) for h, rel, t in r], np.int64)
        except KeyError as e:
            raise KGError(
                f"the {split} split names {e.args[0]!r}, which is not an entity or relation of the training split"
            ) from None
    return KGDataset(
        name or Path(train).parent.name, arrays["train"], arrays["valid"], arrays["test"], entities, relations
    )


def load_builtin(name: str) -> KGDataset:
    """Nations, Kinships or UMLS, as shipped in the pykeen wheel (papers/bess/data/SOURCE.md)."""
    if name not in BUILTIN:
        raise KGError(f"unknown dataset {name!r}; built in: {', '.join(BUILTIN)} (or load_triples for your own)")
    d = DATA / name
    return load_triples(d / "train.txt", d / "valid.txt", d / "test.txt", name=name)
