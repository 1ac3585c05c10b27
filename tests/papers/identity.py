"""Bit-identity harness of the character-LM papers (unit scaling, u-muP, FP8 LLMs, SparQ): digests of what their
code computes, recorded once and compared after a refactoring that must not change a number.

- model cases: for every arm (unit scaling's eight, u-muP's parametrizations with and without FP8, FP8 LLMs'
  policies and MX variants, SparQ's LM), the initial variables, the logits, the loss and every gradient of a tiny
  model on fixed windows;
- method cases: every SparQ decode-attention method at two transfer ratios: its settings, its analytic and counted
  transfer, and its step's output on random q, K, V (grouped-query attention, g = 2);
- run cases: each paper's whole smoke run (`scale=smoke`), the Results less what measures time.

    python -m tests.papers.identity check [case-prefix ...]   # compare with tests/fixtures/charlm_identity.json
    python -m tests.papers.identity write                     # record the digests (only before a refactoring)

The digests are SHA-256 of the arrays' bytes (with their paths, dtypes and shapes) and of the Results' JSON; they
are exact on one processor and XLA version, which is what a before/after comparison needs: float32 results differ in
their last bits between processors (core.context.cpu_description), so the fixture names the processor that recorded
it (MACHINE_KEY) and the test compares only on that processor.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "charlm_identity.json"
MACHINE_KEY = "_machine"  # the fixture's entry naming the processor and JAX that recorded it
PAPERS = ("unit_scaling", "umup", "fp8_llm", "sparq")
# Results fields that measure time (or say whether work was reused), left out of the run digests
TIMING_KEYS = frozenset(
    {
        "seconds",
        "wall_seconds",
        "train_seconds",
        "resumed_from",
        "loaded",
        "dense_rounds",
        "sparq_rounds",
        "select_rounds",
    }
)


def digest(tree) -> str:
    """SHA-256 of a pytree of arrays: every leaf's path, dtype, shape and bytes."""
    import jax
    import numpy as np

    h = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        a = np.asarray(jax.random.key_data(leaf) if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key) else leaf)
        h.update(f"{jax.tree_util.keystr(path)}|{a.dtype}|{a.shape}|".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _windows(vocab: int, seq_len: int, batch: int = 3):
    import numpy as np

    return np.random.default_rng(2024).integers(0, vocab, (batch, seq_len + 1)).astype(np.int32)


def _model_digests(model, windows, variables=None, key_seed: int = 1) -> dict[str, str]:
    """init, logits, loss and the gradient of the loss with respect to every float variable (FP8 LLMs' probes
    included: their gradient carries the scaling statistics)."""
    import jax
    import jax.numpy as jnp

    from core.nn import TransformerLM
    from core.numerics import stochastic_rounding

    ids, labels = jnp.asarray(windows[:, :-1]), jnp.asarray(windows[:, 1:])
    with stochastic_rounding(jax.random.key(7)):
        if variables is None:
            variables = model.init(jax.random.key(key_seed), ids)
        logits = model.apply(variables, ids)

        wrt = {k: v for k, v in variables.items() if k in ("params", "fp8_probe")}  # FP8 meta holds counters

        def loss(v):
            return model.apply({**variables, **v}, ids, labels, method=TransformerLM.loss)

        value, grads = jax.value_and_grad(loss)(wrt)
    return {"init": digest(variables), "logits": digest(logits), "loss": digest(value), "grads": digest(grads)}


def model_cases() -> Iterator[tuple[str, Callable[[], dict[str, str]]]]:
    from core.launch import load_config

    vocab = 13

    def corpus():
        from types import SimpleNamespace

        return SimpleNamespace(vocab_size=vocab)

    # unit scaling: every arm of the paper's table, the config's FP8 recipe
    def unit_scaling(name):
        from papers.unit_scaling.arms import ARMS
        from papers.unit_scaling.train import build_model

        c = load_config(["paper=unit_scaling", "scale=smoke"]).unit_scaling
        model = build_model(c, corpus(), ARMS[name])
        return _model_digests(model, _windows(vocab, c.model.seq_len))

    from papers.unit_scaling.arms import ARMS as US_ARMS

    for name in US_ARMS:
        yield f"model/unit_scaling/{name}", lambda name=name: unit_scaling(name)

    # u-muP: the three parametrizations at two widths (base and twice it), FP32 and FP8 (head low or FP32), and
    # one group with non-default multipliers
    def umup(parametrization, width, fp8, head, mults=None):
        from core.unit_scaling import umup as um
        from papers.umup.train import Group, build_model

        c = load_config(["paper=umup", "scale=smoke"]).umup
        group = Group(parametrization, width, (1.0,), (0,), mults=mults or um.Mults(), fp8=fp8, fp8_head=head)
        return _model_digests(build_model(c, corpus(), group), _windows(vocab, c.model.seq_len))

    for p in ("sp", "mup", "umup"):
        for width in (8, 16):
            yield f"model/umup/{p}_w{width}", lambda p=p, w=width: umup(p, w, False, "low")
        yield f"model/umup/{p}_w16_fp8", lambda p=p: umup(p, 16, True, "low")
        yield f"model/umup/{p}_w16_fp8headfp32", lambda p=p: umup(p, 16, True, "fp32")

    def umup_mults():
        from core.unit_scaling import umup as um

        return umup("umup", 16, False, "low", um.Mults(ffn_act=2.0, loss_softmax=0.5))

    yield "model/umup/umup_w16_mults", umup_mults

    # FP8 LLMs: every policy (its variables: params, FP8 meta, probes) and every MX variant
    def fp8_llm(arm, mx=None):
        from papers.fp8_llm.train import build_model

        c = load_config(["paper=fp8_llm", "scale=smoke"]).fp8_llm
        model = build_model(c.sizes[0], vocab, c.run.seq_len, arm, c.run.history, mx=mx)
        return _model_digests(model, _windows(vocab, c.run.seq_len))

    from papers.fp8_llm.config import ARMS as FP8_ARMS
    from papers.fp8_llm.config import MX_VARIANTS

    for arm in FP8_ARMS:
        yield f"model/fp8_llm/{arm}", lambda arm=arm: fp8_llm(arm)
    for variant in MX_VARIANTS:
        yield f"model/fp8_llm/mx_{variant}", lambda v=variant: fp8_llm("mx", v)

    # SparQ's character LM
    def sparq():
        from papers.sparq.model import build_model

        c = load_config(["paper=sparq", "scale=smoke"]).sparq
        return _model_digests(build_model(c, corpus()), _windows(vocab, c.model.seq_len))

    yield "model/sparq/charlm", sparq


def method_cases() -> Iterator[tuple[str, Callable[[], dict[str, str]]]]:
    from core.nn.decode_methods import DECODE_METHODS

    L, d, g, Hkv, B = 40, 16, 2, 2, 2

    def one(name, ratio):
        import jax.numpy as jnp
        import numpy as np

        from papers.sparq.results import Method

        method = DECODE_METHODS[name].for_ratio(ratio, L, d, g, k=8, sinks=2, page=4)
        if method is None:
            return {"method": "none"}
        rng = np.random.default_rng(5)
        S = L + 8  # a cache with unused slots past `length`
        q = jnp.asarray(rng.standard_normal((B, Hkv * g, d)), jnp.float32)
        K = jnp.asarray(rng.standard_normal((B, Hkv, S, d)), jnp.float32)
        V = jnp.asarray(rng.standard_normal((B, Hkv, S, d)), jnp.float32)
        length = jnp.asarray([L, L - 3], jnp.int32)
        state = None
        if method.needs_column_sums:
            score = jnp.asarray(rng.random((B, Hkv, S)), jnp.float32)
            state = method.init_state([score], length[:, None])[0]
        out, transfer, new_state = method.step(0, q, K, V, length[:, None], state)
        return {
            "method": repr(Method.of(method)),  # the record Results store
            "transfer": str(method.transfer(L, d, g)),
            "counted": str(method.counted_transfer(L, d, g)),
            "step_transfer": digest(jnp.asarray(transfer)),
            "out": digest(out),
            "state": "none" if new_state is None else digest(new_state),
        }

    for name in DECODE_METHODS:
        for ratio in (0.5, 0.125):
            yield f"method/{name}_{ratio:g}", lambda n=name, r=ratio: one(n, r)


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def run_cases() -> Iterator[tuple[str, Callable[[], dict[str, str]]]]:
    def one(paper):
        import tempfile

        from core.context import RunContext
        from core.launch import load_config
        from core.paper import find_paper
        from core.results import to_json

        cfg = load_config([f"paper={paper}", "scale=smoke", "logger=none"])
        with tempfile.TemporaryDirectory() as tmp:
            results = find_paper(f"papers.{paper}").compute(cfg, RunContext.detached(Path(tmp)))
        data = _strip(to_json(results))
        return {
            key: hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]
            for key, value in data.items()
        }

    for paper in PAPERS:
        yield f"run/{paper}", lambda p=paper: one(p)


def cases() -> Iterator[tuple[str, Callable[[], dict[str, str]]]]:
    yield from model_cases()
    yield from method_cases()
    yield from run_cases()


def machine() -> dict[str, str]:
    """What the digests depend on besides the code: the processor and the JAX/XLA version."""
    from core.context import cpu_description, versions

    return {"cpu": cpu_description(), "jaxlib": versions(("jaxlib",))["jaxlib"]}


def main(argv: list[str]) -> int:
    # XLA's LLVM optimisations on, as in a reproduction: they change the last bits (the test session turns them off
    # for speed, tests/conftest.py), and the digests are recorded and checked with them on; set before JAX loads
    os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] = "false"
    if not argv or argv[0] not in ("check", "write"):
        print(__doc__)
        return 2
    prefixes = argv[1:]
    recorded = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
    if argv[0] == "check" and recorded.get(MACHINE_KEY) != machine():
        print(f"recorded on {recorded.get(MACHINE_KEY)}, this is {machine()}: a difference may be the machine's")
    got, bad = {}, []
    for name, compute in cases():
        if prefixes and not any(name.startswith(p) for p in prefixes):
            continue
        got[name] = compute()
        if argv[0] == "check":
            want = recorded.get(name)
            diff = sorted(k for k in set(got[name]) | set(want or {}) if (want or {}).get(k) != got[name].get(k))
            print(f"{name}: {'same' if not diff else 'DIFFERS in ' + ', '.join(diff)}", flush=True)
            bad += [name] if diff else []
        else:
            print(name, flush=True)
    if argv[0] == "write":
        if recorded.get(MACHINE_KEY) != machine():  # digests from another machine compare nothing here
            recorded = {}
        data = {**recorded, **got, MACHINE_KEY: machine()}
        FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        return 0
    print(f"{len(got) - len(bad)} of {len(got)} identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
