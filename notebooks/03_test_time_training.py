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
# # 03 · Test-time training: does DDRL beat TTRL? (paper Table 2, Fig. 4)
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
# The paper reports DDRL above TTRL and ETMR on every benchmark (Table 2). A handful of training runs cannot
# check that: seed-to-seed spread on the testbed is several points, about the size of the effect. The answer
# comes from the **claims study** (`results/`, `ddrl.study`): hundreds of committed runs, a pre-registered
# analysis and verdict rule. This notebook first shows that answer, recomputed live from the committed runs;
# then you rerun a piece of the study and check it lands on the committed numbers; last, a small fresh grid
# shows the pipeline at work (and why it cannot decide anything by itself).

# %% tags=["parameters"]
# --- runner (set by `python -m ddrl.run.reproduce`) ---
preset = "default"  # which params/<preset>/ file the runner used
output_dir = "../outputs/interactive"  # figures/, tables/, metrics/ go here
seed = 0  # ddrl.seeds.DEFAULT_SEED (the question draw; training seeds are `seeds`)
# --- 1. the answer: the claims study's decided comparisons, re-analysed live from its committed runs ---
study_claims = ["M1", "M2", "P1", "H1"]  # ddrl.study.plan.PAIRED ids (M1: DDRL - TTRL, P1: TTRL - no adaptation, ...)
study_regimes = ["amc_like_small_lr", "math500_like_small_lr", "amc_like", "math500_like"]  # where they were decided
# --- 2. your rerun: `python -m ddrl.study rerun` arguments, DESIGN REGIME METHOD SEED [--steps K] ---
rerun = ["registered aime_like no_adaptation 0", "registered amc_like_small_lr ddrl 0 --steps 3"]
# --- 3. a fresh grid on this machine: a pipeline demonstration (runs shared with 04 and 05) ---
n_adapted = 32  # questions adapted to (and evaluated on)
n_heldout = 64  # further questions of the same split, never adapted to (0: none)
methods = ["no_adaptation", "ttrl", "ddrl"]  # rows of ddrl/methods.yaml (e.g. "random_reward", "soft_vote")
seeds = [0]  # training seeds (one run per method and seed)
episodes = 4  # passes over the adapted questions
# --- the rest: model, dataset, trainer, device (ddrl/run/settings.py has each with its default), e.g. {"lr": 3e-4} ---
settings = {}
progress = True  # tqdm progress bars

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from ddrl import analysis as an
from ddrl.methods import trains
from ddrl.report import prose as P
from ddrl.report import tables as T
from ddrl.report.plotting import ci_yerr, color, set_style
from ddrl.report.reporter import Reporter
from ddrl.run.experiments import cached_rollouts, shared_experiment, summarize
from ddrl.run.settings import notebook_settings
from ddrl.study import lesson as L

label = T.method_label
set_style()
rep = Reporter(output_dir, "03_test_time_training")
t_start = time.perf_counter()

# %% [markdown]
# ## 1. The answer: the claims study, re-analysed from its committed runs
#
# Each row is one comparison the study registered before running it (`results/plan.md`): method a minus
# method b in pass@1 points, paired by seed and question, over 6 to 46 training seeds of one regime. A regime is
# a set of testbed questions whose difficulty for the base model mimics one benchmark (AIME-like: mostly too
# hard, AMC-like: half solved, MATH-500-like: mostly solved); "lr/10" is the same regime trained at a tenth of
# the learning rate. The 95% interval is the study's hierarchical bootstrap over seeds and questions, and the
# verdict follows its pre-registered rule: **reproduced** when the interval excludes zero on the paper's side,
# **contradicted** on the other side, **no effect** when it lies within ±1 point, otherwise **not resolved**.
# The numbers are recomputed now, in seconds, from the per-run CSVs under `results/runs/`; the last column
# checks them against the entries the study committed. The paper's column is its own difference for the
# benchmark the regime stands for (Qwen2.5-Math-1.5B, Table 2).

# %%
cells = L.committed_cells(study_claims, study_regimes)
decided_table = L.decided_table(cells)
rep.table(decided_table, "decided")
display(P.for_students_table(L.show_table(decided_table)))

# %%
fig = L.decided_figure(decided_table, "Test-time training on the testbed, as the claims study decided it")
rep.figure(fig, "decided", data=decided_table)

# %% [markdown]
# **What to look for.** Where each bar sits relative to zero and to the hollow diamond (the paper's difference).
# Compare the DDRL − TTRL rows at the two learning rates; the held-out rows ask whether adapting helps on
# questions the model never trained on.
#
# **In plain words**, generated from the table: the paper's main claim first, then whether adapting carries to
# questions the model never trained on (if that row is in the table), then every comparison grouped by verdict.

# %%
digest = [P.claim_digest(decided_table, L.claim_words(c)) for c in ("M1", "H1")]
display(Markdown("\n\n".join([" ".join(d for d in digest if d), *L.verdict_sentences(decided_table)])))

# %% [markdown]
# ## 2. Reproduce a piece of it yourself
#
# `python -m ddrl.study rerun DESIGN REGIME METHOD SEED` recomputes one committed run from scratch: the same job
# code as the study, the base weights installed from `results/base_models/`, nothing read from a cache, and
# compares it question by question with its committed CSV; `--steps K` trains only the first K RL steps and
# compares them with the committed step log (the same trajectory or not). A run's numbers depend on the
# CPU's floating-point kernels: the study records each run's base build, and on another CPU kind a rerun may
# differ by a sampled token now and then. It then says so and shows the differences instead of failing.
# Below: the runs of `rerun` (default: the untrained model's evaluation in AIME-like, and the first 3 steps of
# the AMC-like DDRL run at lr/10), one at a time.

# %%
reruns, texts = L.rerun_table(rerun)
rep.table(reruns, "rerun")
rerun_names = [P.rerun_words(*L.parse_rerun(spec)[1:], L.regime_words, label) for spec in rerun]
display(reruns.assign(run=rerun_names))
print("\n\n".join(P.for_students(t, name) for t, name in zip(texts, rerun_names)))

# %% [markdown]
# ## 3. A fresh grid on this machine: a pipeline demonstration
#
# The cells below train the methods anew on a few questions with the settings above (every run cached, so
# notebooks 04 and 05 reuse them). This shows the whole pipeline (sampling, voting, selection, update, COR,
# evaluation) on your machine, but **it cannot decide anything**: with one or a few seeds the run-to-run
# spread is as large as the effect. The sentence after the table says how many seeds the study's power
# analysis needed for DDRL vs TTRL.
#
# The last row of the table is the **base model's maj@N over its N voting samples**: how often the majority
# vote TTRL rewards is right before any training, the ceiling test-time RL is trained toward.

# %%
# every knob of this notebook: those of its cell and its settings (ddrl/run/settings.py), checked
S = notebook_settings("03_test_time_training", settings,
                      n_adapted=n_adapted, n_heldout=n_heldout, seed=seed, episodes=episodes, progress=progress)
exp = shared_experiment(S)
adapted, heldout = exp.adapted, exp.heldout
df = exp.grid(methods, seeds)
rep.table(df.drop(columns=["run_dir"]), "runs")
pass1 = summarize(df, "pass@1", by=("method", "split"))
PAPER_MODEL, PAPER_BENCH = T.paper_reference(S["dataset"], S["paper_settings"])
paper_main = {m: T.paper_pass1(m, PAPER_MODEL, PAPER_BENCH) for m in methods}
main_table = T.measured_vs_paper(T.in_points(pass1), methods, paper_main, labels=label, measured_spec=".1f",
                                 paper_header=f"paper pass@1 % ({PAPER_MODEL}, {PAPER_BENCH})", paper_spec=".1f")
cfg0 = exp.config("ttrl", seeds[0])
base_maj = {}
for split_name, recs in (("adapted", adapted), ("heldout", heldout)):
    if len(recs):
        voting = cached_rollouts(cfg0.model, recs, S["dataset"], cfg0.n_votes, temperature=cfg0.rollout_temperature,
                                 top_p=cfg0.rollout_top_p, max_new_tokens=cfg0.max_new_tokens, seed=seed,
                                 batch_size=cfg0.sample_batch_size, cue=cfg0.cue, device=cfg0.device,
                                 progress=progress)
        base_maj[f"pass@1 {split_name} (measured)"] = P.pass1_points(an.summary(voting)["maj_accuracy"])
ceiling = {"method": f"Base model maj@{cfg0.n_votes} (the ceiling)", "seeds": 1, **base_maj}
main_table = pd.concat([main_table, pd.DataFrame([ceiling])], ignore_index=True).fillna("")
rep.table(main_table, "main_table")
display(main_table)
ad = pass1[pass1["split"] == "adapted"].set_index("method")["mean"]
order = [P.compare(label(a), ad[a], label(b), ad[b]) for a, b in (("ddrl", "ttrl"), ("ttrl", "no_adaptation"))
         if a in ad.index and b in ad.index]
display(Markdown((f"On the adapted questions (pass@1 in points), {P.join_words(order)}. " if order else "")
                 + P.one_seed_note(len(seeds)) + f" The study's power analysis needed {L.seeds_needed('amc_like')} "
                 f"seeds in AMC-like and {L.seeds_needed('math500_like')} in MATH-500-like to decide DDRL vs TTRL "
                 "within ±2 points."))


# %%
def draw_main(pass1):
    splits = list(dict.fromkeys(pass1["split"]))
    fig, axes = plt.subplots(1, len(splits), figsize=(5.5 * len(splits), 3.8), squeeze=False)
    for ax, s in zip(axes[0], splits):
        part = T.in_points(pass1[pass1["split"] == s]).set_index("method").reindex(methods)
        x = np.arange(len(part))
        ax.bar(x, part["mean"], color=[color(m) for m in part.index], yerr=ci_yerr(part), capsize=4)
        raw = df[df["split"] == s]
        for i, m in enumerate(part.index):
            ys = 100 * raw.loc[raw["method"] == m, "pass@1"]
            ax.plot(np.full(len(ys), i) + np.linspace(-0.12, 0.12, len(ys)), ys, "k.", ms=4)
        ax.set_xticks(x, [label(m) for m in part.index], rotation=20, ha="right")
        ax.set(ylabel="pass@1 (points)",
               title=f"{s} questions ({len(adapted) if s == 'adapted' else len(heldout)})")
    fig.suptitle(f"The fresh grid: {P.interval_caption(len(seeds))}")
    fig.tight_layout()
    return fig


fig = draw_main(pass1)
rep.figure(fig, "main_table_pass1", data=pass1)

# %% [markdown]
# **What to look for.** How far apart the seeds' dots of one method lie: that spread is why the study needed
# dozens of seeds. The held-out panel asks whether a gain on the adapted questions carries over.

# %% [markdown]
# ## 4. Mean advantage during training: TTRL vs DDRL (paper Fig. 4)
#
# `adv/mean` is the mean advantage over a step's trained rollouts. GRPO centres every group, so TTRL's is 0 up to
# the ε in the std. DAE gives each kept rollout +1 if it carries the pseudo-label and −1 otherwise, so DDRL's is
# `2 · (share of label copies among the K kept) − 1`, and that share is set by BCS, question by question.
# BCS keeps K+ = min(c, K/2) copies of the label as positives, where c of the N rollouts carry it, and fills its
# other K − K+ slots with the rarest answers. But only N − c rollouts carry another answer: once c > N − K/2, the
# "negatives" run out and the remaining slots go to further label copies, which are rewarded +1 too. So one
# question's mean advantage is **negative** when c < K/2 (fewer positives than negatives), **zero** in between,
# and **positive** when c > N − K/2. Whether a batch's mean advantage is negative, as in the paper's Fig. 4, is
# a question of where the questions' agreement c sits, and training moves it.
#
# First the rule, on the base model's rollouts and the claims study's committed DDRL runs (N = 64, K = 32, many
# seeds per regime); then the fresh grid's runs. Ground truth is used for diagnosis only (the trainer never sees
# it): `gt/label_acc` is the share of a step's questions whose majority-vote label is right.

# %%
from ddrl.study.analysis import load_base, load_steps
from ddrl.study.lesson import regime_words
from ddrl.study.plan import RESULTS

N_STUDY, K_STUDY = 64, 32
zones = an.dae_zones(N_STUDY, K_STUDY)
base_groups, _ = load_base(RESULTS / "runs")
by_question = an.dae_advantage_by_question(an.label_counts(base_groups), K_STUDY)
shares = an.dae_zone_shares(by_question)
study_steps = load_steps(RESULTS / "runs").query("method == 'ddrl' and phase == 'rl'")
course = an.advantage_course(study_steps[study_steps["regime"].isin(shares["regime"])])
dynamics = shares.merge(course, on="regime")
dynamics.insert(0, "regime words", dynamics["regime"].map(regime_words))
rep.table(dynamics, "dae_advantage_zones")

fig, axes = plt.subplots(1, 3, figsize=(15, 3.9), gridspec_kw={"width_ratios": [1.1, 1, 1.2]})
ax = axes[0]
c = np.arange(1, N_STUDY + 1)
ax.plot(c, an.dae_mean_advantage(c, N_STUDY, K_STUDY), color=color("ddrl"), lw=2, label="BCS + DAE (DDRL)")
ax.axhline(0, color="grey", lw=0.7, label="GRPO (TTRL): 0 for every c")
ax.axvspan(0.5, zones["negative_below"] - 0.5, color="#f4cccc", alpha=0.6, lw=0)
ax.axvspan(zones["positive_above"] + 0.5, N_STUDY + 0.5, color="#d9ead3", alpha=0.8, lw=0)
ax.set(xlabel=f"rollouts carrying the label, c (of N = {N_STUDY})", ylabel="mean advantage of the K kept",
       title=f"One question, K = {K_STUDY}", xlim=(0.5, N_STUDY + 0.5))
ax.legend(fontsize=8, loc="upper left")
ax = axes[1]
left = np.zeros(len(dynamics))
for zone, col in (("negative", "#e06666"), ("zero", "#bbbbbb"), ("positive", "#6aa84f")):
    ax.barh(dynamics["regime words"], dynamics[zone], left=left, color=col, label=zone)
    left += dynamics[zone].to_numpy()
ax.invert_yaxis()
ax.set(xlabel="share of questions (%)", xlim=(0, 100), title="Base model: where the questions' c sits")
ax.legend(title="mean advantage", fontsize=8, title_fontsize=8, ncols=3, loc="lower center", bbox_to_anchor=(0.5, 1.1))
ax.title.set_y(1.32)
ax = axes[2]
for r, g in study_steps[study_steps["regime"].isin(shares["regime"])].groupby("regime", sort=False):
    m = g.groupby("step")["adv/mean"].mean()
    ax.plot(m.index, m.to_numpy(), lw=1.2, label=f"{regime_words(r)} ({P.count_words(g['seed'].nunique(), 'run')})")
ax.axhline(0, color="grey", lw=0.7)
ax.set(xlabel="RL step", ylabel="batch mean advantage (mean over runs)", title="The study's DDRL runs")
ax.legend(fontsize=8)
fig.tight_layout()
rep.figure(fig, "dae_advantage_zones", data=dynamics)


def zone_sentence(r):
    """One regime's start and end of DDRL's mean advantage, from the table's numbers."""
    return (f"In {r['regime words']}, {r['negative']:.0f}% of the base model's questions sit below c = "
            f"{zones['negative_below']} and {r['positive']:.0f}% above c = {zones['positive_above']}; averaged over "
            f"the questions, the rule predicts a mean advantage of {P.signed(r['predicted'], 2)} before training, and the "
            f"{P.count_words(int(r['runs']), 'committed run')} start their first 8 steps at {P.signed(r['adv_start'], 2)}. "
            f"Over {r['steps']} steps the share of rollouts agreeing with the label "
            f"{'grows' if r['maj_end'] > r['maj_start'] else 'falls'} from {r['maj_start']:.2f} to "
            f"{r['maj_end']:.2f}, and the mean advantage ends at {P.signed(r['adv_end'], 2)} ({P.sign_word(r['adv_end'])}).")


def paper_fig4_sentence(d):
    """The testbed's runs beside the paper's Fig. 4 (AIME 2024: negative throughout; MATH-500: negative, then
    positive), from the table's numbers."""
    ends = d.set_index("regime")
    up = [w for w, a in zip(d["regime words"], d["adv_end"]) if a > 0]
    s = (f"DDRL's mean advantage ends positive in {len(up)} of {len(d)} regimes"
         + (f" ({P.join_words(up)})" if up else "") + ". The paper's Fig. 4 shows it negative throughout on AIME 2024 and "
         "rising from negative to positive on MATH-500.")
    if "aime_like" in ends.index:
        a = ends.loc["aime_like"]
        s += (" AIME-like " + ("departs from" if a["adv_end"] > 0 else "follows") + " the paper's AIME curve: its "
              f"agreement reaches {a['maj_end']:.2f} of the rollouts, "
              + ("past" if a["maj_end"] > zones["positive_above"] / N_STUDY else "short of")
              + f" the {zones['positive_above']}/{N_STUDY} = {zones['positive_above'] / N_STUDY:.2f} where BCS's negatives run out.")
    return s


display(Markdown("\n\n".join([*(zone_sentence(r) for _, r in dynamics.iterrows()), paper_fig4_sentence(dynamics)])))

# %% [markdown]
# **What to look for.** The left panel is the whole mechanism: DAE's mean advantage over BCS's picks is a
# function of c alone, below zero only where fewer than K/2 rollouts agree. The middle panel says where questions
# start; the right one what training does: test-time RL sharpens the vote, agreement climbs past N − K/2 on
# more and more questions, BCS runs out of disagreeing rollouts, and the mean advantage turns positive.
# Negative or positive, a DAE step pushes the label's copies up and the rarest answers down with the same unit
# weight; the sign only says which side has more rollouts. The last sentence above sets the testbed beside the
# paper.
#
# Below: the same two curves for this notebook's fresh runs.

# %%
curve_methods = [m for m in methods if trains(m)]  # the methods with an RL run of their own
curves = pd.concat([exp.training_curves(m, seeds) for m in curve_methods], ignore_index=True)
bands = pd.concat([T.curve_band(curves, "adv/mean").assign(metric="mean advantage of trained rollouts"),
                   T.curve_band(curves, "gt/label_acc").assign(metric="pseudo-label accuracy")], ignore_index=True)
fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
for ax, (what, part) in zip(axes, bands.groupby("metric", sort=False)):
    for m, g in part.groupby("method", sort=False):
        ax.plot(g["step"], g["mean"], ".-", color=color(m), label=label(m))
        ax.fill_between(g["step"], g["lo"], g["hi"], color=color(m), alpha=0.2)
    ax.set(xlabel="RL step", ylabel=what, title=what)
axes[0].axhline(0, color="grey", lw=0.7)
axes[0].legend(loc="upper left", fontsize=8)
fig.suptitle(f"The fresh grid ({P.count_words(len(seeds), 'seed')}; "
             + ("band: the seeds' range)" if len(seeds) > 1 else "no band)"), fontsize=10)
fig.tight_layout()
rep.figure(fig, "fig4_mean_advantage", data=bands)


def fresh_sentence(curves):
    """What the fresh runs' mean advantage and label accuracy did, from their step logs."""
    out = []
    for m, g in curves.groupby("method", sort=False):
        per = g.groupby("step")[["adv/mean", "gt/label_acc", "label/majority_ratio"]].mean()
        out.append(f"{label(m)}: mean advantage from {P.signed(per['adv/mean'].iloc[0], 2)} at the first step to "
                   f"{P.signed(per['adv/mean'].iloc[-1], 2)} at the last (between {P.signed(per['adv/mean'].min(), 2)} and "
                   f"{P.signed(per['adv/mean'].max(), 2)} over its {P.count_words(len(per), 'step')}, median "
                   f"{P.signed(per['adv/mean'].median(), 2)}), agreement with the label {per['label/majority_ratio'].iloc[0]:.2f} → "
                   f"{per['label/majority_ratio'].iloc[-1]:.2f}, pseudo-label accuracy {per['gt/label_acc'].iloc[0]:.2f} → "
                   f"{per['gt/label_acc'].iloc[-1]:.2f}.")
    return " ".join(out)


display(Markdown(fresh_sentence(curves)))

# %% [markdown]
# **What to look for.** TTRL's mean advantage sits at 0 (GRPO centres every group). DDRL's follows the rule above:
# where its line lies above 0, its questions' agreement has passed N − K/2 on enough of them (here N and K are this
# grid's `n_votes` and `k_train`). On the right, whether the vote gets more often right as the model adapts, or
# converges on wrong answers.

# %%
metrics = {
    "decided": decided_table.to_dict(orient="records"), "rerun": reruns.to_dict(orient="records"),
    "n_adapted": len(adapted), "n_heldout": len(heldout), "seeds": list(seeds), "methods": list(methods),
    "pass1": {f"{r.method}/{r.split}": [r.mean, r.ci_lo, r.ci_hi] for r in pass1.itertuples()},
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
# 1. Add `"A3"` and `"C1"` to `study_claims`: which part of DDRL carries its gain (notebooks 04 and 05 go deeper)?
# 2. Rerun a run of another seed or regime (`rerun`), or the whole AMC-like DDRL run at lr/10 (steps 0; about
#    15 minutes on one core). Where does its pass@1 sit among the committed seeds?
# 3. Give the fresh grid 5 seeds (`seeds = [0, 1, 2, 3, 4]`). Do the intervals separate DDRL from TTRL?
# 4. DDRL's mean advantage turns positive once c > N − K/2. With N = 64, at what c does it turn positive for
#    K = 16, and for K = 48 (`ddrl.analysis.dae_zones`)? Which K keeps a batch negative longest as the vote sharpens?
