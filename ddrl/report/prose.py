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
- :func:`sentences`, :func:`sentence_shape`, :func:`repeated_shapes`  generated prose still reads as a person wrote it:
  no sentence shape more than :data:`SHAPE_LIMIT` times in a notebook (tests/test_sentence_shapes.py)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

__all__ = ["signed", "points", "pass1_points", "count_words", "join_words", "sign_word", "order_word", "compare",
           "runs_words", "one_seed_note", "interval_caption", "for_students", "claim_digest", "for_students_table",
           "rerun_words", "SHAPE_LIMIT", "sentences", "sentence_shape", "repeated_shapes"]

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


# Sentence shapes (issue 95: "generated sentences still read as a person wrote them"). A shape is a sentence with what
# a generator fills in replaced by placeholders; the same shape many times in one notebook reads as a log.

#: The most times one sentence shape may occur in a notebook.
SHAPE_LIMIT = 3

_NUM = r"[+\-−±]?\d+(?:[.,]\d+)*(?:e[+\-]?\d+)?"
_ACRONYMS = r"\b[A-Z][A-Z0-9]+\b(?:\s*\+\s*[A-Z][A-Z0-9]+\b)*"
_NUM_WORDS = r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b"
#: Placeholders, in the order they replace (each pattern sees the text the ones before it left).
_SHAPE_STEPS = (
    (r"<[^<>\n]*>", ""),  # HTML tags
    (r"!\[[^\]]*\]\([^)]*\)", ""),  # images
    (r"\[([^\]]*)\]\([^)]*\)", r"\1"),  # a link: its words
    (r"`[^`]*`", " ‹code› "),  # identifiers, commands, paths
    (r"(?<![\w'])'[^'\n]*'(?![\w'])|\"[^\"\n]*\"|“[^”\n]*”", " ‹quoted› "),  # quoted names
    (r"[*_]{1,2}(?=\S)|(?<=\S)[*_]{1,2}", ""),  # emphasis
    (rf"[\[(]\s*{_NUM}\s*%?\s*(?:,|to|–|-)\s*{_NUM}\s*%?\s*[\])]", " ‹interval› "),  # [+0.1, +0.9], (0.19, 0.55)
    (rf"{_NUM}\s*%", " ‹percent› "),
    (r"\b[A-Z][\w.-]*?-like\b(?:,\s*lr/\d+)?", " ‹regime› "),  # AMC-like, MATH-500-like, lr/10
    (r"\b[A-Z]{1,3}\d+[A-Za-z]*\b", " ‹claim› "),  # claim ids: A1, F3, H1x, H1xT
    (rf"{_ACRONYMS}(?:\s*\({_ACRONYMS}\))?", " ‹method› "),  # TTRL, GRPO, BCS + DAE, DDRL (BCS + DAE + COR)
    (rf"(?<![\w.]){_NUM}x?(?![\w])", " ‹number› "),  # 3, -0.2, +3.04, 1,536, 5.6x, 3e-05
    (_NUM_WORDS, " ‹number› "),  # count_words' "three seeds"
    (r"(‹number›\s+\w*[^\Ws])s\b", r"\1"),  # "one seed", "18 seeds": one shape
)
_PLACEHOLDER = re.compile(r"‹[a-z]+›")
#: Abbreviations a sentence does not end at.
_ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "Fig.", "Figs.", "Eq.", "Sec.", "Tab.", "al.", "approx.", "norm.")


def sentences(text: str) -> list[str]:
    """The sentences a reader reads in ``text`` (Markdown, or printed lines), a list item or a paragraph at a time.

    Not sentences, and dropped: code blocks, headings (``#``) and a paragraph's run-in heading in bold
    (``**What to look for.**``), table rows (``|``), and a list item or printed line that is a key and its value
    (`` `key`: value``, as ``python -m ddrl.study render DESIGN`` lists a measure). A paragraph's wrapped lines join;
    a sentence ends at ``.``, ``!`` or ``?`` and a space (not after "e.g.", "Fig." ...). Fragments with fewer
    than three words are dropped by :func:`sentence_shape`, not here."""
    text = re.sub(r"```.*?```|<!--.*?-->", "\n\n", text, flags=re.S)
    blocks, cur = [], []
    for line in text.splitlines():
        st = re.sub(r"^(?:>\s?)+", "", line.strip())  # a quote's marker
        item = re.match(r"^(?:[-*+]|\d+[.)])\s+", st)
        if not st or item or st.startswith(("#", "|")):
            if cur:
                blocks.append(" ".join(cur))
            cur = [st[item.end():]] if item else []
            if st.startswith(("#", "|")):
                cur = []
            continue
        cur.append(st)
    if cur:
        blocks.append(" ".join(cur))
    out = []
    for b in blocks:
        b = re.sub(r"^(\*\*|__)[^*_]+?[.:!?]\1\s*", "", b)  # a run-in heading
        if not b or re.match(r"^`[^`]+`\s*:", b):  # a key and its value
            continue
        ends = re.sub(r"(?<=[.!?])([\"”')\]*_]*)\s+(?=\S)", "\\1\0", b)
        for piece in ends.split("\0"):
            if out and out[-1][1] is b and out[-1][0].endswith(_ABBREVIATIONS):
                out[-1] = (f"{out[-1][0]} {piece}", b)
            elif piece.strip():
                out.append((piece.strip(), b))
    return [s for s, _ in out]


def sentence_shape(sentence: str) -> str | None:
    """``sentence`` with what a generator fills in replaced by placeholders, lower case, spaces normalised: numbers
    (signed, decimal, "1,536", "5.6x", the words one-twelve) ``‹number›``, intervals ``‹interval›``, percentages
    ``‹percent›``, regimes ("AMC-like, lr/10") ``‹regime›``, claim ids ``‹claim›``, method names and other
    capitalised acronyms ("BCS + DAE") ``‹method›``, quoted names ``‹quoted›``, code ``‹code›``. None for a fragment
    with fewer than three words of two or more letters besides the placeholders (a list of values, a repr, "seed 0:
    identical")."""
    s = sentence
    for pattern, repl in _SHAPE_STEPS:
        s = re.sub(pattern, repl, s)
    s = re.sub(r"\s+([.,;:!?)\]])", r"\1", re.sub(r"([(\[])\s+", r"\1", re.sub(r"\s+", " ", s))).strip()
    if len(re.findall(r"\b[a-z]{2,}\b", _PLACEHOLDER.sub(" ", s), flags=re.I)) < 3:
        return None
    return s.lower()


def repeated_shapes(texts: Iterable[str], limit: int = SHAPE_LIMIT) -> dict[str, int]:
    """The sentence shapes (:func:`sentence_shape`) that occur more than ``limit`` times in ``texts`` (one notebook's
    Markdown and printed outputs), with their counts, the most frequent first."""
    counts: dict[str, int] = {}  # (not a Counter: tests/test_structure.py keeps tallies of answers in ddrl.voting)
    for sh in (sentence_shape(s) for t in texts for s in sentences(t)):
        if sh is not None:
            counts[sh] = counts.get(sh, 0) + 1
    return dict(sorted(((sh, n) for sh, n in counts.items() if n > limit), key=lambda x: -x[1]))
