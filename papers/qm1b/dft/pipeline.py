"""Labelling many batches of conformers with the host work overlapped: while the SCF of one batch runs (JAX,
dispatched asynchronously), worker processes prepare the next batches' integrals, grids, AO values and guesses
(PySCF/libcint, papers.qm1b.dft.molecule.build_problem) and the main process finishes the previous batch (float64
energies and Fock matrix, papers.qm1b.dft.finish_float64).

    with Labeller(workers=2, dtype="float32") as labeller:
        for results in labeller.map(batches):  # batches: an iterable of lists of PySCF atom strings
            ...                                 # one dict (run_dft_batch's) or exception per conformer, in order

A conformer whose preparation raises gets that exception as its result; the rest of its batch is labelled. If a
batch's SCF raises, its conformers are labelled one by one so the exception lands on the conformer that caused it.
An error of the machine rather than of a conformer (papers.qm1b.dft.is_systematic: out of memory, a worker process
that died) is raised instead, stopping the labelling.
Which conformers share a batch is the caller's choice (papers.qm1b.generate batches a part's conformers by size):
results do not depend on the workers or on how far ahead they prepare (beyond the last bits threaded reductions may
change between runs), so a resumed run labels a batch as an uninterrupted one did. Worker processes are spawned,
not forked (a forked JAX process can deadlock), so a script that uses workers needs the `if __name__ ==
"__main__":` guard.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor

from papers.qm1b.dft import check_options, dispatch, finish, is_systematic, solve
from papers.qm1b.dft.molecule import Problem, build_problem


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS reports one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def single_threaded() -> None:
    """Worker initialiser: one thread each for libcint/numpy, so the workers and the SCF share the cores."""
    from pyscf import lib

    lib.num_threads(1)


class _Done(Future):
    """An already finished future, for preparation in the main process (workers=0)."""

    def __init__(self, fn, *args):
        super().__init__()
        try:
            self.set_result(fn(*args))
        except Exception as e:  # the conformer's result, as from a worker
            if is_systematic(e):
                raise
            self.set_exception(e)


class Labeller:
    """Label batches of conformers with prepared-ahead host work (module docstring). `workers`: processes preparing
    problems (0: prepare in this process, no overlap; default: the CPUs this process may use); `prefetch`: batches
    prepared ahead of the one being solved. The DFT options are run_dft_batch's."""

    def __init__(
        self,
        *,
        basis: str = "sto-3g",
        xc: str = "b3lyp5",
        grid_level: int = 0,
        iterations: int = 20,
        dtype: str = "float32",
        density_fit: bool = False,
        early_stop: bool = True,
        workers: int | None = None,
        prefetch: int = 1,
    ):
        check_options(xc, dtype, iterations, grid_level)
        if workers is None:
            workers = usable_cpus()
        if not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers={workers!r} must be an integer >= 0 (0: prepare in this process)")
        if not isinstance(prefetch, int) or prefetch < 1:
            raise ValueError(f"prefetch={prefetch!r} must be an integer >= 1 (batches prepared ahead)")
        self.prepare_args = (basis, grid_level, density_fit)
        self.solve_options = {"iterations": iterations, "dtype": dtype, "early_stop": early_stop}
        self.workers, self.prefetch = workers, prefetch
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Labeller:
        if self.workers:  # spawn: forking a process that runs JAX's threads can deadlock the child
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=single_threaded)
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def _submit(self, atoms: Sequence[str]) -> list[Future]:
        if self.workers and self._pool is None:
            raise RuntimeError("use the Labeller as a context manager (with Labeller(...) as labeller: ...)")
        if self._pool is None:
            return [_Done(build_problem, a, *self.prepare_args) for a in atoms]
        return [self._pool.submit(build_problem, a, *self.prepare_args) for a in atoms]

    def _dispatch(self, problems: list[Problem]):
        """Start the batch's SCF; None if it raises at once."""
        try:
            return dispatch(problems, **self.solve_options)
        except Exception as e:
            if is_systematic(e):
                raise
            return None

    def _finish(self, problems: list[Problem], started) -> list:
        """The results of a dispatched batch, or (if its SCF raised) of its conformers one by one."""
        if started is not None:
            try:
                return finish(problems, started)
            except Exception as e:
                if is_systematic(e):
                    raise
        results = []
        for p in problems:
            try:
                results.append(solve([p], **self.solve_options)[0])
            except Exception as e:
                if is_systematic(e):
                    raise
                results.append(e)
        return results

    def map(self, batches: Iterable[Sequence[str]]) -> Iterator[list]:
        """One list of results (a dict or an exception per conformer) per batch, in order."""
        batches = iter(batches)
        queue: deque[list[Future]] = deque()

        def fill() -> None:
            while len(queue) < self.prefetch + 1:
                batch = next(batches, None)
                if batch is None:
                    return
                queue.append(self._submit(list(batch)))

        fill()
        previous = None  # (prepared items, dispatched SCF) of the batch before
        while queue:
            futures = queue.popleft()
            fill()  # the workers start on the next batches before this one's SCF
            items = []
            for f in futures:
                try:
                    items.append(f.result())
                except Exception as e:
                    if is_systematic(e):
                        raise
                    items.append(e)
            problems = [x for x in items if isinstance(x, Problem)]
            started = self._dispatch(problems) if problems else None
            if previous is not None:
                yield self._merge(*previous)
            previous = (items, problems, started)
        if previous is not None:
            yield self._merge(*previous)

    def _merge(self, items: list, problems: list[Problem], started) -> list:
        solved = iter(self._finish(problems, started) if problems else [])
        return [next(solved) if isinstance(x, Problem) else x for x in items]
