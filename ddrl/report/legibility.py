"""Is a figure legible? Its text boxes, as matplotlib lays them out, must not overlap (issue 95).

:func:`overlaps` draws the figure once and asks every text it shows for its window extent: titles, axis labels, tick
labels, annotations and texts, legends (each as one box), the figure's own texts and legends. Two boxes that overlap
by more than ``tol`` pixels in both directions are a finding, named by what each box says. :func:`legend_on_data`
names the legends that sit on an axes' lines or markers (a softer finding: "clear of data where feasible").

:meth:`ddrl.report.reporter.Reporter.figure` checks every figure it draws (:func:`findings`) and records the findings
in ``artifacts/<notebook>.legibility.jsonl``; a stored figure (:mod:`ddrl.report.figure_store`) keeps the findings of
when it was drawn in its entry, and a render that copies it records those. ``tests/test_study.py`` draws every figure
of notebook 06 (the committed ones, ``docs/results/``), ``tests/test_notebooks.py`` reads the logs of the smoke batch
of every notebook (:func:`run_findings`, which ``make publish`` also asks of the batch it publishes), and
``tests/test_study_figures.py`` draws the committed figures no notebook draws: each fails on
an overlap or a legend on the data, naming the figure and the texts.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from matplotlib.text import Text


def _label(artist) -> str:
    if isinstance(artist, Text):
        return repr(artist.get_text()[:40])
    return type(artist).__name__.lower()


def _shown(t: Text) -> bool:
    return t.get_visible() and bool(t.get_text().strip())


def _ticklabels(axis) -> list[Text]:
    """The tick labels an axis draws (ticks within its view limits)."""
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for tick in axis.get_major_ticks() + axis.get_minor_ticks():
        loc = tick.get_loc()
        if loc is None or not (lo - 1e-9 * max(1.0, abs(lo)) <= loc <= hi + 1e-9 * max(1.0, abs(hi))):
            continue
        out += [t for t in (tick.label1, tick.label2) if _shown(t)]
    return out


def text_artists(fig) -> list:
    """Every text the figure shows, a legend as one artist (its own texts are laid out by it)."""
    arts = [t for t in fig.texts if _shown(t)]
    arts += [lg for lg in fig.legends if lg.get_visible()]
    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        t = getattr(fig, name, None)
        if t is not None and _shown(t):
            arts.append(t)
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        arts += [t for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label) if _shown(t)]
        arts += _ticklabels(ax.xaxis) + _ticklabels(ax.yaxis)
        arts += [t for t in ax.texts if _shown(t)]
        lg = ax.get_legend()
        if lg is not None and lg.get_visible():
            arts.append(lg)
    return list({id(a): a for a in arts}.values())  # a suptitle is also one of the figure's texts


def _box(artist, renderer) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]] | None:
    """The artist's box as drawn, its four corners (pixels) and its two edge directions: a rotated text's own
    rectangle (a slanted tick label's), not the upright box around it, which covers its neighbours' where the
    letters do not; a legend's or an upright text's window extent. None for an empty box."""
    bb = artist.get_window_extent(renderer)
    if not (bb.width > 0 and bb.height > 0):
        return None
    angle = artist.get_rotation() if isinstance(artist, Text) else 0.0
    w, h = bb.width, bb.height
    if angle % 90:  # the upright box of a rotated rectangle shares its centre; the rectangle is the text's unrotated size
        artist.set_rotation(0)
        upright = artist.get_window_extent(renderer)
        artist.set_rotation(angle)
        w, h = upright.width, upright.height
    a = np.deg2rad(angle if angle % 90 else 0.0)
    u, v = np.array([np.cos(a), np.sin(a)]), np.array([-np.sin(a), np.cos(a)])
    c = np.array([(bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2])
    return np.array([c + sx * w / 2 * u + sy * h / 2 * v for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]), (u, v)


def _overlap(p, q, tol: float) -> bool:
    """Whether two boxes of :func:`_box` overlap by more than ``tol`` pixels along each of their edge directions
    (two rectangles are apart exactly where one of those directions separates them); for upright boxes: in x and y."""
    (pc, pd), (qc, qd) = p, q
    for axis in (*pd, *qd):
        a, b = pc @ axis, qc @ axis
        if min(a.max(), b.max()) - max(a.min(), b.min()) <= tol:
            return False
    return True


def overlaps(fig, tol: float = 1.0) -> list[str]:
    """The pairs of the figure's text boxes (rotated texts: their own rectangles, :func:`_box`) that overlap by more
    than ``tol`` pixels both ways, as ``"'title' overlaps 'x label'"``; empty for a legible figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(a, box) for a in text_artists(fig) if (box := _box(a, renderer)) is not None]
    out = []
    for i, (a, p) in enumerate(boxes):
        for b, q in boxes[i + 1:]:
            if _overlap(p, q, tol):
                out.append(f"{_label(a)} overlaps {_label(b)}")
    return out


def legend_on_data(fig) -> list[str]:
    """The legends of an axes that cover one of its lines' or markers' points where the axes draws them (``loc="best"``
    could not avoid them, or a fixed place chose them); a point outside the axes' view is clipped, not drawn, so a
    legend placed outside the axes covers none. Data are what is drawn in data coordinates: a guide across the axes
    (``axhline``, ``axvline``: a line partly in axes coordinates) is not data."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        lg = ax.get_legend()
        if lg is None or not lg.get_visible():
            continue
        bb, view = lg.get_window_extent(renderer), ax.get_window_extent(renderer)

        def covered(xy) -> int:
            return int(sum(bb.contains(x, y) and view.contains(x, y) for x, y in xy))
        for line in ax.get_lines():
            if line.get_transform() is not ax.transData:  # a guide (axhline, axvline), not data
                continue
            xy = line.get_transform().transform(line.get_xydata()) if len(line.get_xydata()) else []
            if line.get_linestyle() not in ("None", "", " ") and len(xy) > 1:  # the segments between points too
                t = np.linspace(0, 1, 21)[:, None]
                xy = np.concatenate([a + t * (b - a) for a, b in zip(xy[:-1], xy[1:])])
            if covered(xy):
                out.append(f"the legend of {ax.get_title()!r} covers {line.get_label()!r}")
                break
        else:
            for coll in ax.collections:  # scatter plots' markers
                offsets = coll.get_offsets()
                if not len(offsets) or not coll.get_visible():
                    continue
                hit = covered(coll.get_offset_transform().transform(offsets))
                if hit:
                    out.append(f"the legend of {ax.get_title()!r} covers {hit} marker(s) of {coll.get_label()!r}")
                    break
    return out


def findings(fig) -> dict[str, list[str]]:
    """What :func:`overlaps` and :func:`legend_on_data` find in ``fig``: ``{"overlaps": [...], "legend_on_data":
    [...]}``, both empty for a legible figure (the record the Reporter keeps of each figure it draws)."""
    return {"overlaps": overlaps(fig), "legend_on_data": legend_on_data(fig)}


def _apart(p, q, tol: float = 1.0) -> bool:
    return min(p.x1, q.x1) - max(p.x0, q.x0) <= tol or min(p.y1, q.y1) - max(p.y0, q.y0) <= tol


def spread(fig, texts, step: float = 2.0, rounds: int = 100) -> None:
    """Nudge annotations placed in offset points (``textcoords="offset points"``) apart until none overlaps another:
    of two that overlap, the upper moves up by ``step`` points, the lower down. Call it after the figure's layout."""
    texts = list(texts)
    if len(texts) < 2:
        return
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for _ in range(rounds):
        boxes = [t.get_window_extent(renderer) for t in texts]
        pairs = [(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts)) if not _apart(boxes[i], boxes[j])]
        if not pairs:
            return
        for i, j in pairs:
            lo, hi = (i, j) if boxes[i].y0 <= boxes[j].y0 else (j, i)
            for k, sign in ((hi, 1), (lo, -1)):
                x, y = texts[k].xyann
                texts[k].xyann = (x, y + sign * step / 2)


def run_findings(notebook_dir: str | Path, stem: str) -> dict[str, list[str]]:
    """The figures of one notebook's run (``<notebook_dir>/figures/*.png``) whose text boxes overlap or whose legend
    covers data, as its Reporter recorded them (``artifacts/<stem>.legibility.jsonl``: drawn and checked, or copied
    from a store with the findings of when they were drawn); a figure saved with no record is a finding too, and so
    is a missing log. ``{}``: every figure of the run is legible."""
    notebook_dir = Path(notebook_dir)
    log = notebook_dir / "artifacts" / f"{stem}.legibility.jsonl"
    if not log.is_file():
        return {"(the notebook)": [f"{log} is missing: its Reporter recorded no legibility check"]}
    checked = {r["name"]: r for r in map(json.loads, log.read_text().splitlines())}
    out = {n: r["overlaps"] + r["legend_on_data"] for n, r in checked.items() if r["overlaps"] or r["legend_on_data"]}
    for png in sorted((notebook_dir / "figures").glob("*.png")):
        if png.stem not in checked:
            out[png.stem] = ["saved without a legibility check (save it through Reporter.figure or Reporter.draw)"]
    return out
