"""Training losses on per-token log-probabilities of the response tokens.

Paper: Sec. 2.1's GRPO objective (clipped ratio, KL to the reference) and Sec. 3.3's supervised COR loss;
Algorithm 1's "update pi_theta using policy gradient with advantages {A(y)}".

All tensors are (batch, response_length); ``mask`` is 1 on real response tokens and 0 on padding (never on
prompt tokens). Means are token-means over every unmasked token of the batch (verl's "token-mean").

- :func:`policy_loss`  PPO clipped surrogate with dual clip (the RL objective of GRPO / TTRL / DDRL).
- :func:`kl_low_var`   k3 ("low_var_kl") estimate of KL(policy || reference), per token.
- :func:`sft_nll`      negative log-likelihood for COR's supervised fine-tuning.
"""

from __future__ import annotations

import torch

__all__ = ["policy_loss", "kl_low_var", "masked_token_mean", "sft_nll", "CLIP", "DUAL_CLIP", "KL_COEF"]

#: PPO clip range epsilon: the ratio is clipped to [1 - CLIP, 1 + CLIP].
CLIP = 0.2
#: Dual-clip constant c: for negative advantages the per-token loss is capped at -c * A.
DUAL_CLIP = 3.0
#: Coefficient of the k3 KL term added to the policy loss (verl's kl_loss_coef, used by TTRL and DDRL).
KL_COEF = 1e-3
#: The log-ratio log(pi / pi_old) is clamped to [-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP] before exp.
LOG_RATIO_CLAMP = 20.0


def _check_same_shape(where: str, **tensors: torch.Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"{where}: expected tensors of one shape (batch, response_length), got {shapes}")


def masked_token_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over the tokens where ``mask`` is nonzero, across the whole batch (0 if none)."""
    _check_same_shape("masked_token_mean", x=x, mask=mask)
    m = mask.to(x.dtype)
    return (x * m).sum() / m.sum().clamp(min=1.0)


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip: float = CLIP,
    dual_clip: float = DUAL_CLIP,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO clipped surrogate with dual clip (the policy-gradient objective of GRPO), token-mean.

    Per token, with ratio rho = exp(clamp(logp - old_logp, -20, 20)) and advantage A:

        L = max(-A rho, -A clip(rho, 1 - clip, 1 + clip))     (PPO clip)
        L = min(L, -A dual_clip)                   if A < 0   (dual clip: caps the loss when rho is large)

    and the loss is the mean of L over all unmasked tokens of the batch. ``advantages`` is per sequence
    (batch,) or per token (batch, response_length). Returns (loss, metrics) where metrics holds floats:
    ``clipfrac`` (tokens where the PPO clip is active), ``clipfrac_lower`` (tokens where the dual clip is
    active), ``ppo_kl`` (token-mean of old_logp - logp) and ``ratio_mean``.
    """
    _check_same_shape("policy_loss", logp=logp, old_logp=old_logp, mask=mask)
    if advantages.dim() == 1 and logp.dim() == 2 and advantages.shape[0] == logp.shape[0]:
        advantages = advantages[:, None].expand_as(logp)
    _check_same_shape("policy_loss (advantages)", logp=logp, advantages=advantages)
    if not clip > 0:
        raise ValueError(f"policy_loss(clip=...): expected clip > 0, got {clip}")
    if not dual_clip > 1:
        raise ValueError(f"policy_loss(dual_clip=...): expected dual_clip > 1, got {dual_clip}")
    advantages = advantages.to(logp.dtype)

    log_ratio = (logp - old_logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    ratio = torch.exp(log_ratio)
    loss_plain = -advantages * ratio
    loss_clipped = -advantages * ratio.clamp(1.0 - clip, 1.0 + clip)
    loss_ppo = torch.maximum(loss_plain, loss_clipped)
    loss_cap = -advantages * dual_clip
    negative = advantages < 0
    per_token = torch.where(negative, torch.minimum(loss_ppo, loss_cap), loss_ppo)
    loss = masked_token_mean(per_token, mask)

    with torch.no_grad():
        metrics = {
            "clipfrac": masked_token_mean((loss_clipped > loss_plain).to(logp.dtype), mask).item(),
            "clipfrac_lower": masked_token_mean(((loss_ppo > loss_cap) & negative).to(logp.dtype), mask).item(),
            "ppo_kl": masked_token_mean(-log_ratio, mask).item(),
            "ratio_mean": masked_token_mean(ratio, mask).item(),
        }
    return loss, metrics


def kl_low_var(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || pi_ref) per token (verl's "low_var_kl"; Schulman, "Approximating KL").

    With d = clamp(ref_logp - logp, -20, 20): kl = clamp(exp(d) - d - 1, -10, 10), which is >= 0 and 0
    exactly when the policy equals the reference. Returned per token, 0 where ``mask`` is 0; the training
    loss adds ``KL_COEF * masked_token_mean(kl_low_var(...), mask)``.
    """
    _check_same_shape("kl_low_var", logp=logp, ref_logp=ref_logp, mask=mask)
    d = (ref_logp - logp).clamp(-20.0, 20.0)
    # expm1(d) - d is exp(d) - d - 1 without the cancellation that made it -1e-16 for d ~ 1e-16 (expm1 is
    # monotone and >= d, so this stays >= 0 in floating point too)
    kl = (torch.expm1(d) - d).clamp(-10.0, 10.0)
    return kl * mask.to(kl.dtype)


def sft_nll(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Supervised fine-tuning loss (COR): negative log-likelihood, token-mean over response tokens.

    ``logp`` holds the log-probabilities of the target tokens; ``mask`` selects response tokens only
    (prompt and padding are 0), so the prompt is context, not target.
    """
    return masked_token_mean(-logp, mask)
