"""Measure the base testbed model on candidate difficulties and pick the claims study's regimes by the rule of
``ddrl.study.plan`` (stated in advance in results/plan.md; no method is run here).

For each candidate (chains of 3, 4, 5, 6 operations; the first ``--n`` questions of each ``ops<k>`` stream):
maj@64 and consensus (the majority answer's share of 64 samples at the RL rollout temperature 1.0, top-p 1)
and pass@1 (16 samples, T = 0.6, top-p 0.95), per question and overall. Writes ``results/regimes_base.json``::

    OMP_NUM_THREADS=2 python bench/regimes.py            # ~2-4 min on 2 cores once the testbed is built

Claim S1's weaker base (plan Sec. 2) is measured the same way on the AMC-like regime's questions, on the
testbed preset ``weak`` (built on first use), into ``results/regimes_weak.json``; no selection is made::

    OMP_NUM_THREADS=2 python bench/regimes.py --weak

Plan Amendment 26's wider MATH-500-like regime (the registered one's operations on its stream's first 768
questions) is measured the same way into ``results/regimes_wide.json``; it must keep the MATH-500-like rule
(maj@64 >= 0.70 on those questions), else the file holds the error and no regime::

    OMP_NUM_THREADS=2 python bench/regimes.py --wide 768
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

from ddrl.voting import count_votes  # noqa: E402


def consensus(answers: list) -> float:
    """Share of samples that give the most common (boxed) answer; a missing answer never counts as one."""
    return count_votes(answers).majority_ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, nargs="+", default=None, help="candidate operation counts")
    ap.add_argument("--n", type=int, default=256, help="questions per candidate")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed (questions: data seed 0)")
    ap.add_argument("--testbed", default="default")
    ap.add_argument("--out", default=None, help="default results/regimes_base.json (--weak: results/regimes_weak.json)")
    ap.add_argument("--weak", action="store_true", help="claim S1: the weaker base build on the AMC-like regime of "
                    "results/regimes_base.json (its operations and adapted questions)")
    ap.add_argument("--wide", type=int, default=None, metavar="N", help="plan Amendment 26: the MATH-500-like "
                    "regime of results/regimes_base.json on its first N questions (results/regimes_wide.json)")
    ap.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                    help="measure nothing: merge the candidates of earlier outputs, then select")
    args = ap.parse_args()

    import numpy as np

    from ddrl.run.fingerprints import model_fingerprint
    from ddrl.evaluate import evaluate
    from ddrl.study.plan import (CANDIDATE_OPS, MATH_MAJ_MIN, MAX_NEW_TOKENS, WEAK_TESTBED, candidate_records,
                                 load_regimes, make_regimes, select_regimes, weak_base_regime, wide_regime)
    from ddrl.seeds import derive_seed
    from ddrl.models import load_model
    from ddrl.config import resolve_cue

    name = f"testbed:{args.testbed}"
    default_out = "regimes_weak.json" if args.weak else "regimes_wide.json" if args.wide else "regimes_base.json"
    out_path = args.out or str(ROOT / "results" / default_out)
    amc = wide = None
    if args.weak and args.wide:
        raise SystemExit("--weak and --wide measure different regimes: give one")
    if args.wide:  # plan Amendment 26: the registered MATH-500-like regime on more of its stream's questions
        math = load_regimes(ROOT / "results" / "regimes_base.json", names=["math500_like"])["math500_like"]
        wide = wide_regime(math, args.wide)
        args.ops, args.n = [wide.num_ops], wide.n_adapted
    if args.weak:  # the AMC-like regime as registered, measured on the weaker build
        amc = load_regimes(ROOT / "results" / "regimes_base.json", names=["amc_like"])["amc_like"]
        name, args.ops, args.n = WEAK_TESTBED, [amc.num_ops], amc.n_adapted
    out = []
    if args.merge:
        parts = [json.loads(Path(p).read_text()) for p in args.merge]
        if len({json.dumps(p["weights"], sort_keys=True) for p in parts}) != 1:
            raise SystemExit(f"--merge: {args.merge} were measured on different weights")
        out = sorted((c for p in parts for c in p["candidates"]), key=lambda c: c["num_ops"])
    model, tok = load_model(name, "float32", "cpu")
    cue = resolve_cue("auto", name)
    for k in ([] if args.merge else args.ops or CANDIDATE_OPS):
        recs = candidate_records(k, args.n)
        t0 = time.perf_counter()
        vote = evaluate(model, tok, recs, n=64, temperature=1.0, top_p=1.0, max_new_tokens=MAX_NEW_TOKENS,
                        seed=derive_seed(args.seed, "regimes", k, "vote"), cue=cue, batch_size=512)
        p1 = evaluate(model, tok, recs, n=16, temperature=0.6, top_p=0.95, max_new_tokens=MAX_NEW_TOKENS,
                      seed=derive_seed(args.seed, "regimes", k, "pass1"), cue=cue, batch_size=512)
        cons = [consensus(q["answers"]) for q in vote["questions"]]
        counts = np.array([c * 64 for c in cons])
        row = {
            "num_ops": k, "n_questions": len(recs), "maj@64": vote["maj@n"], "pass@1": p1["pass@1"],
            "pass@1_T1": vote["pass@1"], "mean_consensus": float(np.mean(cons)),
            "share_consensus_le_5_of_64": float(np.mean(counts <= 5)),
            "share_consensus_ge_45_of_64": float(np.mean(counts >= 45)),
            "mean_tokens": vote["mean_tokens"], "seconds": time.perf_counter() - t0,
            "per_question": {"id": [q["id"] for q in p1["questions"]],
                             "pass@1": [q["accuracy"] for q in p1["questions"]],
                             "consensus": cons,
                             "majority_correct": [bool(q["majority_correct"]) for q in vote["questions"]]},
        }
        out.append(row)
        print(f"{k} ops: maj@64 {row['maj@64']:.3f}  pass@1 {row['pass@1']:.3f}  consensus {row['mean_consensus']:.3f}"
              f"  ({row['seconds']:.0f} s)", flush=True)
    try:
        if wide is not None:
            row = next((b for b in out if b["num_ops"] == wide.num_ops and b["n_questions"] >= wide.n_adapted), None)
            if row is None:
                raise ValueError(f"{wide.name}: no measurement of {wide.n_adapted} questions of {wide.num_ops} ops")
            if row["maj@64"] < MATH_MAJ_MIN:
                raise ValueError(f"{wide.name}: base maj@64 {row['maj@64']:.3f} on its {wide.n_adapted} questions is "
                                 f"below the MATH-500-like rule's {MATH_MAJ_MIN}: not a MATH-500-like regime")
        selected = {amc.name: amc.num_ops} if amc else {wide.name: wide.num_ops} if wide else select_regimes(out)
        regimes = ([weak_base_regime(amc).to_dict()] if amc else [wide.to_dict()] if wide else
                   [r.to_dict() for r in make_regimes(selected)])
        for r in regimes:  # the base properties on exactly the questions each regime adapts on
            row = next(b for b in out if b["num_ops"] == r["num_ops"])
            n = r["n_adapted"]
            if n > row["n_questions"]:
                raise ValueError(f"{r['name']} adapts on {n} questions but only {row['n_questions']} of "
                                 f"{r['num_ops']} operations were measured; rerun with --n {n}")
            pq = row["per_question"]
            r["base"] = {"n_questions": n, "pass@1": float(np.mean(pq["pass@1"][:n])),
                         "maj@64": float(np.mean(pq["majority_correct"][:n])),
                         "mean_consensus": float(np.mean(pq["consensus"][:n]))}
    except ValueError as e:
        selected, regimes = {"error": str(e)}, []
    result = {"model": name, "weights": model_fingerprint(name), "sampling_seed": args.seed, "data_seed": 0,
              "rule": "claim S1: the AMC-like regime on the weaker base build (no selection)" if amc else
                      f"plan Amendment 26: the MATH-500-like regime on {args.wide} questions, base maj@64 >= "
                      f"{MATH_MAJ_MIN}" if wide else
                      "ddrl.study.plan.select_regimes (AIME-like: fewest ops with maj@64 <= 0.35; MATH-500-like: "
                      "most ops with maj@64 >= 0.70; AMC-like: between them, maj@64 closest to 0.5)",
              "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "candidates": out, "selected": selected,
              "regimes": regimes}
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(selected))
    for r in regimes:
        print(f"  {r['name']:<20} {r['num_ops']} ops, {r['n_adapted']} questions, {r['episodes']} episodes, "
              f"lr {r['lr']:.0e}: base maj@64 {r['base']['maj@64']:.3f}, pass@1 {r['base']['pass@1']:.3f}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
