"""core.profile: the phases a stack is filed under, the sampler's shares against known busy times, compilations
counted from JAX's events, and the persistent compilation cache (core.runner.use_compile_cache) loading a program
instead of compiling it."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.profile import OTHER, classify, profile_line, profile_markdown, profiling


def test_classify_takes_the_first_phase_any_frame_matches():
    fit = ("core.train", "fit")
    evaluate = ("papers.sparq.run", "evaluate")
    compile_ = ("jax._src.compiler", "backend_compile_and_load")
    save = ("core.checkpoint", "save")
    assert classify([fit]) == ("training", "core.train:fit")
    # an evaluation inside the training loop is evaluation; compiling inside it is compilation
    assert classify([fit, evaluate]) == ("evaluation", "papers.sparq.run:evaluate")
    assert classify([fit, evaluate, compile_]) == ("compilation", "papers.sparq.run:evaluate")
    assert classify([fit, save]) == ("io", "core.checkpoint:save")
    # work computed inside a kept stage is not io; the stage's reading and writing is
    inference = ("papers.fp8_llm.pretrained", "pretrained_fp8_inference")
    assert classify([("core.memo", "kept"), inference]) == (OTHER, "papers.fp8_llm.pretrained:pretrained_fp8_inference")
    assert classify([("core.memo", "kept"), ("core.memo", "store_value")])[0] == "io"
    assert classify([("papers.gps.run", "run"), ("papers.gps.features", "featurise")])[0] == "data"
    # names of phases count only in the project's own modules
    assert classify([("numpy.linalg", "train_thing"), ("jax._src.api", "evaluate")]) == (OTHER, None)
    assert classify([("papers.prng.run", "run"), ("numpy.random", "draw")]) == (OTHER, "papers.prng.run:run")


def _busy(seconds: float) -> float:
    t = time.perf_counter()
    x = 0.0
    while time.perf_counter() - t < seconds:
        x += 1.0
    return x


def _in_module(module: str, name: str, fn):
    """`fn` called from a function `name` defined in a module named `module` (what the sampler reads)."""
    namespace = {"__name__": module, "fn": fn}
    exec(f"def {name}(*a):\n    return fn(*a)\n", namespace)  # a test's own two-line function
    return namespace[name]


def test_sampled_shares_follow_the_time_spent():
    train = _in_module("papers.fake.train", "train_arm", _busy)
    evaluate = _in_module("papers.fake.run", "evaluate_arm", _busy)
    with profiling(interval=0.01) as prof:  # 1.8 s: enough samples on a loaded machine (a sampler's wake-ups slip)
        train(1.2)
        evaluate(0.6)
    s = prof.summary()
    phases = s["phases"]
    assert s["samples"] > 50
    assert phases["training"]["share"] == pytest.approx(2 / 3, abs=0.1)
    assert phases["evaluation"]["share"] == pytest.approx(1 / 3, abs=0.1)
    assert "papers.fake.train:train_arm" in phases["training"]["functions"]
    assert s["wall_seconds"] == pytest.approx(1.8, abs=0.3)
    # a busy Python loop keeps one core busy: CPU seconds near the wall time
    assert s["cpu_seconds"] == pytest.approx(s["wall_seconds"], rel=0.3)
    assert "training 0.0 min" in profile_line(s)
    assert any(line.startswith("| training |") for line in profile_markdown(s))


def test_compilations_are_counted_per_function():
    def never_seen_before(x):  # a fresh function: jit's caches have nothing of it
        return jnp.sin(x) * 3.0 + 1.0

    f = jax.jit(never_seen_before)
    with profiling() as prof:
        f(jnp.ones(3)).block_until_ready()
        f(jnp.ones(3)).block_until_ready()  # the same shape: no second compilation
        f(jnp.ones(4)).block_until_ready()  # another shape: one more
    s = prof.summary()
    assert s["compiled_most"]["jit(never_seen_before)"] == 2
    assert s["compilations"] >= 2 and s["compile_seconds"] > 0


def test_compilations_are_attributed_to_the_project_function_that_called():
    def also_never_seen(x):
        return jnp.cos(x) - 2.0

    f = jax.jit(also_never_seen)
    caller = _in_module("papers.fake.run", "prepare_arm", lambda x: f(x).block_until_ready())
    three, five = np.ones(3, np.float32), np.ones(5, np.float32)  # host arrays: only `f` compiles
    with profiling() as prof:
        caller(three)
        caller(five)
        caller(three)
    assert prof.summary()["compiled_from"]["papers.fake.run:prepare_arm"]["compilations"] == 2
    assert prof.compile_seconds_from["papers.fake.run:prepare_arm"] > 0  # (rounded to 0.1 s in the summary)


def test_a_second_process_loads_from_the_persistent_cache(tmp_path):
    """Two fresh interpreters compile the same program with the cache on: the second loads it (a cache hit, no
    compilation) and computes the same bits."""
    import json
    import subprocess
    import sys

    code = f"""
import json, jax, jax.numpy as jnp
from pathlib import Path
from core.profile import profiling
from core.runner import use_compile_cache
use_compile_cache(Path({str(tmp_path / "cache")!r}))
def cached_program(x):
    return jnp.tanh(x @ x.T).sum(axis=0)
with profiling() as prof:
    y = jax.jit(cached_program)(jnp.arange(64.0).reshape(8, 8) / 64)
s = prof.summary()
print(json.dumps({{"hits": s["compile_cache_hits"], "compiled": s["compiled_most"].get("jit(cached_program)", 0),
                  "compilations": s["compilations"], "y": [float(v) for v in y]}}))
"""
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["hits"] == 0 and first["compiled"] == 1
    assert second["hits"] >= 1 and second["compilations"] == 0
    np.testing.assert_array_equal(first["y"], second["y"])


def test_profiles_are_not_nested():
    with profiling():
        with pytest.raises(RuntimeError, match="not nested"):
            with profiling():
                pass
    with pytest.raises(ValueError, match="interval"):
        with profiling(interval=0):
            pass


def test_machine_speed_is_work_over_time():
    """The probe's figures are its fixed work over its timings: with a clock that moves 1/64 s per reading (exact in
    binary), a round of 0.05 s holds 3 calls (core.bench.time_call), so each call takes (1/64) / 3 s: the product
    ([512, 512] @ [512, 512]) runs at 2 x 512^3 / that and the loop at 200,000 / that."""
    from core.profile import machine_speed

    readings = iter(range(10_000))
    speed = machine_speed(trials=2, clock=lambda: next(readings) / 64)
    per_call = (1 / 64) / 3
    assert speed["matmul_gflops"] == pytest.approx(2 * 512**3 / per_call / 1e9, abs=0.1)
    assert speed["python_mips"] == pytest.approx(200_000 / per_call / 1e6, abs=0.01)


def test_the_machine_speed_is_measured_outside_the_profiled_time():
    with profiling(interval=0.01) as prof:
        _busy(0.2)
    s = prof.summary()
    assert set(s["machine_speed"]) == {"start", "end"}
    assert all(v["matmul_gflops"] > 0 and v["python_mips"] > 0 for v in s["machine_speed"].values())
    assert s["wall_seconds"] == pytest.approx(0.2, abs=0.1)  # the probes' time is not the run's
    assert "GFLOP/s" in profile_line(s)
    assert any("machine_speed" in line for line in profile_markdown(s))
    with profiling(interval=0.01, speed=False) as prof:
        pass
    assert "machine_speed" not in prof.summary()


def test_an_unreadable_stack_is_counted_and_the_sampler_goes_on(monkeypatch):
    import core.profile as profile_mod

    real = profile_mod._stack
    calls = {"n": 0}

    def flaky(frame):
        calls["n"] += 1
        if calls["n"] <= 2:  # what CPython 3.11 raised once mid-run: a frame torn down while it was walked
            raise AttributeError("'code' object has no attribute 'f_globals'")
        return real(frame)

    monkeypatch.setattr(profile_mod, "_stack", flaky)
    train = _in_module("papers.fake.train", "train_arm", _busy)
    with profiling(interval=0.01, speed=False) as prof:
        train(0.8)
    s = prof.summary()
    assert s["unread_samples"] == 2
    # sampling went on after the failures: the training phase holds nearly every sample
    assert s["samples"] > 20
    assert s["phases"]["training"]["share"] > 0.8
