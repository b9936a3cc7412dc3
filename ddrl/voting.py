"""Majority vote over one prompt's N rollouts: the pseudo-label of test-time RL.

TTRL (and DDRL after it) take the most frequent final answer among N sampled responses as the label,
reward the rollouts that agree with it (1) and the rest (0). The per-rollout answer counts also feed
DDRL's balanced confidence-aware sampling (:func:`ddrl.selection.bcs`).

"The same answer" means mathematically equivalent, as the official code grades it: answers are grouped
by their cheap textual :func:`ddrl.answers.voting_key`, then the groups are merged into clusters with
:func:`ddrl.answers.is_equivalent` (math-verify) where needed (:func:`cluster_keys`). Counts, the label
and the rewards are computed on the merged clusters, so ``\\frac{\\sqrt3}{2}`` and
``\\frac{\\sqrt{3}}{2}`` are one vote and both get reward 1 when they win.

- :func:`count_votes`   the vote itself, on any hashable keys (None = no answer); also used for the
                        SVAMP Codex rollouts, whose answers are already numbers
- :func:`majority_vote` the vote on extracted answer strings: :func:`cluster_keys`, then :func:`count_votes`
- :func:`pseudo_rewards` r_i = 1[y_i = y*]
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddrl.answers import plain_number, verdict, voting_key

__all__ = ["Vote", "count_votes", "cluster_keys", "majority_vote", "pseudo_rewards"]

_MAX_STRIKES = 2  # timeouts after which an answer is compared no more in this vote


@dataclass(frozen=True)
class Vote:
    """Outcome of :func:`majority_vote` / :func:`count_votes` for one prompt.

    label:        the winning answer, as the first rollout that gave it wrote it (stripped); None when
                  no rollout has an answer.
    label_count:  how many of the N rollouts are in the label's cluster (c* in the paper; 0 if None).
    counts:       counts[i] = how many of the N rollouts are in rollout i's cluster; 0 when rollout i
                  has no answer.
    keys:         keys[i] = rollout i's cluster key (None = no answer): the voting key of the cluster's
                  first-seen answer, so rollouts with equal keys gave equivalent answers.
    label_key:    the label's cluster key (None when the label is None).
    tied:         whether another cluster reached label_count too (the earliest one won).
    """

    label: Any
    label_count: int
    counts: list[int]
    keys: list[Hashable | None] = field(default_factory=list)
    label_key: Hashable | None = None
    tied: bool = False

    @property
    def n(self) -> int:
        """N, the number of rollouts voted on."""
        return len(self.counts)

    @property
    def majority_ratio(self) -> float:
        """label_count / N: the vote's confidence (TTRL's "majority ratio")."""
        return self.label_count / self.n if self.n else 0.0


def count_votes(keys: Sequence[Hashable | None], answers: Sequence[Any] | None = None) -> Vote:
    """The majority vote on per-rollout keys (the one place votes are counted).

    ``keys[i]`` says which answer rollout i gave (equal keys = the same answer; None = no answer).
    None never wins and has count 0; ties go to the key whose first occurrence comes first. The label is
    ``answers[j]`` (stripped if a string) for the first rollout j with the winning key, or the key itself
    when ``answers`` is None. With no answer at all, the label is None and every count is 0.
    """
    if isinstance(keys, str) or not isinstance(keys, Sequence):
        raise TypeError(f"count_votes(keys): expected a sequence of keys, got {type(keys).__name__}")
    if len(keys) == 0:
        raise ValueError("majority vote: expected at least one rollout's answer, got an empty sequence")
    if answers is not None and len(answers) != len(keys):
        raise ValueError(f"count_votes: {len(keys)} keys but {len(answers)} answers")
    tally: dict[Hashable, int] = {}  # insertion-ordered: first occurrence first
    for k in keys:
        if k is not None:
            tally[k] = tally.get(k, 0) + 1
    counts = [tally[k] if k is not None else 0 for k in keys]
    if not tally:
        return Vote(label=None, label_count=0, counts=counts, keys=list(keys))
    best_key, best_count = None, 0
    for k, c in tally.items():  # strict ">" keeps the earliest of tied answers
        if c > best_count:
            best_key, best_count = k, c
    first = list(keys).index(best_key)
    label = best_key if answers is None else answers[first]
    if isinstance(label, str):
        label = label.strip()
    tied = sum(c == best_count for c in tally.values()) > 1
    return Vote(label=label, label_count=best_count, counts=counts, keys=list(keys), label_key=best_key, tied=tied)


def cluster_keys(answers: Sequence[str | None], timeout: float = 5.0) -> list[str | None]:
    """Each answer's cluster key: answers equivalent by :func:`ddrl.answers.is_equivalent` share one.

    1. Group by :func:`ddrl.answers.voting_key` (exact and cheap); None = no answer.
    2. If every key is a plain number, stop: distinct plain-number keys 1e-6 or more apart are never
       equivalent (the integer testbed never reaches math-verify).
    3. Otherwise walk the distinct keys in order of first appearance; each joins the first cluster whose
       representative (its first-seen answer) it is equivalent to (``is_equivalent(answer,
       representative)``, the representative as reference), else it starts a new cluster. Each distinct
       answer string is compared, not each rollout; verdicts are cached across calls, and math-verify
       parses each string once per helper process (:mod:`ddrl.grading.grader_pool`).

    A cluster's key is its representative's voting key. A comparison that runs past ``timeout`` counts as
    "not equivalent" and gives both answers a strike; an answer with two strikes is compared no more (so
    a pathological answer such as ``9^{9^{9^{9^{9}}}}`` costs at most two timeouts per vote). Greedy first-match, like the official DDRL ``TTRLClusterCounter``:
    math-verify is not transitive, so an answer equivalent to two representatives joins the earlier one.
    """
    keys = [voting_key(a) for a in answers]
    first: dict[str, str] = {}
    for a, k in zip(answers, keys):
        if k is not None and k not in first:
            first[k] = a.strip()
    if len(first) < 2:
        return keys
    numbers = {k: plain_number(k) for k in first}
    if all(x is not None for x in numbers.values()):
        values = sorted(numbers.values())
        if all(b - a >= 1e-6 for a, b in zip(values, values[1:])):
            return keys
    reps: list[str] = []  # representative keys, in order of first appearance
    strikes: dict[str, int] = {}  # timeouts each distinct answer took part in
    cluster: dict[str, str] = {}
    for k, a in first.items():
        target = k
        for r in reps:
            if strikes.get(r, 0) >= _MAX_STRIKES:
                continue
            v = verdict(a, first[r], timeout)
            if v is None:  # ran past the timeout: "not equivalent", and one strike to each side
                strikes[k], strikes[r] = strikes.get(k, 0) + 1, strikes.get(r, 0) + 1
                if strikes[k] >= _MAX_STRIKES:
                    break
            elif v:
                target = r
                break
        if target == k:
            reps.append(k)
        cluster[k] = target
    return [None if k is None else cluster[k] for k in keys]


def majority_vote(answers: Sequence[str | None], timeout: float = 5.0) -> Vote:
    """Majority vote (TTRL's pseudo-label) over one prompt's extracted answers.

    Answers are clustered by equivalence (:func:`cluster_keys`: ``"025"``, ``"25"`` and ``"25.0"`` share a
    voting key; ``"0.5"`` and ``"\\frac{1}{2}"`` are merged by math-verify), then counted
    (:func:`count_votes`). ``None`` (no boxed answer) never wins and has count 0. Ties go to the cluster
    whose first answer comes first. With no answer at all, the label is None and every count is 0.
    ``timeout`` bounds each math-verify comparison (seconds). Never raises on garbage text, numbers of any
    length included (longer than :data:`ddrl.answers.MAX_NUMBER_DIGITS` digits they are compared as text
    and expressions, not as values).
    """
    if isinstance(answers, str) or not isinstance(answers, Sequence):
        raise TypeError(f"majority_vote(answers): expected a sequence of str | None, got {type(answers).__name__}")
    if len(answers) == 0:
        raise ValueError("majority_vote(answers): expected at least one rollout's answer, got an empty sequence")
    return count_votes(cluster_keys(answers, timeout), answers)


def pseudo_rewards(vote: Vote) -> np.ndarray:
    """TTRL's pseudo-reward r_i = 1[y_i = y*] (Algorithm 1): 1.0 where rollout i is in the label's cluster
    (its answer is equivalent to the label), else 0.0; all 0.0 when no rollout has an answer (label None).
    Used by the trainer, the analyses and the verl integration."""
    if vote.label is None:
        return np.zeros(len(vote.counts))
    return np.array([1.0 if k == vote.label_key else 0.0 for k in vote.keys])
