"""Sampling N rollouts per prompt, with the log-probs and entropies that training and analysis need.

Paper: Algorithm 1, line "Sample N rollouts y_i ~ pi_theta(. | q)" (N = 64 for the vote, Sec. 2.1).

One interface, three backends (:func:`make_sampler`):

- :class:`ddrl.accel.fast_sampling.StaticCacheSampler` (default for Qwen2 and Llama models on the CPU; runs on a GPU
  too): the same output as HFSampler from a lean static-KV-cache decode loop; ``make_sampler("auto", ...)``
  picks it where it supports the model and samples on the CPU, HFSampler otherwise.
- :class:`HFSampler` (the reference and the fallback, CPU or GPU): any Hugging Face causal LM. Batched,
  left-padded, with a KV cache, chunked so memory stays bounded, driven by an explicit ``torch.Generator``
  so a ``seed`` fixes every draw. Written as a short decoding loop over ``model(...)`` rather than
  ``model.generate`` because we need, per sampled token, its log-prob under the *sampling* distribution (after temperature and top-p)
  and that distribution's entropy (ETMR forks at high-entropy tokens; the trainer logs entropy).
- :class:`VLLMSampler` (GPU, optional extra ``vllm``): the same call on a vLLM engine, with
  ``logprobs_mode="processed_logprobs"`` so the log-probs mean the same thing; weights are pushed to the
  engine after each update with :meth:`VLLMSampler.update_weights`.

All return, for every prompt, ``n`` :class:`~ddrl.rollouts.Rollout` objects.
"""

from __future__ import annotations

import os
from typing import Sequence

import torch

from ddrl.accel.fast_sampling import StaticCacheSampler, unsupported_reason
from ddrl.accel.hf_compat import cache_kwarg, output_cache
from ddrl.infra.progress import tqdm
from ddrl.rollouts import (LocalSampler, Rollout, Sampler, entropy_from_logprobs, request_limits,  # noqa: F401
                           sampler_device, sampling_logprobs, sequence_logprob)  # Rollout, Sampler, sequence_logprob: re-exported (their old home)
from ddrl.seeds import derive_seed, torch_generator


class HFSampler(LocalSampler):
    """Batched sampling from a Hugging Face causal LM with a KV cache.

    ``batch_size`` is the number of sequences decoded together; the ``len(prompts) * n`` sequences are cut
    into chunks of that size, so peak memory is bounded by ``batch_size * (prompt + max_new_tokens)``
    cached positions. Results are a deterministic function of ``(seed, batch_size)`` and the weights.
    """

    def update_weights(self, model) -> None:
        """The HF backend samples from the training model itself; nothing to copy."""
        self.model = model

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
        limits = request_limits(prompt_ids, n, max_new_tokens)
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
        kw = cache_kwarg(self.model)  # `cache` in transformers 5.x, `past_key_values` before

        out = self.model(input_ids=input_ids, attention_mask=attn, position_ids=pos, use_cache=True, logits_to_keep=1)
        past, logits, next_pos = output_cache(out), out.logits[:, -1, :], pos[:, -1] + 1
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
                use_cache=True, **{kw: past},
            )
            past, logits, next_pos = output_cache(out), out.logits[:, -1, :], next_pos + 1

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


BACKENDS = ("auto", "hf", "fast", "vllm")


def make_sampler(backend: str, model, tokenizer, **kwargs) -> Sampler:
    """``"hf"``: ``HFSampler(model, tokenizer, **kwargs)``; ``"fast"``: :class:`ddrl.accel.fast_sampling.StaticCacheSampler`
    (Qwen2/Llama only, same output); ``"auto"``: ``"fast"`` where it supports the model and samples on the CPU,
    else ``"hf"``, unless the environment variable ``DDRL_SAMPLER`` (``hf`` or ``fast``) forces one (to compare
    them without code changes); ``"vllm"``: ``VLLMSampler(model, tokenizer, **kwargs)`` where ``model`` is then a
    hub id or a local directory.

    Why the CPU only: on an H100 (docs/benchmarks.md, GPU section) the static-cache decode launches more kernels
    per step than HF's forward (about 1,500 vs 1,200 on the Qwen2.5-1.5B architecture) and decodes at 0.75x
    (64 rows) and 0.93x (512 rows) of HFSampler's tokens/s there; only the 446k-parameter testbed gains
    (1.2x), which ``DDRL_SAMPLER=fast`` still gives."""
    if backend == "auto":
        backend = os.environ.get("DDRL_SAMPLER") or "auto"
        if backend not in ("auto", "hf", "fast"):
            raise ValueError(f"DDRL_SAMPLER must be 'auto', 'hf' or 'fast', got {backend!r}")
        if backend == "auto":
            on_cpu = sampler_device(model, kwargs.get("device")).type == "cpu"
            backend = "fast" if unsupported_reason(model) is None and on_cpu else "hf"
    if backend == "hf":
        return HFSampler(model, tokenizer, **kwargs)
    if backend == "fast":
        return StaticCacheSampler(model, tokenizer, **kwargs)
    if backend == "vllm":
        return VLLMSampler(model, tokenizer, **kwargs)
    raise ValueError(f"sampling backend must be one of {BACKENDS}, got {backend!r}")
