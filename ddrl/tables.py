"""Small pure helpers for notebooks 03-05: paper-vs-measured tables and sentences generated from numbers.

Everything here works on the long frames of :func:`ddrl.experiments.summarize` (columns ``<by...>, seeds,
mean, ci_lo, ci_hi``) and on plain floats; nothing trains or samples. A paper number that was not read is
``None`` and is shown as :data:`NOT_RETRIEVED`, never filled in.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

import pandas as pd

NOT_RETRIEVED = "n/a (not retrieved)"
NOT_REPORTED = "not reported"

#: Row names of :data:`ddrl.experiments.METHODS` (note: "ddrl" is the full method, after COR).
METHOD_LABELS = {
    "no_adaptation": "No adaptation", "ttrl": "TTRL", "etmr": "ETMR", "grpo_no_std": "GRPO w/o norm.",
    "dae": "DAE", "bcs": "BCS", "bcs_dae": "BCS + DAE", "ddrl": "DDRL (BCS + DAE + COR)",
    "additional_rl": "BCS + DAE + additional RL",
}


def method_label(method: str) -> str:
    """The paper's row name of an experiments method (unknown names are returned unchanged)."""
    return METHOD_LABELS.get(method, method)


def paper_value(key: tuple) -> float | int | None:
    """``ddrl.paper.value(key)``, or None when ``ddrl.paper`` has no entry for ``key`` (e.g. Tables 2, 3, 6)."""
    from ddrl import paper

    try:
        return paper.value(key)
    except KeyError:
        return None


def paper_cell(value: float | int | None, spec: str = ".3g") -> str:
    """A paper number for a table cell: formatted, or :data:`NOT_RETRIEVED` for None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NOT_RETRIEVED
    return format(value, spec)


def fmt_ci(mean: float, lo: float, hi: float, spec: str = ".3f") -> str:
    """``"0.412 [0.380, 0.444]"``; without an interval (one seed) just the mean; NaN mean is ``"n/a"``."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "n/a"
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return format(mean, spec)
    return f"{format(mean, spec)} [{format(lo, spec)}, {format(hi, spec)}]"


def ci_relation(a: tuple[float, float, float], b: tuple[float, float, float]) -> str:
    """How ``a = (mean, lo, hi)`` stands against ``b``: "higher" / "lower" if the 95% intervals do not
    overlap, else "overlap" (also when either interval is missing: one seed cannot separate them)."""
    (_, alo, ahi), (_, blo, bhi) = a, b
    if any(x is None or math.isnan(x) for x in (alo, ahi, blo, bhi)):
        return "overlap"
    if alo > bhi:
        return "higher"
    if ahi < blo:
        return "lower"
    return "overlap"


def lookup(summary: pd.DataFrame, **where) -> tuple[float, float, float]:
    """``(mean, ci_lo, ci_hi)`` of the one row of a :func:`~ddrl.experiments.summarize` frame matching
    ``where`` (column=value); an absent or ambiguous row is an error naming the filter."""
    mask = pd.Series(True, index=summary.index)
    for col, val in where.items():
        if col not in summary.columns:
            raise KeyError(f"summary has no column {col!r}; columns: {list(summary.columns)}")
        mask &= summary[col] == val
    rows = summary[mask]
    if len(rows) != 1:
        raise KeyError(f"expected one summary row for {where}, found {len(rows)}")
    r = rows.iloc[0]
    return float(r["mean"]), float(r["ci_lo"]), float(r["ci_hi"])


def measured_vs_paper(summary: pd.DataFrame, rows: Sequence[str], paper: Mapping[str, float | None],
                      row_col: str = "method", split_col: str | None = "split",
                      labels: Callable[[str], str] | Mapping[str, str] | None = None,
                      paper_header: str = "paper", metric: str = "pass@1") -> pd.DataFrame:
    """One table row per entry of ``rows``: the measured mean [95% CI] per split (or one column without
    ``split_col``), the number of seeds, and the paper's number beside it (:data:`NOT_RETRIEVED` if None)."""
    name = (labels if callable(labels) else (lambda r: (labels or {}).get(r, r)))
    splits = list(dict.fromkeys(summary[split_col])) if split_col else [None]
    out = []
    for r in rows:
        part = summary[summary[row_col] == r]
        if part.empty:
            raise KeyError(f"no summary rows for {row_col}={r!r}; present: {sorted(map(str, summary[row_col].unique()))}")
        rec = {row_col: name(r)}
        for s in splits:
            p = part if s is None else part[part[split_col] == s]
            col = f"{metric} (measured)" if s is None else f"{metric} {s} (measured)"
            rec[col] = fmt_ci(*p[["mean", "ci_lo", "ci_hi"]].iloc[0].astype(float)) if len(p) else "n/a"
        rec["seeds"] = int(part["seeds"].max())
        rec[paper_header] = paper_cell(paper.get(r))
        out.append(rec)
    return pd.DataFrame(out)


def comparison_sentence(name_a: str, a: tuple[float, float, float], name_b: str, b: tuple[float, float, float],
                        metric: str = "pass@1") -> str:
    """A sentence comparing two measured (mean, lo, hi), saying whether the 95% intervals separate them."""
    rel = ci_relation(a, b)
    d = a[0] - b[0]
    if rel == "overlap":
        return (f"{name_a} reaches {metric} {a[0]:.3f} and {name_b} {b[0]:.3f} (difference {d:+.3f}); their 95% "
                "intervals overlap, so the seeds do not separate them")
    return (f"{name_a} reaches {metric} {a[0]:.3f}, {'above' if rel == 'higher' else 'below'} {name_b}'s {b[0]:.3f} "
            f"(difference {d:+.3f}, 95% intervals apart)")


def agreement(measured: str, expected: str) -> str:
    """"agrees with" / "disagrees with" / "neither confirms nor contradicts" the paper's expected direction.

    ``measured`` is a :func:`ci_relation` result; ``expected`` is "higher" or "lower" (the paper's direction).
    """
    if expected not in ("higher", "lower"):
        raise ValueError(f"expected must be 'higher' or 'lower', got {expected!r}")
    if measured == "overlap":
        return "neither confirms nor contradicts"
    return "agrees with" if measured == expected else "disagrees with"


def curve_band(curves: pd.DataFrame, metric: str, by: Sequence[str] = ("method", "step")) -> pd.DataFrame:
    """Mean, min and max of ``metric`` over seeds at each (method, step): the data of a shaded curve plot."""
    if metric not in curves.columns:
        raise KeyError(f"training curves have no metric {metric!r}; see docs/training.md")
    g = curves.groupby(list(by))[metric]
    return pd.DataFrame({"mean": g.mean(), "lo": g.min(), "hi": g.max(), "seeds": g.count()}).reset_index()
