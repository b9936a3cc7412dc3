"""TTRL, and COR at a tenth of its rate, at lr/10 on fresh AMC-like questions (plan Amendment 58).

Amendment 57 measured DDRL at lr/10 in AMC-like on H1x's 1,536 fresh questions (registered build): 1.4 points below
the untrained model, most of it COR's. Two runs it could not read are added here, by the study's H1x job
(:func:`ddrl.study.jobs.run_heldout_x_job`) seed by seed:

- ``ttrl``: TTRL's lr/10 runs of this build kept no weights, so each is trained again (its adapted rows checked against
  the committed TTRL CSV by the job's ``registered_reproduced``);
- ``ddrl_cor_lr10``: COR at 1e-6 recomputed from the cached RL-only weights of Amendment 55's DDRL runs (as in
  Amendment 56; checked against its CSV). A seed whose DDRL run is not cached is refused by name, before any job.

The claims (held-out pass@1 a - b per seed and fresh question, sign +1, margin 1 point, Sec. 4's bootstrap and rule):
the registered H1xT (TTRL - untrained), H1xD (DDRL - TTRL), H1xR (BCS+DAE - TTRL); ours K1x (COR at 1e-6 - BCS+DAE)
and K2x (DDRL - COR at 1e-6). The untrained, DDRL and BCS+DAE evaluations are the committed ones (Amendments 48, 57).

    python -m ddrl.study.amendments.ttrl_heldout run --workers 2     # seed by seed, TTRL first, to the plan's clock
    python -m ddrl.study.amendments.ttrl_heldout status
    python -m ddrl.study.amendments.ttrl_heldout analyse             # -> results/small_lr/ttrl_heldout_amc.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from ddrl.study.claims import amendment_entry, validate, with_half_width
from ddrl.run.pool import clock_budget
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import OUT, RUNS, add_run_arguments, seeds_line
from ddrl.study.amendments.small_lr_refine import refuse_untrained
from ddrl.study.analysis import claim_matrix, paired_matrix
from ddrl.study.plan import COR_LR10, HELDOUT_X, SAME_BASE, SCALES, SMALL_LR, Job, check_weights, heldout_x_path
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import entry_cell
from ddrl.study.amendments.wide import (amendment_cells, complete_seeds, held_level_rows, level_table, missing_seeds, read_csvs,
                       reproduced_counts, run_levels, seeds_to_analyse, seeds_to_start, wide_entry)

AMENDMENT = 58
REGIME = SMALL_LR
SEEDS = tuple(range(10))  # the seeds whose DDRL run Amendment 55 trained again (their RL-only weights are cached)
CUTOFF = "2026-12-03T11:25:00+00:00"  # no job of seeds 6-9 starts after it
EVALUATES = ("ttrl", COR_LR10)  # the runs this amendment evaluates, one job each per seed, in this order
#: Every run the claims read, in the levels' order (no_adaptation: Amendment 48's; bcs_dae, ddrl: Amendment 57's)
METHODS = ("no_adaptation", "ttrl", "bcs_dae", COR_LR10, "ddrl")
REGISTERED = ("H1xT", "H1xD", "H1xR")  # by their registered matrices (ddrl.study.plan.PAIRED)
#: ours: id -> (a, b, what), held-out pass@1 a - b
CLAIMS = {"K1x": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (its cost on fresh questions)"),
          "K2x": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6")}
WHAT = {"H1xT": "TTRL - untrained", "H1xD": "DDRL - TTRL", "H1xR": "BCS+DAE - TTRL",
        **{cid: c[2] for cid, c in CLAIMS.items()}}
#: The plan's predicted half-widths at 10 / 6 seeds x 1,536 (the Xeon build's lr/10 AMC-like H1xT, H1xD, H1xR
#: matrices, Amendment 38; Amendment 57's H1xC matrix for K1x and K2x)
PREDICTED = {"H1xT": "0.73 / 0.74", "H1xD": "0.64 / 0.68", "H1xR": "0.32 / 0.36", "K1x": "0.50 / 0.56",
             "K2x": "0.50 / 0.56"}
MARGIN = 1.0
ANALYSIS = OUT / "ttrl_heldout_amc.json"
SECTION = ("## TTRL, and COR at a tenth of its rate, on fresh AMC-like questions at the small learning rate "
           "(plan Amendment 58)")


def jobs(seeds: Sequence[int] = SEEDS, now: float | None = None) -> list[Job]:
    """Seed by seed, the TTRL job then the COR-at-1e-6 job (the study's H1x job each); once the plan's clock has
    passed (``now``: epoch seconds) only the seeds below :data:`~ddrl.study.amendments.wide.MIN_SEEDS`."""
    return [Job(REGIME, s, (m,), "H1x") for s in seeds_to_start(seeds, SEEDS, CUTOFF, now) for m in EVALUATES]


def missing(out: str | Path = RUNS, seeds: Sequence[int] = SEEDS) -> list[int]:
    """Seeds without every held-out CSV the claims read (:data:`METHODS`)."""
    return missing_seeds(Path(out) / HELDOUT_X, REGIME, METHODS, seeds)


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = SEEDS, now: float | None = None) -> dict:
    """The claims on :func:`ddrl.study.amendments.wide.seeds_to_analyse`'s seeds: ``entries`` (``claims.json``'s schema with
    ``half_width``; the registered three by their matrices and rule, K1x/K2x by :func:`~ddrl.study.claims.amendment_entry`);
    descriptive, ``levels`` (each run's mean held-out pass@1, the seeds below the untrained run) and how many of the
    evaluated runs' adapted rows equal their committed CSVs (``registered_reproduced`` of ``registered_checked``)."""
    done = seeds_to_analyse(seeds, complete_seeds(Path(out) / HELDOUT_X, REGIME, METHODS),
                            f"{out}: Amendment {AMENDMENT}", CUTOFF, now)
    df = read_csvs(heldout_x_path(out, REGIME, m, s) for m in METHODS for s in done)
    entries = [wide_entry(cid, claim_matrix(df, cid, REGIME), n_boot, REGIME, SAME_BASE[REGIME]) for cid in REGISTERED]
    entries += [amendment_entry(cid, REGIME, what, f"held-out pass@1, {what} [points]", a, b,
                                paired_matrix(df, REGIME, a, b, HELDOUT_X).to_numpy(), MARGIN, n_boot)
                for cid, (a, b, what) in CLAIMS.items()]
    lv = level_table(run_levels(df, HELDOUT_X), ("method",), sort=False)
    evaluated = df[df.method.isin(EVALUATES)].drop_duplicates(["method", "seed"])
    return {"regime": REGIME, "seeds": list(done), "entries": with_half_width(validate(entries, REGIME)),
            "levels": lv.to_dict(orient="records"), **reproduced_counts(evaluated),
            "reproduced_by_method": {m: reproduced_counts(evaluated[evaluated.method == m]) for m in EVALUATES}}


def markdown(res: dict, registered: Sequence[dict]) -> str:
    """The table docs/results.md quotes: per claim the registered entry at the default lr in AMC-like (other seeds'
    runs; none for K1x/K2x), this amendment's, its half-width beside the plan's predictions, its verdict; then the
    levels."""
    reg = {(e["id"], e["regime"]): e for e in registered}
    rows = ["| claim (held-out pass@1 on 1,536 fresh AMC-like questions, points) | default lr (registered) | "
            f"**lr/10 (Amendment {AMENDMENT})** | half-width (predicted at 10 / 6 seeds) | verdict |",
            "|---|---|---|---|---|"]
    for e in res["entries"]:
        b = reg.get((e["id"], SAME_BASE[REGIME]))
        rows.append(f"| {e['id']} {WHAT[e['id']]} | {'-' if b is None else entry_cell(b)} | "
                    f"{amendment_cells(e, PREDICTED[e['id']])}")
    return "\n".join(rows + held_level_rows(res["levels"])) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.ttrl_heldout", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "status", "analyse"))
    add_run_arguments(ap, "run: seeds N-M (default: the plan's, 0-9)")
    args = ap.parse_args(argv)
    seeds = SEEDS if args.seeds is None else tuple(s for s in SEEDS if s in set(args.seeds))
    if args.what == "run":  # the measured base build; COR from the cached DDRL runs only, never a new DDRL run
        check_weights(scale=SCALES[args.scale])
        root = args.runs_root or cache_root() / "runs"
        refuse_untrained(seeds, root, args.scale, AMENDMENT)
        status = run_jobs(jobs(seeds), SCALES[args.scale], args.out, root, clock_budget(CUTOFF, args.budget_min),
                          args.workers, desc=f"Amendment {AMENDMENT} run")
        print(status_counts(status))
    elif args.what == "status":
        print(seeds_line(f"Amendment {AMENDMENT} ({REGIME}, held-out)", len(SEEDS), missing(args.out), CUTOFF))
    else:
        sys.stdout.write(write_json(args.json or ANALYSIS, analyse(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
