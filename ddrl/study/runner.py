"""The claims study's command line (``results/plan.md``): every design of :data:`ddrl.study.designs.DESIGNS`
through one generic job list, analysis and table; the registered stages (``claims*``) through :func:`run_study`.

::

    python -m ddrl.study run|status|analyse|render DESIGN   # its jobs (resumable), seeds, analysis, committed table
    python -m ddrl.study run claims [--scale smoke --out DIR]   # the registered stages, H1x, SVAMP, claims.json
    python -m ddrl.study run claims_xeon   # a replication: the runs it ran (then analyse claims_xeon)
    python -m ddrl.study analyse claims    # claims.json, the scorecard and the study's figures (docs/results/)
    python -m ddrl.study render-page       # docs/results.md from the committed analyses (make docs)
    python -m ddrl.study correct           # the confirmatory family corrected (results/multiplicity.json)
    python -m ddrl.study rerun DESIGN REGIME METHOD SEED [--steps K]   # one committed run recomputed and compared
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

from ddrl.data import DataError
from ddrl.report.tables import committed_markdown, entry_ci
from ddrl.infra.pool import clock_budget, minutes_to
from ddrl.infra.storage import REPO, cache_root, write_json
from ddrl.seeds import seed_range
from ddrl.study import designs
from ddrl.study.analysis import (analyse_claims, analyse_stage1, bootstrap_entry, claim_matrix, paired_matrix,
                                 read_csvs)
from ddrl.study.claims import amendment_entry, validate, with_half_width
from ddrl.study.designs import (DESIGNS, MARGIN, Design, _complete, _needed, _unwritten, _wants, analysed_seeds, design,
                                path, regime_designs)
from ddrl.study.drift import export_steps
from ddrl.study.figures import render_results
from ddrl.study.jobs import run_jobs, run_real_rollouts_job, status_counts
from ddrl.study.measures import MEASURES, Reading, gpu_seeds
from ddrl.study.plan import (HELDOUT_X, MATH500_SMALL_LR, PAIRED, RESULTS, SAME_BASE, SCALES, SMALL_LR, Job, Regime,
                             Scale, check_weights, csv_path, heldout_x_jobs, heldout_x_path, load_regimes, regimes_path,
                             stage1_jobs, stage2_jobs, untrained)
from ddrl.study.page import main as render_page
from ddrl.study.strength import main as correct_main


def run_study(regimes: dict[str, Regime], scale: Scale, runs_dir: str | Path, results_dir: str | Path,
              budget_min: float | None = None, runs_root: str | Path | None = None, workers: int | None = None,
              progress: bool = True, regimes_file: str | Path | None = None) -> dict:
    """The registered study, resumable: stage 1, ``stage1.json``, stage 2, H1x, the SVAMP samples, ``claims.json``.
    ``regimes_file``: where ``regimes`` came from (default: ``results_dir``'s, else the registered one)."""
    results_dir, regimes_file = Path(results_dir), regimes_file or regimes_path(results_dir)
    check_weights(regimes_file, scale)
    end = time.time() + 60 * budget_min if budget_min is not None else None
    left = lambda: None if end is None else max(1e-3, (end - time.time()) / 60)  # noqa: E731
    go = lambda jobs, what: run_jobs(jobs, scale, runs_dir, runs_root, left(), workers, progress,  # noqa: E731
                                     desc=f"study {what}", regimes=regimes_file)
    s1 = go(stage1_jobs(list(regimes), scale), "stage 1")
    path = results_dir / "stage1.json"  # the seeds per regime, fixed once stage 1 is complete (amendments add to them)
    stage1 = json.loads(path.read_text()) if path.is_file() else analyse_stage1(runs_dir, regimes, scale)
    if not path.is_file() and not any(s["status"] == "skipped (budget)" for s in s1):
        write_json(path, stage1)
    s2 = go(stage2_jobs(list(regimes), scale, stage1["seeds"]), "stage 2")
    s3 = go(heldout_x_jobs(list(regimes), scale), "H1x")
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


def jobs(d: Design, seeds: Sequence[int] | None = None) -> list[Job]:
    """The design's jobs, seed by seed. Once its analysis is committed, only those whose CSVs are committed too: the
    study is finished, so ``run`` recomputes the runs behind a committed result and never starts a seed the plan's
    clock or budget left out (which the analysis, reading every complete seed, would then add)."""
    if d.regime_seeds:
        return [j for p in regime_designs(d) for j in jobs(p, seeds and [s for s in seeds if s in p.seeds])]
    groups = [((m,), d.kinds[i] if d.kinds else d.job_kind) for i, m in enumerate(d.evaluates)] if d.job_per_run \
        else [(d.evaluates, d.job_kind)]
    done = d.analysis.is_file()
    return [Job(regime, s, g, kind) for regime in d.job_regimes or (d.regime,)
            for s in (d.seeds if seeds is None else seeds) for g, kind in groups
            if _wants(d, g, s) and (not done or _committed(d, regime, g, s))]


def _committed(d: Design, regime: str, runs: Sequence[str], seed: int) -> bool:
    """Whether the CSVs a job of ``runs`` writes are committed in the design's own folder."""
    at = heldout_x_path if d.split == HELDOUT_X else csv_path
    return all(at(Path(d.runs, d.csv_dir), regime, m, seed).is_file() for m in runs)


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


#: How many records of a measure :func:`markdown` prints as a table (longer ones: per seed, drawn in the figures)
SHOWN_RECORDS = 16


def _predicted(d: Design, e: dict) -> str:
    p = d.predicted
    return p.get((e["id"], e["regime"])) or p.get(e["id"]) or p.get(e["regime"]) or "-"


def _half_width(d: Design, e: dict) -> str:
    if e.get("half_width") is None:
        return "-"
    p = _predicted(d, e)
    return f"{e['half_width']:.2f}" + ("" if p == "-" else f" ({p})")


def _md(t: pd.DataFrame) -> str:
    """A table as markdown, every cell as written (floats to 2 decimals; tabulate would read ``1e-6`` as a number)."""
    t = t.apply(lambda c: c.map(lambda v: f"{v:.2f}" if isinstance(v, float) else str(v).replace("|", r"\|")))
    return t.to_markdown(index=False, disable_numparse=True)


def _size(e: dict) -> str:
    return f"{e['n_seeds']} x {e['n_questions']:,}" if e.get("n_questions") else str(e["n_seeds"])


def _compact(value):
    """``value`` with each run of consecutive seeds written ``first-last``."""
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, list) and len(value) > 2 and all(type(v) is int for v in value) \
            and value == list(range(value[0], value[-1] + 1)):
        return f"{value[0]}-{value[-1]}"
    return value


def entries_table(d: Design, entries: Sequence[dict]) -> pd.DataFrame:
    """One row per claim entry: claim, regime, seeds x questions, estimate [95% CI], half-width (the plan's predicted
    ones), verdict, and the paper's number where an entry has one."""
    rows = [{"claim": f"{e['id']} {e.get('claim') or e['metric']}" + (f" ({e['arm']})" if e.get("arm") else ""),
             "regime": e["regime"],
             "seeds x questions": _size(e),
             "estimate [95% CI]": entry_ci(e), "half-width (predicted)": _half_width(d, e),
             "verdict": e["verdict"], "paper": "-" if e.get("paper") is None else f"{e['paper']:+.1f}"}
            for e in entries]
    t = pd.DataFrame(rows)
    return t.drop(columns="paper") if t.empty or (t.paper == "-").all() else t


def _listed(v) -> list:
    return v if isinstance(v, list) else [v or {}]


def _is_records(v) -> bool:
    return isinstance(v, list) and all(isinstance(r, dict) for r in v)


def _records(d: Design, key: str, value) -> list[str]:
    """A measure's value as markdown: records as a table (:data:`SHOWN_RECORDS` at most), else one line."""
    if isinstance(value, dict) and value and all(_is_records(_listed(v)) for v in value.values()):
        value = [{key: k, **r} for k, v in value.items() for r in _listed(v)]  # records per key: one table
    if isinstance(value, dict) and "estimate" in value:  # an entry set beside the claims, without a verdict
        return [f"- `{key}`: {value['id']} {entry_ci(value)} ({_size(value)})"]
    if not (value and _is_records(value)):
        return [f"- `{key}`: {json.dumps(_compact(value))}"]
    if all("estimate" in v and "verdict" in v for v in value):  # entries: on other seeds, or undecided
        return ["", f"`{key}`:", "", _md(entries_table(d, value)), ""]
    if len(value) > SHOWN_RECORDS:
        return [f"- `{key}`: {len(value)} records (in the analysis file)"]
    names = {"pass1": "pass@1, mean over seeds", "sd": "SD", "below_reference": f"seeds below {d.reference}"}
    return ["", f"`{key}`:", "", _md(pd.DataFrame(value).rename(columns=names)), ""]


def markdown(d: Design, res: dict | list) -> str:
    """A design's committed analysis as ``render DESIGN`` prints it: its question, its claim entries, then every
    other measure it wrote (descriptive)."""
    res = {"entries": res} if isinstance(res, list) else res
    lines = [f"**{d.tag if d.amendment else 'The registered plan'}** (`{d.id}`): {d.section.lstrip('# ')}", "",
             _md(entries_table(d, res["entries"])), ""]
    for key, value in res.items():
        if key != "entries":
            lines += _records(d, key, value)
    return "\n".join(lines).strip() + "\n"


def committed_table(name: str) -> str:
    """Design ``name``'s committed analysis (:func:`markdown`), or a sentence saying it is not committed yet."""
    d = DESIGNS[name]
    return committed_markdown(d.analysis, lambda res: markdown(d, res), d.amendment,
                              f"python -m ddrl.study status {name}")


#: Where the runs of a design whose jobs are not the generic ones come from (by :attr:`Design.whole`)
RUN_BY = {"drift": "its runs were computed on an H100 (device.txt beside them); this machine's jobs would compute "
                   "others",
          "lr_drift": "its held-out KLs come from python -m ddrl.study.drift export|kl (ddrl.study.drift's docstring)",
          "cor_alone_drift": "its runs come from python -m ddrl.study.drift kl --cor-alone (ddrl.study.drift's "
                             "docstring)",
          "dynamics": "it reads the step CSVs that other designs' runs wrote"}


def study_dir(d: Design, out: Path) -> Path:
    """Where a ``claims*`` design's stage1.json, claims.json and figures go: its results tree for its own runs, else
    beside ``out`` (never into results/: a smoke run must not overwrite the committed analyses)."""
    if Path(out).resolve() == d.runs.resolve():
        return d.results
    if Path(out).resolve().parent.is_relative_to(RESULTS.resolve()):
        raise ValueError(f"{out}: {d.id}'s analyses would go beside it, into results/; use its own runs or another "
                         "folder")
    return Path(out).parent


def run_claims(d: Design, args: argparse.Namespace) -> str:
    """The registered stages of ``d``'s results tree (:func:`run_study`), from the scale's stage-1 seeds."""
    if args.seeds is not None:
        raise ValueError(f"{d.id}: the registered stages take the scale's stage-1 seeds, then stage1.json's; "
                         "no --seeds")
    scale, regimes = SCALES[args.scale], regimes_path(d.results)
    to = study_dir(d, args.out)
    res = run_study(load_regimes(regimes, scale), scale, args.out, to, args.budget_min, args.runs_root, args.workers,
                    regimes_file=regimes)
    return f"{res['jobs']}; {len(res['claims'])} claim entries -> {to / 'claims.json'}"


def analyse_claims_tree(d: Design, out: Path, scale: str = "default") -> str:
    """``claims.json`` of a ``claims*`` design's runs ``out``, its scorecard and the study's figures beside it
    (docs/results/ for the registered tree, else ``figures/``; notebook 06 draws each build beside the registered)."""
    to = study_dir(d, out)
    entries, gone = analyse_claims(out, load_regimes(regimes_path(d.results), SCALES[scale]))
    write_json(to / "claims.json", entries)
    docs = REPO / "docs" / "results" if to == RESULTS else to / "figures"
    if entries:
        render_results(entries, out, docs, gone)
    return "".join(f"not computed: {m}\n" for m in gone) + f"{len(entries)} entries -> {to / 'claims.json'}, {docs}\n"


def run(d: Design, args: argparse.Namespace) -> str:
    """Run the design's :func:`jobs` to its clock; a seed lacking a cached or finished run it loads is refused first."""
    if d.whole == "claims" and not d.evaluates:
        return run_claims(d, args)
    if not (d.evaluates or d.regime_runs):
        raise ValueError(f"{d.id} has no jobs of its own: {RUN_BY[d.whole]}")
    seeds = d.seeds if args.seeds is None else tuple(s for s in d.seeds if s in set(args.seeds))
    todo = [j for j in jobs(d, seeds) if j.seed not in gpu_seeds(args.out)]  # not those computed on a GPU (A26)
    seeds = tuple(sorted({j.seed for j in todo}))
    regimes, scale = regimes_path(d.results), SCALES[args.scale]
    check_weights(regimes, scale)
    root = args.runs_root or cache_root() / "runs"
    if d.cached_ddrl:
        refuse_untrained(seeds, root, args.scale, d.amendment, d.regime)
    gone = untrained(seeds, root, args.scale, d.regime, d.finished, regimes) if d.finished else []
    if gone:
        raise ValueError(f"{root}: {d.tag} evaluates finished runs and trains none; not finished there: {gone}")
    status = run_jobs(todo, scale, Path(args.out, d.csv_dir), root,
                      clock_budget(d.cutoff, args.budget_min), args.workers, desc=f"{d.tag} run", regimes=regimes)
    if d.then_heldout:  # checked against the adapted jobs' CSVs
        status += run_jobs([replace(j, label="H1x") for j in todo], scale, args.out, root,
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
    if d.drift:  # the runs' step CSVs (into the design's own drift folder only from its own runs)
        own = Path(args.out).resolve() == d.runs.resolve()  # as study_dir tells a design's own runs
        n, gone = export_steps(args.out, root, d.regime, d.evaluates, d.drift_dir if own else None)
        return f"{status_counts(status)}; drift CSVs written: {n} (run directories not under {root}: {len(gone)})"
    return str(status_counts(status))


DESIGN_COMMANDS = ("run", "status", "analyse", "render")


def design_main(argv: Sequence[str] | None = None) -> int:
    """``python -m ddrl.study run|status|analyse|render DESIGN``."""
    ap = argparse.ArgumentParser(prog="python -m ddrl.study", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=DESIGN_COMMANDS)
    ap.add_argument("design", help=f"one of {', '.join(DESIGNS)}")
    ap.add_argument("--seeds", type=seed_range, default=None, help="run: seeds N-M (default: the design's)")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=None, help="the CSVs (default: the design's runs/); claims*: its "
                    "stage1.json, claims.json and figures go beside another folder")
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
        elif d.whole == "claims":
            if args.json:
                raise ValueError(f"{d.id}: its claims.json and figures go beside --out; no --json")
            sys.stdout.write(analyse_claims_tree(d, args.out, args.scale))
        else:
            sys.stdout.write(write_json(args.json or d.analysis, analyse(d, args.out)))
    except ValueError as e:
        print(f"ddrl.study: {e}", file=sys.stderr)
        return 2
    return 0


#: The flags results/plan.md quotes, as the study ran them -> what does that now
RETIRED = {**dict.fromkeys(("--stage", "--heldout-x", "--real-rollouts"), "python -m ddrl.study run claims"),
           "--analyse": "python -m ddrl.study analyse claims (a replication: claims_xeon, claims_c49d)",
           **dict.fromkeys(("--export-base", "--new-replication", "--small-lr-regime"),
                           "nothing: it wrote a file the finished study committed once")}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ddrl.study COMMAND ...`` (this module's docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in RETIRED:
        print(f"ddrl.study: {argv[0]} is retired; now: {RETIRED[argv[0]]}", file=sys.stderr)
        return 2
    if argv[:1] == ["rerun"]:
        from ddrl.study.rerun import main as rerun_main  # imports torch: only when asked

        return rerun_main(argv[1:])
    if argv[:1] == ["render-page"]:
        return render_page(argv[1:])
    if argv[:1] == ["correct"]:
        return correct_main(argv[1:])
    return design_main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
