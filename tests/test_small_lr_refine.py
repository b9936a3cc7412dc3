"""Plan Amendments 56 and 62: COR's refinement size (R1) and learning rate (K1, K2) at lr/10 in AMC-like
(``ddrl.study.amendments.small_lr_refine``; Amendment 57 is a row of ddrl.study.designs, tests/test_study_designs.py)."""

from __future__ import annotations

import json
from datetime import datetime

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from ddrl.study import claims
from ddrl.study.amendments import small_lr
from ddrl.study import runner as study
from ddrl.study.amendments import small_lr_refine as R
from ddrl.study import designs as D
from ddrl.report.stats import predicted_half_width, variance_components
from ddrl.study.analysis import paired_matrix
from ddrl.study.plan import COR_4X, COR_4X_LR10, COR_LR10, REFINED, REUSES_RUN, SCALES, SMALL_LR, Job, csv_path, heldout_x_path


def test_amendment_56s_predictions_are_the_measured_components():
    """The plan's predictions at 10 seeds x 128 questions (the table's ``refine_amc``), from the committed matrices it
    names."""
    def vc(regime, a, b, seeds):
        df = pd.concat([pd.read_csv(csv_path(small_lr.RUNS, regime, m, s), dtype={"question": str})
                        for m in (a, b) for s in seeds])
        return variance_components(paired_matrix(df, regime, a, b, "adapted").dropna().to_numpy())

    a3 = vc(SMALL_LR, "ddrl", "bcs_dae", range(10))  # Amendment 55's lr/10 AMC-like A3
    sources = {"R1": (vc("amc_like", COR_4X, "ddrl", range(6)), vc("math500_like", COR_4X, "ddrl", range(6)), a3),
               "K1": (a3, vc(small_lr.REGIME, COR_LR10, "bcs_dae", range(18))),
               "K2": (a3, vc(small_lr.REGIME, "ddrl", COR_LR10, range(18)))}
    got = {cid: " / ".join(f"{predicted_half_width(v, 10, 128):.2f}" for v in vs) for cid, vs in sources.items()}
    assert got == D.DESIGNS["refine_amc"].predicted
    plan = " ".join((small_lr.RESULTS / "plan.md").read_text().split("56. **Why**")[1].split())
    assert "registered AMC-like R1 matrix (6 x 128) **0.20**" in plan and "30's K2 matrix **2.09**" in plan


def _write(out, method, seed, values, regime=SMALL_LR):
    p = csv_path(out, regime, method, seed)
    p.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"regime": regime, "method": method, "seed": seed, "split": "adapted",
                  "question": [f"q{i}" for i in range(len(values))], "pass@1": values}).to_csv(p, index=False)


def test_the_cor_repeat_check_counts_equal_questions(tmp_path):
    """The check's description: questions and whole seeds whose re-evaluated DDRL pass@1 equals the committed one,
    and R1 against the re-evaluated runs; None until every re-evaluation is written."""
    out, check = tmp_path / "out", tmp_path / "check"
    for s in (0, 1):
        _write(out, "ddrl", s, [0.5, 0.25])
        _write(out, COR_4X, s, [0.75, 0.25])
    _write(check, "ddrl", 0, [0.5, 0.25])
    assert R.check_rows(out, check, (0, 1)) is None
    _write(check, "ddrl", 1, [0.5, 0.5])
    got = R.check_rows(out, check, (0, 1))
    assert got == {"questions_equal": 3, "questions": 4, "seeds_equal": 1,
                   "r1_against_reevaluated": pytest.approx(100 * (0.25 + 0 + 0.25 - 0.25) / 4)}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The tiny testbed, seeds 0-1 in AMC-like at lr/10: BCS+DAE (which trains the DDRL run) and DDRL, as Amendment
    55 left them. (CSV folder, run folder.)"""
    tmp = tmp_path_factory.mktemp("small_lr_refine")
    out, runs = tmp / "out", str(tmp / "runs")
    study.run_jobs([Job(SMALL_LR, s, (m,), "A3") for s in (0, 1) for m in ("bcs_dae", "ddrl")], SCALES["smoke"], out,
                   runs, workers=2, progress=False)
    return out, runs


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_run_check_and_analyse(smoke, tmp_path, monkeypatch, capsys):
    """Amendment 56 (the table's ``refine_amc``) through ``python -m ddrl.study run|status DESIGN`` on the smoke runs:
    a runs root without the DDRL runs is refused by name before any job; then both refinements, the check (into its
    own folder, the committed CSV untouched) and the generic analysis."""
    out, runs = smoke
    d = D.DESIGNS["refine_amc"]
    common = ["--seeds", "0-1", "--scale", "smoke", "--workers", "2", "--out", str(out)]
    assert study.main(["run", d.id, *common, "--runs-root", str(tmp_path / "empty")]) == 2
    assert "DDRL runs of seeds [0, 1] in amc_like_small_lr are not finished" in capsys.readouterr().err
    assert not csv_path(out, SMALL_LR, COR_4X, 0).exists()
    monkeypatch.setattr(D, "CHECK", tmp_path / "check")
    committed = csv_path(out, SMALL_LR, "ddrl", 0).read_bytes()
    assert study.main(["run", d.id, *common, "--runs-root", runs]) == 0
    assert csv_path(out, SMALL_LR, "ddrl", 0).read_bytes() == committed
    assert study.main(["status", d.id, "--out", str(out)]) == 0
    assert "Amendment 56 (amc_like_small_lr): 2 of 10 seeds complete" in capsys.readouterr().out
    for s in (0, 1):  # both refine the DDRL run's RL-only weights: the run is the DDRL run's, the job another
        ddrl, c4, lr10 = (pd.read_csv(csv_path(out, SMALL_LR, m, s)) for m in ("ddrl", COR_4X, COR_LR10))
        assert set(c4.run) == set(ddrl.run) == set(lr10.run) and len({*c4.key, *ddrl.key, *lr10.key}) == 3
    res = D.analyse(d, out, n_boot=200, seeds=(0, 1))
    assert [(e["id"], e["regime"], e["paper"], e["n_seeds"]) for e in res["entries"]] == [
        ("R1", SMALL_LR, 0.1, 2), ("K1", SMALL_LR, None, 2), ("K2", SMALL_LR, None, 2)]
    q = pd.concat([pd.read_csv(csv_path(out, SMALL_LR, m, s)).assign(m=m) for s in (0, 1)
                   for m in d.methods]).query("split == 'adapted'").pivot_table("pass@1", ["seed", "question"], "m")
    assert res["entries"][0]["estimate"] == pytest.approx(100 * (q[COR_4X] - q.ddrl).mean())
    assert res["entries"][1]["estimate"] == pytest.approx(100 * (q[COR_LR10] - q.bcs_dae).mean())
    # the same weights evaluated again (content-keyed: the same evaluation) equal the DDRL CSV question by question
    assert res["check"]["questions_equal"] == res["check"]["questions"] == len(q) and res["check"]["seeds_equal"] == 2
    table = D.markdown(d, res, claims.load(small_lr.RESULTS / "claims.json")).splitlines()
    assert table[2].startswith("| R1 COR keeping 4x the rollouts - DDRL (COR 1x) | +0.1 | +0.3")
    assert ", 6 seeds, *reproduced* | **" in table[2]
    assert "(0.20 / 0.54 / 1.87)" in table[2] and table[3].startswith("| K1 COR at lr 1e-6 - BCS+DAE") and "| - |" in table[3]


def test_amendment_62_jobs_go_adapted_then_fresh_seed_by_seed_and_stop_at_its_clock():
    late = R.gentle_jobs("adapted", now=datetime.fromisoformat(R.GENTLE_CUTOFF[SMALL_LR]).timestamp() + 1,
                         regime=small_lr.REGIME)  # MATH-500-like's clock is later
    assert [(j.regime, j.seed) for j in late] == [(small_lr.REGIME, s) for s in range(10)]
    clock = datetime.fromisoformat(R.GENTLE_CUTOFF[SMALL_LR]).timestamp()
    adapted, held = R.gentle_jobs("adapted", now=clock - 60), R.gentle_jobs(R.HELDOUT_X, now=clock - 60)
    assert [(j.regime, j.seed, j.methods) for j in adapted] == [(SMALL_LR, s, (COR_4X_LR10,)) for s in range(10)]
    assert {j.label for j in held} == {"H1x"} and [j.seed for j in held] == list(range(10))
    assert "H1x" not in {j.label for j in adapted}  # the study's own job, not the held-out one
    assert [j.seed for j in R.gentle_jobs("adapted", now=clock + 1)] == list(range(6))
    assert REFINED[COR_4X_LR10] == (4, 10, "rl") and COR_4X_LR10 in REUSES_RUN


def test_amendment_62s_predictions_are_the_matrices_it_names():
    """The plan's predicted half-widths at 6 / 10 seeds, each from the committed lr/10 AMC-like matrix it names
    (Amendments 55-58), on the questions of its split."""
    def hw(regime, a, b, split):
        path = csv_path if split == "adapted" else heldout_x_path
        df = pd.concat([pd.read_csv(path(small_lr.RUNS, regime, m, s), dtype={"question": str})
                        for m in (a, b) for s in range(10)])
        d = paired_matrix(df, regime, a, b, split).dropna().to_numpy()
        return " / ".join(f"{predicted_half_width(variance_components(d), n, d.shape[1]):.2f}" for n in (6, 10))

    got = {r: {cid: ", ".join(hw(r, *src) for src in sources) for cid, sources in R.GENTLE_SOURCES.items()}
           for r in R.GENTLE_CUTOFF}
    assert got == R.GENTLE_PREDICTED
    assert all(R.GENTLE_CLAIMS[c][2] == s[0][2] == s[1][2] for c, s in R.GENTLE_SOURCES.items())


def test_trade_is_each_cor_settings_gain_over_the_rl_only_weights():
    levels = {"adapted": [{"method": m, "pass1": v, "below_reference": b} for m, v, b in
                          (("bcs_dae", 50.0, 0), (COR_LR10, 51.0, 2), (COR_4X_LR10, 52.5, 1), ("ddrl", 54.0, 0),
                           (COR_4X, 56.0, 0))],
              R.HELDOUT_X: [{"method": m, "pass1": v, "below_reference": b} for m, v, b in
                            (("no_adaptation", 40.0, 1), ("bcs_dae", 39.0, 0), (COR_LR10, 39.0, 5),
                             (COR_4X_LR10, 38.5, 7), ("ddrl", 38.0, 9), (COR_4X, 36.0, 10))]}
    got = R.trade(levels)
    assert [(t["method"], t["keep"], t["cor_lr"], t["adapted"], t[R.HELDOUT_X]) for t in got] == [
        (COR_LR10, 1, "1e-6", 1.0, 0.0), (COR_4X_LR10, 4, "1e-6", 2.5, -0.5), ("ddrl", 1, "1e-5", 4.0, -1.0),
        (COR_4X, 4, "1e-5", 6.0, -3.0)]
    assert [(t["adapted_below"], t[f"{R.HELDOUT_X}_below"]) for t in got] == [(2, 5), (1, 7), (0, 9), (0, 10)]


def test_the_trade_figure_draws_each_regimes_four_settings():
    rows = [{"method": m, "keep": k, "cor_lr": lr, "adapted": float(i), R.HELDOUT_X: -float(i)}
            for i, (m, (k, lr)) in enumerate(R.COR_SETTINGS.items())]
    results = [{"regime": SMALL_LR, "seeds": list(range(10)), "trade": rows},
               {"regime": small_lr.REGIME, "seeds": list(range(6)), "trade": rows}]
    df = R.trade_frame(results)
    assert list(df.regime.unique()) == ["AMC-like", "MATH-500-like"] and len(df) == 8 and set(df.seeds) == {10, 6}
    fig = R.trade_figure(results)
    try:
        axes = fig.get_axes()
        assert [a.get_title() for a in axes] == ["AMC-like at lr/10 (10 seeds)", "MATH-500-like at lr/10 (6 seeds)"]
        assert all(len(a.collections[0].get_offsets()) == 4 and len(a.texts) == 4 for a in axes)
        assert axes[0].texts[1].get_text() == "COR 4x at 1e-6"
    finally:
        plt.close(fig)


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_amendment_62_smoke_runs_both_splits_and_analyses(smoke, tmp_path, capsys):
    """The real entry point on the smoke runs: refused by name without the DDRL runs; then COR 4x at 1e-6 on the
    adapted questions and on the fresh ones (its held-out job's adapted rows equal the adapted job's CSV), and the
    analysis once the arms it pairs with are written."""
    out, runs = smoke
    common = ["--seeds", "0-1", "--scale", "smoke", "--workers", "2", "--out", str(out)]
    with pytest.raises(ValueError, match=r"Amendment 62 uses Amendment 55's cached runs"):
        R.main(["gentle", *common, "--runs-root", str(tmp_path / "empty")])
    assert R.main(["gentle", *common, "--runs-root", runs]) == 0
    a = pd.read_csv(csv_path(out, SMALL_LR, COR_4X_LR10, 0))
    assert set(a.split) == {"adapted"} and a.cor_kept.iloc[0] > 0
    before = datetime.fromisoformat(R.GENTLE_CUTOFF[SMALL_LR]).timestamp() - 60
    with pytest.raises(ValueError, match="Amendment 62 seeds missing"):  # COR 1x at 1e-6 and the others not written
        R.analyse_gentle(out, n_boot=200, seeds=(0, 1), now=before)
    with pytest.raises(ValueError, match="Amendment 62: 0 complete seeds from 0, the plan needs 6"):
        R.analyse_gentle(out, n_boot=200, seeds=(0, 1), now=before + 120)
    study.run_jobs([Job(SMALL_LR, s, (m,), "K1") for s in (0, 1) for m in (COR_LR10, COR_4X)] +
                   [Job(SMALL_LR, s, R.GENTLE_METHODS[R.HELDOUT_X], "H1x") for s in (0, 1)], SCALES["smoke"], out,
                   runs, workers=2, progress=False)
    assert R.main(["status", "--out", str(out)]) == 0
    assert "Amendment 62 (amc_like_small_lr, both splits): 2 of 10 seeds complete" in capsys.readouterr().out
    res = R.analyse_gentle(out, n_boot=200, seeds=(0, 1))
    assert [(e["id"], e["regime"], e["n_seeds"]) for e in res["entries"]] == [
        (c, SMALL_LR, 2) for c in ("K1g", "R1g", "K1gx", "R1gx")]
    n = [e["n_questions"] for e in res["entries"]]
    assert n[0] == n[1] == a.question.nunique() and n[2] == n[3] == h_questions(out)
    assert res["registered_checked"] == res["registered_reproduced"] == 2
    h = pd.concat([pd.read_csv(heldout_x_path(out, SMALL_LR, m, s)) for s in (0, 1)
                   for m in (COR_4X_LR10, COR_LR10)]).pivot_table("pass@1", ["seed", "question"], "method")
    assert res["entries"][3]["estimate"] == pytest.approx(100 * (h[COR_4X_LR10] - h[COR_LR10]).mean())
    t = {r["method"]: r for r in res["trade"]}
    assert t[COR_4X_LR10][R.HELDOUT_X] == pytest.approx(res["entries"][2]["estimate"])
    md = R.gentle_markdown(res).splitlines()
    assert md[2].startswith(f"| K1g COR 4x at 1e-6 - BCS+DAE (the RL-only weights) | adapted ({n[0]}) | **")
    assert md[4].startswith(f"| K1gx COR 4x at 1e-6 - BCS+DAE (its cost on fresh questions) | fresh ({n[2]}) | **")
    assert md[0].startswith("| claim (AMC-like at lr/10, pass@1, points) |") and "(0.53 / 0.51, 0.15 / 0.12)" in md[5] and md[-1].startswith(f"| {COR_4X} | 4x | 1e-5 | ") and md[-1].endswith(" of 2) |")


def h_questions(out) -> int:
    return pd.read_csv(heldout_x_path(out, SMALL_LR, COR_4X_LR10, 0)).question.nunique()


@pytest.mark.parametrize("regime", [SMALL_LR, small_lr.REGIME])
def test_committed_amendment_62_analyses_read_the_plans_seeds(regime):
    """Each regime's committed Amendment 62 analysis (recomputed by make test-study) reads the plan's seeds from 0,
    at least six."""
    path = R.GENTLE_ANALYSIS[regime]
    if not path.is_file():
        pytest.skip(f"{path}: not analysed yet (python -m ddrl.study.amendments.small_lr_refine status)")
    committed = json.loads(path.read_text())
    assert committed["seeds"] == list(R.SEEDS[:len(committed["seeds"])]) and len(committed["seeds"]) >= 6
