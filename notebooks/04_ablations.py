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
# | DAE alone (extra row, not in Table 3) | random K of N | fixed +1 / −1 | - |
#
# "DAE alone" is also reading B of Table 1's "GRPO (w/o norm.)" row (fixed ±1 without BCS; notebook 02 runs
# both readings).
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

# --- questions (as in notebook 03) ---
model = "testbed"  # "testbed" (the model of `testbed_preset`), a Hugging Face id, a ddrl.models preset or a directory
testbed_preset = "default"  # ddrl.testbed.build preset: "tiny" | "default"
dataset = "testbed_test"  # ddrl.data dataset name (testbed_test, math500, aime2024, amc)
data_dir = None  # real data location (None: ddrl.data's lookup)
n_adapted = 32  # questions adapted to (and evaluated on)
n_heldout = 64  # further questions of the same split, never adapted to (0: none)

# --- Table 3 (ablation) ---
table3_methods = ["ttrl", "bcs", "bcs_dae", "ddrl", "dae"]  # rows, in the paper's order, then DAE alone
table3_seeds = [0, 1]  # training seeds

# --- learning-rate sweep ---
sweep_methods = ["ttrl", "bcs_dae"]  # TTRL vs DDRL's RL stage
sweep_lrs = [3e-5, 3e-4, 1e-3]  # peak learning rates (the first is the shared default)
sweep_seeds = [0, 1]  # training seeds

# --- trainer (TrainConfig fields shared by every method; the same values in 04 and 05 share runs) ---
paper_settings = None  # a ddrl.models preset (e.g. "qwen2.5-math-1.5b"): use its official settings instead of the knobs below
paper_temperature = "paper"  # with paper_settings: rollout temperature of the text ("paper": 1.0 math, 0.6 others) or "scripts" (1.0)
episodes = 4  # passes over the adapted questions
prompts_per_step = 8  # questions per RL step
n_votes = 64  # N: rollouts voted on per question
k_train = 32  # K: rollouts trained on per question
lr = 3e-5  # peak learning rate (testbed default)
eval_n = 16  # samples per question for pass@1 and maj@n (the paper's 16)
cor_m = 128  # COR: M samples per question
cor_keep = 4  # COR: agreeing rollouts kept per question
etmr_m = 12  # ETMR: root responses per tree (leaves are 5x this)
max_new_tokens = 64  # response budget
sample_batch_size = 512  # sequences decoded together
device = "auto"  # "auto" | "cpu" | "cuda"

# --- notebook ---
progress = True  # tqdm progress bars

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from ddrl.report import tables as T
from ddrl.run.experiments import notebook_experiment, summarize
from ddrl.report.plotting import ci_yerr, color, set_style
from ddrl.report.reporter import Reporter
from ddrl.study import lesson as L

label = T.method_label
set_style()
rep = Reporter(output_dir, "04_ablations")
t_start = time.perf_counter()

exp = notebook_experiment(
    model=model, testbed_preset=testbed_preset, dataset=dataset, data_dir=data_dir, n_adapted=n_adapted,
    n_heldout=n_heldout, seed=seed, paper_settings=paper_settings, paper_temperature=paper_temperature, progress=progress,
    trainer=dict(episodes=episodes, prompts_per_step=prompts_per_step, n_votes=n_votes, k_train=k_train, lr=lr,
                 eval_n=eval_n, cor_m=cor_m, cor_keep=cor_keep, etmr_m=etmr_m, max_new_tokens=max_new_tokens,
                 sample_batch_size=sample_batch_size, device=device))
adapted, heldout, overrides = exp.adapted, exp.heldout, exp.overrides
print(f"{len(adapted)} adapted + {len(heldout)} held-out questions; model {overrides['model']}; "
      f"{exp.config('ttrl', table3_seeds[0]).episodes} episodes")


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
display(L.show_table(decided_table))

# %%
fig = L.decided_figure(decided_table, "Table 3 on the testbed, as the claims study decided it")
rep.figure(fig, "decided", data=decided_table)

# %% [markdown]
# **What to look for.** Which bars clear zero. Of DDRL's three parts, COR (BCS + DAE → DDRL) carries the
# gain in every regime and at both learning rates; BCS alone and DAE on top of it stay within the ±1 point
# margin, go against the paper, or remain unresolved.
#
# **In plain words.** On the testbed, DDRL's advantage over TTRL comes from its refinement step, not from the
# selection or the advantage estimator of its RL stage: the paper's Table 3 attributes gains to all three.
# The learning rate changes the size of the effects (the study's lr/10 regimes), not which part carries them.

# %%
display(Markdown("\n\n".join(L.verdict_sentences(decided_table))))

# %% [markdown]
# ## 2. Reproduce a piece of it yourself
#
# `python -m ddrl.study rerun DESIGN REGIME METHOD SEED [--steps K]` recomputes a committed run from scratch
# (the study's job code, the pinned base weights, no cache) and compares it with its committed CSV, or its
# first K RL steps with the committed step log (notebook 03 explains it). On a CPU of another kind a rerun may
# differ by a sampled token now and then; it then says so and shows the differences. Default here:
# the first 3 RL steps of the MATH-500-like BCS run at lr/10.

# %%
reruns, texts = L.rerun_table(rerun)
rep.table(reruns, "rerun")
display(reruns)
print("\n\n".join(texts))

# %% [markdown]
# ## 3. A fresh Table 3 on this machine: a pipeline demonstration
#
# The cells below add BCS, DAE and COR to TTRL one at a time on a few questions (runs shared with notebook 03),
# then sweep the learning rate. This shows each component at work on your machine, but **it cannot decide
# anything**: with one or two seeds the run-to-run spread is as large as the effects above. The sentence
# after the first table says how many seeds the study's power analysis needed.


# %% [markdown]
# ### Table 3 anew: adding BCS, DAE and COR to TTRL
#
# pass@1 (mean and 95% t-interval over seeds) on the adapted and held-out questions, beside the paper's
# Table 3 pass@1 (%) for the run's model and benchmark (the testbed is shown beside Qwen2.5-Math-1.5B on
# MATH-500; `ddrl.report.tables.paper_reference`).

# %%
df3 = exp.grid(table3_methods, table3_seeds)
rep.table(df3.drop(columns=["run_dir"]), "table3_runs")
t3 = summarize(df3, "pass@1", by=("method", "split"))
PAPER_MODEL, PAPER_BENCH = T.paper_reference(dataset, paper_settings)
paper_t3 = {m: T.paper_value(("table3", PAPER_MODEL, PAPER_BENCH, m)) for m in table3_methods}
table_3 = T.measured_vs_paper(t3, table3_methods, paper_t3, labels=lambda m: "none (TTRL)" if m == "ttrl" else label(m),
                              paper_header=f"paper pass@1 % (Table 3, {PAPER_MODEL}, {PAPER_BENCH})", paper_spec=".1f")
rep.table(table_3, "table3_ablation")
display(table_3)

display(Markdown(f"With {len(table3_seeds)} seed(s) these rows demonstrate the pipeline; the study needed "
                 f"{L.seeds_needed('math500_like')} seeds in MATH-500-like to decide comparisons of this size within "
                 "±2 points (`results/stage1.json`)."))


# %%
def draw_rows(ax, summ, rows, split, raw):
    part = summ[summ["split"] == split].set_index("method").reindex(rows)
    x = np.arange(len(rows))
    ax.bar(x, part["mean"], color=[color(m) for m in rows], yerr=ci_yerr(part), capsize=4)
    r = raw[raw["split"] == split]
    for i, m in enumerate(rows):
        ys = r.loc[r["method"] == m, "pass@1"]
        ax.plot(np.full(len(ys), i) + np.linspace(-0.1, 0.1, len(ys)), ys, "k.", ms=4)
    ax.set_xticks(x, ["none (TTRL)" if m == "ttrl" else label(m) for m in rows], rotation=20, ha="right")
    ax.set(ylabel="pass@1", title=f"{split} questions")


splits = list(dict.fromkeys(t3["split"]))
fig, axes = plt.subplots(1, len(splits), figsize=(5.5 * len(splits), 3.8), squeeze=False)
for ax, s in zip(axes[0], splits):
    draw_rows(ax, t3, table3_methods, s, df3)
fig.suptitle("Table 3 ablation: mean, 95% interval and each seed (dots)")
fig.tight_layout()
rep.figure(fig, "table3_ablation", data=t3)

# %% [markdown]
# **What to look for.** Read the rows in the paper's order (TTRL, + BCS, + BCS + DAE, + COR = DDRL; DAE alone
# last): if the paper's ablation holds here, each added component moves the bar up; overlapping intervals mean
# the seeds cannot tell two rows apart.

# %% [markdown]
# ## 4. Learning-rate sweep (fresh runs): TTRL vs BCS + DAE
#
# The same runs at larger peak learning rates (everything else equal). Left: pass@1 after adaptation;
# right: pseudo-label accuracy during training at the largest learning rate, where instability shows as
# the vote locking onto wrong answers.

# %%
sweep = pd.concat([exp.grid(sweep_methods, sweep_seeds, lr=x) for x in sweep_lrs], ignore_index=True)
rep.table(sweep.drop(columns=["run_dir"]), "lr_sweep_runs")
s_sum = summarize(sweep, "pass@1", by=("method", "lr", "split"))
sweep_table = s_sum.assign(method=s_sum["method"].map(label), lr=[f"{x:g}" for x in s_sum["lr"]],
                           **{"pass@1 (measured)": [T.fmt_ci(a, b, c) for a, b, c in s_sum[["mean", "ci_lo", "ci_hi"]].to_numpy()],
                              "paper": T.NOT_REPORTED})[["method", "lr", "split", "seeds", "pass@1 (measured)", "paper"]]
rep.table(sweep_table, "lr_sweep")
display(sweep_table)

lr_hi = max(sweep_lrs)
hi_curves = pd.concat([exp.training_curves(m, sweep_seeds, lr=lr_hi) for m in sweep_methods], ignore_index=True)
band = T.curve_band(hi_curves, "gt/label_acc")

fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
ax = axes[0]
for mth, g in s_sum[s_sum["split"] == "adapted"].groupby("method", sort=False):
    ax.errorbar(g["lr"], g["mean"], yerr=ci_yerr(g), marker="o", capsize=4, color=color(mth), label=label(mth))
ax.set(xscale="log", xlabel="peak learning rate", ylabel="pass@1 (adapted)", title="pass@1 vs learning rate")
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
# 5. Are two seeds enough to order the rows of Table 3? Add a third and see which intervals shrink.
