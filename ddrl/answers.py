"""Final answers: extract them, group them for voting, grade them.

Four functions, used on every rollout:

- :func:`extract_boxed` pulls the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) out of a
  response. This is the answer the paper votes on and rewards (the prompt asks for ``\\boxed{}``).
- :func:`voting_key` is the cheap, purely textual canonical form that answers are first grouped by
  (``"025"``, ``"25"``, ``"25.0"`` and ``"\\boxed{25}"`` share one key). It never calls sympy.
- :func:`is_equivalent` is the grader: exact fast paths (equal keys; two plain numbers), then math-verify's
  ``parse`` + ``verify`` in a killable helper process (:mod:`ddrl.grading.grader_pool`), with an LRU cache.
- :func:`grade_answers` grades a list of answers against one reference, each distinct answer once.

:data:`GRADER_VERSION` names the grading semantics; caches of graded results include it in their keys.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from fractions import Fraction

from ddrl.grading import grader_pool
from ddrl.grading.grader_pool import STARTUP_TIMEOUT, warm_up

__all__ = [
    "GRADER_VERSION",
    "extract_boxed",
    "voting_key",
    "plain_number",
    "is_equivalent",
    "grade_answers",
    "warm_up",
    "clear_cache",
    "STARTUP_TIMEOUT",
]


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


#: The grading semantics, for cache keys: bump the leading number whenever :func:`voting_key`,
#: :func:`is_equivalent` or the vote's clustering (:mod:`ddrl.voting`) change what they decide; the
#: math-verify version is part of it. History: 1 = string keys only (until issue 15); 2 = votes merge
#: equivalent answers, mixed numbers (``1\\frac{4}{5}``) keep their value, a broken box is no answer,
#: two plain numbers are compared exactly.
GRADER_VERSION = f"2+math-verify-{_package_version('math-verify')}"

# --------------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------------

# ``\boxed`` / ``\fbox`` as whole control words (not ``\boxedanswer``), optional spaces, then the group.
_BOX_OPEN = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])\s*\{")
# Tokens that matter for brace matching: an escaped character (``\{``, ``\}``, ``\\``) or a brace.
_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)


def extract_boxed(text: str | None) -> str | None:
    """Content of the LAST ``\\boxed{...}`` or ``\\fbox{...}`` in ``text``, stripped of outer spaces.

    Nested braces are matched (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``); escaped braces ``\\{ \\}``
    are content, not grouping. Returns ``None`` when there is no box, or when the last box is never closed
    (we do not fall back to an earlier box: a cut-off final answer is no answer). An empty box gives ``""``,
    which :func:`voting_key` and :func:`is_equivalent` treat as no answer. Linear time in ``len(text)``.
    """
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f"extract_boxed(text): expected str or None, got {type(text).__name__}")
    if "\\boxed" not in text and "\\fbox" not in text:
        return None
    last = None
    for last in _BOX_OPEN.finditer(text):
        pass
    if last is None:
        return None
    start = last.end()  # first character after the opening brace
    depth = 1
    for tok in _BRACE_TOKEN.finditer(text, start):
        t = tok.group()
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                return text[start : tok.start()].strip()
    return None


_BOX_COMMAND = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")


def _unbox(answer: str) -> str | None:
    """``answer`` without a surrounding box: ``"\\boxed{25}"`` -> ``"25"``; unchanged when it has no box
    command; None when it has one that :func:`extract_boxed` cannot read (``"\\boxed{5"``, cut off):
    a broken box is no answer, for grading as for extraction."""
    if _BOX_COMMAND.search(answer):
        return extract_boxed(answer)
    return answer


# --------------------------------------------------------------------------------------------------
# Voting key
# --------------------------------------------------------------------------------------------------

# Math-mode wrappers around a whole answer.
_WRAPPERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
# LaTeX spacing to drop; ``\\`` (a line break) is matched first so ``\\,`` is not read as ``\,``.
_SPACING = re.compile(r"\\\\|\\[,;:! ]|\\q?quad(?![A-Za-z])|~")
_LEFT_RIGHT = re.compile(r"\\(?:left|right)(?![A-Za-z])")
_FRAC_VARIANT = re.compile(r"\\[dt]frac(?![A-Za-z])")
_CONTROL_WORD_END = re.compile(r"\\[A-Za-z]+$")
_DEGREE = re.compile(r"\^\{\\circ\}")
_SINGLE_GROUP = re.compile(r"([\^_])\{([A-Za-z0-9])\}")
_COMPACT_FRAC = re.compile(r"\\frac(\d)(\d)")  # \frac12 is \frac{1}{2} (one-token arguments)
# A whole answer that is an integer fraction or a mixed number (1\frac{4}{5} = 9/5, as math-verify reads it).
_WHOLE_FRAC = re.compile(r"([+-]?)(\d*)\\frac\{(\d+)\}\{(\d+)\}")
_PLAIN_FRACTION = re.compile(r"(-?)(\d+)/(\d+)")
_NUMBER = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?")

#: The longest run of digits read as a value: CPython's default limit on int <-> str conversion
#: (``sys.int_info.default_max_str_digits``), so every answer that could be read before still is, and the
#: same way. Beyond it a number is only text: its voting key is textual and :func:`plain_number` gives
#: None (the comparison goes to math-verify like any other expression). Converting longer digit strings
#: exactly costs quadratic time (about 2 minutes for a million digits), so no exact path is offered.
MAX_NUMBER_DIGITS = 4300


def _readable(*digit_runs: str) -> bool:
    """Whether every digit run is short enough to convert to an int (:data:`MAX_NUMBER_DIGITS`)."""
    return all(len(d) <= MAX_NUMBER_DIGITS for d in digit_runs)


def _drop_spacing(m: re.Match) -> str:
    return m.group() if m.group() == "\\\\" else ""


def _join_without_spaces(s: str) -> str:
    """Remove whitespace, keeping one space where it ends a control word (``\\pi r`` is not ``\\pir``)."""
    parts = s.split()
    if not parts:
        return ""
    out = [parts[0]]
    for part in parts[1:]:
        if part[0].isalpha() and _CONTROL_WORD_END.search(out[-1]):
            out.append(" ")
        out.append(part)
    return "".join(out)


def _canonical_number(s: str) -> str | None:
    """``"+025.50"`` -> ``"25.5"``, ``"25.0"`` -> ``"25"``, ``"-0"`` -> ``"0"``; None if not a plain decimal."""
    m = _NUMBER.fullmatch(s)
    if m is None:
        return None
    sign, whole, frac = m.group(1), m.group(2), m.group(3) or ""
    if not whole and not frac:
        return None  # "", "+", ".", "-."
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    body = whole + ("." + frac if frac else "")
    return body if sign != "-" or body == "0" else "-" + body


def _whole_fraction(s: str) -> str:
    """``s`` as ``a/b`` when the whole of it is an integer fraction or a mixed number (step 6 of
    :func:`voting_key`), else unchanged. Numbers too long to read (:data:`MAX_NUMBER_DIGITS` digits in a
    part or in the improper numerator) stay LaTeX, a purely textual key."""
    whole = _WHOLE_FRAC.fullmatch(s)
    if whole is None or not _readable(whole.group(2), whole.group(3), whole.group(4)) or int(whole.group(4)) == 0:
        return s
    sign, units, num, den = whole.group(1), int(whole.group(2) or 0), int(whole.group(3)), int(whole.group(4))
    numerator = units * den + num
    if numerator >= _TOO_LONG:
        return s
    return f"{'-' if sign == '-' else ''}{numerator}/{den}"


_TOO_LONG = 10**MAX_NUMBER_DIGITS  # the least integer with more than MAX_NUMBER_DIGITS digits


def voting_key(answer: str | None) -> str | None:
    """The canonical string that the majority vote groups answers by; ``None`` means "no answer".

    Purely textual and cheap (regexes, linear time), because it runs on every rollout. In order:

    1. ``None``, or an answer that is empty after the steps below, gives ``None``; so does a box that
       :func:`extract_boxed` cannot read (``"\\boxed{5"``: cut off, no answer).
    2. A surrounding ``\\boxed{...}`` / ``\\fbox{...}`` is removed (``"\\boxed{25}"`` -> ``"25"``), as are
       math-mode wrappers ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``.
    3. LaTeX spacing is dropped: ``\\,``, ``\\;``, ``\\:``, ``\\!``, ``\\ ``, ``\\quad``, ``\\qquad``, ``~``.
    4. ``\\left`` / ``\\right`` are dropped and ``\\dfrac`` / ``\\tfrac`` become ``\\frac``.
    5. All whitespace is removed, except one space after a control word followed by a letter
       (``"\\frac{1}{2}"`` = ``"\\frac { 1 } { 2 }"``, ``"p - q"`` = ``"p-q"``, but ``"\\pi r"`` stays).
    6. Braces around one character after ``^`` / ``_`` are dropped (``"x^{2}"`` = ``"x^2"``),
       ``"^{\\circ}"`` becomes ``"^\\circ"``, ``"\\frac12"`` becomes ``"\\frac{1}{2}"``, and a whole answer
       that is a fraction of two integers becomes ``a/b`` (``"\\frac{1}{2}"`` = ``"\\frac12"`` = ``"1/2"``);
       a whole mixed number becomes its improper fraction (``"1\\frac{4}{5}"`` = ``"9/5"``, never ``"14/5"``).
       Fractions inside a longer answer stay LaTeX, so no two values share a key (``"\\frac{1}{2}3"`` is
       not ``"1/23"``).
    7. A plain decimal number is written canonically: sign ``+`` and leading zeros go, trailing
       fractional zeros go, so integer-valued forms share a key (``"025"`` = ``"25"`` = ``"25.0"`` =
       ``"+25."``) and ``"0.50"`` = ``".5"``.

    Not canonicalised (left to :func:`is_equivalent`, which the vote uses to merge keys into one
    cluster, :func:`ddrl.voting.majority_vote`): value equality across notations (``"0.5"`` vs
    ``"1/2"``), thousands separators (``"1,000"`` is ambiguous with a tuple), units and ``\\text{}``,
    ``^\\circ`` vs no degree sign, order of terms or tuple items.
    """
    if answer is None:
        return None
    if not isinstance(answer, str):
        raise TypeError(f"voting_key(answer): expected str or None, got {type(answer).__name__}")
    s = _unbox(answer.strip())
    if s is None:
        return None
    s = s.strip()
    for left, right in _WRAPPERS:
        if len(s) >= len(left) + len(right) and s.startswith(left) and s.endswith(right):
            s = s[len(left) : len(s) - len(right)].strip()
            break
    s = _SPACING.sub(_drop_spacing, s)
    s = _LEFT_RIGHT.sub("", s)
    s = _FRAC_VARIANT.sub(r"\\frac", s)
    s = _join_without_spaces(s)
    s = _DEGREE.sub(r"^\\circ", s)
    s = _SINGLE_GROUP.sub(r"\1\2", s)
    s = _COMPACT_FRAC.sub(r"\\frac{\1}{\2}", s)
    s = _whole_fraction(s)
    if not s:
        return None
    number = _canonical_number(s)
    return number if number is not None else s


def plain_number(key: str | None) -> Fraction | None:
    """The exact value of a voting key that is a plain number (a canonical decimal such as ``"-2.5"``, or
    ``"a/b"`` with integers a, b != 0), else None. ``plain_number(voting_key("1\\frac{4}{5}")) == 9/5``.
    A number with a part longer than :data:`MAX_NUMBER_DIGITS` digits is None: too long to read exactly
    in bounded time (and Python refuses to), it is compared as an expression."""
    if key is None:
        return None
    if _canonical_number(key) == key:
        whole, _, frac = key.lstrip("-").partition(".")
        return Fraction(key) if _readable(whole, frac) else None
    m = _PLAIN_FRACTION.fullmatch(key)
    if m is not None and _readable(m.group(2), m.group(3)) and int(m.group(3)) != 0:
        return Fraction(int(m.group(2)), int(m.group(3))) * (-1 if m.group(1) else 1)
    return None


# --------------------------------------------------------------------------------------------------
# Grading
# --------------------------------------------------------------------------------------------------

_CACHE_SIZE = 1 << 16
# Two plain numbers at least this far apart are different answers for math-verify too: it compares a
# float with a number after rounding both to 6 decimals (``verify(float_rounding=6)``), and exact
# numbers exactly, so closer but unequal pairs are left to it.
_NUMBER_GAP = Fraction(1, 10**6)

# LRU cache: (pred, label) -> True / False, or the timeout (float) after which a comparison was abandoned.
_CACHE: OrderedDict[tuple[str, str], bool | float] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    global _CACHE_LOCK
    _CACHE_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def clear_cache() -> None:
    """Forget all cached :func:`is_equivalent` verdicts."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _check_timeout(timeout: float, where: str) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{where}(timeout=...): expected a positive number of seconds (inf = no limit), got {timeout!r}")


def verdict(pred: str | None, label: str | None, timeout: float = 5.0) -> bool | None:
    """:func:`is_equivalent`, telling a comparison abandoned after ``timeout`` seconds apart: True / False,
    or None when math-verify ran past the timeout (now or in an earlier call with at least as much time)."""
    for name, value in (("pred", pred), ("label", label)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"is_equivalent({name}=...): expected str or None, got {type(value).__name__}")
    _check_timeout(timeout, "is_equivalent")
    if pred is None or label is None:
        return False
    key = (pred, label)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            if isinstance(cached, bool):
                _CACHE.move_to_end(key)
                return cached
            if cached >= timeout:  # abandoned before with at least this much time
                _CACHE.move_to_end(key)
                return None
    result = _decide(pred, label, timeout)
    with _CACHE_LOCK:
        _CACHE[key] = float(timeout) if result is None else result
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return result


def is_equivalent(pred: str | None, label: str | None, timeout: float = 5.0) -> bool:
    """Whether answer ``pred`` is mathematically equivalent to the reference ``label`` (math-verify).

    Both may be bare answers (``"25"``, ``"\\frac{1}{2}"``, ``"x^2+1"``) or boxed ones; a surrounding
    ``\\boxed{}`` is removed first, and a box that cannot be read (``"\\boxed{5"``, cut off) is no answer.
    ``None`` (no answer) is equivalent to nothing, not even ``None``.

    Steps: (1) equal :func:`voting_key` -> True (so ``"025"`` = ``"25"`` = ``"25.0"`` = ``"\\boxed{25}"``);
    (2) two plain numbers (:func:`plain_number`): equal values -> True, values 1e-6 or more apart ->
    False (what math-verify would say; so two different integers never reach it); (3) otherwise
    math-verify: ``verify(parse(label), parse(pred))`` with each side parsed as ``\\boxed{...}`` by
    math-verify's LaTeX and plain-expression extractors (:mod:`ddrl.grading.grader_pool`).

    ``timeout`` (seconds, ``float("inf")`` for no limit) is a hard wall-clock bound on step 3, enforced by
    killing the helper process, so it holds from any thread or worker process; a comparison that runs past
    it counts as not equivalent. (The one-off start of a helper is bounded separately by
    :data:`STARTUP_TIMEOUT`; see :func:`warm_up`.) Never raises on garbage text; raises
    :class:`ddrl.grading.grader_pool.GraderError` only if no helper can start (math-verify missing).
    Verdicts are cached (LRU, 65,536 pairs).
    """
    return verdict(pred, label, timeout) is True


def _decide(pred: str, label: str, timeout: float) -> bool | None:
    """The verdict on two non-None answers (None: math-verify ran past ``timeout``)."""
    p, g = _unbox(pred.strip()), _unbox(label.strip())
    kp, kg = voting_key(p), voting_key(g)
    if kp is None or kg is None:
        return False
    if kp == kg:
        return True
    xp, xg = plain_number(kp), plain_number(kg)
    if xp is not None and xg is not None:
        if xp == xg:
            return True
        if abs(xp - xg) >= _NUMBER_GAP:
            return False
    return grader_pool.verify(p, g, timeout)


def grade_answers(answers: Sequence[str | None], truth: str | None, keys: Sequence | None = None,
                  timeout: float = 5.0) -> list[bool]:
    """Whether each answer is equivalent to ``truth`` (:func:`is_equivalent`), grading each distinct
    answer once: answers sharing a key (``keys[i]``; default their :func:`voting_key`, or pass a vote's
    cluster keys, :attr:`ddrl.voting.Vote.keys`) get the verdict of the first of them. A None key or
    answer is wrong. The one place where a list of answers is graded (evaluation, diagnostics, figures).
    """
    if keys is None:
        keys = [voting_key(a) for a in answers]
    if len(keys) != len(answers):
        raise ValueError(f"grade_answers: {len(answers)} answers but {len(keys)} keys")
    graded: dict = {}
    out = []
    for a, k in zip(answers, keys):
        if k is None or a is None:
            out.append(False)
            continue
        if k not in graded:
            graded[k] = is_equivalent(a, truth, timeout)
        out.append(graded[k])
    return out
