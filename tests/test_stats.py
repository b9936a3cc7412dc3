"""ddrl.report.stats: paired differences, the hierarchical bootstrap's coverage, power and the verdict rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps

from ddrl.report import stats


def synthetic(rng, S, Q, mu, sd_seed, sd_q, sd_cell):
    """Synthetic crossed data from the model of ddrl.report.stats (test input only)."""
    return mu + rng.normal(0, sd_seed, S)[:, None] + rng.normal(0, sd_q, Q)[None, :] + rng.normal(0, sd_cell, (S, Q))


def test_paired_differences_pivots_and_refuses_incomplete_designs():
    rows = [{"method": m, "seed": s, "question": q, "accuracy": v}
            for m, off in (("a", 0.5), ("b", 0.25)) for s in (0, 1) for q in ("x", "y", "z")
            for v in [off + 0.1 * s]]
    d = stats.paired_differences(pd.DataFrame(rows), "a", "b")
    assert d.shape == (2, 3) and np.allclose(d.to_numpy(), 0.25)
    with pytest.raises(ValueError, match="same seeds x questions"):
        stats.paired_differences(pd.DataFrame(rows[:-1]), "a", "b")
    with pytest.raises(ValueError, match="duplicated"):
        stats.paired_differences(pd.DataFrame(rows + rows[:1]), "a", "b")
    with pytest.raises(ValueError, match="no rows for method 'c'"):
        stats.paired_differences(pd.DataFrame(rows), "a", "c")


def test_bootstrap_is_deterministic_for_a_generator_and_centred_on_the_mean():
    d = synthetic(np.random.default_rng(0), 4, 20, 2.0, 1, 3, 5)
    a = stats.hierarchical_bootstrap(d, np.random.default_rng(7), n_boot=500)
    b = stats.hierarchical_bootstrap(d, np.random.default_rng(7), n_boot=500)
    assert a == b and a.estimate == pytest.approx(d.mean())
    assert a.ci_low < a.estimate < a.ci_high and (a.n_seeds, a.n_questions) == (4, 20)
    with pytest.raises(ValueError, match="NaN"):
        stats.hierarchical_bootstrap(np.where(d > 100, d, np.nan), np.random.default_rng(0))
    with pytest.raises(ValueError, match="seeds x questions"):
        stats.hierarchical_bootstrap(d[:1], np.random.default_rng(0))


def test_bootstrap_interval_covers_the_truth_about_95_percent():
    """Coverage on synthetic hierarchical data of the planned size (8 seeds x 64 questions), 300 replicates.

    Measured when written: 0.95 (8 x 128), 0.93 (3 x 64), 0.92 (5 x 64) and 0.90 (5 x 64, seed-dominated);
    the bound below allows the simulation's own error (sd ~1.3 points at 300 replicates)."""
    rng = np.random.default_rng(2024)
    truth, hits, widths = 1.0, 0, []
    for _ in range(300):
        d = synthetic(rng, 8, 64, truth, 2.0, 5.0, 15.0)
        iv = stats.hierarchical_bootstrap(d, rng, n_boot=400)
        hits += iv.ci_low <= truth <= iv.ci_high
        widths.append(iv.half_width)
    coverage = hits / 300
    assert 0.90 <= coverage <= 0.99, coverage
    # and the width matches the model's prediction from the true components (within 15%)
    vc = stats.VarianceComponents(seed=4.0, question=25.0, cell=225.0)
    assert np.mean(widths) == pytest.approx(stats.predicted_half_width(vc, 8, 64), rel=0.15)


def test_question_bootstrap_covers_the_truth_and_refuses_what_it_cannot_bootstrap():
    """One seed (a real LLM's one set of samples, plan Amendment 18): the percentile bootstrap over questions covers
    the mean about 95% of the time, its half-width is about 1.96 sd / sqrt(Q), and it is deterministic."""
    rng = np.random.default_rng(7)
    hits, widths = 0, []
    for _ in range(300):
        v = rng.normal(1.0, 10.0, 200)
        iv = stats.question_bootstrap(v, rng, n_boot=400)
        hits += iv.ci_low <= 1.0 <= iv.ci_high
        widths.append(iv.half_width)
        assert iv.estimate == pytest.approx(v.mean()) and (iv.n_seeds, iv.n_questions) == (1, 200)
    assert 0.90 <= hits / 300 <= 0.99, hits / 300
    assert np.mean(widths) == pytest.approx(1.96 * 10.0 / np.sqrt(200), rel=0.1)
    v = np.arange(10.0)
    assert stats.question_bootstrap(v, np.random.default_rng(1)) == stats.question_bootstrap(v, np.random.default_rng(1))
    for bad in ([1.0], [1.0, np.nan]):
        with pytest.raises(ValueError, match="question_bootstrap"):
            stats.question_bootstrap(bad, rng)


def test_one_percentile_bootstrap_for_the_claims_and_the_figures():
    """The one-seed claims' interval (``question_bootstrap``) and the figures' bands (``plotting.bootstrap_ci95``) are
    the same function, ``percentile_bootstrap``, and its draws are the ones the committed claims were computed with
    (numbers of 2026-12-05, before the two were one: a changed draw, quantile or scale fails here)."""
    from ddrl.report.plotting import bootstrap_ci95

    v = np.random.default_rng(11).normal(0, 10, 64)
    iv = stats.question_bootstrap(v, np.random.default_rng(0))
    assert (iv.ci_low, iv.ci_high) == stats.percentile_bootstrap(v, np.random.default_rng(0))
    assert (iv.ci_low, iv.ci_high) == (-2.723007656075307, 1.540669332111428)
    assert bootstrap_ci95(v) == stats.percentile_bootstrap(v, np.random.default_rng(0), 1000)
    with pytest.raises(ValueError, match="confidence"):
        stats.percentile_bootstrap(v, np.random.default_rng(0), confidence=1.0)


def test_variance_components_recover_the_truth_on_a_large_design():
    rng = np.random.default_rng(1)
    vc = stats.variance_components(synthetic(rng, 60, 400, 0.0, 2.0, 5.0, 15.0))
    assert vc.seed == pytest.approx(4.0, rel=0.5)
    assert vc.question == pytest.approx(25.0, rel=0.2)
    assert vc.cell == pytest.approx(225.0, rel=0.05)


def test_eval_noise_is_binomial():
    assert stats.eval_noise_variance([0.5], n=16) == pytest.approx(2 * 0.25 / 16)
    assert stats.eval_noise_variance([0.0, 1.0], [0.0, 1.0]) == 0.0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        stats.eval_noise_variance([1.5])


def test_power_table_meets_target_and_shrinks_with_size():
    vc = stats.VarianceComponents(seed=4.0, question=25.0, cell=225.0)
    t = stats.power_table(vc, seeds=[4, 8, 16], questions=[64, 128, 256])
    assert (np.diff(t[t.seeds == 8].half_width) < 0).all() and (np.diff(t[t.questions == 64].half_width) < 0).all()
    assert (t.mde > t.half_width).all()  # 80% power needs more than the half-width
    best = stats.choose_design(t)
    assert best["half_width"] <= 2.0 and best["cost"] == t[t.meets].cost.min()
    assert stats.choose_design(stats.power_table(vc, [2], [2])) is None
    # the seed term alone bounds the half-width from below whatever the number of questions
    assert stats.predicted_half_width(vc, 2, 10**6) > 1.96 * np.sqrt(4.0 / 2)


@pytest.mark.parametrize("lo,hi,sign,expected", [
    (0.5, 3.0, 1, "reproduced"),
    (0.5, 3.0, -1, "contradicted"),
    (-3.0, -0.5, -1, "reproduced"),
    (-3.0, -0.5, 1, "contradicted"),
    (-0.8, 0.9, 1, "no effect"),
    (-1.0, 1.0, 1, "no effect"),        # the band is closed
    (-1.01, 1.0, 1, "not resolved"),
    (0.0, 2.0, 1, "not resolved"),      # touching 0 does not exclude it
    (-2.0, 0.0, -1, "not resolved"),
    (0.2, 0.8, 1, "reproduced"),        # sign first: a small but certain effect on the paper's side
    (0.2, 0.8, -1, "contradicted"),
    (-0.5, 0.5, 0, "reproduced"),       # null claim (Table 6): inside the band
    (1.5, 2.0, 0, "contradicted"),
    (-3.0, -1.2, 0, "contradicted"),
    (0.5, 1.5, 0, "not resolved"),
])
def test_verdict_edge_cases(lo, hi, sign, expected):
    assert stats.verdict(lo, hi, sign) == expected


def test_verdict_refuses_bad_input():
    with pytest.raises(ValueError, match="ci_low"):
        stats.verdict(float("nan"), 1.0, 1)
    with pytest.raises(ValueError, match="> ci_high"):
        stats.verdict(2.0, 1.0, 1)
    with pytest.raises(ValueError, match="paper_sign"):
        stats.verdict(0.0, 1.0, 2)


def test_detectable_effect_is_found_with_the_stated_power():
    """A true effect equal to the MDE gives an interval of the measured half-width that excludes 0 with the
    stated power: P(estimate - hw > 0) with estimate ~ N(mde, (hw / z)^2)."""
    for hw, power in ((2.0, 0.8), (3.5, 0.9)):
        mde = stats.detectable_effect(hw, power)
        se = hw / sps.norm.ppf(0.975)
        assert sps.norm.sf((hw - mde) / se) == pytest.approx(power)
    rng = np.random.default_rng(0)
    est = rng.normal(stats.detectable_effect(2.0), 2.0 / 1.959964, 200_000)
    assert np.mean(est - 2.0 > 0) == pytest.approx(0.8, abs=0.005)
