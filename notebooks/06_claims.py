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
# # 06 · The claims study: every claim of the paper, decided on the testbed
#
# The paper reports one run per cell, without seeds or intervals. This notebook shows the study that
# decides its claims on a model you can train yourself (issue 17): the claims with ids (`ddrl.study.claims`),
# regimes that stand for AIME 2024, AMC and MATH-500 picked from the *base* model's properties only
# (`ddrl.study.regimes`, `bench/regimes.py`), a paired seeds x questions design with hierarchical-bootstrap
# intervals and a power analysis (`ddrl.report.stats`, `bench/claims_power.py`), and the pre-registered verdict
# rule (`results/plan.md`, committed before any comparison ran):
#
# | verdict | 95% interval of the effect |
# |---|---|
# | reproduced | excludes 0 on the paper's side |
# | contradicted | excludes 0 on the other side |
# | no effect | inside +-1 point |
# | not resolved | otherwise |
#
# A verdict marked *(floor)* is the rule's verdict for a regime where both methods score pass@1 0 on every
# question of every seed: the difference is exactly 0, so the rule says *no effect*, but such a regime cannot
# tell the methods apart (`ddrl.study.analysis.at_floor`).
#
# By default it renders from the committed results in `results/` (~8 s on 2 cores, from a fresh clone too: each of
# its 29 figures whose function, data, style and code are unchanged is copied, from `.cache/figures/` or from the
# committed store in `docs/results/`, by `Reporter.draw`, and nothing it imports loads torch; `bench/render_claims.py`);
# nothing is trained here. The `study` preset (`python -m ddrl.run.reproduce --preset study --only 06`) reruns the whole study
# through the parallel runner (`ddrl.study`: stage 1, its variance-only analysis, stage 2, the claims), resumable
# after a kill; the `smoke` preset runs the same path on the tiny testbed in about a minute.

# %% tags=["parameters"]
# --- runner (set by `python -m ddrl.run.reproduce`) ---
preset = "default"  # which params/<preset>/ file the runner used
output_dir = "../outputs/interactive"  # figures/, tables/, metrics/ go here
seed = 0  # ddrl.seeds.DEFAULT_SEED (unused: this notebook only reads committed results)

# --- committed results ---
results_dir = "../results"  # regimes_base.json, power.json, claims.json (relative to notebooks/)
claims_file = "claims.json"  # the study's scorecard; absent until the study has run
tables_dir = "../docs/results"  # the tables behind the study's figures, as --analyse claims wrote them (empty: compute)

# --- rerunning the study (preset `study`; `smoke` runs its smoke path) ---
run_study = False  # run the study's jobs (ddrl.study) before rendering; finished runs and written CSVs are reused
study_scale = "default"  # ddrl.study.runner.SCALES: "default" (the registered study) or "smoke" (tiny testbed, 2 seeds)
study_regimes = []  # regimes to run (empty: every regime of regimes_base.json)
study_budget_min = 240.0  # wall-time budget of both stages (jobs starting later are skipped; rerun to continue)
study_dir = ""  # where runs/, stage1.json and claims.json go (empty: results_dir; the smoke scale: <output_dir>/study)
study_workers = 0  # worker processes (0: one per core on the CPU, 1 on a GPU; 8 share one H100 at ~4x, docs/benchmarks.md)

# %%
import json
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from ddrl.study import claims as C
from ddrl.study import digest as DG
from ddrl.study import figures as SF
from ddrl.report.plotting import set_style
from ddrl.report.reporter import Reporter

set_style()
rep = Reporter(output_dir, "06_claims")
R = Path(results_dir)
for f in ("regimes_base.json", "power.json"):
    if not (R / f).is_file():
        raise FileNotFoundError(f"{R / f} missing: results_dir must hold the committed design results "
                                f"(bench/regimes.py and bench/claims_power.py write them)")
base = json.loads((R / "regimes_base.json").read_text())
power = json.loads((R / "power.json").read_text())
D = Path(study_dir) if study_dir else (Path(output_dir) / "study" if study_scale != "default" else R)

# %% [markdown]
# ## At a glance: each claim at both learning rates
#
# One row per claim and regime: the paper's number (Qwen2.5-Math-1.5B, on the benchmark the regime stands for),
# then the testbed at the paper's small learning rate (lr/10, twice the episodes) and at the default one, gathered
# from the registered study's scorecard and every later plan amendment's committed analysis on the same build
# (`ddrl.study.digest`). A cell reads: estimate [95% CI], verdict (seeds x questions); *floor*: both methods at pass@1 0
# everywhere; "-": not measured. The sections below show where each number comes from.

# %%
gathered = DG.gather(R)
glance = pd.DataFrame(DG.table(gathered))
if not glance.empty:
    rep.table(glance, "at_a_glance")
display(Markdown(DG.markdown(R)))
if not glance.empty and (glance.lr10 != "-").any():  # the lr/10 comparisons beside their default-lr twins
    rep.draw("at_a_glance", C.replication_figure, DG.learning_rates(gathered))

# %% [markdown]
# ## Rerunning the study (presets `study` and `smoke` only)
#
# Stage 1 (seeds 0-5 of no adaptation, TTRL and DDRL in the three regimes), then only the *variance components*
# of its paired differences, which set the seeds per regime (`stage1.json`; no mean is computed or shown before
# the end, plan Sec. 6), then stage 2 in the plan's priority order, then every claim (`claims.json`). One
# progress bar per stage; killed and rerun, it continues where it stopped.

# %%
study_log = None
if run_study:
    from ddrl.study import runner as ST

    scale = ST.SCALES[study_scale]
    regs = ST.load_regimes(R / "regimes_base.json", scale, study_regimes or None)
    study_log = ST.run_study(regs, scale, D / "runs", D, budget_min=study_budget_min, workers=study_workers or None)
    display(Markdown(f"Study jobs: {study_log['jobs']}; seeds per regime from stage 1: {study_log['stage1']['seeds']}. "
                     + (f"Not computed: {'; '.join(study_log['missing'])}." if study_log["missing"] else "")))
results = C.load(D / claims_file)

# %% [markdown]
# ## The regimes: the base model on chains of 3-6 operations
#
# Measured before any method runs (64 samples at T = 1 for consensus and maj@64, 16 at T = 0.6 for pass@1).
# The rule, stated in advance: AIME-like = the fewest operations with maj@64 <= 0.35, MATH-500-like = the
# most with maj@64 >= 0.70, AMC-like = between them, maj@64 closest to 0.5.

# %%
cand = pd.DataFrame([{k: c[k] for k in ("num_ops", "n_questions", "maj@64", "pass@1", "mean_consensus",
                                        "share_consensus_le_5_of_64", "share_consensus_ge_45_of_64")}
                     for c in base["candidates"]])
regimes = pd.DataFrame([{**{k: r[k] for k in ("name", "stands_for", "num_ops", "n_adapted", "episodes", "lr")},
                         **{f"base {k}": v for k, v in r["base"].items() if k != "n_questions"}}
                        for r in base["regimes"]])
rep.table(cand, "regime_candidates")
rep.table(regimes, "regimes")
display(cand.round(3), regimes.round(3))
long = cand.melt(id_vars="num_ops", value_vars=["maj@64", "pass@1", "mean_consensus"], var_name="metric")
rep.draw("regime_candidates", SF.regime_candidates_figure, long, data=long)

# %% [markdown]
# ## Power: how many seeds and questions a 2-point half-width needs
#
# Variance components from the pilot already in the repository (`bench/results/train.json`: 3 seeds, 64
# questions, run-level only) and the measured evaluation noise; the question and interaction components are
# assumptions until the study's first stage measures them (see `results/plan.md`).

# %%
rows = []
for name, reg in power["regimes"].items():
    for cls, c in reg["classes"].items():
        for t in c["table"]:
            if t["questions"] == reg["n_adapted"]:
                rows.append({"regime": name, "comparison": cls, "seeds": t["seeds"], "half_width": t["half_width"],
                             "mde": t["mde"]})
pw = pd.DataFrame(rows)
rep.draw("power", SF.power_figure, pw, data=pw)
need = pw[pw.half_width <= 2.0].groupby(["regime", "comparison"]).seeds.min().unstack()
display(need)

# %% [markdown]
# ## How far the study has got
#
# Read from the file names under `runs/` (no result is opened): the seeds written per regime and method. Once
# stage 1 is complete, `stage1.json` holds the *measured* variance components of its paired differences (never a
# mean), which replace the pilot's assumptions above and set the seeds per regime for stage 2.

# %%
from ddrl.study.analysis import progress

prog = progress(D / "runs")
stage1 = json.loads((D / "stage1.json").read_text()) if (D / "stage1.json").is_file() else None
if prog.empty:
    display(Markdown(f"No run of the study is written under `{D / 'runs'}` yet."))
else:
    rep.table(prog, "study_progress")
    display(prog)
if stage1 is not None:
    comp = pd.DataFrame([{"regime": r, "comparison": cmp, "seeds": v["n_seeds"], "questions": v["n_questions"],
                          **{k: v["components"][k] for k in ("seed", "question", "cell")}}
                         for r, cs in stage1["regimes"].items() for cmp, v in cs.items()])
    rep.table(comp, "stage1_components", floatfmt=".1f")
    display(Markdown(f"Stage-1 variance components (pass@1 points^2); seeds per regime for stage 2: "
                     f"{stage1['seeds']}."), comp.round(1))

# %% [markdown]
# ## The scorecard

# %%
if results is None:
    msg = (f"**No scorecard yet**: `{D / claims_file}` does not exist. The plan is committed (`results/plan.md`); "
           + ("no run of the study is written yet." if prog.empty else
              f"{int(prog.n_seeds.sum())} method x seed CSVs are written (table above); the scorecard is computed "
              "when the budget is spent (plan Sec. 6.3 and Amendment 4), from every CSV written by then."))
    scorecard = None
else:
    scorecard = C.scorecard(results)
    rep.table(scorecard, "scorecard", floatfmt=".1f")
    rep.draw("scorecard", C.scorecard_figure, results, data=pd.DataFrame(results))
    display(scorecard)
    msg = ""
display(Markdown(msg)) if msg else None

# %% [markdown]
# ### Seed by seed
#
# The scorecard's interval pools seeds and questions. Below, each pass@1 claim again, one training seed at a
# time: the mean pass@1 of both methods over the seeds they share, and in how many seeds the first is ahead of
# the second (the mean over questions of a - b), behind, or level, with the smallest and largest per-seed
# difference (points). A view of how consistent the sign is, not a second test: the verdict is the scorecard's.
#
# This table and those below come from every run CSV of the study (about 2,000 files; the selection rules are
# replayed on every base question 64 times): about a minute of computing. `python -m ddrl.study --analyse claims`
# writes them beside the scorecard (`docs/results/`, `ddrl.study.figures.TABLES`) with `tables.json`, a sha256 of
# the runs and scorecard they came from; where that matches the runs and scorecard read here, they are read back
# instead of computed (a test recomputes the committed ones and compares).

# %%
from ddrl.study.figures import committed_tables, study_tables

if results is not None:
    T = committed_tables(tables_dir, D / "runs", results) if tables_dir else None
    tables_source = f"read from `{tables_dir}` (their inputs' sha256 matches)" if T is not None else "computed from the runs"
    T = T if T is not None else study_tables(D / "runs", results)
    by_seed = T["claims_seeds"]
    rep.table(by_seed, "claims_seeds", floatfmt="+.1f")
    display(Markdown(f"The study's tables: {tables_source}."), by_seed.round(1))

# %% [markdown]
# ### Where the 2-point half-width was not reached, and what would have reached it
#
# The plan sized the seeds so that every pass@1 difference would reach a 95% half-width of 2 points. For each
# comparison that did not, its own seeds x questions matrix is split into variance components (SDs in points):
# `sd_seed`, a run's shift common to all its questions, which more seeds average out; `sd_question`, how much
# the true difference varies between questions, which only more questions average out; `sd_cell`, the rest.
# `half_width_unlimited_seeds` is the floor more seeds cannot pass; `seeds_needed` / `questions_needed` the
# smallest counts the components predict would reach 2 points (`<NA>`: none does). Descriptive, after the fact:
# no verdict uses it.

# %%
if results is not None:
    shortfall = T["power_shortfall"]
    rep.table(shortfall, "power_shortfall", floatfmt=".1f")
    display(shortfall.round(1) if not shortfall.empty else Markdown("Every pass@1 comparison reached 2 points."))

# %% [markdown]
# ## Two of the paper's figures, measured on the testbed
#
# Left, the paper's Fig. 4 (claims D1, D2): the mean advantage of each RL batch during training, TTRL against
# DDRL, the mean over seeds with a 95% band. GRPO's normalisation centres every group, so TTRL's curve sits at 0
# by construction; DDRL's fixed +1/-1 advantages let the balance of positive and negative samples show. Right, the
# paper's Fig. 2 (claims F1-F3): how often a distinct answer of the base model is right, by how many of its 64
# samples gave it, with the bands of the claims shaded (<= 5 red, >= 45 green). Drawn only once the scorecard
# exists (plan, Amendment 4).

# %%
from ddrl.study.figures import advantage_dynamics_figure, band_accuracy_figure

if results is not None:
    for name, draw in (("advantage_dynamics", advantage_dynamics_figure), ("base_bands", band_accuracy_figure)):
        rep.draw(name, draw, T[name], data=T[name])

# %% [markdown]
# ### The vote during training: more confident, and right as often?
#
# Each RL episode votes once on every adapted question, so the first and the last episode compare the same
# questions. Below, per regime and method, the mean over seeds of the vote's confidence (`majority_ratio`, c*/N)
# and of the share of questions whose pseudo-label is correct (`label_acc`), first episode beside last
# (descriptive, computed after the study; no claim uses it). Confidence that rises while label accuracy falls
# is the spurious amplification the paper describes.

# %%
from ddrl.study.figures import pseudo_label_drift

if results is not None:
    drift = pseudo_label_drift(T["pseudo_labels"])
    rep.table(drift, "pseudo_labels", floatfmt=".3f")
    display(drift.round(3))

# %% [markdown]
# ## What BCS keeps of the base rollouts (claims E1, E2)
#
# The paper's appendix explains DDRL by what BCS selects: its negatives are the rarest answers, so fewer
# correct answers get a negative reward (E1), and low-consensus (often wrong) labels are "less likely to be
# selected" (E2). Both are properties of the selection rule on the base model's 64 rollouts per question, no
# training involved (plan Amendment 8). Left, the false positives kept per question by the label's count c*:
# BCS keeps min(c*, 16) copies of the label where random K keeps c*/2, so below c* = 32 it keeps *more* of a
# wrong label. Right, the share of correct answers among the kept negatives: lower under BCS, as the paper says.
# The scorecard's `svamp_codex` rows measure the same six claims on a real LLM's samples (code-davinci-002 on
# SVAMP, N = 30; plan Amendment 18): there E2 goes the paper's way - half of Codex's wrong labels have a count above
# K = 15 of 30, where BCS keeps fewer copies of the label than random K does.

# %%
from ddrl.study.figures import selection_errors_figure

if results is not None:
    rep.draw("selection_errors", selection_errors_figure, T["selection_errors"], data=T["selection_errors"])

# %% [markdown]
# ## Where TTRL's wrong rewards come from (claims N1, N2)
#
# The paper's abstract names answers of medium frequency "the primary source of reward noise". On each question
# TTRL votes a pseudo-label on its rollouts and rewards agreement; a reward is wrong when it disagrees with the
# rollout's correctness (a copy of a wrong label rewarded, or the right answer punished). Each rollout sits in the
# band of its own answer's count (F1-F3's: seen <= 5, 6-44, >= 45 of 64). N1 asks whether the middle band carries
# more than half of all wrong rewards, N2 whether its rollouts are rewarded wrongly more often than the outer
# bands' (plan Amendment 63: no training, the base rollouts' answer groups, the testbed's and Codex's on SVAMP).
# Left, each band's share of the wrong rewards; right, how often its rollouts are rewarded wrongly.

# %%
from ddrl.study.reward_noise import summary as noise_summary
from ddrl.study.figures import reward_noise_figure

if results is not None:
    noise = T["reward_noise"]
    rep.table(noise, "reward_noise", floatfmt=".1f")
    rep.draw("reward_noise", reward_noise_figure, noise, data=noise)
    display(Markdown(noise_summary(noise, results)))

# %% [markdown]
# ## Adapted questions and fresh ones (claims P1, P2 and H1x)
#
# Test-time RL trains on the questions it is tested on. Left of each panel, pass@1 on those adapted questions
# (the registered runs); right, on 1,536 fresh questions of the same kind that no run trained on (plan
# Amendments 11-17, 19, 20), for the untrained model, TTRL, BCS alone (AMC-like and MATH-500-like), BCS+DAE
# (DDRL's RL phase) and DDRL, averaged over the H1x seeds with a 95% interval over seeds. The paper's Table 2 has the left half only (its gains over the
# untrained model: claims P1, P2); the right half is ours (H1x and its family). The claims' intervals are the
# scorecard's paired ones; this figure shows the levels they are differences of.

# %%
from ddrl.study.figures import transfer_figure

if results is not None:
    rep.draw("heldout_transfer", transfer_figure, T["heldout_transfer"], data=T["heldout_transfer"])

# %% [markdown]
# ### P1, P2 and M1 on three times the questions (plan Amendment 26)
#
# In MATH-500-like the gains over the untrained model (P1, P2) missed the 2.0-point half-width at 46 seeds: they
# vary between questions, which no number of seeds averages out. Amendment 26 adapts on the same stream's first
# 768 questions (the registered 256 first; base maj@64 0.727, still MATH-500-like) on 24 new seeds, some computed
# on a GPU (one device per seed) with a registered check that the GPU seeds do not shift the effect. The table
# below is `results/wide/claims.json`, written once all 24 seeds were complete; the 256-question entries are the
# scorecard's.

# %%
from ddrl.report.tables import committed_markdown, fmt_ci

wide_path = R / "wide" / "claims.json"
if wide_path.is_file():
    wres = json.loads(wide_path.read_text())
    wd = pd.DataFrame([dict(e, seeds="all") for e in wres["all_seeds"]] + [dict(e, seeds="CPU only") for e in wres["cpu_seeds"]])
    wd["interval"] = [fmt_ci(e, lo, hi, "+.2f") for e, lo, hi in zip(wd.estimate, wd.ci_low, wd.ci_high)]
    display(wd[["id", "seeds", "paper", "interval", "half_width", "verdict", "n_seeds", "n_questions"]].round(2))
    display(pd.DataFrame(wres["device_check"]).T.round(2))
else:
    display(Markdown("Amendment 26's analysis is not committed yet (`python -m ddrl.study.amendments.wide status` says how far it is)."))

# %% [markdown]
# Why the longer runs lose: on the left each run's adapted pass@1, on the right the vote over the four quarters of
# each run's RL steps (the step logs): the share of rollouts agreeing with the majority answer rises while that
# answer is right less often. Amendment 27 adds TTRL and DDRL with the 100x KL penalty (Amendment 25's arms) on
# 24 CPU seeds and compares them with the untrained model (Q1, Q2) and with their own methods (Q3, Q4); its table
# and its arms in the figure appear once all 24 seeds are complete and `results/wide/arms.json` is written.
# What the committed analysis says (docs/results.md has the numbers): the penalty takes back most of what the long
# runs lose (Q3, Q4 *reproduced*, both arms far above their unpenalised methods) but no more - the penalised TTRL
# still ends below the untrained model (Q1 *contradicted*, the opposite of the expected gain) and the penalised
# DDRL's difference to it stays open (Q2 *not resolved*). In the vote the penalty keeps the majority label right
# more often while the vote concentrates about as much.

# %%
from ddrl.study.amendments import wide

arms_path = R / "wide" / "arms.json"
if wide_path.is_file():
    sp, vote = wide.figure_tables(R / "wide")  # the arms only once arms.json is written
    rep.draw("wide_vote", wide.vote_figure, sp, vote, data=vote)
if arms_path.is_file():
    display(Markdown(wide.arms_markdown(json.loads(arms_path.read_text()))))  # the table docs/results.md quotes
    # descriptive: each method's adapted pass@1 over Amendment 27's seeds (unpenalised runs: CPU seeds 200-211)
    display(wide.levels(R / "wide", seeds=wide.ARM_SEEDS).round(2))
else:
    display(Markdown("Amendment 27's analysis is not committed yet (`python -m ddrl.study.amendments.wide status` says how far it is)."))

# %% [markdown]
# ### P1, P2 and M1 in MATH-500-like at the paper's small learning rate (plan Amendment 28)
#
# The registered learning-rate dimension (lr/10 and twice the episodes, the paper's small-lr regime) was measured
# in AMC-like only. Amendment 28 carries the same rule over to MATH-500-like (`math500_like_small_lr`: the same
# 256 questions at lr 3e-6 and 4 episodes) and asks whether TTRL or DDRL gain over the untrained model there, or
# DDRL over TTRL. TTRL and DDRL ran on seeds 0-17, each seed paired with its registered untrained run. The table
# (the one docs/results.md quotes) puts the registered default-lr MATH-500-like and AMC-like lr/10 entries beside
# it; under it each run's level and the vote over training at both learning rates (descriptive). It appears once
# all 18 seeds are complete and `results/small_lr/claims.json` is written.
# What the committed analysis says (docs/results.md has the numbers and what it does not say): at lr/10 both
# methods end above the untrained model (P1, P2 *reproduced*) and DDRL above TTRL (M1 *reproduced*), in every
# seed, where at the default learning rate none of the three is resolved - the signs of the paper, far below its
# sizes. In the vote, the smaller learning rate lets the majority concentrate a little while its label stays as
# often right as at the start; at the default learning rate the label is right less often by the end.

# %%
from ddrl.study.amendments import small_lr

small_path = R / "small_lr" / "claims.json"
if small_path.is_file():
    sres = json.loads(small_path.read_text())
    display(Markdown(small_lr.markdown(sres, C.load(R / "claims.json"))))
    display(Markdown(small_lr.levels_markdown(sres)))
    rep.draw("small_lr", small_lr.figure, sres, data=pd.DataFrame(sres["vote"]))
else:
    display(Markdown("Amendment 28's analysis is not committed yet (`python -m ddrl.study.amendments.small_lr status` says how far it is)."))

# %% [markdown]
# Which part of DDRL carries M1 at lr/10? Amendment 29 measures the paper's ablation (Table 3: BCS, then DAE, then
# COR added to TTRL) on the same regime: A3 (DDRL - BCS+DAE, where BCS+DAE is the DDRL runs' RL-only weights) on
# seeds 0-17, A1 (BCS - TTRL) and A2 (BCS+DAE - BCS) on seeds 0-11 with a new BCS run per seed. Under the table,
# descriptive: how DDRL - TTRL splits into the three parts on seeds 0-11, and each method's level at both learning
# rates. It appears once `results/small_lr/ablation.json` is written.
# What the committed analysis says (docs/results.md has the numbers): at lr/10 the three RL variants (TTRL, BCS,
# BCS+DAE) end about level with each other (A1, A2 *no effect*), and COR adds the whole of DDRL's edge (A3
# *reproduced*, in every seed) - with COR's SFT learning rate unscaled (the paper's), a caveat the docs spell out.
# Amendment 55 measures the same in AMC-like at lr/10, the paper's one benchmark where BCS alone falls below TTRL
# (AMC: -2.0, -0.6, +6.6), with BCS and BCS+DAE (a DDRL run trained again, evaluated before COR) as new runs on the
# seeds its clock allowed (0-9). It found the MATH-500-like split again: COR adds +3.35 (A3 *reproduced*, every seed),
# DAE nothing (A2 *no effect*), and BCS sits level with TTRL (A1 -0.31, *not resolved*), not 2 points below it.

# %%
from ddrl.study.amendments import small_lr_ablation

for name, design in small_lr_ablation.DESIGNS.items():  # Amendment 29 (MATH-500-like), 55 (AMC-like)
    if design.analysis.is_file():
        ares = json.loads(design.analysis.read_text())
        display(Markdown(small_lr_ablation.markdown(ares, C.load(R / "claims.json"), design)))
        display(Markdown(small_lr_ablation.split_markdown(ares)))
    else:
        display(Markdown(f"Amendment {design.amendment}'s analysis is not committed yet "
                         f"(`python -m ddrl.study.amendments.small_lr_ablation status --design {name}`)."))

# %% [markdown]
# The paper's headline table also sets DDRL against "the stronger ETMR baseline" (entropy-fork tree rollouts; MATH-500:
# TTRL 73.0, ETMR 76.9, DDRL 80.7). Amendment 43 runs ETMR at lr/10 on the same regime and seeds as far as its clock
# allowed and decides M2 (DDRL - ETMR), M3 (ETMR - TTRL) and P3 (ETMR - no adaptation) by the registered rule; under
# the table, each method's level at both learning rates on the same seeds, and each lr/10 method's RL time. It appears
# once `results/small_lr/etmr.json` is written; the docs say in words what it found. Amendment 44 repeats Amendments
# 28 and 43 on a second build of the base model (the Xeon build), with its own table and figure; Amendment 46 runs
# ETMR at lr/10 in AMC-like on that build, beside its TTRL and DDRL runs there (Table 2's AMC numbers), and Amendment
# 47 the same on the registered build.

# %%
from ddrl.study.amendments import small_lr_etmr

for build, design in small_lr_etmr.DESIGNS.items():  # Amendments 43, 47 (registered build), 44, 46 (Xeon build)
    if design.analysis.is_file():
        eres = json.loads(design.analysis.read_text())
        display(Markdown(small_lr_etmr.markdown(eres, design)))
        rep.draw(design.figure, small_lr_etmr.etmr_figure, eres, design, data=pd.DataFrame(eres["seed_pass1"]))
    else:
        display(Markdown(f"Amendment {design.amendment}'s analysis is not committed yet "
                         f"(`python -m ddrl.study.amendments.small_lr_etmr status --build {build}`)."))

# %% [markdown]
# The same runs on fresh questions (Amendment 45; Amendment 46's held-out part): each finished lr/10 run evaluated on
# H1x's 1,536 fresh questions, nothing trained. P3x asks whether ETMR's adaptation transfers, M2x and M3x whether
# DDRL's and ETMR's places on the adapted questions carry over; on the Xeon build the H1x family too. Each table
# appears once its analysis is written.

# %%
from ddrl.study.amendments import etmr_heldout

for build, design in etmr_heldout.DESIGNS.items():
    if design.analysis.is_file():
        display(Markdown(etmr_heldout.markdown(json.loads(design.analysis.read_text()), design)))
    elif design.not_run:
        display(Markdown(f"Amendment {design.amendment}'s held-out part ({design.build}, {design.regime}) was "
                         f"{design.not_run}."))
    else:
        display(Markdown(f"Amendment {design.amendment}'s held-out analysis ({design.build}, {design.regime}) is not "
                         f"committed yet (`python -m ddrl.study.amendments.etmr_heldout status --build {build}`)."))

# %% [markdown]
# Amendment 29 left a caveat: COR kept the paper's SFT learning rate (1e-5) while the RL phase ran at 3e-6. Amendment
# 30 separates it with two new arms on the same seeds, each one COR call then evaluated: COR at 1e-6 (the lr/10 rule
# applied to COR) from the DDRL runs' RL-only weights, and COR at 1e-5 from the untrained model, with no RL phase at
# all. K1 asks whether COR still adds at the scaled rate, K2 what the rate itself adds (K1 + K2 = A3), K3 whether COR
# alone gains over the untrained model, K4 whether DDRL's RL phase adds to COR alone. Under the table, descriptive:
# each method's level and how many rollouts each COR kept. It appears once `results/small_lr/cor.json` is written.
# What the committed analysis says (docs/results.md has the numbers): COR at the scaled rate still adds a point (K1
# *reproduced*) and the paper's rate three more (K2); COR alone gains 7-8 points over the untrained model (K3) and
# ends above DDRL at lr/10 and far above DDRL at the default learning rate, in every seed (K4, K5 *contradicted*):
# on the testbed the RL phase before COR costs more than it gives.

# %%
from ddrl.study.amendments import small_lr_cor

cor_path = R / "small_lr" / "cor.json"
display(Markdown(committed_markdown(cor_path, small_lr_cor.markdown, 30, "python -m ddrl.study.amendments.small_lr_cor status")))

# %% [markdown]
# Amendment 56 asks the same of COR in AMC-like at lr/10, and one more question: does COR's refinement size matter
# there (R1, the paper's Table 6: keeping 4x the rollouts barely matters)? Each seed's DDRL run from Amendment 55 left
# its RL-only weights in the run cache, so each arm is one COR call: keeping 4x the rollouts (R1 against DDRL) and at
# 1e-6 (K1, K2). It appears once `results/small_lr/refine_amc.json` is written. What the committed analysis says:
# 4x the rollouts add about 2 points in every seed (R1 *not resolved* by the null rule, but its interval excludes the
# paper's +0.1), and COR at a tenth of its rate keeps only a sixth of COR's gain (K1, K2 *reproduced*).

# %%
from ddrl.study.amendments import small_lr_refine

display(Markdown(committed_markdown(R / "small_lr" / small_lr_refine.ANALYSIS.name,
                                    lambda res: small_lr_refine.markdown(res, C.load(R / "claims.json")), 56,
                                    "python -m ddrl.study.amendments.small_lr_refine status")))

# %% [markdown]
# Amendment 59 asks R1 in the paper's own setting for Table 6, MATH-500-like at lr/10. Amendment 28's DDRL runs kept
# no weights, so each seed's job trains the DDRL run again and refines its RL-only weights keeping 4x the rollouts;
# R1 pairs that with the committed DDRL run (COR 1x after the same RL steps), and a check evaluates each retrained run
# against the committed one. It appears once `results/small_lr/refine_math500.json` is written. What the committed
# analysis says: 4x the rollouts add about 2 points here too, in every seed (R1 *not resolved* by
# the null rule, its interval just short of lying beyond +1; it excludes the paper's +0.1), and every retrained run
# repeated its committed RL steps and results exactly.

# %%
from ddrl.study.amendments import refine_math500

display(Markdown(committed_markdown(R / "small_lr" / refine_math500.ANALYSIS.name,
                                    lambda res: refine_math500.markdown(res, C.load(R / "claims.json")), 59,
                                    "python -m ddrl.study.amendments.refine_math500 status")))

# %% [markdown]
# Does that extra gain hold on questions the model did not adapt on? Amendment 60 recomputes COR 4x from the same
# cached runs and evaluates it on H1x's 1,536 fresh MATH-500-like questions, paired with the committed held-out
# evaluations of the same DDRL runs (R1x = COR 4x - DDRL; AMC-like's R1x, Amendment 57, beside it). It appears once
# `results/small_lr/refine_heldout_math500.json` is written. What the committed analysis says: the extra two points
# on the adapted questions come back as a loss of about three on fresh ones, in every seed (R1x *contradicted*), and
# COR 4x ends below the untrained model there.

# %%
display(Markdown(committed_markdown(
    R / "small_lr" / refine_math500.HELDOUT_ANALYSIS.name,
    lambda res: refine_math500.heldout_markdown(
        res, json.loads((R / "small_lr" / small_lr_refine.HELDOUT_ANALYSIS.name).read_text())),
    60, "python -m ddrl.study.amendments.refine_math500 status")))

# %% [markdown]
# And a gentler COR? Amendment 61 recomputes COR at a tenth of its learning rate (1e-6) from the same cached runs and
# evaluates it on the same fresh questions: K1x (COR at 1e-6 - the RL-only weights) and K2x (DDRL's COR at 1e-5 - COR
# at 1e-6), beside AMC-like's (Amendment 58). It appears once `results/small_lr/cor_lr10_heldout_math500.json` is
# written. What the committed analysis says: the gentle COR costs nothing on fresh questions (K1x *no effect*), the
# unscaled rate costs about a point more in every seed (K2x *contradicted*), as in AMC-like.

# %%
from ddrl.study.amendments import ttrl_heldout

display(Markdown(committed_markdown(
    R / "small_lr" / refine_math500.LR10_ANALYSIS.name,
    lambda res: refine_math500.heldout_markdown(
        res, json.loads((R / "small_lr" / ttrl_heldout.ANALYSIS.name).read_text()), 61),
    61, "python -m ddrl.study.amendments.refine_math500 status")))

# %% [markdown]
# The fourth corner of COR's size x rate square: Amendment 62 recomputes COR keeping 4x the rollouts at 1e-6 from the
# same cached runs, in AMC-like and MATH-500-like, on the adapted questions and on the 1,536 fresh ones: K1g / K1gx
# (against the RL-only weights) and R1g / R1gx (against COR 1x at 1e-6). The figure sets the four COR settings'
# mean adapted gain against their mean held-out change (description; the intervals are in the tables). It appears
# once `results/small_lr/cor4x_lr10_amc.json` is written. What the committed analysis says: COR 4x at 1e-6 gains on
# the adapted questions in both regimes (K1g, R1g *reproduced*) and costs a third of a point or less on fresh ones
# (K1gx *contradicted* in AMC-like, *no effect* in MATH-500-like): it buys half to two thirds of DDRL's COR gain at a
# third to a sixth of its fresh-question cost, and the more a COR setting gains, the more each point costs.

# %%
gentle = {r: R / "small_lr" / p.name for r, p in small_lr_refine.GENTLE_ANALYSIS.items()}
for path in gentle.values():
    display(Markdown(committed_markdown(path, small_lr_refine.gentle_markdown, 62,
                                        "python -m ddrl.study.amendments.small_lr_refine status")))
gentle_done = [json.loads(p.read_text()) for p in gentle.values() if p.is_file()]
if gentle_done:
    rep.draw("cor_trade", small_lr_refine.trade_figure, gentle_done, data=small_lr_refine.trade_frame(gentle_done))

# %% [markdown]
# Do those gains hold on questions the model did not adapt on? Amendment 57 evaluates the same cached runs (DDRL, its
# RL-only weights, COR 4x recomputed) and pairs them with the untrained model on H1x's 1,536 fresh AMC-like questions:
# H1x (DDRL - untrained), H1xC (COR's cost), R1x (COR 4x - DDRL). It appears once
# `results/small_lr/refine_heldout_amc.json` is written. What the committed analysis says: DDRL at lr/10 ends about a
# point and a half below the untrained model, most of it COR's, and COR 4x's extra two points on the adapted
# questions come back as a loss of about two on fresh ones, in every seed (all three *contradicted*).

# %%
display(Markdown(committed_markdown(R / "small_lr" / small_lr_refine.HELDOUT_ANALYSIS.name,
                                    lambda res: small_lr_refine.heldout_markdown(res, C.load(R / "claims.json")), 57,
                                    "python -m ddrl.study.amendments.small_lr_refine status")))

# %% [markdown]
# Two runs are missing beside DDRL on those fresh questions: TTRL itself, and a gentler COR. Amendment 58 trains
# TTRL's lr/10 runs again (their weights were not kept) and recomputes COR at 1e-6 from the cached RL-only weights,
# evaluates both on the same 1,536 fresh AMC-like questions, and pairs them with the committed evaluations: H1xT
# (TTRL - untrained), H1xD (DDRL - TTRL), H1xR (BCS+DAE - TTRL), K1x (COR at 1e-6 - BCS+DAE), K2x (DDRL - COR at
# 1e-6). It appears once `results/small_lr/ttrl_heldout_amc.json` is written. What the committed analysis says:
# TTRL keeps the untrained model's held-out accuracy (H1xT *no effect*), so DDRL's three-point lead on the adapted
# questions becomes a point behind TTRL on fresh ones, in every seed (H1xD *contradicted*); COR at 1e-6 costs nothing
# there (K1x *no effect*) and COR at the paper's 1e-5 costs about a point more (K2x *contradicted*). Every retrained
# TTRL run repeated its committed adapted results exactly.

# %%
from ddrl.study.amendments import ttrl_heldout

display(Markdown(committed_markdown(R / "small_lr" / ttrl_heldout.ANALYSIS.name,
                                    lambda res: ttrl_heldout.markdown(res, C.load(R / "claims.json")), 58,
                                    "python -m ddrl.study.amendments.ttrl_heldout status")))

# %% [markdown]
# Does adaptation at lr/10 transfer to held-out questions? Amendment 31 evaluates the lr/10 runs (TTRL, DDRL, and
# DDRL's RL-only weights) and the untrained model on H1x's 1,536 fresh MATH-500-like questions, seeds 0-17, and
# decides the H1x family there; beside each entry, the registered default-lr one (other seeds: read across). It
# appears once `results/small_lr/heldout.json` is written.
# What the committed analysis says (docs/results.md has the numbers): at lr/10 the held-out costs of the default
# learning rate mostly vanish - TTRL gains a little on the fresh questions (H1xT *reproduced*, +0.6), DDRL's
# difference is not resolved (-0.7) - but COR still costs about a point there (H1xC, H1xD *contradicted*), and DDRL
# ends a point below COR alone on the fresh questions (K4x *contradicted*), where COR alone stays level with the
# untrained model (K3x not resolved). The figure shows each run's level on the adapted and on the fresh questions.

# %%
heldout_path = R / "small_lr" / "heldout.json"
if heldout_path.is_file():
    hres = json.loads(heldout_path.read_text())
    display(Markdown(small_lr_cor.heldout_markdown(hres, C.load(R / "claims.json"))))
    if cor_path.is_file():
        rep.draw("small_lr_cor", small_lr_cor.figure, json.loads(cor_path.read_text()), hres,
                 data=pd.DataFrame(hres["seed_pass1"]))
else:
    display(Markdown("Amendment 31's analysis is not committed yet (`python -m ddrl.study.amendments.small_lr_cor status`)."))

# %% [markdown]
# Is COR alone beating DDRL a MATH-500-like peculiarity? Amendment 34 runs COR alone in the registered study's two
# other regimes, paired with their registered runs: AMC-like (19 seeds; against DDRL at the default learning rate,
# K5, and at lr/10, K4) and AIME-like (6 seeds), then on each regime's 1,536 fresh questions (K3x, K5x). Under the
# table, descriptive: each run's level and its majority vote (maj@16) on the adapted questions. It appears once
# `results/cor_alone/` is written.
# What the committed analysis says (docs/results.md has the numbers): in AMC-like COR alone gains about as much as
# DDRL on the adapted questions (K3 *reproduced*; DDRL - COR alone *not resolved* at both learning rates) and gains
# a little on the fresh ones (K3x *reproduced*), where DDRL ends ten points below it (K5x *contradicted*). AIME-like
# sits at the floor: COR alone neither gains nor loses, DDRL loses a point on the fresh questions.

# %% [markdown]
# The same questions on two other builds of the base model (the same pretraining recipe on other CPUs); the cell
# below renders all three builds' tables and figures, the registered one first. Amendment 35:
# the pinned `c49d994e...` build, where DDRL's registered win over TTRL at lr/10 did not replicate (Amendment 6), gets
# its untrained and COR-alone runs on its 19 seeds: K3 and K4 there (and P1, P2 in its scorecard,
# `results/replication_c49d/claims.json`). Amendment 36: the Xeon build `abcbf433...` (Amendment 5's replication),
# recovered and pinned, gets COR alone in AMC-like and MATH-500-like (K3, K5 beside its 12 seeds) and TTRL and DDRL at
# lr/10 on its first seeds (K4; P1, P2, M1 in `results/replication_xeon/claims.json`; Amendment 37 took those to 12
# seeds), and Amendment 38 evaluates its lr/10 runs on 1,536 fresh AMC-like questions (the H1x family at lr/10, in
# its own table beside the registered build's default-lr entries). What the committed analyses
# say is in docs/results.md; in short, on `c49d994e...` the lr/10 RL phase gains nothing measurable over the untrained
# model, COR alone still gains, and DDRL ends below COR alone in every seed (K4 *contradicted*).

# %%
from ddrl.study.amendments import cor_alone

for build, design in cor_alone.DESIGNS.items():  # the registered build (Amendment 34), then the two others
    got = cor_alone.committed(design)
    if got is None:
        display(Markdown(f"{design.tag}'s analysis is not committed yet "
                         f"(`python -m ddrl.study.amendments.cor_alone status --build {build}`)."))
        continue
    display(Markdown(cor_alone.report(got, design)))
    rep.draw(design.name, cor_alone.figure, *got, design=design, data=pd.DataFrame(got[0]["seed_pass1"]))

# %% [markdown]
# Amendment 38 compared the Xeon build's lr/10 held-out costs with the registered build's default-lr ones: two builds
# at once. Amendment 39 retrains that build's default-lr TTRL and DDRL runs (they reproduce Amendment 5's adapted rows)
# and evaluates them on the same fresh questions, so each method at lr/10 is paired with itself at the default learning
# rate on one build, seed by seed and question by question (LxT, LxD; the default-lr H1x family joins the
# replication's scorecard above). The table appears once `results/replication_xeon/lr_heldout.json` is written.

# %%
from ddrl.study.amendments import lr_heldout

display(Markdown(committed_markdown(lr_heldout.XEON / "lr_heldout.json", lr_heldout.markdown, 39,
                                    "python -m ddrl.study.amendments.lr_heldout status")))

# %% [markdown]
# Is that gain distance from the base? Amendment 40 measures each of those runs' held-out KL to the untrained model
# (TTRL, BCS+DAE and DDRL at both learning rates, seeds 0-9) and sets it against its held-out pass@1: W1-W3 ask whether
# lr/10 moves each method less far, W4 whether held-out accuracy falls with distance on this build too, and W7-W9
# whether the registered build's line (Amendment 21's slope) predicts each method's lr/10 gain from its distance alone.
# Amendment 41 adds COR alone (no RL), recomputed per seed: Y1 and Y2 ask whether it lies on that line.

# %%
from ddrl.study.amendments import lr_drift

lr_drift_path, cor_drift_path = lr_drift.XEON / "lr_drift.json", lr_drift.XEON / "cor_alone_drift.json"
cor_drift = json.loads(cor_drift_path.read_text()) if cor_drift_path.is_file() else None
if lr_drift_path.is_file():
    lr_drift_res = json.loads(lr_drift_path.read_text())
    display(Markdown(lr_drift.markdown(lr_drift_res)))
    if cor_drift is not None:  # Amendment 41: where COR alone (no RL) lies on the same line
        display(Markdown(lr_drift.cor_markdown(cor_drift)))
    rep.draw("lr_drift", lr_drift.figure, lr_drift_res, cor_drift, data=pd.DataFrame(lr_drift_res["runs"]))
else:
    display(Markdown("Amendment 40's analysis is not committed yet (`python -m ddrl.study.amendments.lr_drift status`)."))

# %% [markdown]
# Two readings of those runs remain: one straight line through the base (L), or a free start of ~3.4 units near the
# base, then a steeper line (H). Both were fitted on Amendment 40's runs; Amendment 42 trains the three methods at a
# third learning rate (lr/3, where the readings differ most) and asks which one the new runs lie nearer (Z1; Z2 with
# the registered slope), and whether each predicts them within a point (Z3, Z4). The right panel shows what each
# learning rate trades: gain on the adapted questions against gain on fresh ones.

# %%
from ddrl.study.amendments import lr_curve

lr_curve_path = lr_curve.XEON / "lr_curve.json"
if lr_curve_path.is_file():
    lr_curve_res = json.loads(lr_curve_path.read_text())
    display(Markdown(lr_curve.markdown(lr_curve_res)))
    rep.draw("lr_curve", lr_curve.figure, lr_curve_res, lr_curve.amendment40_runs(), lr_curve.x3h_slope(),
             data=pd.DataFrame(lr_curve_res["runs"]))
else:
    display(Markdown("Amendment 42's analysis is not committed yet (`python -m ddrl.study.amendments.lr_curve status`)."))

# %% [markdown]
# ## Why BCS's negatives cost held-out accuracy: policy drift (plan Amendment 21)
#
# H1xN says *that* choosing the rarest answers as negatives costs held-out accuracy in AMC-like; the runs' step
# logs suggest *why*. `actor/kl` is the k3 estimate of KL(policy || reference) on each step's trained rollouts;
# its mean over the last two episodes ("late KL") measures how far a run moved from the base model. Read after
# the results (exploratory, left panel), BCS moved further than the random-negatives rule and held-out accuracy
# fell with the distance in both. Amendment 21 registered that reading as four predictions (X1-X4) and tested them
# on new seeds, on a GPU and on the CPU; each set of runs is analysed on its own. Because late KL is measured on
# each rule's own trained rollouts (BCS's include the rarest answers it pushes down), an addendum measured a second
# distance, the held-out KL: the final policy's own samples of 256 fresh questions against the base (X2h-X4h; CPU
# runs only, the GPU's weights stayed on the device). One point per run; the lines are each method's fit at the
# common within-method slope.

# %%
from ddrl.study import drift
from ddrl.study import drift_data

drift_sets = {"exploratory": "amc_like_exploratory", "H100": "amc_like_gpu", "Xeon": "amc_like_cpu"}
drift_files = [(k, R / "drift" / f"{f}{sfx}.json") for sfx in ("", "_heldout_kl") for k, f in drift_sets.items()]
drift_rows = [dict(e, runs=k) for k, p in drift_files if p.is_file() for e in json.loads(p.read_text())]
if drift_rows:
    dt = pd.DataFrame(drift_rows)
    dt["interval"] = [fmt_ci(e, lo, hi, "+.2f") for e, lo, hi in zip(dt.estimate, dt.ci_low, dt.ci_high)]
    display(dt.pivot(index=["id", "metric"], columns="runs", values=["interval", "verdict"])
            .reindex(columns=[k for k in drift_sets if k in set(dt.runs)], level=1))
    tables = {t: drift_data.seed_table(R.parent / o, "amc_like", drift_dir=R.parent / d if d else None)
              for t, o, d in drift.PANELS if (R.parent / (d or o) / drift_data.DRIFT / "amc_like").is_dir()}
    for x, name in (("kl_late", "drift_kl_heldout"), ("kl_heldout", "drift_heldout_kl")):
        if any(t[x].notna().any() for t in tables.values()):
            rep.draw(name, drift.drift_figure, tables, x, data=pd.concat(tables, names=["runs"]).reset_index(level=0))

# %% [markdown]
# ### Moving the distance by hand: BCS with a stronger KL penalty (plan Amendment 22)
#
# The reading above compares runs that drifted different amounts on their own, so it is correlational.
# Amendment 22 intervenes on the distance: BCS with the update's KL penalty 10x and 100x stronger (nothing else
# changes), on the same seeds as the Xeon confirmation. K1: does the held-out KL fall? K2: does held-out pass@1
# rise (beside it, `predicted`: what Amendment 21's within-rule slope makes of K1)? K3: at equal held-out KL, do
# the penalised runs lie on BCS's own line (inside +-1 point)? The dashed line is that slope through BCS's runs.

# %%
dose_path = R / "drift" / "amc_like_cpu_kl_dose.json"
if dose_path.is_file():
    dd = pd.DataFrame(json.loads(dose_path.read_text()))
    dd["interval"] = [fmt_ci(e, lo, hi, "+.2f") for e, lo, hi in zip(dd.estimate, dd.ci_low, dd.ci_high)]
    display(dd[["id", "arm", "metric", "interval", "predicted", "verdict", "n_seeds"]].round(2))
    dose_table = drift.arms_table(R.parent / drift.DOSE_OUT, "amc_like", "dose")
    if dose_table is not None:
        rep.draw("drift_kl_dose", drift.arms_figure, dose_table,
                 drift.x3h_slope(R / "drift" / "amc_like_cpu_heldout_kl.json"), data=dose_table)

# %% [markdown]
# ### Across methods: one line for TTRL, BCS and DDRL? (plan Amendment 23)
#
# If the distance from the base is what costs held-out accuracy, the registered methods should differ in how far
# they move the policy, not in what a unit of distance costs. Z1 and Z2: at equal held-out KL, TTRL and DDRL lie
# on BCS's line (inside +-1 point); Z3 and Z4: TTRL moves less far than BCS, DDRL further. `Za` (held-out) and
# `Ad` (the adapted questions) are descriptive. The Xeon's runs (seeds 100-115) and one H100 call's (seeds
# 100-104) are analysed apart; the dashed line is Amendment 21's slope through BCS's Xeon runs. Amendment 24
# asks the same in MATH-500-like (Xeon, seeds 100-110; `python -m ddrl.study.drift figure --regime math500_like`).

# %%
methods_rows = [dict(e, runs=k) for k, f in (("Xeon", "amc_like_cpu_methods"), ("H100", "amc_like_gpu_methods"),
                                             ("Xeon, MATH-500-like (Amendment 24)", "math500_like_cpu_methods"))
                if (R / "drift" / f"{f}.json").is_file() for e in json.loads((R / "drift" / f"{f}.json").read_text())]
if methods_rows:
    dm = pd.DataFrame(methods_rows)
    dm["interval"] = [fmt_ci(e, lo, hi, "+.2f") for e, lo, hi in zip(dm.estimate, dm.ci_low, dm.ci_high)]
    display(dm[["runs", "id", "arm", "metric", "interval", "verdict", "n_seeds"]])
    methods_table = drift.arms_table(R.parent / drift.DOSE_OUT, "amc_like", "methods")
    if methods_table is not None:
        rep.draw("drift_methods", drift.arms_figure, methods_table,
                 drift.x3h_slope(R / "drift" / "amc_like_cpu_heldout_kl.json"), "methods", data=methods_table)

# %% [markdown]
# ### The paper's methods with the stronger KL penalty (plan Amendment 25)
#
# Amendment 22's penalty won back held-out accuracy for BCS. Does the same knob work on the paper's methods, and
# what does it cost where they adapt? TTRL and DDRL with kl_coef 0.1 (100x; DDRL's COR step has no KL term), each
# against its own unpenalised runs of the same seeds (not BCS): L1 held-out KL falls, L2 held-out pass@1 rises
# (`predicted`: Amendment 21's slope x L1), L3 on the method's line at equal KL, and L4 - registered - the
# difference on the adapted questions, inside +-1 point. The plan said beforehand that L4 is question-bound
# (half-widths >= 1.4 at 16 seeds in AMC-like), so it can only be *contradicted* or *not resolved*; its
# interval's lower end is the largest adapted cost the data leave open. Each regime is analysed apart.

# %%
penalty_rows = [dict(e, regime_runs=k) for k, f in (("AMC-like", "amc_like_cpu_penalty"),
                                                     ("MATH-500-like", "math500_like_cpu_penalty"))
                if (R / "drift" / f"{f}.json").is_file() for e in json.loads((R / "drift" / f"{f}.json").read_text())]
if penalty_rows:
    dp = pd.DataFrame(penalty_rows)
    dp["interval"] = [fmt_ci(e, lo, hi, "+.2f") for e, lo, hi in zip(dp.estimate, dp.ci_low, dp.ci_high)]
    display(dp[["regime_runs", "id", "arm", "metric", "interval", "predicted", "verdict", "n_seeds"]].round(2))
    penalty_table = drift.arms_table(R.parent / drift.DOSE_OUT, "amc_like", "penalty")
    if penalty_table is not None:
        rep.draw("drift_penalty", drift.arms_figure, penalty_table,
                 drift.x3h_slope(R / "drift" / "amc_like_cpu_heldout_kl.json"), "penalty", data=penalty_table)
else:
    display(Markdown("Amendment 25's runs are not committed yet."))

# %% [markdown]
# ## Replications on other builds of the base model
#
# The testbed's pretraining gives other weights on another CPU (`docs/testbed.md`), and the registered study's
# build was not committed as files until plan Amendment 7, so sessions in between ran pre-registered
# replications (plan Amendments 5 and 6): the
# registered regimes verbatim on a second draw of the base model, never pooled with the registered study. Each
# has its own verdicts; set beside the registered estimate, the comparison is descriptive.

# %%
replications = {p.parent.name: C.load(p) for p in sorted(D.glob("replication_*/claims.json"))}
if results is not None:
    for name, entries in replications.items():
        if entries:
            table = C.replication_table({"registered": results, name: entries})
            rep.table(table, f"{name}_vs_registered")
            rep.draw(f"{name}_vs_registered", C.replication_figure, {"registered": results, name: entries}, data=table)
            display(table)
if not any(replications.values()):
    display(Markdown("No replication has a scorecard yet."))

# %% [markdown]
# ## What we measured

# %%
sel = base["selected"]
b = power["budget"]
br = {n: r["classes"]["between_run"] for n, r in power["regimes"].items()}
lines = [
    "Regimes from the base model only: " + "; ".join(
        f"{r['name']} = {r['num_ops']}-operation chains ({r['n_adapted']} questions, {r['episodes']} episodes, "
        f"lr {r['lr']:.0e}; base maj@64 {r['base']['maj@64']:.2f}, pass@1 {r['base']['pass@1']:.2f})"
        for r in base["regimes"]) + ".",
    "Power: between-run comparisons (e.g. DDRL vs TTRL) need " + "; ".join(
        f"{(c['cheapest_design'] or {}).get('seeds', '> 64')} seeds at "
        f"{(c['cheapest_design'] or {}).get('questions', '-')} questions in {n}" for n, c in br.items())
    + " for a 95% half-width <= 2 points, because the pilot's run-to-run spread is large (seed variance "
    + ", ".join(f"{c['components']['seed']:.0f}" for c in br.values()) + " points^2).",
    f"Budget: every claim's runs cost ~{b['total_minutes_per_seed']:.0f} min per seed on 2 cores today, so the "
    f"4-hour study affords {b['seeds_in_budget_today']} seeds ({b['seeds_in_budget_2x_runner']} with a 2x faster "
    "runner): fewer than the between-run comparisons need, as `results/plan.md` says.",
]
if results is not None:
    counts = pd.Series([e["verdict"] for e in results]).value_counts().to_dict()
    lines.append("Verdicts: " + ", ".join(f"{v} {counts.get(v, 0)}" for v in C.VERDICTS) + ".")
    if not shortfall.empty:
        never = shortfall[shortfall.seeds_needed.isna()]
        lines.append(f"{len(shortfall)} pass@1 comparison(s) missed the 2-point half-width: "
                     + ", ".join(f"{r.id} {r.regime} ({r.half_width:.1f})" for r in shortfall.itertuples())
                     + (f"; for {', '.join(f'{r.id} {r.regime}' for r in never.itertuples())} no number of seeds "
                        "would reach it on these questions" if not never.empty else "") + ".")
else:
    lines.append("No verdicts yet: " + ("the study has not been run." if prog.empty else
                 f"the study is under way ({int(prog.n_seeds.sum())} method x seed CSVs written)."))
rep.metrics({"regimes": sel, "budget": b, "study_run": results is not None, "study_scale": study_scale,
             "study_jobs": None if study_log is None else study_log["jobs"],
             "study_csvs": int(prog.n_seeds.sum()) if not prog.empty else 0, "stage1_seeds": (stage1 or {}).get("seeds"),
             "verdicts": None if results is None else [e["verdict"] for e in results]})
display(Markdown("\n\n".join(lines)))

# %% [markdown]
# ## Try this
#
# 1. Which variance component limits the half-width? Recompute `ddrl.report.stats.power_table` with the seed
#    component halved: how many seeds does DDRL vs TTRL need then?
# 2. Why does COR vs its own RL weights (A3) need so few seeds compared with DDRL vs TTRL (M1)?
# 3. The regimes are chosen from the base model only. What could go wrong if they were chosen after seeing
#    which regime shows the largest DDRL gain?
# 4. In the figure of adapted and fresh held-out questions, how much of DDRL's held-out loss against TTRL
#    comes from COR and how much from its RL phase (claims H1xC and H1xR)? Why can the two claims' intervals
#    be narrower than H1xD's, of which they are the parts? In AMC-like, split the RL phase's part once more into
#    BCS's and DAE's (H1xB + H1xA = H1xR), and BCS's into its balanced positives and its rarest-answer negatives
#    (H1xP + H1xN = H1xB, plan Amendment 19).
