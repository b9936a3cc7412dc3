"""A free start near the base? A third learning rate between the two (plan Amendment 42).

Amendment 40 put the Xeon build's AMC-like RL runs (TTRL, BCS+DAE, DDRL at the default lr and at lr/10, seeds 0-9) on
held-out gain against held-out KL from the base; Amendment 41 found COR alone, and the lr/10 runs, above the straight
line through the untrained model. Two readings of those 60 runs, fitted before this amendment's runs existed
(:func:`fit_readings` refits them; :data:`LINE` and :data:`HINGE` are the registered, rounded coefficients):
**L** the straight line through the base, g = -0.3636 k, and **H** a free start, then a line,
g = -0.4530 max(0, k - 3.443). They differ most at 3-10 units. This amendment trains the three methods at a third
learning rate, lr / 3 with the default's 8 episodes (:func:`regime`, ``amc_like_lr3``), where the readings differ
most, evaluates them on the same 1,536 fresh questions (the study's H1x job) and measures their held-out KL
(Amendment 40's measure). Claims (:data:`CLAIMS`): Z1 which reading the new runs lie nearer (their mean distance above
the midpoint of L and H), Z2 the same with the registered line R (Amendment 21's X3h), Z3/Z4 each reading's residual
within a point.

    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.lr_curve run --workers 2
    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.lr_curve kl
    python -m ddrl.lr_curve status
    python -m ddrl.lr_curve analyse --json results/replication_xeon/lr_curve.json
    python -m ddrl.lr_curve figure      # docs/results/lr_curve.{png,pdf}
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.cor_alone import minutes_to
from ddrl.drift import measure_kl
from ddrl.drift_data import drift_path, export_steps
from ddrl.logprobs import pinned_backend
from ddrl.lr_drift import DEST
from ddrl.lr_heldout import DEFAULT, OUT, XEON
from ddrl.parallel import run_pool
from ddrl.regimes import Regime
from ddrl.reporting import cache_root
from ddrl.small_lr import add_run_arguments
from ddrl.study import run_heldout_x_job
from ddrl.study_plan import SCALES, Job, check_weights, heldout_x_path, load_regimes, regimes_path

#: The new regime: AMC-like at a third of its learning rate, its own episodes (only the learning rate changes)
REGIME = "amc_like_lr3"
LR_DIVISOR = 3
#: The H1x job's methods (BCS+DAE: DDRL's RL-only weights); the untrained model's evaluations are Amendment 38-39's
METHODS = ("ddrl", "bcs_dae", "ttrl")
SEEDS = tuple(range(12))
#: The plan's clocks: no job starts after the first, no held-out KL after the second
CUTOFF = "2026-11-29T04:40:00+00:00"
KL_CUTOFF = "2026-11-29T05:05:00+00:00"


def regime(regimes: str | Path | None = None, scale: str = "default") -> Regime:
    """:data:`REGIME`: the build's ``amc_like`` (``regimes``, default the Xeon build's file) at lr / :data:`LR_DIVISOR`,
    same questions, episodes and everything else."""
    amc = load_regimes(regimes or regimes_path(XEON), SCALES[scale], names=[DEFAULT])[DEFAULT]
    return replace(amc, name=REGIME, stands_for=f"{amc.stands_for} at a third of the default learning rate",
                   lr=amc.lr / LR_DIVISOR)


def _job(args: tuple) -> dict:
    """A pool worker's job: one seed's H1x job in :data:`REGIME` (log-probs pinned to "hf", as every study run),
    skipped once the deadline has passed."""
    seed, scale, out, runs_root, regimes, deadline = args
    if time.time() > deadline:
        return {"seed": seed, "status": "skipped (clock)"}
    with pinned_backend("hf"):
        status = run_heldout_x_job(Job(REGIME, seed, METHODS, "H1x"), regime(regimes, scale), SCALES[scale], out,
                                   runs_root)
    return {"seed": seed, "status": status}


def run(seeds: Sequence[int] = SEEDS, scale: str = "default", out: str | Path = OUT, runs_root: str | Path | None = None,
        workers: int = 2, regimes: str | Path | None = None, cutoff: str = CUTOFF, progress: bool = True) -> list[dict]:
    """Every seed's job through :func:`ddrl.parallel.run_pool`, seed-major; none starts after ``cutoff``. Resumable:
    written CSVs are skipped, finished runs load."""
    if minutes_to(cutoff) <= 0:
        raise SystemExit(f"Amendment 42's clock ({cutoff}) has passed: no job starts after it")
    regimes = str(regimes or regimes_path(XEON))
    check_weights(regimes, SCALES[scale])  # the build the regime's base was measured on, never a new one
    deadline = time.time() + 60 * minutes_to(cutoff)
    root = str(runs_root or cache_root() / "runs")
    return run_pool(_job, [(s, scale, str(out), root, regimes, deadline) for s in seeds], workers,
                    desc="Amendment 42", progress=progress)


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
    if minutes_to(KL_CUTOFF) <= 0:
        raise SystemExit(f"Amendment 42's clock ({KL_CUTOFF}) has passed: no held-out KL starts after it")
    export_steps(out, runs_root, REGIME, METHODS, dest=dest)
    return measure_kl(out, runs_root, regime(regimes, scale), METHODS, dest=dest, scale=scale, progress=progress,
                      regimes=regimes or regimes_path(XEON), seeds=seeds)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.lr_curve", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "kl", "status"))
    add_run_arguments(ap, "run, kl: seeds N-M (default 0-11, as far as the plan's clock allows)")
    ap.set_defaults(out=OUT)
    args = ap.parse_args(argv)
    seeds = args.seeds or SEEDS
    root = args.runs_root or cache_root() / "runs"
    if args.what == "run":
        status = run(seeds, args.scale, args.out, root, args.workers or 2)
        print(pd.Series([s["status"] for s in status], dtype=object).value_counts().to_dict())
    elif args.what == "kl":
        n, missing = kl(root, seeds, args.out, scale=args.scale)
        print(f"held-out KL: {n} measured now; weights missing: {missing or 'none'}")
    else:
        print(f"evaluated: seeds {evaluated(args.out, seeds)}; held-out KL: seeds {measured(DEST, seeds)}; "
              f"minutes to the run clock {minutes_to(CUTOFF):.0f}, to the KL clock {minutes_to(KL_CUTOFF):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
