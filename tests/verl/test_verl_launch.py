"""Dry run without GPUs: every launch config composes, validates, and wires DDRL in (needs verl).

Covers: Hydra composition of verl's ppo_trainer.yaml + ddrl section + each launch script's overrides;
verl's validate_config; the official values in the composed config; the algorithm config dataclass; the
advantage estimator and the reward function resolved the way verl resolves them; the trainer and task
runner classes. Does NOT cover: Ray workers, FSDP, vLLM, any generation or optimisation step.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("verl.protocol", reason="verl is not installed (optional extra; build .venv-verl, see docs/scaling_out.md)")

from omegaconf import OmegaConf  # noqa: E402

from ddrl.integrations.verl import launch  # noqa: E402
from ddrl.integrations.verl.cor import consensus_rows  # noqa: E402
from ddrl.models import PRESETS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "examples" / "verl").glob("*_*.sh"))
RUNS = [s for s in SCRIPTS if s.name != "cor_sft.sh"]


def _model_benchmark(script: Path) -> tuple[str, str]:
    m = re.search(r'run\.sh" (\S+) (\S+) "\$@"', script.read_text())
    assert m, f"{script}: expected a call to run.sh <model> <benchmark>"
    return m.group(1), m.group(2)


def test_one_script_per_model_and_benchmark():
    pairs = {_model_benchmark(s) for s in RUNS}
    assert pairs == set(launch.OFFICIAL_GPUS)


@pytest.mark.parametrize("script", RUNS, ids=lambda s: s.stem)
def test_launch_config_composes_validates_and_has_official_values(script, tmp_path):
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.utils.config import omega_conf_to_dataclass

    model, bench = _model_benchmark(script)
    p = PRESETS[model]
    cfg = launch.compose(launch.overrides(model, bench, tmp_path / "data", tmp_path / "out"))
    launch.validate(cfg)
    a, r = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    assert (a.clip_ratio, a.clip_ratio_c, a.loss_agg_mode) == (0.2, 3.0, "token-mean")
    assert (a.use_kl_loss, a.kl_loss_type, a.kl_loss_coef, a.entropy_coeff) == (True, "low_var_kl", 0.001, 0)
    assert a.optim.lr == p.lr and a.optim.lr_scheduler_type == "cosine" and a.optim.lr_warmup_steps_ratio == 0.03
    assert cfg.trainer.total_epochs == p.episodes_for(bench)
    assert cfg.data.train_batch_size == p.prompts_per_step_for(bench)
    assert (r.n, cfg.ddrl.n_votes, cfg.ddrl.selection) == (32, 64, "bcs")
    assert (r.val_kwargs.n, r.val_kwargs.temperature, r.val_kwargs.top_p) == (16, 0.6, 0.95)
    assert cfg.data.max_response_length == 3072 and cfg.trainer.use_v1 is False
    assert cfg.algorithm.adv_estimator == "ddrl_fixed"
    omega_conf_to_dataclass(cfg.algorithm)  # verl's AlgoConfig accepts it
    import ddrl.integrations.verl.trainer  # noqa: F401  (registers ddrl_fixed, as in the task runner)

    assert get_adv_estimator_fn(cfg.algorithm.adv_estimator).__module__ == "ddrl.integrations.verl.advantage"
    fn = get_custom_reward_fn(cfg)
    assert fn(data_source="x", solution_str="\\boxed{2}", ground_truth="2", extra_info={"index": 3}) == {
        "score": 1.0, "acc": 1.0, "pred": "2", "index": 3}


def test_ttrl_method_uses_random_selection_and_grpo(tmp_path):
    cfg = launch.compose(launch.overrides("qwen2.5-3b", "amc", tmp_path, tmp_path, method="ttrl"))
    launch.validate(cfg)
    assert (cfg.ddrl.selection, cfg.algorithm.adv_estimator) == ("random", "grpo")


def test_bad_ddrl_settings_are_rejected(tmp_path):
    from ddrl.integrations.verl.trainer import ddrl_settings

    base = launch.overrides("qwen2.5-3b", "amc", tmp_path, tmp_path)
    with pytest.raises(ValueError, match="ddrl.selection"):
        ddrl_settings(launch.compose(base + ["ddrl.selection=top"]))
    with pytest.raises(ValueError, match="n_votes"):
        ddrl_settings(launch.compose(base + ["ddrl.n_votes=16"]))
    with pytest.raises(ValueError, match="use_v1"):
        ddrl_settings(launch.compose(base + ["trainer.use_v1=true"]))


def test_trainer_and_task_runner_classes():
    import ray
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    from ddrl.integrations.verl.trainer import DDRLRayPPOTrainer, DDRLTaskRunner, DDRLTaskRunnerActor

    assert issubclass(DDRLRayPPOTrainer, RayPPOTrainer)
    assert DDRLRayPPOTrainer.fit is not RayPPOTrainer.fit
    assert DDRLTaskRunner.__mro__[1].__name__ == "TaskRunner"
    assert isinstance(DDRLTaskRunnerActor, ray.actor.ActorClass)


def test_launch_cli_print_config(tmp_path, capsys):
    launch.main(["--model", "llama-3.1-8b-instruct", "--benchmark", "aime2024", "--data-dir", str(tmp_path),
                 "--print-config", "--", "trainer.total_epochs=1"])
    out = capsys.readouterr().out  # verl's validate_config prints a "[validate_config] ..." line first
    cfg = OmegaConf.create("\n".join(ln for ln in out.splitlines() if not ln.startswith("[validate_config]")))
    assert cfg.trainer.total_epochs == 1 and cfg.trainer.n_gpus_per_node == 5


def test_cor_sft_command_keys_exist_in_verl_sft_config(tmp_path):
    """The keys cor_sft.sh passes to verl's SFT trainer exist in its config (composition only)."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    text = (ROOT / "examples" / "verl" / "cor_sft.sh").read_text()
    keys = re.findall(r"\b((?:data|model|optim|trainer)\.[a-z_.]+)=", text)
    assert {"data.messages_key", "model.path", "optim.lr", "trainer.total_epochs"} <= set(keys)
    GlobalHydra.instance().clear()
    with initialize_config_module("verl.trainer.config", version_base=None):
        cfg = compose("sft_trainer_engine", overrides=[f"{k}=1" for k in keys])
    assert cfg.trainer.total_epochs == 1


def test_consensus_rows_keep_majority_agreeing_rollouts(tmp_path):
    dumps = tmp_path / "rollouts"
    dumps.mkdir()
    recs = [{"output": "a \\boxed{1}", "ddrl_pseudo_reward": 1.0, "index": 1},
            {"output": "b \\boxed{2}", "ddrl_pseudo_reward": 0.0, "index": 1},
            {"output": "c \\boxed{3}", "ddrl_pseudo_reward": 1.0, "index": 0}]
    (dumps / "2.jsonl").write_text("\n".join(json.dumps(r) for r in recs))
    prompts = [np.array([{"role": "user", "content": "q0"}]), [{"role": "user", "content": "q1"}]]
    rows = consensus_rows(dumps, prompts)
    assert rows == [
        {"messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a \\boxed{1}"}]},
        {"messages": [{"role": "user", "content": "q0"}, {"role": "assistant", "content": "c \\boxed{3}"}]},
    ]
    (dumps / "3.jsonl").write_text(json.dumps({"output": "x", "index": 0}))
    with pytest.raises(KeyError, match="ddrl_pseudo_reward"):
        consensus_rows(dumps, prompts)
