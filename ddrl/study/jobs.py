"""The claims study's jobs: one job (a regime x seed x the methods that share a run) trains or loads its runs,
evaluates them and writes one CSV per method under ``results/runs/<regime>/``, content-keyed so a rerun skips what is
written; :func:`run_jobs` sends jobs through the pool. Torch loads only where a job runs (notebook 06 imports this)."""

from __future__ import annotations

import gzip
import time
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ddrl.accel.logprob_backends import pinned_backend
from ddrl.config import key_fields
from ddrl.analysis import answer_groups, group_advantages, svamp_problems
from ddrl.data import load_dataset
from ddrl.infra.cache import content_key, records_key
from ddrl.grading.fingerprint import grader_fingerprint
from ddrl.run.fingerprints import model_fingerprint
from ddrl.infra.pool import default_workers, run_pool
from ddrl.infra.rundir import RunDir
from ddrl.infra.storage import atomic_write_bytes, write_csv
from ddrl.study.analysis import same_as_registered
from ddrl.study.plan import (BASE, COR_4X, HELDOUT_X, REAL, REFINED, RESULTS, SCALES, STEP_COLUMNS, SVAMP_REGIME, Job,
                             Regime, Scale, adapted_x_path, csv_path, experiment, heldout_x_path, heldout_x_records,
                             load_regimes, selection_k, wants_heldout)

#: The grader the committed runs were scored with, as their keys record it: an edit that keeps
#: :data:`ddrl.answers.GRADER_VERSION` and math-verify keeps them current; one that changes grading bumps it.
STUDY_GRADER = {"grader_version": "2+math-verify-0.9.0", "math_verify": "0.9.0", "source": "95776d03367a0d36"}


def study_grader() -> dict:
    """:data:`STUDY_GRADER` while the grader grades as it did, else today's fingerprint (every committed run stale)."""
    now = grader_fingerprint()
    same = all(now[k] == STUDY_GRADER[k] for k in ("grader_version", "math_verify"))
    return dict(STUDY_GRADER) if same else now


def resolve_device(device: str):
    """:func:`ddrl.models.resolve_device`, importing torch only when called."""
    from ddrl.models import resolve_device as resolve

    return resolve(device)


def job_key(regime: Regime, scale: Scale, method: str, seed: int) -> str:
    """A method's CSV key; it includes the device kind, as a GPU's kernels round differently."""
    exp = experiment(regime, scale, wants_heldout(regime.name, method))
    cfg = exp.config("ddrl" if method in REFINED else method, seed)
    refine = {"refine": REFINED[method]} if method in REFINED and method != COR_4X else {}  # R1's committed keys carry none
    return content_key({"what": "study-run-v1", "regime": regime.to_dict(), "method": method, "seed": seed,
                        "config": key_fields(cfg), "weights": model_fingerprint(cfg.model),
                        "adapted": records_key(exp.adapted), "heldout": records_key(exp.heldout),
                        "keep": 4 * cfg.cor_keep if method == COR_4X else None, "grader": study_grader(),
                        "device": resolve_device(cfg.device).type, **refine})[:20]


def _done(path: Path, key: str) -> bool:
    """Whether ``path`` holds the rows of ``key`` (an uncompressed CSV beside it is compressed into it first)."""
    plain = path.with_suffix("")
    if not path.is_file() and plain.suffix == ".csv" and plain.is_file():
        atomic_write_bytes(path, gzip.compress(plain.read_bytes(), mtime=0))
        plain.unlink()
    if not path.is_file():
        return False
    try:
        return set(pd.read_csv(path, usecols=["key"], dtype=str)["key"]) == {key}
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return False  # damaged or foreign: recomputed (from the runs and caches, not retrained)


def method_rows(exp, seed: int, method: str) -> list[dict]:
    """A method's per-question rows; a REFINED method's from one COR call on the seed's DDRL run."""
    if method not in REFINED:
        return exp.run(method, seed, per_question=True)
    factor, divisor, start = REFINED[method]
    c = exp.config("ddrl", seed)
    lr = None if divisor == 1 else c.cor_lr / divisor
    return [{**r, "method": method} for r in exp.refined(seed, factor * c.cor_keep, lr, start)]


def question_frame(rows: Sequence[dict], regime: str, key: str) -> pd.DataFrame:
    """A method's CSV: one row per split x question with pass@1, plus the run-level columns."""
    from ddrl.run.experiments import question_rows  # torch

    df = question_rows(rows)
    df.insert(0, "regime", regime)
    by_split = {r["split"]: r for r in rows}
    for col in ("maj@n", "mean_tokens", "eval_seconds", "rl_seconds", "cor_seconds", "cor_kept"):
        df[col] = [by_split[s].get(col) for s in df["split"]]
    df["run"] = [Path(by_split[s]["run_dir"]).name if by_split[s].get("run_dir") else "" for s in df["split"]]
    df["key"] = key
    return df


def steps_frame(run_dir: str | Path, cfg, n_questions: int, regime: str, method: str, seed: int, key: str) -> pd.DataFrame:
    """A run's per-step metrics; ``phase`` is rl, or extra for the additional-RL steps past the schedule."""
    from ddrl.train import steps_per_episode  # torch

    df = pd.DataFrame([{k: r.get(k) for k in STEP_COLUMNS} for r in RunDir(run_dir).read_metrics()])
    rl_steps = steps_per_episode(n_questions, cfg.prompts_per_step, cfg.drop_last) * cfg.episodes
    df["phase"] = np.where(df["step"] < rl_steps, "rl", "extra")
    for col, v in (("seed", seed), ("method", method), ("regime", regime)):
        df.insert(0, col, v)
    df["key"] = key
    return df


def base_paths(out_dir: str | Path, regime: str, seed: int, folder: str = BASE) -> tuple[Path, Path]:
    d = Path(out_dir) / folder / regime
    return d / f"seed{seed:02d}-groups.csv", d / f"seed{seed:02d}-g1.csv"


def base_frames(problems: Sequence[dict], regime: str, seed: int, k: int, key: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """F1-F3's answer groups and G1's per-question mean GRPO advantage of the positives among ``k`` selected."""
    groups = answer_groups(problems).rename(columns={"problem": "question"}).drop(columns=["answer"])
    adv = group_advantages(problems, k, ("grpo",), "random", seed)
    rows = []
    for q, g in adv.groupby("problem", sort=False):
        mixed = 0 < g["reward"].sum() < len(g)
        rows.append({"question": q, "label_correct": bool(g["label_correct"].iloc[0]), "consensus": g["consensus"].iloc[0],
                     "pos_adv_grpo": float(g.loc[g["reward"] == 1.0, "grpo"].mean()) if mixed else np.nan})
    g1 = pd.DataFrame(rows, columns=["question", "label_correct", "consensus", "pos_adv_grpo"])
    for df in (groups, g1):
        df.insert(0, "seed", seed)
        df.insert(0, "regime", regime)
        df["key"] = key
    return groups, g1


def _write_base(paths: tuple[Path, Path], key: str, frames) -> str:
    if all(_done(p, key) for p in paths):
        return "loaded"
    for p, df in zip(paths, frames()):
        write_csv(p, df)
    return "ran"


def base_job(regime: Regime, scale: Scale, seed: int):
    """The base rollouts' experiment, config, sampling settings and content key."""
    exp = experiment(regime, scale, False)
    cfg = exp.config("ttrl", seed)
    settings = {"n": cfg.n_votes, "temperature": cfg.rollout_temperature, "top_p": cfg.rollout_top_p,
                "max_new_tokens": cfg.max_new_tokens, "seed": seed, "batch_size": cfg.sample_batch_size, "cue": cfg.cue}
    key = content_key({"what": "study-base-v1", "model": model_fingerprint(cfg.model), "regime": regime.to_dict(),
                       "adapted": records_key(exp.adapted), "k": cfg.k_train, "grader": study_grader(),
                       "device": resolve_device(cfg.device).type, **settings})[:20]
    return exp, cfg, settings, key


def run_base_job(regime: Regime, scale: Scale, seed: int, out_dir: str | Path) -> str:
    """The base model's N rollouts per adapted question, graded, as :func:`base_frames` CSVs."""
    from ddrl.run.experiments import cached_rollouts  # torch

    exp, cfg, settings, key = base_job(regime, scale, seed)
    return _write_base(base_paths(out_dir, regime.name, seed), key, lambda: base_frames(
        cached_rollouts(cfg.model, list(exp.adapted), f"study-{regime.name}", device=cfg.device, **settings),
        regime.name, seed, cfg.k_train, key))


def run_real_rollouts_job(out_dir: str | Path, data_dir: str | Path | None = None) -> str:
    """Code-davinci-002's SVAMP programs as :func:`base_frames` CSVs under ``<out>/real/`` (plan Amendment 18)."""
    problems = svamp_problems(load_dataset("svamp_codex_rollouts", data_dir=data_dir))
    k = selection_k(len(problems[0]["keys"]))
    key = content_key({"what": "study-real-v1", "dataset": "svamp_codex_rollouts", "k": k,
                       "problems": [[p["id"], p["keys"], p["correct"]] for p in problems]})[:20]
    return _write_base(base_paths(out_dir, SVAMP_REGIME, 0, REAL), key,
                       lambda: base_frames(problems, SVAMP_REGIME, 0, k, key))


def heldout_x_key(regime: Regime, scale: Scale, method: str, seed: int, held: Sequence[dict]) -> str:
    """An H1x CSV's key: the method's :func:`job_key` and the fresh questions."""
    return content_key({"what": "study-heldout-x-v1", "run": job_key(regime, scale, method, seed),
                        "questions": records_key(held)})[:20]


def run_heldout_x_job(j: Job, regime: Regime, scale: Scale, out_dir: str | Path, runs_root: str | Path | None) -> str:
    """H1x: each method's run evaluated on the fresh questions, one CSV per method."""
    held = heldout_x_records(regime, scale.n_heldout_x)
    exp, status = experiment(regime, scale, True, runs_root, held=held), "loaded"
    for m in j.methods:
        key, path = heldout_x_key(regime, scale, m, j.seed, held), heldout_x_path(out_dir, j.regime, m, j.seed)
        done = _done(path, key)
        registered = csv_path(out_dir, j.regime, m, j.seed)
        side = None if registered.is_file() else adapted_x_path(out_dir, j.regime, m, j.seed)
        if done and (side is None or _done(side, key)):
            continue
        status = "ran"
        df = question_frame(method_rows(exp, j.seed, m), j.regime, key)
        adapted = df[df.split == "adapted"]
        if side is not None:
            write_csv(side, adapted)
        if not done:
            df = df[df.split == "heldout"].assign(split=HELDOUT_X, registered_reproduced=same_as_registered(
                adapted, registered))
            write_csv(path, df)
    return status


def run_job(job: tuple[Job, str, str, str | None, float | None, str | None]) -> dict:
    """A pool worker's job, on the ``"hf"`` log-prob backend the study ran with (plan Amendment 10)."""
    with pinned_backend("hf"):
        return _run_job(job)


def _run_job(job: tuple[Job, str, str, str | None, float | None, str | None]) -> dict:
    j, scale_name, out_dir, runs_root, deadline, regimes = job
    if deadline is not None and time.time() > deadline:
        return {"job": asdict(j), "status": "skipped (budget)"}
    scale = SCALES[scale_name]
    regime = load_regimes(regimes or RESULTS / "regimes_base.json", scale=scale, names=[j.regime])[j.regime]
    status = "loaded"
    if j.methods == (BASE,):
        return {"job": asdict(j), "status": run_base_job(regime, scale, j.seed, out_dir)}
    if j.label == "H1x":
        return {"job": asdict(j), "status": run_heldout_x_job(j, regime, scale, out_dir, runs_root)}
    for m in j.methods:
        key = job_key(regime, scale, m, j.seed)
        path = csv_path(out_dir, j.regime, m, j.seed)
        if _done(path, key):
            continue
        status = "ran"
        exp = experiment(regime, scale, wants_heldout(j.regime, m), runs_root)
        rows = method_rows(exp, j.seed, m)
        run_dir = rows[0].get("run_dir")
        if run_dir and m not in REFINED:  # a refinement's steps are its DDRL run's
            steps = steps_frame(run_dir, exp.config(m, j.seed), len(exp.adapted), j.regime, m, j.seed, key)
            write_csv(csv_path(out_dir, j.regime, m, j.seed, steps=True), steps)
        write_csv(path, question_frame(rows, j.regime, key))
    return {"job": asdict(j), "status": status}


def run_jobs(jobs: Sequence[Job], scale: Scale, out_dir: str | Path, runs_root: str | Path | None = None,
             budget_min: float | None = None, workers: int | None = None, progress: bool = True,
             desc: str = "study", regimes: str | Path | None = None) -> list[dict]:
    """One status per job, run through the pool; jobs starting after ``budget_min`` minutes are skipped."""
    if budget_min is not None and budget_min <= 0:
        raise ValueError(f"budget_min must be > 0 minutes, got {budget_min}")
    if not jobs:
        return []
    deadline = time.time() + 60 * budget_min if budget_min is not None else None
    if workers is None:
        workers = default_workers(len(jobs), str(resolve_device(scale.knobs.get("device", "auto"))))
    return run_pool(run_job, [(j, scale.name, str(out_dir), str(runs_root) if runs_root else None, deadline,
                               str(regimes) if regimes else None) for j in jobs], workers, desc=desc, progress=progress)


def status_counts(statuses: Sequence[dict]) -> dict[str, int]:
    """How many of :func:`run_jobs`' jobs ended each way, the most first (ties in the order first seen)."""
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s["status"]] = counts.get(s["status"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))
