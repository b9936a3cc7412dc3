"""What a notebook's successive ``Experiment.grid`` calls cost in starting workers: a fresh pool per call
(what :func:`ddrl.infra.pool.run_pool` did before its pool was kept) against one pool reused by every call,
timed in one process in alternating rounds.

The batch is the shape of notebook 04's four grid calls: ``--calls`` grid calls, each over ``--methods`` x
``--seeds`` runs of the testbed (``--preset``, ``--adapted`` questions, ``--episodes``), every run already
trained and evaluated (the first, untimed call trains them into a temporary cache), so what is timed is
what the pool adds to a call: starting the workers (a fresh Python each, importing torch, transformers and
``ddrl``), loading each run's weights and reading its cached scores. In a round, ``fresh`` ends the pool
before every call (:func:`ddrl.infra.pool.shutdown_pool`), ``reused`` only before the first; rounds alternate
which goes first. Writes ``bench/results/pool_reuse.json``::

    OMP_NUM_THREADS=2 .venv/bin/python bench/pool_reuse.py --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def calls(exp, args, fresh: bool) -> list[float]:
    """Seconds of each of ``args.calls`` grid calls; the pool is ended before each (``fresh``) or only
    before the first."""
    from ddrl.infra.pool import shutdown_pool

    out = []
    for i in range(args.calls):
        if fresh or i == 0:
            shutdown_pool()
        t0 = time.perf_counter()
        exp.grid(args.methods, args.seeds)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default", help="testbed preset")
    ap.add_argument("--methods", nargs="+", default=["ttrl", "dae"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--adapted", type=int, default=16)
    ap.add_argument("--episodes", type=int, default=1)
    ap.add_argument("--calls", type=int, default=4, help="grid calls per mode and round (notebook 04 makes 4)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "pool_reuse.json"))
    args = ap.parse_args()

    from ddrl.run.experiments import Experiment
    from ddrl.infra.pool import shutdown_pool
    from ddrl.testbed import build, generate_split

    testbed = build(args.preset, progress=True).parent
    with tempfile.TemporaryDirectory(prefix="pool_reuse-") as tmp:
        (Path(tmp) / "testbed").symlink_to(testbed)
        os.environ["DDRL_CACHE_DIR"] = tmp
        exp = Experiment(generate_split("test", args.adapted, seed=0), (),
                         overrides={"model": f"testbed:{args.preset}", "episodes": args.episodes, "device": "cpu"},
                         progress=False, workers=2)
        t0 = time.perf_counter()
        exp.grid(args.methods, args.seeds)  # trains and evaluates the runs: not timed
        print(f"runs trained in {time.perf_counter() - t0:.1f} s")
        rounds = []
        for r in range(args.rounds):
            order = ("fresh", "reused") if r % 2 == 0 else ("reused", "fresh")
            row = {"order": list(order), "loadavg_before": os.getloadavg()}
            for mode in order:
                row[mode] = calls(exp, args, fresh=mode == "fresh")
            row["loadavg_after"] = os.getloadavg()
            rounds.append(row)
            print(f"round {r}: fresh {sum(row['fresh']):.2f} s, reused {sum(row['reused']):.2f} s for {args.calls} "
                  f"calls (load {row['loadavg_before'][0]:.2f} -> {row['loadavg_after'][0]:.2f})")
        shutdown_pool()
    per_call = {m: statistics.median(x for r in rounds for x in r[m]) for m in ("fresh", "reused")}
    first_call = {m: statistics.median(r[m][0] for r in rounds) for m in ("fresh", "reused")}
    later_calls = {m: statistics.median(x for r in rounds for x in r[m][1:]) for m in ("fresh", "reused")}
    totals = {m: statistics.median(sum(r[m]) for r in rounds) for m in ("fresh", "reused")}
    result = {"setup": {k: getattr(args, k) for k in ("preset", "methods", "seeds", "adapted", "episodes", "calls",
                                                      "rounds")} | {"cpu_count": os.cpu_count(),
                                                                    "omp_threads": os.environ.get("OMP_NUM_THREADS")},
              "rounds": rounds, "median_call_s": per_call, "median_first_call_s": first_call,
              "median_later_call_s": later_calls, "median_total_s": totals,
              "saved_per_later_call_s": later_calls["fresh"] - later_calls["reused"]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"median over rounds of {args.calls} calls: fresh {totals['fresh']:.2f} s, reused {totals['reused']:.2f} s; "
          f"a later call: fresh {later_calls['fresh']:.2f} s, reused {later_calls['reused']:.2f} s")


if __name__ == "__main__":
    main()
