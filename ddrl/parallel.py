"""Independent runs in a pool of single-thread worker processes, with one progress bar for the batch.

On a small CPU box, two processes with one thread each get more done than one process with two threads
(decoding a small model is memory- and overhead-bound, and one thread per process removes the threads'
synchronisation; docs/benchmarks.md, "Runs per hour"). :func:`run_pool` maps a picklable function over jobs
in ``workers`` fresh (``spawn``) processes, each with ``OMP_NUM_THREADS=1`` and ``torch.set_num_threads(1)``,
and returns the results in the jobs' order.

What makes this safe and resumable is not here but in the run directories the jobs write
(:class:`ddrl.runs.RunDir`): every file is written atomically, one process owns a run directory while it
trains (a second one waits on its lock, then finds it finished), and a killed run resumes from its last
checkpoint. So a batch killed midway is rerun by calling :func:`run_pool` again: finished runs load, broken
ones resume. Determinism: every random draw of a run derives from its seed (:mod:`ddrl.seeds`), and every
worker computes with one thread, so a run's numbers do not depend on which worker runs it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable, Sequence

from ddrl.progress import tqdm


def available_cores() -> int:
    """CPU cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return os.cpu_count() or 1


def default_workers(n_jobs: int, device: str = "cpu") -> int:
    """Workers for ``n_jobs`` independent runs: one per available core, at most one per job; 1 (the serial
    path) for a single job or when the runs use an accelerator (one GPU is not shared between processes)."""
    if n_jobs < 2 or not str(device).startswith("cpu"):
        return 1
    return max(1, min(available_cores(), n_jobs))


def _exit_with_parent(parent: int, every_s: float = 1.0) -> None:
    """A worker's watchdog: end the worker once its parent is gone (the OS re-parents it). A killed batch
    (``kill`` of the main process, a notebook kernel restarted) must not leave workers training on: their runs
    resume from the last checkpoint when the batch is rerun."""
    while True:
        time.sleep(every_s)
        if os.getppid() != parent:
            os._exit(1)


def init_worker() -> None:
    """Run once in each worker before any job: one compute thread (set before torch is first imported,
    so OpenMP's pool starts with one thread too), and a watchdog that ends the worker with its parent."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    import torch

    torch.set_num_threads(1)


def run_pool(fn: Callable[[Any], Any], jobs: Sequence[Any], workers: int, desc: str = "runs",
             progress: bool = True) -> list[Any]:
    """``[fn(job) for job in jobs]``, computed by ``workers`` single-thread processes (in this process when
    ``workers <= 1``), with one tqdm bar counting finished jobs.

    ``fn`` must be a module-level function and ``jobs`` picklable. The first job that raises cancels the
    jobs not yet started and its exception is raised here (what the other jobs finished stays on disk).
    """
    if workers < 1:
        raise ValueError(f"run_pool: workers must be >= 1, got {workers}")
    jobs = list(jobs)
    bar = tqdm(total=len(jobs), desc=desc, unit="run", disable=not progress)
    try:
        if workers == 1 or len(jobs) <= 1:
            out = []
            for job in jobs:
                out.append(fn(job))
                bar.update()
                bar.refresh()
            return out
        results: list[Any] = [None] * len(jobs)
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=mp.get_context("spawn"),
                                 initializer=init_worker) as pool:
            futures = {pool.submit(fn, job): i for i, job in enumerate(jobs)}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)  # the bar counts each finished job
                for f in done:
                    if f.exception() is not None:
                        for p in pending:
                            p.cancel()
                        raise f.exception()
                    results[futures[f]] = f.result()
                    bar.update()
                    bar.refresh()  # shown now, not at tqdm's next mininterval: jobs are few and long
        return results
    finally:
        bar.close()
