"""Majority vote over one prompt's N rollouts: the pseudo-label of test-time RL.

TTRL (and DDRL after it) take the most frequent final answer among N sampled responses as the label,
reward the rollouts that agree with it (1) and the rest (0). The per-rollout answer counts also feed
DDRL's balanced confidence-aware sampling (:func:`ddrl.selection.bcs`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ddrl.answers import voting_key

__all__ = ["Vote", "majority_vote", "pseudo_rewards"]


@dataclass(frozen=True)
class Vote:
    """Outcome of :func:`majority_vote` for one prompt.

    label:        the winning answer, as the first rollout that gave it wrote it (stripped); None when
                  no rollout has an answer.
    label_count:  how many of the N rollouts share the label's voting key (c* in the paper; 0 if None).
    counts:       counts[i] = how many of the N rollouts share rollout i's voting key; 0 when rollout i
                  has no answer.
    keys:         keys[i] = rollout i's :func:`ddrl.answers.voting_key` (None = no answer).
    """

    label: str | None
    label_count: int
    counts: list[int]
    keys: list[str | None] = field(default_factory=list)
    label_key: str | None = None  # the label's voting key (None when the label is None)

    @property
    def n(self) -> int:
        """N, the number of rollouts voted on."""
        return len(self.counts)

    @property
    def majority_ratio(self) -> float:
        """label_count / N: the vote's confidence (TTRL's "majority ratio")."""
        return self.label_count / self.n if self.n else 0.0


def majority_vote(answers: Sequence[str | None]) -> Vote:
    """Majority vote (TTRL's pseudo-label) over one prompt's extracted answers.

    Answers are grouped by :func:`ddrl.answers.voting_key` (so ``"025"``, ``"25"`` and ``"25.0"`` are one
    vote). ``None`` (no boxed answer) never wins and has count 0. Ties go to the answer whose first
    occurrence comes first. With no answer at all, the label is None and every count is 0.
    """
    if isinstance(answers, str) or not isinstance(answers, Sequence):
        raise TypeError(f"majority_vote(answers): expected a sequence of str | None, got {type(answers).__name__}")
    if len(answers) == 0:
        raise ValueError("majority_vote(answers): expected at least one rollout's answer, got an empty sequence")
    keys = [voting_key(a) for a in answers]
    tally = Counter(k for k in keys if k is not None)  # insertion-ordered: first occurrence first
    counts = [tally[k] if k is not None else 0 for k in keys]
    if not tally:
        return Vote(label=None, label_count=0, counts=counts, keys=keys)
    best_key, best_count = None, 0
    for k, c in tally.items():  # strict ">" keeps the earliest of tied answers
        if c > best_count:
            best_key, best_count = k, c
    first = keys.index(best_key)
    return Vote(label=answers[first].strip(), label_count=best_count, counts=counts, keys=keys, label_key=best_key)


def pseudo_rewards(vote: Vote) -> np.ndarray:
    """TTRL's pseudo-reward r_i = 1[y_i = y*]: 1.0 where rollout i's voting key equals the label's, else
    0.0; all 0.0 when no rollout has an answer (label None). Used by the trainer and the verl integration."""
    if vote.label is None:
        return np.zeros(len(vote.counts))
    return np.array([1.0 if k == vote.label_key else 0.0 for k in vote.keys])
