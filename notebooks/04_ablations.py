# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · Ablations: which part of DDRL does what (paper Table 3), and a learning-rate sweep
#
# DDRL changes three things in TTRL. The paper's Table 3 adds them one at a time:
#
# | row | selection of the K trained rollouts | advantage | after RL |
# |---|---|---|---|
# | none (= TTRL) | random K of N | GRPO (r − mean)/std | - |
# | BCS | balanced, confidence-aware (at most K/2 agreeing) | GRPO | - |
# | BCS + DAE | BCS | fixed +1 / −1 | - |
# | BCS + DAE + COR (= DDRL) | BCS | fixed +1 / −1 | SFT on consensus rollouts |
# | DAE alone (not in Table 3; add `"dae"` to `table3_methods`) | random K of N | fixed +1 / −1 | - |
#
# "DAE alone" is also reading B of Table 1's "GRPO (w/o norm.)" row (fixed ±1 without BCS; notebook 02 runs
# both readings). The line printed under the parameters says which rows, learning rates and seeds this run has.
#
# The second part sweeps the learning rate for TTRL and BCS + DAE: with aggressive updates GRPO's amplified
# advantages on low-consensus (often wrong) pseudo-labels should hurt most, so this is where the methods
# should separate. The claims study answered both questions with dozens of seeds per regime, at the
# testbed's learning rate and at a tenth of it: this notebook shows that answer first, recomputed from the
# committed runs, lets you rerun a piece of it, then runs a small fresh ablation and sweep on your machine
# (runs shared with notebook 03).

# %% tags=["parameters"]
# --- runner (set by `python -m ddrl.run.reproduce`) ---
preset = "default"  # which params/<preset>/ file the runner used
output_dir = "../outputs/interactive"  # figures/, tables/, metrics/ go here
seed = 0  # ddrl.seeds.DEFAULT_SEED (the question draw; training seeds are listed below)
# --- 1. the answer: the claims study's decided comparisons, re-analysed live from its committed runs ---
study_claims = ["A1", "A2", "A3", "T1"]  # ddrl.study.plan.PAIRED ids
study_regimes = ["math500_like_small_lr", "amc_like_small_lr", "math500_like", "amc_like"]
# --- 2. your rerun: `python -m ddrl.study rerun` arguments, DESIGN REGIME METHOD SEED [--steps K] ---
rerun = ["registered math500_like_small_lr bcs 0 --steps 3"]
# --- 3. Table 3 (ablation) and a learning-rate sweep, fresh, on notebook 03's questions ---
n_adapted = 32  # questions adapted to (and evaluated on)
table3_methods = ["ttrl", "bcs", "bcs_dae", "ddrl", "dae"]  # rows, in the paper's order, then DAE alone
table3_seeds = [0, 1]  # training seeds
sweep_methods = ["ttrl", "bcs_dae"]  # TTRL vs DDRL's RL stage
sweep_lrs = [3e-5, 3e-4, 1e-3]  # peak learning rates (the first is the shared default)
sweep_seeds = [0, 1]  # training seeds
# --- the rest: model, dataset, trainer, device (ddrl/run/settings.py; as in 03 they share runs), e.g. {"episodes": 2} ---
settings = {}
progress = True  # tqdm progress bars

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from ddrl import analysis as an
from ddrl.report import prose as P
from ddrl.report import tables as T
from ddrl.run.experiments import shared_experiment, summarize
from ddrl.run.settings import notebook_settings
from ddrl.report.plotting import ci_yerr, color, set_style
from ddrl.report.reporter import Reporter
from ddrl.study import lesson as L

label = T.method_label
set_style()
rep = Reporter(output_dir, "04_ablations")
t_start = time.perf_counter()

# every knob of this notebook: those of its cell and its settings (ddrl/run/settings.py), checked
S = notebook_settings("04_ablations", settings, n_adapted=n_adapted, seed=seed, progress=progress)
exp = shared_experiment(S)
adapted, heldout, overrides = exp.adapted, exp.heldout, exp.overrides
display(Markdown(
    f"This run: {len(adapted)} adapted + {len(heldout)} held-out questions, "
    f"{P.count_words(exp.config('ttrl', table3_seeds[0]).episodes, 'episode')}. Table 3 anew: "
    f"{P.join_words([label(m) for m in table3_methods])} ({P.runs_words(table3_methods, table3_seeds)}); the sweep: "
    f"{P.join_words([label(m) for m in sweep_methods])} ({P.runs_words(sweep_methods, sweep_seeds, sweep_lrs)})."))


# %% [markdown]
# ## 1. The answer: the claims study, re-analysed from its committed runs
#
# Each row is one comparison the study registered before running it (`results/plan.md`): method a minus
# method b in pass@1 points, paired by seed and question, over 6 to 46 training seeds of one regime (a set of
# testbed questions whose difficulty mimics one benchmark; "lr/10" is the same regime trained at a tenth of the
# learning rate). The 95% interval is the study's hierarchical bootstrap over seeds and questions; the verdict
# its pre-registered rule: **reproduced** when the interval excludes zero on the paper's side, **contradicted**
# on the other side, **no effect** within ±1 point, otherwise **not resolved**. Recomputed now from the per-run
# CSVs; the last column checks each row against the entry the study committed. The paper's column is the
# difference between the two rows of its Table 3 (Qwen2.5-Math-1.5B) for the benchmark the regime stands for.

# %%
decided_table = L.decided_table(L.committed_cells(study_claims, study_regimes))
rep.table(decided_table, "decided")
display(P.for_students_table(L.show_table(decided_table)))

# %%
fig = L.decided_figure(decided_table, "Table 3 on the testbed, as the claims study decided it")
rep.figure(fig, "decided", data=decided_table)

# %% [markdown]
# **What to look for.** Which bars clear zero, and on which side: each A row adds one of DDRL's three parts
# (BCS to TTRL, DAE to BCS, COR to BCS + DAE), so the bars that clear zero on the paper's side are the parts that
# carry a gain on the testbed.
#
# **In plain words.** The paper's Table 3 attributes gains to all three parts. The sentences below group the
# testbed's comparisons by verdict, each with its estimate: read which of the three parts (A1: BCS, A2: DAE,
# A3: COR) hold where, and whether the lr/10 rows agree with the default-rate rows.

# %%
display(Markdown("\n\n".join(L.verdict_sentences(decided_table))))

# %% [markdown]
# ## 2. What BCS keeps, against TTRL's random K
#
# Before any training, the two selection rules can be compared on the base model's rollouts alone: which K of a
# question's N rollouts each keeps, and how many of those are **false positives** (rewarded 1 because they carry
# the majority answer, but wrong). The paper argues that BCS keeps fewer of them (appendix, "Why is DDRL
# effective?"). The arithmetic of the two rules says where that can and cannot hold. With c of the N rollouts
# carrying the label, TTRL's random K keeps about c·K/N copies of it; BCS keeps min(c, K/2), plus more once c >
# N − K/2 (its negatives run out, notebook 03). So below c = K/2, BCS keeps *every* copy of the label where the
# random K keeps about half; between K/2 and N/2 it still keeps more; above N/2 it keeps fewer. Whether BCS keeps
# fewer false positives overall depends on where the *wrong* labels sit.
#
# Below, for every question of the claims study's base rollouts (the testbed's three regimes, 2 sampling seeds,
# N = 64, K = 32) and of the real rollouts (code-davinci-002 on SVAMP, N = 30, K = 15), both rules applied to 64
# random orders of the rollouts, grouped by the label's count (rescaled to 64): the share of kept rollouts that are
# false positives, and how many label copies each rule keeps.

# %%
from ddrl.study.analysis import load_base, selection_errors
from ddrl.study.plan import REAL, RESULTS

RULES = {"random": ("ttrl", "TTRL's random K"), "bcs": ("bcs", "BCS (DDRL)")}
DATA_WORDS = {"testbed": "the testbed", "SVAMP (Codex)": "the SVAMP rollouts"}
sel = {"testbed": selection_errors(load_base(RESULTS / "runs")[0]),
       "SVAMP (Codex)": selection_errors(load_base(RESULTS / "runs", REAL)[0])}
kept = pd.concat([an.selection_by_band(v).assign(data=k) for k, v in sel.items()], ignore_index=True)
kept_summary = {k: an.selection_summary(v) for k, v in sel.items()}
rep.table(kept, "bcs_selection_by_band")

NK = {"testbed": (64, 32), "SVAMP (Codex)": (30, 15)}
fig, axes = plt.subplots(2, 2, figsize=(11, 6.6))
for j, (data, part) in enumerate(kept.groupby("data", sort=False)):
    bands_here = list(dict.fromkeys(part["band"]))
    x = np.arange(len(bands_here))
    for i, (rule, (m, name)) in enumerate(RULES.items()):
        r = part[part["rule"] == rule].set_index("band").reindex(bands_here)
        axes[0, j].bar(x + (i - 0.5) * 0.38, r["fp_share"], width=0.38, color=color(m), label=name)
        axes[1, j].bar(x + (i - 0.5) * 0.38, r["copies"], width=0.38, color=color(m), label=name)
    n_q = part[part["rule"] == "bcs"].set_index("band").reindex(bands_here)["questions"]
    axes[0, j].set_xticks(x, bands_here)
    axes[1, j].set_xticks(x, [f"{b}\n(n = {q})" for b, q in zip(bands_here, n_q)])
    axes[0, j].set_title(f"{data}: N = {NK[data][0]}, K = {NK[data][1]}", fontsize=10)
    axes[0, j].set_ylabel("false positives among kept (%)")
    axes[1, j].set_ylabel(f"label copies kept (of K = {NK[data][1]})")
    axes[1, j].set_xlabel("rollouts giving the label, c, rescaled to 64 (n: questions)")
axes[0, 0].legend(fontsize=8, loc="upper right")
fig.tight_layout()
rep.figure(fig, "bcs_selection_by_band", data=kept)


def selection_sentence(data, regime):
    """One dataset's result, from the committed entry and the table: sign, size, verdict and where it comes from."""
    e = L.committed_entry("E2", regime)[0]
    s = kept_summary[data]
    rows = kept[(kept["data"] == data) & (kept["questions"] >= 5)]  # bands with a handful of questions or more
    part = rows.pivot(index="band", columns="rule", values="fp_share").reindex(list(dict.fromkeys(rows["band"])))
    more = [b for b in part.index if part.loc[b, "bcs"] > part.loc[b, "random"]]
    fewer = [b for b in part.index if part.loc[b, "bcs"] < part.loc[b, "random"]]
    word = "fewer" if s["e2"] > 0 else "more"
    return (f"On {DATA_WORDS[data]}, BCS keeps {word} false positives than the random K: {s['bcs']:.1f}% of its kept rollouts "
            f"against {s['random']:.1f}% (the study's E2 entry: {P.points(e['estimate'], 2)} "
            f"[{P.signed(e['ci_low'], 2)}, {P.signed(e['ci_high'], 2)}] random − BCS, {e['verdict']}). BCS keeps more of "
            f"them where the label's count is {P.join_words(more) or 'nowhere'} and fewer where it is "
            f"{P.join_words(fewer) or 'nowhere'}. " + negatives_sentence(data, regime))


def negatives_sentence(data, regime):
    """E1 on one dataset: correct answers among the kept negatives, from the committed entry and the shares."""
    e, s = L.committed_entry("E1", regime)[0], kept_summary[data]
    word = "fewer" if s["e1"] > 0 else "more"
    return (f"Among the kept negatives, BCS keeps {word} correct answers: {s['fn_bcs']:.1f}% against {s['fn_random']:.1f}% "
            f"(E1: {P.points(e['estimate'], 2)} [{P.signed(e['ci_low'], 2)}, {P.signed(e['ci_high'], 2)}], {e['verdict']}).")


display(Markdown(f"The study's E2 asks whether \"{L.claim_words('E2')}\", and E1 whether \"{L.claim_words('E1')}\" "
                 "(bands with fewer than 5 questions left out of the lists).\n\n" + "\n\n".join(
    [selection_sentence("testbed", "base"), selection_sentence("SVAMP (Codex)", "svamp_codex")])))

# %% [markdown]
# **What to look for.** The lower row is the rule itself: BCS's bars follow min(c, K/2), the random K's grow as
# c·K/N, so BCS keeps more copies of the label below c = N/2 and fewer above. The upper row is what that does to
# false positives, which can only occur where the label is wrong, mostly the middle bands. A dataset whose wrong
# labels are held by fewer than half of the rollouts (compare the band sizes under the bars) gets *more* false
# positives from BCS; one whose questions sit mostly in the top band gets fewer. The sentences above say which
# case each dataset is, and that BCS's other half, negatives from the rarest answers, keeps fewer correct answers
# among its negatives. Whether BCS helps training is the study's A1 row in section 1, not this count.

# %% [markdown]
# ## 3. Reproduce a piece of it yourself
#
# `python -m ddrl.study rerun DESIGN REGIME METHOD SEED [--steps K]` recomputes a committed run from scratch
# (the study's job code, the pinned base weights, no cache) and compares it with its committed CSV, or its
# first K RL steps with the committed step log (notebook 03 explains it). On a CPU of another kind a rerun may
# differ by a sampled token now and then; it then says so and shows the differences. Default here:
# the first 3 RL steps of the MATH-500-like BCS run at lr/10.

# %%
reruns, texts = L.rerun_table(rerun)
rep.table(reruns, "rerun")
rerun_names = [P.rerun_words(*L.parse_rerun(spec)[1:], L.regime_words, label) for spec in rerun]
display(reruns.assign(run=rerun_names))
print("\n\n".join(P.for_students(t, name) for t, name in zip(texts, rerun_names)))

# %% [markdown]
# ## 4. A fresh Table 3 on this machine: a pipeline demonstration
#
# The cells below add BCS, DAE and COR to TTRL one at a time on a few questions (runs shared with notebook 03),
# then sweep the learning rate. This shows each component at work on your machine, but **it cannot decide
# anything**: with a few seeds the run-to-run spread is as large as the effects above. The sentence after the
# first table says what this run's seeds can show and how many the study's power analysis needed.


# %% [markdown]
# ### Table 3 anew: adding BCS, DAE and COR to TTRL
#
# pass@1 in points (with two or more seeds, their mean and 95% t-interval) on the adapted and held-out questions,
# beside the paper's Table 3 pass@1 (%) for the run's model and benchmark (the testbed is shown beside Qwen2.5-Math-1.5B on
# MATH-500; `ddrl.report.tables.paper_reference`).

# %%
df3 = exp.grid(table3_methods, table3_seeds)
rep.table(df3.drop(columns=["run_dir"]), "table3_runs")
t3 = summarize(df3, "pass@1", by=("method", "split"))
PAPER_MODEL, PAPER_BENCH = T.paper_reference(S["dataset"], S["paper_settings"])
paper_t3 = {m: T.paper_value(("table3", PAPER_MODEL, PAPER_BENCH, m)) for m in table3_methods}
table_3 = T.measured_vs_paper(T.in_points(t3), table3_methods, paper_t3,
                              labels=lambda m: "none (TTRL)" if m == "ttrl" else label(m), measured_spec=".1f",
                              paper_header=f"paper pass@1 % (Table 3, {PAPER_MODEL}, {PAPER_BENCH})", paper_spec=".1f")
rep.table(table_3, "table3_ablation")
display(table_3)

ad3 = t3[t3["split"] == "adapted"].set_index("method")["mean"]
steps3 = [P.compare(label(b), ad3[b], label(a), ad3[a]) for a, b in zip(table3_methods, table3_methods[1:])]
display(Markdown(f"On the adapted questions, {P.join_words(steps3)} (pass@1 in points). "
                 + P.one_seed_note(len(table3_seeds), L.seeds_needed("math500_like"))))


# %%
def draw_rows(ax, summ, rows, split, raw):
    part = T.in_points(summ[summ["split"] == split]).set_index("method").reindex(rows)
    x = np.arange(len(rows))
    ax.bar(x, part["mean"], color=[color(m) for m in rows], yerr=ci_yerr(part), capsize=4)
    r = raw[raw["split"] == split]
    for i, m in enumerate(rows):
        ys = 100 * r.loc[r["method"] == m, "pass@1"]
        ax.plot(np.full(len(ys), i) + np.linspace(-0.1, 0.1, len(ys)), ys, "k.", ms=4)
    ax.set_xticks(x, ["none (TTRL)" if m == "ttrl" else label(m) for m in rows], rotation=20, ha="right")
    ax.set(ylabel="pass@1 (points)", title=f"{split} questions")


splits = list(dict.fromkeys(t3["split"]))
fig, axes = plt.subplots(1, len(splits), figsize=(5.5 * len(splits), 3.8), squeeze=False)
for ax, s in zip(axes[0], splits):
    draw_rows(ax, t3, table3_methods, s, df3)
fig.suptitle(f"Table 3 ablation: {P.interval_caption(len(table3_seeds))}")
fig.tight_layout()
rep.figure(fig, "table3_ablation", data=t3)

# %% [markdown]
# **What to look for.** Read the rows in the paper's order (TTRL, + BCS, + BCS + DAE, + COR = DDRL): if the
# paper's ablation holds here, each added component moves the bar up; overlapping intervals mean the seeds cannot
# tell two rows apart, and with one seed there is no interval: an order of the bars is then one draw.

# %% [markdown]
# ## 5. Learning-rate sweep (fresh runs): TTRL vs BCS + DAE
#
# The same runs at the learning rates of `sweep_lrs` (everything else equal). Left: pass@1 after adaptation;
# right: pseudo-label accuracy during training at the largest learning rate, where instability shows as
# the vote locking onto wrong answers.

# %%
sweep = pd.concat([exp.grid(sweep_methods, sweep_seeds, lr=x) for x in sweep_lrs], ignore_index=True)
rep.table(sweep.drop(columns=["run_dir"]), "lr_sweep_runs")
s_sum = summarize(sweep, "pass@1", by=("method", "lr", "split"))
sweep_table = s_sum.assign(method=s_sum["method"].map(label), lr=[f"{x:g}" for x in s_sum["lr"]],
                           **{"pass@1 (measured, points)": [T.fmt_ci(100 * a, 100 * b, 100 * c, ".1f") for a, b, c in
                                                            s_sum[["mean", "ci_lo", "ci_hi"]].to_numpy()],
                              "paper": T.NOT_REPORTED})[["method", "lr", "split", "seeds", "pass@1 (measured, points)", "paper"]]
rep.table(sweep_table, "lr_sweep")
display(sweep_table)

lr_hi = max(sweep_lrs)
hi_curves = pd.concat([exp.training_curves(m, sweep_seeds, lr=lr_hi) for m in sweep_methods], ignore_index=True)
band = T.curve_band(hi_curves, "gt/label_acc")

fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
ax = axes[0]
for mth, g in T.in_points(s_sum[s_sum["split"] == "adapted"]).groupby("method", sort=False):
    ax.errorbar(g["lr"], g["mean"], yerr=ci_yerr(g), marker="o", capsize=4, color=color(mth), label=label(mth))
ax.set(xscale="log", xlabel="peak learning rate", ylabel="pass@1, adapted (points)", title="pass@1 vs learning rate")
ax.set_xticks(sweep_lrs, [f"{x:g}" for x in sweep_lrs])
ax.minorticks_off()
ax.legend()
ax = axes[1]
for mth, g in band.groupby("method", sort=False):
    ax.plot(g["step"], g["mean"], ".-", color=color(mth), label=label(mth))
    ax.fill_between(g["step"], g["lo"], g["hi"], color=color(mth), alpha=0.2)
ax.set(xlabel="RL step", ylabel="pseudo-label accuracy", title=f"label accuracy at lr = {lr_hi:g}")
ax.legend()
fig.tight_layout()
rep.figure(fig, "lr_sweep", data=s_sum)

# %% [markdown]
# **What to look for.** Left: which method loses more pass@1 as the learning rate grows (the paper argues
# TTRL does). Right: at the largest rate, whether pseudo-label accuracy drifts down during training.

# %%
ad_s = s_sum[s_sum["split"] == "adapted"]
if len(sweep_methods) >= 2:
    a_m, b_m = sweep_methods[-1], sweep_methods[0]
    per_lr = [P.compare(label(a_m), float(ad_s[(ad_s.method == a_m) & (ad_s.lr == x)]["mean"].iloc[0]), label(b_m),
                        float(ad_s[(ad_s.method == b_m) & (ad_s.lr == x)]["mean"].iloc[0])) + f" at lr = {x:g}"
              for x in sweep_lrs]
    caveat = ("one seed per point: each order is a single draw" if len(sweep_seeds) == 1 else
              f"{P.count_words(len(sweep_seeds), 'seed')} per point: an order counts only where the intervals separate")
    display(Markdown(f"On the adapted questions, {P.join_words(per_lr)} (pass@1 in points; {caveat})."))

# %%
P3 = {f"{r.method}/{r.split}": [r.mean, r.ci_lo, r.ci_hi] for r in t3.itertuples()}
PS = {f"{r.method}/{r.lr:g}/{r.split}": [r.mean, r.ci_lo, r.ci_hi] for r in s_sum.itertuples()}
n_steps = int(hi_curves["step"].max()) + 1
last = hi_curves[hi_curves["step"] >= n_steps // 2].groupby("method")["gt/label_acc"].mean().to_dict()
metrics = {
    "n_adapted": len(adapted), "n_heldout": len(heldout), "table3_seeds": list(table3_seeds),
    "sweep_seeds": list(sweep_seeds), "sweep_lrs": list(sweep_lrs), "table3": P3, "sweep": PS,
    "paper_reference": [PAPER_MODEL, PAPER_BENCH], "decided": decided_table.to_dict(orient="records"),
    "rerun": reruns.to_dict(orient="records"),
    "label_acc_second_half_at_max_lr": last, "episodes": exp.config("ttrl", table3_seeds[0]).episodes,
    "notebook_seconds": time.perf_counter() - t_start,
}
rep.metrics(metrics)

# %% [markdown]
# ## What we measured

# %%
lines = L.summary_sentences(decided_table, reruns)
lines.append(f"The notebook took {metrics['notebook_seconds']:.0f} s.")
display(Markdown(" ".join(lines)))

# %% [markdown]
# ## Try this
#
# 1. Add `1e-4` to `sweep_lrs`. Is the change in pass@1 with the learning rate smooth, or is there a threshold
#    where TTRL breaks?
# 2. DAE alone uses random selection with ±1 advantages. With a random K, most trained rollouts agree with
#    the majority: what does that do to the mean advantage (`adv/mean` in the training curves)?
# 3. BCS caps the positives at K/2. What would happen with a cap of K/4? (Look at `ddrl.selection.bcs`.)
# 4. COR is the only component that needs no extra RL step. Compare its gain with its cost in notebook 05.
# 5. Add seeds to `table3_seeds`: which intervals shrink, and does the order of the rows hold?
