"""Sampling throughput: the companion's samplers vs plain ``model.generate`` vs the CPU's arithmetic limit.

At the pipeline's shape (64 samples x 64 questions of the testbed test split, T = 1.0, 64 new tokens), on
the default testbed model, measures tokens/s and sequences/s of

- ``ddrl.accel.fast_sampling.StaticCacheSampler`` (the default for Qwen2/Llama: lean static-KV-cache decode; on the CPU
  its decode attention is the C loop of ``ddrl.accel.native_attention`` where that builds),
- the same sampler with torch's decode attention (``DDRL_DECODE_ATTENTION=torch``: the sampler before the C loop),
- ``ddrl.sampling.HFSampler`` (the reference: a KV-cache loop over HF's ``model(...)``; both return
  processed log-probs and entropies for every token), and
- ``model.generate(do_sample=True)`` on the same prompts and batch size (what a user would write instead),

timed in one process, interleaved (repeat r runs all three before repeat r + 1; best of ``--repeats``), with
the load average recorded around every timing (the machine is shared),

and relates them to the machine: the model's forward FLOPs per generated token (2 x non-embedding
parameters + 2 x the LM head + attention over the running context) times tokens/s, divided by the measured
peak FLOP/s of a float32 matmul on this CPU. Prints a table and writes ``bench/results/sampling.json``.
Run it alone (2 cores oversubscribe):

    OMP_NUM_THREADS=2 flock /tmp/ddrl-cpu.lock .venv/bin/python bench/sampling.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rl_step import geometric_mean_ci  # noqa: E402


def sync(device: str = "cpu") -> None:
    """Wait for the device's queued work (CUDA runs asynchronously; a host clock read before it is wrong)."""
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def peak_matmul_flops(n: int = 1024, repeats: int = 20, m: int | None = None, k: int | None = None,
                      device: str = "cpu") -> float:
    """Best observed float32 FLOP/s of an ``[m, k] @ [k, n]`` matmul (square ``n`` by default: the CPU's
    practical arithmetic ceiling; with the model's decode shapes: the ceiling at the sizes it really runs)."""
    m, k = m or n, k or n
    a, b = torch.randn(m, k, device=device), torch.randn(k, n, device=device)
    for _ in range(3):
        a @ b
    sync(device)
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        sync(device)
        best = max(best, 2 * m * k * n / (time.perf_counter() - t))
    return best


def copy_bandwidth(mib: int = 256, repeats: int = 10, device: str = "cpu") -> float:
    """Best observed bytes/s of a large tensor copy, counting bytes read plus bytes written (the memory
    ceiling that a decode step reading its KV cache runs against)."""
    a = torch.randn(mib * 2**20 // 4, device=device)
    b = torch.empty_like(a)
    b.copy_(a)
    sync(device)
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        b.copy_(a)
        sync(device)
        best = max(best, 2 * a.numel() * 4 / (time.perf_counter() - t))
    return best


def bytes_per_token(model, context: float, batch_size: int) -> float:
    """Bytes a decode step must read per generated token: the row's K and V cache at mean context in every
    layer (float32), plus the weights, read once per step and shared by the ``batch_size`` rows."""
    cfg = model.config
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * 4 * context
    weights = sum(p.numel() for p in model.parameters()) * 4
    return kv + weights / batch_size


#: torch op name fragments -> where the time goes (first match wins: sampling comes before attention so
#: that the sampler's ``log_softmax`` is not counted as attention's ``softmax``)
OP_GROUPS = (("matmul (linear, bmm)", ("addmm", "mm", "matmul", "linear", "bmm")),
             ("sampling (top-p, draw, log-probs)", ("sort", "multinomial", "cumsum", "log_softmax", "exponential",
                                                    "argmax", "gather", "scatter", "topk")),
             ("attention", ("scaled_dot_product", "attention", "softmax")),
             ("norms and activations", ("rms", "pow", "rsqrt", "mean", "silu", "mul", "add", "sub", "div", "neg",
                                        "cos", "sin")),
             ("tensor bookkeeping (cat, copy, index, views)", ("cat", "copy", "index", "view", "reshape", "slice",
                                                               "select", "expand", "transpose", "contiguous", "to",
                                                               "empty", "fill", "zeros", "ones", "arange", "stack",
                                                               "where", "clone", "masked", "unsqueeze", "squeeze")))


def profile_call(fn) -> dict:
    """Where one call's CPU time goes: torch's profiler (self CPU time of every op, grouped by
    :data:`OP_GROUPS`) and the rest of the wall clock, which is Python and dispatch outside any op."""
    from torch.profiler import ProfilerActivity, profile

    t = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    wall = time.perf_counter() - t
    events = [(e.key, e.self_cpu_time_total / 1e6, e.count) for e in prof.key_averages()]
    groups: dict[str, float] = {}
    for key, sec, _ in events:
        name = key.lower().removeprefix("aten::")
        group = next((g for g, frags in OP_GROUPS if any(f in name for f in frags)), "other ops")
        groups[group] = groups.get(group, 0.0) + sec
    ops = sum(groups.values())
    groups["outside ops (Python loop, dispatch, profiler)"] = max(0.0, wall - ops)
    top = sorted(events, key=lambda e: -e[1])[:12]
    return {"wall_s": wall, "op_self_s": ops, "ops_called": sum(c for _, _, c in events),
            "groups_s": dict(sorted(groups.items(), key=lambda kv: -kv[1])),
            "top_ops": [{"op": k, "self_s": v, "calls": c} for k, v, c in top]}


def flops_per_token(model, context: float) -> float:
    """Forward FLOPs to produce one token at average context length ``context`` (2 per multiply-add)."""
    cfg = model.config
    emb = model.get_input_embeddings().weight.numel()
    body = sum(p.numel() for p in model.parameters()) - emb  # tied head: embeddings counted once
    head = emb  # the LM head matmul (vocab x hidden)
    attn = 2 * cfg.num_hidden_layers * context * cfg.hidden_size  # q.k and attn.v over the context
    return 2 * (body + head) + 2 * attn


def time_it(fn, repeats: int, device: str = "cpu") -> float:
    best = float("inf")
    for _ in range(repeats):
        sync(device)
        t = time.perf_counter()
        fn()
        sync(device)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default", help="testbed preset")
    ap.add_argument("--testbed-dir", default=None, help="a built testbed directory to load instead of building "
                    "--preset (e.g. one carried to a GPU machine, where pretraining would run on its CPU)")
    ap.add_argument("--questions", type=int, default=64)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=0,
                    help="instead of --repeats: this many rounds, the samplers' order reversed every other round, "
                         "with each round's tokens/s ratios and their geometric mean and 95%% interval")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sampling.json"))
    ap.add_argument("--no-profile", action="store_true", help="skip the torch.profiler breakdown of one call")
    ap.add_argument("--device", default="cpu", help="cpu (the default) or cuda: the same samplers on a GPU (the "
                    "CPU profile is skipped there; ceilings are the GPU's float32 matmul and copy)")
    args = ap.parse_args()
    if args.rounds == 1 or args.rounds < 0:
        raise SystemExit(f"--rounds must be 0 (off) or at least 2 (an interval needs two rounds), got {args.rounds}")
    dev = args.device
    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    from ddrl.accel.fast_sampling import StaticCacheSampler
    from ddrl.infra.pool import environ
    from ddrl.prompts import format_prompt
    from ddrl.sampling import HFSampler
    from ddrl.testbed import build, generate_split, load

    model, tok = load(args.testbed_dir or build(args.preset, progress=False))
    model.eval().to(dev)
    prompts = [format_prompt(tok, r["prompt"], "none") for r in generate_split("test", args.questions, seed=0)]
    sampler = HFSampler(model, tok, batch_size=args.batch_size)
    fast = StaticCacheSampler(model, tok, batch_size=args.batch_size)  # the default: the C decode attention on the CPU
    with environ(DDRL_DECODE_ATTENTION="torch"):  # read when the sampler is built
        fast_torch = StaticCacheSampler(model, tok, batch_size=args.batch_size)
    box: dict = {}

    def ours():
        box["ours"] = sampler.sample(prompts, n=args.n, max_new_tokens=args.max_new_tokens, seed=0)

    def ours_fast():
        box["fast"] = fast.sample(prompts, n=args.n, max_new_tokens=args.max_new_tokens, seed=0)

    def ours_fast_torch():
        box["fast_torch"] = fast_torch.sample(prompts, n=args.n, max_new_tokens=args.max_new_tokens, seed=0)

    ids = sampler.encode(prompts)
    jobs = [p for p in ids for _ in range(args.n)]

    def plain_generate():
        tok.padding_side = "left"
        total = 0
        torch.manual_seed(0)
        for s in range(0, len(jobs), args.batch_size):
            chunk = jobs[s : s + args.batch_size]
            enc = tok.pad({"input_ids": chunk}, return_tensors="pt").to(dev)
            with torch.inference_mode():
                out = model.generate(**enc, do_sample=True, temperature=1.0, top_p=1.0, top_k=0,
                                     max_new_tokens=args.max_new_tokens, pad_token_id=tok.pad_token_id)
            new = out[:, enc["input_ids"].shape[1]:]
            # count tokens up to and including the first EOS, as our sampler does
            for row in new.tolist():
                total += row.index(tok.eos_token_id) + 1 if tok.eos_token_id in row else len(row)
        box["generate_tokens"] = total

    fns = {"ddrl StaticCacheSampler": ours_fast, "StaticCacheSampler, torch attention": ours_fast_torch,
           "ddrl HFSampler": ours, "model.generate": plain_generate}
    best = {name: float("inf") for name in fns}
    loads: dict[str, list] = {name: [] for name in fns}
    per_round: dict[str, list] = {name: [] for name in fns}
    # interleaved, so that a change of load hits every sampler alike; with --rounds the order alternates
    for rnd in range(args.rounds or args.repeats):
        for name, fn in (list(fns.items()) if rnd % 2 == 0 or not args.rounds else list(fns.items())[::-1]):
            load_before = os.getloadavg()[0]
            sec = time_it(fn, 1, dev)
            best[name] = min(best[name], sec)
            per_round[name].append(sec)
            loads[name].append([load_before, os.getloadavg()[0]])
    t_ours, t_fast, t_gen = best["ddrl HFSampler"], best["ddrl StaticCacheSampler"], best["model.generate"]
    toks_ours = sum(r.num_tokens for rs in box["ours"] for r in rs)
    toks_fast = sum(r.num_tokens for rs in box["fast"] for r in rs)
    toks_fast_torch = sum(r.num_tokens for rs in box["fast_torch"] for r in rs)
    toks_gen = box["generate_tokens"]
    same = sum(a.token_ids == b.token_ids for ra, rb in zip(box["ours"], box["fast"]) for a, b in zip(ra, rb))
    same_attention = sum(a.token_ids == b.token_ids for ra, rb in zip(box["fast_torch"], box["fast"])
                         for a, b in zip(ra, rb))
    prompt_len = sum(len(i) for i in ids) / len(ids)
    mean_len = toks_ours / len(jobs)
    fpt = flops_per_token(model, prompt_len + mean_len / 2)
    peak = peak_matmul_flops(device=dev)
    cfg = model.config  # the MLP up-projection at the decode shape: one row per sequence of the batch
    peak_shape = peak_matmul_flops(n=cfg.intermediate_size, m=args.batch_size, k=cfg.hidden_size, repeats=200,
                                   device=dev)
    bandwidth = copy_bandwidth(device=dev)
    bpt = bytes_per_token(model, prompt_len + mean_len / 2, args.batch_size)
    rows = {
        "ddrl StaticCacheSampler": {"seconds": t_fast, "tokens": toks_fast},
        "StaticCacheSampler, torch attention": {"seconds": best["StaticCacheSampler, torch attention"],
                                                "tokens": toks_fast_torch},
        "ddrl HFSampler": {"seconds": t_ours, "tokens": toks_ours},
        "model.generate": {"seconds": t_gen, "tokens": toks_gen},
    }
    for r in rows.values():
        r["tokens_per_s"] = r["tokens"] / r["seconds"]
        r["sequences_per_s"] = len(jobs) / r["seconds"]
        r["achieved_flops"] = r["tokens_per_s"] * fpt
        r["fraction_of_peak"] = r["achieved_flops"] / peak
        r["fraction_of_shape_peak"] = r["achieved_flops"] / peak_shape
        r["fraction_of_bandwidth_floor"] = r["tokens_per_s"] * bpt / bandwidth  # 1.0 = at the memory ceiling
    for name, r in rows.items():
        r["tokens_per_s_vs_generate"] = r["tokens_per_s"] / rows["model.generate"]["tokens_per_s"]
        r["loadavg_1min_before_after"] = loads[name]
    profile = None if args.no_profile or dev != "cpu" else profile_call(ours_fast)
    result = {
        "setup": {"preset": args.preset, "testbed_dir": args.testbed_dir, "questions": args.questions, "n": args.n,
                  "batch_size": args.batch_size,
                  "max_new_tokens": args.max_new_tokens, "threads": torch.get_num_threads(), "device": dev,
                  "device_name": torch.cuda.get_device_name() if dev.startswith("cuda") else "cpu",
                  "params": sum(p.numel() for p in model.parameters()), "mean_prompt_tokens": prompt_len,
                  "mean_response_tokens": mean_len,
                  "decode_attention": "native" if fast.native else "torch"},
        "flops_per_token": fpt, "peak_matmul_flops": peak, "results": rows,
        "peak_matmul_flops_decode_shape": peak_shape,
        "copy_bandwidth_Bps": bandwidth, "bytes_per_token": bpt,
        "arithmetic_floor_tokens_per_s": peak / fpt, "bandwidth_floor_tokens_per_s": bandwidth / bpt,
        "decode_shape": [args.batch_size, cfg.hidden_size, cfg.intermediate_size],
        "profile_fast": profile,
        "fast_vs_generate_tokens_per_s": rows["ddrl StaticCacheSampler"]["tokens_per_s_vs_generate"],
        "hf_vs_generate_tokens_per_s": rows["ddrl HFSampler"]["tokens_per_s_vs_generate"],
        "fast_vs_hf_tokens_per_s": (rows["ddrl StaticCacheSampler"]["tokens_per_s"]
                                    / rows["ddrl HFSampler"]["tokens_per_s"]),
        "fast_rollouts_identical_to_hf": same / len(jobs),
        "native_vs_torch_attention_tokens_per_s": (rows["ddrl StaticCacheSampler"]["tokens_per_s"]
                                                   / rows["StaticCacheSampler, torch attention"]["tokens_per_s"]),
        "native_rollouts_identical_to_torch_attention": same_attention / len(jobs),
        "loadavg_1_5_15_at_end": list(os.getloadavg()),
    }
    if args.rounds:  # each round's tokens/s ratios (every sampler makes the same tokens in every round: same seed)
        result["seconds_per_round"] = per_round
        for key, (a, b) in {"fast_vs_generate": ("ddrl StaticCacheSampler", "model.generate"),
                            "native_vs_torch_attention": ("ddrl StaticCacheSampler",
                                                          "StaticCacheSampler, torch attention")}.items():
            ratios = [(rows[a]["tokens"] / sa) / (rows[b]["tokens"] / sb)
                      for sa, sb in zip(per_round[a], per_round[b])]
            gm, lo, hi = geometric_mean_ci(ratios)
            result[f"{key}_rounds"] = ratios
            result[f"{key}_geomean_ci95"] = [gm, lo, hi]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{args.questions} questions x {args.n} samples, batch {args.batch_size}, {torch.get_num_threads()} threads; "
          f"model {result['setup']['params']:,} params, {fpt / 1e6:.2f} MFLOP/token, peak matmul "
          f"{peak / 1e9:.1f} GFLOP/s")
    print(f"matmul at the decode shape {result['decode_shape']}: {peak_shape / 1e9:.1f} GFLOP/s; copy bandwidth "
          f"{bandwidth / 1e9:.1f} GB/s (read + write); per token {fpt / 1e6:.2f} MFLOP and {bpt / 1e3:.1f} kB")
    print(f"ceilings: arithmetic {peak / fpt:,.0f} tokens/s, memory {bandwidth / bpt:,.0f} tokens/s")
    print(f"{'':<36} {'s':>7} {'tokens/s':>10} {'seq/s':>8} {'% of FLOP peak':>15} {'% of shape peak':>16} "
          f"{'% of bandwidth':>15}")
    for name, r in rows.items():
        print(f"{name:<36} {r['seconds']:7.2f} {r['tokens_per_s']:10.0f} {r['sequences_per_s']:8.1f} "
              f"{100 * r['fraction_of_peak']:14.2f}% {100 * r['fraction_of_shape_peak']:15.2f}% "
              f"{100 * r['fraction_of_bandwidth_floor']:14.2f}%")
    print(f"tokens/s vs model.generate: StaticCacheSampler {result['fast_vs_generate_tokens_per_s']:.2f}x, "
          f"HFSampler {result['hf_vs_generate_tokens_per_s']:.2f}x; StaticCacheSampler vs HFSampler "
          f"{result['fast_vs_hf_tokens_per_s']:.2f}x; rollouts identical to HFSampler's: "
          f"{100 * result['fast_rollouts_identical_to_hf']:.1f}%")
    print(f"decode attention ({result['setup']['decode_attention']}) vs torch's: "
          f"{result['native_vs_torch_attention_tokens_per_s']:.2f}x tokens/s; rollouts identical: "
          f"{100 * result['native_rollouts_identical_to_torch_attention']:.1f}%")
    if args.rounds:
        for key in ("fast_vs_generate", "native_vs_torch_attention"):
            gm, lo, hi = result[f"{key}_geomean_ci95"]
            print(f"{key} over {args.rounds} alternating rounds: "
                  f"{', '.join(f'{x:.2f}' for x in result[f'{key}_rounds'])}; geometric mean {gm:.2f} [{lo:.2f}, {hi:.2f}]")
    print("1-min load average before/after each timing: "
          + "; ".join(f"{n}: {', '.join(f'{a:.1f}/{b:.1f}' for a, b in v)}" for n, v in loads.items()))
    if profile:
        print(f"\nwhere StaticCacheSampler's time goes (one profiled call, {profile['wall_s']:.2f} s wall, "
              f"{profile['ops_called']:,} torch ops):")
        for g, sec in profile["groups_s"].items():
            print(f"  {g:<48} {sec:6.2f} s  {100 * sec / profile['wall_s']:5.1f}%")
        print(f"unprofiled, that is {1e6 * t_fast / profile['ops_called']:.1f} us of wall time per torch op: at this "
              "width the ops are too small to reach either ceiling, and the profiler's own per-op cost inflates "
              "every group above (its wall is ~2x the unprofiled one)")


if __name__ == "__main__":
    main()
