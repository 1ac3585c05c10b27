"""The dataset generator: QM1B's filters, seeded conformers, sharding (one sharding per dataset, read exactly), a
lock per shard, failures as counted drops, atomic parts and resumption (SIGKILLed at each stage of writing a part:
test_kill_safety.py).

The DFT is replaced by a cheap deterministic stand-in (a function of the geometry), so these tests check the
pipeline, not the physics (tests/papers/qm1b/test_dft.py does that)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.data.molecules import MoleculeError, embed_conformers
from core.provenance import REPO_ROOT
from papers.qm1b.generate import (
    ANGSTROM_BOHR,
    HARTREE_EV,
    Selection,
    atom_string,
    check_molecule,
    conformer_rows,
    conformer_seed,
    dataset_key,
    generate_shard,
    labelling_fingerprint,
    read_dataset,
    select_molecules,
    shard_lock,
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


class Interrupted(BaseException):  # like a KeyboardInterrupt: not a failure of one molecule
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
    reference = _rows(read_dataset(tmp_path / "one", 1))
    assert len(reference) == whole["rows"]

    for k in range(3):
        generate_shard(SEL, DFT, tmp_path / "three", shard=k, num_shards=3, run_batch=fake_dft, show_progress=False)
    assert _rows(read_dataset(tmp_path / "three", 3)) == reference

    # killed while computing its 4th batch of 2 conformers (the 2nd batch of the 2nd part): the first part (2
    # molecules) is kept, the 3rd molecule's labels are lost and redone
    with pytest.raises(Interrupted):
        generate_shard(
            SEL,
            DFT,
            tmp_path / "killed",
            run_batch=interrupting(3),
            molecules_per_part=2,
            batch_conformers=2,
            show_progress=False,
        )
    shard_dir = tmp_path / "killed" / "shard_00000_of_00001"
    manifest = json.loads((shard_dir / "manifest.json").read_text())
    assert len(manifest["done"]) == 2 and len(manifest["parts"]) == 1
    (shard_dir / "part_00001.parquet").write_bytes(b"half-written")  # a part the manifest never listed
    resumed = generate_shard(
        SEL, DFT, tmp_path / "killed", run_batch=fake_dft, molecules_per_part=2, show_progress=False
    )
    assert len(resumed["done"]) == 6 and len(set(resumed["done"])) == 6
    assert _rows(read_dataset(tmp_path / "killed", 1)) == reference
    assert resumed["dropped"] == whole["dropped"]


def test_a_shard_directory_refuses_another_dataset(tmp_path):
    generate_shard(SEL, DFT, tmp_path, run_batch=fake_dft, show_progress=False)
    with pytest.raises(ValueError, match="holds another dataset"):
        generate_shard(SEL, {**DFT, "iterations": 10}, tmp_path, run_batch=fake_dft, show_progress=False)
    with pytest.raises(ValueError, match=r"shard=3 must be in \[0, num_shards=3\)"):
        generate_shard(SEL, DFT, tmp_path, shard=3, num_shards=3, run_batch=fake_dft)


def _copy_labelling_code(root: Path) -> None:
    for rel in ("core", "ipu_model", "papers"):
        shutil.copytree(REPO_ROOT / rel, root / rel, ignore=shutil.ignore_patterns("__pycache__"))


def test_a_change_to_the_labelling_code_relabels_instead_of_reusing(tmp_path):
    from papers.qm1b.run import dataset_directory

    # the fingerprint covers the labelling code: a comment does not change it, a line of code does
    root = tmp_path / "repo"
    _copy_labelling_code(root)
    before = labelling_fingerprint(root)
    assert before == labelling_fingerprint()  # the same files give the same fingerprint wherever they lie
    generator = root / "papers" / "qm1b" / "generate.py"
    generator.write_text(generator.read_text() + "\n# a comment\n")
    assert labelling_fingerprint(root) == before
    schnet = root / "papers" / "qm1b" / "schnet.py"  # code that trains on the dataset is not labelling code
    schnet.write_text(schnet.read_text() + "\nEXTRA_TRAINING_CONSTANT = 1\n")
    assert labelling_fingerprint(root) == before
    dft = root / "papers" / "qm1b" / "dft" / "pipeline.py"  # the labeller generate_shard imports where it runs
    dft.write_text(dft.read_text().replace("class Labeller:\n", "class Labeller:\n    EXTRA = 0\n", 1))
    assert labelling_fingerprint(root) != before
    dft.write_text((REPO_ROOT / "papers" / "qm1b" / "dft" / "pipeline.py").read_text())
    assert labelling_fingerprint(root) == before
    generator.write_text(generator.read_text() + "MAX_STD_EV = MAX_STD_EV * 1.0\n")
    after = labelling_fingerprint(root)
    assert after != before
    assert dataset_key(SEL, DFT, before) != dataset_key(SEL, DFT, after)

    calls = {"conformers": 0}

    def counting(atoms, **kwargs):
        calls["conformers"] += len(atoms)
        return fake_dft(atoms, **kwargs)

    out = tmp_path / "out"
    old_dir = dataset_directory(out, SEL, DFT, before)
    first = generate_shard(SEL, DFT, old_dir, run_batch=counting, code=before, show_progress=False)
    assert calls["conformers"] == 12 and first["code"] == before
    generate_shard(SEL, DFT, old_dir, run_batch=counting, code=before, show_progress=False)
    assert calls["conformers"] == 12  # the same code resumes: nothing recomputed
    # a resumed run of the changed code keys its dataset elsewhere and labels every conformer again
    new_dir = dataset_directory(out, SEL, DFT, after)
    assert new_dir != old_dir and new_dir.parent == old_dir.parent
    second = generate_shard(SEL, DFT, new_dir, run_batch=counting, code=after, show_progress=False)
    assert calls["conformers"] == 24 and second["code"] == after and len(second["done"]) == 6
    # and the old dataset's directory refuses the changed code rather than mixing two codes' rows
    with pytest.raises(ValueError, match=f"labelled by other code.*{before}.*this code {after}"):
        generate_shard(SEL, DFT, old_dir, run_batch=counting, code=after, show_progress=False)


def test_a_dataset_holds_one_sharding_and_is_read_exactly(tmp_path):
    """The README's SLURM recipe, then `stage=all` without num_shards: the second sharding is refused before it
    labels anything, and reading takes exactly the N shards asked for (6 molecules, no row twice); a missing or
    unfinished shard is named."""
    for k in range(3):
        generate_shard(SEL, DFT, tmp_path, shard=k, num_shards=3, run_batch=fake_dft, show_progress=False)
    rows = read_dataset(tmp_path, 3)
    assert sorted(set(rows.column("molecule").to_pylist())) == sorted(m for m, _ in select_molecules(SEL)[0])
    assert len(_rows(rows)) == len(set(_rows(rows)))  # no row twice
    with pytest.raises(
        ValueError, match=r"holds another sharding of this dataset \(num_shards=3: shard_00000_of_00003"
    ):
        generate_shard(SEL, DFT, tmp_path, shard=0, num_shards=1, run_batch=fake_dft, show_progress=False)
    assert not (tmp_path / "shard_00000_of_00001").exists()  # refused before it started
    with pytest.raises(ValueError, match="Run with num_shards=3 to finish or read it"):
        read_dataset(tmp_path, 1)

    partial = tmp_path / "partial"
    generate_shard(SEL, DFT, partial, shard=0, num_shards=3, run_batch=fake_dft, show_progress=False)
    with pytest.raises(Interrupted):
        generate_shard(
            SEL, DFT, partial, shard=1, num_shards=3, run_batch=interrupting(1), molecules_per_part=1,
            show_progress=False,
        )  # fmt: skip
    with pytest.raises(
        ValueError, match=r"shard_00001_of_00003 unfinished \(1 of 2 molecules\); shard_00002_of_00003 missing"
    ):
        read_dataset(partial, 3)


def test_a_second_writer_of_a_shard_fails_at_once(tmp_path):
    """Another process holding the shard's lock (a stage=all started while a SLURM job still runs): this one
    stops before touching the shard, naming the lock; once the lock is free it runs."""
    folder = tmp_path / "shard_00000_of_00001"
    folder.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
         "print('locked', flush=True); time.sleep(60)", str(folder / ".lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RuntimeError, match=r"being written by another process \(it holds .*\.lock\)"):
            generate_shard(SEL, DFT, tmp_path, run_batch=fake_dft, show_progress=False)
        assert not (folder / "manifest.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert len(generate_shard(SEL, DFT, tmp_path, run_batch=fake_dft, show_progress=False)["done"]) == 6
    with shard_lock(folder):  # the lock is taken per writer, in this process too
        with pytest.raises(RuntimeError, match="being written by another process"):
            generate_shard(SEL, DFT, tmp_path, run_batch=fake_dft, show_progress=False)


def test_a_failing_molecule_is_a_counted_drop_not_a_crash(tmp_path):
    """A labelling error of one molecule (here the DFT raising whenever the third molecule's first conformer is in
    its batch, which holds conformers of several molecules) drops that molecule's rows with the reason and the
    exception's last line; the other molecules of its batch and part are labelled, and a resume does not retry it."""
    index, bad = select_molecules(SEL)[0][2]
    elements, positions = embed_conformers(bad, SEL.conformers, conformer_seed(SEL, index))
    poison = atom_string(elements, positions[0])
    calls = {"n": 0}

    def run(atoms, **kwargs):
        calls["n"] += 1
        if poison in atoms:
            raise np.linalg.LinAlgError("SCF matrix is singular")
        return fake_dft(atoms, **kwargs)

    manifest = generate_shard(SEL, DFT, tmp_path, run_batch=run, molecules_per_part=2, show_progress=False)
    assert manifest["dropped"]["error:LinAlgError"] == SEL.conformers and len(manifest["done"]) == 6
    (error,) = manifest["errors"]
    assert error["smiles"] == bad and error["error"].endswith("LinAlgError: SCF matrix is singular")
    table = read_dataset(tmp_path, 1)
    assert bad not in table.column("smile").to_pylist()
    assert (
        len(table)
        == manifest["rows"]
        == 5 * SEL.conformers - sum(v for k, v in manifest["dropped"].items() if k != "error:LinAlgError")
    )
    calls["n"] = 0
    again = generate_shard(SEL, DFT, tmp_path, run_batch=fake_dft, show_progress=False)
    assert again == manifest and calls["n"] == 0  # nothing left to do: the drop is final


def test_batches_span_molecules_and_do_not_change_rows(tmp_path):
    """Conformers of a part's molecules share batches (of batch_conformers, by size); the rows are the same
    whatever the batch size."""
    sizes = []

    def run(atoms, **kwargs):
        sizes.append(len(atoms))
        return fake_dft(atoms, **kwargs)

    one = generate_shard(
        SEL, DFT, tmp_path / "a", run_batch=run, molecules_per_part=3, batch_conformers=1, show_progress=False
    )
    assert set(sizes) == {1}
    sizes.clear()
    many = generate_shard(
        SEL, DFT, tmp_path / "b", run_batch=run, molecules_per_part=3, batch_conformers=5, show_progress=False
    )
    assert max(sizes) == 5 > SEL.conformers  # a batch holds conformers of two molecules
    assert _rows(read_dataset(tmp_path / "a", 1)) == _rows(read_dataset(tmp_path / "b", 1))
    assert one["dropped"] == many["dropped"]
    with pytest.raises(ValueError, match="batch_conformers=0 must be at least 1"):
        generate_shard(SEL, DFT, tmp_path / "c", run_batch=run, batch_conformers=0)


def test_bad_selection_values_are_named():
    with pytest.raises(ValueError, match="source='gdb11'"):
        Selection(source="gdb11")
    with pytest.raises(ValueError, match=r"heavy atoms \[10, 9\]"):
        Selection(min_heavy=10, max_heavy=9)
