"""Test-time reinforcement learning (the paper's Algorithm 1): TTRL, DDRL and the rows in between.

One config dataclass, one training function, CleanRL style. Per step:

1. take ``prompts_per_step`` unlabeled questions (a fresh deterministic shuffle of all of them per episode; with
   ``drop_last``, as the official loader, the last partial step of an episode is dropped);
2. sample N rollouts per question at the rollout temperature; extract each ``\\boxed{}`` answer;
3. majority vote -> pseudo-label; pseudo-reward r_i = 1 iff rollout i's voting key equals the label's
   (all 0 when no rollout has an answer);
4. keep K of the N rollouts (``selection``: random = TTRL, bcs = DDRL's balanced confidence-aware sampling);
5. advantages within each question's K (``advantage``: grpo = TTRL, grpo_no_std, fixed = DDRL's DAE);
6. one PPO epoch over mini-batches: clipped surrogate (dual clip) + kl_coef * k3 KL to the initial model,
   gradient clipping, AdamW with linear warmup and cosine decay;
7. log metrics (ground-truth diagnostics computed *after* the update, from the answers alone), checkpoint.

After the RL steps, ``cor=True`` runs consensus-based offline refinement (:mod:`ddrl.sft`).

Ground truth never reaches steps 1-6: :func:`train` splits every record into the question (everything but
``answer``) and the truth, and only :mod:`ddrl.evaluate`'s metric functions see the truth
(``tests/test_train.py`` checks that shuffled ground truths give bitwise-identical training).
"""

from __future__ import annotations

import copy
import math
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from ddrl.progress import tqdm

from ddrl.answers import extract_boxed
from ddrl.models import get_preset
from ddrl.models import load_model as load_pretrained
from ddrl.seeds import derive_seed, numpy_generator
from ddrl.voting import pseudo_rewards  # the reward of Algorithm 1 (also imported from here by tests)


# ---------------------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------------------


@dataclass
class TrainConfig:
    """Every knob of a test-time RL run. Defaults are the testbed settings (``testbed:default`` on CPU)."""

    # --- run ---
    seed: int = 0  # every random draw of the run derives from this (ddrl.seeds.derive_seed)
    model: str = "testbed:default"  # "testbed:<preset>" or any Hugging Face causal LM id / local path
    cue: str = "auto"  # "system" | "suffix" | "none" | "auto" (system if "math" in the model name, else suffix)
    dtype: str = "float32"  # model weights dtype: float32 | bfloat16 | float16
    device: str = "auto"  # "auto" (cuda if available), "cpu", "cuda", ...
    threads: int = 0  # torch.set_num_threads; 0 = OMP_NUM_THREADS if set, else torch's default

    # --- algorithm (the paper's rows differ only here) ---
    selection: str = "random"  # which K of N rollouts are trained: "random" (TTRL) | "bcs" (DDRL)
    advantage: str = "grpo"  # "grpo" (TTRL) | "grpo_no_std" | "fixed" (DDRL's DAE: +1 / -1)
    cor: bool = False  # consensus-based offline refinement after RL (DDRL's COR)
    reshape: str = "none"  # advantage transform: "none" | "entropy" (ETTRL's EAR) | "clip" (to [-2, 2])

    # --- how the voting rollouts are drawn ---
    rollout: str = "iid"  # "iid": n_votes independent samples (TTRL); "etmr": entropy-fork trees (ETTRL's ETMR)
    etmr_m: int = 12  # ETMR: root responses per question (leaves = m * (1 + forks * branches) = 60)
    etmr_forks: int = 2  # ETMR: fork points per root, its highest-entropy tokens
    etmr_branches: int = 2  # ETMR: continuations sampled from each fork

    # --- rollouts ---
    n_votes: int = 64  # N: rollouts sampled per question for the majority vote
    k_train: int = 32  # K: rollouts per question that are trained on
    prompts_per_step: int = 8  # questions per RL step
    episodes: int = 8  # passes over all the questions (0 = no adaptation)
    drop_last: bool = False  # drop each episode's last partial step, as the official RL dataloader does
    rollout_temperature: float = 1.0  # sampling temperature of the RL rollouts (training logprobs use it too)
    rollout_top_p: float = 1.0  # nucleus of the RL rollouts
    max_new_tokens: int = 64  # response length limit (RL, COR and evaluation); the testbed needs ~50
    sample_batch_size: int = 512  # sequences decoded together by the HF sampler

    # --- optimisation ---
    lr: float = 3e-5  # peak AdamW learning rate
    warmup_steps: int = 32  # linear warmup in RL steps; -1 = use warmup_ratio
    warmup_ratio: float = 0.03  # warmup as a fraction of RL steps (the official runs' 3%), if warmup_steps < 0
    weight_decay: float = 0.01  # AdamW weight decay (verl's default)
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    grad_clip: float = 1.0  # max global gradient norm
    clip_ratio: float = 0.2  # PPO clip epsilon
    dual_clip: float = 3.0  # PPO dual-clip constant c (negative advantages)
    kl_coef: float = 0.001  # weight of the k3 KL to the initial model
    ppo_epochs: int = 1  # passes over a step's rollouts
    mini_batch_size: int = 64  # sequences per optimizer update
    micro_batch_size: int = 64  # sequences per forward/backward (gradient accumulation within a mini-batch)

    # --- LoRA (optional, through peft) ---
    lora_rank: int = 0  # 0 = full fine-tuning
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    lora_target: str = "all-linear"  # peft target_modules

    # --- evaluation settings (the paper's protocol; COR samples at these too) ---
    eval_n: int = 16  # samples per question for pass@1
    eval_temperature: float = 0.6
    eval_top_p: float = 0.95

    # --- COR: consensus-based offline refinement ---
    cor_m: int = 128  # M: samples per question for the vote
    cor_keep: int = 4  # k: agreeing rollouts kept per question (4 or 16 in the paper)
    cor_epochs: int = 5  # E: SFT epochs
    cor_lr: float = 1e-5  # SFT learning rate (constant)
    cor_batch_size: int = 16  # sequences per SFT update

    # --- "additional RL" (the paper's Table 4 comparison to COR) ---
    extra_rl_fraction: float = 0.0  # continue RL for this fraction of the RL steps after the schedule ends
    extra_rl_lr: float | None = None  # constant learning rate of those extra steps; None = the run's peak `lr`

    # --- bookkeeping ---
    save_every: int = 1  # checkpoint every this many steps (the last step is always saved)


#: Overrides of :class:`TrainConfig` for the paper's rows (Tables 1-3) and the COR comparison (Table 4).
#: Table 1's "GRPO (w/o norm.)" has two readings: ``grpo_no_std`` (r - mean r, the caption's "removes the
#: normalization") and ``dae`` (fixed +1 / -1 on the random subset without BCS, the text's "fixed,
#: label-dependent advantage").
PRESETS: dict[str, dict[str, Any]] = {
    "no_adaptation": {"episodes": 0},
    "ttrl": {"selection": "random", "advantage": "grpo", "cor": False},
    "grpo_no_std": {"selection": "random", "advantage": "grpo_no_std", "cor": False},
    "dae": {"selection": "random", "advantage": "fixed", "cor": False},
    "bcs": {"selection": "bcs", "advantage": "grpo", "cor": False},
    "bcs_dae": {"selection": "bcs", "advantage": "fixed", "cor": False},
    "ddrl": {"selection": "bcs", "advantage": "fixed", "cor": True},
    "ddrl_additional_rl": {"selection": "bcs", "advantage": "fixed", "cor": False, "extra_rl_fraction": 0.1},
    # ETTRL's baselines (Liu et al. 2025): tree rollouts vote and TTRL trains on K leaves; "etmr_ear" adds
    # entropy-based advantage reshaping.
    "etmr": {"rollout": "etmr", "selection": "random", "advantage": "grpo", "cor": False},
    "etmr_ear": {"rollout": "etmr", "selection": "random", "advantage": "grpo", "reshape": "entropy", "cor": False},
}

#: The paper's row names for the presets (for tables and plots).
PRESET_LABELS: dict[str, str] = {
    "no_adaptation": "No adaptation", "ttrl": "TTRL", "grpo_no_std": "GRPO w/o norm.", "dae": "DAE",
    "bcs": "BCS", "bcs_dae": "BCS+DAE", "etmr": "ETMR", "etmr_ear": "ETMR + EAR", "ddrl": "BCS+DAE+COR (DDRL)", "ddrl_additional_rl": "BCS+DAE + additional RL",
}

CUES = ("system", "suffix", "none", "auto")


def make_config(preset: str | None = None, **overrides: Any) -> TrainConfig:
    """``TrainConfig()`` with a preset's overrides, then ``overrides``; unknown names are an error."""
    valid = [f.name for f in fields(TrainConfig)]
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
    bad = [k for k in overrides if k not in valid]
    if bad:
        raise ValueError(f"unknown TrainConfig field(s) {bad}; valid fields: {', '.join(valid)}")
    cfg = TrainConfig(**{**(PRESETS[preset] if preset else {}), **overrides})
    validate_config(cfg)
    return cfg


def validate_config(cfg: TrainConfig) -> None:
    """Clear errors for settings that cannot work."""
    from ddrl.advantages import ADVANTAGES
    from ddrl.selection import SELECTIONS

    if cfg.selection not in SELECTIONS:
        raise ValueError(f"TrainConfig.selection must be one of {sorted(SELECTIONS)}, got {cfg.selection!r}")
    if cfg.advantage not in ADVANTAGES:
        raise ValueError(f"TrainConfig.advantage must be one of {sorted(ADVANTAGES)}, got {cfg.advantage!r}")
    if cfg.rollout not in ("iid", "etmr"):
        raise ValueError(f"TrainConfig.rollout must be 'iid' or 'etmr', got {cfg.rollout!r}")
    from ddrl.advantages import RESHAPES

    if cfg.reshape not in RESHAPES:
        raise ValueError(f"TrainConfig.reshape must be one of {RESHAPES}, got {cfg.reshape!r}")
    if cfg.rollout == "etmr" and min(cfg.etmr_m, cfg.etmr_forks, cfg.etmr_branches) < 1:
        raise ValueError("TrainConfig.etmr_m, etmr_forks and etmr_branches must be >= 1 for rollout='etmr'")
    if cfg.cue not in CUES:
        raise ValueError(f"TrainConfig.cue must be one of {CUES}, got {cfg.cue!r}")
    if not 1 <= cfg.k_train <= cfg.n_votes:
        raise ValueError(f"TrainConfig: need 1 <= k_train <= n_votes, got k_train={cfg.k_train}, n_votes={cfg.n_votes}")
    for name in ("prompts_per_step", "mini_batch_size", "micro_batch_size", "sample_batch_size", "ppo_epochs",
                 "max_new_tokens", "save_every", "eval_n", "cor_m", "cor_epochs", "cor_batch_size"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(cfg, name)}")
    if cfg.episodes < 0:
        raise ValueError(f"TrainConfig.episodes must be >= 0, got {cfg.episodes}")
    if cfg.extra_rl_lr is not None and not cfg.extra_rl_lr > 0:
        raise ValueError(f"TrainConfig.extra_rl_lr must be > 0 or None (= the peak lr), got {cfg.extra_rl_lr}")
    if cfg.cor_keep < 1:
        raise ValueError(f"TrainConfig.cor_keep must be >= 1, got {cfg.cor_keep}")
    if cfg.dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"TrainConfig.dtype must be float32, bfloat16 or float16, got {cfg.dtype!r}")


def paper_overrides(model_preset: str, benchmark: str, temperature: str = "paper") -> dict[str, Any]:
    """Overrides for the paper's full-scale runs, from the official per-model settings in
    :mod:`ddrl.models` (``PRESETS[model_preset].settings(benchmark)``), mapped onto :class:`TrainConfig`,
    and the settings the paper's text states (:mod:`ddrl.paper`, Sec. 4.1):

    - ``rollout_temperature``: ``temperature="paper"`` (default) takes the text's 1.0 for math-specialised
      models and 0.6 for the others; ``"scripts"`` the official launch scripts' 1.0 for every model (the two
      agree for Qwen2.5-Math-1.5B and differ for Qwen2.5-3B and Llama-3.1-8B-Instruct);
    - COR: M = 128 samples, ``cor_keep`` = 4 for MATH-500 and 16 for AMC and AIME 2024, 5 epochs at 1e-5;
    - ``drop_last=True``: each episode drops its last partial step, as the official RL dataloader does
      (``StatefulDataLoader(..., drop_last=True)`` in verl's ``ray_trainer.py``), so an episode has
      ``floor(questions / prompts_per_step)`` steps (AIME 2024: 3 of 8 questions per step, 6 questions unseen
      per episode, a different 6 each episode as the order is reshuffled).

    ``micro_batch_size`` and ``sample_batch_size`` are memory knobs, not the paper's: set them for your GPU.
    """
    from ddrl import paper

    if temperature not in ("paper", "scripts"):
        raise ValueError(f"paper_overrides: temperature must be 'paper' (the text) or 'scripts' (the official "
                         f"launch scripts), got {temperature!r}")
    s = get_preset(model_preset).settings(benchmark)
    if s["lr"] is None:
        raise ValueError(f"model preset {model_preset!r} has no official learning rate; pass lr= yourself")
    return {
        "model": model_preset, "cue": s["cue"], "dtype": s["dtype"], "device": "auto",
        "lr": s["lr"], "episodes": s["episodes"], "prompts_per_step": s["prompts_per_step"],
        "max_new_tokens": s["max_response_len"], "n_votes": s["n_votes"], "k_train": s["n_train"],
        "rollout_temperature": (paper.rollout_temperature(model_preset) if temperature == "paper"
                                else s["rollout_temperature"]),
        "rollout_top_p": s["rollout_top_p"], "drop_last": bool(paper.value(("script", "drop_last"))),
        "cor_m": paper.value(("setting", "cor_m")), "cor_keep": paper.setting_for("cor_keep", benchmark),
        "cor_epochs": paper.value(("setting", "cor_epochs")), "cor_lr": paper.value(("setting", "cor_lr")),
        "eval_n": s["eval_n"], "eval_temperature": s["eval_temperature"], "eval_top_p": s["eval_top_p"],
        "warmup_steps": -1, "warmup_ratio": s["warmup_ratio"], "weight_decay": s["weight_decay"],
        "adam_beta1": s["adam_betas"][0], "adam_beta2": s["adam_betas"][1], "grad_clip": s["grad_clip"],
        "ppo_epochs": s["ppo_epochs"], "mini_batch_size": s["mini_batch_prompts"] * s["n_train"],
        "micro_batch_size": 8, "clip_ratio": s["clip_ratio"], "dual_clip": s["dual_clip"], "kl_coef": s["kl_coef"],
    }


# ---------------------------------------------------------------------------------------------------------
# Model loading
# ---------------------------------------------------------------------------------------------------------


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_cue(cue: str, model_name: str) -> str:
    """The cue placement: as configured, or for "auto" the system message for math-specialised models
    (their templates carry it) and a suffix to the question otherwise. The testbed ignores both."""
    if cue != "auto":
        return cue
    if model_name.startswith("testbed:"):
        return "none"
    return "system" if "math" in model_name.lower() else "suffix"


def load_model(name: str, dtype: str = "float32", device: str = "auto", progress: bool = False):
    """``(model, tokenizer)`` for ``"testbed:<preset>"`` or a Hugging Face id / path."""
    torch_dtype = getattr(torch, dtype)
    if name.startswith("testbed:"):
        from ddrl.testbed import build, load

        model, tok = load(build(name.split(":", 1)[1], progress=progress))
        model = model.to(torch_dtype)
    else:
        model, tok = load_pretrained(name, dtype=dtype)  # model presets, hub ids, local dirs, pad-token fixes
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model.to(resolve_device(device)), tok


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
# Log-probabilities of responses
# ---------------------------------------------------------------------------------------------------------


def collate(prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], pad_id: int, device):
    """Left-padded prompts followed by right-padded responses, so every response starts in the same column.

    Returns ``input_ids, attention_mask, position_ids`` of shape (B, W + R) and the response ``mask`` (B, R).
    """
    if len(prompts) != len(responses):
        raise ValueError(f"collate: {len(prompts)} prompts but {len(responses)} responses")
    b = len(prompts)
    w = max(len(p) for p in prompts)
    r = max(len(x) for x in responses)
    ids = torch.full((b, w + r), pad_id, dtype=torch.long)
    attn = torch.zeros((b, w + r), dtype=torch.long)
    for i, (p, x) in enumerate(zip(prompts, responses)):
        ids[i, w - len(p) : w] = torch.as_tensor(list(p), dtype=torch.long)
        ids[i, w : w + len(x)] = torch.as_tensor(list(x), dtype=torch.long)
        attn[i, w - len(p) : w + len(x)] = 1
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    mask = attn[:, w:].clone()
    return ids.to(device), attn.to(device), pos.to(device), mask.to(device)


def response_logprobs(model, prompts, responses, temperature: float, pad_id: int, with_entropy: bool = False):
    """Per-token log-probs of ``responses`` given ``prompts`` under ``softmax(logits / temperature)``
    (verl divides logits by the rollout temperature, so with T = 1 these are the sampler's log-probs).

    Returns ``(logp, mask, entropy)``, each (B, R); ``entropy`` is None unless ``with_entropy``. Only the
    response positions' logits are materialised (``logits_to_keep``).
    """
    device = next(model.parameters()).device
    ids, attn, pos, mask = collate(prompts, responses, pad_id, device)
    r = mask.shape[1]
    logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=False,
                   logits_to_keep=r + 1).logits[:, :-1, :].float()
    if temperature > 0:
        logits = logits / temperature
    logz = torch.logsumexp(logits, dim=-1)
    targets = ids[:, -r:]
    logp = logits.gather(-1, targets[..., None]).squeeze(-1) - logz
    logp = logp * mask
    entropy = None
    if with_entropy:  # a diagnostic: never part of a gradient
        with torch.no_grad():
            p = torch.softmax(logits, dim=-1)
            entropy = (logz - (p * logits).sum(-1)) * mask
    return logp, mask, entropy


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
    from ddrl.advantages import clip_advantages, entropy_reshape, get_advantage
    from ddrl.prompts import format_prompt
    from ddrl.sampling import tree_sample
    from ddrl.selection import get_selection
    from ddrl.voting import majority_vote

    if any("answer" in q for q in questions):
        raise ValueError("collect_rollouts: questions must not carry ground truth ('answer'); use strip_truth")
    select, advantage_fn = get_selection(cfg.selection), get_advantage(cfg.advantage)
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
        rew = pseudo_rewards(vote)
        idx = select(vote.counts, min(cfg.k_train, len(rs)), numpy_generator(cfg.seed, "select", step, q))
        adv = np.asarray(advantage_fn(rew[idx]), dtype=np.float64)
        if cfg.reshape == "entropy":
            adv = entropy_reshape(adv, [float(np.mean(rs[i].entropies)) for i in idx])
        elif cfg.reshape == "clip":
            adv = clip_advantages(adv)
        for i, ai in zip(idx, adv):
            samples.append(TrainSample(prompt_ids[q], list(rs[i].token_ids), float(ai), float(rew[i]),
                                       list(rs[i].logprobs)))
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
      to different widths, so they agree to float32 rounding (~1e-7), not bitwise (tests/test_train.py).
      The sampler's log-probs are *not* used: they come from KV-cached decoding and differ by ~1e-6.

    ``lean=False`` runs every pass (the update before this change), for tests and ``bench/rl_step.py``.
    """
    from ddrl.losses import kl_low_var, masked_token_mean, policy_loss

    T = cfg.rollout_temperature
    prompts = [s.prompt_ids for s in samples]
    responses = [s.response_ids for s in samples]
    orders = [numpy_generator(cfg.seed, "minibatch", step, epoch).permutation(len(samples))
              for epoch in range(cfg.ppo_epochs)]
    on_policy = {int(i) for i in orders[0][: cfg.mini_batch_size]} if lean else set()
    use_ref = cfg.kl_coef != 0 or not lean
    old_lp: dict[int, torch.Tensor] = {}
    ref_lp: dict[int, torch.Tensor] = {}
    stats = {"ent_sum": 0.0, "diff_sum": 0.0, "ntok": 0}

    def diagnostics(idx, lp, mask, ent) -> None:
        """``actor/entropy`` and ``actor/old_logp_vs_sampler`` of the rows ``idx`` (pre-update log-probs)."""
        for j, i in enumerate(idx):
            n = len(responses[i])
            stats["diff_sum"] += float((lp[j, :n].cpu() - torch.tensor(samples[i].sampler_logprobs)).abs().sum())
        stats["ent_sum"] += float(ent.sum())
        stats["ntok"] += int(mask.sum())

    was_training = policy.training
    policy.eval()
    with torch.no_grad():
        rest = [i for i in range(len(samples)) if i not in on_policy]
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
                logp, mask, ent = response_logprobs(policy, p, r, T, pad_id, with_entropy=first)
                width = mask.shape[1]
                if first:
                    old = logp.detach()
                    diagnostics(micro, old, mask, ent)
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
    out["actor/entropy"] = stats["ent_sum"] / max(stats["ntok"], 1)
    out["actor/old_logp_vs_sampler"] = stats["diff_sum"] / max(stats["ntok"], 1)
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
    cor: dict | None = None  # COR statistics (ddrl.sft.CORResult as a dict)


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
    from ddrl.runs import RunDir

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
    from ddrl.evaluate import reward_counts, summarize_reward_counts
    from ddrl.runs import fingerprint
    from ddrl.sampling import make_sampler

    cfg = config
    device = resolve_device(cfg.device)
    rd.prepare({**asdict(cfg), "questions_fingerprint": fingerprint(records), "num_questions": len(records)},
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
        batch = step_question_indices(cfg.seed, step, len(questions), cfg.prompts_per_step, cfg.drop_last)
        ro = collect_rollouts(sampler, tokenizer, [questions[i] for i in batch], cfg, step, cue)
        t1 = time.perf_counter()
        lr_now = optimizer.param_groups[0]["lr"]
        upd = ppo_update(policy, ref, ro.samples, cfg, optimizer, step, pad_id)
        scheduler.step()
        t2 = time.perf_counter()
        row: dict[str, Any] = {"step": step, "episode": step // spe, "lr": lr_now, **ro.metrics, **upd}
        # Ground-truth diagnostics, after the update (they cannot influence it).
        if all(truths[i] is not None for i in batch):
            row.update(summarize_reward_counts(
                [reward_counts(ro.answers[j], ro.votes[j].label, truths[i], ro.rewards[j]) for j, i in enumerate(batch)]))
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

    cor_stats, cor_seconds = None, 0.0
    if cfg.cor:
        from ddrl.sft import consensus_refinement

        rd.save_weights("rl", policy)  # the RL-only model, for comparisons with and without COR
        t0 = time.perf_counter()
        res = consensus_refinement(
            policy, tokenizer, questions, m=cfg.cor_m, keep=cfg.cor_keep, epochs=cfg.cor_epochs, lr=cfg.cor_lr,
            temperature=cfg.eval_temperature, top_p=cfg.eval_top_p, max_new_tokens=cfg.max_new_tokens,
            seed=derive_seed(cfg.seed, "cor"), cue=cue, batch_size=cfg.cor_batch_size,
            sample_batch_size=cfg.sample_batch_size, weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip,
            progress=progress)
        cor_seconds = time.perf_counter() - t0
        cor_stats = res.summary()
    rd.save_final(policy, tokenizer, {"rl_seconds": rl_seconds, "cor_seconds": cor_seconds, "cor": cor_stats,
                                      "steps": total})
    return RunResult(policy, tokenizer, cfg, rd.path, metrics, rl_seconds, cor_seconds, cor_stats)
