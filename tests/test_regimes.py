"""ddrl.study.plan's regimes: the pre-stated rule that picks regimes from base-model properties, and their questions."""

from __future__ import annotations

import pytest

from ddrl.study import plan


@pytest.mark.parametrize("pairs,want", [
    (((3, 0.85), (4, 0.72), (5, 0.45), (6, 0.6), (7, 0.3), (8, 0.1)),
     {"aime_like": 7, "amc_like": 5, "math500_like": 4}),
    (((3, 0.9), (4, 0.6)), "AIME-like"), (((4, 0.6), (5, 0.2)), "MATH-500-like"), (((3, 0.8), (4, 0.3)), "AMC-like")])
def test_rule_picks_fewest_hard_most_easy_and_middle_closest_to_half_or_names_the_missing_regime(pairs, want):
    base = [{"num_ops": k, "maj@64": m} for k, m in pairs]  # synthetic base properties (test input)
    if isinstance(want, str):
        with pytest.raises(ValueError, match=want):
            plan.select_regimes(base)
    else:
        assert plan.select_regimes(base) == want


def test_regime_questions_are_fixed_disjoint_and_of_the_right_length():
    r = plan.make_regimes({"aime_like": 6, "amc_like": 5, "math500_like": 3})
    assert [x.name for x in r] == ["aime_like", "amc_like", "math500_like", "amc_like_small_lr"]
    assert r[3].lr == pytest.approx(r[1].lr / 10) and r[3].episodes > r[1].episodes
    adapted, held = r[0].records()
    assert len(adapted) == 64 and len(held) == 128
    assert not {q["id"] for q in adapted} & {q["id"] for q in held}
    assert all(q["prompt"].count("+") + q["prompt"].count("-") + q["prompt"].count("*") == 6 for q in adapted)
    assert r[0].records() == (adapted, held)  # deterministic
    assert plan.candidate_records(6, 64) == adapted  # what bench/regimes.py measured is what is adapted on
    assert r[2].n_adapted >= plan.MATH_MIN_QUESTIONS
