"""One plotting style for every figure: seaborn, each method's colour from the method table, no TeX needed.

Importing this module applies the style (:func:`set_style`), so a figure looks the same wherever it is drawn: in a
notebook, by a module's ``figure`` command into ``docs/results/``, in a test. Until 2026-12-03 only the notebooks
applied it, and every committed figure was drawn in matplotlib's defaults.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.rcParams["text.usetex"] = False

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from ddrl import methods  # noqa: E402
from ddrl.report.stats import percentile_bootstrap  # noqa: E402
from ddrl.infra.storage import REPO  # noqa: E402
from ddrl.report.reporter import FIGURE_DPI, save_figure  # noqa: E402

#: Colours of what is not a method (a method's colour is its row's in ``ddrl/methods.yaml``, :func:`color`).
COLORS = {
    "correct": "#2ca02c",
    "incorrect": "#d62728",
    "positive": "#2ca02c",
    "negative": "#d62728",
}

#: The methods' words (legends, tables, sentences), from the one method table ``ddrl/methods.yaml``.
METHOD_LABELS = {name: m.words for name, m in methods.TABLE.items()}


def set_style(context: str = "notebook") -> None:
    """The companion's seaborn theme: applied when this module is imported; a notebook calls it at its top to say
    so (or to pick another seaborn ``context``)."""
    sns.set_theme(context=context, style="whitegrid", palette="colorblind")
    matplotlib.rcParams.update({"figure.dpi": 110, "savefig.dpi": FIGURE_DPI, "axes.titleweight": "bold"})


set_style()


def save_docs_figure(fig, name: str) -> dict[str, Path]:
    """Save ``fig`` as ``docs/results/<name>.{png,pdf}`` (:func:`ddrl.report.reporter.save_figure`) and close it: how the
    study modules' ``figure`` commands write the committed figures."""
    paths = save_figure(fig, REPO / "docs" / "results", name)
    plt.close(fig)
    return paths


def color(name: str) -> str:
    """A method's colour (``ddrl/methods.yaml``), else one of :data:`COLORS` ("correct", ...), else dark grey."""
    return methods.color(name, COLORS.get(name, "#333333"))


def label(method: str) -> str:
    """A method's name in words (``ddrl/methods.yaml``; unknown names are returned unchanged)."""
    return methods.words(method)


def ci_yerr(summary) -> np.ndarray:
    """Matplotlib's ``yerr`` (2 x n: lengths below and above) for rows ``mean, ci_lo, ci_hi`` of
    :func:`ddrl.run.experiments.summarize`; an undefined interval (one seed: NaN) draws no bar."""
    return np.nan_to_num(np.vstack([summary["mean"] - summary["ci_lo"], summary["ci_hi"] - summary["mean"]]))


def bootstrap_ci95(values, n_resamples: int = 1000) -> tuple[float, float]:
    """95% percentile-bootstrap interval of a mean (:func:`ddrl.report.stats.percentile_bootstrap`, the claims' own,
    ``n_resamples`` draws from a generator seeded 0), for seaborn's ``errorbar=`` (a callable: values -> (low, high)).
    Seaborn's ``("ci", 95)`` is the same interval from other draws, resampled in a Python loop per x value: 15 s for
    the 640 points of the advantage-dynamics figure against ~1 s vectorised. Fewer than two distinct values have no
    spread: (mean, mean)."""
    x = np.asarray(values, dtype=float)
    m = float(x.mean())
    if len(np.unique(x)) < 2:
        return m, m
    return percentile_bootstrap(x, np.random.default_rng(0), n_resamples, 0.95)
