"""Acceptance benchmark of the embedded testbed: pretraining time and the phenomena the paper studies.

Builds (or finds in the cache) the testbed model, then on the first ``--questions`` test questions
(4-operation chains) samples ``--samples`` responses each at T = 1.0 (top-p 1) and reports pass@1, maj@N,
greedy accuracy, the no-box rate, distinct answers per question, and the fraction of distinct answers
that are correct by how many of the N samples gave them (bands 1-4, 5-12, 13-24, 25-40, 41-64 of 64).
Pretraining seconds are those measured when the build ran (``--fresh`` rebuilds in a temporary cache to
measure them now). Writes ``bench/results/testbed.json`` and prints a table. Run it alone::

    OMP_NUM_THREADS=2 flock /tmp/ddrl-cpu.lock .venv/bin/python bench/testbed.py [--fresh]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from ddrl.analysis import BANDS_64, answer_groups, frequency_table, scale_bands, vote_and_grade  # noqa: E402
from ddrl.testbed import build, generate_split, load, read_meta  # noqa: E402
from ddrl.testbed.pretrain import PretrainConfig, get_config, sample_eval  # noqa: E402

ACCEPT = {"pass@1": (0.25, 0.55), "maj_minus_pass": 0.15, "no_box_rate": 0.02, "band_low_max": 0.10,
          "band_high_min": 0.85, "default_seconds": 360, "tiny_seconds": 30}


def frequency_bands(answers: list[list[str | None]], truths: list[str], bands) -> list[dict]:
    """For each band (lo, hi) of counts: how many distinct answers were seen lo..hi times, and the fraction
    of them that are correct (:func:`ddrl.analysis.frequency_table`). Answers are grouped by the vote's
    clusters and graded once each (:func:`ddrl.analysis.vote_and_grade`); no-box samples are not answers."""
    problems = [vote_and_grade(a, t, i) for i, (a, t) in enumerate(zip(answers, truths))]
    table = frequency_table(answer_groups(problems), bands)
    return [{"band": f"{lo}-{hi}", "distinct_answers": int(row["n_distinct"]), "correct": int(row["n_correct"]),
             "fraction_correct": float(row["frac_correct"]) if row["n_distinct"] else None}
            for (lo, hi), (_, row) in zip(bands, table.iterrows())]


def parse_set(items: list[str], base: PretrainConfig) -> PretrainConfig:
    """``name=value`` overrides of a :class:`PretrainConfig`, typed like the field they replace."""
    fields = {f.name: f for f in dataclasses.fields(PretrainConfig)}
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in fields:
            raise SystemExit(f"--set expects name=value with name a PretrainConfig field ({sorted(fields)}), got {item!r}")
        cur = getattr(base, name)
        out[name] = type(cur)(value) if not isinstance(cur, tuple) else tuple(float(v) for v in value.split(","))
    return dataclasses.replace(base, **out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default")
    ap.add_argument("--questions", type=int, default=256)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--seed", type=int, default=0, help="test-split and sampling seed")
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                    help="PretrainConfig overrides of the preset (e.g. seed=1 to check another seed)")
    ap.add_argument("--fresh", action="store_true", help="rebuild in a temporary cache to time pretraining now")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "testbed.json"))
    args = ap.parse_args()

    config = parse_set(args.set, get_config(args.preset)) if args.set else None
    t = time.perf_counter()
    cache = tempfile.mkdtemp(prefix="ddrl-testbed-bench-") if args.fresh else None
    path = build(args.preset, cache_dir=cache, config=config, source="pretrain" if args.fresh else None)
    build_call_s = time.perf_counter() - t
    meta = read_meta(path)
    model, tok = load(path)
    recs = generate_split("test", args.questions, args.seed)
    truths = [r["answer"] for r in recs]

    t = time.perf_counter()
    ev = sample_eval(model, tok, recs, args.samples, temperature=1.0, max_new_tokens=args.max_new_tokens,
                     seed=args.seed, progress=True)
    sample_s = time.perf_counter() - t
    greedy = sample_eval(model, tok, recs, 1, temperature=0.0, max_new_tokens=args.max_new_tokens, seed=args.seed)
    bands = BANDS_64 if args.samples == 64 else scale_bands(BANDS_64, 64, args.samples)
    distinct = [len({k for k in p["keys"] if k is not None}) for p in map(vote_and_grade, ev["answers"], truths)]
    res = {
        "preset": args.preset,
        "build_dir": str(path),
        "config_hash": meta["hash"],
        "overrides": args.set,
        "pretrain_seconds": round(meta["pretrain_seconds"], 1),
        "pretrain_steps": meta["steps"],
        "stop_reason": meta["stop_reason"],
        "pretrain_threads": meta["num_threads"],
        "dev_history": meta["dev_history"],
        "num_parameters": meta["num_parameters"],
        "build_call_seconds": round(build_call_s, 2),
        "questions": args.questions,
        "samples": args.samples,
        "temperature": 1.0,
        "pass@1": ev["pass@1"],
        f"maj@{args.samples}": ev[f"maj@{args.samples}"],
        "greedy_accuracy": greedy["pass@1"],
        "no_box_rate": ev["no_box_rate"],
        "distinct_answers_per_question": float(np.mean(distinct)),
        "frequency_bands": frequency_bands(ev["answers"], truths, bands),
        "sampling_seconds": round(sample_s, 1),
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
    }
    maj = res[f"maj@{args.samples}"]
    fb = res["frequency_bands"]
    limit = ACCEPT["default_seconds"] if args.preset == "default" else ACCEPT["tiny_seconds"]
    res["acceptance"] = {
        "pretrain_seconds": res["pretrain_seconds"] <= limit,
        "pass@1_in_range": ACCEPT["pass@1"][0] <= res["pass@1"] <= ACCEPT["pass@1"][1],
        "maj_minus_pass>=0.15": maj - res["pass@1"] >= ACCEPT["maj_minus_pass"],
        "no_box<2%": res["no_box_rate"] < ACCEPT["no_box_rate"],
        "lowest_band<10%": fb[0]["fraction_correct"] is not None and fb[0]["fraction_correct"] < ACCEPT["band_low_max"],
        "highest_band>85%": fb[-1]["fraction_correct"] is not None and fb[-1]["fraction_correct"] > ACCEPT["band_high_min"],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")

    print(f"\ntestbed {args.preset} ({res['num_parameters']:,} parameters, {res['pretrain_steps']} steps, "
          f"{res['stop_reason']})")
    print(f"  pretraining          {res['pretrain_seconds']:8.1f} s on {res['pretrain_threads']} threads")
    print(f"  pass@1               {res['pass@1']:8.3f}   ({args.questions} test questions x {args.samples}, T=1.0)")
    print(f"  maj@{args.samples:<4d}             {maj:8.3f}")
    print(f"  greedy accuracy      {res['greedy_accuracy']:8.3f}")
    print(f"  no-box rate          {res['no_box_rate']:8.4f}")
    print(f"  distinct answers/q   {res['distinct_answers_per_question']:8.2f}")
    print(f"  sampling             {res['sampling_seconds']:8.1f} s")
    print("  fraction correct of distinct answers, by count of the samples that gave them:")
    for s in fb:
        f = "   n/a" if s["fraction_correct"] is None else f"{s['fraction_correct']:6.3f}"
        print(f"    {s['band']:>6s}: {f}  ({s['distinct_answers']} answers)")
    print("  acceptance: " + ", ".join(f"{k} {'ok' if v else 'FAIL'}" for k, v in res["acceptance"].items()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
