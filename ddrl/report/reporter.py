"""Where a notebook's results go: figures (PNG and PDF, and the data behind them), tables (CSV and Markdown) and
metrics (JSON), each recorded in ``artifacts/<notebook>.jsonl`` for the runner's manifest.

Every artifact lands under ``output_dir`` (``outputs/<preset>/`` when run by :mod:`ddrl.run.reproduce`):

- ``figures/<name>.png`` and ``.pdf`` and the plotted data as ``figures/<name>.csv``
- ``tables/<name>.csv`` and ``tables/<name>.md``
- ``metrics/<notebook>.json``: the numbers the notebook's "What we measured" cell is generated from
- ``artifacts/<notebook>.jsonl``: one line per file written, read by the runner to build ``manifest.json``

A figure drawn by :meth:`Reporter.draw` is kept by its content (:mod:`ddrl.report.figure_store`: this machine's store
and the committed one), so a render copies a figure whose inputs, code and style have not changed.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Callable

from ddrl.report import figure_store
from ddrl.report.legibility import findings
from ddrl.report.figure_keys import code_deps, figure_key, reads_while
from ddrl.infra.storage import atomic_write_bytes

#: The resolution every saved figure is written at.
FIGURE_DPI = 150


def write_named(path: str | Path, data: bytes) -> Path:
    """``data`` written to ``path`` atomically (:func:`ddrl.infra.storage.atomic_write_bytes`: a temporary sibling,
    fsync, rename; never a truncated file, and nothing left behind when it fails), and an ``OSError`` while writing
    that does not name ``path`` re-raised naming it (a full disk already does)."""
    path = Path(path)
    try:
        atomic_write_bytes(path, data)
    except OSError as e:
        if str(path) in str(e):
            raise
        raise OSError(e.errno, f"{e.strerror or e} while writing {path}", str(path)) from e
    return path


def save_figure(fig, out_dir: str | Path, name: str) -> dict[str, Path]:
    """Save ``fig`` as ``<out_dir>/<name>.png`` and ``.pdf`` (150 dpi, tight): the one way figures are written.
    The PDF carries no creation date, so rendering the same figure again writes the same bytes (a committed
    figure changes in git only when what it shows does)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {ext: out_dir / f"{name}.{ext}" for ext in ("png", "pdf")}
    for ext, p in paths.items():  # drawn into memory, then written whole (:func:`write_named`)
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=FIGURE_DPI, bbox_inches="tight",
                    metadata={"CreationDate": None} if ext == "pdf" else None)
        write_named(p, buf.getvalue())
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
        self.figure_log = self.log.with_suffix(".figures.jsonl")  # the stored figures' entries (ddrl.report.figure_store)
        self.legibility_log = self.log.with_suffix(".legibility.jsonl")  # each figure's overlapping texts
        self.legible: dict[str, dict] = {}  # name -> the findings of each figure drawn here
        self.log.parent.mkdir(parents=True, exist_ok=True)
        for log in (self.log, self.figure_log, self.legibility_log):
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
        self.legible[name] = findings(fig)  # after saving: the check's draw cannot touch the files
        self._record_legibility(name, self.legible[name])
        show_saved(fig, paths["png"])
        return paths["png"]

    def _record_legibility(self, name: str, found: dict, stored: bool = False) -> None:
        """One line of ``artifacts/<notebook>.legibility.jsonl``: the figure's findings (:mod:`ddrl.report.legibility`),
        ``stored`` where they are those its store entry kept from when it was drawn (the figure was copied)."""
        with open(self.legibility_log, "a") as f:
            f.write(json.dumps({"name": name, **found, **({"stored": True} if stored else {})}) + "\n")

    def _figure_data(self, name: str, data) -> None:
        """``data`` (a DataFrame, or None) as ``figures/<name>.csv``, the data behind the figure."""
        if data is not None:
            self._record(write_named(self.output_dir / "figures" / f"{name}.csv", data.to_csv(index=False).encode()),
                         "figure-data")

    def draw(self, name: str, draw: Callable, *args, data=None, **kwargs) -> Path | None:
        """``self.figure(draw(*args, **kwargs), name, data)``, unless that figure was drawn before: a stored figure
        with its :func:`figure_key` (the function, the style, the arguments' content) whose code is unchanged
        (:mod:`ddrl.report.figure_store`: this machine's store, then the committed one) is copied and shown instead, without
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
                copies = {ext: stored.with_suffix(f".{ext}").read_bytes() for ext in ("png", "pdf")}
            except FileNotFoundError:  # the store deleted meanwhile: draw it
                pass
            else:
                for ext, data_ in copies.items():
                    self._record(write_named(d / f"{name}.{ext}", data_), "figure")
                self._figure_data(name, data)
                self._record_legibility(name, e["legibility"], stored=True)
                self._record_entry({**e, "name": name})
                show_png(d / f"{name}.png", e["dpi"])
                return d / f"{name}.png"
        fig, opened = reads_while(draw, *args, **kwargs)
        if fig is None:
            return None
        dpi = fig.dpi
        png = self.figure(fig, name, data)
        if key is not None and not opened:  # what a function read while drawing is not in its key
            e = figure_store.entry(name, key, code_deps(draw), dpi, png, self.legible[name])
            figure_store.put(e, png)
            self._record_entry(e)
        return png

    def _record_entry(self, e: dict) -> None:
        with open(self.figure_log, "a") as f:
            f.write(json.dumps(e) + "\n")

    def table(self, df, name: str, floatfmt: str = ".3f") -> Path:
        """Save a DataFrame as CSV and Markdown."""
        d = self.output_dir / "tables"
        self._record(write_named(d / f"{name}.csv", df.to_csv(index=False).encode()), "table")
        self._record(write_named(d / f"{name}.md", (df.to_markdown(index=False, floatfmt=floatfmt) + "\n").encode()),
                     "table")
        return d / f"{name}.csv"

    def metrics(self, values: dict) -> Path:
        """Save the notebook's measured numbers (JSON) — the source of its generated conclusions."""
        path = self.output_dir / "metrics" / f"{self.notebook}.json"
        write_named(path, json.dumps(values, indent=2, sort_keys=True, default=float).encode())
        return self._record(path, "metrics")

    def skipped(self, section: str, why: str, file: str | Path | None = None) -> None:
        """Record that ``section`` of the notebook was left out and why (data absent by design: offline, an optional
        download not made), with the file it needed: the runner prints it in the batch log and the summary table and
        keeps it in the manifest, so a notebook that skipped a part never reads as a plain "ok". Damaged data is an
        error, never a skip (:class:`ddrl.infra.datafiles.ChecksumError` propagates)."""
        entry = {"kind": "skipped", "section": section, "why": str(why), "file": None if file is None else str(file)}
        with open(self.log, "a") as f:
            f.write(json.dumps(entry) + "\n")
        print(f"skipped: {section}: {f'{file}: ' if file else ''}{why}")
