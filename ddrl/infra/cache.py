"""Content keys and the content-addressed cache: what a computation's result is stored under, and how two
processes share one entry.

- :func:`content_key`: the sha256 of a JSON description of a computation's inputs; :func:`records_key` of the
  questions it saw (:func:`ddrl.grading.fingerprint.grader_fingerprint`: the grader that scored it); :func:`weight_files` of a model.
- :func:`cached`: ``fn()`` computed once per key, stored under ``<cache>/<namespace>/<key>.json`` (or ``.pkl``) with
  the sha256 of its bytes, reused after only when they verify.
- :class:`owner_lock`: one process owns a run directory or cache entry at a time (``flock``; the kernel drops it
  when its owner dies).

Where files live and how they are written durably is :mod:`ddrl.infra.storage`.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import pickle
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy

from ddrl.infra.storage import DamagedFileError, atomic_write_bytes, cache_root, seal, unseal

#: What counts as a weight file of a model directory (what a fingerprint of its weights hashes).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


def weight_files(directory: str | Path) -> list[Path]:
    """The weight files of a model directory (:data:`WEIGHT_SUFFIXES`), sorted by name."""
    return sorted(p for p in Path(directory).iterdir() if p.suffix in WEIGHT_SUFFIXES)


def content_key(obj: Any) -> str:
    """A stable sha256 of a JSON-serialisable description of a computation's inputs."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


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

#: Every global a cached pickle may name, as (module, name) exactly as the pickle spells them: builtins' plain data
#: types (nothing that evaluates, imports or reaches attributes), ``collections``' containers, the numpy names a
#: pickled array or scalar needs (numpy 2's ``numpy._core`` and numpy 1's ``numpy.core``), and ddrl's plain-data
#: dataclasses. Decided before anything is imported (issue 98): a name not here is refused without importing its
#: module, so a pickle naming ``ddrl.study.__main__`` (or any module that does work at import) runs nothing.
SAFE_GLOBALS = frozenset(
    {("builtins", n) for n in ("dict", "list", "tuple", "set", "frozenset", "str", "bytes", "bytearray", "int",
                                "float", "complex", "bool", "slice", "range")}
    | {("collections", n) for n in ("OrderedDict", "defaultdict", "Counter", "deque")}
    | {("numpy", "dtype"), ("numpy", "ndarray")}
    | {(f"numpy.{core}.multiarray", n) for core in ("_core", "core") for n in ("_reconstruct", "scalar")}
    | {(f"numpy.{core}.numeric", "_frombuffer") for core in ("_core", "core")}
    | {("ddrl.voting", "Vote"), ("ddrl.rollouts", "Rollout"), ("ddrl.etmr", "TreeRollouts"), ("ddrl.cor", "CORResult"),
       ("ddrl.report.stats", "Interval"), ("ddrl.report.stats", "VarianceComponents")}
)


class _PlainUnpickler(pickle.Unpickler):
    """An unpickler that builds plain data only: the exact names of :data:`SAFE_GLOBALS`. A crafted pickle that names
    anything else (``os.system``, ``builtins.eval``, a module that runs code at import, a dotted path into another
    library) is refused before its module is imported: digests stop corruption, this stops a planted payload."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in SAFE_GLOBALS:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}: a cached result holds plain data only "
                                         "(not one of ddrl.infra.cache.SAFE_GLOBALS; nothing was imported)")
        return super().find_class(module, name)


def _json_exact(value: Any) -> bool:
    """Whether ``value`` comes back from JSON as it went in (dicts with string keys, lists, strings, ints, floats,
    bools, None; a numpy float64 or bool, which JSON returns as the same number): then it is stored as JSON."""
    if value is None or isinstance(value, (str, bool, int, float, numpy.bool_)):
        return type(value) in (str, bool, int, float, numpy.float64, numpy.bool_) or value is None
    if type(value) is list:
        return all(_json_exact(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _json_exact(v) for k, v in value.items())
    return False


def _encode(value: Any) -> tuple[str, bytes]:
    """``(suffix, payload)``: JSON where :func:`_json_exact`, else a pickle (read back by :class:`_PlainUnpickler`)."""
    if _json_exact(value):
        text = json.dumps(value, allow_nan=True, default=lambda o: bool(o) if isinstance(o, numpy.bool_) else o)
        return ".json", text.encode()
    return ".pkl", pickle.dumps(value)


def _decode(suffix: str, payload: bytes) -> Any:
    return json.loads(payload) if suffix == ".json" else _PlainUnpickler(io.BytesIO(payload)).load()


def _load_entry(path: Path, quiet: bool = False) -> Any:
    """The stored result, or ``_DAMAGED`` (with a one-line warning naming the file) when its bytes are not the
    ones written (the sha256 in its first line, :func:`ddrl.infra.storage.unseal`) or it does not decode."""
    try:
        return _decode(path.suffix, unseal(path.read_bytes(), path))
    except DamagedFileError as e:
        why = e.why
    except (EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, ValueError, TypeError) as e:
        why = f"{type(e).__name__}: {str(e)[:200]}"
    if not quiet:
        warnings.warn(f"cache entry {path} is damaged ({path.stat().st_size} bytes; {why}); computing it again",
                      RuntimeWarning, stacklevel=4)
    return _DAMAGED


def _stored(stem: Path, quiet: bool = False) -> Any:
    """The verified entry stored under ``stem`` (``.json``, else ``.pkl``), or ``_DAMAGED`` when none is usable
    (named in a warning unless ``quiet``)."""
    for path in (stem.with_suffix(".json"), stem.with_suffix(".pkl")):
        if path.is_file():
            value = _load_entry(path, quiet)
            if value is not _DAMAGED:
                return value
    return _DAMAGED


def cached(key: Any, fn: Callable[[], Any], namespace: str = "results", cache_dir: str | Path | None = None) -> Any:
    """Return ``fn()``, computing it only if no result is stored under ``(namespace, key)``.

    ``key`` describes everything the result depends on (parameters, model hash, code version); its
    sha256 names the file. A stored result is read without writing anything (a read-only cache works).
    Computing takes the entry's lock (:class:`owner_lock`): a second process asking for the same entry
    waits, then reads the first one's result instead of computing it again.

    Every entry verifies itself (issue 85): its first line holds the sha256 of the rest, written atomically with
    it (:func:`ddrl.infra.storage.seal`); an entry whose bytes do not match is named in a one-line warning and
    computed again, never used. Results that JSON holds exactly (all of the companion's evaluations and
    rollouts) are stored as ``<key>.json``, which cannot execute, and returned as JSON gives them back on the
    first call too (so a fresh and a cached call return the same types); anything else is a ``<key>.pkl`` read
    back through an allow-list of plain data classes (:class:`_PlainUnpickler`), so a planted pickle is refused
    rather than run. Entries of the old layout (a bare ``<key>.pkl`` with no digest) are computed again.
    """
    stem = Path(cache_dir or cache_root()) / namespace / content_key(key)
    if (value := _stored(stem)) is not _DAMAGED:
        return value
    with owner_lock(stem.with_suffix(".lock"), f"cache entry {stem}"):
        if (value := _stored(stem, quiet=True)) is not _DAMAGED:  # computed by the process we waited for (the
            # damage seen above was named once already)
            return value
        suffix, payload = _encode(fn())
        atomic_write_bytes(stem.with_suffix(suffix), seal(payload))
    return _decode(suffix, payload)
