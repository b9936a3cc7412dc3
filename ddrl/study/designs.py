"""The claims study's designs as data: one frozen :class:`Design` per committed analysis in one table, :data:`DESIGNS`,
with the constants its rows use and where each design's files are. Their named measures are
:data:`ddrl.study.measures.MEASURES`; :mod:`ddrl.study.runner` runs, analyses and prints every row."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from ddrl.methods import words
from ddrl.study.analysis import complete_seeds
from ddrl.study.claims import table2_difference
from ddrl.study.plan import (RESULTS, COR_4X, COR_LR10, HELDOUT_CLAIMS, HELDOUT_X, NO_RL, PAIRED, SAME_BASE, SMALL_LR,
                             csv_path, heldout_x_path, COR_ONLY, HELDOUT_X_METHODS, MATH500_768,
                             STAGE1_METHODS, WIDE_OUT, seeds_to_analyse)
from ddrl.study.plan import COR_4X_LR10, MATH500_SMALL_LR, SMALL_LR_OUT as OUT
from ddrl.study.drift import LR_METHODS, PAIR, arm_methods

XEON = RESULTS / "replication_xeon"  # the Xeon build's results tree

MARGIN = 1.0  # points: every amendment claim's margin (plan Sec. 4's rule)

@dataclass(frozen=True)
class Design:
    """One committed analysis: what it runs, reads, decides and prints."""

    id: str
    amendment: int | str  # the plan amendment that registered it, or a registered stage's name ("Stage 3")
    regime: str
    seeds: tuple[int, ...]
    cutoff: str | None  # the plan's clock (UTC, ISO): no job starts after it; the analysis then reads the seeds
    # complete before the first missing one (at least ``MIN_SEEDS``)
    evaluates: tuple[str, ...]  # the runs its jobs compute, one job each per seed, in this order
    methods: tuple[str, ...]  # every run its analysis reads, in the levels' order (a seed needs all but ``optional``)
    registered: tuple[str, ...]  # registered claims (:data:`~ddrl.study.plan.PAIRED`)
    claims: dict  # ours: id -> (a, b, what[, claim, metric, paper]): pass@1 a - b, sign +1, margin MARGIN
    predicted: dict  # id, (id, regime) or regime -> the plan's predicted half-widths, as ``render`` prints them
    analysis: Path
    section: str  # its title, the plan amendment's question (``render DESIGN`` prints it)
    split: str = HELDOUT_X  # the CSVs its analysis reads: "adapted" or H1x's fresh questions
    job_kind: str = "H1x"
    job_per_run: bool = True  # a job per evaluated run and seed (False: one job of every evaluated run per seed)
    kinds: tuple[str, ...] = ()  # a job kind per evaluated run, where they differ (else ``job_kind``)
    measures: tuple[str, ...] = ("reproduced",)  # named measures, in key order (``levels`` first if unlisted)
    reproduced_of: tuple[str, ...] | None = None  # the runs ``reproduced`` counts (None: every run read)
    cached_ddrl: bool = True  # its jobs read the cached DDRL runs' RL-only weights: refuse a seed without one
    reference: str = "no_adaptation"  # the run its levels count the seeds below (``render`` names it)
    cor_runs: tuple[str, ...] = ()  # the runs ``cor_kept`` reports COR's mean kept rollouts of
    results: Path = RESULTS  # its results tree: ``runs/`` holds the CSVs, its regimes file names the build
    build: str | None = None  # the build its analysis names
    finished: tuple[str, ...] = ()  # trained runs its jobs load: refuse a seed whose run is not finished
    optional: tuple[str, ...] = ()  # runs of ``methods`` read where written (the levels), not needed for a seed
    claim_seeds: dict | None = None  # registered claim -> its own seeds (levels and measures: the first claim's)
    level_regimes: tuple[str, ...] = ()  # levels per regime, in this order, with regime and learning-rate columns
    twin_runs: tuple[str, ...] | None = None  # the runs read in ``level_regimes``' other regimes (None: ``methods``)
    in_base: tuple[str, ...] = ()  # ours decided in the regime's base (SAME_BASE; its ``a``: the twin's run there)
    whole: str | None = None  # a named measure (:data:`~ddrl.study.measures.MEASURES`) that is the whole analysis
    folder: str = "runs"  # the folder of ``results`` that holds its CSVs ("": ``results`` itself)
    regime_seeds: dict | None = None  # regime -> seeds, for an analysis spanning regimes: claims keyed (id, regime)
    regime_runs: dict | None = None  # regime -> the runs its jobs compute there, where not ``evaluates``
    drift: str = ""  # a drift design's pairs: a KL measure of :data:`ddrl.study.drift.MEASURES` or a set of ``ARMS``
    drift_dir: Path | None = None  # a drift design's step CSVs and held-out KLs, if not beside its CSVs
    exploratory: bool = False  # a drift design of the runs its predictions were read from: no verdicts
    job_regimes: tuple[str, ...] = ()  # its jobs' regimes, in this order (default: its own)
    csv_dir: str = ""  # the folder under ``runs/`` its jobs write to, apart from the regimes' CSVs
    then_heldout: bool = False  # after its jobs, the same runs on H1x's fresh questions (Amendment 62)
    figure: str = ""  # the figure of its runs (``ddrl.study.figures.design_figure``), by file name
    fresh: str = ""  # the design of the same runs on fresh questions, drawn under them in its figure

    @property
    def tag(self) -> str:
        return self.amendment if isinstance(self.amendment, str) else f"Amendment {self.amendment}"

    @property
    def committed(self) -> bool:
        """Whether its analysis is committed: a row can be declared before its runs exist (a registered stage's)."""
        return self.analysis.is_file()

    @property
    def runs(self) -> Path:
        return self.results / self.folder


#: Amendment 58's claims, measured again in MATH-500-like by Amendment 61
COR_LR10_HELDOUT = {"K1x": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (its cost on fresh questions)"),
                    "K2x": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6")}

_ABLATION = ("ttrl", "bcs", "bcs_dae", "ddrl")  # A1-A3's runs, in the levels' order

#: ETMR's designs (Amendments 43-48): the runs each reads at lr/10, M3 and P3 per benchmark (with its Table 2
#: difference), and what their rows share
ETMR_RUNS = ("ttrl", "etmr", "ddrl")
_ETMR_READS = ("no_adaptation", *ETMR_RUNS)
ETMR_CLAIMS = {base: {cid: (a, b, what, claim, f"pass@1 {what} [points]", table2_difference(a, b, base))
                      for cid, a, b, what, claim in (
                          ("M3", "etmr", "ttrl", "ETMR - TTRL", "ETMR is the stronger baseline: it beats TTRL"),
                          ("P3", "etmr", "no_adaptation", "ETMR - no adaptation", "ETMR improves on no adaptation"))}
               for base in ("math500_like", "amc_like")}
_ETMR = {"split": "adapted", "measures": ("seed_pass1", "vote", "rl_minutes"), "cached_ddrl": False,
         "reference": "etmr"}

#: Their held-out claims (Amendments 45, 48): held-out pass@1 a - b
ETMR_HELDOUT = {"P3x": ("etmr", "no_adaptation", "ETMR at lr/10 - no adaptation, held-out"),
                "M2x": ("ddrl", "etmr", "DDRL - ETMR at lr/10, held-out"),
                "M3x": ("etmr", "ttrl", "ETMR - TTRL at lr/10, held-out")}
ETMR_HELD_RUNS = ("no_adaptation", "ttrl", "bcs_dae", "etmr", "ddrl")
_ETMR_HELD = {"job_per_run": False, "measures": ("seed_pass1", "reproduced"), "reproduced_of": ETMR_RUNS,
              "cached_ddrl": False}

WIDE_ARMS = ("ttrl_kl100x", "ddrl_kl100x")  # Amendment 27: Amendment 25's arms (kl_coef 0.1)

#: COR alone's claims (Amendments 30, 32, 34-38), keyed (id, regime) in its designs: (a, b, what), pass@1 a - b
_K3 = (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation")
_K4 = ("ddrl", COR_ONLY, "DDRL at lr/10 - COR alone")
_K5 = ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone")
_K3X = (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation, held-out")
_K5X = ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone, held-out")

#: Amendment 38 (the Xeon build): the registered H1x family and Amendment 33's K3x, K4x at lr/10 in AMC-like
HELDOUT_LR10 = {**{(cid, SMALL_LR): (*PAIRED[cid][:2], f"{what}, held-out") for cid, what in (
    ("H1x", "DDRL at lr/10 - no adaptation"), ("H1xT", "TTRL at lr/10 - no adaptation"), ("H1xD", "DDRL - TTRL at lr/10"),
    ("H1xC", "DDRL - BCS+DAE at lr/10"), ("H1xR", "BCS+DAE - TTRL at lr/10"))},
                ("K3x", SMALL_LR): _K3X, ("K4x", SMALL_LR): ("ddrl", COR_ONLY, "DDRL at lr/10 - COR alone, held-out")}

COR_ALONE_RUNS = ("no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_ONLY)  # the runs COR alone's claims read, in order
_COR_ALONE = {"measures": (), "cached_ddrl": False}

#: Amendments 50, 51: T1f's folder (its CSVs apart from the regimes')
T1F_DIR = "table1_fixed"

#: Amendment 62: the runs each split's analysis reads, in the levels' order
COR_TRADE_RUNS = {"adapted": ("bcs_dae", COR_LR10, COR_4X_LR10, "ddrl", COR_4X),
                  HELDOUT_X: ("no_adaptation", "bcs_dae", COR_LR10, COR_4X_LR10, "ddrl", COR_4X)}

#: Stage 3 (plan, "which reward without labels?"): TTRL's training with four label-free rewards, paired with the
#: committed no-adaptation, TTRL and DDRL runs. L0 = TTRL - random reward; L1x, L2x, L3x = reward x - TTRL, - DDRL,
#: - no adaptation, x = r (random), g (gated vote), s (soft vote), e (negative entropy).
REWARD_RUNS = ("random_reward", "gated_vote", "soft_vote", "neg_entropy")
REWARDS_OUT = RESULTS / "rewards"
#: Stage 3's registered budget (plan, Stage 3 item 5): CPU worker-hours, as its runs' CSV time columns sum them.
STAGE3_BUDGET_H = 20
#: Stage 3's minimum detectable effects at its 10 seeds, 80% power (plan Stage 3 item 3): regime -> (L0-L2, L3), points
STAGE3_MDE = {"amc_like": (3.08, 5.53), "amc_like_small_lr": (3.04, 3.95), "math500_like_small_lr": (2.66, 1.45)}
_REWARD_X = dict(zip(REWARD_RUNS, "rgse"))
_L = (("L0", "ttrl", "random_reward", "TTRL - random reward", "TTRL beats a random reward (its gain needs the vote)"),
      *((f"{cid}{_REWARD_X[m]}", m, b, f"{words(m)} - {what}", f"{words(m)} {claim}") for m in REWARD_RUNS
        for cid, b, what, claim in (("L1", "ttrl", "TTRL", "beats TTRL"), ("L2", "ddrl", "DDRL", "beats DDRL"),
                                    ("L3", "no_adaptation", "no adaptation", "improves on no adaptation"))))
#: id -> (a, b, what, claim, metric, paper): the stage's 13 entries per regime, a - b pass@1 on the adapted questions
REWARD_CLAIMS = {cid: (a, b, what, claim, f"adapted pass@1, {what} [points]", None) for cid, a, b, what, claim in _L}


def _reward_design(did: str, regime: str, base: str, hw: tuple[str, str]) -> "Design":
    """One regime of Stage 3: its ten seeds of the four rewards, read beside the committed arms; ``hw`` the plan's
    predicted half-widths at 10 seeds (L0-L2, L3)."""
    return Design(did, "Stage 3", regime, tuple(range(10)), None, REWARD_RUNS, ("no_adaptation", "ttrl", "ddrl",
                  *REWARD_RUNS), (), REWARD_CLAIMS, {c: hw[c.startswith("L3")] for c in REWARD_CLAIMS},
                  REWARDS_OUT / f"{did}.json", f"## Which reward without labels? {regime} (plan Stage 3)",
                  split="adapted", job_kind="Stage 3", measures=("levels", "seed_pass1", "p"), cached_ddrl=False,
                  reference="ttrl", level_regimes=(regime,) if regime == base else (base, regime))


DESIGNS = {d.id: d for d in (
    # Amendment 56: R1, K1, K2 at lr/10 in AMC-like from cached RL-only weights, and the repeat check
    Design("refine_amc", 56, SMALL_LR, tuple(range(10)), "2026-12-03T09:00:00+00:00", (COR_4X, COR_LR10),
           ("bcs_dae", COR_LR10, "ddrl", COR_4X), ("R1",),
           {"K1": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (the RL-only weights)"),
            "K2": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6")},
           {"R1": "0.20 / 0.54 / 1.87", "K1": "1.87 / 0.76", "K2": "1.87 / 2.09"}, OUT / "refine_amc.json",
           "## COR's refinement size and learning rate at the small learning rate in AMC-like (plan Amendment 56)",
           split="adapted", kinds=("R1 lr/10 (A56)", "K1 lr/10 (A56)"), measures=("cor_kept", "reeval_check"),
           reference="ddrl", cor_runs=("ddrl", COR_4X, COR_LR10)),
    # Amendment 59: R1 at lr/10 in MATH-500-like (DDRL trained again, then refined), and the retrain check
    Design("refine_math500", 59, MATH500_SMALL_LR, tuple(range(10)), "2026-12-03T14:05:00+00:00", (COR_4X,),
           ("bcs_dae", "ddrl", COR_4X), ("R1",), {}, {"R1": "0.44 / 0.39, 1.01 / 0.99, 1.93 / 1.88"},
           OUT / "refine_math500.json",
           "## COR's refinement size at the small learning rate in MATH-500-like (plan Amendment 59)",
           split="adapted", job_kind="R1 lr/10 (A59)", measures=("cor_kept", "retrain_check"), cached_ddrl=False,
           reference="ddrl", cor_runs=("ddrl", COR_4X)),
    # Amendment 57: DDRL and COR 4x at lr/10 in AMC-like on H1x's fresh questions
    Design("refine_heldout_amc", 57, SMALL_LR, tuple(range(10)), "2026-12-03T08:45:00+00:00",
           ("no_adaptation", "bcs_dae", "ddrl", COR_4X), ("no_adaptation", "bcs_dae", "ddrl", COR_4X), ("H1x", "H1xC"),
           {"R1x": (COR_4X, "ddrl", "COR keeping 4x the rollouts - DDRL (COR 1x)")},
           {"H1x": "1.12", "H1xC": "0.49", "R1x": "0.49"}, OUT / "refine_heldout_amc.json",
           "## Does COR's gain at the small learning rate in AMC-like hold on fresh questions? (plan Amendment 57)",
           job_per_run=False),
    # Amendment 58: TTRL and COR at 1e-6 at lr/10 in AMC-like on fresh questions
    Design("ttrl_heldout_amc", 58, SMALL_LR, tuple(range(10)), "2026-12-03T11:25:00+00:00", ("ttrl", COR_LR10),
           ("no_adaptation", "ttrl", "bcs_dae", COR_LR10, "ddrl"), ("H1xT", "H1xD", "H1xR"), COR_LR10_HELDOUT,
           {"H1xT": "0.73 / 0.74", "H1xD": "0.64 / 0.68", "H1xR": "0.32 / 0.36", "K1x": "0.50 / 0.56",
            "K2x": "0.50 / 0.56"}, OUT / "ttrl_heldout_amc.json",
           "## TTRL, and COR at a tenth of its rate, on fresh AMC-like questions at the small learning rate "
           "(plan Amendment 58)",
           measures=("reproduced", "reproduced_by_method"), reproduced_of=("ttrl", COR_LR10)),
    # Amendment 60: COR 4x on MATH-500-like's fresh questions, and the repeat check
    Design("refine_heldout_math500", 60, MATH500_SMALL_LR, tuple(range(10)), "2026-12-03T16:40:00+00:00", (COR_4X,),
           ("no_adaptation", "bcs_dae", "ddrl", COR_4X), (),
           {"R1x": (COR_4X, "ddrl", "COR keeping 4x the rollouts - DDRL (COR 1x)")},
           {"R1x": "0.53 / 0.51, 0.71 / 0.69"}, OUT / "refine_heldout_math500.json",
           "## Does COR 4x's extra gain at the small learning rate in MATH-500-like hold on fresh questions? "
           "(plan Amendment 60)",
           measures=("reproduced", "heldout_check"), reproduced_of=(COR_4X,)),
    # Amendment 61: COR at 1e-6 on MATH-500-like's fresh questions
    Design("cor_lr10_heldout_math500", 61, MATH500_SMALL_LR, tuple(range(10)), "2026-12-03T17:15:00+00:00",
           (COR_LR10,), ("no_adaptation", "bcs_dae", COR_LR10, "ddrl"), (), COR_LR10_HELDOUT,
           {"K1x": "0.15 / 0.12, 0.71 / 0.69", "K2x": "0.46 / 0.42, 0.71 / 0.69"},
           OUT / "cor_lr10_heldout_math500.json",
           "## COR at a tenth of its rate on fresh MATH-500-like questions at the small learning rate "
           "(plan Amendment 61)",
           reproduced_of=(COR_LR10,)),
    # Amendment 29: which part of DDRL carries M1 at lr/10 in MATH-500-like
    Design("ablation", 29, MATH500_SMALL_LR, tuple(range(18)), None, ("bcs_dae", "bcs"), _ABLATION, ("A1", "A2", "A3"),
           {}, {"A1": "1.90 / 1.84", "A2": "0.95 / 1.84", "A3": "0.78 / 1.82"}, OUT / "ablation.json",
           "## Which part of DDRL carries M1 at the small learning rate? (plan Amendment 29)", split="adapted",
           kinds=("A3 lr/10 (A29)", "A1 lr/10 (A29)"), measures=("split", "levels"), cached_ddrl=False,
           reference="ttrl",
           claim_seeds={"A1": tuple(range(12)), "A2": tuple(range(12)), "A3": tuple(range(18))},
           level_regimes=("math500_like", MATH500_SMALL_LR)),
    # Amendment 55: the same in AMC-like
    Design("ablation_amc", 55, SMALL_LR, tuple(range(12)), "2026-12-03T04:40:00+00:00", ("bcs_dae", "bcs"), _ABLATION,
           ("A1", "A2", "A3"), {}, {"A1": "2.26 / 2.64 / 0.71", "A2": "2.26 / 3.24 / 0.23", "A3": "2.26 / 0.63 / 2.74"},
           OUT / "ablation_amc.json",
           "## Which part of DDRL carries M1 at the small learning rate in AMC-like? (plan Amendment 55)",
           split="adapted", kinds=("A3 lr/10 (A55)", "A1 lr/10 (A55)"), measures=("split", "levels", "divergence"),
           cached_ddrl=False, reference="ttrl",
           claim_seeds={c: tuple(range(12)) for c in ("A1", "A2", "A3")},
           level_regimes=("amc_like", SMALL_LR)),
    # Amendment 52: C1 and C2 at lr/10 in MATH-500-like
    Design("extra_rl", 52, MATH500_SMALL_LR, tuple(range(12)), None, ("additional_rl",),
           ("bcs_dae", "additional_rl", "ddrl"), ("C1",), {}, {"C1": "1.86 / 0.92"}, OUT / "extra_rl.json",
           "## COR against additional RL at the small learning rate (plan Amendment 52)", split="adapted",
           job_kind="C1 lr/10 (A52)", measures=("c2", "divergence", "agreeing", "levels"), cached_ddrl=False,
           reference="ddrl", optional=("bcs_dae",), level_regimes=(MATH500_SMALL_LR,)),
    # Amendment 53: the same in AMC-like
    Design("extra_rl_amc", 53, SMALL_LR, tuple(range(12)), "2026-12-02T12:30:00+00:00", ("additional_rl",),
           ("bcs_dae", "additional_rl", "ddrl"), ("C1",), {}, {"C1": "2.10 / 2.53 / 0.42"}, OUT / "extra_rl_amc.json",
           "## COR against additional RL at the small learning rate in AMC-like (plan Amendment 53)", split="adapted",
           job_kind="C1 lr/10 (A53)", measures=("c2", "divergence", "agreeing", "levels"), cached_ddrl=False,
           reference="ddrl", optional=("bcs_dae",), level_regimes=(SMALL_LR,)),
    # --- the learning rate (Amendments 39-42, 54) ---
    # Amendment 39: default-lr TTRL and DDRL on the Xeon build against its lr/10 runs, on fresh questions
    Design("lr_heldout", 39, "amc_like", tuple(range(12)), "2026-11-28T22:20:00+00:00", HELDOUT_X_METHODS,
           HELDOUT_X_METHODS, (), {}, {"LxT": "1.67 / 1.47", "LxD": "1.62 / 1.50"}, XEON / "lr_heldout.json",
           "## Held-out transfer at both learning rates on one build (plan Amendment 39)", job_per_run=False,
           measures=(), cached_ddrl=False, whole="lr_heldout", results=XEON),
    # Amendment 40: each run's held-out KL from the base against its held-out pass@1
    Design("lr_drift", 40, "amc_like", tuple(range(10)), "2026-11-29T01:00:00+00:00", (), LR_METHODS, (), {},
           {"W5": "1.0-1.4", "W6": "1.5", "W7": "~0.6", "W8": "~0.6", "W9": "~0.6"}, XEON / "lr_drift.json",
           "## Distance from the base at both learning rates on one build (plan Amendment 40)", measures=(),
           cached_ddrl=False, whole="lr_drift", results=XEON),
    # Amendment 41: COR alone's held-out KL on Amendment 40's line
    Design("cor_alone_drift", 41, SMALL_LR, tuple(range(12)), "2026-11-29T02:00:00+00:00", (), (COR_ONLY, "no_adaptation"),
           (), {}, {"Y1": "0.17-0.24", "Y2": "0.17-0.24"}, XEON / "cor_alone_drift.json",
           "## COR alone on the learning rates' line (plan Amendment 41)", measures=(), cached_ddrl=False,
           whole="cor_alone_drift", results=XEON),
    # Amendment 42: the three methods at lr/3 (regimes_lr3.json)
    Design("lr_curve", 42, "amc_like_lr3", tuple(range(12)), "2026-11-29T04:40:00+00:00", ("ddrl", "bcs_dae", "ttrl"),
           ("ddrl", "bcs_dae", "ttrl"), (), {},
           {"Z1": "0.25 / 0.33", "Z2": "0.25 / 0.33", "Z3": "~0.25 / 0.33", "Z4": "~0.25 / 0.33"},
           XEON / "lr_curve.json", "## A third learning rate between the two (plan Amendment 42)", job_per_run=False,
           measures=(), cached_ddrl=False, whole="lr_curve", results=XEON),
    # Amendment 54: D2 at lr/10 from Amendment 28's DDRL step logs
    Design("dynamics", 54, MATH500_SMALL_LR, tuple(range(18)), None, (), ("ddrl",), (), {}, {"D2": "1.57"},
           OUT / "dynamics.json", "## Dynamics at the small learning rate (plan Amendment 54)", split="adapted",
           measures=(), cached_ddrl=False, whole="dynamics"),
    # --- ETMR, the paper's stronger baseline, beside TTRL and DDRL at lr/10 (Amendments 43-48) ---
    # Amendment 43: MATH-500-like, registered build
    Design("small_lr_etmr", 43, MATH500_SMALL_LR, tuple(range(18)), "2026-11-29T08:00:00+00:00", ("etmr",),
           _ETMR_READS, ("M2",), ETMR_CLAIMS["math500_like"],
           {"M2": "2.32 / 2.21 / 2.05; 1.84 / 1.83 / 1.82", "M3": "2.17 / 2.00 / 1.76; 1.84 / 1.83 / 1.82",
            "P3": "2.53 / 2.46 / 2.36; 1.01 / 1.00 / 0.99"}, OUT / "etmr.json",
           "## DDRL against ETMR at the small learning rate (plan Amendments 43 and 44)", job_kind="A43 lr/10",
           build="registered build", level_regimes=("math500_like", MATH500_SMALL_LR), figure="small_lr_etmr", **_ETMR),
    # Amendment 44: Amendments 28 and 43 again on the Xeon build
    Design("small_lr_etmr_xeon", 44, MATH500_SMALL_LR, tuple(range(12)), "2026-11-29T08:15:00+00:00",
           ("ttrl", "ddrl", "etmr"), _ETMR_READS, ("P1", "P2", "M1", "M2"), ETMR_CLAIMS["math500_like"],
           {"P1": "1.03 / 1.02 / 1.01; 2.49 / 2.37 / 2.29", "P2": "2.54 / 2.52 / 2.51; 2.70 / 2.64 / 2.60",
            "M1": "1.88 / 1.86 / 1.84; 1.99 / 1.79 / 1.66", "M2": "1.88 / 1.86 / 1.84; 2.70 / 2.48 / 2.32",
            "M3": "1.88 / 1.86 / 1.84; 2.73 / 2.40 / 2.17", "P3": "1.03 / 1.02 / 1.01; 2.77 / 2.63 / 2.53"},
           XEON / "small_lr_etmr.json", "### The same on the Xeon build (plan Amendment 44)", job_kind="A44 lr/10",
           results=XEON, build="Xeon build",
           level_regimes=("math500_like", MATH500_SMALL_LR), figure="small_lr_etmr_xeon", **_ETMR),
    # Amendment 46: AMC-like, Xeon build
    Design("small_lr_etmr_xeon_amc", 46, SMALL_LR, tuple(range(12)), "2026-11-29T11:40:00+00:00", ("etmr",),
           _ETMR_READS, ("M2",), ETMR_CLAIMS["amc_like"],
           {"M2": "2.51 / 2.40 / 2.33 / 2.28; 4.81 / 4.16 / 3.75 / 3.47",
            "M3": "2.51 / 2.40 / 2.33 / 2.28; 4.53 / 3.84 / 3.41 / 3.10",
            "P3": "3.11 / 3.07 / 3.05 / 3.03; 3.67 / 3.46 / 3.33 / 3.24"}, XEON / "small_lr_etmr_amc.json",
           "### In AMC-like (plan Amendments 46 and 47)", job_kind="A46 lr/10", results=XEON, build="Xeon build",
           level_regimes=("amc_like", SMALL_LR), figure="small_lr_etmr_xeon_amc", **_ETMR),
    # Amendment 47: AMC-like, registered build
    Design("small_lr_etmr_amc", 47, SMALL_LR, tuple(range(19)), "2026-12-01T15:30:00+00:00", ("etmr",),
           _ETMR_READS, ("M2",), ETMR_CLAIMS["amc_like"],
           {"M2": "2.18 / 2.10 / 2.05; 4.16 / 3.47 / 3.09", "M3": "2.18 / 2.10 / 2.05; 3.84 / 3.10 / 2.68",
            "P3": "2.80 / 2.74 / 2.71; 3.46 / 3.24 / 3.12"}, OUT / "etmr_amc.json",
           "### In AMC-like (plan Amendments 46 and 47)", job_kind="A47 lr/10", build="registered build",
           level_regimes=("amc_like", SMALL_LR), figure="small_lr_etmr_amc", **_ETMR),
    # Amendment 45: Amendment 43's ETMR runs on H1x's fresh questions
    Design("etmr_heldout", 45, MATH500_SMALL_LR, tuple(range(18)), None, ("etmr",),
           _ETMR_READS, (), ETMR_HELDOUT, {"P3x": "0.36", "M2x": "0.71", "M3x": "0.16"},
           OUT / "etmr_heldout.json", "### On fresh questions (plan Amendment 45)", finished=("etmr",),
           build="registered build",
           **_ETMR_HELD),
    # Amendment 45: Amendment 44's runs and the untrained model on fresh questions, Xeon build
    Design("etmr_heldout_xeon", 45, MATH500_SMALL_LR, tuple(range(10)), None, ETMR_HELD_RUNS, ETMR_HELD_RUNS,
           HELDOUT_CLAIMS, ETMR_HELDOUT,
           {"H1x": "0.97 / 1.12", "H1xT": "0.38 / 0.73", "H1xD": "0.72 / 0.64", "H1xC": "0.69 / 0.49",
            "H1xR": "0.17 / 0.32", "P3x": "0.38 / 0.73", "M2x": "0.72 / 0.64", "M3x": "0.17 / 0.32"},
           XEON / "etmr_heldout.json", "### On fresh questions (plan Amendment 45)", finished=("ttrl", "etmr", "ddrl"),
           results=XEON, build="Xeon build", **_ETMR_HELD),
    # Amendment 48: Amendment 47's ETMR runs and the untrained model on fresh questions (P3x only)
    Design("etmr_heldout_amc", 48, SMALL_LR, tuple(range(12)), None, ("no_adaptation", "etmr"),
           ("no_adaptation", "etmr"), (), {"P3x": ETMR_HELDOUT["P3x"]}, {"P3x": "0.73 / 1.47"},
           OUT / "etmr_heldout_amc.json", "### In AMC-like (plan Amendments 46 and 47)", finished=("etmr",),
           build="registered build",
           **_ETMR_HELD),
    # --- COR alone (Amendments 30, 31, 34-38) ---
    # Amendments 30 and 32: COR at 1e-6 and COR alone (no RL) at lr/10 in MATH-500-like
    Design("cor_math500", 30, MATH500_SMALL_LR, tuple(range(18)), None, (COR_LR10, COR_ONLY),
           ("no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_LR10, COR_ONLY), (),
           {"K1": (COR_LR10, "bcs_dae", "COR at lr 1e-6 - BCS+DAE (the RL-only weights)"),
            "K2": ("ddrl", COR_LR10, "DDRL (COR at 1e-5) - COR at 1e-6"),
            "K3": (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation"),
            "K4": ("ddrl", COR_ONLY, "DDRL - COR alone"), "K5": ("ddrl", COR_ONLY, "DDRL at the default lr - COR alone")},
           {"K1": "1.84", "K2": "1.84", "K3": "2.49", "K4": "1.82", "K5": "2.08 / 3.16"}, OUT / "cor.json",
           "## COR's learning rate, and COR without RL, at the small learning rate (plan Amendments 30 and 32)",
           split="adapted", job_kind="K lr/10", measures=("levels", "cor_kept", "seed_pass1"), cached_ddrl=False,
           cor_runs=("ddrl", COR_LR10, COR_ONLY), level_regimes=("math500_like", MATH500_SMALL_LR),
           twin_runs=("no_adaptation", "ddrl"), in_base=("K5",), figure="small_lr_cor", fresh="heldout_math500"),
    # Amendments 31 and 33: Amendment 28's runs and COR alone on H1x's fresh MATH-500-like questions
    Design("heldout_math500", 31, MATH500_SMALL_LR, tuple(range(18)), None, (*HELDOUT_X_METHODS, COR_ONLY),
           ("no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_ONLY), HELDOUT_CLAIMS,
           {"K3x": (COR_ONLY, "no_adaptation", "COR alone (no RL) - no adaptation, held-out"),
            "K4x": ("ddrl", COR_ONLY, "DDRL - COR alone, held-out")},
           {"H1x": "1.36", "H1xT": "1.06", "H1xD": "0.85", "H1xC": "0.45", "H1xR": "0.80", "K3x": "0.45-1.36",
            "K4x": "0.45-1.36"}, OUT / "heldout.json",
           "## Held-out transfer at the small learning rate (plan Amendments 31 and 33)", job_per_run=False,
           cached_ddrl=False, finished=("ttrl", "ddrl"),
           measures=("levels", "seed_pass1", "reproduced")),
    # --- 768 MATH-500-like questions (Amendments 26, 27) ---
    # Amendment 26: P1, P2 and M1 on the stream's first 768 questions, each seed's runs on one device
    Design("wide", 26, MATH500_768, tuple(range(200, 224)), None, STAGE1_METHODS, STAGE1_METHODS, ("P1", "P2", "M1"),
           {}, {}, WIDE_OUT / "claims.json",
           "## P1, P2 and M1 on three times the questions (plan Amendment 26)", split="adapted", job_kind="wide",
           measures=(), cached_ddrl=False, whole="device_check", results=WIDE_OUT, folder=""),
    # Amendment 27: Amendment 25's penalised arms against the untrained model and their own methods
    Design("wide_arms", 27, MATH500_768, tuple(range(200, 212)) + tuple(range(224, 236)), None,
           ("no_adaptation", *WIDE_ARMS), ("no_adaptation", *WIDE_ARMS, "ttrl", "ddrl"), (),
           {"Q1": ("ttrl_kl100x", "no_adaptation", "TTRL (100x KL) - no adaptation"),
            "Q2": ("ddrl_kl100x", "no_adaptation", "DDRL (100x KL) - no adaptation"),
            "Q3": ("ttrl_kl100x", "ttrl", "TTRL (100x KL) - TTRL"), "Q4": ("ddrl_kl100x", "ddrl", "DDRL (100x KL) - DDRL")},
           {"Q1": "1.58", "Q2": "1.86", "Q3": "0.54", "Q4": "0.97"}, WIDE_OUT / "arms.json",
           "## Do the penalised methods gain over the untrained model? (plan Amendment 27)", split="adapted",
           job_kind="wide", measures=(), cached_ddrl=False, optional=("ttrl", "ddrl"), whole="wide_arms",
           results=WIDE_OUT, folder=""),
    # --- COR alone (Amendments 34-38) ---
    # Amendment 34: COR alone (one COR call from the untrained model) in AMC-like and AIME-like
    Design("cor_alone", 34, "amc_like", tuple(range(19)), None, (COR_ONLY,), ("no_adaptation", "ddrl", COR_ONLY), (),
           {("K3", "amc_like"): _K3, ("K5", "amc_like"): _K5, ("K4", SMALL_LR): _K4, ("K3", "aime_like"): _K3,
            ("K5", "aime_like"): _K5},
           {("K3", "amc_like"): "3.98", ("K5", "amc_like"): "1.81-3.98", ("K4", SMALL_LR): "2.03-3.93",
            ("K3", "aime_like"): "0.98", ("K5", "aime_like"): "0.00-0.98"}, RESULTS / "cor_alone" / "adapted.json",
           "## COR alone in AMC-like and AIME-like (plan Amendment 34)", split="adapted", job_kind="K cor alone",
           whole="cor_alone",
           regime_seeds={"amc_like": tuple(range(19)), "aime_like": tuple(range(6))}, **_COR_ALONE,
           figure="cor_alone", fresh="cor_alone_heldout"),
    # ... and on H1x's fresh questions
    Design("cor_alone_heldout", 34, "amc_like", tuple(range(19)), None, (COR_ONLY,), ("no_adaptation", "ddrl", COR_ONLY),
           (), {("K3x", "amc_like"): _K3X, ("K5x", "amc_like"): _K5X, ("K3x", "aime_like"): _K3X,
                ("K5x", "aime_like"): _K5X},
           {("K3x", "amc_like"): "0.28-1.41", ("K5x", "amc_like"): "0.28-1.41", ("K3x", "aime_like"): "0.13-0.55",
            ("K5x", "aime_like"): "0.13-0.55"}, RESULTS / "cor_alone" / "heldout.json",
           "## COR alone on fresh questions (plan Amendment 34)", whole="cor_alone_heldout",
           regime_seeds={"amc_like": tuple(range(19)), "aime_like": tuple(range(6))}, **_COR_ALONE),
    # Amendment 35: K3 and K4 on the c49d994e build
    Design("cor_alone_c49d", 35, SMALL_LR, tuple(range(19)), None, ("no_adaptation", COR_ONLY),
           ("no_adaptation", "ddrl", COR_ONLY), (), {("K3", SMALL_LR): _K3, ("K4", SMALL_LR): _K4},
           {("K3", SMALL_LR): "3.04", ("K4", SMALL_LR): "3.30"}, RESULTS / "replication_c49d" / "cor_alone.json",
           "## COR alone on the c49d994e build (plan Amendment 35)", split="adapted", job_kind="K cor alone",
           job_per_run=False, results=RESULTS / "replication_c49d", whole="cor_alone",
           regime_seeds={SMALL_LR: tuple(range(19))}, **_COR_ALONE, figure="cor_alone_c49d"),
    # Amendments 36, 37: COR alone in AMC-like and MATH-500-like, TTRL and DDRL at lr/10, Xeon build
    Design("cor_alone_xeon", 36, "amc_like", tuple(range(12)), "2026-11-28T18:00:00+00:00", (COR_ONLY,),
           ("no_adaptation", "ddrl", COR_ONLY), (),
           {("K3", "amc_like"): _K3, ("K5", "amc_like"): _K5, ("K3", "math500_like"): _K3,
            ("K5", "math500_like"): _K5, ("K4", SMALL_LR): _K4},
           {("K3", "amc_like"): "3.08", ("K5", "amc_like"): "3.95", ("K3", "math500_like"): "2.19",
            ("K5", "math500_like"): "3.51", ("K4", SMALL_LR): "3.36 / 3.62"}, XEON / "cor_alone.json",
           "## COR alone on the Xeon build (plan Amendments 36 and 37)", split="adapted", job_kind="K cor alone",
           results=XEON, whole="cor_alone",
           regime_seeds={"amc_like": tuple(range(12)), "math500_like": tuple(range(12)), SMALL_LR: tuple(range(12))},
           regime_runs={SMALL_LR: ("ttrl", "ddrl")}, **_COR_ALONE,
           figure="cor_alone_xeon", fresh="cor_alone_xeon_heldout"),
    # Amendment 38: those lr/10 runs, the untrained model and COR alone on H1x's fresh questions
    Design("cor_alone_xeon_heldout", 38, SMALL_LR, tuple(range(12)), None, COR_ALONE_RUNS, COR_ALONE_RUNS, (),
           HELDOUT_LR10, dict(zip(HELDOUT_LR10, ("1.50 / 0.96", "1.47 / 0.37", "1.25 / 0.72", "0.33 / 0.69",
                                                 "1.20 / 0.16", "0.60 / 0.78", "1.39 / 0.49"))),
           XEON / "cor_alone_heldout.json", "### Held-out, on the Xeon build (plan Amendment 38)", job_per_run=False,
           finished=("ttrl", "ddrl"), results=XEON,
           whole="cor_alone_heldout", regime_seeds={SMALL_LR: tuple(range(12))},
           **_COR_ALONE),
    # --- policy drift (Amendments 21-25) and the registered analyses ---
    # Amendments 21-25 (ddrl.study.drift): one row per results/drift/<stem>.json; its runs are H1x jobs, one per method
    # (those of drift/gpu* ran on an H100: no job here recomputes them)
    *(Design(f"drift_{stem}", a, regime, tuple(seeds), None, () if "gpu" in folder else runs, runs, (), {}, {},
             RESULTS / "drift" / f"{stem}.json",
             f"## What costs held-out accuracy: the distance from the base (plan Amendment {a})", measures=(),
             cached_ddrl=False, whole="drift", folder=folder, drift=pairs,
             drift_dir=RESULTS / "drift" / "exploratory" if folder == "runs" else None, exploratory=exploratory)
      for stem, a, regime, seeds, folder, pairs, exploratory in (
          ("amc_like_exploratory", 21, "amc_like", range(19), "runs", "kl_late", True),
          ("amc_like_gpu", 21, "amc_like", range(100, 132), "drift/gpu", "kl_late", False),
          ("amc_like_cpu", 21, "amc_like", range(100, 132), "drift/cpu", "kl_late", False),
          ("amc_like_exploratory_heldout_kl", 21, "amc_like", range(19), "runs", "kl_heldout", False),
          ("amc_like_cpu_heldout_kl", 21, "amc_like", range(100, 132), "drift/cpu", "kl_heldout", False),
          ("amc_like_cpu_kl_dose", 22, "amc_like", range(100, 116), "drift/cpu", "dose", False),
          ("amc_like_gpu_methods", 23, "amc_like", range(100, 116), "drift/gpu_methods", "methods", False),
          ("amc_like_cpu_methods", 23, "amc_like", range(100, 116), "drift/cpu", "methods", False),
          ("math500_like_cpu_methods", 24, "math500_like", range(100, 132), "drift/cpu", "methods", False),
          ("amc_like_cpu_penalty", 25, "amc_like", range(100, 116), "drift/cpu", "penalty", False),
          ("math500_like_cpu_penalty", 25, "math500_like", range(100, 111), "drift/cpu", "penalty", False))
      for runs in [PAIR if pairs in ("kl_late", "kl_heldout") else arm_methods(pairs)]),
    # The registered analysis (its jobs: the registered stages, ``runner.run_claims``) and its replications (Amendments
    # 5, 6: the runs each ran, in its own results tree; every run there enters its claims.json)
    *(Design(name, a, regime, tuple(range(n)), None, runs, runs or ("ttrl", "ddrl"), (), {}, {}, root / "claims.json",
             f"## The registered claims on the {build or 'registered build'}", measures=(), cached_ddrl=False,
             results=root, build=build, whole="claims", split="adapted", job_kind=kind, job_regimes=where)
      for name, a, root, regime, n, build, runs, where, kind in (
          ("claims", 0, RESULTS, "amc_like", 19, None, (), (), ""),
          ("claims_xeon", 5, XEON, "amc_like", 12, "Xeon build", STAGE1_METHODS, ("amc_like", "math500_like"),
           "stage 1 (A5)"),
          ("claims_c49d", 6, RESULTS / "replication_c49d", SMALL_LR, 19, "c49d994e build", ("ttrl", "ddrl"), (),
           "lr/10 (A6)"))),
    # --- MATH-500-like at lr/10, Table 1, COR 4x at 1e-6 (Amendments 28, 49-51, 62) ---
    # Amendment 28: P1, P2 and M1 in MATH-500-like at lr/10
    Design("small_lr", 28, MATH500_SMALL_LR, tuple(range(18)), None, ("ttrl", "ddrl"), ("no_adaptation", "ttrl", "ddrl"),
           ("P1", "P2", "M1"), {}, {"P1": "2.42 / 1.92", "P2": "3.07 / 2.80", "M1": "1.98 / 1.45"}, OUT / "claims.json",
           "## The main table at the paper's small learning rate (plan Amendment 28)", split="adapted",
           job_kind="lr/10m", measures=("levels", "seed_pass1", "vote"), cached_ddrl=False,
           level_regimes=("math500_like", MATH500_SMALL_LR), figure="small_lr"),
    # Amendment 49: Table 1 (T1: TTRL without GRPO's std division - TTRL) at lr/10
    Design("table1", 49, MATH500_SMALL_LR, tuple(range(12)), None, ("grpo_no_std", "ttrl"), ("ttrl", "grpo_no_std"),
           ("T1",), {}, {"T1": "1.10 / 1.84 / 0.46"}, OUT / "table1.json",
           "## Table 1 at the small learning rate (plan Amendment 49)", split="adapted", job_kind="T1 lr/10",
           measures=("levels", "vote"), cached_ddrl=False, reference="ttrl",
           level_regimes=("math500_like", MATH500_SMALL_LR)),
    # Amendment 50: T1f, Table 1 as the paper's text reads it (fixed +1/-1 advantages), at both lrs
    Design("table1_fixed", 50, "math500_like", tuple(range(12)), None, ("dae",), ("ttrl", "grpo_no_std", "dae"), (),
           {}, {"math500_like": "1.10 / 0.95", MATH500_SMALL_LR: "1.84 / 0.13"}, OUT / "table1_fixed.json",
           "## Table 1 as the paper's text reads it (plan Amendment 50)", split="adapted", job_kind="T1f",
           measures=(), cached_ddrl=False, reference="ttrl", optional=("grpo_no_std",),
           level_regimes=("math500_like", MATH500_SMALL_LR), whole="t1f",
           job_regimes=("math500_like", MATH500_SMALL_LR), csv_dir=T1F_DIR),
    # Amendment 51: T1f on the fresh seeds 12-45
    Design("table1_fixed_more", 51, "math500_like", tuple(range(12, 46)), None, ("dae",), ("ttrl", "grpo_no_std", "dae"),
           (), {}, {"T1f": "1.28 / 0.69"}, OUT / "table1_fixed_more.json",
           "## Table 1 as the paper's text reads it, on fresh seeds (plan Amendment 51)", split="adapted",
           job_kind="T1f", measures=(), cached_ddrl=False, reference="ttrl", optional=("grpo_no_std",),
           level_regimes=("math500_like",), whole="t1f", csv_dir=T1F_DIR),
    # Amendment 62: COR keeping 4x at a tenth of its rate, adapted then fresh questions, in AMC-like, MATH-500-like
    Design("cor4x_lr10_amc", 62, SMALL_LR, tuple(range(10)), "2026-12-03T20:05:00+00:00", (COR_4X_LR10,),
           COR_TRADE_RUNS[HELDOUT_X], (), {},
           {"K1g": "0.42 / 0.36, 1.97 / 1.87", "R1g": "1.44 / 1.41, 0.42 / 0.36", "K1gx": "0.15 / 0.12, 0.56 / 0.50",
            "R1gx": "0.53 / 0.51, 0.15 / 0.12"}, OUT / "cor4x_lr10_amc.json",
           "## COR keeping 4x the rollouts at a tenth of its rate, at the small learning rate (plan Amendment 62)",
           job_kind="R1g lr/10 (A62)", measures=(), reference="bcs_dae", whole="cor_trade",
           then_heldout=True),
    Design("cor4x_lr10_math500", 62, MATH500_SMALL_LR, tuple(range(10)), "2026-12-03T20:25:00+00:00", (COR_4X_LR10,),
           COR_TRADE_RUNS[HELDOUT_X], (), {},
           {"K1g": "0.59 / 0.55, 1.96 / 1.91", "R1g": "1.04 / 1.01, 0.59 / 0.55", "K1gx": "0.20 / 0.18, 0.71 / 0.70",
            "R1gx": "0.67 / 0.64, 0.20 / 0.18"}, OUT / "cor4x_lr10_math500.json",
           "### In MATH-500-like (plan Amendment 62)",
           job_kind="R1g lr/10 (A62)", measures=(), reference="bcs_dae", whole="cor_trade",
           then_heldout=True),
    # Stage 3 (registered 2026-12-07 before any of its runs): the label-free rewards against TTRL and DDRL
    _reward_design("rewards_amc", "amc_like", "amc_like", ("2.15", "3.88")),
    _reward_design("rewards_amc_lr10", SMALL_LR, "amc_like", ("2.13", "2.77")),
    _reward_design("rewards_math500_lr10", MATH500_SMALL_LR, "math500_like", ("1.86", "1.02")),
)}


CHECK = OUT / "refine_check"  # the repeat checks' CSVs (<CHECK>/<regime>/ddrl-seedNN.csv.gz), never committed


def design(name: str) -> Design:
    """The design called ``name``, or a ValueError listing the table's."""
    if name not in DESIGNS:
        raise ValueError(f"no design {name!r} in ddrl.study.designs.DESIGNS; known: {', '.join(DESIGNS)}")
    return DESIGNS[name]


def _folder(d: Design, method: str, regime: str | None = None) -> str:
    """The regime whose folder holds a run's CSVs; the untrained run's adapted rows are its base regime's (one
    computation for every learning rate)."""
    g = regime or d.regime
    return SAME_BASE.get(g, g) if method == "no_adaptation" and d.split != HELDOUT_X else g


def path(d: Design, out: str | Path, method: str, seed: int, regime: str | None = None) -> Path:
    """A run's CSV on the design's split."""
    where = (out, _folder(d, method, regime), method, seed)
    return heldout_x_path(*where) if d.split == HELDOUT_X else csv_path(*where)


def _split_dir(out: str | Path, split: str) -> Path:
    return Path(out) / ("" if split == "adapted" else split)


def _needed(d: Design) -> tuple[str, ...]:
    return tuple(m for m in d.methods if m not in d.optional)


def _complete(d: Design, out: str | Path, runs: Sequence[str]) -> list[int]:
    roots = {m: _split_dir(Path(out, d.csv_dir) if m in d.evaluates else out, d.split) for m in runs}
    return sorted(set.intersection(*(set(complete_seeds(roots[m], _folder(d, m), (m,))) for m in runs)))


def _wants(d: Design, runs: Sequence[str], seed: int) -> bool:
    return d.claim_seeds is None or any(seed in cs for c, cs in d.claim_seeds.items() if set(runs) & set(PAIRED[c][:2]))


def analysed_seeds(d: Design, out: str | Path | None = None, seeds: Sequence[int] | None = None,
                   now: float | None = None) -> list[int] | dict[str, list[int]]:
    """The seeds the plan reads, complete in every run needed; per claim with :attr:`Design.claim_seeds` (without a
    clock each claim waits for its own seeds, with one all share the complete ones)."""
    out = d.runs if out is None else out
    among, what = d.seeds if seeds is None else tuple(seeds), f"{out}: {d.tag}"
    if d.claim_seeds is not None and d.cutoff is None:
        return {c: seeds_to_analyse([s for s in cs if s in among], _complete(d, out, PAIRED[c][:2]), f"{what} {c}")
                for c, cs in d.claim_seeds.items()}
    done = seeds_to_analyse(among, _complete(d, out, _needed(d)), what, d.cutoff, now)
    return done if d.claim_seeds is None else {c: [s for s in cs if s in done] for c, cs in d.claim_seeds.items()}


def _reads_from(d: Design) -> dict[str, str]:
    """A claim's regime without seeds of its own -> its base among the design's regimes, whose no-RL runs it reads."""
    return {g: SAME_BASE[g] for _, g in d.claims if SAME_BASE.get(g) in d.regime_seeds}


def _reads(d: Design) -> dict[str, list[tuple[str, str]]]:
    """Per regime, the (folder's regime, run) CSVs its claims read, its own first."""
    src = _reads_from(d)
    need: dict[str, list[tuple[str, str]]] = {g: [] for g in d.regime_seeds}
    for (_, g), (a, b, _) in d.claims.items():
        need[g if g in need else src[g]] += [(src.get(g, g) if m in NO_RL else g, m) for m in (a, b)]
    return {g: sorted(set(cs), key=lambda c: (c[0] != g, c[0], COR_ALONE_RUNS.index(c[1]))) for g, cs in need.items()}


def _unwritten(d: Design, out: str | Path, seeds: dict) -> dict[str, list[int]]:
    at = heldout_x_path if d.split == HELDOUT_X else csv_path
    return {g: [s for s in ss if not all(at(out, f, m, s).is_file() for f, m in _reads(d)[g])] for g, ss in seeds.items()}


def regime_designs(d: Design) -> list[Design]:
    """A design spanning regimes as one design per regime, with its clock only where it trains."""
    return [replace(d, regime=g, seeds=ss, evaluates=runs, cutoff=d.cutoff if set(runs) - set(NO_RL) else None,
                    regime_seeds=None, regime_runs=None)
            for g, ss in d.regime_seeds.items() for runs in [(d.regime_runs or {}).get(g, d.evaluates)]]


def _panels(d: Design, regimes: Sequence[str]) -> dict[str, list[str]]:
    """The regimes a table block or figure panel shows, each with those whose runs it shows beside."""
    src = _reads_from(d)
    return {g: [g, *(h for h, b in src.items() if b == g)] for g in regimes if src.get(g) not in regimes}
