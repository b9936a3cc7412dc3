"""Exploring the testbed's pretraining: the acceptance statistics of ``bench/testbed.py`` along one run.

Trains one configuration (the early stop off) and snapshots, at ``--at`` steps, the raw weights and moving
averages of them with each ``--ema`` decay and the preset's ``ema_decay``. The averages are computed alongside
the run, from the same initialisation with :func:`ddrl.testbed.pretrain.ema_update`, which is exactly what
``PretrainConfig.ema_decay`` does (averaging does not change the run). Then it
evaluates every snapshot on the test split like ``bench/testbed.py`` does (pass@1, maj@N, the no-box rate
and the frequency bands) and writes one JSON row per snapshot. This is how the default's schedule and
average were chosen (docs/testbed.md). Run it alone, e.g.::

    OMP_NUM_THREADS=2 flock /tmp/ddrl-cpu.lock .venv/bin/python bench/testbed_sweep.py \\
        --set steps=1500 --at 800 900 1000 --ema 0.99 0.995 --questions 128 --out /tmp/sweep.json
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from ddrl.analysis import BANDS_64, scale_bands  # noqa: E402
from ddrl.testbed import generate_split  # noqa: E402
from ddrl.testbed.pretrain import ema_update, get_config, initial_model, pretrain, sample_eval  # noqa: E402
from ddrl.testbed.tokenizer import build_tokenizer  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from testbed import frequency_bands, parse_set  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default")
    ap.add_argument("--set", nargs="*", default=[], help="PretrainConfig overrides, name=value")
    ap.add_argument("--at", nargs="+", type=int, required=True, help="steps to snapshot")
    ap.add_argument("--ema", nargs="*", type=float, default=[], help="moving-average decays to snapshot too")
    ap.add_argument("--questions", type=int, default=128)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0, help="test-split and sampling seed")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    cfg = parse_set(args.set, get_config(args.preset))
    decays = sorted(set(args.ema) | ({cfg.ema_decay} if cfg.ema_decay else set()))
    # the run itself keeps no average (the averages here are the same computation, done alongside)
    cfg = dataclasses.replace(cfg, eval_every=0, steps=max(cfg.steps, max(args.at)), ema_decay=0.0)
    last = max(args.at)
    tok = build_tokenizer(model_max_length=cfg.max_positions)
    model = initial_model(cfg, tok)  # where pretrain starts; later the container snapshots are evaluated in
    averages = {d: copy.deepcopy(model) for d in decays}
    snaps: dict[tuple[int, str], dict] = {}

    class Done(Exception):
        pass

    def callback(step: int, trained) -> None:
        for d, average in averages.items():
            ema_update(average, trained, d, step - 1)  # pretrain's own call, at its step index
        if step in args.at:
            snaps[(step, "raw")] = copy.deepcopy(trained.state_dict())
            for d, m in averages.items():
                snaps[(step, f"ema{d}")] = copy.deepcopy(m.state_dict())
        if step >= last:
            raise Done

    t0 = time.perf_counter()
    try:
        pretrain(cfg, progress=True, callback=callback)
    except Done:
        pass
    train_s = time.perf_counter() - t0
    recs = generate_split("test", args.questions, args.seed)
    truths = [r["answer"] for r in recs]
    bands = BANDS_64 if args.samples == 64 else scale_bands(BANDS_64, 64, args.samples)
    rows = []
    for (step, kind), sd in sorted(snaps.items()):
        model.load_state_dict(sd)
        ev = sample_eval(model, tok, recs, args.samples, temperature=1.0, max_new_tokens=cfg.max_new_tokens,
                         seed=args.seed)
        fb = frequency_bands(ev["answers"], truths, bands)
        row = {"step": step, "weights": kind, "pass@1": ev["pass@1"], "maj": ev[f"maj@{args.samples}"],
               "gap": ev[f"maj@{args.samples}"] - ev["pass@1"], "no_box": ev["no_box_rate"],
               "bands": [s["fraction_correct"] for s in fb], "band_counts": [s["distinct_answers"] for s in fb]}
        rows.append(row)
        print(f"step {step:5d} {kind:9s} pass {row['pass@1']:.3f} maj {row['maj']:.3f} gap {row['gap']:.3f} "
              f"bands " + " ".join("  n/a" if b is None else f"{b:.3f}" for b in row["bands"]), flush=True)
    out = {"config": cfg.to_dict(), "questions": args.questions, "samples": args.samples,
           "train_seconds_to_last": train_s, "threads": torch.get_num_threads(), "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
