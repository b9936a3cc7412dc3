"""COR alone in AMC-like and AIME-like, on the adapted and on fresh questions (plan Amendment 34).

Amendments 30-33 found in MATH-500-like that COR alone (``cor_only``: one COR call from the untrained model, no RL
phase; :data:`ddrl.study.plan.REFINED`) gains over the untrained model and ends above DDRL at both learning rates.
Amendment 34 asks the same in the registered study's two other regimes (:data:`SEEDS`: their registered seeds),
paired with their registered runs: K3 (COR alone - no adaptation), K5 (DDRL at the default lr - COR alone) in
``amc_like`` and ``aime_like``, K4 (DDRL at lr/10 - COR alone) in ``amc_like_small_lr``, whose COR alone is
``amc_like``'s (it runs no RL: the same computation, :data:`READS_FROM`); on H1x's fresh questions K3x and K5x.

    python -m ddrl.study.amendments.cor_alone run --workers 2        # 25 COR runs, seed by seed, resumable
    python -m ddrl.study.amendments.cor_alone heldout --workers 2    # the same COR recomputed and evaluated on the fresh questions
    python -m ddrl.study.amendments.cor_alone status
    python -m ddrl.study.amendments.cor_alone analyse --json results/cor_alone/adapted.json
    python -m ddrl.study.amendments.cor_alone analyse --heldout --json results/cor_alone/heldout.json
    python -m ddrl.study.amendments.cor_alone figure                 # docs/results/cor_alone.{png,pdf} (descriptive)

Amendment 35 asks K3 and K4 again, and adds the untrained runs the replication lacked, on the second pinned build
(``c49d994e...``, Amendment 6's replication, whose one regime is ``amc_like_small_lr``): ``--build c49d`` (run it with
that build's cache, ``DDRL_CACHE_DIR``; :data:`DESIGNS`).

    DDRL_CACHE_DIR=<cache> python -m ddrl.study.amendments.cor_alone run --build c49d --workers 2   # untrained + COR alone, 19 seeds
    python -m ddrl.study.amendments.cor_alone analyse --build c49d --json results/replication_c49d/cor_alone.json

Amendment 36 does the same on the Xeon build (``abcbf433...``, Amendment 5's replication, recovered): COR alone in
AMC-like and MATH-500-like beside that replication's 12 seeds (K3, K5), and TTRL and DDRL at lr/10 from seed 0 as far
as the session's clock allowed (K4 on the complete seeds; P1, P2, M1 by ``python -m ddrl.study --analyse claims``):
``--build xeon``. Amendment 37 ran more of those lr/10 seeds (toward 11) under its own clock; ``run`` ends its budget
at the design's clock, so no lr/10 job starts after it. Amendment 38 evaluates those lr/10 runs (and COR alone,
recomputed) on H1x's 1,536 fresh questions, the H1x family there (:data:`HELDOUT_LR10`); it trains nothing.

    DDRL_CACHE_DIR=<cache> python -m ddrl.study.amendments.cor_alone heldout --build xeon --workers 2   # 12 jobs, 5 evaluations each
    python -m ddrl.study.amendments.cor_alone analyse --build xeon --heldout --json results/replication_xeon/cor_alone_heldout.json
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ddrl.study.claims import amendment_entry, load as load_claims
from ddrl.run.pool import clock_budget, minutes_to
from ddrl.report.plotting import color, label, save_docs_figure
from ddrl.run.storage import cache_root, write_json
from ddrl.seeds import numpy_generator, seed_range
from ddrl.study.analysis import paired_matrix, same_as_registered
from ddrl.study.plan import (COR_ONLY, HELDOUT_X, NO_RL, PAIRED, RESULTS, SAME_BASE, SCALES, SMALL_LR, Job, adapted_x_path,
                             check_weights, csv_path, heldout_x_path, regimes_path, untrained)
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import VERDICT_MD, below_cell, entry_cell, entry_ci
from ddrl.study.analysis import level_table, missing_seeds, reproduced_counts, run_levels
from ddrl.study.figures import levels_panel

#: The regimes COR alone runs in, each on its registered seeds (Amendment 34)
SEEDS = {"amc_like": tuple(range(19)), "aime_like": tuple(range(6))}
OUT = RESULTS / "cor_alone"
RUNS = RESULTS / "runs"  # the CSVs, beside the registered regimes'
#: A regime whose claims read COR alone from another regime's CSVs (the same computation: it runs no RL)
READS_FROM = {SMALL_LR: SAME_BASE[SMALL_LR]}
#: Amendment 34's claims on the adapted questions: (id, regime) -> (a, b, comparison); pass@1 a - b per seed and
#: question, sign +1, margin 1, the ids of Amendments 30 and 32 (K4: DDRL at lr/10, K5: at the default lr)
_K3 = (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation")
_K4 = ("ddrl", COR_ONLY, "DDRL at lr/10 - COR alone")
_K5 = ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone")
CLAIMS = {("K3", "amc_like"): _K3, ("K5", "amc_like"): _K5, ("K4", SMALL_LR): _K4, ("K3", "aime_like"): _K3,
          ("K5", "aime_like"): _K5}
#: On H1x's fresh questions (held-out pass@1; DDRL is the registered default-lr run's H1x evaluation)
HELDOUT_CLAIMS = {("K3x", "amc_like"): (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation, held-out"),
                  ("K5x", "amc_like"): ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone, held-out"),
                  ("K3x", "aime_like"): (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation, held-out"),
                  ("K5x", "aime_like"): ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone, held-out")}
MARGIN = 1.0
#: The plan's predicted half-widths at the registered seeds (from the committed P2 / M1 / H1x components)
PREDICTED = {("K3", "amc_like"): "3.98", ("K5", "amc_like"): "1.81-3.98", ("K4", SMALL_LR): "2.03-3.93",
             ("K3", "aime_like"): "0.98", ("K5", "aime_like"): "0.00-0.98",
             ("K3x", "amc_like"): "0.28-1.41", ("K5x", "amc_like"): "0.28-1.41",
             ("K3x", "aime_like"): "0.13-0.55", ("K5x", "aime_like"): "0.13-0.55"}
#: Amendment 38 (the Xeon build): the registered H1x family (:data:`ddrl.study.plan.PAIRED`) and Amendment 33's K3x,
#: K4x at lr/10 in AMC-like, held-out pass@1 a - b; the plan's predicted half-widths at 12 x 1,536 from the registered
#: build's default-lr AMC-like matrices / its MATH-500-like lr/10 ones
HELDOUT_LR10 = {**{(cid, SMALL_LR): (*PAIRED[cid][:2], f"{what}, held-out") for cid, what in (
    ("H1x", "DDRL at lr/10 - no adaptation"), ("H1xT", "TTRL at lr/10 - no adaptation"), ("H1xD", "DDRL - TTRL at lr/10"),
    ("H1xC", "DDRL - BCS+DAE at lr/10"), ("H1xR", "BCS+DAE - TTRL at lr/10"))},
                ("K3x", SMALL_LR): (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation, held-out"),
                ("K4x", SMALL_LR): ("ddrl", COR_ONLY, "DDRL at lr/10 - COR alone, held-out")}
PREDICTED_LR10 = dict(zip(HELDOUT_LR10, ("1.50 / 0.96", "1.47 / 0.37", "1.25 / 0.72", "0.33 / 0.69", "1.20 / 0.16",
                                        "0.60 / 0.78", "1.39 / 0.49")))  # H1x, H1xT, H1xD, H1xC, H1xR, K3x, K4x
#: The runs the claims read, in the tables' order (the held-out ones of Amendment 38: :data:`HELDOUT_ORDER`)
METHODS = ("no_adaptation", "ddrl", COR_ONLY)
HELDOUT_ORDER = ("no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_ONLY)
LEVEL_NAME = {"amc_like": "AMC-like", SMALL_LR: "AMC-like at lr/10", "aime_like": "AIME-like",
              "math500_like": "MATH-500-like"}


@dataclass(frozen=True)
class Design:
    """One build's COR-alone comparisons: the study it joins (``results``: its regimes file names the build,
    :func:`ddrl.study.plan.regimes_path`; its CSVs under ``results/runs``), the regimes' seeds, the claims, the methods
    ``run`` computes, and the regimes whose no-RL runs are another regime's CSVs (``reads_from``)."""

    amendment: int
    results: Path
    seeds: dict[str, tuple[int, ...]]
    claims: dict
    heldout_claims: dict
    runs: dict[str, tuple[tuple[str, ...], ...]]  # per regime, the method groups ``run`` computes (one job each)
    reads_from: dict[str, str]
    predicted: dict  # the plan's predicted half-widths, as the table prints them
    analyses: tuple[Path, ...]  # the committed analyses (adapted; held-out where the design has it)
    name: str  # the figure's file name under docs/results/
    runs_called: str  # what the figure's title calls the runs COR alone stands beside
    partial: tuple[str, ...] = ()  # regimes run as far as a clock allowed: analysed on their complete seeds
    cutoff: str | None = None  # the plan's clock (UTC, ISO): after it ``run`` schedules no job in a partial regime
    extended_by: int | None = None  # a later amendment that ran more seeds of a partial regime under its own clock
    heldout_runs: tuple[str, ...] = (COR_ONLY,)  # what ``heldout`` evaluates (the other runs' H1x CSVs exist)
    heldout_by: int | None = None  # the amendment of the held-out claims, where a later one added them

    @property
    def out(self) -> Path:
        return self.results / "runs"

    @property
    def tag(self) -> str:
        """``Amendment N``, or ``Amendments N and M`` where a later one extended it."""
        if self.extended_by:
            return f"Amendments {self.amendment} and {self.extended_by}"
        return f"Amendment {self.amendment}"

    @property
    def heldout_tag(self) -> str:
        return f"Amendment {self.heldout_by}" if self.heldout_by else self.tag


_XEON = RESULTS / "replication_xeon"
#: Amendment 34 on the registered build; Amendment 35 on the ``c49d994e...`` build, at lr/10 only (the replication's
#: one regime): the untrained model and COR alone run in that regime itself (no RL: the same computation as in
#: ``amc_like``, measured for seed 0 before the amendment), K3 and K4 with the registered build's half-widths as the
#: predictions (the same design); Amendment 36 on the Xeon build ``abcbf433...`` (Amendment 5's replication): COR
#: alone in AMC-like and MATH-500-like beside that replication's runs, and TTRL and DDRL at lr/10 as far as the
#: session's clock allowed (seeds from 0), K4 reading AMC-like's COR alone as Amendment 34 does; Amendment 37 ran
#: more of those lr/10 seeds (toward 11) under its own clock, 18:00 UTC (Amendment 36's 14:30 had given seeds 0-3);
#: Amendment 38 evaluates them, the untrained model and COR alone on the fresh questions (``heldout_by``)
DESIGNS = {
    "registered": Design(34, RESULTS, SEEDS, CLAIMS, HELDOUT_CLAIMS, {r: ((COR_ONLY,),) for r in SEEDS}, READS_FROM,
                         PREDICTED, (OUT / "adapted.json", OUT / "heldout.json"), "cor_alone", "the registered runs"),
    "c49d": Design(35, RESULTS / "replication_c49d", {SMALL_LR: tuple(range(19))},
                   {("K3", SMALL_LR): _K3, ("K4", SMALL_LR): _K4}, {},
                   {SMALL_LR: (("no_adaptation", COR_ONLY),)}, {}, {("K3", SMALL_LR): "3.04", ("K4", SMALL_LR): "3.30"},
                   (RESULTS / "replication_c49d" / "cor_alone.json",), "cor_alone_c49d",
                   "the c49d994e build's runs"),
    "xeon": Design(36, _XEON, {"amc_like": tuple(range(12)), "math500_like": tuple(range(12)),
                               SMALL_LR: tuple(range(12))},
                   {("K3", "amc_like"): _K3, ("K5", "amc_like"): _K5, ("K3", "math500_like"): _K3,
                    ("K5", "math500_like"): _K5, ("K4", SMALL_LR): _K4}, HELDOUT_LR10,
                   {"amc_like": ((COR_ONLY,),), "math500_like": ((COR_ONLY,),), SMALL_LR: (("ttrl",), ("ddrl",))},
                   READS_FROM, {("K3", "amc_like"): "3.08", ("K5", "amc_like"): "3.95", ("K3", "math500_like"): "2.19",
                                ("K5", "math500_like"): "3.51", ("K4", SMALL_LR): "3.36 / 3.62", **PREDICTED_LR10},
                   (_XEON / "cor_alone.json", _XEON / "cor_alone_heldout.json"), "cor_alone_xeon", "the Xeon build's runs",
                   partial=(SMALL_LR,), cutoff="2026-11-28T18:00:00+00:00", extended_by=37, heldout_runs=HELDOUT_ORDER,
                   heldout_by=38),
}
REGISTERED = DESIGNS["registered"]


def jobs(seeds: dict[str, Sequence[int]] = SEEDS, design: Design = REGISTERED, now: float | None = None) -> list[Job]:
    """The design's runs (COR alone; with the untrained model on a build that has none), regime by regime (AMC-like
    first), seed by seed; none in a ``partial`` regime once its ``cutoff`` has passed (``now``: epoch seconds,
    default the clock), so a rerun after the plan's clock never adds seeds its analysis would then read."""
    left = None if design.cutoff is None else minutes_to(design.cutoff, now)
    closed = left is not None and left < 0
    return [Job(r, s, ms, "K cor alone") for r, ss in seeds.items() if not (closed and r in design.partial)
            for s in ss for ms in design.runs[r]]


def budget_min(design: Design, regimes: Sequence[str], budget: float | None = None,
               now: float | None = None) -> float | None:
    """The jobs' budget: ``budget``, cut to the minutes left before the design's cutoff where ``regimes`` include a
    ``partial`` one, so no job in it starts after the plan's clock (:func:`jobs` schedules none once it has passed)."""
    return clock_budget(design.cutoff, budget, now) if set(regimes) & set(design.partial) else budget


def heldout_jobs(seeds: dict[str, Sequence[int]] = SEEDS, design: Design = REGISTERED) -> list[Job]:
    """The design's ``heldout_runs`` (COR alone recomputed; Amendment 38's lr/10 runs loaded) evaluated on the regime's
    fresh questions, one job per regime and seed: the study's H1x job (:func:`ddrl.study.jobs.run_heldout_x_job`)."""
    return [Job(r, s, design.heldout_runs, "H1x") for r, ss in seeds.items() for s in ss]


def heldout_methods(design: Design, regime: str) -> list[str]:
    """The methods the design's held-out claims in ``regime`` read, in the tables' order."""
    used = {m for (_, r), (a, b, _) in design.heldout_claims.items() if r == regime for m in (a, b)}
    return [m for m in HELDOUT_ORDER if m in used]


def needed(seeds: dict[str, Sequence[int]] = SEEDS, design: Design = REGISTERED) -> dict[str, list[tuple[str, str]]]:
    """Per regime of ``seeds``, the (regime, method) CSVs its seeds' adapted claims read, in the tables' order: a
    claim in a regime without seeds of its own takes them from ``reads_from``'s regime, whose CSVs its no-RL runs are."""
    need: dict[str, list[tuple[str, str]]] = {r: [] for r in seeds}
    for (_, r), (a, b, _) in design.claims.items():
        src = design.reads_from.get(r, r)
        key = r if r in seeds else src
        if key in need:
            need[key] += [(src if m in NO_RL else r, m) for m in (a, b)]
    order = {m: i for i, m in enumerate(METHODS)}
    return {r: sorted(set(cs), key=lambda c: (c[0] != r, c[0], order[c[1]])) for r, cs in need.items()}


def _written(out: str | Path, csvs: Sequence[tuple[str, str]], seed: int) -> bool:
    """Whether every (regime, method) CSV of ``seed`` is under ``out``."""
    return all(csv_path(out, g, m, seed).is_file() for g, m in csvs)


def missing(out: str | Path = RUNS, seeds: dict[str, Sequence[int]] = SEEDS,
            design: Design = REGISTERED) -> dict[str, list[int]]:
    """Per regime of ``seeds``, the seeds without a CSV the adapted claims read (:func:`needed`)."""
    need = needed(seeds, design)
    return {r: [s for s in ss if not _written(out, need[r], s)] for r, ss in seeds.items()}


def heldout_missing(out: str | Path = RUNS, seeds: dict[str, Sequence[int]] = SEEDS,
                    design: Design = REGISTERED) -> dict[str, list[int]]:
    """Per regime, the seeds without every held-out evaluation the fresh-question claims read."""
    return {r: missing_seeds(Path(out) / HELDOUT_X, r, heldout_methods(design, r), ss) for r, ss in seeds.items()}


def shown(seeds: Sequence[str], design: Design) -> list[str]:
    """The regimes a table or figure shows on their own: not those reading their no-RL runs from a regime in ``seeds``
    (their runs are shown beside that regime's, :func:`beside`)."""
    return [r for r in seeds if design.reads_from.get(r) not in seeds]


def beside(regime: str, design: Design) -> list[str]:
    """``regime`` and the regimes reading its no-RL runs (lr/10), whose runs its table block and panel show too."""
    return [regime, *(g for g, src in design.reads_from.items() if src == regime)]


def committed(design: Design) -> list[dict] | None:
    """The design's committed analyses (adapted; held-out where it has them), or None before they are written."""
    return [json.loads(p.read_text()) for p in design.analyses] if all(p.is_file() for p in design.analyses) else None


def analysis_seeds(out: str | Path, design: Design) -> dict[str, tuple[int, ...]]:
    """The seeds the design's analysis reads: all of them, except in its ``partial`` regimes (run as far as a clock
    allowed), where the seeds with every CSV the claims read and every run the design made there (at least 2)."""
    seeds = dict(design.seeds)
    need = needed(seeds, design)
    for r in design.partial:
        made = [(r, m) for group in design.runs[r] for m in group]
        seeds[r] = tuple(s for s in seeds[r] if _written(out, need[r] + made, s))
        if len(seeds[r]) < 2:
            raise ValueError(f"{out}: {design.tag}'s {r} has {len(seeds[r])} complete seeds; its "
                             "analysis needs at least 2")
    return seeds


def _refuse(miss: dict[str, list[int]], out: str | Path, what: str, design: Design) -> None:
    left = {r: s for r, s in miss.items() if s}
    if left:
        raise ValueError(f"{out}: {design.tag} incomplete, {what} missing for seeds {left}; the plan "
                         "reads no estimate before every seed is complete")


def load(out: str | Path = RUNS, seeds: dict[str, Sequence[int]] = SEEDS, design: Design = REGISTERED) -> pd.DataFrame:
    """The per-question rows the adapted claims read (:func:`needed`): per regime, seed by seed, its own runs; then
    the runs of the regimes that read a regime's no-RL runs."""
    need = needed(seeds, design)
    paths = [csv_path(out, g, m, s) for own in (True, False) for r in seeds for s in seeds[r] for g, m in need[r]
             if (g == r) == own]
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in dict.fromkeys(paths)], ignore_index=True)


def matrix(df: pd.DataFrame, cid: str, regime: str, split: str = "adapted", design: Design = REGISTERED) -> pd.DataFrame:
    """A claim's seeds x questions matrix (points), a - b; the registered K4's COR alone is ``amc_like``'s
    (``ddrl.study.plan.NO_RL``: it runs no RL, so it is one computation at both learning rates)."""
    a, b, _ = (design.claims if split == "adapted" else design.heldout_claims)[cid, regime]
    return paired_matrix(df, regime, a, b, split)


def _entries(df: pd.DataFrame, split: str, n_boot: int, design: Design) -> list[dict]:
    """``claims.json``-schema entries (no paper number; sign +1): the registered bootstrap (stream
    ``derive_seed(0, "claims", id, regime)``), margin and rule."""
    metric = "adapted pass@1" if split == "adapted" else "held-out pass@1"
    claims = design.claims if split == "adapted" else design.heldout_claims
    return [amendment_entry(cid, regime, what, f"{metric}, {what} [points]", a, b,
                            matrix(df, cid, regime, split, design).to_numpy(), MARGIN, n_boot)
            for (cid, regime), (a, b, what) in claims.items()]


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: dict[str, Sequence[int]] = SEEDS,
            design: Design = REGISTERED) -> dict:
    """The adapted claims once every CSV they read is written: ``entries``; descriptive, ``levels`` (each run's mean
    adapted pass@1 and maj@16 over the seeds, with how many seeds end below the untrained run), ``cor_kept`` (COR
    alone's kept rollouts per run, mean over the seeds) and ``seed_pass1`` (each run's level)."""
    _refuse(missing(out, seeds, design), out, "a CSV the adapted claims read", design)
    df = load(out, seeds, design)
    entries = _entries(df, "adapted", n_boot, design)
    a = df[df.split == "adapted"]
    per = run_levels(df).merge(run_levels(df, value="maj@n", name="maj"), on=["regime", "method", "seed"])
    lv = []
    for r in shown(seeds, design):  # a regime's runs, then those of the regimes reading its COR alone (lr/10)
        sub = per[per.regime.isin(beside(r, design))]
        t = level_table(sub, ("regime", "method"), sort=False)
        t["maj"] = sub.groupby(["regime", "method"], sort=False)["maj"].mean().to_numpy()
        lv += t.to_dict(orient="records")
    kept = a[a.method == COR_ONLY].drop_duplicates(["regime", "seed"]).groupby("regime", sort=False)["cor_kept"].mean()
    return {"seeds": {r: list(s) for r, s in seeds.items()}, "entries": entries, "levels": lv,
            "cor_kept": {r: float(k) for r, k in kept.items()}, "seed_pass1": per.to_dict(orient="records")}


def heldout_seeds(design: Design) -> dict[str, tuple[int, ...]]:
    """The seeds of the regimes the design's held-out claims are in."""
    return {r: ss for r, ss in design.seeds.items() if any(g == r for _, g in design.heldout_claims)}


def adapted_path(out: str | Path, regime: str, method: str, seed: int) -> Path:
    """Where a run's adapted rows lie: beside its H1x CSV where its job wrote them (no CSV of its own), else its CSV."""
    side = adapted_x_path(out, regime, method, seed)
    return side if side.is_file() else csv_path(out, regime, method, seed)


def _adapted_rows(out: str | Path, regime: str, method: str, seed: int) -> pd.DataFrame:
    """An H1x run's adapted rows (:func:`adapted_path`)."""
    rows = pd.read_csv(adapted_path(out, regime, method, seed), dtype={"question": str})
    return rows[rows.split == "adapted"]


def analyse_heldout(out: str | Path = RUNS, n_boot: int = 4000, seeds: dict[str, Sequence[int]] = SEEDS,
                    design: Design = REGISTERED) -> dict:
    """The held-out claims (K3x, K5x; Amendment 38's H1x family, K3x, K4x) once every evaluation is written: ``entries``;
    descriptive, each run's mean held-out pass@1 (``levels``; per run ``seed_pass1``), how many runs ``heldout`` computed
    have adapted rows equal to their committed CSV (``registered_reproduced`` of ``registered_checked``) and, in a regime
    reading its no-RL runs from another (``reads_from``), how many equal that one's (``same_as_base`` of ``..._checked``)."""
    _refuse(heldout_missing(out, seeds, design), out, "a held-out evaluation", design)
    df = pd.concat([pd.read_csv(heldout_x_path(out, r, m, s), dtype={"question": str})
                    for r in seeds for m in heldout_methods(design, r) for s in seeds[r]], ignore_index=True)
    entries = _entries(df, HELDOUT_X, n_boot, design)
    per = run_levels(df, HELDOUT_X)
    lv = pd.concat([level_table(per[per.regime == r], ("method",), sort=False).assign(regime=r) for r in seeds])
    runs = df[df.method.isin(design.heldout_runs)].drop_duplicates(["regime", "method", "seed"])
    res = {"seeds": {r: list(s) for r, s in seeds.items()}, "entries": entries, "levels": lv.to_dict(orient="records"),
           "seed_pass1": per.to_dict(orient="records"), **reproduced_counts(runs)}
    same = [same_as_registered(_adapted_rows(out, r, m, s), csv_path(out, design.reads_from[r], m, s))
            for r in seeds if r in design.reads_from for m in heldout_methods(design, r) if m in NO_RL for s in seeds[r]]
    if same:
        res |= {"same_as_base": sum(x is True for x in same), "same_as_base_checked": sum(x is not None for x in same)}
    return res


def _entry_rows(entries: Sequence[dict], design: Design) -> list[str]:
    return [f"| {e['id']} {e['claim']} | {LEVEL_NAME[e['regime']]} | {e['n_seeds']} x {e['n_questions']:,} | "
            f"{entry_ci(e)} | {e['half_width']:.2f} ({design.predicted[e['id'], e['regime']]}) | "
            f"{VERDICT_MD[e['verdict']]} |" for e in entries]


def markdown(res: dict, held: dict | None = None, design: Design = REGISTERED) -> str:
    """The design's table as docs/results.md quotes it (adapted, then fresh questions), then the adapted levels."""
    rows = ["| claim (pass@1, points) | regime | seeds x questions | estimate [95% CI] | half-width (predicted) | "
            "verdict |", "|---|---|---|---|---|---|", *_entry_rows((*res["entries"], *(held or {}).get("entries", ())),
                                                                     design)]
    rows += ["", "| regime | method | adapted pass@1, mean over seeds (SD) | maj@16 | seeds below the untrained run |",
             "|---|---|---|---|---|"]
    rows += [f"| {LEVEL_NAME[r['regime']]} | {r['method']} | {r['pass1']:.1f} ({r['sd']:.1f}) | {r['maj']:.1f} | "
             f"{below_cell(r)} |"
             for r in res["levels"]]
    return "\n".join(rows) + "\n"


#: Amendment 38's table beside each entry: the registered build's default-lr AMC-like entry of the same comparison
#: (K4x's is K5x: DDRL at the default lr - COR alone), other build and seeds, read across
ACROSS = {"K4x": "K5x"}


def heldout_markdown(held: dict, registered: Sequence[dict], design: Design) -> str:
    """A design's held-out claims (Amendment 38) as docs/results.md quotes them, each beside the registered build's
    default-lr AMC-like entry (``registered``: ``results/claims.json``'s and Amendment 34's held-out entries;
    :data:`ACROSS`); then each run's held-out pass@1 over the seeds (descriptive)."""
    reg = {(e["id"], e["regime"]): e for e in registered}
    rows = [f"| claim (held-out pass@1, points) | registered build, default lr, AMC-like | **{design.runs_called}, "
            f"{design.heldout_tag}** | half-width (predicted) | verdict |", "|---|---|---|---|---|"]
    for e in held["entries"]:
        b = reg[ACROSS.get(e["id"], e["id"]), "amc_like"]
        rows.append(f"| {e['id']} {e['claim']} | {entry_cell(b)} | **{entry_ci(e)}**, "
                    f"{e['n_seeds']} x {e['n_questions']:,} | {e['half_width']:.2f} "
                    f"({design.predicted[e['id'], e['regime']]}) | {VERDICT_MD[e['verdict']]} |")
    rows += ["", "| regime | method | held-out pass@1, mean over seeds (SD) | seeds below the untrained run |",
             "|---|---|---|---|"]
    rows += [f"| {LEVEL_NAME[r['regime']]} | {r['method']} | {r['pass1']:.1f} ({r['sd']:.1f}) | {below_cell(r)} |"
             for r in held["levels"]]
    return "\n".join(rows) + "\n"


def report(got: Sequence[dict], design: Design) -> str:
    """The design's tables from its committed analyses (:func:`committed`), as docs/results.md quotes them; Amendment
    38's held-out claims in their own table, beside the registered build's entries (:func:`heldout_markdown`)."""
    if not design.heldout_by:
        return markdown(*got, design=design)
    registered = load_claims(RESULTS / "claims.json") + committed(REGISTERED)[1]["entries"]
    return markdown(got[0], design=design) + "\n" + heldout_markdown(got[1], registered, design)


def figure(res: dict, held: dict | None = None, design: Design = REGISTERED):
    """Descriptive (the paired intervals are the entries'): each run's adapted pass@1 (and held-out pass@1, where the
    design has it), one dot per seed, one row per split and one column per regime shown
    (:func:`ddrl.study.figures.levels_panel`)."""
    splits = [(res, "adapted pass@1 (%)", "adapted"), *([(held, "held-out pass@1 (%)", "fresh")] if held else [])]
    rows = [[(r, *split) for r in shown(split[0]["seeds"], design)] for split in splits]
    n_cols = max(map(len, rows))
    fig, axes = plt.subplots(len(rows), n_cols, figsize=(5.5 * n_cols, 4.2 * len(rows)), squeeze=False)
    rng = numpy_generator(0, "figure", design.name)
    for ax_row, panels in zip(axes, rows):
        for ax in ax_row[len(panels):]:
            ax.set_axis_off()
        for ax, (r, data, ylabel, what) in zip(ax_row, panels):
            per = pd.DataFrame(data["seed_pass1"])
            per = per[per.regime.isin(beside(r, design))]
            name = per.method.map(lambda m: "COR alone (no RL)" if m == COR_ONLY else label(m))
            per["run"] = name.where(per.regime == r, name + "\nlr/10")
            palette = dict(zip(per.run, per.method.map(color)))
            n_q = next(e["n_questions"] for e in data["entries"] if e["regime"] == r)
            levels_panel(ax, per, list(dict.fromkeys(per.run)), palette, rng, ylabel,
                         f"{LEVEL_NAME[r]}: {n_q:,} {what} questions")
            sns.despine(ax=ax)
    tag = design.tag if not held or design.heldout_tag == design.tag else f"{design.tag}; held-out: {design.heldout_tag}"
    title = (f"COR alone (consensus SFT from the untrained model) beside {design.runs_called} "
             f"(plan {tag}; descriptive)")
    fig.suptitle(textwrap.fill(title, 16 * fig.get_figwidth()), fontsize=10)  # ~16 characters an inch at 10 pt
    fig.tight_layout()
    return fig


def seeds_line(what: str, total: int, missing: Sequence[int], cutoff: str | None = None) -> str:
    """:func:`ddrl.study.designs.seeds_line`, copied until this module's designs are rows (designs imports it)."""
    clock = "" if cutoff is None else f"; minutes to the clock {minutes_to(cutoff):.0f}"
    return f"{what}: {total - len(missing)} of {total} seeds complete; missing {list(missing)}{clock}"


def add_run_arguments(ap: argparse.ArgumentParser, seeds_help: str) -> None:
    """:func:`ddrl.study.designs.add_run_arguments`, copied until this module's designs are rows."""
    ap.add_argument("--seeds", type=seed_range, default=None, help=seeds_help)
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=RUNS, help=f"the CSVs (default {RUNS})")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--json", type=Path, default=None, help="analyse: write the result here")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.cor_alone", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "heldout", "status", "analyse", "figure"))
    add_run_arguments(ap, "run, heldout: seeds N-M in every regime (default: each regime's registered seeds)")
    ap.set_defaults(out=None)
    ap.add_argument("--build", choices=sorted(DESIGNS), default="registered",
                    help="registered: Amendment 34; c49d: Amendment 35; xeon: Amendments 36-38 (run, heldout: with "
                         "that build's cache, DDRL_CACHE_DIR)")
    ap.add_argument("--regimes", nargs="+", default=None, help="run, heldout (default: every regime of the build's)")
    ap.add_argument("--heldout", action="store_true", help="analyse: the fresh-question claims")
    args = ap.parse_args(argv)
    design = DESIGNS[args.build]
    out = args.out or design.out
    held = args.what == "heldout" or args.heldout
    have = heldout_seeds(design) if held else design.seeds
    regimes = args.regimes or list(have)
    if set(regimes) - set(have) or not have:
        ap.error(f"--build {args.build} has the {'held-out ' if held else ''}regimes {sorted(have)}"
                 f"{'' if design.heldout_claims else ' and no held-out claims'}")
    seeds = {r: args.seeds or design.seeds[r] for r in regimes}
    tag = design.heldout_tag if held else design.tag
    if args.what in ("run", "heldout"):
        check_weights(regimes_path(design.results), SCALES[args.scale])  # the measured base build, never a new one
        runs_root = args.runs_root or cache_root() / "runs"
        left = {r: untrained(seeds[r], runs_root, args.scale, r) for r in regimes
                if held and set(design.heldout_runs) - set(NO_RL)}
        if any(left.values()):  # Amendment 38 evaluates finished runs: training one anew would be a new run
            raise SystemExit(f"{tag} evaluates finished runs; not finished under {runs_root}: {left}")
        todo = jobs(seeds, design) if args.what == "run" else heldout_jobs(seeds, design)
        status = run_jobs(todo, SCALES[args.scale], out, runs_root, budget_min(design, regimes, args.budget_min),
                          args.workers, desc=f"{tag} {args.what}", regimes=regimes_path(design.results))
        print(status_counts(status))
    elif args.what == "status":
        parts = [("adapted", design.tag, missing(out, design.seeds, design))]
        if design.heldout_claims:
            parts.append(("held-out", design.heldout_tag, heldout_missing(out, heldout_seeds(design), design)))
        for what, name, miss in parts:
            for r, m in miss.items():
                print(seeds_line(f"{name} ({r}, {what})", len(design.seeds[r]), m))
    elif args.what == "figure":  # -> docs/results/<name>.{png,pdf}, from the committed analyses
        got = committed(design)
        if got is None:
            ap.error(f"{tag}'s analyses {[str(p) for p in design.analyses]} are not all written yet")
        print(save_docs_figure(figure(*got, design=design), design.name))
    else:
        res = (analyse_heldout(out, seeds=heldout_seeds(design), design=design) if args.heldout else
               analyse(out, seeds=analysis_seeds(out, design), design=design))
        sys.stdout.write(write_json(args.json, res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
