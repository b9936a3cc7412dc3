"""P1, P2 and M1 in MATH-500-like at the paper's small learning rate (plan Amendment 28).

The registered study measured its learning-rate dimension in AMC-like only (``amc_like_small_lr``: lr / 10, twice
the episodes; there P1, P2 and M1 came out *reproduced*). In MATH-500-like at the default lr TTRL and DDRL gain
nothing over the untrained model, and lose 7-9 points when they train three times longer (Amendment 26). This
amendment carries the registered lr/10 rule (:func:`ddrl.regimes.small_lr_regime`) over to MATH-500-like:
regime :data:`REGIME` (the same 256 questions at lr 3e-6 and 4 episodes, 128 RL steps), TTRL and DDRL on
:data:`SEEDS`, each seed paired with its registered MATH-500-like untrained run (``ddrl.study_plan.SAME_BASE``),
decided by the registered bootstrap and rule.

    python -m ddrl.small_lr regime          # results/regimes_small_lr.json from regimes_base.json (nothing measured)
    python -m ddrl.small_lr run --workers 2 # resumable, seed by seed; the untrained runs are the registered ones
    python -m ddrl.small_lr status
    python -m ddrl.small_lr analyse --json results/small_lr/claims.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.claims import validate
from ddrl.regimes import small_lr_regime
from ddrl.reporting import cache_root, write_json
from ddrl.seeds import seed_range
from ddrl.study import run_jobs
from ddrl.study_analysis import claim_matrix
from ddrl.study_plan import RESULTS, SAME_BASE, SCALES, STEP_COLUMNS, Job, check_weights, csv_path, load_regimes
from ddrl.wide import complete_seeds, vote_by_quarter, wide_entry

REGIME = "math500_like_small_lr"
BASE_REGIME = SAME_BASE[REGIME]  # "math500_like": its questions, base build and untrained runs
STANDS_FOR = "math500_like"  # the paper's numbers and signs are MATH-500's
SEEDS = tuple(range(18))  # the plan's power analysis: the fewest seeds with M1's larger prediction <= 2.0
METHODS = ("ttrl", "ddrl")
CLAIMS = ("P1", "P2", "M1")
RUNS = RESULTS / "runs"  # the CSVs lie beside the registered regimes' (``<runs>/<regime>/``)
OUT = RESULTS / "small_lr"
REGIME_FILE = RESULTS / "regimes_small_lr.json"
#: The plan's predicted 95% half-widths at 18 seeds x 256 questions: (registered MATH-500-like components, AMC-like
#: lr/10's), shown beside the measured ones
PREDICTED_HALF_WIDTH = {"P1": (2.42, 1.92), "P2": (3.07, 2.80), "M1": (1.98, 1.45)}


def regime_file(base: str | Path = RESULTS / "regimes_base.json") -> dict:
    """``results/regimes_small_lr.json``: the registered MATH-500-like regime of ``base`` under the lr/10 rule, on the
    same base weights (its base properties are MATH-500-like's: same build, same questions)."""
    data = json.loads(Path(base).read_text())
    reg = small_lr_regime(load_regimes(base, names=[BASE_REGIME])[BASE_REGIME])
    return {"model": data["model"], "weights": data["weights"], "base_regime": BASE_REGIME,
            "rule": "plan Amendment 28: the registered lr/10 rule (lr / 10, twice the episodes) on the MATH-500-like "
                    "regime; base properties those of math500_like (same build, same questions)",
            "regimes": [reg.to_dict()]}


def jobs(seeds: Sequence[int]) -> list[Job]:
    """Seed by seed: the untrained run (MATH-500-like's, written once for the registered study: loaded), TTRL, DDRL."""
    return [j for s in seeds for j in (Job(BASE_REGIME, s, ("no_adaptation",), "lr/10m"),
                                      *(Job(REGIME, s, (m,), "lr/10m") for m in METHODS))]


def done_seeds(out: str | Path = RUNS) -> list[int]:
    """Seeds with TTRL's and DDRL's CSVs in :data:`REGIME` and the untrained one in :data:`BASE_REGIME`."""
    return sorted(set(complete_seeds(out, REGIME, METHODS)) & set(complete_seeds(out, BASE_REGIME, ("no_adaptation",))))


def load(out: str | Path, seeds: Sequence[int], steps: bool = False) -> pd.DataFrame:
    """The per-question rows (or with ``steps`` the per-step rows) of the untrained runs and of TTRL and DDRL at
    both learning rates on ``seeds``, read file by file (not the whole ``results/runs``)."""
    paths = [csv_path(out, r, m, s, steps) for s in seeds
             for r, ms in ((BASE_REGIME, ("no_adaptation", *METHODS)), (REGIME, METHODS)) for m in ms]
    frames = [pd.read_csv(p, dtype={"question": str}) for p in paths if p.is_file()]
    if not frames:
        return pd.DataFrame(columns=["regime", "method", "seed", *STEP_COLUMNS] if steps else
                            ["regime", "method", "seed", "split", "question", "pass@1"])
    return pd.concat(frames, ignore_index=True)


def levels(df: pd.DataFrame) -> pd.DataFrame:
    """Descriptive, no verdict: each run's adapted pass@1 (points, the mean over its questions), as the mean and SD
    over seeds per (regime, method), with the seeds that end below their own untrained run."""
    a = df[df.split == "adapted"]
    per = (100 * a.groupby(["regime", "method", "seed"])["pass@1"].mean()).rename("pass1").reset_index()
    untrained = per[per.method == "no_adaptation"].set_index("seed")["pass1"]
    rows = []
    for (r, m), g in per.groupby(["regime", "method"], sort=False):
        below = int((g.set_index("seed")["pass1"] < untrained.reindex(g.seed)).sum())
        rows.append({"regime": r, "method": m, "pass1": g.pass1.mean(), "sd": g.pass1.std(ddof=1),
                     "n_seeds": int(g.seed.nunique()), "below_untrained": below})
    return pd.DataFrame(rows)


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = SEEDS) -> dict:
    """P1, P2 and M1 in :data:`REGIME` over ``seeds``, once every one of them is complete (the plan reads no mean
    before): ``entries`` (``claims.json``'s schema, with ``half_width``), and, descriptive, ``levels`` and the vote
    by quarter of the RL steps at both learning rates (``vote``)."""
    done = [s for s in done_seeds(out) if s in set(seeds)]
    if len(done) < len(seeds):
        raise ValueError(f"{out}: {len(done)} of {len(seeds)} seeds complete (missing "
                         f"{sorted(set(seeds) - set(done))}); the plan reads no estimate before all are")
    df = load(out, done)
    entries = [wide_entry(cid, claim_matrix(df, cid, REGIME), n_boot, REGIME, STANDS_FOR) for cid in CLAIMS]
    for e in validate(entries, REGIME):
        e["half_width"] = (e["ci_high"] - e["ci_low"]) / 2
    steps = load(out, done, steps=True)
    vote = pd.concat([vote_by_quarter(seeds=done, regime=r, steps=steps) for r in (BASE_REGIME, REGIME)],
                     ignore_index=True)
    return {"regime": REGIME, "seeds": done, "entries": entries, "levels": levels(df).to_dict(orient="records"),
            "vote": vote.to_dict(orient="records")}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.small_lr", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("regime", "run", "status", "analyse"))
    ap.add_argument("--seeds", type=seed_range, default=None, help="run: seeds N-M (default: the plan's)")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="run: jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=RUNS, help=f"the CSVs (default {RUNS})")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--json", type=Path, default=None, help="analyse: write the result here")
    args = ap.parse_args(argv)
    if args.what == "regime":
        sys.stdout.write(write_json(REGIME_FILE, regime_file()))
    elif args.what == "run":
        check_weights(scale=SCALES[args.scale])  # the measured base build, never a new one
        status = run_jobs(jobs(args.seeds or SEEDS), SCALES[args.scale], args.out, args.runs_root or cache_root() / "runs",
                          args.budget_min, args.workers, desc="Amendment 28 runs")
        print(pd.Series([s["status"] for s in status], dtype=object).value_counts().to_dict())
    elif args.what == "status":
        done = [s for s in done_seeds(args.out) if s in SEEDS]
        print(f"{REGIME}: {len(done)} of {len(SEEDS)} seeds complete; missing {sorted(set(SEEDS) - set(done))}")
    else:
        sys.stdout.write(write_json(args.json, analyse(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
