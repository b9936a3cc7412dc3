"""One test-time RL step: the companion's trainer vs TRL's ``GRPOTrainer`` doing the same work, on CPU.

A step = sample G responses for each of 8 questions (testbed test split, data seed 0, chat-formatted with
no cue), majority-vote each question's group, reward agreement (1/0), keep K of the G, one AdamW update on
the kept sequences (clipped surrogate + 0.001 x KL to the initial model, token-mean over the update's
tokens). Same model (the default testbed), T = 1.0, top-p 1, 64 new tokens, lr 3e-5, weight decay 0.01,
grad clip 1.0, forward/backward micro-batches of 64 sequences.

TRL's GRPO trains on every sample of a group (it cannot vote over 64 and train on 32), so two equal-work
pairings are measured, plus ours as configured:

- ``a``: sample 64 / train 64 -- ours with ``k_train=64, mini_batch_size=512`` vs TRL ``num_generations=64``;
- ``b``: ours as designed, sample 64 / train 32 (``mini_batch_size=256``: one update) vs TRL
  ``num_generations=32`` (sample 32 / train 32: TRL samples half as much);
- ``real``: ours at the default ``TrainConfig`` (sample 64 / train 32, mini-batches of 64: four updates).

Pairing ``a`` also times two earlier versions of ours on the same work: ``ours_hf`` (today's trainer with the
update's log-probs by the Hugging Face forward, ``DDRL_LOGPROBS=hf``) and ``ours_full`` (the trainer before
issue 16: every pass of the update, HFSampler, the HF forward).

Our step is :func:`ddrl.train.collect_rollouts` + :func:`ddrl.train.ppo_update` + the LR scheduler, the
body of :func:`ddrl.train.train`'s loop without checkpointing and ground-truth metrics. TRL's step is one
optimizer step of ``GRPOTrainer.train`` (generation through ``transformers.generate``, no vLLM), timed by a
callback; its generation time comes from TRL's own ``profiling_context`` timers. Each variant: one warm-up
step, then the median of ``--repeats`` steps (``--profile DIR``: one more step under cProfile, not timed).
On the 2-core box one trainer's step time moved by up to 1.5x within minutes (docs/benchmarks.md), so a single
sequence of trainers can move their ratio by that much; ``--rounds R`` runs the trainers R times in
alternating order (A B, B A, ...) and reports every round's TRL / ours, their median and their geometric mean
with a 95% interval. Prints a table and writes ``bench/results/rl_step.json``. Run it alone
(2 cores oversubscribe)::

    OMP_NUM_THREADS=2 flock /tmp/ddrl-cpu.lock .venv/bin/python bench/rl_step.py
    OMP_NUM_THREADS=2 .venv/bin/python bench/rl_step.py --pairings a --trainers ours trl --rounds 6

Needs ``trl`` (with ``datasets``): ``.venv/bin/pip install -e ".[bench]"`` (torch is already installed, so the
CPU wheel stays).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUESTIONS = 8
LR = 3e-5
WEIGHT_DECAY = 0.01
KL_COEF = 0.001
MICRO_BATCH = 64


# ---------------------------------------------------------------------------------------------------------
# Ours
# ---------------------------------------------------------------------------------------------------------


def with_env(fn, **env):
    """``fn`` run with these environment variables set (``ddrl.infra.pool.environ``)."""
    from ddrl.infra.pool import environ

    def run(*a, **k):
        with environ(**env):
            return fn(*a, **k)
    return run


def hf_logprobs(fn):
    """``fn`` with the update's log-probs computed by the Hugging Face forward (``DDRL_LOGPROBS=hf``): the
    trainer before the shared-prompt forward (``ddrl.logprobs``)."""
    return with_env(fn, DDRL_LOGPROBS="hf")


def torch_attention(fn):
    """``fn`` with the sampler's decode attention computed by torch (``DDRL_DECODE_ATTENTION=torch``): the trainer
    before the C loop (``ddrl.accel.native_attention``)."""
    return with_env(fn, DDRL_DECODE_ATTENTION="torch")


def ours_steps(model_dir: Path, records: list[dict], n_votes: int, k_train: int, mini_batch: int,
               max_new_tokens: int, steps: int, profile: Path | None = None, lean: bool = True) -> list[dict]:
    """``steps`` RL steps of the companion's trainer on the same 8 questions; per step its wall time and the
    trainer's own sample / update split (``time/sample_s`` and ``time/update_s`` as :func:`train` logs them).
    ``lean=False`` is the trainer before issue 16: every pass of the update (``ppo_update(..., lean=False)``) and
    HFSampler; ``lean=True`` the trainer today (lean update, ``make_sampler("auto")``: StaticCacheSampler here)."""
    from ddrl.testbed import load
    from ddrl.sampling import make_sampler
    from ddrl.config import make_config
    from ddrl.train import _LRLambda, collect_rollouts, ppo_update, prepare_policy, strip_truth, warmup_steps

    cfg = make_config(n_votes=n_votes, k_train=k_train, mini_batch_size=mini_batch, micro_batch_size=MICRO_BATCH,
                      prompts_per_step=len(records), max_new_tokens=max_new_tokens, lr=LR, weight_decay=WEIGHT_DECAY,
                      kl_coef=KL_COEF, rollout_temperature=1.0, rollout_top_p=1.0, sample_batch_size=512, cue="none")
    model, tok = load(model_dir)
    policy, ref = prepare_policy(model, cfg)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    params = [p for p in policy.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps,
                            weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _LRLambda(warmup_steps(cfg, 64), 64, 0.0))
    sampler = make_sampler("auto" if lean else "hf", policy, tok, batch_size=cfg.sample_batch_size)
    questions = [strip_truth(r) for r in records]
    out = []
    for step in range(steps):
        prof = cProfile.Profile() if (profile is not None and step == steps - 1) else None
        if prof:
            prof.enable()
        t0 = time.perf_counter()
        ro = collect_rollouts(sampler, tok, questions, cfg, step, "none")
        t1 = time.perf_counter()
        upd = ppo_update(policy, ref, ro.samples, cfg, opt, step, pad_id, lean=lean)
        sched.step()
        t2 = time.perf_counter()
        if prof:
            prof.disable()
            prof.dump_stats(str(profile))
        out.append({"step_s": t2 - t0, "generate_s": t1 - t0, "update_s": t2 - t1, "updates": upd["actor/updates"],
                    "sampled": sum(len(r) for r in ro.answers), "trained": len(ro.samples),
                    "tokens_sampled": ro.metrics["tokens/sampled"], "tokens_trained": ro.metrics["tokens/trained"],
                    "threads": torch.get_num_threads()})
    return out


# ---------------------------------------------------------------------------------------------------------
# TRL
# ---------------------------------------------------------------------------------------------------------


def majority_agreement_reward(prompts, completions, **kwargs) -> list[float]:
    """TTRL's pseudo-reward as a TRL reward function: group the completions by prompt, majority-vote the
    ``\\boxed{}`` answers of each group, reward 1 for agreeing with the vote (the same code as ours)."""
    from ddrl.answers import extract_boxed
    from ddrl.voting import pseudo_rewards
    from ddrl.voting import majority_vote

    groups: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(prompts):
        groups[p].append(i)
    rewards = [0.0] * len(prompts)
    for idx in groups.values():
        r = pseudo_rewards(majority_vote([extract_boxed(completions[i]) for i in idx]))
        for i, ri in zip(idx, r):
            rewards[i] = float(ri)
    return rewards


def trl_steps(model_dir: Path, prompts: list[str], group: int, max_new_tokens: int, steps: int,
              gradient_checkpointing: bool, profile: Path | None = None) -> list[dict]:
    """``steps`` optimizer steps of TRL's ``GRPOTrainer``: each generates ``group`` completions for every
    prompt, scores them with :func:`majority_agreement_reward` and makes exactly one optimizer update on all
    ``len(prompts) * group`` sequences (micro-batches of 64, gradient accumulation over the rest)."""
    import trl.extras.profiling as trl_profiling
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from ddrl.testbed import load

    total = len(prompts) * group
    if total % MICRO_BATCH:
        raise ValueError(f"prompts x group = {total} must be a multiple of the micro-batch {MICRO_BATCH}")
    timers: dict[str, float] = defaultdict(float)
    original = trl_profiling.ProfilingContext._log_metrics

    def record(self, duration: float) -> None:  # TRL's own timers, captured instead of sent to a tracker
        timers[self.name] += duration
        original(self, duration)

    rows: list[dict] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            timers.clear()
            self.t0 = time.perf_counter()
            if profile is not None and state.global_step == steps - 1:
                self.prof = cProfile.Profile()
                self.prof.enable()

        def on_step_end(self, args, state, control, **kw):
            dt = time.perf_counter() - self.t0
            if getattr(self, "prof", None) is not None:
                self.prof.disable()
                self.prof.dump_stats(str(profile))
                self.prof = None
            gen = timers.get("GRPOTrainer.transformers.generate", float("nan"))
            rows.append({"step_s": dt, "generate_s": gen, "update_s": dt - gen,
                         # _prepare_inputs of the first micro-step: generation, rewards, reference log-probs
                         "prepare_s": timers.get("GRPOTrainer._prepare_inputs", float("nan")),
                         "sampled": total, "trained": total, "updates": 1, "threads": torch.get_num_threads(),
                         "timers": dict(timers)})

    model, tok = load(model_dir)
    with tempfile.TemporaryDirectory() as out_dir:
        args = GRPOConfig(
            output_dir=out_dir, use_cpu=True, bf16=False, fp16=False, report_to="none",
            logging_strategy="no", save_strategy="no", disable_tqdm=True, seed=0,
            max_steps=steps, learning_rate=LR, lr_scheduler_type="constant", weight_decay=WEIGHT_DECAY,
            max_grad_norm=1.0, warmup_steps=0,
            per_device_train_batch_size=MICRO_BATCH, gradient_accumulation_steps=total // MICRO_BATCH,
            num_generations=group, max_completion_length=max_new_tokens, temperature=1.0, top_p=1.0, top_k=0,
            beta=KL_COEF, epsilon=0.2, num_iterations=1, loss_type="dapo", scale_rewards="group",
            use_vllm=False, gradient_checkpointing=gradient_checkpointing, shuffle_dataset=False,
            log_completions=False, dataloader_num_workers=0,
        )
        trainer = GRPOTrainer(model=model, reward_funcs=majority_agreement_reward, args=args,
                              train_dataset=Dataset.from_dict({"prompt": list(prompts)}), processing_class=tok,
                              callbacks=[StepTimer()])
        trl_profiling.ProfilingContext._log_metrics = record
        try:
            trainer.train()
        finally:
            trl_profiling.ProfilingContext._log_metrics = original
    return rows


# ---------------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------------


def summarize(rows: list[dict], warmup: int, repeats: int) -> dict:
    """Medians over the ``repeats`` steps after ``warmup`` (a profiled extra step after them is not counted)."""
    timed = rows[warmup : warmup + repeats]
    med = {k: statistics.median(r[k] for r in timed) for k in ("step_s", "generate_s", "update_s")}
    return {**{f"median_{k}": v for k, v in med.items()}, "steps": rows, "warmup_steps": warmup,
            "sampled": rows[-1]["sampled"], "trained": rows[-1]["trained"], "updates": rows[-1]["updates"]}


def geometric_mean_ci(ratios: list[float]) -> tuple[float, float, float]:
    """Geometric mean of per-round ratios and its 95% t-interval (on the log ratios, rounds as independent
    replicates)."""
    from scipy import stats

    logs = [math.log(x) for x in ratios]
    m, se = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    t = float(stats.t.ppf(0.975, len(logs) - 1))
    return math.exp(m), math.exp(m - t * se), math.exp(m + t * se)


def merge_rounds(rounds: list[dict]) -> dict:
    """Each trainer's results over ``--rounds``: the medians over rounds of its per-round medians (the first
    round's step rows and descriptions are kept; every round's summary is under ``rounds``)."""
    out = {}
    for who in rounds[0]:
        runs = [r[who] for r in rounds]
        out[who] = {**runs[0], **{k: statistics.median(x[k] for x in runs)
                                  for k in ("median_step_s", "median_generate_s", "median_update_s")},
                    "rounds": [{k: x[k] for k in ("median_step_s", "median_generate_s", "median_update_s",
                                                  "loadavg_before", "loadavg_after")} for x in runs]}
    return out


def top_functions(path: Path, n: int = 15) -> str:
    buf = io.StringIO()
    pstats.Stats(str(path), stream=buf).sort_stats("cumulative").print_stats(n)
    return buf.getvalue()


def markdown_table(result: dict) -> str:
    """The results of a run (the JSON this script writes) as the Markdown table of docs/benchmarks.md."""
    lines = ["| pairing | trainer | sampled | trained | updates | s/step | generation s | rest s | TRL / ours |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in result["results"].items():
        for who in ("ours", "ours_hf", "ours_full", "trl"):
            if who in r:
                x = r[who]
                ratio = f"{r['trl_over_ours']:.2f}x" if who == "trl" else ""
                lines.append(f"| {name} | {who} | {x['sampled']} | {x['trained']} | {x['updates']} | "
                             f"{x['median_step_s']:.2f} | {x['median_generate_s']:.2f} | {x['median_update_s']:.2f} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default", help="testbed preset")
    ap.add_argument("--n", type=int, default=64, help="samples per question (ours; TRL's group in pairing a)")
    ap.add_argument("--k", type=int, default=32, help="trained per question (ours; TRL's group in pairing b)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3, help="timed steps after one warm-up step")
    ap.add_argument("--pairings", nargs="+", default=["a", "b", "real"], choices=["a", "b", "real"])
    ap.add_argument("--trl-gradient-checkpointing", action="store_true",
                    help="keep GRPOConfig's default gradient_checkpointing=True (off by default: ours does not checkpoint)")
    ap.add_argument("--trainers", nargs="+", default=None, choices=["ours", "ours_hf", "ours_torch_attention", "ours_full", "trl"],
                    help="run only these of each pairing's trainers (default: all)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run each pairing's trainers this many times, in alternating order (A B, B A, ...), and take "
                         "every ratio per round: a drift of the machine's speed then weighs on both trainers alike. "
                         "Each trainer's numbers are then the medians over rounds of its per-round medians")
    ap.add_argument("--profile", default=None,
                    help="directory for cProfile dumps of one extra step per run (after the timed ones, not counted)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "rl_step.json"))
    ap.add_argument("--markdown", default=None, metavar="JSON",
                    help="only print the Markdown table of an earlier run's JSON (no measurement)")
    args = ap.parse_args()
    if args.markdown:
        print(markdown_table(json.loads(Path(args.markdown).read_text())))
        return
    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    threads = torch.get_num_threads()

    import trl
    import transformers

    from ddrl.prompts import format_prompt
    from ddrl.testbed import build, generate_split, load

    model_dir = build(args.preset, progress=False)
    records = generate_split("test", QUESTIONS, seed=0)
    _, tok = load(model_dir)
    prompts = [format_prompt(tok, r["prompt"], "none") for r in records]
    prof_dir = Path(args.profile) if args.profile else None
    steps = 1 + args.repeats + (1 if prof_dir else 0)  # warm-up, timed steps, a profiled step (not timed)
    if prof_dir:
        prof_dir.mkdir(parents=True, exist_ok=True)

    def prof(name: str) -> Path | None:
        return prof_dir / f"{name}.prof" if prof_dir else None

    # name -> (who, what it does, runner)
    plan = {
        "a": [("ours", f"sample {args.n} / train {args.n}, 1 update",
               lambda: ours_steps(model_dir, records, args.n, args.n, QUESTIONS * args.n, args.max_new_tokens, steps,
                                  prof("a_ours"))),
              ("ours_hf", f"sample {args.n} / train {args.n}, 1 update, log-probs by the HF forward (DDRL_LOGPROBS=hf)",
               lambda: hf_logprobs(ours_steps)(model_dir, records, args.n, args.n, QUESTIONS * args.n,
                                               args.max_new_tokens, steps, prof("a_ours_hf"))),
              ("ours_torch_attention", f"sample {args.n} / train {args.n}, 1 update, torch's decode attention "
                                       "(DDRL_DECODE_ATTENTION=torch)",
               lambda: torch_attention(ours_steps)(model_dir, records, args.n, args.n, QUESTIONS * args.n,
                                                   args.max_new_tokens, steps, prof("a_ours_torch_attention"))),
              ("ours_full", f"sample {args.n} / train {args.n}, 1 update, every pass (lean=False), HF forward",
               lambda: hf_logprobs(ours_steps)(model_dir, records, args.n, args.n, QUESTIONS * args.n,
                                               args.max_new_tokens, steps, prof("a_ours_full"), lean=False)),
              ("trl", f"group {args.n} (sample {args.n} / train {args.n}), 1 update",
               lambda: trl_steps(model_dir, prompts, args.n, args.max_new_tokens, steps,
                                 args.trl_gradient_checkpointing, prof("a_trl")))],
        "b": [("ours", f"sample {args.n} / train {args.k}, 1 update",
               lambda: ours_steps(model_dir, records, args.n, args.k, QUESTIONS * args.k, args.max_new_tokens, steps,
                                  prof("b_ours"))),
              ("trl", f"group {args.k} (sample {args.k} / train {args.k}), 1 update",
               lambda: trl_steps(model_dir, prompts, args.k, args.max_new_tokens, steps,
                                 args.trl_gradient_checkpointing, prof("b_trl")))],
        "real": [("ours", f"sample {args.n} / train {args.k}, mini-batches of 64 (TrainConfig default)",
                  lambda: ours_steps(model_dir, records, args.n, args.k, 64, args.max_new_tokens, steps,
                                     prof("real_ours")))],
    }
    if args.rounds < 1:
        raise SystemExit(f"--rounds must be >= 1, got {args.rounds}")
    results: dict = {}
    for name in args.pairings:
        entries = [e for e in plan[name] if args.trainers is None or e[0] in args.trainers]
        rounds: list[dict] = []
        for rnd in range(args.rounds):
            this: dict = {}
            for who, what, run in (entries if rnd % 2 == 0 else entries[::-1]):
                t, load_before = time.perf_counter(), os.getloadavg()
                res = summarize(run(), warmup=1, repeats=args.repeats)
                res["what"] = what
                res["loadavg_before"], res["loadavg_after"] = load_before, os.getloadavg()  # the machine is shared
                this[who] = res
                print(f"[{name}] round {rnd + 1}/{args.rounds} {who}: {what}: median {res['median_step_s']:.2f} s/step "
                      f"(run {time.perf_counter() - t:.0f} s)", flush=True)
            rounds.append(this)
        results[name] = rounds[0] if args.rounds == 1 else merge_rounds(rounds)
        if "trl" in results[name] and "ours" in results[name]:
            per_round = [r["trl"]["median_step_s"] / r["ours"]["median_step_s"] for r in rounds]
            results[name]["trl_over_ours"] = statistics.median(per_round)
            if args.rounds > 1:
                gm, lo, hi = geometric_mean_ci(per_round)
                results[name].update({"trl_over_ours_rounds": per_round, "trl_over_ours_geomean": gm,
                                      "trl_over_ours_geomean_ci95": [lo, hi]})
                print(f"[{name}] TRL / ours per round: {', '.join(f'{x:.2f}' for x in per_round)}; median "
                      f"{statistics.median(per_round):.2f}, geometric mean {gm:.2f} [{lo:.2f}, {hi:.2f}]", flush=True)
        if "ours_torch_attention" in results[name] and "ours" in results[name]:
            per_round = [r["ours_torch_attention"]["median_step_s"] / r["ours"]["median_step_s"] for r in rounds]
            per_round_sample = [r["ours_torch_attention"]["median_generate_s"] / r["ours"]["median_generate_s"]
                                for r in rounds]
            results[name]["torch_attention_over_ours_rounds"] = per_round
            results[name]["torch_attention_over_ours_generate_rounds"] = per_round_sample
            if args.rounds > 1:
                for label, xs in (("step", per_round), ("generate", per_round_sample)):
                    gm, lo, hi = geometric_mean_ci(xs)
                    results[name][f"torch_attention_over_ours_{label}_geomean_ci95"] = [gm, lo, hi]
                    print(f"[{name}] torch attention / ours, {label} s per round: {', '.join(f'{x:.2f}' for x in xs)};"
                          f" geometric mean {gm:.2f} [{lo:.2f}, {hi:.2f}]", flush=True)
        if "ours_hf" in results[name] and "ours" in results[name]:
            results[name]["hf_over_shared"] = (results[name]["ours_hf"]["median_update_s"]
                                               / results[name]["ours"]["median_update_s"])
            if "trl" in results[name]:
                results[name]["trl_over_ours_hf"] = (results[name]["trl"]["median_step_s"]
                                                     / results[name]["ours_hf"]["median_step_s"])
        if "ours_full" in results[name] and "ours" in results[name]:
            results[name]["full_over_lean"] = (results[name]["ours_full"]["median_update_s"]
                                               / results[name]["ours"]["median_update_s"])

    result = {
        "setup": {"preset": args.preset, "questions": QUESTIONS, "n": args.n, "k": args.k,
                  "max_new_tokens": args.max_new_tokens, "temperature": 1.0, "lr": LR, "kl_coef": KL_COEF,
                  "micro_batch": MICRO_BATCH, "threads": threads, "repeats": args.repeats, "rounds": args.rounds,
                  "trl_gradient_checkpointing": args.trl_gradient_checkpointing, "trl": trl.__version__,
                  "transformers": transformers.__version__, "torch": torch.__version__},
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")

    print(f"\n{QUESTIONS} questions, {args.max_new_tokens} new tokens, {threads} threads, testbed:{args.preset}; "
          f"median of {args.repeats} steps after 1 warm-up")
    print(f"{'pairing':<8} {'trainer':<6} {'sampled':>7} {'trained':>7} {'upd':>4} {'s/step':>8} {'generate':>9} "
          f"{'rest':>8} {'TRL/ours':>9}")
    for name, r in results.items():
        for who in ("ours", "ours_hf", "ours_full", "trl"):
            if who not in r:
                continue
            x = r[who]
            ratio = f"{r['trl_over_ours']:.2f}x" if who == "trl" else ""
            print(f"{name:<8} {who:<6} {x['sampled']:>7} {x['trained']:>7} {x['updates']:>4} {x['median_step_s']:8.2f} "
                  f"{x['median_generate_s']:9.2f} {x['median_update_s']:8.2f} {ratio:>9}")
    if prof_dir:
        for p in sorted(prof_dir.glob("*.prof")):
            print(f"\n=== cProfile {p.stem} (extra step, cumulative) ===")
            print(top_functions(p))


if __name__ == "__main__":
    main()
