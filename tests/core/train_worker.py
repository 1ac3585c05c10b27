"""A small training run through core.train.fit, for the killed-run tests: `python -m tests.core.train_worker DIR`.

A two-layer MLP regressed by AdamW on batches that depend only on the step; evaluation, logging and checkpoints on
three different cadences, so that a kill can land between a log and an evaluation, or just after a checkpoint.
With KILL_AFTER_STEP=k the process SIGKILLs itself right after step k (before that step's checkpoint); with
STEP_SLEEP=s every batch takes s seconds longer and every step prints "done <k>", so that a parent can kill it
mid-training. When the run finishes it writes DIR/result.json: the final parameters and the history without its
timings.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from core.train import fit, init_state, optimizer_step

STEPS = 24


def batch_of(k: int) -> dict[str, np.ndarray]:
    time.sleep(float(os.environ.get("STEP_SLEEP", "0")))
    rng = np.random.default_rng([7, k])
    x = rng.standard_normal((16, 4)).astype(np.float32)
    return {"x": x, "y": np.sin(x.sum(1, keepdims=True))}


def loss_fn(params, batch):
    h = jnp.tanh(batch["x"] @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] - batch["y"]) ** 2)


def main(directory: Path) -> None:
    kill_after = int(os.environ.get("KILL_AFTER_STEP", "0"))
    key1, key2 = jax.random.split(jax.random.key(0))
    params = {
        "w1": jax.random.normal(key1, (4, 16)) * 0.5,
        "b1": jnp.zeros(16),
        "w2": jax.random.normal(key2, (16, 1)) * 0.25,
    }
    optimizer = optax.adamw(optax.cosine_decay_schedule(0.02, STEPS), weight_decay=0.01)
    valid = batch_of(10**6)
    evaluate = jax.jit(lambda p: loss_fn(p, valid))

    def on_step(done, state, metrics, history):
        history.note("w2_norm", done, float(jnp.linalg.norm(state["params"]["w2"])))
        if os.environ.get("STEP_SLEEP"):
            print(f"done {done}", flush=True)
        if done == kill_after:
            print(f"killing after step {done}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    run = fit(
        jax.jit(optimizer_step(loss_fn, optimizer)),
        init_state(params, optimizer),
        batch_of,
        steps=STEPS,
        evaluate=lambda s: {"valid/loss": evaluate(s["params"])},
        eval_every=5,
        log_every=2,
        checkpoint_dir=directory / "checkpoints",
        checkpoint_every=3,
        resume=True,
        on_step=on_step,
        count=lambda b: {"examples": len(b["x"])},
    )
    result = {
        "params": {k: np.asarray(v).tolist() for k, v in run.state["params"].items()},
        "records": [{"step": r["step"], "metrics": r["metrics"]} for r in run.history.records],
        "notes": run.history.notes,
        "counts": run.counts,
        "resumed_from": run.resumed_from,
    }
    (directory / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
