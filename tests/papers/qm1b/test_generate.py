"""The dataset generator: QM1B's filters, seeded conformers, sharding, atomic parts and resumption.

The DFT is replaced by a cheap deterministic stand-in (a function of the geometry), so these tests check the
pipeline, not the physics (tests/papers/qm1b/test_dft.py does that)."""

import json

import numpy as np
import pytest

from core.data.molecules import MoleculeError
from papers.qm1b.generate import (
    ANGSTROM_BOHR,
    HARTREE_EV,
    Selection,
    atom_string,
    check_molecule,
    conformer_rows,
    generate_shard,
    read_shard,
    select_molecules,
)

DFT = {"basis": "sto-3g", "iterations": 20}


def fake_dft(atoms, **kwargs):
    """Energy from the geometry (so rows tell conformers apart); every 7th conformer has a large std."""
    out = []
    for a in atoms:
        xyz = np.array([[float(v) for v in part.split()[1:]] for part in a.split(";")])
        spread = float(np.linalg.norm(xyz - xyz.mean(0), axis=1).sum())
        n = len(xyz)
        out.append(
            {
                "energy": -10.0 * n - spread,
                "homo": -7.0,
                "lumo": -1.0 + spread % 1,
                "gap": 6.0 + spread % 1,
                "n_ao": 5 * n,
                "energy_std": 0.5 if int(spread * 1000) % 7 == 0 else 1e-4,
            }
        )
    return out


class Interrupted(Exception):
    pass


def interrupting(after):
    calls = {"n": 0}

    def run(atoms, **kwargs):
        calls["n"] += 1
        if calls["n"] > after:
            raise Interrupted
        return fake_dft(atoms, **kwargs)

    return run


SEL = Selection(source="qm9", min_heavy=9, max_heavy=9, molecules=6, conformers=2, seed=3)


@pytest.mark.parametrize(
    "smiles, reason",
    [
        ("CCCCCCCCCS", "element"),  # sulphur
        ("CCO", "heavy_atoms"),
        ("CCCCCCCCC", "hydrogens"),  # nonane: 20 H
        ("c1ccccc1C(=O)[O-]", "charged"),
        ("[CH2]c1ccccc1CC", "open_shell"),
        ("C1CC(", "invalid_smiles"),
    ],
)
def test_qm1b_filters_name_the_reason(smiles, reason):
    with pytest.raises(MoleculeError) as e:
        check_molecule(smiles, Selection(min_heavy=9, max_heavy=11))
    assert e.value.reason == reason


def test_filters_accept_a_qm1b_molecule():
    check_molecule(
        "CC(C)C(=O)OC(C)C", Selection(min_heavy=8, max_heavy=11)
    )  # QM1B-sized (9 heavy atoms; REFERENCES.md [15])


def test_selection_is_seeded_and_counts_what_it_skips():
    smiles = ["CCO", "CCCCCCCCCS", "CC(C)C(=O)OC(C)C", "CCCCC(=O)OCCO", "C1CC(", "OCC(O)C(O)CC(=O)O"]
    sel = Selection(min_heavy=9, max_heavy=11, molecules=3, seed=1)
    chosen, skipped = select_molecules(sel, smiles)
    assert sorted(s for _, s in chosen) == sorted([smiles[2], smiles[3], smiles[5]])
    assert all(smiles[i] == s for i, s in chosen)
    assert skipped == {"heavy_atoms": 1, "element": 1, "invalid_smiles": 1}
    assert select_molecules(sel, smiles) == (chosen, skipped)
    with pytest.raises(ValueError, match=r"only 3 of the 6 qm9 SMILES pass the filters; asked for molecules=4"):
        select_molecules(Selection(min_heavy=9, max_heavy=11, molecules=4), smiles)


def test_rows_have_qm1b_columns_units_and_drops():
    elements = ["O", "H", "H"]
    pos = np.array([[[0, 0, 0], [0, 0.76, 0.59], [0, -0.76, 0.59]]] * 3, float)
    results = [
        {"energy": -75.3, "homo": -7.1, "lumo": 3.2, "gap": 10.3, "n_ao": 7, "energy_std": 1e-5},
        {"energy": -75.3, "homo": -7.1, "lumo": 3.2, "gap": 10.3, "n_ao": 7, "energy_std": 0.02},
        {"energy": -75.3, "homo": -7.1, "lumo": -7.1, "gap": 0.0, "n_ao": 7, "energy_std": 1e-5},
    ]
    rows, dropped = conformer_rows("O", 5, 99, elements, pos, results)
    assert dropped == {"std": 1, "zero_gap": 1} and len(rows) == 1
    row = rows[0]
    assert row["atoms"] == "OHH" and row["z"] == [8, 1, 1] and row["N"] == 7
    np.testing.assert_allclose(row["energy"], -75.3 * 27.211386, rtol=1e-7)
    np.testing.assert_allclose(row["pos"][4], 0.76 / 0.529177, rtol=1e-6)
    assert (row["y"], row["molecule"], row["conformer_seed"]) == (10.3, 5, 99)
    assert HARTREE_EV == pytest.approx(27.211386245988) and ANGSTROM_BOHR == pytest.approx(1.8897261246)


def test_atom_string_round_trips():
    s = atom_string(["C", "H"], np.array([[0.0, 1.5, -2.25], [1e-3, 0, 0]]))
    assert s == "C 0.0000000000 1.5000000000 -2.2500000000; H 0.0010000000 0.0000000000 0.0000000000"


def _rows(table):
    return sorted(zip(table.column("molecule").to_pylist(), table.column("energy").to_pylist(), strict=True))


def test_shards_partition_the_dataset_and_a_killed_shard_resumes_without_loss(tmp_path):
    whole = generate_shard(SEL, DFT, tmp_path / "one", run_batch=fake_dft, molecules_per_part=2, show_progress=False)
    assert len(whole["done"]) == 6 and whole["rows"] + sum(whole["dropped"].values()) == 12
    reference = _rows(read_shard(tmp_path / "one"))
    assert len(reference) == whole["rows"]

    for k in range(3):
        generate_shard(SEL, DFT, tmp_path / "three", shard=k, num_shards=3, run_batch=fake_dft, show_progress=False)
    assert _rows(read_shard(tmp_path / "three")) == reference

    # killed while computing its 4th molecule: the first part (2 molecules) is kept, the 3rd molecule is redone
    with pytest.raises(Interrupted):
        generate_shard(
            SEL, DFT, tmp_path / "killed", run_batch=interrupting(3), molecules_per_part=2, show_progress=False
        )
    shard_dir = tmp_path / "killed" / "shard_00000_of_00001"
    manifest = json.loads((shard_dir / "manifest.json").read_text())
    assert len(manifest["done"]) == 2 and len(manifest["parts"]) == 1
    (shard_dir / "part_00001.parquet").write_bytes(b"half-written")  # a part the manifest never listed
    resumed = generate_shard(
        SEL, DFT, tmp_path / "killed", run_batch=fake_dft, molecules_per_part=2, show_progress=False
    )
    assert len(resumed["done"]) == 6 and len(set(resumed["done"])) == 6
    assert _rows(read_shard(tmp_path / "killed")) == reference
    assert resumed["dropped"] == whole["dropped"]


def test_a_shard_directory_refuses_another_dataset(tmp_path):
    generate_shard(SEL, DFT, tmp_path, run_batch=fake_dft, show_progress=False)
    with pytest.raises(ValueError, match="holds another dataset"):
        generate_shard(SEL, {**DFT, "iterations": 10}, tmp_path, run_batch=fake_dft, show_progress=False)
    with pytest.raises(ValueError, match=r"shard=3 must be in \[0, num_shards=3\)"):
        generate_shard(SEL, DFT, tmp_path, shard=3, num_shards=3, run_batch=fake_dft)


def test_bad_selection_values_are_named():
    with pytest.raises(ValueError, match="source='gdb11'"):
        Selection(source="gdb11")
    with pytest.raises(ValueError, match=r"heavy atoms \[10, 9\]"):
        Selection(min_heavy=10, max_heavy=9)
