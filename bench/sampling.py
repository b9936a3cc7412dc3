"""Sampling throughput: the companion's HF sampler vs plain ``model.generate`` vs the CPU's arithmetic limit.

At the pipeline's shape (64 samples x 64 questions of the testbed test split, T = 1.0, 64 new tokens), on
the default testbed model, measures tokens/s and sequences/s of

- ``ddrl.sampling.HFSampler`` (our KV-cache loop: processed log-probs and entropies for every token), and
- ``model.generate(do_sample=True)`` on the same prompts and batch size (what a user would write instead),

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


def peak_matmul_flops(n: int = 1024, repeats: int = 20) -> float:
    """Best observed float32 FLOP/s of an n x n matmul (the CPU's practical arithmetic ceiling)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = max(best, 2 * n**3 / (time.perf_counter() - t))
    return best


def flops_per_token(model, context: float) -> float:
    """Forward FLOPs to produce one token at average context length ``context`` (2 per multiply-add)."""
    cfg = model.config
    emb = model.get_input_embeddings().weight.numel()
    body = sum(p.numel() for p in model.parameters()) - emb  # tied head: embeddings counted once
    head = emb  # the LM head matmul (vocab x hidden)
    attn = 2 * cfg.num_hidden_layers * context * cfg.hidden_size  # q.k and attn.v over the context
    return 2 * (body + head) + 2 * attn


def time_it(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default", help="testbed preset")
    ap.add_argument("--questions", type=int, default=64)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sampling.json"))
    args = ap.parse_args()
    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    from ddrl.prompts import format_prompt
    from ddrl.sampling import HFSampler
    from ddrl.testbed import build, generate_split, load

    model, tok = load(build(args.preset, progress=False))
    model.eval()
    prompts = [format_prompt(tok, r["prompt"], "none") for r in generate_split("test", args.questions, seed=0)]
    sampler = HFSampler(model, tok, batch_size=args.batch_size)
    box: dict = {}

    def ours():
        box["ours"] = sampler.sample(prompts, n=args.n, max_new_tokens=args.max_new_tokens, seed=0)

    ids = sampler.encode(prompts)
    jobs = [p for p in ids for _ in range(args.n)]

    def plain_generate():
        tok.padding_side = "left"
        total = 0
        torch.manual_seed(0)
        for s in range(0, len(jobs), args.batch_size):
            chunk = jobs[s : s + args.batch_size]
            enc = tok.pad({"input_ids": chunk}, return_tensors="pt")
            with torch.inference_mode():
                out = model.generate(**enc, do_sample=True, temperature=1.0, top_p=1.0, top_k=0,
                                     max_new_tokens=args.max_new_tokens, pad_token_id=tok.pad_token_id)
            new = out[:, enc["input_ids"].shape[1]:]
            # count tokens up to and including the first EOS, as our sampler does
            for row in new.tolist():
                total += row.index(tok.eos_token_id) + 1 if tok.eos_token_id in row else len(row)
        box["generate_tokens"] = total

    t_ours = time_it(ours, args.repeats)
    t_gen = time_it(plain_generate, args.repeats)
    toks_ours = sum(r.num_tokens for rs in box["ours"] for r in rs)
    toks_gen = box["generate_tokens"]
    prompt_len = sum(len(i) for i in ids) / len(ids)
    mean_len = toks_ours / len(jobs)
    fpt = flops_per_token(model, prompt_len + mean_len / 2)
    peak = peak_matmul_flops()
    rows = {
        "ddrl HFSampler": {"seconds": t_ours, "tokens": toks_ours},
        "model.generate": {"seconds": t_gen, "tokens": toks_gen},
    }
    for r in rows.values():
        r["tokens_per_s"] = r["tokens"] / r["seconds"]
        r["sequences_per_s"] = len(jobs) / r["seconds"]
        r["achieved_flops"] = r["tokens_per_s"] * fpt
        r["fraction_of_peak"] = r["achieved_flops"] / peak
    result = {
        "setup": {"preset": args.preset, "questions": args.questions, "n": args.n, "batch_size": args.batch_size,
                  "max_new_tokens": args.max_new_tokens, "threads": torch.get_num_threads(),
                  "params": sum(p.numel() for p in model.parameters()), "mean_prompt_tokens": prompt_len,
                  "mean_response_tokens": mean_len},
        "flops_per_token": fpt, "peak_matmul_flops": peak, "results": rows,
        "speedup_vs_generate": rows["model.generate"]["seconds"] / rows["ddrl HFSampler"]["seconds"],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{args.questions} questions x {args.n} samples, batch {args.batch_size}, {torch.get_num_threads()} threads; "
          f"model {result['setup']['params']:,} params, {fpt / 1e6:.2f} MFLOP/token, peak matmul "
          f"{peak / 1e9:.1f} GFLOP/s")
    print(f"{'':<16} {'s':>7} {'tokens/s':>10} {'seq/s':>8} {'% of peak':>10}")
    for name, r in rows.items():
        print(f"{name:<16} {r['seconds']:7.2f} {r['tokens_per_s']:10.0f} {r['sequences_per_s']:8.1f} "
              f"{100 * r['fraction_of_peak']:9.2f}%")
    print(f"HFSampler vs model.generate: {result['speedup_vs_generate']:.2f}x")


if __name__ == "__main__":
    main()
