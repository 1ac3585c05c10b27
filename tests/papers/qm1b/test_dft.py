"""The JAX DFT against PySCF itself (converged dft.RKS, xc='b3lyp5', the same grid level), at the accuracy the README
states, with a margin of about 2x over what was measured (PySCF 2.14, 7 molecules of 1-11 heavy atoms):

- float64: energies within 1e-9 Hartree (max 9.0e-10 measured), gaps within 1e-4 meV (max 4.7e-5);
- float32: gaps within 0.2 meV (max 0.07); energies within 1 meV up to 3 heavy atoms (max 0.36) and within 25 meV
  at 9-11 (max 20.8: float32 rounding grows with the molecule). Chemical accuracy (43 meV) is the report's claim,
  papers/qm1b/report.py, not what these tests allow.
"""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.data.molecules import embed_conformers
from papers.qm1b.dft import HARTREE_EV, _stack, build_problem, run_dft, run_dft_batch
from papers.qm1b.dft.scf import scf_batch, xc_energy, xc_potential
from papers.qm1b.generate import atom_string

WATER = "O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692"
METHANE = (
    "C 0 0 0; H 0.6291 0.6291 0.6291; H -0.6291 -0.6291 0.6291; H -0.6291 0.6291 -0.6291; H 0.6291 -0.6291 -0.6291"
)


F64_ENERGY_HA = 2e-9  # stated: 1e-9
F64_GAP_EV = 2e-7  # stated: 1e-4 meV
F32_GAP_EV = 2e-4  # stated: 0.2 meV
F32_ENERGY_SMALL_HA = 1e-3 / HARTREE_EV  # stated: 1 meV up to 3 heavy atoms
F32_ENERGY_QM1B_HA = 25e-3 / HARTREE_EV  # stated: 25 meV at 9-11 heavy atoms


def reference(atom, grid_level=0):
    """Converged PySCF as the dataset's validation uses it (papers.qm1b.run.pyscf_reference): its own error
    is ~1e-11 Hartree and ~4e-5 meV on the gap against conv_tol 1e-13."""
    from pyscf import dft, gto

    from papers.qm1b.run import REFERENCE_CONV_TOL, REFERENCE_CONV_TOL_GRAD

    mol = gto.M(atom=atom, basis="sto-3g", verbose=0)
    mf = dft.RKS(mol, xc="b3lyp5")
    mf.grids.level = grid_level
    mf.conv_tol, mf.conv_tol_grad, mf.max_cycle = REFERENCE_CONV_TOL, REFERENCE_CONV_TOL_GRAD, 100
    energy = mf.kernel()
    assert mf.converged
    n = mol.nelectron // 2
    return energy, (mf.mo_energy[n] - mf.mo_energy[n - 1]) * HARTREE_EV


def conformer(smiles, seed=0, count=1):
    elements, pos = embed_conformers(smiles, count, seed)
    return [atom_string(elements, p) for p in pos]


@pytest.fixture(scope="module")
def small_molecules():
    return {"water": WATER, "methane": METHANE, "ethanol": conformer("CCO")[0], "acetamide": conformer("CC(N)=O")[0]}


@pytest.mark.parametrize(
    "name",
    [
        "water",
        "methane",
        # ~45 s together (2026-11-28): make test-all; make test keeps the two small ones and float32's labeller
        # against PySCF (tests/papers/qm1b/test_label.py)
        pytest.param("ethanol", marks=pytest.mark.slow),
        pytest.param("acetamide", marks=pytest.mark.slow),
    ],
)
def test_float64_equals_converged_pyscf(small_molecules, name):
    atom = small_molecules[name]
    energy, gap = reference(atom)
    r = run_dft(atom, dtype="float64")
    assert abs(r["energy"] - energy) < F64_ENERGY_HA, (name, r["energy"] - energy)
    assert abs(r["gap"] - gap) < F64_GAP_EV, (name, r["gap"] - gap)
    assert r["converged"] and r["energy_std"] < 1e-6
    assert abs(r["lumo"] - r["homo"] - r["gap"]) < 1e-12


def test_water_reproduces_the_papers_reference_energy():
    # papers/qm1b/REFERENCES.md [15]: water b3lyp5 / STO-3G / grid level 0: -75.289671 Ha (the geometry above)
    assert run_dft(WATER, dtype="float64")["energy"] == pytest.approx(-75.289671, abs=1e-6)


@pytest.mark.slow  # ~50 s (2026-11-28): float32 against PySCF; float64's equality with PySCF is in make test
def test_float32_gaps_and_energies_within_the_stated_accuracy(small_molecules):
    for name, atom in small_molecules.items():
        energy, gap = reference(atom)
        r = run_dft(atom, dtype="float32")
        assert abs(r["gap"] - gap) < F32_GAP_EV, (name, r["gap"] - gap)
        assert abs(r["energy"] - energy) < F32_ENERGY_SMALL_HA, (name, r["energy"] - energy)
        assert r["converged"], name


def test_h2_converges_to_pyscf_in_float32_once_diis_has_nothing_left_to_extrapolate():
    """H2 in STO-3G converges to the last bit by its second step: the stored DIIS errors are then one vector repeated
    and the extrapolation's linear system is singular (it gave NaN from the fourth step, and scipy's eigh refused
    the Fock matrix). Within the stated float32 accuracy of converged PySCF, and finite at every step."""
    atom = "H 0 0 0; H 0 0 0.74"
    energy, gap = reference(atom)
    r = run_dft(atom, dtype="float32", early_stop=False)
    assert np.all(np.isfinite(r["energies"])) and r["converged"]
    assert abs(r["energy"] - energy) < F32_ENERGY_SMALL_HA and abs(r["gap"] - gap) < F32_GAP_EV


def test_host_float64_energies_equal_the_scfs_own():
    """The float64 recomputation of the last iterations' energies and the final Fock matrix (used for every run)
    equals the SCF's own float64 energies and Fock matrix of the same densities: the same terms, PySCF's J/K from the
    packed ERIs instead of the device's W matrix, numpy instead of XLA; ghost AOs and zero-weight grid points change
    nothing."""
    from papers.qm1b.dft import finish_float64
    from papers.qm1b.dft.scf import fock

    p = build_problem(conformer("CC(N)=O")[0])
    with jax.enable_x64(True):
        args = _stack([p], np.float64, n_ao=p.n_ao + 3, n_grid=p.n_grid + 50)
        energies, densities, D, steps, _ = scf_batch(*args, iterations=8, early_stop=False)
        D = np.asarray(D)[0]
        n = p.n_ao
        _, F = fock(D[:n, :n], p.H, jnp.asarray(ao2mo_full(p)), p.ao, p.weights, p.e_nuc, None)
    got, got_F = finish_float64(p, np.asarray(densities)[0], D)
    np.testing.assert_allclose(got, np.asarray(energies)[0, 3:8], rtol=0, atol=1e-10)
    np.testing.assert_allclose(got_F, np.asarray(F), atol=1e-10)
    assert int(steps[0]) == 8 and np.ptp(got) > 1e-6  # five different densities, not one repeated


def ao2mo_full(p):
    """W = (ij|kl) - a/2 (ik|jl) as the SCF builds it, from PySCF's unpacked ERIs (an independent unpacking)."""
    from pyscf import ao2mo

    from papers.qm1b.dft.xc import HF_EXCHANGE

    n = p.n_ao
    eri = ao2mo.restore(1, p.eri, n)
    return (eri - 0.5 * HF_EXCHANGE * eri.transpose(0, 2, 1, 3)).reshape(n * n, n * n)


@pytest.mark.slow  # ~12 s (2026-11-29): make test-all; make test pads with ghost AOs and zero-weight grid points in
# test_host_float64_energies_equal_the_scfs_own (the padded SCF's energies and Fock matrix equal the unpadded problem's)
# and test_different_molecules_in_one_batch_equal_their_own_runs (padded to a common size, against PySCF)
def test_padding_grid_points_and_ghost_aos_changes_nothing():
    p = build_problem(conformer("CCO")[0])
    padded = replace(p, ao=np.pad(p.ao, ((0, 0), (0, 100), (0, 0))), weights=np.pad(p.weights, (0, 100)))
    options = {"iterations": 8, "early_stop": False}
    with jax.enable_x64(True):
        e1, _, D1, _, _ = scf_batch(*_stack([p], np.float64), **options)
        e2, _, D2, _, _ = scf_batch(*_stack([padded], np.float64), **options)
        e3, _, D3, _, _ = scf_batch(*_stack([p], np.float64, n_ao=p.n_ao + 5), **options)  # 5 ghost AOs
    np.testing.assert_allclose(e1, e2, rtol=1e-13)
    np.testing.assert_allclose(D1, D2, atol=1e-12)
    np.testing.assert_allclose(e1, e3, rtol=1e-13)
    np.testing.assert_allclose(D1, D3[:, : p.n_ao, : p.n_ao], atol=1e-12)
    assert np.abs(D3[:, p.n_ao :]).max() == 0  # ghosts stay empty


# ~13 s (2026-11-28): make test-all. make test checks batching by a mixed batch against PySCF
# (test_different_molecules_in_one_batch_equal_their_own_runs) and by padding that changes nothing
# (test_host_float64_energies_equal_the_scfs_own; test_padding_grid_points_and_ghost_aos_changes_nothing: test-all)
@pytest.mark.slow
def test_batch_equals_one_by_one():
    atoms = conformer("CCO", seed=3, count=3)
    batch = run_dft_batch(atoms, dtype="float64")
    for atom, b in zip(atoms, batch, strict=True):
        one = run_dft(atom, dtype="float64")
        assert abs(one["energy"] - b["energy"]) < 1e-9 and abs(one["gap"] - b["gap"]) < 1e-7


def test_xc_potential_is_the_gradient_of_the_xc_energy():
    p = build_problem(conformer("CC(N)=O")[0])
    with jax.enable_x64(True):
        D, ao, w = jnp.asarray(p.D0), jnp.asarray(p.ao), jnp.asarray(p.weights)
        E, V = xc_potential(D, ao, w)
        E_ref, G = jax.value_and_grad(xc_energy)(D, ao, w)
        V_ref = np.asarray((G + G.T) / 2)
    np.testing.assert_allclose(float(E), float(E_ref), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(V), V_ref, atol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("smiles", ["CC(C)C(=O)OC(C)C", "OC1=CC=CC(F)=C1C#N", "CC1(C)CC(=O)NC(=O)C1CO"])
def test_qm1b_sized_molecules_against_pyscf(smiles):
    # 9, 10 and 11 heavy atoms of C, N, O, F
    atom = conformer(smiles)[0]
    energy, gap = reference(atom)
    r64, r32 = run_dft(atom, dtype="float64"), run_dft(atom, dtype="float32")
    assert abs(r64["energy"] - energy) < F64_ENERGY_HA and abs(r64["gap"] - gap) < F64_GAP_EV
    assert abs(r32["gap"] - gap) < F32_GAP_EV and abs(r32["energy"] - energy) < F32_ENERGY_QM1B_HA


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"atom": "Xx 0 0 0; H 0 0 1"}, r"PySCF cannot build this molecule"),
        ({"atom": "O 0 0 0; H 0 0 1"}, r"9 electrons: restricted Kohn-Sham needs a closed shell"),
        ({"atom": ""}, r"expected a PySCF atom string"),
        ({"atom": WATER, "xc": "pbe"}, r"xc='pbe' is not supported: allowed are \('b3lyp5',\)"),
        ({"atom": WATER, "dtype": "float16"}, r"dtype='float16': allowed are"),
        ({"atom": WATER, "iterations": 4}, r"iterations=4 must be an integer >= 5"),
        ({"atom": WATER, "grid_level": 12}, r"grid_level=12 must be an integer in \[0, 9\]"),
    ],
)
@pytest.mark.filterwarnings("ignore:Basis may be available")
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_dft(**kwargs)


def test_different_molecules_in_one_batch_equal_their_own_runs():
    # water (7 AOs) and methane (9) padded to 16 AOs with ghost functions, grids to a common size
    batch = run_dft_batch([WATER, METHANE], dtype="float64")
    for atom, b in zip([WATER, METHANE], batch, strict=True):
        energy, gap = reference(atom)
        assert abs(b["energy"] - energy) < F64_ENERGY_HA and abs(b["gap"] - gap) < F64_GAP_EV
        assert b["n_ao"] == build_problem(atom).n_ao


@pytest.mark.slow  # ~2 min: 12 converged PySCF references
def test_float32_on_12_held_out_qm9_molecules():
    """The float32 labels at QM1B's size against converged PySCF, on 12 QM9 molecules of 9 heavy atoms (a selection
    seed the other tests do not use): energy within 1 meV, gap within 0.2 meV. Measured 2026-11-25 with the SCF
    stopping once converged (10-14 iterations): energy median 0.0024 meV, max 0.016; gap median 0.022 meV, max 0.074
    (at 20 fixed iterations: energy max 4.3e-5 meV, gap max 0.067).

    This test holds what were the claims gap-within-0.1mev and energy-within-1mev (papers/qm1b/ledger.py, issue 62):
    an implementation check of our DFT against an independent one. The gap's bound is 2x float32's floor (~0.1 meV,
    set by the density's float32 rounding: the reference run's 48 random rows reached 0.1048 meV, the bench's 64
    conformers 0.098), so that rounding cannot fail it and an error of the implementation (meV to eV) cannot pass
    it; issue 27's goal of 0.1 meV sits on that floor and was this test's bound until issue 62."""
    from papers.qm1b.generate import Selection, conformer_seed, select_molecules

    sel = Selection(source="qm9", min_heavy=9, max_heavy=9, molecules=12, conformers=1, seed=123)
    for index, smiles in select_molecules(sel)[0]:
        elements, positions = embed_conformers(smiles, 1, conformer_seed(sel, index))
        atom = atom_string(elements, positions[0])
        energy, gap = reference(atom)
        r = run_dft(atom, dtype="float32")
        assert abs(r["energy"] - energy) * HARTREE_EV < 1e-3, smiles
        assert abs(r["gap"] - gap) < F32_GAP_EV, smiles


def pyscf_density_fitted(atom, basis="sto-3g"):
    """Converged PySCF with density fitting (`density_fit()`, its default auxiliary basis): (energy, gap in eV)."""
    from pyscf import dft, gto

    mol = gto.M(atom=atom, basis=basis, verbose=0)
    mf = dft.RKS(mol, xc="b3lyp5").density_fit()
    mf.grids.level = 0
    mf.conv_tol, mf.conv_tol_grad, mf.max_cycle = 1e-12, 1e-8, 100
    energy = mf.kernel()
    assert mf.converged
    n = mol.nelectron // 2
    return energy, (mf.mo_energy[n] - mf.mo_energy[n - 1]) * HARTREE_EV


@pytest.mark.slow  # ~70 s in the suite (2026-11-26): density fitting is not the default path; `make test-all`
def test_density_fitting_equals_pyscfs_density_fit(small_molecules):
    """density_fit=True labels as PySCF's dft.RKS(...).density_fit() does (same auxiliary basis, its Cholesky
    factor): float64 at the exact path's tolerances, float32 at its stated accuracy (1 meV, 0.2 meV on the gap)."""
    atoms = [small_molecules[k] for k in ("water", "ethanol", "acetamide")]
    r64 = run_dft_batch(atoms, dtype="float64", density_fit=True)
    r32 = run_dft_batch(atoms, dtype="float32", density_fit=True)
    for atom, a, b in zip(atoms, r64, r32, strict=True):
        energy, gap = pyscf_density_fitted(atom)
        assert abs(a["energy"] - energy) < F64_ENERGY_HA and abs(a["gap"] - gap) < F64_GAP_EV
        assert abs(b["energy"] - energy) < F32_ENERGY_SMALL_HA and abs(b["gap"] - gap) < F32_GAP_EV
        exact, _ = reference(atom)
        assert abs(a["energy"] - exact) > 1e-6  # fitting approximates the ERIs: not the exact path's energy


@pytest.mark.slow  # ~47 s in the suite (2026-11-26): 6-31G(d) with fitting, not the default path; `make test-all`
def test_density_fitting_runs_a_polarised_basis():
    """6-31G(d) (the issue's target basis: ~150 AOs at QM1B's size, where the exact path's n^4 matrix needs ~2 GB
    per conformer) with density fitting, on ethanol (54 AOs), against PySCF's density_fit()."""
    atom = conformer("CCO")[0]
    r = run_dft(atom, basis="6-31g*", dtype="float32", density_fit=True)
    energy, gap = pyscf_density_fitted(atom, basis="6-31g*")
    assert r["n_ao"] == 54  # C, O: 3s 2p 1d (spherical) = 14; H: 2
    assert abs(r["energy"] - energy) < F32_ENERGY_SMALL_HA and abs(r["gap"] - gap) < F32_GAP_EV


@pytest.mark.slow  # ~22 s (2026-11-28); make test-all
def test_early_stop_matches_twenty_iterations_with_fewer_steps():
    """The SCF stops once converged (papers.qm1b.dft.scf.stop_rule) with the labels of QM1B's 20 fixed iterations:
    energies within 0.01 meV, gaps within float32's 0.2 meV; float64 stops later (it converges to 1e-9)."""
    atoms = conformer("CC(N)=O", seed=2, count=2)
    for dtype, gap_tol in (("float32", F32_GAP_EV), ("float64", F64_GAP_EV)):
        early = run_dft_batch(atoms, dtype=dtype)
        fixed = run_dft_batch(atoms, dtype=dtype, early_stop=False)
        for a, b in zip(early, fixed, strict=True):
            assert b["iterations"] == 20 and 5 <= a["iterations"] < 20, (dtype, a["iterations"])
            assert len(a["energies"]) == a["iterations"] and np.all(np.isfinite(a["energies"]))
            assert abs(a["energy"] - b["energy"]) * HARTREE_EV < 1e-5 and abs(a["gap"] - b["gap"]) < gap_tol
            assert a["converged"] and a["energy_std"] < 1e-4


def test_stop_rule():
    """Converged after step i when the gradient 4 steps back is below 1e-3 (all 5 averaged energies converged;
    float64: 1e-5) and this step's is below 1e-4 and has stopped falling (float32's floor) or is below 1e-9."""
    from papers.qm1b.dft.scf import stop_rule

    def stops(gradients, dtype=np.float32):
        g = jnp.asarray(np.array(gradients, dtype))
        return [bool(stop_rule(g, i)) for i in range(len(gradients))]

    falling = [1e-2, 9e-4, 5e-4, 2e-4, 1e-4, 3e-5, 2e-5, 2.1e-5]
    assert stops(falling) == [False] * 6 + [True, True]  # step 4: window 1e-2; step 5: 3e-5 < 0.5 x 1e-4, falling
    assert stops([1e-2, 1e-2, 1e-2, 1e-2, 5e-5, 4e-5]) == [False] * 6  # window start not below 1e-3
    with jax.enable_x64(True):
        assert stops([1e-4, 5e-6, 1e-6, 1e-7, 1e-8, 1e-10], np.float64) == [False] * 5 + [True]  # below 1e-9
        assert stops([1e-4, 1e-4, 1e-6, 1e-7, 1e-8, 1e-10], np.float64) == [False] * 6  # window 1e-4 > 1e-5
    assert stops([5e-4] * 4 + [2e-4, 1.9e-4]) == [False] * 6  # stalled, but above 1e-4


def test_exact_integrals_refuse_a_basis_too_large_for_memory():
    from papers.qm1b.dft import dispatch

    p = build_problem(WATER)
    big = replace(p, S=np.eye(200), H=np.eye(200))  # only the AO count matters to the check
    with pytest.raises(ValueError, match=r"exact ERIs of 200 AOs need .* GB .* density_fit=True"):
        dispatch([big])


@pytest.mark.slow  # ~20 s (2026-11-28): the validation reference path; make test-all
def test_validation_reference_follows_density_fitting():
    from papers.qm1b.run import pyscf_reference

    dft = {"basis": "sto-3g", "xc": "b3lyp5", "grid_level": 0}
    fitted = pyscf_reference(WATER, {**dft, "density_fit": True})["energy"]
    assert abs(fitted - pyscf_density_fitted(WATER)[0]) < 1e-9
    assert abs(pyscf_reference(WATER, dft)["energy"] - reference(WATER)[0]) < 1e-9
