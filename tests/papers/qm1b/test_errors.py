"""Errors that stop a QM1B run instead of becoming silent drops (issue 46): settings no molecule can be labelled with
are refused when the config is validated, before anything is written (a basis PySCF does not know or that lacks one of
QM1B's elements, exact ERIs too large for the largest molecule the selection admits); errors of the machine (memory,
a dead worker process, a full disk) stop the generator with nothing of the part marked done, and a resume then gives
the uninterrupted rows; a part whose molecules all fail with one exception type stops the run naming it, while one
bad molecule stays a counted drop; a dataset too small to train stops before the training, naming the drops.

The DFT is replaced by test_generate's stand-in (a function of the geometry), so these run in seconds."""

import errno
import json
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

import jax
import numpy as np
import pyarrow as pa
import pytest

import papers.qm1b.checks as checks_module
from core.config import ConfigError, validate_section
from core.data.molecules import embed_conformers
from papers.qm1b.config import Config
from papers.qm1b.dft import basis_aos, is_systematic
from papers.qm1b.dft.pipeline import Labeller
from papers.qm1b.generate import atom_string, conformer_seed, generate_shard, read_dataset, select_molecules
from papers.qm1b.run import check_trainable
from tests.papers.qm1b.test_generate import DFT, SEL, _rows, fake_dft

SHARD = "shard_00000_of_00001"


def never(atoms, **kwargs):
    raise AssertionError("the DFT ran")


def failing_at(call, exception):
    """fake_dft, except that its `call`-th call (1-based) and every later one raise `exception`."""
    calls = {"n": 0}

    def run(atoms, **kwargs):
        calls["n"] += 1
        if calls["n"] >= call:
            raise exception
        return fake_dft(atoms, **kwargs)

    return run


# ------------------------------------------------------------------------------------ refused when configured


def test_a_misspelled_basis_is_refused_with_its_name_and_the_closest_names():
    with pytest.raises(ConfigError, match=r"qm1b\.dft\.basis='sto-3gg' is not a basis PySCF knows.*'sto-3g'"):
        validate_section({"dft": {"basis": "sto-3gg"}}, Config, "qm1b")
    with pytest.raises(ValueError, match=r"basis='cc-pvdzz' is not a basis PySCF knows .*did you mean 'cc-pvdz'"):
        basis_aos("cc-pvdzz", ["H"])
    validate_section({"dft": {"basis": "6-31g"}}, Config, "qm1b")  # a name PySCF knows passes


def test_a_basis_without_an_element_of_qm1b_is_refused_naming_the_element():
    """IGLO-III (PySCF's iglo3) has functions for H, C and F but none for N or O."""
    assert basis_aos("iglo3", ["H", "C", "F"]) == {"H": 17, "C": 42, "F": 42}
    with pytest.raises(ConfigError, match=r"qm1b\.dft\.basis='iglo3' has no functions for N \(of the elements H, C, N"):
        validate_section({"dft": {"basis": "iglo3"}}, Config, "qm1b")


def test_basis_functions_are_the_spherical_counts():
    """Counts from the basis definitions (spherical): STO-3G 1s / 2s1p; 6-31G(d) 2s / 3s2p1d; cc-pVTZ 3s2p1d /
    4s3p2d1f."""
    assert basis_aos("sto-3g", ["H", "C", "F"]) == {"H": 1, "C": 5, "F": 5}
    assert basis_aos("6-31g*", ["H", "O"]) == {"H": 2, "O": 3 + 2 * 3 + 5}
    assert basis_aos("cc-pvtz", ["H", "N"]) == {"H": 3 + 2 * 3 + 5, "N": 4 + 3 * 3 + 2 * 5 + 7}


def test_exact_eris_too_large_for_the_largest_admitted_molecule_are_refused():
    """The default selection (6-7 heavy atoms, at most 14 H) in cc-pVTZ: 7 x 30 + 14 x 14 = 406 AOs. At 6-31G(d) the
    bound, 7 x 14 + 14 x 2 = 126 AOs, is a molecule QM9 holds (C7H14, methylcyclohexane, built by PySCF below); its
    [n^2, n^2] float32 matrix of 128 padded AOs is 1.07 GB, over the 1 GB limit; at 6 heavy atoms (112 AOs) it fits."""
    with pytest.raises(ConfigError, match=r"qm1b\.dft\.basis='cc-pvtz': the largest molecule .*\(7 heavy atoms, 14 H\) "
                                          r"has up to 406 AOs: exact ERIs of 406 AOs need .* GB"):  # fmt: skip
        validate_section({"dft": {"basis": "cc-pvtz"}}, Config, "qm1b")
    with pytest.raises(ConfigError, match=r"has up to 126 AOs: exact ERIs of 126 AOs need 1\.1 GB .*density_fit=true"):
        validate_section({"dft": {"basis": "6-31g*"}}, Config, "qm1b")
    # the drop sample's molecules (QM1B's 9 heavy atoms, 154 AOs at 6-31G(d)) are checked too, unless it is off
    with pytest.raises(ConfigError, match=r"has up to 154 AOs.*qm1b\.drops\.max_heavy=9"):
        validate_section({"dft": {"basis": "6-31g*"}, "data": {"max_heavy": 6}}, Config, "qm1b")
    off = {"molecules": 0}
    validate_section({"dft": {"basis": "6-31g*"}, "data": {"max_heavy": 6}, "drops": off}, Config, "qm1b")
    validate_section(
        {"dft": {"basis": "6-31g*", "dtype": "float64"}, "data": {"min_heavy": 5, "max_heavy": 5}, "drops": off},
        Config,
        "qm1b",
    )
    validate_section({"dft": {"basis": "cc-pvtz", "density_fit": True}}, Config, "qm1b")  # no n^4 matrix
    from pyscf import gto

    elements, positions = embed_conformers("CC1CCCCC1", 1, 0)
    assert (elements.count("C"), elements.count("H")) == (7, 14)
    assert gto.M(atom=atom_string(elements, positions[0]), basis="6-31g*", verbose=0).nao_nr() == 126


def test_the_generator_refuses_the_same_settings_before_writing_anything(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"basis='sto-3gg' is not a basis PySCF knows"):
        generate_shard(SEL, {**DFT, "basis": "sto-3gg"}, tmp_path, run_batch=never, show_progress=False)
    monkeypatch.setattr(
        checks_module, "EXACT_ERI_BYTES", 1e6
    )  # QM1B's molecules (up to 59 AOs in STO-3G) no longer fit
    with pytest.raises(ValueError, match=r"\(9 heavy atoms, 14 H\) has up to 59 AOs: exact ERIs of 59 AOs"):
        generate_shard(SEL, DFT, tmp_path, run_batch=never, show_progress=False)
    assert list(tmp_path.iterdir()) == []


def test_the_reproduce_command_refuses_a_misspelled_basis_before_any_work(cli, tmp_path):
    args = ["paper=qm1b", "scale=smoke", "logger=none", f"output_root={tmp_path}", "qm1b.dft.basis=sto-3gg"]
    r = cli(args, toy=False)
    assert r.returncode != 0
    assert "qm1b.dft.basis='sto-3gg' is not a basis PySCF knows" in r.stderr, r.stderr[-3000:]
    assert "max() arg is an empty sequence" not in r.stderr
    assert not (tmp_path / "qm1b" / "data").exists()  # nothing labelled, nothing marked done


# ------------------------------------------------------------------------------------ errors of the machine


def test_errors_of_the_machine_are_told_apart_from_a_molecules():
    machine = [
        MemoryError(),
        BrokenProcessPool("A process in the process pool was terminated abruptly"),
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.ENOMEM, "Cannot allocate memory"),
        jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8.00GiB."),
    ]
    molecule = [ValueError("9 electrons"), np.linalg.LinAlgError("singular"), OSError(errno.ENOENT, "No such file")]
    molecule.append(jax.errors.JaxRuntimeError("INTERNAL: an XLA error that is not memory"))
    assert [is_systematic(e) for e in machine] == [True] * len(machine)
    assert [is_systematic(e) for e in molecule] == [False] * len(molecule)


@pytest.mark.parametrize(
    "exception",
    [MemoryError(), BrokenProcessPool("terminated abruptly"), OSError(errno.ENOSPC, "No space left on device")],
    ids=["MemoryError", "BrokenProcessPool", "ENOSPC"],
)
def test_an_error_of_the_machine_stops_the_shard_with_its_part_undone(tmp_path, exception):
    """3 parts of 2 molecules, 2 batches of 2 conformers each: the error comes at the first batch of the second part.
    The first part stays, nothing of the second is written or marked done, no molecule is dropped for it, and a
    resume with a healthy machine gives the uninterrupted run's rows."""
    options = {"molecules_per_part": 2, "batch_conformers": 2, "show_progress": False}
    whole = generate_shard(SEL, DFT, tmp_path / "whole", run_batch=fake_dft, **options)
    with pytest.raises(type(exception)):
        generate_shard(SEL, DFT, tmp_path / "cut", run_batch=failing_at(3, exception), **options)
    shard = tmp_path / "cut" / SHARD
    manifest = json.loads((shard / "manifest.json").read_text())
    assert [p["file"] for p in manifest["parts"]] == ["part_00000.parquet"] and len(manifest["done"]) == 2
    assert not any(k.startswith("error:") for k in manifest["dropped"]) and manifest["errors"] == []
    assert sorted(p.name for p in shard.iterdir()) == [".lock", "manifest.json", "part_00000.parquet"]
    resumed = generate_shard(SEL, DFT, tmp_path / "cut", run_batch=fake_dft, **options)
    assert _rows(read_dataset(tmp_path / "cut", 1)) == _rows(read_dataset(tmp_path / "whole", 1))
    assert resumed["dropped"] == whole["dropped"] and sorted(resumed["done"]) == sorted(whole["done"])


def test_the_labeller_raises_errors_of_the_machine_and_returns_a_molecules(monkeypatch):
    """Preparation (workers=0: in this process; a worker's future), the batch's SCF and the one-by-one retry."""
    import papers.qm1b.dft.pipeline as pipeline

    water = "O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692"
    real_build = pipeline.build_problem

    def build(exception):
        def run(atom, *args):
            raise exception

        return run

    for exception, raises in [(MemoryError(), True), (ValueError("9 electrons"), False)]:
        monkeypatch.setattr(pipeline, "build_problem", build(exception))
        with Labeller(workers=0) as labeller:
            if raises:
                with pytest.raises(MemoryError):
                    list(labeller.map([[water]]))
            else:
                assert list(labeller.map([[water]])) == [[exception]]
    monkeypatch.setattr(pipeline, "build_problem", real_build)

    def broken(self, atoms):
        f = Future()
        f.set_exception(BrokenProcessPool("A process in the process pool was terminated abruptly"))
        return [f for _ in atoms]

    with monkeypatch.context() as m:
        m.setattr(Labeller, "_submit", broken)
        with Labeller(workers=0) as labeller, pytest.raises(BrokenProcessPool):
            list(labeller.map([[water]]))

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(pipeline, "dispatch", out_of_memory)  # the batch's SCF
    with Labeller(workers=0) as labeller, pytest.raises(MemoryError):
        list(labeller.map([[water]]))
    monkeypatch.setattr(pipeline, "dispatch", lambda *a, **k: None)  # the batch "raised": one by one
    monkeypatch.setattr(pipeline, "solve", out_of_memory)
    with Labeller(workers=0) as labeller, pytest.raises(MemoryError):
        list(labeller.map([[water]]))


# ------------------------------------------------------------------------------------ a part that fails whole


def test_a_part_whose_molecules_all_fail_alike_stops_the_run_naming_the_exception(tmp_path):
    chosen = select_molecules(SEL)[0]
    cause = ValueError("basis sto-3gg not found")
    message = rf"all 2 molecules of a part failed with ValueError, the first \(molecule {chosen[0][0]}, .+\) with "
    with pytest.raises(RuntimeError, match=message + "'ValueError: basis sto-3gg not found'") as e:
        generate_shard(SEL, DFT, tmp_path, run_batch=failing_at(1, cause), molecules_per_part=2, show_progress=False)
    assert e.value.__cause__ is cause
    assert chosen[0][1] in str(e.value)  # the first molecule's SMILES
    assert not (tmp_path / SHARD / "manifest.json").exists()  # nothing marked done
    assert not list((tmp_path / SHARD).glob("part_*"))


def test_one_bad_molecule_and_mixed_failures_stay_counted_drops(tmp_path):
    """A part of 3 molecules whose second raises, a part whose 3 molecules all fail but with two exception types,
    and parts of one molecule that fail (one bad molecule must not stop every resume): drops, not stops."""
    chosen = select_molecules(SEL)[0]
    bad = {chosen[1][1]: ValueError("SCF exploded"), chosen[3][1]: ValueError("a"), chosen[4][1]: KeyError("b")}
    bad[chosen[5][1]] = ValueError("c")
    poisoned = {}
    for index, smiles in chosen:
        if smiles in bad:
            elements, positions = embed_conformers(smiles, SEL.conformers, conformer_seed(SEL, index))
            poisoned.update({atom_string(elements, p): bad[smiles] for p in positions})

    def run(atoms, **kwargs):
        for a in atoms:
            if a in poisoned:
                raise poisoned[a]
        return fake_dft(atoms, **kwargs)

    manifest = generate_shard(SEL, DFT, tmp_path / "a", run_batch=run, molecules_per_part=3, show_progress=False)
    assert manifest["dropped"]["error:ValueError"] == 3 * SEL.conformers
    assert manifest["dropped"]["error:KeyError"] == SEL.conformers and len(manifest["done"]) == 6
    assert [e["smiles"] for e in manifest["errors"]] == [chosen[k][1] for k in (1, 3, 4, 5)]

    always = failing_at(1, ValueError("SCF exploded"))
    one = generate_shard(SEL, DFT, tmp_path / "b", run_batch=always, molecules_per_part=1, show_progress=False)
    assert one["dropped"] == {"error:ValueError": 6 * SEL.conformers} and len(one["done"]) == 6


# ------------------------------------------------------------------------------------ too few rows to train


def test_too_few_rows_to_train_stop_before_the_training_naming_the_drops(tmp_path):
    c, _ = validate_section({}, Config, "qm1b")  # the default: SchNet's largest size is 500 training conformers
    manifests = [
        {"rows": 0, "dropped": {"std": 9}, "errors": []},
        {"rows": 0, "dropped": {"std": 1, "error:ValueError": 2}, "errors": [
            {"molecule": 7, "smiles": "CCO", "error": "ValueError: x"}]},
    ]  # fmt: skip
    empty = pa.table({"smile": pa.array([], pa.string())})
    with pytest.raises(ValueError, match=r"has 0 rows \(0 for training\), but qm1b\.schnet\.sizes needs 500 training "
                                         r"conformers: of 12 conformers labelled, dropped \{'std': 10, "
                                         r"'error:ValueError': 2\}; the first error: molecule 7 \(CCO\)"):  # fmt: skip
        check_trainable(empty, manifests, c, 0, tmp_path)
    enough = pa.table({"smile": [f"C{i}" for i in range(800)]})  # 600 molecules for training
    check_trainable(enough, [{"rows": 800, "dropped": {}, "errors": []}], c, 0, tmp_path)
