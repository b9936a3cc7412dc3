"""math-verify in killable helper processes: the slow half of :func:`ddrl.answers.is_equivalent`.

Why a worker process: math-verify's own timeouts use ``signal.alarm``, which only works in the main thread
of the main interpreter, and a runaway sympy computation (``\\boxed{9^{9^{9^{9^{9}}}}}``) cannot be
interrupted from another thread. So we call math-verify with its timeouts off (``parsing_timeout=None``,
``timeout_seconds=None``) inside a small persistent helper process (a plain ``subprocess``, so it also works
from daemonic worker processes, which may not use ``multiprocessing``) and kill it when a comparison runs
past ``timeout``. A fresh helper is started in the background right away. All of this is thread-safe:
concurrent callers each check out their own helper.

Inside a helper, each distinct answer string is parsed once (an LRU of math-verify ``parse`` results), so
clustering a vote, which compares one answer with several others, pays for parsing it only once.

- :func:`verify`  -- math-verify's verdict on ``(pred, label)`` within ``timeout`` seconds, or None
- :func:`warm_up` -- start a helper now and wait until it has imported math-verify
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import re
import resource
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path

__all__ = ["verify", "warm_up", "STARTUP_TIMEOUT", "GRADER_MEMORY_BYTES"]

#: Seconds a freshly started helper process may take to import math-verify (not part of ``timeout``).
STARTUP_TIMEOUT = 120.0
#: Address-space limit of a helper process, so a runaway sympy number fails with MemoryError
#: instead of eating the machine's memory (override with ``$DDRL_GRADER_MEMORY_BYTES``).
GRADER_MEMORY_BYTES = int(os.environ.get("DDRL_GRADER_MEMORY_BYTES", 4 * 1024**3))
_MAX_IDLE_WORKERS = 2
_PARSE_CACHE_SIZE = 1 << 13  # parsed answers kept per helper
_ROOT = str(Path(__file__).resolve().parents[2])
_WORKER_CODE = f"import sys; sys.path.insert(0, {_ROOT!r}); from ddrl.grading.grader_pool import _worker_main; _worker_main()"


class GraderError(RuntimeError):
    """No math-verify helper could be started (math-verify missing, or the machine out of processes)."""


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
        """One line from the helper, or None on timeout / exit (``deadline`` may be ``inf``)."""
        fd = self.proc.stdout.fileno()
        poller = select.poll()  # not select.select: that fails for descriptors >= 1024
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            wait_ms = None if math.isinf(remaining) else max(1, int(remaining * 1000))
            if not poller.poll(wait_ms):
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
            raise GraderError(
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
os.register_at_fork(after_in_child=_POOL.after_fork_in_child)


def warm_up(timeout: float = STARTUP_TIMEOUT) -> None:
    """Start a grading helper now and wait until it has imported math-verify.

    Optional: :func:`verify` starts one on first use. Call it before timing-sensitive code, since
    ``verify``'s ``timeout`` bounds the comparison, not the helper's one-off start-up.
    """
    w = _POOL.checkout()
    w.wait_ready(timeout)
    _POOL.checkin(w)


def verify(pred: str, label: str, timeout: float) -> bool | None:
    """math-verify's verdict on (pred, label), ``label`` as gold; None if it ran past ``timeout`` seconds
    (``inf`` = no limit). Raises :class:`GraderError` only if no helper can start."""
    w = _POOL.checkout()
    try:
        w.wait_ready(STARTUP_TIMEOUT)
    except GraderError:
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


# --------------------------------------------------------------------------------------------------
# The helper process itself
# --------------------------------------------------------------------------------------------------

_PARSED: OrderedDict[str, list] = OrderedDict()  # in a helper: answer -> math-verify parse result


def _parse(answer: str) -> list:
    """math-verify's ``parse`` of ``\\boxed{answer}`` (LaTeX and plain-expression extractors, its own
    timeout off), memoised per helper process."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    hit = _PARSED.get(answer)
    if hit is not None:
        _PARSED.move_to_end(answer)
        return hit
    config = (LatexExtractionConfig(), ExprExtractionConfig())
    out = parse("\\boxed{" + answer + "}", extraction_config=config, parsing_timeout=None)
    _PARSED[answer] = out
    if len(_PARSED) > _PARSE_CACHE_SIZE:
        _PARSED.popitem(last=False)
    return out


def _numeric_statement(expr) -> bool:
    from sympy.core.relational import Relational
    from sympy.logic.boolalg import BooleanAtom

    return isinstance(expr, BooleanAtom) or (isinstance(expr, Relational) and not expr.free_symbols)


_READ_SPECIALLY = re.compile(r"%|\\circ|\\text|\\mathrm|\\mbox|deg")


def _plainly_different(a, b, texts: str) -> bool:
    """A fast "not equivalent" that math-verify would also give, decided on the parsed values before its
    slow symbolic comparison (which simplifies a - b; 30-270 ms for a number against a set or a formula):

    - two numbers (expressions without free symbols) whose values differ by more than 1e-6 relative
      (math-verify compares numbers exactly, or after rounding to 6 decimals);
    - a number against a formula with free symbols (not an equation: ``y = 2`` vs ``2`` is left to it);
    - a number against an interval or a union of intervals.

    Answers with percentages, degrees or text, which math-verify reads specially (``9\\% = 9``), are left
    to it, as is everything else (tuples, sets, matrices, equations)."""
    from sympy import Expr, Interval, Union

    if _READ_SPECIALLY.search(texts):
        return False
    a_num = isinstance(a, Expr) and not a.free_symbols
    b_num = isinstance(b, Expr) and not b.free_symbols
    if a_num and b_num:
        try:
            x, y = complex(a.evalf(30)), complex(b.evalf(30))
        except (TypeError, ValueError, OverflowError):
            return False
        if not all(math.isfinite(v) for v in (x.real, x.imag, y.real, y.imag)):
            return False
        return abs(x - y) > 1e-6 * max(1.0, abs(x), abs(y))
    if a_num or b_num:
        other = b if a_num else a
        if isinstance(other, Expr) and other.free_symbols:
            return True
        if isinstance(other, (Interval, Union)):
            return True
    return False


def _math_verify_equal(pred: str, label: str) -> bool:
    """math-verify with its own (signal-based) timeouts off; runs inside the helper process.

    A side that parses to a statement about numbers only (``5=97+7289``, ``3=3``: a relation without free
    symbols) is not a value and is equivalent to nothing: math-verify would call any two such statements
    equal (each has the same empty solution set)."""
    from math_verify import verify as mv_verify

    gold, target = _parse(label), _parse(pred)
    if not gold or not target or _numeric_statement(gold[0]) or _numeric_statement(target[0]):
        return False
    if _plainly_different(gold[0], target[0], label + pred):
        return False
    return bool(mv_verify(gold, target, timeout_seconds=None))


def _exit_when_orphaned(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def _cap_cpu_seconds(seconds: float) -> None:
    """Let the kernel end this helper after ``seconds`` more CPU time (SIGXCPU), in case it is orphaned
    while inside a long C-level computation that keeps the watchdog thread from running. No cap for an
    infinite ``seconds``."""
    if not math.isfinite(seconds):
        return
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
    # Import and exercise math-verify before saying ready: its first parse imports more (the LaTeX
    # grammar, sympy's printers), which a caller's timeout should not pay for.
    _math_verify_equal("\\frac{\\sqrt{3}}{2}+x", "x+\\sqrt{3}/2")
    _PARSED.clear()

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
