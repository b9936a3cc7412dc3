"""The claims study's designs as data (issue 82): one frozen :class:`Design` per committed analysis, one generic
analysis, job list and command line serving them all.

A design names its regime, seeds and clock, the runs it evaluates (one job each per seed: its job kind), the CSVs its
analysis reads (``methods``, in the levels' order; ``split``: adapted or H1x's fresh questions), the claims it decides
(``registered``: ids decided by their registered matrices and rule, :data:`ddrl.study.plan.PAIRED`, each on its own
seeds where ``claim_seeds`` says so; ``claims``: ours, id -> (a, b, what), pass@1 a - b per seed and question, sign +1,
margin :data:`MARGIN`), where its analysis goes and the table docs/results.md prints. What a design measures beyond its
claims (its levels too) is a named measure (:data:`MEASURES`), written once and referred to by name.

    python -m ddrl.study status ttrl_heldout_amc       # seeds complete, to the design's clock
    python -m ddrl.study analyse ttrl_heldout_amc      # -> results/small_lr/ttrl_heldout_amc.json
    python -m ddrl.study run ttrl_heldout_amc --workers 2
    python -m ddrl.study render ttrl_heldout_amc       # its table from the committed analysis, as notebook 06 shows it

Designs not yet in this table keep their amendment module (:mod:`ddrl.study.amendments`); they move here one
family at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ddrl.report.plotting import color, label
from ddrl.report.stats import mean_ci
from ddrl.report.tables import committed_markdown, entry_cell
from ddrl.run.pool import clock_budget
from ddrl.run.storage import cache_root, write_json
from ddrl.seeds import numpy_generator
from ddrl.study.amendments.small_lr import LR_CELL, OUT, RUNS, add_run_arguments, seeds_line
from ddrl.study.amendments.wide import (MIN_SEEDS, amendment_cells, below_cell, claim_row, complete_seeds,
                                        cor_level_rows, held_level_rows, level_table, levels_panel, missing_seeds,
                                        read_csvs, reproduced_counts, run_levels, seeds_to_analyse, seeds_to_start,
                                        wide_entry)
from ddrl.study.analysis import claim_matrix, paired_matrix, rl_divergence
from ddrl.study import claims
from ddrl.study.claims import amendment_entry, entry, validate, with_half_width
from ddrl.study.amendments.small_lr import REGIME as MATH500_SMALL_LR
from ddrl.study.amendments.small_lr_refine import check_rows, refuse_untrained
from ddrl.study.plan import (RESULTS, COR_4X, COR_LR10, COR_ONLY, HELDOUT_CLAIMS, HELDOUT_X, HELDOUT_X_METHODS,
                             KNOWN_DIVERGENCES, NO_RL, PAIRED, SAME_BASE, SCALES, SHARES_DDRL_RL, SMALL_LR, Job,
                             check_weights, csv_path, heldout_x_path, untrained)
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
    cutoff: str | None  # the plan's clock (UTC, ISO): no job of a seed past the first ``late_seeds`` starts after it
    evaluates: tuple[str, ...]  # the runs its jobs compute, one job each per seed, in this order
    methods: tuple[str, ...]  # every run its analysis reads, in the levels' order (a seed needs all but ``optional``)
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
    # (``levels`` first where not named)
    reproduced_of: tuple[str, ...] | None = None  # the runs ``reproduced`` counts (None: every run read)
    cached_ddrl: bool = True  # its jobs read the cached DDRL runs' RL-only weights: refuse a seed without one
    reference: str = "no_adaptation"  # the run its levels count the seeds below
    cor_runs: tuple[str, ...] = ()  # the runs ``cor_kept`` reports COR's mean kept rollouts of
    paper: bool = False  # its table prints the paper's number of each claim
    beside: str | None = None  # the design whose entries its table sets beside its own (None: the registered ones)
    header: str = ""  # its table's header row
    level_name: str = "run (lr/10)"  # its level table's first column
    late_seeds: int = MIN_SEEDS  # the first seeds whose jobs still start after the clock (Amendment 53: none)
    optional: tuple[str, ...] = ()  # runs of ``methods`` read where written (the levels), not needed for a seed
    claim_seeds: dict | None = None  # registered claim -> its own seeds: the analysis' ``seeds`` per claim (levels and
    # measures on the first claim's; without a clock each claim waits for its own, with one all share the complete ones)
    level_regimes: tuple[str, ...] = ()  # levels per regime of these (the default-lr twin's runs read on the first
    # claim's seeds), with a regime and learning-rate column under ``level_header``; (): the design's, by run
    level_header: str = ""  # with ``level_regimes``: the level table's header row ({span}: the seeds it covers)
    base_runs: tuple[str, ...] = ()  # runs read in the regime's base (SAME_BASE) too, before its own: the untrained
    # run and the default-lr DDRL run; one level table (``level_header``) over both, against the base's ``reference``
    in_base: tuple[str, ...] = ()  # ours decided in the regime's base, at the default lr (its a: the base's run)
    names: dict | None = None  # its table's texts of claims, where not ``claims``' or :data:`REGISTERED_WHAT`'s
    alone: bool = False  # its table sets no entry beside its own: seeds and estimate columns (``claim_row``)

    @property
    def tag(self) -> str:
        return f"Amendment {self.amendment}"

    def what(self, cid: str) -> str:
        if self.names and cid in self.names:
            return self.names[cid]
        return self.claims[cid][2] if cid in self.claims else REGISTERED_WHAT[cid]


#: What the tables call the registered claims the designs decide
REGISTERED_WHAT = {"R1": "COR keeping 4x the rollouts - DDRL (COR 1x)", "H1x": "DDRL - untrained", "H1xC": "DDRL - BCS+DAE (COR's cost)", "H1xT": "TTRL - untrained",
                   "H1xD": "DDRL - TTRL", "H1xR": "BCS+DAE - TTRL",
                   "A1": "BCS - TTRL", "A2": "BCS+DAE - BCS", "A3": "DDRL - BCS+DAE", "M1": "DDRL - TTRL",
                   "C1": "DDRL - (BCS+DAE + additional RL)",
                   "C2": "additional RL's extra steps - COR [% of each run's own RL phase]"}
#: Amendment 58's claims, measured again in MATH-500-like by Amendment 61
COR_LR10_HELDOUT = {"K1x": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (its cost on fresh questions)"),
                    "K2x": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6")}
_HELD_HEADER = "| claim (held-out pass@1 on 1,536 fresh {where}questions, points) | {beside} | **{this}** | " \
               "half-width (predicted{at}) | verdict |"
#: The lr/10 controls' tables (Amendments 29, 52, 53, 55): the paper's number, the registered default-lr entry, theirs
_LR10_HEADER = "| claim{what} | paper ({bench}) | {name}, default lr (registered) | " \
               "**{name} at lr/10 (Amendment {n})** | half-width (predicted) | verdict |"
_ABLATION = ("ttrl", "bcs", "bcs_dae", "ddrl")  # A1-A3's runs, in the levels' order
_ABLATION_LEVELS = "| method | learning rate | adapted pass@1, mean over seeds (SD) | seeds below TTRL at its lr |"
_EXTRA_RL_LEVELS = "| method | learning rate | adapted pass@1, mean over {span} (SD) | seeds below DDRL |"

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
    # Amendment 29: which part of DDRL carries M1 at lr/10 in MATH-500-like (A1-A3, A3 on all 18 seeds); BCS+DAE is the
    # RL-only weights of Amendment 28's DDRL runs (an evaluation), BCS a new RL run. Predicted: (registered
    # MATH-500-like A1-A3 matrices, Amendment 28's M1 at lr/10) at these seeds
    Design("ablation", 29, MATH500_SMALL_LR, tuple(range(18)), None, ("bcs_dae", "bcs"), _ABLATION, ("A1", "A2", "A3"),
           {}, {"A1": "1.90 / 1.84", "A2": "0.95 / 1.84", "A3": "0.78 / 1.82"}, OUT / "ablation.json",
           "## Which part of DDRL carries M1 at the small learning rate? (plan Amendment 29)", split="adapted",
           kinds=("A3 lr/10 (A29)", "A1 lr/10 (A29)"), measures=("split", "levels"), cached_ddrl=False,
           reference="ttrl", paper=True,
           claim_seeds={"A1": tuple(range(12)), "A2": tuple(range(12)), "A3": tuple(range(18))},
           level_regimes=("math500_like", MATH500_SMALL_LR), level_header=_ABLATION_LEVELS,
           header=_LR10_HEADER.format(what=" (adapted pass@1, points)", bench="MATH-500", name="MATH-500-like", n=29)),
    # Amendment 55: the same in AMC-like, BCS and BCS+DAE new runs seed by seed (BCS+DAE a DDRL run trained again,
    # evaluated before COR: its RL steps beside the committed DDRL run's). Predicted at 6 seeds: (lr/10 AMC-like M1,
    # registered default-lr AMC-like A1-A3, Amendment 29's)
    Design("ablation_amc", 55, SMALL_LR, tuple(range(12)), "2026-12-03T04:40:00+00:00", ("bcs_dae", "bcs"), _ABLATION,
           ("A1", "A2", "A3"), {}, {"A1": "2.26 / 2.64 / 0.71", "A2": "2.26 / 3.24 / 0.23", "A3": "2.26 / 0.63 / 2.74"},
           OUT / "ablation_amc.json",
           "## Which part of DDRL carries M1 at the small learning rate in AMC-like? (plan Amendment 55)",
           split="adapted", kinds=("A3 lr/10 (A55)", "A1 lr/10 (A55)"), measures=("split", "levels", "divergence"),
           cached_ddrl=False, reference="ttrl", paper=True,
           claim_seeds={c: tuple(range(12)) for c in ("A1", "A2", "A3")},
           level_regimes=("amc_like", SMALL_LR), level_header=_ABLATION_LEVELS,
           header=_LR10_HEADER.format(what=" (adapted pass@1, points)", bench="AMC", name="AMC-like", n=55)),
    # Amendment 52: C1 and C2 at lr/10 in MATH-500-like, additional RL (BCS+DAE, then 13 more RL steps) beside Amendment
    # 28's committed DDRL runs. Predicted at 12 seeds: (Amendment 29's A3 at lr/10, the registered C1 at the default lr)
    Design("extra_rl", 52, MATH500_SMALL_LR, tuple(range(12)), None, ("additional_rl",),
           ("bcs_dae", "additional_rl", "ddrl"), ("C1",), {}, {"C1": "1.86 / 0.92"}, OUT / "extra_rl.json",
           "## COR against additional RL at the small learning rate (plan Amendment 52)", split="adapted",
           job_kind="C1 lr/10 (A52)", measures=("c2", "divergence", "agreeing", "levels"), cached_ddrl=False,
           reference="ddrl", paper=True, optional=("bcs_dae",), level_regimes=(MATH500_SMALL_LR,),
           level_header=_EXTRA_RL_LEVELS,
           header=_LR10_HEADER.format(what="", bench="MATH-500", name="MATH-500-like", n=52)),
    # Amendment 53: the same in AMC-like (26 extra steps) beside the registered build's DDRL runs there, no job after
    # its clock. Predicted at 12 seeds: (lr/10 AMC-like M1, Amendment 52's C1, the registered default-lr AMC-like C1)
    Design("extra_rl_amc", 53, SMALL_LR, tuple(range(12)), "2026-12-02T12:30:00+00:00", ("additional_rl",),
           ("bcs_dae", "additional_rl", "ddrl"), ("C1",), {}, {"C1": "2.10 / 2.53 / 0.42"}, OUT / "extra_rl_amc.json",
           "## COR against additional RL at the small learning rate in AMC-like (plan Amendment 53)", split="adapted",
           job_kind="C1 lr/10 (A53)", measures=("c2", "divergence", "agreeing", "levels"), cached_ddrl=False,
           reference="ddrl", paper=True, late_seeds=0, optional=("bcs_dae",), level_regimes=(SMALL_LR,),
           level_header=_EXTRA_RL_LEVELS, header=_LR10_HEADER.format(what="", bench="AMC", name="AMC-like", n=53)),
    # --- COR alone (Amendments 30, 31, 34-38) ---
    # Amendments 30 and 32: at lr/10 in MATH-500-like, COR at 1e-6 from the RL-only weights of Amendment 28's DDRL runs
    # and COR alone (1e-5, from the untrained model, no RL), each one COR call; K5: DDRL at the default lr - COR alone
    # (it runs no RL: its lr/10 CSVs are that computation). Predicted at 18 x 256: K1, K2 from the lr/10 A3 matrix, K3
    # from P2's, K4 from M1's, K5 from the default-lr M1 and P2 matrices of seeds 0-17
    Design("cor_math500", 30, MATH500_SMALL_LR, tuple(range(18)), None, (COR_LR10, COR_ONLY),
           ("ttrl", "bcs_dae", "ddrl", COR_LR10, COR_ONLY), (),
           {"K1": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (the RL-only weights)"),
            "K2": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6"),
            "K3": (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation"),
            "K4": ("ddrl", COR_ONLY, "DDRL - COR alone"), "K5": ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone")},
           {"K1": "1.84", "K2": "1.84", "K3": "2.49", "K4": "1.82", "K5": "2.08 / 3.16"}, OUT / "cor.json",
           "## COR's learning rate, and COR without RL, at the small learning rate (plan Amendments 30 and 32)",
           split="adapted", job_kind="K lr/10", measures=("levels", "cor_kept", "seed_pass1"), cached_ddrl=False,
           cor_runs=("ddrl", COR_LR10, COR_ONLY), base_runs=("no_adaptation", "ddrl"), in_base=("K5",), alone=True,
           header="| claim (MATH-500-like, adapted pass@1, points) | seeds | estimate [95% CI] | half-width (predicted) | "
                  "verdict |",
           level_header="| method | RL learning rate | adapted pass@1, mean over seeds (SD) | seeds below the untrained "
                        "run | COR's kept rollouts |"),
    # Amendments 31 and 33: Amendment 28's runs (and COR alone, recomputed) on H1x's 1,536 fresh MATH-500-like
    # questions, the H1x family there, beside the default lr's (other seeds: read across). Predicted at 18 x 1,536 from
    # the default-lr MATH-500-like H1x matrices (K3x, K4x: the family's range)
    Design("heldout_math500", 31, MATH500_SMALL_LR, tuple(range(18)), None, (*HELDOUT_X_METHODS, COR_ONLY),
           ("no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_ONLY), HELDOUT_CLAIMS,
           {"K3x": (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation, held-out"),
            "K4x": ("ddrl", COR_ONLY, "DDRL - COR alone, held-out")},
           {"H1x": "1.36", "H1xT": "1.06", "H1xD": "0.85", "H1xC": "0.45", "H1xR": "0.80", "K3x": "0.45-1.36",
            "K4x": "0.45-1.36"}, OUT / "heldout.json",
           "## Held-out transfer at the small learning rate (plan Amendments 31 and 33)", job_per_run=False,
           measures=("levels", "seed_pass1", "reproduced"), level_name="",
           names={"H1x": "DDRL - no adaptation", "H1xT": "TTRL - no adaptation", "H1xD": "DDRL - TTRL",
                  "H1xC": "DDRL - BCS+DAE", "H1xR": "BCS+DAE - TTRL", "K3x": "COR alone (no RL) - no adaptation",
                  "K4x": "DDRL - COR alone"},
           header=_HELD_HEADER.format(where="MATH-500-like ", beside="default lr (registered)",
                                      this="lr/10 (Amendments 31, 33)", at="")),
)}


# ---------------------------------------------------------------------------------------------------------
# The named measures: what a design reports beyond its claims, each written once
# ---------------------------------------------------------------------------------------------------------


class Reading(NamedTuple):
    """What a named measure reads: the CSV rows, their folder, the seeds (the first claim's where each has its own),
    the bootstrap's draws and the analysis so far (its entries and the earlier measures)."""

    df: pd.DataFrame
    out: Path
    seeds: list[int]
    n_boot: int
    analysis: dict


def _evaluated(d: Design, df: pd.DataFrame) -> pd.DataFrame:
    runs = df if d.reproduced_of is None else df[df.method.isin(d.reproduced_of)]
    return runs.drop_duplicates(["method", "seed"])


def _reproduced(d: Design, r: Reading) -> dict:
    """How many runs the design computed have adapted rows equal to their committed CSV (the H1x job's check)."""
    return reproduced_counts(_evaluated(d, r.df))


def _reproduced_by_method(d: Design, r: Reading) -> dict:
    """:func:`_reproduced` per evaluated run."""
    ev = _evaluated(d, r.df)
    return {"reproduced_by_method": {m: reproduced_counts(ev[ev.method == m]) for m in d.reproduced_of}}


def _heldout_check(d: Design, r: Reading) -> dict:
    """The repeat check on the fresh questions: each cached DDRL run evaluated again into :data:`CHECK`
    (:func:`ddrl.study.amendments.small_lr_refine.check_rows`)."""
    return {"check": check_rows(r.out, CHECK, r.seeds, d.regime, HELDOUT_X)}


def _cor_kept(d: Design, r: Reading) -> dict:
    """COR's mean kept rollouts per run of :attr:`Design.cor_runs` over the seeds (adapted rows)."""
    own = r.df[(r.df.split == "adapted") & (r.df.regime == d.regime)]
    kept = own.drop_duplicates(["method", "seed"]).groupby("method", sort=False)["cor_kept"]
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
    diverged = {int(r.seed): int(r.diverged_at) for r in div.itertuples()}
    r1 = rows.pop("r1_against_reevaluated")
    return {**rows, "diverged_at": diverged, "r1_against_reevaluated": r1}  # the committed analysis' key order


def _retrain_check(d: Design, r: Reading) -> dict:
    return {"check": retrain_check(r.out, CHECK, r.seeds, d.regime)}


def _reeval_check(d: Design, r: Reading) -> dict:
    """The repeat check of cached DDRL runs evaluated again (:func:`ddrl.study.amendments.small_lr_refine.check_rows`)."""
    return {"check": check_rows(r.out, CHECK, r.seeds, d.regime)}


def _levels(d: Design, r: Reading) -> dict:
    """Each run's mean pass@1 on the split over the seeds, its SD and the seeds below :attr:`Design.reference`'s run
    (:func:`~ddrl.study.amendments.wide.level_table`): by run, or per regime of :attr:`Design.level_regimes`."""
    per = run_levels(r.df[r.df.seed.isin(r.seeds)], d.split)
    if not d.level_regimes:
        by = ("regime", "method") if d.base_runs else ("method",)
        return {"levels": level_table(per, by, d.reference, sort=False).to_dict(orient="records")}
    return {"levels": pd.concat([level_table(per[per.regime == g], ("regime", "method"), d.reference, sort=False)
                                 for g in d.level_regimes], ignore_index=True).to_dict(orient="records")}


def _split(d: Design, r: Reading) -> dict:
    """DDRL - TTRL (M1) and its parts, the design's claims, on the first claim's seeds (descriptive: per seed and
    question the parts sum to M1)."""
    few = r.df[r.df.seed.isin(r.seeds)]
    return {"split": [{"part": d.what(c), "claim": c, "points": float(claim_matrix(few, c, d.regime).to_numpy().mean())}
                      for c in (*d.registered, "M1")]}


def c2_values(questions: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Amendment 52's C2 per seed, each time divided by the RL phase of the run it was measured in: ``c2`` = 100 x
    (the additional-RL run's extra-step seconds / its own RL-phase seconds - the DDRL run's ``cor_seconds`` / its own
    RL-phase seconds); beside it, descriptive, the registered formula 100 x (extra - COR) / the DDRL run's RL phase
    (``registered``). ``questions``: both methods' per-question rows; ``steps``: their step rows. (The two sets of
    runs were timed on different nights, and the machine's speed varies between nights by more than C2's effect.)"""
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


def _c2(d: Design, r: Reading) -> dict:
    """C2, appended to the entries: a t-interval over seeds of :func:`c2_values` (every seed needs its step times and
    COR seconds), as many questions as C1; and the per-seed times, the registered formula beside."""
    steps = read_csvs(csv_path(r.out, d.regime, m, s, steps=True) for s in r.seeds for m in ("ddrl", "additional_rl"))
    c2 = c2_values(r.df, steps)
    if sorted(c2.seed) != sorted(r.seeds):
        raise ValueError(f"{r.out}: C2 needs every seed's step times and COR seconds; have seeds {sorted(c2.seed)}")
    est, lo, hi = mean_ci(c2.c2)
    e = {**entry("C2", SAME_BASE[d.regime], est, lo, hi, len(c2), r.analysis["entries"][0]["n_questions"]),
         "regime": d.regime}
    return {"entries": [*r.analysis["entries"], *with_half_width(validate([e], d.regime))],
            "c2": c2.to_dict(orient="records")}


def _divergence(d: Design, r: Reading) -> dict:
    """Each evaluated run that repeats DDRL's RL phase (:data:`~ddrl.study.plan.SHARES_DDRL_RL`) beside the committed
    DDRL run of its seed: its first RL step off that trajectory (:func:`ddrl.study.analysis.rl_divergence`, -1: none).
    One not in :data:`~ddrl.study.plan.KNOWN_DIVERGENCES` raises (plan Amendment 9: list it there, name it in the
    results)."""
    runs = [m for m in d.evaluates if m in SHARES_DDRL_RL]
    steps = read_csvs(csv_path(r.out, d.regime, m, s, steps=True) for s in r.seeds for m in (*runs, "ddrl"))
    div = rl_divergence(steps, runs)
    new = [(d.regime, x.method, int(x.seed)) for x in div.itertuples() if x.diverged_at >= 0
           and KNOWN_DIVERGENCES.get((d.regime, x.method, int(x.seed))) != x.diverged_at]
    if new:
        raise ValueError(f"{', '.join(runs)} runs off their DDRL run's trajectory, not in "
                         f"study_plan.KNOWN_DIVERGENCES: {new} (plan Amendment 9: list them there and name them in the "
                         "results)")
    return {"divergence": div.to_dict(orient="records")}


def _agreeing(d: Design, r: Reading) -> dict:
    """The first claim again on the seeds whose runs never left DDRL's trajectory (``divergence``), without a verdict;
    None below two such seeds."""
    same = sorted(x["seed"] for x in r.analysis["divergence"] if x["diverged_at"] < 0)
    if len(same) < 2:
        return {"agreeing": None}
    first = r.analysis["entries"][0]  # where every seed agrees: the same matrix and stream, so the entry itself
    if same != sorted(r.seeds):
        first = wide_entry(first["id"], claim_matrix(r.df[r.df.seed.isin(same)], first["id"], d.regime), r.n_boot,
                           d.regime, SAME_BASE[d.regime])
    return {"agreeing": {k: v for k, v in first.items() if k not in ("verdict", "half_width")} | {"seeds": same}}


def _seed_pass1(d: Design, r: Reading) -> dict:
    """Each run's pass@1 on the split: seed by seed where it reads :attr:`Design.base_runs` too (each seed's runs in the
    base, then its own), else run by run (without the regime)."""
    per = run_levels(r.df, d.split)
    per = per.sort_values("seed", kind="stable") if d.base_runs else per.drop(columns="regime")
    return {"seed_pass1": per.to_dict(orient="records")}


MEASURES: dict[str, Callable[[Design, Reading], dict]] = {
    "reproduced": _reproduced, "reproduced_by_method": _reproduced_by_method, "heldout_check": _heldout_check,
    "cor_kept": _cor_kept, "retrain_check": _retrain_check, "reeval_check": _reeval_check}
MEASURES |= {"levels": _levels, "split": _split, "c2": _c2, "divergence": _divergence, "agreeing": _agreeing}
MEASURES |= {"seed_pass1": _seed_pass1}


# ---------------------------------------------------------------------------------------------------------
# The generic analysis, jobs and table
# ---------------------------------------------------------------------------------------------------------


def design(name: str) -> Design:
    """The design called ``name``, or a ValueError listing the table's."""
    if name not in DESIGNS:
        raise ValueError(f"no design {name!r} in ddrl.study.designs.DESIGNS; known: {', '.join(DESIGNS)}")
    return DESIGNS[name]


def path(d: Design, out: str | Path, method: str, seed: int, regime: str | None = None) -> Path:
    """A run's CSV on the design's split (in ``regime``: default the design's)."""
    where = (out, regime or d.regime, method, seed)
    return heldout_x_path(*where) if d.split == HELDOUT_X else csv_path(*where)


def _csv_root(d: Design, out: str | Path) -> Path:
    return Path(out) / HELDOUT_X if d.split == HELDOUT_X else Path(out)


def _needed(d: Design) -> tuple[str, ...]:
    return tuple(m for m in d.methods if m not in d.optional)


def _complete(d: Design, root: Path) -> list[int]:
    """Seeds with a CSV of every run the design needs (and of :attr:`Design.base_runs` in the regime's base)."""
    have = complete_seeds(root, d.regime, _needed(d))
    return [s for s in have if s in complete_seeds(root, SAME_BASE[d.regime], d.base_runs)] if d.base_runs else have


def _wants(d: Design, runs: Sequence[str], seed: int) -> bool:
    """Whether ``seed`` needs a job of ``runs``: with :attr:`Design.claim_seeds`, a claim pairing one of them has it."""
    return d.claim_seeds is None or any(seed in cs for c, cs in d.claim_seeds.items() if set(runs) & set(PAIRED[c][:2]))


def jobs(d: Design, seeds: Sequence[int] | None = None, now: float | None = None) -> list[Job]:
    """Seed by seed, a job per evaluated run (on the seeds of the claims that pair it); once the design's clock has
    passed (``now``: epoch seconds) only the first :attr:`Design.late_seeds` of its seeds."""
    groups = [((m,), d.kinds[i] if d.kinds else d.job_kind) for i, m in enumerate(d.evaluates)] if d.job_per_run \
        else [(d.evaluates, d.job_kind)]
    return [Job(d.regime, s, g, kind)
            for s in seeds_to_start(d.seeds if seeds is None else seeds, d.seeds, d.cutoff, now, d.late_seeds)
            for g, kind in groups if _wants(d, g, s)]


def missing(d: Design, out: str | Path = RUNS, seeds: Sequence[int] | None = None) -> list[int]:
    """Seeds without every CSV the design's analysis needs (with :attr:`Design.claim_seeds`: some claim's pair on one of
    its seeds)."""
    root, among = _csv_root(d, out), d.seeds if seeds is None else seeds
    if d.claim_seeds is None:
        return sorted(set(among) - set(_complete(d, root)))
    return sorted({s for c, cs in d.claim_seeds.items()
                   for s in missing_seeds(root, d.regime, PAIRED[c][:2], [x for x in cs if x in among])})


def analysed_seeds(d: Design, out: str | Path = RUNS, seeds: Sequence[int] | None = None,
                   now: float | None = None) -> list[int] | dict[str, list[int]]:
    """The seeds the plan reads (:func:`ddrl.study.amendments.wide.seeds_to_analyse`; ``seeds``: the design's unless
    given), complete in every run it needs; with :attr:`Design.claim_seeds` per claim: without a clock each claim every
    one of its own seeds, complete in its pair; with one, the complete seeds in every run, the same for every claim."""
    among, root, what = d.seeds if seeds is None else tuple(seeds), _csv_root(d, out), f"{out}: {d.tag}"
    if d.claim_seeds is not None and d.cutoff is None:
        return {c: seeds_to_analyse([s for s in cs if s in among], complete_seeds(root, d.regime, PAIRED[c][:2]),
                                    f"{what} {c}") for c, cs in d.claim_seeds.items()}
    done = seeds_to_analyse(among, _complete(d, root), what, d.cutoff, now)
    return done if d.claim_seeds is None else {c: [s for s in cs if s in done] for c, cs in d.claim_seeds.items()}


def analyse(d: Design, out: str | Path = RUNS, n_boot: int = 4000, now: float | None = None,
            seeds: Sequence[int] | None = None) -> dict:
    """The design's claims on :func:`analysed_seeds`: ``entries`` (``claims.json``'s schema with ``half_width``: the
    registered ones by their matrices and rule, each on its own seeds, ours by
    :func:`~ddrl.study.claims.amendment_entry`); then, descriptive, the design's named measures (:data:`MEASURES`;
    ``levels``: each run's mean pass@1 on the split, first where not named)."""
    seeds = analysed_seeds(d, out, seeds, now)
    per_claim = seeds if isinstance(seeds, dict) else {}
    done = next(iter(per_claim.values())) if per_claim else seeds
    every = sorted(set().union(*per_claim.values())) if per_claim else done
    twins = [g for g in d.level_regimes if g != d.regime]  # the default-lr twin's runs: the levels only
    df = read_csvs([*(path(d, out, m, s, SAME_BASE[d.regime]) for m in d.base_runs for s in every),
                    *(path(d, out, m, s) for m in d.methods for s in every),
                    *(path(d, out, m, s, g) for g in twins for m in d.methods for s in done)])
    entries = [wide_entry(cid, claim_matrix(df[df.seed.isin(per_claim[cid])] if per_claim else df, cid, d.regime),
                          n_boot, d.regime, SAME_BASE[d.regime]) for cid in d.registered]
    metric = "held-out pass@1" if d.split == HELDOUT_X else "adapted pass@1"
    at = {cid: SAME_BASE[d.regime] if cid in d.in_base else d.regime for cid in d.claims}
    entries += [amendment_entry(cid, at[cid], what, f"{metric}, {what} [points]", a, b,
                                paired_matrix(df, at[cid], a, b, d.split).to_numpy(), MARGIN, n_boot)
                for cid, (a, b, what) in d.claims.items()]
    res = {"regime": d.regime, "seeds": seeds, "entries": with_half_width(validate(entries, d.regime))}
    for m in d.measures if "levels" in d.measures else ("levels", *d.measures):
        res |= MEASURES[m](d, Reading(df, Path(out), done, n_boot, res))
    return res


def _lr_level_rows(d: Design, res: dict) -> list[str]:
    """The split of M1 (where measured) and the levels with each run's learning rate (:attr:`Design.level_regimes`),
    each under a blank line."""
    seeds = next(iter(res["seeds"].values())) if isinstance(res["seeds"], dict) else res["seeds"]
    span = f"seeds {seeds[0]}-{seeds[-1]}"
    split = ["", f"| part of DDRL - TTRL ({span}) | points |", "|---|---|",
             *(f"| {p['part']} ({p['claim']}) | {p['points']:+.2f} |" for p in res["split"])] if "split" in res else []
    if any(r["n_seeds"] != len(seeds) for r in res["levels"]):  # a run on fewer seeds (BCS+DAE in AMC-like) says so
        span = f"those of {span} it ran"
    kept = {m: f" {k:.0f} |" for m, k in res.get("cor_kept", {}).items()}  # COR's kept rollouts, where measured
    return [*split, "", d.level_header.format(span=span), "|---" * (d.level_header.count("|") - 1) + "|",
            *(f"| {r['method']} | {'-' if r['method'] in NO_RL else LR_CELL[r['regime']]} | {r['pass1']:.1f} "
              f"({r['sd']:.1f}) | {below_cell(r, d.reference)} |"
              f"{(kept.get(r['method'], ' - |') if r['regime'] == d.regime else ' - |') if kept else ''}"
              for r in res["levels"])]


def markdown(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """The table docs/results.md quotes: per claim the entry beside it (the registered one at the default lr in the
    same benchmark, or the entries of :attr:`Design.beside`'s analysis), the design's, its half-width beside the
    plan's predictions ("-": none), its verdict; then the levels. ``beside``: those entries."""
    if d.beside is None:
        by = {e["id"]: e for e in beside if e["regime"] == SAME_BASE[d.regime]}
    else:
        by = {e["id"]: e for e in beside}
    rows = [d.header, "|---" * (6 if d.paper else 5) + "|"]
    for e in res["entries"]:
        if d.alone:
            rows.append(claim_row(e, d.what(e["id"]), d.predicted.get(e["id"], "-")))
            continue
        b = by.get(e["id"])
        paper = (" n/a |" if e["paper"] is None else f" {e['paper']:+.1f} |") if d.paper else ""
        rows.append(f"| {e['id']} {d.what(e['id'])} |{paper} {'-' if b is None else entry_cell(b)} | "
                    f"{amendment_cells(e, d.predicted.get(e['id'], '-'))}")
    levels = ([] if not d.level_name else _lr_level_rows(d, res) if d.level_regimes or d.base_runs else
              cor_level_rows(res["levels"], res["cor_kept"], d.level_name) if "cor_kept" in res else
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


#: COR's arms' names in figures (they are COR calls, not trainer presets, so ddrl.report.plotting's labels do not name them)
ARM_LABELS = {COR_LR10: "DDRL with COR at lr/10", COR_ONLY: "COR alone (no RL)"}


def cor_figure(cor: dict, held: dict):
    """Descriptive (the paired intervals are the entries'): each run's adapted pass@1 of the seven runs K1-K5 read
    (``cor``: design ``cor_math500``'s analysis) and each run's held-out pass@1 on the fresh questions (``held``:
    ``heldout_math500``'s), one dot per seed, :func:`ddrl.study.amendments.wide.levels_panel`."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.5, 1]})
    rng = numpy_generator(0, "figure", MATH500_SMALL_LR, "cor")
    for ax, res, ylabel, title in ((axes[0], cor, "adapted pass@1 (%)", "adapted questions"),
                                   (axes[1], held, "held-out pass@1 (%)", "fresh questions")):
        title = f"{res['entries'][0]['n_questions']:,} {title}"
        per = pd.DataFrame(res["seed_pass1"])
        default = (per.get("regime") == SAME_BASE[MATH500_SMALL_LR]) & (per.method != "no_adaptation")
        name = per.method.map(lambda m: ARM_LABELS.get(m) or label(m))
        per["run"] = name.where(~default, name + "\ndefault lr")
        palette = dict(zip(per.run, per.method.map(color)))
        levels_panel(ax, per, list(dict.fromkeys(per.run)), palette, rng, ylabel, title)
        sns.despine(ax=ax)
    fig.suptitle("MATH-500-like at lr/10: COR's learning rate, COR without RL, and held-out transfer "
                 "(plan Amendments 30-33; descriptive)", fontsize=10)
    fig.tight_layout()
    return fig


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
    ap.add_argument("what", choices=("run", "status", "analyse", "render"))
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
        elif args.what == "render":
            sys.stdout.write(committed_table(d.id))
        else:
            sys.stdout.write(write_json(args.json or d.analysis, analyse(d, args.out)))
    except ValueError as e:
        print(f"ddrl.study: {e}", file=sys.stderr)
        return 2
    return 0
