"""Answer extraction, voting keys and grading (ddrl.answers)."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time

import numpy as np
import pytest

from ddrl import answers
from ddrl.grading import grader_pool
from ddrl.answers import clear_cache, extract_boxed, is_equivalent, voting_key, warm_up

# ------------------------------------------------------------------------------------ extract_boxed


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The answer is \\boxed{25}.", "25"),
        ("first \\boxed{1}, then \\boxed{2}", "2"),  # the LAST box
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),  # nested braces
        ("\\boxed{ \\left( 3, \\frac{\\pi}{2} \\right) }", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("\\fbox{7}", "7"),
        ("\\boxed{1} and \\fbox{8}", "8"),  # last of either kind
        ("\\boxed {4}", "4"),  # space before the group
        ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),  # escaped braces are content
        ("\\boxed{a \\\\ {b}}", "a \\\\ {b}"),  # \\ is a line break, the brace after it still groups
        ("\\boxed{\\boxed{5}}", "5"),
        ("\\boxed{}", ""),
        ("no box here: 25", None),
        ("", None),
        ("\\boxed{3} then cut off \\boxed{\\frac{1}{2}", None),  # last box unbalanced
        ("\\boxed{5", None),  # cut off
        ("\\boxed 5", None),  # not a braced group
        ("\\boxedanswer{5}", None),  # a different control word
    ],
)
def test_extract_boxed(text: str, expected: str | None) -> None:
    assert extract_boxed(text) == expected


def test_extract_boxed_none_and_type() -> None:
    assert extract_boxed(None) is None
    with pytest.raises(TypeError, match="extract_boxed"):
        extract_boxed(25)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ voting_key


@pytest.mark.parametrize(
    "a, b",
    [
        ("025", "25"),
        ("25", "25.0"),
        ("25.0", "\\boxed{25}"),
        ("+25.", "25"),
        ("-0", "0"),
        ("0.50", ".5"),
        ("-007.10", "-7.1"),
        ("$25$", "25"),
        ("\\frac{1}{2}", "\\frac { 1 } { 2 }"),
        ("\\frac{1}{2}", "\\dfrac{1}{2}"),
        ("\\frac12", "1/2"),
        ("p - q", "p-q"),
        ("x^{2}+1", "x^2 + 1"),
        ("106^{\\circ}", "106^\\circ"),
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{2})"),
        ("3\\,\\sqrt{2}", "3\\sqrt{2}"),
        ("1\\frac{4}{5}", "\\frac{9}{5}"),  # a mixed number is its improper fraction
        ("-2\\frac12", "-5/2"),
        ("\\frac12x", "\\frac{1}{2}x"),
    ],
)
def test_voting_key_groups(a: str, b: str) -> None:
    assert voting_key(a) == voting_key(b)


@pytest.mark.parametrize(
    "a, b",
    [
        ("25", "26"),
        ("-25", "25"),
        ("2.5", "25"),
        ("\\pi r", "\\pir"),  # a space that ends a control word is kept
        ("x^{23}", "x^2 3"),
        ("a\\\\,b", "a,b"),  # \\ (line break) then a comma, not the \, spacing command
        ("\\rightarrow", "arrow"),  # \right is dropped only as a whole control word
        ("1\\frac{4}{5}", "\\frac{14}{5}"),  # 9/5, not 14/5
        ("1\\frac{4}{5}", "14/5"),
        ("\\frac{1}{2}3", "\\frac{1}{23}"),  # a fraction inside a longer answer stays LaTeX
        ("\\frac123", "1/23"),
        ("x^\\frac{1}{2}", "x^1/2"),
    ],
)
def test_voting_key_separates(a: str, b: str) -> None:
    assert voting_key(a) != voting_key(b)


@pytest.mark.parametrize(
    "answer, key",
    [("025", "25"), ("25.0", "25"), ("0.50", "0.5"), ("\\dfrac{3}{4}", "3/4"), ("p - q", "p-q"), ("1e5", "1e5")],
)
def test_voting_key_values(answer: str, key: str) -> None:
    assert voting_key(answer) == key


@pytest.mark.parametrize("answer", [None, "", "   ", "\\boxed{}", "$ $", "\\,", "\\boxed{5", "x \\fbox{3"])
def test_voting_key_no_answer(answer: str | None) -> None:
    assert voting_key(answer) is None


def test_voting_key_type() -> None:
    with pytest.raises(TypeError, match="voting_key"):
        voting_key(3)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ is_equivalent


@pytest.mark.parametrize(
    "pred, label",
    [
        ("025", "25"),
        ("25", "25.0"),
        ("\\boxed{25}", "025"),
        ("142", "142.0"),  # AMC's float-formatted labels
        ("0.5", "\\frac{1}{2}"),  # math-verify from here on
        ("(3, \\pi/2)", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("1+x", "x + 1"),
        ("\\sqrt{8}", "2\\sqrt{2}"),
        ("\\text{(C)}", "C"),
        ("\\frac{\\sqrt3}{2}", "\\frac{\\sqrt{3}}{2}"),
        ("1\\frac{4}{5}", "\\frac{9}{5}"),  # mixed numbers: key path ...
        ("1\\frac{4}{5}", "1.8"),  # ... and plain-number path
        ("1 \\frac{4}{5} + x", "x + 9/5"),  # ... and math-verify
        ("0.3333333", "\\frac{1}{3}"),  # within math-verify's 6-decimal rounding
    ],
)
def test_is_equivalent_true(pred: str, label: str) -> None:
    assert is_equivalent(pred, label) is True


@pytest.mark.parametrize(
    "pred, label",
    [
        ("24", "25"),
        ("-25", "25"),
        ("0.6", "\\frac{1}{2}"),
        ("x + 2", "x + 1"),
        ("(3, \\pi)", "(3, \\frac{\\pi}{2})"),
        ("", "25"),
        ("\\boxed{}", "25"),
        ("}{garbage\\frac{", "25"),
        ("25", "}{garbage\\frac{"),
        ("1\\frac{4}{5}", "\\frac{14}{5}"),
        ("1\\frac{4}{5}", "\\frac{4}{5}"),
        ("\\boxed{5", "5"),  # a cut-off box is no answer (extract_boxed agrees)
        ("5", "\\boxed{5"),
        ("0.333", "\\frac{1}{3}"),
    ],
)
def test_is_equivalent_false(pred: str, label: str) -> None:
    assert is_equivalent(pred, label) is False


def test_none_is_equivalent_to_nothing() -> None:
    assert is_equivalent(None, "25") is False
    assert is_equivalent("25", None) is False
    assert is_equivalent(None, None) is False


def test_is_equivalent_bad_arguments() -> None:
    with pytest.raises(TypeError, match="pred"):
        is_equivalent(25, "25")  # type: ignore[arg-type]
    for bad in (0, -1.0, float("nan"), None, "5"):
        with pytest.raises(ValueError, match="timeout"):
            is_equivalent("1", "2", timeout=bad)  # type: ignore[arg-type]


def test_infinite_timeout_means_no_limit() -> None:
    """Issue 19: ``timeout=float("inf")`` raised OverflowError (and graded everything False in the helper)."""
    clear_cache()
    inf = float("inf")
    assert is_equivalent("x+1", "1+x", timeout=inf) is True
    assert is_equivalent("0.6", "\\frac{1}{2}", timeout=inf) is False
    assert is_equivalent("25", "025", timeout=inf) is True


def test_cut_off_box_is_no_answer_for_extraction_and_grading() -> None:
    for text in ("\\boxed{5", "\\boxed{3} \\boxed{5"):
        assert extract_boxed(text) is None
        assert voting_key(text) is None
        assert is_equivalent(text, "5") is False
        assert is_equivalent(text, "3") is False


def test_plain_numbers_are_compared_exactly_without_math_verify(monkeypatch) -> None:
    def boom(*args):  # noqa: ANN002
        raise AssertionError("math-verify was called")

    clear_cache()
    monkeypatch.setattr(grader_pool, "verify", boom)
    assert is_equivalent("0.5", "1/2") is True
    assert is_equivalent("\\frac{3}{2}", "1\\frac{1}{2}") is True
    assert is_equivalent("7", "3/4") is False
    assert is_equivalent("-12", "12") is False
    assert answers.plain_number(voting_key("-1\\frac{4}{5}")) == answers.Fraction(-9, 5)
    assert answers.plain_number("x") is None and answers.plain_number("1/0") is None


def test_grade_answers_grades_each_distinct_key_once(monkeypatch) -> None:
    calls = []
    real = answers.is_equivalent

    def counting(pred, label, timeout=5.0):  # noqa: ANN001, ANN202
        calls.append(pred)
        return real(pred, label, timeout)

    monkeypatch.setattr(answers, "is_equivalent", counting)
    got = answers.grade_answers(["025", "25", None, "7", "25.0", "\\boxed{5"], "25")
    assert got == [True, True, False, False, True, False]
    assert calls == ["025", "7"]
    # with a vote's cluster keys, equivalent forms share one verdict
    assert answers.grade_answers(["1/2", "0.5"], "0.5", keys=["a", "a"]) == [True, True]
    with pytest.raises(ValueError, match="keys"):
        answers.grade_answers(["1"], "1", keys=[])


def test_grader_version_names_math_verify() -> None:
    assert answers.GRADER_VERSION.startswith("2+math-verify-")


def test_is_equivalent_caches() -> None:
    clear_cache()
    pred, label = "\\frac{2}{4}", "0.5"
    assert is_equivalent(pred, label) is True
    assert answers._CACHE[(pred, label)] is True
    t0 = time.perf_counter()
    assert is_equivalent(pred, label) is True
    assert time.perf_counter() - t0 < 0.01  # no trip to the helper process


def test_is_equivalent_from_threads() -> None:
    """math-verify's signal-based timeouts fail outside the main thread; ours must not."""
    clear_cache()
    cases = [("0.5", "\\frac{1}{2}", True), ("x+1", "1+x", True), ("0.6", "\\frac{1}{2}", False)]
    results: dict[int, bool] = {}

    def run(i: int, pred: str, label: str) -> None:
        results[i] = is_equivalent(pred, label)

    threads = [threading.Thread(target=run, args=(i, p, g)) for i, (p, g, _) in enumerate(cases)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == {i: want for i, (_, _, want) in enumerate(cases)}


def _grade_in_daemon(pair: tuple[str, str]) -> bool:
    return is_equivalent(*pair)


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_is_equivalent_in_daemonic_worker_process(start_method: str) -> None:
    """Pool workers are daemonic and may not start multiprocessing children; our helper is a subprocess.

    With "fork", the child inherits this process's warm helpers and must not use them (it starts its own).
    """
    warm_up()
    clear_cache()  # a forked child would inherit the verdicts
    with multiprocessing.get_context(start_method).Pool(1) as pool:
        assert pool.map(_grade_in_daemon, [("0.5", "\\frac{1}{2}"), ("0.6", "\\frac{1}{2}")]) == [True, False]


PATHOLOGICAL = {
    "power tower": "\\boxed{9^{9^{9^{9^{9}}}}}",
    "10,000 nested braces": "\\boxed{" + "{" * 10_000 + "1" + "}" * 10_000 + "}",
    "1 MB of text": "so " * 100_000 + "\\boxed{" + "1+" * 350_000 + "1}",
}


def test_pathological_inputs_return_within_timeout_from_a_worker_thread() -> None:
    timeout, slack = 1.0, 2.0  # slack: killing the helper and moving 1 MB through a pipe
    clear_cache()
    elapsed: dict[str, float] = {}
    verdicts: dict[str, bool] = {}

    def run() -> None:
        for name, text in PATHOLOGICAL.items():
            warm_up()  # a ready helper: the timeout bounds the comparison, not a helper's start-up
            t0 = time.perf_counter()
            boxed = extract_boxed(text)
            assert boxed is not None
            voting_key(text)
            verdicts[name] = is_equivalent(text, "2", timeout=timeout)
            elapsed[name] = time.perf_counter() - t0

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=len(PATHOLOGICAL) * (timeout + slack + answers.STARTUP_TIMEOUT))
    assert not worker.is_alive()
    assert verdicts == {name: False for name in PATHOLOGICAL}
    for name, seconds in elapsed.items():
        assert seconds < timeout + slack, f"{name}: {seconds:.2f} s"
    # A timed-out pair is remembered: asking again with no more time answers at once.
    t0 = time.perf_counter()
    assert is_equivalent(PATHOLOGICAL["power tower"], "2", timeout=timeout) is False
    assert time.perf_counter() - t0 < 0.05
    # And the grader still works afterwards.
    assert is_equivalent("0.5", "\\frac{1}{2}") is True


# ------------------------------------------------------------------------------------ real data

BENCHMARKS = ("AIME-TTT", "AMC-TTT", "MATH-TTT")


@pytest.fixture(scope="module")
def benchmark_answers(shared_data) -> list[str]:
    out: list[str] = []
    for name in BENCHMARKS:
        records = json.loads((shared_data / name / "test.json").read_text())
        out += [r["answer"] for r in records]
    return out


def test_every_ground_truth_is_equivalent_to_itself_boxed(benchmark_answers: list[str]) -> None:
    assert len(benchmark_answers) == 30 + 83 + 500
    for a in benchmark_answers:
        assert voting_key(a) is not None, a
        assert is_equivalent("\\boxed{" + a + "}", a), a
        assert is_equivalent(a, "\\boxed{" + a + "}"), a


def test_math_verify_parses_every_ground_truth(benchmark_answers: list[str]) -> None:
    """The same, bypassing the textual fast path, so math-verify itself sees every label."""
    warm_up()
    failures = [a for a in benchmark_answers if grader_pool.verify(a, a, 10.0) is not True]
    assert failures == []


def test_ground_truth_is_not_equivalent_to_another_benchmark_answer(benchmark_answers: list[str]) -> None:
    rng = np.random.default_rng(0)
    mistakes = []
    for a in benchmark_answers:
        while True:  # another answer with a different value (same voting key = same answer)
            b = benchmark_answers[int(rng.integers(len(benchmark_answers)))]
            if voting_key(b) != voting_key(a):
                break
        if is_equivalent(b, a):
            mistakes.append((b, a))
    assert mistakes == []


def test_fast_not_equivalent_screens_agree_with_math_verify(benchmark_answers: list[str]) -> None:
    """The helper decides some pairs before math-verify's slow symbolic step (numbers far apart, a number
    against a formula or an interval; numeric statements such as ``5=97+7289`` are no value). On real
    answer pairs, the screened verdict must equal math-verify's own, except for numeric statements."""
    from math_verify import verify

    rng = np.random.default_rng(1)
    pairs = [(benchmark_answers[int(i)], benchmark_answers[int(j)])
             for i, j in rng.integers(0, len(benchmark_answers), size=(200, 2))]
    pairs += [("0.3333333", "\\frac13"), ("9\\%", "9"), ("y = 2", "2"), ("\\pi", "3.1415926"), ("6-5i", "6 - 5i"),
              ("\\{5\\}", "5"), ("x", "\\text{x}"), ("e", "2.718281828"), ("90^\\circ", "\\frac{\\pi}{2}")]
    disagree = []
    for pred, label in pairs:
        gold, target = grader_pool._parse(label), grader_pool._parse(pred)
        if not gold or not target or grader_pool._numeric_statement(gold[0]) or grader_pool._numeric_statement(target[0]):
            continue
        if grader_pool._math_verify_equal(pred, label) != bool(verify(gold, target, timeout_seconds=None)):
            disagree.append((pred, label))
    assert disagree == []


def test_numeric_statements_are_equivalent_to_nothing() -> None:
    """math-verify calls any two false numeric equations equal (the same empty solution set)."""
    warm_up()
    assert grader_pool.verify("5=97+7289", "2=00", 10.0) is False
    assert grader_pool.verify("3=3", "3", 10.0) is False
    assert grader_pool.verify("x=8", "8", 10.0) is True  # an equation in a variable is still an answer
