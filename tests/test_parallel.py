"""Parallel runs (ddrl.infra.pool through Experiment.grid): the same numbers as the serial path, and a killed
batch resumes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import kill_after_first_run
import torch

from ddrl.run.experiments import notebook_experiment
from ddrl.infra import pool as parallel
from ddrl.infra.pool import (clock_budget, compute_threads, default_workers, minutes_to, pool_pids, run_pool,
                           shutdown_pool)

KNOBS = dict(episodes=1, prompts_per_step=2, n_votes=8, k_train=4, lr=1e-3, warmup_steps=1, eval_n=2, cor_m=4,
             cor_keep=2, cor_epochs=1, max_new_tokens=32, sample_batch_size=64, mini_batch_size=4,
             micro_batch_size=4, device="cpu")
METHODS = ["ttrl", "bcs_dae", "ddrl"]  # bcs_dae and ddrl share one run directory: one job
SEEDS = [0, 1]
SCORES = ["method", "seed", "split", "pass@1", "maj@n", "mean_tokens", "cor_kept", "tokens_per_step"]


def experiment(runs_root: Path, workers: int | None):
    exp = notebook_experiment(model="testbed", testbed_preset="tiny", dataset="testbed_test", data_dir=None,
                              n_adapted=4, n_heldout=2, seed=0, paper_settings=None, trainer=KNOBS, progress=False)
    exp.runs_root, exp.workers = runs_root, workers
    return exp


def final_weights(df: pd.DataFrame) -> dict[str, dict[str, torch.Tensor]]:
    out = {}
    for d in sorted(set(df["run_dir"].dropna())):
        out[Path(d).name] = torch.load(Path(d) / "final" / "trainable.pt", weights_only=True)
    return out


def metrics(df: pd.DataFrame) -> dict[str, list[dict]]:
    import json

    out = {}
    for d in sorted(set(df["run_dir"].dropna())):
        rows = [json.loads(x) for x in (Path(d) / "metrics.jsonl").read_text().splitlines()]
        out[Path(d).name] = [{k: v for k, v in r.items() if not k.startswith("time/") and k != "_sha256"} for r in rows]
    return out


def assert_same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a[SCORES].reset_index(drop=True), b[SCORES].reset_index(drop=True))
    assert metrics(a) == metrics(b)
    wa, wb = final_weights(a), final_weights(b)
    assert wa.keys() == wb.keys() and len(wa) == len(SEEDS) * 2
    for run in wa:
        for n in wa[run]:
            assert torch.equal(wa[run][n], wb[run][n]), (run, n)


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The serial path's grid (its own cache, so the pool cannot reuse a cached evaluation) in a process set
    to two threads. ``Experiment`` computes CPU runs and evaluations with one thread wherever they run
    (``Experiment.threads``): at two threads the numbers differ in float rounding (matmul reductions split
    differently), and the run directories and evaluations are keyed without a thread count. Before that, this
    fixture had to set ``OMP_NUM_THREADS=1`` to match the pool. The caller's thread settings come back."""
    root = tmp_path_factory.mktemp("serial")
    mp = pytest.MonkeyPatch()
    mp.setenv("DDRL_CACHE_DIR", str(root / "cache"))
    mp.setenv("OMP_NUM_THREADS", "2")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        df = experiment(root / "runs", workers=1).grid(METHODS, SEEDS)
        assert torch.get_num_threads() == 2 and os.environ["OMP_NUM_THREADS"] == "2", "thread settings not restored"
        yield df
    finally:
        mp.undo()
        torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def no_pool_left():
    """Each test starts and ends without the reusable pool (its idle workers would outlive the test)."""
    shutdown_pool()
    yield
    shutdown_pool()


def worker_view(name: str) -> tuple[int, str | None]:
    """A job that says which process ran it and what it sees of the environment variable ``name``."""
    time.sleep(0.2)  # long enough that both workers take jobs
    return os.getpid(), os.environ.get(name)


def worker_threads(_) -> tuple[int, str | None, str | None]:
    """A job that says how many threads its worker computes with (torch's count, OMP's and MKL's variables)."""
    time.sleep(0.2)  # long enough that both workers take jobs
    return torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS")


def _ended(pids: list[int], within_s: float) -> bool:
    """Whether the processes ``pids`` have all ended (gone or zombies) within ``within_s`` seconds."""
    deadline = time.time() + within_s
    while time.time() < deadline:
        alive = [p for p in pids if Path(f"/proc/{p}").exists()
                 and Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
        if not alive:
            return True
        time.sleep(0.2)
    return False


def test_compute_threads_sets_both_counts_and_restores_them(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    with compute_threads(1):
        assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"
    assert torch.get_num_threads() == before and "OMP_NUM_THREADS" not in os.environ


def test_default_workers():
    assert default_workers(1) == 1 and default_workers(8, "cuda") == 1 and default_workers(0) == 1
    assert 1 <= default_workers(8) <= min(8, os.cpu_count() or 1)


def test_run_pool_keeps_the_jobs_order_and_raises_a_jobs_error(monkeypatch):
    """Results in the jobs' order, a job's error raised here, and every worker computing with one thread whatever
    this process's thread settings."""
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert run_pool(abs, [-3, 1, -2], workers=2, progress=False) == [3, 1, 2]
    assert run_pool(worker_threads, range(4), workers=2, progress=False) == [(1, "1", "1")] * 4
    with pytest.raises(TypeError):
        run_pool(abs, [-1, "x"], workers=2, progress=False)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        run_pool(abs, [1], workers=0)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux) to see the workers end")
def test_batches_reuse_the_workers_until_what_they_inherit_changes(monkeypatch):
    """A second batch runs on the first batch's workers (no new start: ~5 s per ``Experiment.grid`` call on 2
    cores); once the environment has changed (as ``ddrl.study`` pins ``DDRL_LOGPROBS``) the next batch gets
    new workers that see the new value, and the old ones end."""
    monkeypatch.setenv("DDRL_TEST_POOL", "a")
    first = run_pool(worker_view, ["DDRL_TEST_POOL"] * 4, 2, progress=False)
    pids = pool_pids()
    assert len(pids) == 2 and {p for p, _ in first} <= set(pids) and {v for _, v in first} == {"a"}
    second = run_pool(worker_view, ["DDRL_TEST_POOL"] * 4, 2, progress=False)
    assert pool_pids() == pids and {p for p, _ in second} <= set(pids) and {v for _, v in second} == {"a"}
    monkeypatch.setenv("DDRL_TEST_POOL", "b")
    third = run_pool(worker_view, ["DDRL_TEST_POOL"] * 4, 2, progress=False)
    assert {v for _, v in third} == {"b"} and not {p for p, _ in third} & set(pids)
    assert _ended(pids, 15), "the workers of the old environment did not end"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux) to see the workers end")
def test_kept_workers_survive_an_interrupt_and_a_dead_one_is_replaced():
    """Jupyter interrupts (and shuts down) a kernel by sending SIGINT to its whole process group: the kept
    workers ignore it (once they died of it, and the next grid call failed with BrokenProcessPool). A worker
    that died while idle (killed, out of memory) is replaced by a new pool at the next batch."""
    run_pool(worker_view, ["HOME"] * 4, 2, progress=False)
    pids = pool_pids()
    for p in pids:
        os.kill(p, signal.SIGINT)
    time.sleep(1)
    again = run_pool(worker_view, ["HOME"] * 4, 2, progress=False)
    assert pool_pids() == pids and {p for p, _ in again} <= set(pids)
    os.kill(pids[0], signal.SIGKILL)
    assert _ended(pids[:1], 15)
    time.sleep(1)  # the executor's manager thread marks the pool broken
    third = run_pool(worker_view, ["HOME"] * 4, 2, progress=False)
    assert [v for _, v in third] == [os.environ["HOME"]] * 4 and not set(pool_pids()) & set(pids)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux) to see the workers end")
def test_an_idle_pool_ends_its_workers(monkeypatch):
    monkeypatch.setattr(parallel, "IDLE_S", 0.5)
    run_pool(worker_view, ["HOME"] * 2, 2, progress=False)
    pids = pool_pids()
    assert len(pids) == 2 and _ended(pids, 20) and pool_pids() == []


def experiment_threads(exp, item) -> tuple[Any, int, str | None]:
    """An :meth:`Experiment.map` job: its item back, with the thread counts it computes with inside the
    experiment's CPU thread setting (``Experiment.threads``)."""
    with exp.threads({}):
        return item, torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")


def test_the_experiments_jobs_compute_with_one_thread_in_the_pool_and_here(tmp_path, monkeypatch):
    """``Experiment.map``: through the pool (2 workers) and on the serial path in a two-thread process, every job
    gets its item, in order, and computes with one thread, so a run's numbers do not depend on where it ran."""
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        items = ["a", "b", "c"]
        for workers in (2, 1):
            exp = experiment(tmp_path / "runs", workers=workers)
            assert exp.map(experiment_threads, items, {}) == [(i, 1, "1") for i in items], workers
        assert torch.get_num_threads() == 2 and os.environ["OMP_NUM_THREADS"] == "2", "thread settings not restored"
    finally:
        torch.set_num_threads(threads)


def test_grid_groups_runs_sharing_a_directory(tmp_path):
    exp = experiment(tmp_path / "runs", workers=2)
    groups = exp.independent_runs([(m, s) for s in SEEDS for m in ["no_adaptation", *METHODS]])
    assert groups == [[("no_adaptation", 0)], [("ttrl", 0)], [("bcs_dae", 0), ("ddrl", 0)],
                      [("no_adaptation", 1)], [("ttrl", 1)], [("bcs_dae", 1), ("ddrl", 1)]]


KILLED_BATCH = """
import sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from test_parallel import METHODS, SEEDS, experiment
experiment(Path({runs!r}), workers=2).grid(METHODS, SEEDS)
"""


@pytest.mark.slow
def test_a_pool_of_two_gives_the_serial_numbers_and_a_killed_batch_resumes(serial, tmp_path, monkeypatch):
    """Every run here trains in a pool of 2 single-thread workers: first a batch SIGKILLed whole (parent and workers)
    once a first run has finished, then the grid rerun, which keeps the finished run (not retrained), resumes the
    others and ends with the serial path's numbers (a two-thread process): the same rows, metrics.jsonl and final
    weights, bitwise. A run's numbers depend on its seed, not on where it ran or whether it was interrupted. (A
    pool-of-two run without the kill was a test of its own until 2026-12-02: this one makes each of its assertions.)
    Slow tier (8 training runs, 3 process starts); the fast tier keeps its parts: one thread in every worker
    (``test_run_pool_keeps_the_jobs_order_and_raises_a_jobs_error``) and in the serial path
    (``test_the_experiments_jobs_compute_with_one_thread_in_the_pool_and_here``), the pool's rows in the serial
    order, and a killed run's resume (``tests/test_train.py::test_resume_after_a_kill_equals_an_uninterrupted_run``)."""
    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache"))
    runs = tmp_path / "runs"
    code = KILLED_BATCH.format(tests=str(Path(__file__).parent), runs=str(runs))
    finished = kill_after_first_run([sys.executable, "-c", code], os.environ.copy(), runs)
    assert finished, "no run finished before the batch ended or the deadline"
    assert len(list(runs.glob("*/final/result.json"))) < len(SEEDS) * 2, "the batch finished before the kill"
    stamp = {p: p.stat().st_mtime_ns for p in finished}
    again = experiment(runs, workers=2).grid(METHODS, SEEDS)
    assert {p: p.stat().st_mtime_ns for p in finished} == stamp, "a finished run was retrained"
    assert_same(again, serial)


def test_the_pool_bar_counts_each_job_as_it_finishes(tmp_path, monkeypatch):
    """The batch bar (read by `make reproduce`'s status line and visible in a study's log) moves when a job
    finishes, not only when the whole batch has: with a quick job and one that waits until the test has read
    the bar, it reads 1/2 while the second still runs. (No fixed sleep: on a loaded machine the workers' start
    alone can take longer than one; the second job ends when the test lets it, or after 120 s. ``run_pool``
    refreshes the bar at each finished job: tqdm alone skips an update that comes within its ``mininterval``
    of the last print, 1 s in batch runs, and a quick first job then showed 0/2 until the batch ended.)"""
    import threading

    from ddrl.infra import progress

    path, release = tmp_path / "bars.txt", tmp_path / "release"
    path.write_text("")  # the runner makes the file; a bar never does
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(path))
    jobs = ["true", f"timeout 120 sh -c 'until [ -e {release} ]; do sleep 0.1; done'"]
    batch = threading.Thread(target=run_pool, args=(os.system, jobs, 2), kwargs={"desc": "batch"})
    batch.start()
    seen, deadline = None, time.time() + 110
    try:
        while time.time() < deadline and batch.is_alive():
            seen = progress.latest_bar(path)
            if seen and "1/2" in seen:
                break
            time.sleep(0.2)
        alive = batch.is_alive()
    finally:
        release.touch()
        batch.join()
    assert alive and seen and seen.startswith("batch:  50% 1/2"), seen


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


#: A batch that, like a notebook kernel, turns SIGINT into KeyboardInterrupt: Python installs that handler only
#: when SIGINT is not ignored at its start, and a test run started in the background (``make test &``: bash's
#: asynchronous commands ignore SIGINT) would hand the ignore down to it. SIGUSR1 dumps every thread's stack.
SLEEPING_BATCH = ("import faulthandler, signal, time\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
                  "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
                  "from ddrl.infra.pool import run_pool\nrun_pool(time.sleep, [120.0, 120.0], 2, progress=False)")


@contextlib.contextmanager
def sleeping_batch():
    """A process running a pool batch of two 120-s sleeps, yielded once its two workers have started (and run
    their initializer, so the watchdog is on) and picked up the jobs; killed on the way out."""
    batch = subprocess.Popen([sys.executable, "-c", SLEEPING_BATCH], cwd=Path(__file__).resolve().parents[1],
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 90
        workers: list[int] = []
        while time.time() < deadline and len(workers) < 2:
            time.sleep(0.5)
            workers = [c for c in _children(batch.pid) if parallel.WORKER_MAIN in Path(f"/proc/{c}/cmdline").read_text()]
        assert len(workers) == 2, workers
        time.sleep(3)
        yield batch, workers
    finally:
        batch.kill()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux) to list the workers")
def test_workers_end_when_the_batch_process_is_killed():
    """Killing the process that runs the pool (as a study is stopped) ends its workers too: they must not go on
    training unseen (their runs resume from checkpoints when the batch is rerun)."""
    with sleeping_batch() as (batch, workers):
        batch.send_signal(signal.SIGKILL)
        batch.communicate()
        assert _ended(workers, 15), "the workers outlived their killed parent"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux) to list the workers")
def test_an_interrupted_batch_kills_its_workers():
    """Ctrl-C (SIGINT to the batch's process, as a notebook kernel is interrupted) ends the call at once with
    KeyboardInterrupt and kills the workers, instead of waiting for their jobs (here 120 s) to finish."""
    with sleeping_batch() as (batch, workers):
        batch.send_signal(signal.SIGINT)
        try:
            _, err = batch.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # stuck: every thread's stack to stderr (faulthandler), fail with it
            batch.send_signal(signal.SIGUSR1)
            time.sleep(2)
            batch.kill()
            _, err = batch.communicate()
            pytest.fail(f"the interrupted batch did not end within 30 s; its threads and stderr:\n{err[-6000:]}")
        assert batch.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
        assert _ended(workers, 15), "the workers outlived the interrupted batch"


def test_environ_sets_variables_for_the_block_and_restores_them(monkeypatch):
    from ddrl.infra.pool import environ
    from ddrl.run.reproduce import KERNEL_MPLBACKEND

    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("DDRL_TEST_UNSET", raising=False)
    with environ(MPLBACKEND=KERNEL_MPLBACKEND, DDRL_TEST_UNSET="x"):
        assert os.environ["MPLBACKEND"] == KERNEL_MPLBACKEND and os.environ["DDRL_TEST_UNSET"] == "x"
    assert os.environ["MPLBACKEND"] == "Agg" and "DDRL_TEST_UNSET" not in os.environ
    with pytest.raises(RuntimeError), environ(MPLBACKEND="other"):
        raise RuntimeError
    assert os.environ["MPLBACKEND"] == "Agg"  # restored after an error too


def test_a_plan_clock_cuts_the_run_budget_only_while_it_is_open():
    """``minutes_to`` counts to a plan's clock; ``clock_budget`` cuts a run's budget to it while it is open, and once it
    has passed (or with no clock) leaves the budget alone: the job list decides what may still start then."""
    clock = "2026-12-03T04:40:00+00:00"
    at = datetime.fromisoformat(clock).timestamp()
    assert minutes_to(clock, at - 600) == pytest.approx(10.0) and minutes_to(clock, at + 60) == pytest.approx(-1.0)
    assert clock_budget(clock, None, at - 600) == pytest.approx(10.0)
    assert clock_budget(clock, 5.0, at - 600) == 5.0 and clock_budget(clock, 30.0, at - 600) == pytest.approx(10.0)
    assert clock_budget(clock, None, at + 60) is None and clock_budget(clock, 5.0, at + 60) == 5.0
    assert clock_budget(None, 7.0) == 7.0 and clock_budget(None) is None
