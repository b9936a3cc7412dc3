"""What the claims study runs, as ``results/plan.md`` registers it: the regimes (testbed settings standing for the
paper's benchmarks, plan Sec. 2), methods, claims and comparisons, the scales, the job lists of stages 1 and 2 (Sec.
6), and where each per-run CSV goes. Units: pass@1 differences in points (x 100); D1/D2 advantage x 100; C2 % of the
RL phase."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

from ddrl.accel.logprob_backends import pinned_backend
from ddrl.config import METHODS as PRESETS
from ddrl.methods import TABLE as METHOD_TABLE
from ddrl.infra.cache import owner_lock
from ddrl.run.fingerprints import model_fingerprint
from ddrl.infra.pool import minutes_to
from ddrl.infra.rundir import RunDir
from ddrl.infra.storage import REPO
from ddrl.testbed.builds import COMMITTED, META_FILE, cache_root, committed_dir, install_build
from ddrl.testbed.config import get_config
from ddrl.testbed.task import SplitSpec, generate_records

RESULTS = REPO / "results"
#: The measured base builds, committed: a build's bits depend on the CPU, so another machine installs these.
BASE_MODELS = COMMITTED

# --- Regimes ----------------------------------------------------------------------------------------------------------

#: Candidate difficulties measured by ``bench/regimes.py`` (operations per chain).
CANDIDATE_OPS = (3, 4, 5, 6)
#: Response length limit for every regime: a 6-operation solution is ~75 tokens (the default 64 cuts it).
MAX_NEW_TOKENS = 96
AIME_MAJ_MAX = 0.35
MATH_MAJ_MIN = 0.70
MATH_MIN_QUESTIONS = 256
#: Claim S1's regime: AMC-like on the weaker base build.
WEAK_REGIME = "amc_like_weak_base"
WEAK_TESTBED = "testbed:weak"
#: Plan Amendment 26: the MATH-500-like regime on 3x its adapted questions.
WIDE_QUESTIONS = 768
#: The lr/10 rule (plan Sec. 2): lr / 10, twice the episodes.
SMALL_LR_FACTOR, SMALL_LR_EPISODES = 10, 2


@dataclass(frozen=True)
class Regime:
    """One setting of the study: which questions, how many, how long RL runs."""

    name: str
    stands_for: str
    num_ops: int
    n_adapted: int
    n_heldout: int
    episodes: int
    lr: float = 3e-5  # ddrl.config.TrainConfig's default
    overrides: dict = field(default_factory=dict)

    def records(self) -> tuple[list[dict], list[dict]]:
        recs = candidate_records(self.num_ops, self.n_adapted + self.n_heldout)
        return recs[: self.n_adapted], recs[self.n_adapted:]

    def trainer_overrides(self) -> dict:
        return {"episodes": self.episodes, "lr": self.lr, "max_new_tokens": MAX_NEW_TOKENS, **self.overrides}

    def to_dict(self) -> dict:
        return asdict(self)


def candidate_records(num_ops: int, n: int, seed: int = 0) -> list[dict]:
    """The first ``n`` questions of the ``ops<k>`` stream."""
    return generate_records(SplitSpec((num_ops,), (1.0,)), n, seed, f"ops{num_ops}")


def select_regimes(base: Sequence[dict]) -> dict[str, int]:
    """Each regime's operation count by the plan's rule (Sec. 2) on measured ``[{num_ops, maj@64}]``."""
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
    """Claim S1's regime: ``amc`` adapted from the weaker base build."""
    return replace(amc, name=WEAK_REGIME, stands_for="AMC with a weaker base model (claim S1)",
                   overrides={**amc.overrides, "model": WEAK_TESTBED})


def wide_regime(math: Regime, n: int = WIDE_QUESTIONS) -> Regime:
    """Plan Amendment 26's regime: ``math`` on its stream's first ``n`` questions, named ``<name>_<n>``."""
    if n <= math.n_adapted:
        raise ValueError(f"wide_regime: n={n} must exceed {math.name}'s {math.n_adapted} adapted questions")
    return replace(math, name=f"{math.name}_{n}", stands_for=f"{math.stands_for} on {n} adapted questions "
                   "(plan Amendment 26)", n_adapted=n)


def small_lr_regime(reg: Regime) -> Regime:
    """``reg`` under the lr/10 rule (plan Sec. 2): lr / 10, twice the episodes, named ``<name>_small_lr``."""
    return replace(reg, name=f"{reg.name}_small_lr", stands_for=f"{reg.stands_for} at the paper's small learning rate",
                   lr=reg.lr / SMALL_LR_FACTOR, episodes=SMALL_LR_EPISODES * reg.episodes)


def make_regimes(selected: dict[str, int], default_lr: float = 3e-5) -> list[Regime]:
    """The study's regimes in the paper's shape (AIME: few questions, many episodes; MATH-500 the reverse)."""
    amc = Regime("amc_like", "AMC", selected["amc_like"], 128, 128, 8, default_lr)
    return [
        Regime("aime_like", "AIME 2024", selected["aime_like"], 64, 128, 16, default_lr),
        amc,
        Regime("math500_like", "MATH-500", selected["math500_like"], MATH_MIN_QUESTIONS, 128, 2, default_lr),
        small_lr_regime(amc),
    ]


# --- Methods, claims, comparisons -------------------------------------------------------------------------------------

STAGE1_METHODS = ("no_adaptation", "ttrl", "ddrl")
THREE = ("aime_like", "amc_like", "math500_like")
SMALL_LR = "amc_like_small_lr"
COR_4X = "ddrl_cor4x"  # R1: COR keeping 4x the rollouts, from the DDRL run's RL-only weights
COR_LR10 = "ddrl_cor_lr10"  # plan Amendment 30: COR at lr / 10, same weights
COR_ONLY = "cor_only"  # plan Amendment 30: COR from the untrained model
COR_4X_LR10 = "ddrl_cor4x_lr10"  # plan Amendment 62: COR keeping 4x at lr / 10, same weights
MATH500_SMALL_LR = "math500_like_small_lr"  # plan Amendment 28
SMALL_LR_OUT = RESULTS / "small_lr"  # the lr/10 amendments' analyses
#: One COR call on other weights: method -> (kept rollouts as a multiple of ``cor_keep``, divisor of ``cor_lr``, start),
#: the ``refine`` rows of ``ddrl/methods.yaml``.
REFINED = {m.name: (m.refine["keep_factor"], m.refine["lr_divisor"], m.refine["start"])
           for m in METHOD_TABLE.values() if m.refine is not None}
if _missing := sorted({COR_4X, COR_LR10, COR_ONLY, COR_4X_LR10} - set(REFINED)):
    raise ValueError(f"ddrl/methods.yaml lacks a refinement the study ran: {_missing}")
#: Methods evaluated on the held-out questions too in the three regimes (H1: DDRL vs no adaptation, TTRL alongside).
HELDOUT_METHODS = ("no_adaptation", "ttrl", "ddrl")
#: Stage 2's priority (plan Sec. 6.2): (claim label, methods it adds, regimes it runs in).
PRIORITY: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("M1", ("ttrl", "ddrl"), THREE),
    ("M2", ("etmr",), THREE),
    ("A1", ("bcs",), THREE),
    ("A2", ("bcs_dae",), THREE),
    ("A3", (), THREE),  # DDRL - BCS+DAE: both already scheduled by M1 and A2
    ("C1", ("additional_rl",), THREE),
    ("T1", ("grpo_no_std",), ("aime_like", "math500_like")),
    ("H1", ("no_adaptation",), THREE),
    ("lr/10", ("ttrl", "ddrl"), (SMALL_LR,)),
    ("S1", ("ttrl", "ddrl"), (WEAK_REGIME,)),
)
#: H1x (plan Amendment 11): its split name and CSV folder; its methods in run order (DDRL's run trains first).
HELDOUT_X = "heldout_x"
ADAPTED_X = "adapted_x"  # an H1x run's adapted questions, where no registered CSV holds them
HELDOUT_X_METHODS = ("ddrl", "no_adaptation", "ttrl", "bcs_dae")
#: The H1x family the lr/10 amendments decide on the fresh questions
HELDOUT_CLAIMS = ("H1x", "H1xT", "H1xD", "H1xC", "H1xR")
#: Regimes on the AMC-like questions, which take the AMC-like seed count.
AMC_SEEDED = (SMALL_LR, WEAK_REGIME)
#: Regimes whose untrained model is another's (only RL settings differ): its no-adaptation rows (Amendments 16, 28).
SAME_BASE = {SMALL_LR: "amc_like", MATH500_SMALL_LR: "math500_like"}
#: Methods that run no RL: a regime without their rows reads them from :func:`same_base`'s (Amendments 16, 32, 34).
NO_RL = ("no_adaptation", COR_ONLY)


def same_base(regime: str) -> list[str]:
    """The other regimes on ``regime``'s base (:data:`SAME_BASE`), the base regime first."""
    base = SAME_BASE.get(regime, regime)
    return [r for r in (base, *SAME_BASE) if r != regime and SAME_BASE.get(r, r) == base]


#: Regimes defined after the study, beside ``regimes_base.json`` (plan Amendments 26, 28, 42).
EXTRA_REGIME_FILES = ("regimes_wide.json", "regimes_small_lr.json", "regimes_lr3.json")
MATH500_768 = "math500_like_768"  # Amendment 26
WIDE_OUT = RESULTS / "wide"  # Amendments 26, 27: its CSVs and analyses
#: pass@1 claims: id -> (method a, method b, split); the effect is a - b per seed and question, in points.
PAIRED: dict[str, tuple[str, str, str]] = {
    "P1": ("ttrl", "no_adaptation", "adapted"), "P2": ("ddrl", "no_adaptation", "adapted"),  # plan Amendment 16
    "M1": ("ddrl", "ttrl", "adapted"), "M2": ("ddrl", "etmr", "adapted"), "A1": ("bcs", "ttrl", "adapted"),
    "A2": ("bcs_dae", "bcs", "adapted"), "A3": ("ddrl", "bcs_dae", "adapted"), "C1": ("ddrl", "additional_rl", "adapted"),
    "T1": ("grpo_no_std", "ttrl", "adapted"), "R1": (COR_4X, "ddrl", "adapted"), "H1": ("ddrl", "no_adaptation", "heldout"),
    "H1x": ("ddrl", "no_adaptation", HELDOUT_X),
    "H1xT": ("ttrl", "no_adaptation", HELDOUT_X), "H1xD": ("ddrl", "ttrl", HELDOUT_X),  # plan Amendment 13
    "H1xC": ("ddrl", "bcs_dae", HELDOUT_X), "H1xR": ("bcs_dae", "ttrl", HELDOUT_X),  # plan Amendment 14
    "H1xB": ("bcs", "ttrl", HELDOUT_X), "H1xA": ("bcs_dae", "bcs", HELDOUT_X),  # Amendments 17 (AMC-like), 20
    "H1xN": ("bcs", "bcs_random_neg", HELDOUT_X), "H1xP": ("bcs_random_neg", "ttrl", HELDOUT_X),  # Amendment 19
}
#: Stage-1 comparisons whose variance components are measured (the first sets the seeds).
STAGE1_COMPARISONS = {"ddrl-ttrl": ("ddrl", "ttrl"), "ddrl-no_adaptation": ("ddrl", "no_adaptation"),
                      "ttrl-no_adaptation": ("ttrl", "no_adaptation")}
STEP_COLUMNS = ("step", "episode", "lr", "adv/mean", "label/majority_ratio", "gt/label_acc", "time/step_s")
QUESTION_COLUMNS = ("regime", "method", "seed", "split", "question", "pass@1")
BASE = "base"  # F1-F3, G1: the base model's rollouts on each regime's adapted questions
REAL = "real"  # F1-F3, G1, E1, E2 on a real LLM's samples (plan Amendment 18)
SVAMP_REGIME = "svamp_codex"  # code-davinci-002's 30 programs per SVAMP problem (ddrl.data)
BASE_SEEDS = 2  # sampling seeds of the base rollouts (the fewest the seeds x questions bootstrap takes)
#: Stage 2's opening jobs, which train nothing new (plan Amendment 3): (claim, method, seeds; None: stage 1's).
DERIVED_FIRST = (("A3", "bcs_dae", None), ("R1", COR_4X, None), ("F/G", BASE, BASE_SEEDS))
#: F1-F3's answer-count bands at N = 64 (Sec. 2.2: <= 5 mostly wrong, >= 45 mostly right, the middle between)
BANDS_64 = ((1, 5), (6, 44), (45, 64))
#: Methods whose RL phase is by design the same seed's DDRL run's (additional RL then runs 10% more).
SHARES_DDRL_RL = ("bcs_dae", "additional_rl")
#: Pairs whose RL phase left the DDRL run's (plan Amendments 9, 53): (regime, method, seed) -> the first differing step.
KNOWN_DIVERGENCES: dict[tuple[str, str, int], int] = {
    ("amc_like", "additional_rl", 6): 71, ("amc_like", "additional_rl", 7): 57, ("amc_like", "additional_rl", 8): 104,
    ("amc_like", "additional_rl", 9): 61, ("amc_like", "additional_rl", 12): 63, ("amc_like", "additional_rl", 13): 103,
    ("amc_like", "additional_rl", 16): 105, ("amc_like", "additional_rl", 17): 91, ("amc_like", "additional_rl", 18): 121,
    ("amc_like_small_lr", "additional_rl", 11): 231}
#: E1, E2 (plan Amendment 8): K at N = 64, and the random orders each question is averaged over (ties break by order).
SELECTION_K = 32
SELECTION_ORDERS = 64


def selection_k(n: int, k64: int = SELECTION_K) -> int:
    """K for ``n`` samples per question: ``k64`` (at N = 64) rescaled, at least 1."""
    return max(1, round(k64 * n / 64))


def wants_heldout(regime: str, method: str) -> bool:
    """Whether the run is evaluated on the held-out questions too (H1's methods in the three regimes)."""
    return method in HELDOUT_METHODS and regime in THREE


# --- Scales, the regimes files, the base builds -----------------------------------------------------------------------


@dataclass(frozen=True)
class Scale:
    """How big the study is: registered (``default``) or the tiny testbed's ``smoke``."""

    name: str
    stage1_seeds: int = 6  # seeds 0..stage1_seeds-1 (plan Sec. 6.1)
    max_seeds: int = 64  # cap of the seeds per regime (the power table's largest design)
    knobs: dict = field(default_factory=dict)  # TrainConfig overrides on top of each regime's own
    n_adapted: int | None = None  # None: the regime's own counts and episodes
    n_heldout: int | None = None
    episodes: int | None = None
    n_heldout_x: int = 1536  # H1x's fresh held-out questions per regime (plan Amendment 11)
    heldout_x_seeds: dict = field(default_factory=lambda: {"amc_like": tuple(range(19)), "aime_like": tuple(range(6)),
                                                           "math500_like": tuple(range(19, 46))})
    #: Methods H1x adds in some regimes (Amendments 17, 19, 20)
    heldout_x_extra: dict = field(default_factory=lambda: {"amc_like": ("bcs", "bcs_random_neg"),
                                                           "math500_like": ("bcs",)})


SCALES = {
    "default": Scale("default"),
    "smoke": Scale("smoke", stage1_seeds=2, max_seeds=2, n_adapted=4, n_heldout=2, episodes=1,
                   n_heldout_x=3, heldout_x_seeds={"math500_like": (0, 1)},
                   heldout_x_extra={"math500_like": ("bcs", "bcs_random_neg")},
                   knobs=dict(model="testbed:tiny", prompts_per_step=2, n_votes=8, k_train=4, lr=1e-3, warmup_steps=1,
                              eval_n=2, cor_m=4, cor_keep=2, cor_epochs=1, etmr_m=2, max_new_tokens=32,
                              sample_batch_size=64, mini_batch_size=4, micro_batch_size=4, device="cpu")),
}


def load_regimes(path: str | Path = RESULTS / "regimes_base.json", scale: Scale = SCALES["default"],
                 names: Sequence[str] | None = None) -> dict[str, Regime]:
    """The regimes of ``path`` and of the :func:`measurement_files` beside it, resized for ``scale``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the regimes' base measurements (bench/regimes.py writes them) are missing")
    data = json.loads(path.read_text())
    if "regimes" not in data:
        raise ValueError(f"{path}: no 'regimes' list (expected the output of bench/regimes.py --merge)")
    listed = data["regimes"] + [r for f in measurement_files(path)[1:]
                                for r in json.loads(f.read_text()).get("regimes", [])]
    out = {}
    for r in listed:
        reg = Regime(**{k: r[k] for k in ("name", "stands_for", "num_ops", "n_adapted", "n_heldout", "episodes", "lr",
                                          "overrides")})
        if scale.n_adapted is not None:
            reg = replace(reg, n_adapted=scale.n_adapted, n_heldout=scale.n_heldout, episodes=scale.episodes)
        out[reg.name] = reg
    if names:
        unknown = sorted(set(names) - set(out))
        if unknown:
            raise ValueError(f"unknown regime(s) {unknown}; {path} defines {sorted(out)}")
        out = {n: out[n] for n in out if n in names}
    return out


def regimes_path(results_dir: str | Path) -> Path:
    """``results_dir``'s own ``regimes_base.json`` (a replication, plan Amendment 5), else the registered one."""
    own = Path(results_dir) / "regimes_base.json"
    return own if own.is_file() else RESULTS / "regimes_base.json"


def measurement_files(path: str | Path) -> list[Path]:
    """``path``, then the regimes files beside it that exist (S1's weaker base and :data:`EXTRA_REGIME_FILES`)."""
    return [Path(path)] + [w for w in (Path(path).with_name(n) for n in ("regimes_weak.json", *EXTRA_REGIME_FILES))
                           if w.is_file()]


def check_weights(path: str | Path = RESULTS / "regimes_base.json", scale: Scale = SCALES["default"]) -> None:
    """Raise ``ValueError`` unless the base builds have the measured weights; a missing one is installed, not built."""
    if "model" in scale.knobs:
        return
    for f in measurement_files(path):
        _check_build(f)


def _check_build(path: Path) -> None:
    measured = json.loads(Path(path).read_text()).get("weights", {})
    name = measured.get("model", "testbed:default")
    built = _cache_dir(name)
    pinned = _pin_dir(built, measured) if built else None
    if built is not None and not (built / META_FILE).is_file() and not _install(pinned, built, measured):
        raise ValueError(f"{name} is not built in {cache_root()} and {pinned} holds no committed build; the "
                         f"regimes were measured on the build whose weights {path} names ({measured}). Copy "
                         f"that build's directory to {built} (or re-measure the regimes on a new build and "
                         "amend results/plan.md).")
    have = model_fingerprint(name)
    diff = {k: (v, have.get(k)) for k, v in measured.items() if have.get(k) != v}
    if diff:
        fix = (f"The committed build {pinned} has the measured weights: move {built} aside (it is this CPU's "
               "build) and rerun, which installs it, or give this study its own cache (DDRL_CACHE_DIR=<dir>): builds "
               "of one configuration share a cache directory, so a replication's build and the registered one "
               "cannot sit in one cache." if pinned and (pinned / META_FILE).is_file() else
               "Use the measured build (copy its directory into <cache>/testbed/) or re-measure the regimes "
               "(bench/regimes.py) and amend results/plan.md before stage 1.")
        raise ValueError(f"{path}: the regimes were measured on other base weights than this machine's "
                         f"{measured.get('model')}: {diff} (measured, here). {fix}")


def _cache_dir(name: str) -> Path | None:
    preset = name.removeprefix("testbed:")
    return cache_root() / f"{preset}-{get_config(preset).config_hash()}" if preset != name else None


def _pin_dir(built: Path, measured: dict) -> Path:
    return committed_dir(built.name, measured.get("model.safetensors", "unknown"), BASE_MODELS)


def _install(pinned: Path | None, built: Path, measured: dict) -> bool:
    if pinned is None or not (pinned / META_FILE).is_file():
        return False
    built.parent.mkdir(parents=True, exist_ok=True)
    with owner_lock(built.parent / f"{built.name}.lock", f"testbed install {built}"):
        if not (built / META_FILE).is_file():
            install_build(pinned, built, {k: v for k, v in measured.items() if k != "model"})
    return True


def small_lr_regime_file(base: str | Path = RESULTS / "regimes_base.json") -> dict:
    """``regimes_small_lr.json`` (plan Amendments 28, 44): ``base``'s MATH-500-like regime under the lr/10 rule."""
    data = json.loads(Path(base).read_text())
    reg = small_lr_regime(load_regimes(base, names=["math500_like"])["math500_like"])
    return {"model": data["model"], "weights": data["weights"], "base_regime": "math500_like",
            "rule": "plan Amendment 28: the registered lr/10 rule (lr / 10, twice the episodes) on the MATH-500-like "
                    "regime; base properties those of math500_like (same build, same questions)",
            "regimes": [reg.to_dict()]}


def experiment(regime: Regime, scale: Scale, heldout: bool, runs_root: str | Path | None = None,
               held: Sequence[dict] | None = None):
    """A regime's :class:`~ddrl.run.experiments.Experiment`; held-out questions (not in its key) if ``heldout``."""
    from ddrl.run.experiments import Experiment  # torch
    adapted, registered = regime.records()
    held = registered if held is None else list(held)
    return Experiment(adapted, held if heldout else (), overrides={**regime.trainer_overrides(), **scale.knobs},
                      runs_root=Path(runs_root) if runs_root else None, progress=False, workers=1)


def untrained(seeds: Sequence[int], runs_root: str | Path, scale: str = "default", regime: str = "math500_like_small_lr",
              methods: Sequence[str] = ("ttrl", "ddrl"), regimes: str | Path | None = None) -> list[tuple[str, int]]:
    """The (method, seed) pairs whose run in ``regime`` is not finished under ``runs_root``."""
    sc = SCALES[scale]
    listed = load_regimes(scale=sc, names=[regime]) if regimes is None else load_regimes(regimes, sc, [regime])
    exp = experiment(listed[regime], sc, False, runs_root)
    with pinned_backend("hf"):  # the backend enters the run's key
        return [(m, s) for s in seeds for m in methods
                if not RunDir(exp.run_dir(PRESETS[m][0], exp.config(m, s))).finished()]


# --- The per-run CSVs -------------------------------------------------------------------------------------------------

CSV = ".csv.gz"


def csv_path(out_dir: str | Path, regime: str, method: str, seed: int, steps: bool = False) -> Path:
    """A method's per-question CSV of one seed, or its per-step one."""
    return Path(out_dir) / regime / f"{method}-seed{seed:02d}{'-steps' if steps else ''}{CSV}"


def csv_method_seed(path: str | Path) -> tuple[str, int]:
    """The method and seed a :func:`csv_path` name carries."""
    method, seed = Path(path).name.removesuffix(CSV).rsplit("-seed", 1)
    return method, int(seed.removesuffix("-steps"))


def heldout_x_path(out_dir: str | Path, regime: str, method: str, seed: int) -> Path:
    """H1x's CSV of a method and seed."""
    return csv_path(Path(out_dir) / HELDOUT_X, regime, method, seed)


def adapted_x_path(out_dir: str | Path, regime: str, method: str, seed: int) -> Path:
    """The adapted rows of an H1x run whose seed has no registered CSV."""
    return csv_path(Path(out_dir) / ADAPTED_X, regime, method, seed)


def heldout_x_records(regime: Regime, n: int) -> list[dict]:
    """H1x's ``n`` fresh held-out questions (plan Amendment 11): the stream past the registered ones, no repeats."""
    seen_n = regime.n_adapted + regime.n_heldout
    seen = {r["prompt"] for r in candidate_records(regime.num_ops, seen_n)}
    m = seen_n + n
    while True:
        out = [r for r in candidate_records(regime.num_ops, m)[seen_n:] if r["prompt"] not in seen][:n]
        if len(out) == n:
            return out
        m += n


# --- The job lists ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    regime: str
    seed: int
    methods: tuple[str, ...]
    label: str  # the claim that scheduled it


def _add(jobs: list[Job], seen: set, regime: str, seed: int, methods: Iterable[str], label: str) -> None:
    new = tuple(m for m in methods if (regime, seed, m) not in seen)
    if new:
        seen.update((regime, seed, m) for m in new)
        jobs.append(Job(regime, seed, new, label))


def stage1_jobs(regimes: Sequence[str], scale: Scale) -> list[Job]:
    """Stage 1's jobs: :data:`STAGE1_METHODS` in the three regimes, round-robin one seed at a time."""
    jobs: list[Job] = []
    seen: set = set()
    for seed in range(scale.stage1_seeds):
        for r in regimes:
            if r in THREE:
                for m in STAGE1_METHODS:
                    _add(jobs, seen, r, seed, (m,), "stage1")
    return jobs


def stage2_jobs(regimes: Sequence[str], scale: Scale, seeds: dict[str, int]) -> list[Job]:
    """Stage 2's jobs: phase (a) on the stage-1 seeds, phase (b) up to ``seeds[regime]``."""
    jobs: list[Job] = []
    seen: set = {(j.regime, j.seed, m) for j in stage1_jobs(regimes, scale) for m in j.methods}
    n1 = scale.stage1_seeds

    def n_seeds(r: str) -> int:
        n = seeds.get(r, seeds.get("amc_like") if r in AMC_SEEDED else None)
        if n is None:
            raise ValueError(f"stage 2: no seed count for regime {r!r} (results/stage1.json has {sorted(seeds)})")
        return min(int(n), scale.max_seeds)

    for lo, hi in ((0, lambda r: n1), (n1, n_seeds)):
        if lo == 0:  # plan Amendment 3: what trains nothing new comes first
            for label, method, n in DERIVED_FIRST:
                for seed in range(n1 if n is None else min(n, n1)):
                    for r in THREE:
                        if r in regimes:
                            _add(jobs, seen, r, seed, (method,), label)
        for label, methods, where in PRIORITY:
            rs = [r for r in where if r in regimes]
            for seed in range(lo, max([hi(r) for r in rs], default=0)):
                for r in rs:
                    if seed < hi(r):
                        _add(jobs, seen, r, seed, methods, label)
    return jobs


def heldout_x_jobs(regimes: Sequence[str], scale: Scale) -> list[Job]:
    """H1x's jobs, one per regime x seed of ``scale.heldout_x_seeds``."""
    return [Job(r, s, HELDOUT_X_METHODS + scale.heldout_x_extra.get(r, ()), "H1x")
            for r, seeds in scale.heldout_x_seeds.items() if r in regimes for s in seeds]


#: A plan amendment with a clock analyses at least this many complete seeds (:func:`seeds_to_analyse`).
MIN_SEEDS = 6


def seeds_to_analyse(seeds: Sequence[int], complete: Iterable[int], what: str, cutoff: str | None = None,
                     now: float | None = None, min_seeds: int = MIN_SEEDS) -> list[int]:
    """The amendments' reading rule: all ``seeds`` once complete; else, once the clock ``cutoff`` has passed, those
    before the first missing one, at least ``min_seeds``. Otherwise a ValueError starting with ``what``."""
    done = set(complete)
    gone = [s for s in seeds if s not in done]
    if not gone:
        return list(seeds)
    if cutoff is None:
        raise ValueError(f"{what} incomplete, seeds missing {gone}; the plan reads no estimate before every seed is "
                         "complete")
    if minutes_to(cutoff, now) > 0:
        raise ValueError(f"{what} seeds missing {gone} before its clock ({cutoff}); the plan reads no estimate before "
                         "the clock or every seed")
    first = [s for s in seeds if s < min(gone)]
    if len(first) < min_seeds:
        raise ValueError(f"{what}: {len(first)} complete seeds from {seeds[0]}, the plan needs {min_seeds}")
    return first
