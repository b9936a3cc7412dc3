"""The claims study's regimes (issue 17): testbed settings that stand for the paper's benchmarks.

A regime is chosen ONLY from properties of the base model measured before any method runs -- consensus,
maj@64 and pass@1 on its questions, the number of questions, the episodes -- never from method results.
Question difficulty is controlled by the number of operations per chain (``ddrl.testbed.task``): the
testbed model was pretrained on 1-4 operations (4 rare), so 3 is familiar, 4 is the shifted test split,
5-6 lie beyond anything it saw.

The paper's benchmarks (Sec. 5.1): AIME 2024 (30 questions, 80 episodes), AMC (83, 30), MATH-500 (500, 10),
learning rate 5e-7 for the Qwen models. The rule (stated before measuring, in ``results/plan.md``):

- **AIME-like**: the candidate with the FEWEST operations whose base maj@64 <= 0.35; few questions, many
  episodes.
- **MATH-500-like**: the candidate with the MOST operations whose base maj@64 >= 0.70; >= 256 questions,
  few episodes.
- **AMC-like**: among the candidates strictly between those two in operations, the one whose base maj@64 is
  closest to 0.5 (ties: fewer operations); medium questions and episodes.
- **Learning rate**: the main comparison (DDRL vs TTRL) also runs at ``lr / 10`` with twice the episodes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Sequence

from ddrl.testbed.task import SplitSpec, generate_records

#: Candidate difficulties measured by ``bench/regimes.py`` (operations per chain).
CANDIDATE_OPS = (3, 4, 5, 6)
#: Response length limit for every regime: a 6-operation solution is ~75 tokens (the default 64 cuts it).
MAX_NEW_TOKENS = 96
AIME_MAJ_MAX = 0.35
MATH_MAJ_MIN = 0.70
MATH_MIN_QUESTIONS = 256
#: Claim S1's regime: the AMC-like regime on the weaker base build (testbed preset ``weak``).
WEAK_REGIME = "amc_like_weak_base"
WEAK_TESTBED = "testbed:weak"
#: Plan Amendment 26: the MATH-500-like regime on 3x its adapted questions (the first 256 are the registered ones),
#: so P1 and P2 -- bound by how much adaptation's gain varies between questions -- can reach the 2.0-point width.
WIDE_QUESTIONS = 768
#: The paper's small-learning-rate regime (plan Sec. 2, "AMC-like at lr/10"): 10x below the regime's lr, twice its
#: episodes; registered for AMC-like, carried over to MATH-500-like by plan Amendment 28.
SMALL_LR_FACTOR, SMALL_LR_EPISODES = 10, 2


@dataclass(frozen=True)
class Regime:
    """One setting of the study: which questions (``num_ops`` chains), how many, how long RL runs."""

    name: str
    stands_for: str
    num_ops: int
    n_adapted: int
    n_heldout: int
    episodes: int
    lr: float = 3e-5  # ddrl.config.TrainConfig's default
    overrides: dict = field(default_factory=dict)

    def split(self) -> str:
        return f"ops{self.num_ops}"

    def records(self, seed: int = 0) -> tuple[list[dict], list[dict]]:
        """(adapted, held-out) questions: one stream per operation count, adapted first."""
        recs = generate_records(SplitSpec((self.num_ops,), (1.0,)), self.n_adapted + self.n_heldout, seed,
                                self.split())
        return recs[: self.n_adapted], recs[self.n_adapted:]

    def trainer_overrides(self) -> dict:
        return {"episodes": self.episodes, "lr": self.lr, "max_new_tokens": MAX_NEW_TOKENS, **self.overrides}

    def to_dict(self) -> dict:
        return asdict(self)


def candidate_records(num_ops: int, n: int, seed: int = 0) -> list[dict]:
    """The first ``n`` questions of the ``ops<k>`` stream (the same questions a regime adapts on)."""
    return generate_records(SplitSpec((num_ops,), (1.0,)), n, seed, f"ops{num_ops}")


def select_regimes(base: Sequence[dict]) -> dict[str, int]:
    """Apply the rule of the module docstring to measured base properties ``[{num_ops, maj@64, ...}]``.

    Returns ``{"aime_like": ops, "amc_like": ops, "math500_like": ops}``; raises ``ValueError`` naming the
    regime no candidate satisfies (then the candidate set, not the thresholds, must be widened).
    """
    by_ops = {int(b["num_ops"]): b for b in base}
    ops = sorted(by_ops)
    maj = {k: round(by_ops[k]["maj@64"], 3) for k in ops}
    aime = [k for k in ops if by_ops[k]["maj@64"] <= AIME_MAJ_MAX]
    math = [k for k in ops if by_ops[k]["maj@64"] >= MATH_MAJ_MIN]
    if not aime:
        raise ValueError(f"no candidate has base maj@64 <= {AIME_MAJ_MAX} (AIME-like); maj@64 by operations: {maj}")
    if not math:
        raise ValueError(f"no candidate has base maj@64 >= {MATH_MAJ_MIN} (MATH-500-like); maj@64 by operations: {maj}")
    a, m = min(aime), max(math)
    middle = [k for k in ops if m < k < a]
    if not middle:
        raise ValueError(f"no candidate lies between MATH-500-like ({m} ops) and AIME-like ({a} ops) for AMC-like")
    amc = min(middle, key=lambda k: (abs(by_ops[k]["maj@64"] - 0.5), k))
    return {"aime_like": a, "amc_like": amc, "math500_like": m}


def weak_base_regime(amc: Regime) -> Regime:
    """Claim S1's regime (plan Sec. 2): the AMC-like questions, sizes and schedule, adapted from the weaker
    base build instead of the default one; its base properties are measured on that build
    (``bench/regimes.py --weak``) before any of its method runs."""
    return replace(amc, name=WEAK_REGIME, stands_for="AMC with a weaker base model (claim S1)",
                   overrides={**amc.overrides, "model": WEAK_TESTBED})


def wide_regime(math: Regime, n: int = WIDE_QUESTIONS) -> Regime:
    """Plan Amendment 26's regime: the MATH-500-like regime ``math`` (operations, episodes, lr, held-out count) on
    its stream's first ``n`` questions instead of 256, named ``<name>_<n>``; its base properties are measured on
    those ``n`` (``bench/regimes.py --wide``) and must keep the MATH-500-like rule (maj@64 >= 0.70)."""
    if n <= math.n_adapted:
        raise ValueError(f"wide_regime: n={n} must exceed {math.name}'s {math.n_adapted} adapted questions")
    return replace(math, name=f"{math.name}_{n}", stands_for=f"{math.stands_for} on {n} adapted questions "
                   "(plan Amendment 26)", n_adapted=n)


def small_lr_regime(reg: Regime) -> Regime:
    """The registered lr/10 rule (plan Sec. 2) applied to ``reg``: its questions at lr / 10 and twice its episodes,
    named ``<name>_small_lr`` (``amc_like_small_lr``; plan Amendment 28's ``math500_like_small_lr``)."""
    return replace(reg, name=f"{reg.name}_small_lr", stands_for=f"{reg.stands_for} at the paper's small learning rate",
                   lr=reg.lr / SMALL_LR_FACTOR, episodes=SMALL_LR_EPISODES * reg.episodes)


def make_regimes(selected: dict[str, int], default_lr: float = 3e-5) -> list[Regime]:
    """The study's regimes from :func:`select_regimes`. Sizes follow the paper's shape (AIME: few questions,
    many episodes; MATH-500: many questions, few episodes) scaled so each RL run costs 512-1024
    question-visits (the default testbed run: 64 questions x 8 episodes); the power analysis in
    ``results/plan.md`` sets the seeds. Held-out questions: 128 per regime (claim T1, transfer)."""
    amc = Regime("amc_like", "AMC", selected["amc_like"], 128, 128, 8, default_lr)
    return [
        Regime("aime_like", "AIME 2024", selected["aime_like"], 64, 128, 16, default_lr),
        amc,
        Regime("math500_like", "MATH-500", selected["math500_like"], MATH_MIN_QUESTIONS, 128, 2, default_lr),
        small_lr_regime(amc),
    ]
