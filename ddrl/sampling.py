"""Sampling N rollouts per prompt, with the log-probs and entropies that training and analysis need.

One interface, three backends (:func:`make_sampler`):

- :class:`ddrl.fast_sampling.StaticCacheSampler` (default for Qwen2 and Llama models, CPU or GPU): the same
  output as HFSampler from a lean static-KV-cache decode loop; ``make_sampler("auto", ...)`` picks it where
  it supports the model and HFSampler otherwise.
- :class:`HFSampler` (the reference and the fallback, CPU or GPU): any Hugging Face causal LM. Batched,
  left-padded, with a KV cache, chunked so memory stays bounded, driven by an explicit ``torch.Generator``
  so a ``seed`` fixes every draw. Written as a short decoding loop over ``model(...)`` rather than
  ``model.generate`` because we need, per sampled token, its log-prob under the *sampling* distribution (after temperature and top-p)
  and that distribution's entropy (ETMR forks at high-entropy tokens; the trainer logs entropy).
- :class:`VLLMSampler` (GPU, optional extra ``vllm``): the same call on a vLLM engine, with
  ``logprobs_mode="processed_logprobs"`` so the log-probs mean the same thing; weights are pushed to the
  engine after each update with :meth:`VLLMSampler.update_weights`.

All return, for every prompt, ``n`` :class:`Rollout` objects.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Protocol, Sequence

import torch
from ddrl.progress import tqdm

from ddrl.seeds import derive_seed, torch_generator


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


def _eos_ids(model, tokenizer) -> list[int]:
    ids: set[int] = set()
    for src in (getattr(getattr(model, "generation_config", None), "eos_token_id", None), tokenizer.eos_token_id):
        if src is None:
            continue
        ids.update([src] if isinstance(src, int) else list(src))
    if not ids:
        raise ValueError("neither the tokenizer nor the model's generation_config defines an eos_token_id")
    return sorted(ids)


class HFSampler:
    """Batched sampling from a Hugging Face causal LM with a KV cache.

    ``batch_size`` is the number of sequences decoded together; the ``len(prompts) * n`` sequences are cut
    into chunks of that size, so peak memory is bounded by ``batch_size * (prompt + max_new_tokens)``
    cached positions. Results are a deterministic function of ``(seed, batch_size)`` and the weights.
    """

    def __init__(self, model, tokenizer, batch_size: int = 256, device: str | torch.device | None = None):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        self.eos_ids = _eos_ids(model, tokenizer)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_ids[0]

    def update_weights(self, model) -> None:
        """The HF backend samples from the training model itself; nothing to copy."""
        self.model = model

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

    def sample_ids(
        self,
        prompt_ids: Sequence[Sequence[int]],
        n: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int | Sequence[int] = 256,
        seed: int = 0,
        progress: bool = False,
    ) -> list[list[Rollout]]:
        """Like :meth:`sample`, from token ids (used to continue partial responses, e.g. ETMR's forks).

        ``max_new_tokens`` may be one limit per prompt (a continuation gets what its prefix left over).
        """
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        limits = [max_new_tokens] * len(prompt_ids) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        if len(limits) != len(prompt_ids) or min(limits, default=1) < 1:
            raise ValueError(f"max_new_tokens must be >= 1 (one int, or one per prompt), got {max_new_tokens}")
        for i, ids in enumerate(prompt_ids):
            if len(ids) == 0:
                raise ValueError(f"prompt {i} is empty after tokenization")
        jobs = [(i, j) for i in range(len(prompt_ids)) for j in range(n)]
        out: list[list[Rollout | None]] = [[None] * n for _ in prompt_ids]
        chunks = range(0, len(jobs), self.batch_size)
        was_training = self.model.training
        self.model.eval()
        try:
            for c, start in enumerate(tqdm(chunks, desc="sampling", unit="batch", disable=not progress)):
                chunk = jobs[start : start + self.batch_size]
                g = torch_generator(seed, "hf-sample", c, device=str(self.device))
                rows = self._decode([prompt_ids[i] for i, _ in chunk], temperature, top_p,
                                    [limits[i] for i, _ in chunk], g)
                for (i, j), (toks, lps, ents, finish) in zip(chunk, rows):
                    text = self.tokenizer.decode(toks, skip_special_tokens=True)
                    out[i][j] = Rollout(i, toks, text, lps, finish, ents)
        finally:
            self.model.train(was_training)
        return out  # type: ignore[return-value]

    @torch.inference_mode()
    def _decode(self, batch_ids, temperature, top_p, limits, generator):
        dev = self.device
        bsz, width = len(batch_ids), max(len(ids) for ids in batch_ids)
        input_ids = torch.full((bsz, width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((bsz, width), dtype=torch.long)
        for b, ids in enumerate(batch_ids):  # left padding: the newest token of every row is in the last column
            input_ids[b, width - len(ids) :] = torch.as_tensor(ids, dtype=torch.long)
            attn[b, width - len(ids) :] = 1
        input_ids, attn = input_ids.to(dev), attn.to(dev)
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        eos = torch.as_tensor(self.eos_ids, device=dev)

        out = self.model(input_ids=input_ids, attention_mask=attn, position_ids=pos, use_cache=True, logits_to_keep=1)
        past, logits, next_pos = out.past_key_values, out.logits[:, -1, :], pos[:, -1] + 1
        finished = torch.zeros(bsz, dtype=torch.bool, device=dev)
        limit = torch.as_tensor(limits, device=dev)
        toks, lps, ents = [], [], []
        for t in range(max(limits)):
            logp = sampling_logprobs(logits, temperature, top_p)
            if temperature == 0:
                tok = logp.argmax(dim=-1)
            else:
                tok = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(1)
            lps.append(logp.gather(1, tok[:, None]).squeeze(1))
            ents.append(entropy_from_logprobs(logp))
            tok = torch.where(finished, torch.full_like(tok, self.pad_id), tok)
            toks.append(tok)
            finished |= torch.isin(tok, eos) | (limit <= t + 1)
            if bool(finished.all()):
                break
            attn = torch.cat([attn, torch.ones((bsz, 1), dtype=attn.dtype, device=dev)], dim=1)
            out = self.model(
                input_ids=tok[:, None], attention_mask=attn, position_ids=next_pos[:, None],
                past_key_values=past, use_cache=True,
            )
            past, logits, next_pos = out.past_key_values, out.logits[:, -1, :], next_pos + 1

        tok_m = torch.stack(toks, 1).cpu()
        lp_m = torch.stack(lps, 1).cpu().tolist()
        ent_m = torch.stack(ents, 1).cpu().tolist()
        is_eos = torch.isin(tok_m, eos.cpu())
        rows = []
        for b in range(bsz):
            hits = is_eos[b, : limits[b]].nonzero()
            length = int(hits[0]) + 1 if len(hits) else min(limits[b], tok_m.shape[1])
            finish = "stop" if len(hits) else "length"
            rows.append((tok_m[b, :length].tolist(), lp_m[b][:length], ent_m[b][:length], finish))
        return rows


# ---------------------------------------------------------------------------------------------------------
# vLLM backend (GPU only; optional extra)
# ---------------------------------------------------------------------------------------------------------


def _vllm_load_weights(worker, weights) -> None:  # runs inside each vLLM worker via collective_rpc
    worker.model_runner.model.load_weights(weights=weights)


class VLLMSampler:
    """The same interface on a vLLM engine (paper scale, GPUs).

    The engine is created with ``logprobs_mode="processed_logprobs"`` (vLLM >= 0.10.2), so each returned
    log-prob is that of the sampled token after temperature and top-p, as in :class:`HFSampler`.
    vLLM does not expose the full next-token distribution: with ``entropy_topk=k`` it returns the top-k
    log-probs per position and ``Rollout.entropies`` holds the entropy of that renormalised top-k
    distribution (a lower-bound estimate, good enough to rank ETMR's fork points); with the default
    ``entropy_topk=None`` entropies are None. Weight updates go through ``LLM.collective_rpc``; with vLLM's
    multiprocess engine the tensors are serialised, which requires ``VLLM_ALLOW_INSECURE_SERIALIZATION=1``.
    """

    def __init__(self, model_name_or_path, tokenizer=None, *, dtype: str = "bfloat16",
                 gpu_memory_utilization: float = 0.5, seed: int = 0, entropy_topk: int | None = None,
                 **engine_kwargs):
        try:
            from vllm import LLM
        except ImportError as e:  # exercised only where vllm is absent
            raise ImportError(
                "the 'vllm' sampling backend needs the optional extra: pip install 'ddrl-companion[vllm]' "
                "(GPU machines only: vLLM pins its own CUDA torch)"
            ) from e
        self.llm = LLM(
            model=str(model_name_or_path), dtype=dtype, gpu_memory_utilization=gpu_memory_utilization,
            seed=seed, logprobs_mode="processed_logprobs", **engine_kwargs,
        )
        self.tokenizer = tokenizer if tokenizer is not None else self.llm.get_tokenizer()
        self.entropy_topk = entropy_topk

    def update_weights(self, model) -> None:
        weights = [(name, t.detach()) for name, t in model.state_dict().items()]
        self.llm.collective_rpc(_vllm_load_weights, args=(weights,))
        self.llm.reset_prefix_cache()

    def encode(self, prompts: Sequence[str]) -> list[list[int]]:
        return [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]

    def sample(self, prompts, n, temperature=1.0, top_p=1.0, max_new_tokens=256, seed=0, progress=False):
        return self.sample_ids(self.encode(prompts), n, temperature, top_p, max_new_tokens, seed, progress)

    def sample_ids(self, prompt_ids, n, temperature=1.0, top_p=1.0, max_new_tokens=256, seed=0, progress=False):
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        limits = [max_new_tokens] * len(prompt_ids) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        params = [SamplingParams(n=n, temperature=temperature, top_p=top_p, max_tokens=lim,
                                 seed=derive_seed(seed, "vllm", i), logprobs=self.entropy_topk or 0)
                  for i, lim in enumerate(limits)]
        results = self.llm.generate([TokensPrompt(prompt_token_ids=list(ids)) for ids in prompt_ids], params,
                                    use_tqdm=progress)
        out = []
        for i, res in enumerate(results):
            rollouts = []
            for comp in res.outputs:
                ids = list(comp.token_ids)
                steps = comp.logprobs or []
                lps = [step[tok].logprob for step, tok in zip(steps, ids)]
                ents = None
                if self.entropy_topk:
                    ents = [float(entropy_from_logprobs(torch.tensor([x.logprob for x in step.values()]).log_softmax(0)))
                            for step in steps]
                finish = "stop" if comp.finish_reason == "stop" else "length"
                rollouts.append(Rollout(i, ids, comp.text, lps, finish, ents))
            out.append(rollouts)
        return out


# ---------------------------------------------------------------------------------------------------------
# ETMR: entropy-fork tree majority rollouts (Liu et al. 2025, "ETTRL", arXiv:2508.11356)
# ---------------------------------------------------------------------------------------------------------


@dataclass
class TreeRollouts:
    """The leaves of one entropy-fork tree per prompt, and what they cost.

    ``leaves[i]`` lists prompt i's complete responses: the ``m`` root responses first, then the fork
    continuations (each stored whole: the root's prefix followed by its new tokens). ``generated_tokens[i]``
    counts only tokens actually decoded (a shared prefix is decoded once), the cost to compare with
    ``n`` independent samples. ``parent[i][j]`` is the root index leaf j forked from (None for a root) and
    ``fork_position[i][j]`` the response position where its new tokens start.
    """

    leaves: list[list[Rollout]]
    generated_tokens: list[int]
    parent: list[list[int | None]]
    fork_position: list[list[int | None]]


def fork_points(entropies: Sequence[float], forks: int, exclude_final: bool = True) -> list[int]:
    """ETMR's fork points: the ``forks`` positions with the highest next-token entropy, in ascending order.

    Position t means "re-sample token t from the prefix before it". Ties go to the earlier position.
    ``exclude_final`` leaves out the last token (the end-of-sequence token of a finished response, where a
    fork would only re-decide whether to stop). Returns fewer points when the response is shorter.
    """
    if forks < 0:
        raise ValueError(f"forks must be >= 0, got {forks}")
    cands = range(len(entropies) - 1 if exclude_final else len(entropies))
    ranked = sorted(cands, key=lambda t: (-entropies[t], t))
    return sorted(ranked[:forks])


def tree_sample(
    sampler,
    prompts: Sequence[str],
    m: int = 12,
    forks: int = 2,
    branches: int = 2,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 256,
    seed: int = 0,
    progress: bool = False,
) -> TreeRollouts:
    """Entropy-fork tree rollouts: ``m`` root responses per prompt; at each root's top-``forks``
    highest-entropy positions, ``branches`` new continuations are sampled from the prefix before the fork
    to the end. Leaves per tree: ``m * (1 + branches * forks)`` (60 for the reported M=12, F=2, B=2).

    Choices where the ETTRL paper is silent (parameters or documented here): forks are taken on the root
    responses only (no recursive forking); the fork token itself is re-sampled; a finished root's final
    end-of-sequence token is never a fork point; a continuation may use the tokens its prefix left of
    ``max_new_tokens``. All leaves vote; training then takes K of them as TTRL does.
    """
    if m < 1 or branches < 0:
        raise ValueError(f"m must be >= 1 and branches >= 0, got m={m}, branches={branches}")
    prompt_ids = sampler.encode(prompts)
    roots = sampler.sample_ids(prompt_ids, m, temperature, top_p, max_new_tokens,
                               seed=derive_seed(seed, "etmr-root"), progress=progress)
    jobs = []  # (prompt, root, position)
    for i, rs in enumerate(roots):
        for j, r in enumerate(rs):
            if r.entropies is None:
                raise ValueError("ETMR needs per-token entropies; this sampling backend does not report them")
            jobs += [(i, j, t) for t in fork_points(r.entropies, forks, exclude_final=r.finish_reason == "stop")]
    leaves = [list(rs) for rs in roots]
    parent: list[list[int | None]] = [[None] * m for _ in roots]
    position: list[list[int | None]] = [[None] * m for _ in roots]
    generated = [sum(r.num_tokens for r in rs) for rs in roots]
    if jobs and branches:
        conts = sampler.sample_ids(
            [prompt_ids[i] + roots[i][j].token_ids[:t] for i, j, t in jobs], branches, temperature, top_p,
            [max_new_tokens - t for _, _, t in jobs], seed=derive_seed(seed, "etmr-fork"), progress=progress,
        )
        for (i, j, t), cs in zip(jobs, conts):
            root = roots[i][j]
            for c in cs:
                ids = root.token_ids[:t] + c.token_ids
                ents = None if root.entropies is None or c.entropies is None else root.entropies[:t] + c.entropies
                leaves[i].append(Rollout(i, ids, sampler.tokenizer.decode(ids, skip_special_tokens=True),
                                         root.logprobs[:t] + c.logprobs, c.finish_reason, ents))
                parent[i].append(j)
                position[i].append(t)
                generated[i] += c.num_tokens
    return TreeRollouts(leaves, generated, parent, position)


BACKENDS = ("auto", "hf", "fast", "vllm")


def make_sampler(backend: str, model, tokenizer, **kwargs) -> Sampler:
    """``"hf"``: ``HFSampler(model, tokenizer, **kwargs)``; ``"fast"``: :class:`ddrl.fast_sampling.StaticCacheSampler`
    (Qwen2/Llama only, same output); ``"auto"``: ``"fast"`` where it supports the model, else ``"hf"``, unless the
    environment variable ``DDRL_SAMPLER`` (``hf`` or ``fast``) forces one (to compare them without code changes);
    ``"vllm"``: ``VLLMSampler(model, tokenizer, **kwargs)`` where ``model`` is then a hub id or a local directory."""
    if backend == "auto":
        backend = os.environ.get("DDRL_SAMPLER") or "auto"
        if backend not in ("auto", "hf", "fast"):
            raise ValueError(f"DDRL_SAMPLER must be 'auto', 'hf' or 'fast', got {backend!r}")
        if backend == "auto":
            from ddrl.fast_sampling import unsupported_reason

            backend = "fast" if unsupported_reason(model) is None else "hf"
    if backend == "hf":
        return HFSampler(model, tokenizer, **kwargs)
    if backend == "fast":
        from ddrl.fast_sampling import StaticCacheSampler

        return StaticCacheSampler(model, tokenizer, **kwargs)
    if backend == "vllm":
        return VLLMSampler(model, tokenizer, **kwargs)
    raise ValueError(f"sampling backend must be one of {BACKENDS}, got {backend!r}")


def sequence_logprob(rollout: Rollout) -> float:
    """Sum of the rollout's token log-probs (its log-likelihood under the sampling distribution)."""
    return float(math.fsum(rollout.logprobs))
