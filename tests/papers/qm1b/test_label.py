"""Labelling a user's own molecules (papers.qm1b.label): each input format, the errors that stop a run before any
DFT (naming the file and line or record), rows in the generator's columns with the given coordinates in Bohr, a
failing input as a counted drop, the command line, and one real DFT label against PySCF."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from core.data.molecules import ANGSTROM_BOHR, HARTREE_EV, embed_conformers
from papers.qm1b.generate import COLUMNS, Selection, conformer_seed
from papers.qm1b.label import DFT, label, main, read_inputs

WATER = [("O", 0.0, 0.0, 0.1173), ("H", 0.0, 0.7572, -0.4692), ("H", 0.0, -0.7572, -0.4692)]
METHANE = [
    ("C", 0.0, 0.0, 0.0),
    ("H", 0.6291, 0.6291, 0.6291),
    ("H", -0.6291, -0.6291, 0.6291),
    ("H", -0.6291, 0.6291, -0.6291),
    ("H", 0.6291, -0.6291, -0.6291),
]
METHYL = [("C", 0.0, 0.0, 0.0), ("H", 0.0, 0.0, 1.09), ("H", 1.03, 0.0, -0.36), ("H", -0.5, 0.9, -0.36)]


def xyz_block(name, atoms):
    return f"{len(atoms)}\n{name}\n" + "".join(f"{e} {x} {y} {z}\n" for e, x, y, z in atoms)


def coordinates(atoms):
    return np.array([a[1:] for a in atoms])


def sdf(path, smiles_list, hydrogens=True, embed=True):
    """An SDF of RDKit molecules named by their SMILES (3-D, with hydrogens, unless told otherwise)."""
    from rdkit import Chem
    from rdkit.Chem import AllChem

    writer = Chem.SDWriter(str(path))
    mols = []
    for smiles in smiles_list:
        mol = Chem.MolFromSmiles(smiles)
        if hydrogens:
            mol = Chem.AddHs(mol)
        if embed:
            assert AllChem.EmbedMolecule(mol, randomSeed=7) == 0
        mol.SetProp("_Name", smiles)
        writer.write(mol)
        mols.append(mol)
    writer.close()
    return mols


def stand_in(atoms, **dft):
    """A cheap deterministic DFT: the energy is a function of the geometry, so rows tell conformers apart."""
    out = []
    for a in atoms:
        xyz = np.array([[float(v) for v in part.split()[1:]] for part in a.split(";")])
        spread = float(np.linalg.norm(xyz - xyz.mean(0), axis=1).sum())
        out.append(
            {
                "energy": -10.0 * len(xyz) - spread,
                "homo": -7.0,
                "lumo": -1.0,
                "gap": 6.0,
                "n_ao": 5 * len(xyz),
                "n_grid": 1000,
                "energy_std": 1e-4,
                "converged": True,
            }
        )
    return out


def test_smiles_file_skips_comments_and_blank_lines(tmp_path):
    path = tmp_path / "mols.smi"
    path.write_text("# my molecules\n\nCCO ethanol\n   \nc1ccccc1  benzene ring\n  # indented comment\nC#N\n")
    inputs = read_inputs(path)
    assert [i.smiles for i in inputs] == ["CCO", "c1ccccc1", "C#N"]  # '#' inside a SMILES is a triple bond
    assert [i.name for i in inputs] == ["ethanol", "benzene ring", ""]
    assert [i.where for i in inputs] == [f"{path}:3", f"{path}:5", f"{path}:7"]
    assert not any(i.geometry_given for i in inputs)


def test_xyz_file_with_two_blocks(tmp_path):
    path = tmp_path / "two.xyz"
    path.write_text(xyz_block("water", WATER) + "\n" + xyz_block("methane", METHANE))
    water, methane = read_inputs(path)
    assert (water.name, water.smiles, water.elements) == ("water", "O", ("O", "H", "H"))
    assert (methane.name, methane.smiles, methane.elements) == ("methane", "C", ("C", "H", "H", "H", "H"))
    np.testing.assert_array_equal(water.positions, coordinates(WATER))
    np.testing.assert_array_equal(methane.positions, coordinates(METHANE))


def test_sdf_file_keeps_the_given_geometry(tmp_path):
    path = tmp_path / "mols.sdf"
    mols = sdf(path, ["CCO", "OC(F)F"])
    inputs = read_inputs(path)
    assert [i.smiles for i in inputs] == ["CCO", "OC(F)F"]
    assert [i.name for i in inputs] == ["CCO", "OC(F)F"]
    for inp, mol in zip(inputs, mols, strict=True):
        assert inp.elements == tuple(a.GetSymbol() for a in mol.GetAtoms())
        np.testing.assert_allclose(inp.positions, mol.GetConformer().GetPositions(), atol=1e-4)  # SDF: 4 decimals


def test_several_files_in_order(tmp_path):
    (tmp_path / "a.smi").write_text("CC\n")
    (tmp_path / "b.xyz").write_text(xyz_block("water", WATER))
    inputs = read_inputs([tmp_path / "a.smi", tmp_path / "b.xyz"])
    assert [i.smiles for i in inputs] == ["CC", "O"]


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("mols.pdb", "CCO\n", r"unknown extension '\.pdb': allowed are \.smi, \.txt, \.xyz, \.sdf, \.mol"),
        ("methyl.xyz", xyz_block("methyl", METHYL), r"methyl.xyz:1 .*CH3 has 9 electrons .*closed shell"),
        ("empty.smi", "# nothing here\n\n", r"empty.smi holds no molecules"),
        ("empty.xyz", "", r"empty.xyz holds no molecules"),
        ("bad.smi", "CCO\nC1CC\n", r"bad.smi:2: RDKit cannot parse the SMILES 'C1CC'"),
        ("ion.smi", "C[NH3+] methylammonium\n", r"ion.smi:1 \(methylammonium\): net charge \+1"),
        ("xenon.smi", "[Xe]\n", r"xenon.smi:1: Xe: basis 'sto-3g' has no functions for Xe"),
        ("count.xyz", "three\nwater\nO 0 0 0\n", r"count.xyz:1 .*expected the atom count .*'three'"),
        ("short.xyz", "3\nwater\nO 0 0 0\nH 0 0 1\n", r"short.xyz:1 .*declares 3 atoms"),
        ("element.xyz", "2\nx\nQq 0 0 0\nH 0 0 1\n", r"element.xyz:3: 'Qq' is not an element"),
        ("overlap.xyz", "2\nh2\nH 0 0 0\nH 0 0 0.01\n", r"overlap.xyz:1 .*atoms 1 \(H\) and 2 \(H\) are 0.010"),
    ],
)
def test_bad_input_names_the_file_and_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_inputs(path)


def test_bad_sdf_records_are_named(tmp_path):
    path = tmp_path / "noh.sdf"
    sdf(path, ["CCO", "CCN"], hydrogens=False)
    with pytest.raises(ValueError, match=r"noh.sdf record 1 \(CCO\): 6 hydrogens are implicit"):
        read_inputs(path)
    path = tmp_path / "flat.sdf"
    sdf(path, ["CCO"], embed=False)
    with pytest.raises(ValueError, match=r"flat.sdf record 1 \(CCO\): no 3-D coordinates"):
        read_inputs(path)
    with pytest.raises(ValueError, match=r"missing.xyz: no such file"):
        read_inputs(tmp_path / "missing.xyz")
    with pytest.raises(ValueError, match="no input files"):
        read_inputs([])


def test_rows_have_the_generators_columns_and_the_inputs_coordinates_in_bohr(tmp_path):
    (tmp_path / "two.xyz").write_text(xyz_block("water", WATER) + xyz_block("methane", METHANE))
    (tmp_path / "mols.smi").write_text("CCO ethanol\nClC(Cl)Cl\n")  # chlorine: outside QM1B's elements, allowed here
    inputs = read_inputs([tmp_path / "two.xyz", tmp_path / "mols.smi"])
    out = tmp_path / "out" / "labels.parquet"
    summary = label(inputs, out, conformers=2, seed=5, run_batch=stand_in, batch_conformers=1, show_progress=False)
    assert summary["rows"] == 2 + 2 * 2 and summary["conformers"] == 6 and summary["dropped"] == {}
    table = pq.read_table(out)
    assert tuple(table.column_names) == COLUMNS
    rows = table.to_pylist()
    assert [r["molecule"] for r in rows] == [0, 1, 2, 2, 3, 3]
    assert [r["smile"] for r in rows] == ["O", "C", "CCO", "CCO", "ClC(Cl)Cl", "ClC(Cl)Cl"]
    for row, atoms in zip(rows[:2], (WATER, METHANE), strict=True):
        assert row["conformer_seed"] == -1
        assert row["atoms"] == "".join(a[0] for a in atoms)
        np.testing.assert_allclose(row["pos"], coordinates(atoms).reshape(-1) * ANGSTROM_BOHR, rtol=1e-6)
    for k, smiles in ((2, "CCO"), (3, "ClC(Cl)Cl")):
        seed = conformer_seed(Selection(seed=5), k)
        elements, positions = embed_conformers(smiles, 2, seed)
        mine = [r for r in rows if r["molecule"] == k]
        assert [r["conformer_seed"] for r in mine] == [seed, seed]
        assert mine[0]["atoms"] == "".join(elements)
        for row, pos in zip(mine, positions, strict=True):
            np.testing.assert_allclose(row["pos"], pos.reshape(-1) * ANGSTROM_BOHR, rtol=1e-6)
    assert rows[4]["z"] == [17, 6, 17, 17, 1] and rows[4]["atoms"] == "ClCClClH"  # SMILES order
    expected = stand_in(["O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692"])[0]["energy"] * HARTREE_EV
    assert rows[0]["energy"] == pytest.approx(expected)
    metadata = {k.decode(): json.loads(v) for k, v in table.schema.metadata.items() if k != b"ARROW:schema"}
    assert metadata["dft"] == DFT and metadata["seed"] == 5
    assert [m["name"] for m in metadata["inputs"]] == ["water", "methane", "ethanol", ""]


def test_a_failing_input_is_a_counted_drop(tmp_path):
    (tmp_path / "mols.smi").write_text("CCO\nCCN\nCC(=O)O\n")
    inputs = read_inputs(tmp_path / "mols.smi")

    def failing(atoms, **dft):
        if any(a.startswith("N ") or "; N " in a for a in atoms):
            raise RuntimeError("SCF exploded")
        out = stand_in(atoms)
        out[0]["energy_std"] = 1.0  # QM1B's rule: std > 0.01 eV is dropped
        return out

    out = tmp_path / "labels.parquet"
    # batches of 3 conformers, by size, hold one molecule each here (8, 9 and 10 atoms)
    summary = label(inputs, out, conformers=3, run_batch=failing, batch_conformers=3, show_progress=False)
    assert summary["dropped"] == {"error:RuntimeError": 3, "std": 2}
    assert summary["rows"] == 2 * 2
    [error] = summary["errors"]
    assert error["molecule"] == 1 and error["smiles"] == "CCN" and error["input"] == f"{tmp_path / 'mols.smi'}:2"
    assert error["error"] == "RuntimeError: SCF exploded"
    assert sorted(set(pq.read_table(out).column("molecule").to_pylist())) == [0, 2]


def test_label_refuses_bad_settings_before_any_dft(tmp_path):
    inputs = read_inputs(_write(tmp_path / "m.smi", "CCO\n"))

    def never(atoms, **dft):
        raise AssertionError("the DFT ran")

    for kwargs, message in [
        ({"conformers": 0}, "conformers=0"),
        ({"dft": {"dtype": "float16"}}, "dtype='float16'"),
        ({"dft": {"bassis": "sto-3g"}}, r"dft keys \['bassis'\] are unknown"),
        ({"dft": {"basis": "no-such-basis"}}, "basis 'no-such-basis' has no functions for C"),
    ]:
        with pytest.raises(ValueError, match=message):
            label(inputs, tmp_path / "out.parquet", run_batch=never, show_progress=False, **kwargs)
    with pytest.raises(ValueError, match="inputs are empty"):
        label([], tmp_path / "out.parquet", run_batch=never)
    assert not (tmp_path / "out.parquet").exists()


def _write(path, text):
    path.write_text(text)
    return path


def test_command_line(tmp_path, monkeypatch, capsys):
    import papers.qm1b.generate as generate

    real = generate.label_parts
    monkeypatch.setattr("papers.qm1b.label.label_parts", lambda parts, dft, **kw: real(parts, dft, run_batch=stand_in))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    smi = _write(tmp_path / "m.smi", "CCO ethanol\n")
    xyz = _write(tmp_path / "w.xyz", xyz_block("water", WATER))
    out = tmp_path / "out.parquet"
    assert main([str(smi), str(xyz), "-o", str(out), "--conformers", "2", "--dtype", "float64"]) == 0
    assert "wrote 3 rows" in capsys.readouterr().out
    metadata = json.loads(pq.read_schema(out).metadata[b"dft"])
    assert metadata == {**DFT, "dtype": "float64"}
    assert main([str(tmp_path / "m.pdb"), "-o", str(out)]) == 2
    assert "unknown extension '.pdb'" in capsys.readouterr().err


def test_water_energy_equals_pyscf(tmp_path):
    """The real DFT (float32, 20 iterations, the command's defaults) on a given geometry, against converged PySCF
    B3LYP5/STO-3G at grid level 0: within 1 meV (README: float32 energies within 1 meV up to 3 heavy atoms)."""
    from pyscf import dft, gto

    inputs = read_inputs(_write(tmp_path / "water.xyz", xyz_block("water", WATER)))
    out = tmp_path / "water.parquet"
    assert label(inputs, out, show_progress=False)["rows"] == 1
    [row] = pq.read_table(out).to_pylist()
    mol = gto.M(atom="; ".join(f"{e} {x} {y} {z}" for e, x, y, z in WATER), basis="sto-3g", verbose=0)
    mf = dft.RKS(mol, xc="b3lyp5")
    mf.grids.level, mf.init_guess, mf.conv_tol = 0, "minao", 1e-10
    reference = mf.kernel() * HARTREE_EV
    assert mf.converged
    assert abs(row["energy"] - reference) < 1e-3, row["energy"] - reference
    assert row["N"] == 7 and row["z"] == [8, 1, 1] and row["y"] > 0
