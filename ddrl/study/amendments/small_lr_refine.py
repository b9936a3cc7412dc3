"""COR keeping 4x the rollouts at a tenth of its rate at lr/10 (plan Amendment 62), and what the lr/10 COR designs
share: the repeat check of cached DDRL runs (:func:`check_rows`) and the refusal of a seed whose DDRL run is not cached
(:func:`refuse_untrained`). Amendments 56 (R1, K1, K2 from the cached RL-only weights of Amendment 55's DDRL runs,
and the check: each cached DDRL run evaluated again into ``results/small_lr/refine_check/``) and 57 (the same runs on
H1x's fresh questions) are ``refine_amc`` and ``refine_heldout_amc`` in :data:`ddrl.study.designs.DESIGNS`.

    python -m ddrl.study.amendments.small_lr_refine gentle --workers 2             # Amendment 62: the adapted jobs, then the H1x jobs
    python -m ddrl.study.amendments.small_lr_refine gentle --regime math500_like_small_lr --workers 2   # then in MATH-500-like
    python -m ddrl.study.amendments.small_lr_refine analyse-gentle [--regime R]    # -> results/small_lr/cor4x_lr10_{amc,math500}.json
    python -m ddrl.study.amendments.small_lr_refine figure-gentle                  # -> docs/results/cor_trade.{png,pdf}

Amendment 62 completes COR's size x rate square from the same cached runs and from MATH-500-like's (Amendment 59's):
``ddrl_cor4x_lr10`` (COR keeping 4x the rollouts at 1e-6) on the adapted questions (the study's job) and on H1x's
fresh ones (the H1x job), against COR 1x at 1e-6 (Amendments 30, 56, 58, 61) and the RL-only weights; the four COR
settings' adapted gain and held-out change beside each other (:func:`trade`, descriptive).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ddrl.study.claims import amendment_entry, validate, with_half_width
from ddrl.run.pool import clock_budget
from ddrl.report.plotting import color, save_docs_figure
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import OUT, RUNS, add_run_arguments, seeds_line
from ddrl.study.amendments.small_lr import REGIME as MATH500_SMALL_LR
from ddrl.study.analysis import paired_matrix
from ddrl.study.plan import (COR_4X, COR_4X_LR10, COR_LR10, HELDOUT_X, SCALES, SMALL_LR, Job, check_weights,
                             csv_path, untrained)
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import amendment_cells
from ddrl.study.analysis import level_table, missing_seeds, read_csvs, reproduced_counts, run_levels
from ddrl.study.plan import seeds_to_analyse, seeds_to_start

AMENDMENT = 56
REGIME = SMALL_LR
SEEDS = tuple(range(10))  # the seeds whose DDRL run Amendment 55 trained again (their RL-only weights are cached)
MARGIN = 1.0
CHECK = OUT / "refine_check"  # the check's CSVs (<CHECK>/<regime>/ddrl-seedNN.csv.gz)
#: Amendment 62: its regimes (AMC-like first) and clocks; its claims (id -> a, b, split, what: pass@1 a - b on the
#: split; ours, sign +1); the runs each split's analysis reads, in the levels' order; COR's four settings (method ->
#: kept multiple, learning rate); the predicted half-widths at 6 / 10 seeds from the committed matrices of the same
#: regime (:data:`GENTLE_SOURCES`); outputs and section
GENTLE = 62
GENTLE_CUTOFF = {SMALL_LR: "2026-12-03T20:05:00+00:00", MATH500_SMALL_LR: "2026-12-03T20:25:00+00:00"}
GENTLE_CLAIMS = {"K1g": (COR_4X_LR10, "bcs_dae", "adapted", "COR 4x at 1e-6 - BCS+DAE (the RL-only weights)"),
                 "R1g": (COR_4X_LR10, COR_LR10, "adapted", "COR 4x at 1e-6 - COR 1x at 1e-6"),
                 "K1gx": (COR_4X_LR10, "bcs_dae", HELDOUT_X, "COR 4x at 1e-6 - BCS+DAE (its cost on fresh questions)"),
                 "R1gx": (COR_4X_LR10, COR_LR10, HELDOUT_X, "COR 4x at 1e-6 - COR 1x at 1e-6")}
GENTLE_METHODS = {"adapted": ("bcs_dae", COR_LR10, COR_4X_LR10, "ddrl", COR_4X),
                  HELDOUT_X: ("no_adaptation", "bcs_dae", COR_LR10, COR_4X_LR10, "ddrl", COR_4X)}
COR_SETTINGS = {COR_LR10: (1, "1e-6"), COR_4X_LR10: (4, "1e-6"), "ddrl": (1, "1e-5"), COR_4X: (4, "1e-5")}
#: claim -> the two committed lr/10 matrices (a, b, split; seeds 0-9) its predictions come from, in each regime
GENTLE_SOURCES = {"K1g": ((COR_LR10, "bcs_dae", "adapted"), ("ddrl", "bcs_dae", "adapted")),
                  "R1g": ((COR_4X, "ddrl", "adapted"), (COR_LR10, "bcs_dae", "adapted")),
                  "K1gx": ((COR_LR10, "bcs_dae", HELDOUT_X), ("ddrl", "bcs_dae", HELDOUT_X)),
                  "R1gx": ((COR_4X, "ddrl", HELDOUT_X), (COR_LR10, "bcs_dae", HELDOUT_X))}
GENTLE_PREDICTED = {SMALL_LR: {"K1g": "0.42 / 0.36, 1.97 / 1.87", "R1g": "1.44 / 1.41, 0.42 / 0.36",
                               "K1gx": "0.15 / 0.12, 0.56 / 0.50", "R1gx": "0.53 / 0.51, 0.15 / 0.12"},
                    MATH500_SMALL_LR: {"K1g": "0.59 / 0.55, 1.96 / 1.91", "R1g": "1.04 / 1.01, 0.59 / 0.55",
                                       "K1gx": "0.20 / 0.18, 0.71 / 0.70", "R1gx": "0.67 / 0.64, 0.20 / 0.18"}}
GENTLE_ANALYSIS = {SMALL_LR: OUT / "cor4x_lr10_amc.json", MATH500_SMALL_LR: OUT / "cor4x_lr10_math500.json"}
GENTLE_NAMES = {SMALL_LR: "AMC-like", MATH500_SMALL_LR: "MATH-500-like"}  # as its tables and figure name them
GENTLE_SECTION = "## COR keeping 4x the rollouts at a tenth of its rate, at the small learning rate (plan Amendment 62)"


def gentle_jobs(split: str, seeds: Sequence[int] = SEEDS, now: float | None = None, regime: str = REGIME) -> list[Job]:
    """Amendment 62 in ``regime``, seed by seed: COR 4x at 1e-6 on the adapted questions (the study's job; ``split``
    "adapted") or on H1x's fresh ones (the H1x job; :data:`~ddrl.study.plan.HELDOUT_X`); once the regime's clock has
    passed only the seeds below :data:`~ddrl.study.plan.MIN_SEEDS`."""
    label = {"adapted": f"R1g lr/10 (A{GENTLE})", HELDOUT_X: "H1x"}[split]
    return [Job(regime, s, (COR_4X_LR10,), label) for s in seeds_to_start(seeds, SEEDS, GENTLE_CUTOFF[regime], now)]


def _split_dir(out: str | Path, split: str) -> Path:
    """Where a split's CSVs lie under a runs folder ``out``: adapted ones in it, the others (``heldout_x``) below it."""
    return Path(out) / ("" if split == "adapted" else split)


def gentle_missing(out: str | Path = RUNS, seeds: Sequence[int] = SEEDS, regime: str = REGIME) -> list[int]:
    """Seeds without every CSV (adapted and held-out) Amendment 62's claims and levels read in ``regime``."""
    return sorted(set().union(*(missing_seeds(_split_dir(out, sp), regime, ms, seeds)
                                for sp, ms in GENTLE_METHODS.items())))


def trade(levels: dict[str, Sequence[dict]]) -> list[dict]:
    """Descriptive, no verdict: per COR setting (:data:`COR_SETTINGS`) its mean adapted gain and mean held-out change
    over the RL-only weights (BCS+DAE), in points, and the seeds below them on each split (``<split>_below``), from the
    two splits' level tables (``levels``: split -> records, BCS+DAE the reference)."""
    by = {sp: {r["method"]: r for r in rows} for sp, rows in levels.items()}
    return [{"method": m, "keep": k, "cor_lr": lr,
             **{sp: by[sp][m]["pass1"] - by[sp]["bcs_dae"]["pass1"] for sp in by},
             **{f"{sp}_below": by[sp][m]["below_reference"] for sp in by}} for m, (k, lr) in COR_SETTINGS.items()]


def analyse_gentle(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = SEEDS,
                   now: float | None = None, regime: str = REGIME) -> dict:
    """Amendment 62 in ``regime`` on :func:`ddrl.study.plan.seeds_to_analyse`'s seeds (complete on both splits):
    ``entries`` (K1g, R1g, K1gx, R1gx by :func:`~ddrl.study.claims.amendment_entry`, streams ``derive_seed(0, "claims", id,
    regime)``, ``half_width`` added); descriptive, ``levels`` per split, :func:`trade`, and how many recomputed
    held-out COR runs' adapted rows equal the adapted job's CSV."""
    complete = set(seeds) - set(gentle_missing(out, seeds, regime))
    done = seeds_to_analyse(seeds, complete, f"{out}: Amendment {GENTLE}", GENTLE_CUTOFF[regime], now)
    df = {sp: read_csvs(csv_path(_split_dir(out, sp), regime, m, s) for m in ms for s in done)
          for sp, ms in GENTLE_METHODS.items()}
    entries = [amendment_entry(cid, regime, what, f"{'adapted' if sp == 'adapted' else 'held-out'} pass@1, {what} "
                               "[points]", a, b, paired_matrix(df[sp], regime, a, b, sp).to_numpy(), MARGIN, n_boot)
               for cid, (a, b, sp, what) in GENTLE_CLAIMS.items()]
    levels = {sp: level_table(run_levels(d, sp), ("method",), reference="bcs_dae", sort=False).to_dict(orient="records")
              for sp, d in df.items()}
    held = df[HELDOUT_X]
    return {"regime": regime, "seeds": list(done), "entries": with_half_width(validate(entries, regime)),
            "levels": levels, "trade": trade(levels),
            **reproduced_counts(held[held.method == COR_4X_LR10].drop_duplicates("seed"))}


def gentle_markdown(res: dict) -> str:
    """Amendment 62's tables as docs/results.md quotes them: per claim its split, estimate, half-width beside the plan's
    predictions and verdict; then COR's four settings, their adapted gain and held-out change over BCS+DAE."""
    rows = [f"| claim ({GENTLE_NAMES[res['regime']]} at lr/10, pass@1, points) | questions | **Amendment {GENTLE}** | "
            "half-width (predicted at 6 / 10 seeds) | verdict |", "|---|---|---|---|---|"]
    for e in res["entries"]:
        a, b, sp, what = GENTLE_CLAIMS[e["id"]]
        rows.append(f"| {e['id']} {what} | {'adapted' if sp == 'adapted' else 'fresh'} ({e['n_questions']:,}) | "
                    f"{amendment_cells(e, GENTLE_PREDICTED[res['regime']][e['id']])}")
    n = len(res["seeds"])
    rows += ["", "| COR setting (from the same RL-only weights) | kept rollouts | learning rate | adapted gain over "
             "BCS+DAE (seeds below it) | held-out change over BCS+DAE (seeds below it) |", "|---|---|---|---|---|"]
    rows += [f"| {t['method']} | {t['keep']}x | {t['cor_lr']} | {t['adapted']:+.2f} ({t['adapted_below']} of {n}) | "
             f"{t[HELDOUT_X]:+.2f} ({t[HELDOUT_X + '_below']} of {n}) |" for t in res["trade"]]
    return "\n".join(rows) + "\n"


def trade_frame(results: Sequence[dict]) -> pd.DataFrame:
    """Amendment 62's analyses (one per regime) as one table: per regime and COR setting its :func:`trade` row."""
    return pd.DataFrame([{"regime": GENTLE_NAMES[res["regime"]], "seeds": len(res["seeds"]), **t}
                         for res in results for t in res["trade"]])


def trade_figure(results: Sequence[dict]):
    """Descriptive: per regime (a panel each) the four COR settings' mean adapted gain over the RL-only weights (x)
    against their mean held-out change (y), in points, from Amendment 62's analyses (``results``); the zero lines
    dashed. A figure, no verdict: the claims' intervals are in the tables."""
    df = trade_frame(results)
    fig, axes = plt.subplots(1, len(results), figsize=(5.2 * len(results), 4), squeeze=False, sharey=True)
    for ax, (regime, g) in zip(axes[0], df.groupby("regime", sort=False)):
        sns.scatterplot(g, x="adapted", y=HELDOUT_X, hue="method", palette={m: color(m) for m in g.method}, s=90,
                        legend=False, ax=ax)
        for t in g.itertuples():
            ax.annotate(f"COR {t.keep}x at {t.cor_lr}", (t.adapted, getattr(t, HELDOUT_X)), textcoords="offset points",
                        xytext=(6, 6), fontsize=8)
        ax.axhline(0, color="grey", ls="--", lw=0.8)
        ax.axvline(0, color="grey", ls="--", lw=0.8)
        ax.margins(x=0.2, y=0.12)
        ax.set(xlabel="adapted pass@1 gain over BCS+DAE (points)",
               ylabel="held-out pass@1 change over BCS+DAE (points)", title=f"{regime} at lr/10 ({g.seeds.iloc[0]} seeds)")
    fig.tight_layout()
    return fig


#: Where each lr/10 regime's cached DDRL runs come from, for :func:`refuse_untrained`'s message: (the amendment that
#: trained them, the command that trains them again)
CACHED_BY = {SMALL_LR: (55, "python -m ddrl.study run ablation_amc trains them, ~12 worker-minutes a seed"),
             MATH500_SMALL_LR: (59, "python -m ddrl.study run refine_math500 trains them, ~14 worker-minutes a seed")}


def refuse_untrained(seeds: Sequence[int], runs_root: str | Path, scale: str,
                     amendment: int = AMENDMENT, regime: str = REGIME) -> None:
    """A ValueError naming the seeds whose DDRL run in ``regime`` is not finished under ``runs_root``, before any job:
    ``amendment`` (56-58, 60) refines (or evaluates) the cached runs of :data:`CACHED_BY`'s amendment and must not
    train one anew."""
    gone = untrained(seeds, runs_root, scale, regime, ("ddrl",))
    if gone:
        by, how = CACHED_BY[regime]
        raise ValueError(f"{runs_root}: the DDRL runs of seeds {[s for _, s in gone]} in {regime} are not finished "
                         f"there; Amendment {amendment} uses Amendment {by}'s cached runs and trains none ({how})")


def check_rows(out: str | Path, check: str | Path, seeds: Sequence[int], regime: str = REGIME,
               split: str = "adapted") -> dict | None:
    """The check's description on ``seeds`` in ``regime`` and ``split`` (Amendment 56's; Amendment 59's MATH-500-like
    one; Amendment 60's on H1x's fresh questions, ``split`` :data:`~ddrl.study.plan.HELDOUT_X`, its CSVs under
    ``<out>/heldout_x/`` and ``<check>/heldout_x/``), or None before every re-evaluation is written: how many of the
    seeds x questions re-evaluated DDRL pass@1 values equal the committed CSV's, how many seeds match in full, and R1
    (R1x) against the re-evaluated runs (its mean, as description)."""
    out, check = _split_dir(out, split), _split_dir(check, split)
    if missing_seeds(check, regime, ("ddrl",), seeds):
        return None
    again = read_csvs(csv_path(check, regime, "ddrl", s) for s in seeds)
    again = again[again.split == split].set_index(["seed", "question"])["pass@1"]
    df = read_csvs(csv_path(out, regime, m, s) for s in seeds for m in ("ddrl", COR_4X))
    a = df[df.split == split].set_index(["method", "seed", "question"])["pass@1"]
    committed, cor4x = a.loc["ddrl"], a.loc[COR_4X]
    equal = (committed - again.reindex(committed.index)).abs() < 1e-12
    return {"questions_equal": int(equal.sum()), "questions": int(len(equal)),
            "seeds_equal": int(equal.groupby(level="seed").all().sum()),
            "r1_against_reevaluated": float(100 * (cor4x - again.reindex(cor4x.index)).mean())}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.small_lr_refine", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("gentle", "status", "analyse-gentle", "figure-gentle"))
    add_run_arguments(ap, "gentle: seeds N-M (default: the plan's, 0-9)")
    ap.add_argument("--regime", choices=sorted(GENTLE_CUTOFF), default=REGIME,
                    help="gentle, analyse-gentle: the regime")
    args = ap.parse_args(argv)
    seeds = SEEDS if args.seeds is None else tuple(s for s in SEEDS if s in set(args.seeds))
    if args.what == "gentle":  # Amendment 62: the adapted jobs first (the H1x jobs check their rows against them)
        check_weights(scale=SCALES[args.scale])
        root = args.runs_root or cache_root() / "runs"
        refuse_untrained(seeds, root, args.scale, GENTLE, args.regime)
        status = []
        for split in ("adapted", HELDOUT_X):
            status += run_jobs(gentle_jobs(split, seeds, regime=args.regime), SCALES[args.scale], args.out, root,
                               clock_budget(GENTLE_CUTOFF[args.regime], args.budget_min), args.workers,
                               desc=f"Amendment {GENTLE} {args.regime} {split}")
        print(status_counts(status))
    elif args.what == "status":
        for regime, cutoff in GENTLE_CUTOFF.items():
            print(seeds_line(f"Amendment {GENTLE} ({regime}, both splits)", len(SEEDS),
                             gentle_missing(args.out, regime=regime), cutoff))
    elif args.what == "figure-gentle":  # docs/results/cor_trade.{png,pdf} from the committed analyses
        save_docs_figure(trade_figure([json.loads(p.read_text()) for p in GENTLE_ANALYSIS.values() if p.is_file()]),
                         "cor_trade")
    elif args.what == "analyse-gentle":
        sys.stdout.write(write_json(args.json or GENTLE_ANALYSIS[args.regime], analyse_gentle(args.out,
                                                                                             regime=args.regime)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
