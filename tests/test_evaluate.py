"""pass@1, maj@n and the ground-truth reward diagnostics, on hand-worked cases."""

from __future__ import annotations

import math

import pytest

from ddrl.evaluate import (
    bin_names, evaluate, frequency_bin, maj_at_n, majority_answer, pass_at_1, reward_counts,
    summarize_reward_counts,
)
from ddrl.sampling import Rollout
from ddrl.report.stats import mean_ci


def test_pass_at_1_is_the_mean_of_per_question_accuracies():
    assert pass_at_1([[1, 0, 0, 0], [1, 1]]) == pytest.approx((0.25 + 1.0) / 2)
    with pytest.raises(ValueError, match="question 1 has no samples"):
        pass_at_1([[1], []])


def test_majority_and_maj_at_n():
    assert majority_answer(["3", "05", "5", None]) == "05"  # 5 and 05 share a key
    assert majority_answer([None, None]) is None
    assert maj_at_n([["1", "2", "2"], ["7", "7", "8"], [None]], ["2", "8", "1"]) == pytest.approx(1 / 3)


def test_reward_counts_confusion_and_bins():
    # N = 8: label "5" (4 votes) is wrong, truth "6" appears twice, two rollouts have no answer.
    answers = ["5", "5", "5", "5", "6", "6", None, None]
    c = reward_counts(answers, "5", "6")
    assert (c["tp"], c["fp"], c["tn"], c["fn"]) == (0, 4, 2, 2)
    assert c["label_correct"] == 0 and c["label_none"] == 0
    # frequency bins: "5" has 4/8 = 0.5 -> bin 0.25-0.5; "6" has 2/8 = 0.25 -> bin 0.125-0.25; None -> 0
    names = bin_names()
    s = summarize_reward_counts([c])
    assert s["gt/label_acc"] == 0 and s["gt/reward_acc"] == pytest.approx(2 / 8)
    assert s["gt/fp_rate"] == pytest.approx(4 / 6) and s["gt/fn_rate"] == pytest.approx(1.0)
    assert s[f"gt/bin{names[2]}/n"] == 4 and s[f"gt/bin{names[2]}/fp_rate"] == 1.0
    assert s[f"gt/bin{names[1]}/n"] == 2 and s[f"gt/bin{names[1]}/fn_rate"] == 1.0
    assert s[f"gt/bin{names[0]}/n"] == 2 and s[f"gt/bin{names[0]}/reward_acc"] == 1.0
    assert math.isnan(s[f"gt/bin{names[3]}/reward_acc"])


def test_reward_counts_label_none_means_all_zero_rewards():
    c = reward_counts([None, None, "x"], None, "3")
    assert (c["tp"], c["fp"], c["tn"], c["fn"]) == (0, 0, 3, 0) and c["label_none"] == 1


def test_frequency_bin_edges():
    assert [frequency_bin(f) for f in (0.0, 0.125, 0.126, 0.5, 1.0)] == [0, 0, 1, 2, 3]
    with pytest.raises(ValueError):
        frequency_bin(1.5)


def test_mean_ci_t_interval():
    m, lo, hi = mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and hi - m == pytest.approx(4.302652729911275 * 1 / math.sqrt(3))
    assert math.isnan(mean_ci([1.0])[1])


class FakeSampler:
    """Returns fixed responses, to check evaluate's bookkeeping without a model."""

    def __init__(self, texts):
        self.texts = texts

    def sample(self, prompts, n, temperature, top_p, max_new_tokens, seed, progress=False):
        assert n == len(self.texts[0]) and temperature == 0.6 and top_p == 0.95
        return [[Rollout(i, [1, 2], t, [0.0, 0.0], "stop") for t in self.texts[i]] for i in range(len(prompts))]


def test_evaluate_hand_made_case(tiny_lm):
    _, tok = tiny_lm
    records = [{"prompt": "1+1", "answer": "2", "id": "a"}, {"prompt": "2+2", "answer": "4", "id": "b"}]
    texts = [["\\boxed{2}", "\\boxed{3}", "\\boxed{2}", "no box"], ["\\boxed{5}", "\\boxed{5}", "\\boxed{4.0}", "\\boxed{4}"]]
    out = evaluate(None, tok, records, n=4, sampler=FakeSampler(texts), cue="none")
    assert out["pass@1"] == pytest.approx((2 / 4 + 2 / 4) / 2)
    # question b: "5" x2 vs "4"/"4.0" x2 -> tie, first seen ("5") wins: wrong
    assert out["maj@n"] == pytest.approx(0.5)
    assert out["questions"][0]["correct"] == [True, False, True, False]
    assert out["questions"][1]["majority"] == "5"


def test_evaluate_requires_answers(tiny_lm):
    _, tok = tiny_lm
    with pytest.raises(ValueError, match="record 0 has no 'answer'"):
        evaluate(None, tok, [{"prompt": "1"}], sampler=FakeSampler([["x"]]))
