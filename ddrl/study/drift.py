"""Policy drift and held-out accuracy (plan Amendments 21-25, 40-42): step data, held-out KL, fits, figures.

A run's distance from the base (its late ``actor/kl`` or its held-out KL) against its held-out pass@1; each
prediction is one entry of :data:`PREDICTIONS`. Committed CSVs keep one row per run (:func:`seed_table`).

    python -m ddrl.study run drift_amc_like_cpu   # a design's runs (H1x jobs) and their step CSVs
    python -m ddrl.study.drift export --out DIR   # step CSVs from the runs' directories, of any --methods
    python -m ddrl.study.drift kl --out DIR       # the held-out KL of each run (torch, the runs' weights)
    python -m ddrl.study analyse drift_<name>     # -> results/drift/<name>.json
    # --methods names the arms' runs. Amendments 40-41 (lr_drift, cor_alone_drift; DDRL_CACHE_DIR: the Xeon build's):
    X="--out results/replication_xeon/runs --drift-dir results/replication_xeon/lr_drift"
    R=results/replication_xeon/regimes_base.json
    python -m ddrl.study.drift export $X --regime amc_like --methods ttrl bcs_dae ddrl   # and amc_like_small_lr
    python -m ddrl.study.drift kl $X --regimes $R --regime amc_like --methods ttrl bcs_dae ddrl  # and amc_like_small_lr
    python -m ddrl.study.drift kl $X --regimes $R --cor-alone --seeds 0-11
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats as sps
import seaborn as sns
from tqdm.auto import tqdm

from ddrl.accel.logprob_backends import pinned_backend
from ddrl.config import METHODS, resolve_cue
from ddrl.prompts import format_prompt
from ddrl.report.legibility import spread
from ddrl.report.plotting import color, label
from ddrl.report.stats import hierarchical_bootstrap, mean_ci, paired_differences, verdict
from ddrl.run.fingerprints import model_fingerprint
from ddrl.infra.rundir import RunDir
from ddrl.infra.storage import REPO, cache_root, write_csv, write_json
from ddrl.seeds import derive_seed, seed_range
from ddrl.study.plan import (ADAPTED_X, COR_ONLY, HELDOUT_X, RESULTS, SCALES, check_weights, csv_path,
                             experiment, heldout_x_records, load_regimes, Regime)

#: The step-log columns a drift CSV keeps ("gt/bin0-0.125/n": rollouts whose answer has frequency <= 1/8)
DRIFT_COLUMNS = ("step", "episode", "actor/kl", "rollout/entropy", "gt/bin0-0.125/n", "label/majority_ratio",
                 "gt/label_acc")
LATE_EPISODES = 2  # "late": the schedule's last two episodes (AMC-like: 6-7 of 8)
KL_UNIT = 1e-3  # late and held-out KL are reported in units of 1e-3
PAIR = ("bcs", "bcs_random_neg")  # X1-X4: a - b
DRIFT = "drift"
#: Held-out KL (Amendment 21's addendum): samples of the final policy on the first questions of H1x's fresh ones
KL_QUESTIONS = 256
KL_SAMPLES = 8


def drift_path(out_dir: str | Path, regime: str, method: str, seed: int, kind: str = "steps") -> Path:
    """A run's drift CSV (``<out>/drift/<regime>/<method>-seedNN-steps.csv``) or, ``kind="kl"``, its KL JSON."""
    return Path(out_dir) / DRIFT / regime / f"{method}-seed{seed:02d}-{kind}.{'json' if kind == 'kl' else 'csv'}"


def drift_steps(run_dir: str | Path) -> pd.DataFrame:
    """The :data:`DRIFT_COLUMNS` of a run directory's step log, one row per RL step (not COR's)."""
    run = RunDir(run_dir)
    if not run.metrics_path.is_file():
        raise FileNotFoundError(f"{run.metrics_path}: no step log (the run directory is missing or unfinished)")
    rows = [r for r in run.read_metrics() if "actor/kl" in r]
    if not rows:
        raise ValueError(f"{run.metrics_path}: no RL step with 'actor/kl'")
    return pd.DataFrame([{k: r.get(k) for k in DRIFT_COLUMNS} for r in rows])


def h1x_files(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR,
              split: str = HELDOUT_X) -> list[tuple[str, Path]]:
    """(method, path) of every H1x CSV of ``methods`` (``split=ADAPTED_X``: of their adapted questions)."""
    return [(m, p) for m in methods for p in sorted((Path(out_dir) / split / regime).glob(f"{m}-seed*.csv*"))]


def h1x_runs(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR) -> list[tuple[str, int, str]]:
    """(method, seed, run directory name) of every H1x CSV."""
    heads = [(m, pd.read_csv(p, nrows=1)) for m, p in h1x_files(out_dir, regime, methods)]
    return [(m, int(h["seed"].iloc[0]), str(h["run"].iloc[0])) for m, h in heads]


def export_steps(out_dir: str | Path, runs_root: str | Path, regime: str, methods: Sequence[str] = PAIR,
                 dest: str | Path | None = None) -> tuple[int, list[str]]:
    """Write the drift CSV of every run an H1x CSV names; returns how many, and the runs not under ``runs_root``."""
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


def heldout_rows(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR,
                 split: str = HELDOUT_X) -> pd.DataFrame:
    """The H1x rows (method, seed, question) of ``methods``, pass@1 in points as ``accuracy``."""
    files = [p for _, p in h1x_files(out_dir, regime, methods, split)]
    if not files:
        raise FileNotFoundError(f"{Path(out_dir) / split / regime}: no {split} CSV of {list(methods)}")
    df = pd.concat([pd.read_csv(p, dtype={"question": str}) for p in files], ignore_index=True)
    return df.assign(accuracy=100 * df["pass@1"])


def seed_table(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR,
               drift_dir: str | Path | None = None, held: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per run with an H1x and a drift CSV: held-out pass@1 (points), late KL (:data:`KL_UNIT`), late entropy
    and rare-answer rollouts, held-out KL and adapted pass@1 (NaN where absent)."""
    if held is None:
        held = heldout_rows(out_dir, regime, methods)
    adapted = (heldout_rows(out_dir, regime, methods, ADAPTED_X).groupby(["method", "seed"])["accuracy"].mean()
               if h1x_files(out_dir, regime, methods, ADAPTED_X) else pd.Series(dtype=float))
    rows = []
    for (m, s), acc in held.groupby(["method", "seed"])["accuracy"].mean().items():
        p = drift_path(drift_dir or out_dir, regime, m, s)
        if not p.is_file():
            continue
        st = pd.read_csv(p)
        kp = drift_path(drift_dir or out_dir, regime, m, s, "kl")
        rows.append({"method": m, "seed": int(s), "heldout": float(acc), "kl_late": late_mean(st, "actor/kl") / KL_UNIT,
                     "entropy_late": late_mean(st, "rollout/entropy"),
                     "rare_late": late_mean(st, "gt/bin0-0.125/n"),
                     "kl_heldout": json.loads(kp.read_text())["kl"] if kp.is_file() else np.nan,
                     "adapted": float(adapted.get((m, s), np.nan))})
    if not rows:
        raise FileNotFoundError(f"{Path(drift_dir or out_dir) / DRIFT / regime}: no drift CSV for the H1x runs")
    return pd.DataFrame(rows).sort_values(["method", "seed"]).reset_index(drop=True)


# --- the held-out KL; torch is imported inside, so the analyses and figures load without it

def kl_prompts(reg: Regime, sc, tokenizer, cue: str, model: str) -> list[str]:
    """The first :data:`KL_QUESTIONS` of ``reg``'s fresh H1x questions as prompts with ``cue``."""
    records = heldout_x_records(reg, sc.n_heldout_x)[:KL_QUESTIONS]
    return [format_prompt(tokenizer, r["prompt"], resolve_cue(cue, model)) for r in records]


def heldout_kl(policy, base, tokenizer, prompts: Sequence[str], n: int, max_new_tokens: int, seed: int,
               batch_size: int = 512) -> tuple[float, int]:
    """(KL(policy || base) in nats per token, tokens) on ``n`` policy samples per prompt (T = 1): the k1 log-ratios
    summed over all sampled tokens (unbiased per sequence)."""
    import torch
    from ddrl.logprobs import response_logprobs
    from ddrl.sampling import make_sampler

    sampler = make_sampler("hf", policy, tokenizer, batch_size=batch_size)
    ids = sampler.encode(prompts)
    rollouts = sampler.sample_ids(ids, n, temperature=1.0, top_p=1.0, max_new_tokens=max_new_tokens, seed=seed)
    pairs = [(ids[r.prompt_index], r.token_ids) for group in rollouts for r in group if r.token_ids]
    pad = tokenizer.pad_token_id
    total, tokens = 0.0, 0
    for i in range(0, len(pairs), batch_size):
        p, r = zip(*pairs[i:i + batch_size])
        with torch.inference_mode():
            lp, mask, _ = response_logprobs(policy, list(p), list(r), 1.0, pad)
            lb, _, _ = response_logprobs(base, list(p), list(r), 1.0, pad)
        total += float(((lp - lb) * mask).sum())
        tokens += int(mask.sum())
    if tokens == 0:
        raise ValueError("heldout_kl: the policy sampled no token")
    return total / tokens, tokens


def _weights(name: str | Path) -> dict:
    return {k: v for k, v in model_fingerprint(str(name)).items() if k != "model"}


def measure_kl(out_dir: str | Path, runs_root: str | Path, regime: str, methods: Sequence[str] = PAIR,
               dest: str | Path | None = None, scale: str = "default", progress: bool = True,
               regimes: str | Path = RESULTS / "regimes_base.json",
               seeds: Sequence[int] | None = None) -> tuple[int, list[str]]:
    """Write the held-out KL (:data:`KL_UNIT`) of each run an H1x CSV names whose weights are under ``runs_root``
    (one already measured on the same weights is kept); returns how many were measured, and the runs not found."""
    from ddrl.models import load_model

    sc = SCALES[scale]
    check_weights(regimes, sc)
    reg = load_regimes(regimes, sc, names=[regime])[regime]
    n_questions = min(KL_QUESTIONS, sc.n_heldout_x)  # kl_prompts' count
    found, missing = [], []
    for m, seed, name in h1x_runs(out_dir, regime, methods):
        run = Path(runs_root) / name
        if seeds is None or seed in seeds:
            (found if (run / METHODS[m][1] / "trainable.pt").is_file() else missing).append((m, seed, run))
    missing = [run.name for *_, run in missing]
    if not found:
        return 0, missing
    cfg = json.loads((found[0][2] / "config.json").read_text())
    base_fp = _weights(cfg["model"])

    def measured(path: Path, policy_fp: dict) -> bool:
        r = json.loads(path.read_text()) if path.is_file() else {}
        return [r.get(k) for k in ("base_fingerprint", "policy_fingerprint", "n_questions", "n_samples")] == \
            [base_fp, policy_fp, n_questions, KL_SAMPLES]

    todo = [(m, seed, run, fp) for m, seed, run in found
            if not measured(drift_path(dest or out_dir, regime, m, seed, "kl"), fp := _weights(run / METHODS[m][1]))]
    if not todo:
        return 0, missing
    base, tok = load_model(cfg["model"], "float32", "cpu")
    prompts = kl_prompts(reg, sc, tok, cfg["cue"], cfg["model"])
    for m, seed, run, fp in tqdm(todo, desc="held-out KL", unit="run", disable=not progress):
        c = json.loads((run / "config.json").read_text())
        if (c["model"], c["cue"], c["max_new_tokens"]) != (cfg["model"], cfg["cue"], cfg["max_new_tokens"]):
            raise ValueError(f"{run}: model/cue/max_new_tokens differ from {found[0][2]}'s; measure them apart")
        policy, _ = load_model(cfg["model"], "float32", "cpu")
        RunDir(run).load_weights(METHODS[m][1], policy)
        s = derive_seed(seed, "drift", "kl")
        kl, n_tok = heldout_kl(policy, base, tok, prompts, KL_SAMPLES, c["max_new_tokens"], s)
        write_json(drift_path(dest or out_dir, regime, m, seed, "kl"),
                   {"kl": kl / KL_UNIT, "n_tokens": n_tok, "n_questions": len(prompts), "n_samples": KL_SAMPLES,
                    "seed": s, "base_fingerprint": base_fp, "policy_fingerprint": fp})
    return len(todo), missing


def cor_alone_kl(seed: int, regimes: str | Path, out: str | Path, regime: str = "amc_like",
                 scale: str = "default") -> dict:
    """COR alone (Amendment 41; its weights were never kept) recomputed as the study's job did: its held-out KL, and
    whether its adapted evaluation equals the committed CSV under ``out`` (``adapted_reproduced``)."""
    from ddrl.models import load_model
    from ddrl.run.experiments import weights_sha256

    sc = SCALES[scale]
    reg = load_regimes(regimes, sc, names=[regime])[regime]
    exp = experiment(reg, sc, False)
    c = exp.config("ddrl", seed)
    with pinned_backend("hf"), exp.threads({"device": c.device}):
        model, tok, _, _ = exp.refine(c)  # start="base"
        ev = exp.evaluate(model, tok, c, seed)["adapted"]["per_question"]
        base, _ = load_model(c.model, c.dtype, c.device)
        prompts = kl_prompts(reg, sc, tok, c.cue, c.model)
        s = derive_seed(seed, "drift", "kl")
        kl, n_tok = heldout_kl(model, base, tok, prompts, KL_SAMPLES, c.max_new_tokens, s)
    committed = pd.read_csv(csv_path(out, regime, COR_ONLY, seed), dtype={"question": str})
    return {"kl": kl / KL_UNIT, "n_tokens": n_tok, "n_questions": len(prompts), "n_samples": KL_SAMPLES, "seed": s,
            "weights_sha256": weights_sha256(model), "adapted_reproduced": bool(
                committed["question"].tolist() == ev["id"] and committed["pass@1"].tolist() == ev["pass@1"])}


def kl_fit(table: pd.DataFrame, a: str = PAIR[0], b: str = PAIR[1], confidence: float = 0.95,
           x: str = "kl_late") -> dict:
    """Held-out pass@1 on KL column ``x``, one intercept per method: the slope (points per :data:`KL_UNIT`) and
    ``adjusted`` (``a``'s intercept - ``b``'s: at equal KL), each with its t interval."""
    t = table[table["method"].isin([a, b])]
    if t["method"].nunique() != 2:
        raise ValueError(f"kl_fit: need runs of both {a!r} and {b!r}; have {sorted(t['method'].unique())}")
    X = np.column_stack([t[x], (t["method"] == a).astype(float), np.ones(len(t))])
    y = t["heldout"].to_numpy()
    dof = len(y) - X.shape[1]
    if dof < 2:
        raise ValueError(f"kl_fit: {len(y)} runs leave {dof} degrees of freedom; need >= 2")
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    cov = np.linalg.inv(X.T @ X) * float(resid @ resid) / dof
    q = sps.t.ppf(1 - (1 - confidence) / 2, dof)
    se = np.sqrt(np.diag(cov))
    ci = {n: {"estimate": float(beta[i]), "ci_low": float(beta[i] - q * se[i]), "ci_high": float(beta[i] + q * se[i])}
          for i, n in ((0, "slope"), (1, "adjusted"))}
    return {**ci, "n_runs": int(len(y)), "dof": int(dof)}


def paired_t(x: Sequence[float], confidence: float = 0.95) -> dict:
    """Mean of per-seed paired differences ``x`` and its t interval."""
    if len(x) < 2:
        raise ValueError(f"paired_t: need >= 2 seeds, got {len(x)}")
    est, lo, hi = mean_ci(x, confidence)
    return {"estimate": est, "ci_low": lo, "ci_high": hi}


#: Each prediction: what it measures (``{a}``: the arm, ``{b}``: the method it is compared with), its expected sign
#: (0 = inside the margin; None = descriptive), its no-effect margin (0: a sign claim) and its kind: "acc" held-out
#: pass@1 a - b (hierarchical bootstrap), "dist" the KL measure a - b (paired t), "slope" the within-method slope,
#: "adjusted" a - b at equal KL (:func:`kl_fit`), "adapted" pass@1 a - b on the adapted questions (bootstrap)
PREDICTIONS = {
    "X1": ("held-out pass@1, BCS - BCS positives + random negatives [points]", -1, 1.0, "acc"),
    "X2": ("late KL(policy || reference), BCS - BCS positives + random negatives [1e-3]", +1, 0.0, "dist"),
    "X3": ("held-out pass@1 per 1e-3 of late KL, within methods [points]", -1, 0.0, "slope"),
    "X4": ("held-out pass@1 at equal late KL, BCS - BCS positives + random negatives [points]", 0, 1.0, "adjusted"),
    # Amendment 21's addendum
    "X2h": ("held-out KL(policy || base), BCS - BCS positives + random negatives [1e-3 nats/token]", +1, 0.0, "dist"),
    "X3h": ("held-out pass@1 per 1e-3 of held-out KL, within methods [points]", -1, 0.0, "slope"),
    "X4h": ("held-out pass@1 at equal held-out KL, BCS - BCS positives + random negatives [points]", 0, 1.0,
            "adjusted"),
    # Amendment 22: BCS's KL penalty raised by hand
    "K1": ("held-out KL(policy || base), {a} - {b} [1e-3 nats/token]", -1, 0.0, "dist"),
    "K2": ("held-out pass@1, {a} - {b} [points]", +1, 1.0, "acc"),
    "K3": ("held-out pass@1 at equal held-out KL, {a} - {b} [points]", 0, 1.0, "adjusted"),
    # Amendment 23: TTRL and DDRL against BCS
    "Z1": ("held-out pass@1 at equal held-out KL, {a} - {b} [points]", 0, 1.0, "adjusted"),
    "Z2": ("held-out pass@1 at equal held-out KL, {a} - {b} [points]", 0, 1.0, "adjusted"),
    "Z3": ("held-out KL(policy || base), {a} - {b} [1e-3 nats/token]", -1, 0.0, "dist"),
    "Z4": ("held-out KL(policy || base), {a} - {b} [1e-3 nats/token]", +1, 0.0, "dist"),
    "Za": ("held-out pass@1, {a} - {b} [points]", None, 0.0, "acc"),
    # descriptive (not registered)
    "Ad": ("adapted pass@1, {a} - {b} [points]", None, 0.0, "adapted"),
    # Amendment 25: the 100x penalty on TTRL and DDRL, each against itself (L1-L3: K1-K3's measures)
    "L4": ("adapted pass@1, {a} - {b} [points]", 0, 1.0, "adapted"),
}
PREDICTIONS.update({"L1": PREDICTIONS["K1"], "L2": PREDICTIONS["K2"], "L3": PREDICTIONS["K3"]})
MEASURES = {"kl_late": ("X1", "X2", "X3", "X4"), "kl_heldout": ("X2h", "X3h", "X4h")}
DOSES = ("bcs_kl10x", "bcs_kl100x")
#: Each set of arms: arm -> (the method it is compared with, its predictions)
ARMS = {"dose": {a: ("bcs", ("K1", "K2", "K3")) for a in DOSES},
        "methods": {"ttrl": ("bcs", ("Z3", "Z1", "Za")), "ddrl": ("bcs", ("Z4", "Z2", "Za"))},
        "penalty": {"ttrl_kl100x": ("ttrl", ("L1", "L2", "L3", "L4")),
                    "ddrl_kl100x": ("ddrl", ("L1", "L2", "L3", "L4"))}}
#: The sets whose "acc" entries get the slope-predicted held-out gain (``predicted``)
PREDICTED_FROM_SLOPE = ("dose", "penalty")


def arm_methods(which: str) -> tuple[str, ...]:
    """Every method a set of :data:`ARMS` involves: BCS and the compared-with methods first, then the arms."""
    return tuple(dict.fromkeys(("bcs", *(b for b, _ in ARMS[which].values()), *ARMS[which])))


def arms_table(out_dir: str | Path, regime: str, which: str) -> pd.DataFrame | None:
    """:func:`seed_table` of a set's methods, or None where its arms have no H1x CSVs yet."""
    return seed_table(out_dir, regime, arm_methods(which)) if h1x_files(out_dir, regime, tuple(ARMS[which])) else None


def analyse(out_dir: str | Path, regime: str, rng: np.random.Generator, drift_dir: str | Path | None = None,
            a: str = PAIR[0], b: str = PAIR[1], exploratory: bool = False, measure: str = "kl_late",
            ids: Sequence[str] | None = None) -> list[dict]:
    """The predictions ``ids`` (default :data:`MEASURES` ``[measure]``) of ``a`` against ``b`` on the seeds with both
    runs and that measure, with their verdicts (``exploratory``: the runs the predictions were read from)."""
    if measure not in MEASURES:
        raise ValueError(f"analyse: measure must be one of {sorted(MEASURES)}, got {measure!r}")
    ids = tuple(ids or MEASURES[measure])
    held = heldout_rows(out_dir, regime, (a, b))
    table = seed_table(out_dir, regime, (a, b), drift_dir, held)
    wide = table.pivot(index="seed", columns="method")
    seeds = sorted(wide[measure].dropna().index)
    if len(seeds) < 2:
        raise ValueError(f"analyse: {len(seeds)} seed(s) with both {a!r} and {b!r} and {measure!r}; need >= 2")
    kinds, rs = {PREDICTIONS[i][3] for i in ids}, {}
    if "dist" in kinds:
        rs["dist"] = paired_t(wide.loc[seeds, (measure, a)] - wide.loc[seeds, (measure, b)])
    if kinds & {"slope", "adjusted"}:
        rs.update(kl_fit(table[table["seed"].isin(seeds)], a, b, x=measure))
    for kind in ("acc", "adapted"):
        if kind in kinds:
            rows = held if kind == "acc" else heldout_rows(out_dir, regime, (a, b), ADAPTED_X)
            d = paired_differences(rows[rows["seed"].isin(seeds)], a, b)
            rs[kind] = hierarchical_bootstrap(d.to_numpy(), rng).to_dict()
    out = []
    for cid in ids:
        metric, sign, margin, kind = PREDICTIONS[cid]
        r = rs[kind]
        out.append({"id": cid, "regime": regime, "metric": metric.format(a=label(a), b=label(b)),
                    "expected_sign": sign,
                    "estimate": r["estimate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                    "n_seeds": len(seeds), "n_questions": r.get("n_questions"),
                    "verdict": "exploratory" if exploratory else "descriptive" if sign is None else
                    verdict(r["ci_low"], r["ci_high"], sign, margin)})
    return out


SLOPE_FROM = REPO / "results" / "drift" / "amc_like_cpu_heldout_kl.json"  # Amendment 21's confirmed X3h
DOSE_OUT = "results/drift/cpu"  # Amendment 22's runs


def x3h_slope(path: str | Path = SLOPE_FROM) -> float:
    """The X3h estimate (points per 1e-3 of held-out KL) of a committed drift JSON."""
    return next(x["estimate"] for x in json.loads(Path(path).read_text()) if x["id"] == "X3h")


def analyse_arms(out_dir: str | Path, regime: str, rng: np.random.Generator, which: str = "dose",
                 slope: float | None = None) -> list[dict]:
    """Each arm of :data:`ARMS` ``[which]`` against its method (held-out KL); with ``slope`` (X3h), "acc" entries get
    ``predicted`` = slope x the KL difference. Arms registering no adapted entry get a descriptive "Ad" where adapted
    rows were kept, last, so the registered entries' bootstrap draws stay unchanged."""
    out = []
    for arm, (base, ids) in ARMS[which].items():
        e = analyse(out_dir, regime, rng, a=arm, b=base, measure="kl_heldout", ids=ids)
        dist = next(x["estimate"] for x in e if PREDICTIONS[x["id"]][3] == "dist")
        out += [dict(x, arm=arm, **({"predicted": slope * dist} if slope is not None and
                                    PREDICTIONS[x["id"]][3] == "acc" else {})) for x in e]
    for arm, (base, ids) in ARMS[which].items():
        if "adapted" not in {PREDICTIONS[i][3] for i in ids} and \
                all(h1x_files(out_dir, regime, (m,), ADAPTED_X) for m in (arm, base)):
            out += [dict(x, arm=arm) for x in analyse(out_dir, regime, rng, a=arm, b=base, measure="kl_heldout",
                                                      ids=("Ad",))]
    return out


# --- figures ---
#: The figure's panels: (title, H1x folder, drift folder) relative to the repository, as committed
PANELS = (("exploratory: seeds 0-18, Xeon", "results/runs", "results/drift/exploratory"),
          ("confirmation: seeds 100+, H100", "results/drift/gpu", None),
          ("confirmation: seeds 100+, Xeon", "results/drift/cpu", None))


def _scatter(ax, t: pd.DataFrame, x: str, methods: Sequence[str], size: int) -> dict:
    """Held-out pass@1 against ``x``, one point per run; returns the palette."""
    pal = dict(zip(methods, sns.color_palette("colorblind", len(methods))))
    sns.scatterplot(t.assign(method_label=t["method"].map(label)), x=x, y="heldout", hue="method_label",
                    style="method_label", ax=ax, s=size, palette={label(m): pal[m] for m in methods},
                    hue_order=[label(m) for m in methods])
    ax.set_xlabel({"kl_late": "late KL to the reference, trained rollouts [1e-3]",
                   "kl_heldout": "held-out KL to the base [1e-3 nats/token]"}.get(x, x))
    ax.set_ylabel("held-out pass@1\n(1,536 fresh questions) [points]")
    return pal


def drift_figure(tables: dict[str, pd.DataFrame], x: str = "kl_late"):
    """Held-out pass@1 against KL ``x``, a panel per ``tables`` (title -> :func:`seed_table`), common-slope lines."""
    tables = {k: t for k, t in tables.items() if t[x].notna().any()}
    fig, axes = plt.subplots(1, len(tables), figsize=(4.6 * len(tables), 3.8), sharey=True, squeeze=False)
    for ax, (title, t) in zip(axes[0], tables.items()):
        t = t.dropna(subset=[x])
        pal = _scatter(ax, t, x, PAIR, 28)  # not the project's colours: its two BCS ones are too alike here
        fit = kl_fit(t, x=x)
        b = fit["slope"]["estimate"]
        for m in PAIR:
            tm = t[t["method"] == m]
            xs = np.linspace(tm[x].min(), tm[x].max(), 2)
            ax.plot(xs, tm["heldout"].mean() + b * (xs - tm[x].mean()), color=pal[m], lw=1.2)
        ax.set_title(f"{title}\nslope {b:+.2f} [{fit['slope']['ci_low']:+.2f}, {fit['slope']['ci_high']:+.2f}]",
                     fontsize=9)
        ax.legend(fontsize=7, title=None)
    fig.tight_layout()
    return fig


def arms_figure(table: pd.DataFrame, slope: float, which: str = "dose"):
    """Held-out pass@1 against held-out KL per run of a set of :data:`ARMS`, with BCS's line at ``slope``."""
    t = table.dropna(subset=["kl_heldout"])
    fig, ax = plt.subplots(figsize=(5.2, 3.9))
    _scatter(ax, t, "kl_heldout", [m for m in arm_methods(which) if m in set(t["method"])], 30)
    bcs = t[t["method"] == "bcs"]
    xs = np.linspace(t["kl_heldout"].min(), t["kl_heldout"].max(), 2)
    ax.plot(xs, bcs["heldout"].mean() + slope * (xs - bcs["kl_heldout"].mean()), color="0.3", ls="--", lw=1.2,
            label=f"BCS's line, slope {slope:+.2f} (Amendment 21)")
    ax.legend(fontsize=7, title=None)
    fig.tight_layout()
    return fig


# --- the learning rate on the Xeon build (Amendments 40-42) ---

#: The readings as Amendment 42 registered them (fitted on Amendment 40's 60 RL runs; ``measures.fit_readings``
#: refits them): L's slope, and H's free start and slope
LINE = -0.3636
HINGE_K0, HINGE_B = 3.443, 0.4530
LR_METHODS = ("ttrl", "bcs_dae", "ddrl")  # Amendment 40's methods
LR_LABELS = {"none": "no RL", "default": "default lr (3e-5)", "lr10": "lr/10 (3e-6)"}
LR_TEXT = {"default": "default lr (3e-5)", "lr3": "lr/3 (1e-5)", "lr10": "lr/10 (3e-6)"}  # Amendment 42's labels
COR_ALONE_LABEL = "COR alone (no RL)"


def reading(name: str, k, slope: float | None = None) -> np.ndarray:
    """A reading's predicted held-out gain (points) at held-out KL ``k`` (1e-3 nats/token): "L" the line through the
    base, "R" the slope X3h (``slope``, default the committed one) through the base, "H" a free start, then a line."""
    k = np.asarray(k, dtype=float)
    if name == "L":
        return LINE * k
    if name == "R":
        return (x3h_slope() if slope is None else slope) * k
    if name == "H":
        return -HINGE_B * np.maximum(0.0, k - HINGE_K0)
    raise ValueError(f"reading must be 'L', 'R' or 'H', got {name!r}")


def lr_drift_figure(res: dict, cor: dict | None = None):
    """Held-out pass@1 against held-out KL per run of Amendments 40 and 41 (``cor``), lines at W4's and X3h's slopes."""
    t = pd.DataFrame(res["runs"])
    methods = ["no_adaptation", *LR_METHODS]
    if cor is not None:
        t = pd.concat([t, pd.DataFrame(cor["runs"]).assign(method=COR_ONLY, lr="none")], ignore_index=True)
        methods.append(COR_ONLY)
    name = {m: COR_ALONE_LABEL if m == COR_ONLY else label(m) for m in methods}
    t = t.assign(**{"method ": t["method"].map(name), "learning rate": t["lr"].map(LR_LABELS)})
    fig, ax = plt.subplots(figsize=(8.6, 4.2))
    sns.scatterplot(t, x="kl_heldout", y="heldout", hue="method ", style="learning rate", s=34, ax=ax,
                    hue_order=[name[m] for m in methods], palette={name[m]: color(m) for m in methods},
                    style_order=list(LR_LABELS.values()))
    d = t[t["lr"] == "default"]
    xs = np.array([0.0, d["kl_heldout"].max()])
    w4 = next(e for e in res["entries"] if e["id"] == "W4")["estimate"]
    for b, style, name in ((w4, "-", f"default-lr runs' line, W4 slope {w4:+.2f}"),
                           (res["registered_slope"], "--", f"registered slope {res['registered_slope']:+.2f} (X3h)")):
        ax.plot(xs, d["heldout"].mean() + b * (xs - d["kl_heldout"].mean()), color="0.3", ls=style, lw=1.1, label=name)
    ax.set_xlabel("held-out KL to the untrained model [1e-3 nats/token]")
    ax.set_ylabel("held-out pass@1\n(1,536 fresh questions) [points]")
    ax.set_title("Xeon build, AMC-like: TTRL, BCS+DAE, DDRL at two learning rates (Amendment 40)"
                 + (", COR alone (41)" if cor is not None else ""), fontsize=9)
    ax.legend(fontsize=7, title=None, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # beside: inside, it covered a line
    fig.tight_layout()
    return fig


def lr_curve_figure(res: dict, old: pd.DataFrame, slope: float):
    """Left: held-out gain against held-out KL per run of Amendments 40 (``old``) and 42, with the readings. Right:
    mean adapted against mean held-out gain per learning rate and method."""
    t = pd.concat([old, pd.DataFrame(res["runs"])], ignore_index=True)
    t = t.assign(**{"learning rate": t["lr"].map(LR_TEXT), "method ": t["method"].map(label)})
    order = [LR_TEXT[x] for x in ("lr10", "lr3", "default")]
    pal = dict(zip(order, sns.color_palette("colorblind", 3)))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    sns.scatterplot(t, x="kl_heldout", y="gain", hue="learning rate", style="method ", hue_order=order, palette=pal,
                    s=30, ax=ax)
    ks = np.linspace(0, t["kl_heldout"].max() * 1.02, 200)
    for r, style, text in (("L", "-", f"L: line through the base, {LINE:+.3f}/unit"),
                           ("R", ":", f"R: registered X3h, {slope:+.3f}/unit"),
                           ("H", "--", f"H: free to {HINGE_K0:.1f}, then {-HINGE_B:+.3f}/unit")):
        ax.plot(ks, reading(r, ks, slope), color="0.3", ls=style, lw=1.1, label=text)
    ax.axhline(0, color="0.7", lw=0.6)
    ax.set_xlabel("held-out KL to the untrained model [1e-3 nats/token]")
    ax.set_ylabel("held-out gain over the untrained model [points]")
    ax.set_title("Xeon build, AMC-like: three learning rates (Amendments 40, 42)", fontsize=9)
    ax.legend(fontsize=6.5, loc="lower left")
    notes = []
    for row in res["tradeoff"]:
        lr = LR_TEXT[row["lr"]]
        bx.scatter(row["heldout_gain"], row["adapted_gain"], color=pal[lr], s=40,
                   marker={"bcs_dae": "o", "ddrl": "X", "ttrl": "s"}[row["method"]])
        notes.append(bx.annotate(f"{label(row['method']).split(' (')[0]}, {lr.split(' ')[0]}",
                                 (row["heldout_gain"], row["adapted_gain"]), fontsize=6.5, xytext=(3, 3),
                                 textcoords="offset points"))
    bx.axhline(0, color="0.7", lw=0.6)
    bx.axvline(0, color="0.7", lw=0.6)
    bx.set_xlabel("held-out gain, mean over seeds [points]")
    bx.set_ylabel("adapted gain, mean over seeds [points]")
    bx.set_title("what the learning rate trades: adapted vs held-out gain", fontsize=9)
    fig.tight_layout()
    spread(fig, notes)  # two runs' points lie close: their names apart
    return fig


# --- the command line ---

def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.drift", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("export", "kl"))
    ap.add_argument("--regime", default="amc_like")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--seeds", type=seed_range, default="0-11", help="kl --cor-alone: seeds N-M (Amendment 41's)")
    ap.add_argument("--out", type=Path, required=True, help="holds heldout_x/ (H1x CSVs) and drift/ (step CSVs)")
    ap.add_argument("--drift-dir", type=Path, default=None, help="export, kl: write drift/ here (default: --out)")
    ap.add_argument("--methods", nargs="+", default=list(PAIR), help="export, kl: whose runs (default: the "
                    "pair; Amendment 22: bcs_kl10x bcs_kl100x; 25: ttrl_kl100x ddrl_kl100x)")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--regimes", type=Path, default=RESULTS / "regimes_base.json",
                    help="kl: the build's regimes file (default: the registered build's)")
    ap.add_argument("--cor-alone", action="store_true", help="kl: Amendment 41's COR alone, recomputed per seed")
    args = ap.parse_args(argv)
    runs_root = args.runs_root or cache_root() / "runs"
    if args.what == "export":
        n, missing = export_steps(args.out, runs_root, args.regime, args.methods, args.drift_dir)
        print(f"drift CSVs written: {n} (run directories not under {runs_root}: {len(missing)})")
    elif args.what == "kl" and args.cor_alone:
        for s in args.seeds:
            path = drift_path(args.drift_dir or args.out, args.regime, COR_ONLY, s, "kl")
            if not path.is_file():
                write_json(path, cor_alone_kl(s, args.regimes, args.out, args.regime, args.scale))
        print(f"COR alone's held-out KL: {len(args.seeds)} seeds under {args.drift_dir or args.out}")
    elif args.what == "kl":
        n, missing = measure_kl(args.out, runs_root, args.regime, args.methods, args.drift_dir, args.scale,
                                regimes=args.regimes)
        print(f"held-out KL measured: {n} runs (final weights not under {runs_root}: {len(missing)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
