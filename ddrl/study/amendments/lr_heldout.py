"""Held-out transfer at both learning rates on one build (plan Amendment 39).

Amendment 38 measured the H1x family at lr/10 in AMC-like on the Xeon build ``abcbf433...``; beside it stood the
registered build's default-lr entries, another build read across. Amendment 39 trains that build's default-lr TTRL
and DDRL runs in ``amc_like`` anew (Amendment 5's weights are not kept) through the study's own H1x job (:func:`jobs`),
so one build gives both: the H1x family at the default learning rate, by the replication's own analysis (``python -m
ddrl.study --analyse claims --results results/replication_xeon --out results/replication_xeon/runs``), and, paired by
seed and fresh question, each method at lr/10 minus itself at the default learning rate (:data:`CLAIMS`). Jobs start
until the plan's clock (:data:`CUTOFF`); the analysis reads the seeds whose evaluations are all written.

    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.study.amendments.lr_heldout run --workers 2
    python -m ddrl.study.amendments.lr_heldout status
    python -m ddrl.study.amendments.lr_heldout analyse --json results/replication_xeon/lr_heldout.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.study.claims import amendment_entry, with_half_width
from ddrl.run.pool import minutes_to
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import LR_CELL, add_run_arguments, seeds_line
from ddrl.study.plan import (HELDOUT_X, HELDOUT_X_METHODS, RESULTS, SCALES, SMALL_LR, Job, check_weights, heldout_x_path,
                             regimes_path)
from ddrl.study.pool import run_jobs, status_counts
from ddrl.study.amendments.wide import below_cell, claim_row, level_table, reproduced_counts, run_levels

XEON = RESULTS / "replication_xeon"
OUT = XEON / "runs"
#: The default-lr regime whose runs this amendment trains, and the lr/10 one Amendment 38 evaluated
DEFAULT = "amc_like"
SEEDS = tuple(range(12))
#: The plan's clock: jobs that would start after it are not started (the running ones finish)
CUTOFF = "2026-11-28T22:20:00+00:00"
#: id -> (method, comparison): held-out pass@1 of the method's lr/10 run minus its default-lr run, same seed and fresh
#: question (one build, one evaluation stream per seed), sign +1 (lr/10 keeps more), margin 1 point
CLAIMS = {"LxT": ("ttrl", "TTRL at lr/10 - TTRL at the default lr, held-out"),
          "LxD": ("ddrl", "DDRL at lr/10 - DDRL at the default lr, held-out")}
MARGIN = 1.0
#: The plan's predicted half-widths at 8 / 12 seeds x 1,536 (stand-ins: the registered build's default-lr AMC-like
#: H1xT and H1x matrices, each run against the untrained model, which the lr/10 runs stay within 1.6 points of)
PREDICTED = {"LxT": "1.67 / 1.47", "LxD": "1.62 / 1.50"}
#: What the analysis reads: every H1x evaluation of a seed at the default lr, and the lr/10 runs the claims pair them with
READS = ((DEFAULT, HELDOUT_X_METHODS), (SMALL_LR, tuple(m for m, _ in CLAIMS.values())))


def jobs(seeds: Sequence[int] = SEEDS) -> list[Job]:
    """One study H1x job per seed in :data:`DEFAULT`: TTRL and DDRL trained at the default lr (or loaded), DDRL's
    RL-only weights and the untrained model, each evaluated on the 1,536 fresh questions."""
    return [Job(DEFAULT, s, HELDOUT_X_METHODS, "H1x") for s in seeds]


def minutes_left(now: float | None = None) -> float:
    """Minutes from ``now`` (epoch seconds, default the clock) to :data:`CUTOFF` (negative once it has passed)."""
    return minutes_to(CUTOFF, now)


def complete(out: str | Path = OUT, seeds: Sequence[int] = SEEDS) -> list[int]:
    """The seeds with every held-out CSV the analysis reads (:data:`READS`)."""
    return [s for s in seeds if all(heldout_x_path(out, r, m, s).is_file() for r, ms in READS for m in ms)]


def load(out: str | Path, seeds: Sequence[int]) -> pd.DataFrame:
    """The held-out rows of :data:`READS` on ``seeds``, regime by regime, method by method."""
    return pd.concat([pd.read_csv(heldout_x_path(out, r, m, s), dtype={"question": str})
                      for r, ms in READS for m in ms for s in seeds], ignore_index=True)


def matrix(df: pd.DataFrame, method: str) -> pd.DataFrame:
    """Seeds x questions (points): ``method``'s lr/10 run minus its default-lr run, same seed and question."""
    a = df[df.split == HELDOUT_X]

    def pivot(regime: str) -> pd.DataFrame:
        return a[(a.regime == regime) & (a.method == method)].pivot(index="seed", columns="question", values="pass@1")

    small, default = pivot(SMALL_LR), pivot(DEFAULT)
    if not (small.index.equals(default.index) and small.columns.equals(default.columns)):
        raise ValueError(f"{method}: the lr/10 and default-lr runs cover other seeds or questions")
    return 100 * (small - default)


def analyse(out: str | Path = OUT, n_boot: int = 4000, seeds: Sequence[int] | None = None) -> dict:
    """:data:`CLAIMS` on ``seeds`` (default: :func:`complete`'s, at least 2): ``entries`` (``half_width`` added);
    descriptive, each run's held-out pass@1 over the seeds at both learning rates (``levels``, ``seed_pass1``) and how
    many retrained default-lr runs' adapted rows equal Amendment 5's committed CSVs (``registered_reproduced`` of
    ``registered_checked``)."""
    seeds = list(complete(out) if seeds is None else seeds)
    missing = sorted(set(seeds) - set(complete(out, seeds)))
    if missing or len(seeds) < 2:
        raise ValueError(f"{out}: Amendment 39 reads seeds with every evaluation written (at least 2); seeds {seeds}, "
                         f"incomplete {missing}")
    df = load(out, seeds)
    entries = [amendment_entry(cid, DEFAULT, what, f"held-out pass@1, {what} [points]", f"{m} ({SMALL_LR})",
                               f"{m} ({DEFAULT})", matrix(df, m).to_numpy(), MARGIN, n_boot)
               for cid, (m, what) in CLAIMS.items()]
    with_half_width(entries)
    per = run_levels(df, HELDOUT_X)
    lv = level_table(per, ("regime", "method"), sort=False)  # the untrained run (default regime) is every row's reference
    trained = df[df.regime == DEFAULT].drop_duplicates(["method", "seed"])
    return {"seeds": seeds, "entries": entries, "levels": lv.to_dict(orient="records"),
            "seed_pass1": per.to_dict(orient="records"), **reproduced_counts(trained)}


def markdown(res: dict) -> str:
    """The claims and each run's held-out level at both learning rates, as docs/results.md quotes them."""
    rows = ["| claim (held-out pass@1 on 1,536 fresh AMC-like questions, points) | seeds | estimate [95% CI] | "
            "half-width (predicted at 8 / 12 seeds) | verdict |", "|---|---|---|---|---|"]
    rows += [claim_row(e, e["claim"], PREDICTED[e["id"]]) for e in res["entries"]]
    rows += ["", "| method | learning rate | held-out pass@1, mean over seeds (SD) | seeds below the untrained run |",
             "|---|---|---|---|"]
    rows += [f"| {r['method']} | {'-' if r['method'] == 'no_adaptation' else LR_CELL[r['regime']]} | {r['pass1']:.1f} "
             f"({r['sd']:.1f}) | {below_cell(r)} |" for r in res["levels"]]
    return "\n".join(rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.lr_heldout", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "status", "analyse"))
    add_run_arguments(ap, "run: seeds N-M (default: 0-11, as far as the plan's clock allows)")
    ap.set_defaults(out=OUT)
    args = ap.parse_args(argv)
    seeds = args.seeds or SEEDS
    if args.what == "run":
        left = minutes_left()
        if left <= 0:
            raise SystemExit(f"Amendment 39's clock ({CUTOFF}) has passed: no job starts after it")
        check_weights(regimes_path(XEON), SCALES[args.scale])  # the Xeon build, never a new one
        budget = left if args.budget_min is None else min(args.budget_min, left)
        status = run_jobs(jobs(seeds), SCALES[args.scale], args.out, args.runs_root or cache_root() / "runs", budget,
                          args.workers, desc="Amendment 39", regimes=regimes_path(XEON))
        print(status_counts(status))
    elif args.what == "status":
        done = complete(args.out, seeds)
        print(seeds_line(f"Amendment 39 ({DEFAULT} and {SMALL_LR}, held-out)", len(seeds), sorted(set(seeds) - set(done))))
    else:
        sys.stdout.write(write_json(args.json, analyse(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
