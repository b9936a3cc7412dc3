"""P1, P2 and M1 on 768 MATH-500-like questions (plan Amendment 26): the registered comparisons that were bound
by their questions, rerun on three times as many.

The registered study's MATH-500-like P1 (TTRL - no adaptation) and P2 (DDRL - no adaptation) missed the 2.0-point
half-width at 46 seeds x 256 questions (2.2 and 2.9): how much adaptation gains varies between questions, so no
number of seeds reaches it. This amendment adapts on the same stream's first 768 questions (the registered 256
first; ``results/regimes_wide.json``, base maj@64 0.727 >= 0.70, so still MATH-500-like) with everything else
the registered regime's, on :data:`SEEDS`, and decides P1, P2 and M1 there by the registered bootstrap and rule.

Each seed's three runs are computed on one device: the CPU (single-thread workers, the study's pool) or, where a
GPU machine is lent, a GPU; :data:`DEVICES_FILE` names the seeds imported from a GPU (their runs are other runs:
the job keys name the device). The registered check (:func:`device_check`) compares the GPU seeds' per-seed
effects with the CPU seeds'; where its interval excludes 0, the verdict is taken from the CPU seeds alone.

    python -m ddrl.study.amendments.wide run --workers 2                      # the CPU seeds (resumable; skips the GPU's seeds)
    python -m ddrl.study.amendments.wide run --seeds 212-223 --workers 8 --out DIR       # on a GPU machine
    python -m ddrl.study.amendments.wide import DIR --device "NVIDIA H100 80GB HBM3"     # its complete seeds into results/wide
    python -m ddrl.study.amendments.wide status                                # complete seeds, by device
    python -m ddrl.study.amendments.wide analyse --json results/wide/claims.json

Plan Amendment 27 adds Amendment 25's penalised arms (:data:`ARMS`, kl_coef 0.1) in the same regime, on the CPU
seeds :data:`ARM_SEEDS`, and compares them with the untrained model (Q1, Q2) and with their own methods (Q3, Q4):

    python -m ddrl.study.amendments.wide run --arms --workers 2               # resumable; the untrained runs of 200-211 are reused
    python -m ddrl.study.amendments.wide analyse --arms --json results/wide/arms.json
    python -m ddrl.study.amendments.wide figure                                # docs/results/wide_vote.{png,pdf} (descriptive)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats as sps
import seaborn as sns

from ddrl.study.claims import validate, with_half_width
from ddrl.report.plotting import color, label, save_docs_figure
from ddrl.run.storage import atomic_write_bytes, cache_root, write_json
from ddrl.seeds import derive_seed, numpy_generator, seed_range
from ddrl.report.stats import decided
from ddrl.study.analysis import (claim_matrix, complete_seeds, level_table, load_questions, paired_matrix, run_levels,
                                 wide_entry)
from ddrl.study.figures import levels_vote_figure, vote_by_quarter
from ddrl.study.plan import CSV, RESULTS, SCALES, Job, check_weights, csv_path
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import VERDICT_MD, entry_ci

REGIME = "math500_like_768"  # ddrl.study.regimes.wide_regime of the registered MATH-500-like regime
STANDS_FOR = "math500_like"  # the benchmark it stands for: the paper's number and sign are MATH-500's
SEEDS = tuple(range(200, 224))  # 24 seeds (the plan's power analysis), apart from every earlier seed set
METHODS = ("no_adaptation", "ttrl", "ddrl")
CLAIMS = ("P1", "P2", "M1")
OUT = RESULTS / "wide"
DEVICES_FILE = "devices.json"  # {seed: device name} of the seeds computed on a GPU
#: Plan Amendment 27: Amendment 25's arms (the registered presets with kl_coef 0.1) on the CPU seeds of Amendment 26
#: and 12 new ones (their untrained runs new too); one device (this machine's CPU) for every arm run.
ARMS = ("ttrl_kl100x", "ddrl_kl100x")
ARM_SEEDS = tuple(range(200, 212)) + tuple(range(224, 236))
#: id -> (a, b, expected sign, margin, metric): adapted pass@1 a - b per seed and question, in points
ARM_PAIRS = {
    "Q1": ("ttrl_kl100x", "no_adaptation", +1, 1.0, "adapted pass@1, TTRL (100x KL) - no adaptation [points]"),
    "Q2": ("ddrl_kl100x", "no_adaptation", +1, 1.0, "adapted pass@1, DDRL (100x KL) - no adaptation [points]"),
    "Q3": ("ttrl_kl100x", "ttrl", +1, 1.0, "adapted pass@1, TTRL (100x KL) - TTRL [points]"),
    "Q4": ("ddrl_kl100x", "ddrl", +1, 1.0, "adapted pass@1, DDRL (100x KL) - DDRL [points]"),
}

#: The plan's predicted 95% half-widths (Amendment 27, "Power": Q1/Q2 from the registered P1/P2 components at 24 x
#: 768, Q3/Q4 from Amendment 25's L4 matrices at 12 x 768), shown beside the measured ones
ARM_PREDICTED_HALF_WIDTH = {"Q1": 1.58, "Q2": 1.86, "Q3": 0.54, "Q4": 0.97}
def jobs(seeds: Sequence[int], methods: Sequence[str] = METHODS, regime: str = REGIME) -> list[Job]:
    """One job per seed and method, seed by seed (a budget's cut leaves whole seeds behind)."""
    return [Job(regime, s, (m,), "wide") for s in seeds for m in methods]


def gpu_seeds(out: str | Path = OUT) -> dict[int, str]:
    """The seeds whose runs were imported from a GPU (:func:`import_runs`), with the device's name."""
    path = Path(out) / DEVICES_FILE
    return {int(k): v for k, v in json.loads(path.read_text()).items()} if path.is_file() else {}


def import_runs(src: str | Path, device: str, out: str | Path = OUT, regime: str = REGIME,
                methods: Sequence[str] = METHODS) -> list[int]:
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


def analyse(out: str | Path = OUT, n_boot: int = 4000, seeds: Sequence[int] = SEEDS) -> dict:
    """P1, P2 and M1 in :data:`REGIME` over ``seeds``, every one of them complete (the plan reads no mean before):
    ``entries`` (the verdicts: CPU seeds alone where the device check shifted), ``all_seeds`` and ``cpu_seeds``
    entries, and each claim's ``device_check``."""
    done = [s for s in complete_seeds(out) if s in set(seeds)]
    if len(done) < len(seeds):
        raise ValueError(f"{out}: {len(done)} of {len(seeds)} seeds complete (missing "
                         f"{sorted(set(seeds) - set(done))}); the plan reads no estimate before all are")
    df = load_questions(out)
    df = df[df.seed.isin(done)]
    devices = {s: v for s, v in gpu_seeds(out).items() if s in done}
    res: dict = {"regime": REGIME, "seeds": done, "gpu_seeds": devices, "entries": [], "all_seeds": [],
                 "cpu_seeds": [], "device_check": {}}
    for cid in CLAIMS:
        d = claim_matrix(df, cid, REGIME)
        if d is None:
            continue
        every = wide_entry(cid, d, n_boot)
        cpu_rows = [s for s in d.index if s not in devices]
        cpu = wide_entry(cid, d.loc[cpu_rows], n_boot) if devices and len(cpu_rows) >= 2 else every
        check = device_check(d, devices)
        use = cpu if check and check["shifted"] else every
        note = "GPU seeds shifted the effect (device check): CPU seeds only" if use is not every else ""
        res["entries"].append({**use, **({"note": note} if note else {})})
        res["all_seeds"].append(every)
        res["cpu_seeds"].append(cpu)
        res["device_check"][cid] = check
    for k in ("entries", "all_seeds", "cpu_seeds"):
        with_half_width(validate(res[k], f"{REGIME} {k}"))
    return res


def arm_entry(pid: str, df: pd.DataFrame, n_boot: int = 4000) -> dict | None:
    """Amendment 27's comparison ``pid`` (:data:`ARM_PAIRS`) over the seeds of ``df`` where both of its methods have
    adapted rows: the hierarchical bootstrap (stream ``derive_seed(0, "wide-arms", pid)``) and the registered rule
    (``ddrl.report.stats.verdict``, the expected sign, margin 1). None with fewer than 2 such seeds."""
    a, b, sign, margin, metric = ARM_PAIRS[pid]
    d = paired_matrix(df, REGIME, a, b, "adapted")
    if d is None:
        return None
    rng = np.random.default_rng(derive_seed(0, "wide-arms", pid))
    return {"id": pid, "metric": metric, "regime": REGIME, "a": a, "b": b, "sign": sign,
            **decided(d.to_numpy(), rng, sign, margin, n_boot)}


def analyse_arms(out: str | Path = OUT, n_boot: int = 4000, seeds: Sequence[int] = ARM_SEEDS) -> list[dict]:
    """Q1-Q4 (plan Amendment 27) once every seed of ``seeds`` has its untrained run and both arms on the CPU (the
    plan reads no mean before): Q1, Q2 over all of them, Q3, Q4 over those that also have the method's CPU run."""
    arms_done = complete_seeds(out, REGIME, ("no_adaptation", *ARMS))
    missing = sorted(set(seeds) - set(arms_done))
    if missing:
        raise ValueError(f"{out}: seeds {missing} lack an untrained or penalised run; the plan reads no estimate "
                         "before all are complete")
    gpu = set(gpu_seeds(out))
    if gpu & set(seeds):
        raise ValueError(f"Amendment 27 is CPU-only; seeds {sorted(gpu & set(seeds))} were computed on a GPU")
    df = load_questions(out)
    df = df[df.seed.isin(set(seeds))]
    return [e for e in (arm_entry(pid, df, n_boot) for pid in ARM_PAIRS) if e is not None]


def arms_markdown(entries: Sequence[dict]) -> str:
    """Amendment 27's table as docs/results.md quotes it: per comparison its seeds, the estimate with its 95%
    interval, the half-width beside the plan's prediction and the verdict (from ``arms.json``'s entries)."""
    rows = ["| comparison (MATH-500-like, 768 questions, adapted pass@1, points) | seeds | estimate [95% CI] | "
            "half-width (predicted) | verdict |", "|---|---|---|---|---|"]
    for e in entries:
        what = ARM_PAIRS[e["id"]][4].removeprefix("adapted pass@1, ").removesuffix(" [points]")
        rows.append(f"| {e['id']} {what} | {e['n_seeds']} | {entry_ci(e)} "
                    f"| {e['half_width']:.2f} ({ARM_PREDICTED_HALF_WIDTH[e['id']]:.2f}) | {VERDICT_MD[e['verdict']]} |")
    return "\n".join(rows) + "\n"


def seed_levels(out: str | Path = OUT, seeds: Sequence[int] | None = None, regime: str = REGIME) -> pd.DataFrame:
    """:func:`run_levels` of ``regime``'s CSVs under ``out`` (on ``seeds``): one row per method x seed."""
    df = load_questions(out)
    df = df[df.regime == regime]
    if seeds is not None:
        df = df[df.seed.isin(set(seeds))]
    return run_levels(df).drop(columns="regime").sort_values(["method", "seed"], ignore_index=True)


def levels(out: str | Path = OUT, seeds: Sequence[int] | None = None, regime: str = REGIME,
           reference: str = "no_adaptation") -> pd.DataFrame:
    """:func:`level_table` of ``regime``'s runs under ``out``: one row per method."""
    return level_table(seed_levels(out, seeds, regime), ("method",), reference)


def figure_tables(out: str | Path = OUT) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`vote_figure`'s two tables (:func:`seed_levels`, :func:`vote_by_quarter`) for Amendment 26's methods,
    and for Amendment 27's arms only once ``arms.json`` is written (the plan reads nothing of them before)."""
    methods = (*METHODS, *ARMS) if (Path(out) / "arms.json").is_file() else METHODS
    sp, vote = seed_levels(out), vote_by_quarter(out)
    return sp[sp.method.isin(methods)], vote[vote.method.isin(methods)]


def vote_figure(seed_pass1: pd.DataFrame, vote: pd.DataFrame):
    """:func:`levels_vote_figure` of :func:`seed_levels` and :func:`vote_by_quarter`, one run per method. Each method
    is shown on the seeds it has (the untrained model on Amendment 26's and 27's; TTRL and DDRL on 26's; the arms on
    27's). Descriptive; the paired intervals are ``claims.json``'s and ``arms.json``'s."""
    order = [m for m in (*METHODS, *ARMS) if m in set(seed_pass1.method)]
    return levels_vote_figure(seed_pass1.assign(run=seed_pass1.method.map(label)), vote.assign(run=vote.method.map(label)),
                              [label(m) for m in order], {label(m): color(m) for m in order},
                              f"{REGIME}: what the runs end at, and how their vote changes over training (descriptive)",
                              numpy_generator(0, "figure", REGIME))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.wide", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "import", "status", "analyse", "figure"))
    ap.add_argument("src", nargs="?", type=Path, help="import: a GPU machine's run --out folder")
    ap.add_argument("--seeds", type=seed_range, default=None, help="run: seeds N-M (default: the plan's)")
    ap.add_argument("--arms", action="store_true", help="run, analyse: Amendment 27's penalised arms (Q1-Q4)")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="run: jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=OUT, help=f"the CSVs (default {OUT})")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--device", default=None, help="import: the GPU's name (nvidia-smi), recorded per seed")
    ap.add_argument("--json", type=Path, default=None, help="analyse: write the result here")
    args = ap.parse_args(argv)
    if args.what == "run":
        check_weights(scale=SCALES[args.scale])  # the measured base build (installed from results/base_models), never a new one
        skip = gpu_seeds(args.out)
        seeds = args.seeds or list(ARM_SEEDS if args.arms else SEEDS)
        todo = [s for s in seeds if s not in skip]
        methods = ("no_adaptation", *ARMS) if args.arms else METHODS  # written CSVs are skipped (same key)
        status = run_jobs(jobs(todo, methods), SCALES[args.scale], args.out, args.runs_root or cache_root() / "runs",
                          args.budget_min, args.workers, desc=f"Amendment {27 if args.arms else 26} runs")
        print(status_counts(status))
    elif args.what == "import":
        if args.src is None or not args.device:
            ap.error("import needs the run folder and --device NAME")
        print(f"imported seeds {import_runs(args.src, args.device, args.out)} as {args.device}")
    elif args.what == "status":
        done, devices = complete_seeds(args.out), gpu_seeds(args.out)
        print(f"{REGIME}: {len(done)} of {len(SEEDS)} seeds complete ({sum(s in devices for s in done)} from a GPU); "
              f"missing {sorted(set(SEEDS) - set(done))}")
        arms = complete_seeds(args.out, REGIME, ("no_adaptation", *ARMS))
        print(f"Amendment 27 (arms): {len([s for s in arms if s in ARM_SEEDS])} of {len(ARM_SEEDS)} seeds complete; "
              f"missing {sorted(set(ARM_SEEDS) - set(arms))}")
    elif args.what == "figure":  # -> docs/results/wide_vote.{png,pdf}
        print(save_docs_figure(vote_figure(*figure_tables(args.out)), "wide_vote"))
    else:
        res = analyse_arms(args.out) if args.arms else analyse(args.out)
        sys.stdout.write(write_json(args.json, res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
