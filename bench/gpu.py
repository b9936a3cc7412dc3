"""The companion on a CUDA GPU: sampling throughput, RL step time, paper-scale decode and update.

Three parts, one run (results: ``bench/results/gpu.json``):

1. **The machine.** Device-to-device copy bandwidth (a large tensor copy, bytes read + written over time) and
   the rate of a large bf16 matmul: the two ceilings the other numbers are compared with.
2. **The testbed model** (``ddrl.testbed``'s ``default`` architecture, 446k parameters). The pretraining code
   runs on the CPU only, so this is the default configuration with the *random initial weights* pretraining
   starts from (``build_model`` with the same seed), float32 as the trainer loads it. Measured:
   ``ddrl.sampling.HFSampler`` (the reference) and ``ddrl.accel.fast_sampling.StaticCacheSampler`` (the default for
   Qwen2/Llama since issue 16; ``--samplers``) at the pipeline's shape (64 samples x 64 test questions,
   T = 1.0, 64 new tokens) with the trainer's ``sample_batch_size`` (512) and with all 4096 sequences in one batch; and
   seconds per test-time RL step of ``ddrl.train.train`` itself (presets ``ttrl`` and ``bcs_dae``, the RL
   part of ``ddrl``: 8 questions x 64 samples, vote, keep 32, update), median over the steps after the first.
3. **Paper scale**: a Qwen2.5-1.5B-architecture ``Qwen2ForCausalLM`` built from its configuration (written
   out below, no download) with random weights, bf16. Random weights never stop, so every decode runs to
   ``--big-new-tokens``. Measured: HFSampler and StaticCacheSampler decode throughput (64 samples x 1 and x 8
   prompts of random tokens), each sampler's per-token log-probs against one full HF forward pass (bf16
   rounding), the decode step split into prefill and per-step time, the per-step floor
   ``(weight bytes + KV-cache bytes read) / copy bandwidth`` and the ratio floor / measured step; one RL
   update (``ddrl.train.ppo_update``: reference log-probs, clipped surrogate + KL, backward, AdamW step) over
   one question's 32-sequence group, with peak GPU memory, the lean default and every pass (``lean=False``).

All timings synchronise the device around the region, follow a warm-up, and are medians. On the GPU machine:

    python3 bench/gpu.py --out $OUT/gpu.json
    python3 bench/gpu.py --markdown bench/results/gpu.json     # the tables for docs/benchmarks.md

A CPU plumbing check (tiny shapes, says nothing about speed):

    OMP_NUM_THREADS=1 flock /tmp/ddrl-cpu.lock .venv/bin/python bench/gpu.py --device cpu --quick --out /tmp/gpu.json
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Qwen2.5-1.5B (config.json of Qwen/Qwen2.5-1.5B; Qwen2.5-Math-1.5B has the same shapes, rope theta 1e4 and
#: 4096 positions). Written out so nothing is downloaded.
QWEN25_15B = dict(
    vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
    num_key_value_heads=2, max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
    tie_word_embeddings=True, bos_token_id=151643, eos_token_id=151643, hidden_act="silu", use_cache=True,
    use_sliding_window=False, attention_dropout=0.0,
)
#: The same vocabulary and head layout, a few layers wide enough to run the code path on a CPU (--quick).
QUICK_BIG = dict(QWEN25_15B, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2)


# ---------------------------------------------------------------------------------------------------------
# Timing helpers
# ---------------------------------------------------------------------------------------------------------


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def timed(fn, dev: torch.device):
    """``(seconds, fn())`` with the device synchronised before and after."""
    sync(dev)
    t = time.perf_counter()
    out = fn()
    sync(dev)
    return time.perf_counter() - t, out


def median_time(fn, dev: torch.device, repeats: int, warmup: int = 1) -> tuple[float, list[float]]:
    for _ in range(warmup):
        timed(fn, dev)
    times = [timed(fn, dev)[0] for _ in range(repeats)]
    return statistics.median(times), times


def reset_peak(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)


def peak_gib(dev: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(dev) / 2**30 if dev.type == "cuda" else None


def allocated_gib(dev: torch.device) -> float | None:
    return torch.cuda.memory_allocated(dev) / 2**30 if dev.type == "cuda" else None


# ---------------------------------------------------------------------------------------------------------
# 1. The machine's ceilings
# ---------------------------------------------------------------------------------------------------------


def machine(dev: torch.device, quick: bool) -> dict:
    out: dict = {"device": str(dev), "torch": torch.__version__, "python": platform.python_version()}
    import transformers

    out["transformers"] = transformers.__version__
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        out.update(name=p.name, memory_gib=p.total_memory / 2**30, multiprocessors=p.multi_processor_count,
                   capability=f"{p.major}.{p.minor}", cuda=torch.version.cuda)
    else:
        out.update(name=platform.processor() or platform.machine(), threads=torch.get_num_threads())
    # Device-to-device copy: bytes read + bytes written over the time (1 GiB each way on the GPU).
    n = (2**24 if quick else 2**29)  # bf16 elements
    src = torch.randn(n, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    t, times = median_time(lambda: dst.copy_(src), dev, repeats=5 if quick else 20, warmup=3)
    nbytes = src.numel() * src.element_size()
    out["copy_bytes_each_way"] = nbytes
    out["copy_s"] = t
    out["copy_bandwidth_Bps"] = 2 * nbytes / t  # read + write
    del src, dst
    # A large bf16 matmul (random data).
    m = 512 if quick else 8192
    a = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    b = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    t, _ = median_time(lambda: a @ b, dev, repeats=3 if quick else 10, warmup=3)
    out["matmul_n"] = m
    out["matmul_bf16_flops"] = 2 * m**3 / t
    del a, b
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return out


# ---------------------------------------------------------------------------------------------------------
# 2. The testbed model
# ---------------------------------------------------------------------------------------------------------


def testbed_model(dev: torch.device):
    """The default testbed architecture with the initial weights its pretraining starts from."""
    from ddrl.seeds import derive_seed
    from ddrl.testbed import PRESETS, build_tokenizer
    from ddrl.testbed.model import build_model

    cfg = PRESETS["default"]
    tok = build_tokenizer(model_max_length=cfg.max_positions)
    model = build_model(tok, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers, num_heads=cfg.num_heads,
                        intermediate_size=cfg.intermediate_size, max_positions=cfg.max_positions,
                        seed=derive_seed(cfg.seed, "testbed-init"))
    return model.to(dev).eval(), tok


def sampler_class(name: str):
    """``hf``: :class:`ddrl.sampling.HFSampler` (the reference, HF's forward with a growing cache); ``fast``:
    :class:`ddrl.accel.fast_sampling.StaticCacheSampler` (issue 16: preallocated cache, fused projections, finished
    rows leave the batch), the one ``make_sampler("auto")`` picks for Qwen2/Llama."""
    from ddrl.accel.fast_sampling import StaticCacheSampler
    from ddrl.sampling import HFSampler

    return {"hf": HFSampler, "fast": StaticCacheSampler}[name]


def forward_agreement(model, prompt_ids, rollouts, dev: torch.device, rows: int = 4) -> dict:
    """How far a sampler's per-token log-probs and entropies (T = 1, top-p 1) are from one full-sequence HF
    forward pass over prompt + response, on the first ``rows`` rollouts of the first prompt: max and mean
    absolute difference. In float32 the CPU tests hold both samplers to 1e-4; in bf16 both differ from the
    full forward by bf16 rounding (cached vs uncached attention), which is what this measures."""
    from ddrl.sampling import entropy_from_logprobs, sampling_logprobs

    diffs_lp, diffs_ent = [], []
    for r in rollouts[0][:rows]:
        ids = torch.tensor([list(prompt_ids[0]) + r.token_ids], device=dev)
        with torch.inference_mode():
            logits = model(input_ids=ids).logits[0, len(prompt_ids[0]) - 1 : -1].float()
        logp = sampling_logprobs(logits, 1.0, 1.0)
        ref_lp = logp.gather(1, torch.tensor(r.token_ids, device=dev)[:, None]).squeeze(1).cpu()
        ref_ent = entropy_from_logprobs(logp).cpu()
        diffs_lp.append((ref_lp - torch.tensor(r.logprobs)).abs())
        diffs_ent.append((ref_ent - torch.tensor(r.entropies)).abs())
    lp, ent = torch.cat(diffs_lp), torch.cat(diffs_ent)
    return {"rows": rows, "tokens": int(lp.numel()), "logprob_max_abs": float(lp.max()),
            "logprob_mean_abs": float(lp.mean()), "entropy_max_abs": float(ent.max()),
            "entropy_mean_abs": float(ent.mean())}


def decode_positions(rollouts, batch_size: int) -> tuple[int, int]:
    """``(generated tokens, decoded positions)``: the second counts every row of every decode step, since
    HFSampler decodes a chunk until its longest row ends (finished rows ride along as padding)."""
    flat = [r for rs in rollouts for r in rs]  # the sampler's job order: prompt-major
    generated = sum(r.num_tokens for r in flat)
    positions = 0
    for s in range(0, len(flat), batch_size):
        chunk = flat[s : s + batch_size]
        positions += len(chunk) * max(r.num_tokens for r in chunk)
    return generated, positions


def testbed_part(dev: torch.device, args) -> dict:
    from ddrl.prompts import format_prompt
    from ddrl.testbed import generate_split, load
    from ddrl.config import make_config
    from ddrl.sampling import make_sampler
    from ddrl.train import train

    if args.testbed_dir:  # the trained testbed, built on the CPU and carried over (a save_pretrained dir)
        model, tok = load(args.testbed_dir)
        model = model.to(dev).eval()
        what = f"trained default testbed ({Path(args.testbed_dir).name}, built on the CPU by ddrl.testbed.build)"
    else:
        model, tok = testbed_model(dev)
        what = ("testbed default architecture (hidden 96, 3 layers, 4 heads), random initial weights: the "
                "pretraining code (ddrl.testbed.pretrain) runs on the CPU only; pass --testbed-dir to time the "
                "trained model")
    out: dict = {
        "model": what,
        "params": sum(p.numel() for p in model.parameters()), "dtype": "float32",
        "questions": args.questions, "n": args.n, "max_new_tokens": args.max_new_tokens, "temperature": 1.0,
        "sampling": [],
    }
    records = generate_split("test", max(args.questions, args.rl_prompts * args.rl_steps), seed=0)
    prompts = [format_prompt(tok, r["prompt"], "none") for r in records[: args.questions]]
    for name, bs in [(name, bs) for name in args.samplers for bs in args.batch_sizes]:
        sampler = sampler_class(name)(model, tok, batch_size=bs)
        box = {}

        def go():
            box["r"] = sampler.sample(prompts, n=args.n, temperature=1.0, top_p=1.0,
                                      max_new_tokens=args.max_new_tokens, seed=0)

        reset_peak(dev)
        t, times = median_time(go, dev, repeats=args.repeats)
        gen, pos = decode_positions(box["r"], bs)
        seqs = len(prompts) * args.n
        out["sampling"].append({
            "sampler": name, "batch_size": bs, "seconds": t, "times": times, "sequences": seqs, "generated_tokens": gen,
            "decoded_positions": pos, "tokens_per_s": gen / t, "positions_per_s": pos / t,
            "sequences_per_s": seqs / t, "mean_response_tokens": gen / seqs,
            "stop_frac": sum(r.finish_reason == "stop" for rs in box["r"] for r in rs) / seqs,
            "peak_gib": peak_gib(dev)})
        print(f"  testbed sampling ({name}) batch {bs}: {t:.3f} s, {gen / t:,.0f} tokens/s", flush=True)

    out["rl_steps"] = []
    for preset in args.rl_presets:
        cfg = make_config(preset, device=str(dev), prompts_per_step=args.rl_prompts, episodes=1,
                          max_new_tokens=args.max_new_tokens, n_votes=args.n, k_train=args.k_train,
                          save_every=10**9, warmup_steps=1)
        with tempfile.TemporaryDirectory() as tmp:
            m0 = copy.deepcopy(model)
            reset_peak(dev)
            t0 = time.perf_counter()
            res = train(cfg, records[: args.rl_prompts * args.rl_steps], Path(tmp) / preset, progress=False,
                        model=m0, tokenizer=tok)
            wall = time.perf_counter() - t0
        rows = res.metrics
        timed_rows = rows[1:] if len(rows) > 1 else rows  # the first step carries the warm-up

        def med(key):
            return statistics.median(r[key] for r in timed_rows)

        out["rl_steps"].append({
            "preset": preset, "sampler": type(make_sampler("auto", model, tok)).__name__,
            "steps": len(rows), "timed_steps": len(timed_rows),
            "prompts_per_step": cfg.prompts_per_step, "n_votes": cfg.n_votes, "k_train": cfg.k_train,
            "mini_batch_size": cfg.mini_batch_size, "micro_batch_size": cfg.micro_batch_size,
            "sample_batch_size": cfg.sample_batch_size,
            "step_s": med("time/step_s"), "sample_s": med("time/sample_s"), "update_s": med("time/update_s"),
            "metrics_s": med("time/metrics_s"), "first_step_s": rows[0]["time/step_s"],
            "all_step_s": [r["time/step_s"] for r in rows], "updates_per_step": rows[-1]["actor/updates"],
            "tokens_sampled_per_step": med("tokens/sampled"), "tokens_trained_per_step": med("tokens/trained"),
            "train_wall_s": wall, "peak_gib": peak_gib(dev)})
        print(f"  testbed RL step ({preset}): {out['rl_steps'][-1]['step_s']:.3f} s", flush=True)
        del m0, res
    return out


# ---------------------------------------------------------------------------------------------------------
# 3. Paper scale: Qwen2.5-1.5B architecture, random weights, bf16
# ---------------------------------------------------------------------------------------------------------


class IdTokenizer:
    """What HFSampler and the trainer need of a tokenizer when prompts are token ids of random weights."""

    def __init__(self, eos: int):
        self.eos_token_id = eos
        self.pad_token_id = eos

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return ""


def big_model(dev: torch.device, quick: bool):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(**(QUICK_BIG if quick else QWEN25_15B))
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(dev):  # initialise on the device: no 1.5B-parameter init on the CPU
            model = Qwen2ForCausalLM(config)
    finally:
        torch.set_default_dtype(old)
    return model.to(dtype=torch.bfloat16).eval(), config


def weight_bytes(model) -> int:
    seen, total = set(), 0
    for p in model.parameters():  # tied embeddings counted once (the LM head reads the same matrix)
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel() * p.element_size()
    return total


def kv_bytes_per_position(config, dtype_bytes: int = 2) -> int:
    head_dim = config.hidden_size // config.num_attention_heads
    return config.num_hidden_layers * 2 * config.num_key_value_heads * head_dim * dtype_bytes


def _kernels(fn) -> tuple[float, int, dict[str, float]]:
    """Total CUDA kernel time (s), kernel count and time per kernel name of ``fn()`` under torch.profiler."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:  # kernels only: few events to read back
        fn()
        torch.cuda.synchronize()
    by_name: dict[str, float] = {}
    total, count = 0.0, 0
    for e in prof.events():
        if e.device_type == DeviceType.CUDA:
            us = e.time_range.elapsed_us()
            total += us
            count += 1
            by_name[e.name] = by_name.get(e.name, 0.0) + us
    if count == 0:
        raise RuntimeError("the profile holds no CUDA kernels")
    return total * 1e-6, count, by_name


def kernel_profile(run, tokens: int) -> dict:
    """Per decode step: GPU kernel time and launches, from a profile of ``run(tokens)`` minus one of
    ``run(1)`` (prefill and one sampled token), and the kernels that take the most of it."""
    t_long, n_long, names_long = _kernels(lambda: run(tokens))
    t_one, n_one, names_one = _kernels(lambda: run(1))
    steps = tokens - 1
    per = {k: (v - names_one.get(k, 0.0)) * 1e-6 / steps for k, v in names_long.items()}
    top = sorted(per.items(), key=lambda kv: -kv[1])[:12]
    return {"profile_tokens": tokens, "kernel_s_per_step": (t_long - t_one) / steps,
            "kernels_per_step": (n_long - n_one) / steps,
            "top_kernels_s_per_step": [{"name": k[:120], "s": v} for k, v in top]}


def big_sampling(model, config, dev: torch.device, args, bw: float, flops_peak: float) -> list[dict]:
    from ddrl.sampling import entropy_from_logprobs, sampling_logprobs

    tok = IdTokenizer(config.eos_token_id)
    g = torch.Generator().manual_seed(1)
    wbytes = weight_bytes(model)
    kvb = kv_bytes_per_position(config)
    nparams = sum(p.numel() for p in model.parameters())
    rows = []
    prompts = {n: [torch.randint(0, config.vocab_size, (args.big_prompt_len,), generator=g).tolist()
                   for _ in range(n)] for n in args.big_prompts}
    tokens_by: dict = {}
    for name, n_prompts in [(name, n) for n in args.big_prompts for name in args.samplers]:
        prompt_ids = prompts[n_prompts]
        bsz = n_prompts * args.big_n
        sampler = sampler_class(name)(model, tok, batch_size=bsz)
        box = {}

        def run(new):
            box["r"] = sampler.sample_ids(prompt_ids, args.big_n, temperature=1.0, top_p=1.0,
                                          max_new_tokens=new, seed=0)

        # Warm-up at the full length: the first pass through the growing KV-cache sizes fills the CUDA caching
        # allocator (cudaMalloc is slow); a trainer that samples every step runs in the warm state.
        run(args.big_new_tokens)
        reset_peak(dev)
        t_pre, _ = median_time(lambda: run(1), dev, repeats=args.repeats, warmup=0)
        t_full, times = median_time(lambda: run(args.big_new_tokens), dev, repeats=args.big_repeats, warmup=0)
        steps = max(r.num_tokens for rs in box["r"] for r in rs)
        step_s = (t_full - t_pre) / max(steps - 1, 1)
        # Per decode step: every weight once, plus each row's KV cache at its current length.
        mean_ctx = args.big_prompt_len + steps / 2
        step_bytes = wbytes + bsz * mean_ctx * kvb
        floor_bw = step_bytes / bw
        head_dim = config.hidden_size // config.num_attention_heads
        step_flops = bsz * (2 * nparams + 4 * config.num_hidden_layers * mean_ctx * config.num_attention_heads * head_dim)
        floor_flops = step_flops / flops_peak
        row = {
            "sampler": name, "prompts": n_prompts, "n": args.big_n, "batch": bsz, "prompt_len": args.big_prompt_len,
            "new_tokens": steps, "seconds": t_full, "times": times, "prefill_s": t_pre,
            "decode_step_s": step_s, "decoded_tokens": bsz * steps, "tokens_per_s": bsz * steps / t_full,
            "decode_tokens_per_s": bsz / step_s, "sequences_per_s": bsz / t_full,
            "weight_bytes": wbytes, "kv_bytes_per_position": kvb, "mean_context": mean_ctx,
            "step_bytes": step_bytes, "bandwidth_floor_step_s": floor_bw,
            "bandwidth_ratio": floor_bw / step_s, "step_flops": step_flops, "flops_floor_step_s": floor_flops,
            "roofline_ratio": max(floor_bw, floor_flops) / step_s, "peak_gib": peak_gib(dev),
        }
        # The sampler's arithmetic on one step's logits (temperature/top-p log-softmax, draw, gather, entropy).
        logits = torch.randn(bsz, config.vocab_size, device=dev, dtype=torch.bfloat16)
        gen = torch.Generator(device=dev).manual_seed(0)

        def head():
            with torch.inference_mode():
                logp = sampling_logprobs(logits, 1.0, 1.0)
                tk = torch.multinomial(logp.exp(), 1, generator=gen).squeeze(1)
                return logp.gather(1, tk[:, None]), entropy_from_logprobs(logp)

        row["sampling_math_s"], _ = median_time(head, dev, repeats=5, warmup=2)
        del logits
        row["forward_agreement"] = forward_agreement(model, prompt_ids, box["r"], dev)
        tokens_by[name, n_prompts] = [r.token_ids for rs in box["r"] for r in rs]
        if name != "hf" and ("hf", n_prompts) in tokens_by:  # same seed: equal tokens unless rounding flips a draw
            ref = tokens_by["hf", n_prompts]
            row["rollouts_identical_to_hf"] = sum(a == b for a, b in zip(ref, tokens_by[name, n_prompts])) / len(ref)
        # GPU busy time per decode step: kernel time in a profile of a short decode, minus a prefill-only one.
        if dev.type == "cuda" and args.profile_tokens > 1:
            try:
                row.update(kernel_profile(lambda n: run(n), args.profile_tokens))
                row["gpu_busy_frac"] = row["kernel_s_per_step"] / step_s
            except Exception:  # the profile is a diagnosis; keep the measurements without it
                row["profile_error"] = traceback.format_exc()
                print(row["profile_error"], file=sys.stderr, flush=True)
        rows.append(row)
        print(f"  1.5B decode ({name}) batch {bsz}: {row['decode_tokens_per_s']:,.0f} tokens/s, step "
              f"{1e3 * step_s:.1f} ms (runs {', '.join(f'{x:.2f}' for x in times)} s), bandwidth floor "
              f"{1e3 * floor_bw:.2f} ms ({100 * row['bandwidth_ratio']:.1f}%), kernels "
              f"{1e3 * row.get('kernel_s_per_step', float('nan')):.1f} ms/step", flush=True)
        del sampler, box
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return rows


def big_update(model, config, dev: torch.device, args, flops_peak: float) -> dict:
    from ddrl.config import make_config
    from ddrl.train import TrainSample, ppo_update, prepare_policy

    g = torch.Generator().manual_seed(2)
    prompt = torch.randint(0, config.vocab_size, (args.big_prompt_len,), generator=g).tolist()
    samples = [TrainSample(prompt, torch.randint(0, config.vocab_size, (args.big_response_len,), generator=g).tolist(),
                           1.0 if i % 2 else -1.0, float(i % 2), [-12.0] * args.big_response_len)
               for i in range(args.big_group)]
    micro = args.big_micro
    policy, ref = prepare_policy(model, make_config("bcs_dae", dtype="bfloat16"))
    params = [p for p in policy.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=5e-7, betas=(0.9, 0.999), weight_decay=0.01)
    static = allocated_gib(dev)
    while True:
        cfg = make_config("bcs_dae", device=str(dev), dtype="bfloat16", k_train=args.big_group,
                          mini_batch_size=args.big_group, micro_batch_size=micro, lr=5e-7)
        try:
            reset_peak(dev)
            t_warm, _ = timed(lambda: ppo_update(policy, ref, samples, cfg, opt, 0, config.eos_token_id), dev)
            t, times = median_time(lambda: ppo_update(policy, ref, samples, cfg, opt, 0, config.eos_token_id), dev,
                                   repeats=args.repeats, warmup=0)
            # Every pass, as before issue 16's leaner update (it also runs the old-log-prob pass, whose result
            # on the first mini-batch equals the gradient pass's detached log-probs).
            t_full, times_full = median_time(
                lambda: ppo_update(policy, ref, samples, cfg, opt, 0, config.eos_token_id, lean=False), dev,
                repeats=args.repeats, warmup=1)
            break
        except torch.OutOfMemoryError:
            opt.zero_grad(set_to_none=True)
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            if micro == 1:
                raise
            print(f"  out of memory at micro-batch {micro}; retrying with {micro // 2}", flush=True)
            micro //= 2
    nparams = sum(p.numel() for p in policy.parameters())
    emb = policy.get_input_embeddings().weight.numel()
    tokens = args.big_group * (args.big_prompt_len + args.big_response_len)
    resp = args.big_group * (args.big_response_len + 1)
    L = args.big_prompt_len + args.big_response_len
    head_dim = config.hidden_size // config.num_attention_heads
    attn = args.big_group * config.num_hidden_layers * 2 * L * L * config.num_attention_heads * head_dim  # causal
    fwd = 2 * (nparams - emb) * tokens + 2 * emb * resp + attn
    # lean (the default since issue 16): reference + policy forward + backward (= 2 forwards), one mini-batch
    # per step so no old-log-prob pass; lean=False adds the old-log-prob forward
    flops, flops_full = 4 * fwd, 5 * fwd
    out = {
        "group": args.big_group, "prompt_len": args.big_prompt_len, "response_len": args.big_response_len,
        "micro_batch_size": micro, "mini_batch_size": args.big_group, "optimizer": "AdamW (bf16 states)",
        "seconds": t, "times": times, "first_s": t_warm, "tokens": tokens,
        "tokens_per_s": tokens / t, "flops": flops, "achieved_flops": flops / t, "mfu": flops / t / flops_peak,
        "static_gib": static, "peak_gib": peak_gib(dev),
        "full_seconds": t_full, "full_times": times_full, "full_mfu": flops_full / t_full / flops_peak,
        "full_over_lean": t_full / t,
        "note": "ppo_update over one question's group (one mini-batch): no-grad reference log-probs (reference "
                "= a frozen copy), policy forward + backward per micro-batch, grad clip, one AdamW step; "
                "FLOPs = 4 forwards (2 x params x tokens, LM head on response positions, causal attention). "
                "full_*: lean=False, every pass (+ the old-log-prob forward: 5 forwards)",
    }
    print(f"  1.5B RL update ({args.big_group} x {L} tokens, micro {micro}): {t:.2f} s (every pass: {t_full:.2f} s), "
          f"MFU {100 * out['mfu']:.1f}%, peak {out['peak_gib']} GiB", flush=True)
    del ref, opt
    return out


def big_part(dev: torch.device, args, mach: dict) -> dict:
    model, config = big_model(dev, args.quick)
    out: dict = {
        "model": ("Qwen2.5-1.5B architecture (hidden 1536, 28 layers, 12 heads, 2 KV heads, intermediate 8960, "
                  "vocab 151936, tied embeddings), random weights, bf16" if not args.quick else
                  "Qwen2.5 vocabulary and head layout, 2 layers of width 64 (--quick), random weights, bf16"),
        "params": sum(p.numel() for p in model.parameters()), "weight_bytes": weight_bytes(model),
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
    }
    from ddrl.logprobs import logprob_backend

    out["logprobs"] = logprob_backend(model)  # DDRL_LOGPROBS: auto (HF forward on a GPU), hf, shared-prompt
    if "paper" in args.parts.split(","):  # "paper-update" times the update alone
        out["sampling"] = big_sampling(model, config, dev, args, mach["copy_bandwidth_Bps"],
                                       mach["matmul_bf16_flops"])
    out["update"] = big_update(model, config, dev, args, mach["matmul_bf16_flops"])
    return out


# ---------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------


def markdown(res: dict) -> str:
    m = res["machine"]
    lines = [f"Device: {m.get('name')} (torch {m['torch']}, transformers {m['transformers']}); copy bandwidth "
             f"{m['copy_bandwidth_Bps'] / 1e12:.2f} TB/s (read + write), bf16 matmul "
             f"{m['matmul_bf16_flops'] / 1e12:.0f} TFLOP/s ({m['matmul_n']}^3).", ""]
    tb = res.get("testbed")
    if tb:
        lines += [f"Testbed ({tb['params']:,} params, {tb['dtype']}), {tb['questions']} questions x {tb['n']} "
                  f"samples, T = 1.0, {tb['max_new_tokens']} new tokens:", "",
                  "| sampler | sample batch | s | tokens/s | decoded positions/s | sequences/s | mean response | peak GiB |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in tb["sampling"]:
            lines.append(f"| {r.get('sampler', 'hf')} | {r['batch_size']} | {r['seconds']:.2f} | "
                         f"{r['tokens_per_s']:,.0f} | "
                         f"{r['positions_per_s']:,.0f} | {r['sequences_per_s']:,.0f} | "
                         f"{r['mean_response_tokens']:.1f} | {_f(r['peak_gib'])} |")
        lines += ["", "Testbed test-time RL step (`ddrl.train.train`, median of the steps after the first):", "",
                  "| preset | sampler | questions x N -> K | step s | sampling s | update s | metrics s | updates | "
                  "first step s |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in tb["rl_steps"]:
            lines.append(f"| {r['preset']} | {r.get('sampler', 'HFSampler')} | "
                         f"{r['prompts_per_step']} x {r['n_votes']} -> {r['k_train']} | "
                         f"{r['step_s']:.2f} | {r['sample_s']:.2f} | {r['update_s']:.2f} | {r['metrics_s']:.3f} | "
                         f"{r['updates_per_step']} | {r['first_step_s']:.2f} |")
        lines.append("")
    big = res.get("paper_scale")
    if big:
        big.setdefault("sampling", [])
        lines += [f"Paper scale: {big['model']} ({big['params'] / 1e9:.2f} B params, "
                  f"{big['weight_bytes'] / 1e9:.2f} GB of weights); update log-probs: "
                  f"{big.get('logprobs', 'not recorded')}."]
        if big["sampling"]:
            lines += ["", "| sampler | batch | prompt + new | s | decode tokens/s | step ms | GPU kernels ms/step | "
                      "launches/step | sampling math ms | bandwidth floor ms | floor / step | FLOP floor ms | "
                      "peak GiB | log-prob vs forward, max / mean |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in big["sampling"]:
            fa = r.get("forward_agreement") or {}
            agree = f"{fa['logprob_max_abs']:.3f} / {fa['logprob_mean_abs']:.4f}" if fa else "-"
            lines.append(f"| {r.get('sampler', 'hf')} | {r['batch']} ({r['prompts']} x {r['n']}) | "
                         f"{r['prompt_len']} + {r['new_tokens']} | "
                         f"{r['seconds']:.2f} | {r['decode_tokens_per_s']:,.0f} | {1e3 * r['decode_step_s']:.1f} | "
                         f"{_ms(r.get('kernel_s_per_step'))} | {r.get('kernels_per_step', float('nan')):.0f} | "
                         f"{1e3 * r['sampling_math_s']:.1f} | "
                         f"{1e3 * r['bandwidth_floor_step_s']:.2f} | {100 * r['bandwidth_ratio']:.1f}% | "
                         f"{1e3 * r['flops_floor_step_s']:.2f} | {_f(r['peak_gib'])} | {agree} |")
        u = big.get("update")
        if u:
            what = (f"{u['group']} x ({u['prompt_len']} + {u['response_len']}) tokens, micro-batch "
                    f"{u['micro_batch_size']}, one AdamW step")
            lines += ["", "| RL update | passes | s | tokens/s | MFU | static GiB | peak GiB |",
                      "|---|---|---|---|---|---|---|",
                      f"| {what} | {'lean (default)' if 'full_seconds' in u else 'every pass (before the lean update)'} | "
                      f"{u['seconds']:.2f} | {u['tokens_per_s']:,.0f} | "
                      f"{100 * u['mfu']:.1f}% | {_f(u['static_gib'])} | {_f(u['peak_gib'])} |"]
            if "full_seconds" in u:
                lines.append(f"| {what} | every pass (`lean=False`) | {u['full_seconds']:.2f} | "
                             f"{u['tokens'] / u['full_seconds']:,.0f} | {100 * u['full_mfu']:.1f}% | - | - |")
        big_rows = {(r.get("sampler", "hf"), r["batch"]): r for r in big["sampling"]}
        ratios = [f"batch {b}: {big_rows['fast', b]['decode_tokens_per_s'] / r['decode_tokens_per_s']:.2f}x"
                  for (name, b), r in big_rows.items() if name == "hf" and ("fast", b) in big_rows]
        if ratios:
            lines += ["", "StaticCacheSampler / HFSampler decode tokens/s: " + ", ".join(ratios)]
    if res.get("errors"):
        lines += ["", "Errors: " + "; ".join(f"{k}: {v.splitlines()[-1]}" for k, v in res["errors"].items())]
    return "\n".join(lines)


def _ms(x) -> str:
    return "-" if x is None else f"{1e3 * x:.1f}"


def _f(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--quick", action="store_true", help="tiny shapes: a plumbing check (CPU)")
    ap.add_argument("--parts", default="testbed,paper",
                    help="comma-separated: testbed, paper (1.5B decode and update), paper-update (the update alone)")
    ap.add_argument("--questions", type=int, default=64)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[512, 4096])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--testbed-dir", help="a built testbed (python -m ddrl.testbed build) to time instead of "
                    "random weights of its architecture")
    ap.add_argument("--samplers", nargs="+", default=["hf", "fast"], choices=["hf", "fast"],
                    help="hf: HFSampler (the reference); fast: StaticCacheSampler (the default for Qwen2/Llama)")
    ap.add_argument("--rl-presets", nargs="+", default=["ttrl", "bcs_dae"])
    ap.add_argument("--rl-prompts", type=int, default=8)
    ap.add_argument("--rl-steps", type=int, default=4)
    ap.add_argument("--k-train", type=int, default=32)
    ap.add_argument("--big-prompts", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--big-n", type=int, default=64)
    ap.add_argument("--big-prompt-len", type=int, default=128)
    ap.add_argument("--big-new-tokens", type=int, default=256)
    ap.add_argument("--big-repeats", type=int, default=3)
    ap.add_argument("--profile-tokens", type=int, default=256, help="decode length of the kernel profile (0: none)")
    ap.add_argument("--big-group", type=int, default=32)
    ap.add_argument("--big-response-len", type=int, default=1024)
    ap.add_argument("--big-micro", type=int, default=4)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu.json"))
    ap.add_argument("--markdown", metavar="JSON", help="print the tables of an existing result and exit")
    args = ap.parse_args()
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())))
        return
    if args.quick:
        args.questions, args.n, args.max_new_tokens, args.batch_sizes, args.repeats = 2, 4, 8, [4, 8], 1
        args.rl_prompts, args.rl_steps, args.k_train = 2, 2, 2
        args.big_prompts, args.big_n, args.big_prompt_len, args.big_new_tokens, args.big_repeats = [1, 2], 2, 8, 6, 1
        args.profile_tokens = 0
        args.big_group, args.big_response_len, args.big_micro = 4, 8, 2
    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("bench/gpu.py: no CUDA device (use --device cpu --quick for a plumbing check)")
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    res: dict = {"args": {k: v for k, v in vars(args).items() if k != "markdown"}, "errors": {}}

    def save():
        out_path.write_text(json.dumps(res, indent=2) + "\n")

    t0 = time.perf_counter()
    res["machine"] = machine(dev, args.quick)
    print(f"{res['machine'].get('name')}: copy {res['machine']['copy_bandwidth_Bps'] / 1e12:.2f} TB/s, "
          f"bf16 matmul {res['machine']['matmul_bf16_flops'] / 1e12:.1f} TFLOP/s", flush=True)
    save()
    parts = args.parts.split(",")
    for name, key, fn in (("testbed", "testbed", lambda: testbed_part(dev, args)),
                          ("paper", "paper_scale", lambda: big_part(dev, args, res["machine"]))):
        if name not in parts and not (name == "paper" and "paper-update" in parts):
            continue
        try:
            res[key] = fn()
        except Exception:  # keep what the other parts measured
            res["errors"][name] = traceback.format_exc()
            print(res["errors"][name], file=sys.stderr, flush=True)
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        save()
    res["total_s"] = time.perf_counter() - t0
    save()
    print()
    print(markdown(res))
    if res["errors"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
