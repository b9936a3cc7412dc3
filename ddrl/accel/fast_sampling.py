"""A faster sampler for decoder-only Qwen2 and Llama models: a lean static-KV-cache decode loop.

:class:`StaticCacheSampler` has :class:`ddrl.sampling.HFSampler`'s interface and output (the same
:class:`~ddrl.sampling.Rollout` objects: per-token processed log-probs after temperature and top-p, and that
distribution's entropy) but runs its own forward pass instead of Hugging Face's ``model(...)``:

- weights read from the HF modules once per :meth:`~StaticCacheSampler.sample_ids` call (the trainer
  updates them between steps), with the q/k/v and gate/up projections concatenated into one matmul each;
- rotary cos/sin tables computed once from the model's own ``inv_freq`` and indexed by position;
- one preallocated K/V cache per chunk (no growing-cache copies), attention by
  ``torch.nn.functional.scaled_dot_product_attention``;
- finished rows leave the batch: when at least ``compact_fraction`` of the rows still decoded have finished,
  the batch and its cache are compacted in place;
- the same random draws as HFSampler: ``torch.multinomial(p, 1)`` on the CPU is ``argmax(p / q)`` with
  ``q ~ Exp(1)`` drawn for every row of the chunk; this sampler draws ``q`` for all rows of the chunk (finished
  or not, as HFSampler does) from the same per-chunk generator, and picks its active rows. Tokens therefore
  equal HFSampler's wherever both compute the same probabilities; they differ only where float rounding of the
  two forward passes (fused matmuls, SDPA vs HF's attention) flips a draw (rare, and only at near-ties).

Which models it runs is decided by :func:`unsupported_reason`; ``make_sampler("auto", ...)`` in
:mod:`ddrl.sampling` falls back to HFSampler for everything else.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from ddrl.accel.native_attention import library, use_native
from ddrl.infra.progress import tqdm
from ddrl.rollouts import LocalSampler, Rollout, entropy_from_logprobs, request_limits, sampling_logprobs
from ddrl.seeds import torch_generator

SUPPORTED_MODEL_TYPES = ("qwen2", "llama")
#: rotary types whose cos/sin depend on the position only (not on the sequence length), so a table built from
#: the model's ``inv_freq`` and ``attention_scaling`` is exact
STATIC_ROPE_TYPES = ("default", "linear", "llama3", "yarn")


def unsupported_reason(model) -> str | None:
    """Why :class:`StaticCacheSampler` cannot run ``model`` (None when it can): the architecture must be a
    Hugging Face Qwen2 or Llama causal LM with full attention in every layer (no sliding window), SiLU MLPs,
    a rotary type in :data:`STATIC_ROPE_TYPES` and floating-point weights."""
    cfg = getattr(model, "config", None)
    mtype = getattr(cfg, "model_type", None)
    if mtype not in SUPPORTED_MODEL_TYPES:
        return f"model_type {mtype!r} is not one of {SUPPORTED_MODEL_TYPES}"
    layer_types = getattr(cfg, "layer_types", None) or []
    if getattr(cfg, "use_sliding_window", False) or any(t != "full_attention" for t in layer_types):
        return "sliding-window attention is not implemented"
    if getattr(cfg, "hidden_act", None) != "silu":
        return f"hidden_act {getattr(cfg, 'hidden_act', None)!r} is not 'silu'"
    if getattr(cfg, "pretraining_tp", 1) not in (None, 1):
        return "pretraining_tp > 1 is not implemented"
    rope = getattr(cfg, "rope_parameters", None) or {}
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type not in STATIC_ROPE_TYPES:
        return f"rope_type {rope_type!r} is not one of {STATIC_ROPE_TYPES}"
    body = getattr(model, "model", None)
    if body is None or not hasattr(body, "layers") or not hasattr(body, "rotary_emb") or not hasattr(model, "lm_head"):
        return "the model does not have the Hugging Face layout (model.layers, model.rotary_emb, lm_head)"
    if any(not p.is_floating_point() for p in model.parameters()):
        return "non-floating-point (quantised) weights are not supported"
    return None


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm as Hugging Face's Qwen2/Llama compute it (in float32, weight applied in the input dtype); for
    float32 inputs the same formula as one fused op."""
    if x.dtype == torch.float32 and weight.dtype == torch.float32:
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    dtype = x.dtype
    x = x.float()
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x.to(dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin_signed: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding, HF's ``x * cos + rotate_half(x) * sin`` with ``rotate_half(x) * sin`` written
    as ``roll(x, half) * sin_signed`` (``sin_signed`` = sin with its first half negated: the same products)."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * sin_signed


def _bias(linears) -> torch.Tensor | None:
    """The concatenated biases of ``linears`` (zeros for any without one), or None when none has a bias."""
    if all(m.bias is None for m in linears):
        return None
    return torch.cat([m.bias if m.bias is not None else m.weight.new_zeros(m.weight.shape[0]) for m in linears])


class _Weights:
    """Detached copies of one weight version, with q/k/v and gate/up fused (built once per ``sample`` call)."""

    @torch.no_grad()
    def __init__(self, model):
        cfg = model.config
        body = model.model
        self.n_heads = cfg.num_attention_heads
        self.n_kv = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.embed = body.embed_tokens.weight.detach()
        self.layers = []
        for layer in body.layers:
            at, mlp = layer.self_attn, layer.mlp
            qkv = (at.q_proj, at.k_proj, at.v_proj)
            self.layers.append({
                "ln1": layer.input_layernorm.weight.detach(), "eps1": layer.input_layernorm.variance_epsilon,
                "w_qkv": torch.cat([m.weight for m in qkv]).detach(), "b_qkv": _bias(qkv),
                "w_o": at.o_proj.weight.detach(), "b_o": None if at.o_proj.bias is None else at.o_proj.bias.detach(),
                "ln2": layer.post_attention_layernorm.weight.detach(),
                "eps2": layer.post_attention_layernorm.variance_epsilon,
                "w_gu": torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]).detach(),
                "b_gu": _bias((mlp.gate_proj, mlp.up_proj)),
                "w_d": mlp.down_proj.weight.detach(),
                "b_d": None if mlp.down_proj.bias is None else mlp.down_proj.bias.detach(),
            })
        self.norm, self.norm_eps = body.norm.weight.detach(), body.norm.variance_epsilon
        self.head = model.lm_head.weight.detach()
        self.head_bias = None if model.lm_head.bias is None else model.lm_head.bias.detach()
        rot = body.rotary_emb
        self.inv_freq = rot.inv_freq.detach().float()
        self.rope_scale = float(getattr(rot, "attention_scaling", 1.0))
        self.dtype = self.embed.dtype


class _SharedPromptAttention:
    """One decode step's attention over [the row's prompt, its response so far], with the prompt's K/V stored
    once per distinct prompt (cascade attention).

    The prompt part is a real matmul per distinct prompt: the queries of its rows are scattered into a grid
    ``[prompts, slots]`` (``group`` = each row's prompt, ``slot`` = its rank among that prompt's rows). The
    response part is a per-row matmul over ``resp_cache[:, :, :t + 1]``. One softmax over both parts' scores
    (so the result is HF's attention up to float rounding), left padding masked by ``prompt_bias``.
    """

    @staticmethod
    def response_cache(shape, dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
        """Empty K and V buffers for the rows' responses, each ``shape`` = ``[rows, kv heads, steps, head_dim]``."""
        return torch.empty(shape, dtype=dtype, device=device), torch.empty(shape, dtype=dtype, device=device)

    @staticmethod
    def compact(cache, holes: torch.Tensor, movers: torch.Tensor, t: int) -> None:
        """Copy the first ``t`` positions of rows ``movers`` into rows ``holes`` of one layer's ``(K, V)``."""
        for x in cache:
            x[holes, :, :t] = x[movers, :, :t]

    def __init__(self, prompt_cache, prompt_bias, group):
        self.prompt_cache, self.group = prompt_cache, group
        order = torch.argsort(group, stable=True)
        counts = torch.bincount(group, minlength=prompt_bias.shape[0])
        starts = counts.cumsum(0) - counts
        slot = torch.empty_like(group)
        slot[order] = torch.arange(len(group), device=group.device) - starts[group[order]]
        self.slot, self.n_slots = slot, int(counts.max())
        self.bias = prompt_bias[group][:, None, None, :]  # [B, 1, 1, W]
        self.resp_cache, self.t = None, 0

    def __call__(self, layer: int, q, k, v):
        rk, rv = self.resp_cache[layer]
        pk, pv = self.prompt_cache[layer]
        t = self.t
        rk[:, :, t] = k[:, :, 0]
        rv[:, :, t] = v[:, :, 0]
        bsz, n_heads, _, hd = q.shape
        n_u, n_kv, width, _ = pk.shape
        rep, n_s = n_heads // n_kv, self.n_slots
        qh = q.reshape(bsz, n_kv, rep, hd) * hd**-0.5
        grid = qh.new_zeros((n_u, n_s, n_kv, rep, hd))
        grid[self.group, self.slot] = qh
        sp = grid.permute(0, 2, 1, 3, 4).reshape(n_u, n_kv, n_s * rep, hd) @ pk.transpose(-1, -2)
        sp = sp.view(n_u, n_kv, n_s, rep, width).permute(0, 2, 1, 3, 4)[self.group, self.slot]  # [B, kv, rep, W]
        sr = qh @ rk[:, :, : t + 1].transpose(-1, -2)  # [B, kv, rep, t + 1]
        p = torch.cat((sp + self.bias, sr), dim=-1).softmax(dim=-1, dtype=torch.float32).to(q.dtype)
        pp, pr = p.split((width, t + 1), dim=-1)
        grid = pp.new_zeros((n_u, n_s, n_kv, rep, width))
        grid[self.group, self.slot] = pp
        op = grid.permute(0, 2, 1, 3, 4).reshape(n_u, n_kv, n_s * rep, width) @ pv
        op = op.view(n_u, n_kv, n_s, rep, hd).permute(0, 2, 1, 3, 4)[self.group, self.slot]  # [B, kv, rep, D]
        return (op + pr @ rv[:, :, : t + 1]).reshape(bsz, n_heads, 1, hd)


class _NativeAttention(_SharedPromptAttention):
    """:class:`_SharedPromptAttention`'s attention computed by the C loop of :mod:`ddrl.accel.native_attention` (float32,
    CPU): each row's response keys are kept transposed (``[rows, kv heads, head_dim, steps]``, positions
    contiguous), the prompts' keys transposed once per chunk and compaction, and the loop writes the step's key and
    value into the row's cache before attending, as the torch class does."""

    @staticmethod
    def response_cache(shape, dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
        rows, n_kv, steps, head_dim = shape
        return (torch.empty((rows, n_kv, head_dim, steps), dtype=dtype, device=device),
                torch.empty(shape, dtype=dtype, device=device))

    @staticmethod
    def compact(cache, holes: torch.Tensor, movers: torch.Tensor, t: int) -> None:
        k, v = cache
        k[holes, :, :, :t] = k[movers, :, :, :t]
        v[holes, :, :t] = v[movers, :, :t]

    def __init__(self, prompt_cache, prompt_bias, group):
        self.fn = library().ddrl_decode_attention
        self.pkt = [k.transpose(-1, -2).contiguous() for k, _ in prompt_cache]  # [prompts, kv, head_dim, width]
        self.pv = [v.contiguous() for _, v in prompt_cache]
        self.valid = torch.isfinite(prompt_bias).to(torch.uint8).contiguous()
        self.group = group.to(torch.int64).contiguous()
        self.resp_cache, self.t = None, 0

    def __call__(self, layer: int, q, k, v):
        rk, rv = self.resp_cache[layer]
        pkt, pv = self.pkt[layer], self.pv[layer]
        bsz, n_heads, _, hd = q.shape
        if not (q.stride(-1) == k.stride(-1) == v.stride(-1) == 1 and rk.stride(-1) == rv.stride(-1) == 1
                and rk.stride()[:2] == rv.stride()[:2] and q.dtype == rk.dtype == torch.float32):
            raise ValueError("native decode attention: unexpected layout or dtype of q/k/v or the cache")
        out = torch.empty((bsz, n_heads, 1, hd), dtype=q.dtype)
        self.fn(q.data_ptr(), q.stride(0), q.stride(1), k.data_ptr(), k.stride(0), k.stride(1),
                v.data_ptr(), v.stride(0), v.stride(1), pkt.data_ptr(), pv.data_ptr(), self.valid.data_ptr(),
                self.group.data_ptr(), rk.data_ptr(), rv.data_ptr(), rk.stride(0), rk.stride(1), rk.shape[-1],
                out.data_ptr(), bsz, n_heads, rk.shape[1], pkt.shape[-1], hd, self.t, hd**-0.5)
        return out


class StaticCacheSampler(LocalSampler):
    """Batched sampling from a Hugging Face Qwen2/Llama causal LM with its own lean decode loop.

    Same interface, output and seed semantics as :class:`ddrl.sampling.HFSampler` (the set-up, ``encode`` and
    ``sample`` of both are :class:`~ddrl.rollouts.LocalSampler`'s; ``batch_size`` sequences
    per chunk, one generator per chunk derived from ``seed``); results are a deterministic function of
    ``(seed, batch_size)``, the weights and the thread count. ``compact_fraction``: compact the batch and its
    cache when at least this fraction of the rows being decoded has finished (0: at every step where a row
    finishes; compaction copies only the K/V of the rows that move into finished rows' slots).
    """

    def __init__(self, model, tokenizer, batch_size: int = 256, device: str | torch.device | None = None,
                 compact_fraction: float = 0.0):
        if not 0.0 <= compact_fraction <= 1.0:
            raise ValueError(f"compact_fraction must be in [0, 1], got {compact_fraction}")
        reason = unsupported_reason(model)
        if reason is not None:
            raise ValueError(f"StaticCacheSampler cannot run this model: {reason} (use the 'hf' backend)")
        super().__init__(model, tokenizer, batch_size, device)
        self.compact_fraction = compact_fraction
        # DDRL_DECODE_ATTENTION, read now: "native" when the C loop is unavailable is an error before any sampling
        self.native = self.device.type == "cpu" and use_native()

    def attention(self, weights: "_Weights", width: int, steps: int) -> type:
        """The class of one decode step's attention: :class:`_NativeAttention` (the C loop of
        :mod:`ddrl.accel.native_attention`) where this sampler uses it and the call fits it (float32 weights, prompt
        width, steps and head size within the kernel's buffers), else :class:`_SharedPromptAttention`. Either is
        built per chunk (and after each compaction) from the prompts' K/V, their padding bias and each row's
        prompt, and allocates and compacts the rows' response K/V in its own layout."""
        if self.native and weights.dtype == torch.float32:
            max_w, max_t, max_d = library().limits
            if width <= max_w and steps <= max_t and weights.head_dim <= max_d:
                return _NativeAttention
        return _SharedPromptAttention

    def update_weights(self, model) -> None:
        """Samples from the live model; weights are read afresh at every :meth:`sample_ids` call."""
        reason = unsupported_reason(model)
        if reason is not None:
            raise ValueError(f"StaticCacheSampler cannot run this model: {reason}")
        self.model = model

    def sample_ids(self, prompt_ids: Sequence[Sequence[int]], n: int, temperature: float = 1.0, top_p: float = 1.0,
                   max_new_tokens: int | Sequence[int] = 256, seed: int = 0,
                   progress: bool = False) -> list[list[Rollout]]:
        """Like :meth:`sample`, from token ids; ``max_new_tokens`` may be one limit per prompt."""
        limits = request_limits(prompt_ids, n, max_new_tokens)
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        jobs = [(i, j) for i in range(len(prompt_ids)) for j in range(n)]
        out: list[list[Rollout | None]] = [[None] * n for _ in prompt_ids]
        weights = _Weights(self.model)
        # the rows' response K/V, allocated once per call and reused by every chunk (fresh pages cost faults)
        shape = (min(self.batch_size, len(jobs)), weights.n_kv, max(limits), weights.head_dim)
        attention = self.attention(weights, max(len(p) for p in prompt_ids), max(limits))
        resp_cache = [attention.response_cache(shape, weights.dtype, self.device) for _ in weights.layers]
        for c, start in enumerate(tqdm(range(0, len(jobs), self.batch_size), desc="sampling", unit="batch",
                                       disable=not progress)):
            chunk = jobs[start : start + self.batch_size]
            g = torch_generator(seed, "hf-sample", c, device=str(self.device))  # HFSampler's stream, chunk by chunk
            rows = self._decode(weights, attention, resp_cache, [prompt_ids[i] for i, _ in chunk], temperature,
                                top_p, [limits[i] for i, _ in chunk], g)
            for (i, j), (toks, lps, ents, finish) in zip(chunk, rows):
                out[i][j] = Rollout(i, toks, self.tokenizer.decode(toks, skip_special_tokens=True), lps, finish, ents)
        return out  # type: ignore[return-value]

    @torch.inference_mode()
    def _decode(self, w: _Weights, attention: type, resp_cache, batch_ids, temperature, top_p, limits,
                g: torch.Generator):
        dev, bsz = self.device, len(batch_ids)
        width, steps = max(len(ids) for ids in batch_ids), max(limits)
        # Rows with the same prompt (the n samples of a question) share it: each distinct prompt is prefilled once
        # and its K/V is kept once (``prompt_cache``); rows keep only their responses' K/V (``resp_cache``).
        uniq: dict[tuple[int, ...], int] = {}
        group = torch.as_tensor([uniq.setdefault(tuple(ids), len(uniq)) for ids in batch_ids], device=dev)
        n_u = len(uniq)
        input_ids = torch.full((n_u, width), self.pad_id, dtype=torch.long)
        valid = torch.ones((n_u, width), dtype=torch.bool)  # prompt positions that are not left padding
        for ids, u in uniq.items():
            input_ids[u, width - len(ids) :] = torch.as_tensor(ids, dtype=torch.long)
            valid[u, : width - len(ids)] = False
        input_ids, valid = input_ids.to(dev), valid.to(dev)
        pos = (valid.long().cumsum(-1) - 1).clamp(min=0)  # as HFSampler: real tokens start at position 0
        cos, sin = _rope_tables(w, int(pos.max()) + steps + 1, dev)
        kv = lambda n, t: torch.empty((n, w.n_kv, t, w.head_dim), dtype=w.dtype, device=dev)  # noqa: E731
        prompt_cache = [(kv(n_u, width), kv(n_u, width)) for _ in w.layers]
        resp_cache = [(k[:bsz], v[:bsz]) for k, v in resp_cache]  # positions < steps are used
        eos = torch.as_tensor(self.eos_ids, device=dev)
        limit = torch.as_tensor(limits, device=dev)

        # prefill: causal and padding mask; a padding query also sees itself (no all-masked row, no NaN)
        causal = torch.ones((width, width), dtype=torch.bool, device=dev).tril()
        mask = (causal & valid[:, None, :]) | torch.eye(width, dtype=torch.bool, device=dev)
        logits = _forward(w, input_ids, cos[pos], sin[pos], _PrefillAttention(prompt_cache, mask[:, None]))
        logits, next_pos = logits[group], pos[group, -1] + 1
        prompt_bias = torch.zeros((n_u, width), dtype=torch.float32, device=dev).masked_fill(~valid, float("-inf"))

        rows = torch.arange(bsz, device=dev)  # original row of each row still decoded
        tok_out = torch.full((bsz, steps), self.pad_id, dtype=torch.long, device=dev)
        lp_out = torch.zeros((bsz, steps), dtype=torch.float32, device=dev)
        ent_out = torch.zeros((bsz, steps), dtype=torch.float32, device=dev)
        length = torch.zeros(bsz, dtype=torch.long, device=dev)
        finished = torch.zeros(bsz, dtype=torch.bool, device=dev)  # per row still decoded
        att = attention(prompt_cache, prompt_bias, group)
        for t in range(steps):
            logp = sampling_logprobs(logits, temperature, top_p)
            if temperature == 0:
                tok = logp.argmax(dim=-1)
            else:  # torch.multinomial(p, 1) == argmax(p / q), q ~ Exp(1) drawn for the whole chunk (HFSampler's draws)
                q = torch.empty((bsz, logp.shape[-1]), dtype=logp.dtype, device=dev).exponential_(1, generator=g)
                tok = (logp.exp() / q[rows]).argmax(dim=-1)
            live = ~finished
            idx = rows[live]
            tok_out[idx, t] = tok[live]
            lp_out[idx, t] = logp.gather(1, tok[:, None]).squeeze(1)[live]
            ent_out[idx, t] = entropy_from_logprobs(logp)[live]
            tok = torch.where(finished, torch.full_like(tok, self.pad_id), tok)
            done_now = live & (torch.isin(tok, eos) | (limit[rows] <= t + 1))
            length[rows[done_now]] = t + 1
            finished |= done_now
            n_fin = int(finished.sum())
            if n_fin == len(rows):
                break
            if n_fin and n_fin >= self.compact_fraction * len(rows):  # finished rows leave the batch
                # Swap-remove: rows still decoded past the new end move into the finished rows' slots before
                # it, so only those rows' K/V are copied (the batch order changes; ``rows`` keeps track).
                m = len(rows) - n_fin
                holes, movers = finished[:m].nonzero().squeeze(1), (~finished[m:]).nonzero().squeeze(1) + m
                keep = torch.arange(m, device=dev)
                keep[holes] = movers
                for layer_cache in resp_cache:
                    attention.compact(layer_cache, holes, movers, t)
                rows, tok, next_pos, finished = rows[keep], tok[keep], next_pos[keep], finished[keep]
                att = attention(prompt_cache, prompt_bias, group[rows])
            m = len(rows)
            att.resp_cache, att.t = [(k[:m], v[:m]) for k, v in resp_cache], t
            logits = _forward(w, tok[:, None], cos[next_pos][:, None], sin[next_pos][:, None], att)
            next_pos = next_pos + 1

        tok_m, lp_m, ent_m, len_m = tok_out.cpu(), lp_out.cpu().tolist(), ent_out.cpu().tolist(), length.cpu().tolist()
        is_eos = torch.isin(tok_m, eos.cpu())
        result = []
        for b in range(bsz):
            n_tok = len_m[b]
            finish = "stop" if bool(is_eos[b, n_tok - 1]) else "length"
            result.append((tok_m[b, :n_tok].tolist(), lp_m[b][:n_tok], ent_m[b][:n_tok], finish))
        return result


def _rope_tables(w: _Weights, n_pos: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and signed sin (first half negated, see :func:`_rotate`) of every position ``< n_pos``
    (``[n_pos, head_dim]``), computed as HF's rotary module does (float32 ``position * inv_freq``, duplicated
    halves, times ``attention_scaling``), in the weights' dtype."""
    freqs = torch.arange(n_pos, device=device, dtype=torch.float32)[:, None] * w.inv_freq.to(device)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    sin = emb.sin() * w.rope_scale
    sin[:, : freqs.shape[1]] *= -1
    return (emb.cos() * w.rope_scale).to(w.dtype), sin.to(w.dtype)


class _PrefillAttention:
    """Prompt attention: writes each layer's K/V into ``cache[layer]`` and attends causally (SDPA, boolean
    ``mask`` ``[B, 1, S, S]``)."""

    def __init__(self, cache, mask):
        self.cache, self.mask = cache, mask

    def __call__(self, layer: int, q, k, v):
        ck, cv = self.cache[layer]
        ck.copy_(k)
        cv.copy_(v)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask, enable_gqa=q.shape[1] != k.shape[1])


def _linear_residual(h: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``h + linear(x, weight, bias)`` for 2-D ``h`` and ``x``, the residual add done by the matmul (beta = 1)."""
    return torch.addmm(h if bias is None else h + bias, x, weight.t())


def _forward(w: _Weights, ids, cos, sin, attend) -> torch.Tensor:
    """Logits of the last position after running ``ids`` ``[B, S]`` through the model.

    ``cos``/``sin``: ``[B, S, head_dim]`` (``sin`` signed, see :func:`_rope_tables`); ``attend(layer, q, k, v)``
    (rotated, ``[B, heads, S, head_dim]``) stores K/V and returns the attention output ``[B, heads, S, head_dim]``.
    """
    bsz, seq = ids.shape
    nh, nkv, hd = w.n_heads, w.n_kv, w.head_dim
    cos, sin = cos[:, None], sin[:, None]  # [B, 1, S, D]
    h = F.embedding(ids, w.embed).view(bsz * seq, -1)  # 2-D, so that residual adds fuse into the matmuls
    for i, L in enumerate(w.layers):
        x = _rms_norm(h, L["ln1"], L["eps1"])
        qkv = F.linear(x, L["w_qkv"], L["b_qkv"]).view(bsz, seq, nh + 2 * nkv, hd).transpose(1, 2)
        qk = _rotate(qkv[:, : nh + nkv], cos, sin)  # q and k rotated together: [B, nh + nkv, S, D]
        att = attend(i, qk[:, :nh], qk[:, nh:], qkv[:, nh + nkv :]).transpose(1, 2).reshape(bsz * seq, nh * hd)
        h = _linear_residual(h, att, L["w_o"], L["b_o"])
        x = _rms_norm(h, L["ln2"], L["eps2"])
        gate, up = F.linear(x, L["w_gu"], L["b_gu"]).chunk(2, dim=-1)
        h = _linear_residual(h, F.silu(gate) * up, L["w_d"], L["b_d"])
    h = h.view(bsz, seq, -1)
    x = _rms_norm(h[:, -1], w.norm, w.norm_eps)
    return F.linear(x, w.head, w.head_bias)
