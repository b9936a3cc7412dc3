"""Plan Amendment 26 (ddrl.study.amendments.wide): the wider MATH-500-like regime, its runs on two devices, the device check and the
analysis; the smoke path end to end and the committed CSVs against the registered configuration.

The synthetic per-question tables below are TEST INPUT made up here, never results and never committed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from ddrl.study import runner as study
from ddrl.study import jobs as study_jobs
from ddrl.study.amendments import wide
from ddrl.study.regimes import MATH_MAJ_MIN, wide_regime
from ddrl.report.reporter import save_figure
from ddrl.study.plan import SCALES, csv_method_seed, csv_path, load_regimes, seeds_to_analyse
from ddrl.report.tables import amendment_cells, predicted_text

REPO = Path(__file__).resolve().parents[1]


def test_the_wide_regime_is_the_registered_math500_like_one_on_more_questions():
    regs = load_regimes()
    math, w = regs["math500_like"], regs[wide.REGIME]
    assert w == wide_regime(math, 768) and w.n_adapted == 768
    assert (w.num_ops, w.episodes, w.lr, w.overrides) == (math.num_ops, math.episodes, math.lr, math.overrides)
    assert [r["id"] for r in w.records()[0][:256]] == [r["id"] for r in math.records()[0]]  # the registered 256 first
    base = json.loads((REPO / "results" / "regimes_wide.json").read_text())
    assert base["weights"] == json.loads((REPO / "results" / "regimes_base.json").read_text())["weights"]
    assert base["regimes"][0]["base"]["n_questions"] == 768 and base["regimes"][0]["base"]["maj@64"] >= MATH_MAJ_MIN
    with pytest.raises(ValueError, match="must exceed"):
        wide_regime(math, 256)
    # the registered study's job lists never name it
    assert wide.REGIME not in {j.regime for j in study.stage1_jobs(list(regs), SCALES["default"])}


def test_jobs_go_seed_by_seed():
    js = wide.jobs([200, 201])
    assert [(j.seed, j.methods) for j in js] == [(s, (m,)) for s in (200, 201) for m in wide.METHODS]
    assert {j.regime for j in js} == {wide.REGIME} and {j.label for j in js} == {"wide"}


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_run_import_and_analyse_end_to_end(tmp_path):
    """The real entry point on the tiny testbed: CPU seeds 0-2, "GPU" seeds 3-5 from another folder (seed 5
    incomplete there, so it runs here), one device per seed, then the analysis."""
    out, other, runs = tmp_path / "out", tmp_path / "other", str(tmp_path / "runs")
    common = ["--scale", "smoke", "--workers", "2", "--runs-root", runs]
    assert wide.main(["run", "--seeds", "0-2", "--out", str(out), *common]) == 0
    assert wide.main(["run", "--seeds", "3-5", "--out", str(other), *common]) == 0
    csv_path(other, wide.REGIME, "ttrl", 5).unlink()
    assert wide.import_runs(other, "FakeGPU", out) == [3, 4]
    assert wide.import_runs(other, "FakeGPU", out) == []  # the same files again: nothing to do
    assert wide.gpu_seeds(out) == {3: "FakeGPU", 4: "FakeGPU"}
    before = csv_path(out, wide.REGIME, "ttrl", 3).read_bytes()
    assert wide.main(["run", "--seeds", "3-5", "--out", str(out), *common]) == 0  # seed 5 only
    assert csv_path(out, wide.REGIME, "ttrl", 3).read_bytes() == before
    assert wide.complete_seeds(out) == [0, 1, 2, 3, 4, 5]
    again = csv_path(tmp_path / "again", wide.REGIME, "ttrl", 3)  # a folder holding a CPU CSV of seed 3
    again.parent.mkdir(parents=True)
    again.write_bytes(csv_path(out, wide.REGIME, "ttrl", 0).read_bytes())
    with pytest.raises(ValueError, match="one device per seed"):
        wide.import_runs(other, "FakeGPU", tmp_path / "again")
    with pytest.raises(ValueError, match="6 of 7 seeds complete"):
        wide.analyse(out, n_boot=200, seeds=range(7))
    res = wide.analyse(out, n_boot=200, seeds=range(6))
    assert [e["id"] for e in res["entries"]] == list(wide.CLAIMS)
    assert {e["regime"] for e in res["entries"]} == {wide.REGIME}
    assert [e["n_seeds"] for e in res["all_seeds"]] == [6] * 3 and [e["n_seeds"] for e in res["cpu_seeds"]] == [4] * 3
    assert all(c["n_gpu"] == 2 and c["n_cpu"] == 4 for c in res["device_check"].values())


def test_import_matches_seeds_by_their_whole_number(tmp_path):
    """Seed 20's files are no clash with seed 200's (``-seed20`` is a prefix of ``-seed200``)."""
    src, out = tmp_path / "src", tmp_path / "out"
    for m in wide.METHODS:
        for folder, seed in ((src, 20), (out, 200)):
            path = csv_path(folder, wide.REGIME, m, seed)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"made up: {m} {seed}\n")
    assert wide.import_runs(src, "FakeGPU", out) == [20]
    assert wide.complete_seeds(out) == [20, 200] and wide.gpu_seeds(out) == {20: "FakeGPU"}


def _world(out: Path, shift_gpu_ttrl: float, n_seeds: int = 8, n_q: int = 40) -> dict[int, str]:
    """Synthetic CSVs: per question a base pass@1; TTRL +2 points and DDRL +3 on every seed, TTRL shifted by
    ``shift_gpu_ttrl`` on the "GPU" seeds (the upper half)."""
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.8, n_q)
    gpu = {s: "FakeGPU" for s in range(n_seeds // 2, n_seeds)}
    for s in range(n_seeds):
        for m, gain in (("no_adaptation", 0.0), ("ttrl", 0.02 + (shift_gpu_ttrl if s in gpu else 0.0)), ("ddrl", 0.03)):
            p = np.clip(base + gain + rng.normal(0, 0.01, n_q), 0, 1)
            df = pd.DataFrame({"regime": wide.REGIME, "method": m, "seed": s, "split": "adapted",
                               "question": [f"q{i}" for i in range(n_q)], "pass@1": p})
            path = csv_path(out, wide.REGIME, m, s)
            path.parent.mkdir(parents=True, exist_ok=True)
            df.to_csv(path, index=False)
    (out / wide.DEVICES_FILE).write_text(json.dumps({str(k): v for k, v in gpu.items()}))
    return gpu


@pytest.mark.parametrize("shift", [0.0, 0.10])
def test_the_device_check_takes_the_cpu_seeds_only_where_the_gpu_shifted(tmp_path, shift):
    _world(tmp_path, shift)
    res = wide.analyse(tmp_path, n_boot=400, seeds=range(8))
    by = {e["id"]: e for e in res["entries"]}
    p1 = res["device_check"]["P1"]
    assert p1["gpu_minus_cpu"] == pytest.approx(100 * shift, abs=1.0) and p1["shifted"] == (shift > 0)
    assert not res["device_check"]["P2"]["shifted"]  # DDRL has no shift
    assert by["P1"]["n_seeds"] == (4 if shift else 8) and ("note" in by["P1"]) == (shift > 0)
    assert by["P2"]["n_seeds"] == 8 and by["P2"]["estimate"] == pytest.approx(3.0, abs=0.5)
    if shift:
        assert by["P1"]["estimate"] == pytest.approx(2.0, abs=0.5)  # the CPU seeds' +2, not the pooled +7
    assert all(e["paper"] == {"P1": 40.3, "P2": 48.0, "M1": 7.7}[e["id"]] for e in res["entries"])  # MATH-500's


def test_committed_csvs_are_the_registered_configuration_on_their_device(monkeypatch):
    """Every committed CSV's key is :func:`ddrl.study.jobs.job_key` of the regime's registered configuration, computed
    for the device ``devices.json`` names (the GPU seeds' keys name ``cuda``), and has all 768 questions."""
    folder = wide.OUT / wide.REGIME
    files = sorted(p for p in folder.glob("*-seed*.csv.gz") if not p.name.endswith("-steps.csv.gz"))
    if not files:
        pytest.skip(f"{folder}: no committed runs yet (plan Amendment 26)")
    study.check_weights()  # the measured base build (the keys hash its weights)
    regime, scale, gpu = load_regimes(names=[wide.REGIME])[wide.REGIME], SCALES["default"], wide.gpu_seeds()
    for p in files:
        method, seed = csv_method_seed(p)
        df = pd.read_csv(p, usecols=["key", "question"], dtype=str)
        with monkeypatch.context() as m:
            if seed in gpu:
                m.setattr(study_jobs, "resolve_device", lambda d: torch.device("cuda"))
            want = study_jobs.job_key(regime, scale, method, seed)
        assert set(df.key) == {want} and df.question.nunique() == 768, p.name


def test_the_arms_analysis_reads_only_complete_cpu_seeds(tmp_path):
    """Amendment 27 on synthetic tables: the arms +4 (TTRL's) and +5 (DDRL's) points over the untrained model,
    +2 over their methods; Q3/Q4 only where the method's run exists; refused while a seed lacks a run or when a
    seed came from a GPU."""
    _world(tmp_path, 0.0)
    (tmp_path / wide.DEVICES_FILE).unlink()
    rng = np.random.default_rng(1)
    base = pd.read_csv(csv_path(tmp_path, wide.REGIME, "no_adaptation", 0))
    for s in range(10):
        if s >= 8:  # new seeds: the untrained run only, no unpenalised methods
            base.assign(seed=s).to_csv(csv_path(tmp_path, wide.REGIME, "no_adaptation", s), index=False)
        for m, gain in (("ttrl_kl100x", 0.04), ("ddrl_kl100x", 0.05)):
            p = np.clip(base["pass@1"] + gain + rng.normal(0, 0.01, len(base)), 0, 1)
            base.assign(method=m, seed=s, **{"pass@1": p}).to_csv(csv_path(tmp_path, wide.REGIME, m, s), index=False)
    with pytest.raises(ValueError, match=r"seeds \[10\] lack"):
        wide.analyse_arms(tmp_path, n_boot=400, seeds=range(11))
    got = {e["id"]: e for e in wide.analyse_arms(tmp_path, n_boot=400, seeds=range(10))}
    assert [got[k]["n_seeds"] for k in ("Q1", "Q2", "Q3", "Q4")] == [10, 10, 8, 8]
    for k, want in (("Q1", 4.0), ("Q2", 5.0), ("Q3", 2.0), ("Q4", 2.0)):
        assert got[k]["estimate"] == pytest.approx(want, abs=0.5) and got[k]["verdict"] == "reproduced"
    (tmp_path / wide.DEVICES_FILE).write_text(json.dumps({"3": "FakeGPU"}))
    with pytest.raises(ValueError, match="CPU-only"):
        wide.analyse_arms(tmp_path, n_boot=400, seeds=range(10))


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_arms_jobs_reuse_the_untrained_runs(tmp_path):
    """`run --arms` on the smoke scale: the untrained CSV an earlier `run` wrote is kept (same key), the arms run."""
    out, runs = tmp_path / "out", str(tmp_path / "runs")
    common = ["--scale", "smoke", "--workers", "2", "--runs-root", runs, "--out", str(out)]
    assert wide.main(["run", "--seeds", "0-1", *common]) == 0
    before = csv_path(out, wide.REGIME, "no_adaptation", 0).read_bytes()
    assert wide.main(["run", "--arms", "--seeds", "0-2", *common]) == 0
    assert csv_path(out, wide.REGIME, "no_adaptation", 0).read_bytes() == before
    assert wide.complete_seeds(out, wide.REGIME, ("no_adaptation", *wide.ARMS)) == [0, 1, 2]
    assert len(wide.analyse_arms(out, n_boot=200, seeds=range(3))) == 4


def test_vote_by_quarter_splits_each_runs_rl_steps_in_four(tmp_path):
    """8 RL steps per run: quarters of 2 steps each; a seed's quarter mean, then the mean over seeds; the COR phase
    and other regimes' logs are left out."""
    for seed, shift in ((0, 0.0), (1, 0.1)):
        rows = [{"regime": wide.REGIME, "method": "ttrl", "seed": seed, "step": s, "phase": "rl",
                 "label/majority_ratio": 0.5 + 0.05 * s + shift, "gt/label_acc": 0.9 - 0.1 * (s // 2)}
                for s in range(8)]
        rows.append({**rows[-1], "step": 8, "phase": "cor", "gt/label_acc": 99.0})
        path = tmp_path / wide.REGIME / f"ttrl-seed{seed:02d}-steps.csv.gz"
        path.parent.mkdir(exist_ok=True)
        pd.DataFrame(rows).to_csv(path, index=False)
    other = tmp_path / "math500_like" / "ttrl-seed00-steps.csv.gz"
    other.parent.mkdir()
    pd.DataFrame([{**rows[0], "regime": "math500_like", "gt/label_acc": 99.0}]).to_csv(other, index=False)
    got = wide.vote_by_quarter(tmp_path)
    assert list(got.quarter) == [1, 2, 3, 4] and set(got.n_seeds) == {2}
    assert got.label_acc.to_numpy() == pytest.approx([0.9, 0.8, 0.7, 0.6])
    assert got.majority_ratio.to_numpy() == pytest.approx([0.575, 0.675, 0.775, 0.875])
    assert wide.vote_by_quarter(tmp_path, seeds=[0]).majority_ratio.iloc[0] == pytest.approx(0.525)


def test_levels_are_per_seed_means_over_seeds(tmp_path):
    """Two seeds x two questions: TTRL below the untrained run in seed 0 only; another split and regime left out."""
    rows = []
    for seed, (base, ttrl) in enumerate(((0.6, 0.4), (0.5, 0.7))):
        for method, p in (("no_adaptation", base), ("ttrl", ttrl)):
            rows += [{"regime": wide.REGIME, "method": method, "seed": seed, "split": "adapted", "question": q,
                      "pass@1": p + d} for q, d in (("a", 0.1), ("b", -0.1))]
    rows.append({**rows[0], "split": "heldout", "pass@1": 9.0})
    for seed in (0, 1):
        for method in ("no_adaptation", "ttrl"):
            path = csv_path(tmp_path, wide.REGIME, method, seed)
            path.parent.mkdir(exist_ok=True)
            pd.DataFrame([r for r in rows if r["seed"] == seed and r["method"] == method]).to_csv(path, index=False)
    got = wide.levels(tmp_path).set_index("method")
    assert got.loc["ttrl", "pass1"] == pytest.approx(55.0) and got.loc["no_adaptation", "pass1"] == pytest.approx(55.0)
    assert got.loc["ttrl", "sd"] == pytest.approx(np.std([40, 70], ddof=1))
    assert got.loc["ttrl", "below_reference"] == 1 and got.loc["no_adaptation", "below_reference"] == 0
    assert list(got.n_seeds) == [2, 2]
    assert wide.levels(tmp_path, seeds=[1]).set_index("method").loc["ttrl", "pass1"] == pytest.approx(70.0)


def test_vote_figure_draws_levels_and_the_vote(tmp_path):
    sp = pd.DataFrame({"method": ["no_adaptation", "ttrl"] * 3, "seed": [0, 0, 1, 1, 2, 2],
                       "pass1": [60.0, 55.0, 61.0, 54.0, 60.5, 56.0]})
    vote = pd.DataFrame({"regime": wide.REGIME, "method": "ttrl", "quarter": [1, 2, 3, 4], "n_seeds": 3,
                         "majority_ratio": [0.55, 0.6, 0.7, 0.72], "label_acc": [0.7, 0.6, 0.58, 0.57]})
    fig = wide.vote_figure(sp, vote)
    assert len(fig.axes) == 3 and fig.axes[0].get_title() == "after adaptation (3 seeds)"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["No adaptation", "TTRL"]
    assert list(fig.axes[2].get_lines()[0].get_ydata()) == [0.7, 0.6, 0.58, 0.57]
    save_figure(fig, tmp_path, "v")
    assert (tmp_path / "v.png").stat().st_size > 0


def test_vote_figure_jitter_comes_from_its_generator_not_global_state():
    """The dots' sideways jitter is drawn from the figure's own generator: NumPy's global state (which
    ``sns.stripplot`` would read) changes nothing, so a committed figure redraws the same from the same tables."""
    sp = pd.DataFrame({"method": ["no_adaptation", "ttrl"] * 3, "seed": [0, 0, 1, 1, 2, 2],
                       "pass1": [60.0, 55.0, 61.0, 54.0, 60.5, 56.0]})
    vote = pd.DataFrame({"regime": wide.REGIME, "method": "ttrl", "quarter": [1, 2, 3, 4], "n_seeds": 3,
                         "majority_ratio": [0.55, 0.6, 0.7, 0.72], "label_acc": [0.7, 0.6, 0.58, 0.57]})
    dots = []
    for global_seed in (1, 2):
        np.random.seed(global_seed)
        ax = wide.vote_figure(sp, vote).axes[0]
        dots.append(np.concatenate([c.get_offsets() for c in ax.collections if len(c.get_offsets()) == 3]))
    assert dots[0].shape == (6, 2) and np.array_equal(dots[0], dots[1])
    assert sorted(dots[0][:, 1]) == sorted(sp.pass1)
    assert np.all(np.abs(dots[0][:, 0] - np.round(dots[0][:, 0])) <= 0.15) and len(set(dots[0][:, 0])) == 6


def test_figure_tables_show_the_arms_only_once_arms_json_is_written(tmp_path):
    """Amendment 27 reads nothing of its arms before its analysis: the figure's tables leave them out until then."""
    for method in ("no_adaptation", "ttrl", "ttrl_kl100x"):
        path = csv_path(tmp_path, wide.REGIME, method, 0)
        path.parent.mkdir(exist_ok=True)
        pd.DataFrame([{"regime": wide.REGIME, "method": method, "seed": 0, "split": "adapted", "question": "a",
                       "pass@1": 0.5}]).to_csv(path, index=False)
        if method != "no_adaptation":
            pd.DataFrame([{"regime": wide.REGIME, "method": method, "seed": 0, "step": 0, "phase": "rl",
                           "label/majority_ratio": 0.6, "gt/label_acc": 0.7}]).to_csv(
                csv_path(tmp_path, wide.REGIME, method, 0, steps=True), index=False)
    sp, vote = wide.figure_tables(tmp_path)
    assert set(sp.method) == {"no_adaptation", "ttrl"} and set(vote.method) == {"ttrl"}
    (tmp_path / "arms.json").write_text("[]")
    sp, vote = wide.figure_tables(tmp_path)
    assert set(sp.method) == {"no_adaptation", "ttrl", "ttrl_kl100x"} and set(vote.method) == {"ttrl", "ttrl_kl100x"}


def test_amendment_27_predicted_half_widths_are_the_plans():
    """The predicted half-widths of Amendment 27's arms are the ones results/plan.md registered."""
    plan = (REPO / "results" / "plan.md").read_text()
    amendment = plan[plan.index("do the penalised methods gain over the untrained model?"):]
    p = wide.ARM_PREDICTED_HALF_WIDTH
    assert f"{p['Q1']:.2f} / {p['Q2']:.2f} points" in amendment and f"{p['Q3']:.2f} / {p['Q4']:.2f}" in amendment


def test_arms_markdown_marks_each_verdict():
    e = [{"id": q, "n_seeds": 3, "estimate": 1.0, "ci_low": -0.5, "ci_high": 2.5, "half_width": 1.5, "verdict": v}
         for q, v in zip(wide.ARM_PAIRS, ("reproduced", "contradicted", "no effect", "not resolved"))]
    rows = wide.arms_markdown(e).splitlines()[2:]
    assert len(rows) == 4 and rows[0].startswith("| Q1 TTRL (100x KL) - no adaptation | 3 | +1.00 [-0.50, +2.50] |")
    assert [r.split("|")[-2].strip() for r in rows] == ["**reproduced**", "***contradicted***", "**no effect**",
                                                        "*not resolved*"]


def test_seeds_to_analyse_is_the_amendments_reading_rule():
    """Every seed once all are complete; before that nothing until the clock, then the complete seeds up to the first
    missing one, at least min_seeds; without a clock, every seed."""
    from datetime import datetime

    cutoff = "2026-12-02T12:30:00+00:00"
    clock = datetime.fromisoformat(cutoff).timestamp()
    seeds = tuple(range(10))
    assert seeds_to_analyse(seeds, range(12), "A", cutoff, now=clock - 60) == list(seeds)
    with pytest.raises(ValueError, match=r"^A seeds missing \[7, 9\] before its clock"):
        seeds_to_analyse(seeds, [0, 1, 2, 3, 4, 5, 6, 8], "A", cutoff, now=clock - 60)
    assert seeds_to_analyse(seeds, [0, 1, 2, 3, 4, 5, 6, 8], "A", cutoff, now=clock + 1) == list(range(7))
    with pytest.raises(ValueError, match=r"^A: 5 complete seeds from 0, the plan needs 6"):
        seeds_to_analyse(seeds, [0, 1, 2, 3, 4, 8], "A", cutoff, now=clock + 1)
    assert seeds_to_analyse(seeds, [0, 1, 2, 3, 4, 8], "A", cutoff, now=clock + 1, min_seeds=5) == list(range(5))
    with pytest.raises(ValueError, match=r"^A incomplete, seeds missing \[9\]"):
        seeds_to_analyse(seeds, range(9), "A")  # no clock: every seed


def test_amendment_cells_close_a_claim_row_as_the_docs_print_it():
    """The estimate in bold with its seeds, the half-width beside the plan's predictions, the verdict's mark-up."""
    e = {"estimate": -2.93212, "ci_low": -3.5889, "ci_high": -2.2933, "n_seeds": 10, "half_width": 0.64779,
         "verdict": "contradicted"}
    assert predicted_text((0.534, 0.5)) == "0.53 / 0.50"
    assert amendment_cells(e, predicted_text((0.53, 0.51))) == (
        "**-2.93 [-3.59, -2.29]**, 10 seeds | 0.65 (0.53 / 0.51) | ***contradicted*** |")
    assert amendment_cells({**e, "verdict": "not resolved"}, "-").endswith("| 0.65 (-) | *not resolved* |")
