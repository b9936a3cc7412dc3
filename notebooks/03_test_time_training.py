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
# # 03 · Test-time training: no adaptation, TTRL, ETMR, DDRL (paper Table 2, Fig. 4)
#
# Every method adapts on the same unlabeled questions ("adapted") and is evaluated on them, the paper's
# test-time setting, and on held-out questions of the same distribution it never saw, which tells
# adaptation apart from memorising pseudo-labels.
#
# | row | what is trained | paper |
# |---|---|---|
# | No adaptation | nothing | baseline |
# | TTRL | GRPO on a random K = 32 of N = 64 rollouts, reward = agreement with the majority vote | baseline |
# | ETMR | TTRL, but the voting rollouts are entropy-fork trees (ETTRL) | baseline |
# | BCS + DAE | DDRL's RL stage: balanced confidence-aware selection, fixed ±1 advantages | ablation |
# | DDRL | BCS + DAE, then consensus-based off-policy refinement (COR) | the method |
#
# BCS + DAE is the RL-only checkpoint of the DDRL run, so it costs nothing extra. Every run goes through
# `ddrl.run.experiments.Experiment` and is cached by its configuration, so notebooks 04 and 05 reuse these runs.
# Sections: (1) the main table with seeds and 95% intervals, the paper's Table 2 numbers beside ours, the
# base model's maj@N over its N voting samples, and whether the testbed reproduces the direction of each
# difference the paper reports, (2) mean-advantage dynamics TTRL vs DDRL (paper Fig. 4), (3) pseudo-label
# and reward accuracy during training, (4) paper vs measured.

# %% tags=["parameters"]
# --- runner (set by `python -m ddrl.run.reproduce`) ---
preset = "default"  # which params/<preset>/ file the runner used
output_dir = "../outputs/interactive"  # figures/, tables/, metrics/ go here
seed = 0  # ddrl.seeds.DEFAULT_SEED (the question draw; training seeds are `seeds`)

# --- questions ---
model = "testbed"  # "testbed" (the model of `testbed_preset`), a Hugging Face id, a ddrl.models preset or a directory
testbed_preset = "default"  # ddrl.testbed.build preset: "tiny" | "default"
dataset = "testbed_test"  # ddrl.data dataset name (testbed_test, math500, aime2024, amc)
data_dir = None  # real data location (None: ddrl.data's lookup)
n_adapted = 32  # questions adapted to (and evaluated on)
n_heldout = 64  # further questions of the same split, never adapted to (0: none)

# --- methods and seeds ---
methods = ["no_adaptation", "ttrl", "etmr", "bcs_dae", "ddrl"]  # ddrl.config.METHODS
seeds = [0, 1, 2]  # training seeds (one run per method and seed)

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
cor_keep = 4  # COR: agreeing rollouts kept per question (with paper_settings: the paper's 4 MATH-500 / 16 AMC, AIME)
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

from ddrl import analysis as an
from ddrl import paper
from ddrl.report import tables as T
from ddrl.run.experiments import cached_rollouts, notebook_experiment, summarize
from ddrl.report.plotting import ci_yerr, color, set_style
from ddrl.report.reporter import Reporter

label = T.method_label

set_style()
rep = Reporter(output_dir, "03_test_time_training")
t_start = time.perf_counter()

exp = notebook_experiment(
    model=model, testbed_preset=testbed_preset, dataset=dataset, data_dir=data_dir, n_adapted=n_adapted,
    n_heldout=n_heldout, seed=seed, paper_settings=paper_settings, paper_temperature=paper_temperature, progress=progress,
    trainer=dict(episodes=episodes, prompts_per_step=prompts_per_step, n_votes=n_votes, k_train=k_train, lr=lr,
                 eval_n=eval_n, cor_m=cor_m, cor_keep=cor_keep, etmr_m=etmr_m, max_new_tokens=max_new_tokens,
                 sample_batch_size=sample_batch_size, device=device))
adapted, heldout, overrides = exp.adapted, exp.heldout, exp.overrides
print(f"{len(adapted)} adapted + {len(heldout)} held-out questions; model {overrides['model']}; "
      f"{exp.config('ttrl', seeds[0]).episodes} episodes")

# %% [markdown]
# ## 1. The main table (paper Table 2): pass@1 and maj@n, mean and 95% t-interval over seeds
#
# pass@1: mean share of `eval_n` samples (T = 0.6, top-p 0.95) that are correct; maj@n: is the majority of
# those samples correct. The interval is a t-interval over training seeds (`ddrl.run.experiments.summarize`),
# so with 2-3 seeds it is wide: an honest picture of run-to-run spread. The paper column is its pass@1 (%)
# for the run's model and benchmark where the paper has them (`ddrl.report.tables.paper_reference`; the testbed is
# shown beside Qwen2.5-Math-1.5B on MATH-500; BCS + DAE comes from Table 3).
#
# The last row is the **base model's maj@N over its N voting samples** (N = `n_votes`, at the rollout
# temperature, one draw): how often the majority vote TTRL rewards is right before any training, the
# ceiling test-time RL is trained toward (it rewards agreement with that vote, not the truth).

# %%
df = exp.grid(methods, seeds)
rep.table(df.drop(columns=["run_dir"]), "runs")
pass1 = summarize(df, "pass@1", by=("method", "split"))
majn = summarize(df, "maj@n", by=("method", "split"))
PAPER_MODEL, PAPER_BENCH = T.paper_reference(dataset, paper_settings)
paper_main = {m: T.paper_pass1(m, PAPER_MODEL, PAPER_BENCH) for m in methods}
paper_header = f"paper pass@1 % ({PAPER_MODEL}, {PAPER_BENCH})"
main_table = T.measured_vs_paper(pass1, methods, paper_main, labels=label, paper_header=paper_header, paper_spec=".1f")
maj_cols = T.measured_vs_paper(majn, methods, {}, labels=label, metric=f"maj@{eval_n}")
main_table = main_table.join(maj_cols.filter(like="maj@"))

# The base model's maj@N over the N voting samples (the vote TTRL's reward agrees with, before training).
cfg0 = exp.config("ttrl", seeds[0])
base_maj = {}
for split_name, recs in (("adapted", adapted), ("heldout", heldout)):
    if len(recs):
        voting = cached_rollouts(cfg0.model, recs, dataset, cfg0.n_votes, temperature=cfg0.rollout_temperature,
                                    top_p=cfg0.rollout_top_p, max_new_tokens=cfg0.max_new_tokens, seed=seed,
                                    batch_size=cfg0.sample_batch_size, cue=cfg0.cue, device=cfg0.device,
                                    progress=progress)
        base_maj[split_name] = an.summary(voting)["maj_accuracy"]
ceiling = {"method": f"Base model maj@{cfg0.n_votes} over its voting samples (T = {cfg0.rollout_temperature:g}; the ceiling)",
           "seeds": 1, paper_header: T.NOT_REPORTED}
for split_name, v in base_maj.items():
    ceiling[f"pass@1 {split_name} (measured)"] = f"{v:.3f}"
main_table = pd.concat([main_table, pd.DataFrame([ceiling])], ignore_index=True).fillna("")
rep.table(main_table, "main_table")
display(main_table)

# Directions: every difference between the paper's Table 2 rows, on the adapted questions.
measured_adapted = {x: T.lookup(pass1, method=x, split="adapted") for x in methods}
paper_pairs = [(a, b) for a, b in (("ttrl", "no_adaptation"), ("etmr", "ttrl"), ("ddrl", "ttrl"), ("ddrl", "etmr"),
                                   ("ddrl", "bcs_dae"), ("bcs_dae", "ttrl"))
               if a in methods and b in methods and paper_main[a] is not None and paper_main[b] is not None]
directions = T.direction_table(paper_pairs, paper_main, measured_adapted, labels=label)
rep.table(directions, "main_table_directions")
display(directions)
display(Markdown(" ".join(T.direction_sentences(directions))))


# %%
def draw_main(pass1):
    splits = list(dict.fromkeys(pass1["split"]))
    fig, axes = plt.subplots(1, len(splits), figsize=(5.5 * len(splits), 3.8), squeeze=False)
    for ax, s in zip(axes[0], splits):
        part = pass1[pass1["split"] == s].set_index("method").reindex(methods)
        x = np.arange(len(part))
        ax.bar(x, part["mean"], color=[color(m) for m in part.index], yerr=ci_yerr(part), capsize=4)
        raw = df[df["split"] == s]
        for i, m in enumerate(part.index):
            ys = raw.loc[raw["method"] == m, "pass@1"]
            ax.plot(np.full(len(ys), i) + np.linspace(-0.12, 0.12, len(ys)), ys, "k.", ms=4)
        ax.set_xticks(x, [label(m) for m in part.index], rotation=20, ha="right")
        ax.set(ylabel="pass@1", title=f"{s} questions ({len(adapted) if s == 'adapted' else len(heldout)})")
    fig.suptitle("Test-time adaptation: mean, 95% interval and each seed (dots)")
    fig.tight_layout()
    return fig


fig = draw_main(pass1)
rep.figure(fig, "main_table_pass1", data=pass1)

# %% [markdown]
# **What to look for.** Compare each method's bar with "No adaptation" and with TTRL, and whether the 95%
# intervals overlap (with 2-3 seeds they are wide; the dots are the individual seeds). The held-out panel asks
# whether a gain on the adapted questions carries over to questions never trained on.

# %% [markdown]
# ## 2. Mean advantage during training: TTRL vs DDRL (paper Fig. 4)
#
# `adv/mean` is the mean advantage over a step's trained rollouts. GRPO centres every group, so TTRL's is 0
# up to the ε in the std; DAE's fixed ±1 makes DDRL's `2·(selected reward) − 1`, which BCS keeps near or below
# 0 (at most K/2 positives). A negative mean advantage pushes probability *away* from sampled answers on
# balance, the "conservative" update the paper's Fig. 4 shows.

# %%
curve_methods = [m for m in ("ttrl", "etmr", "ddrl") if m in methods]
curves = pd.concat([exp.training_curves(m, seeds) for m in curve_methods], ignore_index=True)
fig4 = T.curve_band(curves, "adv/mean")


def draw_band(ax, band, what):
    for m, g in band.groupby("method", sort=False):
        ax.plot(g["step"], g["mean"], ".-", color=color(m), label=label(m))
        ax.fill_between(g["step"], g["lo"], g["hi"], color=color(m), alpha=0.2)
    ax.set(xlabel="RL step", ylabel=what)


fig, ax = plt.subplots(figsize=(6.5, 3.8))
draw_band(ax, fig4[fig4["method"].isin(["ttrl", "ddrl"])], "mean advantage of trained rollouts")
ax.axhline(0, color="grey", lw=0.7)
ax.set_title("Fig. 4: mean advantage, TTRL vs DDRL (band: min-max over seeds)")
ax.legend()
fig.tight_layout()
rep.figure(fig, "fig4_mean_advantage", data=fig4)

# %% [markdown]
# **What to look for.** TTRL's line should sit at 0 (GRPO centres every group). DDRL's sign is the point of the
# paper's Fig. 4: below 0 means the update pushes probability away from sampled answers on balance.

# %% [markdown]
# ## 3. Pseudo-label and reward accuracy during training
#
# Ground truth is used here for diagnosis only (the trainer never sees it): `gt/label_acc` is the share of a
# step's questions whose majority-vote label is right, `gt/reward_acc` the share of rollouts whose pseudo-reward
# equals the true reward (docs/training.md). Rising label accuracy means the vote improves as the model
# adapts; if it falls, the model is converging on wrong answers.

# %%
acc = pd.concat([T.curve_band(curves, "gt/label_acc").assign(metric="label accuracy"),
                 T.curve_band(curves, "gt/reward_acc").assign(metric="reward accuracy")], ignore_index=True)
fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
for ax, (what, part) in zip(axes, acc.groupby("metric", sort=False)):
    draw_band(ax, part, what)
    ax.set_title(f"{what} during training")
axes[0].legend()
fig.tight_layout()
rep.figure(fig, "label_reward_accuracy", data=acc)

# %% [markdown]
# **What to look for.** Whether label accuracy rises over training (the vote improves as the model adapts) or
# falls (the model converges on wrong answers), and whether DDRL's line ends above TTRL's.

# %% [markdown]
# ## 4. Paper vs measured

# %%
def ci(m, split="adapted", s=pass1):
    return T.lookup(s, method=m, split=split)


splits = list(dict.fromkeys(pass1["split"]))
n_steps = int(curves["step"].max()) + 1  # halves overlap only when there is a single step
early_late = pd.concat([curves[curves["step"] < max(1, n_steps // 2)].assign(phase="first half"),
                        curves[curves["step"] >= n_steps // 2].assign(phase="second half")])
early_late = early_late.groupby(["method", "phase"])[["adv/mean", "gt/label_acc", "gt/reward_acc"]].mean()
rows = []
for m in methods:
    for s in splits:
        key = None
        if s == "adapted" and ("table2", PAPER_MODEL, PAPER_BENCH, m) in paper.PAPER:
            key = ("table2", PAPER_MODEL, PAPER_BENCH, m)
        rows.append((f"pass@1 % {label(m)}, {s} (testbed)", key, 100 * ci(m, s)[0]))
if "ddrl" in methods and "ttrl" in methods and ci("ttrl")[0] > 0:
    rows.append(("DDRL relative gain over TTRL, % of TTRL's adapted pass@1 (testbed; paper: Avg of Table 2, "
                 "Qwen2.5-Math-1.5B)", ("claim", "rel_gain_over_ttrl_pct", "Qwen2.5-Math-1.5B"),
                 100 * (ci("ddrl")[0] / ci("ttrl")[0] - 1)))
for s_name, v in base_maj.items():
    rows.append((f"base model maj@{cfg0.n_votes} of the voting samples, {s_name} (testbed)", None, v))
cmp = paper.compare(rows)
cmp["paper"] = [T.paper_cell(v, "g") for v in cmp["paper"]]
rep.table(cmp, "paper_vs_measured")
display(cmp[["quantity", "paper", "measured", "where"]])

# %%
metrics = {
    "n_adapted": len(adapted), "n_heldout": len(heldout), "seeds": list(seeds), "methods": list(methods),
    "episodes": exp.config("ttrl", seeds[0]).episodes, "model": overrides["model"],
    "pass1": {f"{r.method}/{r.split}": [r.mean, r.ci_lo, r.ci_hi] for r in pass1.itertuples()},
    "majn": {f"{r.method}/{r.split}": [r.mean, r.ci_lo, r.ci_hi] for r in majn.itertuples()},
    "base_maj_at_n_votes": base_maj, "n_votes": cfg0.n_votes, "paper_reference": [PAPER_MODEL, PAPER_BENCH],
    "directions": directions.to_dict(orient="records"),
    "rl_seconds_mean": df.groupby("method")["rl_seconds"].mean().to_dict(),
    "cor_seconds_mean": df.groupby("method")["cor_seconds"].mean().to_dict(),
    "curves": {f"{m}/{p}": early_late.loc[(m, p)].to_dict() for m, p in early_late.index},
    "notebook_seconds": time.perf_counter() - t_start,
}
rep.metrics(metrics)

# %% [markdown]
# ## What we measured
#
# Generated from `metrics`; nothing below is typed in.

# %%
m = metrics
P = {k: tuple(v) for k, v in m["pass1"].items()}
lines = [f"On {m['n_adapted']} adapted and {m['n_heldout']} held-out questions ({m['model']}, {m['episodes']} episodes, "
         f"{len(m['seeds'])} seeds), pass@1 on the adapted questions is: "
         + "; ".join(f"{label(x)} {T.fmt_ci(*P[f'{x}/adapted'])}" for x in m["methods"]) + "."]
if "no_adaptation" in methods and "ttrl" in methods:
    rel = T.ci_relation(P["ttrl/adapted"], P["no_adaptation/adapted"])
    lines.append(T.comparison_sentence("TTRL", P["ttrl/adapted"], "no adaptation", P["no_adaptation/adapted"])
                 + f": this {T.agreement(rel, 'higher')} the premise the paper builds on (TTRL improves the base model).")
if "ddrl" in methods and "ttrl" in methods:
    for s in splits:
        rel = T.ci_relation(P[f"ddrl/{s}"], P[f"ttrl/{s}"])
        lines.append(f"On the {s} questions, " + T.comparison_sentence("DDRL", P[f"ddrl/{s}"], "TTRL", P[f"ttrl/{s}"])
                     + f": this {T.agreement(rel, 'higher')} the paper's main claim that DDRL beats TTRL "
                     f"(it reports {paper.fmt(('table2', PAPER_MODEL, PAPER_BENCH, 'ddrl'), '.1f')} vs "
                     f"{paper.fmt(('table2', PAPER_MODEL, PAPER_BENCH, 'ttrl'), '.1f')} pass@1 on {PAPER_MODEL}, {PAPER_BENCH}, "
                     f"and a {paper.fmt(('claim', 'rel_gain_over_ttrl_pct', 'Qwen2.5-Math-1.5B'))}% relative gain in "
                     "average pass@1 on Qwen2.5-Math-1.5B).")
if "ddrl" in methods and "bcs_dae" in methods:
    rel = T.ci_relation(P["ddrl/adapted"], P["bcs_dae/adapted"])
    lines.append("COR's own contribution: " + T.comparison_sentence("DDRL (after COR)", P["ddrl/adapted"], "BCS + DAE (before COR)",
                                                                    P["bcs_dae/adapted"])
                 + f"; this {T.agreement(rel, 'higher')} the paper's argument that refinement on consensus rollouts helps.")
if "etmr" in methods and "ddrl" in methods:
    rel = T.ci_relation(P["ddrl/adapted"], P["etmr/adapted"])
    lines.append(T.comparison_sentence("DDRL", P["ddrl/adapted"], "ETMR", P["etmr/adapted"])
                 + f"; this {T.agreement(rel, 'higher')} the paper's claim that DDRL outperforms its baselines, ETMR among them.")
if heldout and "ttrl" in methods and "no_adaptation" in methods:
    gain_a = P["ttrl/adapted"][0] - P["no_adaptation/adapted"][0]
    gain_h = P["ttrl/heldout"][0] - P["no_adaptation/heldout"][0]
    if gain_a <= 0:
        lines.append(f"TTRL did not improve pass@1 on the adapted questions ({gain_a:+.3f}); on held-out ones it changed "
                     f"by {gain_h:+.3f}, so there is no adaptation gain whose transfer could be judged.")
    else:
        relation = "larger than"
        if gain_h < gain_a:
            relation = "smaller than"
        if abs(gain_h - gain_a) < 0.02:
            relation = "close to"
        reading = "part of the adaptation is specific to the questions trained on."
        if gain_h >= 0.5 * gain_a:
            reading = "the adaptation transfers, it is not memorised pseudo-labels."
        lines.append(f"TTRL's gain on held-out questions ({gain_h:+.3f}) is {relation} its gain on the adapted ones "
                     f"({gain_a:+.3f}): {reading}")
C = m["curves"]
if "ttrl" in curve_methods and "ddrl" in curve_methods:
    t2, d1, d2 = (C["ttrl/second half"]["adv/mean"], C["ddrl/first half"]["adv/mean"], C["ddrl/second half"]["adv/mean"])
    sign = ("not negative, unlike the paper's Fig. 4: here BCS finds few enough disagreeing rollouts that the "
            "trained batch is mostly positive.")
    if d2 < 0:
        sign = "negative, as in the paper's Fig. 4 (fixed −1 on the BCS negatives outweighs the +1s)."
    lines.append(f"Fig. 4: TTRL's mean advantage stays at {t2:+.3f} (GRPO centres every group), while DDRL's is "
                 f"{d1:+.3f} in the first half of training and {d2:+.3f} in the second; {sign}")
    la = {x: (C[f"{x}/first half"]["gt/label_acc"], C[f"{x}/second half"]["gt/label_acc"]) for x in curve_methods}
    ending = "DDRL's labels do not end more accurate than TTRL's here."
    if la["ddrl"][1] > la["ttrl"][1]:
        ending = "DDRL's labels end more accurate than TTRL's."
    lines.append("Pseudo-label accuracy (first half → second half of training): "
                 + "; ".join(f"{label(x)} {a:.2f} → {b:.2f}" for x, (a, b) in la.items()) + f". {ending}")
for s_name, v in m["base_maj_at_n_votes"].items():
    best = max(P[f"{x}/{s_name}"][0] for x in m["methods"] if f"{x}/{s_name}" in P)
    sentence = (f"On the {s_name} questions the base model's majority vote over its {m['n_votes']} voting samples is "
                f"right on {v:.3f} of them; the best method's pass@1 there is {best:.3f}")
    if best > v:
        sentence += ", above the vote it was trained toward"
    lines.append(sentence + ".")
lines.append(f"The notebook took {m['notebook_seconds']:.0f} s (runs cached from earlier executions load instantly).")
display(Markdown("\n\n".join(lines)))

# %% [markdown]
# ## Try this
#
# 1. Add seeds (`seeds = [0, 1, 2, 3, 4]`). Which differences in the main table survive, and which were noise?
# 2. The held-out questions were never adapted to. Is the TTRL gain there as large as on the adapted ones?
#    What would you expect if TTRL only memorised its pseudo-labels?
# 3. In Fig. 4, DAE's mean advantage is `2·(selected reward) − 1`. With BCS capping positives at K/2, can it
#    ever be positive? Check `reward/selected_mean` in `curves`.
# 4. Plot `gt/fp_rate` (spurious positives) for TTRL and DDRL. Which one rewards wrong answers more as
#    training goes on?
# 5. Set `episodes = 8`. Does TTRL's label accuracy keep rising, or does it collapse onto wrong answers?
