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
# # 01 · How reliable is a majority vote? Answer frequency, correctness and Bayes' rule
#
# Test-time RL (TTRL) has no labels. It samples **N = 64** answers per question, takes the most frequent
# answer as the pseudo-label and rewards agreement with it. Whether that reward is right depends on how
# often a *frequent* answer is also a *correct* one.
#
# This notebook reproduces the paper's source-level analysis:
#
# 1. **Fraction correct vs answer frequency** (paper Fig. 2 / Fig. 6): group the N answers of each question
#    by value, and ask how often an answer given by *c* of *N* samples is correct. Rare answers are
#    mostly wrong, near-unanimous ones mostly right, and the middle is an **ambiguity region**.
# 2. **The Bayesian view** (appendix Fig. 5): estimate the class-conditional densities p(x | correct) and
#    p(x | incorrect) of the frequency x = c / N with a Gaussian KDE, turn them into the posterior
#    p(C | x) by Bayes' rule, and decompose its log-odds into a likelihood ratio plus the prior odds.
# 3. The same analysis on **real LLM outputs**: 999 SVAMP problems × 30 samples of code-davinci-002
#    (public Program-of-Thought rollouts, loaded through `ddrl.data`).
#
# All computation is in `ddrl.analysis`; this notebook holds parameters, plots and prose.

# %% tags=["parameters"]
# --- runner (set by `python -m ddrl.run.reproduce`) ---
preset = "default"  # which params/<preset>/ file the runner used
output_dir = "../outputs/interactive"  # figures/, tables/, metrics/ go here
seed = 0  # ddrl.seeds.DEFAULT_SEED: every random draw derives from it
# --- sampling: N answers to each of n_questions questions ---
n_questions = 200  # questions analysed (a prefix of the dataset)
n_samples = 64  # N: samples per question (the paper's 64)
temperature = 1.0  # rollout temperature (TTRL's 1.0)
# --- analysis ---
bands = [[1, 4], [5, 12], [13, 24], [25, 40], [41, 64]]  # frequency bands: inclusive counts out of 64, rescaled for other N
ambiguous_lo = 0.2  # the ambiguity region: where p(correct | x) lies in [ambiguous_lo, ambiguous_hi]
ambiguous_hi = 0.8
kde_bandwidth = None  # gaussian_kde bw_method (None: Scott's rule)
kde_weight = "distinct"  # "distinct" (one point per distinct answer, the paper's unit) or "samples"
svamp = True  # also analyse the real SVAMP Codex rollouts (30 samples each)
# --- the rest: model, dataset, device, ... (ddrl/run/settings.py has each with its default), e.g. {"dataset": "math500"} ---
settings = {}
interactive = True  # ipywidgets controls (presets set False: papermill draws the static figures)
progress = True  # tqdm progress bars

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from ddrl import analysis as an
from ddrl.report import prose as P
from ddrl import paper
from ddrl.report import tables as T
from ddrl.data import DataUnavailable, load_dataset, load_questions, resolve_data_dir
from ddrl.run.experiments import cached_rollouts
from ddrl.run.settings import notebook_settings
from ddrl.report.plotting import color, set_style
from ddrl.report.reporter import Reporter

set_style()
rep = Reporter(output_dir, "01_frequency_and_bayes")
S = notebook_settings("01_frequency_and_bayes", settings)  # knobs the cell does not show (ddrl/run/settings.py), checked
model_name = f"testbed:{S['testbed_preset']}" if S["model"] == "testbed" else S["model"]
data_dir = resolve_data_dir(S["data_dir"])
bands_n = an.scale_bands([tuple(b) for b in bands], 64, n_samples)
print(f"model {model_name}, dataset {S['dataset']}, {n_questions} questions x N={n_samples}; bands {bands_n}")

# %% [markdown]
# ## 1. Sample N answers per question
#
# Each question is chat-formatted (`ddrl.prompts`), sampled N times (`ddrl.sampling`), each response's
# `\boxed{}` answer extracted (`ddrl.answers.extract_boxed`), voted on as the trainer does (`ddrl.voting`:
# equivalent answers form one cluster) and graded against the truth with math-verify
# (`ddrl.answers.grade_answers`, once per distinct answer).
# The result is cached, keyed by the model's weight hashes and every sampling parameter.

# %%
records = load_questions(S["dataset"], n_questions, seed=seed, data_dir=data_dir)
problems = cached_rollouts(model_name, records, S["dataset"], n_samples, temperature=temperature, top_p=S["top_p"],
                             max_new_tokens=S["max_new_tokens"], seed=seed, batch_size=S["batch_size"], cue=S["cue"],
                             backend=S["backend"], device=S["device"], progress=progress)
tb_summary = an.summary(problems)
print({k: round(v, 4) if isinstance(v, float) else v for k, v in tb_summary.items()})

# %% [markdown]
# ## 2. Fraction correct vs answer frequency (paper Fig. 2 / Fig. 6)
#
# Each *distinct* answer of a question is one observation: its frequency x = c / N and whether it is
# correct. We bin by count and show the fraction correct per band with a 95 % Wilson interval; the
# second table counts *samples* instead (what a randomly drawn rollout experiences).

# %%
groups = an.answer_groups(problems)
table = an.frequency_table(groups, bands_n, confidence=S["confidence"])
rep.table(table, "frequency_table_testbed")
display(table.round(3))

# %% [markdown]
# The same on the real SVAMP rollouts (code-davinci-002, N = 30), with the bands rescaled to 30.

# %%
if svamp:
    try:
        sv_records = load_dataset("svamp_codex_rollouts", data_dir=data_dir)[:S["svamp_questions"]]
    except DataUnavailable as e:  # offline and no local copy: say so (batch log, manifest), go on with the testbed
        rep.skipped("SVAMP tables and figures", f"{e}; set DDRL_DATA_DIR (or data_dir) to a folder holding rollouts/, "
                    "or go online", file="svamp_codex_rollouts")  # a damaged file is an error, not a skip
        svamp = False
if svamp:
    sv_problems = an.svamp_problems(sv_records)
    sv_bands = an.scale_bands([tuple(b) for b in bands], 64, 30)
    sv_groups = an.answer_groups(sv_problems)
    sv_table = an.frequency_table(sv_groups, sv_bands, confidence=S["confidence"])
    sv_summary = an.summary(sv_problems)
    rep.table(sv_table, "frequency_table_svamp")
    display(sv_table.round(3))
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in sv_summary.items()})

# %% [markdown]
# ## 3. The Bayesian view (appendix Fig. 5)
#
# With C = "this answer is correct" and x its frequency,
#
# $$p(C\mid x)=\frac{p(x\mid C)\,p(C)}{p(x\mid C)\,p(C)+p(x\mid\neg C)\,p(\neg C)},\qquad
# \log\frac{p(C\mid x)}{1-p(C\mid x)}=\underbrace{\log\frac{p(x\mid C)}{p(x\mid\neg C)}}_{\text{evidence}}
# +\underbrace{\log\frac{p(C)}{p(\neg C)}}_{\text{prior}}.$$
#
# The densities are Gaussian KDEs (`scipy.stats.gaussian_kde`, reflected at 0 and 1 so no mass leaks past
# the edges). The **ambiguity region** is where the posterior lies in [`ambiguous_lo`, `ambiguous_hi`]; the
# derivative of the log-odds in x shows where one more agreeing sample changes our belief most.
#
# **Where the KDE can be trusted.** A ratio of two densities is only as good as the scarcer of them. Where one
# class has (almost) no answers, for instance wrong answers sampled by more than half of the 64 rollouts, its
# "density" is just the tail of Gaussian kernels centred elsewhere, and the log of a tail falls like a parabola:
# the log-odds then climb steeply and wiggle with single answers, an artefact of the kernel, not evidence. So
# the region, the 0.5 crossing and the steepest rise are read only where **both** classes have at least 5 answers
# within ±0.05 of x (`ddrl.analysis.supported`); the figures hatch the rest.

# %%
def _bayes(g):
    try:
        return an.bayes_analysis(g, bw_method=kde_bandwidth, lo=ambiguous_lo, hi=ambiguous_hi, weight=kde_weight)
    except ValueError as e:  # e.g. a class with fewer than two distinct frequencies (tiny smoke runs)
        print(f"Bayes analysis skipped: {e}")
        return None


bayes = {"testbed" if S["model"] == "testbed" else model_name: _bayes(groups)}
if svamp:
    bayes["SVAMP (Codex)"] = _bayes(sv_groups)
for name, b in bayes.items():
    if b is not None:
        print(f"{name}: prior p(C) = {b['prior']:.3f}, p(C|x) crosses 0.5 at x = {b['crossing']:.3f}, "
              f"ambiguity region {[(round(a, 3), round(z, 3)) for a, z in b['region']]}, both classes have "
              f"answers for x in {b['support']}")

# %%
tables = {list(bayes)[0]: (table, n_samples)}
if svamp:
    tables["SVAMP (Codex)"] = (sv_table, 30)


def hatch_unsupported(ax, c, label=False):
    """Hatch the x where one class has fewer than 5 answers nearby (the KDE ratio is a kernel tail there)."""
    x, ok = c["x"].to_numpy(), c["supported"].to_numpy()
    step = x[1] - x[0]
    runs = an.ambiguous_region(x, np.where(ok, 0.0, 1.0), 0.5, 1.0)  # the unsupported stretches
    for i, (a, z) in enumerate(runs):
        ax.axvspan(a - step / 2, z + step / 2, facecolor="none", edgecolor="0.6", hatch="//", lw=0,
                   label="one class too sparse: KDE tail" if label and i == 0 else None)


def draw_frequency(tables, bayes, lo=ambiguous_lo, hi=ambiguous_hi):
    """Fig. 2 / 6: fraction correct per frequency band (CI band), the KDE posterior, the ambiguity region."""
    fig, axes = plt.subplots(1, len(tables), figsize=(5.5 * len(tables), 4), squeeze=False)
    for ax, (name, (tab, n)) in zip(axes[0], tables.items()):
        mid = tab["x_mean"].where(tab["n_distinct"] > 0, (tab["lo"] + tab["hi"]) / 2 / n)
        ax.fill_between(mid, tab["ci_low"], tab["ci_high"], color=color("correct"), alpha=0.2,
                        label=f"{int(S['confidence'] * 100)}% Wilson CI")
        ax.plot(mid, tab["frac_correct"], "o-", color=color("correct"), label="fraction correct (binned)")
        for m, f, k in zip(mid, tab["frac_correct"], tab["n_distinct"]):
            if np.isfinite(f):
                ax.annotate(f"n={k}", (m, f), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=7)
        b = bayes.get(name)
        if b is not None:
            c = b["curves"]
            ax.plot(c["x"], c["posterior"].where(c["supported"]), "--", color="black", lw=1.2,
                    label="p(C | x), KDE + Bayes")
            region = an.ambiguous_region(c["x"].to_numpy(), c["posterior"].where(c["supported"]).to_numpy(), lo, hi)
            for i, (a, z) in enumerate(region):
                ax.axvspan(a, z, color="grey", alpha=0.2, label="ambiguity region" if i == 0 else None)
            hatch_unsupported(ax, c)
        ax.axhline(lo, color="grey", lw=0.6, ls=":")
        ax.axhline(hi, color="grey", lw=0.6, ls=":")
        ax.set(xlim=(0, 1), ylim=(-0.02, 1.02), xlabel=f"answer frequency x = count / N (N = {n})",
               ylabel="fraction of answers that are correct", title=name)
    axes[0][0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


fig = draw_frequency(tables, bayes)
fig_data = pd.concat([t.assign(dataset=name, N=n) for name, (t, n) in tables.items()])
rep.figure(fig, "frequency_vs_correct", data=fig_data)

# %% [markdown]
# **What to look for.** Read each panel from left to right. Rare answers (small x) should be mostly wrong and
# near-unanimous ones mostly right; the bands whose fraction correct lies between the dotted lines are the
# medium-frequency regime where a majority label is least trustworthy (the grey span, read off the dashed KDE
# posterior). The shaded band is the 95% Wilson interval: a dot with a small n above it says little.

# %%
def draw_bayes(bayes):
    """Appendix Fig. 5: densities, log-odds decomposition and its derivative, one column per dataset."""
    items = [(k, b) for k, b in bayes.items() if b is not None]
    fig, axes = plt.subplots(3, max(len(items), 1), figsize=(5.5 * max(len(items), 1), 9), squeeze=False, sharex=True)
    for j, (name, b) in enumerate(items):
        c = b["curves"]
        ax = axes[0][j]
        ax.plot(c["x"], c["p_x_c"], color=color("correct"), label="p(x | correct)")
        ax.plot(c["x"], c["p_x_nc"], color=color("incorrect"), label="p(x | incorrect)")
        ax.set(ylabel="density", title=f"{name}: p(C) = {b['prior']:.2f}")
        hatch_unsupported(ax, c, label=True)
        ax.legend(fontsize=8)
        ax = axes[1][j]
        ax.plot(c["x"], c["log_likelihood_ratio"], label="log p(x|C)/p(x|¬C)")
        ax.plot(c["x"], c["log_prior_odds"], ls=":", label="log p(C)/p(¬C)")
        ax.plot(c["x"], c["log_posterior_odds"], color="black", label="log-odds of p(C|x)")
        ax.axhline(0, color="grey", lw=0.6)
        for a, z in b["region"]:
            ax.axvspan(a, z, color="grey", alpha=0.2)
        hatch_unsupported(ax, c)
        ax.set(ylabel="log-odds", ylim=(-8, 8))
        ax.legend(fontsize=8)
        ax = axes[2][j]
        ax.plot(c["x"], c["d_log_odds_dx"].where(c["supported"]), color="tab:purple",
                label="where both classes have answers")
        ax.plot(c["x"], c["d_log_odds_dx"].where(~c["supported"]), color="tab:purple", lw=0.8, alpha=0.35,
                label="elsewhere (kernel tails)")
        if np.isfinite(b["steepest"]):
            ax.axvline(b["steepest"], color="tab:purple", ls=":", lw=0.8)
        inside = c["d_log_odds_dx"][c["supported"]]
        if len(inside):
            pad = 0.25 * (inside.max() - inside.min() + 1)
            ax.set_ylim(inside.min() - pad, inside.max() + pad)  # the tails' slopes run off the panel
        hatch_unsupported(ax, c)
        ax.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1, 1), ncol=2)  # above the panel: its lines fill it
        ax.set(xlabel="answer frequency x", ylabel="d/dx log-odds")
    fig.tight_layout()
    return fig


if any(b is not None for b in bayes.values()):
    fig = draw_bayes(bayes)
    curves = pd.concat([b["curves"].assign(dataset=k) for k, b in bayes.items() if b is not None])
    rep.figure(fig, "bayes_decomposition", data=curves)

# %% [markdown]
# **What to look for.** Top row: where p(x | correct) overtakes p(x | incorrect), a frequency starts to favour
# "correct". Middle row: the log-posterior odds are the log-likelihood ratio shifted by the (constant) log-prior
# odds, so a low prior moves the 50% crossing to higher x. Bottom row: the peak of the derivative (dotted line),
# read where both classes have answers, is the frequency at which one more agreeing sample changes the belief
# most; it is read at least 0.05 inside the unhatched stretch, since a slope needs answers on both sides of x.
# In the hatched stretches the curves go on, but they show the kernels' tails: on the testbed the slope there runs
# off the panel and the log-odds wiggle with single answers. Even inside, the slope's smaller peaks and dips are
# wiggles of the KDE (a few answers each, and a derivative doubles a density's noise): read its trend, and the
# tallest peak only where it stands well above the rest.

# %% [markdown]
# ## 4. Try it yourself (interactive)
#
# In JupyterLab the controls below redraw the figure: **N** re-runs the analysis on the first N of the
# cached samples (bands rescaled), and the two thresholds move the ambiguity region. Under papermill
# (`interactive = False`) the static figure above stands in.

# %%
def explore(N=n_samples, lo=ambiguous_lo, hi=ambiguous_hi, bandwidth=0.0):
    sub = an.subsample(problems, N)
    g = an.answer_groups(sub)
    t = an.frequency_table(g, an.scale_bands([tuple(b) for b in bands], 64, N), confidence=S["confidence"])
    try:
        b = an.bayes_analysis(g, bw_method=bandwidth or None, lo=lo, hi=hi, weight=kde_weight)
    except ValueError:
        b = None
    name = list(tables)[0]
    draw_frequency({f"{name}, N = {N}": (t, N)}, {f"{name}, N = {N}": b}, lo, hi)
    plt.show()


if interactive:
    try:
        import ipywidgets as W

        W.interact(explore, N=W.IntSlider(value=n_samples, min=4, max=n_samples, step=2),
                   lo=W.FloatSlider(value=ambiguous_lo, min=0.0, max=0.5, step=0.05),
                   hi=W.FloatSlider(value=ambiguous_hi, min=0.5, max=1.0, step=0.05),
                   bandwidth=W.FloatSlider(value=0.0, min=0.0, max=0.5, step=0.02, description="bw (0=Scott)"))
    except ImportError:
        explore()

# %% [markdown]
# ## 5. Paper vs measured
#
# The paper prints no numbers for its frequency figures; its appendix (on 933 AIME problems, 64 samples
# each) calls counts **≤ 5** and **≥ 45** of 64 the reliable regions and the counts between them ambiguous.
# Below: those bounds beside the ones our KDE posterior gives (the ends of the ambiguity region, as counts
# of 64), and, in the paper's three bands, the fraction of answers that are correct here, with whether the
# testbed has the direction the paper describes (frequent answers correct more often than rare ones).

# %%
first, last = table.iloc[0], table.iloc[-1]
b_tb = bayes[list(bayes)[0]]
lo_c, hi_c = paper.value(("band", "reliable_low_max_count")), paper.value(("band", "reliable_high_min_count"))
paper_bands = an.scale_bands([(1, lo_c), (lo_c + 1, hi_c - 1), (hi_c, 64)], 64, n_samples)
paper_band_table = an.frequency_table(groups, paper_bands, confidence=S["confidence"])
rows = [
    ("N, samples per question", ("setting", "n_votes"), n_samples),
    (f"reliable low-frequency band ends at count (of 64); measured: where p(C|x) rises above {ambiguous_lo}",
     ("band", "reliable_low_max_count"), 64 * b_tb["region"][0][0] if b_tb and b_tb["region"] else None),
    (f"reliable high-frequency band starts at count (of 64); measured: where p(C|x) rises above {ambiguous_hi}",
     ("band", "reliable_high_min_count"), 64 * b_tb["region"][-1][1] if b_tb and b_tb["region"] else None),
    (f"fraction correct, rarest band ({first['band']} of {n_samples})", None, first["frac_correct"]),
    (f"fraction correct, most frequent band ({last['band']} of {n_samples})", None, last["frac_correct"]),
    ("majority-vote accuracy (testbed)", None, tb_summary["maj_accuracy"]),
    ("mean single-sample accuracy (testbed)", None, tb_summary["mean_accuracy"]),
]
if svamp:
    rows += [("majority-vote accuracy (SVAMP Codex, N=30)", None, sv_summary["maj_accuracy"]),
             ("mean single-sample accuracy (SVAMP Codex)", None, sv_summary["mean_accuracy"])]
cmp = paper.compare(rows)
rep.table(cmp, "paper_vs_measured")
display(cmp[["quantity", "paper", "measured", "where"]])

# The direction the paper describes (no number printed): high band correct more often than the low band.
b_lo, b_hi = paper_band_table.iloc[0], paper_band_table.iloc[-1]
band_dir = pd.DataFrame([{
    "difference": f"fraction correct, counts {b_hi['band']} − counts {b_lo['band']} (of {n_samples})",
    "paper": "> 0 (Fig. 2, App. C; no number printed)",
    "measured": b_hi["frac_correct"] - b_lo["frac_correct"],
    "direction reproduced": T.direction_reproduced(+1, (b_hi["frac_correct"], b_hi["ci_low"], b_hi["ci_high"]),
                                                   (b_lo["frac_correct"], b_lo["ci_low"], b_lo["ci_high"])),
}])
rep.table(paper_band_table, "frequency_table_paper_bands")
rep.table(band_dir, "paper_band_direction")
display(paper_band_table.round(3))
display(band_dir)
display(Markdown(f"{band_dir.loc[0, 'difference']}: the paper says positive, the testbed measures "
                 f"{band_dir.loc[0, 'measured']:+.3f} with Wilson intervals, "
                 f"{T.DIRECTION_WORDS[band_dir.loc[0, 'direction reproduced']]}."))

# %%
def band_metrics(t, prefix):
    return {f"{prefix}frac_correct_{r['band']}": r["frac_correct"] for _, r in t.iterrows()} | \
           {f"{prefix}ci_low_{r['band']}": r["ci_low"] for _, r in t.iterrows()} | \
           {f"{prefix}ci_high_{r['band']}": r["ci_high"] for _, r in t.iterrows()} | \
           {f"{prefix}n_distinct_{r['band']}": int(r["n_distinct"]) for _, r in t.iterrows()}


def bayes_metrics(b, prefix):
    if b is None:
        return {f"{prefix}bayes_available": False}
    return {f"{prefix}bayes_available": True, f"{prefix}prior": b["prior"], f"{prefix}crossing": b["crossing"],
            f"{prefix}region": [list(r) for r in b["region"]], f"{prefix}support": b["support"],
            f"{prefix}max_slope_x": b["steepest"]}


metrics = {"model": model_name, "dataset": S["dataset"], "n_questions": len(problems), "n_samples": n_samples,
           "bands": [list(b) for b in bands_n], "ambiguous_lo": ambiguous_lo, "ambiguous_hi": ambiguous_hi,
           **{f"testbed_{k}": v for k, v in tb_summary.items()}, **band_metrics(table, "testbed_"),
           **bayes_metrics(b_tb, "testbed_"),
           "testbed_ambiguous_bands": an.ambiguous_bands(table, ambiguous_lo, ambiguous_hi),
           "paper_bands_frac_correct": dict(zip(paper_band_table["band"], paper_band_table["frac_correct"])),
           "paper_band_direction": band_dir.loc[0, "direction reproduced"]}
if svamp:
    metrics |= {**{f"svamp_{k}": v for k, v in sv_summary.items()}, **band_metrics(sv_table, "svamp_"),
                **bayes_metrics(bayes["SVAMP (Codex)"], "svamp_"),
                "svamp_bands": [list(b) for b in sv_bands],
                "svamp_ambiguous_bands": an.ambiguous_bands(sv_table, ambiguous_lo, ambiguous_hi)}
rep.metrics(metrics)

# %% [markdown]
# ## What we measured
#
# Generated from `metrics` (nothing below is typed in by hand).

# %%
def shape_sentence(t, name, n, lo, hi):
    """Does the binned curve have the paper's shape: rare answers mostly wrong, frequent ones mostly right,
    a middle band in between?"""
    valid = t[t["n_distinct"] > 0]
    if len(valid) < 2:
        return f"On {name} too few bands are populated to judge the curve's shape."
    r, f = valid.iloc[0], valid.iloc[-1]
    mono = bool(np.all(np.diff(valid["frac_correct"].to_numpy()) >= -0.05))
    amb = an.ambiguous_bands(t, lo, hi)
    s = (f"On {name} (N = {n}), answers given by {r['band']} of {n} samples are correct "
         f"{r['frac_correct']:.0%} of the time (95% CI {r['ci_low']:.0%}-{r['ci_high']:.0%}, {int(r['n_distinct'])} answers), "
         f"answers given by {f['band']} of {n} samples {f['frac_correct']:.0%} "
         f"({f['ci_low']:.0%}-{f['ci_high']:.0%}, {int(f['n_distinct'])} answers). ")
    agrees = r["frac_correct"] < lo and f["frac_correct"] > hi and len(amb) > 0
    if agrees:
        s += (f"The bands {', '.join(amb)} have a fraction correct between {lo:.0%} and {hi:.0%}: the ambiguity "
              f"region. This agrees with the paper's finding that rare answers are mostly wrong, frequent answers "
              f"mostly right and medium-frequency answers ambiguous.")
    else:
        why = []
        if not r["frac_correct"] < lo:
            why.append(f"the rarest band is correct more often than {lo:.0%}")
        if not f["frac_correct"] > hi:
            why.append(f"the most frequent band is correct at most {hi:.0%} of the time")
        if not amb:
            why.append(f"no band lies between {lo:.0%} and {hi:.0%}")
        s += "This departs from the paper's three-regime picture: " + "; ".join(why) + "."
    s += " The binned curve is " + ("monotone (within 5 points)." if mono else "not monotone.")
    return s


def bayes_sentence(m, prefix, name):
    if not m.get(f"{prefix}bayes_available"):
        return f"The KDE/Bayes analysis could not be run on {name} (too few distinct frequencies in a class)."
    if m[f"{prefix}support"] is None:
        return (f"On {name} no frequency has at least 5 correct and 5 wrong answers nearby: the KDE posterior there is "
                "kernel tails, and this notebook reads nothing off it.")
    a, z = m[f"{prefix}support"]
    region = P.join_words([f"{r0:.2f}-{r1:.2f}" for r0, r1 in m[f"{prefix}region"]]) or "nowhere"
    pieces = len(m[f"{prefix}region"])
    shape = "" if pieces <= 1 else f" ({P.count_words(pieces, 'separate stretch', 'separate stretches')})"
    return (f"On {name}, a distinct answer is correct with prior probability {m[f'{prefix}prior']:.2f}. Both classes "
            f"have answers for x from {a:.2f} to {z:.2f}; there, the KDE posterior p(C | x) crosses 0.5 at "
            f"x = {m[f'{prefix}crossing']:.2f}, lies within [{ambiguous_lo}, {ambiguous_hi}] for x in {region}{shape}, "
            f"and its log-odds rise fastest at x = {m[f'{prefix}max_slope_x']:.2f}, where one more agreeing sample "
            "moves the belief most.")


lines = [shape_sentence(table, "the " + ("testbed" if S["model"] == "testbed" else model_name), n_samples, ambiguous_lo, ambiguous_hi),
         bayes_sentence(metrics, "testbed_", "the testbed" if S["model"] == "testbed" else model_name)]
if svamp:
    lines += [shape_sentence(sv_table, "the SVAMP Codex rollouts", 30, ambiguous_lo, ambiguous_hi),
              bayes_sentence(metrics, "svamp_", "SVAMP")]
lines.append(
    f"The majority vote is right on {metrics['testbed_maj_accuracy']:.0%} of the testbed questions against a single-sample "
    f"accuracy of {metrics['testbed_mean_accuracy']:.0%}"
    + (f" (SVAMP: {metrics['svamp_maj_accuracy']:.0%} vs {metrics['svamp_mean_accuracy']:.0%})." if svamp else ".")
    + f" The paper's appendix calls counts up to {paper.fmt(('band', 'reliable_low_max_count'))} and from "
    f"{paper.fmt(('band', 'reliable_high_min_count'))} of 64 reliable (on AIME, with its own models); the table above "
    "sets our posterior's bounds beside those.")
display(Markdown("\n\n".join(lines)))

# %% [markdown]
# ## Try this
#
# 1. Lower N with the slider (or `-p n_samples 16`). Does the ambiguity region move, widen or shrink? Why
#    does a smaller N make the *frequency* of a wrong answer noisier?
# 2. Set `temperature` to 0.6 and 1.2. How do the prior p(C) and the posterior's crossing point change?
# 3. Switch `kde_weight` to `"samples"`. Which of the two units (distinct answers or samples) matches what a
#    rollout experiences during TTRL training?
# 4. The log-odds decomposition says the prior only shifts the curve. On a harder dataset (lower p(C)),
#    would you need a higher frequency before trusting a pseudo-label? Check with SVAMP vs the testbed.
# 5. DDRL's BCS keeps only the most frequent (positive) and least frequent (negative) rollouts. Using the
#    figure, which bands does it keep, and which does it discard?
