"""Per-token log-probabilities of responses under a causal LM: the one forward pass that PPO (:mod:`ddrl.train`,
the ratio and KL of Eq. 1) and COR's SFT loss (:mod:`ddrl.cor`) share."""

from __future__ import annotations

from typing import Sequence

import torch


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

    Returns ``(logp, mask, entropy)``, each (B, R); ``entropy`` is None unless ``with_entropy``. Only the
    response positions' logits are materialised (``logits_to_keep``).
    """
    device = next(model.parameters()).device
    ids, attn, pos, mask = collate(prompts, responses, pad_id, device)
    r = mask.shape[1]
    logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=False,
                   logits_to_keep=r + 1).logits[:, :-1, :].float()
    if temperature > 0:
        logits = logits / temperature
    logz = torch.logsumexp(logits, dim=-1)
    targets = ids[:, -r:]
    logp = logits.gather(-1, targets[..., None]).squeeze(-1) - logz
    logp = logp * mask
    entropy = None
    if with_entropy:  # a diagnostic: never part of a gradient
        with torch.no_grad():
            p = torch.softmax(logits, dim=-1)
            entropy = (logz - (p * logits).sum(-1)) * mask
    return logp, mask, entropy
