"""P1, P2 and M1 in MATH-500-like at the paper's small learning rate (plan Amendment 28).

The registered study measured its learning-rate dimension in AMC-like only (``amc_like_small_lr``: lr / 10, twice
the episodes; there P1, P2 and M1 came out *reproduced*). In MATH-500-like at the default lr TTRL and DDRL gain
nothing over the untrained model, and lose 7-9 points when they train three times longer (Amendment 26). This
amendment carries the registered lr/10 rule (:func:`ddrl.study.regimes.small_lr_regime`) over to MATH-500-like:
regime :data:`REGIME` (the same 256 questions at lr 3e-6 and 4 episodes, 128 RL steps), TTRL and DDRL on
:data:`SEEDS`, each seed paired with its registered MATH-500-like untrained run (``ddrl.study.plan.SAME_BASE``),
decided by the registered bootstrap and rule.

    python -m ddrl.study.amendments.small_lr regime          # results/regimes_small_lr.json from regimes_base.json (nothing measured)
    python -m ddrl.study.amendments.small_lr regime --results results/replication_xeon   # the Xeon build's (Amendment 44)
    python -m ddrl.study.amendments.small_lr run --workers 2 # resumable, seed by seed; the untrained runs are the registered ones
    python -m ddrl.study.amendments.small_lr status
    python -m ddrl.study.amendments.small_lr analyse --json results/small_lr/claims.json
    python -m ddrl.study.amendments.small_lr figure          # docs/results/small_lr.{png,pdf} (descriptive)

Plan Amendment 29 asks which part of DDRL carries M1 there (the registered ablation claims A1-A3 on the same regime),
Amendment 55 the same in AMC-like at lr/10, Amendments 52 and 53 COR against additional RL (C1, C2): rows of
:data:`ddrl.study.designs.DESIGNS` (``python -m ddrl.study run|status|analyse ablation``, ``ablation_amc``,
``extra_rl``, ``extra_rl_amc``).

Plan Amendment 49 asks Table 1's question there: TTRL without GRPO's std normalisation (``grpo_no_std``) against
TTRL (T1), a new RL run per seed of :data:`T1_SEEDS`, paired with Amendment 28's TTRL runs.

    python -m ddrl.study.amendments.small_lr run --table1 --workers 2
    python -m ddrl.study.amendments.small_lr analyse --table1 --json results/small_lr/table1.json

Plan Amendment 50 measures Table 1 as the paper's text describes it (T1f: fixed +1/-1 advantages on TTRL's random
subset, preset ``dae``, against TTRL) at both learning rates, its CSVs under ``<out>/table1_fixed/`` (apart from the
registered regimes' folders), its TTRL partners the committed runs:

    python -m ddrl.study.amendments.small_lr run --table1-fixed --workers 2
    python -m ddrl.study.amendments.small_lr analyse --table1-fixed --json results/small_lr/table1_fixed.json

Plan Amendment 51 gives T1f at the default lr the power Amendment 50 lacked, on fresh seeds (its verdict on them only):

    python -m ddrl.study.amendments.small_lr run --table1-fixed-more --workers 2
    python -m ddrl.study.amendments.small_lr analyse --table1-fixed-more --json results/small_lr/table1_fixed_more.json

Plan Amendments 43 and 44 set DDRL against the paper's stronger baseline, ETMR, there (on the registered and on the
Xeon build): the designs ``small_lr_etmr`` and ``small_lr_etmr_xeon`` of :mod:`ddrl.study.designs`
(``python -m ddrl.study run|status|analyse DESIGN``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.study.claims import amendment_entry, get as get_claim, validate, with_half_width
from ddrl.run.pool import minutes_to
from ddrl.report.plotting import color, label, save_docs_figure
from ddrl.study.regimes import small_lr_regime
from ddrl.run.storage import cache_root, write_json
from ddrl.seeds import numpy_generator, seed_range
from ddrl.study.analysis import claim_matrix, paired_matrix
from ddrl.study.plan import (RESULTS, SAME_BASE, SCALES, SMALL_LR, STEP_COLUMNS, Job, check_weights, csv_path,
                             load_regimes, regimes_path)
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import amendment_cells, below_cell, entry_cell, predicted_text
from ddrl.study.analysis import complete_seeds, level_table, missing_seeds, read_csvs, run_levels, wide_entry
from ddrl.study.figures import levels_vote_figure, vote_by_quarter

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
#: The learning rate of each base regime and its lr/10 one (AMC-like's: plan Amendment 46), as figures name it and as
#: the level tables' cell shows it
LR_NAME = {BASE_REGIME: "default lr", REGIME: "lr/10", "amc_like": "default lr", SMALL_LR: "lr/10"}
LR_CELL = {BASE_REGIME: "default (3e-5)", REGIME: "lr/10 (3e-6)", "amc_like": "default (3e-5)", SMALL_LR: "lr/10 (3e-6)"}
COMPARISON = {"P1": "TTRL - no adaptation", "P2": "DDRL - no adaptation", "M1": "DDRL - TTRL"}
#: The registered entries shown beside this amendment's: MATH-500-like at the default lr, AMC-like at lr/10
BESIDE = (("math500_like", "MATH-500-like, default lr"), ("amc_like_small_lr", "AMC-like at lr/10"))
#: Plan Amendment 49: T1 (Table 1) on seeds 0-11, ``grpo_no_std`` a new run per seed against Amendment 28's TTRL
T1_SEEDS = tuple(range(12))
T1_METHODS = ("grpo_no_std", "ttrl")
T1_COMPARISON = "TTRL without the std division - TTRL"
#: Amendment 49's predicted half-widths at 12 seeds x 256 questions: (registered MATH-500-like T1 components, Amendment
#: 28's M1 at lr/10, Amendment 29's A1 at lr/10)
T1_PREDICTED = (1.10, 1.84, 0.46)
#: Plan Amendment 50: T1f, the text's reading of Table 1 (``dae`` - TTRL), on seeds 0-11 at both learning rates; the
#: predicted half-widths per regime from (the registered T1, A2 matrices) at the default lr and (Amendment 28's M1,
#: Amendment 29's A2) at lr/10
T1F_SEEDS, T1F_REGIMES, T1F_DIR = tuple(range(12)), (BASE_REGIME, REGIME), "table1_fixed"
T1F_PREDICTED = {BASE_REGIME: (1.10, 0.95), REGIME: (1.84, 0.13)}
#: Plan Amendment 51: T1f at the default lr on the fresh seeds 12-45 (every one with a committed TTRL partner), its
#: verdict on them alone; predicted half-widths from (Amendment 50's T1f matrix there, the registered T1 matrix)
T1F_MORE_SEEDS, T1F_MORE_PREDICTED = tuple(range(12, 46)), (1.28, 0.69)


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


def t1_jobs(seeds: Sequence[int] = T1_SEEDS) -> list[Job]:
    """Amendment 49: ``grpo_no_std`` seed by seed (its TTRL partner is Amendment 28's run of the same seed: loaded)."""
    return [Job(REGIME, s, (m,), "T1 lr/10") for s in seeds for m in T1_METHODS]


def t1_missing(out: str | Path = RUNS, seeds: Sequence[int] = T1_SEEDS) -> list[int]:
    """The seeds of ``seeds`` whose ``grpo_no_std`` or TTRL CSV in :data:`REGIME` is not written yet."""
    return missing_seeds(out, REGIME, T1_METHODS, seeds)


def t1f_jobs(seeds: Sequence[int] = T1F_SEEDS, regimes: Sequence[str] = T1F_REGIMES) -> list[Job]:
    """Amendment 50: ``dae`` at the default lr, then at lr/10, seed by seed (run with ``out`` = ``<out>/table1_fixed``;
    the TTRL partners are the committed runs under ``<out>``, never jobs here); Amendment 51: ``regimes`` the default
    lr alone, ``seeds`` :data:`T1F_MORE_SEEDS`."""
    return [Job(r, s, ("dae",), f"T1f {LR_NAME[r]}") for r in regimes for s in seeds]


def t1f_missing(out: str | Path = RUNS, seeds: Sequence[int] = T1F_SEEDS,
                regimes: Sequence[str] = T1F_REGIMES) -> dict[str, list[int]]:
    """Per regime, the seeds of ``seeds`` whose ``dae`` CSV (under ``<out>/table1_fixed``) or TTRL CSV is missing."""
    return {r: sorted(set(seeds) - (set(complete_seeds(Path(out, T1F_DIR), r, ("dae",)))
                                    & set(complete_seeds(out, r, ("ttrl",))))) for r in regimes}


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


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = SEEDS) -> dict:
    """P1, P2 and M1 in :data:`REGIME` over ``seeds``, once every one of them is complete (the plan reads no mean
    before): ``entries`` (``claims.json``'s schema, with ``half_width``), and, descriptive, ``levels`` and the vote
    by quarter of the RL steps at both learning rates (``vote``) and each run's adapted pass@1 (``seed_pass1``)."""
    done = [s for s in done_seeds(out) if s in set(seeds)]
    if len(done) < len(seeds):
        raise ValueError(f"{out}: {len(done)} of {len(seeds)} seeds complete (missing "
                         f"{sorted(set(seeds) - set(done))}); the plan reads no estimate before all are")
    df = load(out, done)
    entries = [wide_entry(cid, claim_matrix(df, cid, REGIME), n_boot, REGIME, STANDS_FOR) for cid in CLAIMS]
    with_half_width(validate(entries, REGIME))
    steps = load(out, done, steps=True)
    vote = pd.concat([vote_by_quarter(seeds=done, regime=r, steps=steps) for r in (BASE_REGIME, REGIME)],
                     ignore_index=True)
    per = run_levels(df)  # descriptive: per (regime, method) the mean over seeds, seeds below their untrained run
    lv = level_table(per, ("regime", "method"), sort=False)
    return {"regime": REGIME, "seeds": done, "entries": entries, "levels": lv.to_dict(orient="records"),
            "seed_pass1": per.to_dict(orient="records"), "vote": vote.to_dict(orient="records")}


def ttrl_levels(df: pd.DataFrame, regimes: Sequence[str]) -> pd.DataFrame:
    """Descriptive: per regime of ``regimes`` (in that order) and method (in the order of ``df``'s rows) the mean
    adapted pass@1 over seeds, its SD, and the seeds in which the method ends below TTRL's run of the same seed."""
    per = run_levels(df)
    return pd.concat([level_table(per[per.regime == r], ("regime", "method"), reference="ttrl", sort=False)
                      for r in regimes], ignore_index=True)


def analyse_t1(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = T1_SEEDS) -> dict:
    """Amendment 49: T1 (``grpo_no_std`` - TTRL) in :data:`REGIME` over ``seeds``, once every one is complete:
    ``entries`` (``claims.json``'s schema, with ``half_width``); descriptive, ``levels`` (each method's mean adapted
    pass@1 at both learning rates, the seeds in which ``grpo_no_std`` ends below TTRL at the same learning rate) and
    the vote by quarter of the RL steps (``vote``) at both learning rates."""
    missing = t1_missing(out, seeds)
    if missing:
        raise ValueError(f"{out}: Amendment 49 incomplete, seeds missing {missing}; the plan reads no estimate before "
                         "every seed is complete")
    order = T1_METHODS[::-1]  # TTRL first: the levels' rows come in the order of the runs
    paths = [csv_path(out, r, m, s) for s in seeds for r in (REGIME, BASE_REGIME) for m in order]
    df = read_csvs(paths)
    entries = [wide_entry("T1", claim_matrix(df, "T1", REGIME), n_boot, REGIME, STANDS_FOR)]
    with_half_width(validate(entries, REGIME))
    lv = ttrl_levels(df, (BASE_REGIME, REGIME))
    steps = read_csvs(csv_path(out, r, m, s, steps=True) for s in seeds for r in (REGIME, BASE_REGIME) for m in order)
    vote = pd.concat([vote_by_quarter(seeds=seeds, regime=r, steps=steps) for r in (BASE_REGIME, REGIME)],
                     ignore_index=True)
    return {"regime": REGIME, "seeds": list(seeds), "entries": entries, "levels": lv.to_dict(orient="records"),
            "vote": vote.to_dict(orient="records")}


def t1f_entry(df: pd.DataFrame, regime: str, n_boot: int = 4000, stream: str | None = None) -> dict:
    """T1f (``dae`` - TTRL) in ``regime`` over the seeds of ``df``, with T1's Table 1 row (its MATH-500 number, sign +1
    and margin): Amendments 50 (stream: the regime) and 51 (streams ``<regime>/fresh``, ``<regime>/pooled``)."""
    t1 = get_claim("T1")
    return {**amendment_entry("T1f", regime, "fixed +1/-1 advantages instead of GRPO's help TTRL (Table 1, the paper's "
                              "text)", "pass@1 dae - GRPO [points]", "dae", "ttrl",
                              paired_matrix(df, regime, "dae", "ttrl", "adapted"), t1.margin, n_boot, stream=stream),
            "paper": t1.paper[STANDS_FOR]}


def analyse_t1f(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = T1F_SEEDS) -> dict:
    """Amendment 50: T1f (``dae`` - TTRL) in each of :data:`T1F_REGIMES` over ``seeds``, once all of them are complete
    in both: ``entries`` (``claims.json``'s schema, the paper's number Table 1's MATH-500 row, with ``half_width``);
    descriptive, ``levels``: TTRL, ``dae`` and, where Amendment 49 ran, ``grpo_no_std`` per learning rate, with the
    seeds in which each ends below TTRL."""
    missing = {r: m for r, m in t1f_missing(out, seeds).items() if m}
    if missing:
        raise ValueError(f"{out}: Amendment 50 incomplete, seeds missing per regime {missing}; the plan reads no "
                         "estimate before all are complete")
    paths = [*(csv_path(out, r, m, s) for r in T1F_REGIMES for s in seeds for m in T1_METHODS[::-1]),
             *(csv_path(Path(out, T1F_DIR), r, "dae", s) for r in T1F_REGIMES for s in seeds)]
    df = read_csvs(paths)
    entries = validate([t1f_entry(df, r, n_boot) for r in T1F_REGIMES], "table1_fixed")
    lv = ttrl_levels(df, T1F_REGIMES)
    return {"seeds": list(seeds), "entries": entries, "levels": lv.to_dict(orient="records")}


def analyse_t1f_more(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = T1F_MORE_SEEDS,
                     seen: Sequence[int] = T1F_SEEDS) -> dict:
    """Amendment 51: T1f at the default lr over the fresh ``seeds`` alone (``entries``, the verdict), once all are
    complete; descriptive, ``pooled``: the same bootstrap over ``seen`` and ``seeds`` together (not a test: ``seen``
    prompted the amendment), and ``levels``: TTRL, ``dae`` and ``grpo_no_std`` on ``seeds``."""
    missing = t1f_missing(out, seeds, (BASE_REGIME,))[BASE_REGIME]
    if missing:
        raise ValueError(f"{out}: Amendment 51 incomplete, seeds missing {missing}; the plan reads no estimate before "
                         "all are complete")
    both = sorted({*seen, *seeds})
    paths = [*(csv_path(out, BASE_REGIME, m, s) for s in both for m in T1_METHODS[::-1]),
             *(csv_path(Path(out, T1F_DIR), BASE_REGIME, "dae", s) for s in both)]
    df = read_csvs(paths)
    fresh = df[df.seed.isin(set(seeds))]
    entries = validate([t1f_entry(fresh, BASE_REGIME, n_boot, f"{BASE_REGIME}/fresh")], "table1_fixed_more")
    pooled = {k: v for k, v in t1f_entry(df, BASE_REGIME, n_boot, f"{BASE_REGIME}/pooled").items()
              if k != "verdict"}  # descriptive: no verdict
    return {"seeds": list(seeds), "seen": list(seen), "entries": entries, "pooled": pooled,
            "levels": ttrl_levels(fresh, (BASE_REGIME,)).to_dict(orient="records")}


def t1_markdown(res: dict, registered: Sequence[dict]) -> str:
    """Amendment 49's table as docs/results.md quotes it: the paper's MATH-500 number (Table 1), the registered
    MATH-500-like T1 at the default lr (``registered``: ``results/claims.json``'s entries), this amendment's entry,
    its half-width beside the plan's three predictions, and its verdict; then the descriptive levels."""
    reg = {(e["id"], e["regime"]): e for e in registered}
    rows = ["| claim (adapted pass@1, points) | paper (MATH-500) | MATH-500-like, default lr (registered) | "
            "**MATH-500-like at lr/10 (Amendment 49)** | half-width (predicted) | verdict |", "|---|---|---|---|---|---|"]
    for e in res["entries"]:
        b = reg[(e["id"], BASE_REGIME)]
        rows.append(f"| {e['id']} {T1_COMPARISON} | {e['paper']:+.1f} | {entry_cell(b)} | "
                    f"{amendment_cells(e, predicted_text(T1_PREDICTED))}")
    return "\n".join([*rows, "", *_levels_rows(res)]) + "\n"


def t1f_markdown(res: dict, registered: Sequence[dict], caption: dict, more: dict | None = None) -> str:
    """Amendment 50's table as docs/results.md quotes it: per learning rate the paper's MATH-500 number (Table 1), the
    caption's reading at that learning rate (``registered``: ``results/claims.json``'s entries, the default lr;
    ``caption``: Amendment 49's analysis, lr/10), T1f, its half-width beside the plan's predictions and its verdict
    (with ``more``, Amendment 51's analysis, its fresh seeds' row after the default lr's); then the levels (and
    ``more``'s)."""
    beside = {BASE_REGIME: next(e for e in registered if (e["id"], e["regime"]) == ("T1", BASE_REGIME)),
              REGIME: next(e for e in caption["entries"] if e["id"] == "T1")}
    rows = ["| learning rate | paper (MATH-500) | T1, the caption's reading (grpo_no_std - TTRL) | **T1f, the text's "
            "reading (dae - TTRL; Amendment 50)** | half-width (predicted) | verdict |", "|---|---|---|---|---|---|"]
    fresh = [(f"{LR_CELL[BASE_REGIME]}, fresh seeds {more['seeds'][0]}-{more['seeds'][-1]} (Amendment 51)", e,
              T1F_MORE_PREDICTED) for e in (more or {"entries": []})["entries"]]
    for name, e, pred in sorted([(LR_CELL[e["regime"]], e, T1F_PREDICTED[e["regime"]]) for e in res["entries"]]
                                 + fresh, key=lambda x: x[1]["regime"] != BASE_REGIME):  # stable: default lr first
        rows.append(f"| {name} | {e['paper']:+.1f} | {entry_cell(beside[e['regime']])} | "
                    f"{amendment_cells(e, predicted_text(pred))}")
    return "\n".join([*rows, "", *_levels_rows(res), *(["", *_levels_rows(more)] if more else [])]) + "\n"


def _levels_rows(res: dict) -> list[str]:
    """The descriptive levels of an analysis (``res["levels"]``) against TTRL, as Amendments 49 and 50 show them."""
    rows = [f"| method | learning rate | adapted pass@1, mean over seeds {res['seeds'][0]}-{res['seeds'][-1]} (SD) | "
            "seeds below TTRL at its lr |", "|---|---|---|---|"]
    return rows + [f"| {r['method']} | {LR_CELL[r['regime']]} | {r['pass1']:.1f} ({r['sd']:.1f}) | "
                   f"{below_cell(r, 'ttrl')} |" for r in res["levels"]]


def markdown(res: dict, registered: Sequence[dict]) -> str:
    """Amendment 28's table as docs/results.md quotes it: per claim the paper's MATH-500 number, the registered
    entries of :data:`BESIDE` (``registered``: ``results/claims.json``'s entries) with their seeds and verdicts, this
    amendment's entry, its half-width beside the plan's two predictions, and its verdict."""
    reg = {(e["id"], e["regime"]): e for e in registered}
    head = " | ".join(f"{name} (registered)" for _, name in BESIDE)
    rows = [f"| claim (adapted pass@1, points) | paper (MATH-500) | {head} | **MATH-500-like at lr/10 (Amendment 28)** | "
            "half-width (predicted) | verdict |", "|---|---|---|---|---|---|---|"]
    for e in res["entries"]:
        beside = " | ".join(entry_cell(reg[(e["id"], r)]) for r, _ in BESIDE)
        rows.append(f"| {e['id']} {COMPARISON[e['id']]} | {e['paper']:+.1f} | {beside} | "
                    f"{amendment_cells(e, predicted_text(PREDICTED_HALF_WIDTH[e['id']]))}")
    return "\n".join(rows) + "\n"


def levels_markdown(res: dict) -> str:
    """The descriptive levels (``res["levels"]``) as a table: per method and learning rate the mean adapted pass@1
    over the seeds (SD), and in how many seeds the run ends below its own untrained run."""
    rows = ["| method | learning rate | adapted pass@1, mean over seeds (SD) | seeds below their untrained run |",
            "|---|---|---|---|"]
    for r in res["levels"]:
        rows.append(f"| {r['method']} | {'-' if r['method'] == 'no_adaptation' else LR_CELL[r['regime']]} | "
                    f"{r['pass1']:.1f} ({r['sd']:.1f}) | {below_cell(r)} |")
    return "\n".join(rows) + "\n"


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
                              title, numpy_generator(0, "figure", REGIME), style="learning rate")


def seeds_line(what: str, total: int, missing: Sequence[int], cutoff: str | None = None) -> str:
    """A status line of the lr/10 amendments' command lines: how many of ``total`` seeds are complete, which are not,
    and with a plan's clock (``cutoff``) the minutes left to it."""
    clock = "" if cutoff is None else f"; minutes to the clock {minutes_to(cutoff):.0f}"
    return f"{what}: {total - len(missing)} of {total} seeds complete; missing {list(missing)}{clock}"


def add_run_arguments(ap: argparse.ArgumentParser, seeds_help: str) -> None:
    """The options every lr/10 amendment's command line shares (this module's, :mod:`ddrl.study.designs`')."""
    ap.add_argument("--seeds", type=seed_range, default=None, help=seeds_help)
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=RUNS, help=f"the CSVs (default {RUNS})")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--json", type=Path, default=None, help="analyse: write the result here")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.small_lr", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("regime", "run", "status", "analyse", "figure"))
    add_run_arguments(ap, "run: seeds N-M (default: the plan's)")
    ap.add_argument("--table1", action="store_true", help="run, status, analyse: Amendment 49's T1")
    ap.add_argument("--table1-fixed", action="store_true",
                    help=f"run, status, analyse: Amendment 50's T1f (its CSVs under <out>/{T1F_DIR})")
    ap.add_argument("--table1-fixed-more", action="store_true",
                    help="run, status, analyse: Amendment 51's T1f at the default lr on fresh seeds 12-45")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="regime: the results tree whose build it is written for (its regimes_base.json)")
    args = ap.parse_args(argv)
    if args.table1 + args.table1_fixed + args.table1_fixed_more > 1:
        ap.error("--table1, --table1-fixed and --table1-fixed-more are three amendments: give one")
    more = (BASE_REGIME,)
    if args.what == "regime":
        sys.stdout.write(write_json(args.results / REGIME_FILE.name, regime_file(regimes_path(args.results))))
    elif args.what == "run":
        check_weights(scale=SCALES[args.scale])  # the measured base build, never a new one
        todo, desc = ((t1_jobs(args.seeds or T1_SEEDS), "Amendment 49 runs") if args.table1
                      else (t1f_jobs(args.seeds or T1F_SEEDS), "Amendment 50 runs") if args.table1_fixed
                      else (t1f_jobs(args.seeds or T1F_MORE_SEEDS, more), "Amendment 51 runs") if args.table1_fixed_more
                      else (jobs(args.seeds or SEEDS), "Amendment 28 runs"))
        out = args.out / T1F_DIR if args.table1_fixed or args.table1_fixed_more else args.out
        status = run_jobs(todo, SCALES[args.scale], out, args.runs_root or cache_root() / "runs",
                          args.budget_min, args.workers, desc=desc)
        print(status_counts(status))
    elif args.what == "status" and args.table1:
        print(seeds_line(f"T1 ({REGIME})", len(T1_SEEDS), t1_missing(args.out)))
    elif args.what == "status" and args.table1_fixed:
        for r, miss in t1f_missing(args.out).items():
            print(seeds_line(f"T1f ({r})", len(T1F_SEEDS), miss))
    elif args.what == "status" and args.table1_fixed_more:
        print(seeds_line(f"T1f ({BASE_REGIME}, fresh seeds)", len(T1F_MORE_SEEDS),
                         t1f_missing(args.out, T1F_MORE_SEEDS, more)[BASE_REGIME]))
    elif args.what == "status":
        print(seeds_line(REGIME, len(SEEDS), sorted(set(SEEDS) - set(done_seeds(args.out)))))
    elif args.what == "figure":  # -> docs/results/small_lr.{png,pdf}, from the committed analysis
        print(save_docs_figure(figure(json.loads((OUT / "claims.json").read_text())), "small_lr"))
    else:
        run = (analyse_t1 if args.table1 else analyse_t1f if args.table1_fixed
               else analyse_t1f_more if args.table1_fixed_more else analyse)
        sys.stdout.write(write_json(args.json, run(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
