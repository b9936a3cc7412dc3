"""Grading cost of one test-time RL step on MATH-500-style answers: the vote that merges equivalent answers.

Issue 15 made the majority vote merge mathematically equivalent answers (``ddrl.voting.majority_vote``:
voting keys first, then math-verify between distinct keys). This measures what that costs per RL step of
``--prompts`` prompts x ``--rollouts`` rollouts (the paper's 32 x 64), on realistic groups built from the
real MATH-500 answers (``MATH-TTT/test.json``, as shipped by TTRL/DDRL): per prompt, the true answer in
several equivalent spellings (as written, ``\\dfrac``, spaced, ``\\sqrt3``, the sympy round trip, the
decimal of a terminating fraction; only spellings that math-verify accepts as equal are used) makes up a
majority of 12-44 rollouts, and the rest are distractors (other problems' answers and near misses with one
digit changed), a few without an answer. No model is involved: the answers are what a model would box.

Per step it times, in one process with a started math-verify helper:

- ``old``: the previous vote (``count_votes`` on ``voting_key``, no math-verify);
- ``vote_cold``: ``majority_vote`` + ``pseudo_rewards`` for all prompts with the verdict cache cleared and a
  fresh helper (empty parse cache): what a step on new prompts pays;
- ``vote_warm``: the same again (every verdict cached): what a second step on the same answers pays;
- ``diagnostics``: ``ddrl.evaluate.reward_counts`` (the trainer's ground-truth metrics) after the vote;

and counts the math-verify comparisons, how many prompts changed label count, how many labels are right
before and after (the truth's spellings split the old vote, so a distractor could win), and how many
rollouts changed reward (0 -> 1: another spelling of the label; 1 -> 0: the old label lost to a merged one).
An all-integer step (AIME-style answers) checks that integers never reach math-verify.
Writes ``bench/results/grading.json`` and prints a table::

    OMP_NUM_THREADS=1 .venv/bin/python bench/grading.py [--steps 8]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from ddrl import answers as A  # noqa: E402
from ddrl.grading import grader_pool  # noqa: E402
from ddrl.evaluate import reward_counts  # noqa: E402
from ddrl.voting import count_votes, majority_vote, pseudo_rewards  # noqa: E402


def spellings(truth: str) -> list[str]:
    """Other ways of writing ``truth`` (candidates; the caller keeps those math-verify accepts)."""
    out = [truth, truth.replace("\\frac", "\\dfrac"), re.sub(r"\s*([+=,-])\s*", r" \1 ", truth).strip(),
           re.sub(r"\\sqrt\{(\w)\}", r"\\sqrt\1", truth), f"${truth}$"]
    x = A.plain_number(A.voting_key(truth))
    if x is not None and x.denominator != 1 and 10**6 % x.denominator == 0:
        out.append(f"{float(x):g}")
    try:
        import sympy
        from math_verify import parse

        parsed = parse("\\boxed{" + truth + "}", parsing_timeout=None)
        if parsed and isinstance(parsed[0], sympy.Basic):
            out.append(sympy.latex(parsed[0]))
    except Exception:  # noqa: BLE001 - a spelling we cannot make is simply not offered
        pass
    return list(dict.fromkeys(s for s in out if s))


def near_miss(truth: str, rng: np.random.Generator) -> str | None:
    digits = [m.start() for m in re.finditer(r"\d", truth)]
    if not digits:
        return None
    i = int(rng.choice(digits))
    return truth[:i] + str((int(truth[i]) + 1 + int(rng.integers(8))) % 10) + truth[i + 1 :]


def build_group(truth: str, others: list[str], n: int, rng: np.random.Generator) -> list[str | None]:
    """One prompt's ``n`` boxed answers: a majority of equivalent spellings of ``truth``, then distractors."""
    forms = [s for s in spellings(truth) if A.is_equivalent(s, truth, timeout=10.0)]
    majority = int(rng.integers(12, 45))
    weights = np.array([0.6] + [0.4 / max(len(forms) - 1, 1)] * (len(forms) - 1))
    group: list[str | None] = [forms[int(i)] for i in rng.choice(len(forms), size=majority, p=weights / weights.sum())]
    wrong = [o for o in rng.choice(others, size=6, replace=False) if not A.is_equivalent(o, truth, timeout=10.0)]
    miss = near_miss(truth, rng)
    if miss is not None and not A.is_equivalent(miss, truth, timeout=10.0):
        wrong.append(miss)
    rest = n - majority
    none = int(rng.integers(0, 4))
    zipf = 1.0 / np.arange(1, len(wrong) + 1)
    group += [wrong[int(i)] for i in rng.choice(len(wrong), size=rest - none, p=zipf / zipf.sum())] + [None] * none
    order = rng.permutation(n)
    return [group[i] for i in order]


class CountingVerify:
    """Wraps ``grader_pool.verify`` to count math-verify comparisons."""

    def __init__(self) -> None:
        self.real, self.calls = grader_pool.verify, 0

    def __call__(self, pred: str, label: str, timeout: float):  # noqa: ANN204
        self.calls += 1
        return self.real(pred, label, timeout)


def fresh_grader() -> None:
    """Empty verdict cache and a new helper (empty parse cache), already started."""
    A.clear_cache()
    grader_pool._POOL.close_all()
    grader_pool.warm_up()


def time_step(groups: list[list[str | None]], truths: list[str], counter: CountingVerify) -> dict:
    t = time.perf_counter()
    old = [count_votes([A.voting_key(a) for a in g], g) for g in groups]
    old_s = time.perf_counter() - t
    fresh_grader()
    counter.calls = 0
    t = time.perf_counter()
    new = [majority_vote(g) for g in groups]
    rewards = [pseudo_rewards(v) for v in new]
    cold_s = time.perf_counter() - t
    cold_calls = counter.calls
    t = time.perf_counter()
    for g in groups:
        pseudo_rewards(majority_vote(g))
    warm_s = time.perf_counter() - t
    counter.calls = 0
    t = time.perf_counter()
    for g, v, r, truth in zip(groups, new, rewards, truths):
        reward_counts(g, v.label, truth, r)
    diag_s = time.perf_counter() - t
    old_right = sum(o.label is not None and A.is_equivalent(o.label, t) for o, t in zip(old, truths))
    new_right = sum(v.label is not None and A.is_equivalent(v.label, t) for v, t in zip(new, truths))
    gained = sum(int(((pseudo_rewards(o) == 0) & (r == 1)).sum()) for o, r in zip(old, rewards))
    lost = sum(int(((pseudo_rewards(o) == 1) & (r == 0)).sum()) for o, r in zip(old, rewards))
    return {"old_ms": 1000 * old_s, "vote_cold_ms": 1000 * cold_s, "vote_warm_ms": 1000 * warm_s,
            "diagnostics_ms": 1000 * diag_s, "math_verify_calls_vote": cold_calls,
            "math_verify_calls_diagnostics": counter.calls,
            "distinct_keys_per_prompt": float(np.mean([len({k for k in (A.voting_key(a) for a in g) if k})
                                                       for g in groups])),
            "clusters_per_prompt": float(np.mean([len({k for k in v.keys if k is not None}) for v in new])),
            "prompts_label_count_changed": sum(o.label_count != v.label_count for o, v in zip(old, new)),
            "labels_correct_old": old_right, "labels_correct_new": new_right,
            "rollouts_reward_0_to_1": gained, "rollouts_reward_1_to_0": lost}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--rollouts", type=int, default=64)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "grading.json"))
    args = ap.parse_args()

    records = json.loads((Path(args.data) / "MATH-TTT" / "test.json").read_text())
    aime = json.loads((Path(args.data) / "AIME-TTT" / "test.json").read_text())
    truths_all = [r["answer"] for r in records]
    rng = np.random.default_rng(args.seed)
    grader_pool.warm_up()
    counter = CountingVerify()
    grader_pool.verify = counter  # voting and answers look it up on the module at call time
    steps = []
    order = rng.permutation(len(records))
    for s in range(args.steps):
        idx = order[s * args.prompts : (s + 1) * args.prompts]
        truths = [truths_all[i] for i in idx]
        groups = [build_group(t, [o for o in truths_all if o != t], args.rollouts, rng) for t in truths]
        steps.append(time_step(groups, truths, counter))
        print(f"step {s}: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                         for k, v in steps[-1].items()), flush=True)
    # integers only (AIME-style): the vote must not call math-verify
    ints = [r["answer"] for r in aime]
    int_groups = [[str(int(ints[int(j)])) for j in rng.integers(0, len(ints), args.rollouts)] for _ in range(args.prompts)]
    fresh_grader()
    counter.calls = 0
    t = time.perf_counter()
    for g in int_groups:
        pseudo_rewards(majority_vote(g))
    int_ms, int_calls = 1000 * (time.perf_counter() - t), counter.calls

    def med(k: str) -> float:
        return float(statistics.median(s[k] for s in steps))

    res = {"prompts": args.prompts, "rollouts": args.rollouts, "steps": args.steps, "seed": args.seed,
           "grader_version": A.GRADER_VERSION, "machine": platform.processor() or platform.machine(),
           "per_step": steps,
           "median": {k: med(k) for k in steps[0]},
           "max_vote_cold_ms": max(s["vote_cold_ms"] for s in steps),
           "integer_step": {"vote_ms": int_ms, "math_verify_calls": int_calls}}
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    m = res["median"]
    print(f"\n{args.prompts} prompts x {args.rollouts} rollouts, median of {args.steps} steps (ms per step):")
    print("| old vote | vote, cold | vote, cached | diagnostics | math-verify calls (vote / diag.) | integer step |")
    print("|---|---|---|---|---|---|")
    print(f"| {m['old_ms']:.1f} | {m['vote_cold_ms']:.0f} (max {res['max_vote_cold_ms']:.0f}) | {m['vote_warm_ms']:.1f} "
          f"| {m['diagnostics_ms']:.0f} | {m['math_verify_calls_vote']:.0f} / {m['math_verify_calls_diagnostics']:.0f} "
          f"| {int_ms:.1f} ms, {int_calls} calls |")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
