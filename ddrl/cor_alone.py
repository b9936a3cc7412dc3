"""COR alone in AMC-like and AIME-like, on the adapted and on fresh questions (plan Amendment 34).

Amendments 30-33 found in MATH-500-like that COR alone (``cor_only``: one COR call from the untrained model, no RL
phase; :data:`ddrl.study_plan.REFINED`) gains over the untrained model and ends above DDRL at both learning rates.
Amendment 34 asks the same in the registered study's two other regimes (:data:`SEEDS`: their registered seeds),
paired with their registered runs: K3 (COR alone - no adaptation), K5 (DDRL at the default lr - COR alone) in
``amc_like`` and ``aime_like``, K4 (DDRL at lr/10 - COR alone) in ``amc_like_small_lr``, whose COR alone is
``amc_like``'s (it runs no RL: the same computation, :data:`READS_FROM`); on H1x's fresh questions K3x and K5x.

    python -m ddrl.cor_alone run --workers 2        # 25 COR runs, seed by seed, resumable
    python -m ddrl.cor_alone heldout --workers 2    # the same COR recomputed and evaluated on the fresh questions
    python -m ddrl.cor_alone status
    python -m ddrl.cor_alone analyse --json results/cor_alone/adapted.json
    python -m ddrl.cor_alone analyse --heldout --json results/cor_alone/heldout.json
    python -m ddrl.cor_alone figure                 # docs/results/cor_alone.{png,pdf} (descriptive)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ddrl.claims import amendment_entry
from ddrl.plotting import color, label, save_docs_figure
from ddrl.reporting import cache_root, write_json
from ddrl.seeds import numpy_generator
from ddrl.small_lr import RUNS, add_run_arguments, seeds_line
from ddrl.study import run_jobs
from ddrl.study_analysis import paired_matrix
from ddrl.study_plan import (COR_ONLY, HELDOUT_X, RESULTS, SAME_BASE, SCALES, SMALL_LR, Job, check_weights, csv_path,
                             heldout_x_path)
from ddrl.tables import fmt_ci
from ddrl.wide import VERDICT_MD, below_cell, level_table, levels_panel, run_levels

#: The regimes COR alone runs in, each on its registered seeds (Amendment 34)
SEEDS = {"amc_like": tuple(range(19)), "aime_like": tuple(range(6))}
OUT = RESULTS / "cor_alone"
#: A regime whose claims read COR alone from another regime's CSVs (the same computation: it runs no RL)
READS_FROM = {SMALL_LR: SAME_BASE[SMALL_LR]}
#: Amendment 34's claims on the adapted questions: (id, regime) -> (a, b, comparison); pass@1 a - b per seed and
#: question, sign +1, margin 1, the ids of Amendments 30 and 32 (K4: DDRL at lr/10, K5: at the default lr)
CLAIMS = {("K3", "amc_like"): (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation"),
          ("K5", "amc_like"): ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone"),
          ("K4", SMALL_LR): ("ddrl", COR_ONLY, "DDRL at lr/10 - COR alone"),
          ("K3", "aime_like"): (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation"),
          ("K5", "aime_like"): ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone")}
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
#: The registered runs the adapted claims pair COR alone with, per regime
#: The runs each regime's claims read (the untrained and DDRL ones registered), in the tables' order
METHODS = ("no_adaptation", "ddrl", COR_ONLY)
PAIRED = {"amc_like": METHODS[:2], SMALL_LR: ("ddrl",), "aime_like": METHODS[:2]}
LEVEL_NAME = {"amc_like": "AMC-like", SMALL_LR: "AMC-like at lr/10", "aime_like": "AIME-like"}


def jobs(seeds: dict[str, Sequence[int]] = SEEDS) -> list[Job]:
    """COR alone, regime by regime (AMC-like first), seed by seed."""
    return [Job(r, s, (COR_ONLY,), "K cor alone") for r, ss in seeds.items() for s in ss]


def heldout_jobs(seeds: dict[str, Sequence[int]] = SEEDS) -> list[Job]:
    """COR alone recomputed and evaluated on the regime's fresh questions: the study's H1x job
    (:func:`ddrl.study.run_heldout_x_job`)."""
    return [Job(r, s, (COR_ONLY,), "H1x") for r, ss in seeds.items() for s in ss]


def missing(out: str | Path = RUNS, seeds: dict[str, Sequence[int]] = SEEDS) -> dict[str, list[int]]:
    """Per regime of :data:`SEEDS`, the seeds without a CSV the adapted claims read (COR alone's, or a registered run
    it is paired with, in :data:`PAIRED`'s regimes that read it)."""
    need = {r: [(r, COR_ONLY), *((r, m) for m in PAIRED[r])] for r in seeds}
    for r, src in READS_FROM.items():
        if src in need:
            need[src] += [(r, m) for m in PAIRED[r]]
    return {r: [s for s in ss if not all(csv_path(out, g, m, s).is_file() for g, m in need[r])]
            for r, ss in seeds.items()}


def heldout_missing(out: str | Path = RUNS, seeds: dict[str, Sequence[int]] = SEEDS) -> dict[str, list[int]]:
    """Per regime, the seeds without every held-out evaluation the fresh-question claims read."""
    return {r: [s for s in ss if not all(heldout_x_path(out, r, m, s).is_file()
                                         for m in METHODS)] for r, ss in seeds.items()}


def _refuse(miss: dict[str, list[int]], out: str | Path, what: str) -> None:
    left = {r: s for r, s in miss.items() if s}
    if left:
        raise ValueError(f"{out}: Amendment 34 incomplete, {what} missing for seeds {left}; the plan reads no estimate "
                         "before every seed is complete")


def load(out: str | Path = RUNS, seeds: dict[str, Sequence[int]] = SEEDS) -> pd.DataFrame:
    """The per-question rows the adapted claims read: per regime COR alone and the registered runs it pairs with."""
    paths = [csv_path(out, r, m, s) for r in seeds for s in seeds[r] for m in METHODS]
    paths += [csv_path(out, r, m, s) for r, src in READS_FROM.items() if src in seeds for s in seeds[src]
              for m in PAIRED[r]]
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in paths], ignore_index=True)


def matrix(df: pd.DataFrame, cid: str, regime: str, split: str = "adapted") -> pd.DataFrame:
    """A claim's seeds x questions matrix (points), a - b; K4's COR alone is ``amc_like``'s
    (``ddrl.study_plan.NO_RL``: it runs no RL, so it is one computation at both learning rates)."""
    a, b, _ = (CLAIMS if split == "adapted" else HELDOUT_CLAIMS)[cid, regime]
    return paired_matrix(df, regime, a, b, split)


def _entries(df: pd.DataFrame, claims: dict, split: str, n_boot: int) -> list[dict]:
    """``claims.json``-schema entries (no paper number; sign +1): the registered bootstrap (stream
    ``derive_seed(0, "claims", id, regime)``), margin and rule."""
    metric = "adapted pass@1" if split == "adapted" else "held-out pass@1"
    return [amendment_entry(cid, regime, what, f"{metric}, {what} [points]", a, b,
                            matrix(df, cid, regime, split).to_numpy(), MARGIN, n_boot)
            for (cid, regime), (a, b, what) in claims.items()]


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: dict[str, Sequence[int]] = SEEDS) -> dict:
    """The adapted claims once every CSV they read is written: ``entries``; descriptive, ``levels`` (each run's mean
    adapted pass@1 and maj@16 over the seeds, with how many seeds end below the untrained run), ``cor_kept`` (COR
    alone's kept rollouts per run, mean over the seeds) and ``seed_pass1`` (each run's level)."""
    _refuse(missing(out, seeds), out, "a CSV the adapted claims read")
    df = load(out, seeds)
    entries = _entries(df, CLAIMS, "adapted", n_boot)
    a = df[df.split == "adapted"]
    per = run_levels(df).merge(run_levels(df, value="maj@n", name="maj"), on=["regime", "method", "seed"])
    lv = []
    for r in seeds:  # the regime's runs, then the DDRL runs at lr/10 that read its COR alone
        sub = per[per.regime.isin([r, *(g for g, src in READS_FROM.items() if src == r)])]
        t = level_table(sub, ("regime", "method"), sort=False)
        t["maj"] = sub.groupby(["regime", "method"], sort=False)["maj"].mean().to_numpy()
        lv += t.to_dict(orient="records")
    kept = a[a.method == COR_ONLY].drop_duplicates(["regime", "seed"]).groupby("regime", sort=False)["cor_kept"].mean()
    return {"seeds": {r: list(s) for r, s in seeds.items()}, "entries": entries, "levels": lv,
            "cor_kept": {r: float(k) for r, k in kept.items()}, "seed_pass1": per.to_dict(orient="records")}


def analyse_heldout(out: str | Path = RUNS, n_boot: int = 4000, seeds: dict[str, Sequence[int]] = SEEDS) -> dict:
    """K3x and K5x once every evaluation is written: ``entries``; descriptive, each run's mean held-out pass@1 over
    the seeds (``levels``; each run's in ``seed_pass1``) and how many recomputed COR-alone runs' adapted rows equal
    their committed CSV's (``registered_reproduced`` of ``registered_checked``)."""
    _refuse(heldout_missing(out, seeds), out, "a held-out evaluation")
    df = pd.concat([pd.read_csv(heldout_x_path(out, r, m, s), dtype={"question": str})
                    for r in seeds for m in METHODS for s in seeds[r]], ignore_index=True)
    entries = _entries(df, HELDOUT_CLAIMS, HELDOUT_X, n_boot)
    per = run_levels(df, HELDOUT_X)
    lv = pd.concat([level_table(per[per.regime == r], ("method",), sort=False).assign(regime=r) for r in seeds])
    checked = df[df.method == COR_ONLY].drop_duplicates(["regime", "seed"])["registered_reproduced"]
    return {"seeds": {r: list(s) for r, s in seeds.items()}, "entries": entries, "levels": lv.to_dict(orient="records"),
            "seed_pass1": per.to_dict(orient="records"), "registered_reproduced": int(checked.astype(bool).sum()),
            "registered_checked": int(checked.notna().sum())}


def _ci(e: dict) -> str:
    return fmt_ci(e["estimate"], e["ci_low"], e["ci_high"], "+.2f")


def markdown(res: dict, held: dict) -> str:
    """Amendment 34's table as docs/results.md quotes it (adapted, then fresh questions), then the adapted levels."""
    rows = ["| claim (pass@1, points) | regime | seeds x questions | estimate [95% CI] | half-width (predicted) | "
            "verdict |", "|---|---|---|---|---|---|"]
    rows += [f"| {e['id']} {e['claim']} | {LEVEL_NAME[e['regime']]} | {e['n_seeds']} x {e['n_questions']:,} | "
             f"{_ci(e)} | {e['half_width']:.2f} ({PREDICTED[e['id'], e['regime']]}) | {VERDICT_MD[e['verdict']]} |"
             for e in (*res["entries"], *held["entries"])]
    rows += ["", "| regime | method | adapted pass@1, mean over seeds (SD) | maj@16 | seeds below the untrained run |",
             "|---|---|---|---|---|"]
    rows += [f"| {LEVEL_NAME[r['regime']]} | {r['method']} | {r['pass1']:.1f} ({r['sd']:.1f}) | {r['maj']:.1f} | "
             f"{below_cell(r)} |"
             for r in res["levels"]]
    return "\n".join(rows) + "\n"


def figure(res: dict, held: dict):
    """Descriptive (the paired intervals are the entries'): each run's adapted pass@1 and held-out pass@1, one dot
    per seed, one row per split and one column per regime, :func:`ddrl.wide.levels_panel`."""
    regimes = list(res["seeds"])
    fig, axes = plt.subplots(2, len(regimes), figsize=(5.5 * len(regimes), 8.4), squeeze=False)
    rng = numpy_generator(0, "figure", "cor_alone")
    panels = [(r, res, "adapted pass@1 (%)", "adapted") for r in regimes]
    panels += [(r, held, "held-out pass@1 (%)", "fresh") for r in regimes]
    for ax, (r, data, ylabel, what) in zip(axes.flat, panels):
        per = pd.DataFrame(data["seed_pass1"])
        per = per[per.regime.isin([r, *(g for g, src in READS_FROM.items() if src == r)])]
        name = per.method.map(lambda m: "COR alone (no RL)" if m == COR_ONLY else label(m))
        per["run"] = name.where(per.regime == r, name + "\nlr/10")
        palette = dict(zip(per.run, per.method.map(color)))
        n_q = next(e["n_questions"] for e in data["entries"] if e["regime"] == r)
        levels_panel(ax, per, list(dict.fromkeys(per.run)), palette, rng, ylabel,
                     f"{LEVEL_NAME[r]}: {n_q:,} {what} questions")
        sns.despine(ax=ax)
    fig.suptitle("COR alone (consensus SFT from the untrained model) beside the registered runs "
                 "(plan Amendment 34; descriptive)", fontsize=10)
    fig.tight_layout()
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.cor_alone", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "heldout", "status", "analyse", "figure"))
    add_run_arguments(ap, "run, heldout: seeds N-M in every regime (default: each regime's registered seeds)")
    ap.add_argument("--regimes", nargs="+", choices=sorted(SEEDS), default=list(SEEDS), help="run, heldout")
    ap.add_argument("--heldout", action="store_true", help="analyse: the fresh-question claims")
    args = ap.parse_args(argv)
    seeds = {r: args.seeds or SEEDS[r] for r in args.regimes}
    if args.what in ("run", "heldout"):
        check_weights(scale=SCALES[args.scale])  # the measured base build, never a new one
        todo = jobs(seeds) if args.what == "run" else heldout_jobs(seeds)
        status = run_jobs(todo, SCALES[args.scale], args.out, args.runs_root or cache_root() / "runs",
                          args.budget_min, args.workers, desc=f"Amendment 34 {args.what}")
        print(pd.Series([s["status"] for s in status], dtype=object).value_counts().to_dict())
    elif args.what == "status":
        for what, miss in (("adapted", missing(args.out)), ("held-out", heldout_missing(args.out))):
            for r, m in miss.items():
                print(seeds_line(f"Amendment 34 ({r}, {what})", len(SEEDS[r]), m))
    elif args.what == "figure":  # -> docs/results/cor_alone.{png,pdf}, from the committed analyses
        print(save_docs_figure(figure(*(json.loads((OUT / f).read_text()) for f in ("adapted.json", "heldout.json"))),
                               "cor_alone"))
    else:
        sys.stdout.write(write_json(args.json, analyse_heldout(args.out) if args.heldout else analyse(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
