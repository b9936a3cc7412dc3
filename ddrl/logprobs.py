"""Per-token log-probabilities of responses under a causal LM: the one forward pass that PPO (:mod:`ddrl.train`,
the ratio and KL of Eq. 1) and COR's SFT loss (:mod:`ddrl.cor`) share.

Two implementations of the same quantity, picked by :func:`logprob_backend`:

- ``"hf"``: one Hugging Face forward over each row's prompt + response (:func:`hf_response_logprobs`);
- ``"shared-prompt"``: the rows of a test-time RL batch come in groups that share a prompt (64 samples of a
  question), so each distinct prompt is run once, its K/V cache indexed out to its rows (differentiably: the
  rows' gradients sum into the prompt's), and only the responses run per row
  (:func:`shared_prompt_response_logprobs`). Same model code, fewer tokens through the linear layers (a
  quarter fewer on the default testbed, whose prompts are ~15 tokens and responses ~45). On the testbed the
  log-probs are bitwise those of ``"hf"`` and the gradients agree to ~1e-6 relative (float sums in
  another order), which is enough for a chaotic RL trajectory to take another path: the claims study
  pins ``"hf"`` (:func:`ddrl.accel.logprob_backends.pinned_backend`) so that all its runs are computed one way.

Under ``auto`` the update may also skip its no-grad pass over the policy and take the old log-probs from the
sampler (:func:`old_logprobs_from_sampler`); ``hf`` and ``shared-prompt`` always recompute them.
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import DynamicCache

from ddrl.accel.fast_sampling import unsupported_reason
from ddrl.accel.hf_compat import base_model, cache_kwarg
from ddrl.accel.logprob_backends import env_choice


def collate(prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], pad_id: int, device):
    """Left-padded prompts followed by right-padded responses, so every response starts in the same column.

    Returns ``input_ids, attention_mask, position_ids`` of shape (B, W + R) and the response ``mask`` (B, R).
    """
    if len(prompts) != len(responses):
        raise ValueError(f"collate: {len(prompts)} prompts but {len(responses)} responses")
    b = len(prompts)
    w = max(len(p) for p in prompts)
    r = max(len(x) for x in responses)
    ids = torch.full((b, w + r), pad_id, dtype=torch.long)
    attn = torch.zeros((b, w + r), dtype=torch.long)
    for i, (p, x) in enumerate(zip(prompts, responses)):
        ids[i, w - len(p) : w] = torch.as_tensor(list(p), dtype=torch.long)
        ids[i, w : w + len(x)] = torch.as_tensor(list(x), dtype=torch.long)
        attn[i, w - len(p) : w + len(x)] = 1
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    mask = attn[:, w:].clone()
    return ids.to(device), attn.to(device), pos.to(device), mask.to(device)


def response_logprobs(model, prompts, responses, temperature: float, pad_id: int, with_entropy: bool = False):
    """Per-token log-probs of ``responses`` given ``prompts`` under ``softmax(logits / temperature)``
    (verl divides logits by the rollout temperature, so with T = 1 these are the sampler's log-probs).

    Returns ``(logp, mask, entropy)``, each (B, R); ``entropy`` is None unless ``with_entropy``. Runs
    :func:`shared_prompt_response_logprobs` where :func:`logprob_backend` picks it for ``model`` and some rows
    share a prompt (and every prompt and some response has a token), else :func:`hf_response_logprobs`.
    """
    if len(prompts) != len(responses):
        raise ValueError(f"response_logprobs: {len(prompts)} prompts but {len(responses)} responses")
    if (len({tuple(p) for p in prompts}) < len(prompts) and min(len(p) for p in prompts) > 0
            and max(len(x) for x in responses) > 0 and logprob_backend(model) == "shared-prompt"):
        return shared_prompt_response_logprobs(model, prompts, responses, temperature, pad_id, with_entropy)
    return hf_response_logprobs(model, prompts, responses, temperature, pad_id, with_entropy)


def _token_logprobs(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor, temperature: float,
                    with_entropy: bool):
    """``log softmax(logits / T)`` at ``targets`` (and the distributions' entropies), zero where ``mask`` is 0."""
    logits = logits.float()
    if temperature > 0:
        logits = logits / temperature
    logz = torch.logsumexp(logits, dim=-1)
    logp = logits.gather(-1, targets[..., None]).squeeze(-1) - logz
    logp = logp * mask
    entropy = None
    if with_entropy:  # a diagnostic: never part of a gradient
        with torch.no_grad():
            p = torch.softmax(logits, dim=-1)
            entropy = (logz - (p * logits).sum(-1)) * mask
    return logp, mask, entropy


def hf_response_logprobs(model, prompts, responses, temperature: float, pad_id: int, with_entropy: bool = False):
    """:func:`response_logprobs` by one forward pass over every row's prompt and response (:func:`collate`);
    only the response positions' logits are materialised (``logits_to_keep``)."""
    device = next(model.parameters()).device
    ids, attn, pos, mask = collate(prompts, responses, pad_id, device)
    r = mask.shape[1]
    logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=False,
                   logits_to_keep=r + 1).logits[:, :-1, :]
    return _token_logprobs(logits, ids[:, -r:], mask, temperature, with_entropy)


def shared_prompt_unsupported_reason(model) -> str | None:
    """Why ``"shared-prompt"`` is not used for ``model`` (None when it is): the model under any PEFT wrapper must
    be one :class:`ddrl.accel.fast_sampling.StaticCacheSampler` supports (a Hugging Face Qwen2 or Llama with full
    attention and a position-independent rotary table: the cached prompt's keys are then exactly those of a
    full-sequence pass) and transformers must offer ``DynamicCache.batch_select_indices``."""
    if not hasattr(DynamicCache, "batch_select_indices"):
        return "this transformers' DynamicCache has no batch_select_indices"
    return unsupported_reason(base_model(model))


def logprob_backend(model) -> str:
    """``"hf"`` or ``"shared-prompt"`` for ``model``: the environment variable ``DDRL_LOGPROBS`` (one of
    :data:`ddrl.accel.logprob_backends.LOGPROB_BACKENDS`; default ``auto``) forces one; ``auto`` picks
    ``"shared-prompt"`` where :func:`shared_prompt_unsupported_reason` finds nothing against it and the model is on
    the CPU. On a GPU
    ``auto`` keeps the HF forward: there the shared-prompt pass made the update slower, not faster (H100,
    Qwen2.5-1.5B architecture, one question's 32 rows of 128 + 1024 tokens: 2.59 s vs 1.67 s per update;
    docs/benchmarks.md, GPU section), while on 2 CPU cores it is the faster one. Forcing ``"shared-prompt"``
    on a model it does not support raises."""
    choice = env_choice()
    if choice == "hf":
        return "hf"
    reason = shared_prompt_unsupported_reason(model)
    if choice == "shared-prompt" and reason is not None:
        raise ValueError(f"DDRL_LOGPROBS=shared-prompt, but this model is not supported: {reason}")
    if choice == "auto" and next(model.parameters()).device.type != "cpu":
        return "hf"
    return "shared-prompt" if reason is None else "hf"


def old_logprobs_from_sampler(model, temperature: float, top_p: float) -> bool:
    """Whether the PPO update takes its *old* log-probs (the policy's before this step's update) from the
    sampler's own per-token log-probs instead of a no-grad pass over the rollouts.

    The two are the same quantity, log softmax(logits / T) of the policy that sampled, whenever the sampler
    reports the full distribution (``top_p = 1``; with a nucleus it reports the renormalised one) at a
    temperature > 0; a KV-cached decode and a full forward of a float32 model on the CPU agree to ~1e-6 per
    token (``actor/old_logp_vs_sampler`` logs it), and PPO's ratio is then taken against the behaviour policy
    exactly as it sampled. Only ``DDRL_LOGPROBS=auto`` uses them, and only for a float32 model on the CPU: in
    bfloat16 or on a GPU the sampler's log-probs differ from the update's forward by far more (0.07 max on an
    H100, docs/benchmarks.md), which is why verl recomputes them. ``hf`` and ``shared-prompt`` recompute, so
    the claims study (pinned to ``hf``) computes as registered."""
    if env_choice() != "auto":
        return False
    p = next(model.parameters())
    return p.device.type == "cpu" and p.dtype == torch.float32 and temperature > 0 and top_p >= 1.0


def shared_prompt_response_logprobs(model, prompts, responses, temperature: float, pad_id: int,
                                    with_entropy: bool = False):
    """:func:`response_logprobs` with each distinct prompt run once.

    1. The distinct prompts, left-padded to a common width W, go through the model once with a KV cache;
       their last position's logits predict every row's first response token.
    2. The cache is indexed out to the rows (``DynamicCache.batch_select_indices``: an index, so the
       gradient of each row's attention to its prompt sums back into the prompt's pass).
    3. The right-padded responses go through the model on that cache, with the prompt's padding mask and
       positions that continue the prompt's; their logits predict response tokens 2..R.

    The attention each response token computes is that of :func:`hf_response_logprobs` (same keys, values,
    positions and mask); only which rows share the prompt's linear layers differs.
    """
    device = next(model.parameters()).device
    index: dict[tuple, int] = {}
    rows = torch.tensor([index.setdefault(tuple(p), len(index)) for p in prompts], dtype=torch.long, device=device)
    distinct = list(index)
    w = max(len(p) for p in distinct)
    r = max(len(x) for x in responses)
    b = len(prompts)
    pids = torch.full((len(distinct), w), pad_id, dtype=torch.long)
    pattn = torch.zeros((len(distinct), w), dtype=torch.long)
    for i, p in enumerate(distinct):
        pids[i, w - len(p):] = torch.as_tensor(p, dtype=torch.long)
        pattn[i, w - len(p):] = 1
    rids = torch.full((b, r), pad_id, dtype=torch.long)
    mask = torch.zeros((b, r), dtype=torch.long)
    for i, x in enumerate(responses):
        rids[i, : len(x)] = torch.as_tensor(list(x), dtype=torch.long)
        mask[i, : len(x)] = 1
    pids, pattn, rids, mask = pids.to(device), pattn.to(device), rids.to(device), mask.to(device)
    ppos = (pattn.cumsum(-1) - 1).clamp(min=0)
    try:
        cache = DynamicCache(config=base_model(model).config)
    except TypeError:  # transformers before the config argument
        cache = DynamicCache()
    kw = cache_kwarg(model)
    first = model(input_ids=pids, attention_mask=pattn, position_ids=ppos, use_cache=True, logits_to_keep=1,
                  **{kw: cache}).logits[:, -1:, :]
    if cache.get_seq_length() != w:  # e.g. gradient checkpointing turns the cache off
        raise RuntimeError(f"shared-prompt log-probs: the prompt pass cached {cache.get_seq_length()} of {w} "
                           "positions (gradient checkpointing on?); set DDRL_LOGPROBS=hf")
    cache.batch_select_indices(rows)
    attn = torch.cat([pattn[rows], mask], dim=1)  # as collate's: each row's prompt and response tokens
    pos = pattn.sum(-1)[rows][:, None] + torch.arange(r, device=device)[None, :]
    rest = model(input_ids=rids, attention_mask=attn, position_ids=pos, use_cache=True, logits_to_keep=r,
                 **{kw: cache}).logits[:, :-1, :]
    logits = torch.cat([first[rows], rest], dim=1)
    return _token_logprobs(logits, rids, mask, temperature, with_entropy)
