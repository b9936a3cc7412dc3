"""ddrl.study.analysis: where TTRL's wrong rewards come from, by the band of each rollout's answer (Amendment 63)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddrl.study import analysis as study_analysis
from ddrl.study.claims import validate
from ddrl.study.analysis import band_of, by_band, noise_description, noise_matrix, noise_summary, wrong_rewards

#: Answer groups of N = 64 whose wrong rewards are known by hand (count, correct) per distinct answer; the rest of the
#: 64 rollouts carry no answer. A: a wrong label seen 30 times (middle band: 30 false positives), the right answer 20
#: times (middle: 20 false negatives), a wrong answer 3 times. B: a right label seen 50 times: no wrong reward.
#: C: a wrong label seen 48 times (high: 48 false positives), the right answer twice (low: 2 false negatives).
#: T: a wrong and a right answer tied at 20 (the vote's order decides), a wrong one seen 4 times.
SHAPES = {"A": [(30, False), (20, True), (3, False)], "B": [(50, True), (10, False)],
          "C": [(48, False), (2, True)], "T": [(20, False), (20, True), (4, False)]}


def _groups(kinds: dict[str, int], seeds=(0, 1), regime="amc_like") -> pd.DataFrame:
    return pd.DataFrame([{"regime": regime, "seed": s, "question": f"{kind}{i}", "count": c, "n": 64, "correct": ok}
                         for s in seeds for kind, m in kinds.items() for i in range(m) for c, ok in SHAPES[kind]])


def _row(t: pd.DataFrame, q: str, band: str) -> tuple:
    r = t[(t.seed == 0) & (t.question == q) & (t.band == band)].iloc[0]
    return r.answered, r.fp, r.fn


def test_wrong_rewards_by_hand():
    t = wrong_rewards(_groups({"A": 1, "B": 1, "C": 1, "T": 1}))
    assert len(t) == 2 * 4 * 3  # seeds x questions x bands
    assert [_row(t, "A0", b) for b in ("low", "middle", "high")] == [(3, 0, 0), (50, 30, 20), (0, 0, 0)]
    assert [_row(t, "B0", b) for b in ("low", "middle", "high")] == [(0, 0, 0), (10, 0, 0), (50, 0, 0)]
    assert [_row(t, "C0", b) for b in ("low", "middle", "high")] == [(2, 0, 2), (0, 0, 0), (48, 48, 0)]
    # the tie: each order labels one of the two 20s; a wrong label brings 20 false positives and 20 false negatives
    answered, fp, fn = _row(t, "T0", "middle")
    assert answered == 40 and fp == fn and 5 < fp < 15 and _row(t, "T0", "low") == (4, 0, 0)
    pd.testing.assert_frame_equal(t, wrong_rewards(_groups({"A": 1, "B": 1, "C": 1, "T": 1})))  # a pure function
    # F1-F3's bands at any N: SVAMP's N = 30 too
    assert band_of(np.array([1, 5, 6, 44, 45, 64]), 64).tolist() == [0, 0, 1, 1, 2, 2]
    assert band_of(np.array([1, 2, 3, 21, 22, 30]), 30).tolist() == [0, 0, 1, 1, 2, 2]


def test_n1_and_n2_by_hand():
    """Three A, two B, one C per seed: 150 of the 200 wrong rewards sit in the middle band (N1 = 100 x 0.75 - 50 = +25);
    the middle band's 170 answered rollouts carry 150 of them, the outer bands' 159 carry 50 (N2 = 100 x (150/170 -
    50/159))."""
    groups = _groups({"A": 3, "B": 2, "C": 1})
    t = wrong_rewards(groups)
    n1, n2 = noise_matrix(t, "N1"), noise_matrix(t, "N2")
    assert n1.shape == n2.shape == (2, 6)
    assert n1.to_numpy().mean() == pytest.approx(25.0)
    assert n2.to_numpy().mean() == pytest.approx(100 * (150 / 170 - 50 / 159))
    # the claims on 60 questions of the same mix (30 A, 20 B, 10 C): the share's sampling error is about
    # sqrt(0.75 x 0.25 / 40) = 7 points, so both are reproduced
    e1, e2 = (study_analysis.base_claim(c, _groups({"A": 30, "B": 20, "C": 10}), pd.DataFrame(), n_boot=400)
              for c in ("N1", "N2"))
    validate([e1, e2])
    assert e1["estimate"] == pytest.approx(25.0) and e1["n_questions"] == 60 and e1["n_seeds"] == 2
    assert 5 < e1["ci_low"] < 20 and 30 < e1["ci_high"] < 45 and e1["verdict"] == "reproduced"
    assert e2["estimate"] == pytest.approx(56.79, abs=0.01) and e2["verdict"] == "reproduced"
    # only C-like questions: every wrong reward in the outer bands, N1 contradicted
    c_only = study_analysis.base_claim("N1", _groups({"B": 3, "C": 3}), pd.DataFrame(), n_boot=400)
    assert c_only["estimate"] == pytest.approx(-50.0) and c_only["verdict"] == "contradicted"
    with pytest.raises(ValueError, match="'N1' or 'N2'"):
        noise_matrix(t, "E1")


def test_the_linearised_matrix_averages_to_the_pooled_ratio():
    """Random answer groups: each matrix's mean is the ratio of sums read off the description (:func:`by_band`)."""
    rng = np.random.default_rng(1)
    rows = []
    for s in (0, 1, 2):
        for q in range(30):
            counts = rng.multinomial(64, rng.dirichlet(np.full(5, 0.4)))[:4]  # the fifth share: no answer
            rows += [{"regime": "r", "seed": s, "question": f"q{q}", "count": int(c), "n": 64,
                      "correct": bool(i == rng.integers(4))} for i, c in enumerate(counts) if c]
    t = wrong_rewards(pd.DataFrame(rows), orders=8)
    d = by_band(t).set_index("band")
    assert noise_matrix(t, "N1").to_numpy().mean() == pytest.approx(d.loc["middle", "share_%"] - 50)
    outer = d.loc[["low", "high"]]
    rate_outer = 100 * outer.wrong.sum() / outer.answered.sum()
    assert noise_matrix(t, "N2").to_numpy().mean() == pytest.approx(d.loc["middle", "rate_%"] - rate_outer)
    assert d["share_%"].sum() == pytest.approx(100)


def test_counts_beyond_n_are_refused_by_question():
    bad = _groups({"A": 1}, seeds=(0,)).assign(count=40)
    with pytest.raises(ValueError, match=r"wrong_rewards: amc_like seed 0 question 'A0': answer counts sum to 120, "
                                         r"more than N = 64"):
        wrong_rewards(bad)


def test_description_pools_the_testbed_and_keeps_a_real_llm_apart():
    testbed = pd.concat([_groups({"A": 2, "B": 1}), _groups({"C": 1}, regime="math500_like")])
    real = _groups({"A": 1}, seeds=(0,), regime="svamp_codex")
    d = noise_description(testbed, real)
    assert list(dict.fromkeys(d.regime)) == ["base", "amc_like", "math500_like", "svamp_codex"]
    base = d[d.regime == "base"].set_index("band")
    assert base.loc["middle", "wrong"] == 2 * 2 * 50 and base.loc["high", "fp"] == 2 * 48  # 2 seeds
    assert d.groupby("regime")["share_%"].sum().round(6).eq(100).all()
    assert noise_description(pd.DataFrame(), None).empty
    n1 = study_analysis.base_claim("N1", testbed, pd.DataFrame(), n_boot=200)
    said = noise_summary(d, [n1])  # N2 not in the entries: said so, not a KeyError (the smoke scale has no middle band)
    share = d[(d.regime == "base") & (d.band == "middle")]["share_%"].iloc[0]
    assert said.startswith(f"**base**: the middle band carries {share:.0f}% of TTRL's wrong rewards (N1 ")
    assert "N2 not computed" in said and "**svamp_codex**: " in said


def test_a_ratio_without_a_denominator_is_no_claim():
    """All of a tiny model's answers rare (the smoke scale): no middle-band rollout, so N2 has no rate to take; N1's
    wrong rewards all sit in the low band (-50). No wrong reward at all: N1 has no share to take either."""
    rare = pd.DataFrame([{"regime": "amc_like", "seed": s, "question": f"q{q}", "count": 1, "n": 8, "correct": i == 0}
                         for s in (0, 1) for q in range(4) for i in range(3)])
    assert noise_matrix(wrong_rewards(rare), "N2").empty
    assert study_analysis.base_claim("N2", rare, pd.DataFrame(), n_boot=200) is None
    assert noise_matrix(wrong_rewards(rare), "N1").to_numpy().mean() == pytest.approx(-50)
    right = _groups({"B": 3})
    assert noise_matrix(wrong_rewards(right), "N1").empty and not noise_matrix(wrong_rewards(right), "N2").empty
