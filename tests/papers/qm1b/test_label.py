"""Labelling a user's own molecules (papers.qm1b.label): each input format, the errors that stop a run before any
DFT (naming the file and line or record), rows in the generator's columns with the given coordinates in Bohr, a
failing input as a counted drop, the command line, and one real DFT label against PySCF."""

import json
import os
import re

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
        ("xenon.smi", "[Xe]\n", r"xenon.smi:1: Xe: basis='sto-3g' has no functions for Xe"),
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


def never(atoms, **dft):
    raise AssertionError("the DFT ran")


def test_label_refuses_bad_settings_before_any_dft(tmp_path):
    inputs = read_inputs(_write(tmp_path / "m.smi", "CCO\n"))
    for kwargs, message in [
        ({"conformers": 0}, "conformers=0 must be an integer >= 1"),
        ({"seed": -1}, "seed=-1 must be an integer >= 0"),
        ({"workers": -1}, r"workers=-1 must be an integer >= 0"),
        ({"molecules_per_part": 0}, "molecules_per_part=0 must be an integer >= 1"),
        ({"dft": {"dtype": "float16"}}, "dtype='float16'"),
        ({"dft": {"iterations": 4}}, "iterations=4 must be an integer >= 5"),
        ({"dft": {"bassis": "sto-3g"}}, r"dft keys \['bassis'\] are unknown"),
        ({"dft": {"basis": "sto-3gg"}}, r"basis='sto-3gg' is not a basis PySCF knows .*did you mean 'sto-3g'"),
    ]:
        with pytest.raises(ValueError, match=message):
            label(inputs, tmp_path / "out.parquet", run_batch=never, show_progress=False, **kwargs)
    with pytest.raises(ValueError, match=r"the output .*out\.csv must be a \.parquet file"):
        label(inputs, tmp_path / "out.csv", run_batch=never, show_progress=False)
    with pytest.raises(ValueError, match="inputs are empty"):
        label([], tmp_path / "out.parquet", run_batch=never)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.smi"]  # no output, no parts


def test_an_unwritable_output_fails_before_any_dft(tmp_path):
    """The output's directory is tried (a file created and removed) before any work: /proc takes no new files, a
    path under a regular file has no directory, and a read-only directory (for a user other than root, who may
    write anywhere) refuses the file."""
    inputs = read_inputs(_write(tmp_path / "m.smi", "CCO\n"))
    (tmp_path / "file").write_text("")
    for out in ["/proc/x.parquet", tmp_path / "file" / "x.parquet"]:
        with pytest.raises(ValueError, match=rf"the output {re.escape(str(out))} cannot be written: "):
            label(inputs, out, run_batch=never, show_progress=False)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    if os.geteuid() != 0:
        with pytest.raises(ValueError, match=r"locked/x\.parquet cannot be written: .*Permission denied"):
            label(inputs, locked / "x.parquet", run_batch=never, show_progress=False)
    assert list(locked.iterdir()) == []


def test_an_input_too_large_for_exact_integrals_is_refused_before_any_dft(tmp_path, monkeypatch):
    """Ethanol in STO-3G has 3 x 5 + 6 x 1 = 21 AOs (padded to 24: 1.3 MB of float32 ERIs), water 7."""
    import papers.qm1b.checks as checks_module

    (tmp_path / "w.xyz").write_text(xyz_block("water", WATER))
    inputs = read_inputs([_write(tmp_path / "m.smi", "O\nCCO ethanol\n"), tmp_path / "w.xyz"])
    monkeypatch.setattr(checks_module, "EXACT_ERI_BYTES", 1e6)
    with pytest.raises(ValueError, match=r"m\.smi:2 \(ethanol\): exact ERIs of 21 AOs need 0\.0 GB"):
        label(inputs, tmp_path / "out.parquet", run_batch=never, show_progress=False)
    assert not (tmp_path / "out.parquet").exists() and not (tmp_path / "out.parquet.parts").exists()
    summary = label(
        inputs, tmp_path / "out.parquet", dft={"density_fit": True}, run_batch=stand_in, show_progress=False
    )
    assert summary["rows"] == 3


class Crash(BaseException):  # a kill: not an error of one molecule
    pass


def test_a_crashed_labelling_resumes_and_equals_an_uninterrupted_one(tmp_path):
    """7 inputs in parts of 2 (4 parts), 2 conformers each; the run crashes in its 3rd part. The rerun labels only
    what no finished part holds, and the output equals an uninterrupted run's, row for row and column for column; a
    rerun with other settings is refused while the parts exist; the parts folder is removed at the end."""
    smiles = ["CCO", "CCN", "CC(=O)O", "OCCO", "CC#N", "NCC(=O)O", "COC"]
    inputs = read_inputs(_write(tmp_path / "m.smi", "".join(f"{s}\n" for s in smiles)))
    options = {"conformers": 2, "seed": 3, "molecules_per_part": 2, "batch_conformers": 3, "show_progress": False}
    whole = label(inputs, tmp_path / "whole.parquet", run_batch=stand_in, **options)

    conformers = []

    def counting(atoms, **dft):
        conformers.extend(atoms)
        if len(conformers) > 9:  # parts 1 and 2 done (4 conformers each, batches of 3 and 1), part 3 begun
            raise Crash
        return stand_in(atoms)

    out = tmp_path / "out.parquet"
    with pytest.raises(Crash):
        label(inputs, out, run_batch=counting, **options)
    parts = tmp_path / "out.parquet.parts"
    manifest = json.loads((parts / "manifest.json").read_text())
    assert manifest["done"] == [0, 1, 2, 3] and not out.exists()
    with pytest.raises(ValueError, match=r"out\.parquet\.parts holds the parts of an unfinished labelling of other"):
        label(inputs, out, run_batch=never, **{**options, "seed": 4})
    conformers.clear()
    resumed = label(inputs, out, run_batch=counting, **options)
    assert len(conformers) == 2 * 3 and resumed["resumed"] == 4  # inputs 4, 5, 6 only
    assert pq.read_table(out).to_pylist() == pq.read_table(tmp_path / "whole.parquet").to_pylist()
    assert {k: v for k, v in resumed.items() if k not in ("out", "seconds", "resumed")} == {
        k: v for k, v in whole.items() if k not in ("out", "seconds", "resumed")
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.smi", "out.parquet", "whole.parquet"]


def test_a_label_part_whose_inputs_all_fail_alike_stops_with_nothing_written(tmp_path):
    inputs = read_inputs(_write(tmp_path / "m.smi", "CCO\nCCN\n"))

    def broken(atoms, **dft):
        raise KeyError("xc")

    with pytest.raises(RuntimeError, match=r"all 2 molecules of a part failed with KeyError, the first \(molecule 0, "
                                           r"CCO\) with \"KeyError: 'xc'\""):  # fmt: skip
        label(inputs, tmp_path / "out.parquet", run_batch=broken, show_progress=False)
    assert not (tmp_path / "out.parquet").exists()
    assert sorted(p.name for p in (tmp_path / "out.parquet.parts").iterdir()) == [".lock"]  # nothing marked done


def _write(path, text):
    path.write_text(text)
    return path


def test_command_line(tmp_path, monkeypatch, capsys):
    import papers.qm1b.generate as generate

    real = generate.label_parts
    monkeypatch.setattr(generate, "label_parts", lambda parts, dft, **kw: real(parts, dft, run_batch=stand_in))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    smi = _write(tmp_path / "m.smi", "CCO ethanol\n")
    xyz = _write(tmp_path / "w.xyz", xyz_block("water", WATER))
    out = tmp_path / "out.parquet"
    assert main([str(smi), str(xyz), "-o", str(out), "--conformers", "2", "--dtype", "float64"]) == 0
    assert "wrote 3 rows" in capsys.readouterr().out
    metadata = json.loads(pq.read_schema(out).metadata[b"dft"])
    assert metadata == {**DFT, "dtype": "float64"}
    for args, message in [
        ([str(tmp_path / "m.pdb"), "-o", str(out)], "unknown extension '.pdb'"),
        ([str(smi), "-o", str(out), "--basis", "sto-3gg"], "basis='sto-3gg' is not a basis PySCF knows"),
        ([str(smi), "-o", str(out), "--workers", "-1"], "workers=-1 must be an integer >= 0"),
        ([str(smi), "-o", "/proc/x.parquet"], "the output /proc/x.parquet cannot be written"),
        ([str(smi), "-o", str(tmp_path / "x.csv")], "must be a .parquet file"),
    ]:
        assert main(args) == 2
        assert message in capsys.readouterr().err


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
