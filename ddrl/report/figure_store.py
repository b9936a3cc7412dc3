"""Figures drawn before, found again: this machine's store and the one committed beside the docs.

:meth:`ddrl.report.reporter.Reporter.draw` asks :func:`find` for a figure before drawing it. A stored figure is an
*entry* (a JSON object) and its PNG and PDF::

    {"name": ..., "key": figure_key, "deps": {module: sha256}, "files": {module: sha256}, "dpi": ...,
     "png": sha256, "pdf": sha256, "legibility": {"overlaps": [...], "legend_on_data": [...]}}

``key`` is :func:`ddrl.report.figure_keys.figure_key` (the function, the style, the libraries' versions, the arguments'
content) and ``deps`` the code the figure ran (:func:`ddrl.report.figure_keys.code_deps`, each module's syntax tree); an
entry serves only while every module of ``deps`` has that code (:func:`ddrl.report.figure_keys.deps_current`), so an edit
of a module a figure never ran, or of a docstring or comment, leaves it stored. ``files`` (the modules' bytes when
it was drawn) only spares parsing the unchanged ones. ``legibility`` is what :func:`ddrl.report.legibility.findings`
found when it was drawn, which a render that copies the figure records as its own check; an entry without it (stored
before the findings were kept) serves no render: the figure is drawn again. Two stores are asked, in order:

- **this machine's**: ``<cache>/figures/<key>-<deps>.{png,pdf,json}`` (:func:`ddrl.infra.storage.cache_root`), written
  by every figure drawn there (atomic writes, the JSON last; read without writing; never pruned: two checkouts may
  share it, and the folder can be deleted at any time);
- **the committed one**: ``docs/results/figures.json``, the entries of notebook 06's figures, whose files are
  ``docs/results/<name>.{png,pdf}`` (the figures docs/results.md shows); an entry serves only while both files still
  have its sha256. A fresh clone's first render copies them instead of drawing them. ``$DDRL_FIGURE_STORE`` names
  another folder, or, empty, none (every figure not in this machine's store is drawn).

``python -m ddrl.report.figure_store commit OUT`` writes the committed store from a render's output folder (the figures
it saved and the entries it recorded in ``artifacts/<notebook>.figures.jsonl``); ``make figures`` renders notebook
06 and commits. ``tests/test_study.py`` renders 06 with no store, drawing every figure, and fails while the
committed store differs from what it drew (key, code, bytes), naming the figures and the command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

from ddrl.report.figure_keys import deps_current, file_shas
from ddrl.infra.storage import REPO, atomic_write_bytes, cache_root, sha256_file

#: This machine's store, under :func:`ddrl.infra.storage.cache_root`.
FIGURE_CACHE = "figures"
#: The committed store: notebook 06's figures as docs/results.md shows them, and their entries.
COMMITTED = REPO / "docs" / "results"
MANIFEST = "figures.json"
#: The notebook whose figures are committed.
NOTEBOOK = "06_claims"
#: The render that ``make figures`` commits.
RENDER = "python -m ddrl.run.reproduce --preset default --only 06 --no-html"


def committed_dir() -> Path | None:
    """The committed store's folder: ``$DDRL_FIGURE_STORE`` where set (empty: none), else :data:`COMMITTED`."""
    d = os.environ.get("DDRL_FIGURE_STORE")
    return COMMITTED if d is None else (Path(d) if d else None)


def entry(name: str, key: str, deps: dict[str, str], dpi: float, png: Path, legibility: dict) -> dict:
    """The entry of the figure ``name`` saved as ``png`` and the PDF beside it, with its ``legibility`` findings."""
    return {"name": name, "key": key, "deps": deps, "files": file_shas(deps), "dpi": dpi,
            "png": sha256_file(png), "pdf": sha256_file(png.with_suffix(".pdf")), "legibility": legibility}


def _local_stem(key: str, deps: dict[str, str]) -> str:
    return f"{key}-{hashlib.sha256(json.dumps(deps, sort_keys=True).encode()).hexdigest()[:16]}"


def manifest(directory: Path | None = None) -> list[dict]:
    """The committed store's entries (none where it has no manifest)."""
    path = (directory or COMMITTED) / MANIFEST
    if not path.is_file():
        return []
    try:
        entries = json.loads(path.read_text())
        if not all({"name", "key", "deps", "dpi", "png", "pdf"} <= set(e) for e in entries):
            raise ValueError("an entry lacks one of name, key, deps, dpi, png, pdf")
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: not a figure store's manifest (a JSON list of entries: {e}); `make figures` "
                         "writes it again") from e
    return entries


def find(key: str) -> tuple[dict, Path] | None:
    """``(entry, its PNG)`` of a stored figure with ``key`` whose code is unchanged, this machine's store first, then
    the committed one (whose files must still have the entry's sha256); None if neither has one. An entry without its
    ``legibility`` findings is passed over (drawn again). The PDF lies beside the PNG."""
    for j in sorted((cache_root() / FIGURE_CACHE).glob(f"{key}-*.json")):
        try:
            e = json.loads(j.read_text())
        except (OSError, ValueError):  # deleted meanwhile, or another process's partial write (none: atomic)
            continue
        if "legibility" in e and deps_current(e["deps"], e.get("files")):
            return e, j.with_suffix(".png")
    d = committed_dir()
    for e in manifest(d) if d is not None else []:
        png = d / f"{e['name']}.png"
        if (e["key"] == key and "legibility" in e and deps_current(e["deps"], e.get("files")) and png.is_file()
                and png.with_suffix(".pdf").is_file() and sha256_file(png) == e["png"]
                and sha256_file(png.with_suffix(".pdf")) == e["pdf"]):
            return e, png
    return None


def put(e: dict, png: Path) -> None:
    """Keep the figure of entry ``e`` (saved as ``png`` and the PDF beside it) in this machine's store."""
    stem = cache_root() / FIGURE_CACHE / _local_stem(e["key"], e["deps"])
    for ext in ("png", "pdf"):
        atomic_write_bytes(stem.with_suffix(f".{ext}"), png.with_suffix(f".{ext}").read_bytes())
    atomic_write_bytes(stem.with_suffix(".json"), json.dumps(e).encode())


def render_dir(output_dir: Path, notebook: str = NOTEBOOK) -> Path:
    """Where the notebook of a render into ``output_dir`` wrote its figures: its own folder
    ``<output_dir>/<notebook>/`` (:func:`ddrl.run.reproduce.notebook_dir`), or ``output_dir`` itself when the notebook
    was run with it as its ``output_dir`` (by hand, papermill)."""
    own = Path(output_dir) / notebook
    return own if (own / "artifacts").is_dir() else Path(output_dir)


def recorded(output_dir: Path, notebook: str = NOTEBOOK) -> list[dict]:
    """The entries a render recorded (``<notebook's folder>/artifacts/<notebook>.figures.jsonl``, :func:`render_dir`),
    sorted by name: every figure it drew or copied whose function draws from its arguments alone."""
    log = render_dir(output_dir, notebook) / "artifacts" / f"{notebook}.figures.jsonl"
    if not log.is_file():
        raise FileNotFoundError(f"{log}: no figure entries; render the notebook first ({RENDER})")
    return sorted((json.loads(x) for x in log.read_text().splitlines() if x.strip()), key=lambda e: e["name"])


def same(e: dict | None) -> dict | None:
    """What two entries of one figure must share to be the same figure: all but ``files`` (the modules' bytes, which
    an edit of their prose changes)."""
    return None if e is None else {k: v for k, v in e.items() if k != "files"}


def commit(output_dir: Path, directory: Path = COMMITTED, notebook: str = NOTEBOOK) -> list[str]:
    """Make the committed store the figures of the render in ``output_dir``: each recorded figure's PNG and PDF
    copied to ``directory/<name>.*`` and the manifest rewritten (sorted by name; entries of figures the render did
    not record are dropped). Returns the names whose files or entries changed."""
    entries = recorded(output_dir, notebook)
    names = [e["name"] for e in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"{output_dir}: two figures recorded under one name: {sorted(names)}")
    before = {e["name"]: e for e in manifest(directory)}
    changed = []
    for e in entries:
        src = render_dir(output_dir, notebook) / "figures" / f"{e['name']}.png"
        if sha256_file(src) != e["png"] or sha256_file(src.with_suffix(".pdf")) != e["pdf"]:
            raise ValueError(f"{src}: the file is not the one its entry records (another render wrote it since)")
        if same(before.get(e["name"])) != same(e) or not (directory / src.name).is_file():
            changed.append(e["name"])
        for ext in ("png", "pdf"):
            dst = directory / f"{e['name']}.{ext}"
            if not dst.is_file() or sha256_file(dst) != e[ext]:
                atomic_write_bytes(dst, src.with_suffix(f".{ext}").read_bytes())
    atomic_write_bytes(directory / MANIFEST, (json.dumps(entries, indent=1, sort_keys=True) + "\n").encode())
    return changed + sorted(set(before) - set(names))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m ddrl.report.figure_store", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("commit", help="the committed store := the figures of a render of notebook 06")
    c.add_argument("output_dir", type=Path, help=f"the render's output folder (e.g. outputs/default after `{RENDER}`)")
    args = ap.parse_args(argv)
    changed = commit(args.output_dir)
    print(f"{COMMITTED / MANIFEST}: {len(manifest())} figures, changed: {', '.join(changed) or 'none'}")


if __name__ == "__main__":
    main()
