"""The GPS++ network (Masters et al. 2022) in flax, on packed batches of molecular graphs.

A batch holds B packs; a pack holds up to N nodes, E directed edges and G graphs (GPS++: 60, 120, 8), padded to
those static sizes. Gathers, scatters and pooling are one-hot matmuls inside a pack: at these sizes they are as fast
as index ops on a CPU, and they keep every array shaped [B, ...] so that the batch shards over devices along B.

Encoder (once):  atom categorical features -> summed embeddings -> MLP -> node latent, concatenated with encodings
    of the random-walk landing probabilities, Laplacian eigenvectors (random sign flips in training) and eigenvalues,
    degree, and the 3D centrality (sum over the graph of Gaussian kernels of pair distances), projected to `node`;
    bond features -> embeddings -> MLP, concatenated with the encoded bond length -> `edge`; a learnt global vector.
    Attention bias B = B_SPD (an embedding per shortest-path distance and head) + B_3D (MLP of the pair distance's
    Gaussian kernels -> one value per head), shared by all layers.
Layer (x nodes, e edges, g globals; all read the layer input):
    e_bar = MLP_edge[x_u | x_v | e_uv | g]
    x_bar = MLP_node[x_i | sum_{u->i} (e_bar_ui | x_u) | sum_{i->v} (e_bar_iv | x_v) | g]
    g_bar = MLP_global[g | sum_i x_bar_i | sum e_bar]
    y = LN(x + Dropout(x_bar)),  e' = LN(e + Dropout(e_bar)),  g' = LN(g + Dropout(g_bar))       (MPNN)
    z = LN(x + SD(Attention(x; B)))     softmax(QK^T / sqrt(d_head) + B) V within each molecule   (MHSA)
    x' = LN((y + z) + SD(FFN(y + z)))   FFN: Dense 4d, GELU, Dense d
    MLPs: Dense(4 d_in->out), LayerNorm, GELU, Dense(d_out); SD: stochastic depth per molecule, its drop rate
    growing linearly with depth to `drop_path`.
Decoder: sum-pool of the final node features per molecule -> MLP -> the (standardised) target; noisy-node and
noisy-edge heads predict the uncorrupted categorical features (Godwin et al. 2022).

Grouped input masking (1:3:1): per molecule, the data pipeline keeps only the SPD features (3D masked), only the 3D
features (SPD masked) or both; `keep_spd` / `keep_3d` are per-node flags of the molecule's choice, and molecules
without a geometry always have `keep_3d` False.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from core.nn.parametrization import masked_softmax
from papers.gps.features import ATOM_VOCAB, BOND_VOCAB

# Gaussian kernel centres span [0, 8] Angstrom for the distances of all atom pairs of a molecule, [0, 2.5] for bond
# lengths (at most 2 Angstrom, papers.gps.features): with few kernels, one range for both would leave single,
# double and triple bonds (1.54, 1.34, 1.20 A) within one kernel width.
PAIR_KERNEL_RANGE = 8.0
BOND_KERNEL_RANGE = 2.5
MAX_DEGREE = 8  # larger degrees share the last embedding
RANDOM_WALK_STEPS = 16
LAPLACIAN_FREQS = 7


@dataclass(frozen=True)
class GPSConfig:
    layers: int = 16
    node: int = 256
    edge: int = 128
    globals: int = 64
    heads: int = 32
    ffn: int = 1024
    expansion: int = 4  # MLP hidden = expansion x output width
    encoder: int = 32  # width of the small encodings (random walk, Laplacian, bond length, 3D centrality)
    embedding: int = 64  # categorical embedding channels
    kernels: int = 128  # Gaussian kernels of distances
    max_spd: int = 20
    attention: bool = True  # False: MPNN only (the paper's ablation)
    use_3d: bool = True  # False: no 3D features at all (the paper's ablation)
    node_dropout: float = 0.3
    edge_dropout: float = 0.0035
    global_dropout: float = 0.35
    attention_dropout: float = 0.3
    drop_path: float = 0.3  # stochastic depth of the attention and FFN branches, at the last layer

    def __post_init__(self) -> None:
        for name in ("layers", "node", "edge", "globals", "heads", "ffn", "expansion", "encoder", "embedding"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"GPSConfig.{name}={getattr(self, name)!r} must be a positive integer")
        if self.kernels < 2:
            raise ValueError(f"GPSConfig.kernels={self.kernels} must be at least 2")
        if self.node % self.heads:
            raise ValueError(f"GPSConfig.node={self.node} must be divisible by heads={self.heads}")
        for name in ("node_dropout", "edge_dropout", "global_dropout", "attention_dropout", "drop_path"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"GPSConfig.{name}={getattr(self, name)} must be in [0, 1)")


PRESETS = {
    # the paper's model (REFERENCES.md [parameters]): 16 layers, node 256, edge 128, global 64, 32 heads
    "gps++_44m": GPSConfig(),
    "gps++_22m": GPSConfig(layers=8),
    "gps++_11m": GPSConfig(layers=4),
    # CPU default: the same architecture, narrow and shallow
    "small": GPSConfig(
        layers=4,
        node=64,
        edge=32,
        globals=16,
        heads=8,
        ffn=128,
        encoder=16,
        embedding=32,
        kernels=16,  # the per-pair 3D bias MLP scales with it: 32 kernels cost 40% more time per step than 16
        node_dropout=0.1,
        edge_dropout=0.0,
        global_dropout=0.1,
        attention_dropout=0.1,
        drop_path=0.1,
    ),
}


def preset(name: str, **overrides) -> GPSConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown GPS++ preset {name!r}; choose from {', '.join(PRESETS)}")
    return replace(PRESETS[name], **overrides)


class MLP(nn.Module):
    """Dense(hidden), LayerNorm, GELU, Dense(out): the GPS++ MLP (hidden = 4 x out in the main MLPs)."""

    hidden: int
    out: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return nn.Dense(self.out)(nn.gelu(nn.LayerNorm()(nn.Dense(self.hidden)(x))))


class CategoricalEmbedding(nn.Module):
    """Sum of one embedding per categorical feature (OGB's atom or bond features)."""

    vocab: tuple[int, ...]
    features: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return sum(nn.Embed(v, self.features, name=f"feature_{k}")(x[..., k]) for k, v in enumerate(self.vocab))


class GaussianKernels(nn.Module):
    """phi_k(d) = exp(-(d - mu_k)^2 / (2 sigma_k^2)) / (sqrt(2 pi) sigma_k), mu and sigma learnt (Angstrom)."""

    kernels: int
    max_distance: float = 8.0

    @nn.compact
    def __call__(self, d: jax.Array) -> jax.Array:
        spacing = self.max_distance / (self.kernels - 1)
        mu = self.param("mu", lambda _k: jnp.linspace(0.0, self.max_distance, self.kernels))
        log_sigma = self.param("log_sigma", lambda _k: jnp.full((self.kernels,), math.log(spacing), jnp.float32))
        sigma = jnp.exp(log_sigma) + 0.01
        return jnp.exp(-0.5 * ((d[..., None] - mu) / sigma) ** 2) / (math.sqrt(2 * math.pi) * sigma)


class DropPath(nn.Module):
    """Stochastic depth per molecule: a dropped molecule's branch output is zeroed, kept ones scaled by 1/(1-p).
    A module of its own so that its key, like every flax module's, derives from its name: the FFN branch of a layer
    drops the same molecules with or without the attention branch beside it (paired ablation arms)."""

    rate: float

    @nn.compact
    def __call__(self, x: jax.Array, node_graph: jax.Array, graphs: int, deterministic: bool) -> jax.Array:
        """x [B, N, d]; node_graph [B, N] in [0, graphs], `graphs` being the padding molecule."""
        if deterministic or self.rate == 0.0:
            return x
        keep = jax.random.bernoulli(self.make_rng("dropout"), 1.0 - self.rate, (x.shape[0], graphs + 1))
        return x * jnp.take_along_axis(keep, node_graph, axis=1)[..., None] / (1.0 - self.rate)


class BiasedAttention(nn.Module):
    heads: int
    dropout: float

    @nn.compact
    def __call__(self, x: jax.Array, bias: jax.Array, mask: jax.Array, deterministic: bool) -> jax.Array:
        """x [B, N, d], bias [B, H, N, N], mask [B, N, N] (same molecule, real nodes) -> [B, N, d]."""
        B, N, d = x.shape
        dh = d // self.heads
        q, k, v = (nn.Dense(d, name=n)(x).reshape(B, N, self.heads, dh) for n in ("query", "key", "value"))
        scores = jnp.einsum("bqhc,bkhc->bhqk", q, k) / math.sqrt(dh) + bias
        p = masked_softmax(scores, mask[:, None])
        p = nn.Dropout(self.dropout)(p, deterministic=deterministic)
        return nn.Dense(d, name="out")(jnp.einsum("bhqk,bkhc->bqhc", p, v).reshape(B, N, d))


class GPSLayer(nn.Module):
    cfg: GPSConfig
    drop_path: float

    @nn.compact
    def __call__(self, x, e, g, batch, graph, bias, deterministic: bool):
        c = self.cfg
        S, R, P, PE = graph["S"], graph["R"], graph["P"], graph["PE"]  # one-hot [B,E,N], [B,E,N], [B,N,G], [B,E,G]
        G = P.shape[-1]
        x_u = jnp.einsum("ben,bnf->bef", S, x)  # sender features on each edge
        x_v = jnp.einsum("ben,bnf->bef", R, x)
        g_e, g_n = jnp.einsum("beg,bgf->bef", PE, g), jnp.einsum("bng,bgf->bnf", P, g)
        e_bar = MLP(c.expansion * c.edge, c.edge, name="edge_mlp")(jnp.concatenate([x_u, x_v, e, g_e], -1))
        e_bar = e_bar * batch["edge_mask"][..., None]
        incoming = jnp.einsum("ben,bef->bnf", R, jnp.concatenate([e_bar, x_u], -1))
        outgoing = jnp.einsum("ben,bef->bnf", S, jnp.concatenate([e_bar, x_v], -1))
        x_bar = MLP(c.expansion * c.node, c.node, name="node_mlp")(jnp.concatenate([x, incoming, outgoing, g_n], -1))
        x_bar = x_bar * batch["node_mask"][..., None]
        pooled = jnp.concatenate([jnp.einsum("bng,bnf->bgf", P, x_bar), jnp.einsum("beg,bef->bgf", PE, e_bar)], -1)
        g_bar = MLP(c.expansion * c.globals, c.globals, name="global_mlp")(jnp.concatenate([g, pooled], -1))

        drop = lambda rate: nn.Dropout(rate, broadcast_dims=())
        y = nn.LayerNorm(name="node_norm")(x + drop(c.node_dropout)(x_bar, deterministic=deterministic))
        e = nn.LayerNorm(name="edge_norm")(e + drop(c.edge_dropout)(e_bar, deterministic=deterministic))
        g = nn.LayerNorm(name="global_norm")(g + drop(c.global_dropout)(g_bar, deterministic=deterministic))
        if c.attention:
            a = BiasedAttention(c.heads, c.attention_dropout, name="attention")(
                x, bias, graph["attention_mask"], deterministic
            )
            a = DropPath(self.drop_path, name="attention_drop")(a, batch["node_graph"], G, deterministic)
            z = nn.LayerNorm(name="attention_norm")(x + a)
            h = y + z
        else:
            h = y
        f = nn.Dense(c.node, name="ffn_out")(nn.gelu(nn.Dense(c.ffn, name="ffn_in")(h)))
        f = DropPath(self.drop_path, name="ffn_drop")(f, batch["node_graph"], G, deterministic)
        x = nn.LayerNorm(name="ffn_norm")(h + f) * batch["node_mask"][..., None]
        return x, e, g


class Encoder(nn.Module):
    cfg: GPSConfig

    @nn.compact
    def __call__(self, batch, graph, deterministic: bool):
        c = self.cfg
        node_mask = batch["node_mask"][..., None]
        atoms = CategoricalEmbedding(ATOM_VOCAB, c.embedding, name="atom_embedding")(batch["atoms"])
        parts = [MLP(c.expansion * c.node, c.node, name="atom_mlp")(atoms)]
        parts.append(MLP(2 * c.encoder, c.encoder, name="random_walk")(batch["random_walk"]))
        lap_vec = batch["lap_vec"]
        if not deterministic:  # eigenvectors are defined up to sign: a random sign per molecule and eigenvector
            B, G = lap_vec.shape[0], graph["P"].shape[-1]
            flips = jax.random.rademacher(self.make_rng("dropout"), (B, G + 1, lap_vec.shape[-1]), lap_vec.dtype)
            lap_vec = lap_vec * flips[jnp.arange(B)[:, None], batch["node_graph"]]
        parts.append(MLP(2 * c.encoder, c.encoder, name="laplacian_vectors")(lap_vec))
        parts.append(MLP(2 * c.encoder, c.encoder, name="laplacian_values")(batch["lap_val"]))
        degree = jnp.minimum(batch["degree"], MAX_DEGREE)
        parts.append(nn.Embed(MAX_DEGREE + 1, c.embedding, name="degree")(degree))

        pair_mask = graph["attention_mask"]  # [B, N, N]: same molecule
        bias = nn.Embed(c.max_spd + 2, c.heads, name="spd_bias")(jnp.minimum(batch["spd"], c.max_spd + 1))
        bias = bias * (batch["keep_spd"][:, :, None, None] * pair_mask[..., None])
        edge_parts = []
        bonds = CategoricalEmbedding(BOND_VOCAB, c.embedding, name="bond_embedding")(batch["bonds"])
        edge_parts.append(MLP(c.expansion * c.edge, c.edge, name="bond_mlp")(bonds))
        if c.use_3d:
            keep = batch["keep_3d"]  # [B, N]
            pos = batch["positions"]
            d = jnp.sqrt(jnp.sum((pos[:, :, None] - pos[:, None]) ** 2, -1) + 1e-12)
            pair3d = pair_mask & keep[:, :, None] & keep[:, None, :] & ~jnp.eye(d.shape[-1], dtype=bool)
            kernels = GaussianKernels(c.kernels, PAIR_KERNEL_RANGE, name="distance_kernels")(d) * pair3d[..., None]
            bias = bias + MLP(c.kernels, c.heads, name="bias_3d")(kernels) * pair3d[..., None]
            parts.append(nn.Dense(c.encoder, use_bias=False, name="centrality_3d")(kernels.sum(2)))
            bond_length = jnp.einsum("ben,bnm,bem->be", graph["S"], d, graph["R"])
            edge_keep = jnp.einsum("ben,bn->be", graph["S"], keep.astype(d.dtype))[..., None]
            bl = GaussianKernels(c.kernels, BOND_KERNEL_RANGE, name="bond_kernels")(bond_length)
            edge_parts.append(MLP(2 * c.encoder, c.encoder, name="bond_length")(bl) * edge_keep)
        x = nn.Dense(c.node, name="node_in")(jnp.concatenate(parts, -1)) * node_mask
        e = nn.Dense(c.edge, name="edge_in")(jnp.concatenate(edge_parts, -1)) * batch["edge_mask"][..., None]
        G = graph["P"].shape[-1]
        g = jnp.broadcast_to(
            self.param("global", nn.initializers.normal(1.0), (c.globals,)), (x.shape[0], G, c.globals)
        )
        return x, e, g, jnp.moveaxis(bias, -1, 1)  # bias [B, H, N, N]


class GPSPlusPlus(nn.Module):
    cfg: GPSConfig

    @nn.compact
    def __call__(self, batch: dict, deterministic: bool = True) -> dict:
        """batch: the packed arrays of papers.gps.batching; returns {"target": [B, G] standardised prediction,
        "atoms": [B, N, sum ATOM_VOCAB] and "bonds": [B, E, sum BOND_VOCAB] logits of the noisy-node/edge heads}."""
        c = self.cfg
        graph = graph_operators(batch)
        x, e, g, bias = Encoder(c, name="encoder")(batch, graph, deterministic)
        for i in range(c.layers):
            rate = c.drop_path * i / max(c.layers - 1, 1)
            x, e, g = GPSLayer(c, rate, name=f"layer_{i}")(x, e, g, batch, graph, bias, deterministic)
        pooled = jnp.einsum("bng,bnf->bgf", graph["P"], x)
        target = MLP(c.node, 1, name="decoder")(pooled)[..., 0]
        atoms = nn.Dense(sum(ATOM_VOCAB), name="noisy_nodes")(x)
        bonds = nn.Dense(sum(BOND_VOCAB), name="noisy_edges")(e)
        return {"target": target, "atoms": atoms, "bonds": bonds}


def graph_operators(batch: dict) -> dict:
    """One-hot gather/scatter matrices of a packed batch: S, R [B, E, N] (edge -> sender / receiver), P [B, N, G]
    (node -> molecule), PE [B, E, G] (edge -> molecule), all zero on padding; attention_mask [B, N, N] (same
    molecule, both real)."""
    N = batch["node_mask"].shape[1]
    G = batch["graph_mask"].shape[1]
    em = batch["edge_mask"][..., None].astype(jnp.float32)
    nm = batch["node_mask"][..., None].astype(jnp.float32)
    S = jax.nn.one_hot(batch["senders"], N) * em
    R = jax.nn.one_hot(batch["receivers"], N) * em
    P = jax.nn.one_hot(batch["node_graph"], G) * nm  # padding nodes carry graph id G: all-zero rows
    PE = jax.nn.one_hot(batch["edge_graph"], G) * em
    same = batch["node_graph"][:, :, None] == batch["node_graph"][:, None, :]
    real = batch["node_mask"][:, :, None] & batch["node_mask"][:, None, :]
    return {"S": S, "R": R, "P": P, "PE": PE, "attention_mask": same & real}


PARTS = ("node", "edge", "global", "attention", "ffn", "encoder", "decoder")


def _part(path: tuple[str, ...]) -> str:
    top = path[0]
    if top == "encoder":
        return "encoder"
    if top in ("decoder", "noisy_nodes", "noisy_edges"):
        return "decoder"
    name = path[1]
    for prefix, part in (
        ("node_", "node"),
        ("edge_", "edge"),
        ("global_", "global"),
        ("attention", "attention"),
        ("ffn_", "ffn"),
    ):
        if name.startswith(prefix):
            return part
    raise ValueError(f"parameter {'/'.join(path)} belongs to no part")


def example_batch(packs: int = 1, nodes: int = 60, edges: int = 120, graphs: int = 8) -> dict:
    """An all-padding batch of the right shapes and dtypes (for init and shape evaluation)."""
    z = np.zeros
    return {
        "atoms": z((packs, nodes, len(ATOM_VOCAB)), np.int32),
        "bonds": z((packs, edges, len(BOND_VOCAB)), np.int32),
        "senders": z((packs, edges), np.int32),
        "receivers": z((packs, edges), np.int32),
        "node_graph": np.full((packs, nodes), graphs, np.int32),
        "edge_graph": np.full((packs, edges), graphs, np.int32),
        "node_mask": z((packs, nodes), bool),
        "edge_mask": z((packs, edges), bool),
        "graph_mask": z((packs, graphs), bool),
        "random_walk": z((packs, nodes, RANDOM_WALK_STEPS), np.float32),
        "lap_vec": z((packs, nodes, LAPLACIAN_FREQS), np.float32),
        "lap_val": z((packs, nodes, LAPLACIAN_FREQS), np.float32),
        "degree": z((packs, nodes), np.int32),
        "spd": z((packs, nodes, nodes), np.int32),
        "positions": z((packs, nodes, 3), np.float32),
        "keep_3d": z((packs, nodes), bool),
        "keep_spd": z((packs, nodes), bool),
    }


def parameter_shapes(cfg: GPSConfig):
    model = GPSPlusPlus(cfg)
    return jax.eval_shape(lambda: model.init(jax.random.key(0), example_batch(), deterministic=True))["params"]


def parameter_breakdown(name_or_cfg: str | GPSConfig) -> dict[str, int]:
    """Parameters per part (node, edge, global MLPs with their norms; attention; FFN; encoder; decoder incl. the
    noisy-node/edge heads) and the total, counted from the model's shapes without allocating them."""
    cfg = preset(name_or_cfg) if isinstance(name_or_cfg, str) else name_or_cfg
    counts = dict.fromkeys(PARTS, 0)
    for path, leaf in jax.tree_util.tree_flatten_with_path(parameter_shapes(cfg))[0]:
        keys = tuple(str(getattr(k, "key", k)) for k in path)
        counts[_part(keys)] += int(np.prod(leaf.shape))
    counts["total"] = sum(counts[p] for p in PARTS)
    return counts
