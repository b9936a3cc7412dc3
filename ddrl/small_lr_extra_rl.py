"""C1 and C2 at the paper's small learning rate in MATH-500-like: COR against additional RL (plan Amendment 52).

At the default lr the registered study found COR ahead of the same RL run continued for 10% more steps (C1) but
dearer than those steps (C2). At lr/10 (regime ``math500_like_small_lr``, Amendment 28) the companion had measured
COR's gain over BCS+DAE (A3, Amendment 29) without the paper's control for it. This module runs that control:
``additional_rl`` (BCS + DAE, no COR, then ``ceil(0.1 x 128)`` = 13 more RL steps) on :data:`SEEDS`, each paired with
Amendment 28's committed DDRL run of its seed.

    python -m ddrl.small_lr_extra_rl run --workers 2     # resumable, seed by seed
    python -m ddrl.small_lr_extra_rl status
    python -m ddrl.small_lr_extra_rl analyse --json results/small_lr/extra_rl.json

C2 is computed within each run (:func:`c2_values`): the two sets of runs were timed on different nights, and this
machine's speed for torch work varies between nights by more than C2's effect.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.claims import entry, validate, with_half_width
from ddrl.evaluate import mean_ci
from ddrl.reporting import cache_root, write_json
from ddrl.small_lr import BASE_REGIME, LR_CELL, REGIME, RUNS, STANDS_FOR, add_run_arguments, seeds_line
from ddrl.study import run_jobs
from ddrl.study_analysis import claim_matrix, rl_divergence
from ddrl.study_plan import KNOWN_DIVERGENCES, SCALES, Job, check_weights, csv_path
from ddrl.tables import entry_ci
from ddrl.wide import VERDICT_MD, below_cell, complete_seeds, level_table, run_levels, wide_entry

SEEDS = tuple(range(12))  # the plan's power analysis: 12 seeds reach 1.86 / 0.92; 18 would give 1.84 / -
METHODS = ("ddrl", "additional_rl")  # C1 = ddrl - additional_rl; DDRL's runs are Amendment 28's (committed)
#: Amendment 52's predicted half-widths at 12 seeds x 256 questions: (Amendment 29's A3 matrix at lr/10, the
#: registered C1 matrix at the default lr)
PREDICTED = (1.86, 0.92)
COMPARISON = {"C1": "DDRL - (BCS+DAE + additional RL)",
              "C2": "additional RL's extra steps - COR [% of each run's own RL phase]"}
#: The levels' methods (descriptive): BCS+DAE is the DDRL runs' RL-only weights (Amendment 29)
LEVEL_METHODS = ("bcs_dae", "additional_rl", "ddrl")


def jobs(seeds: Sequence[int] = SEEDS) -> list[Job]:
    """``additional_rl`` seed by seed (its DDRL partner is Amendment 28's run of the same seed, never a job here)."""
    return [Job(REGIME, s, ("additional_rl",), "C1 lr/10") for s in seeds]


def missing(out: str | Path = RUNS, seeds: Sequence[int] = SEEDS) -> list[int]:
    """The seeds of ``seeds`` whose ``additional_rl`` or DDRL CSV in :data:`REGIME` is not written yet."""
    return sorted(set(seeds) - set(complete_seeds(out, REGIME, METHODS)))


def _read(out: str | Path, methods: Sequence[str], seeds: Sequence[int], steps: bool = False) -> pd.DataFrame:
    paths = [csv_path(out, REGIME, m, s, steps) for s in seeds for m in methods]
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in paths if p.is_file()], ignore_index=True)


def c2_values(questions: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Amendment 52's C2 per seed, each time divided by the RL phase of the run it was measured in: ``c2`` = 100 x
    (the additional-RL run's extra-step seconds / its own RL-phase seconds - the DDRL run's ``cor_seconds`` / its own
    RL-phase seconds); beside it, descriptive, the registered formula 100 x (extra - COR) / the DDRL run's RL phase
    (``registered``). ``questions``: both methods' per-question rows; ``steps``: their step rows."""
    t = steps.groupby(["method", "seed", "phase"])["time/step_s"].sum()
    cor = questions[questions.method == "ddrl"].groupby("seed")["cor_seconds"].first()
    rows = []
    for s in sorted(cor.index):
        extra, rl_add, rl_ddrl = t.get(("additional_rl", s, "extra")), t.get(("additional_rl", s, "rl")), t.get(
            ("ddrl", s, "rl"))
        if None in (extra, rl_add, rl_ddrl):
            continue
        rows.append({"seed": int(s), "extra_s": extra, "rl_additional_s": rl_add, "cor_s": cor[s], "rl_ddrl_s": rl_ddrl,
                     "c2": 100 * (extra / rl_add - cor[s] / rl_ddrl), "registered": 100 * (extra - cor[s]) / rl_ddrl})
    return pd.DataFrame(rows)


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = SEEDS) -> dict:
    """Amendment 52 over ``seeds``, once every one is complete: ``entries`` (C1 by the registered bootstrap, C2 by a
    t-interval over seeds of :func:`c2_values`; ``claims.json``'s schema, with ``half_width``); descriptive: ``c2``
    (the per-seed times, the registered formula beside), ``divergence`` (each additional-RL run's first RL step off
    its DDRL run's trajectory, -1: none), ``agreeing`` (C1 on the seeds that never left it, without a verdict) and
    ``levels`` (BCS+DAE, additional RL and DDRL at lr/10, the seeds in which each ends below DDRL)."""
    gone = missing(out, seeds)
    if gone:
        raise ValueError(f"{out}: Amendment 52 incomplete, seeds missing {gone}; the plan reads no estimate before "
                         "every seed is complete")
    df = _read(out, LEVEL_METHODS, seeds)
    c1 = wide_entry("C1", claim_matrix(df, "C1", REGIME), n_boot, REGIME, STANDS_FOR)
    steps = _read(out, METHODS, seeds, steps=True)
    c2 = c2_values(df, steps)
    if sorted(c2.seed) != sorted(seeds):
        raise ValueError(f"{out}: C2 needs every seed's step times and COR seconds; have seeds {sorted(c2.seed)}")
    est, lo, hi = mean_ci(c2.c2)
    entries = with_half_width(validate([c1, {**entry("C2", STANDS_FOR, est, lo, hi, len(c2), c1["n_questions"]),
                                             "regime": REGIME}], REGIME))
    div = rl_divergence(steps, ("additional_rl",))
    new = [(REGIME, "additional_rl", int(r.seed)) for r in div.itertuples() if r.diverged_at >= 0
           and KNOWN_DIVERGENCES.get((REGIME, "additional_rl", int(r.seed))) != r.diverged_at]
    if new:
        raise ValueError(f"additional-RL runs off their DDRL run's trajectory, not in study_plan.KNOWN_DIVERGENCES: "
                         f"{new} (plan Amendment 9: list them there and name them in the results)")
    same = sorted(int(s) for s in div.seed[div.diverged_at < 0])
    on_same = c1 if same == sorted(seeds) else (  # every seed agrees: the same matrix and stream, so C1 itself
        wide_entry("C1", claim_matrix(df[df.seed.isin(same)], "C1", REGIME), n_boot, REGIME, STANDS_FOR))
    agreeing = None if len(same) < 2 else {k: v for k, v in on_same.items() if k not in ("verdict", "half_width")} | {
        "seeds": same}
    lv = level_table(run_levels(df), ("regime", "method"), reference="ddrl", sort=False)
    return {"regime": REGIME, "seeds": list(seeds), "entries": entries, "c2": c2.to_dict(orient="records"),
            "divergence": div.to_dict(orient="records"), "agreeing": agreeing, "levels": lv.to_dict(orient="records")}


def markdown(res: dict, registered: Sequence[dict]) -> str:
    """Amendment 52's table as docs/results.md quotes it: per claim the paper's MATH-500 number (Table 4), the
    registered MATH-500-like entry at the default lr (``registered``: ``results/claims.json``'s entries), this
    amendment's entry, its half-width (C1: beside the plan's predictions), its verdict; then the levels."""
    reg = {(e["id"], e["regime"]): e for e in registered}
    rows = ["| claim | paper (MATH-500) | MATH-500-like, default lr (registered) | **MATH-500-like at lr/10 "
            "(Amendment 52)** | half-width (predicted) | verdict |", "|---|---|---|---|---|---|"]
    for e in res["entries"]:
        b, paper = reg[(e["id"], BASE_REGIME)], "n/a" if e["paper"] is None else f"{e['paper']:+.1f}"
        pred = " / ".join(f"{x:.2f}" for x in PREDICTED) if e["id"] == "C1" else "-"
        rows.append(f"| {e['id']} {COMPARISON[e['id']]} | {paper} | {entry_ci(b)}, {b['n_seeds']} seeds, "
                    f"*{b['verdict']}* | **{entry_ci(e)}**, {e['n_seeds']} seeds | {e['half_width']:.2f} ({pred}) | "
                    f"{VERDICT_MD[e['verdict']]} |")
    rows += ["", f"| method | learning rate | adapted pass@1, mean over seeds {res['seeds'][0]}-{res['seeds'][-1]} (SD) "
                 "| seeds below DDRL |", "|---|---|---|---|"]
    rows += [f"| {r['method']} | {LR_CELL[r['regime']]} | {r['pass1']:.1f} ({r['sd']:.1f}) | {below_cell(r, 'ddrl')} |"
             for r in res["levels"]]
    return "\n".join(rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.small_lr_extra_rl", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "status", "analyse"))
    add_run_arguments(ap, "run: seeds N-M (default: the plan's, 0-11)")
    args = ap.parse_args(argv)
    if args.what == "run":
        check_weights(scale=SCALES[args.scale])  # the measured base build, never a new one
        status = run_jobs(jobs(args.seeds or SEEDS), SCALES[args.scale], args.out,
                          args.runs_root or cache_root() / "runs", args.budget_min, args.workers,
                          desc="Amendment 52 runs")
        print(pd.Series([s["status"] for s in status], dtype=object).value_counts().to_dict())
    elif args.what == "status":
        print(seeds_line(f"C1/C2 ({REGIME})", len(SEEDS), missing(args.out)))
    else:
        sys.stdout.write(write_json(args.json, analyse(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
