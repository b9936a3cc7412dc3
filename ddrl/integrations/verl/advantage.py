"""DAE (``ddrl.advantages.fixed``) as a verl advantage estimator named ``ddrl_fixed``.

verl looks estimators up by name in ``core_algos.ADV_ESTIMATOR_REGISTRY`` (filled by the
``register_adv_est`` decorator) from ``compute_advantage``, which runs in the driver process (verl's
``TaskRunner`` actor). :func:`register` must therefore run in that process: the DDRL task runner calls it,
and importing :mod:`ddrl.integrations.verl.trainer` does too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ddrl.advantages import fixed
from ddrl.integrations.verl import ADV_ESTIMATOR_NAME

__all__ = ["compute_ddrl_fixed_advantage", "register"]


def compute_ddrl_fixed_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    config: Any = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """DAE in verl's estimator signature: ``(advantages, returns)``, both (batch, response_len).

    The sequence reward is the sum of ``token_level_rewards`` (verl's outcome-reward convention; the DDRL
    trainer writes the 0/1 pseudo-reward at the last response token). Each group (``index``, verl's
    ``uid``) gets :func:`ddrl.advantages.fixed` (+1 / -1), broadcast over the response tokens and zeroed
    on padding. DAE does not depend on the group, but going group by group keeps verl's contract and lets
    ``fixed`` reject non-binary rewards with its own error.
    """
    if token_level_rewards.shape != response_mask.shape:
        raise ValueError(
            f"ddrl_fixed: token_level_rewards {tuple(token_level_rewards.shape)} and response_mask "
            f"{tuple(response_mask.shape)} must have the same shape"
        )
    scores = token_level_rewards.sum(dim=-1).detach().to(torch.float64).cpu().numpy()
    if index is None:
        index = np.arange(len(scores))
    groups: dict[Any, list[int]] = {}
    for i, uid in enumerate(index):
        groups.setdefault(uid, []).append(i)
    adv = np.empty_like(scores)
    for rows in groups.values():
        adv[rows] = fixed(scores[rows])
    per_seq = torch.as_tensor(adv, dtype=token_level_rewards.dtype, device=token_level_rewards.device)
    advantages = per_seq.unsqueeze(-1) * response_mask.to(token_level_rewards.dtype)
    return advantages, advantages


def register() -> None:
    """Register :func:`compute_ddrl_fixed_advantage` as ``ddrl_fixed`` in this process (idempotent)."""
    from verl.trainer.ppo import core_algos

    if core_algos.ADV_ESTIMATOR_REGISTRY.get(ADV_ESTIMATOR_NAME) is not compute_ddrl_fixed_advantage:
        core_algos.register_adv_est(ADV_ESTIMATOR_NAME)(compute_ddrl_fixed_advantage)
