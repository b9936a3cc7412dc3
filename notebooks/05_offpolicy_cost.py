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
# # 05 · What COR costs and buys: COR vs more RL (paper Table 4), refinement size (Table 6)
#
# COR (consensus-based off-policy refinement) runs once after RL: sample M = 128 answers per question, keep a
# few rollouts that agree with the majority, fine-tune on them for a few epochs. The paper's Table 4 asks
# whether the same gain could be had by simply training longer: it compares
#
# | row | what happens after the RL schedule |
# |---|---|
# | BCS + DAE | nothing (the RL-only weights of the DDRL run) |
# | + additional RL | about 1/10 more RL steps (`extra_rl_fraction = 0.1`) at a constant learning rate |
# | + COR (= DDRL) | consensus-based off-policy refinement |
#
# with the wall-clock time each stage takes on this machine (`RunResult.rl_seconds`, `cor_seconds` and the
# per-step `time/step_s` of the extra RL steps).
#
# **The additional RL's learning rate.** The paper gives only the extra epochs (8, 3, 1: a tenth of the 80,
# 30, 10 episodes) and minutes, not their learning rate. By default (`extra_rl_lr = None`) the extra steps
# run at the run's own peak RL learning rate (`lr`; 5e-7 at paper scale), held constant, so "more RL" is
# the same RL continued. (Earlier versions used a constant 1e-5, 20x the paper's RL learning rate, which
# tilted the comparison toward COR.) Set `extra_rl_lr` to compare other rates.
#
# Table 6 varies the refinement size. We read it as the number of agreeing rollouts kept per question: the
# paper keeps 4 on MATH-500 and 16 on AMC and AIME 2024 (`cor_keep`; with `paper_settings` the paper's value
# for the benchmark), and "1x / 2x / 4x" multiplies it. Every size starts from the same RL-only weights of
# the DDRL run and uses the same COR samples (same seed), so only the size differs; 1x is the DDRL run itself
# (notebook 03's run).
#
# The claims study decided both questions with dozens of seeds per regime: this notebook shows that answer
# first, recomputed from the committed runs, lets you rerun a piece of it, then times a small fresh Table 4
# and Table 6 on your machine.

# %% tags=["parameters"]
# --- runner (set by `python -m ddrl.run.reproduce`) ---
preset = "default"  # which params/<preset>/ file the runner used
output_dir = "../outputs/interactive"  # figures/, tables/, metrics/ go here
seed = 0  # ddrl.seeds.DEFAULT_SEED (the question draw; training seeds are listed below)
# --- 1. the answer: the claims study's decided comparisons, re-analysed live from its committed runs ---
study_claims = ["C1", "R1", "A3"]  # ddrl.study.plan.PAIRED ids
study_regimes = ["math500_like_small_lr", "amc_like_small_lr", "math500_like", "amc_like"]
# --- 2. your rerun: `python -m ddrl.study rerun` arguments, DESIGN REGIME METHOD SEED [--steps K] ---
rerun = ["registered aime_like cor_only 0", "registered amc_like additional_rl 0 --steps 2"]
# --- 3. Tables 4 and 6, fresh, on notebook 03's questions ---
n_adapted = 32  # questions adapted to (and evaluated on)
table4_methods = ["bcs_dae", "additional_rl", "ddrl"]  # BCS+DAE, + additional RL, + COR
table4_seeds = [0, 1]  # training seeds
extra_rl_fraction = 0.1  # additional RL: this fraction of the RL steps again
extra_rl_lr = None  # additional RL: constant learning rate (None: the peak RL learning rate, lr)
size_multipliers = [1, 2, 4]  # Table 6, refinement size: multiples of cor_keep (1 is the DDRL run itself)
table6_seeds = [0, 1]  # training seeds
# --- the rest: model, dataset, trainer, device (ddrl/run/settings.py; as in 03 they share runs), e.g. {"cor_keep": 8} ---
settings = {}
progress = True  # tqdm progress bars

# %%
import time

import matplotlib.pyplot as plt
from matplotlib.patches import Patch
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from ddrl.report import prose as P
from ddrl.report import tables as T
from ddrl.run.experiments import shared_experiment, summarize
from ddrl.run.settings import notebook_settings
from ddrl.report.plotting import ci_yerr, color, set_style
from ddrl.report.reporter import Reporter
from ddrl.study import lesson as L
from ddrl.train import extra_rl_factor, steps_per_episode

label = T.method_label
set_style()
rep = Reporter(output_dir, "05_offpolicy_cost")
t_start = time.perf_counter()

# every knob of this notebook: those of its cell and its settings (ddrl/run/settings.py), checked
S = notebook_settings("05_offpolicy_cost", settings, n_adapted=n_adapted, seed=seed, progress=progress)
exp = shared_experiment(S)
adapted, heldout, overrides = exp.adapted, exp.heldout, exp.overrides
print(f"{len(adapted)} adapted + {len(heldout)} held-out questions; model {overrides['model']}; "
      f"{exp.config('ttrl', table4_seeds[0]).episodes} episodes")


# %% [markdown]
# ## 1. The answer: the claims study, re-analysed from its committed runs
#
# Each row is one comparison the study registered before running it (`results/plan.md`): method a minus
# method b in pass@1 points, paired by seed and question, over 6 to 46 training seeds of one regime ("lr/10":
# the regime trained at a tenth of the learning rate). C1 pits COR against spending about a tenth more RL steps
# instead (the paper's Table 4); R1 keeps 4x the agreeing rollouts in COR (Table 6: the paper finds the size
# barely matters, a null claim, reproduced when the interval lies within ±1 point); A3 is COR's own gain over
# the RL-only weights. The 95% interval is the study's hierarchical bootstrap; the verdict its pre-registered
# rule. Recomputed now from the per-run CSVs; the last column checks each row against the committed entry.

# %%
decided_table = L.decided_table(L.committed_cells(study_claims, study_regimes))
rep.table(decided_table, "decided")
display(P.for_students_table(L.show_table(decided_table)))

# %%
fig = L.decided_figure(decided_table, "COR vs more RL and the refinement size, as the claims study decided them")
rep.figure(fig, "decided", data=decided_table)

# %% [markdown]
# **What to look for.** Whether COR beats the same run trained longer (C1) by about the paper's margin, and
# whether a 4x larger refinement set moves pass@1 at all (R1).
#
# **In plain words**, generated from the table: first the two claims above, then what COR costs. The study's C2
# compares wall time (the extra RL minus COR, in % of the RL phase; positive: COR is cheaper), measured on this
# testbed's short responses; at paper scale, with long responses, an RL step is far costlier.

# %%
def cost_sentence():
    """C2 from its committed entries: where COR is cheaper, where dearer, where undecided."""
    es = [e for e in (L.committed_entry("C2", r)[0] for r in ("aime_like", "amc_like", "math500_like")) if e]
    cheaper = [f"{L.regime_words(e['regime'])} ({P.signed(e['estimate'])}%)" for e in es if e["ci_low"] > 0]
    dearer = [f"{L.regime_words(e['regime'])} ({P.signed(e['estimate'])}%)" for e in es if e["ci_high"] < 0]
    open_ = [f"{L.regime_words(e['regime'])} ({P.signed(e['estimate'])}%)" for e in es if e["ci_low"] <= 0 <= e["ci_high"]]
    return (f"What it costs ({L.claim_words('C2')}): COR is cheaper than the extra RL in {P.join_words(cheaper) or 'no regime'}, "
            f"dearer in {P.join_words(dearer) or 'no regime'}" + (f", and the interval crosses zero in {P.join_words(open_)}"
                                                                   if open_ else "") + ".")


display(Markdown(" ".join([d for d in (P.claim_digest(decided_table, L.claim_words(c)) for c in ("C1", "R1")) if d]
                          + [cost_sentence()])))

# %%
display(Markdown("\n\n".join(L.verdict_sentences(decided_table))))

# %% [markdown]
# ## 2. Reproduce a piece of it yourself
#
# `python -m ddrl.study rerun DESIGN REGIME METHOD SEED [--steps K]` recomputes a committed run from scratch
# (the study's job code, the pinned base weights, no cache) and compares it with its committed CSV, or its
# first K RL steps with the committed step log (notebook 03 explains it). On a CPU of another kind a rerun may
# differ by a sampled token now and then; it then says so and shows the differences. Default here:
# COR alone from the untrained model in AIME-like, a whole run of about a minute, and the first 2 RL steps of the AMC-like additional-RL run.

# %%
reruns, texts = L.rerun_table(rerun)
rep.table(reruns, "rerun")
rerun_names = [P.rerun_words(*L.parse_rerun(spec)[1:], L.regime_words,
                             lambda m: "COR alone from the untrained model" if m == "cor_only" else label(m))
               for spec in rerun]
display(reruns.assign(run=rerun_names))
print("\n\n".join(P.for_students(t, name) for t, name in zip(texts, rerun_names)))

# %% [markdown]
# ## 3. A fresh Table 4 and Table 6 on this machine: a pipeline demonstration
#
# The cells below run the additional RL and COR at several sizes from the DDRL runs of notebook 03 and time
# them on your machine. They show what each stage costs here, but **they cannot decide anything**: with
# a few seeds the run-to-run spread is as large as the effects above. The sentence after the first table says
# what this run's seeds can show and how many the study's power analysis needed.


# %% [markdown]
# ### Table 4 anew: COR vs additional RL, with wall-clock times
#
# Beside the paper's Table 4 (Qwen2.5-Math-1.5B; pass@1 in %, epochs, minutes on its GPUs) for the run's
# benchmark (the testbed is shown beside MATH-500).
#
# The additional-RL run is its own run (the BCS + DAE schedule, then the extra steps); its extra time is the
# sum of `time/step_s` over the steps past the schedule. COR time is sampling + SFT.

# %%
extra = dict(extra_rl_fraction=extra_rl_fraction, extra_rl_lr=extra_rl_lr)
df3 = pd.concat([exp.grid([m], table4_seeds, **(extra if m == "additional_rl" else {})) for m in table4_methods],
                ignore_index=True)
rep.table(df3.drop(columns=["run_dir"]), "table4_runs")
cfg = exp.config("bcs_dae", table4_seeds[0])
base_steps = steps_per_episode(len(adapted), cfg.prompts_per_step, cfg.drop_last) * cfg.episodes
cfg_add = exp.config("additional_rl", table4_seeds[0], **extra)
extra_lr_used = cfg_add.lr * extra_rl_factor(cfg_add)  # the constant lr of the extra steps
if "additional_rl" in table4_methods:
    add_curves = exp.training_curves("additional_rl", table4_seeds, **extra)
    extra_s = add_curves[add_curves["step"] >= base_steps].groupby("seed")["time/step_s"].sum()
    extra_steps = int((add_curves["step"] >= base_steps).sum() / len(table4_seeds))
    base_s = add_curves[add_curves["step"] < base_steps].groupby("seed")["time/step_s"].sum()
else:
    extra_s, base_s, extra_steps = pd.Series(dtype=float), pd.Series(dtype=float), 0
ddrl_rows = df3[(df3["method"] == "ddrl") & (df3["split"] == "adapted")]
times = {
    "bcs_dae": {"RL s": df3.loc[df3["method"] == "bcs_dae", "rl_seconds"].mean(), "after-RL s": 0.0},
    "additional_rl": {"RL s": float(base_s.mean()) if len(base_s) else np.nan,
                      "after-RL s": float(extra_s.mean()) if len(extra_s) else np.nan},
    "ddrl": {"RL s": ddrl_rows["rl_seconds"].mean(), "after-RL s": ddrl_rows["cor_seconds"].mean()},
}
t3 = summarize(df3, "pass@1", by=("method", "split"))
_, PAPER_BENCH = T.paper_reference(S["dataset"], S["paper_settings"])
paper_t4 = {q: {m: T.paper_value(("table4", PAPER_BENCH, m, q)) for m in table4_methods}
            for q in ("pass@1", "epochs", "minutes")}
table_4 = T.measured_vs_paper(T.in_points(t3), table4_methods, paper_t4["pass@1"], labels=label, measured_spec=".1f",
                              paper_header=f"paper pass@1 % (Table 4, {PAPER_BENCH})", paper_spec=".1f")
table_4["RL s (measured)"] = [round(times[m]["RL s"], 1) for m in table4_methods]
table_4["after-RL s (measured)"] = [round(times[m]["after-RL s"], 1) for m in table4_methods]
table_4["paper epochs after RL"] = [T.paper_cell(paper_t4["epochs"][m], "g") for m in table4_methods]
table_4["paper minutes after RL"] = [T.paper_cell(paper_t4["minutes"][m], "g") for m in table4_methods]
rep.table(table_4, "table4_cor_vs_additional_rl")
display(table_4)
print(f"RL schedule: {base_steps} steps at peak lr {cfg.lr:g}; additional RL: {extra_steps} steps at constant lr "
      f"{extra_lr_used:g}" + (" (the run's own peak lr)" if extra_rl_lr is None else " (set by extra_rl_lr)"))

ad4 = t3[t3["split"] == "adapted"].set_index("method")["mean"]
pairs4 = [(a, b) for a, b in (("ddrl", "additional_rl"), ("ddrl", "bcs_dae"), ("additional_rl", "bcs_dae"))
          if a in ad4.index and b in ad4.index]
display(Markdown(f"On the adapted questions (pass@1 in points), "
                 f"{P.join_words([P.compare(label(a), ad4[a], label(b), ad4[b]) for a, b in pairs4])}. "
                 + P.one_seed_note(len(table4_seeds), L.seeds_needed("math500_like"))
                 + " The study's comparisons in section 1 are the answer."))

# %% [markdown]
# ## 4. Table 6 anew: refinement size
#
# COR from the RL-only weights of each DDRL run with `cor_keep x multiplier` agreeing rollouts per question
# (`cor_keep` as the run's config has it: with `paper_settings`, the paper's value for the benchmark)
# (fewer when fewer agree): `exp.refined(seed, keep)`, the trainer's own COR call (`ddrl.cor.refine_with_config`,
# same seed and settings) then evaluated, cached by run directory and size and shared with the claims study's R1;
# `exp.refined_grid` runs the seeds x sizes in the pool.

# %%
keep_1x = exp.config("ddrl", table6_seeds[0]).cor_keep
others = exp.refined_grid(table6_seeds, [keep_1x * m for m in size_multipliers if m != 1])  # in the pool
rows6 = []
for s in table6_seeds:
    for mult in size_multipliers:
        keep = keep_1x * mult
        rows = exp.run("ddrl", s) if mult == 1 else others[(s, keep)]  # 1x: the DDRL run itself
        rows6 += [{"seed": s, **{k: r[k] for k in ("split", "pass@1", "maj@n", "cor_seconds", "cor_kept")},
                   "size": f"{mult}x", "keep": keep} for r in rows]
df6 = pd.DataFrame(rows6)
rep.table(df6, "table6_runs")
t6 = summarize(df6, "pass@1", by=("size", "split"))
sizes = [f"{x}x" for x in size_multipliers]
paper_t6 = {x: T.paper_value(("table6", x, PAPER_BENCH)) for x in sizes}
table_6 = T.measured_vs_paper(T.in_points(t6), sizes, paper_t6, row_col="size", measured_spec=".1f",
                              paper_header=f"paper pass@1 % (Table 6, {PAPER_BENCH})", paper_spec=".1f")
table_6.insert(1, "kept per question", [keep_1x * x for x in size_multipliers])
table_6["COR s (measured)"] = [round(df6.loc[(df6["size"] == x) & (df6["split"] == "adapted"), "cor_seconds"].mean(), 1) for x in sizes]
table_6["rollouts kept, all questions (mean over seeds)"] = [df6.loc[(df6["size"] == x) & (df6["split"] == "adapted"), "cor_kept"].mean() for x in sizes]
rep.table(table_6, "table6_refinement_size")
display(table_6)
ad6 = t6[t6["split"] == "adapted"].set_index("size")["mean"]
display(Markdown(f"On the adapted questions (pass@1 in points), "
                 f"{P.join_words([P.compare(f'COR keeping {x}', ad6[x], f'keeping {sizes[0]}', ad6[sizes[0]]) for x in sizes[1:]])}"
                 f" ({P.count_words(len(table6_seeds), 'seed')} per size)."))


# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
ax = axes[0]
part = T.in_points(t3[t3["split"] == "adapted"]).set_index("method").reindex(table4_methods)
x = np.arange(len(part))
ax.bar(x, part["mean"], color=[color(mm) for mm in table4_methods],
       yerr=ci_yerr(part), capsize=4)
ax.set_xticks(x, [label(mm) for mm in table4_methods], rotation=15, ha="right")
ax.set(ylabel="pass@1, adapted (points)", title=f"Table 4: pass@1, {P.interval_caption(len(table4_seeds))}")
ax = axes[1]
ax.bar(x, [times[mm]["RL s"] for mm in table4_methods], color="#bbbbbb")
ax.bar(x, [times[mm]["after-RL s"] for mm in table4_methods], bottom=[times[mm]["RL s"] for mm in table4_methods],
       color=[color(mm) for mm in table4_methods], hatch="//", edgecolor="white")
ax.set_xticks(x, [label(mm) for mm in table4_methods], rotation=15, ha="right")
ax.set(ylabel="wall-clock seconds", title="Table 4: measured cost")
ax.legend(handles=[Patch(facecolor="#bbbbbb", label="RL schedule"),
                   Patch(facecolor="#666666", hatch="//", edgecolor="white", label="after RL (extra RL or COR)")], fontsize=8)
ax = axes[2]
for sp, g in T.in_points(t6).groupby("split", sort=False):
    g = g.set_index("size").reindex(sizes)
    ax.errorbar(size_multipliers, g["mean"], yerr=ci_yerr(g), marker="o", capsize=4, label=sp)
ax.set(xscale="log", xticks=size_multipliers, xticklabels=[f"{x}x ({keep_1x * x})" for x in size_multipliers],
       xlabel="refinement size (kept per question)", ylabel="pass@1 (points)",
       title=f"Table 6: refinement size, {P.interval_caption(len(table6_seeds))}")
ax.legend(fontsize=8)
fig.tight_layout()
rep.figure(fig, "table4_table6", data=pd.concat([t3.assign(table="4"), t6.assign(table="6")], ignore_index=True))

# %% [markdown]
# **What to look for.** Left: whether COR (= DDRL) beats the same budget spent on more RL. Middle: what each
# costs in wall-clock seconds on this machine (the hatched part is the stage after RL). Right: whether keeping
# more agreeing rollouts per question helps, on adapted and held-out questions.

# %%
metrics = {
    "n_adapted": len(adapted), "n_heldout": len(heldout), "table4_seeds": list(table4_seeds),
    "table6_seeds": list(table6_seeds), "base_steps": base_steps, "extra_steps": extra_steps,
    "table4": {f"{r.method}/{r.split}": [r.mean, r.ci_lo, r.ci_hi] for r in t3.itertuples()},
    "extra_rl_lr_used": extra_lr_used, "rl_peak_lr": cfg.lr, "paper_benchmark": PAPER_BENCH,
    "decided": decided_table.to_dict(orient="records"), "rerun": reruns.to_dict(orient="records"),
    "table6": {f"{r.size}/{r.split}": [r.mean, r.ci_lo, r.ci_hi] for r in t6.itertuples()},
    "seconds": times, "cor_keep": keep_1x, "size_multipliers": list(size_multipliers),
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
# 1. COR's sampling of M = 128 answers per question is most of its cost. Set `settings = {"cor_m": 32}`: how much of the
#    gain is left, and how much time is saved?
# 2. Raise `extra_rl_fraction` until additional RL costs as much as COR. Does it then match COR's gain?
# 3. With 16 kept rollouts per question, COR fine-tunes on many near-duplicates of the majority answer.
#    What happens to diversity (pass@1 vs maj@n in `table6_runs`)?
# 4. COR trusts the majority vote after RL. On which questions could it reinforce a wrong answer? (Hint: the
#    label accuracy curves of notebook 03.)
