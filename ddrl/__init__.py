"""DDRL companion: test-time RL for math reasoning, and the paper's fixes (BCS, DAE, COR).

Modules map to the paper's parts:

- :mod:`ddrl.answers`    answer extraction and equivalence (math-verify), voting keys
- :mod:`ddrl.grading.grader_pool` math-verify in killable helper processes
- :mod:`ddrl.voting`     majority vote over N rollouts (equivalent answers merged) -> pseudo-label, counts, rewards
- :mod:`ddrl.selection`  which K of N rollouts are trained on (TTRL: random; DDRL: BCS)
- :mod:`ddrl.advantages` GRPO, GRPO without std normalisation, DAE's fixed +-1
- :mod:`ddrl.losses`     PPO clipped surrogate, k3 KL, SFT negative log-likelihood
"""

__version__ = "0.1.0"
