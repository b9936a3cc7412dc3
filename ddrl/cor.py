"""COR, consensus-based off-policy refinement (DDRL): after RL, fine-tune on the model's own consensus.

Paper: Sec. 3.3 and Algorithm 1's second phase (sample M, consensus label y*(q), keep y_j = y*(q), fine-tune).

For every question: sample M responses at the evaluation settings (T = 0.6, top-p 0.95), majority-vote,
and keep up to ``keep`` rollouts whose answer agrees with the majority label (fewer if fewer agree, none
when no rollout has an answer). Then supervised fine-tuning on the kept (question, response) pairs for
E epochs at a small constant learning rate, with the negative log-likelihood of the response tokens only.
No ground truth: records are used through their ``prompt`` alone.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np
import torch

from ddrl.answers import extract_boxed
from ddrl.config import TrainConfig, resolve_cue
from ddrl.logprobs import response_logprobs
from ddrl.losses import sft_nll
from ddrl.infra.progress import tqdm
from ddrl.prompts import format_prompt
from ddrl.sampling import make_sampler
from ddrl.seeds import derive_seed, numpy_generator
from ddrl.voting import majority_vote, pseudo_rewards


@dataclass
class CORResult:
    """What COR did: per question, the vote's label and how many rollouts were kept; SFT losses per epoch."""

    labels: list[str | None]
    label_counts: list[int]
    kept: list[int]
    epoch_losses: list[float] = field(default_factory=list)
    sample_seconds: float = 0.0
    sft_seconds: float = 0.0

    def summary(self) -> dict:
        d = asdict(self)
        d.update({"num_kept": int(sum(self.kept)), "questions_with_label": int(sum(l is not None for l in self.labels)),
                  "mean_kept": float(np.mean(self.kept)) if self.kept else 0.0})
        return d


def consensus_indices(texts: Sequence[str], keep: int) -> tuple[list[int], str | None, int]:
    """COR's selection for one question (Algorithm 1, "add (q, y_j) if y_j = y*(q)", capped at ``keep``): the
    indices of the first ``keep`` of ``texts`` (in sampling order, i.e. at random) whose boxed answer agrees
    with the majority vote over all of them, the label and its count. None kept when no text has an answer."""
    if keep < 1:
        raise ValueError(f"consensus_indices: keep must be >= 1, got {keep}")
    vote = majority_vote([extract_boxed(t) for t in texts])
    return [i for i, r in enumerate(pseudo_rewards(vote)) if r > 0][:keep], vote.label, vote.label_count


def consensus_examples(rollouts, keep: int) -> tuple[list[tuple[int, list[int]]], list[str | None], list[int], list[int]]:
    """Select COR's training examples from ``rollouts`` (a list per question of :class:`ddrl.sampling.Rollout`)
    with :func:`consensus_indices`. Returns ``(examples, labels, label_counts, kept)`` where ``examples`` holds
    ``(question_index, response_token_ids)``.
    """
    if keep < 1:
        raise ValueError(f"consensus_examples: keep must be >= 1, got {keep}")
    examples, labels, counts, kept = [], [], [], []
    for q, rs in enumerate(rollouts):
        agree, label, count = consensus_indices([r.text for r in rs], keep)
        examples.extend((q, list(rs[i].token_ids)) for i in agree)
        labels.append(label), counts.append(count), kept.append(len(agree))
    return examples, labels, counts, kept


def consensus_refinement(model, tokenizer, records: Sequence[dict], m: int = 128, keep: int = 4, epochs: int = 5,
                         lr: float = 1e-5, temperature: float = 0.6, top_p: float = 0.95, max_new_tokens: int = 3072,
                         seed: int = 0, cue: str = "system", batch_size: int = 16, sample_batch_size: int = 256,
                         weight_decay: float = 0.0, grad_clip: float = 1.0, sampler=None,
                         progress: bool = False) -> CORResult:
    """COR on ``model`` in place (only its trainable parameters change: the LoRA adapter with peft).

    Sampling: ``m`` per question at ``temperature`` / ``top_p``; selection: :func:`consensus_examples`;
    SFT: ``epochs`` passes, shuffled per epoch from ``seed``, mini-batches of ``batch_size`` sequences, AdamW
    at constant ``lr``, gradient clipping ``grad_clip``, loss :func:`ddrl.losses.sft_nll` (token-mean NLL of
    response tokens; prompt tokens are context only).
    """
    for i, r in enumerate(records):
        if "prompt" not in r:
            raise ValueError(f"consensus_refinement: record {i} has no 'prompt' field")
    t0 = time.perf_counter()
    sampler = sampler or make_sampler("auto", model, tokenizer, batch_size=sample_batch_size)
    prompts = [format_prompt(tokenizer, r["prompt"], cue) for r in records]
    prompt_ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    rollouts = sampler.sample(prompts, n=m, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                              seed=seed, progress=progress)
    examples, labels, counts, kept = consensus_examples(rollouts, keep)
    result = CORResult(labels, counts, kept, sample_seconds=time.perf_counter() - t0)

    t1 = time.perf_counter()
    if examples:
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
        was_training = model.training
        model.train()
        for epoch in tqdm(range(epochs), desc="COR SFT", unit="epoch", disable=not progress):
            order = numpy_generator(seed, "cor-sft", epoch).permutation(len(examples))
            losses, weights = [], []
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                p = [prompt_ids[examples[i][0]] for i in idx]
                r = [examples[i][1] for i in idx]
                logp, mask, _ = response_logprobs(model, p, r, 1.0, pad_id)
                loss = sft_nll(logp, mask)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, grad_clip)
                opt.step()
                losses.append(loss.item()), weights.append(float(mask.sum()))
            result.epoch_losses.append(float(np.average(losses, weights=weights)))
        model.train(was_training)
    result.sft_seconds = time.perf_counter() - t1
    return result


def refine_with_config(model, tokenizer, questions: Sequence[dict], cfg: TrainConfig, keep: int | None = None,
                       progress: bool = False) -> CORResult:
    """:func:`consensus_refinement` with a run's settings, as the trainer calls it after RL (Algorithm 1's
    last stage): M = ``cfg.cor_m`` samples at the evaluation settings, ``keep`` (default ``cfg.cor_keep``)
    agreeing rollouts per question, ``cfg.cor_epochs`` epochs at ``cfg.cor_lr``, the seed derived from
    ``cfg.seed`` and "cor", the run's cue, batch sizes, weight decay and gradient clipping. ``questions``
    carry no ground truth (:func:`ddrl.train.strip_truth`)."""
    return consensus_refinement(
        model, tokenizer, questions, m=cfg.cor_m, keep=cfg.cor_keep if keep is None else keep, epochs=cfg.cor_epochs,
        lr=cfg.cor_lr, temperature=cfg.eval_temperature, top_p=cfg.eval_top_p, max_new_tokens=cfg.max_new_tokens,
        seed=derive_seed(cfg.seed, "cor"), cue=resolve_cue(cfg.cue, cfg.model), batch_size=cfg.cor_batch_size,
        sample_batch_size=cfg.sample_batch_size, weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip,
        progress=progress)
