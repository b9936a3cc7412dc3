"""Hostile inputs (issue 85): the vote and the grader on long numbers, parameters refused by name before
any work, progress side files removed on every exit path."""

from __future__ import annotations

from fractions import Fraction

import pytest

from ddrl.answers import MAX_NUMBER_DIGITS, grade_answers, is_equivalent, plain_number, voting_key
from ddrl.voting import count_votes, majority_vote

# ------------------------------------------------------------------------ long numbers (deliverable 3)

# 4,300 digits is the longest that Python converts to int by default; 4,301 raised ValueError before.
LENGTHS = [MAX_NUMBER_DIGITS, MAX_NUMBER_DIGITS + 1, 100_000]


def test_the_bound_is_pythons_default_int_string_limit() -> None:
    import sys

    assert MAX_NUMBER_DIGITS == sys.int_info.default_max_str_digits


@pytest.mark.parametrize("n", LENGTHS)
def test_voting_key_never_raises_on_long_numbers(n: int) -> None:
    d = "1" * n
    assert voting_key(d) == d
    assert voting_key(f"\\boxed{{{d}.0}}") == d
    for answer in (f"\\frac{{{d}}}{{3}}", f"\\dfrac{{3}}{{{d}}}", f"2\\frac{{1}}{{{d}}}", f"{d}\\frac{{1}}{{2}}", f"{d}/{d}"):
        assert isinstance(voting_key(answer), str)


def test_numbers_up_to_the_bound_are_read_exactly_as_before() -> None:
    d = "1" * MAX_NUMBER_DIGITS
    assert voting_key(f"\\frac{{{d}}}{{3}}") == f"{d}/3"
    assert plain_number(d) == Fraction(int(d))
    assert plain_number(f"-{d}.{d}") == -(int(d) + Fraction(int(d), 10**MAX_NUMBER_DIGITS))
    assert plain_number(f"{d}/7") == Fraction(int(d), 7)
    # A mixed number whose improper numerator has exactly 4,300 digits is still a/b; one more digit is text.
    nines = "9" * (MAX_NUMBER_DIGITS // 2)
    assert voting_key(f"{nines}\\frac{{1}}{{{nines}}}") == f"{int(nines) ** 2 + 1}/{nines}"
    longer = f"{nines}9\\frac{{1}}{{{nines}}}"
    assert voting_key(longer) == longer


@pytest.mark.parametrize("n", LENGTHS[1:])
def test_numbers_beyond_the_bound_are_text(n: int) -> None:
    d = "1" * n
    assert plain_number(d) is None and plain_number(f"{d}/3") is None and plain_number(f"0.{d}") is None
    assert voting_key(f"\\frac{{{d}}}{{3}}") == f"\\frac{{{d}}}{{3}}"


@pytest.mark.parametrize("n", LENGTHS)
def test_is_equivalent_and_grade_answers_never_raise_on_long_numbers(n: int) -> None:
    d = "1" * n
    assert is_equivalent(d, f"\\boxed{{{d}.0}}")  # one voting key
    assert not is_equivalent(d, "2")
    assert not is_equivalent("2", d)
    assert grade_answers([d, "2", f"0{d}", None], d) == [True, False, True, False]


@pytest.mark.parametrize("n", LENGTHS)
def test_the_vote_never_raises_on_long_numbers(n: int) -> None:
    d = "1" * n
    vote = majority_vote([d, "2", d, None])
    assert (vote.label, vote.label_count, vote.counts, vote.tied) == (d, 2, [2, 1, 2, 0], False)
    assert count_votes([voting_key(a) for a in (d, d, "2")]).label == d


def test_acceptance_majority_vote_on_5000_digit_answers() -> None:
    d = "1" * 5000
    vote = majority_vote([d, d, "2"])
    assert (vote.label, vote.label_count, vote.counts, vote.keys) == (d, 2, [2, 2, 1], [d, d, "2"])
