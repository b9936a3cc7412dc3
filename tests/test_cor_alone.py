"""Plan Amendment 34: COR alone in AMC-like and AIME-like, adapted and fresh questions; Amendment 35: K3, K4 on the
second pinned build, with its untrained runs (``ddrl.study.amendments.cor_alone``)."""

from __future__ import annotations

from datetime import datetime

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import committed_json

from ddrl.study.amendments import cor_alone as K
from ddrl.study import runner as study
from ddrl.study.analysis import paired_matrix
from ddrl.study.plan import (COR_ONLY, NO_RL, RESULTS, SCALES, SMALL_LR, Job, csv_path, heldout_x_path, load_regimes,
                             same_base)

SMOKE_SEEDS = {"amc_like": (0, 1), "aime_like": (0, 1)}
C49D = K.DESIGNS["c49d"]


def test_jobs_go_regime_by_regime_then_seed_by_seed():
    assert [(j.regime, j.seed, j.methods) for j in K.jobs({"amc_like": (0, 1), "aime_like": (0,)})] == [
        ("amc_like", 0, (COR_ONLY,)), ("amc_like", 1, (COR_ONLY,)), ("aime_like", 0, (COR_ONLY,))]
    assert {j.label for j in K.heldout_jobs()} == {"H1x"} and len(K.heldout_jobs()) == 19 + 6
    assert K.SEEDS == {"amc_like": tuple(range(19)), "aime_like": tuple(range(6))}  # the registered seeds
    assert [(j.regime, j.seed, j.methods) for j in K.jobs({SMALL_LR: (3,)}, C49D)] == [
        (SMALL_LR, 3, ("no_adaptation", COR_ONLY))]  # Amendment 35: the build has no untrained runs of its own
    assert C49D.seeds == {SMALL_LR: tuple(range(19))} and C49D.out == study.RESULTS / "replication_c49d" / "runs"


def test_each_design_reads_its_claims_csvs_and_a_no_rl_run_only_from_where_it_says():
    assert K.needed() == {"amc_like": [("amc_like", "no_adaptation"), ("amc_like", "ddrl"), ("amc_like", COR_ONLY),
                                       (SMALL_LR, "ddrl")],  # K4's DDRL at lr/10 against AMC-like's COR alone
                          "aime_like": [("aime_like", "no_adaptation"), ("aime_like", "ddrl"), ("aime_like", COR_ONLY)]}
    assert K.needed(C49D.seeds, C49D) == {SMALL_LR: [(SMALL_LR, "no_adaptation"), (SMALL_LR, "ddrl"),
                                                     (SMALL_LR, COR_ONLY)]}
    assert K.needed({"amc_like": (0,)}) == {"amc_like": K.needed()["amc_like"]}  # a regime left out reads nothing
    xeon = K.DESIGNS["xeon"]  # Amendment 36: K4's regime has seeds of its own and reads AMC-like's COR alone
    assert K.needed(xeon.seeds, xeon)[SMALL_LR] == [(SMALL_LR, "ddrl"), ("amc_like", COR_ONLY)]
    assert K.shown(xeon.seeds, xeon) == ["amc_like", "math500_like"] and K.shown(K.SEEDS, K.REGISTERED) == list(K.SEEDS)
    assert K.beside("amc_like", xeon) == ["amc_like", SMALL_LR] and K.beside("math500_like", xeon) == ["math500_like"]
    assert K.beside(SMALL_LR, C49D) == [SMALL_LR]  # c49d's no-RL runs are its lr/10 regime's own
    cutoff = datetime.fromisoformat(xeon.cutoff).timestamp()  # Amendment 37's 18:00 UTC clock rule
    assert [(j.regime, j.seed, j.methods) for j in K.jobs(xeon.seeds, xeon, now=cutoff - 1)][-3:] == [
        (SMALL_LR, 10, ("ddrl",)), (SMALL_LR, 11, ("ttrl",)), (SMALL_LR, 11, ("ddrl",))]  # seed-major, a job a run
    before, after = (K.jobs(xeon.seeds, xeon, now=cutoff + d) for d in (-1, 1))
    assert len(before) == 24 + 24 and len(after) == 24 and {j.regime for j in after} == {"amc_like", "math500_like"}
    assert len(K.jobs(C49D.seeds, C49D, now=cutoff + 1e9)) == 19  # no clock: never closed
    # run's budget: no job in the partial regime starts after the clock, whatever --budget-min says
    assert K.budget_min(xeon, [SMALL_LR], None, now=cutoff - 600) == pytest.approx(10)
    assert K.budget_min(xeon, ["amc_like", SMALL_LR], 5, now=cutoff - 600) == 5
    assert K.budget_min(xeon, ["amc_like"], None, now=cutoff - 600) is None  # no partial regime: no clock
    assert K.budget_min(xeon, [SMALL_LR], 30, now=cutoff + 60) == 30  # past it: jobs() schedules none there
    assert K.budget_min(C49D, [SMALL_LR], None, now=cutoff) is None
    assert (xeon.tag, C49D.tag) == ("Amendments 36 and 37", "Amendment 35")


def test_a_regime_run_as_far_as_the_clock_allowed_is_analysed_on_its_complete_seeds(tmp_path):
    """Amendments 36 and 37: lr/10 seeds count where TTRL and DDRL (and what K4 reads) are all written; at least 2."""
    xeon = K.DESIGNS["xeon"]

    def touch(regime, method, seeds):
        for s in seeds:
            path = csv_path(tmp_path, regime, method, s)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()

    for r in ("amc_like", "math500_like"):
        for m in K.METHODS:
            touch(r, m, range(12))
    touch(SMALL_LR, "ddrl", range(4))
    touch(SMALL_LR, "ttrl", (0, 2))
    got = K.analysis_seeds(tmp_path, xeon)
    assert got == {"amc_like": tuple(range(12)), "math500_like": tuple(range(12)), SMALL_LR: (0, 2)}
    csv_path(tmp_path, "amc_like", COR_ONLY, 2).unlink()  # K4's COR alone (AMC-like's) missing for seed 2
    with pytest.raises(ValueError, match="Amendments 36 and 37's amc_like_small_lr has 1 complete seeds"):
        K.analysis_seeds(tmp_path, xeon)
    assert K.analysis_seeds(tmp_path, C49D) == C49D.seeds  # no partial regime: every seed, checked by analyse
    unwritten = K.Design(**{**xeon.__dict__, "analyses": (tmp_path / "a.json", tmp_path / "b.json")})
    (tmp_path / "a.json").write_text('{"seeds": {}}')
    assert K.committed(unwritten) is None  # one of two analyses written: nothing to render yet
    (tmp_path / "b.json").write_text("{}")
    assert K.committed(unwritten) == [{"seeds": {}}, {}]


def test_cor_alone_is_one_computation_at_both_learning_rates():
    """K4 reads AMC-like's COR alone at lr/10: the two regimes share the base, the questions and COR's settings."""
    regs = load_regimes(names=["amc_like", SMALL_LR])
    a, b = regs["amc_like"], regs[SMALL_LR]
    assert (a.num_ops, a.n_adapted, a.n_heldout, a.overrides) == (b.num_ops, b.n_adapted, b.n_heldout, b.overrides)
    assert b.lr == pytest.approx(a.lr / 10) and b.episodes == 2 * a.episodes  # only the RL phase's settings differ
    assert same_base(SMALL_LR) == ["amc_like"] and same_base("math500_like") == ["math500_like_small_lr"]
    assert same_base("aime_like") == [] and set(NO_RL) == {"no_adaptation", COR_ONLY}


def test_paired_matrix_reads_a_method_without_rl_from_its_same_base_regime():
    rows = [{"regime": r, "method": m, "seed": s, "split": "adapted", "question": q, "pass@1": v}
            for r, m, v in (("amc_like", COR_ONLY, 0.5), ("amc_like", "no_adaptation", 0.25),
                            (SMALL_LR, "ddrl", 0.75), (SMALL_LR, "ttrl", 0.5))
            for s in (0, 1) for q in ("a", "b")]
    df = pd.DataFrame(rows)
    np.testing.assert_allclose(paired_matrix(df, SMALL_LR, "ddrl", COR_ONLY, "adapted"), 25.0)
    np.testing.assert_allclose(paired_matrix(df, SMALL_LR, "ddrl", "no_adaptation", "adapted"), 50.0)
    assert paired_matrix(df, SMALL_LR, "ddrl", "ttrl", "adapted").shape == (2, 2)
    assert paired_matrix(df, "aime_like", "ddrl", COR_ONLY, "adapted") is None  # no same-base regime: nothing read
    # a trained method is never borrowed from another regime
    assert paired_matrix(df[df.method != "ttrl"], "amc_like", COR_ONLY, "ttrl", "adapted") is None


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The real entry points on the tiny testbed, seeds 0-1: the registered runs and H1x evaluations Amendment 34
    pairs with (the study's own jobs), then its COR-alone runs and their held-out evaluations."""
    tmp = tmp_path_factory.mktemp("cor_alone")
    out, runs = tmp / "out", str(tmp / "runs")
    common = ["--scale", "smoke", "--workers", "2", "--runs-root", runs, "--out", str(out), "--seeds", "0-1"]
    registered = [Job(r, s, ms, lab) for s in (0, 1) for r, ms, lab in (
        ("amc_like", ("no_adaptation", "ddrl"), "P2"), ("aime_like", ("no_adaptation", "ddrl"), "P2"),
        (SMALL_LR, ("ddrl",), "P2"), ("amc_like", ("no_adaptation", "ddrl"), "H1x"),
        ("aime_like", ("no_adaptation", "ddrl"), "H1x"))]
    study.run_jobs(registered, SCALES["smoke"], out, runs, workers=2, progress=False)
    with pytest.raises(ValueError, match=r"Amendment 34 incomplete, a CSV the adapted claims read missing for seeds "
                                         r"\{'amc_like': \[0, 1\], 'aime_like': \[0, 1\]\}"):
        K.analyse(out, n_boot=200, seeds=SMOKE_SEEDS)
    assert K.main(["run", *common]) == 0
    assert K.main(["heldout", *common]) == 0
    assert K.main(["run", "--build", "c49d", *common]) == 0  # Amendment 35's runs (the smoke model: one build)
    return out, runs, common


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_runs_cor_from_the_untrained_model_and_reloads(smoke):
    out, runs, _ = smoke
    for r in SMOKE_SEEDS:
        for s in (0, 1):
            alone = pd.read_csv(csv_path(out, r, COR_ONLY, s))
            assert alone.run.isna().all() and set(alone.rl_seconds) == {0.0} and (alone.cor_seconds > 0).all()
    before = csv_path(out, "aime_like", COR_ONLY, 1).read_bytes()
    statuses = study.run_jobs(K.jobs(SMOKE_SEEDS) + K.heldout_jobs(SMOKE_SEEDS), SCALES["smoke"], out, runs,
                              workers=1, progress=False)
    assert {s["status"] for s in statuses} == {"loaded"}
    assert csv_path(out, "aime_like", COR_ONLY, 1).read_bytes() == before
    with pytest.raises(ValueError, match=r"a held-out evaluation missing for seeds \{'aime_like': \[2\]\}"):
        K.analyse_heldout(out, n_boot=200, seeds={"amc_like": (0, 1), "aime_like": (0, 1, 2)})


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_analysis_tables_and_figure(smoke, capsys):
    out, _, _ = smoke
    res = K.analyse(out, n_boot=200, seeds=SMOKE_SEEDS)
    assert [(e["id"], e["regime"]) for e in res["entries"]] == list(K.CLAIMS)
    assert all(e["paper"] is None and e["n_seeds"] == 2 and e["verdict"] for e in res["entries"])
    df = K.load(out, SMOKE_SEEDS)
    a = df[df.split == "adapted"]
    small = a[(a.method == "ddrl") & (a.regime == SMALL_LR)].pivot(index="seed", columns="question", values="pass@1")
    alone = a[(a.method == COR_ONLY) & (a.regime == "amc_like")].pivot(index="seed", columns="question", values="pass@1")
    np.testing.assert_allclose(K.matrix(df, "K4", SMALL_LR), 100 * (small - alone))  # K4: lr/10 DDRL - AMC-like's COR
    assert [(r["regime"], r["method"]) for r in res["levels"]] == [
        ("amc_like", "no_adaptation"), ("amc_like", "ddrl"), ("amc_like", COR_ONLY), (SMALL_LR, "ddrl"),
        ("aime_like", "no_adaptation"), ("aime_like", "ddrl"), ("aime_like", COR_ONLY)]
    assert set(res["cor_kept"]) == {"amc_like", "aime_like"}
    held = K.analyse_heldout(out, n_boot=200, seeds=SMOKE_SEEDS)
    assert [(e["id"], e["regime"]) for e in held["entries"]] == list(K.HELDOUT_CLAIMS)
    assert all(e["n_questions"] == SCALES["smoke"].n_heldout_x for e in held["entries"])
    assert held["registered_checked"] == 4 and held["registered_reproduced"] == 4  # the recomputed COR = its CSV
    table = K.markdown(res, held).splitlines()
    assert table[2].startswith("| K3 COR alone (no RL) - no adaptation | AMC-like | 2 x 4 |") and "(3.98)" in table[2]
    assert table[4].startswith("| K4 DDRL at lr/10 - COR alone | AMC-like at lr/10 | 2 x 4 |")
    assert table[7].startswith("| K3x COR alone (no RL) - no adaptation, held-out | AMC-like | 2 x 3 |")
    assert len(table) == 2 + 9 + 3 + 7
    fig = K.figure(res, held)
    assert [ax.get_ylabel() for ax in fig.axes] == ["adapted pass@1 (%)"] * 2 + ["held-out pass@1 (%)"] * 2
    assert fig.axes[0].get_title() == "AMC-like: 4 adapted questions (2 seeds)"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()][-1].endswith("\nlr/10")  # K4's DDRL runs
    plt.close(fig)
    assert K.main(["status", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Amendment 34 (amc_like, adapted): 2 of 19 seeds complete" in printed
    assert "Amendment 34 (aime_like, held-out): 2 of 6 seeds complete" in printed


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_second_build_design_reads_its_own_regime_and_matches_the_registered_computation(smoke, capsys):
    """Amendment 35 on the smoke scale: the untrained model and COR alone computed in the lr/10 regime give the rows
    they give in AMC-like (no RL: ``study_plan.NO_RL``'s premise), so its K4 is the registered design's K4 here."""
    out, _, common = smoke
    keep = ["seed", "question", "pass@1", "maj@n", "mean_tokens", "cor_kept"]
    for m in ("no_adaptation", COR_ONLY):
        for s in (0, 1):
            own, base = (pd.read_csv(csv_path(out, r, m, s), dtype={"question": str}) for r in (SMALL_LR, "amc_like"))
            base = base[base.split == "adapted"].reset_index(drop=True)
            pd.testing.assert_frame_equal(own[keep], base[keep], check_dtype=False)
    res = K.analyse(out, n_boot=200, seeds={SMALL_LR: (0, 1)}, design=C49D)
    assert [(e["id"], e["regime"]) for e in res["entries"]] == list(C49D.claims)
    reg = K.analyse(out, n_boot=200, seeds=SMOKE_SEEDS)
    assert [e for e in res["entries"] if e["id"] == "K4"] == [e for e in reg["entries"] if e["id"] == "K4"]
    assert [(r["regime"], r["method"]) for r in res["levels"]] == [(SMALL_LR, m) for m in K.METHODS]
    table = K.markdown(res, design=C49D).splitlines()
    assert table[2].startswith("| K3 COR alone (no RL) - no adaptation | AMC-like at lr/10 | 2 x 4 |")
    assert "(3.04)" in table[2] and "(3.30)" in table[3] and len(table) == 2 + 2 + 3 + 3
    fig = K.figure(res, design=C49D)
    assert len(fig.axes) == 1 and fig.axes[0].get_ylabel() == "adapted pass@1 (%)"
    assert "Amendment 35" in fig._suptitle.get_text()
    plt.close(fig)
    with pytest.raises(ValueError, match=r"Amendment 35 incomplete, a CSV the adapted claims read missing for seeds "
                                         r"\{'amc_like_small_lr': \[2\]\}"):
        K.analyse(out, n_boot=200, seeds={SMALL_LR: (0, 1, 2)}, design=C49D)
    assert K.main(["status", "--build", "c49d", "--out", str(out)]) == 0
    assert "Amendment 35 (amc_like_small_lr, adapted): 2 of 19 seeds complete" in capsys.readouterr().out
    for bad in (["heldout", "--build", "c49d", *common], ["run", "--build", "c49d", "--regimes", "amc_like", *common]):
        with pytest.raises(SystemExit):
            K.main(bad)
    assert "--build c49d has the regimes ['amc_like_small_lr'] and no held-out claims" in capsys.readouterr().err


def test_amendment_38_evaluates_the_xeon_lr10_runs_with_the_registered_h1x_definitions():
    """Amendment 38: one H1x job per lr/10 seed evaluating five runs; its claims are the registered H1x family's
    pairs (``study_plan.PAIRED``) and Amendment 33's K3x / K4x, all in ``amc_like_small_lr``."""
    from ddrl.study.plan import PAIRED

    xeon = K.DESIGNS["xeon"]
    assert K.heldout_seeds(xeon) == {SMALL_LR: tuple(range(12))} and K.heldout_seeds(K.REGISTERED) == K.SEEDS
    assert [(j.regime, j.seed, j.methods, j.label) for j in K.heldout_jobs(K.heldout_seeds(xeon), xeon)][:1] == [
        (SMALL_LR, 0, ("no_adaptation", "ttrl", "bcs_dae", "ddrl", COR_ONLY), "H1x")]
    assert len(K.heldout_jobs(K.heldout_seeds(xeon), xeon)) == 12
    assert {j.methods for j in K.heldout_jobs()} == {(COR_ONLY,)}  # Amendment 34: the other runs' CSVs exist
    for (cid, r), (a, b, _) in xeon.heldout_claims.items():
        assert r == SMALL_LR and (a, b) == (PAIRED[cid][:2] if cid in PAIRED else K.HELDOUT_LR10[cid, r][:2])
    assert [cid for cid, _ in xeon.heldout_claims] == ["H1x", "H1xT", "H1xD", "H1xC", "H1xR", "K3x", "K4x"]
    assert K.heldout_methods(xeon, SMALL_LR) == list(K.HELDOUT_ORDER)
    assert K.heldout_methods(K.REGISTERED, "amc_like") == list(K.METHODS)  # Amendment 34's, unchanged
    assert (xeon.heldout_tag, K.REGISTERED.heldout_tag) == ("Amendment 38", "Amendment 34")
    assert set(xeon.predicted) >= set(xeon.heldout_claims)


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_amendment_38_refuses_to_train_then_evaluates_finished_runs(smoke, capsys):
    """The real ``heldout --build xeon`` on the tiny testbed: it refuses while an lr/10 TTRL run is unfinished (it would
    be trained anew), then evaluates the five runs per seed; the untrained model and COR alone computed in the lr/10
    regime equal AMC-like's committed rows (``same_as_base``), the loaded runs their committed CSVs."""
    out, runs, common = smoke
    xeon, seeds = K.DESIGNS["xeon"], {SMALL_LR: (0, 1)}
    with pytest.raises(SystemExit, match=r"Amendment 38 evaluates finished runs; not finished under .*'ttrl', 0"):
        K.main(["heldout", "--build", "xeon", *common])
    study.run_jobs([Job(SMALL_LR, s, ("ttrl",), "M1") for s in (0, 1)], SCALES["smoke"], out, runs, workers=2,
                   progress=False)
    assert K.main(["heldout", "--build", "xeon", *common]) == 0
    assert all(heldout_x_path(out, SMALL_LR, m, s).is_file() for m in K.HELDOUT_ORDER for s in (0, 1))
    held = K.analyse_heldout(out, n_boot=200, seeds=seeds, design=xeon)
    assert [(e["id"], e["regime"]) for e in held["entries"]] == list(xeon.heldout_claims)
    assert all(e["n_seeds"] == 2 and e["n_questions"] == SCALES["smoke"].n_heldout_x for e in held["entries"])
    # TTRL and DDRL at lr/10, and here (not on the Xeon build) the untrained model and COR alone too: the fixture's
    # c49d runs wrote their lr/10 CSVs, so the H1x job compares with those instead of writing adapted_x rows
    assert (held["registered_reproduced"], held["registered_checked"]) == (8, 8)
    assert (held["same_as_base"], held["same_as_base_checked"]) == (4, 4)  # no RL: one computation
    assert [r["method"] for r in held["levels"]] == list(K.HELDOUT_ORDER)
    registered = [{"id": cid, "regime": "amc_like", "estimate": -1.0, "ci_low": -2.0, "ci_high": 0.0, "n_seeds": 19,
                   "verdict": "not resolved"} for cid in ("H1x", "H1xT", "H1xD", "H1xC", "H1xR", "K3x", "K5x")]
    table = K.heldout_markdown(held, registered, xeon).splitlines()
    assert table[2].startswith("| H1x DDRL at lr/10 - no adaptation, held-out | -1.00 [-2.00, +0.00], 19 seeds, *not "
                               "resolved* | **") and "2 x 3 | " in table[2] and "(1.50 / 0.96)" in table[2]
    assert table[8].startswith("| K4x DDRL at lr/10 - COR alone, held-out | -1.00")  # beside K5x: read across
    assert table[12].startswith("| AMC-like at lr/10 | no_adaptation |") and table[12].endswith("| - |")
    assert len(table) == 2 + 7 + 3 + 5
    assert K.heldout_missing(out, {SMALL_LR: (0, 1, 2)}, xeon) == {SMALL_LR: [2]}
    fig = K.figure(K.analyse(out, n_boot=200, seeds=SMOKE_SEEDS), held, xeon)  # two adapted panels, one held-out
    assert [ax.get_ylabel() for ax in fig.axes if ax.axison] == ["adapted pass@1 (%)"] * 2 + ["held-out pass@1 (%)"]
    assert not fig.axes[3].axison and fig.axes[2].get_title() == "AMC-like at lr/10: 3 fresh questions (2 seeds)"
    assert "Amendments 36 and 37; held-out: Amendment 38" in fig._suptitle.get_text()
    plt.close(fig)
    assert K.main(["status", "--build", "xeon", "--out", str(out)]) == 0
    assert "Amendment 38 (amc_like_small_lr, held-out): 2 of 12 seeds complete" in capsys.readouterr().out


def _csvs(regime: str, methods: tuple[str, ...], seeds) -> pd.DataFrame:
    paths = [p for m in methods for p in sorted((RESULTS / "runs" / regime).glob(f"{m}-seed[0-9][0-9].csv.gz"))]
    df = pd.concat([pd.read_csv(p, dtype={"question": str}) for p in paths], ignore_index=True)
    return df[df.seed.isin(seeds)]


def test_the_plans_predicted_half_widths_are_the_measured_components():
    """Amendment 34's predictions from the committed P2 / M1 matrices and H1x families at the registered seeds."""
    from ddrl.study.analysis import claim_matrix
    from ddrl.report.stats import predicted_half_width, variance_components

    amc, aime = K.SEEDS["amc_like"], K.SEEDS["aime_like"]
    df = pd.concat([_csvs("amc_like", ("no_adaptation", "ttrl", "ddrl"), amc), _csvs(SMALL_LR, ("ttrl", "ddrl"), amc),
                    _csvs("aime_like", ("no_adaptation", "ttrl", "ddrl"), aime)])

    def hw(cid, regime, frame, n_seeds, n_questions):
        return f"{predicted_half_width(variance_components(claim_matrix(frame, cid, regime).to_numpy()), n_seeds, n_questions):.2f}"

    assert K.PREDICTED["K3", "amc_like"] == hw("P2", "amc_like", df, 19, 128)
    assert K.PREDICTED["K5", "amc_like"] == f"{hw('M1', 'amc_like', df, 19, 128)}-{hw('P2', 'amc_like', df, 19, 128)}"
    assert K.PREDICTED["K4", SMALL_LR] == f"{hw('M1', SMALL_LR, df, 19, 128)}-{hw('P2', SMALL_LR, df, 19, 128)}"
    assert K.PREDICTED["K3", "aime_like"] == hw("P2", "aime_like", df, 6, 64)
    assert K.PREDICTED["K5", "aime_like"] == f"{hw('M1', 'aime_like', df, 6, 64)}-{hw('P2', 'aime_like', df, 6, 64)}"
    for r, ss in K.SEEDS.items():
        held = pd.concat([pd.read_csv(p, dtype={"question": str}) for m in ("no_adaptation", "ttrl", "ddrl", "bcs_dae")
                          for p in sorted((RESULTS / "runs" / "heldout_x" / r).glob(f"{m}-seed*.csv.gz"))])
        held = held[held.seed.isin(ss)]
        family = [hw(c, r, held, len(ss), 1536) for c in ("H1x", "H1xT", "H1xD", "H1xC", "H1xR")]
        span = f"{min(family, key=float)}-{max(family, key=float)}"
        assert K.PREDICTED["K3x", r] == K.PREDICTED["K5x", r] == span, r
    plan = " ".join((RESULTS / "plan.md").read_text().split())
    assert "K3 from P2's components 3.98; K5 from M1's 1.81 to P2's 3.98; K4 (lr/10) from `amc_like_small_lr`'s M1 2.03 to P2 3.93" in plan
    assert "19 x 1,536 in AMC-like from the H1x family's components 0.28 (H1xC) to 1.41 (H1x); 6 x 1,536 in AIME-like 0.13 to 0.55" in plan


def test_amendment_38s_predicted_half_widths_are_the_measured_components():
    """Amendment 38's predictions at 12 x 1,536: the registered build's default-lr AMC-like H1x matrices (K4x from
    K5x's: DDRL at the default lr - COR alone) / its MATH-500-like lr/10 ones, as the plan states them."""
    from ddrl.report.stats import predicted_half_width, variance_components

    def hw(regime: str, a: str, b: str) -> str:
        df = pd.concat([pd.read_csv(p, dtype={"question": str}) for m in (a, b)
                        for p in sorted((RESULTS / "runs" / "heldout_x" / regime).glob(f"{m}-seed[0-9][0-9].csv.gz"))])
        d = paired_matrix(df, regime, a, b, "heldout_x")
        return f"{predicted_half_width(variance_components(d.to_numpy()), 12, 1536):.2f}"

    plan = " ".join((RESULTS / "plan.md").read_text().split())
    for (cid, r), (a, b, _) in K.HELDOUT_LR10.items():
        want = f"{hw('amc_like', a, b)} / {hw('math500_like_small_lr', a, b)}"
        assert K.PREDICTED_LR10[cid, r] == want, cid
        assert f"{cid} {want}" in plan, cid


def _committed(name: str) -> dict:
    return committed_json(K.OUT / name, f"python -m ddrl.study.amendments.cor_alone analyse ... --json {K.OUT / name}")


def test_committed_amendment_38_analysis_says_every_reload_reproduced():
    """Amendment 38's committed held-out analysis (recomputed by make test-study): every reloaded lr/10 run's adapted
    rows equal its committed CSV, the untrained model and COR alone computed at lr/10 equal AMC-like's, and the
    design's report ends with its table beside the registered build's entries."""
    from ddrl.study.claims import load

    xeon = K.DESIGNS["xeon"]
    path = xeon.analyses[1]
    res = committed_json(path, f"python -m ddrl.study.amendments.cor_alone analyse --build xeon --heldout --json {path}")
    assert (res["registered_reproduced"], res["registered_checked"], res["same_as_base"]) == (24, 24, 24)
    registered = load(K.RESULTS / "claims.json") + _committed("heldout.json")["entries"]
    assert K.report(K.committed(xeon), xeon).endswith(K.heldout_markdown(res, registered, xeon))
