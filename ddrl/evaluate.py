"""Evaluation (pass@1, maj@N) and the ground-truth diagnostics of a test-time RL step.

Paper: Sec. 4.1 (setup: pass@1 at T = 0.6, top-p 0.95, and maj@N).

Ground truth enters this project only here. The trainer computes its rewards from pseudo-labels and then,
separately, hands the answers, the pseudo-labels and the ground truths to :func:`reward_counts` to *measure*
how good those rewards were; nothing computed here flows back into training.

The paper's evaluation protocol (parameters, not constants): 16 samples per question at temperature 0.6,
top-p 0.95; pass@1 is the mean accuracy over the 16 samples, averaged over questions.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ddrl.answers import extract_boxed, grade_answers, is_equivalent, voting_key
from ddrl.prompts import format_prompt
from ddrl.sampling import make_sampler
from ddrl.rewards import favoured
from ddrl.voting import majority_vote

#: Upper edges of the answer-frequency bins used to split reward diagnostics. A rollout's answer
#: frequency is the share of the N rollouts that gave its answer (0 for rollouts without an answer).
FREQ_BINS: tuple[float, ...] = (0.125, 0.25, 0.5, 1.0)


# ---------------------------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------------------------


def pass_at_1(correct: Sequence[Sequence[bool]]) -> float:
    """pass@1 = mean over questions of the fraction of its samples that are correct (the paper's metric,
    estimated from n samples per question)."""
    if len(correct) == 0:
        raise ValueError("pass_at_1: no questions")
    per_q = []
    for i, row in enumerate(correct):
        if len(row) == 0:
            raise ValueError(f"pass_at_1: question {i} has no samples")
        per_q.append(float(np.mean(row)))
    return float(np.mean(per_q))


def majority_answer(answers: Sequence[str | None]) -> str | None:
    """The majority vote's label (:func:`ddrl.voting.majority_vote`: equivalent answers merged, ties to
    the answer seen first), as its first rollout wrote it; None if no sample has an answer. (maj@n.)"""
    return majority_vote(answers).label


def maj_at_n(answers: Sequence[Sequence[str | None]], truths: Sequence[str]) -> float:
    """maj@n = fraction of questions whose majority answer (over the n samples) is correct."""
    if len(answers) != len(truths):
        raise ValueError(f"maj_at_n: {len(answers)} answer lists but {len(truths)} truths")
    hits = [grade(majority_answer(a), t) for a, t in zip(answers, truths)]
    return float(np.mean(hits))


def grade(answer: str | None, truth: str) -> bool:
    """Is ``answer`` correct? (math-verify through :func:`ddrl.answers.is_equivalent`; None is wrong.)"""
    if answer is None or answer == "":
        return False
    return bool(is_equivalent(answer, truth))


def reward_counts(answers: Sequence[str | None], label: str | None, truth: str,
                  pseudo_rewards: Sequence[float] | None = None, binary: bool | None = None) -> dict:
    """Confusion counts of one question's rewards against the true rewards.

    pseudo-reward: given (the trainer's, any :mod:`ddrl.rewards` reward), or 1 iff the rollout is in the cluster of
    the label's voting key (all 0 when the label is None); true reward: 1 iff the rollout's answer cluster is
    equivalent to the ground truth. A rollout counts as *rewarded* (the "p" of tp/fp) when the reward favours it
    (:func:`ddrl.rewards.favoured`: reward 1 for a 0/1 reward, ``binary`` as the reward's registry says or else read
    from the values; above the question's mean for any other): how often the reward favours a wrong answer or passes
    over a right one. Answer frequencies are the vote's cluster counts. Returns counts (so steps can
    be aggregated by summing) overall and per answer-frequency bin (:data:`FREQ_BINS`), plus whether the
    label itself is correct.
    """
    n = len(answers)
    vote = majority_vote(answers)  # the trainer's clusters: frequencies count equivalent answers together
    keys = vote.keys
    if pseudo_rewards is None:
        lk = voting_key(label) if label is not None else None
        label_cluster = next((c for a, c in zip(answers, keys) if lk is not None and voting_key(a) == lk), None)
        pseudo_rewards = [1.0 if (label_cluster is not None and k == label_cluster) else 0.0 for k in keys]
    if len(pseudo_rewards) != n:
        raise ValueError(f"reward_counts: {n} answers but {len(pseudo_rewards)} pseudo-rewards")
    true = grade_answers(answers, truth, keys)  # each cluster graded once (math-verify is the slow part)
    out = {"n": n, "label_correct": int(label is not None and grade(label, truth)), "label_none": int(label is None),
           "tp": 0, "fp": 0, "tn": 0, "fn": 0, "bins": [{"tp": 0, "fp": 0, "tn": 0, "fn": 0} for _ in FREQ_BINS]}
    for count, p, t in zip(vote.counts, favoured(pseudo_rewards, binary), true):  # count 0: no answer
        cell = ("t" if bool(p) == t else "f") + ("p" if p else "n")
        out[cell] += 1
        out["bins"][frequency_bin(count / n)][cell] += 1
    return out


def frequency_bin(f: float) -> int:
    """Index of the :data:`FREQ_BINS` bin holding answer frequency ``f`` in [0, 1]."""
    for i, edge in enumerate(FREQ_BINS):
        if f <= edge:
            return i
    raise ValueError(f"frequency must be in [0, 1], got {f}")


def bin_names() -> list[str]:
    lo = (0.0,) + FREQ_BINS[:-1]
    return [f"{a:g}-{b:g}" for a, b in zip(lo, FREQ_BINS)]


def _rates(c: dict) -> dict[str, float]:
    n = c["tp"] + c["fp"] + c["tn"] + c["fn"]
    neg, pos = c["fp"] + c["tn"], c["tp"] + c["fn"]
    return {
        "reward_acc": (c["tp"] + c["tn"]) / n if n else float("nan"),
        "fp_rate": c["fp"] / neg if neg else float("nan"),  # P(pseudo=1 | wrong answer)
        "fn_rate": c["fn"] / pos if pos else float("nan"),  # P(pseudo=0 | correct answer)
        "true_reward": pos / n if n else float("nan"),
        "n": n,
    }


def summarize_reward_counts(per_question: Sequence[dict], prefix: str = "gt/") -> dict[str, float]:
    """Aggregate :func:`reward_counts` over a step's questions into the logged ground-truth metrics."""
    if not per_question:
        return {}
    tot = {c: sum(q[c] for q in per_question) for c in ("tp", "fp", "tn", "fn")}
    out = {f"{prefix}label_acc": float(np.mean([q["label_correct"] for q in per_question]))}
    for k, v in _rates(tot).items():
        if k != "n":
            out[f"{prefix}{k}"] = v
    for b, name in enumerate(bin_names()):
        cb = {c: sum(q["bins"][b][c] for q in per_question) for c in ("tp", "fp", "tn", "fn")}
        r = _rates(cb)
        out[f"{prefix}bin{name}/n"] = r["n"]
        out[f"{prefix}bin{name}/reward_acc"] = r["reward_acc"]
        out[f"{prefix}bin{name}/fp_rate"] = r["fp_rate"]
        out[f"{prefix}bin{name}/fn_rate"] = r["fn_rate"]
    return out


# ---------------------------------------------------------------------------------------------------------
# Sampling-based evaluation
# ---------------------------------------------------------------------------------------------------------


def evaluate(model, tokenizer, records: Sequence[dict], n: int = 16, temperature: float = 0.6, top_p: float = 0.95,
             max_new_tokens: int = 3072, seed: int = 0, cue: str = "system", sampler=None,
             batch_size: int = 256, progress: bool = False) -> dict:
    """pass@1 and maj@n of ``model`` on ``records`` ({prompt, answer, ...}) with ``n`` samples per question.

    Returns ``{"pass@1", "maj@n", "n", "num_questions", "mean_tokens", "questions": [...]}`` where each
    question entry has ``id, truth, answers, correct, accuracy, majority, majority_correct``.
    ``sampler`` defaults to ``ddrl.sampling.make_sampler("auto", ...)`` on ``model`` (``batch_size`` sequences at once).
    """

    for i, r in enumerate(records):
        for f in ("prompt", "answer"):
            if f not in r:
                raise ValueError(f"evaluate: record {i} has no {f!r} field (expected {{prompt, answer, ...}})")
    sampler = sampler or make_sampler("auto", model, tokenizer, batch_size=batch_size)
    prompts = [format_prompt(tokenizer, r["prompt"], cue) for r in records]
    rollouts = sampler.sample(prompts, n=n, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                              seed=seed, progress=progress)
    questions, correct_all, tokens = [], [], []
    for r, rs in zip(records, rollouts):
        answers = [extract_boxed(x.text) for x in rs]
        vote = majority_vote(answers)
        correct = grade_answers(answers, str(r["answer"]), vote.keys)
        maj = vote.label
        questions.append({
            "id": r.get("id"), "truth": str(r["answer"]), "answers": answers, "correct": correct,
            "accuracy": float(np.mean(correct)), "majority": maj,
            "majority_correct": grade(maj, str(r["answer"])),
        })
        correct_all.append(correct)
        tokens.extend(x.num_tokens for x in rs)
    return {
        "pass@1": pass_at_1(correct_all),
        "maj@n": float(np.mean([q["majority_correct"] for q in questions])),
        "n": n,
        "num_questions": len(records),
        "mean_tokens": float(np.mean(tokens)),
        "questions": questions,
    }
