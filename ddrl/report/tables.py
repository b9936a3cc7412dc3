"""Small pure helpers for the notebooks: paper-vs-measured tables, and direction sentences generated from numbers.

Everything here works on the long frames of :func:`ddrl.run.experiments.summarize` (columns ``<by...>, seeds,
mean, ci_lo, ci_hi``) and on plain floats; nothing trains or samples. The paper's numbers come from
:mod:`ddrl.paper`; a quantity the paper does not report is shown as :data:`NOT_REPORTED`.
:func:`direction_table` (notebook 02) says, per difference the paper reports (e.g. DDRL - TTRL > 0), whether the measured
difference has the same sign, and :func:`direction_sentences` states it in words.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable, Mapping, Sequence

import pandas as pd

from ddrl.report.plotting import METHOD_LABELS, label  # noqa: F401  (re-exported for notebooks)
from ddrl import paper

NOT_REPORTED = "not reported"

#: Table 1's "GRPO (w/o norm.)" row has two readings (see notebook 02): its caption's "removes the advantage
#: normalization" (r - mean r, ``grpo_no_std``) and its text's "fixed, label-dependent advantage" (+1 / -1
#: on the same random subset, no BCS: ``dae``).
TABLE1_READINGS = {"grpo_no_std": "w/o norm. A (caption: mean-centred r)",
                   "dae": "w/o norm. B (text: fixed ±1, no BCS)"}


method_label = label  # the one table of method names lives in ddrl.report.plotting


def paper_value(key: tuple) -> float | int | None:
    """``ddrl.paper.value(key)``, or None when the paper reports no such quantity (no entry in ``ddrl.paper``)."""

    try:
        return paper.value(key)
    except KeyError:
        return None


def paper_cell(value: float | int | None, spec: str = ".3g") -> str:
    """A paper number for a table cell: formatted, or :data:`NOT_REPORTED` for None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NOT_REPORTED
    return format(value, spec)


def fmt_ci(mean: float, lo: float, hi: float, spec: str = ".3f") -> str:
    """``"0.412 [0.380, 0.444]"``; without an interval (one seed) just the mean; NaN mean is ``"n/a"``."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "n/a"
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return format(mean, spec)
    return f"{format(mean, spec)} [{format(lo, spec)}, {format(hi, spec)}]"


def entry_ci(e: dict, spec: str = "+.2f") -> str:
    """A ``claims.json``-schema entry's estimate and interval as the tables print them (:func:`fmt_ci`, signed)."""
    return fmt_ci(e["estimate"], e["ci_low"], e["ci_high"], spec)


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
    """``(mean, ci_lo, ci_hi)`` of the one row of a :func:`~ddrl.run.experiments.summarize` frame matching
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
                      paper_header: str = "paper", metric: str = "pass@1", paper_spec: str = ".3g",
                      measured_spec: str = ".3f") -> pd.DataFrame:
    """One table row per entry of ``rows``: the measured mean [95% CI] per split (or one column without
    ``split_col``, formatted with ``measured_spec``), the number of seeds, and the paper's number beside it
    (:data:`NOT_REPORTED` if None). For pass@1 in points beside the paper's percentages, pass
    :func:`in_points` of the summary and ``measured_spec=".1f"``."""
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
            rec[col] = fmt_ci(*p[["mean", "ci_lo", "ci_hi"]].iloc[0].astype(float), spec=measured_spec) if len(p) else "n/a"
        rec["seeds"] = int(part["seeds"].max())
        rec[paper_header] = paper_cell(paper.get(r), paper_spec)
        out.append(rec)
    return pd.DataFrame(out)


def in_points(summary: pd.DataFrame, cols: Sequence[str] = ("mean", "ci_lo", "ci_hi")) -> pd.DataFrame:
    """A summary of fractions (pass@1 0.424) in points (42.4), as the paper prints pass@1."""
    return summary.assign(**{c: 100 * summary[c].astype(float) for c in cols})


def curve_band(curves: pd.DataFrame, metric: str, by: Sequence[str] = ("method", "step")) -> pd.DataFrame:
    """Mean, min and max of ``metric`` over seeds at each (method, step): the data of a shaded curve plot."""
    if metric not in curves.columns:
        raise KeyError(f"training curves have no metric {metric!r}; see docs/training.md")
    g = curves.groupby(list(by))[metric]
    return pd.DataFrame({"mean": g.mean(), "lo": g.min(), "hi": g.max(), "seeds": g.count()}).reset_index()


# ---------------------------------------------------------------------------------------------------------
# Does the testbed reproduce the direction of each difference the paper reports?
# ---------------------------------------------------------------------------------------------------------

#: Verdicts of :func:`direction_reproduced`, and how :func:`direction_sentences` says them.
DIRECTION_WORDS = {
    "yes": "the same direction, with the 95% intervals apart: reproduced",
    "same sign, within noise": "the same direction, but not separated from noise (the 95% intervals overlap, or "
                               "there is a single run and no interval)",
    "no, within noise": "the opposite direction (or none), but within noise (overlapping 95% intervals, or a "
                        "single run): not reproduced, not contradicted",
    "no, intervals apart": "the opposite direction, with the 95% intervals apart: contradicted",
    "paper: no difference": "a difference the paper reports as zero",
    "not measured": "not measurable here (a row or band has no data)",
}


def direction_reproduced(paper_diff: float, a: tuple[float, float, float], b: tuple[float, float, float]) -> str:
    """Whether the measured ``a - b`` (each ``(mean, lo, hi)``) has the sign of the paper's ``paper_diff``.

    "yes": same sign and the 95% intervals apart; "same sign, within noise": same sign, intervals overlap (or
    one seed); "no, within noise": opposite sign or zero, intervals overlap; "no, intervals apart": opposite
    sign, intervals apart; "paper: no difference" when ``paper_diff`` is 0; "not measured" when a mean is NaN.
    The key of :data:`DIRECTION_WORDS`.
    """
    if paper_diff == 0:
        return "paper: no difference"
    measured = a[0] - b[0]
    if math.isnan(measured):
        return "not measured"
    apart = ci_relation(a, b) != "overlap"
    same = measured * paper_diff > 0
    if same and apart:
        return "yes"
    if same:
        return "same sign, within noise"
    if apart:
        return "no, intervals apart"
    return "no, within noise"


def direction_table(pairs: Sequence[tuple[str, str]], paper: Mapping[str, float],
                    measured: Mapping[str, tuple[float, float, float]], labels: Callable[[str], str] = method_label,
                    paper_unit: str = "points", measured_unit: str = "pass@1") -> pd.DataFrame:
    """One row per ``(a, b)`` of ``pairs``: the paper's ``a - b`` (from ``paper``, the printed numbers, in
    ``paper_unit``), the measured one (from ``measured[x] = (mean, lo, hi)``, in ``measured_unit``) and
    :func:`direction_reproduced`. A missing paper or measured value is an error naming it."""
    out = []
    for a, b in pairs:
        for x in (a, b):
            if x not in paper or paper[x] is None:
                raise KeyError(f"direction_table: no paper value for {x!r}; have {sorted(paper)}")
            if x not in measured:
                raise KeyError(f"direction_table: no measured value for {x!r}; have {sorted(measured)}")
        pd_ = float(paper[a]) - float(paper[b])
        out.append({"difference": f"{labels(a)} − {labels(b)}", "paper Δ": round(pd_, 3), "paper unit": paper_unit,
                    "measured Δ": round(measured[a][0] - measured[b][0], 4), "measured unit": measured_unit,
                    "direction reproduced": direction_reproduced(pd_, measured[a], measured[b])})
    return pd.DataFrame(out)


def direction_sentences(table: pd.DataFrame) -> list[str]:
    """Sentences for a :func:`direction_table`: one per verdict, listing its differences with the paper's and the
    measured value (so four rows of one verdict make one sentence, not four of one shape), then a count of the
    directions reproduced."""
    out = []
    for verdict, rows in table.groupby("direction reproduced", sort=False):
        items = [f"{r['difference']} (paper {r['paper Δ']:+g} {r['paper unit']}, testbed {r['measured Δ']:+.1f} "
                 f"{r['measured unit']})" if r["measured unit"] == "points" else
                 f"{r['difference']} (paper {r['paper Δ']:+g} {r['paper unit']}, testbed {r['measured Δ']:+.3f} "
                 f"{r['measured unit']})" for _, r in rows.iterrows()]
        words = DIRECTION_WORDS[verdict]
        out.append(f"{words[0].upper()}{words[1:]}: {'; '.join(items)}.")
    same = int(table["direction reproduced"].isin(["yes", "same sign, within noise"]).sum())
    apart = int((table["direction reproduced"] == "yes").sum())
    summary = f"Of the paper's {len(table)} differences here, the testbed has the same sign for {same}"
    if same:
        summary += f" ({apart} of them with 95% intervals apart)"
    out.append(summary + ".")
    return out


# ---------------------------------------------------------------------------------------------------------
# Which of the paper's numbers stand beside a notebook's measurement
# ---------------------------------------------------------------------------------------------------------

#: ddrl.data benchmark names -> the paper's column names.
PAPER_BENCHMARK = {"math500": "MATH-500", "amc": "AMC", "aime2024": "AIME 2024"}
#: ddrl.models presets -> the paper's model names.
PAPER_MODEL = {"qwen2.5-math-1.5b": "Qwen2.5-Math-1.5B", "qwen2.5-3b": "Qwen2.5-3B",
               "llama-3.1-8b-instruct": "Llama-3.1-8B-Instruct"}


def paper_reference(dataset: str, model: str | None) -> tuple[str, str]:
    """``(paper model, paper benchmark)`` whose numbers a notebook run is shown beside: the run's own model and
    benchmark where the paper has them, else Qwen2.5-Math-1.5B (the model of Tables 1, 4 and 6) and MATH-500
    (the testbed's questions are MATH-500-like arithmetic)."""
    return PAPER_MODEL.get(str(model or "").lower(), "Qwen2.5-Math-1.5B"), PAPER_BENCHMARK.get(dataset, "MATH-500")


def paper_pass1(method: str, model: str, benchmark: str) -> float | None:
    """The paper's pass@1 (%) of an experiments method: Table 2 (no adaptation, TTRL, ETMR, DDRL), else Table 3
    (BCS, BCS + DAE); None where neither table has the row (e.g. DAE alone, additional RL)."""
    for table in ("table2", "table3"):
        v = paper_value((table, model, benchmark, method))
        if v is not None:
            return v
    return None


def committed_markdown(path: str | Path, render: Callable[[dict], str], amendment: int, command: str) -> str:
    """A committed analysis's table as a notebook shows it: ``render`` of the JSON at ``path``; before that file is
    written, a sentence saying so with the ``command`` that tells how far plan Amendment ``amendment`` is."""
    path = Path(path)
    if path.is_file():
        return render(json.loads(path.read_text()))
    return f"Amendment {amendment}'s analysis is not committed yet (`{command}`)."
