"""Which K of a prompt's N rollouts are trained on.

Paper: Sec. 3.1 (BCS) and Algorithm 1's lines K+ = min(c(y*), floor(K/2)), K- = K - K+, "select K+ positives
with label y*", "select K- negatives with lowest frequencies"; TTRL's random K of N is Sec. 2.1.

TTRL votes on all N rollouts but trains on K of them, picked without looking at the answers
(:func:`random_subset`). DDRL's balanced confidence-aware sampling (:func:`bcs`) instead keeps the
most-agreed-with rollouts as positives and the least-agreed-with ones as negatives, and drops the
ambiguous middle. :func:`bcs_random_negatives` keeps BCS's positives but draws its negatives at random (the
claims study's plan Amendment 19: BCS's balance without its confidence-aware negatives). All return indices into
the N rollouts; select by name with :func:`get_selection`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["random_subset", "positives_quota", "bcs", "bcs_random_negatives", "SELECTIONS", "get_selection"]


def _check_nk(n: int, k: int, where: str) -> None:
    for name, v in (("n", n), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{where}: {name} must be an int, got {type(v).__name__}")
    if not 1 <= k <= n:
        raise ValueError(f"{where}: expected 1 <= k <= n, got n={n}, k={k}")


def random_subset(n: int, k: int, rng: np.random.Generator) -> list[int]:
    """TTRL's choice of trained rollouts: k of range(n) uniformly at random, without replacement, sorted.

    The official TTRL code trains on the first k of its n i.i.d. samples, which is the same distribution
    over subsets; drawing explicitly keeps the choice independent of how a sampler orders its outputs.
    """
    _check_nk(n, k, "random_subset")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"random_subset: rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return sorted(int(i) for i in rng.choice(n, size=k, replace=False))


def positives_quota(counts: Sequence[int], k: int) -> int:
    """BCS's number of positives, K+ = min(c(y*), floor(K / 2)) (DDRL, Sec. BCS, the equation for K+), with
    c(y*) = max(counts) the pseudo-label's count; K- = k - K+."""
    return min(max(counts), k // 2)


def bcs(counts: Sequence[int], k: int) -> list[int]:
    """Balanced confidence-aware sampling (DDRL, Sec. BCS), exactly as the official DDRL code does it.

    With counts[i] = how many of the N rollouts share rollout i's answer (0 for no answer) and
    c* = max(counts):

    1. order the rollouts by count, descending, with a *stable* sort (ties keep rollout order);
    2. K+ = min(c*, floor(k / 2)) (:func:`positives_quota`);
    3. keep the first K+ ("positives") and the last k - K+ ("negatives") of that order.

    Returned as [first K+ in sorted order] + [last k - K+ in sorted order]. Edge cases, all as in the
    official code (see docs/semantics.md):

    - Rollouts without an answer (count 0) sort last, so they are the first negatives to be kept.
    - All rollouts without an answer: c* = 0, so K+ = 0 and the last k rollouts (by index) are kept.
    - Answers tied for the top count: the K+ positive slots go to the tied rollouts in index order, so
      they can mix the label with the tied runner-up (whose reward is 0); the label is the tied answer
      seen first, which also comes first in the stable order.
    - c* > N - k/2: the kept tail reaches into the majority, so some kept "negatives" carry the majority
      answer. A slot does not decide a sign; the rollout's reward does (those get reward 1).
    - c* < k/2: only c* positives, and k - c* negatives (the batch is unbalanced toward negatives).
    """
    counts = [int(c) for c in counts]
    n = len(counts)
    _check_nk(n, k, "bcs")
    if any(c < 0 or c > n for c in counts):
        raise ValueError(f"bcs: counts must lie in [0, {n}] (N = len(counts)), got {counts}")
    order = sorted(range(n), key=lambda i: -counts[i])  # Python's sort is stable
    k_pos = positives_quota(counts, k)
    return order[:k_pos] + order[n - (k - k_pos) :]


def bcs_random_negatives(counts: Sequence[int], k: int, rng: np.random.Generator) -> list[int]:
    """BCS's positives with random negatives: BCS's two principles apart (plan Amendment 19; not in the paper).

    The paper's BCS follows (i) confidence (negatives are the rarest answers) and (ii) balance (K+ = min(c*,
    floor(k / 2)) positives, k - K+ negatives). This rule keeps (ii) and drops (i):

    1. the positives are BCS's exactly: the first K+ rollouts of its stable count order (:func:`bcs`);
    2. the k - K+ negatives are drawn uniformly at random, without replacement, from the rollouts whose count is
       below c* (every answer but the top one, rollouts without an answer included);
    3. where fewer than k - K+ such rollouts exist, there is no choice to make: the selection is BCS's (its tail
       then reaches into the top answer, as :func:`bcs` documents), and ``rng`` is not used.

    Returned as [positives] + [negatives, sorted]. So BCS - this rule isolates what choosing the rarest answers as
    negatives does, and this rule - TTRL's :func:`random_subset` what BCS's balanced count of positives does.
    """
    counts = [int(c) for c in counts]
    chosen = bcs(counts, k)  # validates n, k and counts
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"bcs_random_negatives: rng must be a numpy.random.Generator, got {type(rng).__name__}")
    top, k_pos = max(counts), positives_quota(counts, k)
    below = [i for i in range(len(counts)) if counts[i] < top]
    if len(below) < k - k_pos:
        return chosen
    return chosen[:k_pos] + sorted(int(i) for i in rng.choice(below, size=k - k_pos, replace=False))


def _random_selection(counts: Sequence[int], k: int, rng: np.random.Generator) -> list[int]:
    return random_subset(len(counts), k, rng)


def _bcs_selection(counts: Sequence[int], k: int, rng: np.random.Generator) -> list[int]:
    return bcs(counts, k)


#: name -> selection(counts, k, rng) -> indices; one signature for both so a trainer can switch by name.
SELECTIONS: dict[str, Callable[[Sequence[int], int, np.random.Generator], list[int]]] = {
    "random": _random_selection,
    "bcs": _bcs_selection,
    "bcs_random_neg": bcs_random_negatives,
}


def get_selection(name: str) -> Callable[[Sequence[int], int, np.random.Generator], list[int]]:
    """The selection rule called ``name`` ("random" = TTRL, "bcs" = DDRL, "bcs_random_neg" = BCS's positives with
    random negatives), as ``f(counts, k, rng)``."""
    try:
        return SELECTIONS[name]
    except KeyError:
        raise KeyError(f"unknown selection {name!r}; expected one of {sorted(SELECTIONS)}") from None
