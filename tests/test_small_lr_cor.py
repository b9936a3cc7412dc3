"""Plan Amendments 30-31: COR's learning rate, COR without RL, and held-out transfer at lr/10 (``ddrl.study.amendments.small_lr_cor``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from ddrl.study import claims
from ddrl.study.amendments import small_lr
from ddrl.study.amendments import small_lr_cor as K
from ddrl.study import runner as study
from ddrl.study.analysis import claim_matrix, paired_matrix
from ddrl.study.plan import (COR_4X, COR_LR10, COR_ONLY, REFINED, SCALES, Job, csv_path, heldout_x_path,
                             heldout_x_records)


def test_jobs_go_seed_by_seed():
    assert [(j.seed, j.methods, j.regime) for j in K.jobs([0, 1])] == [
        (0, (COR_LR10,), K.REGIME), (0, (COR_ONLY,), K.REGIME), (1, (COR_LR10,), K.REGIME), (1, (COR_ONLY,), K.REGIME)]
    hj = K.heldout_jobs([3])
    assert [(j.regime, j.seed, j.label) for j in hj] == [(K.REGIME, 3, "H1x")]
    assert set(hj[0].methods) == {"no_adaptation", "ttrl", "ddrl", "bcs_dae"}
    assert REFINED[COR_4X] == (4, 1, "rl") and REFINED[COR_LR10] == (1, 10, "rl") and REFINED[COR_ONLY] == (1, 1, "base")


def test_the_fresh_questions_are_math500_likes():
    """Amendment 31 evaluates on H1x's MATH-500-like questions: the lr/10 regime's stream is MATH-500-like's."""
    from ddrl.study.plan import load_regimes

    regs = load_regimes(names=["math500_like", K.REGIME])
    assert heldout_x_records(regs[K.REGIME], 64) == heldout_x_records(regs["math500_like"], 64)


def test_refined_rejects_a_bad_start_or_learning_rate():
    from ddrl.run.experiments import Experiment

    exp = Experiment([{"prompt": "1+1", "answer": "2", "id": "q"}], (), overrides={})
    with pytest.raises(ValueError, match="start must be 'rl' or 'base'"):
        exp.refined(0, 4, start="sft")
    with pytest.raises(ValueError, match="lr must be > 0"):
        exp.refined(0, 4, lr=0.0)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The real entry points on the tiny testbed, seeds 0-1: Amendment 28's runs and 29's BCS+DAE first (what K1-K4
    pair with), then Amendment 30's arms and 31's evaluations. (CSV folder, run folder, CLI arguments)."""
    tmp = tmp_path_factory.mktemp("small_lr_cor")
    out, runs = tmp / "out", str(tmp / "runs")
    common = ["--scale", "smoke", "--workers", "2", "--runs-root", runs, "--out", str(out), "--seeds", "0-1"]
    with pytest.raises(SystemExit, match=r"not finished under .*\('ttrl', 0\), \('ddrl', 0\)"):
        K.main(["heldout", *common])  # nothing trained yet: it refuses rather than train Amendment 28's runs anew
    assert small_lr.main(["run", *common]) == 0
    assert study.main(["run", "ablation", *common]) == 0
    study.run_jobs([Job("math500_like", s, ("ddrl",), "K5") for s in (0, 1)], SCALES["smoke"], out, runs, workers=2,
                   progress=False)  # the default-lr DDRL runs K5 reads (the registered study's, here the smoke's)
    assert K.main(["run", *common]) == 0
    assert K.main(["heldout", *common]) == 0
    assert K.main(["heldout", "--cor-only", *common]) == 0
    return out, runs, common


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_arms_start_where_the_plan_says(smoke):
    """COR at lr/10 refines the DDRL run's RL-only weights (its CSV names that run); COR alone names no run and no RL
    time; a rerun loads every job; the analyses refuse an incomplete seed."""
    out, runs, _ = smoke
    for s in (0, 1):
        ddrl, lr10, alone = (pd.read_csv(csv_path(out, K.REGIME, m, s)) for m in ("ddrl", COR_LR10, COR_ONLY))
        assert set(lr10.run) == set(ddrl.run)  # (its rows are cached by content: their timings may be another run's)
        assert alone.run.isna().all() and set(alone.rl_seconds) == {0.0} and (alone.cor_seconds > 0).all()
        assert len(set(lr10.key) | set(alone.key) | set(ddrl.key)) == 3
    before = csv_path(out, K.REGIME, COR_ONLY, 1).read_bytes()
    statuses = study.run_jobs(K.jobs([0, 1]) + K.heldout_jobs([0, 1]) + K.heldout_jobs([0, 1], (COR_ONLY,)),
                              SCALES["smoke"], out, runs, workers=1, progress=False)
    assert {s["status"] for s in statuses} == {"loaded"}
    assert csv_path(out, K.REGIME, COR_ONLY, 1).read_bytes() == before
    with pytest.raises(ValueError, match=r"seeds \[2\] lack a CSV that K1-K5 read"):
        K.analyse(out, n_boot=200, seeds=[0, 1, 2])
    with pytest.raises(ValueError, match=r"seeds \[2\] lack an evaluation"):
        K.analyse_heldout(out, n_boot=200, seeds=[0, 1, 2])


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_analysis_and_tables(smoke, capsys):
    out, _, _ = smoke
    res = K.analyse(out, n_boot=200, seeds=[0, 1])
    assert [e["id"] for e in res["entries"]] == list(K.CLAIMS)
    assert [e["regime"] for e in res["entries"]] == [K.REGIME] * 4 + ["math500_like"]  # K5: the default-lr DDRL runs
    assert all(e["paper"] is None and e["n_seeds"] == 2 for e in res["entries"])
    df = K.load(out, [0, 1])
    k1, k2 = (paired_matrix(df, K.REGIME, *K.CLAIMS[c][:2], "adapted") for c in ("K1", "K2"))
    np.testing.assert_allclose(k1 + k2, claim_matrix(df, "A3", K.REGIME))  # K1 + K2 = A3, seed by seed, question by question
    a = df[df.split == "adapted"]
    k5 = a[(a.method == "ddrl") & (a.regime == "math500_like")].pivot(index="seed", columns="question", values="pass@1")
    alone = a[a.method == COR_ONLY].pivot(index="seed", columns="question", values="pass@1")
    np.testing.assert_allclose(K.k_matrix(df, "K5"), 100 * (k5 - alone))  # K5 pairs across the two regimes' CSVs
    assert [(r["regime"], r["method"]) for r in res["levels"]] == [
        ("math500_like", "no_adaptation"), ("math500_like", "ddrl"),
        *((K.REGIME, m) for m in ("ttrl", "bcs_dae", "ddrl", COR_LR10, COR_ONLY))]
    assert set(res["cor_kept"]) == {"ddrl", COR_LR10, COR_ONLY}
    table = K.markdown(res).splitlines()
    assert table[2].startswith("| K1 COR at lr 1e-6 - BCS+DAE (the RL-only weights) | 2 |") and "(1.84)" in table[2]
    assert table[5].startswith("| K4 DDRL - COR alone | 2 |") and table[6].endswith("(2.08 / 3.16) | **no effect** |")
    assert table[11] == "| ddrl | default (3e-5) | 0.0 (0.0) | 0 of 2 | - |" and len(table) == 7 + 3 + 7
    held = K.analyse_heldout(out, n_boot=200, seeds=[0, 1])
    assert [e["id"] for e in held["entries"]] == [*K.HELDOUT_CLAIMS, "K3x", "K4x"]
    assert all(e["n_questions"] == SCALES["smoke"].n_heldout_x for e in held["entries"])
    # TTRL, DDRL, BCS+DAE and the recomputed COR alone per seed: each run's adapted rows are its committed CSV's
    assert held["registered_checked"] == 8 and held["registered_reproduced"] == 8
    rows = K.heldout_markdown(held, claims.load(small_lr.RESULTS / "claims.json")).splitlines()
    assert rows[2].startswith("| H1x DDRL - no adaptation | -5.93 [-7.16, -4.66], 27 seeds, *contradicted* |")
    assert rows[7].startswith("| K3x COR alone (no RL) - no adaptation | - | **+0.00 [+0.00, +0.00]**, 2 seeds |")
    assert "(0.45-1.36)" in rows[8] and len(rows) == 2 + 7
    assert all(heldout_x_path(out, K.REGIME, m, s).is_file() for m in (*K.HELDOUT_METHODS, COR_ONLY) for s in (0, 1))
    assert [r["method"] for r in held["levels"]] == ["no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_ONLY]
    assert len(res["seed_pass1"]) == 7 * 2 and len(held["seed_pass1"]) == 5 * 2
    fig = K.figure(res, held)
    assert [ax.get_ylabel() for ax in fig.axes] == ["adapted pass@1 (%)", "held-out pass@1 (%)"]
    assert fig.axes[1].get_title() == f"{SCALES['smoke'].n_heldout_x:,} fresh questions (2 seeds)"
    plt.close(fig)
    assert K.main(["status", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Amendment 30 (math500_like_small_lr): 2 of 18 seeds complete" in printed
    assert "Amendment 31 (math500_like_small_lr, held-out): 2 of 18 seeds complete" in printed
    assert "Amendment 33 (math500_like_small_lr, held-out): 2 of 18 seeds complete" in printed


def _csvs(regime: str, methods: tuple[str, ...]) -> pd.DataFrame:
    paths = [p for m in methods for p in sorted((small_lr.RUNS / regime).glob(f"{m}-seed[0-9][0-9].csv.gz"))]
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in paths], ignore_index=True)


def test_the_plans_predicted_half_widths_are_the_measured_components():
    """Amendment 30's predictions from the committed lr/10 matrices (K1, K2: A3's; K3: P2's; K4: M1's), 32's from the
    default-lr M1 and P2 matrices of seeds 0-17, and 31's from the default-lr MATH-500-like H1x matrices, at 18 seeds,
    as the module and the plan state them."""
    from ddrl.report.stats import predicted_half_width, variance_components

    df = pd.concat([_csvs(K.REGIME, ("ttrl", "bcs_dae", "ddrl")), _csvs("math500_like", ("no_adaptation", "ttrl", "ddrl"))])
    df = df[df.seed.isin(K.SEEDS)]
    source = {"K1": (("A3", K.REGIME),), "K2": (("A3", K.REGIME),), "K3": (("P2", K.REGIME),), "K4": (("M1", K.REGIME),),
              "K5": (("M1", "math500_like"), ("P2", "math500_like"))}  # K5: the default-lr matrices of seeds 0-17
    for cid, predicted in K.PREDICTED.items():
        vcs = [variance_components(claim_matrix(df, c, r).to_numpy()) for c, r in source[cid]]
        assert tuple(round(predicted_half_width(vc, len(K.SEEDS), 256), 2) for vc in vcs) == predicted, cid
    held = pd.concat([pd.read_csv(p, dtype={"question": str}) for m in K.HELDOUT_METHODS
                      for p in sorted((small_lr.RUNS / "heldout_x" / "math500_like").glob(f"{m}-seed*.csv.gz"))])
    for cid, predicted in K.HELDOUT_PREDICTED.items():
        vc = variance_components(claim_matrix(held, cid, "math500_like").to_numpy())
        assert round(predicted_half_width(vc, len(K.SEEDS), 1536), 2) == predicted, cid
    plan = " ".join((small_lr.RESULTS / "plan.md").read_text().split())
    assert "K1 and K2 from A3's (COR against no COR on the same weights) 1.84; K3 from P2's" in plan
    assert "H1x 1.36, H1xT 1.06, H1xD 0.85, H1xC 0.45, H1xR 0.80" in plan
    assert "2.08 (M1's components, two trained methods) to 3.16 (P2's" in plan


