"""The ablation (A1-A3) at the paper's small learning rate: which part of DDRL carries M1 (plan Amendments 29, 55).

The paper's Table 3 splits DDRL's gain over TTRL into BCS (A1: BCS - TTRL), DAE (A2: BCS+DAE - BCS) and COR (A3:
DDRL - BCS+DAE), at its own small learning rate. The registered study measured the split at the default lr. Each
design here measures it in one lr/10 regime, with the registered claims, bootstrap, rule and margin, every method
paired by seed and question with the committed TTRL and DDRL runs of that regime:

- ``math500`` (Amendment 29, ``math500_like_small_lr``): BCS+DAE is the RL-only weights of Amendment 28's DDRL runs
  (an evaluation where the run directories are still there), BCS a new RL run; A3 on seeds 0-17, A1 and A2 on 0-11.
- ``amc`` (Amendment 55, ``amc_like_small_lr``): BCS and BCS+DAE are new runs seed by seed (the registered DDRL
  runs' weights are not kept, so BCS+DAE is a DDRL run trained again, evaluated before COR; its RL steps are compared
  with the committed DDRL run's), seeds 0-11 to the plan's clock, at least 6.

    python -m ddrl.study.amendments.small_lr_ablation run --design amc --workers 2     # resumable, seed by seed
    python -m ddrl.study.amendments.small_lr_ablation status --design amc
    python -m ddrl.study.amendments.small_lr_ablation analyse --design amc --json results/small_lr/ablation_amc.json
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.study.claims import validate, with_half_width
from ddrl.run.pool import clock_budget
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import COMPARISON, LR_CELL, OUT, REGIME, RUNS, add_run_arguments, seeds_line, ttrl_levels
from ddrl.study.amendments.small_lr_extra_rl import NAMES
from ddrl.study.analysis import claim_matrix, rl_divergence
from ddrl.study.plan import KNOWN_DIVERGENCES, SAME_BASE, SCALES, SMALL_LR, Job, check_weights, csv_path
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import entry_cell
from ddrl.study.amendments.wide import (amendment_cells, below_cell, complete_seeds, missing_seeds, predicted_text, read_csvs,
                       seeds_to_analyse, seeds_to_start, wide_entry)

CLAIMS = ("A1", "A2", "A3")
ABLATION_METHODS = {"A1": ("bcs", "ttrl"), "A2": ("bcs_dae", "bcs"), "A3": ("ddrl", "bcs_dae")}
ABLATION_COMPARISON = {"A1": "BCS - TTRL", "A2": "BCS+DAE - BCS", "A3": "DDRL - BCS+DAE"}
#: Every method a design reads, in the levels' order
METHODS = ("ttrl", "bcs", "bcs_dae", "ddrl")


@dataclass(frozen=True)
class AblationDesign:
    """One lr/10 regime's A1-A3: the plan amendment, the ``regime``, each claim's ``seeds``, the plan's predicted
    half-widths per claim (``predicted``, from the matrices each design's comment names), the analysis file, the docs
    section's heading, the plan's clock (``cutoff``: seeds from :data:`~ddrl.study.amendments.wide.MIN_SEEDS` on start no job after it,
    and the analysis takes the complete seeds from 0; None: every seed), and whether BCS+DAE is a DDRL run trained
    again (``rerun``: its RL steps are then compared with the committed DDRL run's, plan Amendment 9's rule)."""

    amendment: int
    regime: str
    seeds: dict[str, tuple[int, ...]]
    predicted: dict[str, tuple[float, ...]]
    analysis: Path
    section: str
    cutoff: str | None = None
    rerun: bool = False

    @property
    def base(self) -> str:
        """The default-lr regime of the same questions: its paper numbers, its registered entries and runs."""
        return SAME_BASE[self.regime]


_AMC_SEEDS = tuple(range(12))
DESIGNS = {
    "math500": AblationDesign(  # (registered MATH-500-like A1-A3 matrices, Amendment 28's M1 at lr/10), at these seeds
        29, REGIME, {"A1": tuple(range(12)), "A2": tuple(range(12)), "A3": tuple(range(18))},
        {"A1": (1.90, 1.84), "A2": (0.95, 1.84), "A3": (0.78, 1.82)}, OUT / "ablation.json",
        "## Which part of DDRL carries M1 at the small learning rate? (plan Amendment 29)"),
    "amc": AblationDesign(  # (lr/10 AMC-like M1, registered default-lr AMC-like A1-A3, Amendment 29's) at 6 seeds
        55, SMALL_LR, {cid: _AMC_SEEDS for cid in CLAIMS},
        {"A1": (2.26, 2.64, 0.71), "A2": (2.26, 3.24, 0.23), "A3": (2.26, 0.63, 2.74)}, OUT / "ablation_amc.json",
        "## Which part of DDRL carries M1 at the small learning rate in AMC-like? (plan Amendment 55)",
        "2026-12-03T04:40:00+00:00", rerun=True),
}
MATH500 = DESIGNS["math500"]


def design_seeds(design: AblationDesign = MATH500, among: Sequence[int] | None = None) -> dict[str, tuple[int, ...]]:
    """The design's seeds per claim, or the part of each that lies in ``among`` (a smoke test's few)."""
    return {cid: tuple(s for s in seeds if among is None or s in set(among)) for cid, seeds in design.seeds.items()}


def jobs(design: AblationDesign = MATH500, seeds: dict[str, Sequence[int]] | None = None,
         now: float | None = None) -> list[Job]:
    """The design's runs on ``seeds`` (default its own). Amendment 29: BCS+DAE's evaluations first (the DDRL runs'
    RL-only weights), then BCS seed by seed. With a clock (Amendment 55): seed by seed, BCS+DAE and BCS side by side;
    once the clock has passed (``now``: epoch seconds) only the seeds below :data:`~ddrl.study.amendments.wide.MIN_SEEDS`."""
    seeds = design.seeds if seeds is None else seeds
    tag = {cid: f"{cid} lr/10 (A{design.amendment})" for cid in CLAIMS}  # the claim that scheduled each job
    if design.cutoff is None:
        return [*(Job(design.regime, s, ("bcs_dae",), tag["A3"]) for s in seeds["A3"]),
                *(Job(design.regime, s, ("bcs",), tag["A1"]) for s in seeds["A1"])]
    return [Job(design.regime, s, (m,), tag[cid])
            for s in seeds_to_start(seeds["A1"], design.seeds["A1"], design.cutoff, now)
            for m, cid in (("bcs_dae", "A3"), ("bcs", "A1"))]


def missing(out: str | Path = RUNS, design: AblationDesign = MATH500,
            seeds: dict[str, Sequence[int]] | None = None) -> dict[str, list[int]]:
    """Per claim, the seeds whose CSVs are not all written yet (both of its methods in the design's regime)."""
    seeds = design.seeds if seeds is None else seeds
    return {cid: missing_seeds(out, design.regime, ABLATION_METHODS[cid], s)
            for cid, s in seeds.items()}


def analysed_seeds(out: str | Path, design: AblationDesign, seeds: dict[str, Sequence[int]] | None = None,
                   now: float | None = None) -> dict[str, tuple[int, ...]]:
    """The seeds each claim is analysed on: without a clock every one of them, and no estimate before (a ValueError
    naming the missing seeds per claim); with one, :func:`ddrl.study.amendments.wide.seeds_to_analyse` over seeds complete in all
    four methods, the same seeds for every claim."""
    seeds = design.seeds if seeds is None else seeds
    if design.cutoff is None:
        gone = {cid: m for cid, m in missing(out, design, seeds).items() if m}
        if gone:
            raise ValueError(f"{out}: Amendment {design.amendment} incomplete, seeds missing per claim {gone}; the "
                             "plan reads no estimate before every seed is complete")
        return {cid: tuple(s) for cid, s in seeds.items()}
    done = seeds_to_analyse(seeds["A1"], complete_seeds(out, design.regime, METHODS),
                            f"{out}: Amendment {design.amendment}", design.cutoff, now)
    return {cid: tuple(done) for cid in seeds}


def divergences(out: str | Path, design: AblationDesign, seeds: Sequence[int]) -> pd.DataFrame:
    """Each BCS+DAE run trained again beside the committed DDRL run of its seed (:func:`rl_divergence`: the first RL
    step whose logged trajectory differs, -1: none). A divergence not in ``KNOWN_DIVERGENCES`` raises (plan
    Amendment 9: list it there and name it in the results)."""
    steps = read_csvs(csv_path(out, design.regime, m, s, steps=True) for s in seeds for m in ("bcs_dae", "ddrl"))
    div = rl_divergence(steps, ("bcs_dae",))
    new = [(design.regime, "bcs_dae", int(r.seed)) for r in div.itertuples() if r.diverged_at >= 0
           and KNOWN_DIVERGENCES.get((design.regime, "bcs_dae", int(r.seed))) != r.diverged_at]
    if new:
        raise ValueError(f"BCS+DAE runs off their DDRL run's trajectory, not in study_plan.KNOWN_DIVERGENCES: {new} "
                         "(plan Amendment 9: list them there and name them in the results)")
    return div


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: dict[str, Sequence[int]] | None = None,
            design: AblationDesign = MATH500, now: float | None = None) -> dict:
    """A1-A3 in the design's regime, each over its seeds (:func:`analysed_seeds`): ``entries`` (``claims.json``'s
    schema, with ``half_width``); descriptive, the ``split`` of M1 on A1's seeds into its three parts (per seed and
    question they sum to DDRL - TTRL) and ``levels``: each method's mean adapted pass@1 at both learning rates on A1's
    seeds, with the seeds in which it ends below TTRL at the same learning rate; with ``rerun``, ``divergence``."""
    seeds = analysed_seeds(out, design, seeds, now)
    reg, base, few = design.regime, design.base, list(seeds["A1"])
    paths = [*(csv_path(out, reg, m, s) for s in sorted(set().union(*seeds.values())) for m in METHODS),
             *(csv_path(out, base, m, s) for s in few for m in METHODS)]  # the default lr: levels only
    df = read_csvs(paths)
    mats = {cid: claim_matrix(df[df.seed.isin(set(s))], cid, reg) for cid, s in seeds.items()}  # seeds x questions
    entries = [wide_entry(cid, d, n_boot, reg, base) for cid, d in mats.items()]
    with_half_width(validate(entries, reg))
    mats["M1"] = claim_matrix(df[df.seed.isin(set(few))], "M1", reg)
    part = {**ABLATION_COMPARISON, "M1": COMPARISON["M1"]}
    split = [{"part": part[cid], "claim": cid, "points": float(d.loc[few].to_numpy().mean())}
             for cid, d in mats.items()]
    lv = ttrl_levels(df[df.seed.isin(set(few))], (base, reg))
    res = {"regime": reg, "seeds": {cid: list(s) for cid, s in seeds.items()}, "entries": entries,
           "split": split, "levels": lv.to_dict(orient="records")}
    if design.rerun:
        res["divergence"] = divergences(out, design, few).to_dict(orient="records")
    return res


def markdown(res: dict, registered: Sequence[dict], design: AblationDesign = MATH500) -> str:
    """The design's table as docs/results.md quotes it: per claim the paper's number (Table 3, the benchmark the regime
    stands for), the registered entry at the default lr (``registered``: ``results/claims.json``'s entries), this
    amendment's entry, its half-width beside the plan's predictions, and its verdict."""
    reg = {(e["id"], e["regime"]): e for e in registered}
    bench, name = NAMES[design.base]
    rows = [f"| claim (adapted pass@1, points) | paper ({bench}) | {name}, default lr (registered) | "
            f"**{name} at lr/10 (Amendment {design.amendment})** | half-width (predicted) | verdict |",
            "|---|---|---|---|---|---|"]
    for e in res["entries"]:
        b = reg[(e["id"], design.base)]
        rows.append(f"| {e['id']} {ABLATION_COMPARISON[e['id']]} | {e['paper']:+.1f} | {entry_cell(b)} | "
                    f"{amendment_cells(e, predicted_text(design.predicted[e['id']]))}")
    return "\n".join(rows) + "\n"


def split_markdown(res: dict) -> str:
    """The descriptive split of M1 (``res["split"]``) and the levels (``res["levels"]``) on A1's seeds."""
    n = len(res["seeds"]["A1"])
    rows = [f"| part of DDRL - TTRL (seeds 0-{n - 1}) | points |", "|---|---|"]
    rows += [f"| {p['part']} ({p['claim']}) | {p['points']:+.2f} |" for p in res["split"]]
    rows += ["", "| method | learning rate | adapted pass@1, mean over seeds (SD) | seeds below TTRL at its lr |",
             "|---|---|---|---|"]
    rows += [f"| {r['method']} | {LR_CELL[r['regime']]} | {r['pass1']:.1f} ({r['sd']:.1f}) | "
             f"{below_cell(r, 'ttrl')} |"
             for r in res["levels"]]
    return "\n".join(rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.small_lr_ablation", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "status", "analyse"))
    ap.add_argument("--design", choices=sorted(DESIGNS), default="math500",
                    help="math500: Amendment 29 (MATH-500-like); amc: Amendment 55 (AMC-like)")
    add_run_arguments(ap, "run: seeds N-M (default: the plan's; the part of each claim's seeds among them)")
    args = ap.parse_args(argv)
    design = DESIGNS[args.design]
    if args.what == "run":  # the measured base build, never a new one; seeds past the first six stop at the clock
        check_weights(scale=SCALES[args.scale])
        todo = jobs(design, design_seeds(design, args.seeds))
        status = run_jobs(todo, SCALES[args.scale], args.out, args.runs_root or cache_root() / "runs",
                          clock_budget(design.cutoff, args.budget_min), args.workers,
                          desc=f"Amendment {design.amendment} runs")
        print(status_counts(status))
    elif args.what == "status":
        for cid, miss in missing(args.out, design).items():
            print(seeds_line(f"{cid} ({design.regime})", len(design.seeds[cid]), miss, design.cutoff))
    else:
        sys.stdout.write(write_json(args.json or design.analysis, analyse(args.out, design=design)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
