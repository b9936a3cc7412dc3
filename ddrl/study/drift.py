"""Policy drift and held-out accuracy (plan Amendments 21-25), each prediction one entry of :data:`PREDICTIONS`.

Why do BCS's rarest-answer negatives cost held-out accuracy (Amendment 19's H1xN)? A run's distance from the base is
read from its step logs (late ``actor/kl``: the k3 KL to the reference on the trained rollouts, mean of the last
:data:`LATE_EPISODES` episodes) and from its final weights (:func:`ddrl.study.drift_kl.heldout_kl` on fresh questions),
and set against its held-out pass@1. Amendment 21 tests the link across seeds and rules (X1-X4, X2h-X4h); 22 moves
the distance by hand, BCS with a 10x and 100x KL penalty (K1-K3); 23 asks whether TTRL and DDRL lie on BCS's line
(Z1-Z4); 25 gives TTRL and DDRL the 100x penalty and asks what it wins back held out and what it costs on the
adapted questions (L1-L4). The step logs stay in the run directories; :mod:`ddrl.study.drift_data` copies the columns it
needs into small committed CSVs and reads them back, one row per run; where a run's seed has no registered CSV
(seeds 100+), its adapted-question rows are kept too: 22 and 23 report each arm's adapted pass@1 beside
(descriptive, "Ad"), 25 registers it (L4).

    python -m ddrl.study.drift run --regime amc_like --seeds 100-131 --workers 8 --budget-min 5 --out DIR   # the runs
    python -m ddrl.study.drift export --out DIR                   # step CSVs from the runs' directories
    python -m ddrl.study.drift kl --out DIR                       # the held-out KL of each run
    python -m ddrl.study analyse drift_<name>      # -> results/drift/<name>.json (a row of ddrl.study.designs.DESIGNS)
    python -m ddrl.study.drift figure     # docs/results/drift_kl_heldout, drift_heldout_kl, drift_kl_dose, drift_methods,
                                    # drift_penalty (run, export, kl: --methods names the arms' runs)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.stats as sps
import seaborn as sns

from ddrl.study.drift_data import DRIFT, PAIR, drift_path, export_steps, h1x_files, heldout_rows, seed_table
from ddrl.report.plotting import color, label, save_docs_figure
from ddrl.run.storage import REPO, cache_root, write_json
from ddrl.seeds import seed_range
from ddrl.report.stats import hierarchical_bootstrap, mean_ci, paired_differences, verdict
from ddrl.study.plan import ADAPTED_X, COR_ONLY, RESULTS, SCALES, Job
from ddrl.study.jobs import run_jobs, status_counts


def kl_fit(table: pd.DataFrame, a: str = PAIR[0], b: str = PAIR[1], confidence: float = 0.95,
           x: str = "kl_late") -> dict:
    """Least squares of held-out pass@1 on a KL column ``x`` (late KL, or held-out KL) with one intercept per
    method (methods ``a`` and ``b``): the within-method slope (points per :data:`KL_UNIT`) and ``a``'s
    intercept minus ``b``'s (the held-out difference at equal KL), each with its t interval."""
    t = table[table["method"].isin([a, b])]
    if t["method"].nunique() != 2:
        raise ValueError(f"kl_fit: need runs of both {a!r} and {b!r}; have {sorted(t['method'].unique())}")
    X = np.column_stack([t[x], (t["method"] == a).astype(float), np.ones(len(t))])
    y = t["heldout"].to_numpy()
    dof = len(y) - X.shape[1]
    if dof < 2:
        raise ValueError(f"kl_fit: {len(y)} runs leave {dof} degrees of freedom; need >= 2")
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    cov = np.linalg.inv(X.T @ X) * float(resid @ resid) / dof
    q = sps.t.ppf(1 - (1 - confidence) / 2, dof)
    se = np.sqrt(np.diag(cov))
    ci = {n: {"estimate": float(beta[i]), "ci_low": float(beta[i] - q * se[i]), "ci_high": float(beta[i] + q * se[i])}
          for i, n in ((0, "slope"), (1, "adjusted"))}
    return {**ci, "n_runs": int(len(y)), "dof": int(dof)}


def paired_t(x: Sequence[float], confidence: float = 0.95) -> dict:
    """Mean of per-seed paired differences ``x`` and its t interval."""
    if len(x) < 2:
        raise ValueError(f"paired_t: need >= 2 seeds, got {len(x)}")
    est, lo, hi = mean_ci(x, confidence)
    return {"estimate": est, "ci_low": lo, "ci_high": hi}


#: Each prediction (plan Amendments 21-25): what it measures (``{a}``: the arm, ``{b}``: the method it is compared
#: with), its expected sign (0 = inside the margin), its no-effect margin (0: a sign claim without a no-effect band)
#: and its kind: "acc" held-out pass@1 a - b (hierarchical bootstrap), "dist" the KL measure a - b (paired t),
#: "slope" the within-method slope, "adjusted" a - b at equal KL (:func:`kl_fit`) and "adapted" pass@1 a - b on
#: the questions both adapted on (hierarchical bootstrap)
PREDICTIONS = {
    "X1": ("held-out pass@1, BCS - BCS positives + random negatives [points]", -1, 1.0, "acc"),
    "X2": ("late KL(policy || reference), BCS - BCS positives + random negatives [1e-3]", +1, 0.0, "dist"),
    "X3": ("held-out pass@1 per 1e-3 of late KL, within methods [points]", -1, 0.0, "slope"),
    "X4": ("held-out pass@1 at equal late KL, BCS - BCS positives + random negatives [points]", 0, 1.0, "adjusted"),
    # the addendum: the same three with the held-out KL (the policy's own samples of 256 fresh questions)
    "X2h": ("held-out KL(policy || base), BCS - BCS positives + random negatives [1e-3 nats/token]", +1, 0.0, "dist"),
    "X3h": ("held-out pass@1 per 1e-3 of held-out KL, within methods [points]", -1, 0.0, "slope"),
    "X4h": ("held-out pass@1 at equal held-out KL, BCS - BCS positives + random negatives [points]", 0, 1.0,
            "adjusted"),
    # Amendment 22: the KL penalty raised by hand (arm = bcs_kl10x or bcs_kl100x, against BCS)
    "K1": ("held-out KL(policy || base), {a} - {b} [1e-3 nats/token]", -1, 0.0, "dist"),
    "K2": ("held-out pass@1, {a} - {b} [points]", +1, 1.0, "acc"),
    "K3": ("held-out pass@1 at equal held-out KL, {a} - {b} [points]", 0, 1.0, "adjusted"),
    # Amendment 23: TTRL (Z1, Z3) and DDRL (Z2, Z4) against BCS; Za descriptive (sign None: no verdict)
    "Z1": ("held-out pass@1 at equal held-out KL, {a} - {b} [points]", 0, 1.0, "adjusted"),
    "Z2": ("held-out pass@1 at equal held-out KL, {a} - {b} [points]", 0, 1.0, "adjusted"),
    "Z3": ("held-out KL(policy || base), {a} - {b} [1e-3 nats/token]", -1, 0.0, "dist"),
    "Z4": ("held-out KL(policy || base), {a} - {b} [1e-3 nats/token]", +1, 0.0, "dist"),
    "Za": ("held-out pass@1, {a} - {b} [points]", None, 0.0, "acc"),
    # Amendments 22 and 23, descriptive (not registered): the arm's cost or gain on the questions it adapted on
    "Ad": ("adapted pass@1, {a} - {b} [points]", None, 0.0, "adapted"),
    # Amendment 25: TTRL and DDRL with the 100x KL penalty, each against its own unpenalised runs: K1-K3's
    # measures and rules (below), and the adapted difference registered as a null claim
    "L4": ("adapted pass@1, {a} - {b} [points]", 0, 1.0, "adapted"),
}
PREDICTIONS.update({"L1": PREDICTIONS["K1"], "L2": PREDICTIONS["K2"], "L3": PREDICTIONS["K3"]})
MEASURES = {"kl_late": ("X1", "X2", "X3", "X4"), "kl_heldout": ("X2h", "X3h", "X4h")}
DOSES = ("bcs_kl10x", "bcs_kl100x")  # Amendment 22's arms, each against "bcs"
#: Each set of arms: arm -> (the method it is compared with, its predictions). Amendment 22: BCS's KL-penalty
#: doses; 23: the paper's methods against BCS; 25: the paper's methods with the 100x penalty against themselves
ARMS = {"dose": {a: ("bcs", ("K1", "K2", "K3")) for a in DOSES},
        "methods": {"ttrl": ("bcs", ("Z3", "Z1", "Za")), "ddrl": ("bcs", ("Z4", "Z2", "Za"))},
        "penalty": {"ttrl_kl100x": ("ttrl", ("L1", "L2", "L3", "L4")),
                    "ddrl_kl100x": ("ddrl", ("L1", "L2", "L3", "L4"))}}
#: The slope-predicted held-out gain (``predicted``) goes with these sets' "acc" entries (Amendments 22, 25)
PREDICTED_FROM_SLOPE = ("dose", "penalty")


def arm_methods(which: str) -> tuple[str, ...]:
    """Every method a set of :data:`ARMS` involves, BCS (whose line the figures draw) and the compared-with
    methods first, then the arms (for tables and figures)."""
    return tuple(dict.fromkeys(("bcs", *(b for b, _ in ARMS[which].values()), *ARMS[which])))


def arms_table(out_dir: str | Path, regime: str, which: str) -> pd.DataFrame | None:
    """:func:`seed_table` of :func:`arm_methods` ``(which)`` under ``out_dir`` (what :func:`arms_figure` draws),
    or None where the set's arms have no H1x CSVs there yet."""
    if not h1x_files(out_dir, regime, tuple(ARMS[which])):
        return None
    return seed_table(out_dir, regime, arm_methods(which))


def analyse(out_dir: str | Path, regime: str, rng: np.random.Generator, drift_dir: str | Path | None = None,
            a: str = PAIR[0], b: str = PAIR[1], exploratory: bool = False, measure: str = "kl_late",
            ids: Sequence[str] | None = None) -> list[dict]:
    """The predictions ``ids`` (default: X1-X4 for ``measure`` ``"kl_late"``, X2h-X4h for ``"kl_heldout"``, the
    addendum) of ``a`` against ``b`` on the complete seeds (both methods' H1x CSVs and that measure), with their
    verdicts (:func:`ddrl.report.stats.verdict`, the registered rule, each prediction's sign and margin).
    ``exploratory``: the runs the predictions were read from, whose intervals are descriptive (verdict
    ``"exploratory"``)."""
    if measure not in MEASURES:
        raise ValueError(f"analyse: measure must be one of {sorted(MEASURES)}, got {measure!r}")
    ids = tuple(ids or MEASURES[measure])
    held = heldout_rows(out_dir, regime, (a, b))
    table = seed_table(out_dir, regime, (a, b), drift_dir, held)
    wide = table.pivot(index="seed", columns="method")
    seeds = sorted(wide[measure].dropna().index)
    if len(seeds) < 2:
        raise ValueError(f"analyse: {len(seeds)} seed(s) with both {a!r} and {b!r} and {measure!r}; need >= 2")
    kinds, rs = {PREDICTIONS[i][3] for i in ids}, {}
    if "dist" in kinds:
        rs["dist"] = paired_t(wide.loc[seeds, (measure, a)] - wide.loc[seeds, (measure, b)])
    if kinds & {"slope", "adjusted"}:
        rs.update(kl_fit(table[table["seed"].isin(seeds)], a, b, x=measure))
    frames = {"acc": held}
    if "adapted" in kinds:  # the runs' kept adapted-question rows (Ad)
        frames["adapted"] = heldout_rows(out_dir, regime, (a, b), ADAPTED_X)
    for kind, rows in frames.items():
        if kind in kinds:  # a pass@1 difference itself (held-out or adapted questions), per seed and question
            d = paired_differences(rows[rows["seed"].isin(seeds)], a, b)
            rs[kind] = hierarchical_bootstrap(d.to_numpy(), rng).to_dict()  # with its n_questions
    out = []
    for cid in ids:
        metric, sign, margin, kind = PREDICTIONS[cid]
        r = rs[kind]
        out.append({"id": cid, "regime": regime, "metric": metric.format(a=label(a), b=label(b)),
                    "expected_sign": sign,
                    "estimate": r["estimate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                    "n_seeds": len(seeds), "n_questions": r.get("n_questions"),
                    "verdict": "exploratory" if exploratory else "descriptive" if sign is None else
                    verdict(r["ci_low"], r["ci_high"], sign, margin)})
    return out


SLOPE_FROM = REPO / "results" / "drift" / "amc_like_cpu_heldout_kl.json"  # Amendment 21's confirmed X3h
DOSE_OUT = "results/drift/cpu"  # Amendment 22's runs, beside Amendment 21's CPU runs


def x3h_slope(path: str | Path = SLOPE_FROM) -> float:
    """The X3h estimate (points per 1e-3 of held-out KL) of a committed drift JSON."""
    return next(x["estimate"] for x in json.loads(Path(path).read_text()) if x["id"] == "X3h")


def analyse_arms(out_dir: str | Path, regime: str, rng: np.random.Generator, which: str = "dose",
                 slope: float | None = None) -> list[dict]:
    """Each arm of :data:`ARMS` ``[which]`` against the method it names (held-out KL), entries naming their
    ``arm``; with ``slope`` (Amendment 21's X3h), the held-out pass@1 entry gets ``predicted`` = slope x the arm's
    KL difference (K2, L2). Then, for arms whose predictions hold no adapted-question entry, where both methods'
    adapted rows were kept, each arm's descriptive "Ad" (drawn after every registered entry, so those draw what
    they drew without it)."""
    out = []
    for arm, (base, ids) in ARMS[which].items():
        e = analyse(out_dir, regime, rng, a=arm, b=base, measure="kl_heldout", ids=ids)
        dist = next(x["estimate"] for x in e if PREDICTIONS[x["id"]][3] == "dist")
        out += [dict(x, arm=arm, **({"predicted": slope * dist} if slope is not None and
                                    PREDICTIONS[x["id"]][3] == "acc" else {})) for x in e]
    for arm, (base, ids) in ARMS[which].items():
        if "adapted" in {PREDICTIONS[i][3] for i in ids}:
            continue  # registered already
        if all(h1x_files(out_dir, regime, (m,), ADAPTED_X) for m in (arm, base)):
            out += [dict(x, arm=arm) for x in analyse(out_dir, regime, rng, a=arm, b=base, measure="kl_heldout",
                                                      ids=("Ad",))]
    return out


#: The figure's panels: (title, H1x folder, drift folder) relative to the repository, as committed
PANELS = (("exploratory: seeds 0-18, Xeon", "results/runs", "results/drift/exploratory"),
          ("confirmation: seeds 100+, H100", "results/drift/gpu", None),
          ("confirmation: seeds 100+, Xeon", "results/drift/cpu", None))


def _scatter(ax, t: pd.DataFrame, x: str, methods: Sequence[str], size: int) -> dict:
    """Held-out pass@1 against ``x``, one point per run of ``methods``, axes labelled; returns the palette."""
    pal = dict(zip(methods, sns.color_palette("colorblind", len(methods))))
    sns.scatterplot(t.assign(method_label=t["method"].map(label)), x=x, y="heldout", hue="method_label",
                    style="method_label", ax=ax, s=size, palette={label(m): pal[m] for m in methods},
                    hue_order=[label(m) for m in methods])
    ax.set_xlabel({"kl_late": "late KL to the reference, trained rollouts [1e-3]",
                   "kl_heldout": "held-out KL to the base [1e-3 nats/token]"}.get(x, x))
    ax.set_ylabel("held-out pass@1 (1,536 fresh questions) [points]")
    return pal


def drift_figure(tables: dict[str, pd.DataFrame], x: str = "kl_late"):
    """Held-out pass@1 against a KL column ``x`` (late KL, or the addendum's held-out KL), one point per run, one
    panel per set of runs (``tables``: title -> :func:`seed_table`; sets without ``x`` are left out), with each
    method's least-squares line at the common slope (:func:`kl_fit`)."""
    tables = {k: t for k, t in tables.items() if t[x].notna().any()}
    fig, axes = plt.subplots(1, len(tables), figsize=(4.6 * len(tables), 3.8), sharey=True, squeeze=False)
    for ax, (title, t) in zip(axes[0], tables.items()):
        t = t.dropna(subset=[x])
        pal = _scatter(ax, t, x, PAIR, 28)  # not the project's colours: its two BCS ones are too alike here
        fit = kl_fit(t, x=x)
        b = fit["slope"]["estimate"]
        for m in PAIR:
            tm = t[t["method"] == m]
            xs = np.linspace(tm[x].min(), tm[x].max(), 2)
            ax.plot(xs, tm["heldout"].mean() + b * (xs - tm[x].mean()), color=pal[m], lw=1.2)
        ax.set_title(f"{title}\nslope {b:+.2f} [{fit['slope']['ci_low']:+.2f}, {fit['slope']['ci_high']:+.2f}]",
                     fontsize=9)
        ax.legend(fontsize=7, title=None)
    fig.tight_layout()
    return fig


def arms_figure(table: pd.DataFrame, slope: float, which: str = "dose"):
    """Amendments 22-25: held-out pass@1 against held-out KL, one point per run of the methods of
    :func:`arm_methods` ``(which)`` (``table``: :func:`seed_table` of them), with the line Amendment 21's
    within-method ``slope`` draws through BCS's runs, extended over every arm: where the drift reading puts them."""
    t = table.dropna(subset=["kl_heldout"])
    fig, ax = plt.subplots(figsize=(5.2, 3.9))
    _scatter(ax, t, "kl_heldout", [m for m in arm_methods(which) if m in set(t["method"])], 30)
    bcs = t[t["method"] == "bcs"]
    xs = np.linspace(t["kl_heldout"].min(), t["kl_heldout"].max(), 2)
    ax.plot(xs, bcs["heldout"].mean() + slope * (xs - bcs["kl_heldout"].mean()), color="0.3", ls="--", lw=1.2,
            label=f"BCS's line, slope {slope:+.2f} (Amendment 21)")
    ax.legend(fontsize=7, title=None)
    fig.tight_layout()
    return fig


# The learning rate on the Xeon build (Amendments 40-42, rows of :data:`ddrl.study.designs.DESIGNS`): the readings of
# held-out gain against held-out KL, and the two figures notebook 06 draws from their committed analyses

#: The two readings as registered (fitted on Amendment 40's 60 RL runs before any lr/3 run existed, rounded as the
#: plan writes them; :func:`ddrl.study.measures.fit_readings` refits them): L's slope, and H's free start and slope
LINE = -0.3636
HINGE_K0, HINGE_B = 3.443, 0.4530
LR_METHODS = ("ttrl", "bcs_dae", "ddrl")  # Amendment 40's methods, at each learning rate
LR_LABELS = {"none": "no RL", "default": "default lr (3e-5)", "lr10": "lr/10 (3e-6)"}
LR_TEXT = {"default": "default lr (3e-5)", "lr3": "lr/3 (1e-5)", "lr10": "lr/10 (3e-6)"}  # Amendment 42's labels
COR_ALONE_LABEL = "COR alone (no RL)"


def reading(name: str, k, slope: float | None = None) -> np.ndarray:
    """A reading's predicted held-out gain (points) at held-out KL ``k`` (1e-3 nats/token): "L" the line through the
    base, "R" the registered slope through the base (X3h: ``slope``, or the committed one), "H" the free start, then
    a line (plan Amendment 42)."""
    k = np.asarray(k, dtype=float)
    if name == "L":
        return LINE * k
    if name == "R":
        return (x3h_slope() if slope is None else slope) * k
    if name == "H":
        return -HINGE_B * np.maximum(0.0, k - HINGE_K0)
    raise ValueError(f"reading must be 'L', 'R' or 'H', got {name!r}")


def lr_drift_figure(res: dict, cor: dict | None = None):
    """Held-out pass@1 against held-out KL, one point per run (colour: method; marker: learning rate; the untrained
    model at 0; with ``cor``, Amendment 41's analysis, COR alone's runs), with the default-lr runs' line at W4's slope
    and the registered build's slope (X3h) drawn through the default-lr runs' mean, both extended to zero distance:
    where the lr/10 runs, the untrained model and COR alone would lie (Amendment 40's committed analysis ``res``)."""
    t = pd.DataFrame(res["runs"])
    methods = ["no_adaptation", *LR_METHODS]
    if cor is not None:
        t = pd.concat([t, pd.DataFrame(cor["runs"]).assign(method=COR_ONLY, lr="none")], ignore_index=True)
        methods.append(COR_ONLY)
    name = {m: COR_ALONE_LABEL if m == COR_ONLY else label(m) for m in methods}
    t = t.assign(**{"method ": t["method"].map(name), "learning rate": t["lr"].map(LR_LABELS)})
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sns.scatterplot(t, x="kl_heldout", y="heldout", hue="method ", style="learning rate", s=34, ax=ax,
                    hue_order=[name[m] for m in methods], palette={name[m]: color(m) for m in methods},
                    style_order=list(LR_LABELS.values()))
    d = t[t["lr"] == "default"]
    xs = np.array([0.0, d["kl_heldout"].max()])
    w4 = next(e for e in res["entries"] if e["id"] == "W4")["estimate"]
    for b, style, name in ((w4, "-", f"default-lr runs' line, W4 slope {w4:+.2f}"),
                           (res["registered_slope"], "--", f"registered slope {res['registered_slope']:+.2f} (X3h)")):
        ax.plot(xs, d["heldout"].mean() + b * (xs - d["kl_heldout"].mean()), color="0.3", ls=style, lw=1.1, label=name)
    ax.set_xlabel("held-out KL to the untrained model [1e-3 nats/token]")
    ax.set_ylabel("held-out pass@1 (1,536 fresh questions) [points]")
    ax.set_title("Xeon build, AMC-like: TTRL, BCS+DAE, DDRL at two learning rates (Amendment 40)"
                 + (", COR alone (41)" if cor is not None else ""), fontsize=9)
    ax.legend(fontsize=7, title=None, loc="lower left")
    fig.tight_layout()
    return fig


def lr_curve_figure(res: dict, old: pd.DataFrame, slope: float):
    """Left: held-out gain against held-out KL, one point per run (colour: learning rate; marker: method), Amendment
    40's runs (``old``, :func:`ddrl.study.measures.amendment40_runs`) and Amendment 42's (``res``), with the readings L,
    R (X3h's ``slope``, :func:`x3h_slope`) and H. Right: each learning rate's and method's mean adapted gain against
    its mean held-out gain (what a smaller learning rate trades). Draws from its arguments alone (no file read)."""
    t = pd.concat([old, pd.DataFrame(res["runs"])], ignore_index=True)
    t = t.assign(**{"learning rate": t["lr"].map(LR_TEXT), "method ": t["method"].map(label)})
    order = [LR_TEXT[x] for x in ("lr10", "lr3", "default")]
    pal = dict(zip(order, sns.color_palette("colorblind", 3)))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    sns.scatterplot(t, x="kl_heldout", y="gain", hue="learning rate", style="method ", hue_order=order, palette=pal,
                    s=30, ax=ax)
    ks = np.linspace(0, t["kl_heldout"].max() * 1.02, 200)
    for r, style, text in (("L", "-", f"L: line through the base, {LINE:+.3f}/unit"),
                           ("R", ":", f"R: registered X3h, {slope:+.3f}/unit"),
                           ("H", "--", f"H: free to {HINGE_K0:.1f}, then {-HINGE_B:+.3f}/unit")):
        ax.plot(ks, reading(r, ks, slope), color="0.3", ls=style, lw=1.1, label=text)
    ax.axhline(0, color="0.7", lw=0.6)
    ax.set_xlabel("held-out KL to the untrained model [1e-3 nats/token]")
    ax.set_ylabel("held-out gain over the untrained model [points]")
    ax.set_title("Xeon build, AMC-like: three learning rates (Amendments 40, 42)", fontsize=9)
    ax.legend(fontsize=6.5, loc="lower left")
    for row in res["tradeoff"]:
        lr = LR_TEXT[row["lr"]]
        bx.scatter(row["heldout_gain"], row["adapted_gain"], color=pal[lr], s=40,
                   marker={"bcs_dae": "o", "ddrl": "X", "ttrl": "s"}[row["method"]])  # the left panel's markers
        bx.annotate(f"{label(row['method']).split(' (')[0]}, {lr.split(' ')[0]}", (row["heldout_gain"], row["adapted_gain"]),
                    fontsize=6.5, xytext=(3, 3), textcoords="offset points")
    bx.axhline(0, color="0.7", lw=0.6)
    bx.axvline(0, color="0.7", lw=0.6)
    bx.set_xlabel("held-out gain, mean over seeds [points]")
    bx.set_ylabel("adapted gain, mean over seeds [points]")
    bx.set_title("what the learning rate trades: adapted vs held-out gain", fontsize=9)
    fig.tight_layout()
    return fig


def jobs(regime: str, seeds: Sequence[int], methods: Sequence[str] = PAIR) -> list[Job]:
    """One H1x job per seed and method, seed by seed (so a budget's cut leaves whole pairs behind)."""
    return [Job(regime, s, (m,), "H1x") for s in seeds for m in methods]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.drift", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "export", "kl", "figure"))
    ap.add_argument("--regime", default="amc_like")
    ap.add_argument("--scale", choices=sorted(SCALES), default="default")
    ap.add_argument("--seeds", type=seed_range, default="100-131", help="run: seeds N-M (plan Amendment 21: from 100)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--budget-min", type=float, default=None, help="run: jobs starting later are skipped")
    ap.add_argument("--out", type=Path, default=None, help="holds heldout_x/ (H1x CSVs) and drift/ (step CSVs); "
                    "needed by all but figure")
    ap.add_argument("--drift-dir", type=Path, default=None, help="export, kl: write drift/ here (default: --out)")
    ap.add_argument("--methods", nargs="+", default=list(PAIR), help="run, export, kl: whose runs (default: the "
                    "pair; Amendment 22: bcs_kl10x bcs_kl100x; 25: ttrl_kl100x ddrl_kl100x)")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--regimes", type=Path, default=RESULTS / "regimes_base.json",
                    help="kl: the build's regimes file (default: the registered build's)")
    ap.add_argument("--cor-alone", action="store_true", help="kl: Amendment 41's COR alone, recomputed per seed")
    ap.add_argument("--slope-from", type=Path, default=SLOPE_FROM, help="figure: the JSON whose X3h slope the arms "
                    "figures' line uses")
    args = ap.parse_args(argv)
    if args.out is None and args.what != "figure":
        ap.error(f"{args.what} needs --out DIR")
    runs_root = args.runs_root or cache_root() / "runs"  # where ddrl.run.experiments keeps them
    if args.what == "run":
        status = run_jobs(jobs(args.regime, args.seeds, args.methods), SCALES[args.scale], args.out, runs_root,
                          args.budget_min, args.workers, desc="drift runs")
        print(status_counts(status))
        n, missing = export_steps(args.out, runs_root, args.regime, args.methods)
        print(f"drift CSVs written: {n} (run directories not found: {missing})")
    elif args.what == "export":
        n, missing = export_steps(args.out, runs_root, args.regime, args.methods, args.drift_dir)
        print(f"drift CSVs written: {n} (run directories not under {runs_root}: {len(missing)})")
    elif args.what == "kl":
        from ddrl.study.drift_kl import measure_kl  # torch: the policies are sampled (this module renders without it)

        if args.cor_alone:  # Amendment 41: COR alone recomputed (its weights were never kept), then its KL
            from ddrl.study.drift_kl import cor_alone_kl

            for s in args.seeds:
                path = drift_path(args.drift_dir or args.out, args.regime, COR_ONLY, s, "kl")
                if not path.is_file():
                    write_json(path, cor_alone_kl(s, args.regimes, args.out, args.regime, args.scale))
            print(f"COR alone's held-out KL: {len(args.seeds)} seeds under {args.drift_dir or args.out}")
        else:
            n, missing = measure_kl(args.out, runs_root, args.regime, args.methods, args.drift_dir, args.scale,
                                    regimes=args.regimes)
            print(f"held-out KL measured: {n} runs (final weights not under {runs_root}: {len(missing)})")
    elif args.what == "figure":  # the committed runs (PANELS) -> docs/results/drift_kl_heldout.{png,pdf}
        sfx = "" if args.regime == "amc_like" else f"_{args.regime}"  # AMC-like's figures keep their names
        tables = {t: seed_table(REPO / o, args.regime, drift_dir=REPO / d if d else None) for t, o, d in PANELS
                  if (REPO / (d or o) / DRIFT / args.regime).is_dir() and h1x_files(REPO / o, args.regime, PAIR[1:])}
        for x, name in (("kl_late", "drift_kl_heldout"), ("kl_heldout", "drift_heldout_kl")) if tables else ():
            print(save_docs_figure(drift_figure(tables, x), name + sfx))
        for which, name in (("dose", "drift_kl_dose"), ("methods", "drift_methods"),  # Amendments 22-24
                            ("penalty", "drift_penalty")):  # Amendment 25
            table = arms_table(REPO / DOSE_OUT, args.regime, which)
            if table is not None:
                print(save_docs_figure(arms_figure(table, x3h_slope(args.slope_from), which), name + sfx))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
