"""COR's learning rate, COR without RL (plan Amendment 30) and held-out transfer (plan Amendment 31) at lr/10.

Amendment 29 found that in MATH-500-like at the small learning rate (:data:`REGIME`) DDRL's gain over TTRL is COR's
(A3), with COR at the paper's SFT learning rate 1e-5 while the RL phase ran at 3e-6. Amendment 30 adds two arms on
Amendment 28's seeds, each one COR call (:meth:`ddrl.run.experiments.Experiment.refined`) then evaluated:
``ddrl_cor_lr10``, COR at 1e-6 from the DDRL run's RL-only weights, and ``cor_only``, COR at 1e-5 from the untrained
model; it decides K1-K4 (:data:`CLAIMS`; Amendment 32 adds K5 from the same runs: DDRL at the default learning rate
against COR alone). Amendment 31 evaluates the lr/10 runs on H1x's 1,536 fresh questions and decides the H1x family
there (:data:`HELDOUT_CLAIMS`); it trains nothing. Amendment 33 adds COR alone there (its COR recomputed; K3x, K4x).

    python -m ddrl.study.amendments.small_lr_cor run --workers 2        # Amendment 30: 36 jobs, seed by seed, resumable
    python -m ddrl.study.amendments.small_lr_cor heldout --workers 2    # Amendment 31: 72 evaluations of Amendment 28's runs
    python -m ddrl.study.amendments.small_lr_cor heldout --cor-only --workers 2   # Amendment 33: COR alone on the fresh questions
    python -m ddrl.study.amendments.small_lr_cor status
    python -m ddrl.study.amendments.small_lr_cor analyse --json results/small_lr/cor.json
    python -m ddrl.study.amendments.small_lr_cor analyse --heldout --json results/small_lr/heldout.json
    python -m ddrl.study.amendments.small_lr_cor figure                 # docs/results/small_lr_cor.{png,pdf} (descriptive)
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

from ddrl.study.claims import amendment_entry, validate, with_half_width
from ddrl.config import METHODS as PRESETS
from ddrl.accel.logprob_backends import pinned_backend
from ddrl.report.plotting import color, label, save_docs_figure
from ddrl.run.storage import cache_root, write_json
from ddrl.run.rundir import RunDir
from ddrl.seeds import numpy_generator
from ddrl.study.amendments.small_lr import BASE_REGIME, LR_CELL, OUT, REGIME, RUNS, SEEDS, STANDS_FOR, add_run_arguments, seeds_line
from ddrl.study.analysis import claim_matrix, paired_matrix
from ddrl.study.plan import (COR_LR10, COR_ONLY, HELDOUT_X, HELDOUT_X_METHODS, SCALES, Job, check_weights, csv_path,
                             experiment, heldout_x_path, load_regimes)
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import entry_cell
from ddrl.study.amendments.wide import (amendment_cells, below_cell, claim_row, complete_seeds, level_table, levels_panel, missing_seeds,
                       predicted_text, read_csvs, reproduced_counts, run_levels, wide_entry)

ARMS = (COR_LR10, COR_ONLY)
#: The arms' names in figures (they are COR calls, not trainer presets, so ddrl.report.plotting's labels do not name them)
ARM_LABELS = {COR_LR10: "DDRL with COR at lr/10", COR_ONLY: "COR alone (no RL)"}
#: Amendment 30's claims (K5: Amendment 32's): id -> (a, b, comparison, regime); adapted pass@1 a - b per seed and
#: question, sign +1, margin 1. K5's ``a`` is the default-lr DDRL run; its ``b``, COR alone, runs no RL, so its lr/10
#: CSVs are the same computation at the default learning rate.
CLAIMS = {"K1": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (the RL-only weights)", REGIME),
          "K2": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6", REGIME),
          "K3": (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation", REGIME),
          "K4": ("ddrl", COR_ONLY, "DDRL - COR alone", REGIME),
          "K5": ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone", BASE_REGIME)}
MARGIN = 1.0
#: The plan's predicted half-widths at 18 seeds x 256 questions (K1, K2 from the lr/10 A3 matrix, K3 from P2's, K4
#: from M1's; K5 from the default-lr M1 and P2 matrices of seeds 0-17)
PREDICTED = {"K1": (1.84,), "K2": (1.84,), "K3": (2.49,), "K4": (1.82,), "K5": (2.08, 3.16)}
#: The methods K1-K5 read, with the regime whose CSVs hold them (the untrained runs are MATH-500-like's)
READS = ((BASE_REGIME, ("no_adaptation", "ddrl")), (REGIME, ("ttrl", "bcs_dae", "ddrl", *ARMS)))
#: Amendment 31: the H1x family on the fresh questions, its evaluations, and the plan's predicted half-widths (from
#: the default-lr MATH-500-like H1x matrices, at 18 seeds x 1,536 questions)
HELDOUT_CLAIMS = ("H1x", "H1xT", "H1xD", "H1xC", "H1xR")
HELDOUT_METHODS = HELDOUT_X_METHODS
HELDOUT_PREDICTED = {"H1x": 1.36, "H1xT": 1.06, "H1xD": 0.85, "H1xC": 0.45, "H1xR": 0.80}
#: Amendment 33: COR alone on the same fresh questions (its COR recomputed, its weights are not kept): id -> (a, b,
#: comparison), held-out pass@1 a - b, sign +1, margin 1; predicted half-widths 0.45-1.36 (the H1x family's range)
HELDOUT_K = {"K3x": (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation, held-out"),
             "K4x": ("ddrl", COR_ONLY, "DDRL - COR alone, held-out")}
#: The trained runs Amendment 31 evaluates (bcs_dae is the DDRL run's RL-only weights; no_adaptation trains nothing)
TRAINED = ("ttrl", "ddrl")


def jobs(seeds: Sequence[int] = SEEDS) -> list[Job]:
    """Amendment 30, seed by seed: COR at lr/10 from the RL-only weights, then COR from the untrained model."""
    return [Job(REGIME, s, (m,), "K lr/10") for s in seeds for m in ARMS]


def heldout_jobs(seeds: Sequence[int] = SEEDS, methods: Sequence[str] = HELDOUT_METHODS) -> list[Job]:
    """Amendment 31 (``methods``: Amendment 33's ``(COR_ONLY,)``), seed by seed: the study's H1x job
    (:func:`ddrl.study.jobs.run_heldout_x_job`) in :data:`REGIME`."""
    return [Job(REGIME, s, tuple(methods), "H1x") for s in seeds]


def untrained(seeds: Sequence[int], runs_root: str | Path, scale: str = "default", regime: str = REGIME,
              methods: Sequence[str] = TRAINED, regimes: str | Path | None = None) -> list[tuple[str, int]]:
    """The (method, seed) pairs of ``methods`` (default :data:`TRAINED`) whose run in ``regime`` (default
    :data:`REGIME`; as the regimes file ``regimes`` defines it, default the registered study's) is not finished under
    ``runs_root``: Amendments 31, 38 and 45 evaluate finished runs and must not train one anew."""
    sc = SCALES[scale]
    listed = load_regimes(scale=sc, names=[regime]) if regimes is None else load_regimes(regimes, sc, [regime])
    exp = experiment(listed[regime], sc, False, runs_root)
    with pinned_backend("hf"):  # as the study's jobs run (ddrl.study.jobs.run_job): the backend enters the run's key
        return [(m, s) for s in seeds for m in methods
                if not RunDir(exp.run_dir(PRESETS[m][0], exp.config(m, s))).finished()]


def missing(out: str | Path = RUNS, seeds: Sequence[int] = SEEDS) -> list[int]:
    """Seeds without a CSV that K1-K5 read (:data:`READS`): Amendment 30's arms, or the runs of Amendments 28-29 and
    the registered untrained run they are paired with."""
    have = set.intersection(*(set(complete_seeds(out, r, ms)) for r, ms in READS))
    return sorted(set(seeds) - have)


def heldout_missing(out: str | Path = RUNS, seeds: Sequence[int] = SEEDS,
                    methods: Sequence[str] = (*HELDOUT_METHODS, COR_ONLY)) -> list[int]:
    """Seeds without every one of Amendments 31 and 33's evaluations (of ``methods``) written."""
    return missing_seeds(Path(out) / HELDOUT_X, REGIME, methods, seeds)


def load(out: str | Path, seeds: Sequence[int]) -> pd.DataFrame:
    """The per-question rows K1-K5 read (:data:`READS`) on ``seeds``, file by file."""
    paths = [csv_path(out, r, m, s) for s in seeds for r, ms in READS for m in ms]
    return read_csvs(paths)


def k_matrix(df: pd.DataFrame, cid: str) -> pd.DataFrame:
    """A K claim's seeds x questions matrix (points) from :func:`load`'s rows: ``a - b`` in the claim's regime, where
    K5 reads COR alone's lr/10 rows (the same computation: it runs no RL, ``ddrl.study.plan.NO_RL``)."""
    a, b, _, regime = CLAIMS[cid]
    return paired_matrix(df, regime, a, b, "adapted")


def k_entry(cid: str, d: pd.DataFrame, n_boot: int = 4000) -> dict:
    """One K claim's entry (:data:`CLAIMS`, or :data:`HELDOUT_K`'s on the fresh questions) in ``claims.json``'s
    schema (no paper number; sign +1), from its seeds x questions matrix ``d``: the registered bootstrap (stream
    ``derive_seed(0, "claims", cid, regime)``), margin and rule."""
    a, b, what, regime = CLAIMS[cid] if cid in CLAIMS else (*HELDOUT_K[cid], REGIME)
    metric = f"{'adapted' if cid in CLAIMS else 'held-out'} pass@1, {what} [points]"
    return amendment_entry(cid, regime, what, metric, a, b, d.to_numpy(), MARGIN, n_boot)


def analyse(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = SEEDS) -> dict:
    """K1-K5 over ``seeds`` once every CSV they read is written (the plan reads no estimate before):
    ``entries``; descriptive, ``levels`` (each method's mean adapted pass@1 over the seeds, with how many seeds end
    below the untrained run), ``cor_kept`` (each COR's kept rollouts per run, mean over the seeds) and ``seed_pass1``
    (each run's level)."""
    miss = missing(out, seeds)
    if miss:
        raise ValueError(f"{out}: Amendments 30/32 incomplete, seeds {miss} lack a CSV that K1-K5 read ({READS}); the "
                         "plan reads no estimate before every seed is complete")
    df = load(out, seeds)
    entries = [k_entry(cid, k_matrix(df, cid), n_boot) for cid in CLAIMS]
    validate(entries, REGIME)
    per = run_levels(df)  # one row per (regime, method, seed), in READS' order
    lv = level_table(per, ("regime", "method"), sort=False)
    a = df[(df.regime == REGIME) & (df.split == "adapted") & df.method.isin(["ddrl", *ARMS])]
    a = a.drop_duplicates(["method", "seed"])
    kept = a.groupby("method", sort=False)["cor_kept"].mean()
    return {"regime": REGIME, "seeds": list(seeds), "entries": entries, "levels": lv.to_dict(orient="records"),
            "cor_kept": {m: float(kept[m]) for m in ("ddrl", *ARMS)},
            "seed_pass1": per.to_dict(orient="records")}


def analyse_heldout(out: str | Path = RUNS, n_boot: int = 4000, seeds: Sequence[int] = SEEDS) -> dict:
    """Amendments 31 and 33: the H1x family in :data:`REGIME` over ``seeds`` once every evaluation is written:
    ``entries`` (the registered claims' metric, sign and rule, ``half_width`` added; then K3x, K4x) and, descriptive,
    each method's mean
    held-out pass@1 over the seeds (``levels``; each run's in ``seed_pass1``) and how many of the trained runs'
    adapted rows equal their committed CSV's (``registered_reproduced`` of ``registered_checked``)."""
    miss = heldout_missing(out, seeds)
    if miss:
        raise ValueError(f"{out}: Amendments 31/33 incomplete, seeds {miss} lack an evaluation; the plan reads no "
                         "estimate before every seed is complete")
    order = ["no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_ONLY]  # the adapted table's
    df = pd.concat([pd.read_csv(heldout_x_path(out, REGIME, m, s), dtype={"question": str})
                    for m in order for s in seeds], ignore_index=True)  # method by method: the levels' order
    entries = [wide_entry(cid, claim_matrix(df, cid, REGIME), n_boot, REGIME, STANDS_FOR) for cid in HELDOUT_CLAIMS]
    with_half_width(validate(entries, REGIME))
    entries += [k_entry(cid, paired_matrix(df, REGIME, a, b, HELDOUT_X), n_boot) for cid, (a, b, _) in HELDOUT_K.items()]
    per = run_levels(df, HELDOUT_X).drop(columns="regime")  # each run's held-out pass@1
    lv = level_table(per, ("method",), sort=False)
    return {"regime": REGIME, "seeds": list(seeds), "entries": entries, "levels": lv.to_dict(orient="records"),
            "seed_pass1": per.to_dict(orient="records"), **reproduced_counts(df.drop_duplicates(["method", "seed"]))}


def markdown(res: dict) -> str:
    """Amendment 30's table as docs/results.md quotes it, then the descriptive levels."""
    rows = ["| claim (MATH-500-like, adapted pass@1, points) | seeds | estimate [95% CI] | half-width (predicted) | "
            "verdict |", "|---|---|---|---|---|"]
    rows += [claim_row(e, e["claim"], predicted_text(PREDICTED[e["id"]])) for e in res["entries"]]
    rows += ["", "| method | RL learning rate | adapted pass@1, mean over seeds (SD) | seeds below the untrained run | "
             "COR's kept rollouts |", "|---|---|---|---|---|"]
    for r in res["levels"]:
        kept = res["cor_kept"].get(r["method"]) if r["regime"] == REGIME else None
        lr = "-" if r["method"] in ("no_adaptation", COR_ONLY) else LR_CELL[r["regime"]]
        rows.append(f"| {r['method']} | {lr} | {r['pass1']:.1f} ({r['sd']:.1f}) | {below_cell(r)} | "
                    f"{'-' if kept is None else f'{kept:.0f}'} |")
    return "\n".join(rows) + "\n"


def heldout_markdown(res: dict, registered: Sequence[dict]) -> str:
    """Amendments 31 and 33's table as docs/results.md quotes it: per claim the default-lr MATH-500-like entry
    (``registered``: ``results/claims.json``'s; other seeds, read across; none for K3x, K4x) beside this one's."""
    reg = {(e["id"], e["regime"]): e for e in registered}
    rows = ["| claim (held-out pass@1 on 1,536 fresh MATH-500-like questions, points) | default lr (registered) | "
            "**lr/10 (Amendments 31, 33)** | half-width (predicted) | verdict |", "|---|---|---|---|---|"]
    for e in res["entries"]:
        b = reg.get((e["id"], BASE_REGIME))
        what = e["metric"].removeprefix("held-out pass@1 ").split(",")[0] if b else HELDOUT_K[e["id"]][2].split(",")[0]
        pred = f"{HELDOUT_PREDICTED[e['id']]:.2f}" if b else "0.45-1.36"
        beside = entry_cell(b) if b else "-"
        rows.append(f"| {e['id']} {what} | {beside} | {amendment_cells(e, pred)}")
    return "\n".join(rows) + "\n"


def figure(cor: dict, held: dict):
    """Descriptive (the paired intervals are the entries'): each run's adapted pass@1 of the seven runs K1-K5 read
    (``cor``: :func:`analyse`) and each run's held-out pass@1 on the fresh questions (``held``: :func:`analyse_heldout`),
    one dot per seed, :func:`ddrl.study.amendments.wide.levels_panel`."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.5, 1]})
    rng = numpy_generator(0, "figure", REGIME, "cor")
    for ax, res, ylabel, title in ((axes[0], cor, "adapted pass@1 (%)", "adapted questions"),
                                   (axes[1], held, "held-out pass@1 (%)", "fresh questions")):
        title = f"{res['entries'][0]['n_questions']:,} {title}"
        per = pd.DataFrame(res["seed_pass1"])
        default = (per.get("regime") == BASE_REGIME) & (per.method != "no_adaptation")
        name = per.method.map(lambda m: ARM_LABELS.get(m) or label(m))
        per["run"] = name.where(~default, name + "\ndefault lr")
        palette = dict(zip(per.run, per.method.map(color)))
        levels_panel(ax, per, list(dict.fromkeys(per.run)), palette, rng, ylabel, title)
        sns.despine(ax=ax)
    fig.suptitle("MATH-500-like at lr/10: COR's learning rate, COR without RL, and held-out transfer "
                 "(plan Amendments 30-33; descriptive)", fontsize=10)
    fig.tight_layout()
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.small_lr_cor", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "heldout", "status", "analyse", "figure"))
    add_run_arguments(ap, "run, heldout: seeds N-M (default: the plan's)")
    ap.add_argument("--heldout", action="store_true", help="analyse: Amendments 31 and 33's held-out entries")
    ap.add_argument("--cor-only", action="store_true", help="heldout: Amendment 33's COR alone (after Amendment 31)")
    args = ap.parse_args(argv)
    seeds, runs_root = args.seeds or SEEDS, args.runs_root or cache_root() / "runs"
    if args.what in ("run", "heldout"):
        check_weights(scale=SCALES[args.scale])  # the measured base build, never a new one
        if args.what == "heldout":
            left = untrained(seeds, runs_root, args.scale)
            if left:
                raise SystemExit(f"Amendment 31 evaluates Amendment 28's runs; not finished under {runs_root}: {left} "
                                 "(run `python -m ddrl.study.amendments.small_lr run` for them first)")
        todo, desc = ((jobs(seeds), "Amendment 30 runs") if args.what == "run" else
                      (heldout_jobs(seeds, (COR_ONLY,)), "Amendment 33") if args.cor_only else
                      (heldout_jobs(seeds), "Amendment 31"))
        status = run_jobs(todo, SCALES[args.scale], args.out, runs_root, args.budget_min, args.workers, desc=desc)
        print(status_counts(status))
    elif args.what == "status":
        print(seeds_line(f"Amendment 30 ({REGIME})", len(SEEDS), missing(args.out)))
        for name, methods in (("31", HELDOUT_METHODS), ("33", (COR_ONLY,))):
            print(seeds_line(f"Amendment {name} ({REGIME}, held-out)", len(SEEDS), heldout_missing(args.out, methods=methods)))
    elif args.what == "figure":  # -> docs/results/small_lr_cor.{png,pdf}, from the committed analyses
        print(save_docs_figure(figure(*(json.loads((OUT / f).read_text()) for f in ("cor.json", "heldout.json"))), "small_lr_cor"))
    else:
        sys.stdout.write(write_json(args.json, analyse_heldout(args.out) if args.heldout else analyse(args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
