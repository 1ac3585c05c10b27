"""Benchmark section "qm1b": labelling conformers with our generator's DFT against PySCF at equal or better accuracy
(run by scripts/bench.py).

Accuracy first. Every label, ours and PySCF's, is compared with one tight reference computed in the same run, not
timed and never cached: PySCF converged by the stopping rule of the generator's validation rows
(papers.qm1b.run.REFERENCE_CONV_TOL and _GRAD: an energy change below 1e-12 Hartree and an orbital gradient
below 1e-8, tighter than the issue's conv_tol 1e-11). Against it each side reports the largest and the median
|energy| and |gap| error (meV). PySCF runs at:

- (a) our stopping criterion. Our SCF stops once the orbital gradient, the largest element of X^T (F D S - S D F) X
  in the orthonormal basis X = S^(-1/2), is below FINAL_GRADIENT = 1e-4 (papers.qm1b.dft.scf.stop_rule). PySCF's
  `conv_tol_grad` bounds |g|, the 2-norm of g = 2 C_vir^T F C_occ (`pyscf.scf.hf.get_grad`). In the orbital basis
  the commutator is [[0, -G^T], [G, 0]] with G = g as a matrix, so each of its elements in any orthonormal basis is
  at most its spectral norm, the largest singular value of G, which is at most |g| (tested on PySCF's own
  iterations): `conv_tol_grad = 1e-4` makes PySCF converge at least as far as our criterion asks, the same number
  with no conversion factor; the reverse bound is loose (|g| up to sqrt(n (n - 1) / 2) times our element, ~40x at
  60 AOs). The energy-change tolerance is 1 Hartree, so that only the gradient decides (NOT_BINDING).
- (b) PySCF's default tolerance: conv_tol 1e-9, conv_tol_grad sqrt(conv_tol) = 3.2e-5.
- (ladder) the loosest conv_tol_grad of a half-decade ladder (1e-2 to 1e-6, energy tolerance not binding) whose
  largest and median |energy| and |gap| errors are all no worse than ours, searched from (a): if (a) is at least as
  accurate as ours, looser settings are tried until one is not (PySCF is not made to work for accuracy our labels
  do not have); if (a) is less accurate, tighter ones until one is as accurate (loosest_as_accurate). Timed when it
  is not (a).

The headline is the speed-up against the fastest (median of rounds) of these timed settings whose four error
statistics are all no worse than ours: the speed-up at equal or better accuracy, the least favourable to us among
them. If none is as accurate as ours, no row is the headline.

Timing, like for like: the same conformers (QM9 molecules of QM1B's 9 heavy atoms, seeded ETKDG conformers), the
same method (b3lyp5, STO-3G, grid level 0, MINAO guess, DIIS over 9: QM1B's, so "PySCF's default" means its default
convergence tolerance), from atom strings to labels with all host work included (integrals, grids, guesses; our
float64 finish), both on all the machine's cores, both warmed, the same statistic (median of interleaved rounds,
core.bench.time_rounds):

- ours: papers.qm1b.dft.pipeline.Labeller as the generator runs it: worker processes (one per core, one thread
  each) prepare the next batch's integrals while the float32 SCF of the current batch runs under JAX (XLA's own
  threads), batches of the generator's size across molecules sorted by size, the SCF stopping by stop_rule;
- PySCF: dft.RKS in one single-threaded process per core, a pool over the conformers. (One process with a thread
  per core, PySCF's OpenMP, was 1.35x slower on this machine on 2026-11-25, 1.329 against 0.985 s per conformer, and
  is no longer timed.)

Warm-up: the untimed first pass of every side gives its accuracy (and compiles our SCF, starts PySCF's processes);
time_rounds' own untimed first call follows, then the rounds. Density fitting is no longer benchmarked here: its
labels need PySCF's density_fit() as the peer and a tight fitted reference, doubling a run that must fit ~25
minutes, and at STO-3G it was slower than our exact path (0.889 against 0.706 s per conformer on 2026-11-25); it is
tested against PySCF's fitted labels in tests/papers/qm1b/test_dft.py.
"""

from __future__ import annotations

import inspect
import multiprocessing
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.bench import Comparison, by_size, section
from core.data.molecules import HARTREE_EV

PYSCF_DEFAULT_CONV_TOL = 1e-9  # pyscf.scf.hf.SCF.conv_tol; conv_tol_grad defaults to its square root
NOT_BINDING = 1.0  # Hartree: an energy-change tolerance that never decides, so the orbital gradient alone stops PySCF
LADDER_STEPS = range(4, -5, -1)  # conv_tol_grad = FINAL_GRADIENT * 10^(k / 2): 1e-2 (k = 4) ... 1e-6 (k = -4)
STATS = ("energy_max", "energy_median", "gap_max", "gap_median")  # meV against the tight reference


@dataclass(frozen=True)
class Setting:
    """PySCF's stopping rule: energy change below `conv_tol` (Hartree) and |g| below `conv_tol_grad` (PySCF's
    sqrt(conv_tol) when None)."""

    conv_tol: float
    conv_tol_grad: float | None = None

    def __str__(self) -> str:
        grad = self.conv_tol_grad if self.conv_tol_grad is not None else self.conv_tol**0.5
        return f"conv_tol {self.conv_tol:.2g}, conv_tol_grad {grad:.2g}"


DEFAULT = Setting(PYSCF_DEFAULT_CONV_TOL)  # (b)


def gradient_setting(conv_tol_grad: float) -> Setting:
    """PySCF stopping on the orbital gradient alone."""
    return Setting(NOT_BINDING, conv_tol_grad)


def pyscf_rks(atom: str, setting: Setting):
    """PySCF's restricted Kohn-Sham at QM1B's settings, stopping by `setting` (not yet run)."""
    from pyscf import dft, gto

    mol = gto.M(atom=atom, basis="sto-3g", unit="Angstrom", verbose=0)
    mf = dft.RKS(mol, xc="b3lyp5")
    mf.grids.level, mf.diis_space, mf.init_guess = 0, 9, "minao"  # QM1B's (papers/qm1b/REFERENCES.md [6])
    mf.conv_tol, mf.conv_tol_grad = setting.conv_tol, setting.conv_tol_grad
    return mf


def pyscf_label(atom: str, setting: Setting) -> tuple[float, float, int, bool]:
    """PySCF's label of one conformer: (energy in Hartree, HOMO-LUMO gap in eV, cycles, converged). `cycles` is
    PySCF's count, without its final check step (conv_check: one more Fock build and diagonalisation)."""
    mf = pyscf_rks(atom, setting)
    energy = float(mf.kernel())
    n = mf.mol.nelectron // 2
    return energy, float((mf.mo_energy[n] - mf.mo_energy[n - 1]) * HARTREE_EV), int(mf.cycles), bool(mf.converged)


def errors(labels: Sequence[Sequence[float]], reference: Sequence[Sequence[float]]) -> dict[str, float]:
    """The largest and the median |energy| and |gap| error (meV) of `labels` against `reference`, both one
    (energy in Hartree, gap in eV, ...) per conformer, in the same order."""
    if len(labels) != len(reference) or not labels:
        raise ValueError(f"errors: {len(labels)} labels against {len(reference)} reference labels")
    energy = [abs(x[0] - r[0]) * HARTREE_EV * 1e3 for x, r in zip(labels, reference, strict=True)]
    gap = [abs(x[1] - r[1]) * 1e3 for x, r in zip(labels, reference, strict=True)]
    return {
        "energy_max": max(energy),
        "energy_median": statistics.median(energy),
        "gap_max": max(gap),
        "gap_median": statistics.median(gap),
    }


def as_accurate(peer: dict[str, float], ours: dict[str, float]) -> bool:
    """Whether every error statistic of `peer` is no worse than ours."""
    return all(peer[k] <= ours[k] for k in STATS)


def loosest_as_accurate(
    ours: dict[str, float], accuracy_at: Callable[[float], dict[str, float]], ladder: Sequence[float], start: int
) -> float | None:
    """The loosest conv_tol_grad of `ladder` (loosest first) whose accuracy (`accuracy_at(g)`: errors) is no worse
    than `ours`, searched from ladder[start]: looser while they stay as accurate, else tighter until one is; None if
    even the tightest is less accurate. A tighter tolerance stops later on the same iterations, so the search assumes
    the errors do not grow as the tolerance tightens (it stops at the first setting that breaks the pattern)."""
    if as_accurate(accuracy_at(ladder[start]), ours):
        i = start
        while i > 0 and as_accurate(accuracy_at(ladder[i - 1]), ours):
            i -= 1
        return ladder[i]
    return next((g for g in ladder[start + 1 :] if as_accurate(accuracy_at(g), ours)), None)


def conformers(molecules: int, count: int, heavy: int = 9) -> list[str]:
    """Atom strings of `count` seeded ETKDG conformers of each of the first `molecules` QM9 molecules of `heavy` heavy
    atoms (in the generator's seeded order) that ETKDG embeds `count` times; a rigid molecule it cannot (e.g. a cage
    such as CC1C2OC3C2OCC13) is skipped, as the generator drops it."""
    from core.data.molecules import MoleculeError, embed_conformers
    from papers.qm1b.generate import Selection, atom_string, conformer_seed, select_molecules

    sel = Selection(min_heavy=heavy, max_heavy=heavy, molecules=2 * molecules, conformers=count, seed=7)
    atoms, taken = [], 0
    for index, smiles in select_molecules(sel)[0]:
        try:
            elements, positions = embed_conformers(smiles, count, conformer_seed(sel, index))
        except MoleculeError:
            continue
        atoms += [atom_string(elements, p) for p in positions]
        taken += 1
        if taken == molecules:
            return atoms
    raise RuntimeError(f"only {taken} of {2 * molecules} QM9 molecules of {heavy} heavy atoms embed {count} times")


def _pyscf_pass(pool, atoms: list[str], setting: Setting) -> list[tuple[float, float, int, bool]]:
    """PySCF's labels of every conformer by the process pool; a conformer that did not converge stops the benchmark."""
    labels = pool.starmap(pyscf_label, [(a, setting) for a in atoms], chunksize=1)
    failed = [i for i, label in enumerate(labels) if not label[3]]
    if failed:
        raise RuntimeError(f"PySCF at {setting} did not converge on conformers {failed} of {len(atoms)}")
    return labels


def measure(atoms: list[str], *, repeat: int) -> dict:
    """Time ours and PySCF's settings on `atoms` and measure their accuracy against the tight reference (module
    docstring). Returns {"sides": {role: {"setting", "seconds" (per conformer, one per round), "errors", "steps"}},
    "headline": the role of the headline setting or None, "probed": {conv_tol_grad: errors} of the ladder settings
    tried, "reference": the reference's stopping rule, "conformers", "cores", "batch", "repeat"}. Roles: "ours",
    "matched" (a), "default" (b), and "ladder" when the ladder's setting is not (a)."""
    from core.bench import time_rounds
    from papers.qm1b.dft.pipeline import Labeller, single_threaded, usable_cpus
    from papers.qm1b.dft.scf import FINAL_GRADIENT
    from papers.qm1b.generate import generate_shard
    from papers.qm1b.run import REFERENCE_CONV_TOL, REFERENCE_CONV_TOL_GRAD

    n = usable_cpus()
    batch = inspect.signature(generate_shard).parameters["batch_conformers"].default  # the generator's batches
    order = sorted(range(len(atoms)), key=lambda i: atoms[i].count(";"))  # by size, as the generator batches
    batches = [[atoms[i] for i in order[k : k + batch]] for k in range(0, len(order), batch)]
    ladder = [FINAL_GRADIENT * 10 ** (k / 2) for k in LADDER_STEPS]
    matched, tight = gradient_setting(FINAL_GRADIENT), Setting(REFERENCE_CONV_TOL, REFERENCE_CONV_TOL_GRAD)
    context = multiprocessing.get_context("spawn")
    with Labeller(workers=n) as labeller, context.Pool(n, initializer=single_threaded) as pool:

        def ours() -> list[dict]:
            flat = [r for b in labeller.map(batches) for r in b]
            failed = [r for r in flat if isinstance(r, Exception)]
            if failed:
                raise RuntimeError(f"our labeller failed on {len(failed)} conformers") from failed[0]
            labels: list[dict] = [None] * len(atoms)
            for k, i in enumerate(order):
                labels[i] = flat[k]
            return labels

        def pyscf(setting: Setting) -> Callable[[], list]:
            return lambda: _pyscf_pass(pool, atoms, setting)

        # untimed first passes: the reference, then each side's accuracy (which warms it)
        reference = _pyscf_pass(pool, atoms, tight)
        ours_labels = ours()
        first = {}  # Setting -> PySCF's labels

        def labels_at(setting: Setting) -> list:
            if setting not in first:
                first[setting] = pyscf(setting)()
            return first[setting]

        ours_errors = errors([(r["energy"], r["gap"]) for r in ours_labels], reference)
        probed = {}

        def accuracy_at(g: float) -> dict[str, float]:
            probed[g] = errors(labels_at(gradient_setting(g)), reference)
            return probed[g]

        labels_at(DEFAULT)
        best = loosest_as_accurate(ours_errors, accuracy_at, ladder, list(LADDER_STEPS).index(0))
        settings = {"matched": matched, "default": DEFAULT}
        if best is not None and gradient_setting(best) != matched:
            settings["ladder"] = gradient_setting(best)
        rounds = time_rounds(
            {"ours": ours, **{role: pyscf(s) for role, s in settings.items()}},
            repeat=repeat,
            min_seconds=0.0,
            warmup=0,  # the passes above warmed every side; time_rounds' own first call is untimed too
        )
    sides = {
        "ours": {
            "setting": None,
            "seconds": [t / len(atoms) for t in rounds["ours"]],
            "errors": ours_errors,
            "steps": [r["iterations"] for r in ours_labels],
        }
    }
    for role, s in settings.items():
        sides[role] = {
            "setting": s,
            "seconds": [t / len(atoms) for t in rounds[role]],
            "errors": errors(first[s], reference),
            "steps": [label[2] for label in first[s]],
        }
    accurate = [role for role in settings if as_accurate(sides[role]["errors"], ours_errors)]
    return {
        "sides": sides,
        "headline": min(accurate, key=lambda role: statistics.median(sides[role]["seconds"]), default=None),
        "probed": probed,
        "reference": str(tight),
        "conformers": len(atoms),
        "cores": n,
        "batch": batch,
        "repeat": repeat,
    }


TITLES = {
    "ours": "ours",
    "matched": "PySCF (a), our stopping criterion",
    "default": "PySCF (b), its default tolerance",
    "ladder": "PySCF, the loosest gradient tolerance as accurate as ours",
}


def _steps(steps: Sequence[int]) -> str:
    span = f"{min(steps)}-{max(steps)}" if min(steps) != max(steps) else f"{steps[0]}"
    return f"{span} (median {statistics.median(steps):g})"


def _errors(e: dict[str, float]) -> str:
    return (
        f"energy max {e['energy_max']:.3g} / median {e['energy_median']:.3g} meV, "
        f"gap max {e['gap_max']:.3g} / median {e['gap_median']:.3g} meV"
    )


def rows(m: dict, heavy: int, molecules: int) -> list[Comparison]:
    """One Comparison per PySCF setting timed (ours against it); the headline's name says so."""
    ours = m["sides"]["ours"]
    out = []
    for role, peer in m["sides"].items():
        if role == "ours":
            continue
        ratio = [p / o for p, o in zip(peer["seconds"], ours["seconds"], strict=True)]
        tag = (
            ": at equal or better accuracy, the headline"
            if role == m["headline"]
            else ("" if m["headline"] else ": no PySCF setting is as accurate as ours")
        )
        out.append(
            Comparison(
                "qm1b",
                f"label a conformer of a {heavy}-heavy-atom QM9 molecule against {TITLES[role]}{tag}",
                f"our generator's DFT: float32 SCF until stop_rule ({_steps(ours['steps'])} iterations), "
                f"{m['cores']} worker processes preparing integrals ahead, batches of {m['batch']}; "
                f"vs tight: {_errors(ours['errors'])}",
                f"PySCF dft.RKS at {peer['setting']} ({_steps(peer['steps'])} cycles), {m['cores']} single-threaded "
                f"processes; vs tight: {_errors(peer['errors'])}",
                statistics.median(ours["seconds"]),
                statistics.median(peer["seconds"]),
                f"{m['conformers']} conformers of {molecules} molecules, median of {m['repeat']} interleaved rounds "
                f"(peer/ours per round {min(ratio):.2f}-{max(ratio):.2f}x), {m['cores']} cores each; errors against "
                f"PySCF at {m['reference']}",
            )
        )
    return out


def table(m: dict) -> str:
    """The benchmark as a markdown table: per side, s/conformer, errors against the tight reference (meV), SCF
    steps and our speed-up against it; then the ladder settings probed."""
    ours = statistics.median(m["sides"]["ours"]["seconds"])
    lines = [
        f"{m['conformers']} conformers, {m['cores']} cores, median of {m['repeat']} interleaved rounds; errors "
        f"against PySCF at {m['reference']}",
        "",
        "| side | stopping rule | s/conformer | energy error max / median (meV) | gap error max / median (meV) "
        "| SCF steps | ours faster by |",
        "|---|---|---|---|---|---|---|",
    ]
    for role, side in m["sides"].items():
        e, seconds = side["errors"], statistics.median(side["seconds"])
        rule = "stop_rule (gradient 1e-4, float32)" if side["setting"] is None else str(side["setting"])
        name = TITLES[role] + (" (headline)" if role == m["headline"] else "")
        lines.append(
            f"| {name} | {rule} | {seconds:.3f} | {e['energy_max']:.3g} / {e['energy_median']:.3g} "
            f"| {e['gap_max']:.3g} / {e['gap_median']:.3g} | {_steps(side['steps'])} "
            f"| {'-' if role == 'ours' else f'{seconds / ours:.2f}x'} |"
        )
    probed = "; ".join(
        f"{g:.2g} {'as accurate' if as_accurate(e, m['sides']['ours']['errors']) else 'less accurate'} "
        f"({e['energy_max']:.3g} / {e['energy_median']:.3g}, {e['gap_max']:.3g} / {e['gap_median']:.3g})"
        for g, e in sorted(m["probed"].items(), reverse=True)
    )
    lines += [
        "",
        "SCF steps: our float32 iterations (then the float64 finish); PySCF's cycles, besides which it builds the "
        "guess's Fock matrix and runs a final check step.",
        f"Ladder settings probed (conv_tol_grad, energy tolerance not binding; energy and gap errors max / median, "
        f"meV): {probed}.",
    ]
    return "\n".join(lines)


@section("qm1b")
def bench_qm1b(size: str) -> list[Comparison]:
    """Conformers per second labelling QM1B-sized molecules (9 heavy atoms, ~60 AOs, ~18k grid points): our
    generator's float32 DFT against PySCF at our stopping criterion, at its default and at the loosest setting as
    accurate as ours, every side's errors against one tight reference, on all the machine's cores (module
    docstring). Prints the table of errors and steps (`table`) to stderr."""
    # tiny: 2 conformers of 2 molecules of 3 heavy atoms; full: 4 conformers of 16 QM1B-sized molecules
    molecules, count, heavy, repeat = by_size(size, tiny=(2, 2, 3, 2), quick=(4, 2, 9, 2), full=(16, 4, 9, 4))
    m = measure(conformers(molecules, count, heavy), repeat=repeat)
    print(table(m), file=sys.stderr, flush=True)
    return rows(m, heavy, molecules)
