"""D2 at the paper's small learning rate, from the committed step logs (plan Amendment 54).

D2 (the paper's Fig. 4b: on MATH-500, DDRL's mean advantage rises from negative to positive) was decided at the default
lr only. Every committed run logs each RL step's batch mean advantage (``adv/mean`` in its ``-steps.csv.gz``), so D2
at lr/10 needs no run: the registered statistic (:func:`ddrl.report.stats.advantage_statistic`) on Amendment 28's DDRL runs
in ``math500_like_small_lr`` decides it; the same statistic in AMC-like at both learning rates is description only
(Fig. 4 has no AMC panel).

    python -m ddrl.study.amendments.small_lr_dynamics --json results/small_lr/dynamics.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.study.claims import entry, validate, with_half_width
from ddrl.report.stats import mean_ci
from ddrl.run.storage import write_json
from ddrl.study.amendments.small_lr import LR_CELL, OUT, REGIME, RUNS, SEEDS
from ddrl.report.stats import advantage_quarters, advantage_statistic
from ddrl.study.plan import SAME_BASE, SMALL_LR, csv_path
from ddrl.report.tables import entry_cell, entry_ci
from ddrl.study.amendments.wide import amendment_cells

#: The verdict's runs: Amendment 28's DDRL runs (seeds 0-17); then the descriptive ones, each (regime, seeds)
DECIDED = (REGIME, SEEDS)
DESCRIBED = ((SAME_BASE[REGIME], tuple(range(46))), (SMALL_LR, tuple(range(19))), (SAME_BASE[SMALL_LR], tuple(range(19))))
#: Amendment 54's predicted half-width at 18 seeds (the registered default-lr D2's per-seed SD, 46 seeds)
PREDICTED = 1.57
ANALYSIS = OUT / "dynamics.json"
NAMES = {"math500_like": "MATH-500-like", "amc_like": "AMC-like"}


def run_statistics(out: str | Path, regime: str, seeds: Sequence[int]) -> pd.DataFrame:
    """Per DDRL run of ``regime``: ``d2`` (:func:`~ddrl.report.stats.advantage_statistic`), the first and the last quarter's
    mean advantage x 100 (``first``, ``last``: the claim's "from negative to positive") and the RL steps. A missing
    step log is an error naming it: every run here is committed."""
    rows = []
    for s in seeds:
        path = csv_path(out, regime, "ddrl", s, steps=True)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: the committed DDRL step log of seed {s} in {regime} is missing")
        st = pd.read_csv(path)
        adv = st[st.phase == "rl"].sort_values("step")["adv/mean"].to_numpy(dtype=float)
        first, last = advantage_quarters(adv)
        rows.append({"regime": regime, "seed": int(s), "steps": len(adv), "d2": advantage_statistic("D2", adv),
                     "first": first, "last": last})
    return pd.DataFrame(rows)


def summary(per: pd.DataFrame) -> dict:
    """One regime's runs as the section's table reads them: D2's mean and t-interval over seeds, the quarters' means
    and how many runs start below 0 and end above it."""
    est, lo, hi = mean_ci(per.d2)
    return {"regime": per.regime.iloc[0], "n_seeds": len(per), "steps": int(per.steps.iloc[0]), "estimate": est,
            "ci_low": lo, "ci_high": hi, "first": float(per["first"].mean()), "last": float(per["last"].mean()),
            "first_below_0": int((per["first"] < 0).sum()), "last_above_0": int((per["last"] > 0).sum())}


def analyse(out: str | Path = RUNS) -> dict:
    """Amendment 54: ``entries`` (D2 at lr/10 in MATH-500-like, ``claims.json``'s schema with ``half_width``; the
    registered sign, margin and rule), ``summary`` (every regime's runs, the decided one first) and ``runs`` (each
    run's statistics)."""
    regime, seeds = DECIDED
    per = [run_statistics(out, r, s) for r, s in (DECIDED, *DESCRIBED)]
    n_q = pd.read_csv(csv_path(out, regime, "ddrl", seeds[0]), dtype={"question": str}).query(
        "split == 'adapted'").question.nunique()
    head = summary(per[0])
    d2 = {**entry("D2", SAME_BASE[regime], head["estimate"], head["ci_low"], head["ci_high"], len(seeds), n_q),
          "regime": regime}
    return {"entries": with_half_width(validate([d2], regime)), "summary": [summary(p) for p in per],
            "runs": pd.concat(per, ignore_index=True).to_dict(orient="records")}


def markdown(res: dict, registered: Sequence[dict]) -> str:
    """Amendment 54's table as docs/results.md quotes it: the verdict beside the registered default-lr D2, then each
    regime's runs (descriptive rows marked so)."""
    e = res["entries"][0]
    b = {(x["id"], x["regime"]): x for x in registered}[("D2", SAME_BASE[e["regime"]])]
    rows = ["| claim | MATH-500-like, default lr (registered) | **MATH-500-like at lr/10 (Amendment 54)** | "
            "half-width (predicted) | verdict |", "|---|---|---|---|---|",
            f"| D2 DDRL's mean advantage, last - first quarter of the RL steps [x 100] | {entry_cell(b)} | "
            f"{amendment_cells(e, f'{PREDICTED:.2f}')}", "",
            "| regime | learning rate | seeds | RL steps | D2 [x 100], 95% CI | first quarter | last quarter | "
            "runs starting below 0 | runs ending above 0 |", "|---|---|---|---|---|---|---|---|---|"]
    for i, s in enumerate(res["summary"]):
        name = NAMES[SAME_BASE.get(s["regime"], s["regime"])] + ("" if i == 0 else " (descriptive)")
        rows.append(f"| {name} | {LR_CELL[s['regime']]} | {s['n_seeds']} | {s['steps']} | {entry_ci(s)} | "
                    f"{s['first']:+.1f} | {s['last']:+.1f} | {s['first_below_0']} | {s['last_above_0']} |")
    return "\n".join(rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.small_lr_dynamics", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=RUNS, help=f"the committed CSVs (default {RUNS})")
    ap.add_argument("--json", type=Path, default=ANALYSIS, help=f"the analysis (default {ANALYSIS})")
    args = ap.parse_args(argv)
    sys.stdout.write(write_json(args.json, analyse(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
