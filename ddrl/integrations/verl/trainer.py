"""The DDRL trainer on verl's legacy ``RayPPOTrainer`` (verl 0.9.x, ``trainer.use_v1=false``).

- :class:`DDRLRayPPOTrainer` overrides ``fit()``: it wraps the rollout manager in
  :class:`~ddrl.integrations.verl.rollouts.VotingRolloutManager` (N-vote generation, vote, K-selection,
  0/1 rewards written to ``rm_scores``) and then runs verl's own loop unchanged. The vote metrics are
  added to verl's step metrics through ``_balance_batch`` (the one method ``fit()`` hands its metrics to;
  with ``trainer.balance_batch=false`` they are not logged).
- :class:`DDRLTaskRunner` is verl's ``TaskRunner`` with two changes made inside its Ray actor process:
  ``ddrl_fixed`` is registered (advantages are computed there) and it builds a ``DDRLRayPPOTrainer``
  instead of a ``RayPPOTrainer``. Launch with ``run_ppo(config, task_runner_class=DDRLTaskRunnerActor)``
  (:func:`ddrl.integrations.verl.launch.main` does).

Config (the ``ddrl`` section of ``config/ddrl_ppo_trainer.yaml``): ``n_votes`` (N), ``selection``
(``bcs`` | ``random``), ``seed``. K is verl's ``actor_rollout_ref.rollout.n``.
"""

from __future__ import annotations

from typing import Any

import ray
from omegaconf import DictConfig
from verl.trainer import main_ppo_v0
from verl.trainer.ppo.ray_trainer import RayPPOTrainer

from ddrl.integrations.verl.advantage import register
from ddrl.integrations.verl.rollouts import VotingRolloutManager

__all__ = ["DDRLRayPPOTrainer", "DDRLTaskRunner", "DDRLTaskRunnerActor", "ddrl_settings"]

register()  # in every process that imports this module (Ray actors unpickle classes by import)


def ddrl_settings(config: DictConfig) -> dict[str, Any]:
    """The ``ddrl`` section checked: ``{"n_votes", "n_train", "selection", "seed"}``."""
    section = config.get("ddrl")
    if section is None:
        raise KeyError("config: no 'ddrl' section (n_votes, selection, seed); compose config/ddrl_ppo_trainer.yaml")
    n_train = int(config.actor_rollout_ref.rollout.n)
    out = {
        "n_votes": int(section.n_votes),
        "n_train": n_train,
        "selection": str(section.selection),
        "seed": int(section.seed),
    }
    if out["n_votes"] < n_train:
        raise ValueError(f"config: ddrl.n_votes ({out['n_votes']}) must be >= actor_rollout_ref.rollout.n ({n_train})")
    from ddrl.selection import SELECTIONS

    if out["selection"] not in SELECTIONS:
        raise ValueError(f"config: ddrl.selection must be one of {sorted(SELECTIONS)}, got {out['selection']!r}")
    if config.trainer.get("use_v1", False):
        raise ValueError("config: the DDRL trainer extends verl's legacy RayPPOTrainer; set trainer.use_v1=false")
    return out


class DDRLRayPPOTrainer(RayPPOTrainer):
    """verl's PPO trainer with TTRL/DDRL's vote-and-select between generation and the reward read."""

    def fit(self):
        settings = ddrl_settings(self.config)
        if not isinstance(self.async_rollout_manager, VotingRolloutManager):
            self.async_rollout_manager = VotingRolloutManager(
                self.async_rollout_manager,
                n_votes=settings["n_votes"],
                n_train=settings["n_train"],
                selection=settings["selection"],
                seed=settings["seed"],
            )
        return super().fit()

    def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        manager = getattr(self, "async_rollout_manager", None)
        if isinstance(manager, VotingRolloutManager):
            metrics.update(manager.last_metrics)
        return super()._balance_batch(batch, metrics, logging_prefix=logging_prefix, keep_minibatch=keep_minibatch)


def _plain_class(actor_class: Any) -> type:
    """The Python class behind a ``@ray.remote`` class (verl's ``TaskRunner`` is one)."""
    modified = getattr(getattr(actor_class, "__ray_metadata__", None), "modified_class", None)
    for cls in getattr(modified, "__mro__", ()):
        if cls.__qualname__ == actor_class.__ray_metadata__.class_name and cls.__module__ == modified.__module__:
            return cls
    raise TypeError(f"cannot find the class behind Ray actor {actor_class!r} (Ray internals changed?)")


class DDRLTaskRunner(_plain_class(main_ppo_v0.TaskRunner)):
    """verl's ``TaskRunner``, building :class:`DDRLRayPPOTrainer` and registering ``ddrl_fixed``."""

    def run(self, config):
        register()
        ddrl_settings(config)
        # TaskRunner.run looks ``RayPPOTrainer`` up in its module at call time; this actor process runs
        # nothing else, so the substitution is confined to it.
        main_ppo_v0.RayPPOTrainer = DDRLRayPPOTrainer
        return super().run(config)


#: What ``run_ppo(config, task_runner_class=...)`` takes (verl's own runner uses ``num_cpus=1`` too).
DDRLTaskRunnerActor = ray.remote(num_cpus=1)(DDRLTaskRunner)
