"""Final answers: extract them, group them for voting, grade them.

Three functions, used on every rollout:

- :func:`extract_boxed` pulls the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) out of a
  response. This is the answer the paper votes on and rewards (the prompt asks for ``\\boxed{}``).
- :func:`voting_key` is the cheap, purely textual canonical form that the majority vote groups answers by
  (``"025"``, ``"25"``, ``"25.0"`` and ``"\\boxed{25}"`` share one key). It never calls sympy.
- :func:`is_equivalent` is the grader: math-verify's ``parse`` + ``verify`` (LaTeX and plain expressions),
  behind cheap exact fast paths, a hard wall-clock timeout and an LRU cache.

Why a worker process: math-verify's own timeouts use ``signal.alarm``, which only works in the main thread
of the main interpreter, and a runaway sympy computation (``\\boxed{9^{9^{9^{9^{9}}}}}``) cannot be
interrupted from another thread. So we call math-verify with its timeouts off (``parsing_timeout=None``,
``timeout_seconds=None``) inside a small persistent helper process (a plain ``subprocess``, so it also works
from daemonic worker processes, which may not use ``multiprocessing``) and kill it when a comparison runs
past ``timeout``. A fresh helper is started in the background right away. All of this is thread-safe:
concurrent callers each check out their own helper.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path

__all__ = [
    "extract_boxed",
    "voting_key",
    "is_equivalent",
    "warm_up",
    "clear_cache",
    "STARTUP_TIMEOUT",
]

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


def _unbox(answer: str) -> str:
    """``answer`` without a surrounding box: ``"\\boxed{25}"`` -> ``"25"`` (unchanged if none/unbalanced)."""
    if "\\boxed" in answer or "\\fbox" in answer:
        inner = extract_boxed(answer)
        if inner is not None:
            return inner
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
_DIGIT_FRAC = re.compile(r"\\frac\{(\d+)\}\{(\d+)\}|\\frac(\d)(\d)")
_NUMBER = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?")
_INTEGER_KEY = re.compile(r"-?\d+")


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


def voting_key(answer: str | None) -> str | None:
    """The canonical string that the majority vote groups answers by; ``None`` means "no answer".

    Purely textual and cheap (regexes, linear time), because it runs on every rollout. In order:

    1. ``None``, or an answer that is empty after the steps below, gives ``None``.
    2. A surrounding ``\\boxed{...}`` / ``\\fbox{...}`` is removed (``"\\boxed{25}"`` -> ``"25"``), as are
       math-mode wrappers ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``.
    3. LaTeX spacing is dropped: ``\\,``, ``\\;``, ``\\:``, ``\\!``, ``\\ ``, ``\\quad``, ``\\qquad``, ``~``.
    4. ``\\left`` / ``\\right`` are dropped and ``\\dfrac`` / ``\\tfrac`` become ``\\frac``.
    5. All whitespace is removed, except one space after a control word followed by a letter
       (``"\\frac{1}{2}"`` = ``"\\frac { 1 } { 2 }"``, ``"p - q"`` = ``"p-q"``, but ``"\\pi r"`` stays).
    6. Braces around one character after ``^`` / ``_`` are dropped (``"x^{2}"`` = ``"x^2"``),
       ``"^{\\circ}"`` becomes ``"^\\circ"``, and a fraction of two integers becomes ``a/b``
       (``"\\frac{1}{2}"`` = ``"\\frac12"`` = ``"1/2"``).
    7. A plain decimal number is written canonically: sign ``+`` and leading zeros go, trailing
       fractional zeros go, so integer-valued forms share a key (``"025"`` = ``"25"`` = ``"25.0"`` =
       ``"+25."``) and ``"0.50"`` = ``".5"``.

    Not canonicalised (left to :func:`is_equivalent`, which rewards every equivalent form): value
    equality across notations (``"0.5"`` vs ``"1/2"``), thousands separators (``"1,000"`` is ambiguous
    with a tuple), units and ``\\text{}``, ``^\\circ`` vs no degree sign, order of terms or tuple items.
    So equivalent answers written differently can split their votes; see docs/semantics.md.
    """
    if answer is None:
        return None
    if not isinstance(answer, str):
        raise TypeError(f"voting_key(answer): expected str or None, got {type(answer).__name__}")
    s = _unbox(answer.strip()).strip()
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
    s = _DIGIT_FRAC.sub(lambda m: f"{m.group(1) or m.group(3)}/{m.group(2) or m.group(4)}", s)
    if not s:
        return None
    number = _canonical_number(s)
    return number if number is not None else s


# --------------------------------------------------------------------------------------------------
# Grading: math-verify in a killable helper process
# --------------------------------------------------------------------------------------------------

#: Seconds a freshly started helper process may take to import math-verify (not part of ``timeout``).
STARTUP_TIMEOUT = 120.0
#: Address-space limit of a helper process, so a runaway sympy number fails with MemoryError
#: instead of eating the machine's memory (override with ``$DDRL_GRADER_MEMORY_BYTES``).
GRADER_MEMORY_BYTES = int(os.environ.get("DDRL_GRADER_MEMORY_BYTES", 4 * 1024**3))
_CACHE_SIZE = 1 << 16
_MAX_IDLE_WORKERS = 2
_ROOT = str(Path(__file__).resolve().parents[1])
_WORKER_CODE = f"import sys; sys.path.insert(0, {_ROOT!r}); from ddrl.answers import _worker_main; _worker_main()"


class _GraderError(RuntimeError):
    pass


class _Worker:
    """One helper process speaking JSON lines over its stdin/stdout."""

    def __init__(self) -> None:
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER_CODE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=_ROOT,
            env=env,
            close_fds=True,
        )
        self.ready = False
        self._buf = b""

    def _read_line(self, deadline: float) -> bytes | None:
        """One line from the helper, or None on timeout / exit."""
        fd = self.proc.stdout.fileno()
        poller = select.poll()  # not select.select: that fails for descriptors >= 1024
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not poller.poll(max(1, int(remaining * 1000))):
                continue  # re-check the deadline
            chunk = os.read(fd, 65536)
            if not chunk:
                return None  # the helper exited
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def wait_ready(self, timeout: float) -> None:
        if self.ready:
            return
        line = self._read_line(time.monotonic() + timeout)
        if line != b"ready":
            self.kill()
            raise _GraderError(
                f"the math-verify helper process did not start within {timeout:.0f} s "
                f"(python: {sys.executable}; is math-verify installed?)"
            )
        self.ready = True

    def compare(self, pred: str, label: str, timeout: float) -> bool | None:
        """math-verify's verdict, or None when the helper ran past ``timeout`` or died."""
        deadline = time.monotonic() + timeout
        try:
            self.proc.stdin.write(json.dumps([pred, label, timeout]).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        line = self._read_line(deadline)
        if line in (b"1", b"0"):
            return line == b"1"
        return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # the helper exits on end of input
            self.proc.wait(timeout=1.0)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


class _Pool:
    """Idle helpers; each caller checks one out, so threads never share a pipe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Worker] = []
        self.pid = os.getpid()

    def after_fork_in_child(self) -> None:
        # A forked child must not talk to its parent's helpers (nor wait on a lock copied mid-use).
        self.lock, self.idle, self.pid = threading.Lock(), [], os.getpid()

    def checkout(self) -> _Worker:
        with self.lock:
            while self.idle:
                w = self.idle.pop()
                if w.alive():
                    return w
                w.kill()
        return _Worker()

    def checkin(self, w: _Worker) -> None:
        with self.lock:
            if len(self.idle) < _MAX_IDLE_WORKERS:
                self.idle.append(w)
                return
        w.close()

    def replace_in_background(self) -> None:
        """Start a helper now, so it is importing math-verify while the caller goes on."""
        self.checkin(_Worker())

    def close_all(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        if self.pid == os.getpid():
            for w in idle:
                w.close()


_POOL = _Pool()
atexit.register(_POOL.close_all)

# LRU cache: (pred, label) -> True / False, or the timeout (float) after which a comparison was abandoned.
_CACHE: OrderedDict[tuple[str, str], bool | float] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    global _CACHE_LOCK
    _CACHE_LOCK = threading.Lock()
    _POOL.after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def clear_cache() -> None:
    """Forget all cached :func:`is_equivalent` verdicts."""
    with _CACHE_LOCK:
        _CACHE.clear()


def warm_up(timeout: float = STARTUP_TIMEOUT) -> None:
    """Start a grading helper now and wait until it has imported math-verify.

    Optional: :func:`is_equivalent` starts one on first use. Call it before timing-sensitive code, since
    ``is_equivalent``'s ``timeout`` bounds the comparison, not the helper's one-off start-up.
    """
    w = _POOL.checkout()
    w.wait_ready(timeout)
    _POOL.checkin(w)


def _verify_in_worker(pred: str, label: str, timeout: float) -> bool | None:
    """math-verify's verdict on (pred, label) from a helper; None if it ran past ``timeout``."""
    w = _POOL.checkout()
    try:
        w.wait_ready(STARTUP_TIMEOUT)
    except _GraderError:
        # One retry with a fresh helper (the idle one may have been killed from outside).
        w = _Worker()
        w.wait_ready(STARTUP_TIMEOUT)
    verdict = w.compare(pred, label, timeout)
    if verdict is None:
        w.kill()
        _POOL.replace_in_background()
        return None
    _POOL.checkin(w)
    return verdict


def is_equivalent(pred: str | None, label: str | None, timeout: float = 5.0) -> bool:
    """Whether answer ``pred`` is mathematically equivalent to the reference ``label`` (math-verify).

    Both may be bare answers (``"25"``, ``"\\frac{1}{2}"``, ``"x^2+1"``) or boxed ones; a surrounding
    ``\\boxed{}`` is removed first. ``None`` (no answer) is equivalent to nothing, not even ``None``.

    Steps: (1) equal :func:`voting_key` -> True (so ``"025"`` = ``"25"`` = ``"25.0"`` = ``"\\boxed{25}"``);
    two different integer keys -> False; (2) otherwise math-verify: ``verify(parse(label), parse(pred))``
    with each side parsed as ``\\boxed{...}`` by math-verify's LaTeX and plain-expression extractors.

    ``timeout`` (seconds) is a hard wall-clock bound on step 2, enforced by killing the helper process, so
    it holds from any thread or worker process; a comparison that runs past it counts as not equivalent.
    (The one-off start of a helper is bounded separately by :data:`STARTUP_TIMEOUT`; see :func:`warm_up`.)
    Never raises on garbage text; raises RuntimeError only if no helper can start (math-verify missing).
    Verdicts are cached (LRU, 65,536 pairs).
    """
    for name, value in (("pred", pred), ("label", label)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"is_equivalent({name}=...): expected str or None, got {type(value).__name__}")
    if timeout is None or not timeout > 0:
        raise ValueError(f"is_equivalent(timeout=...): expected a positive number of seconds, got {timeout!r}")
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
                return False
    verdict, store = _decide(pred, label, timeout)
    with _CACHE_LOCK:
        _CACHE[key] = store
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return verdict


def _decide(pred: str, label: str, timeout: float) -> tuple[bool, bool | float]:
    """(verdict, what to cache) for two non-None answers."""
    p, g = _unbox(pred.strip()), _unbox(label.strip())
    kp, kg = voting_key(p), voting_key(g)
    if kp is None or kg is None:
        return False, False
    if kp == kg:
        return True, True
    if _INTEGER_KEY.fullmatch(kp) and _INTEGER_KEY.fullmatch(kg):
        return False, False
    verdict = _verify_in_worker(p, g, timeout)
    if verdict is None:
        return False, float(timeout)
    return verdict, verdict


# --------------------------------------------------------------------------------------------------
# The helper process itself
# --------------------------------------------------------------------------------------------------


def _math_verify_equal(pred: str, label: str) -> bool:
    """math-verify with its own (signal-based) timeouts off; runs inside the helper process."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    config = (LatexExtractionConfig(), ExprExtractionConfig())
    gold = parse("\\boxed{" + label + "}", extraction_config=config, parsing_timeout=None)
    target = parse("\\boxed{" + pred + "}", extraction_config=config, parsing_timeout=None)
    if not gold or not target:
        return False
    return bool(verify(gold, target, timeout_seconds=None))


def _exit_when_orphaned(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def _cap_cpu_seconds(seconds: float) -> None:
    """Let the kernel end this helper after ``seconds`` more CPU time (SIGXCPU), in case it is orphaned
    while inside a long C-level computation that keeps the watchdog thread from running."""
    import math
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime + math.ceil(seconds))
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass


def _worker_main() -> None:
    """Loop of the helper process: read ``[pred, label, timeout]`` JSON lines, answer ``1`` or ``0``."""
    import logging
    import resource

    # Only the protocol may write to the real stdout; anything a library prints goes nowhere.
    out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    try:
        resource.setrlimit(resource.RLIMIT_AS, (GRADER_MEMORY_BYTES, GRADER_MEMORY_BYTES))
    except (ValueError, OSError):
        pass
    logging.disable(logging.CRITICAL)  # math-verify warns on every call with its timeouts off
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    import math_verify  # noqa: F401  (import before saying ready)

    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        try:
            pred, label, timeout = json.loads(line)
            _cap_cpu_seconds(float(timeout) + 10)  # the parent kills us before this
            ok = _math_verify_equal(pred, label)
        except BaseException:  # noqa: BLE001 - garbage in, "not equivalent" out
            ok = False
        out.write(b"1\n" if ok else b"0\n")
        out.flush()
