"""Shared test set-up: no network traffic from wandb, quiet progress bars, a helper to run the CLI, and a tiny
random Llama with SmolLM2's tokenizer. The papers' smoke runs, shared by their contract test and their own tests, are
in tests/papers/conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE_CONFIGS = REPO_ROOT / "tests" / "fixtures" / "configs"

# Tests never talk to a wandb server: runs that use wandb are forced offline, and nothing is uploaded.
os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_SILENT"] = "true"
os.environ.setdefault("TQDM_DISABLE", "1")

# One persistent XLA compilation cache for the session's workers and every process they start (smoke runs, CLI runs,
# workers of distributed tests), set through the environment before JAX is imported: what one test compiled, another
# test, worker or run that builds the same computation reads instead of compiling again. It lives in .pytest_cache,
# so a developer's next `make test` starts warm and a clean clone (CI) starts empty. It changes no number: a cached
# executable is the one the compiler made for the same program and options.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(REPO_ROOT / ".pytest_cache" / "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
# Tests check what the code computes, and most of their time is XLA compiling programs that then run for
# milliseconds: the LLVM backend's optimisation is off (jax_disable_most_optimizations: backend optimisation level 0,
# no expensive LLVM passes; about a third off the compile-bound tests, 2026-11-28). XLA's HLO passes, which decide
# what is computed and rounded where (casts, fusions), run as in a reproduction; a run's timings are never tested.
# The LLVM level does move the last bits of float results (2026-11-29: a model's init and logits digests differ), so
# the bit-identity harness (tests/papers/identity.py) computes in its own process with the optimisations on.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")


def run_cli(
    args: list[str], *, env: dict[str, str] | None = None, toy: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run scripts/reproduce.py in a fresh process (as a user would), with the toy paper on the search path."""
    cmd = [sys.executable, str(REPO_ROOT / "scripts" / "reproduce.py"), *args]
    if toy:
        cmd.append(f"hydra.searchpath=[file://{FIXTURE_CONFIGS}]")
    return subprocess.run(
        cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def tiny_llama():
    """(model, params, tokenizer): a random 2-layer `core.nn.llama.Llama` with SmolLM2's vocabulary, grouped-query
    attention (4 query heads over 2 KV heads, d_model 32) and SmolLM2's tokenizer, for tests of code that drives a
    pretrained Llama (papers.sparq.tasks, papers.fp8_llm.pretrained) in seconds, without SmolLM2's weights."""
    import jax
    import jax.numpy as jnp

    from core.nn.gguf import smollm2_tokenizer
    from core.nn.llama import Llama, LlamaConfig

    model = Llama(LlamaConfig(vocab=49152, d_model=32, depth=2, heads=4, kv_heads=2, ffn=48, context=128))
    params = model.init(jax.random.key(0), jnp.zeros((1, 4), jnp.int32))
    return model, params, smollm2_tokenizer()


def repo_copy(tmp_path: Path, parts: tuple[str, ...] = ("core", "ipu_model", "papers", "configs", "scripts")) -> Path:
    """A copy of the repository's code (and `parts`), so that a test may edit core or a paper without touching the
    checkout; scripts run from the copy import the copy's code."""
    import shutil

    repo = tmp_path / "repo"
    for part in parts:
        shutil.copytree(REPO_ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO_ROOT / "pyproject.toml", repo / "pyproject.toml")
    return repo
