"""Launch DDRL (or TTRL) on verl with the official hyperparameters: overrides, config, entry point.

    python -m ddrl.integrations.verl.launch --model qwen2.5-math-1.5b --benchmark aime2024 \
        --data-dir data/verl --out runs/verl [--method ddrl|ttrl] [--print-config] [-- hydra.overrides=...]

The per-model values come from :data:`ddrl.models.PRESETS` (the official DDRL scripts'); the GPU counts
from the official scripts (:data:`OFFICIAL_GPUS`). docs/scaling_out.md maps every override to its source.
One setting differs between the scripts and the paper's text: the rollout temperature (scripts: 1.0 for every
model; text: 1.0 for math-specialised models, 0.6 for the others). ``--temperature scripts`` (default, this
launcher reproduces the scripts) or ``--temperature paper`` chooses.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ddrl.integrations.verl import ADV_ESTIMATOR_NAME
from ddrl.methods import TABLE
from ddrl.models import BENCHMARKS, get_preset

__all__ = ["METHODS", "OFFICIAL_GPUS", "CONFIG_DIR", "overrides", "compose", "main"]

CONFIG_DIR = Path(__file__).resolve().parent / "config"
REWARD_FILE = Path(__file__).resolve().parent / "reward.py"
#: ddrl.advantages name -> verl's algorithm.adv_estimator
ADV_ESTIMATORS = {"grpo": "grpo", "fixed": ADV_ESTIMATOR_NAME}


def _verl_methods() -> dict[str, tuple[str, str]]:
    """method -> (ddrl.selection, algorithm.adv_estimator): the rows of ``ddrl/methods.yaml`` marked ``verl: true``,
    each checked to be something this launcher runs (the vote reward, a selection and an advantage it maps)."""
    out = {}
    for m in TABLE.values():
        if not m.verl:
            continue
        t = {**m.trainer} if m.trainer else {}
        reward, adv = t.get("reward", "vote"), t.get("advantage", "grpo")
        if reward != "vote" or adv not in ADV_ESTIMATORS:
            raise ValueError(f"ddrl/methods.yaml: {m.name!r} is marked verl: true, but the verl launcher runs the vote "
                             f"reward with advantage in {sorted(ADV_ESTIMATORS)} (got reward {reward!r}, advantage {adv!r})")
        out[m.name] = (t.get("selection", "random"), ADV_ESTIMATORS[adv])
    return out


#: method -> (ddrl.selection, algorithm.adv_estimator)
METHODS = _verl_methods()
#: trainer.n_gpus_per_node in the official scripts, per (model, benchmark).
OFFICIAL_GPUS = {
    ("qwen2.5-math-1.5b", "aime2024"): 2, ("qwen2.5-math-1.5b", "amc"): 8, ("qwen2.5-math-1.5b", "math500"): 8,
    ("qwen2.5-3b", "aime2024"): 2, ("qwen2.5-3b", "amc"): 8, ("qwen2.5-3b", "math500"): 8,
    ("llama-3.1-8b-instruct", "aime2024"): 5, ("llama-3.1-8b-instruct", "amc"): 8,
    ("llama-3.1-8b-instruct", "math500"): 8,
}


def overrides(
    model: str,
    benchmark: str,
    data_dir: str | Path,
    out_dir: str | Path,
    method: str = "ddrl",
    n_gpus: int | None = None,
    model_path: str | None = None,
    temperature: str = "scripts",
) -> list[str]:
    """Hydra overrides (``key=value``) for one paper run on ``ddrl_ppo_trainer.yaml``.

    ``data_dir/<benchmark>/{train,test}.parquet`` come from :mod:`ddrl.integrations.verl.data`.
    ``model_path`` replaces the preset's hub id (e.g. a local copy). ``temperature``: the rollout temperature
    of the official scripts ("scripts", 1.0) or of the paper's text ("paper": 1.0 math models, 0.6 others).
    """
    from ddrl import paper

    if temperature not in ("scripts", "paper"):
        raise ValueError(f"temperature must be 'scripts' or 'paper', got {temperature!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    if benchmark not in BENCHMARKS:
        raise ValueError(f"benchmark must be one of {BENCHMARKS}, got {benchmark!r}")
    p = get_preset(model)
    if p.hub_id is None or p.lr is None:
        raise ValueError(f"model preset {model!r} has no official verl settings (hub id / lr)")
    selection, adv = METHODS[method]
    rollout_t = p.rollout_temperature if temperature == "scripts" else paper.rollout_temperature(model)
    gpus = n_gpus if n_gpus is not None else OFFICIAL_GPUS[(model, benchmark)]
    seq = p.max_prompt_len + p.max_response_len
    data, out = Path(data_dir) / benchmark, Path(out_dir) / f"{method}-{model}-{benchmark}"
    a, r = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
    return [
        f"data.train_files=['{data / 'train.parquet'}']",
        f"data.val_files=['{data / 'test.parquet'}']",
        f"data.max_prompt_length={p.max_prompt_len}",
        f"data.max_response_length={p.max_response_len}",
        f"data.train_batch_size={p.prompts_per_step_for(benchmark)}",
        "data.filter_overlong_prompts=True",
        "data.truncation=error",
        f"actor_rollout_ref.model.path={model_path or p.hub_id}",
        "actor_rollout_ref.model.enable_gradient_checkpointing=True",
        "actor_rollout_ref.model.use_remove_padding=True",
        f"{a}.ppo_mini_batch_size={p.mini_batch_prompts}",
        f"{a}.ppo_micro_batch_size_per_gpu=2",
        f"{a}.ppo_epochs={p.ppo_epochs}",
        f"{a}.ppo_max_token_len_per_gpu={seq}",
        f"{a}.use_kl_loss=True",
        f"{a}.kl_loss_type={p.kl_type}",
        f"{a}.kl_loss_coef={p.kl_coef}",
        f"{a}.entropy_coeff={p.entropy_coeff}",
        f"{a}.clip_ratio={p.clip_ratio}",
        f"{a}.clip_ratio_c={p.dual_clip}",
        f"{a}.loss_agg_mode={p.loss_agg}",
        f"{a}.optim.lr={p.lr}",
        f"{a}.optim.lr_warmup_steps_ratio={p.warmup_ratio}",
        f"{a}.optim.lr_scheduler_type={p.lr_schedule}",
        f"{a}.optim.weight_decay={p.weight_decay}",
        f"{a}.fsdp_config.param_offload=False",
        f"{a}.fsdp_config.optimizer_offload=False",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.ref.fsdp_config.param_offload=True",
        f"{r}.name=vllm",
        f"{r}.n={p.n_train}",
        f"{r}.temperature={rollout_t}",
        f"{r}.top_p={p.rollout_top_p}",
        f"{r}.tensor_model_parallel_size=1",
        f"{r}.gpu_memory_utilization=0.8",
        f"{r}.log_prob_micro_batch_size_per_gpu=2",
        f"{r}.max_model_len={seq}",
        f"{r}.max_num_batched_tokens={seq}",
        f"{r}.val_kwargs.do_sample=True",
        f"{r}.val_kwargs.n={p.eval_n}",
        f"{r}.val_kwargs.temperature={p.eval_temperature}",
        f"{r}.val_kwargs.top_p={p.eval_top_p}",
        f"algorithm.adv_estimator={adv}",
        "algorithm.kl_ctrl.kl_coef=0.0",
        f"reward.custom_reward_function.path={REWARD_FILE}",
        "reward.custom_reward_function.name=compute_score",
        f"ddrl.n_votes={p.n_votes}",
        f"ddrl.selection={selection}",
        f"trainer.n_gpus_per_node={gpus}",
        "trainer.nnodes=1",
        f"trainer.total_epochs={p.episodes_for(benchmark)}",
        f"trainer.test_freq={p.eval_every}",
        "trainer.save_freq=-1",
        f"trainer.default_local_dir={out}",
        f"trainer.rollout_data_dir={out / 'rollouts'}",
        "trainer.project_name=ddrl-verl",
        f"trainer.experiment_name={method}-{model}-{benchmark}",
        "trainer.logger=['console']",
    ]


def compose(overrides_: list[str]):
    """``ddrl_ppo_trainer.yaml`` (verl's ``ppo_trainer`` + the ``ddrl`` section) with ``overrides_``."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return hydra_compose(config_name="ddrl_ppo_trainer", overrides=list(overrides_))


def validate(config) -> None:
    """verl's own checks (``validate_config``) plus the ``ddrl`` section's; raises on a bad config."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    from ddrl.integrations.verl.trainer import ddrl_settings

    ddrl_settings(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="ddrl.models preset: qwen2.5-math-1.5b | qwen2.5-3b | llama-3.1-8b-instruct")
    ap.add_argument("--benchmark", required=True, choices=BENCHMARKS)
    ap.add_argument("--data-dir", required=True, help="directory with <benchmark>/{train,test}.parquet")
    ap.add_argument("--out", default="runs/verl", help="checkpoints and rollout dumps go under here")
    ap.add_argument("--method", default="ddrl", choices=sorted(METHODS))
    ap.add_argument("--n-gpus", type=int, default=None, help="GPUs on the node (default: the official script's)")
    ap.add_argument("--model-path", default=None, help="local model directory instead of the hub id")
    ap.add_argument("--temperature", default="scripts", choices=("scripts", "paper"),
                    help="rollout temperature: the official scripts' 1.0, or the paper's text (0.6 for non-math models)")
    ap.add_argument("--print-config", action="store_true", help="compose, validate, print the config, and exit")
    args = ap.parse_args(argv)
    ov = overrides(args.model, args.benchmark, args.data_dir, args.out, args.method, args.n_gpus, args.model_path,
                   args.temperature)
    config = compose(ov + extra)
    validate(config)
    if args.print_config:
        from omegaconf import OmegaConf

        print(OmegaConf.to_yaml(config))
        return
    from verl.trainer.main_ppo import run_ppo
    from verl.utils.device import auto_set_device

    from ddrl.integrations.verl.trainer import DDRLTaskRunnerActor

    auto_set_device(config)
    run_ppo(config, task_runner_class=DDRLTaskRunnerActor)


if __name__ == "__main__":
    main()
