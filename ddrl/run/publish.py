"""Publish the executed notebooks where a reader sees them without running anything: ``docs/notebooks/``.

    make publish                     # = python -m ddrl.run.publish --preset default --from outputs/default

``make reproduce`` executes the six notebooks into ``outputs/<preset>/`` (gitignored). This module copies those
executed notebooks, figures embedded, into the committed folder ``docs/notebooks/``, which GitHub renders, each
with a header cell naming the commit and preset it was executed at. It executes nothing: it refuses, naming what
is wrong, when an executed notebook is missing, was executed at another commit or on another preset, or its code
differs from the current source (``notebooks/NN_*.py``). ``tests/test_published.py`` checks the committed copies
against the sources the same way (:func:`stale_cells`), so a copy left behind by an edit fails the tests.

To keep the committed folder small, each copy is slimmed (:func:`slim`): a figure keeps its PNG only (no PDF or
SVG twin), re-encoded with a 256-colour palette where that is smaller and the figure is opaque (:func:`palette_png`:
a third of the bytes for notebook 06's 27 figures, same pixel size; the full-colour figures stay in
``outputs/<preset>/<notebook>/figures/``), widget views and widget state are dropped (their ``text/plain`` fallback stays), and
papermill's per-cell timing metadata and jupytext's pairing metadata go (the published copy is no notebook to edit).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import sys
from pathlib import Path

import jupytext
import nbformat
from PIL import Image

from ddrl.infra.storage import REPO, atomic_write_bytes, git_sha
from ddrl.report.legibility import run_findings
from ddrl.run.reproduce import notebook_dir

SOURCE_DIR = REPO / "notebooks"
PUBLISHED_DIR = REPO / "docs" / "notebooks"
#: the tag of the header cell :func:`header_cell` writes (and the test reads)
HEADER_TAG = "published-header"
#: papermill's tag on the cell it injects with the preset's parameters (kept: it shows the values that ran)
INJECTED_TAG = "injected-parameters"
#: output bundles a published copy does not keep: a figure's vector twins and widget views (no live kernel)
DROPPED_MIME = ("application/pdf", "image/svg+xml", "application/vnd.jupyter.widget-view+json")


class PublishError(RuntimeError):
    """Nothing was published: the executed notebooks are missing, stale or from another commit or preset."""


def source_stems(source_dir: Path = SOURCE_DIR) -> list[str]:
    """The numbered notebooks' names (``01_frequency_and_bayes`` ...), from their ``.py`` sources."""
    return sorted(p.stem for p in source_dir.glob("[0-9][0-9]_*.py"))


def source_code(stem: str, source_dir: Path = SOURCE_DIR) -> list[str]:
    """The code cells of ``notebooks/<stem>.py`` as jupytext reads them: what a run of the notebook executes."""

    nb = jupytext.read(source_dir / f"{stem}.py")
    return [c.source for c in nb.cells if c.cell_type == "code"]


def executed_code(nb) -> list[str]:
    """The code cells of an executed or published notebook, less papermill's injected-parameters cell."""
    return [c.source for c in nb.cells
            if c.cell_type == "code" and INJECTED_TAG not in c.get("metadata", {}).get("tags", [])]


def stale_cells(stem: str, nb, source_dir: Path = SOURCE_DIR) -> str | None:
    """None when ``nb``'s code cells equal the source's, else a sentence naming the first cell that differs."""
    have, want = executed_code(nb), source_code(stem, source_dir)
    if have == want:
        return None
    for i, (a, b) in enumerate(zip(have, want)):
        if a != b:
            return f"code cell {i + 1} differs from notebooks/{stem}.py (starts {b[:60]!r}, copy has {a[:60]!r})"
    return f"{len(have)} code cells against {len(want)} in notebooks/{stem}.py"


def check_executed(out_dir: Path, preset: str, sha: str | None, stems: list[str],
                   source_dir: Path = SOURCE_DIR) -> dict[str, dict]:
    """The manifest entries of ``out_dir`` (``make reproduce``'s output) for every notebook of ``stems``, after
    checking each: executed file present, run at commit ``sha`` on ``preset``, code equal to the source, every figure
    of its run legible (:func:`ddrl.report.legibility.run_findings`). Every problem is collected and raised as one
    :class:`PublishError` before anything is written."""

    manifest_path = out_dir / "manifest.json"
    if not manifest_path.is_file():
        raise PublishError(f"{manifest_path}: missing; run `make reproduce PRESET={preset}` first")
    if sha is None:
        raise PublishError("not inside a git checkout: a published notebook must name the commit it ran at")
    runs = json.loads(manifest_path.read_text()).get("notebooks", {})
    problems, entries = [], {}
    for stem in stems:
        executed, run = out_dir / f"{stem}.ipynb", runs.get(stem)
        if run is None or not executed.is_file():
            problems.append(f"{stem}: not executed in {out_dir} (no {'manifest entry' if run is None else executed.name})")
            continue
        if run.get("git_sha") != sha:
            problems.append(f"{stem}: executed at commit {str(run.get('git_sha'))[:12]}, HEAD is {sha[:12]}")
        ran_preset = run.get("parameters", {}).get("preset")
        if ran_preset != preset:
            problems.append(f"{stem}: executed on preset {ran_preset!r}, not {preset!r}")
        stale = stale_cells(stem, nbformat.read(executed, as_version=4), source_dir)
        if stale:
            problems.append(f"{stem}: {stale}")
        for figure, found in run_findings(notebook_dir(out_dir, stem), stem).items():
            problems.append(f"{stem}: figure {figure} is not legible: {'; '.join(found)}")
        entries[stem] = run
    if problems:
        raise PublishError("nothing published; rerun `make reproduce PRESET=" + preset + "`:\n  " + "\n  ".join(problems))
    return entries


def palette_png(b64: str) -> str:
    """A base64 PNG re-encoded with a 256-colour palette (median cut), or unchanged where PIL cannot read it, the
    figure has any transparent pixel (the palette would lose it) or the palette encoding is not smaller."""
    raw = base64.b64decode(b64)
    try:
        im = Image.open(io.BytesIO(raw))
    except OSError:  # not an image PIL reads: published as it is
        return b64
    if im.mode not in ("RGB", "RGBA") or (im.mode == "RGBA" and im.getchannel("A").getextrema() != (255, 255)):
        return b64
    buf = io.BytesIO()
    im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buf, "PNG", optimize=True)
    return base64.b64encode(buf.getvalue()).decode() + "\n" if len(buf.getvalue()) < len(raw) else b64


def slim(nb):
    """``nb`` without what a reader of a rendered copy cannot use (module docstring): PDF/SVG twins of PNG
    figures, widget views and state, papermill's per-cell metadata, jupytext's pairing. Edits ``nb`` in place."""
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)
    nb.metadata.get("papermill", {}).pop("input_path", None)
    nb.metadata.get("papermill", {}).pop("output_path", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []):
            data = out.get("data")
            if not data:
                continue
            for mime in DROPPED_MIME:
                if mime in data and len(data) > 1:
                    data.pop(mime)
            if "image/png" in data:
                data["image/png"] = palette_png(data["image/png"])
            out.get("metadata", {}).pop("application/vnd.jupyter.widget-view+json", None)
    return nb


def header_cell(stem: str, sha: str, preset: str, seconds: float | None):
    """The markdown cell a published copy starts with: what it is, the commit and preset, where its source is."""

    took = f" in {seconds:.0f} s" if seconds else ""
    text = (f"> **Published copy, executed by `make reproduce` on the `{preset}` preset at commit `{sha[:12]}`{took}, "
            f"copied here by `make publish`.** The source is [`notebooks/{stem}.py`](../../notebooks/{stem}.py) "
            f"(paired with `notebooks/{stem}.ipynb`); to run it yourself: `make reproduce`, or open the source in "
            f"JupyterLab. Interactive widgets need a live kernel and show here as their last static figure.")
    return nbformat.v4.new_markdown_cell(text, metadata={"tags": [HEADER_TAG]})


def published_copy(executed: Path, stem: str, sha: str, preset: str, seconds: float | None):
    """The executed notebook at ``executed`` as published: slimmed, with its header cell first."""

    nb = slim(nbformat.read(executed, as_version=4))
    nb.cells.insert(0, header_cell(stem, sha, preset, seconds))
    return nb


def publish(out_dir: Path, preset: str, dest: Path = PUBLISHED_DIR, source_dir: Path = SOURCE_DIR) -> list[Path]:
    """Check every executed notebook of ``out_dir`` (:func:`check_executed`), then write each published copy into
    ``dest`` (and remove published copies of notebooks that no longer exist). Returns the paths written."""

    sha, stems = git_sha(), source_stems(source_dir)
    if not stems:
        raise PublishError(f"{source_dir}: no numbered notebooks (NN_*.py)")
    runs = check_executed(out_dir, preset, sha, stems, source_dir)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for stem in stems:
        nb = published_copy(out_dir / f"{stem}.ipynb", stem, sha, preset, runs[stem].get("seconds"))
        path = dest / f"{stem}.ipynb"
        atomic_write_bytes(path, (nbformat.writes(nb) + "\n").encode())
        written.append(path)
    for old in dest.glob("[0-9][0-9]_*.ipynb"):
        if old.stem not in stems:
            old.unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.run.publish", description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default", help="the preset the notebooks must have run on (default: default)")
    ap.add_argument("--from", dest="out_dir", type=Path, default=None, help="make reproduce's output (default: outputs/<preset>)")
    ap.add_argument("--to", dest="dest", type=Path, default=PUBLISHED_DIR, help="default: docs/notebooks")
    args = ap.parse_args(argv)
    out_dir = (args.out_dir or REPO / "outputs" / args.preset).resolve()
    try:
        written = publish(out_dir, args.preset, args.dest.resolve())
    except PublishError as e:
        print(f"ddrl.run.publish: {e}", file=sys.stderr)
        return 2
    total = sum(p.stat().st_size for p in written)
    for p in written:
        print(f"{p}: {p.stat().st_size / 1024:.0f} KiB")
    print(f"ddrl.run.publish: {len(written)} notebooks, {total / 1024 / 1024:.1f} MiB in {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
