"""What QM1B's labelling checks before any work, without JAX: which molecules a dataset holds (`Selection`, QM1B's
`ELEMENTS`, the molecule `SOURCES`), DFT settings that no molecule could be labelled with (a basis PySCF does not
know or that lacks an element, `basis_aos`; exact ERIs too large for the largest molecule, `check_exact_eri` and
`check_dft`), and which exceptions are the machine's rather than one molecule's (`is_systematic`).

Apart from papers.qm1b.dft and papers.qm1b.generate (which re-export these names) so that the run's config
(papers.qm1b.config) refuses such settings when it is validated, before anything is written, and validating it
(also when a stored run is re-decided) loads PySCF's basis data but never JAX.
"""

from __future__ import annotations

import difflib
import errno
import functools
import sys
import warnings
from collections.abc import Iterable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import numpy as np

ELEMENTS = ("H", "C", "N", "O", "F")  # QM1B's
SOURCES = ("qm9", "nci")

AO_BUCKET = 8  # AO counts are rounded up to this multiple, so molecules of similar size share one compiled SCF
EXACT_ERI_BYTES = 1e9  # the exact path's [n^2, n^2] matrix per conformer: ~130 AOs in float32


@dataclass(frozen=True)
class Selection:
    """Which molecules a dataset holds (every shard of it computes the same selection)."""

    source: str = "qm9"
    min_heavy: int = 9
    max_heavy: int = 11
    max_hydrogens: int = 14
    molecules: int = 100  # how many SMILES pass the filters and are taken, in a seeded random order
    conformers: int = 4  # per molecule
    seed: int = 0

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source={self.source!r} is not one of {SOURCES}")
        if not 1 <= self.min_heavy <= self.max_heavy:
            raise ValueError(f"heavy atoms [{self.min_heavy}, {self.max_heavy}] must satisfy 1 <= min <= max")
        if self.molecules < 1 or self.conformers < 1:
            raise ValueError(f"molecules={self.molecules} and conformers={self.conformers} must be at least 1")


# The OS refusing a resource (is_systematic): memory, disk space, disk quota, file descriptors
RESOURCE_ERRNOS = frozenset({errno.ENOMEM, errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE})


def is_systematic(e: BaseException) -> bool:
    """Whether an exception is the machine's rather than one molecule's: out of memory (MemoryError, XLA's
    RESOURCE_EXHAUSTED), a worker process that died (BrokenProcessPool, e.g. killed by the kernel's OOM killer) or
    the OS refusing a resource (RESOURCE_ERRNOS). Where the labelling code records an exception as the failing
    conformer's result, it lets these through instead: each would recur on the molecules after it, and a molecule
    dropped for it would be marked done and never labelled."""
    if isinstance(e, MemoryError | BrokenProcessPool):
        return True
    if isinstance(e, OSError) and e.errno in RESOURCE_ERRNOS:
        return True
    jax = sys.modules.get("jax")  # XLA's errors exist only once JAX is loaded (this module never loads it)
    return jax is not None and isinstance(e, jax.errors.JaxRuntimeError) and "RESOURCE_EXHAUSTED" in str(e)


def check_exact_eri(n_ao: int, dtype: str = "float32") -> None:
    """Refuse (ValueError) the exact-ERI path for a molecule of `n_ao` AOs whose [n^2, n^2] matrix (AOs padded to
    AO_BUCKET) would pass EXACT_ERI_BYTES per conformer. `papers.qm1b.dft.dispatch` checks every batch; callers that
    know the largest molecule check it before any work."""
    padded = -(-n_ao // AO_BUCKET) * AO_BUCKET
    need = padded**4 * np.dtype(dtype).itemsize
    if need > EXACT_ERI_BYTES:
        raise ValueError(
            f"exact ERIs of {n_ao} AOs need {need / 1e9:.1f} GB per conformer on the device (an [n^2, n^2] matrix "
            f"in {dtype}; the limit is {EXACT_ERI_BYTES / 1e9:.0f} GB): use density_fit=True or a smaller basis"
        )


PROBE_ELEMENTS = ("H", "He", "Li", "Be", "B", "C", "N", "O", "F", "Ne")  # a basis PySCF knows covers one of them


def _aos(basis, element: str) -> int:
    """The AOs `basis` puts on one atom of `element` as the DFT builds it (PySCF's spherical functions); 0 where
    PySCF has none."""
    from pyscf import gto

    try:
        with warnings.catch_warnings():  # PySCF suggests installing basis-set-exchange for a name it does not know
            warnings.simplefilter("ignore")
            return gto.M(atom=f"{element} 0 0 0", basis=basis, spin=None, verbose=0).nao_nr()
    except Exception as e:  # BasisNotFoundError, or whatever a malformed name or basis file raises
        if is_systematic(e):
            raise
        return 0


_named_aos = functools.lru_cache(maxsize=4096)(_aos)  # a named basis: the label command checks every input's


def _closest_bases(basis: str) -> str:
    """' (did you mean ...?)' with PySCF's basis names closest to `basis`, spelled as PySCF's files are; or ''."""
    from pyscf.gto.basis import ALIAS  # keys normalised as PySCF does: lower case, no '-', '_' or ' '

    names = {k: v.removesuffix(".dat") if isinstance(v, str) else k for k, v in ALIAS.items()}
    key = basis.lower().replace("-", "").replace("_", "").replace(" ", "")
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(names[k]) for k in close)}?)" if close else ""


def basis_aos(basis, elements: Iterable[str]) -> dict[str, int]:
    """The AOs PySCF's `basis` (a name, a basis file or an {element: basis} dict) puts on one atom of each of
    `elements`. Raises ValueError naming the basis where PySCF knows no such basis (with its closest names), or the
    first element it has no functions for (no elements: only the basis is checked). Run it before any work: a
    misspelled basis would fail every molecule."""
    count = _named_aos if isinstance(basis, str) else _aos
    if isinstance(basis, str) and not any(count(basis, e) for e in PROBE_ELEMENTS):
        raise ValueError(
            f"basis={basis!r} is not a basis PySCF knows{_closest_bases(basis)}: it has functions for none of H to Ne; "
            "allowed are PySCF's basis names (pyscf.gto.basis.ALIAS, e.g. sto-3g, 6-31g, 6-31g*, cc-pvdz, def2-svp) "
            "and basis files"
        )
    aos = {e: count(basis, e) for e in dict.fromkeys(elements)}
    lacking = [e for e, n in aos.items() if not n]
    if lacking:
        raise ValueError(f"basis={basis!r} has no functions for {lacking[0]} (of the elements {', '.join(aos)})")
    return aos


def check_dft(sel: Selection, dft: dict) -> None:
    """Refuse, before any work, DFT settings (run_dft_batch's keyword arguments) that no molecule of the selection
    could be labelled with, which would otherwise fail every molecule: a basis PySCF does not know or without
    functions for one of QM1B's elements (basis_aos) and, on the exact-ERI path, a basis whose ERIs for the largest
    molecule the selection admits would not fit (check_exact_eri). That molecule's AOs are bounded by max_heavy atoms
    of the heavy element with the most functions and min(max_hydrogens, 2 max_heavy + 2) hydrogens (a neutral closed
    shell of k C, N, O, F atoms has at most 2k + 2, an alkane's)."""
    basis = dft.get("basis", "sto-3g")
    aos = basis_aos(basis, ELEMENTS)
    if dft.get("density_fit", False):
        return
    hydrogens = min(sel.max_hydrogens, 2 * sel.max_heavy + 2)
    largest = sel.max_heavy * max(aos[e] for e in ELEMENTS if e != "H") + hydrogens * aos["H"]
    try:
        check_exact_eri(largest, dft.get("dtype", "float32"))
    except ValueError as e:
        raise ValueError(
            f"basis={basis!r}: the largest molecule the selection admits ({sel.max_heavy} heavy atoms, {hydrogens} H) "
            f"has up to {largest} AOs: {e}"
        ) from None
