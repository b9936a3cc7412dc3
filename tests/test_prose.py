"""ddrl.report.prose: every sentence that states a result says what its numbers say (hand-written cases)."""

from __future__ import annotations

import math

import pytest

from ddrl.report import prose as P


def test_numbers_as_printed():
    assert P.signed(3.04) == "+3.0" and P.signed(-3.76, 2) == "-3.76"
    assert P.signed(-0.04) == "0.0" and P.signed(0.04) == "0.0"  # never a sign on a rounded zero
    assert P.points(0.37, 2) == "+0.37 points"
    assert P.pass1_points(0.424) == "42.4" and P.pass1_points(0.4531) == "45.3"
    assert P.signed(math.nan) == "n/a" and P.pass1_points(math.nan) == "n/a"


def test_counts_and_lists():
    assert P.count_words(1, "seed") == "one seed"
    assert P.count_words(2, "learning rate") == "two learning rates"
    assert P.count_words(46, "seed") == "46 seeds"
    assert P.count_words(3, "family", "families") == "three families"
    assert P.join_words(["a", "b", "c"]) == "a, b and c" and P.join_words(["a"]) == "a" and P.join_words([]) == ""


@pytest.mark.parametrize("a,b,word", [(0.424, 0.453, "below"), (0.453, 0.424, "above"), (0.5, 0.5, "level with")])
def test_order_follows_the_numbers(a, b, word):
    assert P.order_word(a, b) == word
    assert P.compare("DDRL", a, "BCS + DAE", b) == f"DDRL ({P.pass1_points(a)}) ends {word} BCS + DAE ({P.pass1_points(b)})"


def test_compare_calls_equal_what_prints_equal():
    # 0.4241 and 0.4239 both print 42.4: the sentence must not call one above the other
    assert P.compare("A", 0.4241, "B", 0.4239) == "A (42.4) ends level with B (42.4)"
    assert P.compare("DDRL", 0.424, "additional RL", 0.436) == "DDRL (42.4) ends below additional RL (43.6)"


def test_sign_word():
    assert [P.sign_word(x) for x in (0.12, -0.13, 0.0)] == ["positive", "negative", "zero"]
    assert P.sign_word(0.004, tol=0.005) == "zero"


def test_runs_words_from_parameters():
    assert P.runs_words(["ttrl", "bcs", "bcs_dae", "ddrl"], [0]) == "four methods x one seed"
    assert P.runs_words(["ttrl", "bcs_dae"], [0], [3e-5, 1e-3]) == "two methods x two learning rates (3e-05 and 0.001) x one seed"
    assert P.runs_words(["ttrl"], [0, 1, 2], [3e-5]) == "one method x one learning rate (3e-05) x three seeds"


def test_one_seed_note_and_caption_match_the_seeds():
    one = P.one_seed_note(1, needed=46)
    assert "single training run" in one and "46 seeds" in one and "no interval" in one.lower()
    assert "interval" in P.one_seed_note(3) and "three seeds" in P.one_seed_note(3)
    assert P.interval_caption(1) == "one seed per bar (no interval)"
    assert P.interval_caption(2) == "mean and 95% interval over two seeds (dots: each seed)"


def test_for_students_drops_machine_lines():
    report = ("rerun registered aime_like no_adaptation seed 0: the whole run, 192 questions x splits\n"
              "  this CPU: AMD EPYC, family 25 model 17, AVX-512\n"
              "  the design's base build: testbed:default e4d7f1c9 (built on AMD EPYC family 25 model 1)\n"
              "  (the study records each run's build, not the CPU that ran it)\n"
              "  identical: all 768 compared values equal the committed ones")
    out = P.for_students(report)
    assert out.splitlines() == [report.splitlines()[0], report.splitlines()[-1]]
    assert "family" not in out and "EPYC" not in out
    titled = P.for_students(report, "AIME-like, No adaptation, seed 0")
    assert titled.splitlines()[0] == "AIME-like, No adaptation, seed 0: the whole run, 192 questions x splits"


def test_claim_digest_groups_regimes_by_their_verdict():
    import pandas as pd

    t = pd.DataFrame({"what": ["DDRL beats TTRL"] * 3 + ["other"], "regime": ["AMC-like, lr/10", "AMC-like", "MATH-500-like", "x"],
                      "testbed": [3.04, -0.2, -0.04, 1.0], "verdict": ["reproduced", "not resolved", "not resolved", "reproduced"]})
    assert P.claim_digest(t, "DDRL beats TTRL") == ("DDRL beats TTRL: it holds in AMC-like, lr/10 (+3.0 points); it stays open "
                                                    "in AMC-like (-0.2 points) and MATH-500-like (0.0 points).")
    assert P.claim_digest(t, "absent") == ""


def test_for_students_table_drops_file_paths():
    import pandas as pd

    t = pd.DataFrame({"what": ["a", "b"], "as committed": ["yes (results/small_lr/claims.json)", "no: +0.1 vs +0.2"]})
    assert P.for_students_table(t)["as committed"].tolist() == ["yes", "no: +0.1 vs +0.2"]
    assert P.for_students_table(t[["what"]]).equals(t[["what"]])


def test_rerun_words():
    words = {"aime_like": "AIME-like", "amc_like_small_lr": "AMC-like, lr/10"}.get
    assert P.rerun_words("aime_like", "no_adaptation", 0, None, words, {"no_adaptation": "No adaptation"}.get) == \
        "AIME-like, No adaptation, seed 0"
    assert P.rerun_words("amc_like_small_lr", "ddrl", 0, 3, words, str.upper) == "AMC-like, lr/10, DDRL, seed 0, first three RL steps"
