"""DDRL companion: test-time RL for math reasoning, and the paper's fixes (BCS, DAE, COR).

The paper's ideas, one module each (``docs/architecture.md`` draws the two levels):

- :mod:`ddrl.prompts`, :mod:`ddrl.sampling`, :mod:`ddrl.etmr`  a question to N rollouts (ETMR's tree rollouts)
- :mod:`ddrl.answers`, :mod:`ddrl.voting`  final answers, the majority vote -> pseudo-label, counts, rewards
- :mod:`ddrl.selection`   which K of N rollouts are trained on (TTRL: random; DDRL: BCS)
- :mod:`ddrl.advantages`  GRPO, GRPO without std normalisation, DAE's fixed +-1
- :mod:`ddrl.logprobs`, :mod:`ddrl.losses`  the forward pass, PPO clipped surrogate, k3 KL, SFT
- :mod:`ddrl.train`       Algorithm 1; :mod:`ddrl.cor` COR; :mod:`ddrl.evaluate` pass@1 and maj@N
- :mod:`ddrl.analysis`    answer frequency and correctness, the Bayes view, GRPO's amplification
- :mod:`ddrl.data`, :mod:`ddrl.models`, :mod:`ddrl.config`, :mod:`ddrl.seeds`, :mod:`ddrl.paper`

Machinery lives in subpackages named for their job: :mod:`ddrl.accel`, :mod:`ddrl.grading`, :mod:`ddrl.run`,
:mod:`ddrl.report`; the claims study in :mod:`ddrl.study`; the embedded testbed in :mod:`ddrl.testbed`.
"""

__version__ = "0.1.0"
