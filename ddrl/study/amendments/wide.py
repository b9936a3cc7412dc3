"""P1, P2 and M1 on 768 MATH-500-like questions (plan Amendment 26): the registered comparisons that were bound
by their questions, rerun on three times as many.

The registered study's MATH-500-like P1 (TTRL - no adaptation) and P2 (DDRL - no adaptation) missed the 2.0-point
half-width at 46 seeds x 256 questions (2.2 and 2.9): how much adaptation gains varies between questions, so no
number of seeds reaches it. This amendment adapts on the same stream's first 768 questions (the registered 256
first; ``results/regimes_wide.json``, base maj@64 0.727 >= 0.70, so still MATH-500-like) with everything else
the registered regime's, on :data:`SEEDS`, and decides P1, P2 and M1 there by the registered bootstrap and rule.

Each seed's three runs are computed on one device: the CPU (single-thread workers, the study's pool) or, where a
GPU machine is lent, a GPU; :data:`DEVICES_FILE` names the seeds imported from a GPU (their runs are other runs:
the job keys name the device). The registered check (:func:`device_check`) compares the GPU seeds' per-seed
effects with the CPU seeds'; where its interval excludes 0, the verdict is taken from the CPU seeds alone.

    python -m ddrl.study.amendments.wide run --workers 2                      # the CPU seeds (resumable; skips the GPU's seeds)
    python -m ddrl.study.amendments.wide run --seeds 212-223 --workers 8 --out DIR       # on a GPU machine
    python -m ddrl.study.amendments.wide import DIR --device "NVIDIA H100 80GB HBM3"     # its complete seeds into results/wide
    python -m ddrl.study.amendments.wide status                                # complete seeds, by device
    python -m ddrl.study.amendments.wide analyse --json results/wide/claims.json

Plan Amendment 27 adds Amendment 25's penalised arms (:data:`ARMS`, kl_coef 0.1) in the same regime, on the CPU
seeds :data:`ARM_SEEDS`, and compares them with the untrained model (Q1, Q2) and with their own methods (Q3, Q4):

    python -m ddrl.study.amendments.wide run --arms --workers 2               # resumable; the untrained runs of 200-211 are reused
    python -m ddrl.study.amendments.wide analyse --arms --json results/wide/arms.json
    python -m ddrl.study.amendments.wide figure                                # docs/results/wide_vote.{png,pdf} (descriptive)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats as sps
import seaborn as sns

from ddrl.study.claims import entry, validate, with_half_width
from ddrl.run.pool import minutes_to
from ddrl.report.plotting import color, label, save_docs_figure
from ddrl.run.storage import atomic_write_bytes, cache_root, write_json
from ddrl.seeds import derive_seed, numpy_generator, seed_range
from ddrl.report.stats import decided, hierarchical_bootstrap
from ddrl.study.analysis import claim_matrix, load_questions, load_steps, method_csvs, paired_matrix
from ddrl.study.figures import pseudo_labels_by_episode
from ddrl.study.plan import CSV, RESULTS, SCALES, Job, check_weights, csv_method_seed, csv_path
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import entry_ci

REGIME = "math500_like_768"  # ddrl.study.regimes.wide_regime of the registered MATH-500-like regime
STANDS_FOR = "math500_like"  # the benchmark it stands for: the paper's number and sign are MATH-500's
SEEDS = tuple(range(200, 224))  # 24 seeds (the plan's power analysis), apart from every earlier seed set
METHODS = ("no_adaptation", "ttrl", "ddrl")
CLAIMS = ("P1", "P2", "M1")
OUT = RESULTS / "wide"
DEVICES_FILE = "devices.json"  # {seed: device name} of the seeds computed on a GPU
#: Plan Amendment 27: Amendment 25's arms (the registered presets with kl_coef 0.1) on the CPU seeds of Amendment 26
#: and 12 new ones (their untrained runs new too); one device (this machine's CPU) for every arm run.
ARMS = ("ttrl_kl100x", "ddrl_kl100x")
ARM_SEEDS = tuple(range(200, 212)) + tuple(range(224, 236))
#: id -> (a, b, expected sign, margin, metric): adapted pass@1 a - b per seed and question, in points
ARM_PAIRS = {
    "Q1": ("ttrl_kl100x", "no_adaptation", +1, 1.0, "adapted pass@1, TTRL (100x KL) - no adaptation [points]"),
    "Q2": ("ddrl_kl100x", "no_adaptation", +1, 1.0, "adapted pass@1, DDRL (100x KL) - no adaptation [points]"),
    "Q3": ("ttrl_kl100x", "ttrl", +1, 1.0, "adapted pass@1, TTRL (100x KL) - TTRL [points]"),
    "Q4": ("ddrl_kl100x", "ddrl", +1, 1.0, "adapted pass@1, DDRL (100x KL) - DDRL [points]"),
}

#: The plan's predicted 95% half-widths (Amendment 27, "Power": Q1/Q2 from the registered P1/P2 components at 24 x
#: 768, Q3/Q4 from Amendment 25's L4 matrices at 12 x 768), shown beside the measured ones
ARM_PREDICTED_HALF_WIDTH = {"Q1": 1.58, "Q2": 1.86, "Q3": 0.54, "Q4": 0.97}
VERDICT_MD = {"reproduced": "**reproduced**", "contradicted": "***contradicted***", "no effect": "**no effect**",
              "not resolved": "*not resolved*"}


def amendment_cells(e: dict, predicted: str) -> str:
    """The closing cells of a claim's row in an lr/10 amendment's table: estimate [95% CI] in bold with its seeds, the
    half-width beside the plan's ``predicted`` ones, the verdict."""
    return f"**{entry_ci(e)}**, {e['n_seeds']} seeds | {e['half_width']:.2f} ({predicted}) | {VERDICT_MD[e['verdict']]} |"


def predicted_text(half_widths: Iterable[float]) -> str:
    """A plan's predicted half-widths as the tables print them: ``0.44 / 0.39``."""
    return " / ".join(f"{x:.2f}" for x in half_widths)


def claim_row(e: dict, text: str, predicted: str) -> str:
    """One claim's row of an amendment's table: id and ``text`` | seeds | estimate [95% CI] | half-width
    (``predicted``) | verdict."""
    return (f"| {e['id']} {text} | {e['n_seeds']} | {entry_ci(e)} | {e['half_width']:.2f} ({predicted}) | "
            f"{VERDICT_MD[e['verdict']]} |")


def jobs(seeds: Sequence[int], methods: Sequence[str] = METHODS, regime: str = REGIME) -> list[Job]:
    """One job per seed and method, seed by seed (a budget's cut leaves whole seeds behind)."""
    return [Job(regime, s, (m,), "wide") for s in seeds for m in methods]


def gpu_seeds(out: str | Path = OUT) -> dict[int, str]:
    """The seeds whose runs were imported from a GPU (:func:`import_runs`), with the device's name."""
    path = Path(out) / DEVICES_FILE
    return {int(k): v for k, v in json.loads(path.read_text()).items()} if path.is_file() else {}


def complete_seeds(out: str | Path, regime: str = REGIME, methods: Sequence[str] = METHODS) -> list[int]:
    """Seeds with a written CSV of every method (``<out>/<regime>/<method>-seedNN.csv.gz``)."""
    have = [{csv_method_seed(p)[1] for p in method_csvs(Path(out, regime), m)} for m in methods]
    return sorted(set.intersection(*have)) if have else []


def missing_seeds(out: str | Path, regime: str, methods: Sequence[str], seeds: Iterable[int]) -> list[int]:
    """The seeds of ``seeds`` without a written CSV of every method (:func:`complete_seeds`' complement): what a plan
    amendment has still to run or evaluate (``out``: a runs folder, or its ``heldout_x`` one)."""
    return sorted(set(seeds) - set(complete_seeds(out, regime, methods)))


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


def read_csvs(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The written files among ``paths`` (:func:`~ddrl.study.plan.csv_path`'s question or step CSVs; ``question``
    read as text, so "07" stays "07"), each once, in order, as one table; an error when none is written."""
    files = [Path(p) for p in dict.fromkeys(map(str, paths)) if Path(p).is_file()]
    if not files:
        raise FileNotFoundError("none of the CSVs asked for is written")
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in files], ignore_index=True)


def import_runs(src: str | Path, device: str, out: str | Path = OUT, regime: str = REGIME,
                methods: Sequence[str] = METHODS) -> list[int]:
    """Copy the complete seeds of a GPU machine's ``run --out src`` into ``out`` and record them in
    :data:`DEVICES_FILE` as computed on ``device``. A seed missing a method there is left out (its runs are
    redone on the CPU); a seed imported before with the same files is skipped, any other seed that ``out``
    already holds a CSV of is refused (one device per seed). Returns the seeds imported now."""
    dest, devices = Path(out) / regime, gpu_seeds(out)
    seeds = [s for s in complete_seeds(src, regime, methods) if not (devices.get(s) == device and all(
        csv_path(out, regime, m, s).is_file() and csv_path(out, regime, m, s).read_bytes() ==
        csv_path(src, regime, m, s).read_bytes() for m in methods))]  # imported before: nothing to do
    clash = [s for s in seeds if any(dest.glob(f"*-seed{s:02d}{CSV}")) or any(dest.glob(f"*-seed{s:02d}-steps{CSV}"))]
    if clash:
        raise ValueError(f"import_runs: {dest} already holds CSVs of seed(s) {clash}; one device per seed")
    dest.mkdir(parents=True, exist_ok=True)
    for s in seeds:
        for m in methods:
            for steps in (False, True):
                p = csv_path(src, regime, m, s, steps)
                if p.is_file():
                    atomic_write_bytes(csv_path(out, regime, m, s, steps), p.read_bytes())
        devices[s] = device
    write_json(Path(out) / DEVICES_FILE, {str(k): v for k, v in sorted(devices.items())})
    return seeds


def wide_entry(cid: str, d: pd.DataFrame, n_boot: int = 4000, regime: str = REGIME,
               stands_for: str = STANDS_FOR) -> dict:
    """A ``claims.json`` entry of claim ``cid`` in ``regime`` (default :data:`REGIME`; Amendment 28's
    ``math500_like_small_lr`` too) from its seeds x questions matrix of differences (points): the registered
    hierarchical bootstrap (stream ``derive_seed(0, "claims", cid, regime)``) and rule, the paper's number and sign
    those of the benchmark it stands for (``stands_for``'s: MATH-500)."""
    rng = np.random.default_rng(derive_seed(0, "claims", cid, regime))
    iv = hierarchical_bootstrap(d.to_numpy(), rng, n_boot)
    return {**entry(cid, stands_for, iv.estimate, iv.ci_low, iv.ci_high, iv.n_seeds, iv.n_questions), "regime": regime}


def device_check(d: pd.DataFrame, devices: dict[int, str], confidence: float = 0.95) -> dict | None:
    """The registered device check: mean per-seed effect (a row mean of ``d``) of the GPU seeds minus the CPU
    seeds', Welch's t interval; ``shifted`` when it excludes 0. None with fewer than 2 seeds on either device."""
    eff = d.mean(axis=1)
    gpu = eff[[s in devices for s in eff.index]]
    cpu = eff[[s not in devices for s in eff.index]]
    if len(gpu) < 2 or len(cpu) < 2:
        return None
    ci = sps.ttest_ind(gpu, cpu, equal_var=False).confidence_interval(confidence)
    return {"gpu_minus_cpu": float(gpu.mean() - cpu.mean()), "ci_low": float(ci.low), "ci_high": float(ci.high),
            "n_gpu": int(len(gpu)), "n_cpu": int(len(cpu)), "shifted": bool(ci.low > 0 or ci.high < 0)}


def analyse(out: str | Path = OUT, n_boot: int = 4000, seeds: Sequence[int] = SEEDS) -> dict:
    """P1, P2 and M1 in :data:`REGIME` over ``seeds``, every one of them complete (the plan reads no mean before):
    ``entries`` (the verdicts: CPU seeds alone where the device check shifted), ``all_seeds`` and ``cpu_seeds``
    entries, and each claim's ``device_check``."""
    done = [s for s in complete_seeds(out) if s in set(seeds)]
    if len(done) < len(seeds):
        raise ValueError(f"{out}: {len(done)} of {len(seeds)} seeds complete (missing "
                         f"{sorted(set(seeds) - set(done))}); the plan reads no estimate before all are")
    df = load_questions(out)
    df = df[df.seed.isin(done)]
    devices = {s: v for s, v in gpu_seeds(out).items() if s in done}
    res: dict = {"regime": REGIME, "seeds": done, "gpu_seeds": devices, "entries": [], "all_seeds": [],
                 "cpu_seeds": [], "device_check": {}}
    for cid in CLAIMS:
        d = claim_matrix(df, cid, REGIME)
        if d is None:
            continue
        every = wide_entry(cid, d, n_boot)
        cpu_rows = [s for s in d.index if s not in devices]
        cpu = wide_entry(cid, d.loc[cpu_rows], n_boot) if devices and len(cpu_rows) >= 2 else every
        check = device_check(d, devices)
        use = cpu if check and check["shifted"] else every
        note = "GPU seeds shifted the effect (device check): CPU seeds only" if use is not every else ""
        res["entries"].append({**use, **({"note": note} if note else {})})
        res["all_seeds"].append(every)
        res["cpu_seeds"].append(cpu)
        res["device_check"][cid] = check
    for k in ("entries", "all_seeds", "cpu_seeds"):
        with_half_width(validate(res[k], f"{REGIME} {k}"))
    return res


def arm_entry(pid: str, df: pd.DataFrame, n_boot: int = 4000) -> dict | None:
    """Amendment 27's comparison ``pid`` (:data:`ARM_PAIRS`) over the seeds of ``df`` where both of its methods have
    adapted rows: the hierarchical bootstrap (stream ``derive_seed(0, "wide-arms", pid)``) and the registered rule
    (``ddrl.report.stats.verdict``, the expected sign, margin 1). None with fewer than 2 such seeds."""
    a, b, sign, margin, metric = ARM_PAIRS[pid]
    d = paired_matrix(df, REGIME, a, b, "adapted")
    if d is None:
        return None
    rng = np.random.default_rng(derive_seed(0, "wide-arms", pid))
    return {"id": pid, "metric": metric, "regime": REGIME, "a": a, "b": b, "sign": sign,
            **decided(d.to_numpy(), rng, sign, margin, n_boot)}


def analyse_arms(out: str | Path = OUT, n_boot: int = 4000, seeds: Sequence[int] = ARM_SEEDS) -> list[dict]:
    """Q1-Q4 (plan Amendment 27) once every seed of ``seeds`` has its untrained run and both arms on the CPU (the
    plan reads no mean before): Q1, Q2 over all of them, Q3, Q4 over those that also have the method's CPU run."""
    arms_done = complete_seeds(out, REGIME, ("no_adaptation", *ARMS))
    missing = sorted(set(seeds) - set(arms_done))
    if missing:
        raise ValueError(f"{out}: seeds {missing} lack an untrained or penalised run; the plan reads no estimate "
                         "before all are complete")
    gpu = set(gpu_seeds(out))
    if gpu & set(seeds):
        raise ValueError(f"Amendment 27 is CPU-only; seeds {sorted(gpu & set(seeds))} were computed on a GPU")
    df = load_questions(out)
    df = df[df.seed.isin(set(seeds))]
    return [e for e in (arm_entry(pid, df, n_boot) for pid in ARM_PAIRS) if e is not None]


def arms_markdown(entries: Sequence[dict]) -> str:
    """Amendment 27's table as docs/results.md quotes it: per comparison its seeds, the estimate with its 95%
    interval, the half-width beside the plan's prediction and the verdict (from ``arms.json``'s entries)."""
    rows = ["| comparison (MATH-500-like, 768 questions, adapted pass@1, points) | seeds | estimate [95% CI] | "
            "half-width (predicted) | verdict |", "|---|---|---|---|---|"]
    for e in entries:
        what = ARM_PAIRS[e["id"]][4].removeprefix("adapted pass@1, ").removesuffix(" [points]")
        rows.append(f"| {e['id']} {what} | {e['n_seeds']} | {entry_ci(e)} "
                    f"| {e['half_width']:.2f} ({ARM_PREDICTED_HALF_WIDTH[e['id']]:.2f}) | {VERDICT_MD[e['verdict']]} |")
    return "\n".join(rows) + "\n"


def run_levels(df: pd.DataFrame, split: str = "adapted", value: str = "pass@1", name: str = "pass1") -> pd.DataFrame:
    """Each run's pass@1 (or another per-question ``value``, as column ``name``) on ``split`` in points (the mean
    over its questions) from per-question rows: one row per regime x method x seed, in the order the rows come."""
    a = df[df.split == split]
    return (100 * a.groupby(["regime", "method", "seed"], sort=False)[value].mean()).rename(name).reset_index()


def reproduced_counts(runs: pd.DataFrame) -> dict[str, int]:
    """How many of ``runs`` (one row per run, its ``registered_reproduced`` flag: None/NaN where no committed CSV
    exists to compare with) have adapted rows equal to their committed CSV, of how many could be checked."""
    checked = runs["registered_reproduced"].dropna()
    return {"registered_reproduced": int(checked.astype(bool).sum()), "registered_checked": int(len(checked))}


def seed_levels(out: str | Path = OUT, seeds: Sequence[int] | None = None, regime: str = REGIME) -> pd.DataFrame:
    """:func:`run_levels` of ``regime``'s CSVs under ``out`` (on ``seeds``): one row per method x seed."""
    df = load_questions(out)
    df = df[df.regime == regime]
    if seeds is not None:
        df = df[df.seed.isin(set(seeds))]
    return run_levels(df).drop(columns="regime").sort_values(["method", "seed"], ignore_index=True)


def level_table(per: pd.DataFrame, by: Sequence[str] = ("method",), reference: str = "no_adaptation",
                sort: bool = True) -> pd.DataFrame:
    """Descriptive, no verdict: runs' levels (:func:`run_levels` rows: ``by`` columns, ``seed``, ``pass1``) as the
    mean and SD over seeds per ``by`` group, with the number of seeds and how many of them end below ``reference``'s
    run of the same seed (of the seeds both have)."""
    ref = per[per.method == reference].set_index("seed")["pass1"]
    rows = []
    for keys, g in per.groupby(list(by), sort=sort):
        keys = keys if isinstance(keys, tuple) else (keys,)
        rows.append({**dict(zip(by, keys)), "pass1": g.pass1.mean(), "sd": g.pass1.std(ddof=1),
                     "n_seeds": int(g.seed.nunique()),
                     "below_reference": int((g.set_index("seed")["pass1"] < ref.reindex(g.seed)).sum())})
    return pd.DataFrame(rows)


def below_cell(row: dict, reference: str = "no_adaptation") -> str:
    """A :func:`level_table` row's "seeds below the reference" cell as the level tables print it: ``k of n``, or
    ``-`` for the reference's own row."""
    return "-" if row["method"] == reference else f"{row['below_reference']} of {row['n_seeds']}"


def held_level_rows(levels: Sequence[dict], first: str = "run (lr/10)",
                    mean: str = "held-out pass@1, mean over seeds (SD)") -> list[str]:
    """The held-out level table the lr/10 amendments print under their claims (a blank line first): per
    :func:`level_table` row (``levels``, as records) ``first``'s value (the method), the ``mean`` (SD) over seeds and
    :func:`below_cell` against the untrained run."""
    return ["", f"| {first} | {mean} | seeds below the untrained run |", "|---|---|---|",
            *(f"| {r['method']} | {r['pass1']:.1f} ({r['sd']:.1f}) | {below_cell(r)} |" for r in levels)]


def cor_level_rows(levels: Sequence[dict], cor_kept: dict[str, float], first: str = "method") -> list[str]:
    """The adapted level table the COR amendments print under their claims (a blank line first): per
    :func:`level_table` row (``levels``, as records, DDRL the reference) the method, its mean adapted pass@1 (SD) over
    seeds, :func:`below_cell` against DDRL and COR's mean kept rollouts (``cor_kept``; "-" for a run without COR)."""
    kept = {m: f"{k:.0f}" for m, k in cor_kept.items()}
    return ["", f"| {first} | adapted pass@1, mean over seeds (SD) | seeds below DDRL | COR's kept rollouts |",
            "|---|---|---|---|", *(f"| {r['method']} | {r['pass1']:.1f} ({r['sd']:.1f}) | {below_cell(r, 'ddrl')} | "
                                   f"{kept.get(r['method'], '-')} |" for r in levels)]


def levels(out: str | Path = OUT, seeds: Sequence[int] | None = None, regime: str = REGIME,
           reference: str = "no_adaptation") -> pd.DataFrame:
    """:func:`level_table` of ``regime``'s runs under ``out``: one row per method."""
    return level_table(seed_levels(out, seeds, regime), ("method",), reference)


def vote_by_quarter(out: str | Path = OUT, seeds: Sequence[int] | None = None, regime: str = REGIME,
                    steps: pd.DataFrame | None = None) -> pd.DataFrame:
    """Descriptive, no verdict: the course of the vote over each run's RL phase, from the committed step logs:
    :func:`ddrl.study.figures.pseudo_labels_by_episode` by quarter of each run's RL steps (1-4) instead of by
    episode (this regime has 2) - per method and quarter the mean ``label/majority_ratio`` (the share of rollouts
    agreeing with the majority answer) and ``gt/label_acc`` (how often that answer is right), and the seeds.
    ``steps``: the step logs when already read (else every one under ``out``)."""
    steps = load_steps(out) if steps is None else steps
    steps = steps[(steps.regime == regime) & (steps.phase == "rl")]
    if seeds is not None:
        steps = steps[steps.seed.isin(set(seeds))]
    steps = steps.assign(quarter=steps.groupby(["method", "seed"]).step.transform(
        lambda s: 1 + (4 * s.rank(method="first") - 1) // s.size).astype(int))
    return pseudo_labels_by_episode(steps, sorted(set(steps.method)), (regime,), by="quarter")


def figure_tables(out: str | Path = OUT) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`vote_figure`'s two tables (:func:`seed_levels`, :func:`vote_by_quarter`) for Amendment 26's methods,
    and for Amendment 27's arms only once ``arms.json`` is written (the plan reads nothing of them before)."""
    methods = (*METHODS, *ARMS) if (Path(out) / "arms.json").is_file() else METHODS
    sp, vote = seed_levels(out), vote_by_quarter(out)
    return sp[sp.method.isin(methods)], vote[vote.method.isin(methods)]


def levels_panel(ax, per: pd.DataFrame, order: Sequence[str], palette: dict[str, str], rng: np.random.Generator,
                 ylabel: str, title: str) -> None:
    """One dot per seed of each run's level (``per``: ``run``, ``seed``, ``pass1``), jittered sideways by ``rng``, and
    the mean over seeds with a 95% bootstrap interval over seeds (seaborn ``seed=0``), runs in ``order``; the seed
    count goes into the title. The dots are drawn here, not by ``sns.stripplot``, whose jitter draws from NumPy's
    global random state: with ``rng`` the same tables give the same picture."""
    for x, run in enumerate(order):
        y = per.loc[per.run == run, "pass1"].to_numpy()
        ax.scatter(x + rng.uniform(-0.15, 0.15, y.size), y, s=9, color=palette[run], alpha=0.35, linewidths=0)
    sns.pointplot(per, x="run", y="pass1", hue="run", order=order, palette=palette, errorbar=("ci", 95),
                  seed=0, linestyle="none", markersize=6, capsize=0.15, ax=ax, legend=False)
    n = per.groupby("run").seed.nunique()
    seeds = f"{n.min()} seeds" if n.min() == n.max() else f"{n.min()}-{n.max()} seeds"
    ax.set(xlabel="", ylabel=ylabel, title=f"{title} ({seeds})")
    ax.tick_params(axis="x", labelrotation=25, labelsize=7)


def levels_vote_figure(per: pd.DataFrame, vote: pd.DataFrame, order: Sequence[str], palette: dict[str, str],
                       suptitle: str, rng: np.random.Generator, style: str | None = None):
    """Left, each run's adapted pass@1 (``per``: ``run``, ``seed``, ``pass1``; the mean over seeds with a 95%
    bootstrap interval over seeds, seaborn ``seed=0``, one dot per seed, jittered sideways by ``rng``), runs in
    ``order``; middle and right, the vote by quarter of the RL steps (``vote``: ``run``, ``quarter``,
    ``majority_ratio``, ``label_acc``; the untrained model has none; its runs named as in ``order``, or by names of
    their own, then in the order they come, all in ``palette``), lines styled by the column ``style`` if given.
    Descriptive: Amendments 26-27's and 28's figures. The left panel is :func:`levels_panel`'s."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), gridspec_kw={"width_ratios": [1.3, 1, 1]})
    levels_panel(axes[0], per, order, palette, rng, "adapted pass@1 (%)", "after adaptation")
    lines = [r for r in dict.fromkeys((*order, *vote.run)) if r != label("no_adaptation") and r in set(vote.run)]
    for ax, col, ylab in ((axes[1], "majority_ratio", "share agreeing with the majority"),
                          (axes[2], "label_acc", "majority label correct")):
        sns.lineplot(vote[vote.run.isin(lines)], x="quarter", y=col, hue="run", style=style, palette=palette,
                     hue_order=lines, marker="o", ax=ax, legend=ax is axes[1])  # one legend serves both panels
        ax.set(xlabel="quarter of the RL steps", ylabel=ylab, xticks=[1, 2, 3, 4])
    axes[1].legend(fontsize=7, frameon=False, handlelength=3)
    for ax in axes:
        sns.despine(ax=ax)
    fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return fig


def vote_figure(seed_pass1: pd.DataFrame, vote: pd.DataFrame):
    """:func:`levels_vote_figure` of :func:`seed_levels` and :func:`vote_by_quarter`, one run per method. Each method
    is shown on the seeds it has (the untrained model on Amendment 26's and 27's; TTRL and DDRL on 26's; the arms on
    27's). Descriptive; the paired intervals are ``claims.json``'s and ``arms.json``'s."""
    order = [m for m in (*METHODS, *ARMS) if m in set(seed_pass1.method)]
    return levels_vote_figure(seed_pass1.assign(run=seed_pass1.method.map(label)), vote.assign(run=vote.method.map(label)),
                              [label(m) for m in order], {label(m): color(m) for m in order},
                              f"{REGIME}: what the runs end at, and how their vote changes over training (descriptive)",
                              numpy_generator(0, "figure", REGIME))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.wide", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "import", "status", "analyse", "figure"))
    ap.add_argument("src", nargs="?", type=Path, help="import: a GPU machine's run --out folder")
    ap.add_argument("--seeds", type=seed_range, default=None, help="run: seeds N-M (default: the plan's)")
    ap.add_argument("--arms", action="store_true", help="run, analyse: Amendment 27's penalised arms (Q1-Q4)")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="run: jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=OUT, help=f"the CSVs (default {OUT})")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--device", default=None, help="import: the GPU's name (nvidia-smi), recorded per seed")
    ap.add_argument("--json", type=Path, default=None, help="analyse: write the result here")
    args = ap.parse_args(argv)
    if args.what == "run":
        check_weights(scale=SCALES[args.scale])  # the measured base build (installed from results/base_models), never a new one
        skip = gpu_seeds(args.out)
        seeds = args.seeds or list(ARM_SEEDS if args.arms else SEEDS)
        todo = [s for s in seeds if s not in skip]
        methods = ("no_adaptation", *ARMS) if args.arms else METHODS  # written CSVs are skipped (same key)
        status = run_jobs(jobs(todo, methods), SCALES[args.scale], args.out, args.runs_root or cache_root() / "runs",
                          args.budget_min, args.workers, desc=f"Amendment {27 if args.arms else 26} runs")
        print(status_counts(status))
    elif args.what == "import":
        if args.src is None or not args.device:
            ap.error("import needs the run folder and --device NAME")
        print(f"imported seeds {import_runs(args.src, args.device, args.out)} as {args.device}")
    elif args.what == "status":
        done, devices = complete_seeds(args.out), gpu_seeds(args.out)
        print(f"{REGIME}: {len(done)} of {len(SEEDS)} seeds complete ({sum(s in devices for s in done)} from a GPU); "
              f"missing {sorted(set(SEEDS) - set(done))}")
        arms = complete_seeds(args.out, REGIME, ("no_adaptation", *ARMS))
        print(f"Amendment 27 (arms): {len([s for s in arms if s in ARM_SEEDS])} of {len(ARM_SEEDS)} seeds complete; "
              f"missing {sorted(set(ARM_SEEDS) - set(arms))}")
    elif args.what == "figure":  # -> docs/results/wide_vote.{png,pdf}
        print(save_docs_figure(vote_figure(*figure_tables(args.out)), "wide_vote"))
    else:
        res = analyse_arms(args.out) if args.arms else analyse(args.out)
        sys.stdout.write(write_json(args.json, res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
