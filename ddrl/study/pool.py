"""The claims study's jobs through the pool of single-thread workers (:func:`run_jobs`, one progress bar), how they
ended (:func:`status_counts`).

Every design of :mod:`ddrl.study.designs` runs its jobs with these; notebook 06
imports it to render the committed results, so nothing here loads torch until jobs run: the jobs'
code (:func:`ddrl.study.jobs.run_job`: train or load, evaluate, write the CSVs) is imported by :func:`run_jobs`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

from ddrl.run.pool import default_workers, run_pool
from ddrl.study.plan import Job, Scale


def run_jobs(jobs: Sequence[Job], scale: Scale, out_dir: str | Path, runs_root: str | Path | None = None,
             budget_min: float | None = None, workers: int | None = None, progress: bool = True,
             desc: str = "study", regimes: str | Path | None = None) -> list[dict]:
    """Every job through :func:`ddrl.run.pool.run_pool` (one bar); jobs starting after ``budget_min`` minutes
    are skipped. Each job's regime is read by name from ``regimes`` (a ``regimes_base.json`` and the files beside it,
    :func:`ddrl.study.plan.measurement_files`; default the registered study's). Returns one status per job."""
    if budget_min is not None and budget_min <= 0:
        raise ValueError(f"budget_min must be > 0 minutes, got {budget_min}")
    if not jobs:
        return []
    from ddrl.models import resolve_device  # torch, as the jobs' code: loaded only once there are jobs to run
    from ddrl.study.jobs import run_job

    deadline = time.time() + 60 * budget_min if budget_min is not None else None
    if workers is None:
        workers = default_workers(len(jobs), str(resolve_device(scale.knobs.get("device", "auto"))))
    return run_pool(run_job, [(j, scale.name, str(out_dir), str(runs_root) if runs_root else None, deadline,
                               str(regimes) if regimes else None) for j in jobs], workers, desc=desc, progress=progress)


def status_counts(statuses: Sequence[dict]) -> dict[str, int]:
    """How many of :func:`run_jobs`' jobs ended each way ("ran", "loaded", "skipped (budget)", ...), the most first:
    what each plan amendment's ``run`` command prints when it is done."""
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s["status"]] = counts.get(s["status"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))  # ties stay in the order first seen
