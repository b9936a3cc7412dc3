"""Is a figure legible? Its text boxes, as matplotlib lays them out, must not overlap (issue 95).

:func:`overlaps` draws the figure once and asks every text it shows for its window extent: titles, axis labels, tick
labels, annotations and texts, legends (each as one box), the figure's own texts and legends. Two boxes that overlap
by more than ``tol`` pixels in both directions are a finding, named by what each box says. :func:`legend_on_data`
names the legends that sit on an axes' lines or markers (a softer finding: "clear of data where feasible").

:meth:`ddrl.report.reporter.Reporter.figure` checks every figure it draws and records the findings in
``artifacts/<notebook>.legibility.jsonl``; ``tests/test_study.py`` draws every figure of notebook 06 (the committed
ones, ``docs/results/``) and fails on an overlap, naming the figure and the texts.
"""

from __future__ import annotations

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


def overlaps(fig, tol: float = 1.0) -> list[str]:
    """The pairs of the figure's text boxes that overlap by more than ``tol`` pixels both ways, as
    ``"'title' overlaps 'x label'"``; empty for a legible figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = []
    for a in text_artists(fig):
        bb = a.get_window_extent(renderer)
        if bb.width > 0 and bb.height > 0:
            boxes.append((a, bb))
    out = []
    for i, (a, p) in enumerate(boxes):
        for b, q in boxes[i + 1:]:
            w = min(p.x1, q.x1) - max(p.x0, q.x0)
            h = min(p.y1, q.y1) - max(p.y0, q.y0)
            if w > tol and h > tol:
                out.append(f"{_label(a)} overlaps {_label(b)}")
    return out


def legend_on_data(fig) -> list[str]:
    """The legends inside an axes that cover one of its lines' or markers' points (``loc="best"`` could not avoid
    them, or a fixed place chose them)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        lg = ax.get_legend()
        if lg is None or not lg.get_visible():
            continue
        bb = lg.get_window_extent(renderer)
        for line in ax.get_lines():
            xy = line.get_transform().transform(line.get_xydata()) if len(line.get_xydata()) else []
            if line.get_linestyle() not in ("None", "", " ") and len(xy) > 1:  # the segments between points too
                t = np.linspace(0, 1, 21)[:, None]
                xy = np.concatenate([a + t * (b - a) for a, b in zip(xy[:-1], xy[1:])])
            if any(bb.contains(x, y) for x, y in xy):
                out.append(f"the legend of {ax.get_title()!r} covers {line.get_label()!r}")
                break
        else:
            for coll in ax.collections:  # scatter plots' markers
                offsets = coll.get_offsets()
                if not len(offsets) or not coll.get_visible():
                    continue
                xy = coll.get_offset_transform().transform(offsets)
                hit = int(sum(bb.contains(x, y) for x, y in xy))
                if hit:
                    out.append(f"the legend of {ax.get_title()!r} covers {hit} marker(s) of {coll.get_label()!r}")
                    break
    return out


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
