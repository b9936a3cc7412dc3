"""The claims study (issue 17) as ``results/plan.md`` registers it: running its jobs and the CLI. The design
(constants, regimes, job lists, the readings of the plan) is :mod:`ddrl.study_plan`; the analysis that turns the
per-run CSVs into ``results/stage1.json`` and ``results/claims.json`` is :mod:`ddrl.study_analysis`.

::

    python -m ddrl.study --stage 1 [--budget-min N] [--regimes aime_like ...]   # no adaptation, TTRL, DDRL, seeds 0-5
    python -m ddrl.study --analyse stage1        # variance components + seeds per regime -> results/stage1.json
    python -m ddrl.study --stage 2 [--budget-min N]                            # the rest, in the plan's priority order
    python -m ddrl.study --heldout-x             # H1x (Amendments 11-17, 19, 20): H1 (+ TTRL, BCS+DAE, ...) on fresh questions
    python -m ddrl.study --real-rollouts         # F1-F3, G1, E1, E2's inputs on SVAMP Codex samples (Amendment 18)
    python -m ddrl.study --analyse claims        # every claim's estimate, interval, verdict -> results/claims.json
    python -m ddrl.study --status                # CSVs written per stage and the measured worker time left

Runs go through :func:`ddrl.parallel.run_pool` (one single-thread worker per core, one progress bar). A job is
one regime x seed x the methods of one claim that share a run; it trains (or loads) the run through
:class:`ddrl.experiments.Experiment` and writes one small CSV per method under ``results/runs/<regime>/``:
pass@1 of every question (the mean of the evaluation samples) with run-level columns, and for trained methods
a ``-steps.csv`` with the per-step mean advantage and wall time (D1, D2, C2). Killed and rerun, a job whose
CSVs exist with the same content key is skipped, finished runs load and are never retrained (run
directories, :mod:`ddrl.runs`), evaluations come from their content-keyed cache. ``--budget-min``: jobs that
would start after the budget is spent are skipped (the running ones finish), so the study stops cleanly
between jobs; rerunning it continues where it stopped.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ddrl import claims as C
from ddrl.analysis import answer_groups, group_advantages, svamp_problems
from ddrl.data import DataError, load_dataset
from ddrl.experiments import cached_rollouts, model_fingerprint, question_rows
from ddrl.logprobs import pinned_backend
from ddrl.models import resolve_device
from ddrl.parallel import default_workers, run_pool
from ddrl.regimes import Regime
from ddrl.reporting import (REPO, atomic_write_bytes, content_key, grader_fingerprint, records_key, write_csv,
                            write_json)
from ddrl.runs import RunDir
from ddrl.study_analysis import analyse_claims, analyse_stage1
from ddrl.study_figures import render_results
from ddrl.study_plan import (BASE, COR_4X, HELDOUT_X, HELDOUT_X_AMENDMENTS, REAL, REFINED, RESULTS, SCALES, STEP_COLUMNS,
                             SVAMP_REGIME, Job, Scale, adapted_x_path, check_weights, csv_path, experiment,
                             export_base_models, heldout_x_jobs, heldout_x_path, heldout_x_records, load_regimes,
                             regimes_path, selection_k, stage1_jobs, stage2_jobs, wants_heldout, write_replication)
from ddrl.study_status import status_text
from ddrl.train import steps_per_episode

# ---------------------------------------------------------------------------------------------------------
# One job: train / load, evaluate, write the CSVs
# ---------------------------------------------------------------------------------------------------------


def job_key(regime: Regime, scale: Scale, method: str, seed: int) -> str:
    """What a method's CSV depends on: the regime, the full TrainConfig, the base weights, the questions
    and answers (held-out ones where evaluated), COR 4x's keep, the grader, and the kind of device that
    computes it (``cpu`` or ``cuda``: a GPU's kernels round differently, so its runs are other runs)."""

    exp = experiment(regime, scale, wants_heldout(regime.name, method))
    cfg = exp.config("ddrl" if method in REFINED else method, seed)
    refine = {"refine": REFINED[method]} if method in REFINED and method != COR_4X else {}  # R1's key as it was
    return content_key({"what": "study-run-v1", "regime": regime.to_dict(), "method": method, "seed": seed,
                        "config": asdict(cfg), "weights": model_fingerprint(cfg.model),
                        "adapted": records_key(exp.adapted), "heldout": records_key(exp.heldout),
                        "keep": 4 * cfg.cor_keep if method == COR_4X else None, "grader": grader_fingerprint(),
                        "device": resolve_device(cfg.device).type, **refine})[:20]


def _done(path: Path, key: str) -> bool:
    """Whether ``path`` holds the rows of ``key``; an uncompressed CSV of earlier code beside it is compressed into
    it first (not recomputed)."""
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
    """A study job's per-question rows of ``method``: :func:`refined_rows` for a :data:`~ddrl.study_plan.REFINED`
    method, else :meth:`ddrl.experiments.Experiment.run` (trains or loads the run, then evaluates)."""
    return refined_rows(exp, seed, method) if method in REFINED else exp.run(method, seed, per_question=True)


def refined_rows(exp, seed: int, method: str) -> list[dict]:
    """A :data:`~ddrl.study_plan.REFINED` method's rows: :meth:`ddrl.experiments.Experiment.refined` with its keep,
    learning rate and start weights, from the seed's DDRL config (R1, Table 6: COR keeping 4x the rollouts from the
    RL-only weights, as notebook 05's; plan Amendment 30: COR at lr/10 from them, or COR from the untrained model),
    the rows named ``method``."""
    factor, divisor, start = REFINED[method]
    c = exp.config("ddrl", seed)
    lr = None if divisor == 1 else c.cor_lr / divisor
    return [{**r, "method": method} for r in exp.refined(seed, factor * c.cor_keep, lr, start)]


def question_frame(rows: Sequence[dict], regime: str, key: str) -> pd.DataFrame:
    """A method's CSV: one row per split x question with pass@1, plus the run-level columns."""

    df = question_rows(rows)
    df.insert(0, "regime", regime)
    by_split = {r["split"]: r for r in rows}
    for col in ("maj@n", "mean_tokens", "eval_seconds", "rl_seconds", "cor_seconds", "cor_kept"):
        df[col] = [by_split[s].get(col) for s in df["split"]]
    df["run"] = [Path(by_split[s]["run_dir"]).name if by_split[s].get("run_dir") else "" for s in df["split"]]
    df["key"] = key
    return df




def steps_frame(run_dir: str | Path, cfg, n_questions: int, regime: str, method: str, seed: int, key: str) -> pd.DataFrame:
    """Per-step metrics of a run (D1, D2: ``adv/mean``; C2: ``time/step_s``), ``phase`` = rl or extra (the
    additional-RL steps past the schedule)."""

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
    """F1-F3's answer groups (one row per question x distinct answer: count of N, correct) and G1's per-question
    mean GRPO advantage of the positive rollouts among ``k`` selected (NaN without mixed rewards)."""

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


def base_job(regime: Regime, scale: Scale, seed: int):
    """The base rollouts' experiment, config, sampling settings and content key (what their CSVs depend on:
    the base weights, the regime and its questions, the sampling settings, K, the grader, the device kind)."""

    exp = experiment(regime, scale, False)
    cfg = exp.config("ttrl", seed)
    settings = {"n": cfg.n_votes, "temperature": cfg.rollout_temperature, "top_p": cfg.rollout_top_p,
                "max_new_tokens": cfg.max_new_tokens, "seed": seed, "batch_size": cfg.sample_batch_size, "cue": cfg.cue}
    key = content_key({"what": "study-base-v1", "model": model_fingerprint(cfg.model), "regime": regime.to_dict(),
                       "adapted": records_key(exp.adapted), "k": cfg.k_train, "grader": grader_fingerprint(),
                       "device": resolve_device(cfg.device).type, **settings})[:20]
    return exp, cfg, settings, key


def run_base_job(regime: Regime, scale: Scale, seed: int, out_dir: str | Path) -> str:
    """The base model's N rollouts per adapted question (sampling seed ``seed``), graded and cached, as CSVs."""

    exp, cfg, settings, key = base_job(regime, scale, seed)
    gpath, apath = base_paths(out_dir, regime.name, seed)
    if _done(gpath, key) and _done(apath, key):
        return "loaded"
    problems = cached_rollouts(cfg.model, list(exp.adapted), f"study-{regime.name}", device=cfg.device, **settings)
    groups, g1 = base_frames(problems, regime.name, seed, cfg.k_train, key)
    write_csv(gpath, groups)
    write_csv(apath, g1)
    return "ran"


def run_real_rollouts_job(out_dir: str | Path, data_dir: str | Path | None = None) -> str:
    """The inputs of F1-F3, G1, E1 and E2 on a real LLM's samples (plan Amendment 18): code-davinci-002's programs
    for the SVAMP problems (``ddrl.data``'s ``svamp_codex_rollouts``, graded by ``ddrl.pot_eval``), as
    :func:`base_frames` CSVs of regime ``svamp_codex``, sampling seed 0, K = 32 rescaled to their N, under
    ``<out>/real/svamp_codex/``; content-keyed by the answers, their correctness and K. Returns "ran" or "loaded".
    Raises :class:`ddrl.data.DataError` (naming the file) when the samples are not found."""
    problems = svamp_problems(load_dataset("svamp_codex_rollouts", data_dir=data_dir))
    k = selection_k(len(problems[0]["keys"]))
    key = content_key({"what": "study-real-v1", "dataset": "svamp_codex_rollouts", "k": k,
                       "problems": [[p["id"], p["keys"], p["correct"]] for p in problems]})[:20]
    gpath, apath = base_paths(out_dir, SVAMP_REGIME, 0, REAL)
    if _done(gpath, key) and _done(apath, key):
        return "loaded"
    groups, g1 = base_frames(problems, SVAMP_REGIME, 0, k, key)
    write_csv(gpath, groups)
    write_csv(apath, g1)
    return "ran"


def heldout_x_key(regime: Regime, scale: Scale, method: str, seed: int, held: Sequence[dict]) -> str:
    """What an H1x CSV depends on: everything the method's registered CSV does (:func:`job_key`) and the fresh
    questions with their answers."""
    return content_key({"what": "study-heldout-x-v1", "run": job_key(regime, scale, method, seed),
                        "questions": records_key(held)})[:20]


def same_as_registered(adapted: pd.DataFrame, registered: Path) -> bool | None:
    """Whether a run's adapted per-question pass@1 (``adapted``: :func:`question_frame` rows of split
    ``adapted``) equals the committed CSV ``registered``'s on every question; None when that CSV is absent."""
    if not registered.is_file():
        return None
    reg = pd.read_csv(registered, dtype={"question": str})
    reg = reg[reg.split == "adapted"].set_index("question")["pass@1"]
    ours = adapted.set_index("question")["pass@1"]
    return bool(len(ours) == len(reg) and ours.index.equals(reg.index) and (ours.to_numpy() == reg.to_numpy()).all())


def run_heldout_x_job(j: Job, regime: Regime, scale: Scale, out_dir: str | Path, runs_root: str | Path | None) -> str:
    """H1x (plan Amendments 11, 12): each of the job's methods trained (or loaded) as the study does and evaluated on
    the regime's fresh held-out questions (:func:`~ddrl.study_plan.heldout_x_records`); one CSV per method of
    split ``heldout_x``, with ``registered_reproduced``: whether the run's adapted pass@1 equals the committed
    run's (:func:`same_as_registered`); where the seed has no registered CSV, the run's adapted rows too
    (:func:`~ddrl.study_plan.adapted_x_path`, same key). Returns "ran" or "loaded"."""

    held = heldout_x_records(regime, scale.n_heldout_x)
    exp, status = experiment(regime, scale, True, runs_root, held=held), "loaded"
    for m in j.methods:
        key, path = heldout_x_key(regime, scale, m, j.seed, held), heldout_x_path(out_dir, j.regime, m, j.seed)
        done = _done(path, key)
        registered = csv_path(out_dir, j.regime, m, j.seed)
        side = None if registered.is_file() else adapted_x_path(out_dir, j.regime, m, j.seed)
        if done and (side is None or _done(side, key)):
            continue
        status = "ran"  # trains the run, or reads a finished one's cached evaluation (adapted rows only missing)
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
    """A pool worker's job: skip if past the deadline or already written; else every method of the job.

    The update's log-probs are computed the ``"hf"`` way (:func:`ddrl.logprobs.pinned_backend`), as for every
    run of the study before the shared-prompt forward existed: its gradients round differently, so a run
    computed the other way would follow another trajectory (the plan's Amendment 10)."""
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
        if run_dir and m not in REFINED:  # a refinement's run (if any) is the DDRL run's: its steps are DDRL's
            steps = steps_frame(run_dir, exp.config(m, j.seed), len(exp.adapted), j.regime, m, j.seed, key)
            write_csv(csv_path(out_dir, j.regime, m, j.seed, steps=True), steps)
        write_csv(path, question_frame(rows, j.regime, key))
    return {"job": asdict(j), "status": status}


def run_jobs(jobs: Sequence[Job], scale: Scale, out_dir: str | Path, runs_root: str | Path | None = None,
             budget_min: float | None = None, workers: int | None = None, progress: bool = True,
             desc: str = "study", regimes: str | Path | None = None) -> list[dict]:
    """Every job through :func:`ddrl.parallel.run_pool` (one bar); jobs starting after ``budget_min`` minutes
    are skipped. Each job's regime is read by name from ``regimes`` (a ``regimes_base.json`` and the files beside it,
    :func:`ddrl.study_plan.measurement_files`; default the registered study's). Returns one status per job."""

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
    """How many of :func:`run_jobs`' jobs ended each way ("ran", "loaded", "skipped (budget)", ...), the most first:
    what each plan amendment's ``run`` command prints when it is done."""
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s["status"]] = counts.get(s["status"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))  # ties stay in the order first seen


# ---------------------------------------------------------------------------------------------------------
# The whole study in one call (notebook 06's ``study`` and ``smoke`` presets)
# ---------------------------------------------------------------------------------------------------------


def run_study(regimes: dict[str, Regime], scale: Scale, runs_dir: str | Path, results_dir: str | Path,
              budget_min: float | None = None, runs_root: str | Path | None = None, workers: int | None = None,
              progress: bool = True) -> dict:
    """Stage 1, its analysis (``stage1.json``: variance components and seeds, no means), stage 2 and H1x (plan
    Amendments 11-17, 19, 20) with what is left of ``budget_min``, the real LLM's sample claims' inputs
    (Amendment 18; the registered scale only), then every claim (``claims.json``); resumable (rerun after a kill:
    written jobs are skipped, finished runs load). One progress bar per stage. Returns what was written and run."""
    results_dir = Path(results_dir)
    check_weights(regimes_path(results_dir), scale)
    end = time.time() + 60 * budget_min if budget_min is not None else None
    left = lambda: None if end is None else max(1e-3, (end - time.time()) / 60)  # noqa: E731
    s1 = run_jobs(stage1_jobs(list(regimes), scale), scale, runs_dir, runs_root, left(), workers, progress,
                  desc="study stage 1")
    stage1 = analyse_stage1(runs_dir, regimes, scale)
    write_json(results_dir / "stage1.json", stage1)
    s2 = run_jobs(stage2_jobs(list(regimes), scale, stage1["seeds"]), scale, runs_dir, runs_root, left(), workers,
                  progress, desc="study stage 2")
    s3 = run_jobs(heldout_x_jobs(list(regimes), scale), scale, runs_dir, runs_root, left(), workers, progress,
                  desc="study H1x")
    if scale.name == "default":  # the sample claims on a real LLM (Amendment 18), where its samples are found
        try:
            run_real_rollouts_job(runs_dir)
        except DataError as e:
            print(f"ddrl.study: no svamp_codex entries: {e}", file=sys.stderr)
    entries, missing = analyse_claims(runs_dir, regimes)
    write_json(results_dir / "claims.json", entries)
    status = pd.Series([d["status"] for d in s1 + s2 + s3], dtype=object).value_counts().to_dict()
    return {"stage1": stage1, "claims": entries, "missing": missing, "jobs": status}


# ---------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study", description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--stage", type=int, choices=(1, 2), help="run a stage's jobs (resumable)")
    what.add_argument("--heldout-x", action="store_true", help=f"H1x (plan Amendments {HELDOUT_X_AMENDMENTS}): DDRL, no "
                      "adaptation, TTRL, BCS+DAE (and BCS in AMC-like and MATH-500-like, BCS with random negatives in "
                      "AMC-like) on fresh held-out questions (resumable)")
    what.add_argument("--real-rollouts", action="store_true", help="F1-F3, G1, E1, E2's inputs on the SVAMP Codex "
                      "samples (plan Amendment 18) -> <out>/real/svamp_codex/ (reads --data-dir or $DDRL_DATA_DIR)")
    what.add_argument("--status", action="store_true", help="jobs written per stage and the measured time left")
    what.add_argument("--analyse", choices=("stage1", "claims"), help="stage1: variance components and seeds "
                      "(no means) -> stage1.json; claims: every claim -> claims.json")
    what.add_argument("--export-base", action="store_true", help="copy the measured base builds from this "
                      "machine's testbed cache into results/base_models/ (to commit: then any CPU runs the study)")
    what.add_argument("--new-replication", metavar="NOTE",
                      help="write <results>/regimes_base.json for a replication on this machine's build (the "
                           "registered regimes named by --regimes, verbatim), then stop")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--regimes", nargs="+", default=None, help="default: every regime of regimes_base.json")
    ap.add_argument("--budget-min", type=float, default=None, help="wall-time budget; later jobs are skipped")
    ap.add_argument("--stage1-seeds", type=int, default=None, help="stage 1's seeds 0..N-1 (default: the scale's, the "
                    "plan's 6; Amendment 5's replication runs more)")
    ap.add_argument("--workers", type=int, default=None, help="default: one per core (ddrl.parallel)")
    ap.add_argument("--out", type=Path, default=RESULTS / "runs", help="per-run CSVs (default results/runs)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="stage1.json / claims.json go here")
    ap.add_argument("--docs", type=Path, default=None, help="--analyse claims also renders the scorecard and "
                    "figures here (default: docs/results for the committed results, else <results>/figures)")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--data-dir", type=Path, default=None, help="--real-rollouts: a folder holding rollouts/ "
                    "(as shared/data; default: ddrl.data's search order)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)

    scale = SCALES[args.scale]
    if args.stage1_seeds is not None:  # only which seeds stage 1 lists: the runs and their keys stay the scale's
        scale = replace(scale, stage1_seeds=args.stage1_seeds)
    if args.real_rollouts:
        try:
            status = run_real_rollouts_job(args.out, args.data_dir)
        except DataError as e:
            print(f"ddrl.study: {e}", file=sys.stderr)
            return 2
        print(f"ddrl.study: SVAMP Codex answer groups and G1 rows ({status}) -> {args.out / REAL / SVAMP_REGIME}")
        return 0
    if args.new_replication:
        try:
            path = write_replication(args.results, args.new_replication, args.regimes)
        except (ValueError, FileExistsError) as e:
            print(f"ddrl.study: {e}", file=sys.stderr)
            return 2
        print(f"ddrl.study: a replication's regimes on this machine's build -> {path}")
        return 0
    regimes = load_regimes(regimes_path(args.results), scale=scale, names=args.regimes)
    stage1_file, claims_file = args.results / "stage1.json", args.results / "claims.json"
    if args.status:
        workers = args.workers or default_workers(99, str(resolve_device(scale.knobs.get("device", "auto"))))
        print(status_text(args.out, regimes, scale, stage1_file, workers, args.runs_root))
        return 0
    if args.export_base:
        try:
            paths = export_base_models(regimes_path(args.results))
        except ValueError as e:
            print(f"ddrl.study: {e}", file=sys.stderr)
            return 2
        print("ddrl.study: the measured base builds -> " + ", ".join(str(p) for p in paths))
        return 0
    if args.stage or args.heldout_x:
        try:
            check_weights(regimes_path(args.results), scale=scale)
        except ValueError as e:
            print(f"ddrl.study: {e}", file=sys.stderr)
            return 2
    if args.stage == 1:
        jobs = stage1_jobs(list(regimes), scale)
    elif args.stage == 2:
        if not stage1_file.is_file():
            print(f"ddrl.study: {stage1_file} missing: run --stage 1 and --analyse stage1 first", file=sys.stderr)
            return 2
        jobs = stage2_jobs(list(regimes), scale, json.loads(stage1_file.read_text())["seeds"])
    elif args.heldout_x:
        jobs = heldout_x_jobs(list(regimes), scale)
    if args.stage or args.heldout_x:
        what = f"stage {args.stage}" if args.stage else "H1x"
        t0 = time.perf_counter()
        done = run_jobs(jobs, scale, args.out, args.runs_root, args.budget_min, args.workers,
                        progress=not args.no_progress, desc=f"study {what}")
        counts = pd.Series([d["status"] for d in done], dtype=object).value_counts().to_dict()
        print(f"ddrl.study: {what}, {len(jobs)} jobs in {time.perf_counter() - t0:.0f} s: {counts}")
        return 0
    if args.analyse == "stage1":
        res = analyse_stage1(args.out, regimes, scale)
        write_json(stage1_file, res)
        print(f"ddrl.study: variance components -> {stage1_file}; seeds per regime {res['seeds']}")
        return 0
    entries, missing = analyse_claims(args.out, regimes)
    write_json(claims_file, entries)
    hw = [e["half_width"] for e in entries]
    print(f"ddrl.study: {len(entries)} claim x regime entries -> {claims_file}"
          + (f"; half-widths {min(hw):.1f}-{max(hw):.1f}" if hw else ""))
    if entries:
        docs = args.docs or (REPO / "docs" / "results" if args.results == RESULTS else args.results / "figures")
        paths = render_results(entries, args.out, docs, missing)
        if args.results == RESULTS:  # the registered scorecard changed: so did every replication's side by side
            paths.update(C.render_replications(RESULTS, entries))
        elif ("registered_weights" in json.loads(regimes_path(args.results).read_text())
              and (registered := C.load(RESULTS / "claims.json"))):
            paths.update({f"replication.{k}": p for k, p in
                          C.render_replication({"registered": registered, args.results.name: entries}, docs).items()})
        print(f"ddrl.study: scorecard and figures -> {docs} ({', '.join(sorted(p.name for p in paths.values()))})")
    if missing:
        print("not computed:\n  " + "\n  ".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
