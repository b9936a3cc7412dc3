"""The claims study's designs as data (issue 82): one frozen :class:`Design` per committed analysis, one generic
analysis, job list and command line serving them all.

A design names its regime, seeds and clock, the runs it evaluates (one job each per seed: its job kind), the CSVs its
analysis reads (``methods``, in the levels' order; ``split``: adapted or H1x's fresh questions), the claims it decides
(``registered``: ids decided by their registered matrices and rule, :data:`ddrl.study.plan.PAIRED`, each on its own
seeds where ``claim_seeds`` says so; ``claims``: ours, id -> (a, b, what), pass@1 a - b per seed and question, sign +1,
margin :data:`MARGIN`), where its analysis goes and the table docs/results.md prints. What a design measures beyond its
claims (its levels too) is a named measure (:data:`MEASURES`), written once and referred to by name. A design of
another build reads its own results tree (``results``: its CSVs and the regimes file that names the build).

    python -m ddrl.study status ttrl_heldout_amc       # seeds complete, to the design's clock
    python -m ddrl.study analyse ttrl_heldout_amc      # -> results/small_lr/ttrl_heldout_amc.json
    python -m ddrl.study run ttrl_heldout_amc --workers 2
    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.study run small_lr_etmr_xeon --workers 2
    python -m ddrl.study render ttrl_heldout_amc       # its table from the committed analysis, as notebook 06 shows it
    python -m ddrl.study import wide DIR --device NAME  # a GPU machine's complete seeds (its run --out DIR) into results/wide

Every committed analysis under ``results/`` is a row: the registered analysis and its replications, the drift family,
and every plan amendment.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats as sps
import seaborn as sns
from scipy.optimize import least_squares

from ddrl.report.plotting import color, label
from ddrl.report.stats import advantage_quarters, advantage_statistic, decided, mean_ci, verdict
from ddrl.report.tables import (VERDICT_MD, amendment_cells, below_cell, claim_row, committed_markdown, entry_cell,
                                entry_ci, fmt_ci)
from ddrl.run.pool import clock_budget, minutes_to
from ddrl.run.storage import atomic_write_bytes, cache_root, write_json
from ddrl.seeds import derive_seed, numpy_generator, seed_range
from ddrl.study.analysis import (analyse_claims, claim_matrix, complete_seeds, level_table, load_questions,
                                 missing_seeds, paired_matrix, read_csvs, reproduced_counts, rl_divergence, run_levels,
                                 same_as_registered, wide_entry)
from ddrl.study.figures import levels_panel, levels_vote_figure, vote_by_quarter
from ddrl.study import claims
from ddrl.study.claims import amendment_entry, entry, get as get_claim, table2_difference, validate, with_half_width
from ddrl.study.plan import (RESULTS, COR_4X, COR_LR10, HELDOUT_CLAIMS, HELDOUT_X, KNOWN_DIVERGENCES, NO_RL, PAIRED,
                             SAME_BASE, SCALES, SHARES_DDRL_RL, SMALL_LR, Job, check_weights, csv_path, heldout_x_path,
                             COR_ONLY, CSV, HELDOUT_X_METHODS, MATH500_768, MIN_SEEDS, STAGE1_METHODS, WIDE_OUT,
                             adapted_x_path, load_regimes, regimes_path, seeds_to_analyse, seeds_to_start, untrained)
from ddrl.study.plan import COR_4X_LR10, MATH500_SMALL_LR, SMALL_LR_OUT as OUT
from ddrl.study.pool import run_jobs, status_counts
from ddrl.study.drift import (HINGE_B, HINGE_K0, LINE, LR_LABELS, LR_METHODS, LR_TEXT, kl_fit, paired_t, reading,
                              x3h_slope)
from ddrl.study.drift import ARMS, PREDICTED_FROM_SLOPE, analyse as drift_analysis, analyse_arms, arm_methods
from ddrl.study.drift_data import PAIR, drift_path, heldout_rows, seed_table

XEON = RESULTS / "replication_xeon"  # the Xeon build's analyses (Amendments 38-42)
MARGIN = 1.0  # points: every amendment claim's margin (plan Sec. 4's rule)
CHECK = OUT / "refine_check"  # the repeat checks' CSVs (<CHECK>/<regime>/ddrl-seedNN.csv.gz), never over a committed one
#: The learning rate of each base regime and its lr/10 one, as figures name it and as the level tables' cell shows it
LR_NAME = {"math500_like": "default lr", MATH500_SMALL_LR: "lr/10", "amc_like": "default lr", SMALL_LR: "lr/10"}
LR_CELL = {"math500_like": "default (3e-5)", MATH500_SMALL_LR: "lr/10 (3e-6)", "amc_like": "default (3e-5)",
           SMALL_LR: "lr/10 (3e-6)"}
#: Amendment 28's claims, as its table names them
COMPARISON = {"P1": "TTRL - no adaptation", "P2": "DDRL - no adaptation", "M1": "DDRL - TTRL"}


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
    claims: dict  # ours: id -> (a, b, what), or (a, b, what, claim, metric, paper) where the entry states its own
    predicted: dict  # id -> the plan's predicted half-widths, as the table prints them
    analysis: Path
    section: str  # its title, the plan amendment's question (documentation of the row: nothing renders it)
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
    beside: tuple[str, ...] | None = ()  # the committed analyses whose entries its table sets beside its own: designs
    # by name or files under results/ (empty: the registered ones; None: no such column, the rows of
    # :func:`~ddrl.report.tables.claim_row`)
    header: str = ""  # its table's header row ({span}: the seeds analysed)
    level_name: str = "run (lr/10)"  # its level table's first column (without ``level_header``; "": no level table)
    unmeasured: str = "-"  # its table's cell where no entry is set beside
    names: dict | None = None  # its table's texts of claims, where not ``claims``' or :data:`REGISTERED_WHAT`'s
    results: Path = RESULTS  # its results tree: ``runs/`` holds the CSVs, its regimes file names the build
    build: str | None = None  # the build its analysis names (after the regime; with a clock, that after the seeds)
    finished: tuple[str, ...] = ()  # trained runs its jobs load: refuse a seed whose run is not finished (none trains)
    late_seeds: int = MIN_SEEDS  # the first seeds whose jobs still start after the clock (Amendment 53: none)
    optional: tuple[str, ...] = ()  # runs of ``methods`` read where written (the levels), not needed for a seed
    claim_seeds: dict | None = None  # registered claim -> its own seeds: the analysis' ``seeds`` per claim (levels and
    # measures on the first claim's; without a clock each claim waits for its own, with one all share the complete ones)
    level_regimes: tuple[str, ...] = ()  # levels per regime of these, in this order (the default-lr twin's runs
    # read where written, on the first claim's seeds), with a regime and learning-rate column; (): the design's, by run
    twin_runs: tuple[str, ...] | None = None  # the runs read in ``level_regimes``' other regimes (None: ``methods``)
    in_base: tuple[str, ...] = ()  # ours decided in the regime's base (SAME_BASE; its ``a``: the twin's run there)
    level_header: str = ""  # the level table's header row ({span}: the seeds it covers), its columns
    # :func:`_level_rows`'; "": :func:`held_level_rows`' (or the COR table's)
    whole: str | None = None  # a named measure that is the whole analysis (its own reading of its files: across
    # learning rates, KLs, fits, step logs), and :data:`TABLES`' table of that name its table; None: the generic one
    folder: str = "runs"  # the folder of ``results`` that holds its CSVs ("": ``results`` itself)
    regime_seeds: dict | None = None  # regime -> its seeds, where the analysis spans regimes (COR alone): then
    # ``claims`` and ``predicted`` are keyed (id, regime), ``seeds`` is every regime's, and a claim's regime whose base
    # (SAME_BASE) is one of these reads its no-RL runs there (on the base's seeds where it has none of its own)
    regime_runs: dict | None = None  # regime -> the runs its jobs compute there, where not ``evaluates`` (with a clock,
    # a regime where it trains runs to the clock and is analysed on its complete seeds, at least 2)
    drift: str = ""  # a drift design's pairs: a KL measure of :data:`ddrl.study.drift.MEASURES` (X1-X4's pair) or a set
    # of :data:`~ddrl.study.drift.ARMS`
    drift_dir: Path | None = None  # a drift design's step CSVs and held-out KLs, if not beside its CSVs
    exploratory: bool = False  # a drift design of the runs its predictions were read from: no verdicts
    beside_regimes: tuple[str, ...] = ()  # the registered regimes whose entries its table sets beside, a column each
    # (Amendment 28: MATH-500-like at the default lr, AMC-like at lr/10); (): :data:`~ddrl.study.plan.SAME_BASE`'s
    job_regimes: tuple[str, ...] = ()  # its jobs' regimes, in this order (Amendment 50: both learning rates); (): its own
    csv_dir: str = ""  # the folder under ``runs/`` its jobs write to (Amendments 50, 51: apart from the regimes' CSVs)

    @property
    def tag(self) -> str:
        return f"Amendment {self.amendment}"

    @property
    def runs(self) -> Path:
        return self.results / self.folder

    def what(self, cid: str) -> str:
        if self.names and cid in self.names:
            return self.names[cid]
        return self.claims[cid][2] if cid in self.claims else REGISTERED_WHAT[cid]


#: What the tables call the registered claims the designs decide
REGISTERED_WHAT = {"R1": "COR keeping 4x the rollouts - DDRL (COR 1x)", "H1x": "DDRL - untrained", "H1xC": "DDRL - BCS+DAE (COR's cost)", "H1xT": "TTRL - untrained",
                   "H1xD": "DDRL - TTRL", "H1xR": "BCS+DAE - TTRL",
                   "A1": "BCS - TTRL", "A2": "BCS+DAE - BCS", "A3": "DDRL - BCS+DAE", **COMPARISON,
                   "M2": "DDRL - ETMR",
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
#: ETMR's designs: the runs each reads at lr/10 (at the default lr too: the levels) beside the untrained run, M3 and P3
#: per benchmark the regime stands for (its Table 2 difference), and what their rows share
ETMR_RUNS = ("ttrl", "etmr", "ddrl")
_ETMR_READS = ("no_adaptation", *ETMR_RUNS)
ETMR_CLAIMS = {base: {cid: (a, b, what, claim, f"pass@1 {what} [points]", table2_difference(a, b, base))
                      for cid, a, b, what, claim in (
                          ("M3", "etmr", "ttrl", "ETMR - TTRL", "ETMR is the stronger baseline: it beats TTRL"),
                          ("P3", "etmr", "no_adaptation", "ETMR - no adaptation", "ETMR improves on no adaptation"))}
               for base in ("math500_like", "amc_like")}
_ETMR = {"split": "adapted", "measures": ("seed_pass1", "vote", "rl_minutes"), "cached_ddrl": False,
         "reference": "etmr", "paper": True, "unmeasured": "not measured",
         "level_header": "| method | learning rate | adapted pass@1, mean over {span} (SD) | seeds below ETMR at its "
                         "lr | RL phase, mean minutes |"}
_ETMR_HEADER = ("| claim (adapted pass@1, points) | paper ({paper}) | {beside} | **{this} at lr/10 (Amendment {a}, "
                "{{span}})** | half-width (predicted at {at} seeds) | verdict |")
#: Their held-out claims (Amendments 45, 48): held-out pass@1 a - b per seed and fresh question
ETMR_HELDOUT = {"P3x": ("etmr", "no_adaptation", "ETMR at lr/10 - no adaptation, held-out"),
                "M2x": ("ddrl", "etmr", "DDRL - ETMR at lr/10, held-out"),
                "M3x": ("etmr", "ttrl", "ETMR - TTRL at lr/10, held-out")}
ETMR_HELD_RUNS = ("no_adaptation", "ttrl", "bcs_dae", "etmr", "ddrl")
_ETMR_HELD = {"job_per_run": False, "measures": ("seed_pass1", "reproduced"), "reproduced_of": ETMR_RUNS,
              "cached_ddrl": False, "beside": None,
              "level_header": "| run (lr/10) | held-out pass@1, mean over {span} (SD) | seeds below the untrained "
                              "run |"}
_ETMR_HELD_HEADER = ("| claim (held-out pass@1 on 1,536 fresh {name} questions, points; {build}, lr/10) | seeds | "
                     "estimate [95% CI] | half-width (predicted) | verdict |")

WIDE_ARMS = ("ttrl_kl100x", "ddrl_kl100x")  # Amendment 27: Amendment 25's arms (kl_coef 0.1)
#: COR alone (Amendments 34-38): its claims, keyed (id, regime), pass@1 a - b per seed and question, sign +1, margin
#: :data:`MARGIN` (the ids of Amendments 30 and 32; K4: DDRL at lr/10, K5: at the default lr)
_K3 = (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation")
_K4 = ("ddrl", COR_ONLY, "DDRL at lr/10 - COR alone")
_K5 = ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone")
_K3X = (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation, held-out")
_K5X = ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone, held-out")
#: Amendment 38 (the Xeon build): the registered H1x family (:data:`ddrl.study.plan.PAIRED`) and Amendment 33's K3x,
#: K4x at lr/10 in AMC-like, held-out pass@1 a - b
HELDOUT_LR10 = {**{(cid, SMALL_LR): (*PAIRED[cid][:2], f"{what}, held-out") for cid, what in (
    ("H1x", "DDRL at lr/10 - no adaptation"), ("H1xT", "TTRL at lr/10 - no adaptation"), ("H1xD", "DDRL - TTRL at lr/10"),
    ("H1xC", "DDRL - BCS+DAE at lr/10"), ("H1xR", "BCS+DAE - TTRL at lr/10"))},
                ("K3x", SMALL_LR): _K3X, ("K4x", SMALL_LR): ("ddrl", COR_ONLY, "DDRL at lr/10 - COR alone, held-out")}
COR_ALONE_RUNS = ("no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_ONLY)  # the runs COR alone's claims read, in order
_COR_ALONE_HEADER = ("| claim (pass@1, points) | regime | seeds x questions | estimate [95% CI] | half-width (predicted) "
                     "| verdict |")
_COR_ALONE = {"measures": (), "cached_ddrl": False, "header": _COR_ALONE_HEADER}

#: Amendments 49-51: the level table against TTRL; T1f's table and folder (its CSVs apart from the regimes')
_T1_LEVELS = "| method | learning rate | adapted pass@1, mean over {span} (SD) | seeds below TTRL at its lr |"
_T1F_HEADER = ("| learning rate | paper (MATH-500) | T1, the caption's reading (grpo_no_std - TTRL) | **T1f, the text's "
               "reading (dae - TTRL; Amendment 50)** | half-width (predicted) | verdict |")
T1F_DIR = "table1_fixed"
#: Amendment 62: the runs each split's analysis reads, in the levels' order
COR_TRADE_RUNS = {"adapted": ("bcs_dae", COR_LR10, COR_4X_LR10, "ddrl", COR_4X),
                  HELDOUT_X: ("no_adaptation", "bcs_dae", COR_LR10, COR_4X_LR10, "ddrl", COR_4X)}
_COR_TRADE_HEADER = ("| claim ({} at lr/10, pass@1, points) | questions | **Amendment 62** | half-width (predicted at 6 "
                     "/ 10 seeds) | verdict |")

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
           measures=("reproduced", "heldout_check"), reproduced_of=(COR_4X,), beside=("refine_heldout_amc",),
           header=_HELD_HEADER.format(where="", beside="lr/10 AMC-like (Amendment 57)",
                                      this="lr/10 MATH-500-like (Amendment 60)", at=" at 6 / 10 seeds")),
    # Amendment 61: COR at 1e-6 on MATH-500-like's fresh questions (Amendment 58's claims)
    Design("cor_lr10_heldout_math500", 61, MATH500_SMALL_LR, tuple(range(10)), "2026-12-03T17:15:00+00:00",
           (COR_LR10,), ("no_adaptation", "bcs_dae", COR_LR10, "ddrl"), (), COR_LR10_HELDOUT,
           {"K1x": "0.15 / 0.12, 0.71 / 0.69", "K2x": "0.46 / 0.42, 0.71 / 0.69"},
           OUT / "cor_lr10_heldout_math500.json",
           "## COR at a tenth of its rate on fresh MATH-500-like questions at the small learning rate "
           "(plan Amendment 61)",
           reproduced_of=(COR_LR10,), beside=("ttrl_heldout_amc",),
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
    # --- the learning rate (Amendments 39-42, 54) ---
    # Amendment 39: the Xeon build's default-lr TTRL and DDRL trained anew in AMC-like (the study's H1x job), paired by
    # seed and fresh question with Amendment 38's lr/10 runs. Predicted at 8 / 12 seeds: the registered build's
    # default-lr AMC-like H1xT and H1x matrices
    Design("lr_heldout", 39, "amc_like", tuple(range(12)), "2026-11-28T22:20:00+00:00", HELDOUT_X_METHODS,
           HELDOUT_X_METHODS, (), {}, {"LxT": "1.67 / 1.47", "LxD": "1.62 / 1.50"}, XEON / "lr_heldout.json",
           "## Held-out transfer at both learning rates on one build (plan Amendment 39)", job_per_run=False,
           measures=(), cached_ddrl=False, late_seeds=0, whole="lr_heldout", results=XEON,
           header="| claim (held-out pass@1 on 1,536 fresh AMC-like questions, points) | seeds | estimate [95% CI] | "
                  "half-width (predicted at 8 / 12 seeds) | verdict |"),
    # Amendment 40: each run's held-out KL from the base (TTRL, BCS+DAE, DDRL at both learning rates, seeds 0-9; nothing
    # trained or evaluated anew) against its held-out pass@1. Predicted: Amendment 23's registered-build runs. Its KLs:
    # python -m ddrl.study.drift export|kl ... (ddrl.study.drift_kl's docstring gives the commands)
    Design("lr_drift", 40, "amc_like", tuple(range(10)), "2026-11-29T01:00:00+00:00", (), LR_METHODS, (), {},
           {"W5": "1.0-1.4", "W6": "1.5", "W7": "~0.6", "W8": "~0.6", "W9": "~0.6"}, XEON / "lr_drift.json",
           "## Distance from the base at both learning rates on one build (plan Amendment 40)", measures=(),
           cached_ddrl=False, whole="lr_drift", results=XEON,
           header="| claim (Xeon build, AMC-like) | seeds | estimate [95% CI] | half-width (predicted) | verdict |"),
    # Amendment 41: COR alone (recomputed per seed, its held-out KL measured: python -m ddrl.study.drift kl --cor-alone,
    # ddrl.study.drift_kl.cor_alone_kl) on Amendment 40's line
    Design("cor_alone_drift", 41, SMALL_LR, tuple(range(12)), "2026-11-29T02:00:00+00:00", (), (COR_ONLY, "no_adaptation"),
           (), {}, {"Y1": "0.17-0.24", "Y2": "0.17-0.24"}, XEON / "cor_alone_drift.json",
           "## COR alone on the learning rates' line (plan Amendment 41)", measures=(), cached_ddrl=False,
           whole="cor_alone_drift", results=XEON,
           header="| claim (Xeon build, AMC-like, COR alone) | seeds | estimate [95% CI] | half-width (predicted) | "
                  "verdict |"),
    # Amendment 42: the three methods at a third learning rate (regimes_lr3.json: amc_like at lr/3, nothing else
    # changed), where the readings L and H of Amendment 40's runs differ most. Predicted at 12 / 8 seeds: per-seed SD 0.40
    Design("lr_curve", 42, "amc_like_lr3", tuple(range(12)), "2026-11-29T04:40:00+00:00", ("ddrl", "bcs_dae", "ttrl"),
           ("ddrl", "bcs_dae", "ttrl"), (), {},
           {"Z1": "0.25 / 0.33", "Z2": "0.25 / 0.33", "Z3": "~0.25 / 0.33", "Z4": "~0.25 / 0.33"},
           XEON / "lr_curve.json", "## A third learning rate between the two (plan Amendment 42)", job_per_run=False,
           measures=(), cached_ddrl=False, late_seeds=0, whole="lr_curve", results=XEON,
           header="| claim (Xeon build, AMC-like, lr/3 runs) | seeds | estimate [95% CI] | half-width (predicted 12 / 8) | "
                  "verdict |"),
    # Amendment 54: D2 at lr/10 from Amendment 28's committed DDRL step logs (no run). Predicted at 18 seeds: the
    # registered default-lr D2's per-seed SD (46 seeds)
    Design("dynamics", 54, MATH500_SMALL_LR, tuple(range(18)), None, (), ("ddrl",), (), {}, {"D2": "1.57"},
           OUT / "dynamics.json", "## Dynamics at the small learning rate (plan Amendment 54)", split="adapted",
           measures=(), cached_ddrl=False, whole="dynamics",
           header="| claim | MATH-500-like, default lr (registered) | **MATH-500-like at lr/10 (Amendment 54)** | "
                  "half-width (predicted) | verdict |"),
    # Amendments 43, 44, 46, 47: ETMR, the paper's stronger baseline, beside TTRL and DDRL at lr/10 (both learning
    # rates' levels, the vote, the RL minutes; the registered claims with the paper's numbers, M3 and P3 with Table 2's
    # differences), each to its plan's clock. Their ids are their figures' names (:func:`etmr_figure`).
    # Amendment 43: MATH-500-like, registered build, ETMR beside Amendment 28's TTRL and DDRL runs
    Design("small_lr_etmr", 43, MATH500_SMALL_LR, tuple(range(18)), "2026-11-29T08:00:00+00:00", ("etmr",),
           _ETMR_READS, ("M2",), ETMR_CLAIMS["math500_like"],
           {"M2": "2.32 / 2.21 / 2.05; 1.84 / 1.83 / 1.82", "M3": "2.17 / 2.00 / 1.76; 1.84 / 1.83 / 1.82",
            "P3": "2.53 / 2.46 / 2.36; 1.01 / 1.00 / 0.99"}, OUT / "etmr.json",
           "## DDRL against ETMR at the small learning rate (plan Amendments 43 and 44)", job_kind="A43 lr/10",
           build="registered build", level_regimes=("math500_like", MATH500_SMALL_LR),
           header=_ETMR_HEADER.format(paper="MATH-500", beside="MATH-500-like, default lr (registered)",
                                      this="registered build, MATH-500-like", a=43, at="12 / 14 / 18"), **_ETMR),
    # Amendment 44: Amendments 28 and 43 again on the Xeon build (TTRL, DDRL and ETMR at lr/10)
    Design("small_lr_etmr_xeon", 44, MATH500_SMALL_LR, tuple(range(12)), "2026-11-29T08:15:00+00:00",
           ("ttrl", "ddrl", "etmr"), _ETMR_READS, ("P1", "P2", "M1", "M2"), ETMR_CLAIMS["math500_like"],
           {"P1": "1.03 / 1.02 / 1.01; 2.49 / 2.37 / 2.29", "P2": "2.54 / 2.52 / 2.51; 2.70 / 2.64 / 2.60",
            "M1": "1.88 / 1.86 / 1.84; 1.99 / 1.79 / 1.66", "M2": "1.88 / 1.86 / 1.84; 2.70 / 2.48 / 2.32",
            "M3": "1.88 / 1.86 / 1.84; 2.73 / 2.40 / 2.17", "P3": "1.03 / 1.02 / 1.01; 2.77 / 2.63 / 2.53"},
           XEON / "small_lr_etmr.json", "### The same on the Xeon build (plan Amendment 44)", job_kind="A44 lr/10",
           results=XEON, build="Xeon build", beside=("small_lr/claims.json", "small_lr_etmr"),
           level_regimes=("math500_like", MATH500_SMALL_LR),
           header=_ETMR_HEADER.format(paper="MATH-500", beside="registered build at lr/10 (Amendments 28, 43)",
                                      this="Xeon build, MATH-500-like", a=44, at="8 / 10 / 12"), **_ETMR),
    # Amendment 46: AMC-like, Xeon build, ETMR beside Amendments 36-37's TTRL and DDRL runs
    Design("small_lr_etmr_xeon_amc", 46, SMALL_LR, tuple(range(12)), "2026-11-29T11:40:00+00:00", ("etmr",),
           _ETMR_READS, ("M2",), ETMR_CLAIMS["amc_like"],
           {"M2": "2.51 / 2.40 / 2.33 / 2.28; 4.81 / 4.16 / 3.75 / 3.47",
            "M3": "2.51 / 2.40 / 2.33 / 2.28; 4.53 / 3.84 / 3.41 / 3.10",
            "P3": "3.11 / 3.07 / 3.05 / 3.03; 3.67 / 3.46 / 3.33 / 3.24"}, XEON / "small_lr_etmr_amc.json",
           "### In AMC-like (plan Amendments 46 and 47)", job_kind="A46 lr/10", results=XEON, build="Xeon build",
           level_regimes=("amc_like", SMALL_LR),
           header=_ETMR_HEADER.format(paper="AMC", beside="AMC-like, default lr (registered)",
                                      this="Xeon build, AMC-like", a=46, at="6 / 8 / 10 / 12"), **_ETMR),
    # Amendment 47: the same on the registered build, beside Amendment 6's TTRL and DDRL runs
    Design("small_lr_etmr_amc", 47, SMALL_LR, tuple(range(19)), "2026-12-01T15:30:00+00:00", ("etmr",),
           _ETMR_READS, ("M2",), ETMR_CLAIMS["amc_like"],
           {"M2": "2.18 / 2.10 / 2.05; 4.16 / 3.47 / 3.09", "M3": "2.18 / 2.10 / 2.05; 3.84 / 3.10 / 2.68",
            "P3": "2.80 / 2.74 / 2.71; 3.46 / 3.24 / 3.12"}, OUT / "etmr_amc.json",
           "### In AMC-like (plan Amendments 46 and 47)", job_kind="A47 lr/10", build="registered build",
           level_regimes=("amc_like", SMALL_LR),
           header=_ETMR_HEADER.format(paper="AMC", beside="AMC-like, default lr (registered)",
                                      this="registered build, AMC-like", a=47, at="8 / 12 / 16"), **_ETMR),
    # Amendments 45, 48: the finished lr/10 runs on H1x's 1,536 fresh questions (one H1x job per seed, nothing
    # trained): P3x, M2x, M3x (and on the Xeon build the H1x family, Amendment 38's texts). Amendment 46's held-out
    # part was never run: its ETMR runs' weights were lost with the Xeon machine's cache (notebook 06 says so).
    # Amendment 45: ETMR's runs of Amendment 43 (the others' evaluations are Amendment 31's)
    Design("etmr_heldout", 45, MATH500_SMALL_LR, tuple(range(18)), None, ("etmr",),
           _ETMR_READS, (), ETMR_HELDOUT, {"P3x": "0.36", "M2x": "0.71", "M3x": "0.16"},
           OUT / "etmr_heldout.json", "### On fresh questions (plan Amendment 45)", finished=("etmr",),
           build="registered build", header=_ETMR_HELD_HEADER.format(name="MATH-500-like", build="registered build"),
           **_ETMR_HELD),
    # Amendment 45: every run of Amendment 44 and the untrained model, on the Xeon build
    Design("etmr_heldout_xeon", 45, MATH500_SMALL_LR, tuple(range(10)), None, ETMR_HELD_RUNS, ETMR_HELD_RUNS,
           HELDOUT_CLAIMS, ETMR_HELDOUT,
           {"H1x": "0.97 / 1.12", "H1xT": "0.38 / 0.73", "H1xD": "0.72 / 0.64", "H1xC": "0.69 / 0.49",
            "H1xR": "0.17 / 0.32", "P3x": "0.38 / 0.73", "M2x": "0.72 / 0.64", "M3x": "0.17 / 0.32"},
           XEON / "etmr_heldout.json", "### On fresh questions (plan Amendment 45)", finished=("ttrl", "etmr", "ddrl"),
           names={cid: HELDOUT_LR10[(cid, SMALL_LR)][2] for cid in HELDOUT_CLAIMS}, results=XEON, build="Xeon build",
           header=_ETMR_HELD_HEADER.format(name="MATH-500-like", build="Xeon build"), **_ETMR_HELD),
    # Amendment 48: Amendment 47's ETMR runs (on the seeds they completed before their clock) and the untrained model:
    # P3x only, the registered build's lr/10 TTRL and DDRL runs in AMC-like having no kept weights
    Design("etmr_heldout_amc", 48, SMALL_LR, tuple(range(12)), None, ("no_adaptation", "etmr"),
           ("no_adaptation", "etmr"), (), {"P3x": ETMR_HELDOUT["P3x"]}, {"P3x": "0.73 / 1.47"},
           OUT / "etmr_heldout_amc.json", "### In AMC-like (plan Amendments 46 and 47)", finished=("etmr",),
           build="registered build", header=_ETMR_HELD_HEADER.format(name="AMC-like", build="registered build"),
           **_ETMR_HELD),
    # --- COR alone (Amendments 30, 31, 34-38) ---
    # Amendments 30 and 32: at lr/10 in MATH-500-like, COR at 1e-6 from the RL-only weights of Amendment 28's DDRL runs
    # and COR alone (1e-5, from the untrained model, no RL), each one COR call; K5: DDRL at the default lr - COR alone
    # (it runs no RL: its lr/10 CSVs are that computation). Predicted at 18 x 256: K1, K2 from the lr/10 A3 matrix, K3
    # from P2's, K4 from M1's, K5 from the default-lr M1 and P2 matrices of seeds 0-17
    Design("cor_math500", 30, MATH500_SMALL_LR, tuple(range(18)), None, (COR_LR10, COR_ONLY),
           ("no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_LR10, COR_ONLY), (),
           {"K1": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (the RL-only weights)"),
            "K2": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6"),
            "K3": (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation"),
            "K4": ("ddrl", COR_ONLY, "DDRL - COR alone"), "K5": ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone")},
           {"K1": "1.84", "K2": "1.84", "K3": "2.49", "K4": "1.82", "K5": "2.08 / 3.16"}, OUT / "cor.json",
           "## COR's learning rate, and COR without RL, at the small learning rate (plan Amendments 30 and 32)",
           split="adapted", job_kind="K lr/10", measures=("levels", "cor_kept", "seed_pass1"), cached_ddrl=False,
           cor_runs=("ddrl", COR_LR10, COR_ONLY), beside=None, level_regimes=("math500_like", MATH500_SMALL_LR),
           twin_runs=("no_adaptation", "ddrl"), in_base=("K5",),
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
           cached_ddrl=False, finished=("ttrl", "ddrl"),
           measures=("levels", "seed_pass1", "reproduced"), level_name="",
           names={"H1x": "DDRL - no adaptation", "H1xT": "TTRL - no adaptation", "H1xD": "DDRL - TTRL",
                  "H1xC": "DDRL - BCS+DAE", "H1xR": "BCS+DAE - TTRL", "K3x": "COR alone (no RL) - no adaptation",
                  "K4x": "DDRL - COR alone"},
           header=_HELD_HEADER.format(where="MATH-500-like ", beside="default lr (registered)",
                                      this="lr/10 (Amendments 31, 33)", at="")),
    # --- 768 MATH-500-like questions (Amendments 26, 27) ---
    # Amendment 26: P1, P2 and M1, bound by their questions, on the stream's first 768 (the registered 256 first), the
    # rest the registered regime's; each seed's runs on one device: the CPU, or a GPU machine's imported
    # (python -m ddrl.study import wide DIR --device NAME). The device check decides whether the CPU seeds alone give
    # the verdicts (:func:`_device_check`)
    Design("wide", 26, MATH500_768, tuple(range(200, 224)), None, STAGE1_METHODS, STAGE1_METHODS, ("P1", "P2", "M1"),
           {}, {}, WIDE_OUT / "claims.json",
           "## P1, P2 and M1 on three times the questions (plan Amendment 26)", split="adapted", job_kind="wide",
           measures=(), cached_ddrl=False, whole="device_check", results=WIDE_OUT, folder="",
           header="| claim (MATH-500-like, 768 questions, adapted pass@1, points) | seeds | estimate [95% CI] | "
                  "half-width (predicted) | verdict |"),
    # Amendment 27: Amendment 25's penalised arms (the registered presets with kl_coef 0.1) on Amendment 26's CPU seeds
    # and 12 new ones (their untrained runs new too), all on this machine's CPU, against the untrained model (Q1, Q2)
    # and their own methods (Q3, Q4: the seeds with the method's run). Predicted: Q1, Q2 from the registered P1, P2
    # components at 24 x 768, Q3, Q4 from Amendment 25's L4 matrices at 12 x 768
    Design("wide_arms", 27, MATH500_768, tuple(range(200, 212)) + tuple(range(224, 236)), None,
           ("no_adaptation", *WIDE_ARMS), ("no_adaptation", *WIDE_ARMS, "ttrl", "ddrl"), (),
           {"Q1": ("ttrl_kl100x", "no_adaptation", "TTRL (100x KL) - no adaptation"),
            "Q2": ("ddrl_kl100x", "no_adaptation", "DDRL (100x KL) - no adaptation"),
            "Q3": ("ttrl_kl100x", "ttrl", "TTRL (100x KL) - TTRL"), "Q4": ("ddrl_kl100x", "ddrl", "DDRL (100x KL) - DDRL")},
           {"Q1": "1.58", "Q2": "1.86", "Q3": "0.54", "Q4": "0.97"}, WIDE_OUT / "arms.json",
           "## Do the penalised methods gain over the untrained model? (plan Amendment 27)", split="adapted",
           job_kind="wide", measures=(), cached_ddrl=False, optional=("ttrl", "ddrl"), whole="wide_arms",
           results=WIDE_OUT, folder="",
           header="| comparison (MATH-500-like, 768 questions, adapted pass@1, points) | seeds | estimate [95% CI] | "
                  "half-width (predicted) | verdict |"),
    # --- COR alone (Amendments 34-38) ---
    # Amendment 34: COR alone (one COR call from the untrained model, no RL phase) in the registered study's AMC-like
    # and AIME-like on their registered seeds, beside the registered runs (K4: the lr/10 DDRL runs against AMC-like's
    # COR alone, the same computation); its table lists the held-out claims after its own. Predicted: the committed P2
    # / M1 components at these seeds
    Design("cor_alone", 34, "amc_like", tuple(range(19)), None, (COR_ONLY,), ("no_adaptation", "ddrl", COR_ONLY), (),
           {("K3", "amc_like"): _K3, ("K5", "amc_like"): _K5, ("K4", SMALL_LR): _K4, ("K3", "aime_like"): _K3,
            ("K5", "aime_like"): _K5},
           {("K3", "amc_like"): "3.98", ("K5", "amc_like"): "1.81-3.98", ("K4", SMALL_LR): "2.03-3.93",
            ("K3", "aime_like"): "0.98", ("K5", "aime_like"): "0.00-0.98"}, RESULTS / "cor_alone" / "adapted.json",
           "## COR alone in AMC-like and AIME-like (plan Amendment 34)", split="adapted", job_kind="K cor alone",
           beside=("cor_alone_heldout",), whole="cor_alone",
           regime_seeds={"amc_like": tuple(range(19)), "aime_like": tuple(range(6))}, **_COR_ALONE),
    # ... and on H1x's fresh questions: COR alone recomputed and evaluated (the other runs' H1x CSVs exist). Predicted:
    # the H1x family's components, the smallest to the largest
    Design("cor_alone_heldout", 34, "amc_like", tuple(range(19)), None, (COR_ONLY,), ("no_adaptation", "ddrl", COR_ONLY),
           (), {("K3x", "amc_like"): _K3X, ("K5x", "amc_like"): _K5X, ("K3x", "aime_like"): _K3X,
                ("K5x", "aime_like"): _K5X},
           {("K3x", "amc_like"): "0.28-1.41", ("K5x", "amc_like"): "0.28-1.41", ("K3x", "aime_like"): "0.13-0.55",
            ("K5x", "aime_like"): "0.13-0.55"}, RESULTS / "cor_alone" / "heldout.json",
           "## COR alone on fresh questions (plan Amendment 34)", beside=None, whole="cor_alone_heldout",
           regime_seeds={"amc_like": tuple(range(19)), "aime_like": tuple(range(6))}, **_COR_ALONE),
    # Amendment 35: K3 and K4 on the c49d994e build (Amendment 6's replication, its one regime amc_like_small_lr), with
    # the untrained runs it lacked: both no-RL runs computed in that regime itself. Predicted: the registered build's
    Design("cor_alone_c49d", 35, SMALL_LR, tuple(range(19)), None, ("no_adaptation", COR_ONLY),
           ("no_adaptation", "ddrl", COR_ONLY), (), {("K3", SMALL_LR): _K3, ("K4", SMALL_LR): _K4},
           {("K3", SMALL_LR): "3.04", ("K4", SMALL_LR): "3.30"}, RESULTS / "replication_c49d" / "cor_alone.json",
           "## COR alone on the c49d994e build (plan Amendment 35)", split="adapted", job_kind="K cor alone",
           job_per_run=False, beside=None, results=RESULTS / "replication_c49d", whole="cor_alone",
           regime_seeds={SMALL_LR: tuple(range(19))}, **_COR_ALONE),
    # Amendments 36 and 37: the Xeon build (Amendment 5's replication): COR alone in AMC-like and MATH-500-like beside
    # its 12 seeds (K3, K5), and TTRL and DDRL at lr/10 from seed 0 as far as the clock allowed (Amendment 37's 18:00
    # UTC; no job there after it), K4 on their complete seeds against AMC-like's COR alone
    Design("cor_alone_xeon", 36, "amc_like", tuple(range(12)), "2026-11-28T18:00:00+00:00", (COR_ONLY,),
           ("no_adaptation", "ddrl", COR_ONLY), (),
           {("K3", "amc_like"): _K3, ("K5", "amc_like"): _K5, ("K3", "math500_like"): _K3,
            ("K5", "math500_like"): _K5, ("K4", SMALL_LR): _K4},
           {("K3", "amc_like"): "3.08", ("K5", "amc_like"): "3.95", ("K3", "math500_like"): "2.19",
            ("K5", "math500_like"): "3.51", ("K4", SMALL_LR): "3.36 / 3.62"}, XEON / "cor_alone.json",
           "## COR alone on the Xeon build (plan Amendments 36 and 37)", split="adapted", job_kind="K cor alone",
           beside=None, results=XEON, late_seeds=0, whole="cor_alone",
           regime_seeds={"amc_like": tuple(range(12)), "math500_like": tuple(range(12)), SMALL_LR: tuple(range(12))},
           regime_runs={SMALL_LR: ("ttrl", "ddrl")}, **_COR_ALONE),
    # Amendment 38: those lr/10 runs (loaded, never trained), the untrained model and COR alone (recomputed) on H1x's
    # fresh questions, one H1x job per seed, beside the registered build's default-lr AMC-like entries (K4x's: K5x).
    # Predicted at 12 x 1,536: the registered build's default-lr AMC-like matrices / its MATH-500-like lr/10 ones
    Design("cor_alone_xeon_heldout", 38, SMALL_LR, tuple(range(12)), None, COR_ALONE_RUNS, COR_ALONE_RUNS, (),
           HELDOUT_LR10, dict(zip(HELDOUT_LR10, ("1.50 / 0.96", "1.47 / 0.37", "1.25 / 0.72", "0.33 / 0.69",
                                                 "1.20 / 0.16", "0.60 / 0.78", "1.39 / 0.49"))),
           XEON / "cor_alone_heldout.json", "### Held-out, on the Xeon build (plan Amendment 38)", job_per_run=False,
           finished=("ttrl", "ddrl"), beside=("claims.json", "cor_alone_heldout"), results=XEON,
           whole="cor_alone_heldout", regime_seeds={SMALL_LR: tuple(range(12))},
           **{**_COR_ALONE, "header": "| claim (held-out pass@1, points) | registered build, default lr, AMC-like | "
                                     "**the Xeon build's runs, Amendment 38** | half-width (predicted) | verdict |"}),
    # --- policy drift (Amendments 21-25) and the registered analyses ---
    # Amendments 21-25 (ddrl.study.drift; their runs: python -m ddrl.study.drift run|export|kl): X1-X4 (late KL) and
    # the addendum's X2h-X4h (held-out KL), BCS against its random negatives; then each arm of a set against its method
    # (Amendment 22: BCS's KL-penalty doses, K1-K3; 23, 24: TTRL and DDRL against BCS, Z1-Z4; 25: TTRL and DDRL with
    # the 100x penalty against themselves, L1-L4). One row per results/drift/<stem>.json, its id drift_<stem>
    *(Design(f"drift_{stem}", a, regime, tuple(seeds), None, (), PAIR if pairs in ("kl_late", "kl_heldout") else
             arm_methods(pairs), (), {}, {}, RESULTS / "drift" / f"{stem}.json",
             f"## What costs held-out accuracy: the distance from the base (plan Amendment {a})", measures=(),
             cached_ddrl=False, whole="drift", folder=folder, drift=pairs,
             drift_dir=RESULTS / "drift" / "exploratory" if folder == "runs" else None, exploratory=exploratory)
      for stem, a, regime, seeds, folder, pairs, exploratory in (
          ("amc_like_exploratory", 21, "amc_like", range(19), "runs", "kl_late", True),
          ("amc_like_gpu", 21, "amc_like", range(100, 132), "drift/gpu", "kl_late", False),
          ("amc_like_cpu", 21, "amc_like", range(100, 132), "drift/cpu", "kl_late", False),
          ("amc_like_exploratory_heldout_kl", 21, "amc_like", range(19), "runs", "kl_heldout", False),
          ("amc_like_cpu_heldout_kl", 21, "amc_like", range(100, 132), "drift/cpu", "kl_heldout", False),
          ("amc_like_cpu_kl_dose", 22, "amc_like", range(100, 116), "drift/cpu", "dose", False),
          ("amc_like_gpu_methods", 23, "amc_like", range(100, 116), "drift/gpu_methods", "methods", False),
          ("amc_like_cpu_methods", 23, "amc_like", range(100, 116), "drift/cpu", "methods", False),
          ("math500_like_cpu_methods", 24, "math500_like", range(100, 132), "drift/cpu", "methods", False),
          ("amc_like_cpu_penalty", 25, "amc_like", range(100, 116), "drift/cpu", "penalty", False),
          ("math500_like_cpu_penalty", 25, "math500_like", range(100, 111), "drift/cpu", "penalty", False))),
    # The registered analysis (plan Sec. 1-6; python -m ddrl.study --analyse claims computes it too, and draws its
    # scorecard) and its replications on other builds (Amendments 5, 6), each of its own results tree. Their status:
    # M1's pair in the build's first regime
    *(Design(name, a, regime, tuple(range(n)), None, (), ("ttrl", "ddrl"), (), {}, {}, root / "claims.json",
             f"## The registered claims on the {build or 'registered build'}", measures=(), cached_ddrl=False,
             results=root, build=build, whole="claims")
      for name, a, root, regime, n, build in (("claims", 0, RESULTS, "amc_like", 19, None),
                                              ("claims_xeon", 5, XEON, "amc_like", 12, "Xeon build"),
                                              ("claims_c49d", 6, RESULTS / "replication_c49d", SMALL_LR, 19,
                                               "c49d994e build"))),
    # --- MATH-500-like at lr/10, Table 1, COR 4x at 1e-6 (Amendments 28, 49-51, 62) ---
    # Amendment 28: P1, P2 and M1 in MATH-500-like under the registered lr/10 rule (its regime: python -m ddrl.study
    # --small-lr-regime), each seed's untrained run the registered MATH-500-like one. Predicted at 18 seeds x 256
    # questions: (registered MATH-500-like components, AMC-like lr/10's)
    Design("small_lr", 28, MATH500_SMALL_LR, tuple(range(18)), None, ("ttrl", "ddrl"), ("no_adaptation", "ttrl", "ddrl"),
           ("P1", "P2", "M1"), {}, {"P1": "2.42 / 1.92", "P2": "3.07 / 2.80", "M1": "1.98 / 1.45"}, OUT / "claims.json",
           "## The main table at the paper's small learning rate (plan Amendment 28)", split="adapted",
           job_kind="lr/10m", measures=("levels", "seed_pass1", "vote"), cached_ddrl=False, paper=True,
           level_regimes=("math500_like", MATH500_SMALL_LR), beside_regimes=("math500_like", SMALL_LR),
           header="| claim (adapted pass@1, points) | paper (MATH-500) | MATH-500-like, default lr (registered) | "
                  "AMC-like at lr/10 (registered) | **MATH-500-like at lr/10 (Amendment 28)** | half-width (predicted) | "
                  "verdict |",
           level_header="| method | learning rate | adapted pass@1, mean over seeds (SD) | seeds below their untrained "
                        "run |"),
    # Amendment 49: Table 1 (T1: TTRL without GRPO's std division - TTRL) at lr/10, grpo_no_std a new run per seed
    # against Amendment 28's TTRL runs. Predicted at 12 seeds: (registered MATH-500-like T1, Amendment 28's M1,
    # Amendment 29's A1)
    Design("table1", 49, MATH500_SMALL_LR, tuple(range(12)), None, ("grpo_no_std", "ttrl"), ("ttrl", "grpo_no_std"),
           ("T1",), {}, {"T1": "1.10 / 1.84 / 0.46"}, OUT / "table1.json",
           "## Table 1 at the small learning rate (plan Amendment 49)", split="adapted", job_kind="T1 lr/10",
           measures=("levels", "vote"), cached_ddrl=False, reference="ttrl", paper=True,
           names={"T1": "TTRL without the std division - TTRL"}, level_regimes=("math500_like", MATH500_SMALL_LR),
           level_header=_T1_LEVELS,
           header=_LR10_HEADER.format(what=" (adapted pass@1, points)", bench="MATH-500", name="MATH-500-like", n=49)),
    # Amendment 50: T1f, Table 1 as the paper's text reads it (fixed +1/-1 advantages, preset dae, against TTRL) at
    # both learning rates, its CSVs under runs/table1_fixed/, its TTRL partners the committed runs. Predicted at 12
    # seeds, per regime: (the registered T1, A2) at the default lr, (Amendment 28's M1, 29's A2) at lr/10
    Design("table1_fixed", 50, "math500_like", tuple(range(12)), None, ("dae",), ("ttrl", "grpo_no_std", "dae"), (),
           {}, {"math500_like": "1.10 / 0.95", MATH500_SMALL_LR: "1.84 / 0.13"}, OUT / "table1_fixed.json",
           "## Table 1 as the paper's text reads it (plan Amendment 50)", split="adapted", job_kind="T1f",
           measures=(), cached_ddrl=False, reference="ttrl", optional=("grpo_no_std",),
           level_regimes=("math500_like", MATH500_SMALL_LR), level_header=_T1_LEVELS, whole="t1f",
           job_regimes=("math500_like", MATH500_SMALL_LR), csv_dir=T1F_DIR, header=_T1F_HEADER),
    # Amendment 51: T1f at the default lr on the fresh seeds 12-45, its verdict on them alone (Amendment 50's seeds
    # pooled beside, descriptive); its table is Amendment 50's with its row. Predicted at 34 seeds: (Amendment 50's
    # T1f matrix, the registered T1 matrix)
    Design("table1_fixed_more", 51, "math500_like", tuple(range(12, 46)), None, ("dae",), ("ttrl", "grpo_no_std", "dae"),
           (), {}, {"T1f": "1.28 / 0.69"}, OUT / "table1_fixed_more.json",
           "## Table 1 as the paper's text reads it, on fresh seeds (plan Amendment 51)", split="adapted",
           job_kind="T1f", measures=(), cached_ddrl=False, reference="ttrl", optional=("grpo_no_std",),
           level_regimes=("math500_like",), level_header=_T1_LEVELS, whole="t1f", csv_dir=T1F_DIR,
           header=_T1F_HEADER),
    # Amendment 62: COR keeping 4x the rollouts at a tenth of its rate, from the cached RL-only weights (Amendments
    # 55, 59), on the adapted questions, then on H1x's fresh ones; COR's size x rate square. Predicted at 6 / 10
    # seeds, each from two committed lr/10 matrices of the same regime
    Design("cor4x_lr10_amc", 62, SMALL_LR, tuple(range(10)), "2026-12-03T20:05:00+00:00", (COR_4X_LR10,),
           COR_TRADE_RUNS[HELDOUT_X], (), {},
           {"K1g": "0.42 / 0.36, 1.97 / 1.87", "R1g": "1.44 / 1.41, 0.42 / 0.36", "K1gx": "0.15 / 0.12, 0.56 / 0.50",
            "R1gx": "0.53 / 0.51, 0.15 / 0.12"}, OUT / "cor4x_lr10_amc.json",
           "## COR keeping 4x the rollouts at a tenth of its rate, at the small learning rate (plan Amendment 62)",
           job_kind="R1g lr/10 (A62)", measures=(), whole="cor_trade", header=_COR_TRADE_HEADER.format("AMC-like")),
    Design("cor4x_lr10_math500", 62, MATH500_SMALL_LR, tuple(range(10)), "2026-12-03T20:25:00+00:00", (COR_4X_LR10,),
           COR_TRADE_RUNS[HELDOUT_X], (), {},
           {"K1g": "0.59 / 0.55, 1.96 / 1.91", "R1g": "1.04 / 1.01, 0.59 / 0.55", "K1gx": "0.20 / 0.18, 0.71 / 0.70",
            "R1gx": "0.67 / 0.64, 0.20 / 0.18"}, OUT / "cor4x_lr10_math500.json",
           "### In MATH-500-like (plan Amendment 62)",
           job_kind="R1g lr/10 (A62)", measures=(), whole="cor_trade", header=_COR_TRADE_HEADER.format("MATH-500-like")),
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
    (:func:`check_rows`)."""
    return {"check": check_rows(r.out, CHECK, r.seeds, d.regime, HELDOUT_X)}


def _cor_kept(d: Design, r: Reading) -> dict:
    """COR's mean kept rollouts per run of :attr:`Design.cor_runs` over the seeds (adapted rows)."""
    own = r.df[(r.df.split == "adapted") & (r.df.regime == d.regime)]
    kept = own.drop_duplicates(["method", "seed"]).groupby("method", sort=False)["cor_kept"]
    return {"cor_kept": {m: float(kept.mean()[m]) for m in d.cor_runs}}


AGAIN = "ddrl_again"  # the retrain check's name for a retrained DDRL run's steps, beside the committed run's


def retrain_check(out: str | Path, check: str | Path, seeds: Sequence[int], regime: str) -> dict | None:
    """The repeat check of retrained DDRL runs, or None before every re-evaluation is written: Amendment 56's
    description (:func:`check_rows`: questions and whole seeds whose re-evaluated
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
    """The repeat check of cached DDRL runs evaluated again (:func:`check_rows`)."""
    return {"check": check_rows(r.out, CHECK, r.seeds, d.regime)}


def _levels(d: Design, r: Reading) -> dict:
    """Each run's mean pass@1 on the split over the seeds, its SD and the seeds below :attr:`Design.reference`'s run
    (:func:`~ddrl.study.analysis.level_table`): by run, or per regime of :attr:`Design.level_regimes` (against
    an untrained reference, one computation, across them)."""
    per = run_levels(r.df[r.df.seed.isin(r.seeds)], d.split)
    if not d.level_regimes:
        return {"levels": level_table(per, ("method",), d.reference, sort=False).to_dict(orient="records")}
    parts = [per] if d.reference in NO_RL else [per[per.regime == g] for g in d.level_regimes]  # untrained: every lr's
    return {"levels": pd.concat([level_table(p, ("regime", "method"), d.reference, sort=False) for p in parts],
                                ignore_index=True).to_dict(orient="records")}


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


# The learning rate (Amendments 39-42, 54): analyses that pair no two runs of one regime (a run across learning rates,
# against its held-out KL, fits, step logs), each the whole analysis of its design (:attr:`Design.whole`), with its
# table in :data:`TABLES`; they read the seeds complete among the design's, at least a few

#: Amendment 39: held-out pass@1 of the method's lr/10 run minus its default-lr run, same seed and fresh question
#: (one build, one evaluation stream per seed), sign +1 (lr/10 keeps more), margin 1 point
LR_HELDOUT = {"LxT": ("ttrl", "TTRL at lr/10 - TTRL at the default lr, held-out"),
              "LxD": ("ddrl", "DDRL at lr/10 - DDRL at the default lr, held-out")}
#: Amendment 40: id -> (what, kind, method or None, expected sign, margin). Kinds: "dist" the held-out KL at lr/10 minus
#: the default lr, paired by seed (1e-3 nats/token); "slope" held-out pass@1 per 1e-3 of held-out KL within learning
#: rates (the three methods' runs, one intercept per learning rate); "adjusted" a group minus the default-lr runs at
#: equal held-out KL; "residual" the method's lr/10 held-out gain minus x3h_slope() x its distance difference (points)
LR_DRIFT = {
    "W1": ("held-out KL, TTRL at lr/10 - TTRL at the default lr [1e-3 nats/token]", "dist", "ttrl", -1, 0.0),
    "W2": ("held-out KL, BCS+DAE at lr/10 - BCS+DAE at the default lr [1e-3 nats/token]", "dist", "bcs_dae", -1, 0.0),
    "W3": ("held-out KL, DDRL at lr/10 - DDRL at the default lr [1e-3 nats/token]", "dist", "ddrl", -1, 0.0),
    "W4": ("held-out pass@1 per 1e-3 of held-out KL, within learning rates [points]", "slope", None, -1, 0.0),
    "W5": ("held-out pass@1 at equal held-out KL, lr/10 runs - default-lr runs [points]", "adjusted", "lr10", 0, 1.0),
    "W6": ("held-out pass@1 at zero held-out KL, untrained model - default-lr runs' line [points]", "adjusted", "none",
           0, 1.0),
    "W7": ("held-out gain of TTRL at lr/10 minus the registered slope x its KL difference [points]", "residual", "ttrl",
           0, 1.0),
    "W8": ("held-out gain of BCS+DAE at lr/10 minus the registered slope x its KL difference [points]", "residual",
           "bcs_dae", 0, 1.0),
    "W9": ("held-out gain of DDRL at lr/10 minus the registered slope x its KL difference [points]", "residual", "ddrl",
           0, 1.0),
}
#: Amendment 41: id -> (what, slope: "registered" = Amendment 21's X3h, "w4" = this build's W4); null claims (sign 0,
#: margin 1): COR alone lies on the RL runs' line through the untrained model
COR_DRIFT = {"Y1": ("held-out pass@1, COR alone - (untrained + registered slope x COR alone's held-out KL) [points]",
                    "registered"),
             "Y2": ("held-out pass@1, COR alone - (untrained + this build's slope W4 x COR alone's held-out KL) "
                    "[points]", "w4")}
#: Amendment 42: id -> (what, kind, line, expected sign, margin). "mid": the run's gain above the midpoint of H and the
#: named line (L, or R = Amendment 21's registered X3h); "resid": the run's gain minus the named reading; per seed the
#: three runs' mean
LR_CURVE = {
    "Z1": ("held-out gain minus the midpoint of H (free start) and L (line through the base) at the run's KL [points]",
           "mid", "L", +1, 0.0),
    "Z2": ("held-out gain minus the midpoint of H and R (the registered slope X3h through the base) [points]", "mid",
           "R", +1, 0.0),
    "Z3": ("held-out gain minus H (free start, then a line) at the run's KL [points]", "resid", "H", 0, 1.0),
    "Z4": ("held-out gain minus L (straight line through the base) at the run's KL [points]", "resid", "L", 0, 1.0),
}
LR_GROUPS = {"amc_like": "default", "amc_like_lr3": "lr3", SMALL_LR: "lr10"}  # regime -> its learning rate's group
#: Amendment 54: the descriptive runs beside the decided ones, each (regime, seeds); Fig. 4 has no AMC panel
DYNAMICS_DESCRIBED = (("math500_like", tuple(range(46))), (SMALL_LR, tuple(range(19))), ("amc_like", tuple(range(19))))


def _written(d: Design, r: Reading, written: Callable[[int], bool], least: int) -> list[int]:
    """The seeds among the reading's with every file the analysis reads (``written``), or a ValueError below
    ``least``."""
    seeds = [s for s in r.seeds if written(s)]
    if len(seeds) < least:
        raise ValueError(f"{r.out}: {d.tag} reads seeds with every file written (at least {least}); seeds {r.seeds}, "
                         f"complete {seeds}")
    return seeds


def _t_entry(cid: str, regime: str, metric: str, sign: int, margin: float, r: dict, n_seeds: int) -> dict:
    """A claim's entry from its estimate and interval ``r`` (t interval over seeds), with the registered verdict."""
    return {"id": cid, "regime": regime, "metric": metric, "expected_sign": sign, "estimate": r["estimate"],
            "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n_seeds": n_seeds,
            "verdict": verdict(r["ci_low"], r["ci_high"], sign, margin)}


def across_lr(df: pd.DataFrame, method: str, default: str) -> pd.DataFrame:
    """Seeds x questions (points): ``method``'s lr/10 run minus its run in ``default``, same seed and question."""
    a = df[df.split == HELDOUT_X]

    def pivot(regime: str) -> pd.DataFrame:
        return a[(a.regime == regime) & (a.method == method)].pivot(index="seed", columns="question", values="pass@1")

    small, base = pivot(SMALL_LR), pivot(default)
    if not (small.index.equals(base.index) and small.columns.equals(base.columns)):
        raise ValueError(f"{method}: the lr/10 and default-lr runs cover other seeds or questions")
    return 100 * (small - base)


def _lr_heldout(d: Design, r: Reading) -> dict:
    """Amendment 39: :data:`LR_HELDOUT` (``half_width`` added); descriptive, each run's held-out pass@1 over the seeds
    at both learning rates (``levels``, ``seed_pass1``) and how many retrained default-lr runs' adapted rows equal
    Amendment 5's committed CSVs (``registered_reproduced`` of ``registered_checked``)."""
    reads = ((d.regime, HELDOUT_X_METHODS), (SMALL_LR, tuple(m for m, _ in LR_HELDOUT.values())))
    paths = lambda s: [heldout_x_path(r.out, g, m, s) for g, ms in reads for m in ms]
    seeds = _written(d, r, lambda s: all(p.is_file() for p in paths(s)), 2)
    df = pd.concat([pd.read_csv(heldout_x_path(r.out, g, m, s), dtype={"question": str})
                    for g, ms in reads for m in ms for s in seeds], ignore_index=True)
    entries = [amendment_entry(cid, d.regime, what, f"held-out pass@1, {what} [points]", f"{m} ({SMALL_LR})",
                               f"{m} ({d.regime})", across_lr(df, m, d.regime).to_numpy(), MARGIN, r.n_boot)
               for cid, (m, what) in LR_HELDOUT.items()]
    per = run_levels(df, HELDOUT_X)
    lv = level_table(per, ("regime", "method"), sort=False)  # the untrained run (default regime) is every row's reference
    trained = df[df.regime == d.regime].drop_duplicates(["method", "seed"])
    return {"seeds": seeds, "entries": with_half_width(entries), "levels": lv.to_dict(orient="records"),
            "seed_pass1": per.to_dict(orient="records"), **reproduced_counts(trained)}


def untrained_rows(out: str | Path, regime: str) -> pd.DataFrame:
    """The untrained model's rows of a drift table: per seed of its H1x CSVs in ``regime``, its held-out pass@1
    (points), ``lr`` "none" and held-out KL 0 (its distance from itself)."""
    base = heldout_rows(out, regime, ("no_adaptation",)).groupby("seed")["accuracy"].mean()
    return pd.DataFrame({"method": "no_adaptation", "seed": base.index, "heldout": base.to_numpy(), "kl_heldout": 0.0,
                         "lr": "none"})


def heldout_gains(runs: pd.DataFrame) -> pd.DataFrame:
    """The trained runs of a drift table (``lr`` not "none"), each with ``gain``: its held-out pass@1 minus its seed's
    untrained model's (points)."""
    base = runs[runs["lr"] == "none"].set_index("seed")["heldout"]
    rl = runs[runs["lr"] != "none"]
    return rl.assign(gain=rl["heldout"] - base.loc[rl["seed"]].to_numpy()).reset_index(drop=True)


def _kl_dir(r: Reading) -> Path:
    """Where Amendments 40-42's held-out KLs and step CSVs lie: ``lr_drift`` beside the runs' folder."""
    return Path(r.out).parent / "lr_drift"


def _lr_drift(d: Design, r: Reading) -> dict:
    """Amendment 40: :data:`LR_DRIFT`, each with its verdict (Sec. 4's rule, its sign and margin) and ``half_width``;
    descriptive: each group's mean held-out pass@1 and KL, and per method the slope-predicted gain beside the measured
    one. Every run's held-out KL (:func:`ddrl.study.drift_kl.heldout_kl`) against its held-out pass@1."""
    groups = {g: lr for g, lr in LR_GROUPS.items() if g in (d.regime, SMALL_LR)}
    dest = _kl_dir(r)
    seeds = _written(d, r, lambda s: all(drift_path(dest, g, m, s, "kl").is_file() for g in groups
                                          for m in LR_METHODS), 3)
    t = pd.concat([*(seed_table(r.out, g, LR_METHODS, dest).assign(lr=lr) for g, lr in groups.items()),
                   untrained_rows(r.out, d.regime)], ignore_index=True)
    t = t[t["seed"].isin(seeds)].reset_index(drop=True)
    slope = x3h_slope()
    wide = t[t["lr"] != "none"].pivot_table(index=["method", "seed"], columns="lr", values=["heldout", "kl_heldout"])
    by_lr = t.assign(method=t["lr"])  # kl_fit's groups: the learning rate (the three methods' runs pooled)
    fit = kl_fit(by_lr[by_lr["lr"] != "none"], "lr10", "default", x="kl_heldout")
    entries, gains = [], []
    for cid, (what, kind, m, sign, margin) in LR_DRIFT.items():
        if kind in ("dist", "residual"):
            w = wide.loc[m]
            dk = w[("kl_heldout", "lr10")] - w[("kl_heldout", "default")]
            dh = w[("heldout", "lr10")] - w[("heldout", "default")]
            x = paired_t(dk if kind == "dist" else dh - slope * dk)
            if kind == "residual":
                gains.append({"method": m, "measured_gain": float(dh.mean()), "predicted_gain": float(slope * dk.mean()),
                              "kl_difference": float(dk.mean())})
        elif kind == "slope":
            x = fit["slope"]
        else:
            x = fit["adjusted"] if m == "lr10" else kl_fit(by_lr[by_lr["lr"] != "lr10"], "none", "default",
                                                           x="kl_heldout")["adjusted"]
        entries.append(_t_entry(cid, d.regime, what, sign, margin, x, len(seeds)))
    levels = t.groupby(["lr", "method"], sort=False)[["heldout", "kl_heldout"]].agg(["mean", "std"])
    levels.columns = [f"{a}_{b}" for a, b in levels.columns]
    return {"seeds": seeds, "registered_slope": slope, "entries": with_half_width(entries), "gains": gains,
            "levels": levels.reset_index().to_dict(orient="records"), "runs": t.to_dict(orient="records")}


def _cor_drift(d: Design, r: Reading) -> dict:
    """Amendment 41: :data:`COR_DRIFT` (each seed's measured JSON must reproduce its committed adapted rows): per seed,
    COR alone's held-out pass@1 minus the untrained model's minus slope x its KL (paired t), with the slopes (W4 from
    Amendment 40's committed analysis); descriptive, the mean KL and held-out difference, and Amendment 40's RL runs
    measured the same way (added after Y1, Y2 were read)."""
    kl_json = lambda s: drift_path(_kl_dir(r), "amc_like", COR_ONLY, s, "kl")
    seeds = _written(d, r, lambda s: kl_json(s).is_file(), 3)
    recs = {s: json.loads(kl_json(s).read_text()) for s in seeds}
    if not all(x["adapted_reproduced"] for x in recs.values()):
        raise ValueError(f"{r.out}: {d.tag} reads seeds each reproducing its committed adapted rows; seeds {seeds}")
    held = heldout_rows(r.out, d.regime, (COR_ONLY, "no_adaptation")).groupby(["method", "seed"])["accuracy"].mean()
    kl = pd.Series({s: x["kl"] for s, x in recs.items()})
    gain = pd.Series({s: held[COR_ONLY, s] - held["no_adaptation", s] for s in seeds})
    a40 = json.loads((Path(r.out).parent / "lr_drift.json").read_text())
    slopes = {"registered": x3h_slope(), "w4": next(e for e in a40["entries"] if e["id"] == "W4")["estimate"]}
    rl = heldout_gains(pd.DataFrame(a40["runs"]))
    rl = rl.assign(resid=rl["gain"] - slopes["registered"] * rl["kl_heldout"])
    beside = rl.groupby(["lr", "method"], sort=False).agg(kl=("kl_heldout", "mean"), residual=("resid", "mean"),
                                                          residual_sd=("resid", "std")).reset_index()
    entries = [_t_entry(cid, d.regime, what, 0, 1.0, paired_t(gain - slopes[which] * kl), len(seeds))
               for cid, (what, which) in COR_DRIFT.items()]
    return {"seeds": seeds, "slopes": slopes, "entries": with_half_width(entries), "kl_mean": float(kl.mean()),
            "kl_sd": float(kl.std()), "heldout_gain_mean": float(gain.mean()),
            "rl_beside": beside.to_dict(orient="records"),
            "runs": [{"seed": s, "kl_heldout": float(kl[s]), "heldout": float(held[COR_ONLY, s]),
                      "heldout_gain": float(gain[s])} for s in seeds]}


def fit_readings(runs: pd.DataFrame) -> dict:
    """L and H by least squares on ``runs`` (:func:`heldout_gains`' frame): L's slope through the origin; H's (k0, b)
    of g = -b max(0, k - k0), from the start (3, 0.4); with each one's residual sum of squares. On Amendment 40's runs
    this gives the registered :data:`ddrl.study.drift.LINE`, ``HINGE_K0``, ``HINGE_B`` (tested)."""
    k, g = runs["kl_heldout"].to_numpy(float), runs["gain"].to_numpy(float)
    line = float(k @ g / (k @ k))
    fit = least_squares(lambda p: g + p[1] * np.maximum(0.0, k - p[0]), [3.0, 0.4])
    return {"line": line, "hinge_k0": float(fit.x[0]), "hinge_b": float(fit.x[1]),
            "rss_line": float(((g - line * k) ** 2).sum()), "rss_hinge": float((fit.fun ** 2).sum())}


def amendment40_runs(xeon: str | Path = RESULTS / "replication_xeon") -> pd.DataFrame:
    """Amendment 40's committed runs (``lr_drift.json``) with their held-out gains."""
    return heldout_gains(pd.DataFrame(json.loads((Path(xeon) / "lr_drift.json").read_text())["runs"]))


def _lr_curve(d: Design, r: Reading) -> dict:
    """Amendment 42: :data:`LR_CURVE`, paired t over seeds of the three runs' mean; descriptive: the refit of both
    readings on Amendment 40's runs, each reading's RMSE on the new runs, held-out KL and gain per learning rate and
    method, and adapted beside held-out gain. The lr/3 runs' gain is over Amendment 38's untrained model (the same
    weights, questions and stream: ``heldout_x/amc_like_small_lr/no_adaptation``)."""
    dest = _kl_dir(r)
    seeds = _written(d, r, lambda s: all(drift_path(dest, d.regime, m, s, "kl").is_file() and
                                          heldout_x_path(r.out, d.regime, m, s).is_file() for m in LR_METHODS), 5)
    new = pd.concat([seed_table(r.out, d.regime, d.methods, dest).assign(lr=LR_GROUPS[d.regime]),
                     untrained_rows(r.out, SMALL_LR)], ignore_index=True)
    new = heldout_gains(new[new["seed"].isin(seeds)])
    k = new["kl_heldout"].to_numpy(float)
    per_run = new.assign(**{f"pred_{x}": reading(x, k) for x in "LRH"})
    entries = []
    for cid, (what, kind, line, sign, margin) in LR_CURVE.items():
        x = per_run["gain"] - (per_run[f"pred_{line}"] + per_run["pred_H"]) / 2 if kind == "mid" else \
            per_run["gain"] - per_run[f"pred_{line}"]
        entries.append(_t_entry(cid, d.regime, what, sign, margin, paired_t(x.groupby(per_run["seed"]).mean()
                                                                             .to_numpy()), len(seeds)))
    old = amendment40_runs(Path(r.out).parent)
    both = pd.concat([old, new], ignore_index=True)
    levels = both.groupby(["lr", "method"], sort=False).agg(
        kl_mean=("kl_heldout", "mean"), kl_sd=("kl_heldout", "std"), gain_mean=("gain", "mean"),
        gain_sd=("gain", "std"), n=("seed", "nunique")).reset_index()
    rows = []  # adapted pass@1 (points) of every run at the three learning rates and of the untrained model
    for g, lr, methods in (("amc_like", "none", ("no_adaptation",)), *((g, lr, d.methods) for g, lr in LR_GROUPS.items())):
        for m in methods:
            for s in sorted(set(seeds) | set(old["seed"])):
                p = adapted_x_path(r.out, g, m, s)  # the H1x run's kept adapted rows, else its study CSV
                p = p if p.is_file() else csv_path(r.out, g, m, s)
                if p.is_file():
                    x = pd.read_csv(p)
                    rows.append({"lr": lr, "method": m, "seed": s,
                                 "adapted": 100 * x.loc[x["split"] == "adapted", "pass@1"].mean()})
    ad = pd.DataFrame(rows, columns=["lr", "method", "seed", "adapted"])
    base = ad[ad["lr"] == "none"].set_index("seed")["adapted"]
    ad = ad[ad["lr"] != "none"]
    ad = ad.assign(adapted_gain=ad["adapted"] - base.loc[ad["seed"]].to_numpy())
    ad = ad.merge(both[["lr", "method", "seed", "gain"]], on=["lr", "method", "seed"])
    trade = ad.groupby(["lr", "method"], sort=False).agg(
        adapted_gain=("adapted_gain", "mean"), adapted_gain_sd=("adapted_gain", "std"),
        heldout_gain=("gain", "mean"), n=("seed", "nunique")).reset_index()
    rmse = {x: float(np.sqrt(((per_run["gain"] - per_run[f"pred_{x}"]) ** 2).mean())) for x in "LRH"}
    return {"seeds": seeds, "readings": {"L": LINE, "R": x3h_slope(), "H": [HINGE_K0, HINGE_B]},
            "refit": fit_readings(old), "entries": with_half_width(entries), "rmse": rmse,
            "levels": levels.to_dict(orient="records"), "tradeoff": trade.to_dict(orient="records"),
            "runs": per_run.to_dict(orient="records")}


def advantage_runs(out: str | Path, regime: str, seeds: Sequence[int]) -> pd.DataFrame:
    """Per DDRL run of ``regime``: ``d2`` (:func:`~ddrl.report.stats.advantage_statistic`), the first and the last
    quarter's mean advantage x 100 (``first``, ``last``: the claim's "from negative to positive") and the RL steps. A
    missing step log is an error naming it: every run here is committed."""
    rows = []
    for s in seeds:
        p = csv_path(out, regime, "ddrl", s, steps=True)
        if not p.is_file():
            raise FileNotFoundError(f"{p}: the committed DDRL step log of seed {s} in {regime} is missing")
        st = pd.read_csv(p)
        adv = st[st.phase == "rl"].sort_values("step")["adv/mean"].to_numpy(dtype=float)
        first, last = advantage_quarters(adv)
        rows.append({"regime": regime, "seed": int(s), "steps": len(adv), "d2": advantage_statistic("D2", adv),
                     "first": first, "last": last})
    return pd.DataFrame(rows)


def advantage_summary(per: pd.DataFrame) -> dict:
    """One regime's runs as Amendment 54's table reads them: D2's mean and t-interval over seeds, the quarters' means
    and how many runs start below 0 and end above it."""
    est, lo, hi = mean_ci(per.d2)
    return {"regime": per.regime.iloc[0], "n_seeds": len(per), "steps": int(per.steps.iloc[0]), "estimate": est,
            "ci_low": lo, "ci_high": hi, "first": float(per["first"].mean()), "last": float(per["last"].mean()),
            "first_below_0": int((per["first"] < 0).sum()), "last_above_0": int((per["last"] > 0).sum())}


def _dynamics(d: Design, r: Reading) -> dict:
    """Amendment 54: D2 (the registered statistic, sign, margin and rule) on the design's DDRL runs from their
    committed step logs (``entries``), ``summary`` (every regime's runs, the decided one first, then
    :data:`DYNAMICS_DESCRIBED`) and ``runs`` (each run's statistics)."""
    per = [advantage_runs(r.out, g, s) for g, s in ((d.regime, r.seeds), *DYNAMICS_DESCRIBED)]
    n_q = pd.read_csv(csv_path(r.out, d.regime, "ddrl", r.seeds[0]), dtype={"question": str}).query(
        "split == 'adapted'").question.nunique()
    head = advantage_summary(per[0])
    d2 = {**entry("D2", SAME_BASE[d.regime], head["estimate"], head["ci_low"], head["ci_high"], len(r.seeds), n_q),
          "regime": d.regime}
    return {"entries": with_half_width(validate([d2], d.regime)), "summary": [advantage_summary(p) for p in per],
            "runs": pd.concat(per, ignore_index=True).to_dict(orient="records")}


def _claims_table(d: Design, res: dict, text: Callable[[dict], str]) -> list[str]:
    return [d.header, "|---|---|---|---|---|", *(claim_row(e, text(e), d.predicted.get(e["id"], "-"))
                                                  for e in res["entries"])]


def _lr_heldout_table(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """The claims and each run's held-out level at both learning rates."""
    rows = _claims_table(d, res, lambda e: e["claim"])
    rows += ["", "| method | learning rate | held-out pass@1, mean over seeds (SD) | seeds below the untrained run |",
             "|---|---|---|---|"]
    rows += [f"| {r['method']} | {'-' if r['method'] == 'no_adaptation' else LR_CELL[r['regime']]} | {r['pass1']:.1f} "
             f"({r['sd']:.1f}) | {below_cell(r)} |" for r in res["levels"]]
    return "\n".join(rows) + "\n"


def _lr_drift_table(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """The claims, and each group's held-out pass@1 and distance."""
    rows = _claims_table(d, res, lambda e: e["metric"])
    rows += ["", "| learning rate | method | held-out pass@1, mean (SD) | held-out KL [1e-3 nats/token], mean (SD) |",
             "|---|---|---|---|"]
    rows += [f"| {r['lr']} | {r['method']} | {r['heldout_mean']:.1f} ({r['heldout_std']:.1f}) | "
             f"{r['kl_heldout_mean']:.1f} ({r['kl_heldout_std']:.1f}) |" for r in res["levels"]]
    return "\n".join(rows) + "\n"


def _cor_drift_table(d: Design, cor: dict, beside: Sequence[dict]) -> str:
    """Amendment 41's claims and COR alone's distance and held-out gain, Amendment 40's RL runs beside."""
    rows = _claims_table(d, cor, lambda e: e["metric"])
    rows += ["", f"COR alone's held-out KL: {cor['kl_mean']:.2f} (SD {cor['kl_sd']:.2f}) x 1e-3 nats/token; its held-out "
             f"gain over the untrained model: {cor['heldout_gain_mean']:+.2f} points (mean over {len(cor['seeds'])} seeds).",
             "", "| runs (descriptive, Y1's measure) | held-out KL, mean | held-out pass@1 - (untrained + X3h x KL), mean (SD) |",
             "|---|---|---|", f"| COR alone | {cor['kl_mean']:.2f} | {cor['entries'][0]['estimate']:+.2f} |"]
    rows += [f"| {r['method']} at {LR_LABELS[r['lr']]} | {r['kl']:.2f} | {r['residual']:+.2f} ({r['residual_sd']:.2f}) |"
             for r in cor["rl_beside"]]
    return "\n".join(rows) + "\n"


def _lr_curve_table(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """The claims, each reading's error on the new runs, and the three learning rates' distance, held-out and adapted
    gains."""
    rows = _claims_table(d, res, lambda e: e["metric"])
    r = res["rmse"]
    rows += ["", f"Root-mean-square error on the {len(res['runs'])} new runs (points): H {r['H']:.2f}, L {r['L']:.2f}, "
             f"R {r['R']:.2f}.", "",
             "| learning rate | method | seeds | held-out KL [1e-3 nats/token], mean (SD) | held-out gain, mean (SD) | "
             "adapted gain, mean (SD) |", "|---|---|---|---|---|---|"]
    trade = {(t["lr"], t["method"]): t for t in res["tradeoff"]}
    for lr in ("default", "lr3", "lr10"):
        for lv in [x for x in res["levels"] if x["lr"] == lr]:
            t = trade.get((lr, lv["method"]))
            ad = f"{t['adapted_gain']:+.1f} ({t['adapted_gain_sd']:.1f})" if t else "-"
            rows.append(f"| {LR_TEXT[lr]} | {label(lv['method'])} | {lv['n']} | {lv['kl_mean']:.1f} ({lv['kl_sd']:.1f}) | "
                        f"{lv['gain_mean']:+.1f} ({lv['gain_sd']:.1f}) | {ad} |")
    return "\n".join(rows) + "\n"


def _dynamics_table(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """The verdict beside the registered default-lr D2, then each regime's runs (descriptive rows marked so)."""
    e = res["entries"][0]
    b = {(x["id"], x["regime"]): x for x in beside}[("D2", SAME_BASE[e["regime"]])]
    rows = [d.header, "|---|---|---|---|---|",
            f"| D2 DDRL's mean advantage, last - first quarter of the RL steps [x 100] | {entry_cell(b)} | "
            f"{amendment_cells(e, d.predicted['D2'])}", "",
            "| regime | learning rate | seeds | RL steps | D2 [x 100], 95% CI | first quarter | last quarter | "
            "runs starting below 0 | runs ending above 0 |", "|---|---|---|---|---|---|---|---|---|"]
    names = {"math500_like": "MATH-500-like", "amc_like": "AMC-like"}
    for i, s in enumerate(res["summary"]):
        name = names[SAME_BASE.get(s["regime"], s["regime"])] + ("" if i == 0 else " (descriptive)")
        rows.append(f"| {name} | {LR_CELL[s['regime']]} | {s['n_seeds']} | {s['steps']} | {entry_ci(s)} | "
                    f"{s['first']:+.1f} | {s['last']:+.1f} | {s['first_below_0']} | {s['last_above_0']} |")
    return "\n".join(rows) + "\n"


# 768 MATH-500-like questions (Amendments 26, 27): each seed's runs on one device, the GPU seeds named in
# :data:`DEVICES_FILE`; the analyses are whole measures (``claims.json``'s three lists and device check, ``arms.json``'s
# list of entries), both tables :func:`_wide_table`

DEVICES_FILE = "devices.json"  # {seed: device name} of the seeds computed on a GPU


def gpu_seeds(out: str | Path = WIDE_OUT) -> dict[int, str]:
    """The seeds whose runs were imported from a GPU (:func:`import_runs`), with the device's name."""
    path = Path(out) / DEVICES_FILE
    return {int(k): v for k, v in json.loads(path.read_text()).items()} if path.is_file() else {}


def import_runs(src: str | Path, device: str, out: str | Path = WIDE_OUT, regime: str = MATH500_768,
                methods: Sequence[str] = STAGE1_METHODS) -> list[int]:
    """Copy the complete seeds of a GPU machine's ``run --out src`` into ``out`` and record them in
    :data:`DEVICES_FILE` as computed on ``device``. A seed missing a method there is left out (its runs are
    redone on the CPU); a seed imported before with the same files is skipped, any other seed that ``out``
    already holds a CSV of is refused (one device per seed). Returns the seeds imported now."""
    dest, devices = Path(out) / regime, gpu_seeds(out)
    seeds = [s for s in complete_seeds(src, regime, methods) if not (devices.get(s) == device and all(
        csv_path(out, regime, m, s).is_file() and csv_path(out, regime, m, s).read_bytes() ==
        csv_path(src, regime, m, s).read_bytes() for m in methods))]  # imported before: nothing to do
    clash = [s for s in seeds if any(dest.glob(f"*-seed{s:02d}{CSV}")) or any(dest.glob(f"*-seed{s:02d}-steps{CSV}"))]
    if clash:
        raise ValueError(f"import_runs: {dest} already holds CSVs of seed(s) {clash}; one device per seed")
    dest.mkdir(parents=True, exist_ok=True)
    for s in seeds:
        for m in methods:
            for steps in (False, True):
                p = csv_path(src, regime, m, s, steps)
                if p.is_file():
                    atomic_write_bytes(csv_path(out, regime, m, s, steps), p.read_bytes())
        devices[s] = device
    write_json(Path(out) / DEVICES_FILE, {str(k): v for k, v in sorted(devices.items())})
    return seeds


def device_check(d: pd.DataFrame, devices: dict[int, str], confidence: float = 0.95) -> dict | None:
    """The registered device check: mean per-seed effect (a row mean of ``d``) of the GPU seeds minus the CPU
    seeds', Welch's t interval; ``shifted`` when it excludes 0. None with fewer than 2 seeds on either device."""
    eff = d.mean(axis=1)
    gpu = eff[[s in devices for s in eff.index]]
    cpu = eff[[s not in devices for s in eff.index]]
    if len(gpu) < 2 or len(cpu) < 2:
        return None
    ci = sps.ttest_ind(gpu, cpu, equal_var=False).confidence_interval(confidence)
    return {"gpu_minus_cpu": float(gpu.mean() - cpu.mean()), "ci_low": float(ci.low), "ci_high": float(ci.high),
            "n_gpu": int(len(gpu)), "n_cpu": int(len(cpu)), "shifted": bool(ci.low > 0 or ci.high < 0)}


def _device_check(d: Design, r: Reading) -> dict:
    """Amendment 26: the registered claims over every seed of the reading, each complete (the plan reads no mean
    before): ``entries`` (the verdicts: CPU seeds alone where the device check shifted), ``all_seeds`` and
    ``cpu_seeds`` entries, and each claim's :func:`device_check`."""
    done = analysed_seeds(d, r.out, r.seeds)
    df = load_questions(r.out)
    df = df[df.seed.isin(done)]
    devices = {s: v for s, v in gpu_seeds(r.out).items() if s in done}
    res: dict = {"regime": d.regime, "seeds": done, "gpu_seeds": devices, "entries": [], "all_seeds": [],
                 "cpu_seeds": [], "device_check": {}}
    for cid in d.registered:
        m = claim_matrix(df, cid, d.regime)
        if m is None:
            continue
        every = wide_entry(cid, m, r.n_boot, d.regime)
        cpu_rows = [s for s in m.index if s not in devices]
        cpu = wide_entry(cid, m.loc[cpu_rows], r.n_boot, d.regime) if devices and len(cpu_rows) >= 2 else every
        check = device_check(m, devices)
        use = cpu if check and check["shifted"] else every
        note = "GPU seeds shifted the effect (device check): CPU seeds only" if use is not every else ""
        res["entries"].append({**use, **({"note": note} if note else {})})
        res["all_seeds"].append(every)
        res["cpu_seeds"].append(cpu)
        res["device_check"][cid] = check
    for k in ("entries", "all_seeds", "cpu_seeds"):
        with_half_width(validate(res[k], f"{d.regime} {k}"))
    return res


def _wide_arms(d: Design, r: Reading) -> list[dict]:
    """Amendment 27: its claims (a - b adapted pass@1 per seed and question, sign +1, margin :data:`MARGIN`; stream
    ``derive_seed(0, "wide-arms", id)``) once every seed has its untrained run and both arms on the CPU (the plan reads
    no mean before): Q1, Q2 over all of them, Q3, Q4 over those that also have the method's CPU run."""
    seeds = analysed_seeds(d, r.out, r.seeds)
    gpu = set(gpu_seeds(r.out))
    if gpu & set(seeds):
        raise ValueError(f"Amendment 27 is CPU-only; seeds {sorted(gpu & set(seeds))} were computed on a GPU")
    df = load_questions(r.out)
    df = df[df.seed.isin(set(seeds))]
    entries = []
    for cid, (a, b, what) in d.claims.items():
        m = paired_matrix(df, d.regime, a, b, "adapted")
        if m is not None:
            rng = np.random.default_rng(derive_seed(0, "wide-arms", cid))
            entries.append({"id": cid, "metric": f"adapted pass@1, {what} [points]", "regime": d.regime, "a": a,
                            "b": b, "sign": +1, **decided(m.to_numpy(), rng, +1, MARGIN, r.n_boot)})
    return entries


def _wide_table(d: Design, res: dict | list, beside: Sequence[dict]) -> str:
    """The claims (``arms.json``: a list of entries); under Amendment 26's, each claim's device check."""
    rows = _claims_table(d, {"entries": res} if isinstance(res, list) else res, lambda e: d.what(e["id"]))
    if isinstance(res, dict):
        rows += ["", "| device check (GPU - CPU seeds, per-seed effect, points) | difference [95% CI] | seeds (GPU / "
                 "CPU) | shifted |", "|---|---|---|---|"]
        rows += [f"| {cid} | {fmt_ci(c['gpu_minus_cpu'], c['ci_low'], c['ci_high'], '+.2f')} | {c['n_gpu']} / "
                 f"{c['n_cpu']} | {'yes' if c['shifted'] else 'no'} |" for cid, c in res["device_check"].items() if c]
    return "\n".join(rows) + "\n"


def seed_levels(out: str | Path = WIDE_OUT, seeds: Sequence[int] | None = None, regime: str = MATH500_768) -> pd.DataFrame:
    """:func:`~ddrl.study.analysis.run_levels` of ``regime``'s CSVs under ``out`` (on ``seeds``): one row per method
    x seed (notebook 06 shows Amendment 27's :func:`~ddrl.study.analysis.level_table`)."""
    df = load_questions(out)
    df = df[df.regime == regime]
    if seeds is not None:
        df = df[df.seed.isin(set(seeds))]
    return run_levels(df).drop(columns="regime").sort_values(["method", "seed"], ignore_index=True)


def wide_figure_tables(out: str | Path = WIDE_OUT) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`wide_vote_figure`'s two tables (:func:`seed_levels`, :func:`~ddrl.study.figures.vote_by_quarter`) for
    Amendment 26's methods, and for Amendment 27's arms only once ``arms.json`` is written (the plan reads nothing of
    them before)."""
    methods = (*STAGE1_METHODS, *WIDE_ARMS) if (Path(out) / "arms.json").is_file() else STAGE1_METHODS
    sp, vote = seed_levels(out), vote_by_quarter(out)
    return sp[sp.method.isin(methods)], vote[vote.method.isin(methods)]


def wide_vote_figure(seed_pass1: pd.DataFrame, vote: pd.DataFrame):
    """:func:`~ddrl.study.figures.levels_vote_figure` of :func:`seed_levels` and
    :func:`~ddrl.study.figures.vote_by_quarter`, one run per method (notebook 06's ``wide_vote``). Each method is shown
    on the seeds it has (the untrained model on Amendment 26's and 27's; TTRL and DDRL on 26's; the arms on 27's).
    Descriptive; the paired intervals are ``claims.json``'s and ``arms.json``'s."""
    order = [m for m in (*STAGE1_METHODS, *WIDE_ARMS) if m in set(seed_pass1.method)]
    return levels_vote_figure(seed_pass1.assign(run=seed_pass1.method.map(label)), vote.assign(run=vote.method.map(label)),
                              [label(m) for m in order], {label(m): color(m) for m in order},
                              f"{MATH500_768}: what the runs end at, and how their vote changes over training (descriptive)",
                              numpy_generator(0, "figure", MATH500_768))

# COR alone (Amendments 34-38): designs spanning regimes (:attr:`Design.regime_seeds`, claims keyed (id, regime)),
# each analysis one named measure with its table in :data:`TABLES`

#: How COR alone's tables and figures name the regimes
REGIME_TEXT = {"amc_like": "AMC-like", SMALL_LR: "AMC-like at lr/10", "aime_like": "AIME-like",
               "math500_like": "MATH-500-like"}
#: A held-out claim's registered-build entry beside it, where another id (K4x: K5x, DDRL at the default lr - COR alone)
ACROSS = {"K4x": "K5x"}


def _reads_from(d: Design) -> dict[str, str]:
    """The claims' regimes that read their no-RL runs from their base, one of the design's regimes."""
    return {g: SAME_BASE[g] for _, g in d.claims if SAME_BASE.get(g) in d.regime_seeds}


def _reads(d: Design) -> dict[str, list[tuple[str, str]]]:
    """Per regime of the design, the (folder's regime, run) CSVs its seeds' claims read, its own first, in
    :data:`COR_ALONE_RUNS`' order: a claim in a regime without seeds of its own reads its base's (:func:`_reads_from`)."""
    src = _reads_from(d)
    need: dict[str, list[tuple[str, str]]] = {g: [] for g in d.regime_seeds}
    for (_, g), (a, b, _) in d.claims.items():
        need[g if g in need else src[g]] += [(src.get(g, g) if m in NO_RL else g, m) for m in (a, b)]
    return {g: sorted(set(cs), key=lambda c: (c[0] != g, c[0], COR_ALONE_RUNS.index(c[1]))) for g, cs in need.items()}


def _unwritten(d: Design, out: str | Path, seeds: dict) -> dict[str, list[int]]:
    """Per regime of ``seeds``, its seeds without a CSV of the split its claims read (:func:`_reads`)."""
    at = heldout_x_path if d.split == HELDOUT_X else csv_path
    return {g: [s for s in ss if not all(at(out, f, m, s).is_file() for f, m in _reads(d)[g])] for g, ss in seeds.items()}


def regime_designs(d: Design) -> list[Design]:
    """A design spanning regimes as one design per regime: its seeds and runs there, its clock only where it trains
    (a run outside :data:`~ddrl.study.plan.NO_RL`)."""
    return [replace(d, regime=g, seeds=ss, evaluates=runs, cutoff=d.cutoff if set(runs) - set(NO_RL) else None,
                    regime_seeds=None, regime_runs=None)
            for g, ss in d.regime_seeds.items() for runs in [(d.regime_runs or {}).get(g, d.evaluates)]]


def _cor_alone_seeds(d: Design, r: Reading, what: str) -> dict[str, tuple[int, ...]]:
    """The design's seeds among the reading's, per regime: a regime it trains in to a clock its seeds with every CSV
    the claims read and every run it made (at least 2), the others all of them, or a ValueError naming ``what``."""
    seeds, need = {}, _reads(d)
    for p in regime_designs(d):
        ss = tuple(s for s in p.seeds if s in r.seeds)
        if p.cutoff:
            made = need[p.regime] + [(p.regime, m) for m in p.evaluates]
            ss = tuple(s for s in ss if all(csv_path(r.out, f, m, s).is_file() for f, m in made))
            if len(ss) < 2:
                raise ValueError(f"{r.out}: {d.tag}'s {p.regime} has {len(ss)} complete seeds; its analysis needs at "
                                 "least 2")
        seeds[p.regime] = ss
    left = {g: s for g, s in _unwritten(d, r.out, seeds).items() if s}
    if left:
        raise ValueError(f"{r.out}: {d.tag} incomplete, {what} missing for seeds {left}; the plan reads no estimate "
                         "before every seed is complete")
    return seeds


def _keyed_entries(d: Design, df: pd.DataFrame, n_boot: int) -> list[dict]:
    """The claims keyed (id, regime), each by :func:`~ddrl.study.claims.amendment_entry` on the design's split."""
    metric = "held-out pass@1" if d.split == HELDOUT_X else "adapted pass@1"
    return [amendment_entry(cid, g, what, f"{metric}, {what} [points]", a, b,
                            paired_matrix(df, g, a, b, d.split).to_numpy(), MARGIN, n_boot)
            for (cid, g), (a, b, what) in d.claims.items()]


def _panels(d: Design, regimes: Sequence[str]) -> dict[str, list[str]]:
    """The regimes a table block or figure panel shows on their own (not those reading their no-RL runs from one of
    ``regimes``), each with the regimes whose runs it shows beside its own (lr/10)."""
    src = _reads_from(d)
    return {g: [g, *(h for h, b in src.items() if b == g)] for g in regimes if src.get(g) not in regimes}


def _cor_alone(d: Design, r: Reading) -> dict:
    """Amendments 34-37: the adapted claims of every regime once every CSV they read is written (:func:`_cor_alone_seeds`):
    ``entries``; descriptive, ``levels`` (each run's mean adapted pass@1 and maj@16 over the seeds, with the seeds below
    the untrained run: a regime's runs, then those reading its no-RL runs), ``cor_kept`` (COR alone's mean kept rollouts
    per regime) and ``seed_pass1`` (each run's level)."""
    seeds, need = _cor_alone_seeds(d, r, "a CSV the adapted claims read"), _reads(d)
    df = read_csvs(csv_path(r.out, f, m, s) for own in (True, False) for g in seeds for s in seeds[g]
                   for f, m in need[g] if (f == g) == own)
    per = run_levels(df).merge(run_levels(df, value="maj@n", name="maj"), on=["regime", "method", "seed"])
    lv = []
    for regimes in _panels(d, seeds).values():
        sub = per[per.regime.isin(regimes)]
        t = level_table(sub, ("regime", "method"), sort=False)
        t["maj"] = sub.groupby(["regime", "method"], sort=False)["maj"].mean().to_numpy()
        lv += t.to_dict(orient="records")
    a = df[(df.split == "adapted") & (df.method == COR_ONLY)]
    kept = a.drop_duplicates(["regime", "seed"]).groupby("regime", sort=False)["cor_kept"].mean()
    return {"seeds": {g: list(s) for g, s in seeds.items()}, "entries": _keyed_entries(d, df, r.n_boot), "levels": lv,
            "cor_kept": {g: float(k) for g, k in kept.items()}, "seed_pass1": per.to_dict(orient="records")}


def _cor_alone_heldout(d: Design, r: Reading) -> dict:
    """Amendments 34 and 38: the held-out claims once every evaluation is written: ``entries``; descriptive, each run's
    mean held-out pass@1 (``levels``; per run ``seed_pass1``), how many runs the design computed have adapted rows equal
    to their committed CSV (``registered_reproduced`` of ``registered_checked``) and, in a regime of another base, how
    many no-RL runs' adapted rows (beside their H1x CSV where no CSV of their own) equal the base's
    (``same_as_base`` of ``same_as_base_checked``)."""
    seeds, need = _cor_alone_seeds(d, r, "a held-out evaluation"), _reads(d)
    df = read_csvs(heldout_x_path(r.out, g, m, s) for g in seeds for _, m in need[g] for s in seeds[g])
    per = run_levels(df, HELDOUT_X)
    lv = pd.concat([level_table(per[per.regime == g], ("method",), sort=False).assign(regime=g) for g in seeds])
    res = {"seeds": {g: list(s) for g, s in seeds.items()}, "entries": _keyed_entries(d, df, r.n_boot),
           "levels": lv.to_dict(orient="records"), "seed_pass1": per.to_dict(orient="records"),
           **reproduced_counts(df[df.method.isin(d.evaluates)].drop_duplicates(["regime", "method", "seed"]))}
    sides = [(adapted_x_path(r.out, g, m, s), csv_path(r.out, g, m, s), csv_path(r.out, SAME_BASE[g], m, s))
             for g in seeds if g in SAME_BASE for _, m in need[g] if m in NO_RL for s in seeds[g]]
    same = [same_as_registered(pd.read_csv(x if x.is_file() else own, dtype={"question": str}).query(
        "split == 'adapted'"), base) for x, own, base in sides]
    if same:
        res |= {"same_as_base": sum(x is True for x in same), "same_as_base_checked": sum(x is not None for x in same)}
    return res


def _cor_alone_table(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """COR alone's claims, each held-out one beside the registered build's default-lr AMC-like entry where the design
    sets such entries beside (:data:`ACROSS`), else with the entries beside listed after its own; then each run's
    level per regime (adapted: with maj@16)."""
    held = d.split == HELDOUT_X
    pred = {k: v for x in (d, *(DESIGNS[b] for b in d.beside or () if b in DESIGNS)) for k, v in x.predicted.items()}
    reg = {(e["id"], e["regime"]): e for e in beside}
    rows = [d.header, "|---" * (d.header.count("|") - 1) + "|"]
    for e in (res["entries"] if held and beside else (*res["entries"], *beside)):
        where = (f"{entry_cell(reg[ACROSS.get(e['id'], e['id']), 'amc_like'])} | **{entry_ci(e)}**, " if held and beside
                 else f"{REGIME_TEXT[e['regime']]} | {e['n_seeds']} x {e['n_questions']:,} | {entry_ci(e)} | ")
        if held and beside:
            where += f"{e['n_seeds']} x {e['n_questions']:,} | "
        rows.append(f"| {e['id']} {e['claim']} | {where}{e['half_width']:.2f} ({pred[e['id'], e['regime']]}) | "
                    f"{VERDICT_MD[e['verdict']]} |")
    maj = "" if held else " maj@16 |"
    rows += ["", f"| regime | method | {'held-out' if held else 'adapted'} pass@1, mean over seeds (SD) |{maj} seeds "
             "below the untrained run |", "|---" * (4 if held else 5) + "|"]
    rows += [f"| {REGIME_TEXT[r['regime']]} | {r['method']} | {r['pass1']:.1f} ({r['sd']:.1f}) |"
             f"{'' if held else ' %.1f |' % r['maj']} {below_cell(r)} |" for r in res["levels"]]
    return "\n".join(rows) + "\n"


#: COR alone's figures (notebook 06), by adapted design: its held-out design (None: none), what the title calls the
#: runs COR alone stands beside, and the amendments it names
COR_ALONE_FIGURES = {"cor_alone": ("cor_alone_heldout", "the registered runs", "Amendment 34"),
                     "cor_alone_c49d": (None, "the c49d994e build's runs", "Amendment 35"),
                     "cor_alone_xeon": ("cor_alone_xeon_heldout", "the Xeon build's runs",
                                        "Amendments 36 and 37; held-out: Amendment 38")}


def cor_alone_figure(res: dict, held: dict | None, d: Design):
    """Descriptive (the paired intervals are the entries'): each run's adapted pass@1 (``res``: adapted design ``d``'s
    analysis; and held-out pass@1, ``held``: its held-out design's, where it has one), one dot per seed, one row per
    split and one column per regime shown (:func:`ddrl.study.figures.levels_panel`)."""
    splits = [(res, "adapted pass@1 (%)", "adapted"), *([(held, "held-out pass@1 (%)", "fresh")] if held else [])]
    rows = [[(r, *split) for r in _panels(d, split[0]["seeds"])] for split in splits]
    n_cols = max(map(len, rows))
    fig, axes = plt.subplots(len(rows), n_cols, figsize=(5.5 * n_cols, 4.2 * len(rows)), squeeze=False)
    rng = numpy_generator(0, "figure", d.id)
    for ax_row, panels in zip(axes, rows):
        for ax in ax_row[len(panels):]:
            ax.set_axis_off()
        for ax, (r, data, ylabel, what) in zip(ax_row, panels):
            per = pd.DataFrame(data["seed_pass1"])
            per = per[per.regime.isin(_panels(d, data["seeds"])[r])]
            name = per.method.map(lambda m: "COR alone (no RL)" if m == COR_ONLY else label(m))
            per["run"] = name.where(per.regime == r, name + "\nlr/10")
            palette = dict(zip(per.run, per.method.map(color)))
            n_q = next(e["n_questions"] for e in data["entries"] if e["regime"] == r)
            levels_panel(ax, per, list(dict.fromkeys(per.run)), palette, rng, ylabel,
                         f"{REGIME_TEXT[r]}: {n_q:,} {what} questions")
            sns.despine(ax=ax)
    _, called, tag = COR_ALONE_FIGURES[d.id]
    title = (f"COR alone (consensus SFT from the untrained model) beside {called} "
             f"(plan {tag}; descriptive)")
    fig.suptitle(textwrap.fill(title, 16 * fig.get_figwidth()), fontsize=10)  # ~16 characters an inch at 10 pt
    fig.tight_layout()
    return fig


# Policy drift (Amendments 21-25) and the registered analyses: designs whose analysis is a list of entries

def _drift(d: Design, r: Reading) -> list[dict]:
    """Amendments 21-25 (:mod:`ddrl.study.drift`): X1-X4 or X2h-X4h of BCS against its random negatives on the KL measure
    :attr:`Design.drift` (:func:`~ddrl.study.drift.analyse`), or each arm of that set of :data:`~ddrl.study.drift.ARMS`
    against its method (:func:`~ddrl.study.drift.analyse_arms`, K2's and L2's ``predicted`` from Amendment 21's X3h),
    on every seed complete there; the bootstrap's generator ``default_rng(0)``."""
    rng = np.random.default_rng(0)
    if d.drift in ARMS:
        return analyse_arms(r.out, d.regime, rng, d.drift, x3h_slope() if d.drift in PREDICTED_FROM_SLOPE else None)
    return drift_analysis(r.out, d.regime, rng, d.drift_dir, exploratory=d.exploratory, measure=d.drift)


def _claims(d: Design, r: Reading) -> list[dict]:
    """The registered analysis (plan Sec. 4, :func:`ddrl.study.analysis.analyse_claims`) of every run under the
    design's ``runs/``, its build's regimes: ``claims.json``'s entries."""
    return analyse_claims(r.out, load_regimes(regimes_path(d.results)), r.n_boot)[0]


def _scorecard_table(d: Design, res: list[dict], beside: Sequence[dict]) -> str:
    """The registered build's scorecard (:func:`ddrl.study.claims.scorecard`, as ``--analyse claims`` writes it), or a
    replication's entries beside the registered ones (:func:`~ddrl.study.claims.replication_table`, as notebook 06
    prints it)."""
    if d.results == RESULTS:
        return claims.scorecard(res).to_markdown(index=False, floatfmt=".1f") + "\n"
    return claims.replication_markdown(claims.replication_table({"registered": beside, d.results.name: res})) + "\n"


def _drift_table(d: Design, res: list[dict], beside: Sequence[dict]) -> str:
    """Each entry: its id and metric (its ``|`` escaped), the arm (``-``: X1-X4's pair), seeds, estimate [95% CI], the
    slope's predicted value (``-``: none) and verdict."""
    rows = ["| prediction | arm | seeds | estimate [95% CI] | predicted | verdict |", "|---|---|---|---|---|---|"]
    for e in res:
        predicted, metric = format(e["predicted"], "+.2f") if "predicted" in e else "-", e["metric"].replace("|", r"\|")
        rows.append(f"| {e['id']} {metric} | {e.get('arm', '-')} | {e['n_seeds']} | {entry_ci(e)} | {predicted} | "
                    f"{e['verdict']} |")
    return "\n".join(rows) + "\n"


#: The tables of the designs whose analysis is one named measure (:attr:`Design.whole`), by that measure's name
TABLES: dict[str, Callable[[Design, dict, Sequence[dict]], str]] = {
    "lr_heldout": _lr_heldout_table, "lr_drift": _lr_drift_table, "cor_alone_drift": _cor_drift_table,
    "lr_curve": _lr_curve_table, "dynamics": _dynamics_table, "device_check": _wide_table, "wide_arms": _wide_table,
    "cor_alone": _cor_alone_table, "cor_alone_heldout": _cor_alone_table, "drift": _drift_table,
    "claims": _scorecard_table}


def _seed_pass1(d: Design, r: Reading) -> dict:
    """Each run's pass@1 on the split (:func:`~ddrl.study.analysis.run_levels`): run by run, or with
    :attr:`Design.level_regimes` seed by seed (each seed's runs in those regimes' order)."""
    per = run_levels(r.df, d.split)
    per = per.sort_values("seed", kind="stable") if d.level_regimes else per.drop(columns="regime")
    return {"seed_pass1": per.to_dict(orient="records")}


def _vote(d: Design, r: Reading) -> dict:
    """The vote by quarter of the RL steps (:func:`~ddrl.study.figures.vote_by_quarter`) of each run read, in
    each of :attr:`Design.level_regimes` (its learning rates)."""
    steps = read_csvs(csv_path(r.out, g, m, s, steps=True) for s in r.seeds for g in d.level_regimes for m in d.methods)
    vote = pd.concat([vote_by_quarter(seeds=r.seeds, regime=g, steps=steps) for g in d.level_regimes],
                     ignore_index=True)
    return {"vote": vote.to_dict(orient="records")}


def _rl_minutes(d: Design, r: Reading) -> dict:
    """Each run's mean RL wall time in the design's regime, in minutes."""
    rl = r.df[(r.df.regime == d.regime) & (r.df.split == "adapted")].groupby(["method", "seed"]).rl_seconds.first()
    return {"rl_minutes": (rl.groupby("method").mean() / 60).round(2).to_dict()}


def held_level_rows(levels: Sequence[dict], first: str = "run (lr/10)",
                    mean: str = "held-out pass@1, mean over seeds (SD)") -> list[str]:
    """The held-out level table the lr/10 amendments print under their claims (a blank line first): per
    :func:`~ddrl.study.analysis.level_table` row (``levels``, as records) ``first``'s value (the method), the ``mean`` (SD) over seeds and
    :func:`below_cell` against the untrained run."""
    return ["", f"| {first} | {mean} | seeds below the untrained run |", "|---|---|---|",
            *(f"| {r['method']} | {r['pass1']:.1f} ({r['sd']:.1f}) | {below_cell(r)} |" for r in levels)]


def cor_level_rows(levels: Sequence[dict], cor_kept: dict[str, float], first: str = "method") -> list[str]:
    """The adapted level table the COR amendments print under their claims (a blank line first): per
    :func:`~ddrl.study.analysis.level_table` row (``levels``, as records, DDRL the reference) the method, its mean adapted pass@1 (SD) over
    seeds, :func:`below_cell` against DDRL and COR's mean kept rollouts (``cor_kept``; "-" for a run without COR)."""
    kept = {m: f"{k:.0f}" for m, k in cor_kept.items()}
    return ["", f"| {first} | adapted pass@1, mean over seeds (SD) | seeds below DDRL | COR's kept rollouts |",
            "|---|---|---|---|", *(f"| {r['method']} | {r['pass1']:.1f} ({r['sd']:.1f}) | {below_cell(r, 'ddrl')} | "
                                   f"{kept.get(r['method'], '-')} |" for r in levels)]


# MATH-500-like at lr/10, Table 1, COR 4x at 1e-6 (Amendments 28, 49-51, 62): T1f's and COR's size x rate square's
# analyses (each the whole analysis of its designs), their tables and figures, and what the lr/10 designs share: the
# repeat check of cached DDRL runs, the refusal of a seed whose DDRL run is not cached, the command line's options


def t1f_missing(out: str | Path, seeds: Sequence[int], regimes: Sequence[str]) -> dict[str, list[int]]:
    """Per regime, the seeds of ``seeds`` whose ``dae`` CSV (under ``<out>/table1_fixed``) or TTRL CSV is missing."""
    return {r: sorted(set(seeds) - (set(complete_seeds(Path(out, T1F_DIR), r, ("dae",)))
                                    & set(complete_seeds(out, r, ("ttrl",))))) for r in regimes}


def t1f_entry(df: pd.DataFrame, regime: str, n_boot: int = 4000, stream: str | None = None) -> dict:
    """T1f (``dae`` - TTRL) in ``regime`` over the seeds of ``df``, with T1's Table 1 row (its MATH-500 number, sign +1
    and margin): Amendments 50 (stream: the regime) and 51 (streams ``<regime>/fresh``, ``<regime>/pooled``)."""
    t1 = get_claim("T1")
    return {**amendment_entry("T1f", regime, "fixed +1/-1 advantages instead of GRPO's help TTRL (Table 1, the paper's "
                              "text)", "pass@1 dae - GRPO [points]", "dae", "ttrl",
                              paired_matrix(df, regime, "dae", "ttrl", "adapted"), t1.margin, n_boot, stream=stream),
            "paper": t1.paper["math500_like"]}


def _t1f(d: Design, r: Reading) -> dict:
    """Amendment 50: T1f in each of :attr:`Design.level_regimes` over the design's seeds, once all are complete in
    each (``entries``, the paper's number Table 1's MATH-500 row); Amendment 51 (the design whose fresh seeds Amendment
    50's design did not run): T1f on them alone (the verdict) and, descriptive, ``pooled`` with Amendment 50's seeds
    (no verdict: they prompted the amendment). Descriptive, ``levels``: TTRL, ``grpo_no_std`` and ``dae`` per learning
    rate on the design's seeds, with the seeds in which each ends below TTRL."""
    missing = {g: m for g, m in t1f_missing(r.out, r.seeds, d.level_regimes).items() if m}
    if missing:
        raise ValueError(f"{r.out}: {d.tag} incomplete, seeds missing per regime {missing}; the plan reads no estimate "
                         "before all are complete")
    seen = [s for s in DESIGNS["table1_fixed"].seeds if s not in d.seeds]
    both = sorted({*seen, *r.seeds})
    df = read_csvs([*(csv_path(r.out, g, m, s) for g in d.level_regimes for s in both for m in ("ttrl", "grpo_no_std")),
                    *(csv_path(Path(r.out, T1F_DIR), g, "dae", s) for g in d.level_regimes for s in both)])
    levels = _levels(d, r._replace(df=df))["levels"]
    if not seen:
        return {"seeds": list(r.seeds), "entries": validate([t1f_entry(df, g, r.n_boot) for g in d.level_regimes],
                                                            "table1_fixed"), "levels": levels}
    fresh = df[df.seed.isin(set(r.seeds))]
    pooled = {k: v for k, v in t1f_entry(df, d.regime, r.n_boot, f"{d.regime}/pooled").items() if k != "verdict"}
    return {"seeds": list(r.seeds), "seen": seen,
            "entries": validate([t1f_entry(fresh, d.regime, r.n_boot, f"{d.regime}/fresh")], "table1_fixed_more"),
            "pooled": pooled, "levels": levels}


def _t1f_table(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """Amendment 50's table: per learning rate the paper's MATH-500 number (Table 1), the caption's reading there
    (T1: the registered entry at the default lr, ``beside``; Amendment 49's at lr/10), T1f, its half-width beside the
    plan's predictions and its verdict; then the levels. Amendment 51's (``res`` with ``seen``): Amendment 50's with
    its fresh seeds' row after the default lr's and its levels after 50's."""
    a50, more = DESIGNS["table1_fixed"], res if "seen" in res else None
    res = json.loads(a50.analysis.read_text()) if more else res
    t1 = {"math500_like": next(e for e in beside if (e["id"], e["regime"]) == ("T1", "math500_like")),
          MATH500_SMALL_LR: next(e for e in json.loads(DESIGNS["table1"].analysis.read_text())["entries"]
                                 if e["id"] == "T1")}
    rows = [d.header, "|---|---|---|---|---|---|"]
    fresh = [(f"{LR_CELL['math500_like']}, fresh seeds {more['seeds'][0]}-{more['seeds'][-1]} (Amendment 51)", e,
              d.predicted["T1f"]) for e in (more or {"entries": []})["entries"]]
    for name, e, pred in sorted([(LR_CELL[e["regime"]], e, a50.predicted[e["regime"]]) for e in res["entries"]]
                                + fresh, key=lambda x: x[1]["regime"] != "math500_like"):  # stable: default lr first
        rows.append(f"| {name} | {e['paper']:+.1f} | {entry_cell(t1[e['regime']])} | {amendment_cells(e, pred)}")
    return "\n".join([*rows, *_level_rows(a50, res, res["seeds"]),
                      *(_level_rows(d, more, more["seeds"]) if more else [])]) + "\n"


#: Amendment 62's claims (id -> a, b, split, what: pass@1 a - b on the split; ours, sign +1) and COR's four settings
#: (method -> kept multiple, learning rate)
COR_TRADE_CLAIMS = {
    "K1g": (COR_4X_LR10, "bcs_dae", "adapted", "COR 4x at 1e-6 - BCS+DAE (the RL-only weights)"),
    "R1g": (COR_4X_LR10, COR_LR10, "adapted", "COR 4x at 1e-6 - COR 1x at 1e-6"),
    "K1gx": (COR_4X_LR10, "bcs_dae", HELDOUT_X, "COR 4x at 1e-6 - BCS+DAE (its cost on fresh questions)"),
    "R1gx": (COR_4X_LR10, COR_LR10, HELDOUT_X, "COR 4x at 1e-6 - COR 1x at 1e-6")}
COR_SETTINGS = {COR_LR10: (1, "1e-6"), COR_4X_LR10: (4, "1e-6"), "ddrl": (1, "1e-5"), COR_4X: (4, "1e-5")}


def _split_dir(out: str | Path, split: str) -> Path:
    """Where a split's CSVs lie under a runs folder ``out``: adapted ones in it, the others (``heldout_x``) below it."""
    return Path(out) / ("" if split == "adapted" else split)


def trade(levels: dict[str, Sequence[dict]]) -> list[dict]:
    """Descriptive, no verdict: per COR setting (:data:`COR_SETTINGS`) its mean adapted gain and mean held-out change
    over the RL-only weights (BCS+DAE), in points, and the seeds below them on each split (``<split>_below``), from the
    two splits' level tables (``levels``: split -> records, BCS+DAE the reference)."""
    by = {sp: {r["method"]: r for r in rows} for sp, rows in levels.items()}
    return [{"method": m, "keep": k, "cor_lr": lr,
             **{sp: by[sp][m]["pass1"] - by[sp]["bcs_dae"]["pass1"] for sp in by},
             **{f"{sp}_below": by[sp][m]["below_reference"] for sp in by}} for m, (k, lr) in COR_SETTINGS.items()]


def _cor_trade(d: Design, r: Reading) -> dict:
    """Amendment 62 on :func:`~ddrl.study.plan.seeds_to_analyse`'s seeds (complete on both splits, to the
    design's clock): ``entries`` (:data:`COR_TRADE_CLAIMS` by :func:`~ddrl.study.claims.amendment_entry`, streams
    ``derive_seed(0, "claims", id, regime)``, ``half_width`` added); descriptive, ``levels`` per split, :func:`trade`,
    and how many recomputed held-out COR runs' adapted rows equal the adapted job's CSV."""
    gone = set().union(*(missing_seeds(_split_dir(r.out, sp), d.regime, ms, r.seeds)
                         for sp, ms in COR_TRADE_RUNS.items()))
    done = seeds_to_analyse(r.seeds, set(r.seeds) - gone, f"{r.out}: {d.tag}", d.cutoff)
    df = {sp: read_csvs(csv_path(_split_dir(r.out, sp), d.regime, m, s) for m in ms for s in done)
          for sp, ms in COR_TRADE_RUNS.items()}
    entries = [amendment_entry(cid, d.regime, what, f"{'adapted' if sp == 'adapted' else 'held-out'} pass@1, {what} "
                               "[points]", a, b, paired_matrix(df[sp], d.regime, a, b, sp).to_numpy(), MARGIN, r.n_boot)
               for cid, (a, b, sp, what) in COR_TRADE_CLAIMS.items()]
    levels = {sp: level_table(run_levels(x, sp), ("method",), reference="bcs_dae", sort=False).to_dict(orient="records")
              for sp, x in df.items()}
    held = df[HELDOUT_X]
    return {"regime": d.regime, "seeds": list(done), "entries": with_half_width(validate(entries, d.regime)),
            "levels": levels, "trade": trade(levels),
            **reproduced_counts(held[held.method == COR_4X_LR10].drop_duplicates("seed"))}


def _cor_trade_table(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """Amendment 62's tables: per claim its split, estimate, half-width beside the plan's predictions and verdict; then
    COR's four settings, their adapted gain and held-out change over BCS+DAE."""
    rows = [d.header, "|---|---|---|---|---|"]
    for e in res["entries"]:
        a, b, sp, what = COR_TRADE_CLAIMS[e["id"]]
        rows.append(f"| {e['id']} {what} | {'adapted' if sp == 'adapted' else 'fresh'} ({e['n_questions']:,}) | "
                    f"{amendment_cells(e, d.predicted[e['id']])}")
    n = len(res["seeds"])
    rows += ["", "| COR setting (from the same RL-only weights) | kept rollouts | learning rate | adapted gain over "
             "BCS+DAE (seeds below it) | held-out change over BCS+DAE (seeds below it) |", "|---|---|---|---|---|"]
    rows += [f"| {t['method']} | {t['keep']}x | {t['cor_lr']} | {t['adapted']:+.2f} ({t['adapted_below']} of {n}) | "
             f"{t[HELDOUT_X]:+.2f} ({t[HELDOUT_X + '_below']} of {n}) |" for t in res["trade"]]
    return "\n".join(rows) + "\n"


def trade_frame(results: Sequence[dict]) -> pd.DataFrame:
    """Amendment 62's analyses (one per regime) as one table: per regime and COR setting its :func:`trade` row."""
    return pd.DataFrame([{"regime": REGIME_NAME[res["regime"]], "seeds": len(res["seeds"]), **t}
                         for res in results for t in res["trade"]])


def trade_figure(results: Sequence[dict]):
    """Descriptive: per regime (a panel each) the four COR settings' mean adapted gain over the RL-only weights (x)
    against their mean held-out change (y), in points, from Amendment 62's analyses (``results``); the zero lines
    dashed. A figure, no verdict: the claims' intervals are in the tables."""
    df = trade_frame(results)
    fig, axes = plt.subplots(1, len(results), figsize=(5.2 * len(results), 4), squeeze=False, sharey=True)
    for ax, (regime, g) in zip(axes[0], df.groupby("regime", sort=False)):
        sns.scatterplot(g, x="adapted", y=HELDOUT_X, hue="method", palette={m: color(m) for m in g.method}, s=90,
                        legend=False, ax=ax)
        for t in g.itertuples():
            ax.annotate(f"COR {t.keep}x at {t.cor_lr}", (t.adapted, getattr(t, HELDOUT_X)), textcoords="offset points",
                        xytext=(6, 6), fontsize=8)
        ax.axhline(0, color="grey", ls="--", lw=0.8)
        ax.axvline(0, color="grey", ls="--", lw=0.8)
        ax.margins(x=0.2, y=0.12)
        ax.set(xlabel="adapted pass@1 gain over BCS+DAE (points)",
               ylabel="held-out pass@1 change over BCS+DAE (points)", title=f"{regime} at lr/10 ({g.seeds.iloc[0]} seeds)")
    fig.tight_layout()
    return fig


def _name(regime: str, method: str) -> str:
    """A run's tick label: the method's short name (DDRL's parts are in the vote panels' legend; the full label made the
    rotated tick labels overlap), then the learning rate."""
    name = label(method).split(" (")[0]
    return name if method == "no_adaptation" else f"{name}\n{LR_NAME[regime]}"


def figure(res: dict, title: str = "MATH-500-like at the default learning rate and at lr/10 (plan Amendment 28; "
                                   "descriptive)"):
    """:func:`ddrl.study.figures.levels_vote_figure` of the committed analysis (descriptive; the paired intervals are the
    entries'): each run's adapted pass@1 (``seed_pass1``) of the untrained model and of TTRL and DDRL at both learning
    rates on the same seeds, and the vote by quarter of the RL steps (``vote``), lines styled by learning rate."""
    per, vote = pd.DataFrame(res["seed_pass1"]), pd.DataFrame(res["vote"])
    per["run"] = [_name(r, m) for r, m in zip(per.regime, per.method)]
    vote["run"], vote["learning rate"] = vote.method.map(label), vote.regime.map(LR_NAME)  # colour: method, line: lr
    palette = {n: color(m) for n, m in (*zip(per.run, per.method), *zip(vote.run, vote.method))}
    return levels_vote_figure(per, vote, list(dict.fromkeys(per.run)), palette,
                              title, numpy_generator(0, "figure", MATH500_SMALL_LR), style="learning rate")


#: Where each lr/10 regime's cached DDRL runs come from, for :func:`refuse_untrained`'s message: (the amendment that
#: trained them, the command that trains them again)
CACHED_BY = {SMALL_LR: (55, "python -m ddrl.study run ablation_amc trains them, ~12 worker-minutes a seed"),
             MATH500_SMALL_LR: (59, "python -m ddrl.study run refine_math500 trains them, ~14 worker-minutes a seed")}


def refuse_untrained(seeds: Sequence[int], runs_root: str | Path, scale: str,
                     amendment: int = 56, regime: str = SMALL_LR) -> None:
    """A ValueError naming the seeds whose DDRL run in ``regime`` is not finished under ``runs_root``, before any job:
    ``amendment`` (56-58, 60, 62) refines (or evaluates) the cached runs of :data:`CACHED_BY`'s amendment and must not
    train one anew."""
    gone = untrained(seeds, runs_root, scale, regime, ("ddrl",))
    if gone:
        by, how = CACHED_BY[regime]
        raise ValueError(f"{runs_root}: the DDRL runs of seeds {[s for _, s in gone]} in {regime} are not finished "
                         f"there; Amendment {amendment} uses Amendment {by}'s cached runs and trains none ({how})")


def check_rows(out: str | Path, check: str | Path, seeds: Sequence[int], regime: str = SMALL_LR,
               split: str = "adapted") -> dict | None:
    """The check's description on ``seeds`` in ``regime`` and ``split`` (Amendment 56's; Amendment 59's MATH-500-like
    one; Amendment 60's on H1x's fresh questions, ``split`` :data:`~ddrl.study.plan.HELDOUT_X`, its CSVs under
    ``<out>/heldout_x/`` and ``<check>/heldout_x/``), or None before every re-evaluation is written: how many of the
    seeds x questions re-evaluated DDRL pass@1 values equal the committed CSV's, how many seeds match in full, and R1
    (R1x) against the re-evaluated runs (its mean, as description)."""
    out, check = _split_dir(out, split), _split_dir(check, split)
    if missing_seeds(check, regime, ("ddrl",), seeds):
        return None
    again = read_csvs(csv_path(check, regime, "ddrl", s) for s in seeds)
    again = again[again.split == split].set_index(["seed", "question"])["pass@1"]
    df = read_csvs(csv_path(out, regime, m, s) for s in seeds for m in ("ddrl", COR_4X))
    a = df[df.split == split].set_index(["method", "seed", "question"])["pass@1"]
    committed, cor4x = a.loc["ddrl"], a.loc[COR_4X]
    equal = (committed - again.reindex(committed.index)).abs() < 1e-12
    return {"questions_equal": int(equal.sum()), "questions": int(len(equal)),
            "seeds_equal": int(equal.groupby(level="seed").all().sum()),
            "r1_against_reevaluated": float(100 * (cor4x - again.reindex(cor4x.index)).mean())}


def seeds_line(what: str, total: int, missing: Sequence[int], cutoff: str | None = None) -> str:
    """A status line of the designs' command line: how many of ``total`` seeds are complete, which are not, and with a
    plan's clock (``cutoff``) the minutes left to it."""
    clock = "" if cutoff is None else f"; minutes to the clock {minutes_to(cutoff):.0f}"
    return f"{what}: {total - len(missing)} of {total} seeds complete; missing {list(missing)}{clock}"


def add_run_arguments(ap: argparse.ArgumentParser, seeds_help: str) -> None:
    """The options every design's command line shares."""
    runs = RESULTS / "runs"
    ap.add_argument("--seeds", type=seed_range, default=None, help=seeds_help)
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=runs, help=f"the CSVs (default {runs})")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--json", type=Path, default=None, help="analyse: write the result here")


TABLES |= {"t1f": _t1f_table, "cor_trade": _cor_trade_table}  # (defined after TABLES' literal)
MEASURES: dict[str, Callable[[Design, Reading], dict]] = {
    "reproduced": _reproduced, "reproduced_by_method": _reproduced_by_method, "heldout_check": _heldout_check,
    "cor_kept": _cor_kept, "retrain_check": _retrain_check, "reeval_check": _reeval_check, "levels": _levels,
    "split": _split, "c2": _c2, "divergence": _divergence, "agreeing": _agreeing, "seed_pass1": _seed_pass1,
    "vote": _vote, "rl_minutes": _rl_minutes,
    # whole analyses (Design.whole), each with its table in TABLES
    "lr_heldout": _lr_heldout, "lr_drift": _lr_drift, "cor_alone_drift": _cor_drift, "lr_curve": _lr_curve,
    "dynamics": _dynamics, "device_check": _device_check, "wide_arms": _wide_arms, "cor_alone": _cor_alone,
    "cor_alone_heldout": _cor_alone_heldout, "drift": _drift, "claims": _claims, "t1f": _t1f, "cor_trade": _cor_trade}


# ---------------------------------------------------------------------------------------------------------
# The generic analysis, jobs and table
# ---------------------------------------------------------------------------------------------------------


def design(name: str) -> Design:
    """The design called ``name``, or a ValueError listing the table's."""
    if name not in DESIGNS:
        raise ValueError(f"no design {name!r} in ddrl.study.designs.DESIGNS; known: {', '.join(DESIGNS)}")
    return DESIGNS[name]


def _folder(d: Design, method: str, regime: str | None = None) -> str:
    """The regime whose folder holds a run's CSVs: ``regime`` (default the design's), but the untrained run's adapted
    rows are those of its base (:data:`~ddrl.study.plan.NO_RL`: one computation for every learning rate)."""
    g = regime or d.regime
    return SAME_BASE.get(g, g) if method == "no_adaptation" and d.split != HELDOUT_X else g


def path(d: Design, out: str | Path, method: str, seed: int, regime: str | None = None) -> Path:
    """A run's CSV on the design's split (in ``regime``: default the design's; :func:`_folder`)."""
    where = (out, _folder(d, method, regime), method, seed)
    return heldout_x_path(*where) if d.split == HELDOUT_X else csv_path(*where)


def _csv_root(d: Design, out: str | Path) -> Path:
    return Path(out) / HELDOUT_X if d.split == HELDOUT_X else Path(out)


def _needed(d: Design) -> tuple[str, ...]:
    return tuple(m for m in d.methods if m not in d.optional)


def _complete(d: Design, out: str | Path, runs: Sequence[str]) -> list[int]:
    """The seeds with a CSV of every one of ``runs`` where :func:`path` reads it (an evaluated run's under
    :attr:`Design.csv_dir`)."""
    return sorted(set.intersection(*(set(complete_seeds(_csv_root(d, Path(out, d.csv_dir) if m in d.evaluates else out),
                                                        _folder(d, m), (m,))) for m in runs)))


def _wants(d: Design, runs: Sequence[str], seed: int) -> bool:
    """Whether ``seed`` needs a job of ``runs``: with :attr:`Design.claim_seeds`, a claim pairing one of them has it."""
    return d.claim_seeds is None or any(seed in cs for c, cs in d.claim_seeds.items() if set(runs) & set(PAIRED[c][:2]))


def jobs(d: Design, seeds: Sequence[int] | None = None, now: float | None = None) -> list[Job]:
    """Seed by seed, a job per evaluated run (on the seeds of the claims that pair it); once the design's clock has
    passed (``now``: epoch seconds) only the first :attr:`Design.late_seeds` of its seeds."""
    if d.regime_seeds:  # regime by regime (:func:`regime_designs`)
        return [j for p in regime_designs(d) for j in jobs(p, seeds and [s for s in seeds if s in p.seeds], now)]
    groups = [((m,), d.kinds[i] if d.kinds else d.job_kind) for i, m in enumerate(d.evaluates)] if d.job_per_run \
        else [(d.evaluates, d.job_kind)]
    return [Job(regime, s, g, kind) for regime in d.job_regimes or (d.regime,)
            for s in seeds_to_start(d.seeds if seeds is None else seeds, d.seeds, d.cutoff, now, d.late_seeds)
            for g, kind in groups if _wants(d, g, s)]


def missing(d: Design, out: str | Path | None = None, seeds: Sequence[int] | None = None) -> list[int]:
    """Seeds without every CSV the design's analysis needs (with :attr:`Design.claim_seeds`: some claim's pair on one of
    its seeds; ``out``: default its ``runs/``)."""
    out, among = d.runs if out is None else out, d.seeds if seeds is None else seeds
    if d.regime_seeds:  # in any of its regimes
        return sorted({s for ss in _unwritten(d, out, {g: [s for s in ss if s in among] for g, ss in
                                                        d.regime_seeds.items()}).values() for s in ss})
    if d.claim_seeds is None:
        return sorted(set(among) - set(_complete(d, out, _needed(d))))
    return sorted({s for c, cs in d.claim_seeds.items()
                   for s in (set(cs) & set(among)) - set(_complete(d, out, PAIRED[c][:2]))})


def analysed_seeds(d: Design, out: str | Path | None = None, seeds: Sequence[int] | None = None,
                   now: float | None = None) -> list[int] | dict[str, list[int]]:
    """The seeds the plan reads (:func:`ddrl.study.plan.seeds_to_analyse`; ``seeds``: the design's unless
    given), complete in every run it needs; with :attr:`Design.claim_seeds` per claim: without a clock each claim every
    one of its own seeds, complete in its pair; with one, the complete seeds in every run, the same for every claim."""
    out = d.runs if out is None else out
    among, what = d.seeds if seeds is None else tuple(seeds), f"{out}: {d.tag}"
    if d.claim_seeds is not None and d.cutoff is None:
        return {c: seeds_to_analyse([s for s in cs if s in among], _complete(d, out, PAIRED[c][:2]), f"{what} {c}")
                for c, cs in d.claim_seeds.items()}
    done = seeds_to_analyse(among, _complete(d, out, _needed(d)), what, d.cutoff, now)
    return done if d.claim_seeds is None else {c: [s for s in cs if s in done] for c, cs in d.claim_seeds.items()}


def analyse(d: Design, out: str | Path | None = None, n_boot: int = 4000, now: float | None = None,
            seeds: Sequence[int] | None = None) -> dict:
    """The design's claims on :func:`analysed_seeds`: ``entries`` (``claims.json``'s schema with ``half_width``: the
    registered ones by their matrices and rule, each on its own seeds, ours by
    :func:`~ddrl.study.claims.amendment_entry`); then, descriptive, the design's named measures (:data:`MEASURES`;
    ``levels``: each run's mean pass@1 on the split, first where not named); a design's :attr:`Design.whole`
    measure instead, on ``seeds`` (default the design's). ``out``: its ``runs/`` unless given."""
    out = d.runs if out is None else Path(out)
    if d.whole:
        return MEASURES[d.whole](d, Reading(pd.DataFrame(), out, list(d.seeds if seeds is None else seeds), n_boot, {}))
    seeds = analysed_seeds(d, out, seeds, now)
    per_claim = seeds if isinstance(seeds, dict) else {}
    done = next(iter(per_claim.values())) if per_claim else seeds
    every = sorted(set().union(*per_claim.values())) if per_claim else done
    # in the levels' regimes' order; the default-lr twin's runs (the levels only) where written, on ``done``
    df = read_csvs(path(d, out, m, s, g) for g in d.level_regimes or (d.regime,)
                   for m in (d.methods if g == d.regime or d.twin_runs is None else d.twin_runs)
                   for s in (every if g == d.regime else done))
    entries = [wide_entry(cid, claim_matrix(df[df.seed.isin(per_claim[cid])] if per_claim else df, cid, d.regime),
                          n_boot, d.regime, SAME_BASE[d.regime]) for cid in d.registered]
    metric = "held-out pass@1" if d.split == HELDOUT_X else "adapted pass@1"
    for cid, (a, b, what, *own) in d.claims.items():
        claim, said, paper = own or (what, f"{metric}, {what} [points]", None)
        at = SAME_BASE[d.regime] if cid in d.in_base else d.regime
        entries.append({**amendment_entry(cid, at, claim, said, a, b, paired_matrix(df, at, a, b, d.split).to_numpy(),
                                          MARGIN, n_boot), "paper": paper})
    res = {"regime": d.regime, **({"build": d.build} if d.build else {}), "seeds": seeds,
           **({"cutoff": d.cutoff} if d.build and d.cutoff else {}),
           "entries": with_half_width(validate(entries, d.regime))}
    for m in d.measures if "levels" in d.measures else ("levels", *d.measures):
        res |= MEASURES[m](d, Reading(df, out, done, n_boot, res))
    return res


def _level_rows(d: Design, res: dict, seeds: Sequence[int]) -> list[str]:
    """The split of M1 (where measured) and the levels under :attr:`Design.level_header`, each under a blank line: per
    run (``-``: untrained) its learning rate (with :attr:`Design.level_regimes`), mean pass@1 (SD) over the seeds, the
    seeds below :attr:`Design.reference`'s run at the same lr (where there is one) and, with ``rl_minutes``, its mean
    RL minutes in the design's regime and, with ``cor_kept``, COR's kept rollouts there. ``seeds``: those analysed (the
    first claim's)."""
    span = f"seeds {seeds[0]}-{seeds[-1]}"
    split = ["", f"| part of DDRL - TTRL ({span}) | points |", "|---|---|",
             *(f"| {p['part']} ({p['claim']}) | {p['points']:+.2f} |" for p in res["split"])] if "split" in res else []
    if any(r["n_seeds"] != len(seeds) for r in res["levels"]):  # a run on fewer seeds (BCS+DAE in AMC-like) says so
        span = f"those of {span} it ran"
    head = d.level_header.format(span=span)
    rows = [*split, "", head, "|---" * (head.count("|") - 1) + "|"]
    with_ref = {r.get("regime") for r in res["levels"] if r["method"] == d.reference or d.reference in NO_RL}
    for r in res["levels"]:
        untrained = r["method"] == "no_adaptation"
        cells = [r["method"], *(["-" if r["method"] in NO_RL else LR_CELL[r["regime"]]] if d.level_regimes else []),
                 f"{r['pass1']:.1f} ({r['sd']:.1f})",
                 "-" if untrained or r.get("regime") not in with_ref else below_cell(r, d.reference)]
        own = r.get("regime", d.regime) == d.regime
        if "rl_minutes" in res:
            cells.append(f"{res['rl_minutes'][r['method']]:.1f}" if own else "-")
        if "cor_kept" in res:
            cells.append(f"{res['cor_kept'][r['method']]:.0f}" if own and r["method"] in res["cor_kept"] else "-")
        rows.append(f"| {' | '.join(cells)} |")
    return rows


def markdown(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """The table docs/results.md quotes: per claim the entry beside it (the registered one at the default lr in the
    same benchmark, or the entries of :attr:`Design.beside`'s analyses; with none, the seeds), the design's, its
    half-width beside the plan's predictions ("-": none), its verdict; then the levels. ``beside``: those entries."""
    if d.whole:
        return TABLES[d.whole](d, res, beside)
    by = {e["id"]: e for e in beside if d.beside or e["regime"] == SAME_BASE[d.regime]}
    seeds = next(iter(res["seeds"].values())) if isinstance(res["seeds"], dict) else res["seeds"]
    rows = [d.header.format(span=f"seeds {seeds[0]}-{seeds[-1]}"),
            "|---" * ((6 if d.paper else 5) + max(0, len(d.beside_regimes) - 1)) + "|"]
    at = {(e["id"], e["regime"]): e for e in beside}
    for e in res["entries"]:
        predicted = d.predicted.get(e["id"], "-")
        if d.beside is None:
            rows.append(claim_row(e, d.what(e["id"]), predicted))
            continue
        b = by.get(e["id"])
        paper = (" n/a |" if e["paper"] is None else f" {e['paper']:+.1f} |") if d.paper else ""
        cells = " | ".join(entry_cell(at[(e["id"], g)]) for g in d.beside_regimes) if d.beside_regimes else \
            d.unmeasured if b is None else entry_cell(b)
        rows.append(f"| {e['id']} {d.what(e['id'])} |{paper} {cells} | {amendment_cells(e, predicted)}")
    levels = (_level_rows(d, res, seeds) if d.level_header else
              cor_level_rows(res["levels"], res["cor_kept"], d.level_name) if "cor_kept" in res else
              held_level_rows(res["levels"], d.level_name) if d.level_name else [])
    return "\n".join(rows + levels) + "\n"


def beside_entries(d: Design, results: Path | None = None) -> list[dict]:
    """The committed entries :func:`markdown` sets beside the design's: the registered ``claims.json``'s, or those of
    :attr:`Design.beside`'s committed analyses or claims files (none for a design without that column)."""
    if d.beside is None:
        return []
    if not d.beside:
        return claims.load((results or RESULTS) / "claims.json")
    got = [json.loads((DESIGNS[b].analysis if b in DESIGNS else RESULTS / b).read_text()) for b in d.beside]
    return [e for x in got for e in (x if isinstance(x, list) else x["entries"])]  # a list: a claims.json


#: How the figures name the regimes
REGIME_NAME = {MATH500_SMALL_LR: "MATH-500-like", SMALL_LR: "AMC-like"}


def etmr_figure(res: dict, d: Design):
    """:func:`figure`'s panels (descriptive; the paired intervals are the entries'): each
    run's adapted pass@1 of the untrained model and of TTRL, ETMR and DDRL at both learning rates on the same seeds, and
    the vote by quarter of the RL steps (an ETMR design's committed analysis, notebook 06)."""
    return figure(res, f"{REGIME_NAME[d.regime]}, {d.build}: ETMR beside TTRL and DDRL (plan Amendment {d.amendment}, "
                       f"seeds 0-{len(res['seeds']) - 1}; descriptive)")


#: COR's arms' names in figures (they are COR calls, not trainer presets, so ddrl.report.plotting's labels do not name them)
ARM_LABELS = {COR_LR10: "DDRL with COR at lr/10", COR_ONLY: "COR alone (no RL)"}


def cor_figure(cor: dict, held: dict):
    """Descriptive (the paired intervals are the entries'): each run's adapted pass@1 of the seven runs K1-K5 read
    (``cor``: design ``cor_math500``'s analysis) and each run's held-out pass@1 on the fresh questions (``held``:
    ``heldout_math500``'s), one dot per seed, :func:`ddrl.study.figures.levels_panel`."""
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
    """The design's jobs on its build's measured weights, to its clock; a design reading the cached DDRL runs, or
    loading finished runs (:attr:`Design.finished`), refuses a seed without one before any job (it must not train one
    anew)."""
    seeds = d.seeds if args.seeds is None else tuple(s for s in d.seeds if s in set(args.seeds))
    seeds = tuple(s for s in seeds if s not in gpu_seeds(args.out))  # a GPU machine's imported seeds (Amendment 26)
    regimes = regimes_path(d.results)
    check_weights(regimes, SCALES[args.scale])
    root = args.runs_root or cache_root() / "runs"
    if d.cached_ddrl:
        refuse_untrained(seeds, root, args.scale, d.amendment, d.regime)
    gone = untrained(seeds, root, args.scale, d.regime, d.finished, regimes) if d.finished else []
    if gone:
        raise ValueError(f"{root}: {d.tag} evaluates finished runs and trains none; not finished there: {gone}")
    status = run_jobs(jobs(d, seeds), SCALES[args.scale], Path(args.out, d.csv_dir), root,
                      clock_budget(d.cutoff, args.budget_min), args.workers, desc=f"{d.tag} run", regimes=regimes)
    if d.whole == "cor_trade":  # then the same runs on H1x's fresh questions (checked against the adapted jobs' CSVs)
        status += run_jobs([replace(j, label="H1x") for j in jobs(d, seeds)], SCALES[args.scale], args.out, root,
                           clock_budget(d.cutoff, args.budget_min), args.workers, desc=f"{d.tag} H1x", regimes=regimes)
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
    ap.add_argument("what", choices=("run", "status", "analyse", "render", "import"))
    ap.add_argument("design", help=f"one of {', '.join(DESIGNS)}")
    ap.add_argument("src", nargs="?", type=Path, help="import: a GPU machine's run --out folder")
    ap.add_argument("--device", default=None, help="import: the GPU's name (nvidia-smi), recorded per seed")
    add_run_arguments(ap, "run: seeds N-M (default: the design's)")
    ap.set_defaults(out=None)
    args = ap.parse_args(argv)
    try:
        d = design(args.design)
        args.out = d.runs if args.out == RESULTS / "runs" else args.out  # a design of another build: its own runs/
        if args.what == "run":
            print(run(d, args))
        elif args.what == "status":
            where = [*(d.regime_seeds or (d.regime,)), *([d.build] if d.build else []),
                     *(["held-out"] if d.split == HELDOUT_X else [])]
            print(seeds_line(f"{d.tag} ({', '.join(where)})", len(d.seeds), missing(d, args.out), d.cutoff))
        elif args.what == "render":
            sys.stdout.write(committed_table(d.id))
        elif args.what == "import":  # its complete seeds, each recorded as computed on the device
            if args.src is None or not args.device:
                raise ValueError("import needs a GPU machine's run --out folder and --device NAME")
            print(f"imported seeds {import_runs(args.src, args.device, args.out, d.regime, d.evaluates)} as {args.device}")
        else:
            sys.stdout.write(write_json(args.json or d.analysis, analyse(d, args.out)))
    except ValueError as e:
        print(f"ddrl.study: {e}", file=sys.stderr)
        return 2
    return 0
