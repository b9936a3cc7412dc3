"""The trainer's settings: :class:`TrainConfig` (every knob of Algorithm 1, with the paper's defaults), the
presets that make the paper's rows (:data:`PRESETS`) and the methods a comparison names (:data:`METHODS`), both read
from ``ddrl/methods.yaml`` (:mod:`ddrl.methods`), what a content key hashes of a config (:func:`key_fields`),
:func:`make_config` and :func:`validate_config` (clear errors before any work), and :func:`resolve_cue`. No torch
here: the notebook runner checks parameters with it at once.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any

from ddrl import methods
from ddrl.advantages import ADVANTAGES, RESHAPES
from ddrl.rewards import REWARDS, is_binary
from ddrl.selection import SELECTIONS


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
    reward: str = "vote"  # what a rollout is rewarded with (ddrl.rewards): "vote" (TTRL, DDRL) | "random" | ...
    reward_gate: float = 0.5  # "gated_vote": the majority share c(y*)/N a question needs for its vote to reward
    selection: str = "random"  # which K of N rollouts are trained: "random" (TTRL) | "bcs" (DDRL) | "bcs_random_neg"
    advantage: str = "grpo"  # "grpo" (TTRL) | "grpo_no_std" | "fixed" (DDRL's DAE: +1 / -1)
    cor: bool = False  # consensus-based off-policy refinement after RL (DDRL's COR)
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

    # --- COR: consensus-based off-policy refinement ---
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


#: Overrides of :class:`TrainConfig` for the paper's rows (Tables 1-3), the COR comparison (Table 4), the study's
#: amendments and the label-free rewards: the ``trainer`` settings of ``ddrl/methods.yaml``, one preset per row that
#: trains a run of its own. Table 1's "GRPO (w/o norm.)" has two readings: ``grpo_no_std`` (r - mean r, the
#: caption's "removes the normalization") and ``dae`` (fixed +1 / -1 on the random subset without BCS, the text's
#: "fixed, label-dependent advantage").
PRESETS: dict[str, dict[str, Any]] = methods.trainer_presets()

#: method -> (trainer preset of :data:`PRESETS`, weights to evaluate: "base", "final" or "rl" = before COR, extra
#: overrides): ``ddrl/methods.yaml``'s rows (``bcs_dae`` evaluates the DDRL run's RL-only weights).
METHODS: dict[str, tuple[str, str, dict[str, Any]]] = methods.evaluated()

#: The :class:`TrainConfig` fields every content key has hashed since the claims study began (``asdict`` of the config
#: as it was on 2026-12-07): always in :func:`key_fields`, so every key made before stays what it was. A field added
#: later enters a key only where it differs from its default, so a new knob whose default reproduces today's
#: behaviour moves no key (``tests/test_study.py`` adds one by hand and finds every committed CSV current).
KEYED_FIELDS = (
    "seed", "model", "cue", "dtype", "device", "threads", "selection", "advantage", "cor", "reshape", "rollout", "etmr_m",
    "etmr_forks", "etmr_branches", "n_votes", "k_train", "prompts_per_step", "episodes", "drop_last",
    "rollout_temperature", "rollout_top_p", "max_new_tokens", "sample_batch_size", "lr", "warmup_steps", "warmup_ratio",
    "weight_decay", "adam_beta1", "adam_beta2", "adam_eps", "grad_clip", "clip_ratio", "dual_clip", "kl_coef",
    "ppo_epochs", "mini_batch_size", "micro_batch_size", "lora_rank", "lora_alpha", "lora_dropout", "lora_target",
    "eval_n", "eval_temperature", "eval_top_p", "cor_m", "cor_keep", "cor_epochs", "cor_lr", "cor_batch_size",
    "extra_rl_fraction", "extra_rl_lr", "save_every",
)


def key_fields(cfg: TrainConfig) -> dict[str, Any]:
    """What a content key hashes of ``cfg``: every field of :data:`KEYED_FIELDS`, and each later field whose value is
    not its default (``asdict`` order). Every key of a run, a cache entry or a committed study CSV reads the config
    through this, never through ``asdict`` alone."""
    out = {}
    for f in fields(cfg):
        v = getattr(cfg, f.name)
        default = f.default if f.default is not MISSING else (f.default_factory() if f.default_factory is not MISSING
                                                             else MISSING)
        if f.name in KEYED_FIELDS or v != default:
            out[f.name] = v
    return out


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
    if cfg.reward not in REWARDS:
        raise ValueError(f"TrainConfig.reward must be one of {sorted(REWARDS)}, got {cfg.reward!r}")
    if cfg.advantage == "fixed" and not is_binary(cfg.reward):
        raise ValueError(f"TrainConfig: advantage='fixed' (DAE's +1/-1) needs a 0/1 reward, and reward "
                         f"{cfg.reward!r} is not; use advantage='grpo' or a binary reward")
    if not 0.0 <= cfg.reward_gate <= 1.0:
        raise ValueError(f"TrainConfig.reward_gate must be a share in [0, 1], got {cfg.reward_gate}")
    if cfg.selection not in SELECTIONS:
        raise ValueError(f"TrainConfig.selection must be one of {sorted(SELECTIONS)}, got {cfg.selection!r}")
    if cfg.advantage not in ADVANTAGES:
        raise ValueError(f"TrainConfig.advantage must be one of {sorted(ADVANTAGES)}, got {cfg.advantage!r}")
    if cfg.rollout not in ("iid", "etmr"):
        raise ValueError(f"TrainConfig.rollout must be 'iid' or 'etmr', got {cfg.rollout!r}")
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


# ---------------------------------------------------------------------------------------------------------
# Prompt cue
# ---------------------------------------------------------------------------------------------------------


def resolve_cue(cue: str, model_name: str) -> str:
    """The cue placement: as configured, or for "auto" the system message for math-specialised models
    (their templates carry it) and a suffix to the question otherwise. The testbed ignores both."""
    if cue != "auto":
        return cue
    if model_name.startswith("testbed:"):
        return "none"
    return "system" if "math" in model_name.lower() else "suffix"
