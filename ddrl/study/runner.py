"""The claims study's command line (``results/plan.md``): the registered stages, and every design of
:data:`ddrl.study.designs.DESIGNS` through one generic job list, analysis and table.

::

    python -m ddrl.study --stage 1 [--budget-min N] [--regimes ...]   # no adaptation, TTRL, DDRL, seeds 0-5; resumable
    python -m ddrl.study --analyse stage1        # variance components, seeds per regime -> results/stage1.json
    python -m ddrl.study --stage 2 | --heldout-x | --real-rollouts   # the rest; H1x's fresh questions; SVAMP samples
    python -m ddrl.study --analyse claims        # every claim's estimate, interval, verdict -> results/claims.json
    python -m ddrl.study --small-lr-regime [--results R]   # R/regimes_small_lr.json (Amendments 28, 44)
    python -m ddrl.study status|analyse|run|render DESIGN   # a design of ddrl.study.designs.DESIGNS
    python -m ddrl.study import wide DIR --device NAME      # a GPU machine's complete seeds (Amendment 26)
    python -m ddrl.study render-page | rerun DESIGN REGIME METHOD SEED   # docs/results.md; one run recomputed
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.study import claims as C
from ddrl.data import DataError
from ddrl.report.tables import amendment_cells, claim_row, committed_markdown, entry_cell
from ddrl.run.pool import clock_budget, minutes_to
from ddrl.study.plan import Regime
from ddrl.run.storage import REPO, atomic_write_bytes, cache_root, write_json
from ddrl.seeds import seed_range
from ddrl.study.analysis import (analyse_claims, analyse_stage1, bootstrap_entry, claim_matrix, complete_seeds,
                                 paired_matrix, read_csvs)
from ddrl.study.claims import amendment_entry, validate, with_half_width
from ddrl.study import designs
from ddrl.study.designs import (DESIGNS, MARGIN, Design, _complete, _needed, _unwritten, _wants, analysed_seeds, design,
                                path, regime_designs)
from ddrl.study.measures import (DEVICES_FILE, MEASURES, TABLES, Reading, _level_rows, cor_level_rows, gpu_seeds,
                                 held_level_rows)
from ddrl.study.figures import render_results
from ddrl.study.plan import (CSV, HELDOUT_X, HELDOUT_X_AMENDMENTS, MATH500_768, MATH500_SMALL_LR, PAIRED, REAL, RESULTS,
                             SAME_BASE, SCALES, SMALL_LR, STAGE1_METHODS, SVAMP_REGIME, WIDE_OUT, Job, Scale,
                             check_weights, csv_path, export_base_models, heldout_x_jobs, load_regimes, regimes_path,
                             seeds_to_start, small_lr_regime_file, stage1_jobs, stage2_jobs, untrained,
                             write_replication)
from ddrl.study.jobs import run_jobs, run_real_rollouts_job, status_counts
from ddrl.study.page import main as render_page

def run_study(regimes: dict[str, Regime], scale: Scale, runs_dir: str | Path, results_dir: str | Path,
              budget_min: float | None = None, runs_root: str | Path | None = None, workers: int | None = None,
              progress: bool = True) -> dict:
    """The registered study, resumable: stage 1, ``stage1.json``, stage 2, H1x, the SVAMP samples, ``claims.json``."""
    results_dir = Path(results_dir)
    check_weights(regimes_path(results_dir), scale)
    end = time.time() + 60 * budget_min if budget_min is not None else None
    left = lambda: None if end is None else max(1e-3, (end - time.time()) / 60)  # noqa: E731
    s1 = run_jobs(stage1_jobs(list(regimes), scale), scale, runs_dir, runs_root, left(), workers, progress,
                  desc="study stage 1")
    stage1 = analyse_stage1(runs_dir, regimes, scale)
    write_json(results_dir / "stage1.json", stage1)
    s2 = run_jobs(stage2_jobs(list(regimes), scale, stage1["seeds"]), scale, runs_dir, runs_root, left(), workers,
                  progress, desc="study stage 2")
    s3 = run_jobs(heldout_x_jobs(list(regimes), scale), scale, runs_dir, runs_root, left(), workers, progress,
                  desc="study H1x")
    if scale.name == "default":  # the real LLM's sample claims (Amendment 18)
        try:
            run_real_rollouts_job(runs_dir)
        except DataError as e:
            print(f"ddrl.study: no svamp_codex entries: {e}", file=sys.stderr)
    entries, missing = analyse_claims(runs_dir, regimes)
    write_json(results_dir / "claims.json", entries)
    status = status_counts(s1 + s2 + s3)
    return {"stage1": stage1, "claims": entries, "missing": missing, "jobs": status}


#: lr/10 regime -> (the amendment that trained its cached DDRL runs, the command that trains them again)
CACHED_BY = {SMALL_LR: (55, "python -m ddrl.study run ablation_amc trains them, ~12 worker-minutes a seed"),
             MATH500_SMALL_LR: (59, "python -m ddrl.study run refine_math500 trains them, ~14 worker-minutes a seed")}


def refuse_untrained(seeds: Sequence[int], runs_root: str | Path, scale: str,
                     amendment: int = 56, regime: str = SMALL_LR) -> None:
    """Raise a ValueError naming the seeds whose cached DDRL run in ``regime`` is not finished under ``runs_root``."""
    gone = untrained(seeds, runs_root, scale, regime, ("ddrl",))
    if gone:
        by, how = CACHED_BY[regime]
        raise ValueError(f"{runs_root}: the DDRL runs of seeds {[s for _, s in gone]} in {regime} are not finished "
                         f"there; Amendment {amendment} uses Amendment {by}'s cached runs and trains none ({how})")


def seeds_line(what: str, total: int, missing: Sequence[int], cutoff: str | None = None) -> str:
    """A status line: seeds complete of ``total``, those missing and, with a clock, the minutes left."""
    clock = "" if cutoff is None else f"; minutes to the clock {minutes_to(cutoff):.0f}"
    return f"{what}: {total - len(missing)} of {total} seeds complete; missing {list(missing)}{clock}"


def import_runs(src: str | Path, device: str, out: str | Path = WIDE_OUT, regime: str = MATH500_768,
                methods: Sequence[str] = STAGE1_METHODS) -> list[int]:
    """Copy a GPU machine's complete seeds from ``src`` into ``out`` as computed on ``device``; returns those copied.
    One device per seed (Amendment 26): a seed with a CSV in ``out`` already is refused."""
    dest, devices = Path(out) / regime, gpu_seeds(out)
    seeds = [s for s in complete_seeds(src, regime, methods) if not (devices.get(s) == device and all(
        csv_path(out, regime, m, s).is_file() and csv_path(out, regime, m, s).read_bytes() ==
        csv_path(src, regime, m, s).read_bytes() for m in methods))]  # not imported before
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


def jobs(d: Design, seeds: Sequence[int] | None = None, now: float | None = None) -> list[Job]:
    """The design's jobs; past its clock (``now``: epoch seconds) only those of its first ``late_seeds`` seeds."""
    if d.regime_seeds:
        return [j for p in regime_designs(d) for j in jobs(p, seeds and [s for s in seeds if s in p.seeds], now)]
    groups = [((m,), d.kinds[i] if d.kinds else d.job_kind) for i, m in enumerate(d.evaluates)] if d.job_per_run \
        else [(d.evaluates, d.job_kind)]
    return [Job(regime, s, g, kind) for regime in d.job_regimes or (d.regime,)
            for s in seeds_to_start(d.seeds if seeds is None else seeds, d.seeds, d.cutoff, now, d.late_seeds)
            for g, kind in groups if _wants(d, g, s)]


def missing(d: Design, out: str | Path | None = None, seeds: Sequence[int] | None = None) -> list[int]:
    """Seeds without every CSV the design's analysis needs."""
    out, among = d.runs if out is None else out, d.seeds if seeds is None else seeds
    if d.regime_seeds:
        return sorted({s for ss in _unwritten(d, out, {g: [s for s in ss if s in among] for g, ss in
                                                        d.regime_seeds.items()}).values() for s in ss})
    if d.claim_seeds is None:
        return sorted(set(among) - set(_complete(d, out, _needed(d))))
    return sorted({s for c, cs in d.claim_seeds.items()
                   for s in (set(cs) & set(among)) - set(_complete(d, out, PAIRED[c][:2]))})


def analyse(d: Design, out: str | Path | None = None, n_boot: int = 4000, now: float | None = None,
            seeds: Sequence[int] | None = None) -> dict:
    """The design's analysis: its claims' ``entries``, then its named measures (``levels`` first where not named)."""
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
    entries = [bootstrap_entry(cid, d.regime, claim_matrix(df[df.seed.isin(per_claim[cid])] if per_claim else df, cid,
                                                           d.regime), n_boot, SAME_BASE[d.regime]) for cid in d.registered]
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


def markdown(d: Design, res: dict, beside: Sequence[dict]) -> str:
    """The table docs/results.md quotes: per claim the entries beside it, the design's and its verdict; the levels."""
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
    """The committed entries :func:`markdown` sets beside the design's (:attr:`Design.beside`)."""
    if d.beside is None:
        return []
    if not d.beside:
        return C.load((results or RESULTS) / "claims.json")
    got = [json.loads((DESIGNS[b].analysis if b in DESIGNS else RESULTS / b).read_text()) for b in d.beside]
    return [e for x in got for e in (x if isinstance(x, list) else x["entries"])]  # a list: a claims.json


def committed_table(name: str) -> str:
    """Design ``name``'s committed table, or a sentence saying it is not committed yet."""
    d = DESIGNS[name]
    return committed_markdown(d.analysis, lambda res: markdown(d, res, beside_entries(d)), d.amendment,
                              f"python -m ddrl.study status {name}")


#: Where the runs of a design whose jobs are not the generic ones come from (by :attr:`Design.whole`)
RUN_BY = {"claims": "its runs are the registered stages': python -m ddrl.study --stage 1|2, --analyse stage1 and "
                    "--heldout-x, each with --results {results}",
          "drift": "its runs come from python -m ddrl.study.drift run|export|kl (ddrl.study.drift's docstring)",
          "lr_drift": "its held-out KLs come from python -m ddrl.study.drift export|kl (ddrl.study.drift's docstring)",
          "cor_alone_drift": "its runs come from python -m ddrl.study.drift kl --cor-alone (ddrl.study.drift's "
                             "docstring)",
          "dynamics": "it reads the step CSVs that other designs' runs wrote"}


def run(d: Design, args: argparse.Namespace) -> str:
    """Run the design's jobs to its clock; a seed lacking a cached or finished run it loads is refused first."""
    if not (d.evaluates or d.regime_runs):
        where = RUN_BY[d.whole].format(results=d.results.relative_to(REPO))
        raise ValueError(f"{d.id} has no jobs of its own: {where}")
    seeds = d.seeds if args.seeds is None else tuple(s for s in d.seeds if s in set(args.seeds))
    seeds = tuple(s for s in seeds if s not in gpu_seeds(args.out))  # imported from a GPU (Amendment 26)
    regimes, scale = regimes_path(d.results), SCALES[args.scale]
    check_weights(regimes, scale)
    root = args.runs_root or cache_root() / "runs"
    if d.cached_ddrl:
        refuse_untrained(seeds, root, args.scale, d.amendment, d.regime)
    gone = untrained(seeds, root, args.scale, d.regime, d.finished, regimes) if d.finished else []
    if gone:
        raise ValueError(f"{root}: {d.tag} evaluates finished runs and trains none; not finished there: {gone}")
    status = run_jobs(jobs(d, seeds), scale, Path(args.out, d.csv_dir), root,
                      clock_budget(d.cutoff, args.budget_min), args.workers, desc=f"{d.tag} run", regimes=regimes)
    if d.then_heldout:  # checked against the adapted jobs' CSVs
        status += run_jobs([replace(j, label="H1x") for j in jobs(d, seeds)], scale, args.out, root,
                           clock_budget(d.cutoff, args.budget_min), args.workers, desc=f"{d.tag} H1x", regimes=regimes)
    check = []  # the repeat checks: each finished DDRL run evaluated again
    if {"retrain_check", "reeval_check"} & set(d.measures):
        gone = {s for _, s in untrained(seeds, root, args.scale, d.regime, ("ddrl",))}
        check = [Job(d.regime, s, ("ddrl",), f"COR repeat check (A{d.amendment})") for s in seeds if s not in gone]
    if "heldout_check" in d.measures:
        check += [Job(d.regime, s, ("ddrl",), "H1x") for s in seeds
                  if all(path(d, args.out, m, s).is_file() for m in d.evaluates)]
    if check:
        status += run_jobs(check, scale, designs.CHECK, root, args.budget_min, args.workers, desc=f"{d.tag} check")
    return str(status_counts(status))


def design_main(argv: Sequence[str] | None = None) -> int:
    """``python -m ddrl.study run|status|analyse|render|import DESIGN``."""
    ap = argparse.ArgumentParser(prog="python -m ddrl.study", description="a design of ddrl.study.designs.DESIGNS: its "
                                 "jobs, status, analysis, table, or a GPU machine's seeds")
    ap.add_argument("what", choices=DESIGN_COMMANDS)
    ap.add_argument("design", help=f"one of {', '.join(DESIGNS)}")
    ap.add_argument("src", nargs="?", type=Path, help="import: a GPU machine's run --out folder")
    ap.add_argument("--device", default=None, help="import: the GPU's name (nvidia-smi), recorded per seed")
    ap.add_argument("--seeds", type=seed_range, default=None, help="run: seeds N-M (default: the design's)")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=None, help="the CSVs (default: the design's runs/)")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--json", type=Path, default=None, help="analyse: write the result here")
    args = ap.parse_args(argv)
    try:
        d = design(args.design)
        args.out = d.runs if args.out is None else args.out
        if args.what == "run":
            print(run(d, args))
        elif args.what == "status":
            where = [*(d.regime_seeds or (d.regime,)), *([d.build] if d.build else []),
                     *(["held-out"] if d.split == HELDOUT_X else [])]
            print(seeds_line(f"{d.tag} ({', '.join(where)})", len(d.seeds), missing(d, args.out), d.cutoff))
        elif args.what == "render":
            sys.stdout.write(committed_table(d.id))
        elif args.what == "import":
            if args.src is None or not args.device:
                raise ValueError("import needs a GPU machine's run --out folder and --device NAME")
            print(f"imported seeds {import_runs(args.src, args.device, args.out, d.regime, d.evaluates)} as {args.device}")
        else:
            sys.stdout.write(write_json(args.json or d.analysis, analyse(d, args.out)))
    except ValueError as e:
        print(f"ddrl.study: {e}", file=sys.stderr)
        return 2
    return 0


DESIGN_COMMANDS = ("run", "status", "analyse", "render", "import")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["rerun"]:
        from ddrl.study.rerun import main as rerun_main  # imports torch: only when asked

        return rerun_main(argv[1:])
    subcommands = {"render-page": render_page, **{c: design_main for c in DESIGN_COMMANDS}}
    if argv[:1] and argv[0] in subcommands:
        return subcommands[argv[0]](argv if argv[0] in DESIGN_COMMANDS else argv[1:])
    ap = argparse.ArgumentParser(prog="python -m ddrl.study", description=__doc__.split("\n\n")[0],
                                 epilog="subcommands: run|status|analyse|render DESIGN (a design of ddrl.study.designs); import "
                                 "DESIGN DIR --device NAME (a GPU machine's seeds); "
                                 "render-page [--help] (docs/results.md from the committed analyses, make docs); rerun "
                                 "DESIGN REGIME METHOD SEED [--steps K] (one committed run recomputed and compared question "
                                 "by question)")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--stage", type=int, choices=(1, 2), help="run a stage's jobs (resumable)")
    what.add_argument("--heldout-x", action="store_true", help=f"H1x (plan Amendments {HELDOUT_X_AMENDMENTS}): DDRL, no "
                      "adaptation, TTRL, BCS+DAE (and BCS in AMC-like and MATH-500-like, BCS with random negatives in "
                      "AMC-like) on fresh held-out questions (resumable)")
    what.add_argument("--real-rollouts", action="store_true", help="F1-F3, G1, E1, E2's inputs on the SVAMP Codex "
                      "samples (plan Amendment 18) -> <out>/real/svamp_codex/ (reads --data-dir or $DDRL_DATA_DIR)")
    what.add_argument("--analyse", choices=("stage1", "claims"), help="stage1: variance components and seeds "
                      "(no means) -> stage1.json; claims: every claim -> claims.json")
    what.add_argument("--export-base", action="store_true", help="copy the measured base builds from this "
                      "machine's testbed cache into results/base_models/ (to commit: then any CPU runs the study)")
    what.add_argument("--new-replication", metavar="NOTE",
                      help="write <results>/regimes_base.json for a replication on this machine's build (the "
                           "registered regimes named by --regimes, verbatim), then stop")
    what.add_argument("--small-lr-regime", action="store_true", help="write <results>/regimes_small_lr.json: the "
                      "MATH-500-like regime of <results>/regimes_base.json under the lr/10 rule (plan Amendments 28, "
                      "44), then stop")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--regimes", nargs="+", default=None, help="default: every regime of regimes_base.json")
    ap.add_argument("--budget-min", type=float, default=None, help="wall-time budget; later jobs are skipped")
    ap.add_argument("--stage1-seeds", type=int, default=None, help="stage 1's seeds 0..N-1 (default: the scale's, the "
                    "plan's 6; Amendment 5's replication runs more)")
    ap.add_argument("--workers", type=int, default=None, help="default: one per core (ddrl.run.pool)")
    ap.add_argument("--out", type=Path, default=RESULTS / "runs", help="per-run CSVs (default results/runs)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="stage1.json / claims.json go here")
    ap.add_argument("--docs", type=Path, default=None, help="--analyse claims also renders the scorecard and "
                    "figures here (default: docs/results for the committed results, else <results>/figures)")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--data-dir", type=Path, default=None, help="--real-rollouts: a folder holding rollouts/ "
                    "(as shared/data; default: ddrl.data's search order)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)

    scale = SCALES[args.scale]
    if args.stage1_seeds is not None:  # which seeds stage 1 lists; the runs' keys stay the scale's
        scale = replace(scale, stage1_seeds=args.stage1_seeds)
    if args.real_rollouts:
        try:
            status = run_real_rollouts_job(args.out, args.data_dir)
        except DataError as e:
            print(f"ddrl.study: {e}", file=sys.stderr)
            return 2
        print(f"ddrl.study: SVAMP Codex answer groups and G1 rows ({status}) -> {args.out / REAL / SVAMP_REGIME}")
        return 0
    if args.new_replication:
        try:
            path = write_replication(args.results, args.new_replication, args.regimes)
        except (ValueError, FileExistsError) as e:
            print(f"ddrl.study: {e}", file=sys.stderr)
            return 2
        print(f"ddrl.study: a replication's regimes on this machine's build -> {path}")
        return 0
    if args.small_lr_regime:
        sys.stdout.write(write_json(args.results / "regimes_small_lr.json",
                                    small_lr_regime_file(regimes_path(args.results))))
        return 0
    regimes = load_regimes(regimes_path(args.results), scale=scale, names=args.regimes)
    stage1_file, claims_file = args.results / "stage1.json", args.results / "claims.json"
    if args.export_base:
        try:
            paths = export_base_models(regimes_path(args.results))
        except ValueError as e:
            print(f"ddrl.study: {e}", file=sys.stderr)
            return 2
        print("ddrl.study: the measured base builds -> " + ", ".join(str(p) for p in paths))
        return 0
    if args.stage or args.heldout_x:
        try:
            check_weights(regimes_path(args.results), scale=scale)
        except ValueError as e:
            print(f"ddrl.study: {e}", file=sys.stderr)
            return 2
        if args.stage == 1:
            jobs = stage1_jobs(list(regimes), scale)
        elif args.stage == 2:
            if not stage1_file.is_file():
                print(f"ddrl.study: {stage1_file} missing: run --stage 1 and --analyse stage1 first", file=sys.stderr)
                return 2
            jobs = stage2_jobs(list(regimes), scale, json.loads(stage1_file.read_text())["seeds"])
        else:
            jobs = heldout_x_jobs(list(regimes), scale)
        what = f"stage {args.stage}" if args.stage else "H1x"
        t0 = time.perf_counter()
        done = run_jobs(jobs, scale, args.out, args.runs_root, args.budget_min, args.workers,
                        progress=not args.no_progress, desc=f"study {what}")
        counts = status_counts(done)
        print(f"ddrl.study: {what}, {len(jobs)} jobs in {time.perf_counter() - t0:.0f} s: {counts}")
        return 0
    if args.analyse == "stage1":
        res = analyse_stage1(args.out, regimes, scale)
        write_json(stage1_file, res)
        print(f"ddrl.study: variance components -> {stage1_file}; seeds per regime {res['seeds']}")
        return 0
    entries, missing = analyse_claims(args.out, regimes)
    write_json(claims_file, entries)
    hw = [e["half_width"] for e in entries]
    print(f"ddrl.study: {len(entries)} claim x regime entries -> {claims_file}"
          + (f"; half-widths {min(hw):.1f}-{max(hw):.1f}" if hw else ""))
    if entries:
        docs = args.docs or (REPO / "docs" / "results" if args.results == RESULTS else args.results / "figures")
        paths = render_results(entries, args.out, docs, missing)
        if args.results == RESULTS:  # every replication's side by side shows the registered scorecard
            paths.update(C.render_replications(RESULTS, entries))
        elif ("registered_weights" in json.loads(regimes_path(args.results).read_text())
              and (registered := C.load(RESULTS / "claims.json"))):
            paths.update({f"replication.{k}": p for k, p in
                          C.render_replication({"registered": registered, args.results.name: entries}, docs).items()})
        print(f"ddrl.study: scorecard and figures -> {docs} ({', '.join(sorted(p.name for p in paths.values()))})")
    if missing:
        print("not computed:\n  " + "\n  ".join(missing))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
