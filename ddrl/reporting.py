"""Where a notebook's results go: figures, tables, metrics, and a content-addressed cache.

Every artifact lands under ``output_dir`` (``outputs/<preset>/`` when run by :mod:`ddrl.reproduce`):

- ``figures/<name>.png`` and ``.pdf`` and the plotted data as ``figures/<name>.csv``
- ``tables/<name>.csv`` and ``tables/<name>.md``
- ``metrics/<notebook>.json``: the numbers the notebook's "What we measured" cell is generated from
- ``artifacts/<notebook>.jsonl``: one line per file written, read by the runner to build ``manifest.json``

Expensive results (sampled rollouts, trained runs) go through :func:`cached`, keyed by the sha256 of their
inputs, so a rerun with the same parameters reuses them; figures drawn by :meth:`Reporter.draw` are kept the same
way (:mod:`ddrl.figure_store`: this machine's store and the committed one), so a render copies a figure whose inputs,
code and style have not changed. Where files live and how they are written durably is :mod:`ddrl.storage`.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable

from ddrl import answers, figure_store
from ddrl.figure_keys import code_deps, figure_key, reads_while
# re-exported: most modules import these from here
from ddrl.storage import REPO, atomic_write_bytes, cache_root, disk_error, fsync_dir, sha256_file, unique_tmp  # noqa: F401

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
_GRADER_SOURCES = ("answers.py", "voting.py", "grader_pool.py")


def grader_fingerprint() -> dict[str, Any]:
    """What a graded result depends on besides its inputs: :data:`ddrl.answers.GRADER_VERSION`, the
    math-verify version and the sha256 of the grading modules' source (``answers.py``, ``voting.py``,
    ``grader_pool.py``)."""

    try:
        mv = version("math-verify")
    except PackageNotFoundError:  # pragma: no cover
        mv = None
    here = Path(__file__).resolve().parent
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


def write_csv(path: str | Path, df) -> None:
    """``df`` (a DataFrame, no index) as a CSV at ``path`` by :func:`atomic_write_bytes`; gzipped where the name ends
    in ``.gz``, with no timestamp in its header, so the same rows always give the same bytes."""
    data = df.to_csv(index=False).encode()
    atomic_write_bytes(path, gzip.compress(data, mtime=0) if str(path).endswith(".gz") else data)


def write_json(path: str | Path | None, obj) -> str:
    """``obj`` as indented JSON text (with a final newline), written atomically to ``path`` when one is given
    (:func:`atomic_write_bytes`); returns the text (the CLIs also print it)."""
    text = json.dumps(obj, indent=1) + "\n"
    if path is not None:
        atomic_write_bytes(path, text.encode())
    return text


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


#: The resolution every saved figure is written at.
FIGURE_DPI = 150


def save_figure(fig, out_dir: str | Path, name: str) -> dict[str, Path]:
    """Save ``fig`` as ``<out_dir>/<name>.png`` and ``.pdf`` (150 dpi, tight): the one way figures are written.
    The PDF carries no creation date, so rendering the same figure again writes the same bytes (a committed
    figure changes in git only when what it shows does)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {ext: out_dir / f"{name}.{ext}" for ext in ("png", "pdf")}
    for ext, p in paths.items():
        fig.savefig(p, dpi=FIGURE_DPI, bbox_inches="tight", metadata={"CreationDate": None} if ext == "pdf" else None)
    return paths


def show_png(png: Path, dpi: float) -> bool:
    """Show the saved ``png`` as a cell's output at the size the inline backend gives a figure of ``dpi`` (its pixels
    were written at :data:`FIGURE_DPI`), when a Jupyter kernel draws figures inline; anywhere else do nothing and
    return False."""
    ipython, mpl = (sys.modules.get(m) for m in ("IPython", "matplotlib"))
    if ipython is None or ipython.get_ipython() is None or mpl is None or "inline" not in mpl.get_backend():
        return False
    data = Path(png).read_bytes()
    width_px = int.from_bytes(data[16:20], "big")  # the PNG header's IHDR width
    ipython.display.display(ipython.display.Image(data=data, format="png", width=round(width_px * dpi / FIGURE_DPI)))
    return True


def show_saved(fig, png: Path) -> bool:
    """Show the saved ``png`` as ``fig``'s output and close ``fig``, when a Jupyter kernel draws figures inline.

    The inline backend would otherwise draw ``fig`` a third time at the end of the cell, after the PNG and the PDF
    (each a layout pass and a draw): a third of what a figure costs a notebook's render (``bench/render_claims.py``).
    The reader then sees the very file the notebook wrote, at the size the inline backend would have shown
    (``figure.dpi``). Anywhere else (a script, an interactive backend such as ipympl) it does nothing and returns
    False. IPython and matplotlib are looked up, not imported: a figure means matplotlib is loaded, a kernel means
    IPython is.
    """
    if not show_png(png, fig.dpi):
        return False
    if (plt := sys.modules.get("matplotlib.pyplot")) is not None:
        plt.close(fig)
    return True


class Reporter:
    """Writes one notebook's artifacts under ``output_dir`` and records each in ``artifacts/<notebook>.jsonl``."""

    def __init__(self, output_dir: str | Path, notebook: str):
        self.output_dir = Path(output_dir)
        self.notebook = notebook
        self.log = self.output_dir / "artifacts" / f"{notebook}.jsonl"
        self.figure_log = self.log.with_suffix(".figures.jsonl")  # the stored figures' entries (ddrl.figure_store)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        for log in (self.log, self.figure_log):
            log.write_text("")  # a rerun of the notebook replaces its artifact list

    def _record(self, path: Path, kind: str) -> Path:
        with open(self.log, "a") as f:
            f.write(json.dumps({"path": str(path.relative_to(self.output_dir)), "kind": kind}) + "\n")
        return path

    def figure(self, fig, name: str, data=None) -> Path:
        """Save ``fig`` as PNG and PDF (and ``data``, a DataFrame, as the CSV behind it); in a notebook drawing
        inline, show the saved PNG in its place (:func:`show_saved`: no ``plt.show()`` needed)."""
        d = self.output_dir / "figures"
        paths = save_figure(fig, d, name)
        for p in paths.values():
            self._record(p, "figure")
        self._figure_data(name, data)
        show_saved(fig, paths["png"])
        return paths["png"]

    def _figure_data(self, name: str, data) -> None:
        """``data`` (a DataFrame, or None) as ``figures/<name>.csv``, the data behind the figure."""
        if data is not None:
            data.to_csv(self.output_dir / "figures" / f"{name}.csv", index=False)
            self._record(self.output_dir / "figures" / f"{name}.csv", "figure-data")

    def draw(self, name: str, draw: Callable, *args, data=None, **kwargs) -> Path | None:
        """``self.figure(draw(*args, **kwargs), name, data)``, unless that figure was drawn before: a stored figure
        with its :func:`figure_key` (the function, the style, the arguments' content) whose code is unchanged
        (:mod:`ddrl.figure_store`: this machine's store, then the committed one) is copied and shown instead, without
        building or rendering anything (a store is read without writing). ``draw`` returning None saves nothing
        (returns None). A function or argument :func:`figure_key` cannot key is drawn every time, and so is one that
        opens a data file while drawing (an audit hook watches: what it read is not in the key). Each figure stored
        or copied is recorded in ``artifacts/<notebook>.figures.jsonl`` (what ``figure_store commit`` reads)."""
        try:
            key = figure_key(draw, args, kwargs, FIGURE_DPI)
        except TypeError:
            key = None
        d = self.output_dir / "figures"
        if key is not None and (hit := figure_store.find(key)) is not None:
            e, stored = hit
            d.mkdir(parents=True, exist_ok=True)
            try:
                for ext in ("png", "pdf"):
                    shutil.copyfile(stored.with_suffix(f".{ext}"), d / f"{name}.{ext}")
            except FileNotFoundError:  # the store deleted meanwhile: draw it
                pass
            else:
                for ext in ("png", "pdf"):
                    self._record(d / f"{name}.{ext}", "figure")
                self._figure_data(name, data)
                self._record_entry({**e, "name": name})
                show_png(d / f"{name}.png", e["dpi"])
                return d / f"{name}.png"
        fig, opened = reads_while(draw, *args, **kwargs)
        if fig is None:
            return None
        dpi = fig.dpi
        png = self.figure(fig, name, data)
        if key is not None and not opened:  # what a function read while drawing is not in its key
            e = figure_store.entry(name, key, code_deps(draw), dpi, png)
            figure_store.put(e, png)
            self._record_entry(e)
        return png

    def _record_entry(self, e: dict) -> None:
        with open(self.figure_log, "a") as f:
            f.write(json.dumps(e) + "\n")

    def table(self, df, name: str, floatfmt: str = ".3f") -> Path:
        """Save a DataFrame as CSV and Markdown."""
        d = self.output_dir / "tables"
        d.mkdir(parents=True, exist_ok=True)
        df.to_csv(d / f"{name}.csv", index=False)
        (d / f"{name}.md").write_text(df.to_markdown(index=False, floatfmt=floatfmt) + "\n")
        self._record(d / f"{name}.csv", "table")
        self._record(d / f"{name}.md", "table")
        return d / f"{name}.csv"

    def metrics(self, values: dict) -> Path:
        """Save the notebook's measured numbers (JSON) — the source of its generated conclusions."""
        path = self.output_dir / "metrics" / f"{self.notebook}.json"
        atomic_write_bytes(path, json.dumps(values, indent=2, sort_keys=True, default=float).encode())
        return self._record(path, "metrics")


def git_sha(cwd: str | Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the repository holding this package (None outside git)."""
    cwd = cwd or Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
