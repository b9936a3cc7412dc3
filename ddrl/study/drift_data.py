"""The data of the drift amendments (plan Amendments 21-23; analysed by :mod:`ddrl.study.drift`): where a run's
files lie, the step-log columns kept, and one row per run (:func:`seed_table`: held-out and adapted pass@1, late
KL and the held-out KL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ddrl.run.storage import write_csv
from ddrl.run.rundir import RunDir
from ddrl.study.plan import ADAPTED_X, HELDOUT_X

#: The step-log columns a drift CSV keeps: the distance from the reference (``actor/kl``), the sampled rollouts'
#: entropy, the share of a step's rollouts whose answer is rare (frequency <= 1/8: ``gt/bin0-0.125/n`` of the
#: step's ``prompts_per_step`` x N rollouts), the majority's share and the pseudo-label's accuracy
DRIFT_COLUMNS = ("step", "episode", "actor/kl", "rollout/entropy", "gt/bin0-0.125/n", "label/majority_ratio",
                 "gt/label_acc")
LATE_EPISODES = 2  # "late": the last two episodes of the schedule (AMC-like: episodes 6-7 of 8)
KL_UNIT = 1e-3  # late KL is reported in units of 1e-3
PAIR = ("bcs", "bcs_random_neg")  # X1, X2, X4: a - b
DRIFT = "drift"  # <out>/drift/<regime>/<method>-seedNN-steps.csv


def drift_path(out_dir: str | Path, regime: str, method: str, seed: int, kind: str = "steps") -> Path:
    """A run's drift CSV, ``<out>/drift/<regime>/<method>-seedNN-steps.csv``, or (``kind="kl"``) its held-out KL,
    ``...-seedNN-kl.json``."""
    return Path(out_dir) / DRIFT / regime / f"{method}-seed{seed:02d}-{kind}.{'json' if kind == 'kl' else 'csv'}"


def drift_steps(run_dir: str | Path) -> pd.DataFrame:
    """The :data:`DRIFT_COLUMNS` of a run directory's ``metrics.jsonl`` (read by :meth:`ddrl.run.rundir.RunDir.read_metrics`),
    one row per RL step (COR's steps, which log none of them, are left out)."""
    run = RunDir(run_dir)
    if not run.metrics_path.is_file():
        raise FileNotFoundError(f"{run.metrics_path}: no step log (the run directory is missing or unfinished)")
    rows = [r for r in run.read_metrics() if "actor/kl" in r]
    if not rows:
        raise ValueError(f"{run.metrics_path}: no RL step with 'actor/kl'")
    return pd.DataFrame([{k: r.get(k) for k in DRIFT_COLUMNS} for r in rows])


def h1x_files(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR,
              split: str = HELDOUT_X) -> list[tuple[str, Path]]:
    """(method, path) of every H1x CSV of ``methods`` under ``out_dir`` of ``regime`` (``.csv.gz``; plain ``.csv``);
    ``split=ADAPTED_X``: the files of those runs' adapted questions."""
    return [(m, p) for m in methods for p in sorted((Path(out_dir) / split / regime).glob(f"{m}-seed*.csv*"))]


def h1x_runs(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR) -> list[tuple[str, int, str]]:
    """(method, seed, run directory name) of every H1x CSV (:func:`h1x_files`)."""
    heads = [(m, pd.read_csv(p, nrows=1)) for m, p in h1x_files(out_dir, regime, methods)]
    return [(m, int(h["seed"].iloc[0]), str(h["run"].iloc[0])) for m, h in heads]


def export_steps(out_dir: str | Path, runs_root: str | Path, regime: str, methods: Sequence[str] = PAIR,
                 dest: str | Path | None = None) -> tuple[int, list[str]]:
    """For every H1x CSV under ``out_dir`` of ``regime`` and ``methods``, the drift CSV of the run it names
    (its ``run`` column, a directory under ``runs_root``), written under ``dest`` (default ``out_dir``).
    Returns how many were written and the runs whose directory is not under ``runs_root`` (skipped)."""
    n, missing = 0, []
    for m, seed, run in h1x_runs(out_dir, regime, methods):
        if not (Path(runs_root) / run).is_dir():
            missing.append(run)
            continue
        df = drift_steps(Path(runs_root) / run)
        df.insert(0, "seed", seed)
        df.insert(0, "method", m)
        write_csv(drift_path(dest or out_dir, regime, m, seed), df)
        n += 1
    return n, missing


def late_mean(steps: pd.DataFrame, column: str, episodes: int = LATE_EPISODES) -> float:
    """Mean of ``column`` over the run's last ``episodes`` episodes."""
    last = steps["episode"].max()
    return float(steps.loc[steps["episode"] > last - episodes, column].mean())


def heldout_rows(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR, split: str = HELDOUT_X) -> pd.DataFrame:
    """The H1x rows (per method, seed and fresh question) of ``methods`` (:func:`h1x_files`); pass@1 in points.
    ``split=ADAPTED_X``: the same runs' adapted questions, where kept (:func:`ddrl.study.plan.adapted_x_path`)."""
    files = [p for _, p in h1x_files(out_dir, regime, methods, split)]
    if not files:
        raise FileNotFoundError(f"{Path(out_dir) / split / regime}: no {split} CSV of {list(methods)}")
    df = pd.concat([pd.read_csv(p, dtype={"question": str}) for p in files], ignore_index=True)
    return df.assign(accuracy=100 * df["pass@1"])


def seed_table(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR,
               drift_dir: str | Path | None = None, held: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per method and seed with both an H1x CSV and a drift CSV: held-out pass@1 (points), late KL
    (units of :data:`KL_UNIT`), late rollout entropy, late rare-answer rollouts per step and the held-out KL (NaN
    where not measured), and the run's adapted pass@1 (points; NaN where its adapted rows were not kept).
    ``held``: :func:`heldout_rows`' frame, when the caller has read it already."""
    if held is None:
        held = heldout_rows(out_dir, regime, methods)
    kept = [p for _, p in h1x_files(out_dir, regime, methods, ADAPTED_X)]
    adapted = (heldout_rows(out_dir, regime, methods, ADAPTED_X).groupby(["method", "seed"])["accuracy"].mean()
               if kept else pd.Series(dtype=float))
    rows = []
    for (m, s), acc in held.groupby(["method", "seed"])["accuracy"].mean().items():
        p = drift_path(drift_dir or out_dir, regime, m, s)
        if not p.is_file():
            continue
        st = pd.read_csv(p)
        kp = drift_path(drift_dir or out_dir, regime, m, s, "kl")
        rows.append({"method": m, "seed": int(s), "heldout": float(acc), "kl_late": late_mean(st, "actor/kl") / KL_UNIT,
                     "entropy_late": late_mean(st, "rollout/entropy"),
                     "rare_late": late_mean(st, "gt/bin0-0.125/n"),  # rollouts of rare answers per step
                     "kl_heldout": json.loads(kp.read_text())["kl"] if kp.is_file() else np.nan,
                     "adapted": float(adapted.get((m, s), np.nan))})
    if not rows:
        raise FileNotFoundError(f"{Path(drift_dir or out_dir) / DRIFT / regime}: no drift CSV for the H1x runs")
    return pd.DataFrame(rows).sort_values(["method", "seed"]).reset_index(drop=True)
