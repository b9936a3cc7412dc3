"""The claims study's figures and the tables behind them (seaborn; PNG and PDF), for ``docs/results/`` and notebook
06, and the designs' figures drawn from their committed analyses. :func:`render_results` writes the study's
(``python -m ddrl.study analyse claims``)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ddrl.study import claims as C
from ddrl.analysis import frequency_table
from ddrl.report.plotting import bootstrap_ci95, color, label
from ddrl.infra.cache import content_key
from ddrl.report.reporter import save_figure
from ddrl.infra.storage import sha256_file, write_csv, write_json
from ddrl.seeds import numpy_generator
from ddrl.report.stats import TARGET_HALF_WIDTH
from ddrl.study.analysis import (BAND_NAMES, SHORTFALL_MAX_QUESTIONS, SHORTFALL_MAX_SEEDS, claim_on_seeds, load_base,
                                 load_questions, load_steps, noise_description, power_shortfall, rl_divergence,
                                 run_levels, seed_directions, selection_errors, study_inputs)
from ddrl.study.plan import (BANDS_64, COR_LR10, COR_ONLY, HELDOUT_X, MATH500_768, NO_RL, REAL, SAME_BASE, SMALL_LR,
                             STAGE1_METHODS, THREE, WIDE_OUT)
from ddrl.study.designs import DESIGNS, REWARD_RUNS, WIDE_ARMS, Design, _panels

#: Answer-count bins (of 64): finer than F1-F3's bands, with their edges.
COUNT_BINS_64 = ((1, 1), (2, 5), (6, 14), (15, 24), (25, 34), (35, 44), (45, 54), (55, 64))


def regime_candidates_figure(long: pd.DataFrame):
    """The base model's maj@64, pass@1 and consensus by operations per chain, with the regimes' thresholds."""
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    sns.lineplot(data=long, x="num_ops", y="value", hue="metric", marker="o", ax=ax)
    for y in (0.35, 0.70):
        ax.axhline(y, ls=":", color="grey")
    ax.set(xlabel="operations per chain", ylabel="base model", title="Question difficulty sets the regime")
    return fig


def power_figure(pw: pd.DataFrame):
    """The predicted 95% half-width by seeds, one log-log panel per regime, with the target."""
    g = sns.relplot(data=pw, x="seeds", y="half_width", hue="comparison", col="regime", kind="line", marker="o",
                    height=3, aspect=1.0, facet_kws={"sharey": True})
    xs = [s for s in (4, 8, 16, 32, 64) if pw.seeds.min() <= s <= pw.seeds.max()]
    ys = [y for y in (1, 2, 5, 10, 20, 50) if pw.half_width.min() <= y <= pw.half_width.max()]
    for ax in g.axes.flat:
        ax.axhline(TARGET_HALF_WIDTH, ls="--", color="black", lw=0.8)
        ax.set(xscale="log", yscale="log")
        ax.set_xticks(xs, [str(x) for x in xs], minor=False)  # plain numbers: a log axis's minor labels collide
        ax.set_yticks(ys, [str(y) for y in ys], minor=False)
        ax.set_xticks([], minor=True)
        ax.set_yticks([], minor=True)
    g.set_axis_labels("seeds", "predicted 95% half-width (points)")
    g.set_titles("{col_name}")
    return g.figure


def advantage_dynamics(steps: pd.DataFrame, methods: Sequence[str] = ("ttrl", "ddrl"),
                       regimes: Sequence[str] = THREE) -> pd.DataFrame:
    """The batch's mean advantage (``adv/mean``) per regime x method x seed x RL step."""
    s = steps[(steps.phase == "rl") & steps.method.isin(methods) & steps.regime.isin(regimes)]
    return s[["regime", "method", "seed", "step", "adv/mean"]].reset_index(drop=True)


def advantage_dynamics_figure(d: pd.DataFrame, methods: Sequence[str] = ("ttrl", "ddrl"),
                              regimes: Sequence[str] = THREE):
    """Per regime, each method's mean advantage per RL step with a 95% bootstrap band; None without runs."""
    d = d[d.method.isin(methods)]
    present = [r for r in regimes if r in set(d.regime)]
    if not present:
        return None
    fig, axes = plt.subplots(1, len(present), figsize=(4.3 * len(present), 3.4), squeeze=False)
    for ax, r in zip(axes[0], present):
        dr = d[d.regime == r]
        n_seeds = dr.groupby("method").seed.nunique()
        name = {m: f"{label(m)} ({n_seeds.get(m, 0)} seeds)" for m in methods}
        sns.lineplot(dr.assign(method=dr.method.map(name)), x="step", y="adv/mean", hue="method",
                     hue_order=[name[m] for m in methods], palette={name[m]: color(m) for m in methods},
                     errorbar=bootstrap_ci95, ax=ax)
        ax.axhline(0, color="black", lw=0.8)
        bench = C.BENCHMARK.get(r)
        ax.set(title=f"{r}" + (f" (stands for {bench})" if bench else ""), xlabel="RL step",
               ylabel="mean advantage of the batch")
        ax.legend(title=None, fontsize=8)
    fig.tight_layout()
    return fig


def band_accuracy(groups: pd.DataFrame, bins: Sequence[tuple[int, int]] = COUNT_BINS_64) -> pd.DataFrame:
    """Per regime and count bin (at N = 64): the base model's distinct answers and their share correct (Wilson 95%)."""
    columns = ["regime", "bin", "lo", "hi", "answers", "accuracy", "ci_lo", "ci_hi"]
    if groups.empty:
        return pd.DataFrame(columns=columns)
    count64 = np.round(64 * groups["count"] / groups["n"]).astype(int).clip(1, 64)
    g = groups.assign(count=count64, n=64, x=count64 / 64, correct=groups["correct"].astype(bool))
    cols = {"band": "bin", "n_distinct": "answers", "frac_correct": "accuracy", "ci_low": "ci_lo", "ci_high": "ci_hi"}
    tables = [frequency_table(gr, bins).assign(regime=r) for r, gr in g.groupby("regime", sort=False)]
    return pd.concat(tables, ignore_index=True).rename(columns=cols).reindex(columns=columns)


def band_accuracy_figure(t: pd.DataFrame):
    """:func:`band_accuracy`, one line per regime, the claims' bands shaded; None without base rollouts."""
    if t.empty:
        return None
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    bins = list(dict.fromkeys(t.bin))
    x = {b: i for i, b in enumerate(bins)}
    for (lo, hi), shade in zip(BANDS_64, ("#f4cccc", "#eeeeee", "#d9ead3")):
        idx = [x[b] for b, blo, bhi in zip(t.bin, t.lo, t.hi) if lo <= blo and bhi <= hi]
        if idx:
            ax.axvspan(min(idx) - 0.5, max(idx) + 0.5, color=shade, zorder=0)
    palette = sns.color_palette("colorblind", t.regime.nunique())
    for (r, tr), col, dx in zip(t.groupby("regime", sort=False), palette, np.linspace(-0.15, 0.15, t.regime.nunique())):
        xs = np.array([x[b] for b in tr.bin]) + dx
        ax.errorbar(xs, 100 * tr.accuracy, yerr=100 * np.nan_to_num(np.vstack([tr.accuracy - tr.ci_lo, tr.ci_hi - tr.accuracy])),
                    marker="o", color=col, capsize=2, label=f"{r} ({int(tr.answers.sum())} answers)")
    ax.axhline(50, color="black", lw=0.8, ls=":")
    ax.set_xticks(range(len(bins)), bins)
    ax.set(xlabel="samples (of 64) giving the answer", ylabel="answers correct (%)", ylim=(-3, 103),
           title="Base model: how often an answer is right, by how often it is sampled")
    ax.legend(fontsize=8, loc="upper left")
    sns.despine(ax=ax)
    fig.tight_layout()
    return fig


#: selection rule -> (the method whose colour it takes, its legend label)
RULE_METHOD = {"random": ("ttrl", "random K of N (TTRL)"), "bcs": ("bcs", "BCS (DDRL)")}


def selection_by_label_count(sel: pd.DataFrame, bins: Sequence[tuple[int, int]] = COUNT_BINS_64) -> pd.DataFrame:
    """Per selection rule and bin of the label's count (at N = 64): false positives and correct negatives kept."""
    if sel.empty:
        return pd.DataFrame(columns=["rule", "bin", "lo", "hi", "questions", "fp_per_question", "fn_share", "regimes",
                                     "seeds", "orders"])
    c64 = np.round(64 * sel["label_count"] / sel["n"]).astype(int).clip(1, 64)
    rows = []
    for rule in RULE_METHOD:
        s = sel[sel.rule == rule]
        for lo, hi in bins:
            b = s[(c64[s.index] >= lo) & (c64[s.index] <= hi)]
            neg = b.neg.sum()
            rows.append({"rule": rule, "bin": f"{lo}" if lo == hi else f"{lo}-{hi}", "lo": lo, "hi": hi,
                         "questions": len(b), "fp_per_question": (b.fp / b.orders).mean() if len(b) else np.nan,
                         "fn_share": 100 * b.fn.sum() / neg if neg else np.nan})
    return pd.DataFrame(rows).assign(regimes=sel.regime.nunique(), seeds=sel.seed.nunique(), orders=int(sel.orders.max()))


def selection_errors_figure(t: pd.DataFrame):
    """E2's false positives and E1's correct negatives kept, by the label's count; None without rows."""
    if t.empty:
        return None
    t = t[t.bin.isin(set(t.bin[t.questions > 0]))]
    bins = list(dict.fromkeys(t.bin))
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.6))
    for ax, col, ylab in ((axes[0], "fp_per_question", "false positives kept\nper question (of K = 32)"),
                          (axes[1], "fn_share", "correct answers among\nkept negatives (%)")):
        for rule, (m, name) in RULE_METHOD.items():
            tr = t[t.rule == rule]
            ax.plot(range(len(bins)), tr[col], marker="o", color=color(m), label=name)
        ax.set_xticks(range(len(bins)), bins, fontsize=8)
        ax.set(xlabel="samples (of 64) giving the pseudo-label, c*", ylabel=ylab)
        sns.despine(ax=ax)
    n_q = t[t.rule == "bcs"].set_index("bin").questions
    axes[0].set_title("E2: BCS keeps min(c*, 16) label copies, random c*/2", fontsize=9)
    axes[1].set_title("E1: BCS takes its negatives from the rarest answers", fontsize=9)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Base rollouts: {int(n_q.sum())} question x sampling-seed cells ({t.regimes.iloc[0]} regimes, "
                 f"{t.seeds.iloc[0]} seeds), each averaged over {t.orders.iloc[0]} orders", fontsize=9)
    fig.tight_layout()
    return fig


#: :func:`reward_noise_figure`'s regime and band names
NOISE_REGIMES = {"base": "testbed\n(pooled)", "aime_like": "AIME-like", "amc_like": "AMC-like",
                 "math500_like": "MATH-500-\nlike", "svamp_codex": "Codex on\nSVAMP"}
NOISE_BANDS = dict(zip(BAND_NAMES, ("seen <= 5 of 64", "6-44", ">= 45")))


def reward_noise_figure(t: pd.DataFrame):
    """Per regime and band: the share of wrong rewards (N1) and the wrong-reward rate (N2); None without rows."""
    if t.empty:
        return None
    t = t[t.regime.isin(NOISE_REGIMES)].assign(regime=lambda x: x.regime.map(NOISE_REGIMES),
                                                band=lambda x: x.band.map(NOISE_BANDS))
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8))
    for ax, col, ylab, title in ((axes[0], "share_%", "share of all wrong rewards (%)",
                                  "N1: where TTRL's wrong rewards sit"),
                                 (axes[1], "rate_%", "rollouts rewarded wrongly (%)",
                                  "N2: how often each band is rewarded wrongly")):
        sns.barplot(data=t, x="regime", y=col, hue="band", hue_order=list(NOISE_BANDS.values()),
                    order=list(dict.fromkeys(t.regime)), palette="crest", ax=ax, legend=ax is axes[0])
        ax.set(xlabel="", ylabel=ylab, ylim=(0, 100))
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
        sns.despine(ax=ax)
    axes[0].axhline(50, ls=":", color="grey")
    axes[0].legend(title="the rollout's answer", fontsize=7, title_fontsize=7, loc="upper center", ncols=3,
                   bbox_to_anchor=(0.5, 1.0))
    axes[0].set_ylim(0, 115)
    fig.suptitle("Base rollouts, TTRL's vote and rewards on all N per question (on SVAMP N = 30: the bands rescaled)",
                 fontsize=9)
    fig.tight_layout()
    return fig


#: :func:`transfer_figure`'s methods, in the order DDRL builds up.
TRANSFER_METHODS = ("no_adaptation", "ttrl", "bcs", "bcs_dae", "ddrl")
#: :func:`transfer`'s two question sets.
TRANSFER_SPLITS = {"adapted": "adapted questions", HELDOUT_X: "fresh held-out questions"}


def transfer(questions: pd.DataFrame, methods: Sequence[str] = TRANSFER_METHODS,
             regimes: Sequence[str] = THREE) -> pd.DataFrame:
    """Per regime x method x seed with an H1x CSV, pass@1 (points) on the adapted and on the fresh questions."""
    q = questions[questions.method.isin(methods) & questions.regime.isin(regimes)]
    held = q[q.split == HELDOUT_X]
    seeds = held[["regime", "method", "seed"]].drop_duplicates()
    both = q[q.split.isin(list(TRANSFER_SPLITS))].merge(seeds, on=["regime", "method", "seed"])
    t = both.groupby(["regime", "method", "seed", "split"], as_index=False)["pass@1"].mean()
    return t.assign(**{"pass@1": 100 * t["pass@1"]})


def transfer_figure(t: pd.DataFrame, methods: Sequence[str] = TRANSFER_METHODS, regimes: Sequence[str] = THREE):
    """:func:`transfer`, one panel per regime, mean over seeds with a 95% bootstrap interval; None without H1x rows."""
    present = [r for r in regimes if r in set(t.regime)]
    if not present:
        return None
    names = {k: v.replace(" questions", "\nquestions") for k, v in TRANSFER_SPLITS.items()}  # narrow panels
    t = t.assign(split=t.split.map(names), method=t.method.map(label))
    order, hue_order = list(names.values()), [label(m) for m in methods]
    palette = {label(m): color(m) for m in methods}
    fig, axes = plt.subplots(1, len(present), figsize=(4.3 * len(present), 3.6), squeeze=False)
    for ax, r in zip(axes[0], present):
        tr = t[t.regime == r]
        sns.pointplot(tr, x="split", y="pass@1", hue="method", order=order, hue_order=hue_order, palette=palette,
                      errorbar=("ci", 95), seed=0, dodge=0.45, linestyle="none", markersize=5, capsize=0.08,
                      err_kws={"linewidth": 1.2}, ax=ax)
        n = tr.groupby("method").seed.nunique()
        ax.set(xlabel="", ylabel="pass@1 (%)", title=f"{r} ({n.min()}-{n.max()} seeds)" if n.min() != n.max()
               else f"{r} ({n.min()} seeds)")
        ax.legend().remove()
        sns.despine(ax=ax)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=8, frameon=False)
    fig.suptitle("What adaptation does on the questions it trained on and on fresh ones (H1x)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def pseudo_labels_by_episode(steps: pd.DataFrame, methods: Sequence[str] = ("ttrl", "ddrl"),
                             regimes: Sequence[str] = (*THREE, SMALL_LR), by: str = "episode") -> pd.DataFrame:
    """Per regime x method x episode (or ``by``) of the RL phase: mean majority ratio and pseudo-label accuracy."""
    s = steps[(steps.phase == "rl") & steps.method.isin(methods) & steps.regime.isin(regimes)]
    g = s.groupby(["regime", "method", by], as_index=False)
    return g.agg(n_seeds=("seed", "nunique"), majority_ratio=("label/majority_ratio", "mean"),
                 label_acc=("gt/label_acc", "mean"))


def pseudo_label_drift(by_episode: pd.DataFrame) -> pd.DataFrame:
    """:func:`pseudo_labels_by_episode`'s first and last episode side by side, per regime x method."""
    rows = []
    for (r, m), g in by_episode.groupby(["regime", "method"], sort=False):
        a, b = g.loc[g.episode.idxmin()], g.loc[g.episode.idxmax()]
        rows.append({"regime": r, "method": m, "episodes": len(g), "seeds": int(g.n_seeds.max()),
                     "majority_ratio_first": a.majority_ratio, "majority_ratio_last": b.majority_ratio,
                     "label_acc_first": a.label_acc, "label_acc_last": b.label_acc})
    return pd.DataFrame(rows)


def vote_by_quarter(out: str | Path = WIDE_OUT, seeds: Sequence[int] | None = None, regime: str = MATH500_768,
                    steps: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`pseudo_labels_by_episode` by quarter of each run's RL steps."""
    steps = load_steps(out) if steps is None else steps
    steps = steps[(steps.regime == regime) & (steps.phase == "rl")]
    if seeds is not None:
        steps = steps[steps.seed.isin(set(seeds))]
    steps = steps.assign(quarter=steps.groupby(["method", "seed"]).step.transform(
        lambda s: 1 + (4 * s.rank(method="first") - 1) // s.size).astype(int))
    return pseudo_labels_by_episode(steps, sorted(set(steps.method)), (regime,), by="quarter")


def levels_panel(ax, per: pd.DataFrame, order: Sequence[str], palette: dict[str, str], rng: np.random.Generator,
                 ylabel: str, title: str) -> None:
    """One dot per seed and the mean with a 95% interval (jittered by ``rng``: sns.stripplot uses global state)."""
    for x, run in enumerate(order):
        y = per.loc[per.run == run, "pass1"].to_numpy()
        ax.scatter(x + rng.uniform(-0.15, 0.15, y.size), y, s=9, color=palette[run], alpha=0.35, linewidths=0)
    sns.pointplot(per, x="run", y="pass1", hue="run", order=order, palette=palette, errorbar=("ci", 95),
                  seed=0, linestyle="none", markersize=6, capsize=0.15, ax=ax, legend=False)
    n = per.groupby("run").seed.nunique()
    seeds = f"{n.min()} seeds" if n.min() == n.max() else f"{n.min()}-{n.max()} seeds"
    ax.set(xlabel="", ylabel=ylabel, title=textwrap.fill(f"{title} ({seeds})", 40))  # a long title in lines
    ax.set_xticks(range(len(order)), [textwrap.fill(r, 14) for r in order])  # wrapped: long run names collide
    ax.tick_params(axis="x", labelrotation=0, labelsize=7)


def _entry_text(e: dict | None) -> str:
    return "-" if e is None else f"{C.interval(e)} ({e['n_seeds']} seeds, {e['verdict']})"


def divergence_report(df: pd.DataFrame, steps: pd.DataFrame, entries: Sequence[dict]) -> tuple[pd.DataFrame, str]:
    """Plan Amendment 9's divergence table and its page, with C1 on the agreeing seeds where a run diverged."""
    div = rl_divergence(steps)
    gone = div[div.diverged_at >= 0]
    lines = ["# RL phases shared with the DDRL run (plan Amendment 9)", "",
             f"{len(div)} BCS+DAE / additional-RL runs compared step by step with their seed's DDRL run; "
             f"{len(gone)} left its trajectory.", ""]
    if not gone.empty:
        lines += [gone.to_markdown(index=False), ""]
        if other := sorted(set(gone.regime) - set(C.get("C1").regimes)):
            lines += [f"{', '.join(other)}: not a regime of the registered C1; the plan amendment that ran these runs "
                      "analyses them (`ddrl.study.plan.KNOWN_DIVERGENCES`).", ""]
        rows = []
        reg = {(e["id"], e["regime"]): e for e in entries}
        extra = div[div.method == "additional_rl"]
        for r in sorted(set(gone[gone.method == "additional_rl"].regime) & set(C.get("C1").regimes)):
            ok = extra[(extra.regime == r) & (extra.diverged_at < 0)].seed.tolist()
            left = extra[(extra.regime == r) & (extra.diverged_at >= 0)].seed.tolist()
            rows.append({"regime": r, "C1, every seed (registered)": _entry_text(reg.get(("C1", r))),
                         "C1, seeds whose pair agrees": _entry_text(claim_on_seeds(df, "C1", r, ok)),
                         "diverged seeds": ", ".join(str(s) for s in left)})
        if rows:
            lines += ["C1 on the seeds whose additional-RL run repeats the DDRL run's RL phase at every step, beside "
                      "the registered estimate (descriptive):", "", pd.DataFrame(rows).to_markdown(index=False), ""]
    return div, "\n".join(lines)


def shortfall_page(short: pd.DataFrame) -> str:
    """The Markdown page of :func:`ddrl.study.analysis.power_shortfall`."""
    lines = [f"# Comparisons whose 95% half-width exceeds {TARGET_HALF_WIDTH:.1f} points (descriptive)", "",
             "Variance components (as SDs, points) of each comparison's final seeds x questions matrix "
             "(`ddrl.report.stats.variance_components`): `sd_seed` a run's shift common to all its questions, `sd_question` "
             "how much the true difference varies between questions, `sd_cell` the rest (seed x question and "
             "evaluation noise). `predicted_half_width` is what they predict for the design that ran (the "
             "registered interval is the bootstrap's `half_width`); `half_width_unlimited_seeds` the floor more "
             "seeds alone cannot pass at these questions; `seeds_needed` (at these questions) and "
             "`questions_needed` (at these seeds) the smallest counts predicted to reach the target ("
             f"searched up to {SHORTFALL_MAX_SEEDS:,} seeds and {SHORTFALL_MAX_QUESTIONS:,} questions; `none` where "
             "none does). No verdict uses this page.", ""]
    if short.empty:
        return "\n".join(lines + ["- none: every pass@1 comparison reached the target", ""])
    shown = short.assign(**{c: ["none" if pd.isna(v) else str(int(v)) for v in short[c]]
                            for c in ("seeds_needed", "questions_needed")})
    return "\n".join(lines + [shown.to_markdown(index=False, floatfmt=".1f"), ""])


#: The tables behind the study's figures and pages, by their file name under ``docs/results/``.
TABLES = {"claims_seeds": "claims_seeds.csv", "power_shortfall": "power_shortfall.csv",
          "advantage_dynamics": "advantage_dynamics.csv.gz", "pseudo_labels": "pseudo_labels.csv",
          "base_bands": "base_bands.csv", "selection_errors": "selection_errors.csv",
          "heldout_transfer": "heldout_transfer.csv", "reward_noise": "reward_noise.csv"}
#: The file beside them naming the inputs they were computed from.
MANIFEST = "tables.json"
#: The figures :func:`render_results` draws, each from the table of :data:`TABLES` of its name (None: not drawn).
RESULT_FIGURES = {"advantage_dynamics": advantage_dynamics_figure, "base_bands": band_accuracy_figure,
                  "selection_errors": selection_errors_figure, "heldout_transfer": transfer_figure,
                  "reward_noise": reward_noise_figure}


#: Methods whose runs, committed beside the claims study's, its tables neither read nor key: Stage 3's label-free
#: rewards (their own analysis reads them, ``results/rewards/``).
NOT_READ = REWARD_RUNS


def tables_key(runs_dir: str | Path, entries: Sequence[dict]) -> str:
    """A sha256 of ``entries`` and every input file's path and bytes; not the code (a test recomputes the tables)."""
    root = Path(runs_dir)
    files = [(p.relative_to(root).as_posix(), sha256_file(p)) for p in study_inputs(root, NOT_READ)]
    return content_key({"entries": list(entries), "files": files})


def study_tables(runs_dir: str | Path, entries: Sequence[dict]) -> dict[str, pd.DataFrame]:
    """Every table of :data:`TABLES` from the runs under ``runs_dir`` and the scorecard ``entries``."""
    return tables_from(*_load(runs_dir), entries)


def _load(runs_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The files of :func:`tables_key`, read: every committed run but :data:`NOT_READ`'s, and the base rollouts."""
    return (load_questions(runs_dir, NOT_READ), load_steps(runs_dir, NOT_READ), load_base(runs_dir)[0],
            load_base(runs_dir, REAL)[0])


def tables_from(questions: pd.DataFrame, steps: pd.DataFrame, groups: pd.DataFrame, real: pd.DataFrame,
                entries: Sequence[dict]) -> dict[str, pd.DataFrame]:
    """:func:`study_tables` from the runs already read."""
    return {"claims_seeds": seed_directions(questions), "power_shortfall": power_shortfall(questions, entries),
            "advantage_dynamics": advantage_dynamics(steps), "pseudo_labels": pseudo_labels_by_episode(steps),
            "base_bands": band_accuracy(groups),
            "selection_errors": selection_by_label_count(selection_errors(groups) if not groups.empty else groups),
            "heldout_transfer": transfer(questions), "reward_noise": noise_description(groups, real)}


def committed_tables(tables_dir: str | Path, runs_dir: str | Path, entries: Sequence[dict]) -> dict[str, pd.DataFrame] | None:
    """The tables written under ``tables_dir`` if their :data:`MANIFEST` names today's inputs, else None."""
    d = Path(tables_dir)
    if not (d / MANIFEST).is_file() or any(not (d / f).is_file() for f in TABLES.values()):
        return None
    if json.loads((d / MANIFEST).read_text()).get("key") != tables_key(runs_dir, entries):
        return None
    return {name: pd.read_csv(d / f) for name, f in TABLES.items()}


def render_results(entries: Sequence[dict], runs_dir: str | Path, out_dir: str | Path,
                   missing: Sequence[str] = ()) -> dict[str, Path]:
    """The scorecard, every table of :data:`TABLES`, their pages and figures under ``out_dir``: the paths written."""
    out_dir = Path(out_dir)
    paths = {f"scorecard.{k}": p for k, p in C.render(entries, out_dir).items()}
    paths["missing.md"] = out_dir / "claims_missing.md"
    paths["missing.md"].write_text("".join(f"- {m}\n" for m in missing) or "- none: every claim x regime is computed\n")
    questions, steps, groups, real = _load(runs_dir)
    t = tables_from(questions, steps, groups, real, entries)
    for name, f in TABLES.items():
        write_csv(out_dir / f, t[name])
        paths[f"{name}.csv"] = out_dir / f
    write_json(out_dir / MANIFEST, {"key": tables_key(runs_dir, entries), "tables": TABLES})
    paths["tables.json"] = out_dir / MANIFEST
    if not t["claims_seeds"].empty:
        paths["seeds.md"] = out_dir / "claims_seeds.md"
        paths["seeds.md"].write_text(t["claims_seeds"].to_markdown(index=False, floatfmt="+.1f") + "\n")
    paths["shortfall.md"] = out_dir / "power_shortfall.md"
    paths["shortfall.md"].write_text(shortfall_page(t["power_shortfall"]))
    div, page = divergence_report(questions, steps, entries)
    if not div.empty:
        paths["divergence.csv"], paths["divergence.md"] = out_dir / "rl_divergence.csv", out_dir / "rl_divergence.md"
        div.to_csv(paths["divergence.csv"], index=False)
        paths["divergence.md"].write_text(page)
    if not t["pseudo_labels"].empty:
        paths["labels.md"] = out_dir / "pseudo_labels.md"
        paths["labels.md"].write_text(pseudo_label_drift(t["pseudo_labels"]).to_markdown(index=False, floatfmt=".3f") + "\n")
    for name, draw in RESULT_FIGURES.items():
        if (fig := draw(t[name])) is not None:
            paths.update({f"{name}.{k}": p for k, p in save_figure(fig, out_dir, name).items()})
            plt.close(fig)
    return paths


# The designs' figures (:data:`ddrl.study.designs.DESIGNS`)


#: COR's arms' names in figures (COR calls, not trainer presets, so ddrl.report.plotting has no label for them)
ARM_LABELS = {COR_LR10: "DDRL with COR at lr/10", COR_ONLY: "COR alone (no RL)"}

#: The designs' figures (:func:`design_figure`, :attr:`Design.figure`): name -> (the design, its runs' on fresh questions)
DESIGN_FIGURES = {d.figure: (d.id, d.fresh or None) for d in DESIGNS.values() if d.figure}


def design_figure_args(name: str) -> tuple[Design, dict, dict | None] | None:
    """:func:`design_figure`'s arguments for :data:`DESIGN_FIGURES` ``[name]``; None before its analyses are committed."""
    got = [DESIGNS[i] if i else None for i in DESIGN_FIGURES[name]]
    if not all(d.analysis.is_file() for d in got if d):
        return None
    return got[0], *(json.loads(d.analysis.read_text()) if d else None for d in got)


def seed_levels(out: str | Path = WIDE_OUT, seeds: Sequence[int] | None = None, regime: str = MATH500_768) -> pd.DataFrame:
    """:func:`~ddrl.study.analysis.run_levels` of ``regime``'s CSVs under ``out``: one row per method x seed."""
    df = load_questions(out)
    df = df[df.regime == regime]
    if seeds is not None:
        df = df[df.seed.isin(set(seeds))]
    return run_levels(df).sort_values(["method", "seed"], ignore_index=True)


def wide_figure_tables(out: str | Path = WIDE_OUT) -> dict:
    """Amendment 26's runs (27's arms once ``arms.json`` is written) as an analysis :func:`design_figure` draws."""
    methods = (*STAGE1_METHODS, *WIDE_ARMS) if (Path(out) / "arms.json").is_file() else STAGE1_METHODS
    sp, vote = seed_levels(out), vote_by_quarter(out)
    order = {m: i for i, m in enumerate((*STAGE1_METHODS, *WIDE_ARMS))}
    sp = sp[sp.method.isin(methods)].sort_values("method", key=lambda m: m.map(order), kind="stable")
    return {"seed_pass1": sp.to_dict(orient="records"), "vote": vote[vote.method.isin(methods)].to_dict(orient="records")}


def _runs(records: Sequence[dict], regime: str) -> pd.DataFrame:
    """``records`` (a regime's own where they name none), each named for its method (``name``) and its run (``run``:
    with its learning rate where they span two)."""
    per = pd.DataFrame(records)
    per["regime"] = per["regime"].fillna(regime) if "regime" in per else regime
    lr = per.regime.map(lambda r: "lr/10" if r in SAME_BASE else "default lr")  # the lr/10 regimes share a base
    per["name"] = per.method.map(lambda m: ARM_LABELS.get(m) or label(m).split(" (")[0])
    per["run"] = per.name if lr.nunique() < 2 else per.name.where(per.method.isin(NO_RL), per.name + "\n" + lr)
    return per.assign(**{"learning rate": lr})


def design_figure(d: Design, res: dict, held: dict | None = None):
    """Each run's pass@1, one dot per seed (a panel per regime; a row per split: ``res``'s, then ``held``'s fresh
    questions); beside, where ``res`` has it, the vote by quarter of the RL steps (descriptive)."""
    rows = []
    for data, what in ((res, "adapted" if d.split == "adapted" else "fresh"), *([(held, "fresh")] if held else [])):
        regimes = list(data["seeds"]) if isinstance(data.get("seeds"), dict) else [d.regime]
        panels = _panels(d, regimes) if d.regime_seeds else {d.regime: None}
        per = _runs(data["seed_pass1"], d.regime)
        rows.append([(g, per if shown is None else per[per.regime.isin(shown)], data, what)
                     for g, shown in panels.items()])
    vote = "vote" in res
    n_runs = max(per.run.nunique() for panels in rows for _, per, _, _ in panels)
    widths = [max(4.6, 0.9 * n_runs + 1.5)] * max(map(len, rows)) + [4.0] * 2 * vote
    fig, axes = plt.subplots(len(rows), len(widths), figsize=(sum(widths), 4.0 * len(rows)), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    rng = numpy_generator(0, "figure", d.id)
    for ax_row, panels in zip(axes, rows):
        for ax in ax_row[len(panels):]:
            ax.set_axis_off()
        for ax, (g, per, data, what) in zip(ax_row, panels):
            n_q = next((e["n_questions"] for e in data.get("entries", ()) if e["regime"] == g), None)
            levels_panel(ax, per, list(dict.fromkeys(per.run)), dict(zip(per.run, per.method.map(color))), rng,
                         f"{what} pass@1 (%)", f"{g}" + (f": {n_q:,} {what} questions" if n_q else ""))
            sns.despine(ax=ax)
    if vote:
        v = _runs(res["vote"], d.regime)
        lines = [n for n in dict.fromkeys(v.name) if n != label("no_adaptation")]
        palette = dict(zip(v.name, v.method.map(color)))
        for ax, col, ylab in ((axes[0, -2], "majority_ratio", "share agreeing\nwith the majority"),
                              (axes[0, -1], "label_acc", "majority label\ncorrect")):
            ax.set_axis_on()
            sns.lineplot(v[v.name.isin(lines)], x="quarter", y=col, hue="name", style="learning rate", palette=palette,
                         hue_order=lines, marker="o", ax=ax, legend=ax is axes[0, -2])
            ax.set(xlabel="quarter of the RL steps", ylabel=ylab, xticks=[1, 2, 3, 4])
            sns.despine(ax=ax)
        handles, names = axes[0, -2].get_legend_handles_labels()
        axes[0, -2].get_legend().remove()  # beside the panels: inside one, it covered a line
        fig.legend(handles, names, loc="center right", fontsize=7, frameon=False, handlelength=3)
    title = f"{d.section.lstrip('# ')}; {d.build + ', ' if d.build else ''}descriptive"
    fig.suptitle(textwrap.fill(title, 13 * fig.get_figwidth()), fontsize=10)  # ~13 characters an inch at 10 pt
    fig.tight_layout(rect=(0, 0, 1 - 1.5 * vote / fig.get_figwidth(), 1))  # the legend's 1.5 inches kept free
    return fig


def trade_frame(results: Sequence[dict]) -> pd.DataFrame:
    """Amendment 62's analyses as one table: a row per regime and COR setting."""
    return pd.DataFrame([{"regime": res["regime"], "seeds": len(res["seeds"]), **t}
                         for res in results for t in res["trade"]])


def trade_figure(results: Sequence[dict]):
    """Per regime, each COR setting's adapted gain against its held-out change over BCS+DAE (points)."""
    df = trade_frame(results)
    fig, axes = plt.subplots(1, len(results), figsize=(5.2 * len(results), 4), squeeze=False, sharey=True)
    for ax, (regime, g) in zip(axes[0], df.groupby("regime", sort=False)):
        sns.scatterplot(g, x="adapted", y=HELDOUT_X, hue="method", palette={m: color(m) for m in g.method}, s=90,
                        legend=False, ax=ax)
        for t in g.itertuples():
            ax.annotate(f"COR {t.keep}x at {t.cor_lr}", (t.adapted, getattr(t, HELDOUT_X)), textcoords="offset points",
                        xytext=(6, 6), fontsize=8)
        ax.axhline(0, color="grey", ls="--", lw=0.8)
        ax.axvline(0, color="grey", ls="--", lw=0.8)
        ax.margins(x=0.2, y=0.12)
        ax.set(xlabel="adapted pass@1 gain over BCS+DAE (points)",
               ylabel="held-out pass@1 change over BCS+DAE (points)", title=f"{regime} ({g.seeds.iloc[0]} seeds)")
    fig.tight_layout()
    return fig
