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
# # 06 · The claims study: what the paper claims, and what holds on a model you can train yourself
#
# The paper reports one run per cell, without seeds or intervals. This notebook is the study that decides its
# claims on the testbed, as a lecture in four steps.
#
# 1. **What was asked.** Each claim of the paper becomes a paired comparison with an id and a predicted sign
#    (`ddrl.study.claims`): TTRL, ETMR and DDRL against no adaptation (P1-P3), DDRL against TTRL and ETMR (M1, M2),
#    the ablation of DDRL's parts (A1-A3), COR against more RL (C1, C2), refinement size (R1), the frequency bands
#    and the amplification of wrong labels (F1-F3, G1, N1, N2), the advantage's course (D1, D2). The companion adds
#    its own questions, marked *(ours)*: does what the methods learn transfer to fresh questions?
# 2. **How it was decided.** Three regimes stand for AIME 2024, AMC and MATH-500, chosen from the untrained model's
#    properties only, before any method ran. Every comparison is paired (same questions, same seeds), its 95%
#    interval comes from a hierarchical bootstrap over seeds and questions, the number of seeds from a power
#    analysis, and the verdict from a rule written down before the first comparison ran (`results/plan.md`):
#
# | verdict | 95% interval of the effect |
# |---|---|
# | reproduced | excludes 0 on the paper's side |
# | contradicted | excludes 0 on the other side |
# | no effect | inside +-1 point |
# | not resolved | otherwise |
#
#    A *floor* marks a regime where both methods score 0 on every question of every seed: the rule's verdict
#    stands, but such a regime cannot tell the methods apart (`ddrl.study.analysis.at_floor`).
# 3. **What holds**, first in one answer and one table, then claim family by claim family, each with its figure.
# 4. **Why**: the distance a run moves from the untrained model, and how the results hold on other builds.
#
# Nothing is trained here: by default it renders from the committed results in `results/` in seconds, and nothing
# it imports loads torch (each figure whose function, data, style and code are unchanged is copied from the
# committed store in `docs/results/`). The `study` preset (`python -m ddrl.run.reproduce --preset study --only 06`)
# reruns the whole study, resumably; the `smoke` preset runs the same path on the tiny testbed in about a minute.
# The same numbers, ordered by claim, are on the results page (`docs/results.md`, `make docs`).

# %% tags=["parameters"]
# --- runner (set by `python -m ddrl.run.reproduce`) ---
preset = "default"  # which params/<preset>/ file the runner used
output_dir = "../outputs/interactive"  # figures/, tables/, metrics/ go here
seed = 0  # ddrl.seeds.DEFAULT_SEED (unused: this notebook only reads committed results)

# --- committed results ---
results_dir = "../results"  # regimes_base.json, power.json, claims.json (relative to notebooks/)
claims_file = "claims.json"  # the study's scorecard; absent until the study has run
tables_dir = "../docs/results"  # the tables behind the study's figures, as `analyse claims` wrote them (empty: compute)

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
from ddrl.study import page as PG
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
# ## The answer: does DDRL beat TTRL, and what holds?
#
# Computed from the committed analyses (the registered study and every later design on the same build of the base
# model; `ddrl.study.page`, which also writes `docs/results.md`): first DDRL against TTRL, then every claim grouped
# by its verdict, then one row per claim. The paper's numbers are Qwen2.5-Math-1.5B's; the testbed's effects are
# smaller almost everywhere, so read the sign and the verdict, not the size.

# %%
gathered = PG.gather(R)
glance = pd.DataFrame(PG.table(gathered))
if not glance.empty:
    rep.table(glance, "at_a_glance")
display(Markdown("\n".join(PG.answer(gathered, figure=False) + [""] + PG.standing_lines(gathered)[2:])), PG.glance_table(gathered))
in_words = PG.figure_rows(gathered)  # the paper's claims at lr/10 in words, beside the paper's numbers
if in_words:
    rep.draw(PG.FIGURE, PG.claims_figure, in_words, data=pd.DataFrame(in_words))
if not glance.empty and (glance.lr10 != "-").any():  # the lr/10 comparisons beside their default-lr twins
    rep.draw("at_a_glance", C.replication_figure, PG.learning_rates(gathered))

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
# replayed on every base question 64 times): about a minute of computing. `python -m ddrl.study analyse claims`
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
# Left, the paper's Fig. 4 (D1, D2): the mean advantage of each RL batch during training, TTRL against DDRL, the
# mean over seeds with a 95% band. GRPO's normalisation centres every group, so TTRL's curve sits at 0 by
# construction; DDRL's fixed +1/-1 advantages let the balance of positive and negative samples show. Right, the
# paper's Fig. 2 (F1-F3): how often a distinct answer of the untrained model is right, by how many of its 64
# samples gave it, with the claims' bands shaded (<= 5 red, >= 45 green).

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
# ## Amplification, part 1: what BCS keeps of the untrained model's rollouts (E1, E2)
#
# The paper explains DDRL by what BCS selects: its negatives are the rarest answers, so fewer correct answers get a
# negative reward (E1), and low-consensus, often wrong, labels are less likely to be selected (E2). Both are
# properties of the selection rule on 64 rollouts per question, no training involved. Left, the false positives
# kept per question by the label's count c*: BCS keeps min(c*, 16) copies of the label where random K keeps c*/2,
# so below c* = 32 it keeps *more* of a wrong label. Right, the share of correct answers among the kept negatives.
# The scorecard's `svamp_codex` rows measure the same claims on a real LLM's samples (code-davinci-002 on SVAMP).

# %%
from ddrl.study.figures import selection_errors_figure

if results is not None:
    rep.draw("selection_errors", selection_errors_figure, T["selection_errors"], data=T["selection_errors"])

# %% [markdown]
# ## Amplification, part 2: where TTRL's wrong rewards come from (N1, N2)
#
# The paper names answers of medium frequency "the primary source of reward noise". TTRL votes a pseudo-label on
# each question's rollouts and rewards agreement; a reward is wrong when it disagrees with the rollout's
# correctness. Each rollout sits in the band of its own answer's count (F1-F3's bands). N1 asks whether the middle
# band carries more than half of all wrong rewards, N2 whether its rollouts are rewarded wrongly more often than the
# outer bands'. Left, each band's share of the wrong rewards; right, how often its rollouts are rewarded wrongly.

# %%
from ddrl.study.analysis import noise_summary
from ddrl.study.figures import reward_noise_figure

if results is not None:
    noise = T["reward_noise"]
    rep.table(noise, "reward_noise", floatfmt=".1f")
    rep.draw("reward_noise", reward_noise_figure, noise, data=noise)
    display(Markdown(noise_summary(noise, results)))

# %% [markdown]
# ## Transfer: the adapted questions and fresh ones (P1, P2 and the H1x family)
#
# Test-time RL trains on the questions it is tested on. Left of each panel, pass@1 on those adapted questions;
# right, on 1,536 fresh questions of the same kind that no run trained on, for the untrained model, TTRL, BCS,
# BCS+DAE (DDRL's RL phase) and DDRL, averaged over seeds with a 95% interval. The paper's Table 2 has the left half
# only; the right half is the companion's question. The claims' intervals are the paired ones of the tables; the
# figure shows the levels they are differences of.

# %%
from ddrl.study.figures import transfer_figure

if results is not None:
    rep.draw("heldout_transfer", transfer_figure, T["heldout_transfer"], data=T["heldout_transfer"])

# %% [markdown]
# ## The main table at the default learning rate, on three times the questions
#
# In MATH-500-like the gains over the untrained model (P1, P2) vary between questions, which no number of seeds
# averages out. The same comparisons on the stream's first 768 questions (the registered 256 first) decide them with
# more questions; some seeds ran on a GPU, with a check that the device does not shift the effect.

# %%
from ddrl.report.tables import fmt_ci

wide_path = R / "wide" / "claims.json"
if wide_path.is_file():
    wres = json.loads(wide_path.read_text())
    wd = pd.DataFrame([dict(e, seeds="all") for e in wres["all_seeds"]] + [dict(e, seeds="CPU only") for e in wres["cpu_seeds"]])
    wd["interval"] = [fmt_ci(e, lo, hi, "+.2f") for e, lo, hi in zip(wd.estimate, wd.ci_low, wd.ci_high)]
    display(wd[["id", "seeds", "paper", "interval", "half_width", "verdict", "n_seeds", "n_questions"]].round(2))
    display(pd.DataFrame(wres["device_check"]).T.round(2))
else:
    display(Markdown("Amendment 26's analysis is not committed yet (`python -m ddrl.study status wide` says how far it is)."))

# %% [markdown]
# Why longer runs lose: left, each run's adapted pass@1; right, the vote over the four quarters of each run's RL
# steps: the share of rollouts agreeing with the majority answer, and how often that answer is right. A vote that
# grows more confident while it is right less often is the amplification the paper describes. TTRL and DDRL with a
# 100x stronger KL penalty are set beside them (Q1-Q4): does holding the policy near the untrained model stop it?

# %%
from ddrl.study import designs
from ddrl.study.runner import committed_table
from ddrl.study.analysis import level_table

if wide_path.is_file():
    wide = SF.wide_figure_tables(R / "wide")  # the arms only once arms.json is written
    rep.draw("wide_vote", SF.design_figure, designs.DESIGNS["wide_arms"], wide, data=pd.DataFrame(wide["vote"]))
display(Markdown(committed_table("wide_arms")))  # Amendment 27
if (R / "wide" / "arms.json").is_file():
    # descriptive: each method's adapted pass@1 over Amendment 27's seeds (unpenalised runs: CPU seeds 200-211)
    display(level_table(SF.seed_levels(R / "wide", seeds=designs.DESIGNS["wide_arms"].seeds)).round(2))

# %% [markdown]
# ## The main table at the paper's small learning rate (lr/10)
#
# The paper's setting uses a small learning rate. At a tenth of the testbed's default rate and twice the episodes,
# the same rule decides P1, P2 and M1 in MATH-500-like (the default-lr entries are in the at-a-glance table above);
# after the claims, each run's level and the vote over training at both learning rates (descriptive).

# %%
from ddrl.study import designs
from ddrl.study.runner import committed_table

display(Markdown(committed_table("small_lr")))  # Amendment 28: the claims, then each run's level
if args := SF.design_figure_args("small_lr"):
    rep.draw("small_lr", SF.design_figure, *args, data=pd.DataFrame(args[1]["vote"]))

# %% [markdown]
# ## The ablation: which part of DDRL carries its margin over TTRL? (A1-A3)
#
# The paper's Table 3 adds DDRL's parts to TTRL one at a time: BCS (A1: BCS - TTRL), then DAE (A2: BCS+DAE - BCS),
# then COR (A3: DDRL - BCS+DAE, where BCS+DAE is the DDRL runs' own weights before COR), at lr/10 in MATH-500-like and
# AMC-like. After each design's claims, descriptive: how DDRL - TTRL splits into the three parts, and each method's
# level.

# %%
from ddrl.study import designs
from ddrl.study.runner import committed_table

for name in ("ablation", "ablation_amc"):  # Amendment 29 (MATH-500-like), 55 (AMC-like)
    display(Markdown(committed_table(name)))

# %% [markdown]
# ## DDRL against ETMR, the stronger baseline (P3, M2, M3)
#
# The paper's headline table also sets DDRL against ETMR (entropy-fork tree rollouts). ETMR runs at lr/10 on the same
# regimes and seeds, on the registered build and on a second one (the Xeon build); P3 (ETMR - no adaptation), M2
# (DDRL - ETMR) and M3 (ETMR - TTRL) are decided by the same rule. The figure shows each seed's level per method at
# both learning rates.

# %%
for name in ("small_lr_etmr", "small_lr_etmr_xeon", "small_lr_etmr_xeon_amc", "small_lr_etmr_amc"):  # A43, 44, 46, 47
    display(Markdown(committed_table(name)))
    if args := SF.design_figure_args(name):
        rep.draw(name, SF.design_figure, *args, data=pd.DataFrame(args[1]["seed_pass1"]))

# %% [markdown]
# The same runs on the 1,536 fresh questions, nothing trained: P3x asks whether ETMR's adaptation transfers, M2x and
# M3x whether DDRL's and ETMR's places on the adapted questions carry over.

# %%
for name in ("etmr_heldout", "etmr_heldout_xeon"):  # Amendment 45 (registered build, Xeon build)
    display(Markdown(committed_table(name)))
display(Markdown("Amendment 46's held-out part (Xeon build, amc_like_small_lr) was not run: its ETMR runs' weights were "
                 "lost with the Xeon machine's cache (plan note of 2026-12-01)."))
display(Markdown(committed_table("etmr_heldout_amc")))  # Amendment 48

# %% [markdown]
# ## COR: its learning rate, its size, and what it costs
#
# COR fine-tunes on the model's own consensus answers after the RL phase, at the paper's SFT learning rate, ten
# times the RL phase's at lr/10. Two arms separate the rate from the step, each one COR call then evaluated: COR at a
# tenth of its rate from the RL-only weights (K1: does COR still add at the scaled rate? K2: what the rate adds,
# K1 + K2 = A3), and COR alone, from the untrained model with no RL phase (K3: does it gain? K4: does DDRL's RL phase
# add to it?).

# %%
display(Markdown(committed_table("cor_math500")))

# %% [markdown]
# **Refinement size** (R1, the paper's Table 6: keeping four times the rollouts barely matters), in AMC-like at lr/10,
# with COR at a tenth of its rate beside it: each arm is one COR call from each seed's cached RL-only weights.

# %%
display(Markdown(committed_table("refine_amc")))

# %% [markdown]
# R1 in the paper's own setting for Table 6, MATH-500-like at lr/10: each seed's DDRL run is trained again (a check
# compares it with the committed run) and refined keeping four times the rollouts.

# %%
display(Markdown(committed_table("refine_math500")))

# %% [markdown]
# Does the larger refinement's extra gain hold on questions the model did not adapt on? R1x: COR 4x - DDRL on the
# 1,536 fresh MATH-500-like questions (AMC-like's is Amendment 57's, in the transfer section below).

# %%
display(Markdown(committed_table("refine_heldout_math500")))

# %% [markdown]
# And a gentler COR on fresh questions: K1x (COR at a tenth of its rate - the RL-only weights) and K2x (DDRL's COR
# at the full rate - the gentle one); AMC-like's are Amendment 58's, below.

# %%
display(Markdown(committed_table("cor_lr10_heldout_math500")))

# %% [markdown]
# The four corners of COR's size x rate square, on the adapted questions and on the fresh ones: K1g / K1gx (COR 4x at
# a tenth of its rate against the RL-only weights) and R1g / R1gx (against COR 1x at that rate). The figure sets each
# setting's mean adapted gain against its mean change on fresh questions: what a point gained on the adapted
# questions costs on fresh ones (description; the intervals are in the tables).

# %%
gentle = [designs.DESIGNS[name] for name in ("cor4x_lr10_amc", "cor4x_lr10_math500")]
for design in gentle:
    display(Markdown(committed_table(design.id)))
gentle_done = [json.loads(d.analysis.read_text()) for d in gentle if d.analysis.is_file()]
if gentle_done:
    rep.draw("cor_trade", SF.trade_figure, gentle_done, data=SF.trade_frame(gentle_done))

# %% [markdown]
# ## Transfer at lr/10: what adaptation keeps on fresh questions
#
# In AMC-like at lr/10, the same cached runs on the 1,536 fresh questions: H1x (DDRL - untrained), H1xC (COR's cost:
# DDRL - BCS+DAE), R1x (COR 4x - DDRL).

# %%
display(Markdown(committed_table("refine_heldout_amc")))

# %% [markdown]
# TTRL beside DDRL on the same fresh AMC-like questions, and COR at a tenth of its rate: H1xT (TTRL - untrained), H1xD
# (DDRL - TTRL), H1xR (BCS+DAE - TTRL), K1x and K2x.

# %%
display(Markdown(committed_table("ttrl_heldout_amc")))

# %% [markdown]
# The same in MATH-500-like at lr/10: TTRL, DDRL and DDRL's RL-only weights on the fresh questions (the default
# learning rate's entries, on other seeds, are in the at-a-glance table). The figure shows each run's level on the
# adapted and on the fresh questions, with COR's arms.

# %%
display(Markdown(committed_table("heldout_math500")))
if args := SF.design_figure_args("small_lr_cor"):
    rep.draw("small_lr_cor", SF.design_figure, *args, data=pd.DataFrame(args[2]["seed_pass1"]))

# %% [markdown]
# **COR alone** in every regime and on three builds of the base model: does the consensus fine-tuning alone, with no
# RL phase, gain over the untrained model (K3), and does DDRL beat it (K4 at lr/10, K5 at the default rate)? Then the
# same on each regime's fresh questions (K3x, K5x). After each design's claims, each run's level and its majority vote.

# %% [markdown]
# The cell renders the registered build first, then the two other builds (the same pretraining recipe on other
# CPUs), each with its own seeds and verdicts, never pooled.

# %%
for name in ("cor_alone", "cor_alone_c49d", "cor_alone_xeon"):  # the registered build (Amendment 34), then the others
    display(Markdown("\n".join(committed_table(t) for t in SF.DESIGN_FIGURES[name] if t)))  # adapted, then held-out
    if args := SF.design_figure_args(name):
        rep.draw(name, SF.design_figure, *args, data=pd.DataFrame(args[1]["seed_pass1"]))

# %% [markdown]
# ## Why adaptation costs on fresh questions: the distance from the untrained model
#
# First, each method at lr/10 paired with itself at the default rate on one build, seed by seed and question by
# question, on the fresh questions (LxT, LxD): does the smaller rate keep more?

# %%
display(Markdown(committed_table("lr_heldout")))  # Amendment 39

# %% [markdown]
# Is that the distance from the base? Each run's KL to the untrained model on the fresh questions against its
# held-out pass@1, at both learning rates: W1-W3 ask whether lr/10 moves each method less far, W4 whether held-out
# accuracy falls with distance, W7-W9 whether one line predicts each method's gain from its distance alone; Y1, Y2
# place COR alone on that line.

# %%
from ddrl.study.drift import lr_curve_figure, lr_drift_figure, x3h_slope
from ddrl.study.measures import amendment40_runs

lr_drift_path, cor_drift_path = designs.XEON / "lr_drift.json", designs.XEON / "cor_alone_drift.json"
cor_drift = json.loads(cor_drift_path.read_text()) if cor_drift_path.is_file() else None
display(Markdown(committed_table("lr_drift")))  # Amendment 40
if lr_drift_path.is_file():
    lr_drift_res = json.loads(lr_drift_path.read_text())
    if cor_drift is not None:  # Amendment 41: where COR alone (no RL) lies on the same line
        display(Markdown(committed_table("cor_alone_drift")))
    rep.draw("lr_drift", lr_drift_figure, lr_drift_res, cor_drift, data=pd.DataFrame(lr_drift_res["runs"]))

# %% [markdown]
# Two readings of those runs: one straight line through the base (L), or a free start near the base, then a steeper
# line (H). A third learning rate, where the readings differ most, decides which one new runs lie nearer (Z1, Z2) and
# whether each predicts them within a point (Z3, Z4). Right: what each learning rate trades, the gain on the adapted
# questions against the gain on fresh ones.

# %%
lr_curve_path = designs.XEON / "lr_curve.json"
display(Markdown(committed_table("lr_curve")))  # Amendment 42
if lr_curve_path.is_file():
    lr_curve_res = json.loads(lr_curve_path.read_text())
    rep.draw("lr_curve", lr_curve_figure, lr_curve_res, amendment40_runs(), x3h_slope(),
             data=pd.DataFrame(lr_curve_res["runs"]))

# %% [markdown]
# ### The distance, run by run: BCS's negatives and policy drift
#
# Choosing the rarest answers as negatives (BCS) costs held-out accuracy in AMC-like (H1xN). The runs' step logs say
# why: `actor/kl` estimates KL(policy || reference) on each step's rollouts, and its mean over the last two episodes
# ("late KL") measures how far a run moved from the untrained model. Registered predictions (X1-X3): BCS moves further
# than the random-negatives rule, and held-out accuracy falls with the distance within each rule; decided on two
# machines (an H100 and a Xeon CPU), beside the first, exploratory reading.

# %%
from ddrl.study import drift

drift_sets = {"exploratory": "amc_like_exploratory", "H100": "amc_like_gpu", "Xeon": "amc_like_cpu"}
drift_files = [(k, R / "drift" / f"{f}{sfx}.json") for sfx in ("", "_heldout_kl") for k, f in drift_sets.items()]
drift_rows = [dict(e, runs=k) for k, p in drift_files if p.is_file() for e in json.loads(p.read_text())]
if drift_rows:
    dt = pd.DataFrame(drift_rows)
    dt["interval"] = [fmt_ci(e, lo, hi, "+.2f") for e, lo, hi in zip(dt.estimate, dt.ci_low, dt.ci_high)]
    display(dt.pivot(index=["id", "metric"], columns="runs", values=["interval", "verdict"])
            .reindex(columns=[k for k in drift_sets if k in set(dt.runs)], level=1))
    tables = {t: drift.seed_table(R.parent / o, "amc_like", drift_dir=R.parent / d if d else None)
              for t, o, d in drift.PANELS if (R.parent / (d or o) / drift.DRIFT / "amc_like").is_dir()}
    for x, name in (("kl_late", "drift_kl_heldout"), ("kl_heldout", "drift_heldout_kl")):
        if any(t[x].notna().any() for t in tables.values()):
            rep.draw(name, drift.drift_figure, tables, x, data=pd.concat(tables, names=["runs"]).reset_index(level=0))

# %% [markdown]
# ### Moving the distance by hand: BCS with a stronger KL penalty
#
# The reading above is correlational. Here the distance is set by hand: BCS with the update's KL penalty 10x and 100x
# stronger, nothing else changed. K1: does the held-out KL fall? K2: does held-out pass@1 rise (`predicted`: what the
# slope above makes of K1)? K3: at equal distance, do the penalised runs lie on BCS's own line? The dashed line is
# that slope.

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
# ### Across methods: one line for TTRL, BCS and DDRL?
#
# If the distance is what costs held-out accuracy, the methods should differ in how far they move, not in what a unit
# of distance costs. Z1, Z2: at equal distance TTRL and DDRL lie on BCS's line; Z3, Z4: TTRL moves less far than BCS,
# DDRL further. On two machines and in MATH-500-like.

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
# ### The paper's methods with the stronger KL penalty
#
# Does the same knob work on TTRL and DDRL, and what does it cost where they adapt? Each with a 100x KL penalty against
# its own unpenalised runs of the same seeds: L1 the distance falls, L2 held-out pass@1 rises, L3 on the method's line
# at equal distance, and L4 the difference on the adapted questions, inside +-1 point.

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
# ## Builds: the registered study beside its replications
#
# The testbed's pretraining gives other weights on another kind of CPU (`docs/testbed.md`): another build of the base
# model. Two builds replicate the registered regimes verbatim with their own seeds; each has its own verdicts, and set
# beside the registered estimate the comparison is descriptive.

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
# 3. The regimes are chosen from the untrained model only. What could go wrong if they were chosen after seeing
#    which regime shows the largest DDRL gain?
# 4. In the figure of adapted and fresh questions, how much of DDRL's held-out loss against TTRL comes from COR and
#    how much from its RL phase (H1xC and H1xR)? Why can the two parts' intervals be narrower than H1xD's?
# 5. COR's four settings trade adapted gain against held-out change. Which setting would you choose for a model
#    that will also be asked questions it never adapted on, and what would you need to measure to be sure?

