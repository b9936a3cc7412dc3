"""Any committed run of the claims study, checked by anyone: ``python -m ddrl.study rerun DESIGN REGIME METHOD SEED``.

A run (its per-question CSV, or with ``--steps K`` its first K RL steps) is recomputed by the study's own job code
from a fresh cache holding the design's committed base build, and every value that differs is listed. Runs on a
pinned build mostly repeat bitwise across CPUs, yet AVX-512 kernels flip a sampled token now and then (plan
Amendment 9), so a report names this CPU and the one that built the weights, and shows what differs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pandas as pd

import ddrl.train
from ddrl.accel.logprob_backends import pinned_backend
from ddrl.config import METHODS
from ddrl.infra.pool import environ
from ddrl.infra.rundir import RunDir
from ddrl.infra.storage import write_csv
from ddrl.study.designs import DESIGNS
from ddrl.study.jobs import _run_job, job_key, steps_frame
from ddrl.study.plan import (CSV, REFINED, RESULTS, SCALES, Job, check_weights, csv_method_seed, csv_path, experiment,
                             load_regimes, regimes_path, wants_heldout)

#: What a rerun compares of a step log: every logged step metric except its wall time
STEP_METRICS = ("episode", "lr", "adv/mean", "label/majority_ratio", "gt/label_acc")
#: What a rerun compares of a run's CSV: each question's pass@1 and the run-level values that are not wall times
QUESTION_METRICS = ("pass@1", "maj@n", "mean_tokens", "cor_kept")
#: The CPU kind that built each committed base build (docs/testbed.md; ``model.safetensors`` sha256, 8 hex)
BUILT_ON = {"e4d7f1c9": "AMD EPYC family 25 model 1 (no AVX-512)", "1f745ffa": "AMD EPYC family 25 model 1 (no AVX-512)",
            "c49d994e": "AMD EPYC with AVX-512 (family 26; family 25 model 17)", "abcbf433": "Intel Xeon"}


@dataclass(frozen=True)
class Target:
    """One committed run: its CSVs and the regimes file (hence the build) it was run on."""
    design: str
    regime: str
    method: str
    seed: int
    csv: Path
    steps_csv: Path
    regimes_file: Path


def _tree(design: str, results: Path = RESULTS) -> tuple[Path, Path]:
    """A design's folder of per-run CSVs and its results tree (whose regimes file names its build)."""
    if design in DESIGNS and results == RESULTS:
        return DESIGNS[design].runs, DESIGNS[design].results
    if design == "registered":
        return results / "runs", results
    own = results / design
    return (own / "runs" if (own / "runs").is_dir() else own), own


def design_dir(design: str, results: Path = RESULTS) -> Path:
    """The folder of a design's per-run CSVs."""
    return _tree(design, results)[0]


def locate(design: str, regime: str, method: str, seed: int, results: Path = RESULTS) -> Target:
    """The committed run named on the command line (``ValueError`` naming what is missing and what exists)."""
    folder, own = _tree(design, results)
    if not folder.is_dir() or design in ("base_models", "runs"):
        designs = [*DESIGNS, "registered"] + sorted(p.name for p in results.iterdir() if p.is_dir() and any(p.glob(f"**/*{CSV}"))
                                          and p.name != "runs")
        raise ValueError(f"no design {design!r} under {results}; designs with per-run CSVs: {designs}")
    path = csv_path(folder, regime, method, seed)
    if not path.is_file():
        names = [csv_method_seed(p) for p in (folder / regime).glob(f"*{CSV}")
                 if not p.name.endswith(f"-steps{CSV}")] if (folder / regime).is_dir() else []
        seeds = sorted(s for m, s in names if m == method)
        where = (f"its committed seeds: {seeds}" if seeds else f"methods of {regime}: {sorted({m for m, _ in names})}"
                 if names else f"regimes of {design}: {sorted(p.name for p in folder.iterdir() if p.is_dir())}")
        raise ValueError(f"{path}: no committed run of {method} seed {seed} in {regime} ({design}); {where}")
    return Target(design, regime, method, seed, path, csv_path(folder, regime, method, seed, steps=True),
                  regimes_path(own))


def cpu_info(text: str | None = None) -> dict:
    """This CPU as /proc/cpuinfo (or ``text``) names it: model name, family, model, AVX-512."""
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return {"model name": platform.processor() or platform.machine(), "family": None, "model": None,
                    "avx512": None}
    first = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = (s.strip() for s in line.split(":", 1))
            first.setdefault(k, v)
    return {"model name": first.get("model name", platform.machine()), "family": first.get("cpu family"),
            "model": first.get("model"), "avx512": "avx512f" in first.get("flags", "").split()}


def cpu_line(info: dict) -> str:
    """One line naming a CPU."""
    fam = f", family {info['family']} model {info['model']}" if info.get("family") else ""
    avx = {True: ", AVX-512", False: ", no AVX-512", None: ""}[info.get("avx512")]
    return f"{info['model name']}{fam}{avx}"


def build_line(regimes_file: Path, regime: str | None = None) -> str:
    """The base build a design ran ``regime`` on (None: every build beside the file) and the CPU that built it."""
    out = []
    for f in sorted({regimes_file, *regimes_file.parent.glob("regimes_*.json")}):
        data = json.loads(f.read_text())
        if regime is not None and regime not in {r.get("name") for r in data.get("regimes", [])}:
            continue
        w = data.get("weights") or {}
        sha = w.get("model.safetensors", "")[:8]
        line = f"{w.get('model')} {sha} (built on {BUILT_ON.get(sha, 'a CPU docs/testbed.md does not name')})"
        if sha and line not in out:
            out.append(line)
    return "; ".join(out) or "not recorded"


def _differ(a: pd.Series, b: pd.Series) -> pd.Series:
    return ~((a == b) | (a.isna() & b.isna()))


def compare_questions(committed: pd.DataFrame, fresh: pd.DataFrame) -> pd.DataFrame:
    """Every (split, question, metric) whose value differs between a committed run's CSV and its rerun, with both
    values (NaN: a question one side lacks). Empty: the same run, exactly."""
    for name, df in (("committed", committed), ("rerun", fresh)):
        missing = {"split", "question", "pass@1"} - set(df.columns)
        if missing:
            raise ValueError(f"the {name} rows lack column(s) {sorted(missing)}")
    cols = [c for c in QUESTION_METRICS if c in committed.columns and c in fresh.columns]
    both = committed[["split", "question", *cols]].merge(fresh[["split", "question", *cols]], how="outer",
                                                        on=["split", "question"], suffixes=("_committed", "_rerun"))
    rows = []
    for c in cols:
        a, b = both[f"{c}_committed"], both[f"{c}_rerun"]
        differ = _differ(a, b)
        rows += [{"split": s, "question": q, "metric": c, "committed": x, "rerun": y}
                 for s, q, x, y in zip(both["split"][differ], both["question"][differ], a[differ], b[differ])]
    return pd.DataFrame(rows, columns=["split", "question", "metric", "committed", "rerun"])


def compare_steps(committed: pd.DataFrame, fresh: pd.DataFrame, k: int) -> pd.DataFrame:
    """Every (step, metric) of the first ``k`` steps whose value differs between a committed step log and a rerun's
    (NaN: a step the rerun lacks). Empty: the same trajectory."""
    if k < 1:
        raise ValueError(f"steps: k must be >= 1, got {k}")
    a = committed[committed["step"] < k].set_index("step")
    b = fresh[fresh["step"] < k].set_index("step").reindex(a.index)
    rows = []
    for c in (c for c in STEP_METRICS if c in a.columns):
        x, y = a[c], b[c] if c in b.columns else pd.Series(float("nan"), index=a.index)
        differ = _differ(x, y)
        rows += [{"step": s, "metric": c, "committed": u, "rerun": v}
                 for s, u, v in zip(a.index[differ], x[differ], y[differ])]
    return pd.DataFrame(rows, columns=["step", "metric", "committed", "rerun"])


def first_divergence(diff: pd.DataFrame) -> int | None:
    """The first step a :func:`compare_steps` table names (None: none)."""
    return None if diff.empty else int(diff["step"].min())


@contextlib.contextmanager
def fresh_setting(target: Target, work: Path) -> Iterator[dict]:
    """The study's setting in ``work``: its pinned backends and an empty cache (no cached run can stand in) holding
    the design's base builds. Yields ``{regime, scale, key}``; ``ValueError`` unless the job's content key is the
    committed CSV's (one written by other settings, e.g. on a GPU, is not recomputed)."""
    scale = SCALES["default"]
    with pinned_backend("hf"), environ(DDRL_CACHE_DIR=str(work / "cache")):
        check_weights(target.regimes_file, scale)
        regime = load_regimes(target.regimes_file, scale=scale, names=[target.regime])[target.regime]
        key = job_key(regime, scale, target.method, target.seed)
        committed = set(pd.read_csv(target.csv, usecols=["key"], dtype=str)["key"])
        if committed != {key}:
            raise ValueError(f"{target.csv}: written under key(s) {sorted(committed)}, but the study's job code gives "
                             f"{key} here: another design's settings (an amendment's, or a GPU run) that `rerun` "
                             "does not recompute")
        yield {"regime": regime, "scale": scale, "key": key}


def rerun_run(target: Target, work: Path) -> pd.DataFrame:
    """The run recomputed in ``work`` by the study's own job, read back as stored."""
    with fresh_setting(target, work):
        job = Job(target.regime, target.seed, (target.method,), "rerun")
        _run_job((job, "default", str(work / "out"), str(work / "runs"), None, str(target.regimes_file)))
    return pd.read_csv(csv_path(work / "out", target.regime, target.method, target.seed))


class _Enough(Exception):
    pass


@contextlib.contextmanager
def _stop_after(k: int) -> Iterator[None]:
    """Stop ``ddrl.train.train`` once it has logged ``k`` steps."""
    base = ddrl.train.RunDir

    class Stopping(base):
        def log(self, row: dict) -> None:
            super().log(row)
            if row["step"] + 1 >= k:
                raise _Enough

    with mock.patch.object(ddrl.train, "RunDir", Stopping):
        yield


def rerun_steps(target: Target, k: int, work: Path) -> pd.DataFrame:
    """The run's first ``k`` RL steps recomputed in ``work`` as the study's step log, read back as stored (so it is
    compared at the stored precision)."""
    if target.method in REFINED or not target.steps_csv.is_file():
        raise ValueError(f"{target.steps_csv}: {target.method} has no step log of its own (a refinement reuses its "
                         "seed's DDRL run; rerun that one's steps, or the whole run)")
    with fresh_setting(target, work) as s:
        exp = experiment(s["regime"], s["scale"], wants_heldout(target.regime, target.method), work / "runs")
        cfg = exp.config(target.method, target.seed)
        run_dir = exp.run_dir(METHODS[target.method][0], cfg)
        with _stop_after(k), contextlib.suppress(_Enough):
            exp.train(target.method, target.seed)
        if len(RunDir(run_dir).read_metrics()) < k:
            raise RuntimeError(f"{run_dir}: the run logged fewer than {k} steps")
        df = steps_frame(run_dir, cfg, len(exp.adapted), target.regime, target.method, target.seed, s["key"])
    write_csv(work / f"steps{CSV}", df)
    return pd.read_csv(work / f"steps{CSV}")


def report(target: Target, diff: pd.DataFrame, n: int, what: str, cpu: dict | None = None) -> str:
    """The rerun's report: what was compared, this CPU, the design's build, and "identical" or the first 20 rows."""
    cpu = cpu_info() if cpu is None else cpu
    head = (f"rerun {target.design} {target.regime} {target.method} seed {target.seed}: {what}\n"
            f"  this CPU: {cpu_line(cpu)}\n  the design's base build: {build_line(target.regimes_file, target.regime)}\n"
            "  (the study records each run's build, not the CPU that ran it)")
    if diff.empty:
        return f"{head}\n  identical: all {n} compared values equal the committed ones"
    shown = diff.head(20).to_string(index=False)
    return (f"{head}\n  {len(diff)} of {n} compared values differ from the committed ones"
            f"{'; first at step ' + str(first_divergence(diff)) if 'step' in diff.columns else ''}. Runs on a "
            "pinned build may differ on another CPU kind (plan Amendment 9: AVX-512 kernels flip a sampled token now "
            f"and then):\n{shown}" + (f"\n  ... {len(diff) - 20} more" if len(diff) > 20 else ""))


def check(design: str, regime: str, method: str, seed: int, steps: int | None = None,
          work: str | Path | None = None) -> tuple[pd.DataFrame, str]:
    """(differences, report) of one committed run rerun (its first ``steps`` RL steps, or all of it) in ``work``."""
    target = locate(design, regime, method, seed)
    with tempfile.TemporaryDirectory(prefix="ddrl-rerun-") as tmp:
        w = Path(work) if work is not None else Path(tmp)
        if steps is not None:
            committed = pd.read_csv(target.steps_csv) if target.steps_csv.is_file() else None
            fresh = rerun_steps(target, steps, w)
            diff = compare_steps(committed, fresh, steps)
            n = int((committed["step"] < steps).sum()) * len([c for c in STEP_METRICS if c in committed.columns])
            return diff, report(target, diff, n, f"the first {steps} RL steps against the committed step log")
        committed = pd.read_csv(target.csv)
        fresh = rerun_run(target, w)
        diff = compare_questions(committed, fresh)
        n = len(committed) * len([c for c in QUESTION_METRICS if c in committed.columns])
        return diff, report(target, diff, n, f"the whole run, {len(committed)} questions x splits")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study rerun", description=__doc__.split("\n\n")[0])
    ap.add_argument("design", help="registered (results/runs), or a folder of results/: replication_xeon, wide, ...")
    ap.add_argument("regime")
    ap.add_argument("method")
    ap.add_argument("seed", type=int)
    ap.add_argument("--steps", type=int, default=None, metavar="K",
                    help="rerun only the first K RL steps and compare them with the committed step log (cheap)")
    ap.add_argument("--work", type=Path, default=None, help="compute here and keep it (default: a temporary folder)")
    args = ap.parse_args(argv)
    try:
        diff, text = check(args.design, args.regime, args.method, args.seed, args.steps, args.work)
    except ValueError as e:
        print(f"ddrl.study rerun: {e}", file=sys.stderr)
        return 2
    print(text)
    return 0 if diff.empty else 1
