"""C1 and C2 at the paper's small learning rate: COR against additional RL (plan Amendments 52 and 53).

At the default lr the registered study found COR ahead of the same RL run continued for 10% more steps (C1) but
dearer than those steps (C2). At lr/10 (regime ``math500_like_small_lr``, Amendment 28) the companion had measured
COR's gain over BCS+DAE (A3, Amendment 29) without the paper's control for it. This module runs that control:
``additional_rl`` (BCS + DAE, no COR, then ``ceil(0.1 x 128)`` = 13 more RL steps) on :data:`SEEDS`, each paired with
Amendment 28's committed DDRL run of its seed.

    python -m ddrl.study.amendments.small_lr_extra_rl run --workers 2     # resumable, seed by seed
    python -m ddrl.study.amendments.small_lr_extra_rl status
    python -m ddrl.study.amendments.small_lr_extra_rl analyse --json results/small_lr/extra_rl.json

Amendment 53 runs the same control at lr/10 in AMC-like (``amc_like_small_lr``: ``ceil(0.1 x 256)`` = 26 extra steps),
paired with the registered build's committed DDRL runs there (Amendment 6), seed by seed until its plan's clock:

    DDRL_CACHE_DIR=<the registered build's cache> python -m ddrl.study.amendments.small_lr_extra_rl run --design amc --workers 2
    python -m ddrl.study.amendments.small_lr_extra_rl analyse --design amc --json results/small_lr/extra_rl_amc.json

C2 is computed within each run (:func:`c2_values`): the two sets of runs were timed on different nights, and this
machine's speed for torch work varies between nights by more than C2's effect.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.study.claims import entry, validate, with_half_width
from ddrl.report.stats import mean_ci
from ddrl.run.pool import clock_budget, minutes_to
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import LR_CELL, OUT, REGIME, RUNS, add_run_arguments, seeds_line
from ddrl.study.analysis import claim_matrix, rl_divergence
from ddrl.study.plan import KNOWN_DIVERGENCES, SAME_BASE, SCALES, SMALL_LR, Job, check_weights, csv_path
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import entry_cell
from ddrl.study.amendments.wide import (amendment_cells, below_cell, complete_seeds, level_table, missing_seeds, predicted_text,
                       read_csvs, run_levels, seeds_to_analyse, wide_entry)

METHODS = ("ddrl", "additional_rl")  # C1 = ddrl - additional_rl; DDRL's runs are committed ones (never a job here)


@dataclass(frozen=True)
class ExtraRlDesign:
    """One lr/10 regime's C1/C2 control: the plan amendment, the lr/10 ``regime`` (its default-lr twin and paper numbers
    are ``SAME_BASE``'s), the seeds, the plan's predicted C1 half-widths at ``len(seeds)`` seeds (``predicted``, from
    the matrices each design's comment names), the analysis file, the docs section's heading and the plan's clock
    (``cutoff``: no job starts after it and the analysis takes the complete seeds from 0; None: every seed, as
    Amendment 52)."""

    amendment: int
    regime: str
    seeds: tuple[int, ...]
    predicted: tuple[float, ...]
    analysis: Path
    section: str
    cutoff: str | None = None

    @property
    def base(self) -> str:
        return SAME_BASE[self.regime]


DESIGNS = {
    "math500": ExtraRlDesign(  # A3 at lr/10 / C1 at the default lr: 12 seeds reach 1.86 / 0.92; 18 would give 1.84
        52, REGIME, tuple(range(12)), (1.86, 0.92), OUT / "extra_rl.json",
        "## COR against additional RL at the small learning rate (plan Amendment 52)"),
    "amc": ExtraRlDesign(  # M1 at lr/10 / Amendment 52's C1 / C1 at the default lr; 19 seeds: 2.03 / 2.50 / -
        53, SMALL_LR, tuple(range(12)), (2.10, 2.53, 0.42), OUT / "extra_rl_amc.json",
        "## COR against additional RL at the small learning rate in AMC-like (plan Amendment 53)",
        "2026-12-02T12:30:00+00:00"),
}
MATH500 = DESIGNS["math500"]
SEEDS, PREDICTED = MATH500.seeds, MATH500.predicted  # Amendment 52's
COMPARISON = {"C1": "DDRL - (BCS+DAE + additional RL)",
              "C2": "additional RL's extra steps - COR [% of each run's own RL phase]"}
#: The levels' methods (descriptive): BCS+DAE is the DDRL runs' RL-only weights (Amendment 29)
LEVEL_METHODS = ("bcs_dae", "additional_rl", "ddrl")


def jobs(seeds: Sequence[int] | None = None, design: ExtraRlDesign = MATH500, now: float | None = None) -> list[Job]:
    """``additional_rl`` seed by seed (``seeds``: default the design's; its DDRL partner is the committed run of the
    same seed, never a job here); none once the design's clock has passed (``now``: epoch seconds)."""
    if design.cutoff is not None and minutes_to(design.cutoff, now) <= 0:
        return []
    return [Job(design.regime, s, ("additional_rl",), f"C1 lr/10 (A{design.amendment})")
            for s in (design.seeds if seeds is None else seeds)]


def missing(out: str | Path = RUNS, seeds: Sequence[int] | None = None, design: ExtraRlDesign = MATH500) -> list[int]:
    """The seeds of ``seeds`` (default the design's) whose ``additional_rl`` or DDRL CSV is not written yet."""
    return missing_seeds(out, design.regime, METHODS, design.seeds if seeds is None else seeds)


def analysed_seeds(out: str | Path, seeds: Sequence[int], design: ExtraRlDesign, now: float | None = None) -> list[int]:
    """The seeds the plan analyses (:func:`ddrl.study.amendments.wide.seeds_to_analyse`: every one of ``seeds``; with a clock, the
    complete seeds from the first, at least :data:`~ddrl.study.amendments.wide.MIN_SEEDS`, once the clock has passed)."""
    return seeds_to_analyse(seeds, complete_seeds(out, design.regime, METHODS), f"{out}: Amendment {design.amendment}",
                            design.cutoff, now)


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


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] | None = None,
            design: ExtraRlDesign = MATH500, now: float | None = None) -> dict:
    """The design over ``seeds`` (default its own; which of them: :func:`analysed_seeds`): ``entries`` (C1 by the
    registered bootstrap, C2 by a t-interval over seeds of :func:`c2_values`; ``claims.json``'s schema, with
    ``half_width``); descriptive: ``c2`` (the per-seed times, the registered formula beside), ``divergence`` (each
    additional-RL run's first RL step off its DDRL run's trajectory, -1: none), ``agreeing`` (C1 on the seeds that
    never left it, without a verdict) and ``levels`` (BCS+DAE where its runs exist, additional RL and DDRL at lr/10,
    the seeds in which each ends below DDRL)."""
    reg = design.regime
    seeds = analysed_seeds(out, design.seeds if seeds is None else seeds, design, now)
    df = read_csvs(csv_path(out, reg, m, s) for s in seeds for m in LEVEL_METHODS)
    c1 = wide_entry("C1", claim_matrix(df, "C1", reg), n_boot, reg, design.base)
    steps = read_csvs(csv_path(out, reg, m, s, steps=True) for s in seeds for m in METHODS)
    c2 = c2_values(df, steps)
    if sorted(c2.seed) != sorted(seeds):
        raise ValueError(f"{out}: C2 needs every seed's step times and COR seconds; have seeds {sorted(c2.seed)}")
    est, lo, hi = mean_ci(c2.c2)
    entries = with_half_width(validate([c1, {**entry("C2", design.base, est, lo, hi, len(c2), c1["n_questions"]),
                                             "regime": reg}], reg))
    div = rl_divergence(steps, ("additional_rl",))
    new = [(reg, "additional_rl", int(r.seed)) for r in div.itertuples() if r.diverged_at >= 0
           and KNOWN_DIVERGENCES.get((reg, "additional_rl", int(r.seed))) != r.diverged_at]
    if new:
        raise ValueError(f"additional-RL runs off their DDRL run's trajectory, not in study_plan.KNOWN_DIVERGENCES: "
                         f"{new} (plan Amendment 9: list them there and name them in the results)")
    same = sorted(int(s) for s in div.seed[div.diverged_at < 0])
    on_same = c1 if same == sorted(seeds) else (  # every seed agrees: the same matrix and stream, so C1 itself
        wide_entry("C1", claim_matrix(df[df.seed.isin(same)], "C1", reg), n_boot, reg, design.base))
    agreeing = None if len(same) < 2 else {k: v for k, v in on_same.items() if k not in ("verdict", "half_width")} | {
        "seeds": same}
    lv = level_table(run_levels(df), ("regime", "method"), reference="ddrl", sort=False)
    return {"regime": reg, "seeds": list(seeds), "entries": entries, "c2": c2.to_dict(orient="records"),
            "divergence": div.to_dict(orient="records"), "agreeing": agreeing, "levels": lv.to_dict(orient="records")}


#: The paper's benchmark and the testbed regime each default-lr twin stands for
NAMES = {"math500_like": ("MATH-500", "MATH-500-like"), "amc_like": ("AMC", "AMC-like")}


def markdown(res: dict, registered: Sequence[dict], design: ExtraRlDesign = MATH500) -> str:
    """The design's table as docs/results.md quotes it: per claim the paper's number (Table 4, the benchmark the regime
    stands for), the registered entry at the default lr (``registered``: ``results/claims.json``'s entries), this
    amendment's entry, its half-width (C1: beside the plan's predictions), its verdict; then the levels."""
    reg = {(e["id"], e["regime"]): e for e in registered}
    bench, name = NAMES[design.base]
    rows = [f"| claim | paper ({bench}) | {name}, default lr (registered) | **{name} at lr/10 "
            f"(Amendment {design.amendment})** | half-width (predicted) | verdict |", "|---|---|---|---|---|---|"]
    for e in res["entries"]:
        b, paper = reg[(e["id"], design.base)], "n/a" if e["paper"] is None else f"{e['paper']:+.1f}"
        pred = predicted_text(design.predicted) if e["id"] == "C1" else "-"
        rows.append(f"| {e['id']} {COMPARISON[e['id']]} | {paper} | {entry_cell(b)} | {amendment_cells(e, pred)}")
    span = f"seeds {res['seeds'][0]}-{res['seeds'][-1]}"  # a method run on fewer seeds (BCS+DAE in AMC-like) says so
    span = span if all(r["n_seeds"] == len(res["seeds"]) for r in res["levels"]) else f"those of {span} it ran"
    rows += ["", f"| method | learning rate | adapted pass@1, mean over {span} (SD) | seeds below DDRL |",
             "|---|---|---|---|"]
    rows += [f"| {r['method']} | {LR_CELL[r['regime']]} | {r['pass1']:.1f} ({r['sd']:.1f}) | {below_cell(r, 'ddrl')} |"
             for r in res["levels"]]
    return "\n".join(rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.small_lr_extra_rl", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "status", "analyse"))
    ap.add_argument("--design", choices=sorted(DESIGNS), default="math500",
                    help="math500: Amendment 52 (MATH-500-like); amc: Amendment 53 (AMC-like)")
    add_run_arguments(ap, "run: seeds N-M (default: the plan's, 0-11)")
    args = ap.parse_args(argv)
    design = DESIGNS[args.design]
    if args.what == "run":  # the measured base build, never a new one; no job starts after the plan's clock
        check_weights(scale=SCALES[args.scale])
        todo = jobs(args.seeds, design)
        status = run_jobs(todo, SCALES[args.scale], args.out, args.runs_root or cache_root() / "runs",
                          clock_budget(design.cutoff, args.budget_min), args.workers,
                          desc=f"Amendment {design.amendment} runs")
        print(status_counts(status))
    elif args.what == "status":
        print(seeds_line(f"C1/C2 ({design.regime})", len(design.seeds), missing(args.out, design=design), design.cutoff))
    else:
        sys.stdout.write(write_json(args.json or design.analysis, analyse(args.out, design=design)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
