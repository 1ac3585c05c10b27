"""Molecule featurisation for GPS++ (Masters et al. 2022, arXiv 2212.02229), QM9 standing in for PCQM4Mv2.

A molecule becomes a graph of its HEAVY atoms, as in PCQM4Mv2/OGB: the SMILES is parsed by RDKit
(`Chem.MolFromSmiles`) without adding hydrogens, which stay implicit and enter only through the "number of Hs"
feature. Per molecule (`featurise` -> `MoleculeGraph`):

- OGB's categorical atom features (`ATOM_FEATURES`, vocabulary sizes `ATOM_VOCAB`) and bond features
  (`BOND_FEATURES`, `BOND_VOCAB`); a value outside a vocabulary maps to its last ("misc") entry.
- Directed edges: RDKit bond b becomes edges 2b (begin -> end) and 2b+1 (end -> begin).
- Random-walk structural encoding (RWSE): diag(P^k), k = 1..16, with P = D^-1 A.
- Laplacian positional encoding: 7 non-trivial eigenpairs of the symmetric normalised Laplacian.
- Shortest-path distances (in bonds) between all atom pairs, capped; 255 for atoms in different fragments.
- Optional 3D positions of the heavy atoms (from QM9's geometries), checked against the graph; a molecule whose
  geometry does not fit keeps its graph but loses its positions (`geometry_issue`), and the model masks its 3D
  features.

Many molecules are stored together in a `papers.gps.graphs.GraphSet`; `papers.gps.cache` featurises QM9 into one
and caches it on disk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rdkit import Chem, RDLogger

from core.data.molecules import MoleculeError

FEATURE_VERSION = 1  # bump whenever a feature's definition changes: cached files of another version are refused

RANDOM_WALK_STEPS = 16  # k = 1..16 in diag(P^k)
LAPLACIAN_PAIRS = 7  # eigenpairs kept after dropping the trivial one
UNREACHABLE = 255  # spd of two atoms in different fragments (a SMILES with '.')
MAX_BOND_LENGTH = 2.0  # Angstrom: a longer bond means the geometry does not belong to the graph
GEOMETRY_MISMATCH = "geometry_mismatch"

ATOM_FEATURES = (
    "atomic_num",
    "chirality",
    "degree",
    "formal_charge",
    "num_hs",
    "num_radical_electrons",
    "hybridization",
    "is_aromatic",
    "is_in_ring",
)
ATOM_VOCAB = (119, 5, 12, 12, 10, 6, 6, 2, 2)
BOND_FEATURES = ("bond_type", "stereo", "is_conjugated")
BOND_VOCAB = (5, 6, 2)

CHIRALITY = ("CHI_UNSPECIFIED", "CHI_TETRAHEDRAL_CW", "CHI_TETRAHEDRAL_CCW", "CHI_OTHER")  # then misc
HYBRIDIZATION = ("SP", "SP2", "SP3", "SP3D", "SP3D2")  # then misc (S, UNSPECIFIED, SP2D, OTHER)
BOND_TYPES = ("SINGLE", "DOUBLE", "TRIPLE", "AROMATIC")  # then misc
# OGB's stereo list has no misc entry; stereo kinds it lacks (RDKit's atropisomer STEREOATROPCW/CCW) map to its last
# entry, STEREOANY ("stereo of an unspecified kind").
BOND_STEREO = ("STEREONONE", "STEREOZ", "STEREOE", "STEREOCIS", "STEREOTRANS", "STEREOANY")

_CHIRALITY_INDEX = {getattr(Chem.ChiralType, name): i for i, name in enumerate(CHIRALITY)}
_HYBRIDIZATION_INDEX = {getattr(Chem.HybridizationType, name): i for i, name in enumerate(HYBRIDIZATION)}
_BOND_TYPE_INDEX = {getattr(Chem.BondType, name): i for i, name in enumerate(BOND_TYPES)}
_BOND_STEREO_INDEX = {getattr(Chem.BondStereo, name): i for i, name in enumerate(BOND_STEREO)}

# Atom features are read as raw integers (chirality and hybridization already as list positions), then each column
# is bucketed at once: a value v in [lo, hi] becomes v - lo, anything else hi - lo + 1 (misc).
_ATOM_LO = np.array([1, 0, 0, -5, 0, 0, 0, 0, 0])
_ATOM_HI = np.array([118, 3, 10, 5, 8, 4, 4, 1, 1])


@dataclass(frozen=True, eq=False)
class MoleculeGraph:
    """One molecule of n heavy atoms and e directed edges (each bond twice, u -> v then v -> u)."""

    atoms: np.ndarray  # [n, 9] int16, ATOM_FEATURES
    bonds: np.ndarray  # [e, 3] int16, BOND_FEATURES
    senders: np.ndarray  # [e] int32
    receivers: np.ndarray  # [e] int32
    random_walk: np.ndarray  # [n, 16] float32, diag(P^k)
    lap_vec: np.ndarray  # [n, 7] float32
    lap_val: np.ndarray  # [7] float32
    degree: np.ndarray  # [n] int16, heavy-atom neighbours
    spd: np.ndarray  # [n, n] uint8
    positions: np.ndarray | None  # [n, 3] float32 Angstrom, or None (no geometry, or one that does not fit)
    geometry_issue: str | None  # why given positions were dropped ('geometry_mismatch'), else None

    @property
    def num_nodes(self) -> int:
        return len(self.atoms)

    @property
    def num_edges(self) -> int:
        return len(self.senders)


def check_max_spd(max_spd: int) -> int:
    if isinstance(max_spd, bool) or not isinstance(max_spd, int | np.integer) or not 1 <= max_spd < UNREACHABLE:
        raise ValueError(
            f"max_spd={max_spd!r} must be an integer in [1, {UNREACHABLE - 1}] ({UNREACHABLE} = unreachable)"
        )
    return int(max_spd)


def _parse(smiles: str) -> Chem.Mol:
    """RDKit molecule with implicit hydrogens (no AddHs); MoleculeError('invalid_smiles') if RDKit cannot parse it."""
    RDLogger.DisableLog("rdApp.*")  # failures are counted by the caller, not printed
    mol = Chem.MolFromSmiles(smiles) if isinstance(smiles, str) and smiles else None
    if mol is None:
        raise MoleculeError("invalid_smiles", f"RDKit cannot parse the SMILES {smiles!r}")
    return mol


def _atoms(mol: Chem.Mol) -> list[Chem.Atom]:
    return list(map(mol.GetAtomWithIdx, range(mol.GetNumAtoms())))  # ~3x faster than iterating mol.GetAtoms()


def _atom_raw(atoms: list[Chem.Atom]) -> np.ndarray:
    """[n, 9] int64 raw atom values (chirality and hybridization already as positions in their lists)."""
    return np.array(
        [
            (
                a.GetAtomicNum(),
                _CHIRALITY_INDEX.get(a.GetChiralTag(), len(CHIRALITY)),
                a.GetTotalDegree(),
                a.GetFormalCharge(),
                a.GetTotalNumHs(),
                a.GetNumRadicalElectrons(),
                _HYBRIDIZATION_INDEX.get(a.GetHybridization(), len(HYBRIDIZATION)),
                a.GetIsAromatic(),
                a.IsInRing(),
            )
            for a in atoms
        ],
        np.int64,
    ).reshape(-1, len(ATOM_FEATURES))


def _bucket(raw: np.ndarray) -> np.ndarray:
    inside = (raw >= _ATOM_LO) & (raw <= _ATOM_HI)
    return np.where(inside, raw - _ATOM_LO, _ATOM_HI - _ATOM_LO + 1).astype(np.int16)


def atom_features(mol: Chem.Mol) -> np.ndarray:
    """[n, 9] int16 OGB atom features (ATOM_FEATURES) of every atom of `mol`.

    Note the `degree` feature is RDKit's GetTotalDegree (hydrogens included, as OGB), unlike `MoleculeGraph.degree`,
    which counts heavy-atom neighbours only (benzene: feature 3, graph degree 2)."""
    return _bucket(_atom_raw(_atoms(mol)))


def _bond_table(mol: Chem.Mol) -> np.ndarray:
    """[bonds, 5] int64: begin, end, bond type, stereo, is_conjugated (list positions), in RDKit's bond order."""
    return np.array(
        [
            (
                b.GetBeginAtomIdx(),
                b.GetEndAtomIdx(),
                _BOND_TYPE_INDEX.get(b.GetBondType(), len(BOND_TYPES)),
                _BOND_STEREO_INDEX.get(b.GetStereo(), len(BOND_STEREO) - 1),
                b.GetIsConjugated(),
            )
            for b in map(mol.GetBondWithIdx, range(mol.GetNumBonds()))
        ],
        np.int64,
    ).reshape(-1, 5)


def _spectrum(adjacency: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All eigenpairs (ascending) of L = I - D^-1/2 A D^-1/2, with D^-1/2 = 0 for isolated atoms."""
    deg = adjacency.sum(axis=1)
    inv_sqrt = np.where(deg > 0, 1.0 / np.sqrt(np.maximum(deg, 1.0)), 0.0)
    return np.linalg.eigh(np.eye(len(adjacency)) - inv_sqrt[:, None] * adjacency * inv_sqrt[None, :])


def _random_walk(values: np.ndarray, vectors: np.ndarray, steps: int) -> np.ndarray:
    # diag(P^k) = diag(S^k) = sum_j V_ij^2 mu_j^k with S = I - L = V diag(mu) V^T (see random_walk_landing)
    mu = 1.0 - values
    return np.clip((vectors * vectors) @ (mu[:, None] ** np.arange(1, steps + 1)), 0.0, 1.0)


def random_walk_landing(adjacency: np.ndarray, steps: int = RANDOM_WALK_STEPS) -> np.ndarray:
    """RWSE: [n, steps] float64, column k-1 = diag(P^k) with P = D^-1 A the random-walk transition matrix.

    (P^k)_ii is the probability that a walk from atom i, stepping to a uniformly chosen neighbour each time, is back
    at i after exactly k steps. Computed from the eigen-decomposition the Laplacian encoding needs anyway:
    P = D^-1/2 S D^1/2 with S = D^-1/2 A D^-1/2 = I - L, so P^k = D^-1/2 S^k D^1/2 has the same diagonal as S^k,
    and with S = V diag(mu) V^T (mu = 1 - lambda, |mu| <= 1) diag(S^k)_i = sum_j V_ij^2 mu_j^k: all 16 steps in one
    product, exact to ~n * 1e-16 (clipped to [0, 1]). An isolated atom has a zero row in P and in S (its L row is
    that of I: mu = 0), so all its values are 0.
    """
    values, vectors = _spectrum(adjacency)
    return _random_walk(values, vectors, steps)


def _laplacian_pe(values: np.ndarray, vectors: np.ndarray, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(values)
    keep = min(n, pairs + 1) - 1
    vec = np.zeros((n, pairs))
    val = np.zeros(pairs)
    if keep > 0:
        v = vectors[:, 1 : keep + 1]
        v = v / np.linalg.norm(v, axis=0)
        peak = v[np.abs(v).argmax(axis=0), np.arange(keep)]
        vec[:, :keep] = v * np.where(peak < 0, -1.0, 1.0)
        val[:keep] = np.clip(values[1 : keep + 1], 0.0, 2.0)  # rounding can leave -1e-16 or 2 + 1e-16
    return vec, val


def laplacian_eigenpairs(adjacency: np.ndarray, pairs: int = LAPLACIAN_PAIRS) -> tuple[np.ndarray, np.ndarray]:
    """Laplacian positional encoding: ([n, pairs] eigenvectors, [pairs] eigenvalues), float64.

    L = I - D^-1/2 A D^-1/2 (D^-1/2 taken as 0 for an isolated atom, whose row of L is then that of I) is symmetric
    with eigenvalues in [0, 2]; 0 is always one (eigenvector proportional to sqrt(degree)) and carries no position,
    so of the `pairs + 1` smallest eigenpairs (numpy eigh, ascending) the first is dropped. Molecules with fewer
    atoms get zero columns/values for the missing pairs. A disconnected molecule has one 0 eigenvalue per fragment;
    only the first is dropped.

    Each eigenvector is L2-normalised but defined only up to sign (and, for a repeated eigenvalue, up to a rotation
    within its eigenspace, e.g. benzene's pairs 1 - cos(2 pi k / 6) for k and 6 - k). For reproducibility the sign is
    fixed here so that the entry of largest magnitude is positive, but the model must not rely on it: GPS++ flips
    the signs at random during training.
    """
    values, vectors = _spectrum(adjacency)
    return _laplacian_pe(values, vectors, pairs)


def shortest_path_distances(adjacency: np.ndarray, max_spd: int = 20) -> np.ndarray:
    """[n, n] uint8 shortest-path lengths in bonds, capped at `max_spd`; UNREACHABLE (255) between fragments.

    Breadth-first search from all atoms at once on the dense adjacency: R_k = [(I + A)^k > 0] marks the pairs at
    most k bonds apart, R_k = min(R_(k-1) (I + A), 1). Iterating until R stops growing (K <= n - 1 steps), a
    reachable pair at distance d is in R_k for k = d..K, so d = K + 1 - sum_k R_k; pairs never reached are in
    different fragments. Same result as scipy.sparse.csgraph.shortest_path(A, unweighted=True), which spends
    ~0.6 ms per small graph on input checks, more than the rest of the featurisation.
    """
    max_spd = check_max_spd(max_spd)
    n = len(adjacency)
    step = adjacency + np.eye(n)
    reach = np.eye(n)
    count = reach.copy()
    size, k = float(n), 0
    while k < n - 1:
        reach = np.minimum(reach @ step, 1.0)
        new_size = reach.sum()
        if new_size == size:
            break
        count += reach
        size, k = new_size, k + 1
    dist = np.minimum(k + 1 - count, max_spd).astype(np.uint8)
    dist[reach == 0] = UNREACHABLE
    return dist


def _heavy_positions(
    symbols: list[str], positions: np.ndarray, elements: Sequence[str], edges: np.ndarray
) -> np.ndarray | None:
    """The rows of `positions` that are not hydrogens, or None when they do not belong to this graph: heavy element
    symbols differ from the graph's atoms (in order), or a bond is longer than MAX_BOND_LENGTH (or not finite)."""
    pos = np.asarray(positions, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3 or len(pos) != len(elements):
        raise ValueError(
            f"positions of shape {pos.shape} must be [atoms, 3] with one row per entry of elements ({len(elements)})"
        )
    heavy = [i for i, e in enumerate(elements) if e != "H"]
    if [elements[i] for i in heavy] != symbols:
        return None
    pos = pos[heavy]
    lengths = np.linalg.norm(pos[edges[:, 0]] - pos[edges[:, 1]], axis=1)
    if not np.all(lengths <= MAX_BOND_LENGTH):  # NaN fails too
        return None
    return pos.astype(np.float32)


def featurise(
    smiles: str,
    positions: np.ndarray | None = None,
    elements: Sequence[str] | None = None,
    *,
    max_spd: int = 20,
) -> MoleculeGraph:
    """The GPS++ graph of one molecule (heavy atoms only; see the module docstring and `MoleculeGraph`).

    The nodes are the atoms of RDKit's Chem.MolFromSmiles (hydrogens implicit; only hydrogens RDKit keeps as atoms,
    e.g. isotopes like [2H], stay nodes, as in OGB). `positions` [atoms, 3] (Angstrom) and `elements` (one symbol per
    row, hydrogens included, as QM9 gives them) go together; their non-'H' rows become the graph's positions when
    they match it, else positions is None and geometry_issue 'geometry_mismatch'. Raises
    MoleculeError('invalid_smiles') for a SMILES RDKit cannot parse and MoleculeError('no_heavy_atoms') for one
    without heavy atoms (e.g. '[H][H]').
    """
    max_spd = check_max_spd(max_spd)
    if (positions is None) != (elements is None):
        raise ValueError("positions and elements must be given together (elements names the atom of each row)")
    mol = _parse(smiles)
    atoms = _atoms(mol)
    raw = _atom_raw(atoms)
    if not np.any(raw[:, 0] > 1):
        raise MoleculeError("no_heavy_atoms", f"the SMILES {smiles!r} has no heavy atom")
    n = len(atoms)
    table = _bond_table(mol)
    edges = table[:, :2]
    adjacency = np.zeros((n, n))
    adjacency[edges[:, 0], edges[:, 1]] = 1.0
    adjacency[edges[:, 1], edges[:, 0]] = 1.0
    values, vectors = _spectrum(adjacency)
    lap_vec, lap_val = _laplacian_pe(values, vectors, LAPLACIAN_PAIRS)

    heavy_positions, issue = None, None
    if positions is not None:
        heavy_positions = _heavy_positions([a.GetSymbol() for a in atoms], positions, elements, edges)
        issue = GEOMETRY_MISMATCH if heavy_positions is None else None

    return MoleculeGraph(
        atoms=_bucket(raw),
        bonds=np.repeat(table[:, 2:], 2, axis=0).astype(np.int16),
        senders=edges.reshape(-1).astype(np.int32),  # begin, end, begin, end, ...
        receivers=edges[:, ::-1].reshape(-1).astype(np.int32),  # end, begin, ...
        random_walk=_random_walk(values, vectors, RANDOM_WALK_STEPS).astype(np.float32),
        lap_vec=lap_vec.astype(np.float32),
        lap_val=lap_val.astype(np.float32),
        degree=adjacency.sum(axis=1).astype(np.int16),
        spd=shortest_path_distances(adjacency, max_spd),
        positions=heavy_positions,
        geometry_issue=issue,
    )
