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
# # 02 · How GRPO amplifies spurious rewards (paper Fig. 3a, Table 1)
#
# TTRL trains on K = 32 of the N = 64 rollouts of a question with GRPO's group-relative advantage
# A_i = (r_i − mean r) / (std r + ε). With binary rewards and m positives out of K, every positive gets
#
# $$A^+ = \frac{1-m/K}{s+\varepsilon},\qquad A^- = -\frac{m/K}{s+\varepsilon},\qquad
# s=\sqrt{\frac{m(K-m)}{K(K-1)}}.$$
#
# **Few positives → a huge positive advantage.** In supervised RL a rare success deserves that. In
# test-time RL the "positives" are the rollouts that agree with the majority vote, and few of them means
# a *low-consensus* vote, the kind that is most often wrong (notebook 01). GRPO therefore pushes hardest
# exactly where the pseudo-label is least reliable. DDRL's debiased advantage (DAE) uses fixed +1 / −1.
#
# This notebook shows (1) the closed form beside `ddrl.advantages` (Fig. 3a), (2) on real testbed
# rollouts, how much advantage lands on wrong pseudo-labels, by consensus level, and (3) the Table 1
# experiment, GRPO vs "GRPO (w/o norm.)", trained on the testbed with `ddrl.train`, in both readings of
# that row (see section 3).

# %% tags=["parameters"]
# --- runner (set by `python -m ddrl.run.reproduce`) ---
preset = "default"  # which params/<preset>/ file the runner used
output_dir = "../outputs/interactive"  # figures/, tables/, metrics/ go here
seed = 0  # ddrl.seeds.DEFAULT_SEED
# --- Fig. 3a: GRPO's advantages on notebook 01's cached rollouts (n_questions x N, voted; K of them trained) ---
k = 32  # K: rollouts per group that are trained on
eps = 1e-6  # GRPO's epsilon in the std denominator
selection = "random"  # which K of N are trained: "random" (TTRL) or "bcs" (DDRL)
bands = [[1, 4], [5, 12], [13, 24], [25, 40], [41, 64]]  # consensus bands: label counts out of 64, rescaled for other N
n_questions = 200  # questions
n_samples = 64  # N: rollouts per question for the vote
# --- Table 1 (GRPO vs GRPO w/o norm., trained on the testbed) ---
table1 = True  # run the training runs (cached): GRPO and both readings of "w/o norm."
table1_readings = ["grpo_no_std", "dae"]  # reading A (caption: r - mean r), reading B (text: fixed ±1, no BCS)
table1_questions = 32  # test questions adapted to (and evaluated on)
table1_episodes = 2  # passes over those questions
table1_lr = 3e-5  # learning rate (the trainer's testbed default)
# --- the rest: model, dataset, sampling, Table 1's N and K, ... (ddrl/run/settings.py), e.g. {"table1_k_train": 16} ---
settings = {}
interactive = True  # ipywidgets controls (presets set False)
progress = True  # tqdm progress bars

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from ddrl import analysis as an
from ddrl import paper
from ddrl.report import prose as P
from ddrl.report import tables as T
from ddrl.data import load_questions, resolve_data_dir
from ddrl.run.experiments import cached_rollouts, train_and_evaluate
from ddrl.run.settings import notebook_settings
from ddrl.report.plotting import color, set_style
from ddrl.report.reporter import Reporter
from ddrl.infra.storage import cache_root

set_style()
rep = Reporter(output_dir, "02_grpo_amplification")
S = notebook_settings("02_grpo_amplification", settings)  # knobs the cell does not show (ddrl/run/settings.py), checked
model_name = f"testbed:{S['testbed_preset']}" if S["model"] == "testbed" else S["model"]
data_dir = resolve_data_dir(S["data_dir"])

# %% [markdown]
# ## 1. Advantage vs number of positives (Fig. 3a): closed form and `ddrl.advantages`

# %%
curves = an.advantage_curves(k, ("grpo", "grpo_no_std", "fixed"))
max_gap = float(np.max(np.abs(curves[["closed_pos", "closed_neg"]].to_numpy()
                              - curves[["measured_pos", "measured_neg"]].to_numpy())))
print(f"max |closed form - ddrl.advantages| over m = 1..{k - 1}: {max_gap:.2e}")


def draw_fig3a(k, m_mark=None, eps=eps):
    c = an.advantage_curves(k, ("grpo", "grpo_no_std", "fixed"))
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")  # makes room for the legend below the x label
    for est, ls, name in (("grpo", "-", "ttrl"), ("grpo_no_std", "--", "grpo_no_std"), ("fixed", ":", "dae")):
        part = c[c["estimator"] == est]
        what = {"grpo": "GRPO", "grpo_no_std": "GRPO w/o norm.", "fixed": "fixed (DAE)"}[est]
        ax.plot(part["m"], part["closed_pos"], ls, color=color("positive"), label=f"{what}: positive")
        ax.plot(part["m"], part["closed_neg"], ls, color=color("negative"), label=f"{what}: negative")
        ax.plot(part["m"], part["measured_pos"], ".", color=color("positive"), ms=3)
        ax.plot(part["m"], part["measured_neg"], ".", color=color("negative"), ms=3)
    if m_mark is not None:
        a_pos, a_neg = an.grpo_closed_form(m_mark, k, eps)
        ax.axvline(m_mark, color="grey", lw=0.8)
        ax.annotate(f"m={m_mark}: A+={float(a_pos):.2f}, A-={float(a_neg):.2f}", (m_mark, float(a_pos)),
                    textcoords="offset points", xytext=(8, 8), fontsize=8)
    ax.axhline(0, color="grey", lw=0.6)
    ax.set(xlabel=f"positives m out of K = {k}", ylabel="advantage", title="Fig. 3a: advantage vs positives")
    fig.legend(fontsize=7, ncol=3, loc="outside lower center")
    return fig


fig = draw_fig3a(k)
rep.figure(fig, "fig3a_advantage_vs_positives", data=curves)

# %% [markdown]
# **What to look for.** GRPO's advantage of a positive rollout grows as m, the number of positives among K,
# shrinks (largest at m = 1): the fewer rollouts agree with the label, the harder each is pushed, and low
# agreement is where wrong labels are common. Fixed (DAE) advantages stay at +1 and −1 for every m. The dots
# lying on the lines check `ddrl.advantages` against the closed form.

# %% [markdown]
# Dots: `ddrl.advantages` on a group with m ones; lines: the closed form. Try the controls below (K, m).

# %%
if interactive:
    try:
        import ipywidgets as W

        def _explore(K=k, m=1, eps_exp=-6):
            draw_fig3a(K, min(m, K - 1), 10.0 ** eps_exp)
            plt.show()

        W.interact(_explore, K=W.IntSlider(value=k, min=4, max=128, step=2),
                   m=W.IntSlider(value=1, min=1, max=127), eps_exp=W.IntSlider(value=-6, min=-8, max=0))
    except ImportError:
        pass

# %% [markdown]
# ## 2. Measured: where does the advantage go on real rollouts?
#
# The testbed's N = 64 rollouts per question (cached; the same as notebook 01). For each question the
# pseudo-label is the majority vote over all 64, K = 32 rollouts are selected (`selection`), and each
# gets its pseudo-reward and advantage. Knowing the truth we can split groups by whether the
# pseudo-label is right.

# %%
records = load_questions(S["dataset"], n_questions, seed=seed, data_dir=data_dir)
problems = cached_rollouts(model_name, records, S["dataset"], n_samples, temperature=S["temperature"], top_p=S["top_p"],
                             max_new_tokens=S["max_new_tokens"], seed=seed, batch_size=S["batch_size"], cue=S["cue"],
                             backend=S["backend"], device=S["device"], progress=progress)
adv = an.group_advantages(problems, k, ("grpo", "grpo_no_std", "fixed"), selection=selection, seed=seed)
by_label = an.advantage_by_label(adv, ("grpo", "grpo_no_std", "fixed"))
rep.table(by_label, "positive_advantage_by_label")
display(by_label.round(3))

# %%
bands_n = an.scale_bands([tuple(b) for b in bands], 64, n_samples)
mass = an.advantage_mass_by_consensus(adv, bands_n, ("grpo", "grpo_no_std", "fixed"))
rep.table(mass, "advantage_mass_by_consensus")
display(mass.round(3))


def draw_mass(mass, adv):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    x = np.arange(len(mass))
    ax = axes[0]
    for j, (est, name) in enumerate((("grpo", "ttrl"), ("grpo_no_std", "grpo_no_std"), ("fixed", "dae"))):
        ax.bar(x + (j - 1) * 0.27, mass[f"pos_mass_wrong_share_{est}"], width=0.27, color=color(name),
               label={"grpo": "GRPO", "grpo_no_std": "GRPO w/o norm.", "fixed": "fixed ±1"}[est])
    ax.plot(x, mass["wrong_label_share"], "kD", label="share of groups with a wrong label")
    ax.set_xticks(x, [f"{b}\n({g} groups)" for b, g in zip(mass["band"], mass["groups"])])
    ax.set(xlabel=f"consensus: label count out of N = {n_samples}", ylabel="share",
           title="positive advantage mass on wrong pseudo-labels", ylim=(0, 1.05))
    ax.legend(fontsize=8)
    ax = axes[1]
    mixed = adv.groupby("problem").filter(lambda g: 0 < g["reward"].sum() < len(g))
    m_per = mixed.groupby("problem").agg(m=("reward", "sum"), right=("label_correct", "first"))
    bins = np.arange(0.5, k + 1, 1)
    ax.hist([m_per.loc[m_per["right"], "m"], m_per.loc[~m_per["right"], "m"]], bins=bins, stacked=True,
            color=[color("correct"), color("incorrect")], label=["label right", "label wrong"])
    ax2 = ax.twinx()
    mm = np.arange(1, k)
    ax2.plot(mm, an.grpo_closed_form(mm, k)[0], color="black", lw=1, label="GRPO A+ (closed form)")
    ax2.set_ylabel("GRPO advantage of a positive")
    ax2.grid(False)
    ax.set(xlabel=f"positives m among the K = {k} trained rollouts", ylabel="groups",
           title="where the groups are, and what GRPO pays them")
    ax.legend(loc="upper center", fontsize=8)
    ax2.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


fig = draw_mass(mass, adv)
rep.figure(fig, "advantage_mass_by_consensus", data=mass)

# %% [markdown]
# **What to look for.** Left: in each consensus band, compare the three bars (the share of positive advantage mass
# that lands on wrong labels) with the diamond (the share of groups whose label is wrong): a bar above its diamond
# means the estimator pays wrong labels more than their share. Right: where the mixed groups sit in m, coloured
# by whether their label is right, under GRPO's payment per positive (line).

# %% [markdown]
# ## 3. Table 1: GRPO vs GRPO without normalisation, trained on the testbed
#
# The paper's Table 1 (Qwen2.5-Math-1.5B, TTRL) compares GRPO with "GRPO (w/o norm.)". Its caption says
# that row "removes the advantage normalization in GRPO"; its text calls it "a simple fixed advantage
# scheme" with "constant, label-dependent values". The two are different estimators, so we run both:
#
# | row here | reading | advantage of a rollout with pseudo-reward r | trainer preset |
# |---|---|---|---|
# | GRPO (TTRL) | the paper's GRPO row | (r − mean r) / (std r + ε) | `ttrl` |
# | w/o norm. A | the caption: normalisation removed | r − mean r | `grpo_no_std` |
# | w/o norm. B | the text: fixed, label-dependent | +1 / −1 on the same random K (no BCS) | `dae` |
#
# Short test-time RL runs with `ddrl.train` that differ only in the advantage, then pass@1 and maj@n on
# the adapted questions (`ddrl.evaluate`). Runs are cached; at testbed scale they take a few minutes on CPU.
# The paper's numbers (in %, on AIME 2024 and MATH-500) stand beside ours for reference; both of its
# readings get the same printed "w/o norm." numbers, since the paper ran only one of them.

# %%
t1_rows = []
if table1:
    t1_records = load_questions(S["dataset"], table1_questions, seed=seed, data_dir=data_dir)
    common = dict(model=model_name, seed=seed, episodes=table1_episodes, prompts_per_step=S["table1_prompts_per_step"],
                  n_votes=S["table1_n_votes"], k_train=S["table1_k_train"], lr=table1_lr, max_new_tokens=S["max_new_tokens"],
                  sample_batch_size=S["batch_size"], device=S["device"])
    run_root = str(cache_root() / "runs" / "02_table1")
    before = train_and_evaluate("no_adaptation", t1_records, run_root, eval_n=S["table1_eval_n"], progress=progress,
                                   **{**common, "episodes": 0})
    for p in ["ttrl", *table1_readings]:
        t1_rows.append(train_and_evaluate(p, t1_records, run_root, eval_n=S["table1_eval_n"], progress=progress, **common))
    t1_names = {"no_adaptation": "No adaptation", "ttrl": "GRPO (TTRL)", **T.TABLE1_READINGS}
    t1_paper_row = {"no_adaptation": None, "ttrl": "grpo", "grpo_no_std": "grpo_no_norm", "dae": "grpo_no_norm"}
    table_1 = pd.DataFrame([{"row": t1_names[r["preset"]], "trainer preset": r["preset"],
                             "pass@1 (measured, points)": round(100 * r["pass@1"], 1),
                             f"maj@{S['table1_eval_n']} (measured, points)": round(100 * r["maj@n"], 1),
                             "steps": r["steps"], "rl_seconds": r["rl_seconds"]} for r in [before] + t1_rows])
    for bench in ("AIME 2024", "MATH-500"):  # the paper's Table 1: Qwen2.5-Math-1.5B, pass@1 in %
        table_1[f"paper pass@1 % ({bench})"] = [
            T.paper_cell(None if t1_paper_row[r["preset"]] is None else
                         paper.value(("table1", "Qwen2.5-Math-1.5B", bench, t1_paper_row[r["preset"]])), ".1f")
            for r in [before] + t1_rows]
    rep.table(table_1, "table1_grpo_vs_no_norm")
    display(table_1.round(3))

    # The difference the paper reports, w/o norm. - GRPO > 0 on both benchmarks: does the testbed have its sign?
    t1_measured = {r["preset"]: (100 * r["pass@1"], float("nan"), float("nan")) for r in t1_rows}  # points; one seed: no interval
    t1_dirs = []
    for bench in ("AIME 2024", "MATH-500"):
        pv = {p: paper.value(("table1", "Qwen2.5-Math-1.5B", bench, t1_paper_row[p])) for p in ["ttrl", *table1_readings]}
        d = T.direction_table([(p, "ttrl") for p in table1_readings], pv, t1_measured, labels=t1_names.get,
                              paper_unit="points", measured_unit="points")
        d["difference"] = d["difference"] + f" (paper: {bench})"
        t1_dirs.append(d)
    table_1_dir = pd.concat(t1_dirs, ignore_index=True)
    rep.table(table_1_dir, "table1_directions")
    display(table_1_dir)
    display(Markdown(" ".join(T.direction_sentences(table_1_dir))))

# %% [markdown]
# ## 4. Paper vs measured

# %%
a1 = float(an.grpo_closed_form(1, k)[0])
a_half = float(an.grpo_closed_form(k // 2, k)[0])
right = by_label.set_index("pseudo_label").reindex(["right", "wrong"])
overall = an.advantage_mass_by_consensus(adv, ((1, n_samples),), ("grpo", "grpo_no_std", "fixed")).iloc[0]
rows = [
    ("K, trained rollouts per group", ("setting", "k_train"), k),
    (f"GRPO advantage of the single positive (m=1 of {k}; Fig. 3a plots it without printing values)", None, a1),
    (f"GRPO advantage of a positive at m={k // 2} of {k}", None, a_half),
    ("mean GRPO A+ of positives, wrong pseudo-label (testbed)", None, right.loc["wrong", "mean_pos_adv_grpo"]),
    ("mean GRPO A+ of positives, right pseudo-label (testbed)", None, right.loc["right", "mean_pos_adv_grpo"]),
    ("share of positive GRPO mass on wrong labels (testbed)", None, overall["pos_mass_wrong_share_grpo"]),
    ("share of positive fixed-advantage mass on wrong labels (testbed)", None, overall["pos_mass_wrong_share_fixed"]),
]
for r in t1_rows:
    for bench in ("AIME 2024", "MATH-500"):
        rows.append((f"Table 1 pass@1 % after {t1_names[r['preset']]} (testbed; paper: {bench})",
                     ("table1", "Qwen2.5-Math-1.5B", bench, t1_paper_row[r["preset"]]), 100 * r["pass@1"]))
cmp = paper.compare(rows)
rep.table(cmp, "paper_vs_measured")
display(cmp[["quantity", "paper", "measured", "where"]])

# %%
metrics = {
    "k": k, "closed_vs_ddrl_max_gap": max_gap, "grpo_pos_adv_m1": a1, f"grpo_pos_adv_m{k // 2}": a_half,
    "grpo_pos_adv_half": a_half, "amplification_m1_over_half": a1 / a_half,
    "n_questions": len(problems), "n_samples": n_samples, "selection": selection,
    "groups_mixed_right": int(right.loc["right", "groups"]) if np.isfinite(right.loc["right", "groups"]) else 0,
    "groups_mixed_wrong": int(right.loc["wrong", "groups"]) if np.isfinite(right.loc["wrong", "groups"]) else 0,
    **{f"mean_pos_adv_{est}_{lab}": float(right.loc[lab, f"mean_pos_adv_{est}"])
       for est in ("grpo", "grpo_no_std", "fixed") for lab in ("right", "wrong")},
    **{f"pos_mass_wrong_share_{est}": float(overall[f"pos_mass_wrong_share_{est}"]) for est in ("grpo", "grpo_no_std", "fixed")},
    **{f"spurious_share_{est}": float(overall[f"spurious_share_{est}"]) for est in ("grpo", "grpo_no_std", "fixed")},
    "wrong_label_share": float(overall["wrong_label_share"]),
    "mass_by_band": mass.to_dict(orient="records"),
}
if table1:
    metrics |= {"table1_before_pass@1": before["pass@1"], **{f"table1_{r['preset']}_pass@1": r["pass@1"] for r in t1_rows},
                "table1_directions": table_1_dir.to_dict(orient="records"),
                **{f"table1_{r['preset']}_maj@n": r["maj@n"] for r in t1_rows}, "table1_episodes": table1_episodes,
                "table1_questions": table1_questions}
rep.metrics(metrics)

# %% [markdown]
# ## What we measured
#
# Generated from `metrics`; nothing below is typed in.

# %%
m = metrics
lines = [
    f"The closed form and `ddrl.advantages` agree to {m['closed_vs_ddrl_max_gap']:.1e} for every m of K = {k}. "
    f"With one positive of {k}, GRPO gives it an advantage of {m['grpo_pos_adv_m1']:.2f}, "
    f"{m['amplification_m1_over_half']:.1f}x the {m['grpo_pos_adv_half']:.2f} of a positive in an even split; fixed "
    f"advantages give +1 in both cases. This is the amplification of paper Fig. 3a (the paper plots the curve "
    "without printing its values; the equation is the paper's).",
]
wr, rr = m["mean_pos_adv_grpo_wrong"], m["mean_pos_adv_grpo_right"]
if np.isfinite(wr) and np.isfinite(rr):
    verdict = "not larger, which does not reproduce the paper's amplification argument on these rollouts."
    if wr > rr:
        verdict = "larger, as the paper argues (wrong labels come from low consensus, where GRPO pays most)."
    lines.append(
        f"On {m['n_questions']} measured questions ({m['groups_mixed_wrong']} mixed groups with a wrong pseudo-label, "
        f"{m['groups_mixed_right']} with a right one), a rollout agreeing with a *wrong* pseudo-label receives a mean GRPO "
        f"advantage of {wr:.2f}, against {rr:.2f} when the label is right: {verdict}"
        f" Under fixed advantages both are {m['mean_pos_adv_fixed_wrong']:.0f}.")
else:
    lines.append("Too few mixed groups with right and with wrong pseudo-labels were measured to compare their advantages "
                 "(increase `n_questions`).")
mass_reading = ("GRPO does not put more of its positive mass on wrong labels than fixed advantages here, unlike the "
                "paper's argument.")
if m["pos_mass_wrong_share_grpo"] > m["pos_mass_wrong_share_fixed"]:
    std_part = ("on these rollouts the std normalisation itself does not add to it (the mean-centring already does), "
                "which the paper's Fig. 3a argument does not predict.")
    if m["pos_mass_wrong_share_grpo"] > m["pos_mass_wrong_share_grpo_no_std"]:
        std_part = "std normalisation adds to it."
    mass_reading = ("Group-relative advantages thus concentrate reward on wrong labels compared with fixed ones, in line "
                    "with the paper; " + std_part)
if m["wrong_label_share"] in (0.0, 1.0):
    mass_reading = ("Every measured group has a wrong label (or every one a right label), so this run cannot separate "
                    "the estimators; increase `n_questions` or use a stronger model.")
lines.append(
    f"Of all positive advantage mass, {m['pos_mass_wrong_share_grpo']:.1%} lands on rollouts agreeing with a wrong "
    f"pseudo-label under GRPO, {m['pos_mass_wrong_share_grpo_no_std']:.1%} without std normalisation and "
    f"{m['pos_mass_wrong_share_fixed']:.1%} with fixed advantages ({m['wrong_label_share']:.0%} of the groups have a wrong "
    "label). " + mass_reading)
if table1:
    g, b0 = m["table1_ttrl_pass@1"], m["table1_before_pass@1"]
    # binomial standard error over questions x samples (samples of one question are correlated: an underestimate)
    se = float(np.sqrt(max(g * (1 - g), 1e-12) / (m["table1_questions"] * S["table1_eval_n"])))
    lines.append(f"Table 1 on the testbed ({m['table1_questions']} questions, "
                 f"{P.count_words(m['table1_episodes'], 'episode')}, one seed): "
                 f"pass@1 goes from {P.pass1_points(b0)} (no adaptation) to {P.pass1_points(g)} points with GRPO, "
                 + P.join_words([f"{P.pass1_points(m[f'table1_{p}_pass@1'])} with {T.TABLE1_READINGS[p]}"
                                 for p in table1_readings])
                 + f". The paper reports GRPO {paper.fmt(('table1', 'Qwen2.5-Math-1.5B', 'AIME 2024', 'grpo'), '.1f')} and "
                 f"w/o norm. {paper.fmt(('table1', 'Qwen2.5-Math-1.5B', 'AIME 2024', 'grpo_no_norm'), '.1f')} on AIME 2024, "
                 f"{paper.fmt(('table1', 'Qwen2.5-Math-1.5B', 'MATH-500', 'grpo'), '.1f')} and "
                 f"{paper.fmt(('table1', 'Qwen2.5-Math-1.5B', 'MATH-500', 'grpo_no_norm'), '.1f')} on MATH-500 (Qwen2.5-Math-1.5B).")
    diffs = {p: 100 * (m[f"table1_{p}_pass@1"] - g) for p in table1_readings}
    small = [p for p, d in diffs.items() if abs(d) < 100 * se]
    sentence = f"Against GRPO, {P.join_words([f'{T.TABLE1_READINGS[p]} differs by {P.points(d)}' for p, d in diffs.items()])}"
    if small:
        verb = "lies" if len(small) == 1 else "lie"
        sentence += (f"; {P.join_words([T.TABLE1_READINGS[p] for p in small])} {verb} within one standard error of "
                     f"pass@1 (about {100 * se:.1f} points), indistinguishable at this scale")
    lines.append(f"{sentence}. {T.direction_sentences(table_1_dir)[-1]}")
display(Markdown("\n\n".join(lines)))

# %% [markdown]
# ## Try this
#
# 1. With the sliders, find the m where GRPO's positive advantage equals +1. How does it move with K?
# 2. Set `selection = "bcs"`. BCS keeps at most K/2 positives, the most frequent ones. What happens to the
#    share of positive mass on wrong labels, and why?
# 3. The negative advantage at m = K − 1 is as extreme as the positive one at m = 1. When does a *correct*
#    minority answer get punished hardest?
# 4. GRPO w/o norm. gives A+ = 1 − m/K: small when consensus is high. Is that what we want for a
#    trustworthy pseudo-label? Compare with fixed ±1.
# 5. Rerun Table 1 with more `table1_episodes` or another `seed`. Is the difference larger than the
#    seed-to-seed spread?
