"""Majority vote (ddrl.voting)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddrl.voting import Vote, majority_vote


def test_simple_majority() -> None:
    v = majority_vote(["3", "5", "3", "7", "3"])
    assert v == Vote(label="3", label_count=3, counts=[3, 1, 3, 1, 3], keys=["3", "5", "3", "7", "3"], label_key="3")
    assert v.n == 5
    assert v.majority_ratio == pytest.approx(0.6)


def test_none_never_wins_and_counts_zero() -> None:
    v = majority_vote([None, None, None, "4", None])
    assert v.label == "4"
    assert v.label_count == 1
    assert v.counts == [0, 0, 0, 1, 0]
    assert v.majority_ratio == pytest.approx(1 / 5)  # ratio over all N rollouts, None included


def test_tie_goes_to_answer_seen_first() -> None:
    v = majority_vote([None, "B", "A", "A", "B"])
    assert (v.label, v.label_count) == ("B", 2)
    v = majority_vote(["A", "B", "B", "A"])
    assert (v.label, v.label_count) == ("A", 2)
    assert v.counts == [2, 2, 2, 2]


def test_integer_forms_vote_together_and_label_is_first_written_form() -> None:
    v = majority_vote(["  025 ", "7", "25.0", "\\boxed{25}", "7"])
    assert v.label == "025"  # as the first rollout wrote it, stripped
    assert v.label_count == 3
    assert v.counts == [3, 2, 3, 3, 2]


def test_latex_whitespace_votes_together() -> None:
    v = majority_vote(["\\frac{1}{2}", "\\frac { 1 }{ 2 }", "\\dfrac{1}{2}", "0.5"])
    assert v.label == "\\frac{1}{2}"
    assert v.counts == [3, 3, 3, 1]  # 0.5 is a separate vote (see docs/semantics.md)


def test_no_answers_at_all() -> None:
    v = majority_vote([None, "", None, "  "])
    assert v.label is None
    assert v.label_count == 0
    assert v.counts == [0, 0, 0, 0]
    assert v.majority_ratio == 0.0


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="at least one"):
        majority_vote([])
    with pytest.raises(TypeError, match="sequence"):
        majority_vote("25")  # type: ignore[arg-type]


answer_lists = st.lists(st.one_of(st.none(), st.sampled_from(["1", "01", "2", "3.0", "3", "x", " x "])), min_size=1)


@given(answer_lists)
def test_counts_are_consistent(answers: list[str | None]) -> None:
    v = majority_vote(answers)
    assert len(v.counts) == len(answers)
    for i, k in enumerate(v.keys):
        assert v.counts[i] == (0 if k is None else v.keys.count(k))
    assert v.label_count == max(v.counts)
    if v.label is None:
        assert all(k is None for k in v.keys)
    else:
        winners = [i for i, c in enumerate(v.counts) if c == v.label_count]
        assert answers[winners[0]].strip() == v.label  # earliest of the top-count rollouts


def test_pseudo_rewards_follow_the_label_key() -> None:
    from ddrl.voting import pseudo_rewards

    v = majority_vote(["7", None, "07", "8", "7.0"])  # "7", "07" and "7.0" share one voting key
    assert pseudo_rewards(v).tolist() == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert pseudo_rewards(majority_vote([None, None])).tolist() == [0.0, 0.0]
