"""The claims study (issue 17) as ``results/plan.md`` registers it: running its jobs and the CLI. The design
(constants, regimes, job lists, the readings of the plan) is :mod:`ddrl.study.plan`; the analysis that turns the
per-run CSVs into ``results/stage1.json`` and ``results/claims.json`` is :mod:`ddrl.study.analysis`.

::

    python -m ddrl.study --stage 1 [--budget-min N] [--regimes aime_like ...]   # no adaptation, TTRL, DDRL, seeds 0-5
    python -m ddrl.study --analyse stage1        # variance components + seeds per regime -> results/stage1.json
    python -m ddrl.study --stage 2 [--budget-min N]                            # the rest, in the plan's priority order
    python -m ddrl.study --heldout-x             # H1x (Amendments 11-17, 19, 20): H1 (+ TTRL, BCS+DAE, ...) on fresh questions
    python -m ddrl.study --real-rollouts         # F1-F3, G1, E1, E2's inputs on SVAMP Codex samples (Amendment 18)
    python -m ddrl.study --analyse claims        # every claim's estimate, interval, verdict -> results/claims.json
    python -m ddrl.study --status                # CSVs written per stage and the measured worker time left
    python -m ddrl.study --small-lr-regime [--results R]   # R/regimes_small_lr.json (Amendments 28, 44; nothing measured)
    python -m ddrl.study status|analyse|run|render DESIGN   # a design of ddrl.study.designs.DESIGNS (plan amendments)
    python -m ddrl.study import wide DIR --device NAME      # a GPU machine's complete seeds (plan Amendment 26)
    python -m ddrl.study render-page             # docs/results.md from the committed analyses (make docs)
    python -m ddrl.study rerun DESIGN REGIME METHOD SEED [--steps K]   # recompute one committed run and compare

Runs go through :func:`ddrl.study.pool.run_jobs` (one single-thread worker per core, one progress bar). A job
(:mod:`ddrl.study.jobs`) is one regime x seed x the methods of one claim that share a run; it trains (or loads) the
run through :class:`ddrl.run.experiments.Experiment` and writes one small CSV per method under
``results/runs/<regime>/``: pass@1 of every question (the mean of the evaluation samples) with run-level columns,
and for trained methods a ``-steps.csv`` with the per-step mean advantage and wall time (D1, D2, C2). Killed and
rerun, a job whose CSVs exist with the same content key is skipped, finished runs load and are never retrained (run
directories, :mod:`ddrl.run.rundir`), evaluations come from their content-keyed cache. ``--budget-min``: jobs that would
start after the budget is spent are skipped (the running ones finish), so the study stops cleanly between jobs;
rerunning it continues where it stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from ddrl.study import claims as C
from ddrl.data import DataError
from ddrl.models import resolve_device
from ddrl.run.pool import default_workers
from ddrl.study.regimes import Regime
from ddrl.run.storage import REPO, write_json
from ddrl.study.analysis import analyse_claims, analyse_stage1
from ddrl.study.figures import render_results
from ddrl.study.plan import (HELDOUT_X_AMENDMENTS, REAL, RESULTS, SCALES, SVAMP_REGIME, Scale, check_weights,
                             export_base_models, heldout_x_jobs, load_regimes, regimes_path, small_lr_regime_file,
                             stage1_jobs, stage2_jobs, write_replication)
from ddrl.study.jobs import run_real_rollouts_job
from ddrl.study.rerun import main as rerun_main
from ddrl.study.pool import run_jobs, status_counts
from ddrl.study.designs import main as design_main
from ddrl.study.page import main as render_page
from ddrl.study.status import status_text

# ---------------------------------------------------------------------------------------------------------
# The whole study in one call (notebook 06's ``study`` and ``smoke`` presets)
# ---------------------------------------------------------------------------------------------------------


def run_study(regimes: dict[str, Regime], scale: Scale, runs_dir: str | Path, results_dir: str | Path,
              budget_min: float | None = None, runs_root: str | Path | None = None, workers: int | None = None,
              progress: bool = True) -> dict:
    """Stage 1, its analysis (``stage1.json``: variance components and seeds, no means), stage 2 and H1x (plan
    Amendments 11-17, 19, 20) with what is left of ``budget_min``, the real LLM's sample claims' inputs
    (Amendment 18; the registered scale only), then every claim (``claims.json``); resumable (rerun after a kill:
    written jobs are skipped, finished runs load). One progress bar per stage. Returns what was written and run."""
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
    if scale.name == "default":  # the sample claims on a real LLM (Amendment 18), where its samples are found
        try:
            run_real_rollouts_job(runs_dir)
        except DataError as e:
            print(f"ddrl.study: no svamp_codex entries: {e}", file=sys.stderr)
    entries, missing = analyse_claims(runs_dir, regimes)
    write_json(results_dir / "claims.json", entries)
    status = status_counts(s1 + s2 + s3)
    return {"stage1": stage1, "claims": entries, "missing": missing, "jobs": status}


# ---------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------


#: The subcommands of the designs' table (:mod:`ddrl.study.designs`): ``python -m ddrl.study run|status|analyse DESIGN``
DESIGN_COMMANDS = ("run", "status", "analyse", "render", "import")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    subcommands = {"render-page": render_page, "rerun": rerun_main, **{c: design_main for c in DESIGN_COMMANDS}}
    if argv[:1] and argv[0] in subcommands:  # beside the registered stages' flags below
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
    what.add_argument("--status", action="store_true", help="jobs written per stage and the measured time left")
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
    if args.stage1_seeds is not None:  # only which seeds stage 1 lists: the runs and their keys stay the scale's
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
    if args.status:
        workers = args.workers or default_workers(99, str(resolve_device(scale.knobs.get("device", "auto"))))
        print(status_text(args.out, regimes, scale, stage1_file, workers, args.runs_root))
        return 0
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
    elif args.heldout_x:
        jobs = heldout_x_jobs(list(regimes), scale)
    if args.stage or args.heldout_x:
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
        if args.results == RESULTS:  # the registered scorecard changed: so did every replication's side by side
            paths.update(C.render_replications(RESULTS, entries))
        elif ("registered_weights" in json.loads(regimes_path(args.results).read_text())
              and (registered := C.load(RESULTS / "claims.json"))):
            paths.update({f"replication.{k}": p for k, p in
                          C.render_replication({"registered": registered, args.results.name: entries}, docs).items()})
        print(f"ddrl.study: scorecard and figures -> {docs} ({', '.join(sorted(p.name for p in paths.values()))})")
    if missing:
        print("not computed:\n  " + "\n  ".join(missing))
    return 0


if __name__ == "__main__":  # pragma: no cover  (python -m ddrl.study runs ddrl/study/__main__.py)
    sys.exit(main())
