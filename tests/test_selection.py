"""Which K of N rollouts are trained on (ddrl.selection)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddrl.selection import SELECTIONS, bcs, bcs_random_negatives, get_selection, random_subset
from ddrl.voting import majority_vote

N, K = 64, 32

# ------------------------------------------------------------------------------------ random_subset


def test_random_subset_is_seeded_and_uniform_looking() -> None:
    a = random_subset(N, K, np.random.default_rng(0))
    assert a == random_subset(N, K, np.random.default_rng(0))
    assert a != random_subset(N, K, np.random.default_rng(1))
    assert a == sorted(set(a)) and len(a) == K and 0 <= a[0] and a[-1] < N
    # Every index is drawn about K/N of the time.
    rng = np.random.default_rng(0)
    hits = np.zeros(N)
    for _ in range(2000):
        hits[random_subset(N, K, rng)] += 1
    assert np.all(np.abs(hits / 2000 - K / N) < 0.05)


def test_random_subset_bad_input() -> None:
    with pytest.raises(ValueError, match="k <= n"):
        random_subset(4, 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="1 <= k"):
        random_subset(4, 0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        random_subset(4, 2, 0)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ bcs, worked cases


def counts_of(answers: list[str | None]) -> list[int]:
    return majority_vote(answers).counts


def test_bcs_c3_of_64() -> None:
    # A (count 3) at 50, 51, 60; B (count 2) at 5, 6; other answers in 0..29 unique; no answer elsewhere.
    answers: list[str | None] = [f"u{i}" if i < 30 else None for i in range(N)]
    answers[5] = answers[6] = "B"
    answers[50] = answers[51] = answers[60] = "A"
    counts = counts_of(answers)
    assert max(counts) == 3
    # K+ = min(3, 16) = 3: all of A. The 29 negatives: the last 29 rollouts without an answer
    # (31 of them: 30..49, 52..59, 61..63; the first two, 30 and 31, are dropped).
    expected = [50, 51, 60] + list(range(32, 50)) + list(range(52, 60)) + [61, 62, 63]
    assert bcs(counts, K) == expected


def test_bcs_c16_of_64() -> None:
    # A (count 16) at i = 3 mod 4; the other rollouts below 32 unique answers, from 32 on no answer.
    answers: list[str | None] = [("A" if i % 4 == 3 else (f"u{i}" if i < 32 else None)) for i in range(N)]
    counts = counts_of(answers)
    assert max(counts) == 16
    positives = list(range(3, N, 4))  # K+ = min(16, 16) = 16: all of A
    no_answer = [i for i in range(32, N) if i % 4 != 3]  # 24 of them, the last 16 are kept
    assert bcs(counts, K) == positives + no_answer[8:]


def test_bcs_c40_of_64() -> None:
    # A (count 40) at every even index and at 1..15 odd; B (12) at odd 17..39; no answer at odd 41..63.
    answers: list[str | None] = [None] * N
    for i in range(N):
        if i % 2 == 0 or i < 16:
            answers[i] = "A"
        elif i < 40:
            answers[i] = "B"
    counts = counts_of(answers)
    assert max(counts) == 40 and counts[17] == 12
    # K+ = 16: the first 16 A's by index (0..15). Negatives: the 12 without an answer and the last 4 B's.
    assert bcs(counts, K) == list(range(16)) + [33, 35, 37, 39] + list(range(41, N, 2))


def test_bcs_c60_of_64_keeps_majority_rollouts_among_negatives() -> None:
    # c* = 60 > N - K/2 = 48: the kept tail reaches into the majority.
    answers: list[str | None] = ["A"] * N
    answers[10] = answers[20] = answers[30] = None
    answers[40] = "B"
    counts = counts_of(answers)
    assert max(counts) == 60
    selected = bcs(counts, K)
    top = list(range(10)) + list(range(11, 17))  # the first 16 A's
    tail = list(range(52, 64)) + [40, 10, 20, 30]  # the last 12 A's, then B, then the three without answers
    assert selected == top + tail
    assert sum(answers[i] == "A" for i in selected[16:]) == 12  # "negatives" that carry the majority answer


def test_bcs_two_answers_tied_for_top_count() -> None:
    # A and B both appear 3 times; A is seen first, so A is the label. The K+ = 2 positive slots go to the
    # top-count rollouts in index order: 1 (A) and 2 (B), so one "positive" holds the runner-up.
    answers: list[str | None] = ["x", "A", "B", "B", "B", "A", "A", None]
    vote = majority_vote(answers)
    assert vote.label == "A" and vote.counts == [1, 3, 3, 3, 3, 3, 3, 0]
    assert bcs(vote.counts, 4) == [1, 2, 0, 7]


def test_bcs_all_none_group() -> None:
    counts = counts_of([None] * N)
    assert counts == [0] * N
    assert bcs(counts, K) == list(range(N - K, N))  # K+ = 0; stable order: the last K by index


def test_bcs_small_k_and_k_equals_n() -> None:
    counts = counts_of(["A", "A", "B", None])
    assert bcs(counts, 1) == [3]  # K+ = floor(1/2) = 0: one negative, the no-answer rollout
    assert bcs(counts, 2) == [0, 3]  # K+ = 1
    assert sorted(bcs(counts, 4)) == [0, 1, 2, 3]


def test_bcs_bad_input() -> None:
    with pytest.raises(ValueError, match="k <= n"):
        bcs([1, 1], 3)
    with pytest.raises(ValueError, match="counts must lie"):
        bcs([-1, 1, 1], 2)
    with pytest.raises(ValueError, match="counts must lie"):
        bcs([5, 1, 1], 2)


# ------------------------------------------------------------------------------------ properties

answer_lists = st.lists(st.one_of(st.none(), st.sampled_from("ABCDEFG")), min_size=1, max_size=80)


@given(answer_lists, st.data())
def test_selections_are_k_distinct_indices(answers: list[str | None], data: st.DataObject) -> None:
    n = len(answers)
    k = data.draw(st.integers(1, n))
    counts = counts_of(answers)
    seed = data.draw(st.integers(0, 2**32 - 1))
    for name in SELECTIONS:
        sel = get_selection(name)(counts, k, np.random.default_rng(seed))
        assert len(sel) == k and len(set(sel)) == k
        assert all(isinstance(i, int) and 0 <= i < n for i in sel)


@given(answer_lists, st.data())
def test_bcs_keeps_the_extremes(answers: list[str | None], data: st.DataObject) -> None:
    n = len(answers)
    k = data.draw(st.integers(1, n))
    counts = counts_of(answers)
    sel = bcs(counts, k)
    k_pos = min(max(counts), k // 2)
    dropped = [counts[i] for i in range(n) if i not in set(sel)]
    if dropped:
        assert all(counts[i] >= max(dropped) for i in sel[:k_pos])
        assert all(counts[i] <= min(dropped) for i in sel[k_pos:])


# ------------------------------------------------------------------------------------ bcs_random_negatives


def test_bcs_random_negatives_worked_case() -> None:
    # 64 rollouts: answer A x 40 (the label), B x 10, C x 6, D x 4, none x 4; K = 32 -> 16 positives, 16 negatives.
    answers = ["A"] * 40 + ["B"] * 10 + ["C"] * 6 + ["D"] * 4 + [None] * 4
    counts = counts_of(answers)
    sel = bcs_random_negatives(counts, K, np.random.default_rng(0))
    assert sel[:16] == bcs(counts, K)[:16] == list(range(16))  # BCS's positives, exactly
    neg = sel[16:]
    assert neg == sorted(neg) and all(answers[i] != "A" for i in neg)
    # BCS takes the rarest (none x 4, D x 4, C x 6, B x 2); random negatives reach B's 10 rollouts in proportion.
    assert {answers[i] for i in bcs(counts, K)[16:]} == {None, "D", "C", "B"}
    rng, hits = np.random.default_rng(1), np.zeros(64)
    for _ in range(3000):
        hits[bcs_random_negatives(counts, K, rng)[16:]] += 1
    assert hits[:40].sum() == 0
    assert np.all(np.abs(hits[40:] / 3000 - 16 / 24) < 0.05)  # each of the 24 non-label rollouts ~16/24 of the time


def test_bcs_random_negatives_no_choice_is_bcs() -> None:
    # Fewer non-top rollouts than negatives to keep: BCS's selection, whatever the generator.
    counts = counts_of(["A"] * 60 + ["B"] * 4)
    assert bcs_random_negatives(counts, K, np.random.default_rng(0)) == bcs(counts, K)
    assert bcs_random_negatives(counts, K, np.random.default_rng(7)) == bcs(counts, K)
    counts = [0] * 8  # no answer at all: c* = 0, no positives, BCS's last k
    assert bcs_random_negatives(counts, 4, np.random.default_rng(0)) == bcs(counts, 4) == [4, 5, 6, 7]


def test_bcs_random_negatives_bad_input() -> None:
    with pytest.raises(ValueError, match="k <= n"):
        bcs_random_negatives([1, 1], 3, np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        bcs_random_negatives([2, 2, 1], 2, 0)  # type: ignore[arg-type]


@given(answer_lists, st.data())
def test_bcs_random_negatives_keeps_bcs_positives(answers: list[str | None], data: st.DataObject) -> None:
    n = len(answers)
    k = data.draw(st.integers(1, n))
    counts = counts_of(answers)
    sel = bcs_random_negatives(counts, k, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))))
    k_pos = min(max(counts), k // 2)
    assert sel[:k_pos] == bcs(counts, k)[:k_pos]
    below = [i for i in range(n) if counts[i] < max(counts)]
    if len(below) >= k - k_pos:
        assert set(sel[k_pos:]) <= set(below)
    else:
        assert sel == bcs(counts, k)


def test_get_selection_unknown() -> None:
    with pytest.raises(KeyError, match="bcs"):
        get_selection("top")
