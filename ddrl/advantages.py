"""Advantages from one prompt's group of 0/1 rewards (one scalar per trained rollout).

Paper: Sec. 2.3 (GRPO's group-normalised advantage and how it amplifies spurious signals, Table 1) and Sec. 3.2
(DAE), Algorithm 1's line A(y) = I(y = y*) - I(y != y*).

- :func:`grpo`         GRPO's group-relative advantage (r - mean) / (std + eps): what TTRL uses.
- :func:`grpo_no_std`  r - mean, without the std division (Table 1's "GRPO w/o norm.").
- :func:`fixed`        DDRL's debiased advantage estimation (DAE): +1 for reward 1, -1 for reward 0.

Each takes the rewards of ONE prompt's group and returns a float64 array of the same length; the
advantage is then broadcast to every response token. Select by name with :func:`get_advantage`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["grpo", "grpo_no_std", "fixed", "entropy_reshape", "clip_advantages", "RESHAPES", "ADVANTAGES",
           "get_advantage"]


def _as_group(rewards: Sequence[float] | np.ndarray, where: str) -> np.ndarray:
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 1 or r.size == 0:
        raise ValueError(f"{where}(rewards): expected a non-empty 1-D group of rewards, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError(f"{where}(rewards): rewards must be finite, got {r.tolist()}")
    return r


def grpo(rewards: Sequence[float] | np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """GRPO advantage (paper Eq. for A_i in GRPO): A_i = (r_i - mean(r)) / (std(r) + eps).

    std is the unbiased sample standard deviation (divides by n - 1), as verl's ``torch.std``. A group
    whose rewards are all equal (including a group of one) has advantage 0 for every member.
    """
    r = _as_group(rewards, "grpo")
    if not eps >= 0:
        raise ValueError(f"grpo(eps=...): expected eps >= 0, got {eps}")
    if r.size == 1 or np.all(r == r[0]):
        return np.zeros_like(r)
    return (r - r.mean()) / (r.std(ddof=1) + eps)


def grpo_no_std(rewards: Sequence[float] | np.ndarray) -> np.ndarray:
    """GRPO without std normalisation (Table 1, "GRPO w/o norm."): A_i = r_i - mean(r)."""
    r = _as_group(rewards, "grpo_no_std")
    return r - r.mean()


def fixed(rewards: Sequence[float] | np.ndarray) -> np.ndarray:
    """DAE, debiased advantage estimation (DDRL): A_i = 2 r_i - 1, i.e. +1 if r_i = 1 and -1 if r_i = 0.

    The advantage no longer depends on the group's statistics, so a near-unanimous (and possibly wrong)
    vote does not inflate the few dissenters' advantages. Rewards must be exactly 0 or 1.
    """
    r = _as_group(rewards, "fixed")
    bad = r[(r != 0.0) & (r != 1.0)]
    if bad.size:
        raise ValueError(f"fixed(rewards): DAE expects binary rewards (0 or 1), got {bad.tolist()}")
    return 2.0 * r - 1.0


def entropy_reshape(advantages: Sequence[float] | np.ndarray, mean_entropies: Sequence[float] | np.ndarray,
                    eps: float = 1e-8) -> np.ndarray:
    """ETTRL's entropy-based advantage reshaping (EAR, Liu et al. 2025, arXiv:2508.11356):
    A_i <- A_i * (1 + (H - H_i) / H), with H_i the mean token entropy of response i and H the group mean.

    Confident responses (low H_i) get larger advantages, uncertain ones smaller. Where the paper is silent:
    H is the mean over the same (selected) group the advantages were computed on, and a group with H <= eps
    (every response deterministic) is left unchanged.
    """
    a = np.asarray(advantages, dtype=np.float64)
    h = np.asarray(mean_entropies, dtype=np.float64)
    if a.shape != h.shape or a.ndim != 1:
        raise ValueError(f"entropy_reshape: advantages {a.shape} and mean_entropies {h.shape} must be equal 1-D shapes")
    if not (np.all(np.isfinite(h)) and np.all(h >= 0)):
        raise ValueError(f"entropy_reshape: mean entropies must be finite and >= 0, got {h.tolist()}")
    big_h = h.mean()
    if big_h <= eps:
        return a.copy()
    return a * (1.0 + (big_h - h) / big_h)


def clip_advantages(advantages: Sequence[float] | np.ndarray, bound: float = 2.0) -> np.ndarray:
    """The clipped alternative to EAR named with it in ETTRL: A <- clip(A, -bound, bound)."""
    if not bound > 0:
        raise ValueError(f"clip_advantages(bound=...): expected bound > 0, got {bound}")
    return np.clip(np.asarray(advantages, dtype=np.float64), -bound, bound)


#: name -> optional transform applied after the advantage estimator ("none" leaves advantages as they are).
RESHAPES = ("none", "entropy", "clip")


#: name -> advantage function of one group's rewards.
ADVANTAGES: dict[str, Callable[..., np.ndarray]] = {
    "grpo": grpo,
    "grpo_no_std": grpo_no_std,
    "fixed": fixed,
}


def get_advantage(name: str) -> Callable[..., np.ndarray]:
    """The advantage estimator called ``name``: "grpo" (TTRL), "grpo_no_std", or "fixed" (DAE)."""
    try:
        return ADVANTAGES[name]
    except KeyError:
        raise KeyError(f"unknown advantage {name!r}; expected one of {sorted(ADVANTAGES)}") from None
