"""Hand-worked cases for ddrl.analysis (frequency bands, CIs, Bayes view, GRPO amplification)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddrl import analysis as an


def _problems():
    # N = 4 samples each; "a" is correct in p0 (3 of 4), wrong "b" once; p1: two wrong answers + one None
    return [
        {"id": "p0", "keys": ["a", "a", "b", "a"], "correct": [True, True, False, True]},
        {"id": "p1", "keys": ["c", None, "d", "d"], "correct": [False, False, False, False]},
    ]


def _groups_for_advantages():
    # N = 8, K = 4 (random subset). p0: label "a" right with 6 of 8; p1: wrong label "w" with 3 of 8 votes.
    return [
        {"id": "p0", "keys": ["a"] * 6 + ["b", "c"], "correct": [True] * 6 + [False, False]},
        {"id": "p1", "keys": ["w", "w", "w", "r", "r", "x", "y", None], "correct": [False] * 3 + [True, True] + [False] * 3},
    ]


@pytest.mark.parametrize("call,match", [
    (lambda: an.scale_bands(((1, 1), (2, 2), (3, 64)), 64, 8), "band \\(1, 1\\) of N=64 is empty at N=8"),
    (lambda: an.check_bands(((1, 5), (5, 10)), 10), "non-overlapping"),
    (lambda: an.check_bands(((1, 5), (6, 11)), 10), "ranges in 1..10"),
    (lambda: an.answer_groups([{"id": "x", "keys": ["a", "a"], "correct": [True, False]}]), "'x'.*both right and wrong"),
    (lambda: an.posterior(np.array([1.0]), np.array([1.0]), 1.0), "prior p\\(C\\) must be in \\(0, 1\\)"),
    (lambda: an.kde_density([0.5, 0.5], np.linspace(0, 1, 5)), "two distinct"),
    (lambda: an.group_advantages(_groups_for_advantages(), k=16), "'p0' has 8 samples, fewer than k=16"),
], ids=["band-collapse", "overlap", "beyond-n", "mixed-grading", "prior", "kde-one-value", "k"])
def test_bad_input_is_refused_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bands_and_confidence_intervals_by_hand():
    assert an.scale_bands(an.BANDS_64, 64, 30) == ((1, 2), (3, 6), (7, 11), (12, 19), (20, 30))
    assert an.scale_bands(an.BANDS_64, 64, 64) == an.BANDS_64
    # Wilson 95% for 5/10: centre 0.5, half-width z*sqrt(.25/10 + z^2/400)/(1+z^2/10)
    z = 1.959963984540054
    half = z * math.sqrt(0.25 / 10 + z * z / 400) / (1 + z * z / 10)
    lo, hi = an.binomial_ci(5, 10)
    assert lo == pytest.approx(0.5 - half, abs=1e-9) and hi == pytest.approx(0.5 + half, abs=1e-9)
    # Clopper-Pearson for 0/n: upper = 1 - (alpha/2)^(1/n)
    lo, hi = an.binomial_ci(0, 10, method="exact")
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10))
    assert all(math.isnan(v) for v in an.binomial_ci(0, 0))


def test_answer_groups_and_the_frequency_table_by_hand():
    g = an.answer_groups(_problems())
    gi = g.set_index(["problem", "answer"])
    assert gi.loc[("p0", "a"), "count"] == 3 and gi.loc[("p0", "a"), "x"] == 0.75 and gi.loc[("p0", "a"), "correct"]
    assert gi.loc[("p1", "d"), "count"] == 2 and gi.loc[("p1", "d"), "n"] == 4 and not gi.loc[("p1", "d"), "correct"]
    assert len(g) == 4  # None forms no group
    t = an.frequency_table(g, ((1, 1), (2, 4))).set_index("band")
    # band 1: answers b (wrong), c (wrong) -> 0/2; band 2-4: a (right, 3 samples), d (wrong, 2 samples)
    assert t.loc["1", "n_distinct"] == 2 and t.loc["1", "frac_correct"] == 0.0
    assert t.loc["2-4", "frac_correct"] == 0.5
    assert t.loc["2-4", "n_samples"] == 5 and t.loc["2-4", "frac_correct_samples"] == pytest.approx(3 / 5)
    assert t.loc["2-4", "ci_low"] < 0.5 < t.loc["2-4", "ci_high"]
    assert an.ambiguous_bands(t.reset_index()) == ["2-4"]
    s = an.summary(_problems())  # majority vote, SVAMP style
    assert (s["problems"], s["samples"], s["maj_accuracy"]) == (2, 8, 0.5)
    assert s["mean_accuracy"] == pytest.approx(3 / 8) and s["no_answer_rate"] == pytest.approx(1 / 8)
    (p,) = an.svamp_problems([{"id": "chal-1", "answers": [1.0, None, 1.0], "correct": [True, False, True]}])
    g = an.answer_groups([p])
    assert g["count"].tolist() == [2] and g["correct"].tolist() == [True]


# ---------------------------------------------------------------- Bayes view


def test_posterior_and_log_odds_by_hand():
    # p(x|C)=2, p(x|~C)=0.5, p(C)=0.2: 0.4 / (0.4 + 0.4) = 0.5
    assert an.posterior(np.array([2.0]), np.array([0.5]), 0.2)[0] == pytest.approx(0.5)
    assert an.posterior(np.array([1.0]), np.array([1.0]), 0.3)[0] == pytest.approx(0.3)  # no evidence: prior
    pc, pnc, prior = np.array([2.0, 0.1]), np.array([0.5, 0.4]), 0.2
    d = an.log_odds_decomposition(pc, pnc, prior)
    assert d["log_likelihood_ratio"][0] == pytest.approx(math.log(4))
    assert d["log_prior_odds"][1] == pytest.approx(math.log(0.25))
    post = an.posterior(pc, pnc, prior)
    assert np.allclose(d["log_posterior_odds"], np.log(post / (1 - post)))


def test_derivative_and_the_ambiguous_region():
    x = np.linspace(0, 1, 11)
    assert np.allclose(an.derivative(3 * x + 1, x), 3.0)
    assert np.allclose(an.derivative(x ** 2, x)[1:-1], 2 * x[1:-1])
    post = np.array([0.0, 0.1, 0.3, 0.5, 0.9, 0.95, 0.5, 0.6, 0.9, 1.0, 1.0])
    assert np.allclose(an.ambiguous_region(x, post, 0.2, 0.8), [(0.2, 0.3), (0.6, 0.7)])
    assert an.ambiguous_region(x, np.full(11, 0.5)) == [(0.0, 1.0)]
    assert an.crossing(x, post, 0.5) == pytest.approx(0.3)


def test_kde_reflected_density_integrates_to_one():
    x = np.random.default_rng(0).uniform(0.6, 1.0, size=200)
    grid = np.linspace(0, 1, 2001)
    dens = an.kde_density(x, grid)
    assert np.trapezoid(dens, grid) == pytest.approx(1.0, abs=1e-3)
    assert dens[-1] > an.kde_density(x, grid, reflect=False)[-1]  # mass near the edge is kept


def test_bayes_analysis_separated_classes():
    # correct answers frequent, wrong answers rare: posterior rises with x and crosses 0.5 in between
    rng = np.random.default_rng(1)
    rows = [{"problem": i, "answer": "r", "count": c, "n": 64, "x": c / 64, "correct": True}
            for i, c in enumerate(rng.integers(40, 65, 100))]
    rows += [{"problem": 1000 + i, "answer": "w", "count": c, "n": 64, "x": c / 64, "correct": False}
             for i, c in enumerate(rng.integers(1, 20, 300))]
    assert an.bayes_analysis(pd.DataFrame(rows), grid_points=101)["support"] is None  # no x has data of both
    res = an.bayes_analysis(pd.DataFrame(rows), grid_points=101, min_count=0)  # the KDEs read everywhere
    assert res["prior"] == pytest.approx(0.25)
    post = res["curves"]["posterior"].to_numpy()
    assert post[5] < 0.1 and post[-1] > 0.9
    assert 20 / 64 < res["crossing"] < 40 / 64
    (start, end), = res["region"]
    step = 0.01  # grid spacing: the region is reported in grid points, the crossing interpolated
    assert start - step <= res["crossing"] <= end + step


# ---------------------------------------------------------------- advantages


def test_grpo_closed_form_hand_worked():
    a_pos, a_neg = an.grpo_closed_form(16, 32, eps=0.0)
    s = math.sqrt(16 * 16 / (32 * 31))
    assert float(a_pos) == pytest.approx(0.5 / s) and float(a_pos) == pytest.approx(0.98425, abs=1e-4)
    assert float(a_neg) == pytest.approx(-0.5 / s)
    # one positive of 32: s = sqrt(31/(32*31)) = sqrt(1/32); A+ = (31/32) * sqrt(32) = 5.480
    a_pos, a_neg = an.grpo_closed_form(1, 32, eps=0.0)
    assert float(a_pos) == pytest.approx(31 / 32 * math.sqrt(32)) and float(a_neg) == pytest.approx(-1 / 32 * math.sqrt(32))
    assert an.grpo_closed_form(np.array([0, 32]), 32)[0].tolist() == [0.0, 0.0]


def test_closed_form_matches_ddrl_advantages():
    curves = an.advantage_curves(32, ("grpo", "grpo_no_std", "fixed"))
    assert len(curves) == 3 * 31
    assert np.allclose(curves["closed_pos"], curves["measured_pos"], atol=1e-9)
    assert np.allclose(curves["closed_neg"], curves["measured_neg"], atol=1e-9)
    grpo = curves[curves["estimator"] == "grpo"].set_index("m")
    assert grpo.loc[1, "closed_pos"] > grpo.loc[16, "closed_pos"] > grpo.loc[31, "closed_pos"]  # amplification
    fixed = curves[curves["estimator"] == "fixed"]
    assert set(fixed["measured_pos"]) == {1.0} and set(fixed["measured_neg"]) == {-1.0}


def test_group_advantages_rewards_labels_and_mass():
    adv = an.group_advantages(_groups_for_advantages(), k=8, seed=0)  # k = N: every rollout kept
    p1 = adv[adv["problem"] == "p1"]
    assert p1["consensus"].iloc[0] == 3 / 8 and not p1["label_correct"].iloc[0]
    assert p1["reward"].sum() == 3
    # GRPO with 3 of 8 positives: A+ = (5/8) / sqrt(15/56)
    assert p1.loc[p1["reward"] == 1, "grpo"].iloc[0] == pytest.approx(0.625 / math.sqrt(15 / 56), rel=1e-5)
    # spurious: rewarded but wrong (3 "w") and unrewarded but right (2 "r")
    assert ((p1["reward"] == 1) != p1["truly_correct"]).sum() == 5
    by = an.advantage_by_label(adv).set_index("pseudo_label")
    s6 = math.sqrt(6 * 2 / (8 * 7))
    assert by.loc["right", "mean_pos_adv_grpo"] == pytest.approx(0.25 / s6, rel=1e-5)
    assert by.loc["wrong", "mean_pos_adv_grpo"] > by.loc["right", "mean_pos_adv_grpo"]
    assert by.loc["wrong", "mean_pos_adv_fixed"] == by.loc["right", "mean_pos_adv_fixed"] == 1.0
    mass = an.advantage_mass_by_consensus(adv, ((1, 4), (5, 8))).set_index("band")
    assert mass.loc["1-4", "wrong_label_share"] == 1.0 and mass.loc["5-8", "wrong_label_share"] == 0.0
    assert mass.loc["1-4", "pos_mass_wrong_share_grpo"] == 1.0 and mass.loc["5-8", "pos_mass_wrong_share_grpo"] == 0.0
    # p1 under fixed: |A| = 1 each, 5 of 8 rollouts spurious
    assert mass.loc["1-4", "spurious_share_fixed"] == pytest.approx(5 / 8)


@pytest.mark.slow
def test_grade_problem_with_math_verify():
    texts = ["1+1=2;\\boxed{2}", "\\boxed{2.0}", "\\boxed{3}", "no answer"]
    p = an.grade_problem(texts, "2", "q")
    assert p["label_count"] == 2 and p["label_correct"]
    assert p["correct"] == [True, True, False, False] and p["keys"][3] is None


def test_model_fingerprint_hashes_each_weight_file_once_and_follows_changes(tmp_path, monkeypatch):
    import os

    import ddrl.run.fingerprints as where
    from ddrl.run.fingerprints import model_fingerprint

    calls = []
    real = where.sha256_file
    monkeypatch.setattr(where, "sha256_file", lambda p: calls.append(p) or real(p))
    w = tmp_path / "model.safetensors"
    w.write_bytes(b"weights-a")
    (tmp_path / "config.json").write_text("{}")  # not a weight file
    a = model_fingerprint(str(tmp_path))
    assert a == {"model": str(tmp_path), "model.safetensors": real(w)}
    assert model_fingerprint(str(tmp_path)) == a and len(calls) == 1, "memoised: hashed once"
    w.write_bytes(b"weights-b")
    os.utime(w, ns=(w.stat().st_atime_ns, w.stat().st_mtime_ns + 10**9))  # a new mtime even on coarse clocks
    b = model_fingerprint(str(tmp_path))
    assert b["model.safetensors"] == real(w) != a["model.safetensors"] and len(calls) == 2
    assert model_fingerprint("org/hub-model") == {"model": "org/hub-model"}


# ---------------------------------------------------------------- the KDE's supported range


def test_supported_needs_both_classes_nearby():
    grid = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    x_c = [0.1] * 5 + [0.9] * 5 + [1.0] * 5       # correct answers near 0.1, 0.9 and 1
    x_nc = [0.0] * 5 + [0.12] * 5                  # wrong answers only near 0 and 0.1
    # within ±0.05: x = 0.1 sees 5 correct (0.1) and 5 wrong (0.12); x = 0 sees no correct; 0.9, 1 no wrong
    assert an.supported(grid, x_c, x_nc, half_width=0.05, min_count=5).tolist() == [False, True, False, False, False]
    assert an.supported(grid, x_c, x_nc, half_width=0.11, min_count=5).tolist() == [True, True, False, False, False]
    with pytest.raises(ValueError):
        an.supported(grid, x_c, x_nc, half_width=0.0)
    assert an.supported(grid, x_c, x_nc, min_count=0).all()


def test_bayes_analysis_reads_region_and_slope_inside_the_support():
    # wrong answers stop at x = 0.5; correct ones run to 1: beyond ~0.55 the wrong-answer density is a kernel tail,
    # so the steepest rise of the log-odds must not be reported at the edge (the tail's artefact)
    rng = np.random.default_rng(2)
    rows = [{"problem": i, "count": c, "n": 64, "x": c / 64, "correct": True} for i, c in enumerate(rng.integers(10, 65, 200))]
    rows += [{"problem": 1000 + i, "count": c, "n": 64, "x": c / 64, "correct": False}
             for i, c in enumerate(rng.integers(1, 33, 400))]
    res = an.bayes_analysis(pd.DataFrame(rows), grid_points=101)
    lo, hi = res["support"]
    assert lo <= 0.16 + 1e-9 and 0.45 <= hi <= 0.56  # both classes have >= 5 answers within ±0.05 only there
    c = res["curves"]
    assert c["supported"].sum() == round((hi - lo) / 0.01) + 1
    assert lo + 0.05 - 1e-9 <= res["steepest"] <= hi - 0.05 + 1e-9  # a slope needs data on both sides
    assert c["d_log_odds_dx"].idxmax() > c.index[c["supported"]].max()  # unrestricted, the peak is in the tail
    assert all(lo <= a and z <= hi for a, z in res["region"])


# ---------------------------------------------------------------- what BCS keeps


@pytest.mark.parametrize("c,copies", [(0, 0), (1, 1), (8, 8), (15, 15), (16, 16), (40, 16), (48, 16), (49, 17),
                                      (56, 24), (64, 32)])
def test_bcs_label_copies_hand_worked(c, copies):
    # N = 64, K = 32: K+ = min(c, 16); the 16 negative slots take the 64 - c other rollouts first, label copies after
    assert int(an.bcs_label_copies(c, 64, 32)) == copies


def test_bcs_label_copies_equals_ddrl_selection():
    from ddrl.selection import bcs

    for n, k in ((64, 32), (30, 15), (8, 4)):
        for c in range(2, n + 1):  # the label, then singletons (no tie with the label for c >= 2)
            counts = [c] * c + [1] * (n - c)
            kept = sum(1 for i in bcs(counts, k) if i < c)
            assert kept == an.bcs_label_copies(c, n, k), (n, k, c)


def test_dae_mean_advantage_and_zones():
    # c = 8: 8 positives of 32 -> 2 * 8/32 - 1 = -0.5; c = 32: 16 -> 0; c = 56: 24 -> +0.5; c = 64: all 32 -> +1
    assert an.dae_mean_advantage(np.array([8, 32, 56, 64]), 64, 32).tolist() == [-0.5, 0.0, 0.5, 1.0]
    assert an.dae_zones(64, 32) == {"negative_below": 16, "positive_above": 48}
    assert an.dae_zones(30, 15) == {"negative_below": 7, "positive_above": 22}
    z = an.dae_zones(64, 32)
    assert an.dae_mean_advantage(z["negative_below"] - 1, 64, 32) < 0 == an.dae_mean_advantage(z["negative_below"], 64, 32)
    assert an.dae_mean_advantage(z["positive_above"], 64, 32) == 0 < an.dae_mean_advantage(z["positive_above"] + 1, 64, 32)
    assert float(an.random_label_copies(40, 64, 32)) == 20.0
    with pytest.raises(ValueError):
        an.bcs_label_copies(65, 64, 32)


def test_dae_advantage_by_question_from_groups():
    groups = pd.DataFrame({"question": ["a", "a", "b", "c", "c"], "count": [8, 56, 10, 30, 34], "n": [64] * 5})
    t = an.dae_advantage_by_question(an.label_counts(groups))
    assert t["c"].tolist() == [56, 10, 34]
    assert t["dae_mean_advantage"].tolist() == [0.5, 2 * 10 / 32 - 1, 0.0]
    assert t["zone"].tolist() == ["positive", "negative", "zero"]


def test_selection_by_band_hand_worked():
    # two questions (label counts 10 and 50 of 64), each rule's sums over 2 orders of K = 32 kept rollouts
    sel = pd.DataFrame([
        {"question": "q1", "rule": "random", "n": 64, "label_count": 10, "orders": 2, "kept": 64, "neg": 54, "fn": 6, "fp": 10},
        {"question": "q1", "rule": "bcs", "n": 64, "label_count": 10, "orders": 2, "kept": 64, "neg": 44, "fn": 0, "fp": 20},
        {"question": "q2", "rule": "random", "n": 64, "label_count": 50, "orders": 2, "kept": 64, "neg": 14, "fn": 0, "fp": 0},
        {"question": "q2", "rule": "bcs", "n": 64, "label_count": 50, "orders": 2, "kept": 64, "neg": 28, "fn": 0, "fp": 0},
    ])
    t = an.selection_by_band(sel).set_index(["rule", "band"])
    assert t.loc[("bcs", "6-15"), "fp_share"] == pytest.approx(100 * 20 / 64)
    assert t.loc[("random", "6-15"), "fp_share"] == pytest.approx(100 * 10 / 64)
    assert t.loc[("bcs", "6-15"), "copies"] == 10 and t.loc[("random", "45-64"), "copies"] == 25
    assert t.loc[("random", "6-15"), "fn_share"] == pytest.approx(100 * 6 / 54)
    assert t.loc[("bcs", "1-5"), "questions"] == 0 and t.loc[("bcs", "45-64"), "weight"] == 0.5
    s = an.selection_summary(sel)
    assert s["bcs"] == pytest.approx(100 * 20 / 64 / 2) and s["e2"] == pytest.approx(-100 * 10 / 64 / 2)
    assert s["fn_random"] == pytest.approx(100 * 6 / 54 / 2) and s["fn_bcs"] == 0 and s["e1"] == s["fn_random"]


def test_dae_zone_shares_and_advantage_course_hand_worked():
    q = an.dae_advantage_by_question(pd.DataFrame({"regime": ["a"] * 4 + ["b"], "question": list("wxyzv"),
                                                   "c": [8, 32, 56, 64, 40], "n": [64] * 5}))
    z = an.dae_zone_shares(q).set_index("regime")
    assert z.loc["a", ["negative", "zero", "positive"]].tolist() == [25.0, 25.0, 50.0]
    assert z.loc["a", "predicted"] == pytest.approx((-0.5 + 0.0 + 0.5 + 1.0) / 4)
    assert z.loc["b", "zero"] == 100.0 and z.loc["b", "questions"] == 1
    steps = pd.DataFrame({"regime": "a", "seed": [0, 0, 0, 1, 1, 1], "step": [0, 1, 2] * 2,
                          "adv/mean": [-0.2, 0.0, 0.4, -0.4, 0.2, 0.6],
                          "label/majority_ratio": [0.3, 0.5, 0.8, 0.4, 0.6, 0.9]})
    c = an.advantage_course(steps, window=1).iloc[0]
    assert (c["runs"], c["steps"]) == (2, 3)
    assert c["adv_start"] == pytest.approx(-0.3) and c["adv_end"] == pytest.approx(0.5)
    assert c["maj_start"] == pytest.approx(0.35) and c["maj_end"] == pytest.approx(0.85)
