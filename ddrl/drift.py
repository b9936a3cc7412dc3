"""Policy drift and held-out accuracy (plan Amendment 21).

Amendment 19 traced BCS's held-out cost in AMC-like (H1xN: BCS - BCS's positives with random negatives, -1.3
points on 1,536 fresh questions) to its confidence-aware negatives, without saying why. The runs' own step logs
(``metrics.jsonl``) say how far each policy moved from the base: ``actor/kl``, the k3 estimate of KL(policy ||
reference) on the step's trained rollouts. Read after the results, these logs suggested (exploratory) that a
run's held-out pass@1 falls with that distance, and that BCS's negatives move the policy further. Amendment 21
registers that reading as three predictions and tests them on new runs (new seeds, on a GPU when one is lent):

- X1: H1xN's sign on the new seeds (BCS - random negatives, held-out pass@1, hierarchical bootstrap);
- X2: BCS - random negatives in late KL (the mean of ``actor/kl`` over the last :data:`LATE_EPISODES` episodes,
  in units of 1e-3), paired over seeds;
- X3: the slope of held-out pass@1 on late KL within methods (least squares with a method intercept);
- X4: BCS - random negatives in held-out pass@1 at equal late KL (the method term of X3's fit): does the
  distance account for H1xN (a null claim, inside +-1 point)?

The step logs live beside the trained weights in the run directories (not committed); :func:`export_steps`
copies the columns this module reads (:data:`DRIFT_COLUMNS`) into small CSVs, which are committed.

    python -m ddrl.drift run --regime amc_like --seeds 100-131 --workers 8 --budget-min 5 --out DIR   # the runs
    python -m ddrl.drift export --out DIR                   # step CSVs from the runs' directories
    python -m ddrl.drift analyse --out DIR --json results/drift/<name>.json   # X1-X4
    python -m ddrl.drift figure                             # docs/results/drift_kl_heldout.{png,pdf}
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats as sps
import seaborn as sns

from ddrl.plotting import label
from ddrl.reporting import REPO, atomic_write_bytes, cache_root, save_figure
from ddrl.study import run_jobs
from ddrl.stats import hierarchical_bootstrap, paired_differences, verdict
from ddrl.study_plan import HELDOUT_X, SCALES, Job, heldout_x_path

#: The step-log columns a drift CSV keeps: the distance from the reference (``actor/kl``), the sampled rollouts'
#: entropy, the share of a step's rollouts whose answer is rare (frequency <= 1/8: ``gt/bin0-0.125/n`` of the
#: step's ``prompts_per_step`` x N rollouts), the majority's share and the pseudo-label's accuracy
DRIFT_COLUMNS = ("step", "episode", "actor/kl", "rollout/entropy", "gt/bin0-0.125/n", "label/majority_ratio",
                 "gt/label_acc")
LATE_EPISODES = 2  # "late": the last two episodes of the schedule (AMC-like: episodes 6-7 of 8)
KL_UNIT = 1e-3  # late KL is reported in units of 1e-3
PAIR = ("bcs", "bcs_random_neg")  # X1, X2, X4: a - b
DRIFT = "drift"  # <out>/drift/<regime>/<method>-seedNN-steps.csv


def drift_path(out_dir: str | Path, regime: str, method: str, seed: int) -> Path:
    """A run's drift CSV: ``<out>/drift/<regime>/<method>-seedNN-steps.csv``."""
    return Path(out_dir) / DRIFT / regime / f"{method}-seed{seed:02d}-steps.csv"


def drift_steps(run_dir: str | Path) -> pd.DataFrame:
    """The :data:`DRIFT_COLUMNS` of a run directory's ``metrics.jsonl``, one row per RL step (COR's steps, which
    log none of them, are left out)."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no step log (the run directory is missing or unfinished)")
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if "actor/kl" in r]
    if not rows:
        raise ValueError(f"{path}: no RL step with 'actor/kl'")
    return pd.DataFrame([{k: r.get(k) for k in DRIFT_COLUMNS} for r in rows])


def export_steps(out_dir: str | Path, runs_root: str | Path, regime: str, methods: Sequence[str] = PAIR,
                 dest: str | Path | None = None) -> tuple[int, list[str]]:
    """For every H1x CSV under ``out_dir`` of ``regime`` and ``methods``, the drift CSV of the run it names
    (its ``run`` column, a directory under ``runs_root``), written under ``dest`` (default ``out_dir``).
    Returns how many were written and the runs whose directory is not under ``runs_root`` (skipped)."""
    n, missing = 0, []
    for m in methods:
        for p in sorted((Path(out_dir) / HELDOUT_X / regime).glob(f"{m}-seed*.csv*")):
            head = pd.read_csv(p, nrows=1)
            seed, run = int(head["seed"].iloc[0]), str(head["run"].iloc[0])
            if not (Path(runs_root) / run).is_dir():
                missing.append(run)
                continue
            df = drift_steps(Path(runs_root) / run)
            df.insert(0, "seed", seed)
            df.insert(0, "method", m)
            atomic_write_bytes(drift_path(dest or out_dir, regime, m, seed), df.to_csv(index=False).encode())
            n += 1
    return n, missing


def late_mean(steps: pd.DataFrame, column: str, episodes: int = LATE_EPISODES) -> float:
    """Mean of ``column`` over the run's last ``episodes`` episodes."""
    last = steps["episode"].max()
    return float(steps.loc[steps["episode"] > last - episodes, column].mean())


def heldout_rows(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR) -> pd.DataFrame:
    """The H1x rows (per method, seed and fresh question) of ``methods``; pass@1 in points. Reads the study's
    CSVs and their gzipped copies (``.csv.gz``, as this amendment commits its own)."""
    files = [p for m in methods for p in sorted((Path(out_dir) / HELDOUT_X / regime).glob(f"{m}-seed*.csv*"))]
    if not files:
        raise FileNotFoundError(f"{Path(out_dir) / HELDOUT_X / regime}: no H1x CSV of {list(methods)}")
    df = pd.concat([pd.read_csv(p, dtype={"question": str}) for p in files], ignore_index=True)
    return df.assign(accuracy=100 * df["pass@1"])


def seed_table(out_dir: str | Path, regime: str, methods: Sequence[str] = PAIR,
               drift_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per method and seed with both an H1x CSV and a drift CSV: held-out pass@1 (points), late KL
    (units of :data:`KL_UNIT`), late rollout entropy and late rare-answer share."""
    held = heldout_rows(out_dir, regime, methods).groupby(["method", "seed"])["accuracy"].mean()
    rows = []
    for (m, s), acc in held.items():
        p = drift_path(drift_dir or out_dir, regime, m, s)
        if not p.is_file():
            continue
        st = pd.read_csv(p)
        n_rollouts = st["gt/bin0-0.125/n"]  # per step: rollouts of rare answers
        rows.append({"method": m, "seed": int(s), "heldout": float(acc), "kl_late": late_mean(st, "actor/kl") / KL_UNIT,
                     "entropy_late": late_mean(st, "rollout/entropy"),
                     "rare_late": late_mean(st.assign(r=n_rollouts), "r")})
    if not rows:
        raise FileNotFoundError(f"{Path(drift_dir or out_dir) / DRIFT / regime}: no drift CSV for the H1x runs")
    return pd.DataFrame(rows).sort_values(["method", "seed"]).reset_index(drop=True)


def kl_fit(table: pd.DataFrame, a: str = PAIR[0], b: str = PAIR[1], confidence: float = 0.95) -> dict:
    """Least squares of held-out pass@1 on late KL with one intercept per method (methods ``a`` and ``b``):
    the within-method slope (points per :data:`KL_UNIT`) and ``a``'s intercept minus ``b``'s (the held-out
    difference at equal late KL), each with its t interval."""
    t = table[table["method"].isin([a, b])]
    if t["method"].nunique() != 2:
        raise ValueError(f"kl_fit: need runs of both {a!r} and {b!r}; have {sorted(t['method'].unique())}")
    X = np.column_stack([t["kl_late"], (t["method"] == a).astype(float), np.ones(len(t))])
    y = t["heldout"].to_numpy()
    dof = len(y) - X.shape[1]
    if dof < 2:
        raise ValueError(f"kl_fit: {len(y)} runs leave {dof} degrees of freedom; need >= 2")
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    cov = np.linalg.inv(X.T @ X) * float(resid @ resid) / dof
    q = sps.t.ppf(1 - (1 - confidence) / 2, dof)
    se = np.sqrt(np.diag(cov))
    out = {}
    for i, name in ((0, "slope"), (1, "adjusted")):
        out[name] = {"estimate": float(beta[i]), "ci_low": float(beta[i] - q * se[i]), "ci_high": float(beta[i] + q * se[i])}
    out["n_runs"], out["dof"] = int(len(y)), int(dof)
    return out


def paired_t(x: Sequence[float], confidence: float = 0.95) -> dict:
    """Mean of per-seed paired differences ``x`` and its t interval."""
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        raise ValueError(f"paired_t: need >= 2 seeds, got {x.size}")
    h = sps.t.ppf(1 - (1 - confidence) / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return {"estimate": float(x.mean()), "ci_low": float(x.mean() - h), "ci_high": float(x.mean() + h)}


#: X1-X4 (plan Amendment 21): what each measures, its expected sign (the exploratory reading's; 0 = inside the
#: margin) and its no-effect margin (0: a sign claim without a no-effect band)
PREDICTIONS = {
    "X1": ("held-out pass@1, BCS - BCS positives + random negatives [points]", -1, 1.0),
    "X2": ("late KL(policy || reference), BCS - BCS positives + random negatives [1e-3]", +1, 0.0),
    "X3": ("held-out pass@1 per 1e-3 of late KL, within methods [points]", -1, 0.0),
    "X4": ("held-out pass@1 at equal late KL, BCS - BCS positives + random negatives [points]", 0, 1.0),
}


def analyse(out_dir: str | Path, regime: str, rng: np.random.Generator, drift_dir: str | Path | None = None,
            a: str = PAIR[0], b: str = PAIR[1], exploratory: bool = False) -> list[dict]:
    """X1-X4 on the complete seeds (both methods' H1x and drift CSVs), with their verdicts
    (:func:`ddrl.stats.verdict`, the registered rule, each prediction's sign and margin). ``exploratory``: the
    runs the predictions were read from, whose intervals are descriptive (verdict ``"exploratory"``)."""
    table = seed_table(out_dir, regime, (a, b), drift_dir)
    wide = table.pivot(index="seed", columns="method")
    seeds = sorted(wide.dropna().index)
    if len(seeds) < 2:
        raise ValueError(f"analyse: {len(seeds)} seed(s) with both {a!r} and {b!r} complete; need >= 2")
    table = table[table["seed"].isin(seeds)]
    held = heldout_rows(out_dir, regime, (a, b))
    d = paired_differences(held[held["seed"].isin(seeds)], a, b)
    x1 = hierarchical_bootstrap(d.to_numpy(), rng).to_dict()
    x2 = paired_t(wide.loc[seeds, ("kl_late", a)] - wide.loc[seeds, ("kl_late", b)])
    fit = kl_fit(table, a, b)
    out = []
    for cid, r in (("X1", x1), ("X2", x2), ("X3", fit["slope"]), ("X4", fit["adjusted"])):
        metric, sign, margin = PREDICTIONS[cid]
        out.append({"id": cid, "regime": regime, "metric": metric, "expected_sign": sign,
                    "estimate": r["estimate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                    "n_seeds": len(seeds), "n_questions": int(d.shape[1]) if cid == "X1" else None,
                    "verdict": "exploratory" if exploratory else verdict(r["ci_low"], r["ci_high"], sign, margin)})
    return out


#: The figure's panels: (title, H1x folder, drift folder) relative to the repository, as committed
PANELS = (("exploratory: seeds 0-18, Xeon", "results/runs", "results/drift/exploratory"),
          ("confirmation: seeds 100+, H100", "results/drift/gpu", None),
          ("confirmation: seeds 100+, Xeon", "results/drift/cpu", None))


def drift_figure(tables: dict[str, pd.DataFrame]):
    """Held-out pass@1 against late KL, one point per run, one panel per set of runs (``tables``: title ->
    :func:`seed_table`), with each method's least-squares line at the common slope (:func:`kl_fit`)."""
    pal = dict(zip(PAIR, sns.color_palette("colorblind", 2)))  # the project's two BCS colours are too alike here
    fig, axes = plt.subplots(1, len(tables), figsize=(4.2 * len(tables), 3.6), sharey=True, squeeze=False)
    for ax, (title, t) in zip(axes[0], tables.items()):
        t = t.assign(method_label=t["method"].map(label))
        sns.scatterplot(t, x="kl_late", y="heldout", hue="method_label", style="method_label", ax=ax, s=28,
                        palette={label(m): pal[m] for m in PAIR}, hue_order=[label(m) for m in PAIR])
        fit = kl_fit(t)
        b = fit["slope"]["estimate"]
        for m in PAIR:
            tm = t[t["method"] == m]
            xs = np.linspace(tm["kl_late"].min(), tm["kl_late"].max(), 2)
            ax.plot(xs, tm["heldout"].mean() + b * (xs - tm["kl_late"].mean()), color=pal[m], lw=1.2)
        ax.set_title(f"{title}\nslope {b:+.2f} [{fit['slope']['ci_low']:+.2f}, {fit['slope']['ci_high']:+.2f}]",
                     fontsize=9)
        ax.set_xlabel("late KL(policy || reference) [1e-3]")
        ax.set_ylabel("held-out pass@1 (1,536 fresh questions) [points]")
        ax.legend(fontsize=7, title=None)
    fig.tight_layout()
    return fig


def jobs(regime: str, seeds: Sequence[int], methods: Sequence[str] = PAIR) -> list[Job]:
    """One H1x job per seed and method, seed by seed (so a budget's cut leaves whole pairs behind)."""
    return [Job(regime, s, (m,), "H1x") for s in seeds for m in methods]


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    try:
        seeds = list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    except ValueError:
        raise SystemExit(f"--seeds: expected N or N-M (e.g. 100-131), got {text!r}") from None
    if not seeds:
        raise SystemExit(f"--seeds: {text!r} is empty")
    return seeds


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.drift", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "export", "analyse", "figure"))
    ap.add_argument("--regime", default="amc_like")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--seeds", default="100-131", help="run: seeds N-M (plan Amendment 21: from 100)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="run: jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=None, help="holds heldout_x/ (H1x CSVs) and drift/ (step CSVs); "
                    "needed by all but figure")
    ap.add_argument("--drift-dir", type=Path, default=None, help="export: write, analyse: read drift/ here "
                    "(default: --out)")
    ap.add_argument("--methods", nargs="+", default=list(PAIR), help="export: whose step logs (default: the pair)")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--json", type=Path, default=None, help="analyse: write X1-X4 here")
    ap.add_argument("--seed", type=int, default=0, help="analyse: the bootstrap's generator seed")
    ap.add_argument("--exploratory", action="store_true", help="analyse: the runs the predictions came from (no "
                    "verdicts)")
    args = ap.parse_args(argv)
    if args.out is None and args.what != "figure":
        ap.error(f"{args.what} needs --out DIR")
    runs_root = args.runs_root or cache_root() / "runs"  # where ddrl.experiments keeps them
    if args.what == "run":
        status = run_jobs(jobs(args.regime, _seeds(args.seeds)), SCALES[args.scale], args.out, runs_root,
                          args.budget_min, args.workers, desc="drift runs")
        print(pd.Series([s["status"] for s in status]).value_counts().to_dict())
        print("drift CSVs written: %d (run directories not found: %s)" % export_steps(args.out, runs_root, args.regime))
    elif args.what == "export":
        n, missing = export_steps(args.out, runs_root, args.regime, args.methods, args.drift_dir)
        print(f"drift CSVs written: {n} (run directories not under {runs_root}: {len(missing)})")
    elif args.what == "figure":  # the committed runs (PANELS) -> docs/results/drift_kl_heldout.{png,pdf}
        tables = {t: seed_table(REPO / o, args.regime, drift_dir=REPO / d if d else None) for t, o, d in PANELS
                  if (REPO / (d or o) / DRIFT / args.regime).is_dir()}
        fig = drift_figure(tables)
        print(save_figure(fig, REPO / "docs" / "results", "drift_kl_heldout"))
        plt.close(fig)
    else:
        entries = analyse(args.out, args.regime, np.random.default_rng(args.seed), args.drift_dir,
                          exploratory=args.exploratory)
        text = json.dumps(entries, indent=1) + "\n"
        if args.json:
            atomic_write_bytes(args.json, text.encode())
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
