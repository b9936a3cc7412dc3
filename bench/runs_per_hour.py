"""Runs per hour: one batch of independent runs, serial (one process) vs a pool of single-thread workers
(:mod:`ddrl.infra.pool`), and the same serial batch on the code of ``--baseline-ref`` (the commit before issue 16's
changes: full three-pass update, no pool, 2 threads), all measured in the same invocation. (Since 2026-11-26
``Experiment`` computes CPU runs with one thread wherever they run, so today's serial mode is one process at one
thread; the results recorded before that, ``serial`` at 2 threads, predate it.)

The batch is :meth:`ddrl.run.experiments.Experiment.grid` -- what notebooks 03-05 call -- over ``--methods`` x
``--seeds`` (default TTRL and DAE x 4 seeds = 8 independent runs) on the testbed (``--preset``, default
``default``; each run trains on the first ``--adapted`` test questions for ``--episodes`` episodes with the
default :class:`~ddrl.config.TrainConfig` otherwise, then evaluates pass@1 on them). Each mode runs in a fresh
subprocess with its own empty run and evaluation cache (the built testbed is linked in), so nothing is reused
between modes; the wall time includes starting the workers. The machine may be shared: ``os.getloadavg()`` is
recorded before and after each mode. Writes ``bench/results/runs_per_hour.json``::

    .venv/bin/python bench/runs_per_hour.py            # baseline ref (2 threads), serial, 2 workers x 1 thread

The baseline is checked out with ``git worktree add --detach`` into a temporary directory and imported
instead of this tree (``PYTHONPATH``); its run and evaluation caches are empty like the other modes'.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("DDRL_BENCH_CODE", str(ROOT)))  # the code a mode measures (see measure)


def batch(args) -> dict:
    """One mode, in this process: the grid's wall time and its scores."""
    import torch

    import ddrl
    from ddrl.run.experiments import Experiment
    from ddrl.testbed import generate_split

    records = generate_split("test", args.adapted, seed=0)
    kwargs = {"workers": args.workers} if "workers" in Experiment.__dataclass_fields__ else {}  # older code: serial
    exp = Experiment(records, (), overrides={"model": f"testbed:{args.preset}", "episodes": args.episodes,
                                             "device": "cpu"},
                     progress=False, **kwargs)
    t0 = time.perf_counter()
    df = exp.grid(args.methods, args.seeds)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "ddrl_imported_from": str(Path(ddrl.__file__).parent), "runs": len(df), "threads": torch.get_num_threads(), "workers": args.workers,
            "rl_seconds_sum": float(df["rl_seconds"].sum()),
            "scores": df[["method", "seed", "pass@1", "maj@n", "tokens_per_step"]].to_dict("records")}


def measure(mode: str, workers: int, threads: int, args, testbed_cache: Path, code: Path = ROOT) -> dict:
    """Run :func:`batch` in a fresh subprocess with an empty cache (except the linked testbed builds),
    importing ``ddrl`` from ``code`` (this tree, or a checkout of the baseline)."""
    with tempfile.TemporaryDirectory(prefix=f"runs_per_hour-{mode}-") as tmp:
        (Path(tmp) / "testbed").symlink_to(testbed_cache)
        env = {**os.environ, "DDRL_CACHE_DIR": tmp, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(code),
               "DDRL_BENCH_CODE": str(code)}
        env.pop("DDRL_PROGRESS_FILE", None)
        cmd = [sys.executable, __file__, "--batch", "--workers", str(workers), "--preset", args.preset,
               "--adapted", str(args.adapted), "--episodes", str(args.episodes), "--methods", *args.methods,
               "--seeds", *map(str, args.seeds)]
        load_before = os.getloadavg()
        t0 = time.perf_counter()
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        total = time.perf_counter() - t0
        if out.returncode:
            raise SystemExit(f"{mode} batch failed:\n{out.stderr[-3000:]}")
        res = json.loads(out.stdout.strip().splitlines()[-1])
        return {"mode": mode, "code": str(code) if code != ROOT else "this tree", "process_s": total, **res,
                "omp_threads": threads,
                "loadavg_before": load_before, "loadavg_after": os.getloadavg()}


@contextlib.contextmanager
def baseline_checkout(ref: str) -> Iterator[Path]:
    """The code of ``ref`` in a temporary ``git worktree`` (removed on the way out), imported by the baseline
    mode instead of this tree."""
    with tempfile.TemporaryDirectory(prefix="runs_per_hour-baseline-") as tmp:
        code = Path(tmp) / "code"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(code), ref], check=True)
        try:
            yield code
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(code)], check=False)


def cpu() -> str:
    """The CPU as /proc/cpuinfo names it ("Intel(R) Xeon(R) Processor, family 6 model 207"), or "unknown"."""
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/cpuinfo").read_text().splitlines() if ":" in line)
    except OSError:
        return "unknown"
    info = {k.strip(): v.strip() for k, v in info.items()}
    return f"{info.get('model name', 'unknown')}, family {info.get('cpu family', '?')} model {info.get('model', '?')}"


def setup(args) -> dict:
    """What a result was measured on (the batch and the machine)."""
    return {"preset": args.preset, "methods": args.methods, "seeds": args.seeds,
            "runs": len(args.methods) * len(args.seeds), "adapted": args.adapted, "episodes": args.episodes,
            "cpu_count": os.cpu_count(), "cpu": cpu()}


def write_result(args, result: dict) -> None:
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default", help="testbed preset")
    ap.add_argument("--methods", nargs="+", default=["ttrl", "dae"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--adapted", type=int, default=16, help="test questions each run adapts on (and is scored on)")
    ap.add_argument("--episodes", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2, help="pool size")
    ap.add_argument("--threads", type=int, default=2, help="threads of the serial process")
    ap.add_argument("--baseline-ref", default="8d2ebce",
                    help="git commit measured as today's code (serial); '' skips it. Default: main before issue 16")
    ap.add_argument("--rounds", type=int, default=1,
                    help="> 1: baseline and pool only, R times in alternating order (baseline pool, pool baseline, "
                         "...); reports every round's ratio and their geometric mean with a 95%% t-interval")
    ap.add_argument("--batch", action="store_true", help=argparse.SUPPRESS)  # internal: one mode, JSON on stdout
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "runs_per_hour.json"))
    args = ap.parse_args()
    if args.batch:
        print(json.dumps(batch(args)))
        return

    from ddrl.testbed import build

    testbed_cache = build(args.preset, progress=True).parent
    if args.rounds > 1:
        return alternate(args, testbed_cache)
    modes = []
    if args.baseline_ref:
        with baseline_checkout(args.baseline_ref) as code:
            modes.append(measure("baseline", 1, args.threads, args, testbed_cache, code=code))
            modes[-1]["ref"] = args.baseline_ref
    modes += [measure("serial", 1, args.threads, args, testbed_cache),
              measure("pool", args.workers, 1, args, testbed_cache)]
    serial, pool = modes[-2:]
    baseline = modes[0] if args.baseline_ref else None
    runs = len(args.methods) * len(args.seeds)
    for m in modes:
        m["runs_per_hour"] = runs * 3600 / m["process_s"]
    same = serial["scores"] == pool["scores"]
    result = {
        "setup": {**setup(args), "note": "machine shared with other jobs: see loadavg_before/after of each mode"},
        "modes": modes,
        "pool_over_serial": serial["process_s"] / pool["process_s"],
        "pool_over_baseline": baseline["process_s"] / pool["process_s"] if baseline else None,
        "serial_over_baseline": baseline["process_s"] / serial["process_s"] if baseline else None,
        "same_scores": same,
    }
    write_result(args, result)
    for m in modes:
        print(f"{m['mode']:<7} workers {m['workers']} x {m['omp_threads']} thread(s): {m['process_s']:7.1f} s for "
              f"{runs} runs = {m['runs_per_hour']:6.1f} runs/h (load {m['loadavg_before'][0]:.2f} -> "
              f"{m['loadavg_after'][0]:.2f})")
    print(f"pool / serial runs per hour: {result['pool_over_serial']:.2f}x; identical scores: {same}")
    if baseline:
        print(f"pool / baseline ({args.baseline_ref}) runs per hour: {result['pool_over_baseline']:.2f}x")


def alternate(args, testbed_cache: Path) -> None:
    """``--rounds R``: the baseline and the pool, R times in alternating order, each mode in a fresh process with
    an empty cache as in a single run; the ratio of each round and their geometric mean with a 95% t-interval
    (``bench/rl_step.py``'s :func:`geometric_mean_ci`). On a machine whose speed drifts by up to 1.5x within
    minutes, one sequence of modes cannot decide a ratio threshold (docs/benchmarks.md)."""
    if not args.baseline_ref:
        raise SystemExit("--rounds needs a baseline (--baseline-ref)")
    sys.path.insert(0, str(Path(__file__).parent))
    from rl_step import geometric_mean_ci

    rounds = []
    with baseline_checkout(args.baseline_ref) as code:
        for r in range(args.rounds):
            order = ("baseline", "pool") if r % 2 == 0 else ("pool", "baseline")
            got = {m: measure("baseline", 1, args.threads, args, testbed_cache, code=code) if m == "baseline"
                   else measure("pool", args.workers, 1, args, testbed_cache) for m in order}
            ratio = got["baseline"]["process_s"] / got["pool"]["process_s"]
            rounds.append({"order": list(order), "ratio": ratio, **got})
            print(f"round {r}: baseline {got['baseline']['process_s']:.1f} s, pool {got['pool']['process_s']:.1f} s: "
                  f"{ratio:.2f}x (load {got[order[0]]['loadavg_before'][0]:.2f} -> "
                  f"{got[order[1]]['loadavg_after'][0]:.2f})", flush=True)
    ratios = [x["ratio"] for x in rounds]
    gm, lo, hi = geometric_mean_ci(ratios)
    same = all(x["baseline"]["scores"] == x["pool"]["scores"] == rounds[0]["pool"]["scores"] for x in rounds)
    result = {"setup": {**setup(args), "baseline_ref": args.baseline_ref, "rounds": args.rounds},
              "rounds": rounds, "ratios": ratios, "median_ratio": statistics.median(ratios),
              "pool_over_baseline": {"geometric_mean": gm, "ci95": [lo, hi]}, "same_scores": same}
    write_result(args, result)
    print(f"pool / baseline ({args.baseline_ref}) runs per hour over {args.rounds} rounds: geometric mean {gm:.2f}x "
          f"[{lo:.2f}, {hi:.2f}], median {statistics.median(ratios):.2f}x; identical scores: {same}")


if __name__ == "__main__":
    main()
