"""Plan Amendments 29 and 55: the ablation A1-A3 at the paper's small learning rate (``ddrl.study.amendments.small_lr_ablation``)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from datetime import datetime

import pandas as pd
import pytest

from ddrl.study import claims
from ddrl.study.amendments import small_lr
from ddrl.study import runner as study
from ddrl.study.amendments import small_lr_ablation as A
from ddrl.report.stats import predicted_half_width, variance_components
from ddrl.study.analysis import claim_matrix
from ddrl.study.plan import SCALES, SMALL_LR, Job, csv_path

AMC = A.DESIGNS["amc"]


def test_amendment_29s_jobs_evaluate_first_then_train_bcs_on_its_seeds():
    js = A.jobs()
    assert [(j.seed, j.methods) for j in js] == [*((s, ("bcs_dae",)) for s in range(18)), *((s, ("bcs",)) for s in range(12))]
    assert {j.regime for j in js} == {small_lr.REGIME}
    assert A.design_seeds(among=[0, 13]) == {"A1": (0,), "A2": (0,), "A3": (0, 13)}


def test_amendment_55s_jobs_go_seed_by_seed_and_stop_at_the_clock_after_the_first_six():
    """Seed by seed, BCS+DAE beside BCS; once the clock has passed only the seeds below MIN_SEEDS (seeds 0-5 always
    run, a later session finishes them)."""
    clock = datetime.fromisoformat(AMC.cutoff).timestamp()
    before, after = A.jobs(AMC, now=clock - 60), A.jobs(AMC, now=clock + 1)
    assert [(j.regime, j.seed, j.methods) for j in before] == [
        (SMALL_LR, s, (m,)) for s in range(12) for m in ("bcs_dae", "bcs")]
    assert [(j.seed, j.methods) for j in after] == [(j.seed, j.methods) for j in before[:12]]
    assert {j.seed for j in after} == set(range(6))


def test_a_clock_design_reads_the_same_complete_seeds_for_every_claim(tmp_path):
    """Amendment 55's reading rule: before the clock no estimate unless all 12 seeds are complete in all four methods;
    after it the complete seeds from 0, at least 6, the same for A1-A3 (written CSVs stand in for runs)."""
    clock = datetime.fromisoformat(AMC.cutoff).timestamp()
    for s in range(8):
        for m in A.METHODS if s != 3 else ("ttrl", "ddrl", "bcs"):  # seed 3: BCS+DAE missing
            p = csv_path(tmp_path, AMC.regime, m, s)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"")
    with pytest.raises(ValueError, match=r"seeds missing \[3, 8, 9, 10, 11\] before its clock"):
        A.analysed_seeds(tmp_path, AMC, now=clock - 60)
    with pytest.raises(ValueError, match=r"Amendment 55: 3 complete seeds from 0, the plan needs 6"):
        A.analysed_seeds(tmp_path, AMC, now=clock + 1)
    p = csv_path(tmp_path, AMC.regime, "bcs_dae", 3)
    p.write_bytes(b"")
    assert A.analysed_seeds(tmp_path, AMC, now=clock + 1) == {cid: tuple(range(8)) for cid in A.CLAIMS}
    assert A.missing(tmp_path, AMC)["A1"] == [8, 9, 10, 11]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The tiny testbed, seeds 0-1: Amendment 28's TTRL and DDRL in MATH-500-like at lr/10 (the real entry point),
    and TTRL and DDRL in AMC-like at lr/10 (the registered study's runs there). (CSV folder, run folder, CLI args.)"""
    tmp = tmp_path_factory.mktemp("small_lr_ablation")
    out, runs = tmp / "out", str(tmp / "runs")
    common = ["--scale", "smoke", "--workers", "2", "--runs-root", runs, "--out", str(out)]
    assert small_lr.main(["run", "--seeds", "0-1", *common]) == 0
    study.run_jobs([Job(SMALL_LR, s, (m,), "M1") for s in (0, 1) for m in ("ttrl", "ddrl")], SCALES["smoke"], out, runs,
                   workers=2, progress=False)
    return out, runs, common


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_amendment_29_smoke_run_and_analyse(smoke, capsys):
    """Amendment 29 on the smoke runs: BCS+DAE loads the DDRL run (an evaluation), BCS trains; the analysis refuses
    an incomplete claim, then gives A1-A3, the split that sums to M1, and the tables."""
    out, runs, common = smoke
    seeds = A.design_seeds(among=[0, 1])
    with pytest.raises(ValueError, match=r"seeds missing per claim \{'A1': \[0, 1\], 'A2': \[0, 1\], 'A3': \[0, 1\]\}"):
        A.analyse(out, n_boot=200, seeds=seeds)
    assert A.main(["run", "--seeds", "0-1", *common]) == 0
    assert A.main(["status", "--out", str(out)]) == 0
    assert "A3 (math500_like_small_lr): 2 of 18 seeds complete" in capsys.readouterr().out
    for s in (0, 1):  # BCS+DAE is the DDRL run's RL-only weights: its CSV names the DDRL run; BCS is a run of its own
        ddrl, bcs_dae, bcs = (pd.read_csv(csv_path(out, small_lr.REGIME, m, s)) for m in ("ddrl", "bcs_dae", "bcs"))
        assert set(bcs_dae.run) == set(ddrl.run) and set(bcs_dae.rl_seconds) == set(ddrl.rl_seconds)
        assert set(bcs.run) != set(ddrl.run)
    res = A.analyse(out, n_boot=200, seeds=seeds)
    assert [e["id"] for e in res["entries"]] == ["A1", "A2", "A3"] and [e["paper"] for e in res["entries"]] == [1.1, 0.5, 6.1]
    assert {e["regime"] for e in res["entries"]} == {small_lr.REGIME} and all(e["n_seeds"] == 2 for e in res["entries"])
    assert "divergence" not in res  # nothing trained again
    parts = {p["claim"]: p["points"] for p in res["split"]}
    assert parts["A1"] + parts["A2"] + parts["A3"] == pytest.approx(parts["M1"])
    assert parts["A3"] == pytest.approx(res["entries"][2]["estimate"])
    table = A.markdown(res, claims.load(small_lr.RESULTS / "claims.json")).splitlines()
    assert len(table) == 5 and table[2].startswith("| A1 BCS - TTRL | +1.1 | -1.47 [-2.76, -0.19], 46 seeds, *contradicted* |")
    assert "(1.90 / 1.84)" in table[2] and "(0.78 / 1.82)" in table[4]
    md = A.split_markdown(res).splitlines()
    assert md[0] == "| part of DDRL - TTRL (seeds 0-1) | points |" and md[5].startswith("| DDRL - TTRL (M1) |")
    assert {(r["regime"], r["method"]) for r in res["levels"]} == {
        (small_lr.REGIME, m) for m in ("ttrl", "bcs", "bcs_dae", "ddrl")}  # the smoke has no default-lr BCS runs


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_amendment_55_smoke_run_analyse_and_divergence_check(smoke, tmp_path, capsys):
    """Amendment 55 on the smoke runs, seeds 0-1 (its seeds replaced, no clock reached): BCS+DAE is a DDRL run trained
    again in run directories of its own and repeats the DDRL run's RL steps on one machine; BCS trains; the analysis
    gives A1-A3 with AMC's paper numbers and the divergences; a trajectory that differs and is not listed raises."""
    out, _, common = smoke
    design = replace(AMC, seeds={cid: (0, 1) for cid in A.CLAIMS})
    fresh = ["--scale", "smoke", "--workers", "2", "--runs-root", str(tmp_path / "runs"), "--out", str(out)]
    assert A.main(["run", "--design", "amc", "--seeds", "0-1", *fresh]) == 0
    assert A.main(["status", "--design", "amc", "--out", str(out)]) == 0
    assert "A1 (amc_like_small_lr): 2 of 12 seeds complete" in capsys.readouterr().out
    for s in (0, 1):  # the DDRL run's config trained again (not loaded from the fixture's run directories)
        ddrl, bcs_dae = (pd.read_csv(csv_path(out, SMALL_LR, m, s)) for m in ("ddrl", "bcs_dae"))
        assert set(bcs_dae.run) == set(ddrl.run) and set(bcs_dae.rl_seconds) != set(ddrl.rl_seconds)
    res = A.analyse(out, n_boot=200, design=design)
    assert [(e["id"], e["regime"], e["paper"], e["n_seeds"]) for e in res["entries"]] == [
        ("A1", SMALL_LR, -2.0, 2), ("A2", SMALL_LR, -0.6, 2), ("A3", SMALL_LR, 6.6, 2)]
    assert [(d["seed"], d["diverged_at"]) for d in res["divergence"]] == [(0, -1), (1, -1)]
    q = pd.concat([pd.read_csv(csv_path(out, SMALL_LR, m, s)).assign(m=m) for s in (0, 1)
                   for m in A.METHODS]).pivot_table("pass@1", ["seed", "question"], "m")
    assert res["entries"][0]["estimate"] == pytest.approx(100 * (q.bcs - q.ttrl).mean())
    table = A.markdown(res, claims.load(small_lr.RESULTS / "claims.json"), AMC).splitlines()
    assert "| paper (AMC) | AMC-like, default lr (registered) | **AMC-like at lr/10 (Amendment 55)** |" in table[0]
    assert table[2].startswith("| A1 BCS - TTRL | -2.0 | -1.20 [-3.15, +0.71], 19 seeds, *not resolved* | **")
    assert "(2.26 / 2.64 / 0.71)" in table[2]
    moved = tmp_path / "moved"  # a BCS+DAE trajectory off its DDRL run's at one step: named, not silently kept
    shutil.copytree(out, moved)
    p = csv_path(moved, SMALL_LR, "bcs_dae", 1, steps=True)
    st = pd.read_csv(p)
    st.loc[st.step == 1, "adv/mean"] += 0.5
    st.to_csv(p, index=False)
    with pytest.raises(ValueError, match=r"not in study_plan.KNOWN_DIVERGENCES: \[\('amc_like_small_lr', 'bcs_dae', 1\)\]"):
        A.analyse(moved, n_boot=200, design=design)


def test_amendment_55s_predicted_half_widths_are_the_measured_components():
    """Amendment 55's predictions at 6 seeds x 128 questions, as its design and the plan state them: the registered
    lr/10 AMC-like M1 matrix, the registered default-lr AMC-like A1-A3 matrices, Amendment 29's lr/10 MATH-500-like
    A1-A3 matrices (their components at 128 questions); and at 12 seeds, as the plan states."""
    def matrix(regime, cid, seeds=None):
        ms = A.ABLATION_METHODS.get(cid, ("ddrl", "ttrl"))
        df = pd.concat([pd.read_csv(p, dtype={"question": str}) for m in ms
                        for p in sorted((small_lr.RUNS / regime).glob(f"{m}-seed[0-9][0-9].csv.gz"))])
        d = claim_matrix(df if seeds is None else df[df.seed.isin(seeds)], cid, regime)
        return variance_components(d.dropna().to_numpy())

    m1 = matrix(SMALL_LR, "M1", range(19))
    at = {n: {} for n in (6, 12)}
    for cid in A.CLAIMS:
        vcs = (m1, matrix("amc_like", cid, range(19)), matrix(small_lr.REGIME, cid, A.MATH500.seeds[cid]))
        for n in at:
            at[n][cid] = tuple(round(predicted_half_width(vc, n, 128), 2) for vc in vcs)
    assert at[6] == AMC.predicted
    section = " ".join((small_lr.RESULTS / "plan.md").read_text().split("55. **Why**")[1].split())
    for n in at:
        a1, a2, a3 = (" / ".join(f"{x:.2f}" for x in at[n][c]) for c in A.CLAIMS)
        assert f"{n} seeds**: A1 {a1}, A2 {a2}, A3 {a3}" in section


@pytest.mark.regenerate  # the committed analysis recomputed: make test-study (test_study_regenerates.py covers it too)
@pytest.mark.parametrize("name", ["math500", "amc"])
def test_committed_ablation_recomputes(name):
    """Amendments 29's and 55's committed analyses are what the code computes from the committed CSVs (the plan's
    seeds)."""
    design = A.DESIGNS[name]
    if not design.analysis.is_file():
        pytest.skip(f"{design.analysis}: not analysed yet (python -m ddrl.study.amendments.small_lr_ablation analyse --design {name})")
    committed = json.loads(design.analysis.read_text())
    if design.cutoff is None:
        assert committed["seeds"] == {cid: list(s) for cid, s in design.seeds.items()}
    else:
        assert all(s == list(design.seeds[cid][:len(s)]) and len(s) >= 6 for cid, s in committed["seeds"].items())
    assert json.loads(json.dumps(A.analyse(n_boot=4000, design=design))) == committed
