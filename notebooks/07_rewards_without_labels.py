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
# # 07 · Rewards without labels: the vote and four rivals
#
# Test-time RL has no labels, so something must stand in for the reward. TTRL and DDRL reward agreement with the
# majority vote; the field has proposed others. Each is one function of `ddrl/rewards.py`, and each method here is
# TTRL's training (random K of N, GRPO, no COR) with that reward and nothing else changed:
#
# | reward | r_i for rollout i of N | paper |
# |---|---|---|
# | vote (TTRL, DDRL) | $\mathbb{1}[y_i = y^*]$, agreement with the majority answer | Zuo et al. 2025 |
# | random | $r_i \sim \mathrm{Bernoulli}(1/2)$, blind to the answer | Shao et al. 2025, "Spurious Rewards" |
# | gated vote | $\mathbb{1}[y_i = y^*]$ if $c(y^*)/N \ge 0.5$, else 0 | Shafayat et al. 2025, SRT |
# | soft vote | $c(y_i)/N$, the share of the rollout's answer | Zhang et al. 2025, EMPO |
# | negative entropy | $-\frac{1}{|o_i|}\sum_t H(\pi(\cdot \mid q, o_{i,<t}))$ | Prabhudesai et al. 2025, RENT |
#
# The random reward is the control: if it gained as much as the vote, TTRL's gain would not come from the vote.
# Where these depart from their papers: `docs/semantics.md`, "Label-free rewards".
#
# Three parts: (1) where each reward's wrong signal comes from, on the untrained model's rollouts (no training: the
# paper's Fig. 3a question, asked of every reward); (2) what the registered comparison has decided so far;
# (3) a short fresh run you can change.

# %% tags=["parameters"]
# --- runner (set by `python -m ddrl.run.reproduce`) ---
preset = "default"  # which params/<preset>/ file the runner used
output_dir = "../outputs/interactive"  # figures/, tables/, metrics/ go here
seed = 0  # the question draw and the fresh runs' seed
# --- 1. where the wrong signal comes from (the committed base-model rollouts) ---
regime = "amc_like"  # the testbed regime whose untrained rollouts are read: aime_like | amc_like | math500_like
rewards = ["vote", "random", "gated_vote", "soft_vote"]  # ddrl.rewards names (neg_entropy needs token entropies)
k = 32  # K: TTRL's trained rollouts per question
svamp = True  # also read the SVAMP rollouts of code-davinci-002 (30 per problem, K scaled by 30/64)
# --- 3. a fresh run: TTRL beside rewards of your choice ---
methods = ["ttrl", "random_reward"]  # rows of ddrl/methods.yaml
n_adapted = 16  # questions adapted to and evaluated on
episodes = 2  # passes over them
testbed_preset = "default"  # "tiny" | "default"
progress = True  # tqdm progress bars

# %%
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import Markdown, display

from ddrl import analysis as an
from ddrl.data import DataUnavailable, load_dataset, resolve_data_dir
from ddrl.methods import words
from ddrl.report.plotting import color, set_style
from ddrl.report.reporter import Reporter
from ddrl.run.experiments import notebook_experiment, summarize
from ddrl.study import designs as D
from ddrl.study import lesson as L
from ddrl.study.plan import BANDS_64, RESULTS

set_style()
rep = Reporter(output_dir, "07_rewards_without_labels")

# %% [markdown]
# ## 1. Where each reward's wrong signal comes from
#
# The untrained model's 64 rollouts per question, committed by the claims study (`results/runs/base/`), are read
# as answer groups; each reward is computed on them, TTRL's random K = 32 get GRPO's advantages, and every rollout
# is counted by the frequency band of its answer (seen at most 5, 6-44, or at least 45 times out of 64). A rollout
# is *favoured* when its reward is 1 (a 0/1 reward) or above its question's mean (a graded one). Two numbers per
# band: how many of the band's wrong rollouts the reward favours, and how much of all the positive advantage it
# hands out lands on wrong rollouts of the band.

# %%
groups = pd.concat(pd.read_csv(p) for p in sorted((RESULTS / "runs" / "base" / regime).glob("seed*-groups.csv")))
problems = [p for _, g in groups.groupby("seed") for p in an.problems_from_groups(g)]
sig = an.reward_signal(problems, rewards, k, BANDS_64, seed=seed)
#: each reward in words, and the method that trains with it (its colour)
REWARD_METHOD = {"vote": "ttrl", "random": "random_reward", "gated vote": "gated_vote", "soft vote": "soft_vote",
                 "negative entropy": "neg_entropy"}
sig["reward"] = sig["reward"].str.replace("_", " ").replace({"neg entropy": "negative entropy"})
rep.table(sig, "reward_signal")
bands = [f"{lo}-{hi}" for lo, hi in BANDS_64]
shown = sig[sig["band"].isin(bands)]


def draw_signal(shown, bands, of, whose):
    palette = {name: color(method) for name, method in REWARD_METHOD.items() if name in set(shown["reward"])}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for ax, col, what in ((axes[0], "fp_rate", "wrong rollouts favoured (%)"),
                          (axes[1], "pos_adv_wrong", "positive advantage on wrong rollouts (%)")):
        sns.barplot(data=shown.assign(v=100 * shown[col]), x="band", y="v", hue="reward", order=bands, ax=ax,
                    palette=palette)
        ax.set(xlabel=f"times the rollout's answer was seen, of {of}", ylabel=what)
        ax.get_legend().remove()
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.suptitle(f"What each reward favours: {whose}")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


rep.figure(draw_signal(shown, bands, 64, f"{L.regime_words(regime)}, the untrained model's rollouts"), "reward_signal",
           data=shown)
display(Markdown(" ".join(L.reward_signal_sentences(sig, bands[1]))))

# %% [markdown]
# The same on real rollouts: code-davinci-002's 30 Program-of-Thought samples per SVAMP problem, the data of notebook
# 01 and of claims F1-F3 and E1-E2, with the bands rescaled to 30 and K to the same share of N. Negative entropy
# needs token entropies, which these samples lack.

# %%
if svamp:
    try:
        sv_records = load_dataset("svamp_codex_rollouts", data_dir=resolve_data_dir(None))
    except DataUnavailable as e:  # offline and no local copy: said in the batch log, not an error
        rep.skipped("SVAMP reward signal", f"{e}; set DDRL_DATA_DIR to a folder holding rollouts/",
                    file="svamp_codex_rollouts")
        svamp = False
if svamp:
    sv_band_edges = an.scale_bands(BANDS_64, 64, 30)
    sv_bands = [f"{lo}-{hi}" for lo, hi in sv_band_edges]
    sv_sig = an.reward_signal(an.svamp_problems(sv_records), [r for r in rewards if r != "neg_entropy"],
                              round(k * 30 / 64), sv_band_edges, seed=seed)
    sv_sig["reward"] = sv_sig["reward"].str.replace("_", " ")
    rep.table(sv_sig, "reward_signal_svamp")
    sv_shown = sv_sig[sv_sig["band"].isin(sv_bands)]
    rep.figure(draw_signal(sv_shown, sv_bands, 30, "code-davinci-002's SVAMP rollouts"), "reward_signal_svamp",
               data=sv_shown)
    display(Markdown(" ".join(L.reward_signal_sentences(sv_sig, sv_bands[1], of=30))))

# %% [markdown]
# **How to read it.** By construction the vote favours a wrong answer only where the wrong answer *is* the
# majority, so none of the rarest band's wrong rollouts, and the gated vote only where that majority is confident;
# the coin favours about half of every band, blind to the answers; the soft vote favours any answer seen more often
# than its question's average. The sentences above give the middle band's measured numbers, and say which rewards
# put more of their positive advantage on wrong answers there than the vote does: the spurious signal each would
# hand to GRPO to amplify (notebook 02).

# %% [markdown]
# ## 2. What the registered comparison has decided
#
# `results/plan.md`, Stage 3, registered the comparison before any of its runs: each reward against TTRL, against
# DDRL and against no adaptation, and TTRL against the random reward, in AMC-like at both learning rates and
# MATH-500-like at lr/10, ten paired seeds each, with the plan's verdict rule. Its status, read from the committed
# files; each regime whose analysis is committed is analysed again here, live, from its committed runs (the same
# bootstrap draws: each entry should equal the committed one, and the table says whether it does):

# %%
stage = [D.DESIGNS[name] for name in ("rewards_amc", "rewards_amc_lr10", "rewards_math500_lr10")]
status = L.stage_status(stage)
rep.table(status, "stage3_status")
display(status.drop(columns="design"))
if status["analysed"].any():  # re-analysed here from the committed runs, by the registered rule
    decided, live, holm = L.stage3_decided(stage)
    rep.table(decided, "stage3_decided")
    display(L.show_stage3(decided))
    rep.figure(L.stage3_figure(decided), "stage3_decided", data=decided)
    same = int(decided["as committed"].str.startswith("yes").sum())
    display(Markdown(" ".join(L.reward_answer(live, holm)) + f" {same} of the {len(decided)} entries re-analysed here "
                     "equal the committed analyses (`results/rewards/`)."))
else:
    hw = sorted(float(v) for d in stage for c, v in d.predicted.items() if not c.startswith("L3"))
    mdes = sorted(vote_arms for vote_arms, _ in D.STAGE3_MDE.values())
    display(Markdown(f"**Not decided yet.** {int(status['runs committed'].sum())} of {int(status['runs needed'].sum())} "
                     "registered runs are committed and no analysis is: nothing here says which reward is better. "
                     f"Once run, the plan predicts 95% intervals {hw[0]:.2f}-{hw[-1]:.2f} points wide on either side "
                     f"for a reward against TTRL or DDRL, which detect differences of {mdes[0]:.2f}-{mdes[-1]:.2f} "
                     "points with 80% power (the registered MDE): a smaller true difference is expected to come out "
                     "*not resolved*."))

# %% [markdown]
# ## 3. A fresh run: TTRL beside another reward
#
# The methods below train on a few questions of the testbed, one seed, and are evaluated on the same questions
# (pass@1 in points). One seed shows the pipeline at work, and whether a reward trains at all; it cannot rank two
# rewards, whose seed-to-seed spread on the testbed is several points. Change `methods` (any row of
# `ddrl/methods.yaml`), `n_adapted` or `episodes` and run again.

# %%
exp = notebook_experiment(model="testbed", testbed_preset=testbed_preset, dataset="testbed_test", data_dir=None,
                          n_adapted=n_adapted, n_heldout=0, seed=seed, paper_settings=None, progress=progress,
                          trainer=dict(episodes=episodes))
df = exp.grid(["no_adaptation", *[m for m in methods if m != "no_adaptation"]], [seed])
pass1 = summarize(df.assign(**{"pass@1": 100 * df["pass@1"]}), "pass@1", by=("method",))
pass1["method"] = pass1["method"].map(words)
rep.table(pass1, "fresh_run")
display(pass1[["method", "seeds", "mean"]].rename(columns={"mean": "pass@1 (points)"}).round(1))
display(Markdown(L.fresh_run_sentence(dict(zip(pass1["method"], pass1["mean"])), words("no_adaptation"), n_adapted)))
rep.metrics({"fresh_pass1": dict(zip(pass1["method"], pass1["mean"])), "runs_committed": int(status["runs committed"].sum())})

# %% [markdown]
# ## Try this
#
# 1. Set `regime = "math500_like"`: the untrained model agrees with itself more there. How does the middle band's
#    spurious share change for each reward?
# 2. Add `"neg_entropy"` to `methods` and rerun section 3: RENT's reward needs the rollouts' token entropies, which
#    the trainer has (the committed answer groups of section 1 do not).
# 3. Write a fifth reward: one function in `ddrl/rewards.py` and one row in `ddrl/methods.yaml`
#    (docs/architecture.md, "Adding a method"), then name it in `methods`.
