"""The update with each log-prob backend (``ddrl.logprobs``), interleaved in one process: ``hf`` (one Hugging
Face forward per row) vs ``shared-prompt`` (each distinct prompt once, its K/V cache indexed out to its rows).

The work is pairing a of ``bench/rl_step.py``: 8 test questions of the default testbed x 64 samples (T = 1,
64 new tokens), one :func:`ddrl.train.ppo_update` on all 512 (mini-batch 512, micro-batches of 64, KL 0.001,
so a reference pass, the policy's gradient pass and the other no-grad passes all run). The rollouts are
sampled once; then ``--repeats`` updates with each backend alternate (hf, shared, hf, shared, ...) so that
drifts of the machine's speed hit both alike. Reports each backend's median and hf / shared; writes
``bench/results/logprobs.json``. Run it alone::

    OMP_NUM_THREADS=2 .venv/bin/python bench/logprobs.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=8, help="timed updates per backend (after one warm-up each)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "logprobs.json"))
    args = ap.parse_args()
    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    from ddrl.config import make_config
    from ddrl.accel.logprob_backends import pinned_backend
    from ddrl.sampling import make_sampler
    from ddrl.testbed import build, generate_split, load
    from ddrl.train import collect_rollouts, ppo_update, prepare_policy, strip_truth

    cfg = make_config(n_votes=64, k_train=64, mini_batch_size=512, micro_batch_size=64, prompts_per_step=8,
                      max_new_tokens=64, lr=3e-5, weight_decay=0.01, kl_coef=0.001, rollout_temperature=1.0,
                      rollout_top_p=1.0, sample_batch_size=512, cue="none")
    model, tok = load(build("default", progress=False))
    policy, ref = prepare_policy(model, cfg)
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=cfg.lr, weight_decay=0.01)
    ro = collect_rollouts(make_sampler("auto", policy, tok, batch_size=512),
                          tok, [strip_truth(r) for r in generate_split("test", 8, seed=0)], cfg, 0, "none")
    prompt_tokens = sum(len(s.prompt_ids) for s in ro.samples)
    response_tokens = sum(len(s.response_ids) for s in ro.samples)
    times: dict[str, list[float]] = {"hf": [], "shared-prompt": []}
    for i in range(args.repeats + 1):
        for backend in times:
            with pinned_backend(backend):
                t0 = time.perf_counter()
                ppo_update(policy, ref, ro.samples, cfg, opt, i, tok.pad_token_id)
                if i:  # the first round warms up
                    times[backend].append(time.perf_counter() - t0)
    med = {b: statistics.median(v) for b, v in times.items()}
    result = {"setup": {"questions": 8, "samples": len(ro.samples), "prompt_tokens": prompt_tokens,
                        "response_tokens": response_tokens, "threads": torch.get_num_threads(),
                        "repeats": args.repeats, "torch": torch.__version__, "loadavg_after": os.getloadavg()},
              "update_s": times, "median_update_s": med, "hf_over_shared": med["hf"] / med["shared-prompt"]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{len(ro.samples)} sequences ({prompt_tokens} prompt + {response_tokens} response tokens), "
          f"{torch.get_num_threads()} threads, median of {args.repeats} interleaved updates")
    for b, v in times.items():
        print(f"{b:<14} {med[b]:.3f} s  ({', '.join(f'{x:.2f}' for x in v)})")
    print(f"hf / shared-prompt: {result['hf_over_shared']:.2f}x")


if __name__ == "__main__":
    main()
