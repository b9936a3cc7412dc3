"""Test-time reinforcement learning (the paper's Algorithm 1): TTRL, DDRL and the rows in between.

Paper: Algorithm 1 (appendix, alg:ddrl), both phases; TTRL is Sec. 2.1, DDRL's parts Sec. 3.1-3.3.

Its settings are :class:`ddrl.config.TrainConfig`; one training function, CleanRL style. Per step (the loop in
:func:`_train` carries the same numbers):

1. take ``prompts_per_step`` unlabeled questions (a fresh deterministic shuffle of all of them per episode; with
   ``drop_last``, as the official loader, the last partial step of an episode is dropped);
2. sample N rollouts per question at the rollout temperature; extract each ``\\boxed{}`` answer;
3. majority vote -> pseudo-label; reward r_i (``reward``, :mod:`ddrl.rewards`): for TTRL and DDRL the
   pseudo-reward 1 iff rollout i's voting key equals the label's (all 0 when no rollout has an answer);
4. keep K of the N rollouts (``selection``: random = TTRL, bcs = DDRL's balanced confidence-aware sampling);
5. advantages within each question's K (``advantage``: grpo = TTRL, grpo_no_std, fixed = DDRL's DAE);
6. one PPO epoch over mini-batches: clipped surrogate (dual clip) + kl_coef * k3 KL to the initial model,
   gradient clipping, AdamW with linear warmup and cosine decay;
7. log metrics (ground-truth diagnostics computed *after* the update, from the answers alone), checkpoint.

After the RL steps, ``cor=True`` runs consensus-based off-policy refinement (:mod:`ddrl.cor`).

Ground truth never reaches steps 1-6: :func:`train` splits every record into the question (everything but
``answer``) and the truth, and only :mod:`ddrl.evaluate`'s metric functions see the truth
(``tests/test_train.py`` checks that shuffled ground truths give bitwise-identical training).
"""

from __future__ import annotations

import copy
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ddrl.advantages import clip_advantages, entropy_reshape, get_advantage
from ddrl.answers import extract_boxed
from ddrl.config import TrainConfig, key_fields, resolve_cue, validate_config
from ddrl.cor import refine_with_config
from ddrl.etmr import tree_sample
from ddrl.evaluate import reward_counts, summarize_reward_counts
from ddrl.logprobs import old_logprobs_from_sampler, response_logprobs
from ddrl.losses import kl_low_var, masked_token_mean, policy_loss
from ddrl.models import load_model, resolve_device
from ddrl.infra.progress import tqdm
from ddrl.prompts import format_prompt
from ddrl.infra.rundir import RunDir, fingerprint
from ddrl.sampling import make_sampler
from ddrl.seeds import derive_seed, numpy_generator
from ddrl.rewards import Group, get_reward, is_binary
from ddrl.selection import get_selection
from ddrl.voting import majority_vote


# ---------------------------------------------------------------------------------------------------------
# Pure pieces of a step
# ---------------------------------------------------------------------------------------------------------


def strip_truth(record: dict) -> dict:
    """The question as the reward path sees it: the record without its ``answer``."""
    return {k: v for k, v in record.items() if k != "answer"}


def steps_per_episode(num_questions: int, prompts_per_step: int, drop_last: bool = False) -> int:
    """RL steps per pass over the questions: ``ceil(questions / prompts_per_step)``, or with ``drop_last`` (the
    official loader) ``floor``, which must leave at least one step."""
    if drop_last:
        if num_questions < prompts_per_step:
            raise ValueError(f"drop_last=True with {num_questions} questions and prompts_per_step={prompts_per_step} "
                             "leaves no RL step; lower prompts_per_step or set drop_last=False")
        return num_questions // prompts_per_step
    return math.ceil(num_questions / prompts_per_step)


def step_question_indices(seed: int, step: int, num_questions: int, prompts_per_step: int,
                          drop_last: bool = False) -> list[int]:
    """Indices of the questions of ``step``: episode ``e = step // steps_per_episode`` shuffles all questions
    with ``(seed, "episode", e)`` and takes the step's slice (the last slice may be shorter, unless
    ``drop_last``: then the questions past the last full step sit the episode out)."""
    spe = steps_per_episode(num_questions, prompts_per_step, drop_last)
    episode, pos = divmod(step, spe)
    order = numpy_generator(seed, "episode-order", episode).permutation(num_questions)
    return [int(i) for i in order[pos * prompts_per_step : (pos + 1) * prompts_per_step]]


def lr_factor(step: int, warmup: int, total: int, extra_factor: float = 0.0) -> float:
    """Learning-rate multiplier at RL step ``step``: linear warmup ``(step+1)/warmup`` for the first
    ``warmup`` steps, cosine decay to 0 over the remaining ``total - warmup``, and ``extra_factor`` (the
    additional-RL learning rate over the peak one) for steps past ``total``."""
    if step >= total:
        return extra_factor
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


class _LRLambda:
    """Picklable-by-value LambdaLR multiplier (its attributes go into the scheduler's state_dict)."""

    def __init__(self, warmup: int, total: int, extra_factor: float):
        self.warmup, self.total, self.extra_factor = warmup, total, extra_factor

    def __call__(self, step: int) -> float:
        return lr_factor(step, self.warmup, self.total, self.extra_factor)


def extra_rl_factor(cfg: TrainConfig) -> float:
    """The additional-RL learning rate over the peak one: 1 by default (``extra_rl_lr=None``: the extra steps
    run at the run's own peak learning rate; the paper gives only their epochs and minutes, Table 4)."""
    return 1.0 if cfg.extra_rl_lr is None else cfg.extra_rl_lr / cfg.lr


def warmup_steps(cfg: TrainConfig, total_steps: int) -> int:
    return cfg.warmup_steps if cfg.warmup_steps >= 0 else int(round(cfg.warmup_ratio * total_steps))


# ---------------------------------------------------------------------------------------------------------
# One RL step
# ---------------------------------------------------------------------------------------------------------


@dataclass
class TrainSample:
    """One trained rollout: the prompt's token ids, the response's, its advantage and pseudo-reward."""

    prompt_ids: list[int]
    response_ids: list[int]
    advantage: float
    reward: float
    sampler_logprobs: list[float]
    sampler_entropies: list[float] | None = None  # per token, of the distribution sampled from (None: not reported)


@dataclass
class StepRollouts:
    """What the reward path produced for one step (no ground truth anywhere in here)."""

    answers: list[list[str | None]]  # per question, N extracted answers
    votes: list  # per question, ddrl.voting.Vote
    rewards: list[np.ndarray]  # per question, N pseudo-rewards
    selected: list[list[int]]  # per question, the K trained rollout indices
    samples: list[TrainSample]
    metrics: dict[str, float]


def collect_rollouts(sampler, tokenizer, questions: Sequence[dict], cfg: TrainConfig, step: int, cue: str,
                     progress: bool = False) -> StepRollouts:
    """Steps 1-5 of Algorithm 1 for one batch of questions: sample, vote, reward, select, advantages.

    ``questions`` are records without ``answer`` (this function has no way to see ground truth).
    """
    if any("answer" in q for q in questions):
        raise ValueError("collect_rollouts: questions must not carry ground truth ('answer'); use strip_truth")
    select, advantage_fn = get_selection(cfg.selection), get_advantage(cfg.advantage)
    reward_fn = get_reward(cfg.reward)
    prompts = [format_prompt(tokenizer, q["prompt"], cue) for q in questions]
    prompt_ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    seed = derive_seed(cfg.seed, "rollouts", step)
    if cfg.rollout == "etmr":  # all leaves of each entropy-fork tree vote
        tree = tree_sample(sampler, prompts, m=cfg.etmr_m, forks=cfg.etmr_forks, branches=cfg.etmr_branches,
                           temperature=cfg.rollout_temperature, top_p=cfg.rollout_top_p,
                           max_new_tokens=cfg.max_new_tokens, seed=seed, progress=progress)
        rollouts, generated = tree.leaves, sum(tree.generated_tokens)
    else:
        rollouts = sampler.sample(prompts, n=cfg.n_votes, temperature=cfg.rollout_temperature,
                                  top_p=cfg.rollout_top_p, max_new_tokens=cfg.max_new_tokens, seed=seed,
                                  progress=progress)
        generated = sum(r.num_tokens for rs in rollouts for r in rs)
    answers, votes, rewards, selected, samples, advs = [], [], [], [], [], []
    for q, rs in enumerate(rollouts):
        a = [extract_boxed(r.text) for r in rs]
        vote = majority_vote(a)
        ents = None if any(r.entropies is None for r in rs) else [float(np.mean(r.entropies)) if len(r.entropies)
                                                                   else 0.0 for r in rs]
        rew = np.asarray(reward_fn(Group(vote, ents, numpy_generator(cfg.seed, "reward", step, q)), cfg), np.float64)
        idx = select(vote.counts, min(cfg.k_train, len(rs)), numpy_generator(cfg.seed, "select", step, q))
        adv = np.asarray(advantage_fn(rew[idx]), dtype=np.float64)
        if cfg.reshape == "entropy":
            adv = entropy_reshape(adv, [float(np.mean(rs[i].entropies)) for i in idx])
        elif cfg.reshape == "clip":
            adv = clip_advantages(adv)
        for i, ai in zip(idx, adv):
            samples.append(TrainSample(prompt_ids[q], list(rs[i].token_ids), float(ai), float(rew[i]),
                                       list(rs[i].logprobs), None if rs[i].entropies is None else list(rs[i].entropies)))
        answers.append(a), votes.append(vote), rewards.append(rew), selected.append(list(idx)), advs.append(adv)
    flat = [r for rs in rollouts for r in rs]
    ents = [e for r in flat if r.entropies for e in r.entropies]
    all_adv = np.concatenate(advs)
    metrics = {
        "reward/pseudo_mean": float(np.mean(np.concatenate(rewards))),
        "reward/selected_mean": float(np.mean([s.reward for s in samples])),
        "label/none_frac": float(np.mean([v.label is None for v in votes])),
        "label/majority_ratio": float(np.mean([v.label_count / len(v.counts) for v in votes])),
        "adv/mean": float(all_adv.mean()),
        "adv/abs_mean": float(np.abs(all_adv).mean()),
        "adv/pos_frac": float((all_adv > 0).mean()),
        "adv/neg_frac": float((all_adv < 0).mean()),
        "rollout/entropy": float(np.mean(ents)) if ents else float("nan"),
        "rollout/len_mean": float(np.mean([r.num_tokens for r in flat])),
        "rollout/generated_tokens": float(generated),  # tokens decoded this step (ETMR shares prefixes)
        "rollout/voters_mean": float(np.mean([len(rs) for rs in rollouts])),
        "rollout/truncated_frac": float(np.mean([r.finish_reason == "length" for r in flat])),
        "rollout/no_answer_frac": float(np.mean([x is None for a in answers for x in a])),
        "tokens/sampled": int(sum(r.num_tokens for r in flat)),
        "tokens/trained": int(sum(len(s.response_ids) for s in samples)),
    }
    return StepRollouts(answers, votes, rewards, selected, samples, metrics)


def _chunks(seq: Sequence, size: int):
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def ppo_update(policy, ref_model, samples: Sequence[TrainSample], cfg: TrainConfig, optimizer, step: int,
               pad_id: int, lean: bool = True) -> dict[str, float]:
    """Step 6: ``ppo_epochs`` passes of mini-batch PPO updates on ``samples``.

    old log-probs come from the policy before any update of this step and reference log-probs from the
    initial model (``ref_model``, or the policy with its LoRA adapter disabled when ``ref_model`` is None),
    both in a no-grad pass. The loss is ``policy_loss + kl_coef * token-mean k3 KL``; gradients accumulate
    over micro-batches weighted by their share of the mini-batch's tokens, so the update equals one
    token-mean over the whole mini-batch.

    Passes whose result is known are skipped (docs/benchmarks.md, "A leaner update"):

    - the reference pass when ``kl_coef == 0`` (the KL term is multiplied by 0; ``actor/kl`` is then NaN);
    - the old-log-prob pass for the first mini-batch of the first epoch: no update has happened yet, so
      the old log-probs are the policy's own, and the gradient pass's ``logp.detach()`` is used (as verl does
      on-policy). This is the same quantity computed once instead of twice; the two passes pad their rows
      to different widths, so they agree to float32 rounding (~1e-7), not bitwise (tests/test_train.py);
    - the whole old-log-prob pass where :func:`ddrl.logprobs.old_logprobs_from_sampler` allows it
      (``DDRL_LOGPROBS=auto``, a float32 policy on the CPU, ``top_p = 1``): every sample's old log-probs are
      then the sampler's (``TrainSample.sampler_logprobs``, the same distribution from a KV-cached decode,
      ~1e-6 apart), and ``actor/entropy`` is the sampler's entropy of the trained tokens;
      ``actor/old_logp_vs_sampler`` is measured on the first mini-batch's gradient pass.

    ``lean=False`` runs every pass (the update before this change), for tests and ``bench/rl_step.py``.
    """
    T = cfg.rollout_temperature
    prompts = [s.prompt_ids for s in samples]
    responses = [s.response_ids for s in samples]
    orders = [numpy_generator(cfg.seed, "minibatch", step, epoch).permutation(len(samples))
              for epoch in range(cfg.ppo_epochs)]
    from_sampler = lean and old_logprobs_from_sampler(policy, T, cfg.rollout_top_p) and all(
        s.sampler_entropies is not None and len(s.sampler_logprobs) == len(s.response_ids) for s in samples)
    on_policy = {int(i) for i in orders[0][: cfg.mini_batch_size]} if lean else set()
    use_ref = cfg.kl_coef != 0 or not lean
    old_lp: dict[int, torch.Tensor] = {}
    ref_lp: dict[int, torch.Tensor] = {}
    stats = {"ent_sum": 0.0, "ent_ntok": 0, "diff_sum": 0.0, "diff_ntok": 0}

    def diagnostics(idx, lp, mask, ent) -> None:
        """``actor/old_logp_vs_sampler`` (and, unless the sampler's entropies serve, ``actor/entropy``) of the
        rows ``idx`` (pre-update log-probs)."""
        for j, i in enumerate(idx):
            n = len(responses[i])
            stats["diff_sum"] += float((lp[j, :n].cpu() - torch.tensor(samples[i].sampler_logprobs)).abs().sum())
        stats["diff_ntok"] += int(mask.sum())
        if not from_sampler:
            stats["ent_sum"] += float(ent.sum())
            stats["ent_ntok"] += int(mask.sum())

    if from_sampler:  # the old log-probs are the sampler's: no no-grad pass over the policy
        for i, s in enumerate(samples):
            old_lp[i] = torch.tensor(s.sampler_logprobs, dtype=torch.float32)
            stats["ent_sum"] += float(sum(s.sampler_entropies))
            stats["ent_ntok"] += len(s.sampler_entropies)

    was_training = policy.training
    policy.eval()
    with torch.no_grad():
        rest = [i for i in range(len(samples)) if i not in on_policy and i not in old_lp]
        for idx in _chunks(rest, cfg.micro_batch_size):
            p, r = [prompts[i] for i in idx], [responses[i] for i in idx]
            lp, mask, ent = response_logprobs(policy, p, r, T, pad_id, with_entropy=True)
            for j, i in enumerate(idx):
                old_lp[i] = lp[j, : len(responses[i])].cpu()
            diagnostics(idx, lp, mask, ent)
        for idx in _chunks(range(len(samples)) if use_ref else [], cfg.micro_batch_size):
            p, r = [prompts[i] for i in idx], [responses[i] for i in idx]
            if ref_model is not None:
                rlp, _, _ = response_logprobs(ref_model, p, r, T, pad_id)
            else:
                with policy.disable_adapter():
                    rlp, _, _ = response_logprobs(policy, p, r, T, pad_id)
            for j, i in enumerate(idx):
                ref_lp[i] = rlp[j, : len(responses[i])].cpu()
    policy.train(was_training)

    def pad(rows: list[torch.Tensor], width: int) -> torch.Tensor:
        out = torch.zeros((len(rows), width))
        for i, x in enumerate(rows):
            out[i, : len(x)] = x
        return out

    params = [p for p in policy.parameters() if p.requires_grad]
    device = params[0].device
    sums = {"pg_loss": 0.0, "kl": 0.0, "clipfrac": 0.0, "clipfrac_lower": 0.0, "ppo_kl": 0.0}
    grad_norms, updates = [], 0
    policy.train()
    for epoch, order in enumerate(orders):
        for mb_index, mb in enumerate(_chunks(order, cfg.mini_batch_size)):
            first = lean and epoch == 0 and mb_index == 0  # the policy has not been updated yet this step
            optimizer.zero_grad(set_to_none=True)
            mb_tokens = sum(len(responses[i]) for i in mb)
            for micro in _chunks(mb, cfg.micro_batch_size):
                p, r = [prompts[i] for i in micro], [responses[i] for i in micro]
                logp, mask, ent = response_logprobs(policy, p, r, T, pad_id, with_entropy=first and not from_sampler)
                width = mask.shape[1]
                if first:
                    diagnostics(micro, logp.detach(), mask, ent)
                if first and not from_sampler:
                    old = logp.detach()
                else:
                    old = pad([old_lp[i] for i in micro], width).to(device)
                adv = torch.tensor([samples[i].advantage for i in micro], dtype=torch.float32, device=device)
                pg, m = policy_loss(logp, old, adv, mask, clip=cfg.clip_ratio, dual_clip=cfg.dual_clip)
                if use_ref:
                    ref = pad([ref_lp[i] for i in micro], width).to(device)
                    kl = masked_token_mean(kl_low_var(logp, ref, mask), mask)
                    loss = pg + cfg.kl_coef * kl
                else:
                    kl, loss = None, pg
                share = int(mask.sum()) / mb_tokens
                (loss * share).backward()
                sums["pg_loss"] += pg.item() * share
                sums["kl"] += (kl.item() if kl is not None else float("nan")) * share
                for k in ("clipfrac", "clipfrac_lower", "ppo_kl"):
                    sums[k] += m[k] * share
            grad_norms.append(float(torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)))
            optimizer.step()
            updates += 1
    policy.train(was_training)
    out = {f"actor/{k}": v / max(updates, 1) for k, v in sums.items()}
    out["actor/clip_frac"] = out.pop("actor/clipfrac")
    out["actor/dual_clip_frac"] = out.pop("actor/clipfrac_lower")
    out["actor/grad_norm"] = float(np.mean(grad_norms)) if grad_norms else float("nan")
    out["actor/entropy"] = stats["ent_sum"] / max(stats["ent_ntok"], 1)
    out["actor/old_logp_vs_sampler"] = stats["diff_sum"] / max(stats["diff_ntok"], 1)
    out["actor/updates"] = updates
    return out


# ---------------------------------------------------------------------------------------------------------
# The whole run
# ---------------------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    """What :func:`train` returns: the adapted model (policy) and tokenizer, and the run's record."""

    model: Any
    tokenizer: Any
    config: TrainConfig
    run_dir: Path
    metrics: list[dict] = field(default_factory=list)  # one dict per RL step (as in metrics.jsonl)
    rl_seconds: float = 0.0  # wall time of the RL steps (summed over restarts)
    cor_seconds: float = 0.0  # wall time of COR (sampling + SFT)
    cor: dict | None = None  # COR statistics (ddrl.cor.CORResult as a dict)


def _set_threads(cfg: TrainConfig) -> None:
    n = cfg.threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    if n > 0:
        torch.set_num_threads(n)


def prepare_policy(model, cfg: TrainConfig):
    """The trainable policy and the frozen reference: a deep copy of the initial model for full
    fine-tuning, or ``None`` with LoRA (the reference is then the policy with its adapter disabled)."""
    if cfg.lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        lcfg = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                          target_modules=cfg.lora_target, task_type="CAUSAL_LM")
        return get_peft_model(model, lcfg), None
    ref = copy.deepcopy(model).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return model, ref


def train(config: TrainConfig, records: Sequence[dict], run_dir: str | Path, progress: bool = True,
          model=None, tokenizer=None) -> RunResult:
    """Run test-time RL (Algorithm 1) on ``records`` ({prompt, answer, ...}; ``answer`` is used for
    metrics only), then COR if ``config.cor``. Resumes from ``run_dir``'s last checkpoint when rerun.

    ``model`` / ``tokenizer`` may be passed in (tests, notebooks); otherwise ``config.model`` is loaded.
    """
    validate_config(config)
    if len(records) == 0:
        raise ValueError("train: no records")
    for i, r in enumerate(records):
        if "prompt" not in r:
            raise ValueError(f"train: record {i} has no 'prompt' field (expected {{prompt, answer, ...}})")
    _set_threads(config)
    rd = RunDir(run_dir)
    if rd.finished():  # reading a finished run takes no lock and writes nothing (a read-only cache works)
        return _train(config, records, rd, progress, model, tokenizer)
    with rd.lock():  # one owner per run directory; a second process waits, then finds it finished
        return _train(config, records, rd, progress, model, tokenizer)


def _train(config: TrainConfig, records: Sequence[dict], rd, progress: bool, model, tokenizer) -> RunResult:
    """:func:`train`'s body, run by the owner of ``rd`` (or on a finished ``rd``, which it only reads)."""
    cfg = config
    device = resolve_device(cfg.device)
    rd.prepare({**key_fields(cfg), "questions_fingerprint": fingerprint(records), "num_questions": len(records)},
               device=str(device))

    # Split ground truth off: everything below except the metric call works on `questions` only.
    questions = [strip_truth(r) for r in records]
    truths = [str(r["answer"]) if r.get("answer") is not None else None for r in records]

    if model is None:
        model, tokenizer = load_model(cfg.model, cfg.dtype, cfg.device, progress=progress)
    else:
        model = model.to(device)
    cue = resolve_cue(cfg.cue, cfg.model)
    policy, ref = prepare_policy(model, cfg)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    spe = steps_per_episode(len(questions), cfg.prompts_per_step, cfg.drop_last)
    rl_steps = spe * cfg.episodes
    extra_steps = math.ceil(cfg.extra_rl_fraction * rl_steps) if cfg.extra_rl_fraction > 0 else 0
    total = rl_steps + extra_steps
    params = [p for p in policy.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps,
                                  weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, _LRLambda(warmup_steps(cfg, rl_steps), rl_steps, extra_rl_factor(cfg)))

    if rd.finished():  # nothing to do: load the final weights and the record (one metrics row per step)
        result = rd.load_final(policy)
        metrics = rd.check_finished_metrics(result.get("steps", total))
        return RunResult(policy, tokenizer, cfg, rd.path, metrics, result.get("rl_seconds", 0.0),
                         result.get("cor_seconds", 0.0), result.get("cor"))

    start, rl_seconds = 0, 0.0
    state = rd.resume(policy, optimizer, scheduler)  # the newest checkpoint that loads (damaged ones are named)
    if state is not None:
        start, rl_seconds = state["steps_done"], state["rl_seconds"]
    metrics = rd.truncate_metrics(start)

    sampler = make_sampler("auto", policy, tokenizer, batch_size=cfg.sample_batch_size)
    bar = tqdm(range(start, total), initial=start, total=total, desc="RL", unit="step", disable=not progress)
    for step in bar:
        t0 = time.perf_counter()
        # 1. this step's questions (a fresh deterministic shuffle per episode)
        batch = step_question_indices(cfg.seed, step, len(questions), cfg.prompts_per_step, cfg.drop_last)
        # 2-5. sample N rollouts per question, vote, pseudo-rewards, keep K of them, advantages
        ro = collect_rollouts(sampler, tokenizer, [questions[i] for i in batch], cfg, step, cue)
        t1 = time.perf_counter()
        # 6. one PPO epoch over mini-batches (clipped surrogate + k3 KL), AdamW, lr schedule
        lr_now = optimizer.param_groups[0]["lr"]
        upd = ppo_update(policy, ref, ro.samples, cfg, optimizer, step, pad_id)
        scheduler.step()
        t2 = time.perf_counter()
        # 7. metrics (ground-truth diagnostics after the update: they cannot influence it), checkpoint
        row: dict[str, Any] = {"step": step, "episode": step // spe, "lr": lr_now, **ro.metrics, **upd}
        if all(truths[i] is not None for i in batch):
            row.update(summarize_reward_counts(
                [reward_counts(ro.answers[j], ro.votes[j].label, truths[i], ro.rewards[j], is_binary(cfg.reward))
                 for j, i in enumerate(batch)]))
        t3 = time.perf_counter()
        row.update({"time/sample_s": t1 - t0, "time/update_s": t2 - t1, "time/metrics_s": t3 - t2,
                    "time/step_s": t3 - t0})
        rl_seconds += t3 - t0
        rd.log(row)
        metrics.append(row)
        if (step + 1) % cfg.save_every == 0 or step + 1 == total:
            rd.save_checkpoint(step + 1, policy, optimizer, scheduler, {"steps_done": step + 1, "rl_seconds": rl_seconds})
        bar.set_postfix({"adv": f"{row['adv/mean']:+.3f}", "maj": f"{row['label/majority_ratio']:.2f}",
                         **({"label_acc": f"{row['gt/label_acc']:.2f}"} if "gt/label_acc" in row else {})})
    bar.close()

    # After the RL steps: COR (consensus-based off-policy refinement), from the RL-only weights
    cor_stats, cor_seconds = None, 0.0
    if cfg.cor:
        rd.save_weights("rl", policy)  # the RL-only model, for comparisons with and without COR
        t0 = time.perf_counter()
        res = refine_with_config(policy, tokenizer, questions, cfg, progress=progress)
        cor_seconds = time.perf_counter() - t0
        cor_stats = res.summary()
    rd.save_final(policy, tokenizer, {"rl_seconds": rl_seconds, "cor_seconds": cor_seconds, "cor": cor_stats,
                                      "steps": total})
    return RunResult(policy, tokenizer, cfg, rd.path, metrics, rl_seconds, cor_seconds, cor_stats)
