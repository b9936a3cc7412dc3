"""Sentences that state a result, written from the numbers they describe.

A notebook's prose that says a sign, a comparison, a count or how many runs were made is built here from the
computed values, so the words cannot drift from the figure beside them. Each helper is small and tested against
hand-written cases (tests/test_prose.py): a helper that says "above" where the numbers say "below" fails there.

- :func:`signed`, :func:`points`, :func:`pass1_points`  numbers as a reader sees them (pass@1 in points)
- :func:`count_words`, :func:`join_words`  "one seed", "3 seeds"; "a, b and c"
- :func:`sign_word`, :func:`order_word`, :func:`compare`  positive / negative / zero; above / below / level with
- :func:`runs_words`, :func:`one_seed_note`  what a grid ran, and what one seed can and cannot show
- :func:`interval_caption`  "mean and 95% interval over 3 seeds" or "one seed, no interval"
- :func:`for_students`  a rerun report without the machine's name and the build's hash
- :func:`claim_digest`  one claim's verdicts across regimes, in one sentence
- :func:`for_students_table`, :func:`rerun_words`  the study's tables without file paths and regime ids
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["signed", "points", "pass1_points", "count_words", "join_words", "sign_word", "order_word", "compare",
           "runs_words", "one_seed_note", "interval_caption", "for_students", "claim_digest", "for_students_table",
           "rerun_words"]

_SMALL = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def signed(x: float, digits: int = 1) -> str:
    """``x`` with its sign: ``signed(3) == "+3.0"``; a value that rounds to zero prints as ``"0.0"`` (never
    ``"-0.0"``, a sign to misread)."""
    if math.isnan(x):
        return "n/a"
    s = f"{x:+.{digits}f}"
    return s[1:] if float(s) == 0 else s


def points(x: float, digits: int = 1) -> str:
    """A difference in points: ``points(3.04) == "+3.0 points"``."""
    return f"{signed(x, digits)} points"


def pass1_points(frac: float, digits: int = 1) -> str:
    """pass@1 stored as a fraction, printed in points as the paper prints it: ``pass1_points(0.424) == "42.4"``."""
    return "n/a" if math.isnan(frac) else f"{100 * frac:.{digits}f}"


def count_words(n: int, noun: str, plural: str | None = None) -> str:
    """``count_words(1, "seed") == "one seed"``, ``count_words(12, "seed") == "12 seeds"``."""
    word = noun if n == 1 else (plural or noun + "s")
    return f"{_SMALL.get(n, str(n))} {word}"


def join_words(items: Sequence[str], last: str = "and") -> str:
    """``join_words(["a", "b", "c"]) == "a, b and c"``; one item alone, none as ``""``."""
    items = [str(i) for i in items]
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


def sign_word(x: float, tol: float = 0.0) -> str:
    """"positive", "negative" or "zero" (``|x| <= tol``)."""
    if math.isnan(x):
        return "not measured"
    return "zero" if abs(x) <= tol else ("positive" if x > 0 else "negative")


def order_word(a: float, b: float, tol: float = 0.0) -> str:
    """How ``a`` stands to ``b``: "above", "below" or "level with" (``|a - b| <= tol``)."""
    if math.isnan(a) or math.isnan(b):
        return "not comparable with"
    d = a - b
    return "level with" if abs(d) <= tol else ("above" if d > 0 else "below")


def compare(a_name: str, a: float, b_name: str, b: float, fmt=pass1_points, tol: float = 0.0) -> str:
    """``"DDRL (42.4) ends below BCS + DAE (45.3)"``: the order read from the numbers printed beside the names
    (compared as printed, so two values that print alike are "level with")."""
    sa, sb = fmt(a), fmt(b)
    word = "level with" if sa == sb else order_word(a, b, tol)
    return f"{a_name} ({sa}) ends {word} {b_name} ({sb})"


def runs_words(methods: Sequence[str], seeds: Sequence[int], lrs: Sequence[float] | None = None) -> str:
    """What a grid ran, from its parameters: ``"3 methods x one seed"``, ``"2 methods x 2 learning rates
    (3e-05, 0.001) x one seed"``."""
    parts = [count_words(len(methods), "method")]
    if lrs is not None:
        parts.append(f"{count_words(len(lrs), 'learning rate')} ({join_words([f'{x:g}' for x in lrs])})")
    parts.append(count_words(len(seeds), "seed"))
    return " x ".join(parts)


def one_seed_note(n_seeds: int, needed: int | None = None) -> str:
    """What a grid of ``n_seeds`` seeds per row can and cannot show, said once per notebook. ``needed``: the seeds
    the claims study needed to decide a comparison of this size (its power analysis), if known."""
    need = f" (the claims study needed {needed} seeds per method to decide such a comparison within ±2 points)" \
        if needed else ""
    if n_seeds == 1:
        return ("Each row is a single training run (one seed): it shows that the pipeline runs and what one run "
                "gives, but no row can be ranked above another, because a second seed moves pass@1 by several "
                f"points{need}. There is no interval to show.")
    return (f"Each row pools {count_words(n_seeds, 'seed')}: the 95% interval shows their spread, but an order of "
            f"rows whose intervals overlap is not a finding{need}.")


def interval_caption(n_seeds: int) -> str:
    """A figure title's promise that matches its seeds: "mean and 95% interval over 3 seeds (dots)" or "one seed
    (dots; no interval)"."""
    if n_seeds == 1:
        return "one seed per bar (no interval)"
    return f"mean and 95% interval over {count_words(n_seeds, 'seed')} (dots: each seed)"


#: Lines of a rerun report (``ddrl.study.lesson.rerun_table``) that name the machine or the base build's hash: the
#: record for a log, noise in a lecture (the verdict line after them says whether the rerun matched).
MACHINE_LINE_STARTS = ("this CPU:", "the design's base build:", "(the study records each run's build")


def for_students(report: str, title: str | None = None) -> str:
    """A rerun report without its machine lines (:data:`MACHINE_LINE_STARTS`): the CPU's family and model numbers
    and the build's hash are for the log, not the lecture. With ``title``, the first line's "rerun DESIGN REGIME
    METHOD seed S" before its first ": " becomes ``title`` (e.g. :func:`rerun_words`)."""
    lines = [line for line in report.splitlines() if not line.strip().startswith(MACHINE_LINE_STARTS)]
    if title and lines and ": " in lines[0]:
        lines[0] = f"{title}: {lines[0].split(': ', 1)[1]}"
    return "\n".join(lines)


#: How :func:`claim_digest` says each registered verdict of the claims study.
VERDICT_VERBS = {"reproduced": "holds", "contradicted": "is contradicted", "no effect": "shows no effect (inside ±1 point)",
                 "not resolved": "stays open"}


def claim_digest(table, what: str) -> str:
    """One claim's verdicts across regimes in one sentence, from a ``ddrl.study.lesson.decided_table`` (columns
    ``what``, ``regime``, ``testbed`` in points, ``verdict``): ``"DDRL beats TTRL: it holds in AMC-like, lr/10
    (+3.0 points) and MATH-500-like, lr/10 (+3.9 points); it stays open in AMC-like (-0.2 points)."``"""
    rows = table[table["what"] == what]
    if rows.empty:
        return ""
    parts = []
    for verdict, g in rows.groupby("verdict", sort=False):
        where = join_words([f"{r} ({points(e)})" for r, e in zip(g["regime"], g["testbed"])])
        parts.append(f"it {VERDICT_VERBS.get(verdict, verdict)} in {where}")
    return f"{what[0].upper()}{what[1:]}: {'; '.join(parts)}."


def for_students_table(table):
    """A ``ddrl.study.lesson.show_table`` for the lecture: the "as committed" column says yes / no without the
    results file it was checked against (a path for the log, not the student)."""
    if "as committed" not in table.columns:
        return table
    return table.assign(**{"as committed": table["as committed"].astype(str).str.replace(r"\s*\(.*\)$", "", regex=True)})


def rerun_words(regime: str, method: str, seed: int, steps: int | None, regime_words, method_words) -> str:
    """A rerun (``ddrl.study.lesson.parse_rerun``'s regime, method, seed, steps) in words: "AIME-like, No
    adaptation, seed 0" or "AMC-like, lr/10, DDRL, seed 0, first 3 RL steps"."""
    return (f"{regime_words(regime)}, {method_words(method)}, seed {seed}"
            + (f", first {count_words(steps, 'RL step')}" if steps else ""))
