"""COR's refinement size (R1) at lr/10 in MATH-500-like (plan Amendment 59).

R1 (Table 6: COR keeping 4x the agreeing rollouts instead of 1x barely matters; paper MATH-500 +0.1) had no cell at
the paper's small learning rate in MATH-500-like: Amendment 28's DDRL runs kept no weights. Each seed's job here is
the study's ``ddrl_cor4x`` (:func:`ddrl.study.jobs.refined_rows`): it trains the seed's DDRL run again (RL phase and COR
1x, into the run cache) and refines its RL-only weights keeping 4x the rollouts. The claim, per seed and question:

- R1 = COR 4x - DDRL (Amendment 28's committed DDRL run: COR 1x after the same RL steps), the registered null claim.

A check beside it, description only (Amendment 56's): each retrained DDRL run (after COR) evaluated into
:data:`CHECK`, its adapted pass@1 question by question against the committed DDRL CSV and its RL steps against the
committed run's (:func:`ddrl.study.analysis.rl_divergence`).

Amendments 60 and 61 (COR 4x and COR at 1e-6 on H1x's fresh MATH-500-like questions) are rows of
:data:`ddrl.study.designs.DESIGNS` (``refine_heldout_math500``, ``cor_lr10_heldout_math500``).

    python -m ddrl.study.amendments.refine_math500 run --workers 2     # seed by seed to the plan's clock, then the check
    python -m ddrl.study.amendments.refine_math500 status
    python -m ddrl.study.amendments.refine_math500 analyse             # -> results/small_lr/refine_math500.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.study.claims import validate, with_half_width
from ddrl.run.pool import clock_budget
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import OUT, REGIME, RUNS, add_run_arguments, seeds_line
from ddrl.study.amendments.small_lr_cor import untrained
from ddrl.study.amendments.small_lr_refine import CHECK, check_rows as refine_check_rows
from ddrl.study.analysis import claim_matrix, rl_divergence
from ddrl.study.plan import COR_4X, SAME_BASE, SCALES, Job, check_weights, csv_path
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import entry_cell
from ddrl.study.amendments.wide import (amendment_cells, complete_seeds, cor_level_rows, level_table, missing_seeds,
                       read_csvs, run_levels, seeds_to_analyse, seeds_to_start, wide_entry)

AMENDMENT = 59
SEEDS = tuple(range(10))  # the first ten of Amendment 28's seeds 0-17
CUTOFF = "2026-12-03T14:05:00+00:00"  # no job of seeds 6-9 starts after it
#: Every run the analysis reads, in the levels' order (bcs_dae: Amendment 29's RL-only evaluation; ddrl: Amendment 28's)
METHODS = ("bcs_dae", "ddrl", COR_4X)
#: The plan's predicted half-widths at 6 / 10 seeds x 256 questions (the registered MATH-500-like R1 matrix, Amendment
#: 56's lr/10 AMC-like R1 matrix, Amendment 29's lr/10 MATH-500-like A3 matrix: an upper bound)
PREDICTED = "0.44 / 0.39, 1.01 / 0.99, 1.93 / 1.88"
AGAIN = "ddrl_again"  # the check's name for the retrained DDRL run's steps, beside the committed run's
ANALYSIS = OUT / "refine_math500.json"
SECTION = "## COR's refinement size at the small learning rate in MATH-500-like (plan Amendment 59)"
def jobs(seeds: Sequence[int] = SEEDS, now: float | None = None) -> list[Job]:
    """Seed by seed, the R1 arm (its DDRL run trained again first); once the plan's clock has passed (``now``: epoch
    seconds) only the seeds below :data:`~ddrl.study.amendments.wide.MIN_SEEDS`."""
    return [Job(REGIME, s, (COR_4X,), f"R1 lr/10 (A{AMENDMENT})") for s in seeds_to_start(seeds, SEEDS, CUTOFF, now)]


def check_jobs(seeds: Sequence[int]) -> list[Job]:
    """The check: each seed's retrained DDRL run (after COR) evaluated, into :data:`CHECK` (never over the committed
    CSV)."""
    return [Job(REGIME, s, ("ddrl",), f"COR repeat check (A{AMENDMENT})") for s in seeds]


def missing(out: str | Path = RUNS, seeds: Sequence[int] = SEEDS) -> list[int]:
    """Seeds without every CSV the claim reads (:data:`METHODS` in :data:`~ddrl.study.amendments.small_lr.REGIME`)."""
    return missing_seeds(out, REGIME, METHODS, seeds)


def check_rows(out: str | Path, check: str | Path, seeds: Sequence[int]) -> dict | None:
    """The check on ``seeds``, or None before every re-evaluation is written: Amendment 56's description
    (:func:`ddrl.study.amendments.small_lr_refine.check_rows`: questions and whole seeds whose re-evaluated DDRL pass@1 equals the
    committed CSV's, R1 against the re-evaluated runs) and each retrained run's first RL step off the committed
    trajectory (-1: none)."""
    rows = refine_check_rows(out, check, seeds, REGIME)
    if rows is None:
        return None
    steps = pd.concat([read_csvs(csv_path(out, REGIME, "ddrl", s, steps=True) for s in seeds),
                       read_csvs(csv_path(check, REGIME, "ddrl", s, steps=True) for s in seeds).assign(method=AGAIN)])
    div = rl_divergence(steps, (AGAIN,))
    return {**rows, "diverged_at": {int(r.seed): int(r.diverged_at) for r in div.itertuples()}}


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = SEEDS, now: float | None = None,
            check: str | Path = CHECK) -> dict:
    """R1 on :func:`ddrl.study.amendments.wide.seeds_to_analyse`'s seeds: ``entries`` (``claims.json``'s schema with ``half_width``;
    the registered claim and null rule); descriptive, ``levels`` (each run's mean adapted pass@1, the seeds below
    DDRL), ``cor_kept`` (mean kept rollouts per COR) and ``check`` (:func:`check_rows`)."""
    done = seeds_to_analyse(seeds, complete_seeds(out, REGIME, METHODS), f"{out}: Amendment {AMENDMENT}", CUTOFF, now)
    df = read_csvs(csv_path(out, REGIME, m, s) for m in METHODS for s in done)
    entries = [wide_entry("R1", claim_matrix(df, "R1", REGIME), n_boot, REGIME, SAME_BASE[REGIME])]
    lv = level_table(run_levels(df), ("method",), reference="ddrl", sort=False)
    kept = df[df.split == "adapted"].drop_duplicates(["method", "seed"]).groupby("method", sort=False)["cor_kept"]
    return {"regime": REGIME, "seeds": list(done), "entries": with_half_width(validate(entries, REGIME)),
            "levels": lv.to_dict(orient="records"), "cor_kept": {m: float(kept.mean()[m]) for m in ("ddrl", COR_4X)},
            "check": check_rows(out, check, done)}


def markdown(res: dict, registered: Sequence[dict]) -> str:
    """The table docs/results.md quotes: the paper's number (Table 6, MATH-500), R1's registered MATH-500-like entry at
    the default lr, this amendment's, its half-width beside the plan's predictions, its verdict; then the levels."""
    reg = {(e["id"], e["regime"]): e for e in registered}
    rows = ["| claim (MATH-500-like, adapted pass@1, points) | paper (MATH-500) | default lr (registered) | "
            f"**lr/10 (Amendment {AMENDMENT})** | half-width (predicted at 6 / 10 seeds) | verdict |",
            "|---|---|---|---|---|---|"]
    for e in res["entries"]:
        b = reg.get((e["id"], SAME_BASE[REGIME]))
        rows.append(f"| {e['id']} COR keeping 4x the rollouts - DDRL (COR 1x) | {e['paper']:+.1f} | "
                    f"{'-' if b is None else entry_cell(b)} | {amendment_cells(e, PREDICTED)}")
    return "\n".join(rows + cor_level_rows(res["levels"], res["cor_kept"], "run (lr/10)")) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.refine_math500", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "status", "analyse"))
    add_run_arguments(ap, "run: seeds N-M (default: the plan's, 0-9)")
    args = ap.parse_args(argv)
    seeds = SEEDS if args.seeds is None else tuple(s for s in SEEDS if s in set(args.seeds))
    if args.what == "run":  # the measured base build; the R1 jobs to the clock, then the check of the trained runs
        check_weights(scale=SCALES[args.scale])
        root = args.runs_root or cache_root() / "runs"
        status = run_jobs(jobs(seeds), SCALES[args.scale], args.out, root, clock_budget(CUTOFF, args.budget_min),
                          args.workers, desc=f"Amendment {AMENDMENT} run")
        gone = {s for _, s in untrained(seeds, root, args.scale, REGIME, ("ddrl",))}  # one experiment, every seed
        trained = [s for s in seeds if s not in gone]
        status += run_jobs(check_jobs(trained), SCALES[args.scale], CHECK, root, args.budget_min, args.workers,
                           desc=f"Amendment {AMENDMENT} check")  # evaluations of finished runs only: none trains
        print(status_counts(status))
    elif args.what == "status":
        print(seeds_line(f"Amendment {AMENDMENT} ({REGIME})", len(SEEDS), missing(args.out), CUTOFF))
    else:
        sys.stdout.write(write_json(args.json or ANALYSIS, analyse(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
