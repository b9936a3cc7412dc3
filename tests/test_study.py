"""The claims study's runner, plan, jobs and analysis: job lists, the smoke path end to end, resume, the budget, and
the committed runs current under this code. The synthetic tables below are TEST INPUT, never results."""

from __future__ import annotations

import gzip
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, kill_after_first_run

from ddrl.study import runner as study
from ddrl.study import analysis as study_analysis
from ddrl.study import jobs as study_jobs
from ddrl.study import plan as study_plan
from ddrl.study.claims import scorecard, scorecard_figure, validate
from ddrl.report.stats import paired_differences, predicted_half_width, variance_components

SMOKE = study.SCALES["smoke"]
ONE = ["math500_like"]  # one regime keeps the end-to-end tests fast


def test_stage_jobs_follow_the_plan_priority_seeds_and_no_repeats():
    regs = ["aime_like", "amc_like", "math500_like", "amc_like_small_lr"]
    scale = study.SCALES["default"]
    jobs1 = study.stage1_jobs(regs, scale)
    s1 = [(j.regime, j.seed, m) for j in jobs1 for m in j.methods]
    assert len(s1) == len(set(s1)) == 6 * 3 * 3  # seeds 0-5 x three regimes x (none, TTRL, DDRL)
    assert {m for _, _, m in s1} == {"no_adaptation", "ttrl", "ddrl"}
    assert {r for r, _, _ in s1} == {"aime_like", "amc_like", "math500_like"}  # lr/10 is not in stage 1
    assert [j.seed for j in jobs1] == sorted(j.seed for j in jobs1)  # one seed at a time, round-robin over regimes
    seeds = {"aime_like": 8, "amc_like": 7, "math500_like": 6}
    jobs = study.stage2_jobs(regs, scale, seeds)
    cells = [(j.regime, j.seed, m) for j in jobs for m in j.methods]
    assert len(cells) == len(set(cells)) and not set(cells) & set(s1)
    # phase (a) first: the stage-1 seeds get every method before any seed >= 6
    first_new_seed = next(i for i, j in enumerate(jobs) if j.seed >= 6)
    assert all(j.seed < 6 for j in jobs[:first_new_seed])
    labels_a = [j.label for j in jobs[:first_new_seed]]
    # Amendment 3: the jobs that train nothing new (BCS+DAE = DDRL's RL-only weights, COR 4x, base rollouts) first
    assert labels_a == sorted(labels_a, key=["A3", "R1", "F/G", "M2", "A1", "C1", "T1", "lr/10"].index)
    assert [j.methods for j in jobs[:18]] == [("bcs_dae",)] * 18 and "A2" not in labels_a
    assert {(j.regime, j.seed) for j in jobs if j.methods == (study_plan.BASE,)} == {(r, s) for r in study_plan.THREE for s in (0, 1)}
    assert {m for r, s, m in cells if r == "amc_like_small_lr"} == {"ttrl", "ddrl"}  # M1 at lr/10 only
    assert {r for r, s, m in cells if m == "grpo_no_std"} == {"aime_like", "math500_like"}  # T1's regimes
    assert max(s for r, s, m in cells if m == study_plan.COR_4X) == 5  # R1 on the stage-1 seeds only
    for r, n in seeds.items():
        assert max(s for rr, s, m in cells if rr == r) == n - 1
    assert max(s for rr, s, m in cells if rr == "amc_like_small_lr") == seeds["amc_like"] - 1  # same questions
    # phase (b): M1's extra seeds before M2's
    b = jobs[first_new_seed:]
    assert b[0].label == "M1" and [j.label for j in b].index("M2") > max(i for i, j in enumerate(b) if j.label == "M1")
    with pytest.raises(ValueError, match="no seed count for regime 'math500_like'"):
        study.stage2_jobs(regs, scale, {"aime_like": 8, "amc_like": 7})
    with pytest.raises(ValueError, match=r"unknown regime\(s\) \['nope'\]"):
        study.load_regimes(names=["nope"])


# --- Analysis on synthetic per-question tables (known answers) ---


def synthetic(out: Path, methods: dict[str, float], seeds=range(4), n_q=12, regime="math500_like", rng_seed=0,
              splits=("adapted",)) -> pd.DataFrame:
    """Method CSVs with pass@1 = base + shift + seed effect + question effect + noise (clipped to [0, 1])."""
    rng = np.random.default_rng(rng_seed)
    q_eff = rng.normal(0.5, 0.15, n_q)
    frames = []
    for m, shift in methods.items():
        for s in seeds:
            s_eff = rng.normal(0, 0.01)
            frames.append(pd.concat([pd.DataFrame({
                "regime": regime, "method": m, "seed": s, "split": split, "question": [f"q{i}" for i in range(n_q)],
                "pass@1": np.clip(q_eff + shift + s_eff + rng.normal(0, 0.05, n_q), 0, 1), "cor_seconds": 10.0})
                for split in splits]))
            path = study_plan.csv_path(out, regime, m, s)
            path.parent.mkdir(parents=True, exist_ok=True)
            frames[-1].to_csv(path, index=False)
    return pd.concat(frames, ignore_index=True)


def test_stage1_analysis_writes_components_and_seeds_but_no_means(tmp_path):
    df = synthetic(tmp_path, {"no_adaptation": 0.0, "ttrl": 0.05, "ddrl": 0.12})
    regs = study.load_regimes(scale=study.SCALES["default"], names=ONE)
    res = study.analyse_stage1(tmp_path, regs, study.SCALES["default"])
    d = 100 * paired_differences(df, "ddrl", "ttrl", value="pass@1")
    vc = variance_components(d.to_numpy())
    got = res["regimes"]["math500_like"]["ddrl-ttrl"]["components"]
    assert (got["seed"], got["question"], got["cell"]) == pytest.approx((vc.seed, vc.question, vc.cell))
    assert res["seeds"]["math500_like"] >= 2
    text = json.dumps(res)  # blind to the effect: no key names a mean, estimate or accuracy
    assert not [k for k in re.findall(r'"([^"]*)":', text) if re.search("mean|estimate|pass@1|ci_|acc", k.lower())]
    # the mean difference (7 points) and the methods' means appear nowhere
    for m in (float(d.to_numpy().mean()), *(100 * df[df.method == x]["pass@1"].mean() for x in ("ttrl", "ddrl"))):
        assert f"{m:.3f}"[:5] not in text


def test_claims_analysis_on_known_differences(tmp_path):
    df = synthetic(tmp_path, {"no_adaptation": 0.0, "ttrl": 0.0, "ddrl": 0.15, "etmr": 0.15},
                   splits=("adapted", "heldout"))
    regs = study.load_regimes(names=ONE)
    entries, missing = study.analyse_claims(tmp_path, regs, n_boot=400)
    validate(entries)
    by = {e["id"]: e for e in entries}
    assert set(by) == {"P1", "P2", "M1", "M2", "H1"}
    a = df[df.split == "adapted"]
    none = a[a.method == "no_adaptation"]["pass@1"].mean()
    assert by["P2"]["estimate"] == pytest.approx(100 * (a[a.method == "ddrl"]["pass@1"].mean() - none))  # Amendment 16
    assert by["P2"]["verdict"] == "reproduced" and abs(by["P1"]["estimate"]) < 3
    direct = 100 * (a[a.method == "ddrl"]["pass@1"].mean() - a[a.method == "ttrl"]["pass@1"].mean())
    assert by["M1"]["estimate"] == pytest.approx(direct) and direct > 10  # ~ +15 points, clipped at 1
    assert by["M1"]["verdict"] == "reproduced" and by["M1"]["ci_low"] > 0
    assert abs(by["M2"]["estimate"]) < 3 and by["M1"]["n_seeds"] == 4 and by["M1"]["n_questions"] == 12
    assert by["H1"]["n_questions"] == 12 and by["H1"]["estimate"] > 10  # held-out split: DDRL vs no adaptation
    assert by["M1"]["half_width"] == pytest.approx((by["M1"]["ci_high"] - by["M1"]["ci_low"]) / 2)
    assert any(m.startswith("A1 math500_like") for m in missing)


def test_lr10_compares_with_the_amc_like_untrained_model(tmp_path):
    """P1, P2 at lr/10 (Amendment 16) borrow AMC-like's no-adaptation runs; a regime with its own never borrows."""
    amc = synthetic(tmp_path, {"no_adaptation": 0.0}, regime="amc_like")
    lr10 = synthetic(tmp_path, {"ttrl": 0.1, "ddrl": 0.2}, regime="amc_like_small_lr", rng_seed=1)
    df = study_analysis.load_questions(tmp_path)
    d = study_analysis.claim_matrix(df, "P2", "amc_like_small_lr")
    want = 100 * (lr10[lr10.method == "ddrl"].set_index(["seed", "question"])["pass@1"]
                  - amc.set_index(["seed", "question"])["pass@1"])
    assert d.shape == (4, 12) and np.allclose(d.stack().sort_index().to_numpy(), want.sort_index().to_numpy())
    assert study_analysis.claim_matrix(df, "M1", "amc_like_small_lr").shape == (4, 12)  # its own runs, as before
    assert study_analysis.claim_matrix(df, "P2", "amc_like") is None  # AMC-like has no DDRL here: nothing borrowed
    own = df[df.method == "no_adaptation"].assign(regime="amc_like_small_lr", **{"pass@1": 0.0})
    d_own = study_analysis.claim_matrix(pd.concat([df, own]), "P2", "amc_like_small_lr")
    assert np.allclose(d_own.to_numpy(), 100 * lr10[lr10.method == "ddrl"].pivot(index="seed", columns="question",
                                                                               values="pass@1").to_numpy())


def test_a_claim_whose_methods_both_sit_at_the_floor_is_marked_not_redecided(tmp_path):
    # TTRL and DDRL clipped to pass@1 0 everywhere (the AIME-like regime's situation); no adaptation is not
    synthetic(tmp_path, {"no_adaptation": 0.0, "ttrl": -2.0, "ddrl": -2.0}, splits=("adapted", "heldout"))
    entries, _ = study.analyse_claims(tmp_path, study.load_regimes(names=ONE), n_boot=200)
    by = {e["id"]: e for e in entries}
    m1, h1 = by["M1"], by["H1"]
    assert (m1["estimate"], m1["ci_low"], m1["ci_high"]) == (0.0, 0.0, 0.0)
    assert m1["verdict"] == "no effect"  # the registered rule, unchanged
    assert m1["note"] == study_analysis.FLOOR_NOTE and "note" not in h1  # H1 compares with no adaptation (> 0)
    table = scorecard(validate(entries)).set_index("id")
    assert table.loc["M1", "verdict"] == "no effect (floor)" and table.loc["H1", "verdict"] == "contradicted"
    with pytest.raises(ValueError, match=r"note \(optional\) must be a string"):
        validate([{**m1, "note": 3}])
    scorecard_figure(entries)  # the figure labels it too (and does not trip over the mark)


def test_seed_directions_counts_each_seeds_sign_and_the_methods_means():
    # DDRL - TTRL per seed (mean over 2 questions): seed 0 +0.25, seed 1 -0.5, seed 2 0; ETMR on seed 0 only
    rows = [("ttrl", 0, "q1", 0.5), ("ttrl", 0, "q2", 0.5), ("ddrl", 0, "q1", 1.0), ("ddrl", 0, "q2", 0.5),
            ("ttrl", 1, "q1", 1.0), ("ttrl", 1, "q2", 1.0), ("ddrl", 1, "q1", 0.5), ("ddrl", 1, "q2", 0.5),
            ("ttrl", 2, "q1", 0.0), ("ttrl", 2, "q2", 0.25), ("ddrl", 2, "q1", 0.25), ("ddrl", 2, "q2", 0.0),
            ("etmr", 0, "q1", 0.0), ("etmr", 0, "q2", 0.0)]
    df = pd.DataFrame([{"regime": "amc_like", "method": m, "seed": s, "split": "adapted", "question": q, "pass@1": v}
                       for m, s, q, v in rows])
    t = study_analysis.seed_directions(df)
    assert list(t.id) == ["M1"]  # M2 has one shared seed: no row; the other claims have no runs
    m1 = t.iloc[0]
    assert (m1.a, m1.b, m1.n_seeds, m1.ahead, m1.behind, m1.level) == ("ddrl", "ttrl", 3, 1, 1, 1)
    assert (m1["min"], m1["max"]) == pytest.approx((-50.0, 25.0))
    assert (m1.mean_a, m1.mean_b) == pytest.approx((100 * 2.75 / 6, 100 * 3.25 / 6))
    assert study_analysis.seed_directions(df[df.method == "etmr"]).empty


# --- The smoke path end to end (tiny testbed), resume after a kill, the budget ---


def _run(root: Path, jobs, workers=2) -> list[dict]:
    return study.run_jobs(jobs, SMOKE, root / "runs", root / "rr", workers=workers, progress=False)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    mp = pytest.MonkeyPatch()
    mp.setenv("DDRL_CACHE_DIR", str(root / "cache"))
    try:
        regs = study.load_regimes(scale=SMOKE, names=ONE)
        s1 = _run(root, study.stage1_jobs(ONE, SMOKE))
        stage1 = study.analyse_stage1(root / "runs", regs, SMOKE)
        s2 = _run(root, study.stage2_jobs(ONE, SMOKE, stage1["seeds"]))
        s3 = _run(root, study.heldout_x_jobs(ONE, SMOKE))
        yield {"root": root, "regimes": regs, "stage1": stage1, "s1": s1, "s2": s2, "s3": s3}
    finally:
        mp.undo()


def test_smoke_study_writes_per_question_rows_and_valid_claims(smoke):
    root, reg = smoke["root"], smoke["regimes"]["math500_like"]
    assert {d["status"] for d in smoke["s1"] + smoke["s2"]} == {"ran"}
    df = study_analysis.load_questions(root / "runs")
    df = df[df.split != study_plan.HELDOUT_X]  # H1x's CSVs: test_smoke_heldout_x_...
    assert len(list((root / "runs" / "base" / "math500_like").glob("seed0?-*.csv"))) == 4  # F/G: 2 seeds x 2 files
    assert set(df.method) == {"no_adaptation", "ttrl", "ddrl", "etmr", "bcs", "bcs_dae", "additional_rl",
                              "grpo_no_std", study_plan.COR_4X}
    for (m, s), g in df.groupby(["method", "seed"]):
        n = reg.n_adapted + (reg.n_heldout if study_plan.wants_heldout("math500_like", m) else 0)
        assert len(g) == n and g["pass@1"].between(0, 1).all(), (m, s)
        assert (g[g.split == "adapted"].question.tolist() == [r["id"] for r in reg.records()[0]])
    steps = study_analysis.load_steps(root / "runs")
    extra = steps[(steps.method == "additional_rl") & (steps.phase == "extra")]
    assert len(extra) >= 1 and steps["adv/mean"].notna().all()
    assert smoke["stage1"]["seeds"] == {"math500_like": 2}
    entries, missing = study.analyse_claims(root / "runs", smoke["regimes"])
    validate(entries)
    got = {e["id"] for e in entries}
    assert got - {"F1", "F2", "F3", "G1", "E1", "E2", "N1", "N2"} == {
        "P1", "P2", "M1", "M2", "A1", "A2", "A3", "C1", "C2", "T1", "R1", "H1", "H1x", "H1xT", "H1xD", "H1xC", "H1xR",
        "H1xB", "H1xA", "D2"}  # H1xB, H1xA: MATH-500-like by Amendment 20; H1xN, H1xP are AMC-like's only
    assert "F1" in got  # the tiny model's base answers are all rare: F1 only
    assert all(e["n_seeds"] == 2 for e in entries)


def test_smoke_heldout_x_evaluates_the_registered_runs_on_fresh_questions(smoke):
    """H1x (Amendments 11-19): registered runs on fresh questions; a lost side file is rewritten from the cache."""
    root, reg = smoke["root"], smoke["regimes"]["math500_like"]
    assert [d["status"] for d in smoke["s3"]] == ["ran", "ran"]
    fresh = [r["id"] for r in study_plan.heldout_x_records(reg, SMOKE.n_heldout_x)]
    methods = study_plan.HELDOUT_X_METHODS + SMOKE.heldout_x_extra["math500_like"]  # BCS, BCS random negatives too
    for m in methods:
        for seed in (0, 1):
            x = pd.read_csv(study_plan.heldout_x_path(root / "runs", "math500_like", m, seed), dtype={"question": str})
            assert set(x.split) == {study_plan.HELDOUT_X} and x.question.tolist() == fresh
            side = study_plan.adapted_x_path(root / "runs", "math500_like", m, seed)
            if m == "bcs_random_neg":  # Amendment 19's rule trains only here: nothing registered to compare with,
                assert x.registered_reproduced.isna().all()  # so its adapted rows are kept beside
                a = pd.read_csv(side, dtype={"question": str})
                assert set(a.split) == {"adapted"} and len(a) == reg.n_adapted and (a.key == x.key.iloc[0]).all()
            else:  # the same run, loaded: its adapted pass@1 equals the CSV's (which holds its adapted rows)
                assert (x.registered_reproduced == True).all() and not side.exists(), (m, seed)  # noqa: E712
            if m == "ddrl":  # the registered run's directory
                assert x.run.iloc[0] == pd.read_csv(study_plan.csv_path(root / "runs", "math500_like", m, seed)).run.iloc[0]
    df = study_analysis.load_questions(root / "runs")
    # H1xB + H1xA = H1xR (Amendment 17) and H1xN + H1xP = H1xB (Amendment 19), seed by seed and question by question
    m = {p: study_analysis.paired_matrix(df, "math500_like", *study_plan.PAIRED[p][:2], study_plan.HELDOUT_X)
         for p in ("H1xB", "H1xA", "H1xR", "H1xN", "H1xP")}
    assert m["H1xR"].shape == (2, SMOKE.n_heldout_x) and np.allclose(m["H1xB"] + m["H1xA"], m["H1xR"])
    assert np.allclose(m["H1xN"] + m["H1xP"], m["H1xB"])
    # an uncompressed CSV of earlier code is compressed in place (same bytes as written now), not recomputed
    gz = study_plan.heldout_x_path(root / "runs", "math500_like", "ttrl", 1)
    packed = gz.read_bytes()
    gz.with_suffix("").write_bytes(gzip.decompress(packed))
    gz.unlink()
    again = _run(root, study.heldout_x_jobs(ONE, SMOKE), workers=1)
    assert [d["status"] for d in again] == ["loaded", "loaded"]
    assert gz.read_bytes() == packed and not gz.with_suffix("").exists()
    # a missing adapted file is written from the run's cached evaluation; its H1x CSV stays as it was
    side = study_plan.adapted_x_path(root / "runs", "math500_like", "bcs_random_neg", 1)
    kept, h1x = side.read_bytes(), study_plan.heldout_x_path(root / "runs", "math500_like", "bcs_random_neg", 1)
    before = (h1x.read_bytes(), h1x.stat().st_mtime_ns)
    side.unlink()
    again = _run(root, study.heldout_x_jobs(ONE, SMOKE), workers=1)
    assert sorted(d["status"] for d in again) == ["loaded", "ran"]
    assert side.read_bytes() == kept and (h1x.read_bytes(), h1x.stat().st_mtime_ns) == before


def test_heldout_x_records_are_fresh_and_skip_repeats():
    """Amendment 11's questions: the stream after the adapted and held-out records, repeats skipped, prefix-stable."""
    from ddrl.study.plan import Regime, candidate_records

    reg = Regime("r", "x", num_ops=1, n_adapted=40, n_heldout=20, episodes=1)
    seen = {r["prompt"] for r in candidate_records(1, 60)}
    x = study_plan.heldout_x_records(reg, 200)
    stream = candidate_records(1, 60 + 400)[60:]
    assert len(x) == 200 and not {r["prompt"] for r in x} & seen
    assert x == [r for r in stream if r["prompt"] not in seen][:200]
    assert any(r["prompt"] in seen for r in stream[:200])  # the case: some repeats were skipped
    assert study_plan.heldout_x_records(reg, 50) == x[:50]


def test_run_claims_smoke_writes_beside_its_out_and_analyse_renders_there_never_into_results(smoke, capsys):
    """``run claims``/``analyse claims`` with ``--out DIR`` write beside DIR, never under results/ or docs/results/."""
    root = smoke["root"]
    committed = [REPO / "docs" / "results" / "claims_scorecard.md", study.RESULTS / "claims.json",
                 study.RESULTS / "stage1.json"]
    before = [p.stat().st_mtime_ns for p in committed]
    written = {p: p.stat().st_mtime_ns for p in (root / "runs").rglob("*.csv*")}  # the fixture's: loaded, not rewritten
    common = ["--scale", "smoke", "--out", str(root / "runs")]
    assert study.main(["run", "claims", *common, "--runs-root", str(root / "rr"), "--workers", "2"]) == 0
    assert set(json.loads((root / "stage1.json").read_text())["seeds"]) == set(study_plan.THREE)
    got = {(e["id"], e["regime"]) for e in json.loads((root / "claims.json").read_text())}
    assert {("M1", r) for r in study_plan.THREE} | {("M1", study_plan.SMALL_LR), ("S1", "amc_like")} <= got
    assert study.main(["analyse", "claims", *common]) == 0
    assert (root / "figures" / "claims_scorecard.png").is_file() and str(root / "figures") in capsys.readouterr().out
    assert [p.stat().st_mtime_ns for p in committed] == before
    assert {p: p.stat().st_mtime_ns for p in written} == written


def test_stage1_json_is_written_once_stage_1_is_complete_and_then_kept(tmp_path, monkeypatch):
    """A budget-cut stage 1 writes no ``stage1.json``; a complete one writes it; a later run reads it."""
    status = {"status": "skipped (budget)"}
    monkeypatch.setattr(study, "check_weights", lambda *a: None)
    given = []  # the regimes file each stage's jobs read: the one the weights were checked against
    monkeypatch.setattr(study, "run_jobs",
                        lambda jobs, *a, **k: given.append(k["regimes"]) or [dict(status) for _ in jobs])
    monkeypatch.setattr(study, "analyse_stage1", lambda *a: {"seeds": {"math500_like": 2}})
    monkeypatch.setattr(study, "analyse_claims", lambda *a: ([], []))
    regs = study.load_regimes(study.RESULTS / "regimes_base.json", SMOKE, ONE)
    study.run_study(regs, SMOKE, tmp_path / "runs", tmp_path)
    assert not (tmp_path / "stage1.json").exists()
    status["status"] = "loaded"
    study.run_study(regs, SMOKE, tmp_path / "runs", tmp_path)
    assert json.loads((tmp_path / "stage1.json").read_text()) == {"seeds": {"math500_like": 2}}
    study.write_json(tmp_path / "stage1.json", {"seeds": {"math500_like": 1}})
    assert study.run_study(regs, SMOKE, tmp_path / "runs", tmp_path)["stage1"] == {"seeds": {"math500_like": 1}}
    assert json.loads((tmp_path / "stage1.json").read_text()) == {"seeds": {"math500_like": 1}}
    assert set(given) == {study.RESULTS / "regimes_base.json"}


def test_a_spent_budget_starts_no_job(tmp_path, monkeypatch):
    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache"))
    jobs = study.stage1_jobs(ONE, SMOKE)
    t = time.time()
    clock = iter([t] + [t + 3600] * len(jobs))  # the deadline is set at t + 1 min; every job starts an hour later
    monkeypatch.setattr(study.time, "time", lambda: next(clock))
    out = study.run_jobs(jobs, SMOKE, tmp_path / "runs", tmp_path / "rr", budget_min=1, workers=1, progress=False)
    assert {d["status"] for d in out} == {"skipped (budget)"} and not (tmp_path / "runs").exists()
    with pytest.raises(ValueError, match="budget_min must be > 0"):
        study.run_jobs(jobs, SMOKE, tmp_path / "runs", budget_min=0)


@pytest.mark.slow  # kills a study mid-run and resumes it (minutes): make test-slow, CI when time allows
def test_a_killed_study_resumes_without_retraining(tmp_path):
    """SIGKILL ``run claims`` after a first run finished; the rerun keeps that run and writes every CSV."""
    env = {**os.environ, "DDRL_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "ddrl.study", "run", "claims", "--scale", "smoke", "--out", str(tmp_path / "runs"),
           "--runs-root", str(tmp_path / "rr"), "--workers", "2"]
    runs = tmp_path / "rr"
    finished = kill_after_first_run(cmd, env, runs)
    assert finished, "no run finished before the study ended or the deadline"
    assert len(list(runs.glob("*/final/result.json"))) < 3 * 2 * 2, "stage 1 finished before the kill"
    stamp = {p: p.stat().st_mtime_ns for p in finished}
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    third_party = [bar for bar in ("Loading weights", "Writing model shards") if bar in r.stdout + r.stderr]
    assert not third_party, f"third-party progress bars in the study's log: {third_party}"
    assert {p: p.stat().st_mtime_ns for p in finished} == stamp, "a finished run was retrained"
    assert all(study_plan.csv_path(tmp_path / "runs", r, m, s).is_file()
               for r in study_plan.THREE for m in study_plan.STAGE1_METHODS for s in (0, 1))
    assert (tmp_path / "claims.json").is_file()


@pytest.fixture(scope="module")
def rendered_06(tmp_path_factory):
    """Notebook 06 rendered from the committed results, empty cache, no figure store (every figure drawn)."""
    out = tmp_path_factory.mktemp("render_06")
    r = subprocess.run([sys.executable, "-m", "ddrl.run.reproduce", "--preset", "default", "--only", "06", "--output-dir",
                        str(out), "--no-html"], cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "MPLBACKEND": "Agg", "DDRL_CACHE_DIR": str(out / "cache"),
                            "DDRL_FIGURE_STORE": ""})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return out


def test_the_committed_figure_store_is_what_notebook_06_draws(rendered_06):
    """docs/results/figures.json is what this code draws (names, keys, code, bytes); ``make figures`` renews it."""
    from importlib.metadata import version

    from ddrl.report import figure_keys
    from ddrl.report import figure_store
    from ddrl.run import lockfile

    # the keys name the plotting libraries' versions: only the locked environment draws the store's keys
    lock = lockfile.read()
    locked = {p: lock[p][0] for p in figure_keys.KEYED_LIBRARIES}
    here = {p: version(p) for p in locked}
    if here != locked:
        pytest.skip(f"the committed figures are keyed by constraints.txt's {locked}, this environment has {here} "
                    "(`make install` installs the lock's)")
    committed = {e["name"]: figure_store.same(e) for e in figure_store.manifest()}
    drawn = {e["name"]: figure_store.same(e) for e in figure_store.recorded(rendered_06)}
    differ = sorted(n for n in drawn.keys() | committed.keys() if drawn.get(n) != committed.get(n))
    how = {n: [k for k in ("key", "deps", "png", "pdf", "dpi") if (drawn.get(n) or {}).get(k) != (committed.get(n)
                                                                                               or {}).get(k)]
           for n in differ}
    assert len(drawn) >= 20 and not differ, f"`make figures` commits them again; what differs: {how}"
    files = [f"{n}.{ext}" for n, e in committed.items() for ext in ("png", "pdf")
             if figure_store.sha256_file(figure_store.COMMITTED / f"{n}.{ext}") != e[ext]]
    assert files == [], f"docs/results/ files that are not their entries' (`make figures` commits them again): {files}"


def test_every_figure_notebook_06_draws_is_legible(rendered_06):
    """Issue 95: every figure of notebook 06 (the committed ones in docs/results/, drawn by ddrl.study.figures, page,
    claims and drift) has no overlapping text boxes and no legend on its data, as matplotlib lays them out
    (:mod:`ddrl.report.legibility`, recorded by the Reporter for each figure it draws)."""
    import json

    from ddrl.report import figure_store

    log = figure_store.render_dir(rendered_06, "06_claims") / "artifacts" / "06_claims.legibility.jsonl"
    checked = [json.loads(line) for line in log.read_text().splitlines()]
    names = {c["name"] for c in checked}
    assert names >= {e["name"] for e in figure_store.manifest()}, "every committed figure was drawn and checked"
    bad = {c["name"]: c["overlaps"] + c["legend_on_data"] for c in checked if c["overlaps"] or c["legend_on_data"]}
    assert not bad, f"figures with overlapping text or a legend on the data (fix the drawing code, `make figures`): {bad}"


def test_base_claims_on_synthetic_answer_groups():
    """F1-F3, G1: answers seen <= 5/64 right 20%, >= 45/64 right 90%, between 50%; GRPO's advantage larger if wrong."""
    rng = np.random.default_rng(0)
    rows, g1 = [], []
    for seed in (0, 1):
        for q in range(40):
            for count, p_right in ((3, 0.2), (2, 0.2), (20, 0.5), (48, 0.9)):
                if count == 48 and q % 2:  # half the questions have no top-band answer
                    continue
                rows.append({"regime": "amc_like", "seed": seed, "question": f"q{q}", "count": count, "n": 64,
                             "correct": bool(rng.random() < p_right)})
            wrong = bool(q % 3 == 0)
            g1.append({"regime": "amc_like", "seed": seed, "question": f"q{q}", "label_correct": not wrong,
                       "pos_adv_grpo": (1.5 if wrong else 0.5) + rng.normal(0, 0.1)})
    groups, g1 = pd.DataFrame(rows), pd.DataFrame(g1)
    high = study_analysis.band_matrix(groups, (45, 64), 64)
    assert high.shape == (2, 20)  # questions without a top-band answer are left out
    f1, f2, f3, g = (study_analysis.base_claim(c, groups, g1, n_boot=400) for c in ("F1", "F2", "F3", "G1"))
    validate([f1, f2, f3, g])
    assert 20 < f1["estimate"] < 40 and f1["verdict"] == "reproduced"  # ~ 50 - 20
    assert 30 < f2["estimate"] < 50 and f2["verdict"] == "reproduced"  # ~ 90 - 50
    assert f3["n_questions"] == 20 and f3["estimate"] > 0
    assert 90 < g["estimate"] < 110 and g["ci_low"] > 0 and g["n_seeds"] == 2 and g["n_questions"] == 40
    assert study_analysis.base_claim("G1", groups, g1.assign(label_correct=True)) is None  # no wrong labels: no effect to take


def _selection_groups(kinds: dict[str, int], seeds=(0, 1)) -> pd.DataFrame:
    """N = 64 groups: "A" wrong label x10, truth x6, 48 wrong singletons; "B" right label x50, 14 wrong; "C" all right."""
    shapes = {"A": [(10, False), (6, True)] + [(1, False)] * 48, "B": [(50, True)] + [(1, False)] * 14,
              "C": [(64, True)]}
    rows = [{"regime": "amc_like", "seed": seed, "question": f"{kind}{i}", "count": c, "n": 64, "correct": ok}
            for seed in seeds for kind, m in kinds.items() for i in range(m) for c, ok in shapes[kind]]
    return pd.DataFrame(rows)


def test_selection_errors_by_hand():
    """E1, E2 (Amendment 8). A: BCS keeps 10 label copies (FP 10/32), 22 wrong singletons; random 5 copies and 27
    others, 3 correct (FN 3/27). B: no false reward; BCS's 14 negatives are the singletons. C: no reward-0 rollout."""
    sel = study_analysis.selection_errors(_selection_groups({"A": 3, "B": 2, "C": 1}), orders=64)
    one = lambda kind, rule: sel[(sel.question == f"{kind}0") & (sel.rule == rule)].iloc[0]  # noqa: E731
    a_bcs, b_bcs, c_bcs = one("A", "bcs"), one("B", "bcs"), one("C", "bcs")
    assert (a_bcs.kept, a_bcs.fp, a_bcs.neg, a_bcs.fn) == (64 * 32, 64 * 10, 64 * 22, 0)
    assert (b_bcs.fp, b_bcs.neg, b_bcs.fn) == (0, 64 * 14, 0) and c_bcs.neg == 0
    a_rnd = one("A", "random")
    assert abs(a_rnd.fp / 64 - 5) < 0.5 and abs(a_rnd.neg / 64 - 27) < 0.5 and abs(a_rnd.fn / a_rnd.neg - 3 / 27) < 0.03
    e1 = study_analysis.selection_matrix(sel, "E1")
    assert e1.shape == (2, 5)  # kind C dropped: random keeps no reward-0 rollout there
    a_cols = [c for c in e1.columns if "/A" in c]
    assert np.allclose(e1[a_cols], 100 * 3 / 27, atol=3) and np.allclose(e1.drop(columns=a_cols), 0)
    e2 = study_analysis.selection_matrix(sel, "E2")
    assert e2.shape == (2, 6) and np.allclose(e2[a_cols], 100 * (5 - 10) / 32, atol=2)
    # the claims: E1 reproduced (BCS's negatives hold fewer correct answers), E2 contradicted (BCS keeps more FPs)
    groups = _selection_groups({"A": 10, "B": 10})
    e1, e2 = (study_analysis.base_claim(c, groups, pd.DataFrame(), n_boot=400) for c in ("E1", "E2"))
    validate([e1, e2])
    assert 4 < e1["estimate"] < 7.5 and e1["verdict"] == "reproduced" and e1["n_questions"] == 20
    assert -9.5 < e2["estimate"] < -6 and e2["verdict"] == "contradicted"


def test_a_committed_base_build_is_installed_on_another_cpu(tmp_path, monkeypatch):
    """The committed measured build is installed into an empty cache, never built; any other state is refused."""
    import hashlib

    import ddrl.testbed.pretrain as pt

    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(study_plan, "BASE_MODELS", tmp_path / "pins")
    monkeypatch.setattr(pt, "pretrain", lambda *a, **k: pytest.fail("the study must not build a testbed"))
    name = f"default-{pt.get_config('default').config_hash()}"
    sha = hashlib.sha256(b"the measured bits").hexdigest()
    pin, cached = tmp_path / "pins" / f"{name}-{sha[:12]}", pt.cache_root() / name  # the pin names its weights
    measured = {"model": "testbed:default", "model.safetensors": sha}
    regimes = tmp_path / "results" / "regimes_base.json"
    regimes.parent.mkdir()
    regimes.write_text(json.dumps({"weights": measured, "regimes": []}))
    with pytest.raises(ValueError, match="testbed:default is not built in"):  # nothing committed, nothing cached
        study.check_weights(regimes)
    study.check_weights(regimes, scale=SMOKE)
    pin.mkdir(parents=True)
    (pin / pt.META_FILE).write_text(json.dumps({"num_threads": pt.BUILD_THREADS}))
    (pin / "model.safetensors").write_bytes(b"the measured bits")
    (pin / "config.json").write_text("{}")

    study.check_weights(regimes)  # installs the committed build
    assert (cached / "model.safetensors").read_bytes() == b"the measured bits" and (cached / "config.json").is_file()
    assert not [p for p in cached.parent.iterdir() if p.name.startswith(".tmp-")]
    study.check_weights(regimes)  # installed once: the second check reads it
    (cached / "model.safetensors").write_bytes(b"this CPU's own build")  # another machine's build in the cache
    with pytest.raises(ValueError, match=f"committed build {pin} has the measured weights: move {cached} aside.*"
                       r"own cache \(DDRL_CACHE_DIR"):
        study.check_weights(regimes)

    shutil.rmtree(cached)
    (pin / "model.safetensors").write_bytes(b"a committed build with other bits")
    with pytest.raises(ValueError, match=f"{pin}: the committed build's weights"):
        study.check_weights(regimes)
    assert not cached.exists()  # nothing installed
    (pin / "model.safetensors").write_bytes(b"the measured bits")
    (regimes.parent / "regimes_weak.json").write_text(json.dumps({"weights": {"model": "testbed:weak"}, "regimes": []}))
    with pytest.raises(ValueError, match="testbed:weak is not built"):  # S1's weaker base, once measured
        study.check_weights(regimes)


def test_progress_counts_written_csvs_from_their_names_only(tmp_path):
    """The progress table reads file names, never a result; steps CSVs and other files do not count."""
    for rel in ("amc_like/ttrl-seed00.csv.gz", "amc_like/ttrl-seed02.csv.gz", "amc_like/ttrl-seed00-steps.csv.gz",
                "math500_like/no_adaptation-seed10.csv.gz", "amc_like/notes.txt", "base/amc_like/seed00-groups.csv",
                "base/amc_like/seed00-g1.csv", "base/amc_like/seed01-groups.csv"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("not a table")
    got = study_analysis.progress(tmp_path).set_index(["regime", "method"])
    assert got.to_dict("index") == {("amc_like", "base"): {"n_seeds": 2, "seeds": "0,1"},
                                    ("amc_like", "ttrl"): {"n_seeds": 2, "seeds": "0,2"},
                                    ("math500_like", "no_adaptation"): {"n_seeds": 1, "seeds": "10"}}
    assert study_analysis.progress(tmp_path / "nothing").empty


def _pair_table(diff: np.ndarray, regime="amc_like") -> pd.DataFrame:
    """TTRL at pass@1 0.5 and DDRL at 0.5 + ``diff`` (seeds x questions, in [0, 1] units) as a question table."""
    seed, q = np.indices(diff.shape)
    cells = pd.DataFrame({"regime": regime, "split": "adapted", "seed": seed.ravel(), "question": [f"q{i}" for i in q.ravel()]})
    return pd.concat([cells.assign(method="ttrl", **{"pass@1": 0.5}),
                      cells.assign(method="ddrl", **{"pass@1": 0.5 + diff.ravel()})], ignore_index=True)


def test_power_shortfall_says_whether_seeds_or_questions_would_have_reached_the_target():
    """Question-level spread (SD 10) needs questions, seed-level (SD 5) needs seeds; those inside 2 points: none."""
    rng = np.random.default_rng(0)
    by_question = rng.normal(0, 0.10, 20)[None, :] + rng.normal(0, 0.01, (6, 20))
    by_seed = np.array([-0.06, -0.02, 0.02, 0.06])[:, None] + rng.normal(0, 0.01, (4, 50))  # SD 5.2 points
    df = pd.concat([_pair_table(by_question, "amc_like"), _pair_table(by_seed, "math500_like")], ignore_index=True)
    entries = [{"id": "M1", "regime": "amc_like", "ci_low": -4.5, "ci_high": 4.5},
               {"id": "M1", "regime": "math500_like", "ci_low": -5.0, "ci_high": 5.0},
               {"id": "M1", "regime": "aime_like", "ci_low": -1.9, "ci_high": 1.9}]  # inside the target: not listed
    short = study_analysis.power_shortfall(df, entries).set_index("regime")
    assert set(short.index) == {"amc_like", "math500_like"}
    q, s = short.loc["amc_like"], short.loc["math500_like"]
    assert (q.n_seeds, q.n_questions, s.n_seeds, s.n_questions) == (6, 20, 4, 50)
    assert 8 < q.sd_question < 12 and q.sd_seed < 1 and 4.5 < s.sd_seed < 6
    assert q.half_width_unlimited_seeds > 2 and pd.isna(q.seeds_needed)  # the questions' spread alone exceeds 2
    assert 50 < q.questions_needed < 200
    assert s.half_width_unlimited_seeds < 1 and pd.isna(s.questions_needed) and s.seeds_needed > 4
    d = 100 * by_question
    vc = variance_components(d)
    assert q.predicted_half_width == pytest.approx(predicted_half_width(vc, 6, 20))
    assert predicted_half_width(vc, 6, int(q.questions_needed)) <= 2 < predicted_half_width(vc, 6, int(q.questions_needed) - 1)
    assert study_analysis.power_shortfall(df, entries[2:]).empty


def test_s1_weaker_base_regime_jobs_and_difference_of_differences(tmp_path):
    """S1: the default build stopped at dev pass@1 0.30, AMC-like's questions, jobs last in each phase, and the
    difference of (DDRL - TTRL) between the bases."""
    import dataclasses

    from ddrl.study.plan import WEAK_REGIME, weak_base_regime
    from ddrl.testbed.config import PRESETS

    d, w = PRESETS["default"], PRESETS["weak"]
    assert {f.name for f in dataclasses.fields(d) if getattr(d, f.name) != getattr(w, f.name)} == {"target_dev_pass1"}
    assert w.target_dev_pass1 == 0.30 and w.config_hash() != d.config_hash()

    committed = study_plan.RESULTS / "regimes_base.json"
    (tmp_path / "regimes_base.json").write_text(committed.read_text())
    assert WEAK_REGIME not in study.load_regimes(tmp_path / "regimes_base.json")  # not measured: no S1 regime
    amc = study.load_regimes(names=["amc_like"])["amc_like"]
    weak = {**weak_base_regime(amc).to_dict(), "base": {"n_questions": amc.n_adapted}}
    (tmp_path / "regimes_weak.json").write_text(json.dumps({"model": "testbed:weak", "regimes": [weak]}))
    regs = study.load_regimes(tmp_path / "regimes_base.json")
    assert regs[WEAK_REGIME].records() == amc.records()  # the same questions
    model = lambda r: study_plan.experiment(r, study.SCALES["default"], False).config("ttrl", 0).model  # noqa: E731
    assert model(regs[WEAK_REGIME]) == "testbed:weak" and model(amc) == "testbed:default"

    jobs = study.stage2_jobs(list(regs), study.SCALES["default"], {"aime_like": 7, "amc_like": 8, "math500_like": 6})
    s1 = [(j.seed, j.methods) for j in jobs if j.regime == WEAK_REGIME]
    assert {j.label for j in jobs if j.regime == WEAK_REGIME} == {"S1"}
    assert sorted(s for s, _ in s1) == list(range(8)) and all(m == ("ttrl", "ddrl") for _, m in s1)
    phase_a = [j.label for j in jobs if j.seed < 6]
    assert phase_a.index("S1") > max(i for i, lab in enumerate(phase_a) if lab == "lr/10")

    synthetic(tmp_path / "runs", {"ttrl": 0.0, "ddrl": 0.15}, regime="amc_like")
    synthetic(tmp_path / "runs", {"ttrl": 0.0, "ddrl": 0.05}, regime=WEAK_REGIME, rng_seed=1)
    df = study_analysis.load_questions(tmp_path / "runs")
    direct = study_analysis.s1_matrix(df, "amc_like").to_numpy().mean()
    entries, missing = study.analyse_claims(tmp_path / "runs", regs, n_boot=400)
    s1e = next(e for e in entries if e["id"] == "S1")
    assert s1e["regime"] == "amc_like" and s1e["estimate"] == pytest.approx(direct) and 5 < direct < 15
    _, missing = study.analyse_claims(tmp_path / "runs", {"amc_like": amc}, n_boot=100)
    assert any(m.startswith("S1 amc_like: the weaker base is not built") for m in missing)


#: Every committed study: (results dir, its per-run CSVs, the fewest CSVs it must hold).
COMMITTED_STUDIES = (
    (study.RESULTS, study.RESULTS / "runs", 200),
    (study.RESULTS / "replication_xeon", study.RESULTS / "replication_xeon" / "runs", 288),  # 120, +40 (Am. 36), +32 (37), +96 (38)
    (study.RESULTS / "replication_c49d", study.RESULTS / "replication_c49d" / "runs", 114),  # 38 runs, +38 (Amendment 35)
)
#: Amendments 50-51's runs: their keys only (no DDRL run lies beside them)
TABLE1_FIXED = (study.RESULTS, study.RESULTS / "runs" / "table1_fixed", 116)  # Amendments 50, 51: 58 runs, CSV + steps CSV


def _with_a_new_knob(monkeypatch) -> None:
    """``TrainConfig`` with one more field, defaulted to what reproduces today's behaviour, as a researcher adds one."""
    import ddrl.config as config

    patched = dataclasses.make_dataclass("TrainConfig", [("new_knob", float, dataclasses.field(default=0.25))],
                                         bases=(config.TrainConfig,))
    monkeypatch.setattr(config, "TrainConfig", patched)
    assert config.make_config("ttrl").new_knob == 0.25
    assert "new_knob" not in config.key_fields(config.make_config("ttrl"))
    assert config.key_fields(config.make_config("ttrl", new_knob=1.0))["new_knob"] == 1.0  # set, it is keyed


STUDIES_AND_KNOB = [(*c, knob) for c in (*COMMITTED_STUDIES, TABLE1_FIXED) for knob in (False, True)
                    if not knob or c[1] == study.RESULTS / "runs"]


@pytest.mark.parametrize("results_dir,runs,min_files,new_knob", STUDIES_AND_KNOB,
                         ids=[str(r.relative_to(study.RESULTS.parent)) + ("+new_knob" if k else "")
                              for _, r, _, k in STUDIES_AND_KNOB])
def test_every_committed_run_is_current_under_this_code(monkeypatch, results_dir, runs, min_files, new_knob):
    """Each committed CSV carries the content key this code gives it (``job_key``, ``base_job``, ``heldout_x_key``):
    a change to what a key covers would make ``run claims`` recompute the study. Trainer numerics need a new
    ``"what"`` version in ``job_key``. With ``new_knob``, ``TrainConfig`` has gained a defaulted field (issue 96):
    every committed CSV of the registered tree stays current (``ddrl.config.key_fields``)."""
    if new_knob:
        _with_a_new_knob(monkeypatch)
    base_file = study_plan.regimes_path(results_dir)
    measured = {w["model"]: w for w in (json.loads(f.read_text())["weights"]  # the default base; S1's weaker one
                                        for f in study_plan.measurement_files(base_file))}
    monkeypatch.setattr(study_jobs, "model_fingerprint", lambda name: {**measured[name]})
    scale = study.SCALES["default"]
    regs = study.load_regimes(base_file, scale=scale)
    keyed = []  # (a committed CSV, the key this code gives it)
    for p in sorted(runs.glob("*/*-seed[0-9][0-9].csv.gz")):
        method, seed = study_plan.csv_method_seed(p)
        key = study_jobs.job_key(regs[p.parent.name], scale, method, seed)
        keyed += [(q, key) for q in (p, study_plan.csv_path(runs, p.parent.name, method, seed, steps=True)) if q.is_file()]
    for p in sorted((runs / study_plan.BASE).glob("*/seed[0-9][0-9]-groups.csv")):
        key = study_jobs.base_job(regs[p.parent.name], scale, int(p.name[4:6]))[3]
        keyed += [(p, key), (p.with_name(p.name.replace("-groups", "-g1")), key)]
    fresh = {}  # H1x (plan Amendment 11): keyed by the run's key and its fresh questions
    for p in study_analysis.heldout_x_csvs(runs):
        (method, seed), reg = study_plan.csv_method_seed(p), regs[p.parent.name]
        held = fresh.setdefault(reg.name, study_plan.heldout_x_records(reg, scale.n_heldout_x))
        keyed.append((p, study_jobs.heldout_x_key(reg, scale, method, seed, held)))
        if not study_plan.csv_path(runs, reg.name, method, seed).is_file():  # its adapted rows are kept beside
            keyed.append((study_plan.adapted_x_path(runs, reg.name, method, seed), keyed[-1][1]))
    stale = [str(q.relative_to(runs)) for q, key in keyed if not study_jobs._done(q, key)]
    assert len(keyed) >= min_files, f"only {len(keyed)} committed study CSVs found under {runs}"
    assert not stale, f"{len(stale)} of {len(keyed)} committed study CSVs no longer match this code's keys: {stale[:5]}"


@pytest.mark.parametrize("results_dir,runs,min_files", COMMITTED_STUDIES,
                         ids=[str(r.relative_to(study.RESULTS.parent)) for _, r, _ in COMMITTED_STUDIES])
def test_committed_runs_that_share_the_ddrl_rl_phase_repeat_its_trajectory(results_dir, runs, min_files):
    """A3, C1 are within-run only if BCS+DAE and additional RL repeat their DDRL run's RL steps exactly, except
    Amendment 9's ``KNOWN_DIVERGENCES``."""
    div = study_analysis.rl_divergence(study_analysis.load_steps(runs))
    found = {(r.regime, r.method, int(r.seed)): int(r.diverged_at) for r in div.itertuples() if r.diverged_at >= 0}
    known = study_plan.KNOWN_DIVERGENCES if results_dir == study.RESULTS else {}
    assert found == known, f"{runs}: divergences {found}, plan Amendment 9 lists {known}"
    if results_dir == study.RESULTS:
        assert len(div) >= 60, f"only {len(div)} BCS+DAE / additional-RL runs beside a DDRL run under {runs}"


def test_rl_divergence_finds_the_first_step_that_differs():
    def run(method, seed, advs):
        return pd.DataFrame({"regime": "amc_like", "method": method, "seed": seed, "step": range(len(advs)),
                             "episode": 0, "lr": 1e-5, "adv/mean": advs, "label/majority_ratio": 0.5,
                             "gt/label_acc": [np.nan] * len(advs), "phase": "rl"})
    steps = pd.concat([run("ddrl", 0, [0.1, 0.2, 0.3]), run("bcs_dae", 0, [0.1, 0.2, 0.3]),
                       run("additional_rl", 0, [0.1, 0.25, 0.3]), run("ddrl", 1, [0.1, 0.2, 0.3]),
                       run("additional_rl", 1, [0.1, 0.2]), run("bcs_dae", 2, [0.1]), run("ttrl", 0, [9.0])])
    div = study_analysis.rl_divergence(steps).set_index(["method", "seed"]).diverged_at.to_dict()
    # NaN label accuracy matches NaN; a shorter run diverges at its length; a run without its DDRL run is skipped
    assert div == {("bcs_dae", 0): -1, ("additional_rl", 0): 1, ("additional_rl", 1): 2}


def test_real_rollouts_job_writes_the_svamp_inputs_and_their_claims(shared_data, tmp_path):
    """Amendment 18: SVAMP Codex answer groups (N = 30), content-keyed, their base claims in ``svamp_codex`` only."""
    if not (shared_data / "rollouts").is_dir():
        pytest.skip(f"no rollouts/ under {shared_data}")
    assert study_jobs.run_real_rollouts_job(tmp_path, shared_data) == "ran"
    assert study_jobs.run_real_rollouts_job(tmp_path, shared_data) == "loaded"
    groups, g1 = study_analysis.load_base(tmp_path, study_plan.REAL)
    assert set(groups.n) == {30} and set(groups.regime) == {"svamp_codex"} and g1.question.nunique() == 999
    assert (groups.groupby("question")["count"].sum() <= 30).all()
    entries, missing = study.analyse_claims(tmp_path, {}, n_boot=400)
    got = {e["id"]: e for e in entries}
    assert set(got) == {"F1", "F2", "F3", "G1", "E1", "E2", "N1", "N2"} and {e["regime"] for e in entries} == {"svamp_codex"}
    assert all(e["n_seeds"] == 1 and e["ci_low"] <= e["estimate"] <= e["ci_high"] for e in entries)
    assert any(m.startswith("F1 base:") for m in missing)  # no testbed rollouts here: base is missing, not pooled
