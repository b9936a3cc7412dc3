"""The claims study (issue 17) as ``results/plan.md`` registers it: the job list, the runs, the per-run CSVs and
the analysis that turns them into ``results/stage1.json`` and ``results/claims.json``.

::

    python -m ddrl.study --stage 1 [--budget-min N] [--regimes aime_like ...]   # no adaptation, TTRL, DDRL, seeds 0-5
    python -m ddrl.study --analyse stage1        # variance components + seeds per regime -> results/stage1.json
    python -m ddrl.study --stage 2 [--budget-min N]                            # the rest, in the plan's priority order
    python -m ddrl.study --analyse claims        # every claim's estimate, interval, verdict -> results/claims.json

Runs go through :func:`ddrl.parallel.run_pool` (one single-thread worker per core, one progress bar). A job is
one regime x seed x the methods of one claim that share a run; it trains (or loads) the run through
:class:`ddrl.experiments.Experiment` and writes one small CSV per method under ``results/runs/<regime>/``:
pass@1 of every question (the mean of the evaluation samples) with run-level columns, and for trained methods
a ``-steps.csv`` with the per-step mean advantage and wall time (D1, D2, C2). Killed and rerun, a job whose
CSVs exist with the same content key is skipped, finished runs load and are never retrained (run
directories, :mod:`ddrl.runs`), evaluations come from their content-keyed cache. ``--budget-min``: jobs that
would start after the budget is spent are skipped (the running ones finish), so the study stops cleanly
between jobs; rerunning it continues where it stopped.

Readings of the plan (written down here, chosen from the text, never from method results):

- **Regimes**: ``results/regimes_base.json`` ``regimes`` (:class:`ddrl.regimes.Regime`: operations, adapted and
  held-out counts, episodes, lr; max_new_tokens 96 and every other TrainConfig field at its default, Sec. 2).
  The weaker-base regime of S1 needs a second testbed build that does not exist yet (plan Sec. 8): S1 has no
  jobs and no entry in ``claims.json`` until it is built and measured.
- **Stage 1** (Sec. 6.1): seeds 0-5 of no adaptation, TTRL and DDRL in the three regimes. These three are also
  H1's methods, so their runs are evaluated on the held-out questions too (one model load per run).
  Only the DDRL run's final weights (= DDRL) are evaluated; its RL-only weights (BCS+DAE) in stage 2 (A2).
- **Stage 1 analysis**: variance components of the paired differences DDRL - TTRL (the between-run class that
  sets the seeds), DDRL - no adaptation and TTRL - no adaptation (pass@1 points^2), never a mean; the seeds per
  regime = ``choose_design`` over 2-64 seeds at the regime's adapted questions for DDRL - TTRL; if no design
  up to 64 seeds meets 2.0 points, 64 (the budget then decides). The lr/10 regime (not in stage 1) uses the
  AMC-like count (same questions).
- **Stage 2** (Sec. 6.2): phase (a) the remaining methods on the stage-1 seeds, phase (b) more seeds up to the
  stage-1 count; in each phase claim by claim in the order M1 > M2 > A1 > A2 > A3 > C1 > T1 > H1 > lr/10 (M1 at
  lr/10) and, within a claim, round-robin over its regimes one seed at a time. R1 (COR keeping 4x rollouts,
  from the DDRL run's RL-only weights, not in the priority list; "needs no extra seeds") closes phase (a) and
  runs on the stage-1 seeds only. The base-model claims (F1-F3, G1; "need no extra seeds") follow R1: N = 64
  rollouts per question at the RL rollout temperature (T = 1.0, top-p 1) on each of the three regimes'
  adapted questions (448 together), sampling seeds 0 and 1 (the fewest the bootstrap takes; the plan names no
  count), cached with notebooks 01-02's rollouts (:func:`ddrl.experiments.cached_rollouts`).
- **F1-F3**: per (sampling seed, question) the share of correct answers among the question's distinct answers
  in a band (counts <= 5, 6-44, >= 45 of 64); questions with no answer in a band in some seed are left out of
  that claim (F3: of either band); regime ``base`` pools the three regimes' questions.
- **G1**: per (seed, question) the mean GRPO advantage of the positive rollouts among K = 32 randomly selected
  (TTRL's step, :func:`ddrl.analysis.group_advantages`), questions with mixed rewards only; effect = mean over
  wrong-label cells - mean over right-label cells (x 100); interval: percentile bootstrap over questions
  (each question keeps its seeds' cells), 4000 replicates.
- **C2** wall times are the pool's: each run on one core with one thread, two runs at a time on 2 cores (the
  plan asks for one run at a time; a wall-time amendment may rerun the C-runs alone). Additional RL time = the
  additional-RL run's steps past the RL schedule; COR time = the DDRL run's COR; RL phase = the DDRL run's RL.
- **Units**: pass@1 differences in points (x 100); D1/D2 advantage x 100; C2 % of the RL phase.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ddrl.regimes import Regime
from ddrl.reporting import REPO, atomic_write_bytes, content_key, grader_fingerprint, records_key

RESULTS = REPO / "results"
STAGE1_METHODS = ("no_adaptation", "ttrl", "ddrl")
THREE = ("aime_like", "amc_like", "math500_like")
SMALL_LR = "amc_like_small_lr"
COR_4X = "ddrl_cor4x"  # R1: COR keeping 4x the rollouts, from the DDRL run's RL-only weights
#: Methods evaluated on the held-out questions too in the three regimes (H1: DDRL vs no adaptation, TTRL alongside).
HELDOUT_METHODS = ("no_adaptation", "ttrl", "ddrl")
#: Stage 2's priority (plan Sec. 6.2): (claim label, methods it adds, regimes it runs in).
PRIORITY: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("M1", ("ttrl", "ddrl"), THREE),
    ("M2", ("etmr",), THREE),
    ("A1", ("bcs",), THREE),
    ("A2", ("bcs_dae",), THREE),
    ("A3", (), THREE),  # DDRL - BCS+DAE: both already scheduled by M1 and A2
    ("C1", ("additional_rl",), THREE),
    ("T1", ("grpo_no_std",), ("aime_like", "math500_like")),
    ("H1", ("no_adaptation",), THREE),
    ("lr/10", ("ttrl", "ddrl"), (SMALL_LR,)),
)
#: pass@1 claims: id -> (method a, method b, split); the effect is a - b per seed and question, in points.
PAIRED: dict[str, tuple[str, str, str]] = {
    "M1": ("ddrl", "ttrl", "adapted"), "M2": ("ddrl", "etmr", "adapted"), "A1": ("bcs", "ttrl", "adapted"),
    "A2": ("bcs_dae", "bcs", "adapted"), "A3": ("ddrl", "bcs_dae", "adapted"), "C1": ("ddrl", "additional_rl", "adapted"),
    "T1": ("grpo_no_std", "ttrl", "adapted"), "R1": (COR_4X, "ddrl", "adapted"), "H1": ("ddrl", "no_adaptation", "heldout"),
}
#: Stage-1 comparisons whose variance components are measured (the first sets the seeds).
STAGE1_COMPARISONS = {"ddrl-ttrl": ("ddrl", "ttrl"), "ddrl-no_adaptation": ("ddrl", "no_adaptation"),
                      "ttrl-no_adaptation": ("ttrl", "no_adaptation")}
QUESTION_COLUMNS = ("regime", "method", "seed", "split", "question", "pass@1")
BASE = "base"  # F1-F3, G1: the base model's rollouts on each regime's adapted questions
BASE_SEEDS = 2  # sampling seeds of the base rollouts (the fewest the seeds x questions bootstrap takes)
#: F1-F3's answer-count bands at N = 64 (Sec. 2.2: <= 5 mostly wrong, >= 45 mostly right, the middle between)
BANDS_64 = ((1, 5), (6, 44), (45, 64))


def wants_heldout(regime: str, method: str) -> bool:
    """Is this run evaluated on the held-out questions too? H1's methods in H1's regimes (the three)."""
    return method in HELDOUT_METHODS and regime in THREE


# ---------------------------------------------------------------------------------------------------------
# Scale and regimes
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scale:
    """How big the study is: the registered one (``default``) or the tiny testbed's smoke path."""

    name: str
    stage1_seeds: int = 6  # seeds 0..stage1_seeds-1 (plan Sec. 6.1)
    max_seeds: int = 64  # cap of the seeds per regime (the power table's largest design)
    knobs: dict = field(default_factory=dict)  # TrainConfig overrides on top of each regime's own
    n_adapted: int | None = None  # None: the regime's own counts and episodes
    n_heldout: int | None = None
    episodes: int | None = None


SCALES = {
    "default": Scale("default"),
    "smoke": Scale("smoke", stage1_seeds=2, max_seeds=2, n_adapted=4, n_heldout=2, episodes=1,
                   knobs=dict(model="testbed:tiny", prompts_per_step=2, n_votes=8, k_train=4, lr=1e-3, warmup_steps=1,
                              eval_n=2, cor_m=4, cor_keep=2, cor_epochs=1, etmr_m=2, max_new_tokens=32,
                              sample_batch_size=64, mini_batch_size=4, micro_batch_size=4, device="cpu")),
}


def load_regimes(path: str | Path = RESULTS / "regimes_base.json", scale: Scale = SCALES["default"],
                 names: Sequence[str] | None = None) -> dict[str, Regime]:
    """The study's regimes from the committed base measurements (plan Sec. 2), resized for ``scale``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the regimes' base measurements (bench/regimes.py writes them) are missing")
    data = json.loads(path.read_text())
    if "regimes" not in data:
        raise ValueError(f"{path}: no 'regimes' list (expected the output of bench/regimes.py --merge)")
    out = {}
    for r in data["regimes"]:
        reg = Regime(**{k: r[k] for k in ("name", "stands_for", "num_ops", "n_adapted", "n_heldout", "episodes", "lr",
                                          "overrides")})
        if scale.n_adapted is not None:
            reg = replace(reg, n_adapted=scale.n_adapted, n_heldout=scale.n_heldout, episodes=scale.episodes)
        out[reg.name] = reg
    if names:
        unknown = sorted(set(names) - set(out))
        if unknown:
            raise ValueError(f"unknown regime(s) {unknown}; {path} defines {sorted(out)}")
        out = {n: out[n] for n in out if n in names}
    return out


def check_weights(path: str | Path = RESULTS / "regimes_base.json", scale: Scale = SCALES["default"]) -> None:
    """The regimes were measured on one build of the base model (``weights`` in ``regimes_base.json``); a study
    on other weights would not be the registered one. Raises ``ValueError`` naming both hashes (a rebuilt
    testbed differs bitwise: 1 vs 2 threads). Scales with their own ``model`` knob (smoke) are not checked."""
    from ddrl.experiments import model_fingerprint

    if "model" in scale.knobs:
        return
    measured = json.loads(Path(path).read_text()).get("weights", {})
    name = measured.get("model", "testbed:default")
    if name.startswith("testbed:"):  # never build a testbed here: a fresh build differs from the measured one
        from ddrl.testbed.pretrain import META_FILE, cache_root, get_config

        preset = name.split(":", 1)[1]
        built = cache_root() / f"{preset}-{get_config(preset).config_hash()}"
        if not (built / META_FILE).is_file():
            raise ValueError(f"{name} is not built in {cache_root()}; the regimes were measured on the build whose "
                             f"weights {path} names ({measured}). Copy that build's directory to {built} "
                             "(or re-measure the regimes on a new build and amend results/plan.md).")
    have = model_fingerprint(name)
    diff = {k: (v, have.get(k)) for k, v in measured.items() if have.get(k) != v}
    if diff:
        raise ValueError(f"{path}: the regimes were measured on other base weights than this machine's "
                         f"{measured.get('model')}: {diff} (measured, here). Use the measured build (copy its "
                         "directory into <cache>/testbed/) or re-measure the regimes (bench/regimes.py) and amend "
                         "results/plan.md before stage 1.")


def experiment(regime: Regime, scale: Scale, heldout: bool, runs_root: str | Path | None = None):
    """The :class:`~ddrl.experiments.Experiment` of a regime: its adapted questions (and held-out ones when
    ``heldout``), the regime's trainer overrides, then the scale's knobs. Held-out questions do not enter the
    run's key, so methods with and without them share their runs."""
    from ddrl.experiments import Experiment

    adapted, held = regime.records()
    return Experiment(adapted, held if heldout else (), overrides={**regime.trainer_overrides(), **scale.knobs},
                      runs_root=Path(runs_root) if runs_root else None, progress=False, workers=1)


# ---------------------------------------------------------------------------------------------------------
# The job list
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    regime: str
    seed: int
    methods: tuple[str, ...]
    label: str  # the claim that scheduled it


def _add(jobs: list[Job], seen: set, regime: str, seed: int, methods: Iterable[str], label: str) -> None:
    new = tuple(m for m in methods if (regime, seed, m) not in seen)
    if new:
        seen.update((regime, seed, m) for m in new)
        jobs.append(Job(regime, seed, new, label))


def stage1_jobs(regimes: Sequence[str], scale: Scale) -> list[Job]:
    """Stage 1: seeds 0..5 (``scale.stage1_seeds``) of no adaptation, TTRL and DDRL, one seed at a time
    round-robin over the regimes (AIME-, AMC-, MATH-500-like; the lr/10 regime is not in stage 1)."""
    jobs: list[Job] = []
    seen: set = set()
    for seed in range(scale.stage1_seeds):
        for r in regimes:
            if r in THREE:
                for m in STAGE1_METHODS:
                    _add(jobs, seen, r, seed, (m,), "stage1")
    return jobs


def stage2_jobs(regimes: Sequence[str], scale: Scale, seeds: dict[str, int]) -> list[Job]:
    """Stage 2 after stage 1 (whose jobs are marked seen): phase (a) the stage-1 seeds, phase (b) seeds up to
    ``seeds[regime]``; claim by claim (:data:`PRIORITY`), round-robin over regimes one seed at a time. R1
    closes phase (a). See the module docstring."""
    jobs: list[Job] = []
    seen: set = {(j.regime, j.seed, m) for j in stage1_jobs(regimes, scale) for m in j.methods}
    n1 = scale.stage1_seeds

    def n_seeds(r: str) -> int:
        n = seeds.get(r, seeds.get("amc_like") if r == SMALL_LR else None)
        if n is None:
            raise ValueError(f"stage 2: no seed count for regime {r!r} (results/stage1.json has {sorted(seeds)})")
        return min(int(n), scale.max_seeds)

    for lo, hi in ((0, lambda r: n1), (n1, n_seeds)):
        for label, methods, where in PRIORITY:
            rs = [r for r in where if r in regimes]
            for seed in range(lo, max([hi(r) for r in rs], default=0)):
                for r in rs:
                    if seed < hi(r):
                        _add(jobs, seen, r, seed, methods, label)
        if lo == 0:
            for seed in range(n1):
                for r in THREE:
                    if r in regimes:
                        _add(jobs, seen, r, seed, (COR_4X,), "R1")
            for seed in range(min(BASE_SEEDS, scale.stage1_seeds)):
                for r in THREE:
                    if r in regimes:
                        _add(jobs, seen, r, seed, (BASE,), "F/G")
    return jobs


# ---------------------------------------------------------------------------------------------------------
# One job: train / load, evaluate, write the CSVs
# ---------------------------------------------------------------------------------------------------------


def csv_path(out_dir: str | Path, regime: str, method: str, seed: int, steps: bool = False) -> Path:
    return Path(out_dir) / regime / f"{method}-seed{seed:02d}{'-steps' if steps else ''}.csv"


def job_key(regime: Regime, scale: Scale, method: str, seed: int) -> str:
    """What a method's CSV depends on: the regime, the full TrainConfig, the base weights, the questions
    and answers (held-out ones where evaluated), COR 4x's keep, the grader."""
    from ddrl.experiments import model_fingerprint

    exp = experiment(regime, scale, wants_heldout(regime.name, method))
    cfg = exp.config("ddrl" if method == COR_4X else method, seed)
    return content_key({"what": "study-run-v1", "regime": regime.to_dict(), "method": method, "seed": seed,
                        "config": asdict(cfg), "weights": model_fingerprint(cfg.model),
                        "adapted": records_key(exp.adapted), "heldout": records_key(exp.heldout),
                        "keep": 4 * cfg.cor_keep if method == COR_4X else None, "grader": grader_fingerprint()})[:20]


def _done(path: Path, key: str) -> bool:
    if not path.is_file():
        return False
    try:
        return set(pd.read_csv(path, usecols=["key"], dtype=str)["key"]) == {key}
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return False  # damaged or foreign: recomputed (from the runs and caches, not retrained)


def cor_size_rows(exp, seed: int, keep: int) -> list[dict]:
    """R1 (Table 6): COR keeping ``keep`` rollouts per question from the DDRL run's RL-only weights, with the
    trainer's own COR call and settings (as notebook 05's Table 6), then evaluated; cached by run and keep."""
    import time as _time

    from ddrl.reporting import cached
    from ddrl.runs import RunDir
    from ddrl.seeds import derive_seed
    from ddrl.config import resolve_cue
    from ddrl.cor import consensus_refinement
    from ddrl.train import strip_truth

    res = exp.train("ddrl", seed)
    c = res.config

    def run():
        RunDir(res.run_dir).load_weights("rl", res.model)
        t0 = _time.perf_counter()
        cor = consensus_refinement(
            res.model, res.tokenizer, [strip_truth(r) for r in exp.adapted], m=c.cor_m, keep=keep, epochs=c.cor_epochs,
            lr=c.cor_lr, temperature=c.eval_temperature, top_p=c.eval_top_p, max_new_tokens=c.max_new_tokens,
            seed=derive_seed(c.seed, "cor"), cue=resolve_cue(c.cue, c.model), batch_size=c.cor_batch_size,
            sample_batch_size=c.sample_batch_size, weight_decay=c.weight_decay, grad_clip=c.grad_clip)
        cor_s = _time.perf_counter() - t0
        ev = exp.evaluate(res.model, res.tokenizer, c, seed, f"{res.run_dir}:rl+cor_keep{keep}")
        return [{"method": COR_4X, "seed": seed, "split": s, **e, "rl_seconds": res.rl_seconds, "cor_seconds": cor_s,
                 "cor_kept": cor.summary()["num_kept"], "run_dir": str(res.run_dir)} for s, e in ev.items()]

    return cached({"what": "cor-size-v1", "run": Path(res.run_dir).name, "keep": keep,
                   "adapted": records_key(exp.adapted), "heldout": records_key(exp.heldout),
                   "grader": grader_fingerprint()}, run, namespace="evaluations")


def question_frame(rows: Sequence[dict], regime: str, key: str) -> pd.DataFrame:
    """A method's CSV: one row per split x question with pass@1, plus the run-level columns."""
    from ddrl.experiments import question_rows

    df = question_rows(rows)
    df.insert(0, "regime", regime)
    by_split = {r["split"]: r for r in rows}
    for col in ("maj@n", "mean_tokens", "eval_seconds", "rl_seconds", "cor_seconds", "cor_kept"):
        df[col] = [by_split[s].get(col) for s in df["split"]]
    df["run"] = [Path(by_split[s]["run_dir"]).name if by_split[s].get("run_dir") else "" for s in df["split"]]
    df["key"] = key
    return df


STEP_COLUMNS = ("step", "episode", "lr", "adv/mean", "label/majority_ratio", "gt/label_acc", "time/step_s")


def steps_frame(run_dir: str | Path, cfg, n_questions: int, regime: str, method: str, seed: int, key: str) -> pd.DataFrame:
    """Per-step metrics of a run (D1, D2: ``adv/mean``; C2: ``time/step_s``), ``phase`` = rl or extra (the
    additional-RL steps past the schedule)."""
    from ddrl.train import steps_per_episode

    rows = [json.loads(x) for x in (Path(run_dir) / "metrics.jsonl").read_text().splitlines() if x.strip()]
    df = pd.DataFrame([{k: r.get(k) for k in STEP_COLUMNS} for r in rows])
    rl_steps = steps_per_episode(n_questions, cfg.prompts_per_step, cfg.drop_last) * cfg.episodes
    df["phase"] = np.where(df["step"] < rl_steps, "rl", "extra")
    for col, v in (("seed", seed), ("method", method), ("regime", regime)):
        df.insert(0, col, v)
    df["key"] = key
    return df


def base_paths(out_dir: str | Path, regime: str, seed: int) -> tuple[Path, Path]:
    d = Path(out_dir) / BASE / regime
    return d / f"seed{seed:02d}-groups.csv", d / f"seed{seed:02d}-g1.csv"


def base_frames(problems: Sequence[dict], regime: str, seed: int, k: int, key: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """F1-F3's answer groups (one row per question x distinct answer: count of N, correct) and G1's per-question
    mean GRPO advantage of the positive rollouts among ``k`` selected (NaN without mixed rewards)."""
    from ddrl.analysis import answer_groups, group_advantages

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


def run_base_job(regime: Regime, scale: Scale, seed: int, out_dir: str | Path) -> str:
    """The base model's N rollouts per adapted question (sampling seed ``seed``), graded and cached, as CSVs."""
    from ddrl.experiments import cached_rollouts, model_fingerprint

    exp = experiment(regime, scale, False)
    cfg = exp.config("ttrl", seed)
    settings = {"n": cfg.n_votes, "temperature": cfg.rollout_temperature, "top_p": cfg.rollout_top_p,
                "max_new_tokens": cfg.max_new_tokens, "seed": seed, "batch_size": cfg.sample_batch_size, "cue": cfg.cue}
    key = content_key({"what": "study-base-v1", "model": model_fingerprint(cfg.model), "regime": regime.to_dict(),
                       "adapted": records_key(exp.adapted), "k": cfg.k_train, "grader": grader_fingerprint(),
                       **settings})[:20]
    gpath, apath = base_paths(out_dir, regime.name, seed)
    if _done(gpath, key) and _done(apath, key):
        return "loaded"
    problems = cached_rollouts(cfg.model, list(exp.adapted), f"study-{regime.name}", device=cfg.device, **settings)
    groups, g1 = base_frames(problems, regime.name, seed, cfg.k_train, key)
    atomic_write_bytes(gpath, groups.to_csv(index=False).encode())
    atomic_write_bytes(apath, g1.to_csv(index=False).encode())
    return "ran"


def run_job(job: tuple[Job, str, str, str | None, float | None]) -> dict:
    """A pool worker's job: skip if past the deadline or already written; else every method of the job."""
    j, scale_name, out_dir, runs_root, deadline = job
    if deadline is not None and time.time() > deadline:
        return {"job": asdict(j), "status": "skipped (budget)"}
    scale = SCALES[scale_name]
    regime = load_regimes(scale=scale, names=[j.regime])[j.regime]
    status = "loaded"
    if j.methods == (BASE,):
        return {"job": asdict(j), "status": run_base_job(regime, scale, j.seed, out_dir)}
    for m in j.methods:
        key = job_key(regime, scale, m, j.seed)
        path = csv_path(out_dir, j.regime, m, j.seed)
        if _done(path, key):
            continue
        status = "ran"
        exp = experiment(regime, scale, wants_heldout(j.regime, m), runs_root)
        if m == COR_4X:
            rows = cor_size_rows(exp, j.seed, 4 * exp.config("ddrl", j.seed).cor_keep)
        else:
            rows = exp.run(m, j.seed, per_question=True)
        run_dir = rows[0].get("run_dir")
        if run_dir and m != COR_4X:
            steps = steps_frame(run_dir, exp.config(m, j.seed), len(exp.adapted), j.regime, m, j.seed, key)
            atomic_write_bytes(csv_path(out_dir, j.regime, m, j.seed, steps=True), steps.to_csv(index=False).encode())
        atomic_write_bytes(path, question_frame(rows, j.regime, key).to_csv(index=False).encode())
    return {"job": asdict(j), "status": status}


def run_jobs(jobs: Sequence[Job], scale: Scale, out_dir: str | Path, runs_root: str | Path | None = None,
             budget_min: float | None = None, workers: int | None = None, progress: bool = True,
             desc: str = "study") -> list[dict]:
    """Every job through :func:`ddrl.parallel.run_pool` (one bar); jobs starting after ``budget_min`` minutes
    are skipped. Returns one status per job."""
    from ddrl.parallel import default_workers, run_pool
    from ddrl.models import resolve_device

    if budget_min is not None and budget_min <= 0:
        raise ValueError(f"budget_min must be > 0 minutes, got {budget_min}")
    if not jobs:
        return []
    deadline = time.time() + 60 * budget_min if budget_min is not None else None
    if workers is None:
        workers = default_workers(len(jobs), str(resolve_device(scale.knobs.get("device", "auto"))))
    return run_pool(run_job, [(j, scale.name, str(out_dir), str(runs_root) if runs_root else None, deadline)
                              for j in jobs], workers, desc=desc, progress=progress)


# ---------------------------------------------------------------------------------------------------------
# Reading the results
# ---------------------------------------------------------------------------------------------------------


def load_questions(out_dir: str | Path) -> pd.DataFrame:
    """Every method CSV under ``out_dir`` as one long table (regime, method, seed, split, question, pass@1, ...)."""
    files = sorted(p for p in Path(out_dir).glob("*/*.csv") if not p.name.endswith("-steps.csv"))
    if not files:
        return pd.DataFrame(columns=list(QUESTION_COLUMNS))
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in files], ignore_index=True)


def load_steps(out_dir: str | Path) -> pd.DataFrame:
    files = sorted(Path(out_dir).glob("*/*-steps.csv"))
    if not files:
        return pd.DataFrame(columns=["regime", "method", "seed", *STEP_COLUMNS, "phase"])
    return pd.concat([pd.read_csv(p) for p in files], ignore_index=True)


def _matrix(df: pd.DataFrame, regime: str, a: str, b: str, split: str) -> pd.DataFrame | None:
    """The seeds x questions matrix of (a - b) pass@1 in points over the seeds both methods have; None if
    fewer than 2 such seeds."""
    from ddrl.stats import paired_differences

    sub = df[(df.regime == regime) & (df.split == split) & df.method.isin([a, b])]
    common = sorted(set(sub[sub.method == a].seed) & set(sub[sub.method == b].seed))
    if len(common) < 2:
        return None
    return 100 * paired_differences(sub[sub.seed.isin(common)], a, b, value="pass@1")


# ---------------------------------------------------------------------------------------------------------
# Stage-1 analysis: variance components and seeds, never a mean (plan Sec. 6)
# ---------------------------------------------------------------------------------------------------------


def analyse_stage1(out_dir: str | Path, regimes: dict[str, Regime], scale: Scale, seeds_range=range(2, 65)) -> dict:
    """Variance components (points^2) of the stage-1 comparisons and the seeds per regime from
    :func:`ddrl.stats.choose_design` on DDRL - TTRL at the regime's adapted questions. Holds no mean, estimate
    or interval of any method or difference (plan Sec. 6: the means are not looked at until the end)."""
    from ddrl.stats import choose_design, eval_noise_variance, power_table, predicted_half_width, variance_components

    df = load_questions(out_dir)
    n_eval = int(scale.knobs.get("eval_n", 16))
    out: dict[str, Any] = {"what": "stage-1 variance components (plan Sec. 6); no means by design",
                           "units": "pass@1 points^2", "regimes": {}, "seeds": {}}
    for name in THREE:
        if name not in regimes:
            continue
        reg, comps = regimes[name], {}
        for label, (a, b) in STAGE1_COMPARISONS.items():
            d = _matrix(df, name, a, b, "adapted")
            if d is None:
                continue
            sub = df[(df.regime == name) & (df.split == "adapted")]
            pa = sub[sub.method == a].groupby("question")["pass@1"].mean().reindex(d.columns)
            pb = sub[sub.method == b].groupby("question")["pass@1"].mean().reindex(d.columns)
            vc = variance_components(d.to_numpy(), eval_var=1e4 * eval_noise_variance(pa, pb, n_eval),
                                     source=f"stage 1: {d.shape[0]} seeds x {d.shape[1]} questions")
            comps[label] = {"components": {k: v for k, v in asdict(vc).items()}, "n_seeds": int(d.shape[0]),
                            "n_questions": int(d.shape[1])}
            if label == "ddrl-ttrl":
                design = choose_design(power_table(vc, seeds_range, [reg.n_adapted]))
                n = int(design["seeds"]) if design else max(seeds_range)
                out["seeds"][name] = min(n, scale.max_seeds)
                comps[label].update({"design": None if design is None else
                                     {"seeds": int(design["seeds"]), "questions": int(design["questions"]),
                                      "half_width": float(design["half_width"])},
                                     "half_width_at_seeds": predicted_half_width(vc, max(2, out["seeds"][name]),
                                                                                 reg.n_adapted)})
        if comps:
            out["regimes"][name] = comps
    return out


# ---------------------------------------------------------------------------------------------------------
# Final analysis: every claim with runs -> claims.json (plan Sec. 4)
# ---------------------------------------------------------------------------------------------------------


def _seed_interval(values: Sequence[float]) -> tuple[float, float, float] | None:
    from ddrl.evaluate import mean_ci

    if len(values) < 2:
        return None
    return mean_ci(values)


def load_base(out_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The base rollouts' answer groups and G1 rows of every regime and sampling seed under ``out_dir``."""
    base = Path(out_dir) / BASE
    read = lambda pat: pd.concat([pd.read_csv(p, dtype={"question": str}) for p in sorted(base.glob(pat))],  # noqa: E731
                                 ignore_index=True) if list(base.glob(pat)) else pd.DataFrame()
    return read("*/seed*-groups.csv"), read("*/seed*-g1.csv")


def band_matrix(groups: pd.DataFrame, band: tuple[int, int], n: int) -> pd.DataFrame:
    """seeds x questions: share of correct answers among a question's distinct answers whose count (of ``n``)
    lies in ``band`` (given at N = 64, rescaled to ``n``); questions lacking such an answer in any seed dropped."""
    from ddrl.analysis import in_band, scale_bands

    lo, hi = scale_bands(BANDS_64, 64, n)[BANDS_64.index(band)]
    g = in_band(groups, lo, hi)
    m = g.assign(q=g.regime + "/" + g.question.astype(str)).pivot_table(index="seed", columns="q", values="correct",
                                                                        aggfunc="mean")
    return m.dropna(axis=1)


def base_claim(cid: str, groups: pd.DataFrame, g1: pd.DataFrame, n_boot: int = 4000) -> dict | None:
    """F1-F3 (hierarchical bootstrap over sampling seeds x questions) and G1 (bootstrap over questions), regime
    ``base``; None when fewer than 2 seeds or questions carry the effect."""
    from ddrl.claims import entry
    from ddrl.seeds import derive_seed
    from ddrl.stats import hierarchical_bootstrap

    rng = np.random.default_rng(derive_seed(0, "claims", cid, BASE))
    if cid in ("F1", "F2", "F3"):
        if groups.empty:
            return None
        n = int(groups["n"].iloc[0])
        low, mid, high = (band_matrix(groups, b, n) for b in BANDS_64)
        if cid == "F1":
            d = 50 - 100 * low
        elif cid == "F2":
            d = 100 * high - 50
        else:
            cols = sorted(set(high.columns) & set(mid.columns))
            d = 100 * (high[cols] - mid[cols])
        if d.shape[0] < 2 or d.shape[1] < 2:
            return None
        iv = hierarchical_bootstrap(d.to_numpy(), rng, n_boot)
        return entry(cid, BASE, iv.estimate, iv.ci_low, iv.ci_high, iv.n_seeds, iv.n_questions)
    if g1.empty:
        return None
    g = g1.dropna(subset=["pos_adv_grpo"]).assign(q=lambda x: x.regime + "/" + x.question.astype(str))
    if g.empty or g.label_correct.nunique() < 2 or g.seed.nunique() < 2:
        return None
    qs = np.array(sorted(g.q.unique()))
    by_q = {q: part for q, part in g.groupby("q")}

    def effect(frame: pd.DataFrame) -> float:
        w, r = frame[~frame.label_correct.astype(bool)], frame[frame.label_correct.astype(bool)]
        return 100 * (w.pos_adv_grpo.mean() - r.pos_adv_grpo.mean()) if len(w) and len(r) else np.nan

    est = effect(g)
    reps = [effect(pd.concat([by_q[q] for q in rng.choice(qs, len(qs))])) for _ in range(n_boot)]
    lo, hi = np.nanquantile(reps, [0.025, 0.975])
    return entry(cid, BASE, est, min(lo, est), max(hi, est), g.seed.nunique(), len(qs))


def analyse_claims(out_dir: str | Path, regimes: dict[str, Regime], n_boot: int = 4000) -> tuple[list[dict], list[str]]:
    """Every claim's estimate, 95% interval and verdict (:func:`ddrl.claims.entry`) from the runs under
    ``out_dir``; returns (entries with ``half_width``, the claim x regime cells that lack runs)."""
    from ddrl.claims import CLAIMS, entry, validate
    from ddrl.seeds import derive_seed
    from ddrl.stats import hierarchical_bootstrap

    df, steps = load_questions(out_dir), load_steps(out_dir)
    dd = df[(df.method == "ddrl") & (df.split == "adapted")]
    cor = {(r, int(seed)): float(g["cor_seconds"].iloc[0]) for (r, seed), g in dd.groupby(["regime", "seed"])}
    groups, g1 = load_base(out_dir)
    entries, missing = [], []
    for c in CLAIMS:
        for r in c.regimes:
            if r == BASE:
                e = base_claim(c.id, groups, g1, n_boot)
                if e is None:
                    missing.append(f"{c.id} base: no base rollouts (or fewer than 2 seeds / questions in its band)")
                else:
                    e["half_width"] = (e["ci_high"] - e["ci_low"]) / 2
                    entries.append(e)
                continue
            if r not in regimes:
                missing.append(f"{c.id} {r}: regime not in this study")
                continue
            e = None
            if c.id in PAIRED:
                a, b, split = PAIRED[c.id]
                d = _matrix(df, r, a, b, split)
                if d is not None:
                    iv = hierarchical_bootstrap(d.to_numpy(), np.random.default_rng(derive_seed(0, "claims", c.id, r)),
                                                n_boot)
                    e = entry(c.id, r, iv.estimate, iv.ci_low, iv.ci_high, iv.n_seeds, iv.n_questions)
            elif c.id in ("D1", "D2", "C2"):
                e = _run_level_claim(c.id, r, steps, cor, regimes[r])
            if e is None:
                missing.append(f"{c.id} {r}: fewer than 2 seeds with the runs it needs")
                continue
            e["half_width"] = (e["ci_high"] - e["ci_low"]) / 2
            entries.append(e)
    return validate(entries), missing


def _run_level_claim(cid: str, regime: str, steps: pd.DataFrame, cor: dict[tuple[str, int], float],
                      reg: Regime) -> dict | None:
    """D1, D2 (DDRL's mean advantage per step x 100) and C2 (wall time, % of the RL phase; ``cor`` = the DDRL
    runs' COR seconds by (regime, seed)), a t-interval over seeds (plan Sec. 4)."""
    from ddrl.claims import entry

    s = steps[steps.regime == regime]
    dd = s[(s.method == "ddrl") & (s.phase == "rl")]
    vals = []
    if cid in ("D1", "D2"):
        for _, g in dd.groupby("seed"):
            adv = g.sort_values("step")["adv/mean"].to_numpy(dtype=float)
            if cid == "D1":
                vals.append(-100 * adv.mean())
            else:
                q = max(1, len(adv) // 4)
                vals.append(100 * (adv[-q:].mean() - adv[:q].mean()))
    else:  # C2
        ex = s[(s.method == "additional_rl") & (s.phase == "extra")].groupby("seed")["time/step_s"].sum()
        rl = dd.groupby("seed")["time/step_s"].sum()
        for seed in sorted(set(ex.index) & set(rl.index)):
            if (regime, int(seed)) in cor:
                vals.append(100 * (ex[seed] - cor[regime, int(seed)]) / rl[seed])
    ci = _seed_interval(vals)
    if ci is None:
        return None
    return entry(cid, regime, ci[0], ci[1], ci[2], len(vals), reg.n_adapted)


# ---------------------------------------------------------------------------------------------------------
# The whole study in one call (notebook 06's ``study`` and ``smoke`` presets)
# ---------------------------------------------------------------------------------------------------------


def run_study(regimes: dict[str, Regime], scale: Scale, runs_dir: str | Path, results_dir: str | Path,
              budget_min: float | None = None, runs_root: str | Path | None = None, workers: int | None = None,
              progress: bool = True) -> dict:
    """Stage 1, its analysis (``stage1.json``: variance components and seeds, no means), stage 2 with what is
    left of ``budget_min``, then every claim (``claims.json``); resumable (rerun after a kill: written jobs
    are skipped, finished runs load). One progress bar per stage. Returns what was written and run."""
    results_dir = Path(results_dir)
    check_weights(results_dir / "regimes_base.json" if (results_dir / "regimes_base.json").is_file()
                  else RESULTS / "regimes_base.json", scale)
    end = time.time() + 60 * budget_min if budget_min is not None else None
    left = lambda: None if end is None else max(1e-3, (end - time.time()) / 60)  # noqa: E731
    s1 = run_jobs(stage1_jobs(list(regimes), scale), scale, runs_dir, runs_root, left(), workers, progress,
                  desc="study stage 1")
    stage1 = analyse_stage1(runs_dir, regimes, scale)
    _write_json(results_dir / "stage1.json", stage1)
    s2 = run_jobs(stage2_jobs(list(regimes), scale, stage1["seeds"]), scale, runs_dir, runs_root, left(), workers,
                  progress, desc="study stage 2")
    entries, missing = analyse_claims(runs_dir, regimes)
    _write_json(results_dir / "claims.json", entries)
    status = pd.Series([d["status"] for d in s1 + s2], dtype=object).value_counts().to_dict()
    return {"stage1": stage1, "claims": entries, "missing": missing, "jobs": status}


# ---------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, (json.dumps(obj, indent=1) + "\n").encode())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study", description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--stage", type=int, choices=(1, 2), help="run a stage's jobs (resumable)")
    what.add_argument("--analyse", choices=("stage1", "claims"), help="stage1: variance components and seeds "
                      "(no means) -> stage1.json; claims: every claim -> claims.json")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--regimes", nargs="+", default=None, help="default: every regime of regimes_base.json")
    ap.add_argument("--budget-min", type=float, default=None, help="wall-time budget; later jobs are skipped")
    ap.add_argument("--workers", type=int, default=None, help="default: one per core (ddrl.parallel)")
    ap.add_argument("--out", type=Path, default=RESULTS / "runs", help="per-run CSVs (default results/runs)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="stage1.json / claims.json go here")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)

    scale = SCALES[args.scale]
    regimes = load_regimes(scale=scale, names=args.regimes)
    stage1_file, claims_file = args.results / "stage1.json", args.results / "claims.json"
    if args.stage:
        try:
            check_weights(scale=scale)
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
    if args.stage:
        t0 = time.perf_counter()
        done = run_jobs(jobs, scale, args.out, args.runs_root, args.budget_min, args.workers,
                        progress=not args.no_progress, desc=f"study stage {args.stage}")
        counts = pd.Series([d["status"] for d in done]).value_counts().to_dict()
        print(f"ddrl.study: stage {args.stage}, {len(jobs)} jobs in {time.perf_counter() - t0:.0f} s: {counts}")
        return 0
    if args.analyse == "stage1":
        res = analyse_stage1(args.out, regimes, scale)
        _write_json(stage1_file, res)
        print(f"ddrl.study: variance components -> {stage1_file}; seeds per regime {res['seeds']}")
        return 0
    entries, missing = analyse_claims(args.out, regimes)
    _write_json(claims_file, entries)
    hw = [e["half_width"] for e in entries]
    print(f"ddrl.study: {len(entries)} claim x regime entries -> {claims_file}"
          + (f"; half-widths {min(hw):.1f}-{max(hw):.1f}" if hw else ""))
    if missing:
        print("not computed:\n  " + "\n  ".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
