"""The claims study's design as ``results/plan.md`` registers it: the methods, claims and comparisons, the
scales, the regimes (from ``results/regimes_base.json``) and the job lists of stages 1 and 2.

Readings of the plan (written down here, chosen from the text, never from method results):

- **Regimes**: ``results/regimes_base.json`` ``regimes`` (:class:`ddrl.study.regimes.Regime`: operations, adapted and
  held-out counts, episodes, lr; max_new_tokens 96 and every other TrainConfig field at its default, Sec. 2).
  The weaker-base regime of S1 (``amc_like_weak_base``: the AMC-like regime on the testbed preset ``weak``) is
  read from ``results/regimes_weak.json`` (``bench/regimes.py --weak``) when that file exists; until it is
  built and measured, S1 has no jobs and no entry in ``claims.json``. It uses the AMC-like seed count.
- **Stage 1** (Sec. 6.1): seeds 0-5 of no adaptation, TTRL and DDRL in the three regimes. These three are also
  H1's methods, so their runs are evaluated on the held-out questions too (one model load per run).
  Only the DDRL run's final weights (= DDRL) are evaluated; its RL-only weights (BCS+DAE) in stage 2 (A2).
- **Stage 1 analysis**: variance components of the paired differences DDRL - TTRL (the between-run class that
  sets the seeds), DDRL - no adaptation and TTRL - no adaptation (pass@1 points^2), never a mean; the seeds per
  regime = ``choose_design`` over 2-64 seeds at the regime's adapted questions for DDRL - TTRL; if no design
  up to 64 seeds meets 2.0 points, 64 (the budget then decides). The lr/10 regime (not in stage 1) uses the
  AMC-like count (same questions).
- **Stage 2** (Sec. 6.2): phase (a) the remaining methods on the stage-1 seeds, phase (b) more seeds up to the
  stage-1 count; in each phase claim by claim in the order M1 > M2 > A1 > A2 > A3 > C1 > T1 > H1 > lr/10 (M1 at
  lr/10) > S1 (TTRL and DDRL on the weaker base) and, within a claim, round-robin over its regimes one seed at
  a time. Phase (a) opens (plan Amendment 3, a cost order fixed before any stage-2 run) with the jobs that
  train nothing new, on the stage-1 seeds: BCS+DAE (the DDRL runs' RL-only weights: A3 within-run, A2's first
  half), then R1 (COR keeping 4x rollouts from those weights; "needs no extra seeds", stage-1 seeds only), then
  the base-model claims (F1-F3, G1; "need no extra seeds"): N = 64
  rollouts per question at the RL rollout temperature (T = 1.0, top-p 1) on each of the three regimes'
  adapted questions (448 together), sampling seeds 0 and 1 (the fewest the bootstrap takes; the plan names no
  count), cached with notebooks 01-02's rollouts (:func:`ddrl.run.experiments.cached_rollouts`).
- **F1-F3**: per (sampling seed, question) the share of correct answers among the question's distinct answers
  in a band (counts <= 5, 6-44, >= 45 of 64); questions with no answer in a band in some seed are left out of
  that claim (F3: of either band); regime ``base`` pools the three regimes' questions.
- **G1**: per (seed, question) the mean GRPO advantage of the positive rollouts among K = 32 randomly selected
  (TTRL's step, :func:`ddrl.analysis.group_advantages`), questions with mixed rewards only; effect = mean over
  wrong-label cells - mean over right-label cells (x 100); interval: percentile bootstrap over questions
  (each question keeps its seeds' cells), 4000 replicates.
- **C2** wall times are the pool's: each run on one core with one thread, two runs at a time on 2 cores (the
  plan asks for one run at a time; a wall-time amendment may rerun the C-runs alone). Additional RL time = the
  additional-RL run's steps past the RL schedule; COR time = the DDRL run's COR; RL phase = the DDRL run's RL.
- **H1x** (plan Amendments 11, 12; TTRL added by 13 for H1xT and H1xD, BCS+DAE by 14 for H1xC and H1xR): H1's
  estimand on 1,536 fresh held-out questions per regime (:func:`heldout_x_records`), AMC-like seeds 0-18 (0-7 by
  Amendment 11, 8-18 by 15) and AIME-like 0-5 (retrained), MATH-500-like 19-45 (weights kept),
  written to ``results/runs/heldout_x/<regime>/`` (:data:`HELDOUT_X`, gzipped CSVs), beside the registered H1. BCS alone
  joined in AMC-like (17: H1xB, H1xA) and MATH-500-like (20, retrained), BCS's positives with random negatives in
  AMC-like (19: H1xN, H1xP).
- **Units**: pass@1 differences in points (x 100); D1/D2 advantage x 100; C2 % of the RL phase.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

from ddrl.accel.logprob_backends import pinned_backend
from ddrl.config import METHODS as PRESETS
from ddrl.run.fingerprints import model_fingerprint
from ddrl.run.pool import minutes_to
from ddrl.run.rundir import RunDir
from ddrl.study.regimes import WEAK_REGIME, Regime, candidate_records, small_lr_regime
from ddrl.run.storage import REPO
from ddrl.run.cache import owner_lock
from ddrl.testbed.builds import COMMITTED, META_FILE, cache_root, committed_dir, copy_build, install_build
from ddrl.testbed.config import get_config

RESULTS = REPO / "results"
#: The measured base builds, committed (``python -m ddrl.study --export-base``): a testbed build's bits depend on
#: the CPU it was trained on (docs/testbed.md), so a machine of another kind installs these instead of building.
BASE_MODELS = COMMITTED  # results/base_models
STAGE1_METHODS = ("no_adaptation", "ttrl", "ddrl")
THREE = ("aime_like", "amc_like", "math500_like")
SMALL_LR = "amc_like_small_lr"
COR_4X = "ddrl_cor4x"  # R1: COR keeping 4x the rollouts, from the DDRL run's RL-only weights
COR_LR10 = "ddrl_cor_lr10"  # plan Amendment 30: COR at a tenth of its learning rate, from the same weights
COR_ONLY = "cor_only"  # plan Amendment 30: COR from the untrained model (no RL phase)
COR_4X_LR10 = "ddrl_cor4x_lr10"  # plan Amendment 62: COR keeping 4x the rollouts at a tenth of its rate, same weights
MATH500_SMALL_LR = "math500_like_small_lr"  # plan Amendment 28: MATH-500-like under the registered lr/10 rule
SMALL_LR_OUT = RESULTS / "small_lr"  # the lr/10 amendments' analyses (Amendments 28-33, 43, 49-62)
#: One COR call on other weights, then evaluated (:meth:`~ddrl.run.experiments.Experiment.refined`): method -> (kept
#: rollouts as a multiple of ``cor_keep``, divisor of ``cor_lr``, start weights)
REFINED = {COR_4X: (4, 1, "rl"), COR_LR10: (1, 10, "rl"), COR_ONLY: (1, 1, "base"), COR_4X_LR10: (4, 10, "rl")}
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
#: H1x (plan Amendment 11): H1's methods and estimand on fresh held-out questions; its split name, CSV folder
#: (``<runs>/heldout_x/<regime>/``) and the regimes and seeds it is measured on (by scale, below). TTRL joined
#: it in Amendment 13 (H1xT, H1xD) and BCS+DAE (the DDRL run's RL-only weights) in 14 (H1xC, H1xR), each after
#: the methods before it: a job's DDRL runs (or loads) first.
HELDOUT_X = "heldout_x"
ADAPTED_X = "adapted_x"  # an H1x run's adapted questions, where no registered CSV holds them
HELDOUT_X_AMENDMENTS = "11-17, 19, 20"  # the plan amendments that register H1x and its family
HELDOUT_X_METHODS = ("ddrl", "no_adaptation", "ttrl", "bcs_dae")
#: The H1x family, as the lr/10 amendments decide it on the fresh questions (Amendments 31, 38, 45)
HELDOUT_CLAIMS = ("H1x", "H1xT", "H1xD", "H1xC", "H1xR")
#: Regimes on the AMC-like questions, which take the AMC-like seed count.
AMC_SEEDED = (SMALL_LR, WEAK_REGIME)
#: Regimes whose untrained model is another regime's: the same base weights, adapted questions and evaluation
#: (``eval_n``, sampling, seeds ``derive_seed(seed, "eval", split)``), only the RL settings differ, so their
#: no-adaptation rows are that regime's (plan Amendment 16: P1, P2 at lr/10).
SAME_BASE = {SMALL_LR: "amc_like", "math500_like_small_lr": "math500_like"}  # the second: plan Amendment 28
#: Methods that run no RL, so their rows are one computation in every regime of one base (untrained: Amendment 16;
#: COR alone: Amendments 32, 34): a regime without them reads them from :func:`same_base`'s regimes.
NO_RL = ("no_adaptation", COR_ONLY)


def same_base(regime: str) -> list[str]:
    """The other regimes on ``regime``'s base (:data:`SAME_BASE`), the base regime first."""
    base = SAME_BASE.get(regime, regime)
    return [r for r in (base, *SAME_BASE) if r != regime and SAME_BASE.get(r, r) == base]


#: Regimes defined after the study, beside ``regimes_base.json``: Amendment 26's (768 MATH-500-like questions), 28's
#: (MATH-500-like at lr/10, nothing new measured; 44's on the Xeon build), 42's (AMC-like at lr/3, Xeon build only).
EXTRA_REGIME_FILES = ("regimes_wide.json", "regimes_small_lr.json", "regimes_lr3.json")
MATH500_768 = "math500_like_768"  # Amendment 26: the registered MATH-500-like regime on its stream's first 768 questions
WIDE_OUT = RESULTS / "wide"  # Amendments 26, 27: its CSVs (<WIDE_OUT>/<regime>/) and analyses
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
REAL = "real"  # F1-F3, G1, E1, E2 on a real LLM's samples (plan Amendment 18): <runs>/real/<regime>/
SVAMP_REGIME = "svamp_codex"  # code-davinci-002's 30 programs per SVAMP problem (ddrl.data)
BASE_SEEDS = 2  # sampling seeds of the base rollouts (the fewest the seeds x questions bootstrap takes)
#: Stage 2 phase (a) opens with the jobs that need no new RL run (plan Amendment 3): (claim, method, seeds).
#: BCS+DAE is the DDRL run's RL-only weights (A3 within-run), COR 4x refines them (R1), base rollouts (F, G).
DERIVED_FIRST = (("A3", "bcs_dae", None), ("R1", COR_4X, None), ("F/G", BASE, BASE_SEEDS))  # None: all stage-1 seeds
#: Methods whose job reuses the same seed's DDRL run, no RL of its own (the ``rl_seconds`` they repeat are its).
REUSES_RUN = ("bcs_dae", COR_4X, COR_LR10, COR_4X_LR10)
#: F1-F3's answer-count bands at N = 64 (Sec. 2.2: <= 5 mostly wrong, >= 45 mostly right, the middle between)
BANDS_64 = ((1, 5), (6, 44), (45, 64))
#: Methods whose RL phase is, by design, the DDRL run's of the same regime and seed: BCS+DAE *is* that run's
#: RL-only weights (A3 within-run) and additional RL repeats its BCS + DAE schedule, then 10% more (C1).
SHARES_DDRL_RL = ("bcs_dae", "additional_rl")
#: Pairs whose RL phase left the DDRL run's (plan Amendment 9): (regime, method, seed) -> the first RL step whose
#: logged majority ratio or mean advantage differs. Every other committed pair agrees at every step (a test).
KNOWN_DIVERGENCES: dict[tuple[str, str, int], int] = {
    ("amc_like", "additional_rl", 6): 71, ("amc_like", "additional_rl", 7): 57, ("amc_like", "additional_rl", 8): 104,
    ("amc_like", "additional_rl", 9): 61, ("amc_like", "additional_rl", 12): 63, ("amc_like", "additional_rl", 13): 103,
    ("amc_like", "additional_rl", 16): 105, ("amc_like", "additional_rl", 17): 91, ("amc_like", "additional_rl", 18): 121,
    ("amc_like_small_lr", "additional_rl", 11): 231}  # plan Amendment 53 (of 256 RL steps; 2026-12-02, EPYC 25/1)
#: E1, E2 (plan Amendment 8): K of the selection rules compared on the base rollouts, and how many random orders
#: of a question's rollouts each (seed, question) is averaged over (BCS and the vote break ties by order).
SELECTION_K = 32
SELECTION_ORDERS = 64


def selection_k(n: int, k64: int = SELECTION_K) -> int:
    """K for N = ``n`` samples per question: ``k64`` (given at N = 64) rescaled, at least 1 (E1, E2 at any N; G1 on a
    real LLM's N, Amendment 18)."""
    return max(1, round(k64 * n / 64))


def wants_heldout(regime: str, method: str) -> bool:
    """Is this run evaluated on the held-out questions too? H1's methods in H1's regimes (the three)."""
    return method in HELDOUT_METHODS and regime in THREE


# ---------------------------------------------------------------------------------------------------------
# Scale and regimes
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scale:
    """How big the study is: the registered one (``default``) or the tiny testbed's smoke path."""

    name: str
    stage1_seeds: int = 6  # seeds 0..stage1_seeds-1 (plan Sec. 6.1)
    max_seeds: int = 64  # cap of the seeds per regime (the power table's largest design)
    knobs: dict = field(default_factory=dict)  # TrainConfig overrides on top of each regime's own
    n_adapted: int | None = None  # None: the regime's own counts and episodes
    n_heldout: int | None = None
    episodes: int | None = None
    n_heldout_x: int = 1536  # H1x's fresh held-out questions per regime (plan Amendment 11)
    #: H1x's seeds per regime (Amendment 11: AMC-like 0-7 retrained, MATH-500-like 19-45 whose weights are kept;
    #: Amendment 12: AIME-like 0-5 retrained; Amendment 15: AMC-like 8-18 too, its registered 19 seeds), the
    #: regimes that train listed first (the order jobs run in)
    heldout_x_seeds: dict = field(default_factory=lambda: {"amc_like": tuple(range(19)), "aime_like": tuple(range(6)),
                                                           "math500_like": tuple(range(19, 46))})
    #: Methods H1x adds in some regimes only, after :data:`HELDOUT_X_METHODS`: BCS in AMC-like (Amendment 17:
    #: claims H1xB and H1xA split H1xR there), then BCS's positives with random negatives (Amendment 19: claims
    #: H1xN and H1xP split H1xB); BCS in MATH-500-like too (Amendment 20: H1xB and H1xA there)
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
    """The study's regimes from the committed base measurements (plan Sec. 2), resized for ``scale``; S1's
    weaker-base regime too when ``regimes_weak.json`` lies beside ``path``."""
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
    """The base measurements a study reads: ``results_dir``'s own ``regimes_base.json`` (a replication on
    other weights, plan Amendment 5), else the registered one."""
    own = Path(results_dir) / "regimes_base.json"
    return own if own.is_file() else RESULTS / "regimes_base.json"


def weak_path(path: str | Path) -> Path:
    """Where S1's weaker-base measurements lie: ``regimes_weak.json`` beside ``regimes_base.json``."""
    return Path(path).with_name("regimes_weak.json")


def measurement_files(path: str | Path) -> list[Path]:
    """The base-measurement files the study reads: ``path`` (the default base), then S1's weaker base
    (``weak_path``), plan Amendment 26's wider MATH-500-like regime and Amendment 28's MATH-500-like at lr/10
    (:data:`EXTRA_REGIME_FILES`) when they lie beside it. Only the jobs that name a regime run it: stages 1-2 and
    H1x name the registered ones."""
    return [Path(path)] + [w for w in (weak_path(path), *(Path(path).with_name(n) for n in EXTRA_REGIME_FILES))
                           if w.is_file()]


def check_weights(path: str | Path = RESULTS / "regimes_base.json", scale: Scale = SCALES["default"]) -> None:
    """The regimes were measured on one build of the base model (``weights`` in ``regimes_base.json``; S1's
    weaker base in ``regimes_weak.json``, when present); a study on other weights would not be the registered
    one. Raises ``ValueError`` naming both hashes (a rebuilt testbed differs bitwise: 1 vs 2 threads). Scales
    with their own ``model`` knob (smoke) are not checked."""

    if "model" in scale.knobs:
        return
    for f in measurement_files(path):
        _check_build(f)


def _check_build(path: Path) -> None:
    measured = json.loads(Path(path).read_text()).get("weights", {})
    name = measured.get("model", "testbed:default")
    built = _cache_dir(name)
    pinned = _pin_dir(built, measured) if built else None
    if not is_built(name):  # never build a testbed here: a fresh build differs
        if not _install(pinned, built, measured):
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


def is_built(name: str) -> bool:
    """Whether ``name``'s weights are on this machine without building anything: False only for a testbed whose
    build is not in the cache (:func:`~ddrl.run.fingerprints.model_fingerprint` would pretrain it)."""
    built = _cache_dir(name)
    return built is None or (built / META_FILE).is_file()


def _cache_dir(name: str) -> Path | None:
    """The testbed cache directory of ``testbed:<preset>`` (None for any other model)."""
    preset = name.removeprefix("testbed:")
    return cache_root() / f"{preset}-{get_config(preset).config_hash()}" if preset != name else None


def _pin_dir(built: Path, measured: dict) -> Path:
    """Where the committed copy of a build lies: its cache name plus its weights' sha256 prefix, so builds of
    one configuration on different CPUs (the registered study's, a replication's) never share a directory."""
    return committed_dir(built.name, measured.get("model.safetensors", "unknown"), BASE_MODELS)


def _install(pinned: Path | None, built: Path, measured: dict) -> bool:
    """Copy the committed build ``pinned`` into the testbed cache as ``built`` when its weights are the measured
    ones (raises naming both otherwise); False when nothing is committed. Atomic and under the build's lock
    (:func:`ddrl.testbed.builds.install_build`), so a concurrent build or install waits."""
    if pinned is None or not (pinned / META_FILE).is_file():
        return False
    built.parent.mkdir(parents=True, exist_ok=True)
    with owner_lock(built.parent / f"{built.name}.lock", f"testbed install {built}"):
        if not (built / META_FILE).is_file():
            install_build(pinned, built, {k: v for k, v in measured.items() if k != "model"})
    return True


def export_base_models(path: str | Path = RESULTS / "regimes_base.json", dest: Path | None = None) -> list[Path]:
    """Copy the measured base builds (``measurement_files(path)``) from this machine's testbed cache into
    ``dest`` (default :data:`BASE_MODELS`, committed) once :func:`check_weights` finds them the measured ones;
    a build already there with the same weights is kept. Returns the committed directories."""
    dest = Path(dest) if dest is not None else BASE_MODELS
    check_weights(path)
    out = []
    for f in measurement_files(path):
        measured = json.loads(f.read_text())["weights"]
        built = _cache_dir(measured["model"])
        if built is None:
            raise ValueError(f"{f}: {measured['model']} is not a testbed build; only testbed builds are committed")
        target = dest / _pin_dir(built, measured).name
        if not (target / META_FILE).is_file() or \
                {**model_fingerprint(str(target)), "model": measured["model"]} != measured:  # its weight files' sha256
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_build(built, target)
        out.append(target)
    return out


def write_replication(results_dir: str | Path, note: str, names: Sequence[str] | None = None,
                      registered: str | Path = RESULTS / "regimes_base.json") -> Path:
    """A replication's ``regimes_base.json`` (plan Amendments 5 and 6): the registered regimes verbatim (the
    ones in ``names``, default all; operations, questions, episodes, lr: never re-selected on the new build),
    keyed to the weights of the default testbed as this machine's cache holds it (``model_fingerprint``: built
    here if absent), with the registered weights beside them and ``note``. Refuses to overwrite an existing
    file (a replication's key is fixed once its runs exist) and to write one on the registered weights."""
    dest = Path(results_dir) / "regimes_base.json"
    if dest.is_file():
        raise FileExistsError(f"{dest} exists: a replication's regimes are written once, before its runs")
    reg = json.loads(Path(registered).read_text())
    regimes = [r for r in reg["regimes"] if names is None or r["name"] in names]
    unknown = sorted(set(names or ()) - {r["name"] for r in regimes})
    if unknown:
        raise ValueError(f"unknown regime(s) {unknown}; {registered} defines {[r['name'] for r in reg['regimes']]}")
    weights = model_fingerprint(reg["model"])
    if weights == reg["weights"]:
        raise ValueError(f"this machine's {reg['model']} has the registered weights: continue the registered "
                         "study instead of replicating it")
    out = {"model": reg["model"], "weights": weights, "replication": note, "registered_weights": reg["weights"],
           "regimes": regimes}
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=1) + "\n")
    return dest


def small_lr_regime_file(base: str | Path = RESULTS / "regimes_base.json") -> dict:
    """``results/regimes_small_lr.json`` (plan Amendment 28; the Xeon build's, Amendment 44, from its own ``base``): the
    registered MATH-500-like regime of ``base`` under the lr/10 rule, on the same base weights (its base properties are
    MATH-500-like's: same build, same questions). ``python -m ddrl.study --small-lr-regime [--results R]`` writes it."""
    data = json.loads(Path(base).read_text())
    reg = small_lr_regime(load_regimes(base, names=["math500_like"])["math500_like"])
    return {"model": data["model"], "weights": data["weights"], "base_regime": "math500_like",
            "rule": "plan Amendment 28: the registered lr/10 rule (lr / 10, twice the episodes) on the MATH-500-like "
                    "regime; base properties those of math500_like (same build, same questions)",
            "regimes": [reg.to_dict()]}


def experiment(regime: Regime, scale: Scale, heldout: bool, runs_root: str | Path | None = None,
               held: Sequence[dict] | None = None):
    """The :class:`~ddrl.run.experiments.Experiment` of a regime: its adapted questions (and held-out ones when
    ``heldout``: the registered ones, or ``held`` when given, as H1x's), the regime's trainer overrides, then the
    scale's knobs. Held-out questions do not enter the run's key, so methods with and without them share their runs."""
    from ddrl.run.experiments import Experiment  # torch: only a run needs it (notebook 06 imports this module)
    adapted, registered = regime.records()
    held = registered if held is None else list(held)
    return Experiment(adapted, held if heldout else (), overrides={**regime.trainer_overrides(), **scale.knobs},
                      runs_root=Path(runs_root) if runs_root else None, progress=False, workers=1)


def untrained(seeds: Sequence[int], runs_root: str | Path, scale: str = "default", regime: str = "math500_like_small_lr",
              methods: Sequence[str] = ("ttrl", "ddrl"), regimes: str | Path | None = None) -> list[tuple[str, int]]:
    """The (method, seed) pairs of ``methods`` whose run in ``regime`` (as the regimes file ``regimes`` defines it,
    default the registered study's) is not finished under ``runs_root``: the amendments that evaluate or refine
    finished runs (31, 38, 45, 56-61) must not train one anew."""
    sc = SCALES[scale]
    listed = load_regimes(scale=sc, names=[regime]) if regimes is None else load_regimes(regimes, sc, [regime])
    exp = experiment(listed[regime], sc, False, runs_root)
    with pinned_backend("hf"):  # as the study's jobs run (ddrl.study.jobs.run_job): the backend enters the run's key
        return [(m, s) for s in seeds for m in methods
                if not RunDir(exp.run_dir(PRESETS[m][0], exp.config(m, s))).finished()]


#: The run CSVs' suffix: gzipped (~15x smaller; pandas reads them as they are), so the committed results stay small
CSV = ".csv.gz"


def csv_path(out_dir: str | Path, regime: str, method: str, seed: int, steps: bool = False) -> Path:
    """A method's per-question CSV of one seed (its per-step one with ``steps``): ``<out>/<regime>/``, gzipped."""
    return Path(out_dir) / regime / f"{method}-seed{seed:02d}{'-steps' if steps else ''}{CSV}"


def csv_method_seed(path: str | Path) -> tuple[str, int]:
    """The method and seed a :func:`csv_path` name carries (a per-step CSV's too)."""
    method, seed = Path(path).name.removesuffix(CSV).rsplit("-seed", 1)
    return method, int(seed.removesuffix("-steps"))


def heldout_x_path(out_dir: str | Path, regime: str, method: str, seed: int) -> Path:
    """H1x's CSV of a method and seed (plan Amendment 11): :func:`csv_path` under ``<out>/heldout_x/``."""
    return csv_path(Path(out_dir) / HELDOUT_X, regime, method, seed)


def adapted_x_path(out_dir: str | Path, regime: str, method: str, seed: int) -> Path:
    """The adapted-question rows of an H1x run whose seed has no registered CSV (the drift amendments' seeds 100+):
    :func:`heldout_x_path`'s name under ``<out>/adapted_x/``."""
    return Path(out_dir) / ADAPTED_X / regime / heldout_x_path(out_dir, regime, method, seed).name


def heldout_x_records(regime: Regime, n: int) -> list[dict]:
    """H1x's ``n`` fresh held-out questions (plan Amendment 11): the regime's question stream continued past its
    adapted and registered held-out records, skipping every prompt equal to one of those, the first ``n`` kept."""

    seen_n = regime.n_adapted + regime.n_heldout
    seen = {r["prompt"] for r in candidate_records(regime.num_ops, seen_n)}
    out, m = [], seen_n + n
    while True:
        recs = candidate_records(regime.num_ops, m)
        out = [r for r in recs[seen_n:] if r["prompt"] not in seen][:n]
        if len(out) == n:
            return out
        m += n  # repeats were skipped: draw further along the same stream


# ---------------------------------------------------------------------------------------------------------
# The job list
# ---------------------------------------------------------------------------------------------------------


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
    """Stage 1: seeds 0..5 (``scale.stage1_seeds``) of no adaptation, TTRL and DDRL, one seed at a time
    round-robin over the regimes (AIME-, AMC-, MATH-500-like; the lr/10 regime is not in stage 1)."""
    jobs: list[Job] = []
    seen: set = set()
    for seed in range(scale.stage1_seeds):
        for r in regimes:
            if r in THREE:
                for m in STAGE1_METHODS:
                    _add(jobs, seen, r, seed, (m,), "stage1")
    return jobs


def stage2_jobs(regimes: Sequence[str], scale: Scale, seeds: dict[str, int]) -> list[Job]:
    """Stage 2 after stage 1 (whose jobs are marked seen): phase (a) the stage-1 seeds, phase (b) seeds up to
    ``seeds[regime]``; claim by claim (:data:`PRIORITY`), round-robin over regimes one seed at a time. R1
    closes phase (a). See the module docstring."""
    jobs: list[Job] = []
    seen: set = {(j.regime, j.seed, m) for j in stage1_jobs(regimes, scale) for m in j.methods}
    n1 = scale.stage1_seeds

    def n_seeds(r: str) -> int:
        n = seeds.get(r, seeds.get("amc_like") if r in AMC_SEEDED else None)
        if n is None:
            raise ValueError(f"stage 2: no seed count for regime {r!r} (results/stage1.json has {sorted(seeds)})")
        return min(int(n), scale.max_seeds)

    for lo, hi in ((0, lambda r: n1), (n1, n_seeds)):
        if lo == 0:  # plan Amendment 3: what reuses the stage-1 runs (no new RL run) comes first
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
    """H1x's jobs (plan Amendments 11-17, 19, 20), one per regime x seed, each evaluating :data:`HELDOUT_X_METHODS`
    (and the regime's ``scale.heldout_x_extra``) on the fresh questions (label ``"H1x"``), in the order of
    ``scale.heldout_x_seeds`` (the regimes whose DDRL runs must be trained first)."""
    return [Job(r, s, HELDOUT_X_METHODS + scale.heldout_x_extra.get(r, ()), "H1x")
            for r, seeds in scale.heldout_x_seeds.items() if r in regimes for s in seeds]


#: A plan amendment with a clock analyses at least this many complete seeds (:func:`seeds_to_analyse`).
MIN_SEEDS = 6


def seeds_to_start(seeds: Sequence[int], planned: Sequence[int], cutoff: str | None, now: float | None = None,
                   min_seeds: int = MIN_SEEDS) -> list[int]:
    """The plan amendments' starting rule, the twin of :func:`seeds_to_analyse`: every one of ``seeds`` before the
    plan's clock ``cutoff`` (None: no clock) has passed (``now``: epoch seconds), after it only those among the first
    ``min_seeds`` of the plan's own seeds ``planned`` (a later session finishes them)."""
    if cutoff is None or minutes_to(cutoff, now) > 0:
        return list(seeds)
    first = set(planned[:min_seeds])
    return [s for s in seeds if s in first]


def seeds_to_analyse(seeds: Sequence[int], complete: Iterable[int], what: str, cutoff: str | None = None,
                     now: float | None = None, min_seeds: int = MIN_SEEDS) -> list[int]:
    """The plan amendments' reading rule: every one of ``seeds`` once all are in ``complete``; before that no
    estimate, until the plan's clock ``cutoff`` (UTC, ISO; None: no clock, so every seed) has passed (``now``: epoch
    seconds, default the clock), then the complete ``seeds`` up to the first missing one, at least ``min_seeds``.
    Otherwise a ValueError that starts with ``what`` (e.g. "results/small_lr/runs: Amendment 53")."""
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
