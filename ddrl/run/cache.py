"""Content keys and the content-addressed cache: what a computation's result is stored under, and how two
processes share one entry.

- :func:`content_key`: the sha256 of a JSON description of a computation's inputs; :func:`records_key` of the
  questions it saw; :func:`grader_fingerprint` of the grader that scored it; :func:`weight_files` of a model.
- :func:`cached`: ``fn()`` computed once per key, stored under ``<cache>/<namespace>/<key>``, reused after.
- :class:`owner_lock`: one process owns a run directory or cache entry at a time (``flock``; the kernel drops it
  when its owner dies).

Where files live and how they are written durably is :mod:`ddrl.run.storage`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
import sys
import time
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable

from ddrl import answers
from ddrl.run.storage import atomic_write_bytes, cache_root

#: What counts as a weight file of a model directory (what a fingerprint of its weights hashes).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


def weight_files(directory: str | Path) -> list[Path]:
    """The weight files of a model directory (:data:`WEIGHT_SUFFIXES`), sorted by name."""
    return sorted(p for p in Path(directory).iterdir() if p.suffix in WEIGHT_SUFFIXES)


def content_key(obj: Any) -> str:
    """A stable sha256 of a JSON-serialisable description of a computation's inputs."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


#: The grading modules whose source is hashed into :func:`grader_fingerprint`: an edit there invalidates
#: every cached graded result, on top of :data:`ddrl.answers.GRADER_VERSION` (the one version number).
_GRADER_SOURCES = ("answers.py", "voting.py", "grading/grader_pool.py")


def grader_fingerprint() -> dict[str, Any]:
    """What a graded result depends on besides its inputs: :data:`ddrl.answers.GRADER_VERSION`, the
    math-verify version and the sha256 of the grading modules' source (``answers.py``, ``voting.py``,
    ``grader_pool.py``)."""

    try:
        mv = version("math-verify")
    except PackageNotFoundError:  # pragma: no cover
        mv = None
    here = Path(__file__).resolve().parents[1]  # the ddrl package
    src = hashlib.sha256(b"".join((here / f).read_bytes() for f in _GRADER_SOURCES)).hexdigest()[:16]
    return {"grader_version": answers.GRADER_VERSION, "math_verify": mv, "source": src}


def records_key(records: Any, fields: tuple[str, ...] = ("id", "prompt", "answer")) -> str:
    """sha256 of the records' ids, prompts and answers: a cached score is keyed by what it was graded on,
    not only by question ids (testbed ids do not change with the seed that draws the questions)."""
    enc = _KEY_ENCODER.encode  # json.dumps(..., default=str)'s encoder, built once, not once per record
    return hashlib.sha256("".join(enc([r.get(f) for f in fields]) + "\n" for r in records).encode()).hexdigest()


_KEY_ENCODER = json.JSONEncoder(default=str)


class LockBusy(RuntimeError):
    """Another process owns a run directory or cache entry (raised only when not waiting for it)."""


class owner_lock:
    """Exclusive ownership of ``path`` (a run directory or cache entry) among processes: ``fcntl.flock`` on
    ``<lock_file>``, which records the owner's pid. A second process waits for the owner (saying so once on
    stderr, naming the path and the owner pid) or, with ``wait=False`` or after ``timeout`` seconds
    (``$DDRL_LOCK_TIMEOUT``), raises :class:`LockBusy` with the same facts. The kernel drops the lock when
    its owner dies (kill -9 included), so a stale lock file never blocks anyone."""

    def __init__(self, lock_file: str | Path, what: str, wait: bool = True, timeout: float | None = None):
        self.lock_file, self.what, self.wait = Path(lock_file), what, wait
        env = os.environ.get("DDRL_LOCK_TIMEOUT")
        self.timeout = timeout if timeout is not None else (float(env) if env else None)
        self._fd: int | None = None

    def owner(self) -> str:
        try:
            return self.lock_file.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def __enter__(self) -> "owner_lock":

        self.lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        start, told = time.monotonic(), False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - start
                if not self.wait or (self.timeout is not None and waited >= self.timeout):
                    os.close(fd)
                    raise LockBusy(f"{self.what} is in use by another process (pid {self.owner()}, lock "
                                   f"{self.lock_file}); wait for it to finish or use another $DDRL_CACHE_DIR") from None
                if not told:
                    print(f"ddrl: waiting for pid {self.owner()}, which owns {self.what} (lock {self.lock_file})",
                          file=sys.stderr, flush=True)
                    told = True
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:

        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


_DAMAGED = object()

def _load_pickle(path: Path) -> Any:
    """The stored result, or ``_DAMAGED`` (with a warning naming the file) when it does not unpickle."""

    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, ValueError) as e:
        warnings.warn(f"cache entry {path} is damaged ({path.stat().st_size} bytes; {type(e).__name__}: {e}); "
                      "computing it again", RuntimeWarning, stacklevel=3)
        return _DAMAGED


def cached(key: Any, fn: Callable[[], Any], namespace: str = "results", cache_dir: str | Path | None = None) -> Any:
    """Return ``fn()``, computing it only if no result is stored under ``(namespace, key)``.

    ``key`` describes everything the result depends on (parameters, model hash, code version); its
    sha256 names the file. A stored result is read without writing anything (a read-only cache works).
    Computing takes the entry's lock (:class:`owner_lock`): a second process asking for the same entry
    waits, then reads the first one's result instead of computing it again. Results are pickled: only load
    caches you made yourself.
    """
    path = Path(cache_dir or cache_root()) / namespace / f"{content_key(key)}.pkl"
    if path.is_file() and (value := _load_pickle(path)) is not _DAMAGED:
        return value
    with owner_lock(path.with_suffix(".lock"), f"cache entry {path}"):
        if path.is_file() and (value := _load_pickle(path)) is not _DAMAGED:  # computed by the process we waited for
            return value
        value = fn()
        atomic_write_bytes(path, pickle.dumps(value))
    return value
