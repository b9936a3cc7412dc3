"""A free start near the base? A third learning rate between the two (plan Amendment 42).

Amendment 40 put the Xeon build's AMC-like RL runs (TTRL, BCS+DAE, DDRL at the default lr and at lr/10, seeds 0-9) on
held-out gain against held-out KL from the base; Amendment 41 found COR alone, and the lr/10 runs, above the straight
line through the untrained model. Two readings of those 60 runs, fitted before this amendment's runs existed
(:func:`fit_readings` refits them; :data:`LINE` and :data:`HINGE` are the registered, rounded coefficients):
**L** the straight line through the base, g = -0.3636 k, and **H** a free start, then a line,
g = -0.4530 max(0, k - 3.443). They differ most at 3-10 units. This amendment trains the three methods at a third
learning rate, lr / 3 with the default's 8 episodes (:func:`regime`, ``amc_like_lr3`` in the Xeon build's
``regimes_lr3.json``, written by :func:`regime_file`), where the readings differ
most, evaluates them on the same 1,536 fresh questions (the study's H1x job) and measures their held-out KL
(Amendment 40's measure). Claims (:data:`CLAIMS`): Z1 which reading the new runs lie nearer (their mean distance above
the midpoint of L and H), Z2 the same with the registered line R (Amendment 21's X3h), Z3/Z4 each reading's residual
within a point.

    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.study.amendments.lr_curve run --workers 2
    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.study.amendments.lr_curve kl
    python -m ddrl.study.amendments.lr_curve status
    python -m ddrl.study.amendments.lr_curve analyse --json results/replication_xeon/lr_curve.json
    python -m ddrl.study.amendments.lr_curve figure      # docs/results/lr_curve.{png,pdf}
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from scipy.optimize import least_squares

from ddrl.study.claims import with_half_width
from ddrl.study.amendments.cor_alone import adapted_path
from ddrl.run.pool import minutes_to
from ddrl.study.drift import paired_t, x3h_slope
from ddrl.study.drift_data import drift_path, export_steps, seed_table
from ddrl.study.amendments.lr_drift import DEST, heldout_gains, t_entry, untrained_rows
from ddrl.study.amendments.lr_heldout import DEFAULT, OUT, XEON
from ddrl.report.plotting import label, save_docs_figure
from ddrl.study.regimes import Regime
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import add_run_arguments
from ddrl.study.plan import SCALES, SMALL_LR, Job, check_weights, heldout_x_path, load_regimes, regimes_path
from ddrl.study.pool import run_jobs, status_counts
from ddrl.study.amendments.wide import claim_row

#: The new regime: AMC-like at a third of its learning rate, its own episodes (only the learning rate changes)
REGIME = "amc_like_lr3"
LR_DIVISOR = 3
#: The H1x job's methods (BCS+DAE: DDRL's RL-only weights); the untrained model's evaluations are Amendment 38-39's
METHODS = ("ddrl", "bcs_dae", "ttrl")
SEEDS = tuple(range(12))
#: The plan's clocks: no job starts after the first, no held-out KL after the second
CUTOFF = "2026-11-29T04:40:00+00:00"
KL_CUTOFF = "2026-11-29T05:05:00+00:00"
#: The two readings as registered (fitted on Amendment 40's 60 RL runs before any run of this amendment existed,
#: rounded as the plan writes them; :func:`fit_readings` refits them): L's slope, and H's free start and slope
LINE = -0.3636
HINGE_K0, HINGE_B = 3.443, 0.4530
#: id -> (what, kind, expected sign, margin). "mid": the run's gain above the midpoint of H and the named line (L, or
#: R = Amendment 21's registered X3h); "resid": the run's gain minus the named reading; per seed the three runs' mean
CLAIMS = {
    "Z1": ("held-out gain minus the midpoint of H (free start) and L (line through the base) at the run's KL [points]",
           "mid", "L", +1, 0.0),
    "Z2": ("held-out gain minus the midpoint of H and R (the registered slope X3h through the base) [points]", "mid",
           "R", +1, 0.0),
    "Z3": ("held-out gain minus H (free start, then a line) at the run's KL [points]", "resid", "H", 0, 1.0),
    "Z4": ("held-out gain minus L (straight line through the base) at the run's KL [points]", "resid", "L", 0, 1.0),
}
#: The plan's predicted half-widths at 12 / 8 seeds (stand-in per-seed SD 0.40; 0.67 at the upper stand-in)
PREDICTED = {"Z1": "0.25 / 0.33", "Z2": "0.25 / 0.33", "Z3": "~0.25 / 0.33", "Z4": "~0.25 / 0.33"}
#: The three learning rates: regime -> the group name Amendment 40's runs carry, and a label
LRS = {DEFAULT: ("default", "default lr (3e-5)"), REGIME: ("lr3", "lr/3 (1e-5)"), SMALL_LR: ("lr10", "lr/10 (3e-6)")}
LR_TEXT = dict(LRS.values())  # group name -> label


def regime_file(regimes: str | Path | None = None) -> dict:
    """``regimes_lr3.json`` beside the build's ``regimes_base.json`` (``regimes``, default the Xeon build's): its
    ``amc_like`` at lr / :data:`LR_DIVISOR`, same questions, episodes and everything else, on the same weights."""
    path = Path(regimes or regimes_path(XEON))
    amc = load_regimes(path, names=[DEFAULT])[DEFAULT]
    reg = replace(amc, name=REGIME, stands_for=f"{amc.stands_for} at a third of the default learning rate",
                  lr=amc.lr / LR_DIVISOR)
    data = json.loads(path.read_text())
    return {"model": data["model"], "weights": data["weights"], "base_regime": DEFAULT,
            "rule": "plan Amendment 42: amc_like at a third of its learning rate, nothing else changed",
            "regimes": [reg.to_dict()]}


def regime(regimes: str | Path | None = None, scale: str = "default") -> Regime:
    """:data:`REGIME` as the build's regimes files define it (``regimes``, default the Xeon build's
    ``regimes_base.json``; :func:`regime_file` wrote its ``regimes_lr3.json``), resized for ``scale``."""
    return load_regimes(regimes or regimes_path(XEON), SCALES[scale], names=[REGIME])[REGIME]


def run(seeds: Sequence[int] = SEEDS, scale: str = "default", out: str | Path = OUT, runs_root: str | Path | None = None,
        workers: int = 2, regimes: str | Path | None = None, cutoff: str = CUTOFF, progress: bool = True) -> list[dict]:
    """Every seed's H1x job in :data:`REGIME` through :func:`ddrl.study.pool.run_jobs` (log-probs pinned to "hf", as every
    study run), seed-major; none starts after ``cutoff``. Resumable: written CSVs are skipped, finished runs load."""
    if minutes_to(cutoff) <= 0:
        raise SystemExit(f"Amendment 42's clock ({cutoff}) has passed: no job starts after it")
    regimes = regimes or regimes_path(XEON)
    check_weights(regimes, SCALES[scale])  # the build the regime's base was measured on, never a new one
    return run_jobs([Job(REGIME, s, METHODS, "H1x") for s in seeds], SCALES[scale], out,
                    runs_root or cache_root() / "runs", minutes_to(cutoff), workers, progress, "Amendment 42", regimes)


def evaluated(out: str | Path = OUT, seeds: Sequence[int] = SEEDS) -> list[int]:
    """The seeds whose three runs have their held-out CSV."""
    return [s for s in seeds if all(heldout_x_path(out, REGIME, m, s).is_file() for m in METHODS)]


def measured(dest: str | Path = DEST, seeds: Sequence[int] = SEEDS) -> list[int]:
    """The seeds whose three runs have their held-out KL."""
    return [s for s in seeds if all(drift_path(dest, REGIME, m, s, "kl").is_file() for m in METHODS)]


def kl(runs_root: str | Path, seeds: Sequence[int] = SEEDS, out: str | Path = OUT, dest: str | Path = DEST,
       regimes: str | Path | None = None, scale: str = "default", progress: bool = True) -> tuple[int, list]:
    """The step CSVs and held-out KLs of the evaluated runs (Amendment 40's measure), under ``dest``; refused after
    the plan's clock."""
    from ddrl.study.drift_kl import measure_kl  # torch: the policies are sampled (notebook 06 imports this module)

    if minutes_to(KL_CUTOFF) <= 0:
        raise SystemExit(f"Amendment 42's clock ({KL_CUTOFF}) has passed: no held-out KL starts after it")
    export_steps(out, runs_root, REGIME, METHODS, dest=dest)
    return measure_kl(out, runs_root, REGIME, METHODS, dest=dest, scale=scale, progress=progress,
                      regimes=regimes or regimes_path(XEON), seeds=seeds)


def reading(name: str, k, slope: float | None = None) -> np.ndarray:
    """A reading's predicted held-out gain (points) at held-out KL ``k`` (1e-3 nats/token): "L" the line through the
    base, "R" the registered slope through the base (X3h: ``slope``, or the committed one), "H" the free start, then
    a line (plan Amendment 42)."""
    k = np.asarray(k, dtype=float)
    if name == "L":
        return LINE * k
    if name == "R":
        return (x3h_slope() if slope is None else slope) * k
    if name == "H":
        return -HINGE_B * np.maximum(0.0, k - HINGE_K0)
    raise ValueError(f"reading must be 'L', 'R' or 'H', got {name!r}")


def fit_readings(runs: pd.DataFrame) -> dict:
    """L and H by least squares on ``runs`` (:func:`ddrl.study.amendments.lr_drift.heldout_gains`' frame): L's slope through the origin; H's (k0, b) of
    g = -b max(0, k - k0), from the start (3, 0.4); with each one's residual sum of squares. On Amendment 40's runs
    this gives the registered :data:`LINE`, :data:`HINGE_K0`, :data:`HINGE_B` (tested)."""
    k, g = runs["kl_heldout"].to_numpy(float), runs["gain"].to_numpy(float)
    line = float(k @ g / (k @ k))
    fit = least_squares(lambda p: g + p[1] * np.maximum(0.0, k - p[0]), [3.0, 0.4])
    return {"line": line, "hinge_k0": float(fit.x[0]), "hinge_b": float(fit.x[1]),
            "rss_line": float(((g - line * k) ** 2).sum()), "rss_hinge": float((fit.fun ** 2).sum())}


def amendment40_runs(xeon: str | Path = XEON) -> pd.DataFrame:
    """Amendment 40's committed runs (``lr_drift.json``) with their held-out gains."""
    return heldout_gains(pd.DataFrame(json.loads((Path(xeon) / "lr_drift.json").read_text())["runs"]))


def table(seeds: Sequence[int], out: str | Path = OUT, dest: str | Path = DEST) -> pd.DataFrame:
    """This amendment's runs on ``seeds``: :func:`ddrl.study.drift_data.seed_table`'s columns (held-out pass@1, held-out KL,
    adapted pass@1), ``lr`` "lr3", and the held-out gain over the seed's untrained model (Amendment 38's evaluations,
    the same weights, questions and stream: ``heldout_x/amc_like_small_lr/no_adaptation``)."""
    t = seed_table(out, REGIME, METHODS, dest)
    t = pd.concat([t.assign(lr=LRS[REGIME][0]), untrained_rows(out, SMALL_LR)], ignore_index=True)
    return heldout_gains(t[t["seed"].isin(seeds)])


def adapted(seeds: Sequence[int], out: str | Path = OUT) -> pd.DataFrame:
    """Adapted pass@1 (points) of every method at the three learning rates and of the untrained model, per seed of
    ``seeds`` that has it (:func:`ddrl.study.amendments.cor_alone.adapted_path`: the H1x run's kept adapted rows, else its study CSV)."""
    groups = [(DEFAULT, "none", ("no_adaptation",)), *((reg, lr, METHODS) for reg, (lr, _) in LRS.items())]
    rows = []
    for reg, lr, methods in groups:
        for m in methods:
            for s in seeds:
                p = adapted_path(out, reg, m, s)
                if p.is_file():
                    df = pd.read_csv(p)
                    rows.append({"lr": lr, "method": m, "seed": s,
                                 "adapted": 100 * df.loc[df["split"] == "adapted", "pass@1"].mean()})
    return pd.DataFrame(rows, columns=["lr", "method", "seed", "adapted"])


def analyse(seeds: Sequence[int] | None = None, out: str | Path = OUT, dest: str | Path = DEST,
            xeon: str | Path = XEON) -> dict:
    """:data:`CLAIMS` on ``seeds`` (default: those with every evaluation and KL, at least 5), paired t over seeds of
    the three runs' mean; descriptive: the refit of both readings on Amendment 40's runs, each reading's RMSE on the
    new runs, held-out KL and gain per learning rate and method, and adapted beside held-out gain."""
    seeds = list(measured(dest) if seeds is None else seeds)
    if len(seeds) < 5 or set(seeds) - set(measured(dest, seeds)) or set(seeds) - set(evaluated(out, seeds)):
        raise ValueError(f"{dest}: Amendment 42 reads seeds with every evaluation and held-out KL written (at least "
                         f"5); seeds {seeds}")
    new = table(seeds, out, dest)
    k = new["kl_heldout"].to_numpy(float)
    per_run = new.assign(**{f"pred_{r}": reading(r, k) for r in "LRH"})
    entries = []
    for cid, (what, kind, line, sign, margin) in CLAIMS.items():
        if kind == "mid":
            x = per_run["gain"] - (per_run[f"pred_{line}"] + per_run["pred_H"]) / 2
        else:
            x = per_run["gain"] - per_run[f"pred_{line}"]
        per_seed = x.groupby(per_run["seed"]).mean()
        entries.append(t_entry(cid, REGIME, what, sign, margin, paired_t(per_seed.to_numpy()), len(seeds)))
    old = amendment40_runs(xeon)
    both = pd.concat([old, new], ignore_index=True)
    levels = both.groupby(["lr", "method"], sort=False).agg(
        kl_mean=("kl_heldout", "mean"), kl_sd=("kl_heldout", "std"), gain_mean=("gain", "mean"),
        gain_sd=("gain", "std"), n=("seed", "nunique")).reset_index()
    ad = adapted(sorted(set(seeds) | set(old["seed"])), out)
    base = ad[ad["lr"] == "none"].set_index("seed")["adapted"]
    ad = ad[ad["lr"] != "none"]
    ad = ad.assign(adapted_gain=ad["adapted"] - base.loc[ad["seed"]].to_numpy())
    ad = ad.merge(both[["lr", "method", "seed", "gain"]], on=["lr", "method", "seed"])
    trade = ad.groupby(["lr", "method"], sort=False).agg(
        adapted_gain=("adapted_gain", "mean"), adapted_gain_sd=("adapted_gain", "std"),
        heldout_gain=("gain", "mean"), n=("seed", "nunique")).reset_index()
    rmse = {r: float(np.sqrt(((per_run["gain"] - per_run[f"pred_{r}"]) ** 2).mean())) for r in "LRH"}
    return {"seeds": seeds, "readings": {"L": LINE, "R": x3h_slope(), "H": [HINGE_K0, HINGE_B]},
            "refit": fit_readings(old), "entries": with_half_width(entries), "rmse": rmse,
            "levels": levels.to_dict(orient="records"), "tradeoff": trade.to_dict(orient="records"),
            "runs": per_run.to_dict(orient="records")}


def markdown(res: dict) -> str:
    """The claims, each reading's error on the new runs, and the three learning rates' distance, held-out and adapted
    gains, as docs/results.md quotes them."""
    rows = ["| claim (Xeon build, AMC-like, lr/3 runs) | seeds | estimate [95% CI] | half-width (predicted 12 / 8) | "
            "verdict |", "|---|---|---|---|---|"]
    rows += [claim_row(e, e["metric"], PREDICTED[e["id"]]) for e in res["entries"]]
    r = res["rmse"]
    rows += ["", f"Root-mean-square error on the {len(res['runs'])} new runs (points): H {r['H']:.2f}, L {r['L']:.2f}, "
             f"R {r['R']:.2f}.", "",
             "| learning rate | method | seeds | held-out KL [1e-3 nats/token], mean (SD) | held-out gain, mean (SD) | "
             "adapted gain, mean (SD) |", "|---|---|---|---|---|---|"]
    trade = {(t["lr"], t["method"]): t for t in res["tradeoff"]}
    for lr in ("default", "lr3", "lr10"):
        for lv in [x for x in res["levels"] if x["lr"] == lr]:
            t = trade.get((lr, lv["method"]))
            ad = f"{t['adapted_gain']:+.1f} ({t['adapted_gain_sd']:.1f})" if t else "-"
            rows.append(f"| {LR_TEXT[lr]} | {label(lv['method'])} | {lv['n']} | {lv['kl_mean']:.1f} ({lv['kl_sd']:.1f}) | "
                        f"{lv['gain_mean']:+.1f} ({lv['gain_sd']:.1f}) | {ad} |")
    return "\n".join(rows) + "\n"


def figure(res: dict, old: pd.DataFrame, slope: float):
    """Left: held-out gain against held-out KL, one point per run (colour: learning rate; marker: method), Amendment
    40's runs (``old``, :func:`amendment40_runs`) and this amendment's, with the readings L, R (X3h's ``slope``,
    :func:`ddrl.study.drift.x3h_slope`) and H. Right: each learning rate's and method's mean adapted gain against its mean
    held-out gain (what a smaller learning rate trades). Draws from its arguments alone (no file read)."""
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
    for row in res["tradeoff"]:
        lr = LR_TEXT[row["lr"]]
        bx.scatter(row["heldout_gain"], row["adapted_gain"], color=pal[lr], s=40,
                   marker={"bcs_dae": "o", "ddrl": "X", "ttrl": "s"}[row["method"]])  # the left panel's markers
        bx.annotate(f"{label(row['method']).split(' (')[0]}, {lr.split(' ')[0]}", (row["heldout_gain"], row["adapted_gain"]),
                    fontsize=6.5, xytext=(3, 3), textcoords="offset points")
    bx.axhline(0, color="0.7", lw=0.6)
    bx.axvline(0, color="0.7", lw=0.6)
    bx.set_xlabel("held-out gain, mean over seeds [points]")
    bx.set_ylabel("adapted gain, mean over seeds [points]")
    bx.set_title("what the learning rate trades: adapted vs held-out gain", fontsize=9)
    fig.tight_layout()
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.lr_curve", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("regime", "run", "kl", "status", "analyse", "figure"))
    add_run_arguments(ap, "run, kl: seeds N-M (default 0-11, as far as the plan's clock allows)")
    ap.set_defaults(out=OUT)
    args = ap.parse_args(argv)
    seeds = args.seeds or SEEDS
    root = args.runs_root or cache_root() / "runs"
    if args.what == "regime":  # results/replication_xeon/regimes_lr3.json
        sys.stdout.write(write_json(XEON / "regimes_lr3.json", regime_file()))
    elif args.what == "run":
        status = run(seeds, args.scale, args.out, root, args.workers or 2)
        print(status_counts(status))
    elif args.what == "kl":
        n, missing = kl(root, seeds, args.out, scale=args.scale)
        print(f"held-out KL: {n} measured now; weights missing: {missing or 'none'}")
    elif args.what == "analyse":
        sys.stdout.write(write_json(args.json, analyse(args.seeds)))
    elif args.what == "figure":  # docs/results/lr_curve.{png,pdf}, from the committed analysis
        res = json.loads((XEON / "lr_curve.json").read_text())
        print(save_docs_figure(figure(res, amendment40_runs(), x3h_slope()), "lr_curve"))
    else:
        print(f"evaluated: seeds {evaluated(args.out, seeds)}; held-out KL: seeds {measured(DEST, seeds)}; "
              f"minutes to the run clock {minutes_to(CUTOFF):.0f}, to the KL clock {minutes_to(KL_CUTOFF):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
