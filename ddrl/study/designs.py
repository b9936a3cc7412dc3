"""The claims study's designs as data (issue 82): one frozen :class:`Design` per committed analysis, one generic
analysis, job list and command line serving them all.

A design names its regime, seeds and clock, the runs it evaluates (one job each per seed: its job kind), the CSVs its
analysis reads (``methods``, in the levels' order; ``split``: adapted or H1x's fresh questions), the claims it decides
(``registered``: ids decided by their registered matrices and rule, :data:`ddrl.study.plan.PAIRED`; ``claims``: ours,
id -> (a, b, what), pass@1 a - b per seed and question, sign +1, margin :data:`MARGIN`), where its analysis goes
and the table docs/results.md prints. What a design measures beyond its claims is a named measure
(:data:`MEASURES`), written once and referred to by name.

    python -m ddrl.study status ttrl_heldout_amc       # seeds complete, to the design's clock
    python -m ddrl.study analyse ttrl_heldout_amc      # -> results/small_lr/ttrl_heldout_amc.json
    python -m ddrl.study run ttrl_heldout_amc --workers 2

Designs not yet in this table keep their amendment module (:mod:`ddrl.study.amendments`); they move here one
family at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from ddrl.report.tables import committed_markdown, entry_cell
from ddrl.run.pool import clock_budget
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import OUT, RUNS, add_run_arguments, seeds_line
from ddrl.study.amendments.wide import (amendment_cells, complete_seeds, cor_level_rows, held_level_rows, level_table, missing_seeds,
                                        read_csvs, reproduced_counts, run_levels, seeds_to_analyse, seeds_to_start,
                                        wide_entry)
from ddrl.study.analysis import claim_matrix, paired_matrix, rl_divergence
from ddrl.study import claims
from ddrl.study.claims import amendment_entry, validate, with_half_width
from ddrl.study.amendments.small_lr import REGIME as MATH500_SMALL_LR
from ddrl.study.amendments.small_lr_cor import untrained
from ddrl.study.amendments.small_lr_refine import check_rows, refuse_untrained
from ddrl.study.plan import (RESULTS, COR_4X, COR_LR10, HELDOUT_X, SAME_BASE, SCALES, SMALL_LR, Job,
                             check_weights, csv_path, heldout_x_path)
from ddrl.study.pool import run_jobs, status_counts

MARGIN = 1.0  # points: every amendment claim's margin (plan Sec. 4's rule)
CHECK = OUT / "refine_check"  # the repeat checks' CSVs (<CHECK>/<regime>/ddrl-seedNN.csv.gz), never over a committed one


@dataclass(frozen=True)
class Design:
    """One committed analysis: what it runs, reads, decides and prints (module docstring)."""

    id: str
    amendment: int
    regime: str
    seeds: tuple[int, ...]
    cutoff: str | None  # the plan's clock (UTC, ISO): no job of a seed past the first six starts after it
    evaluates: tuple[str, ...]  # the runs its jobs compute, one job each per seed, in this order
    methods: tuple[str, ...]  # every run its analysis reads, in the levels' order
    registered: tuple[str, ...]  # registered claims, by their matrices and rule
    claims: dict  # ours: id -> (a, b, what)
    predicted: dict  # id -> the plan's predicted half-widths, as the table prints them
    analysis: Path
    section: str  # its heading in docs/results.md
    split: str = HELDOUT_X
    job_kind: str = "H1x"
    job_per_run: bool = True  # a job per evaluated run and seed (False: one job of every evaluated run per seed)
    kinds: tuple[str, ...] = ()  # a job kind per evaluated run, where they differ (else ``job_kind``)
    measures: tuple[str, ...] = ("reproduced",)  # named measures (:data:`MEASURES`), in the analysis' key order
    reproduced_of: tuple[str, ...] | None = None  # the runs ``reproduced`` counts (None: every run read)
    cached_ddrl: bool = True  # its jobs read the cached DDRL runs' RL-only weights: refuse a seed without one
    reference: str = "no_adaptation"  # the run its levels count the seeds below
    cor_runs: tuple[str, ...] = ()  # the runs ``cor_kept`` reports COR's mean kept rollouts of
    paper: bool = False  # its table prints the paper's number of each claim
    beside: str | None = None  # the design whose entries its table sets beside its own (None: the registered ones)
    header: str = ""  # its table's header row
    level_name: str = "run (lr/10)"  # its level table's first column

    @property
    def tag(self) -> str:
        return f"Amendment {self.amendment}"

    def what(self, cid: str) -> str:
        return self.claims[cid][2] if cid in self.claims else REGISTERED_WHAT[cid]


#: What the tables call the registered claims the designs decide
REGISTERED_WHAT = {"R1": "COR keeping 4x the rollouts - DDRL (COR 1x)", "H1x": "DDRL - untrained", "H1xC": "DDRL - BCS+DAE (COR's cost)", "H1xT": "TTRL - untrained",
                   "H1xD": "DDRL - TTRL", "H1xR": "BCS+DAE - TTRL"}
#: Amendment 58's claims, measured again in MATH-500-like by Amendment 61
COR_LR10_HELDOUT = {"K1x": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (its cost on fresh questions)"),
                    "K2x": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6")}
_HELD_HEADER = "| claim (held-out pass@1 on 1,536 fresh {where}questions, points) | {beside} | **{this}** | " \
               "half-width (predicted{at}) | verdict |"

DESIGNS = {d.id: d for d in (
    # Amendment 56: R1 (COR keeping 4x) and K1, K2 (COR at 1e-6) at lr/10 in AMC-like from the cached RL-only weights of
    # Amendment 55's DDRL runs, and the check: each cached DDRL run (after COR) evaluated again
    Design("refine_amc", 56, SMALL_LR, tuple(range(10)), "2026-12-03T09:00:00+00:00", (COR_4X, COR_LR10),
           ("bcs_dae", COR_LR10, "ddrl", COR_4X), ("R1",),
           {"K1": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (the RL-only weights)"),
            "K2": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6")},
           {"R1": "0.20 / 0.54 / 1.87", "K1": "1.87 / 0.76", "K2": "1.87 / 2.09"}, OUT / "refine_amc.json",
           "## COR's refinement size and learning rate at the small learning rate in AMC-like (plan Amendment 56)",
           split="adapted", kinds=("R1 lr/10 (A56)", "K1 lr/10 (A56)"), measures=("cor_kept", "reeval_check"),
           reference="ddrl", cor_runs=("ddrl", COR_4X, COR_LR10), paper=True, level_name="method",
           header="| claim (AMC-like, adapted pass@1, points) | paper (AMC) | default lr (registered) | "
                  "**lr/10 (Amendment 56)** | half-width (predicted) | verdict |"),
    # Amendment 59: R1 at lr/10 in MATH-500-like (each seed's DDRL run trained again, then refined keeping 4x), and
    # the repeat check of the retrained runs against the committed DDRL CSVs and steps
    Design("refine_math500", 59, MATH500_SMALL_LR, tuple(range(10)), "2026-12-03T14:05:00+00:00", (COR_4X,),
           ("bcs_dae", "ddrl", COR_4X), ("R1",), {}, {"R1": "0.44 / 0.39, 1.01 / 0.99, 1.93 / 1.88"},
           OUT / "refine_math500.json",
           "## COR's refinement size at the small learning rate in MATH-500-like (plan Amendment 59)",
           split="adapted", job_kind="R1 lr/10 (A59)", measures=("cor_kept", "retrain_check"), cached_ddrl=False,
           reference="ddrl", cor_runs=("ddrl", COR_4X), paper=True,
           header="| claim (MATH-500-like, adapted pass@1, points) | paper (MATH-500) | default lr (registered) | "
                  "**lr/10 (Amendment 59)** | half-width (predicted at 6 / 10 seeds) | verdict |"),
    # Amendment 57: DDRL at lr/10 in AMC-like on H1x's fresh questions (COR 4x from the cached RL-only weights)
    Design("refine_heldout_amc", 57, SMALL_LR, tuple(range(10)), "2026-12-03T08:45:00+00:00",
           ("no_adaptation", "bcs_dae", "ddrl", COR_4X), ("no_adaptation", "bcs_dae", "ddrl", COR_4X), ("H1x", "H1xC"),
           {"R1x": (COR_4X, "ddrl", "COR keeping 4x the rollouts - DDRL (COR 1x)")},
           {"H1x": "1.12", "H1xC": "0.49", "R1x": "0.49"}, OUT / "refine_heldout_amc.json",
           "## Does COR's gain at the small learning rate in AMC-like hold on fresh questions? (plan Amendment 57)",
           header=_HELD_HEADER.format(where="AMC-like ", beside="default lr (registered)", this="lr/10 (Amendment 57)",
                                      at=""),
           job_per_run=False, level_name="method (lr/10)"),
    # Amendment 58: TTRL (trained again) and COR at 1e-6 (from the cached RL-only weights) at lr/10 in AMC-like
    Design("ttrl_heldout_amc", 58, SMALL_LR, tuple(range(10)), "2026-12-03T11:25:00+00:00", ("ttrl", COR_LR10),
           ("no_adaptation", "ttrl", "bcs_dae", COR_LR10, "ddrl"), ("H1xT", "H1xD", "H1xR"), COR_LR10_HELDOUT,
           {"H1xT": "0.73 / 0.74", "H1xD": "0.64 / 0.68", "H1xR": "0.32 / 0.36", "K1x": "0.50 / 0.56",
            "K2x": "0.50 / 0.56"}, OUT / "ttrl_heldout_amc.json",
           "## TTRL, and COR at a tenth of its rate, on fresh AMC-like questions at the small learning rate "
           "(plan Amendment 58)",
           measures=("reproduced", "reproduced_by_method"), reproduced_of=("ttrl", COR_LR10),
           header=_HELD_HEADER.format(where="AMC-like ", beside="default lr (registered)", this="lr/10 (Amendment 58)",
                                      at=" at 10 / 6 seeds")),
    # Amendment 60: COR 4x on MATH-500-like's fresh questions, and the repeat check of the cached DDRL runs
    Design("refine_heldout_math500", 60, MATH500_SMALL_LR, tuple(range(10)), "2026-12-03T16:40:00+00:00", (COR_4X,),
           ("no_adaptation", "bcs_dae", "ddrl", COR_4X), (),
           {"R1x": (COR_4X, "ddrl", "COR keeping 4x the rollouts - DDRL (COR 1x)")},
           {"R1x": "0.53 / 0.51, 0.71 / 0.69"}, OUT / "refine_heldout_math500.json",
           "## Does COR 4x's extra gain at the small learning rate in MATH-500-like hold on fresh questions? "
           "(plan Amendment 60)",
           measures=("reproduced", "heldout_check"), reproduced_of=(COR_4X,), beside="refine_heldout_amc",
           header=_HELD_HEADER.format(where="", beside="lr/10 AMC-like (Amendment 57)",
                                      this="lr/10 MATH-500-like (Amendment 60)", at=" at 6 / 10 seeds")),
    # Amendment 61: COR at 1e-6 on MATH-500-like's fresh questions (Amendment 58's claims)
    Design("cor_lr10_heldout_math500", 61, MATH500_SMALL_LR, tuple(range(10)), "2026-12-03T17:15:00+00:00",
           (COR_LR10,), ("no_adaptation", "bcs_dae", COR_LR10, "ddrl"), (), COR_LR10_HELDOUT,
           {"K1x": "0.15 / 0.12, 0.71 / 0.69", "K2x": "0.46 / 0.42, 0.71 / 0.69"},
           OUT / "cor_lr10_heldout_math500.json",
           "## COR at a tenth of its rate on fresh MATH-500-like questions at the small learning rate "
           "(plan Amendment 61)",
           reproduced_of=(COR_LR10,), beside="ttrl_heldout_amc",
           header=_HELD_HEADER.format(where="", beside="lr/10 AMC-like (Amendment 58)",
                                      this="lr/10 MATH-500-like (Amendment 61)", at=" at 6 / 10 seeds")),
)}


# ---------------------------------------------------------------------------------------------------------
# The named measures: what a design reports beyond its claims, each written once
# ---------------------------------------------------------------------------------------------------------


def _evaluated(d: Design, df: pd.DataFrame) -> pd.DataFrame:
    runs = df if d.reproduced_of is None else df[df.method.isin(d.reproduced_of)]
    return runs.drop_duplicates(["method", "seed"])


def _reproduced(d: Design, df: pd.DataFrame, out: Path, done: Sequence[int]) -> dict:
    """How many runs the design computed have adapted rows equal to their committed CSV (the H1x job's check)."""
    return reproduced_counts(_evaluated(d, df))


def _reproduced_by_method(d: Design, df: pd.DataFrame, out: Path, done: Sequence[int]) -> dict:
    """:func:`_reproduced` per evaluated run."""
    ev = _evaluated(d, df)
    return {"reproduced_by_method": {m: reproduced_counts(ev[ev.method == m]) for m in d.reproduced_of}}


def _heldout_check(d: Design, df: pd.DataFrame, out: Path, done: Sequence[int]) -> dict:
    """The repeat check on the fresh questions: each cached DDRL run evaluated again into :data:`CHECK`
    (:func:`ddrl.study.amendments.small_lr_refine.check_rows`)."""
    return {"check": check_rows(out, CHECK, done, d.regime, HELDOUT_X)}


def _cor_kept(d: Design, df: pd.DataFrame, out: Path, done: Sequence[int]) -> dict:
    """COR's mean kept rollouts per run of :attr:`Design.cor_runs` over the seeds (adapted rows)."""
    kept = df[df.split == "adapted"].drop_duplicates(["method", "seed"]).groupby("method", sort=False)["cor_kept"]
    return {"cor_kept": {m: float(kept.mean()[m]) for m in d.cor_runs}}


AGAIN = "ddrl_again"  # the retrain check's name for a retrained DDRL run's steps, beside the committed run's


def retrain_check(out: str | Path, check: str | Path, seeds: Sequence[int], regime: str) -> dict | None:
    """The repeat check of retrained DDRL runs, or None before every re-evaluation is written: Amendment 56's
    description (:func:`ddrl.study.amendments.small_lr_refine.check_rows`: questions and whole seeds whose re-evaluated
    DDRL pass@1 equals the committed CSV's, R1 against the re-evaluated runs) and each retrained run's first RL step off
    the committed trajectory (``diverged_at``, -1: none; :func:`ddrl.study.analysis.rl_divergence`)."""
    rows = check_rows(out, check, seeds, regime)
    if rows is None:
        return None
    steps = pd.concat([read_csvs(csv_path(out, regime, "ddrl", s, steps=True) for s in seeds),
                       read_csvs(csv_path(check, regime, "ddrl", s, steps=True) for s in seeds).assign(method=AGAIN)])
    div = rl_divergence(steps, (AGAIN,))
    return {**rows, "diverged_at": {int(r.seed): int(r.diverged_at) for r in div.itertuples()}}


def _retrain_check(d: Design, df: pd.DataFrame, out: Path, done: Sequence[int]) -> dict:
    return {"check": retrain_check(out, CHECK, done, d.regime)}


def _reeval_check(d: Design, df: pd.DataFrame, out: Path, done: Sequence[int]) -> dict:
    """The repeat check of cached DDRL runs evaluated again (:func:`ddrl.study.amendments.small_lr_refine.check_rows`)."""
    return {"check": check_rows(out, CHECK, done, d.regime)}


MEASURES: dict[str, Callable[[Design, pd.DataFrame, Path, Sequence[int]], dict]] = {
    "reproduced": _reproduced, "reproduced_by_method": _reproduced_by_method, "heldout_check": _heldout_check,
    "cor_kept": _cor_kept, "retrain_check": _retrain_check, "reeval_check": _reeval_check}


# ---------------------------------------------------------------------------------------------------------
# The generic analysis, jobs and table
# ---------------------------------------------------------------------------------------------------------


def design(name: str) -> Design:
    """The design called ``name``, or a ValueError listing the table's."""
    if name not in DESIGNS:
        raise ValueError(f"no design {name!r} in ddrl.study.designs.DESIGNS; known: {', '.join(DESIGNS)}")
    return DESIGNS[name]


def path(d: Design, out: str | Path, method: str, seed: int) -> Path:
    """A run's CSV on the design's split."""
    return heldout_x_path(out, d.regime, method, seed) if d.split == HELDOUT_X else csv_path(out, d.regime, method, seed)


def _csv_root(d: Design, out: str | Path) -> Path:
    return Path(out) / HELDOUT_X if d.split == HELDOUT_X else Path(out)


def jobs(d: Design, seeds: Sequence[int] | None = None, now: float | None = None) -> list[Job]:
    """Seed by seed, a job per evaluated run; once the design's clock has passed (``now``: epoch seconds) only the
    seeds below :data:`~ddrl.study.amendments.wide.MIN_SEEDS`."""
    groups = [((m,), d.kinds[i] if d.kinds else d.job_kind) for i, m in enumerate(d.evaluates)] if d.job_per_run \
        else [(d.evaluates, d.job_kind)]
    return [Job(d.regime, s, g, kind)
            for s in seeds_to_start(d.seeds if seeds is None else seeds, d.seeds, d.cutoff, now) for g, kind in groups]


def missing(d: Design, out: str | Path = RUNS, seeds: Sequence[int] | None = None) -> list[int]:
    """Seeds without every CSV the design's analysis reads."""
    return missing_seeds(_csv_root(d, out), d.regime, d.methods, d.seeds if seeds is None else seeds)


def analyse(d: Design, out: str | Path = RUNS, n_boot: int = 4000, now: float | None = None,
            seeds: Sequence[int] | None = None) -> dict:
    """The design's claims on :func:`ddrl.study.amendments.wide.seeds_to_analyse`'s seeds: ``entries``
    (``claims.json``'s schema with ``half_width``: the registered ones by their matrices and rule, ours by
    :func:`~ddrl.study.claims.amendment_entry`); descriptive, ``levels`` (each run's mean pass@1 on the split, the seeds
    below the untrained run), then the design's named measures. ``seeds``: the design's unless given."""
    done = seeds_to_analyse(d.seeds if seeds is None else tuple(seeds), complete_seeds(_csv_root(d, out), d.regime, d.methods), f"{out}: {d.tag}",
                            d.cutoff, now)
    df = read_csvs(path(d, out, m, s) for m in d.methods for s in done)
    entries = [wide_entry(cid, claim_matrix(df, cid, d.regime), n_boot, d.regime, SAME_BASE[d.regime])
               for cid in d.registered]
    metric = "held-out pass@1" if d.split == HELDOUT_X else "adapted pass@1"
    entries += [amendment_entry(cid, d.regime, what, f"{metric}, {what} [points]", a, b,
                                paired_matrix(df, d.regime, a, b, d.split).to_numpy(), MARGIN, n_boot)
                for cid, (a, b, what) in d.claims.items()]
    res = {"regime": d.regime, "seeds": list(done), "entries": with_half_width(validate(entries, d.regime)),
           "levels": level_table(run_levels(df, d.split), ("method",), reference=d.reference,
                                 sort=False).to_dict(orient="records")}
    for m in d.measures:
        res |= MEASURES[m](d, df, Path(out), done)
    return res


def markdown(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """The table docs/results.md quotes: per claim the entry beside it (the registered one at the default lr in the
    same benchmark, or the entries of :attr:`Design.beside`'s analysis), the design's, its half-width beside the
    plan's predictions, its verdict; then the levels. ``beside``: those entries."""
    if d.beside is None:
        by = {e["id"]: e for e in beside if e["regime"] == SAME_BASE[d.regime]}
    else:
        by = {e["id"]: e for e in beside}
    rows = [d.header, "|---" * (6 if d.paper else 5) + "|"]
    for e in res["entries"]:
        b = by.get(e["id"])
        paper = (" n/a |" if e["paper"] is None else f" {e['paper']:+.1f} |") if d.paper else ""
        rows.append(f"| {e['id']} {d.what(e['id'])} |{paper} {'-' if b is None else entry_cell(b)} | "
                    f"{amendment_cells(e, d.predicted[e['id']])}")
    levels = (cor_level_rows(res["levels"], res["cor_kept"], d.level_name) if "cor_kept" in res else
              held_level_rows(res["levels"], d.level_name))
    return "\n".join(rows + levels) + "\n"


def beside_entries(d: Design, results: Path | None = None) -> list[dict]:
    """The committed entries :func:`markdown` sets beside the design's: the registered ``claims.json`` or
    :attr:`Design.beside`'s committed analysis."""
    if d.beside is None:
        return claims.load((results or RESULTS) / "claims.json")
    return json.loads(DESIGNS[d.beside].analysis.read_text())["entries"]


def committed_table(name: str) -> str:
    """The table of design ``name``'s committed analysis as notebook 06 shows it (:func:`markdown` beside its
    :func:`beside_entries`), or a sentence saying it is not committed yet, with the command that tells how far it is."""
    d = DESIGNS[name]
    return committed_markdown(d.analysis, lambda res: markdown(d, res, beside_entries(d)), d.amendment,
                              f"python -m ddrl.study status {name}")


# ---------------------------------------------------------------------------------------------------------
# CLI: python -m ddrl.study run|status|analyse DESIGN
# ---------------------------------------------------------------------------------------------------------


def run(d: Design, args: argparse.Namespace) -> str:
    """The design's jobs on the measured base build, to its clock; a design reading the cached DDRL runs refuses a
    seed without one before any job (it must not train one anew)."""
    seeds = d.seeds if args.seeds is None else tuple(s for s in d.seeds if s in set(args.seeds))
    check_weights(scale=SCALES[args.scale])
    root = args.runs_root or cache_root() / "runs"
    if d.cached_ddrl:
        refuse_untrained(seeds, root, args.scale, d.amendment, d.regime)
    status = run_jobs(jobs(d, seeds), SCALES[args.scale], args.out, root, clock_budget(d.cutoff, args.budget_min),
                      args.workers, desc=f"{d.tag} run")
    if {"retrain_check", "reeval_check"} & set(d.measures):  # each DDRL run evaluated again (finished ones: none trains)

        gone = {s for _, s in untrained(seeds, root, args.scale, d.regime, ("ddrl",))}
        status += run_jobs([Job(d.regime, s, ("ddrl",), f"COR repeat check (A{d.amendment})") for s in seeds
                            if s not in gone], SCALES[args.scale], CHECK, root, args.budget_min, args.workers,
                           desc=f"{d.tag} check")
    if "heldout_check" in d.measures:  # the check: the cached DDRL runs of the seeds whose evaluation is written
        evaluated = [s for s in seeds if all(path(d, args.out, m, s).is_file() for m in d.evaluates)]
        status += run_jobs([Job(d.regime, s, ("ddrl",), "H1x") for s in evaluated], SCALES[args.scale], CHECK, root,
                           args.budget_min, args.workers, desc=f"{d.tag} check")
    return str(status_counts(status))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "status", "analyse"))
    ap.add_argument("design", help=f"one of {', '.join(DESIGNS)}")
    add_run_arguments(ap, "run: seeds N-M (default: the design's)")
    args = ap.parse_args(argv)
    try:
        d = design(args.design)
        if args.what == "run":
            print(run(d, args))
        elif args.what == "status":
            split = ", held-out" if d.split == HELDOUT_X else ""
            print(seeds_line(f"{d.tag} ({d.regime}{split})", len(d.seeds), missing(d, args.out), d.cutoff))
        else:
            sys.stdout.write(write_json(args.json or d.analysis, analyse(d, args.out)))
    except ValueError as e:
        print(f"ddrl.study: {e}", file=sys.stderr)
        return 2
    return 0
