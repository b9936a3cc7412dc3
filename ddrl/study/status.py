"""Where the claims study stands (``python -m ddrl.study --status``): the CSVs written per stage and the worker
time left, priced from the measured run times of the CSVs already written (their time columns, never a score).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pandas as pd
from tabulate import tabulate

from ddrl.config import METHODS
from ddrl.accel.logprob_backends import pinned_backend
from ddrl.study.regimes import WEAK_REGIME, Regime
from ddrl.run.rundir import RunDir
from ddrl.study.analysis import method_csvs, progress
from ddrl.study.plan import (BASE, HELDOUT_X_AMENDMENTS, REUSES_RUN, Job, Scale, csv_path, experiment,
                             heldout_x_jobs, heldout_x_path, is_built, stage1_jobs, stage2_jobs)


TIME_COLUMNS = ("rl_seconds", "cor_seconds", "eval_seconds")


def run_minutes(out_dir: str | Path) -> pd.DataFrame:
    """Measured worker minutes of every written method CSV (RL + COR + each split's evaluation; no RL for the
    methods that reuse the DDRL run's RL, :data:`~ddrl.study.plan.REUSES_RUN`), one row per regime x method x
    seed; only the run-level time columns are read (never a score)."""
    rows = []
    for p in method_csvs(out_dir):
        t = pd.read_csv(p, usecols=["regime", "method", "seed", "split", *TIME_COLUMNS]).drop_duplicates("split")
        rl = 0.0 if t.method.iloc[0] in REUSES_RUN else t.rl_seconds.fillna(0).iloc[0]  # the DDRL run's, not this job's
        rows.append({"regime": t.regime.iloc[0], "method": t.method.iloc[0], "seed": int(t.seed.iloc[0]),
                     "minutes": float(rl + t.cor_seconds.fillna(0).iloc[0] + t.eval_seconds.fillna(0).sum()) / 60})
    return pd.DataFrame(rows, columns=["regime", "method", "seed", "minutes"])


#: Pricing a method that has not run yet by one that has (``--status`` only, never an analysis): same trainer
#: loop and sampling, so about the same time; additional RL = the DDRL run's RL plus 10% more steps.
COST_PROXY = {"etmr": ("ttrl", 1.0), "bcs": ("ttrl", 1.0), "bcs_random_neg": ("ttrl", 1.0), "grpo_no_std": ("ttrl", 1.0),
              "additional_rl": ("ddrl", 1.1)}


def estimate_minutes(mins: pd.DataFrame, regimes: dict[str, Regime], regime: str, method: str) -> tuple[float | None, bool]:
    """Worker minutes of one ``method`` run in ``regime`` from the measured ones (:func:`run_minutes`): the mean
    of the same regime and method; else of the method (or its :data:`COST_PROXY`, times its factor) in a regime
    with the same questions (operations), scaled by episodes x questions; else the method's mean anywhere.
    Returns (minutes or None, whether a proxy or another regime priced it)."""
    mean = mins.groupby(["regime", "method"])["minutes"].mean().to_dict()
    if (regime, method) in mean:
        return mean[(regime, method)], False
    r = regimes[regime]
    for m, factor in ((method, 1.0), COST_PROXY.get(method, (None, 0.0))):
        near = [(q, v) for (q, mm), v in mean.items() if mm == m and q in regimes and regimes[q].num_ops == r.num_ops]
        if near:
            q, v = near[0]
            return v * factor * (r.episodes * r.n_adapted) / (regimes[q].episodes * regimes[q].n_adapted), True
    anywhere = mins[mins.method == method]["minutes"]
    return (float(anywhere.mean()), True) if len(anywhere) else (None, False)


def retrain_minutes(out_dir: str | Path, todo: Sequence[tuple[Job, str]], regimes: dict[str, Regime], scale: Scale,
                    runs_root: str | Path | None = None) -> dict[tuple[str, int], float]:
    """Worker minutes a job of a method that reuses the DDRL run (:data:`~ddrl.study.plan.REUSES_RUN`) adds
    when that run is not finished in this cache: the job then retrains it (RL and COR), at the times its
    committed ``ddrl`` CSV measured. By (regime, seed); 0 when the run is cached or its CSV is not written yet (then the
    DDRL job itself is left and priced). Reads the cache's run directories and time columns, never a score."""
    out, exps = {}, {}
    for j, m in todo:
        if m not in REUSES_RUN or (j.regime, j.seed) in out:
            continue
        if j.regime not in exps:
            exps[j.regime] = experiment(regimes[j.regime], scale, False, runs_root)
        exp = exps[j.regime]
        path, cfg = csv_path(out_dir, j.regime, "ddrl", j.seed), exp.config("ddrl", j.seed)
        # no base in the cache, no run on it (and never build the base to look: --status must stay cheap)
        with pinned_backend("hf"):  # the run directory run_job would use
            cached_run = is_built(cfg.model) and RunDir(exp.run_dir(METHODS["ddrl"][0], cfg)).finished()
        out[(j.regime, j.seed)] = 0.0 if cached_run or not path.is_file() else \
            float(pd.read_csv(path, usecols=["rl_seconds", "cor_seconds"]).iloc[0].sum()) / 60
    return out


def milestones(todo: Sequence[tuple[Job, str]], price: dict, n1: int, workers: int,
               retrain: dict[tuple[str, int], float] | None = None) -> pd.DataFrame:
    """When each claim's runs of each phase are done, for the (job, method) runs left in the order the study
    runs them: one row per (phase, claim) with runs left and the hours from now on ``workers`` workers at which
    its last run ends (cumulative worker time / workers; runs nobody can price yet count 0, in ``unpriced``).
    ``retrain`` (:func:`retrain_minutes`) adds each DDRL run that reusing jobs must retrain, to the first of
    them (the later ones find it cached)."""
    rows, total, retrain = {}, 0.0, dict(retrain or {})
    for j, m in todo:
        k = price[(j.regime, m)][0]
        total += (k or 0.0) + (retrain.pop((j.regime, j.seed), 0.0) if m in REUSES_RUN else 0.0)
        r = rows.setdefault(("a" if j.seed < n1 else "b", j.label), {"runs_left": 0, "unpriced": 0})
        r["runs_left"] += 1
        r["unpriced"] += k is None
        r["done_after_h"] = round(total / 60 / max(workers, 1), 1)
    return pd.DataFrame([{"phase": ph, "claim": lab, **r} for (ph, lab), r in rows.items()],
                        columns=["phase", "claim", "runs_left", "unpriced", "done_after_h"])


def status_text(out_dir: str | Path, regimes: dict[str, Regime], scale: Scale, stage1_file: Path, workers: int,
                runs_root: str | Path | None = None) -> str:
    """Stage by stage: jobs written / planned and the worker time left, estimated by :func:`estimate_minutes`
    from the measured minutes of the written CSVs (no estimate when neither the method nor its proxy has run).
    Reads file names and time columns only, never a score."""
    prog, mins = progress(out_dir), run_minutes(out_dir)
    lines = [tabulate(prog, headers="keys", tablefmt="github", showindex=False) if not prog.empty
             else f"no CSV under {out_dir} yet"]
    stages = [("stage 1", stage1_jobs(list(regimes), scale))]
    if stage1_file.is_file():
        stages.append(("stage 2", stage2_jobs(list(regimes), scale, json.loads(stage1_file.read_text())["seeds"])))
    for name, jobs in stages:
        todo = [(j, m) for j in jobs for m in j.methods
                if m != BASE and not csv_path(out_dir, j.regime, m, j.seed).is_file()]
        cells = sum(m != BASE for j in jobs for m in j.methods)
        price = {(r, m): estimate_minutes(mins, regimes, r, m) for r, m in {(j.regime, m) for j, m in todo}}
        retrain = retrain_minutes(out_dir, todo, regimes, scale, runs_root)
        known = [price[(j.regime, m)] for j, m in todo]
        left = sum(k for k, _ in known if k is not None) + sum(retrain.values())
        unknown = sum(k is None for k, _ in known)
        proxied = sum(p for k, p in known if k is not None)
        lines.append(f"{name}: {cells - len(todo)}/{cells} method x seed CSVs written; ~{left / 60:.1f} worker-hours "
                     f"left (~{left / 60 / max(workers, 1):.1f} h on {workers} workers"
                     + (f"; {proxied} runs priced by a proxy method or regime" if proxied else "") + ")"
                     + (f", plus {unknown} runs of methods not yet measured" if unknown else ""))
        if any(retrain.values()):
            lines.append(f"  of which ~{sum(retrain.values()) / 60:.1f} worker-hours retrain "
                         f"{sum(v > 0 for v in retrain.values())} DDRL runs that {'/'.join(REUSES_RUN)} jobs reuse and "
                         "this cache lacks")
        if name == "stage 2" and todo:
            ms = milestones(todo, price, scale.stage1_seeds, workers, retrain)
            lines.append(f"stage 2 milestones (phase a: stage-1 seeds, b: more seeds; hours from now on {workers} "
                         "workers, in the order the study runs them):\n"
                         + tabulate(ms, headers="keys", tablefmt="github", showindex=False))
            if WEAK_REGIME not in regimes:
                lines.append("S1 has no jobs yet: its weaker base is not built and measured "
                             "(OMP_NUM_THREADS=2 python bench/regimes.py --weak, ~10 min)")
    if not stage1_file.is_file():
        lines.append(f"stage 2: not planned yet ({stage1_file} is written by --analyse stage1 after stage 1)")
    hx = [(j, m) for j in heldout_x_jobs(list(regimes), scale) for m in j.methods]
    if hx:  # evaluations of (mostly) finished runs: counted, not priced
        done = sum(heldout_x_path(out_dir, j.regime, m, j.seed).is_file() for j, m in hx)
        lines.append(f"H1x (plan Amendments {HELDOUT_X_AMENDMENTS}): {done}/{len(hx)} method x seed CSVs written (--heldout-x)")
    return "\n".join(lines)
