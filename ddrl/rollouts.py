"""What a sampler returns and what every sampler computes the same way: :class:`Rollout`, the
:class:`Sampler` interface, the processed log-probs after temperature and top-p (:func:`sampling_logprobs`) and
their entropy. Shared by :mod:`ddrl.sampling` (HFSampler, VLLMSampler, :func:`~ddrl.sampling.make_sampler`) and
:mod:`ddrl.accel.fast_sampling` (StaticCacheSampler).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, Sequence

import torch


@dataclass
class Rollout:
    """One sampled response to one prompt.

    ``token_ids`` are the response tokens only (the end-of-sequence token included when the model emitted
    one); ``logprobs[t]`` is the log-probability of ``token_ids[t]`` under the distribution it was drawn
    from (after temperature and top-p); ``entropies[t]`` is that distribution's entropy in nats (None for
    backends that cannot report it).
    """

    prompt_index: int
    token_ids: list[int]
    text: str
    logprobs: list[float]
    finish_reason: str  # "stop" (end-of-sequence emitted) or "length" (max_new_tokens reached)
    entropies: list[float] | None = field(default=None, repr=False)

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)


class Sampler(Protocol):
    def sample(
        self,
        prompts: Sequence[str],
        n: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int = 256,
        seed: int = 0,
        progress: bool = False,
    ) -> list[list[Rollout]]: ...

    def update_weights(self, model) -> None: ...


# ---------------------------------------------------------------------------------------------------------
# The sampling distribution: temperature, then top-p (the order vLLM and Hugging Face use).
# ---------------------------------------------------------------------------------------------------------


def sampling_logprobs(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """Log-probabilities of the distribution tokens are drawn from: ``softmax(logits / T)`` restricted to
    the smallest set of most likely tokens whose mass reaches ``top_p`` (nucleus), renormalised.

    ``temperature == 0`` means greedy decoding; the returned distribution is then the untempered one
    (T = 1) so that log-probs and entropies stay finite and meaningful.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    logits = logits.float()
    if temperature > 0:
        logits = logits / temperature
    if top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        probs = sorted_logits.softmax(dim=-1)
        # Drop a token when the mass strictly before it already reaches top_p (the first token always stays).
        drop = (probs.cumsum(dim=-1) - probs) >= top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    return logits.log_softmax(dim=-1)


def entropy_from_logprobs(logp: torch.Tensor) -> torch.Tensor:
    """Entropy ``-sum p log p`` in nats along the last axis; tokens with p = 0 contribute 0."""
    p = logp.exp()
    return -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(dim=-1)


# ---------------------------------------------------------------------------------------------------------
# Hugging Face backend
# ---------------------------------------------------------------------------------------------------------


def eos_ids(model, tokenizer) -> list[int]:
    ids: set[int] = set()
    for src in (getattr(getattr(model, "generation_config", None), "eos_token_id", None), tokenizer.eos_token_id):
        if src is None:
            continue
        ids.update([src] if isinstance(src, int) else list(src))
    if not ids:
        raise ValueError("neither the tokenizer nor the model's generation_config defines an eos_token_id")
    return sorted(ids)


def sequence_logprob(rollout: Rollout) -> float:
    """Sum of the rollout's token log-probs (its log-likelihood under the sampling distribution)."""
    return float(math.fsum(rollout.logprobs))


def request_limits(prompt_ids: Sequence[Sequence[int]], n: int, max_new_tokens: int | Sequence[int]) -> list[int]:
    """The per-prompt token limits of a ``sample_ids`` request, after checking it: ``n >= 1``, one limit
    (or one per prompt) each >= 1, and no empty prompt. Shared by every sampler so they refuse alike."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    limits = [max_new_tokens] * len(prompt_ids) if isinstance(max_new_tokens, int) else list(max_new_tokens)
    if len(limits) != len(prompt_ids) or min(limits, default=1) < 1:
        raise ValueError(f"max_new_tokens must be >= 1 (one int, or one per prompt), got {max_new_tokens}")
    for i, ids in enumerate(prompt_ids):
        if len(ids) == 0:
            raise ValueError(f"prompt {i} is empty after tokenization")
    return limits


def sampler_device(model, device: str | torch.device | None = None) -> torch.device:
    """The device a sampler of ``model`` decodes on: ``device`` when given, else where the model's weights are."""
    return torch.device(device) if device is not None else next(model.parameters()).device


class LocalSampler:
    """What the samplers that run a Hugging Face model in this process share (:class:`ddrl.sampling.HFSampler`,
    :class:`ddrl.accel.fast_sampling.StaticCacheSampler`): the model, its tokenizer, ``batch_size`` sequences decoded
    together, the device, the end-of-sequence and pad ids, :meth:`encode` and :meth:`sample`. Subclasses
    implement ``sample_ids`` and ``update_weights``."""

    def __init__(self, model, tokenizer, batch_size: int = 256, device: str | torch.device | None = None):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.device = sampler_device(model, device)
        self.eos_ids = eos_ids(model, tokenizer)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_ids[0]

    def encode(self, prompts: Sequence[str]) -> list[list[int]]:
        """Token ids of already chat-formatted prompts (the template carries any BOS token)."""
        return [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]

    def sample(
        self,
        prompts: Sequence[str],
        n: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int = 256,
        seed: int = 0,
        progress: bool = False,
    ) -> list[list[Rollout]]:
        """``n`` rollouts for every prompt (a list per prompt, in prompt order)."""
        return self.sample_ids(self.encode(prompts), n, temperature, top_p, max_new_tokens, seed, progress)
