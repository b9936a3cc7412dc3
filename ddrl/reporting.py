"""Where a notebook's results go: figures, tables, metrics, and a content-addressed cache.

Every artifact lands under ``output_dir`` (``outputs/<preset>/`` when run by :mod:`ddrl.reproduce`):

- ``figures/<name>.png`` and ``.pdf`` and the plotted data as ``figures/<name>.csv``
- ``tables/<name>.csv`` and ``tables/<name>.md``
- ``metrics/<notebook>.json``: the numbers the notebook's "What we measured" cell is generated from
- ``artifacts/<notebook>.jsonl``: one line per file written, read by the runner to build ``manifest.json``

Expensive results (sampled rollouts, trained runs) go through :func:`cached`, keyed by the sha256 of their
inputs, so a rerun with the same parameters reuses them.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]


def cache_root() -> Path:
    """``$DDRL_CACHE_DIR`` or ``<repo>/.cache`` (gitignored)."""
    return Path(os.environ.get("DDRL_CACHE_DIR", REPO / ".cache"))


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_key(obj: Any) -> str:
    """A stable sha256 of a JSON-serialisable description of a computation's inputs."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (never a half-written file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached(key: Any, fn: Callable[[], Any], namespace: str = "results", cache_dir: str | Path | None = None) -> Any:
    """Return ``fn()``, computing it only if no result is stored under ``(namespace, key)``.

    ``key`` describes everything the result depends on (parameters, model hash, code version); its
    sha256 names the file. Results are pickled: only load caches you made yourself.
    """
    path = Path(cache_dir or cache_root()) / namespace / f"{content_key(key)}.pkl"
    if path.is_file():
        with open(path, "rb") as f:
            return pickle.load(f)
    value = fn()
    atomic_write_bytes(path, pickle.dumps(value))
    return value


class Reporter:
    """Writes one notebook's artifacts under ``output_dir`` and records each in ``artifacts/<notebook>.jsonl``."""

    def __init__(self, output_dir: str | Path, notebook: str):
        self.output_dir = Path(output_dir)
        self.notebook = notebook
        self.log = self.output_dir / "artifacts" / f"{notebook}.jsonl"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.log.write_text("")  # a rerun of the notebook replaces its artifact list

    def _record(self, path: Path, kind: str) -> Path:
        with open(self.log, "a") as f:
            f.write(json.dumps({"path": str(path.relative_to(self.output_dir)), "kind": kind}) + "\n")
        return path

    def figure(self, fig, name: str, data=None) -> Path:
        """Save ``fig`` as PNG and PDF (and ``data``, a DataFrame, as the CSV behind it)."""
        d = self.output_dir / "figures"
        d.mkdir(parents=True, exist_ok=True)
        for ext in ("png", "pdf"):
            fig.savefig(d / f"{name}.{ext}", dpi=150, bbox_inches="tight")
            self._record(d / f"{name}.{ext}", "figure")
        if data is not None:
            data.to_csv(d / f"{name}.csv", index=False)
            self._record(d / f"{name}.csv", "figure-data")
        return d / f"{name}.png"

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
