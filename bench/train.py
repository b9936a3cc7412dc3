"""Acceptance benchmark of the trainer on the testbed: no adaptation vs TTRL vs DDRL (RL only) vs DDRL + COR.

For each seed: adapt on the ``--adapted`` first test questions, evaluate pass@1 (16 samples, T = 0.6,
top-p 0.95) and maj@16 on those questions and on ``--heldout`` further questions of the same test
distribution that the model never adapted on. Questions are fixed across seeds (test split, data seed 0);
seeds change rollouts, selection, mini-batch order and evaluation samples.

The loop is :class:`ddrl.run.experiments.Experiment`, the same one notebook 03 uses, so runs and evaluations are
shared through the cache (``$DDRL_CACHE_DIR``, default ``.cache/``): a rerun resumes, and the notebook reuses
what this script trained. DDRL (RL only) is the RL-only checkpoint of the DDRL run, so one run gives both
rows. Writes ``bench/results/train.json`` and prints a table. The runs go one after another in this process,
each computing with one thread (the ``Experiment`` fixes that on the CPU, so they are the notebooks' runs
bit for bit; docs/reliability.md): the times in the committed ``train.json`` were measured before that, at
``OMP_NUM_THREADS=2``. Run it under the shared CPU lock::

    OMP_NUM_THREADS=2 flock /tmp/ddrl-cpu.lock .venv/bin/python bench/train.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ddrl.run.experiments import Experiment, summarize  # noqa: E402
from ddrl.report.plotting import label  # noqa: E402

#: benchmark conditions: ddrl.config.METHODS names ("bcs_dae" = the DDRL run's RL-only weights)
CONDITIONS = ["no_adaptation", "ttrl", "etmr", "bcs_dae", "ddrl"]


def parse_overrides(items: list[str]) -> dict:
    """``["lr=1e-4", "episodes=4"]`` -> typed overrides (JSON values, else strings)."""
    out = {}
    for it in items:
        k, _, v = it.partition("=")
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--adapted", type=int, default=64, help="test questions adapted on")
    ap.add_argument("--heldout", type=int, default=128, help="further test questions, never adapted on")
    ap.add_argument("--conditions", nargs="+", default=CONDITIONS, choices=CONDITIONS)
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="TrainConfig overrides for all runs")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "train.json"))
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args()

    from ddrl.testbed import generate_split

    records = generate_split("test", args.adapted + args.heldout, seed=0)
    exp = Experiment(records[: args.adapted], records[args.adapted :], overrides=parse_overrides(args.set),
                     progress=args.progress)
    rows = []
    for seed in args.seeds:
        for cond in args.conditions:
            t0 = time.perf_counter()
            for row in exp.run(cond, seed):
                rows.append({**row, "condition": cond, "wall_seconds": time.perf_counter() - t0})
            print(f"seed {seed} {cond}: " + ", ".join(
                f"{r['split']} pass@1 {r['pass@1']:.3f}" for r in rows if r["seed"] == seed and r["condition"] == cond),
                flush=True)
    import pandas as pd

    df = pd.DataFrame(rows)
    table = summarize(df, "pass@1", by=("condition", "split"))
    maj = summarize(df, "maj@n", by=("condition", "split"))
    times = df.groupby("condition")[["rl_seconds", "cor_seconds"]].agg(["mean", "max"])
    out = {
        "setup": {"adapted": args.adapted, "heldout": args.heldout, "overrides": exp.overrides, "seeds": args.seeds,
                  "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
        "runs": json.loads(df.drop(columns=["run_dir"]).to_json(orient="records")),  # NaN -> null: valid JSON
        "pass@1": table.to_dict(orient="records"),
        "maj@16": maj.to_dict(orient="records"),
        "seconds": {f"{c}/{stat}": v for (c, stat), v in times.stack(future_stack=True).T.to_dict().items()}
        if len(times) else {},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, default=float) + "\n")
    print()
    for split in ("adapted", "heldout"):
        print(f"pass@1 on {split} questions (mean [95% CI] over {len(args.seeds)} seeds)")
        for _, r in table[table.split == split].iterrows():
            print(f"  {label(r.condition):<24} {100 * r['mean']:5.1f}  [{100 * r.ci_lo:5.1f}, {100 * r.ci_hi:5.1f}]")
    print("\nper run (mean over seeds): RL s / COR s / tokens decoded per RL step")
    for cond in args.conditions:
        sub = df[(df.condition == cond) & (df.split == "adapted")]
        print(f"  {label(cond):<24} {sub.rl_seconds.mean():6.0f} / {sub.cor_seconds.mean():5.0f} / "
              f"{sub.tokens_per_step.mean():8.0f}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
