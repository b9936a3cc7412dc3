"""DDRL on an unmodified verl (0.9.x): voting on N=64, BCS/random selection of 32, DAE, one reward fn.

Modules (only ``reward`` works without verl installed):

- :mod:`.reward`     ``compute_score``: verl's per-sample reward function (boxed answer + grading).
- :mod:`.advantage`  ``ddrl_fixed`` registered with ``verl.trainer.ppo.core_algos.register_adv_est``.
- :mod:`.rollouts`   vote / select / write 0-1 rewards on a verl ``DataProto``.
- :mod:`.trainer`    ``DDRLRayPPOTrainer`` (``fit()`` override) and the task runner for ``run_ppo``.
- :mod:`.launch`     Hydra overrides for the paper's 3 models x 3 benchmarks, and the entry point.
- :mod:`.data`       benchmark -> verl parquet (prompt messages, ground truth for evaluation only).

See docs/scaling_out.md for the commands and for what was and was not verified.
"""

#: The name ``algorithm.adv_estimator`` takes to select DAE.
ADV_ESTIMATOR_NAME = "ddrl_fixed"
