"""Statistics of the claims study (issue 17): paired differences, a hierarchical bootstrap, power, verdicts.

The design is paired and crossed: every method adapts on the same ``Q`` questions with the same ``S`` seeds,
and a comparison "A vs B" is the matrix of differences ``d[s, q] = acc_A(s, q) - acc_B(s, q)`` (pass@1 of
question ``q`` after the seed-``s`` run of each method, from 16 evaluation samples). The model behind the
power analysis is the two-way random-effects model without replication::

    d[s, q] = mu + a_s + b_q + e_sq,   Var a = var_seed, Var b = var_question, Var e = var_cell

where ``var_cell`` holds the seed x question interaction plus the binomial noise of the 16 evaluation
samples (``var_eval``), so the mean difference over ``S`` seeds and ``Q`` questions has variance
``var_seed / S + var_question / Q + var_cell / (S Q)``.

Everything here is a pure function of arrays; randomness only through an explicit ``numpy.random.Generator``.
The paper itself reports one run per cell with no interval (its Tables 1-6); these are our additions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

VERDICTS = ("reproduced", "contradicted", "no effect", "not resolved")
#: The issue's thresholds, in percentage points of pass@1.
TARGET_HALF_WIDTH = 2.0
NO_EFFECT_MARGIN = 1.0


# ---------------------------------------------------------------------------------------------------------
# Paired differences
# ---------------------------------------------------------------------------------------------------------


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and a two-sided t-interval ``(mean, low, high)``; the interval is (nan, nan) for one value."""

    x = np.asarray(values, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    half = float(sps.t.ppf(0.5 + confidence / 2, len(x) - 1) * sps.sem(x))
    return m, m - half, m + half


def paired_differences(df: pd.DataFrame, a: str, b: str, value: str = "accuracy", method: str = "method",
                       seed: str = "seed", question: str = "question") -> pd.DataFrame:
    """The seeds x questions matrix ``value(a) - value(b)`` from long rows ``{method, seed, question, value}``.

    Rows are seeds, columns questions (both sorted). Every (seed, question) cell must exist for both
    methods exactly once: a paired design with a missing or duplicated cell is an error, not a silent drop.
    """
    for col in (method, seed, question, value):
        if col not in df.columns:
            raise ValueError(f"paired_differences: column {col!r} missing; have {sorted(df.columns)}")
    wide = {}
    for m in (a, b):
        sub = df[df[method] == m]
        if sub.empty:
            raise ValueError(f"paired_differences: no rows for method {m!r}; methods: {sorted(df[method].unique())}")
        dup = sub.duplicated([seed, question])
        if dup.any():
            raise ValueError(f"paired_differences: method {m!r} has {int(dup.sum())} duplicated (seed, question) cells")
        wide[m] = sub.pivot(index=seed, columns=question, values=value).sort_index().sort_index(axis=1)
    A, B = wide[a], wide[b]
    if list(A.index) != list(B.index) or list(A.columns) != list(B.columns) or A.isna().any().any() or B.isna().any().any():
        raise ValueError(f"paired_differences: {a!r} and {b!r} do not cover the same seeds x questions "
                         f"({A.shape} vs {B.shape}); the design must be paired and complete")
    return A - B


# ---------------------------------------------------------------------------------------------------------
# Hierarchical (crossed) bootstrap
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    estimate: float
    ci_low: float
    ci_high: float
    n_seeds: int
    n_questions: int

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2

    def to_dict(self) -> dict:
        return {**asdict(self), "half_width": self.half_width}


def _as_matrix(diffs) -> np.ndarray:
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 2 or d.shape[0] < 2 or d.shape[1] < 2:
        raise ValueError(f"diffs must be a seeds x questions matrix with >= 2 of each, got shape {d.shape}")
    if not np.isfinite(d).all():
        raise ValueError("diffs contains NaN or inf; every (seed, question) cell must be measured")
    return d


def _scaled(x: np.ndarray, var: float) -> np.ndarray:
    """Centre ``x`` and rescale it so its plug-in (ddof 0) variance is ``var`` (all zeros if it has none)."""
    x = x - x.mean()
    v = x.var()
    return x * np.sqrt(var / v) if v > 0 and var > 0 else np.zeros_like(x)


def bootstrap_means(diffs, rng: np.random.Generator, n_boot: int = 4000) -> np.ndarray:
    """``n_boot`` bootstrap replicates of the grand mean of a crossed seeds x questions design.

    The hierarchical residual bootstrap of random-effects models (Carpenter, Goldstein & Rasbash 2003):
    the matrix is split into seed effects, question effects and cell residuals; each set is rescaled so that
    its variance equals the ANOVA estimate of its component (:func:`variance_components`), then resampled
    with replacement on its own, ``S`` seeds, ``Q`` questions and ``S Q`` cells per replicate. (Resampling
    whole rows and columns instead, the pigeonhole bootstrap, counts the cell variance three times and
    over-covers: 98-99% in our simulations.) Vectorised through multinomial draw counts.
    """
    d = _as_matrix(diffs)
    S, Q = d.shape
    if n_boot < 100:
        raise ValueError(f"n_boot must be >= 100 for a 95% interval, got {n_boot}")
    vc = variance_components(d)
    rows, cols, grand = d.mean(1), d.mean(0), d.mean()
    r = _scaled(rows - grand, vc.seed)
    c = _scaled(cols - grand, vc.question)
    e = _scaled((d - rows[:, None] - cols[None, :] + grand).ravel(), vc.cell)
    w = rng.multinomial(S, np.full(S, 1 / S), size=n_boot) @ r / S
    v = rng.multinomial(Q, np.full(Q, 1 / Q), size=n_boot) @ c / Q
    u = rng.multinomial(S * Q, np.full(S * Q, 1 / (S * Q)), size=n_boot) @ e / (S * Q)
    return grand + w + v + u


def hierarchical_bootstrap(diffs, rng: np.random.Generator, n_boot: int = 4000,
                           confidence: float = 0.95) -> Interval:
    """Mean paired difference and its interval from the percentiles of :func:`bootstrap_means`.

    With few seeds a percentile interval is too narrow in the way a z-interval is next to a t-interval
    (the seed variance is itself estimated from ``S`` values); the replicates are widened around the
    estimate by ``t_df / z`` (Satterthwaite ``df`` over the three components), so a 5-seed design still
    covers at its nominal rate (checked by simulation in ``tests/test_stats.py``).
    """
    d = _as_matrix(diffs)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    S, Q = d.shape
    est = float(d.mean())
    reps = hierarchical_draws(d, rng, n_boot, confidence)
    q = 1 - (1 - confidence) / 2
    lo, hi = np.quantile(reps, [1 - q, q])
    return Interval(est, float(lo), float(hi), S, Q)


def hierarchical_draws(diffs, rng: np.random.Generator, n_boot: int = 4000, confidence: float = 0.95) -> np.ndarray:
    """The replicates :func:`hierarchical_bootstrap` takes its interval from: :func:`bootstrap_means` widened around
    the estimate by ``t_df / z`` at ``confidence``. The same ``rng`` state gives the same draws, so a p-value read from
    them (:func:`bootstrap_p`) belongs to the committed interval."""
    d = _as_matrix(diffs)
    S, Q = d.shape
    est = float(d.mean())
    reps = bootstrap_means(d, rng, n_boot)
    q = 1 - (1 - confidence) / 2
    df = _satterthwaite_df(variance_components(d), S, Q)
    return est + (reps - est) * (sps.t.ppf(q, df) / sps.norm.ppf(q))


def percentile_draws(values, rng: np.random.Generator, n_boot: int = 4000) -> np.ndarray:
    """The resampled means :func:`percentile_bootstrap` takes its interval from (the same draws for the same ``rng``)."""
    v = np.asarray(values, dtype=float).ravel()
    return rng.multinomial(v.size, np.full(v.size, 1 / v.size), size=n_boot) @ v / v.size


def bootstrap_p(reps, test: str = "sign", margin: float = NO_EFFECT_MARGIN) -> float:
    """A two-sided p-value read from bootstrap replicates, by inverting the percentile interval: the smallest level
    at which the equal-tailed interval decides as the verdict rule does (``(k + 1) / (n + 1)`` per tail).

    ``sign``: the interval excludes 0 (``reproduced`` / ``contradicted``); ``inside``: it lies inside
    ``[-margin, margin]`` (``no effect``, a null claim's ``reproduced``; the two one-sided tests, the larger p);
    ``beyond``: it lies entirely beyond ``+-margin`` (a null claim's ``contradicted``). Replicates that are NaN are
    dropped. A 95% interval decides iff p < 0.05 (up to the quantiles' interpolation)."""
    r = np.asarray(reps, dtype=float)
    r = r[np.isfinite(r)]
    n = r.size
    if n == 0:
        raise ValueError("bootstrap_p: no finite replicate")

    def tail(k) -> float:
        return (int(k) + 1) / (n + 1)

    if test == "sign":
        p = 2 * min(tail((r <= 0).sum()), tail((r >= 0).sum()))
    elif test == "inside":
        p = 2 * max(tail((r <= -margin).sum()), tail((r >= margin).sum()))
    elif test == "beyond":
        p = 2 * min(tail((r <= margin).sum()), tail((r >= -margin).sum()))
    else:
        raise ValueError(f"bootstrap_p: test must be sign, inside or beyond, got {test!r}")
    return float(min(1.0, p))


def t_p(estimate: float, ci_low: float, ci_high: float, n: int, test: str = "sign",
        margin: float = NO_EFFECT_MARGIN, confidence: float = 0.95) -> float:
    """:func:`bootstrap_p`'s p-value for an interval from :func:`mean_ci` (a t-interval over ``n`` values), recovered
    from the interval itself: its standard error is the half-width over ``t_{n-1}``."""
    df = n - 1
    se = (ci_high - ci_low) / 2 / sps.t.ppf(0.5 + confidence / 2, df)
    if se <= 0:
        return 1.0 if test == "sign" and estimate == 0 else 0.0
    if test == "sign":
        p = 2 * sps.t.sf(abs(estimate) / se, df)
    elif test == "inside":
        p = 2 * max(sps.t.sf((estimate + margin) / se, df), sps.t.sf((margin - estimate) / se, df))
    elif test == "beyond":
        p = 2 * min(sps.t.cdf((margin - estimate) / se, df), sps.t.cdf((estimate + margin) / se, df))
    else:
        raise ValueError(f"t_p: test must be sign, inside or beyond, got {test!r}")
    return float(min(1.0, p))


def percentile_bootstrap(values, rng: np.random.Generator, n_boot: int = 4000,
                         confidence: float = 0.95) -> tuple[float, float]:
    """The percentile-bootstrap interval of the mean of ``values``: ``n_boot`` resamples with replacement, each drawn
    as multinomial counts of the values (one draw per resample, vectorised), and the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles of their means. The one plain bootstrap of the package: the one-seed claims
    (:func:`question_bootstrap`) and the figures' bands (:func:`ddrl.report.plotting.bootstrap_ci95`) both use it."""
    v = np.asarray(values, dtype=float).ravel()
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    reps = percentile_draws(v, rng, n_boot)
    q = 1 - (1 - confidence) / 2
    lo, hi = np.quantile(reps, [1 - q, q])
    return float(lo), float(hi)


def question_bootstrap(values, rng: np.random.Generator, n_boot: int = 4000, confidence: float = 0.95) -> Interval:
    """Mean and percentile interval (:func:`percentile_bootstrap`) of a design with one seed: one value per question,
    each a single draw (so resampling questions carries its sampling noise as well as the questions' spread). Plan
    Amendment 18."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size < 2 or not np.isfinite(v).all():
        raise ValueError(f"question_bootstrap: need >= 2 finite values, got {v.size} (finite: {np.isfinite(v).sum()})")
    lo, hi = percentile_bootstrap(v, rng, n_boot, confidence)
    return Interval(float(v.mean()), lo, hi, 1, int(v.size))


# ---------------------------------------------------------------------------------------------------------
# Variance components and power
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VarianceComponents:
    """Variance components of a paired difference (units squared: points^2 if the diffs are in points)."""

    seed: float  # between-seed: a run's shift common to all its questions
    question: float  # between-question: how much the true difference varies across questions
    cell: float  # seed x question interaction + evaluation noise (one cell, one evaluation per method)
    eval: float | None = None  # the evaluation-noise part of ``cell`` (binomial, from 16 samples), if known
    source: str = ""

    def se(self, n_seeds: int, n_questions: int) -> float:
        """Standard error of the mean difference over ``n_seeds`` x ``n_questions`` (the model above)."""
        return float(np.sqrt(self.seed / n_seeds + self.question / n_questions + self.cell / (n_seeds * n_questions)))


def variance_components(diffs, eval_var: float | None = None, source: str = "") -> VarianceComponents:
    """ANOVA (method-of-moments) estimates of the components from a pilot's seeds x questions matrix.

    ``MS_seed = Q var(row means)``, ``MS_question = S var(column means)``, ``MS_cell`` the residual mean
    square; ``var_seed = (MS_seed - MS_cell) / Q`` and ``var_question = (MS_question - MS_cell) / S``,
    truncated at 0. ``eval_var`` (see :func:`eval_noise_variance`) is recorded as the known part of the cell.
    """
    d = _as_matrix(diffs)
    S, Q = d.shape
    rows, cols, grand = d.mean(1), d.mean(0), d.mean()
    ms_seed = Q * rows.var(ddof=1)
    ms_q = S * cols.var(ddof=1)
    resid = d - rows[:, None] - cols[None, :] + grand
    ms_cell = float((resid ** 2).sum() / ((S - 1) * (Q - 1)))
    return VarianceComponents(seed=max(0.0, (ms_seed - ms_cell) / Q), question=max(0.0, (ms_q - ms_cell) / S),
                              cell=ms_cell, eval=eval_var, source=source or f"pilot {S} seeds x {Q} questions")


def eval_noise_variance(p_a: Sequence[float], p_b: Sequence[float] | None = None, n: int = 16) -> float:
    """Binomial evaluation noise of one cell's difference: mean over questions of
    ``p_a (1 - p_a) / n + p_b (1 - p_b) / n`` (``p_b`` defaults to ``p_a``: two evaluations alike).

    Accuracies in [0, 1]; multiply by 100^2 for points^2. pass@1 is the mean of ``n`` = 16 samples (the
    paper's protocol, Sec. 5.1)."""
    pa = np.asarray(p_a, dtype=float)
    pb = pa if p_b is None else np.asarray(p_b, dtype=float)
    if pa.shape != pb.shape or pa.size == 0 or ((pa < 0) | (pa > 1) | (pb < 0) | (pb > 1)).any():
        raise ValueError("eval_noise_variance: p_a and p_b must be equal-length accuracies in [0, 1]")
    if n < 1:
        raise ValueError(f"n (evaluation samples per question) must be >= 1, got {n}")
    return float(np.mean(pa * (1 - pa) / n + pb * (1 - pb) / n))


def _satterthwaite_df(vc: VarianceComponents, S: int, Q: int) -> float:
    terms = [(vc.seed / S, S - 1), (vc.question / Q, Q - 1), (vc.cell / (S * Q), (S - 1) * (Q - 1))]
    num = sum(t for t, _ in terms) ** 2
    den = sum(t ** 2 / df for t, df in terms if df > 0)
    return float(num / den) if den > 0 else float("inf")


def predicted_half_width(vc: VarianceComponents, n_seeds: int, n_questions: int, confidence: float = 0.95) -> float:
    """Predicted 95% half-width ``t_{df} * SE`` (Satterthwaite degrees of freedom over the three terms)."""
    if n_seeds < 2 or n_questions < 2:
        raise ValueError(f"need >= 2 seeds and >= 2 questions, got {n_seeds} x {n_questions}")
    df = _satterthwaite_df(vc, n_seeds, n_questions)
    return float(sps.t.ppf(1 - (1 - confidence) / 2, df) * vc.se(n_seeds, n_questions))


def minimum_detectable_effect(vc: VarianceComponents, n_seeds: int, n_questions: int, power: float = 0.8,
                              confidence: float = 0.95) -> float:
    """The true difference the design detects (interval excludes 0) with probability ``power``:
    ``(t_{1-alpha/2} + t_{power}) * SE``."""
    df = _satterthwaite_df(vc, n_seeds, n_questions)
    return float((sps.t.ppf(1 - (1 - confidence) / 2, df) + sps.t.ppf(power, df)) * vc.se(n_seeds, n_questions))


def detectable_effect(half_width: float, power: float = 0.8, confidence: float = 0.95) -> float:
    """The minimum detectable effect of a measured comparison: the true difference whose interval, as wide as
    the one measured (``half_width``), excludes 0 with probability ``power``: ``hw * (z_{1-alpha/2} + z_power) /
    z_{1-alpha/2}`` (normal approximation; 1.43 x the half-width at 80% power and 95% confidence)."""
    z = sps.norm.ppf(1 - (1 - confidence) / 2)
    return float(half_width * (z + sps.norm.ppf(power)) / z)


def power_table(vc: VarianceComponents, seeds: Iterable[int], questions: Iterable[int],
                target: float = TARGET_HALF_WIDTH) -> pd.DataFrame:
    """Predicted half-width and MDE for every seeds x questions design, with ``meets`` = half-width <= target
    and ``cost`` = seeds x questions (RL cost grows with both: one run per seed, steps per question)."""
    rows = []
    for S in seeds:
        for Q in questions:
            hw = predicted_half_width(vc, S, Q)
            rows.append({"seeds": S, "questions": Q, "half_width": hw, "mde": minimum_detectable_effect(vc, S, Q),
                         "meets": hw <= target, "cost": S * Q})
    return pd.DataFrame(rows)


def choose_design(table: pd.DataFrame) -> dict | None:
    """The cheapest design that meets the target (ties: fewer seeds, i.e. fewer runs); None if none does."""
    ok = table[table.meets]
    if ok.empty:
        return None
    return ok.sort_values(["cost", "seeds", "questions"]).iloc[0].to_dict()


# ---------------------------------------------------------------------------------------------------------
# The verdict rule (pre-registered in results/plan.md)
# ---------------------------------------------------------------------------------------------------------


def verdict(ci_low: float, ci_high: float, paper_sign: int, margin: float = NO_EFFECT_MARGIN) -> str:
    """The pre-registered verdict of one claim from its 95% interval (same units as ``margin``).

    Signed claims (``paper_sign`` +1 or -1, the sign of the effect the paper reports), in this order:

    - *reproduced*: the interval excludes 0 (strictly) on the paper's side;
    - *contradicted*: it excludes 0 on the opposite side;
    - *no effect*: it lies inside ``[-margin, +margin]`` (closed);
    - *not resolved*: otherwise.

    Null claims (``paper_sign`` 0, e.g. "refinement size barely matters", Table 6): *reproduced* if the
    interval lies inside ``[-margin, +margin]``; *contradicted* if it lies entirely beyond one end
    (``ci_low > margin`` or ``ci_high < -margin``); *not resolved* otherwise.
    """
    for name, x in (("ci_low", ci_low), ("ci_high", ci_high), ("margin", margin)):
        if x is None or not np.isfinite(x):
            raise ValueError(f"verdict: {name} must be a finite number, got {x!r}")
    if ci_low > ci_high:
        raise ValueError(f"verdict: ci_low {ci_low} > ci_high {ci_high}")
    if paper_sign not in (-1, 0, 1):
        raise ValueError(f"verdict: paper_sign must be -1, 0 or +1, got {paper_sign!r}")
    if margin < 0:
        raise ValueError(f"verdict: margin must be >= 0, got {margin}")
    inside = -margin <= ci_low and ci_high <= margin
    if paper_sign == 0:
        if inside:
            return "reproduced"
        if ci_low > margin or ci_high < -margin:
            return "contradicted"
        return "not resolved"
    if ci_low > 0 or ci_high < 0:
        side = 1 if ci_low > 0 else -1
        return "reproduced" if side == paper_sign else "contradicted"
    if inside:
        return "no effect"
    return "not resolved"


def decided(diffs, rng: np.random.Generator, sign: int, margin: float = NO_EFFECT_MARGIN, n_boot: int = 4000) -> dict:
    """The fields every claim decided from a seeds x questions matrix of differences shares: the
    :func:`hierarchical_bootstrap` interval (``rng``: the claim's own stream), its half-width, the design's size and
    the :func:`verdict` for the expected ``sign`` and ``margin``."""
    iv = hierarchical_bootstrap(diffs, rng, n_boot)
    return {"estimate": iv.estimate, "ci_low": iv.ci_low, "ci_high": iv.ci_high, "half_width": iv.half_width,
            "n_seeds": iv.n_seeds, "n_questions": iv.n_questions,
            "verdict": verdict(iv.ci_low, iv.ci_high, sign, margin)}


def advantage_quarters(adv: np.ndarray) -> tuple[float, float]:
    """The mean of a run's batch mean advantages (in step order) over the first and over the last quarter of its RL
    steps (at least one step each), x 100."""
    q = max(1, len(adv) // 4)
    return float(100 * adv[:q].mean()), float(100 * adv[-q:].mean())


def advantage_statistic(cid: str, adv: np.ndarray) -> float:
    """One DDRL run's D1 or D2 from its RL steps' batch mean advantages in step order (plan Sec. 4; the paper's
    Fig. 4): D1 = -100 x their mean; D2 = the last quarter's mean - the first's (:func:`advantage_quarters`)."""
    if cid == "D1":
        return float(-100 * adv.mean())
    first, last = advantage_quarters(adv)
    return last - first
