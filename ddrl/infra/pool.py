"""Independent runs in a pool of single-thread worker processes, with one progress bar for the batch.

On a small CPU box, two processes with one thread each get more done than one process with two threads
(decoding a small model is memory- and overhead-bound, and one thread per process removes the threads'
synchronisation; docs/benchmarks.md, "Runs per hour"). :func:`run_pool` maps a picklable function over jobs
in ``workers`` processes of loky's reusable executor (:func:`loky.get_reusable_executor`: each a fresh Python, as
``spawn`` starts), each with ``OMP_NUM_THREADS=1`` and ``torch.set_num_threads(1)``, and returns the results in the
jobs' order.

The workers outlive a batch: the next :func:`run_pool` call of the process reuses them if nothing they
inherited at their start has changed (the worker count, the environment, the working directory,
``sys.path``: :func:`pool_key`), so a notebook's successive ``Experiment.grid`` calls pay the workers' start
(a fresh Python, importing torch, transformers and ``ddrl``: ~5 s on 2 cores) once. A worker left without a job
for :data:`IDLE_S` seconds leaves (loky's ``timeout``); an interrupted batch (Ctrl-C, a kernel interrupt) kills them at once, so
they do not train on unseen.

What makes this safe and resumable is not here but in the run directories the jobs write
(:class:`ddrl.infra.rundir.RunDir`): every file is written atomically, one process owns a run directory while it
trains (a second one waits on its lock, then finds it finished), and a killed run resumes from its last
checkpoint. So a batch killed midway is rerun by calling :func:`run_pool` again: finished runs load, broken
ones resume. Determinism: every random draw of a run derives from its seed (:mod:`ddrl.seeds`), and every
worker computes with one thread, so a run's numbers do not depend on which worker runs it, nor on what it ran
before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from datetime import datetime
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, wait
from typing import Any, Callable, Iterator, Sequence

import psutil
from loky import get_reusable_executor

from ddrl.infra.progress import tqdm


def minutes_to(cutoff: str, now: float | None = None) -> float:
    """Minutes from ``now`` (epoch seconds, default the clock) to a plan's clock ``cutoff`` (UTC, ISO): the budget
    after which a plan amendment's runner starts no job."""
    return (datetime.fromisoformat(cutoff).timestamp() - (time.time() if now is None else now)) / 60


def clock_budget(cutoff: str | None, budget: float | None = None, now: float | None = None) -> float | None:
    """A plan amendment's run budget in minutes: ``budget`` (None: no limit), cut to the minutes left before its clock
    ``cutoff`` while the clock is open, so no job starts after it; once the clock has passed (or with no clock)
    ``budget`` itself: what may still start then is the job list's rule, not the budget's."""
    left = None if cutoff is None else minutes_to(cutoff, now)
    if left is None or left <= 0:
        return budget
    return left if budget is None else min(budget, left)


#: Seconds a worker waits without a job (for the process's next batch) before it exits.
IDLE_S = 300.0


def available_cores() -> int:
    """CPU cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return os.cpu_count() or 1


def default_workers(n_jobs: int, device: str = "cpu") -> int:
    """Workers for ``n_jobs`` independent runs: one per available core, at most one per job; 1 (the serial
    path) for a single job or when the runs use an accelerator. One GPU *can* be shared: 8 testbed workers on one
    H100 ran 4.3x one worker's stage-1 seeds (docs/benchmarks.md), so pass ``workers`` for that; the default
    stays 1 because a paper-scale run needs the GPU's memory to itself."""
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


@contextlib.contextmanager
def environ(**values: str) -> Iterator[None]:
    """Set these environment variables inside the block (a process started there, a worker or a kernel, inherits
    them); each is restored on the way out, or removed where it was not set."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def compute_threads(n: int) -> Iterator[None]:
    """Compute with ``n`` threads inside the block: torch's intra-op count and ``OMP_NUM_THREADS`` (which
    :func:`ddrl.train.train` reads when its config leaves ``threads`` at 0); both restored on the way out.

    A CPU computation's numbers depend on the thread count at float-rounding level (matmul reductions split
    differently), and over an RL run that can grow into different sampled tokens, so whatever must give the
    same numbers wherever it runs fixes its count: every CPU run of :class:`ddrl.run.experiments.Experiment` (one,
    as in a pool worker) and every testbed build (:data:`ddrl.testbed.config.BUILD_THREADS`)."""
    import torch

    before = torch.get_num_threads()
    with environ(OMP_NUM_THREADS=str(n)):
        torch.set_num_threads(n)
        try:
            yield
        finally:
            torch.set_num_threads(before)


#: What every worker's environment overrides before it imports anything (loky's ``env``): one compute thread, so
#: OpenMP's and MKL's pools start with one thread when torch is first imported there.
WORKER_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


#: The module a loky worker process runs (``python -m loky.backend.popen_loky_posix``): how :func:`pool_pids` knows it.
WORKER_MAIN = "loky.backend.popen_loky_posix"


def init_worker() -> None:
    """Run once in each worker before any job: torch at one compute thread (the environment already says one:
    :data:`WORKER_ENV`), a watchdog that ends the worker with its parent, and SIGINT ignored: Jupyter interrupts a
    kernel, and shuts it down, by signalling its whole process group, and a kept worker must not die of an interrupt
    meant for another cell (:func:`run_pool` kills the workers of a batch that is itself interrupted)."""
    for var, value in WORKER_ENV.items():
        os.environ[var] = value
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    import torch

    torch.set_num_threads(1)


class _Pool:
    """The process's reusable pool: loky's (:func:`loky.get_reusable_executor`, which keeps an executor per thread),
    held here too so :func:`shutdown_pool` reaches it from any thread; ``key`` is what its workers inherited
    (:func:`pool_key`). At most one batch at a time uses it (:func:`run_pool` holds ``batch``)."""

    batch = threading.Lock()  # one batch at a time per process (two would share the cores anyway)
    state = threading.Lock()  # guards the fields below
    executor = None  # loky's executor, or None
    key: tuple | None = None


def pool_key(workers: int) -> tuple:
    """What a worker takes from its parent when it starts and a job may depend on: the number of workers,
    the environment (``DDRL_*`` variables choose backends, caches and data; :func:`ddrl.study` pins
    ``DDRL_LOGPROBS`` through it), the working directory and ``sys.path``. A pool is reused only under the
    same key."""
    return workers, tuple(sorted(os.environ.items())), os.getcwd(), tuple(sys.path)


def _acquire(workers: int):
    """loky's reusable executor of ``workers`` single-thread workers: the kept one when :func:`pool_key` is unchanged
    (loky itself replaces one that is broken: a worker killed or out of memory), else a new one (loky ends the old
    workers first). Each worker leaves after :data:`IDLE_S` seconds without a job (loky's ``timeout``)."""
    key = pool_key(workers)
    with _Pool.state:
        if _Pool.executor is not None and _Pool.key != key:
            _end(kill=False)
        _Pool.executor = get_reusable_executor(max_workers=workers, timeout=IDLE_S, env=WORKER_ENV,
                                               initializer=init_worker, reuse="auto" if _Pool.key == key else False)
        _Pool.key = key
        return _Pool.executor


def _end(kill: bool) -> None:
    """End the pool's workers (caller holds ``_Pool.state``): politely once they are idle, or at once."""
    ex, _Pool.executor, _Pool.key = _Pool.executor, None, None
    if ex is not None:
        ex.shutdown(wait=not kill, kill_workers=kill)


def shutdown_pool(kill: bool = False) -> None:
    """End the reusable pool's workers now (``kill``: without waiting for running jobs)."""
    with _Pool.state:
        _end(kill)


def pool_pids() -> list[int]:
    """The process ids of this process's live pool workers: its children that run loky's worker entry point
    (:data:`WORKER_MAIN`; loky's resource tracker, also a child, does not)."""
    pids = []
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if child.status() != psutil.STATUS_ZOMBIE and WORKER_MAIN in child.cmdline():
                pids.append(child.pid)
    return sorted(pids)


def run_pool(fn: Callable[[Any], Any], jobs: Sequence[Any], workers: int, desc: str = "runs",
             progress: bool = True) -> list[Any]:
    """``[fn(job) for job in jobs]``, computed by ``workers`` single-thread processes (in this process when
    ``workers <= 1`` or there is one job), with one tqdm bar counting finished jobs.

    ``fn`` must be a module-level function and ``jobs`` picklable. The first job that raises cancels the
    jobs not yet started, the running ones finish (what they finish stays on disk), and its exception is
    raised here. Interrupting the call (KeyboardInterrupt) kills the workers.
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
        with _Pool.batch:
            return _run_batch(fn, jobs, workers, bar)
    finally:
        bar.close()


def _submit(fn: Callable[[Any], Any], jobs: list[Any], workers: int) -> tuple[Any, dict]:
    """Every job submitted to the kept pool, or to a new one if the kept pool broke between its last batch and this
    submission (a worker killed, out of memory)."""
    for attempt in range(2):
        pool = _acquire(workers)
        try:
            return pool, {pool.submit(fn, job): i for i, job in enumerate(jobs)}
        except BrokenExecutor:
            if attempt:
                raise
            shutdown_pool(kill=True)
    raise AssertionError("unreachable")


def _run_batch(fn: Callable[[Any], Any], jobs: list[Any], workers: int, bar) -> list[Any]:
    results: list[Any] = [None] * len(jobs)
    error: BaseException | None = None
    try:
        pool, futures = _submit(fn, jobs, workers)
        pending = set(futures)
        while pending and error is None:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)  # the bar counts each finished job
            for f in done:
                if f.exception() is not None:
                    error = error or f.exception()
                    continue
                results[futures[f]] = f.result()
                bar.update()
                bar.refresh()  # shown now, not at tqdm's next mininterval: jobs are few and long
        if error is not None:
            for f in pending:
                f.cancel()
            wait(pending)  # the jobs already running finish: their runs are on disk for the rerun
    except BaseException:  # interrupted: the workers must not go on training unseen
        shutdown_pool(kill=True)
        raise
    if isinstance(error, BrokenExecutor):  # a worker died (killed, out of memory): start afresh next time
        shutdown_pool(kill=True)
    if error is not None:
        raise error
    return results
