"""What a rollout is rewarded with when there are no labels: the majority vote (TTRL, DDRL) and four rivals.

Each reward is a small pure function of one question's rollouts (:class:`Group`) returning one number per rollout,
registered by name with :func:`register`; a method picks one with ``TrainConfig.reward`` (``ddrl/methods.yaml``).
The trainer calls :func:`get_reward` at Algorithm 1's line 5 ("reward agreement"), before selection and advantages.

- ``vote``         TTRL's pseudo-reward r_i = 1[y_i = y*] (Zuo et al. 2025; the paper's Sec. 2.1, Algorithm 1 line 5)
- ``random``       r_i ~ Bernoulli(1/2), blind to the answers: the random-reward control of "Spurious Rewards:
                   Rethinking Training Signals in RLVR" (Shao et al. 2025, arXiv:2506.10947)
- ``gated_vote``   r_i = 1[y_i = y*] where the majority share c(y*)/N reaches ``TrainConfig.reward_gate``, else 0:
                   the majority-vote reward of SRT with its self-consistency filter ("Can Large Reasoning Models
                   Self-Train?", Shafayat et al. 2025, arXiv:2505.21444)
- ``soft_vote``    r_i = c(y_i)/N, the share of rollout i's answer cluster (0 without an answer): EMPO's semantic-
                   cluster probability reward, with final answers as the clusters of math (Zhang et al. 2025,
                   arXiv:2504.05812)
- ``neg_entropy``  r_i = -(1/|o_i|) sum_t H(pi(. | q, o_i,<t)), minus the rollout's mean token entropy: RENT
                   ("Reinforcement Learning via Entropy Minimization", Prabhudesai et al. 2025)

Where these depart from their papers: docs/semantics.md, "Label-free rewards". Adding a reward: one function here,
decorated with :func:`register`, and one row of ``ddrl/methods.yaml`` that names it (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ddrl.voting import Vote, pseudo_rewards

__all__ = ["Group", "Reward", "REWARDS", "register", "get_reward", "is_binary", "favoured", "vote", "random_coin", "gated_vote",
           "soft_vote", "neg_entropy"]


@dataclass(frozen=True)
class Group:
    """One question's N rollouts as a reward sees them (never the ground truth).

    vote:           the majority vote over their answers (:func:`ddrl.voting.majority_vote`)
    mean_entropies: each rollout's mean token entropy (None where the sampler does not report entropies)
    rng:            a generator of this question at this step (``ddrl.seeds``), for rewards that draw
    """

    vote: Vote
    mean_entropies: Sequence[float] | None
    rng: np.random.Generator

    @property
    def n(self) -> int:
        return self.vote.n


@dataclass(frozen=True)
class Reward:
    """A registered reward: its function ``fn(group, cfg) -> N rewards``, and whether they are always 0 or 1 (DAE's
    fixed ±1 advantages need that)."""

    name: str
    fn: Callable[[Group, Any], np.ndarray]
    binary: bool


#: name -> :class:`Reward`, filled by :func:`register`.
REWARDS: dict[str, Reward] = {}


def register(name: str, binary: bool) -> Callable:
    """Decorator: register ``fn(group, cfg)`` as the reward ``name``."""

    def deco(fn: Callable[[Group, Any], np.ndarray]) -> Callable[[Group, Any], np.ndarray]:
        if name in REWARDS:
            raise ValueError(f"reward {name!r} is registered twice")
        REWARDS[name] = Reward(name, fn, binary)
        return fn

    return deco


def get_reward(name: str) -> Callable[[Group, Any], np.ndarray]:
    """The reward function called ``name``."""
    try:
        return REWARDS[name].fn
    except KeyError:
        raise KeyError(f"unknown reward {name!r}; expected one of {sorted(REWARDS)}") from None


def is_binary(name: str) -> bool:
    """Whether the reward ``name`` is always 0 or 1."""
    return REWARDS[name].binary


def favoured(rewards: Sequence[float] | np.ndarray, binary: bool | None = None) -> np.ndarray:
    """Which of one question's rollouts a reward favours: reward 1 for a 0/1 reward, above the question's mean (a
    positive GRPO advantage) for any other. ``binary`` None: 0/1 when every value is 0 or 1. The one rule the reward
    diagnostics (:func:`ddrl.evaluate.reward_counts`) and the signal analysis (:func:`ddrl.analysis.reward_signal`)
    count by."""
    r = np.asarray(rewards, dtype=np.float64)
    if binary is None:
        binary = bool(np.all((r == 0.0) | (r == 1.0)))
    return r > 0.5 if binary else r > r.mean()


# ---------------------------------------------------------------------------------------------------------
# The rewards
# ---------------------------------------------------------------------------------------------------------


@register("vote", binary=True)
def vote(g: Group, cfg: Any = None) -> np.ndarray:
    """TTRL: 1 where the rollout agrees with the majority answer, else 0 (all 0 when no rollout has an answer)."""
    return pseudo_rewards(g.vote)


@register("random", binary=True)
def random_coin(g: Group, cfg: Any = None) -> np.ndarray:
    """Spurious Rewards' random reward: each rollout 1 with probability 1/2, independently of its answer."""
    return (g.rng.random(g.n) < 0.5).astype(np.float64)


@register("gated_vote", binary=True)
def gated_vote(g: Group, cfg: Any = None, threshold: float | None = None) -> np.ndarray:
    """SRT's gate: the vote reward where the majority share c(y*)/N is at least ``threshold`` (default
    ``cfg.reward_gate``), else 0 everywhere (a question the model is unsure of teaches nothing)."""
    t = cfg.reward_gate if threshold is None else threshold
    if g.vote.majority_ratio >= t:
        return pseudo_rewards(g.vote)
    return np.zeros(g.n)


@register("soft_vote", binary=False)
def soft_vote(g: Group, cfg: Any = None) -> np.ndarray:
    """EMPO for math: the share of the N rollouts in the rollout's answer cluster, c(y_i)/N (0 without an answer)."""
    return np.asarray(g.vote.counts, dtype=np.float64) / g.n


@register("neg_entropy", binary=False)
def neg_entropy(g: Group, cfg: Any = None) -> np.ndarray:
    """RENT: minus the rollout's mean token entropy (a confident rollout is rewarded, whatever its answer)."""
    if g.mean_entropies is None:
        raise ValueError("neg_entropy: the sampler reported no token entropies; this reward needs them")
    h = np.asarray(g.mean_entropies, dtype=np.float64)
    if h.shape != (g.n,) or not np.all(np.isfinite(h)):
        raise ValueError(f"neg_entropy: expected {g.n} finite mean entropies, got {h.tolist()}")
    return -h
