"""The paper's analyses of where spurious reward signals come from and how GRPO amplifies them.

Paper: Sec. 2.2 (answer frequency and correctness, Fig. 2), Sec. 2.3 (GRPO's amplification, Fig. 3, Table 1) and
Appendix C (the probability analysis of answer frequencies).

Source of the noise (paper Sec. 3.1, Fig. 2 and Fig. 6; appendix Fig. 5 and its equations):

- :func:`answer_groups`        one row per (question, distinct answer): count, frequency x = count / N, correct
- :func:`frequency_table`      fraction correct per frequency band, for distinct answers and for samples,
                               with binomial confidence intervals (:func:`binomial_ci`)
- :func:`class_conditional_kde`  p(x | C) and p(x | not C) with ``scipy.stats.gaussian_kde``
- :func:`posterior`            Bayes' rule, p(C | x)
- :func:`log_odds_decomposition`  log-posterior-odds = log-likelihood-ratio + log-prior-odds, and
                               :func:`derivative` of it in x
- :func:`ambiguous_region`     the x where p(C | x) lies in [lo, hi]

Amplification (paper Sec. 3.2, Fig. 3a; Table 1):

- :func:`grpo_closed_form`, :func:`fixed_closed_form`  advantage of a positive / negative rollout when m
                               of K rewards are 1
- :func:`advantage_curves`     closed form beside the advantage computed by :mod:`ddrl.advantages`
- :func:`group_advantages`     per-rollout advantages of measured groups (pseudo-rewards, true correctness);
                               :func:`select_and_reward` one question's vote, selection and rewards
- :func:`advantage_by_label`, :func:`advantage_mass_by_consensus`  how much advantage lands on wrong
                               pseudo-labels, by consensus level

What BCS keeps (paper Sec. 3.1, Fig. 4; the claims E1, E2):

- :func:`bcs_label_copies`, :func:`random_label_copies`  label copies kept by BCS / TTRL's random K
- :func:`dae_mean_advantage`, :func:`dae_zones`  DAE's mean advantage over BCS's K, and where its sign changes
- :func:`label_counts`, :func:`dae_advantage_by_question`, :func:`dae_zone_shares`  the same on measured answer
                               groups; :func:`advantage_course` the mean advantage at a run's start and end
- :func:`selection_by_band`, :func:`selection_summary`  false positives kept per rule, by the label's band

Grading: :func:`vote_and_grade` / :func:`grade_problem` vote on and grade one question's answers. The
sampling/caching/training pipeline that feeds these analyses (:func:`ddrl.run.experiments.cached_rollouts`,
model fingerprints) lives in :mod:`ddrl.run.experiments`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest, gaussian_kde

from ddrl.advantages import get_advantage
from ddrl.answers import extract_boxed, grade_answers
from ddrl.rewards import Group, favoured, get_reward, is_binary
from ddrl.seeds import numpy_generator
from ddrl.selection import get_selection
from ddrl.voting import count_votes, majority_vote, pseudo_rewards

#: The testbed's frequency bands (inclusive counts out of N = 64), from rare answers to near-unanimous ones.
BANDS_64: tuple[tuple[int, int], ...] = ((1, 4), (5, 12), (13, 24), (25, 40), (41, 64))


# ---------------------------------------------------------------------------------------------------------
# Frequency bands and confidence intervals
# ---------------------------------------------------------------------------------------------------------


def scale_bands(bands: Sequence[tuple[int, int]], n_from: int, n_to: int) -> tuple[tuple[int, int], ...]:
    """Rescale inclusive count bands from N = ``n_from`` to N = ``n_to`` (upper edges rounded, then made
    contiguous): ``scale_bands(BANDS_64, 64, 30) == ((1, 2), (3, 6), (7, 11), (12, 19), (20, 30))``.

    Bands that collapse (an upper edge not above the previous one) are an error naming them.
    """
    if n_from < 1 or n_to < 1:
        raise ValueError(f"scale_bands: n_from and n_to must be >= 1, got {n_from}, {n_to}")
    out, lo = [], 1
    for a, b in bands:
        hi = n_to if b >= n_from else int(math.floor(b * n_to / n_from + 0.5))
        if hi < lo:
            raise ValueError(f"scale_bands: band ({a}, {b}) of N={n_from} is empty at N={n_to}")
        out.append((lo, hi))
        lo = hi + 1
    return tuple(out)


def check_bands(bands: Sequence[tuple[int, int]], n: int) -> None:
    """Bands must be inclusive, increasing, non-overlapping count ranges within 1..n."""
    prev = 0
    for lo, hi in bands:
        if not (prev < lo <= hi <= n):
            raise ValueError(f"frequency bands must be increasing, non-overlapping ranges in 1..{n}; got {list(bands)}")
        prev = hi


def band_label(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def binomial_ci(k: int, n: int, confidence: float = 0.95, method: str = "wilson") -> tuple[float, float]:
    """Confidence interval for a proportion k / n: Wilson (default) or exact Clopper-Pearson
    (``method="exact"``), both from ``scipy.stats.binomtest``. ``n == 0`` gives ``(nan, nan)``."""

    if n == 0:
        return (math.nan, math.nan)
    if not 0 <= k <= n:
        raise ValueError(f"binomial_ci: need 0 <= k <= n, got k={k}, n={n}")
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method=method)
    return (float(ci.low), float(ci.high))


# ---------------------------------------------------------------------------------------------------------
# Frequency of answers vs correctness (Fig. 2 / Fig. 6)
# ---------------------------------------------------------------------------------------------------------


def answer_groups(problems: Sequence[dict]) -> pd.DataFrame:
    """One row per (problem, distinct answer): ``problem, answer, count, n, x = count / n, correct``.

    Each problem is ``{"id", "keys": [voting key or None per sample], "correct": [bool per sample]}``;
    samples without an answer (key None) are counted in ``n`` but form no group. An answer is correct
    when its samples are (all samples sharing a key must agree on correctness; a mix is an error).
    """
    rows = []
    for i, p in enumerate(problems):
        keys, correct = p["keys"], p["correct"]
        if len(keys) != len(correct):
            raise ValueError(f"answer_groups: problem {p.get('id', i)!r} has {len(keys)} keys but {len(correct)} correct flags")
        n = len(keys)
        groups: dict[Any, list[bool]] = {}
        for k, c in zip(keys, correct):
            if k is not None:
                groups.setdefault(k, []).append(bool(c))
        for k, flags in groups.items():
            if any(flags) != all(flags):
                raise ValueError(f"answer_groups: problem {p.get('id', i)!r}, answer {k!r} is graded both right and wrong")
            rows.append({"problem": p.get("id", i), "answer": k, "count": len(flags), "n": n,
                         "x": len(flags) / n, "correct": flags[0]})
    return pd.DataFrame(rows, columns=["problem", "answer", "count", "n", "x", "correct"])


def in_band(groups: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame:
    """The rows of :func:`answer_groups` whose count lies in the band ``lo..hi`` (inclusive): the one definition
    of "an answer in a frequency band" (:func:`frequency_table`, the claims study's per-question bands)."""
    return groups[(groups["count"] >= lo) & (groups["count"] <= hi)]


def frequency_table(groups: pd.DataFrame, bands: Sequence[tuple[int, int]], confidence: float = 0.95,
                    method: str = "wilson") -> pd.DataFrame:
    """Fraction correct per frequency band (paper Fig. 2 / Fig. 6), with binomial confidence intervals.

    Per band (inclusive counts ``lo..hi``): ``x_mean`` (mean frequency of its answers), ``n_distinct`` distinct answers whose count is in the band,
    ``frac_correct`` of them (CI ``ci_low, ci_high``), ``n_samples`` samples carrying such answers and
    ``frac_correct_samples`` (its CI treats samples as independent, so it is optimistic).
    """
    if len(groups):
        check_bands(bands, int(groups["n"].max()))
    rows = []
    for lo, hi in bands:
        sel = in_band(groups, lo, hi)
        k, n = int(sel["correct"].sum()), len(sel)
        ks, ns = int(sel.loc[sel["correct"], "count"].sum()), int(sel["count"].sum())
        lo_ci, hi_ci = binomial_ci(k, n, confidence, method)
        slo, shi = binomial_ci(ks, ns, confidence, method)
        rows.append({
            "band": band_label(lo, hi), "lo": lo, "hi": hi,
            "x_mean": float(sel["x"].mean()) if n else (lo + hi) / 2 / max(int(groups["n"].max()), 1) if len(groups) else math.nan,
            "n_distinct": n, "n_correct": k, "frac_correct": k / n if n else math.nan,
            "ci_low": lo_ci, "ci_high": hi_ci,
            "n_samples": ns, "frac_correct_samples": ks / ns if ns else math.nan,
            "samples_ci_low": slo, "samples_ci_high": shi,
        })
    return pd.DataFrame(rows)


def ambiguous_bands(table: pd.DataFrame, lo: float = 0.2, hi: float = 0.8) -> list[str]:
    """The bands of a :func:`frequency_table` whose fraction correct lies in ``[lo, hi]`` (the paper's
    "ambiguity region" read off the binned curve)."""
    sel = table[(table["frac_correct"] >= lo) & (table["frac_correct"] <= hi)]
    return list(sel["band"])


# ---------------------------------------------------------------------------------------------------------
# The Bayesian view (appendix Fig. 5 and its equations)
# ---------------------------------------------------------------------------------------------------------


def kde_density(x: Sequence[float], grid: np.ndarray, bw_method: float | str | None = None,
                reflect: bool = True) -> np.ndarray:
    """A Gaussian KDE (``scipy.stats.gaussian_kde``) of samples ``x`` in [0, 1], evaluated on ``grid``.

    With ``reflect`` the kernel mass that would fall outside [0, 1] is reflected back at both edges, so
    the density integrates to 1 on [0, 1] and is not halved at x = 1 (where many correct answers sit).
    Needs at least two distinct values.
    """

    x = np.asarray(x, dtype=float)
    if x.size < 2 or np.unique(x).size < 2:
        raise ValueError(f"kde_density: need at least two distinct frequencies, got {np.unique(x).tolist()}")
    if np.any((x < 0) | (x > 1)):
        raise ValueError("kde_density: frequencies must lie in [0, 1]")
    kde = gaussian_kde(x, bw_method=bw_method)
    g = np.asarray(grid, dtype=float)
    dens = kde(g)
    if reflect:
        dens = dens + kde(-g) + kde(2.0 - g)
    return dens


def class_conditional_kde(groups: pd.DataFrame, grid: np.ndarray, bw_method: float | str | None = None,
                          reflect: bool = True, weight: str = "distinct") -> dict[str, Any]:
    """p(x | C) and p(x | not C) on ``grid`` (appendix Fig. 5, top), and the prior p(C).

    ``weight="distinct"`` treats each distinct answer as one observation (the paper's unit);
    ``"samples"`` repeats each answer ``count`` times (the view of a rollout drawn at random).
    """
    if weight not in ("distinct", "samples"):
        raise ValueError(f"class_conditional_kde: weight must be 'distinct' or 'samples', got {weight!r}")
    reps = groups["count"].to_numpy() if weight == "samples" else np.ones(len(groups), dtype=int)
    x = np.repeat(groups["x"].to_numpy(dtype=float), reps)
    c = np.repeat(groups["correct"].to_numpy(dtype=bool), reps)
    return {
        "grid": np.asarray(grid, dtype=float),
        "p_x_c": kde_density(x[c], grid, bw_method, reflect),
        "p_x_nc": kde_density(x[~c], grid, bw_method, reflect),
        "prior": float(c.mean()),
    }


def posterior(p_x_c: np.ndarray, p_x_nc: np.ndarray, prior: float) -> np.ndarray:
    """Bayes' rule (appendix Eq.): p(C|x) = p(x|C) p(C) / (p(x|C) p(C) + p(x|~C) (1 - p(C)))."""
    if not 0.0 < prior < 1.0:
        raise ValueError(f"posterior: prior p(C) must be in (0, 1), got {prior}")
    a = np.asarray(p_x_c, dtype=float) * prior
    b = np.asarray(p_x_nc, dtype=float) * (1.0 - prior)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(a + b > 0, a / (a + b), np.nan)


def log_odds_decomposition(p_x_c: np.ndarray, p_x_nc: np.ndarray, prior: float) -> dict[str, np.ndarray]:
    """The appendix's decomposition: log p(C|x)/(1-p(C|x)) = log p(x|C)/p(x|~C) + log p(C)/p(~C).

    Returns ``log_likelihood_ratio`` (varies with x), ``log_prior_odds`` (a constant, broadcast) and
    ``log_posterior_odds`` (their sum).
    """
    if not 0.0 < prior < 1.0:
        raise ValueError(f"log_odds_decomposition: prior p(C) must be in (0, 1), got {prior}")
    with np.errstate(divide="ignore"):
        llr = np.log(np.asarray(p_x_c, dtype=float)) - np.log(np.asarray(p_x_nc, dtype=float))
    lpo = np.full_like(llr, math.log(prior / (1.0 - prior)))
    return {"log_likelihood_ratio": llr, "log_prior_odds": lpo, "log_posterior_odds": llr + lpo}


def derivative(y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """dy/dx on ``grid`` by central differences (``numpy.gradient``; one-sided at the ends).

    Applied to the log-posterior-odds it is d/dx log p(x|C)/p(x|~C): the prior drops out, so the slope
    says how fast evidence for correctness grows with frequency (appendix Fig. 5, bottom).
    """
    return np.gradient(np.asarray(y, dtype=float), np.asarray(grid, dtype=float))


def ambiguous_region(grid: np.ndarray, post: np.ndarray, lo: float = 0.2, hi: float = 0.8) -> list[tuple[float, float]]:
    """Intervals of ``grid`` where ``lo <= p(C|x) <= hi``: the ambiguity region, as ``[(x_start, x_end), ...]``
    (grid points; a region touching an edge starts or ends there)."""
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"ambiguous_region: need 0 <= lo <= hi <= 1, got lo={lo}, hi={hi}")
    grid, post = np.asarray(grid, dtype=float), np.asarray(post, dtype=float)
    inside = (post >= lo) & (post <= hi)
    out, start = [], None
    for i, flag in enumerate(inside):
        if flag and start is None:
            start = i
        if not flag and start is not None:
            out.append((float(grid[start]), float(grid[i - 1])))
            start = None
    if start is not None:
        out.append((float(grid[start]), float(grid[-1])))
    return out


def crossing(grid: np.ndarray, post: np.ndarray, level: float = 0.5) -> float:
    """The first x where p(C|x) rises through ``level`` (linear interpolation); nan if it never does."""
    grid, post = np.asarray(grid, dtype=float), np.asarray(post, dtype=float)
    for i in range(1, len(grid)):
        a, b = post[i - 1], post[i]
        if np.isfinite(a) and np.isfinite(b) and a < level <= b:
            return float(grid[i - 1] + (level - a) * (grid[i] - grid[i - 1]) / (b - a))
    return math.nan


def supported(grid: np.ndarray, x_c: Sequence[float], x_nc: Sequence[float], half_width: float = 0.05,
              min_count: int = 5) -> np.ndarray:
    """Where a ratio of the two class-conditional KDEs is backed by data: the grid points x with at least
    ``min_count`` observations of *each* class within ``[x - half_width, x + half_width]``.

    Outside this range one density is only the tail of kernels centred elsewhere, so the log-likelihood
    ratio (and its slope) there is an extrapolation of the kernel's shape, not evidence: on the testbed,
    where almost no wrong answer is sampled more than half the time, the slope of the log-odds otherwise peaks
    at x = 1 and the posterior wiggles with single answers above x = 0.6.
    """
    grid = np.asarray(grid, dtype=float)
    if half_width <= 0 or min_count < 0:
        raise ValueError(f"supported: need half_width > 0 and min_count >= 0, got {half_width}, {min_count}")

    def near(x):
        x = np.sort(np.asarray(x, dtype=float))
        return np.searchsorted(x, grid + half_width, side="right") - np.searchsorted(x, grid - half_width, side="left")

    return (near(x_c) >= min_count) & (near(x_nc) >= min_count)


def bayes_analysis(groups: pd.DataFrame, grid_points: int = 201, bw_method: float | str | None = None,
                   lo: float = 0.2, hi: float = 0.8, weight: str = "distinct", half_width: float = 0.05,
                   min_count: int = 5) -> dict[str, Any]:
    """All of appendix Fig. 5 at once: densities, posterior, log-odds terms, derivative and the ambiguity
    region, as ``{"curves": DataFrame over the grid, "prior", "region", "crossing", "support", "steepest"}``.

    ``curves["supported"]`` marks the x where both classes have data (:func:`supported`; ``support`` is its
    first and last x, None where it is empty). The ambiguity ``region``, the 0.5 ``crossing`` and the x of the
    ``steepest`` rise of the log-odds (at least ``half_width`` inside the supported stretch) are read inside it only: beyond it the KDE's tails, not answers, shape the
    ratio. The curves themselves cover the whole grid; ``min_count=0`` reads everything on the whole grid.
    Classes that never meet (no x with data of both) have no supported range, hence no region and no crossing:
    the data cannot say where between them the posterior passes 0.5.
    """
    grid = np.linspace(0.0, 1.0, grid_points)
    kde = class_conditional_kde(groups, grid, bw_method=bw_method, weight=weight)
    post = posterior(kde["p_x_c"], kde["p_x_nc"], kde["prior"])
    terms = log_odds_decomposition(kde["p_x_c"], kde["p_x_nc"], kde["prior"])
    reps = groups["count"].to_numpy() if weight == "samples" else np.ones(len(groups), dtype=int)
    x = np.repeat(groups["x"].to_numpy(dtype=float), reps)
    c = np.repeat(groups["correct"].to_numpy(dtype=bool), reps)
    ok = supported(grid, x[c], x[~c], half_width, min_count)
    slope = derivative(terms["log_posterior_odds"], grid)
    curves = pd.DataFrame({"x": grid, "p_x_c": kde["p_x_c"], "p_x_nc": kde["p_x_nc"], "posterior": post, **terms,
                           "d_log_odds_dx": slope, "supported": ok})
    inside = np.where(ok, post, np.nan)
    return {"curves": curves, "prior": kde["prior"], "region": ambiguous_region(grid, inside, lo, hi),
            "crossing": crossing(grid, inside, 0.5),
            "support": (float(grid[ok][0]), float(grid[ok][-1])) if ok.any() else None,
            "steepest": _steepest(grid, slope, ok, half_width)}


def _steepest(grid: np.ndarray, slope: np.ndarray, ok: np.ndarray, margin: float) -> float:
    """The x of the largest slope among the supported points at least ``margin`` inside the supported stretch they
    belong to (a slope needs data on both sides of x; at the stretch's ends one class thins out and the ratio
    turns into a kernel tail); nan where no such point exists."""
    inner = np.zeros_like(ok)
    for a, z in ambiguous_region(grid, np.where(ok, 0.5, np.nan), 0.0, 1.0):
        inner |= (grid >= a + margin - 1e-12) & (grid <= z - margin + 1e-12)
    return float(grid[inner][np.argmax(slope[inner])]) if inner.any() else math.nan


# ---------------------------------------------------------------------------------------------------------
# Advantage amplification (Fig. 3a, Sec. 3.2)
# ---------------------------------------------------------------------------------------------------------


def grpo_closed_form(m: int | np.ndarray, k: int, eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """GRPO advantages of a positive and a negative rollout when ``m`` of ``k`` binary rewards are 1
    (paper Fig. 3a): mean = m/k, unbiased std s = sqrt(m (k-m) / (k (k-1))),
    A+ = (1 - m/k) / (s + eps), A- = -(m/k) / (s + eps). At m = 0 or m = k every advantage is 0.

    Example: m = 16, k = 32 gives s = sqrt(256 / 992) and A+ = 0.5 / s = 0.984.
    """
    if k < 2:
        raise ValueError(f"grpo_closed_form: k must be >= 2, got {k}")
    m = np.asarray(m, dtype=float)
    if np.any((m < 0) | (m > k)):
        raise ValueError(f"grpo_closed_form: m must be in 0..{k}")
    s = np.sqrt(m * (k - m) / (k * (k - 1)))
    degenerate = (m == 0) | (m == k)
    with np.errstate(invalid="ignore", divide="ignore"):
        a_pos = np.where(degenerate, 0.0, (1.0 - m / k) / (s + eps))
        a_neg = np.where(degenerate, 0.0, -(m / k) / (s + eps))
    return a_pos, a_neg


def fixed_closed_form(m: int | np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """DDRL's debiased advantages (DAE): +1 for a positive, -1 for a negative, whatever m."""
    m = np.asarray(m, dtype=float)
    return np.ones_like(m), -np.ones_like(m)


def grpo_no_std_closed_form(m: int | np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """GRPO without std normalisation (Table 1, "GRPO w/o norm."): A+ = 1 - m/k, A- = -m/k."""
    m = np.asarray(m, dtype=float)
    return 1.0 - m / k, -m / k


CLOSED_FORMS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    "grpo": grpo_closed_form, "grpo_no_std": grpo_no_std_closed_form, "fixed": fixed_closed_form,
}


def advantage_curves(k: int = 32, estimators: Sequence[str] = ("grpo", "fixed")) -> pd.DataFrame:
    """Fig. 3a: for m = 1..k-1 positives out of k, the advantage of a positive and of a negative rollout,
    closed form (``closed_pos``, ``closed_neg``) beside :mod:`ddrl.advantages` on a group with m ones
    (``measured_pos``, ``measured_neg``). Long format: one row per (estimator, m)."""

    rows = []
    for name in estimators:
        fn = get_advantage(name)
        for m in range(1, k):
            rewards = np.array([1.0] * m + [0.0] * (k - m))
            adv = fn(rewards)
            cp, cn = CLOSED_FORMS[name](m, k)
            rows.append({"estimator": name, "m": m, "k": k, "closed_pos": float(cp), "closed_neg": float(cn),
                         "measured_pos": float(adv[0]), "measured_neg": float(adv[-1])})
    return pd.DataFrame(rows)


def select_and_reward(keys: Sequence[Any], k: int, selection: str, rng: np.random.Generator):
    """One question's training signal as the trainer builds it (Algorithm 1, steps 3-5): the majority vote
    on its N voting keys (``None`` = no answer), the ``k`` rollouts ``selection`` keeps (``ddrl.selection``:
    "random" = TTRL, "bcs" = DDRL) and their pseudo-rewards. Returns ``(vote, indices, rewards)``, or None
    when no rollout has an answer (no label). Shared by :func:`group_advantages` and
    :func:`ddrl.study.analysis.selection_errors`."""
    vote = count_votes(list(keys))
    if vote.label is None:
        return None
    idx = get_selection(selection)(vote.counts, k, rng)
    return vote, idx, pseudo_rewards(vote)[idx]


def group_advantages(problems: Sequence[dict], k: int, estimators: Sequence[str] = ("grpo", "fixed"),
                     selection: str = "random", seed: int = 0) -> pd.DataFrame:
    """Per-rollout advantages of the TTRL training step on measured groups.

    For each problem (``keys``, ``correct`` per sample, as in :func:`answer_groups`) the pseudo-label is
    the majority vote over all N samples; ``k`` of them are selected (``ddrl.selection``, "random" as in
    TTRL or "bcs"), rewarded 1 if they agree with the label, and given each estimator's advantage.
    Rows: ``problem, consensus (label count / N), label_correct, reward, truly_correct`` and one column
    per estimator. Groups whose selected rewards are all equal carry zero GRPO advantage and are kept.
    """

    rows = []
    for i, p in enumerate(problems):
        keys, correct = list(p["keys"]), list(p["correct"])
        if len(keys) < k:
            raise ValueError(f"group_advantages: problem {p.get('id', i)!r} has {len(keys)} samples, fewer than k={k}")
        step = select_and_reward(keys, k, selection, numpy_generator(seed, "group_advantages", i))
        if step is None:
            continue  # no answer at all: no label, no reward signal
        vote, idx, rewards = step
        label_correct = correct[keys.index(vote.label_key)]
        advs = {name: get_advantage(name)(rewards) for name in estimators}
        for pos, j in enumerate(idx):
            rows.append({"problem": p.get("id", i), "consensus": vote.majority_ratio, "label_count": vote.label_count,
                         "label_correct": bool(label_correct), "reward": rewards[pos],
                         "truly_correct": bool(correct[j]), **{name: float(a[pos]) for name, a in advs.items()}})
    return pd.DataFrame(rows)


def advantage_by_label(adv: pd.DataFrame, estimators: Sequence[str] = ("grpo", "fixed")) -> pd.DataFrame:
    """Mean advantage of the positive (reward 1) rollouts in groups whose pseudo-label is right vs wrong.

    Only groups with a mixed reward (some positives, some negatives) count: elsewhere every GRPO
    advantage is 0. GRPO gives the few agreeing rollouts of a low-consensus (and often wrong) vote a
    large positive advantage; fixed advantages give +1 regardless.
    """
    mixed = adv.groupby("problem")["reward"].transform(lambda r: 0 < r.sum() < len(r))
    pos = adv[mixed.astype(bool) & (adv["reward"] == 1.0)]
    rows = []
    for label_correct, part in pos.groupby("label_correct"):
        rows.append({"pseudo_label": "right" if label_correct else "wrong",
                     "groups": part["problem"].nunique(), "positive_rollouts": len(part),
                     **{f"mean_pos_adv_{name}": float(part[name].mean()) for name in estimators}})
    return pd.DataFrame(rows)


def advantage_mass_by_consensus(adv: pd.DataFrame, bands: Sequence[tuple[int, int]],
                                estimators: Sequence[str] = ("grpo", "fixed")) -> pd.DataFrame:
    """How much advantage lands on wrong pseudo-labels, by consensus level (label count out of N).

    Per band and estimator: ``wrong_label_share`` = share of the groups whose label is wrong;
    ``pos_mass_wrong_share_<est>`` = share of all positive advantage mass (sum of A > 0) that goes to
    rollouts agreeing with a wrong label (spurious reinforcement); ``spurious_share_<est>`` = share of the
    total |A| mass carried by rollouts whose pseudo-reward disagrees with their true correctness.
    """
    rows = []
    for lo, hi in bands:
        sel = adv[(adv["label_count"] >= lo) & (adv["label_count"] <= hi)]
        row: dict[str, Any] = {"band": band_label(lo, hi), "lo": lo, "hi": hi,
                               "groups": sel["problem"].nunique(), "rollouts": len(sel)}
        g = sel.groupby("problem")["label_correct"].first()
        row["wrong_label_share"] = float((~g).mean()) if len(g) else math.nan
        spurious = sel["reward"].astype(bool) != sel["truly_correct"].astype(bool)
        for name in estimators:
            a = sel[name].to_numpy(dtype=float)
            pos = np.clip(a, 0, None)
            total_pos, total_abs = pos.sum(), np.abs(a).sum()
            row[f"pos_mass_wrong_share_{name}"] = float(pos[~sel["label_correct"].to_numpy()].sum() / total_pos) if total_pos > 0 else math.nan
            row[f"spurious_share_{name}"] = float(np.abs(a)[spurious.to_numpy()].sum() / total_abs) if total_abs > 0 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------
# What BCS keeps: label copies, DAE's mean advantage, false positives by band (Sec. 3.1, Fig. 4; E1, E2)
# ---------------------------------------------------------------------------------------------------------


def _check_cnk(c, n: int, k: int, where: str) -> np.ndarray:
    c = np.asarray(c)
    if not 1 <= k <= n:
        raise ValueError(f"{where}: expected 1 <= k <= n, got n={n}, k={k}")
    if np.any((c < 0) | (c > n)):
        raise ValueError(f"{where}: label counts must lie in [0, {n}], got {c}")
    return c


def bcs_label_copies(c: int | np.ndarray, n: int, k: int) -> np.ndarray:
    """How many rollouts carrying the pseudo-label BCS keeps among its ``k`` when ``c`` of the ``n`` carry it
    (no other answer tied with it; :func:`ddrl.selection.bcs`).

    BCS takes K+ = min(c, floor(k/2)) label copies as positives and fills its k - K+ "negative" slots from the
    rarest answers. Only n - c rollouts carry another answer, so when n - c < k - K+ the negatives run out and
    the remaining slots go to further label copies (rewarded 1 like the positives):
    ``K+ + max(0, k - K+ - (n - c))``. With n = 64, k = 32: c copies for c < 16, 16 for 16 <= c <= 48, and
    c - 32 above 48 (all 32 at c = 64).
    """
    c = _check_cnk(c, n, k, "bcs_label_copies")
    k_pos = np.minimum(c, k // 2)
    return k_pos + np.maximum(0, k - k_pos - (n - c))


def random_label_copies(c: int | np.ndarray, n: int, k: int) -> np.ndarray:
    """The expected number of label copies among TTRL's random ``k`` of ``n`` (hypergeometric mean, c k / n)."""
    c = _check_cnk(c, n, k, "random_label_copies")
    return c * k / n


def dae_mean_advantage(c: int | np.ndarray, n: int, k: int) -> np.ndarray:
    """The mean of DAE's fixed +1 / -1 advantages over the ``k`` rollouts BCS keeps of one question whose label
    ``c`` of ``n`` rollouts carry: ``2 * copies / k - 1`` with copies = :func:`bcs_label_copies`. Negative for
    c < floor(k/2), zero from there to n - k + floor(k/2), positive above (BCS's negatives have run out)."""
    return 2.0 * bcs_label_copies(c, n, k) / k - 1.0


def dae_zones(n: int, k: int) -> dict[str, int]:
    """The label counts where :func:`dae_mean_advantage` changes sign: negative for c < ``negative_below``,
    positive for c > ``positive_above`` (n = 64, k = 32: 16 and 48)."""
    _check_cnk(0, n, k, "dae_zones")
    return {"negative_below": k // 2, "positive_above": n - k + k // 2}


def label_counts(groups: pd.DataFrame) -> pd.DataFrame:
    """One row per (regime, seed, question) of :func:`answer_groups`-style rows (``count``, ``n``; optional
    ``regime``, ``seed``): the pseudo-label's count ``c`` (the largest answer count) and ``n``."""
    keys = [col for col in ("regime", "seed") if col in groups.columns] + ["question"]
    g = groups.rename(columns={"problem": "question"}) if "question" not in groups.columns else groups
    return g.groupby(keys, sort=False).agg(c=("count", "max"), n=("n", "first")).reset_index()


def dae_advantage_by_question(counts: pd.DataFrame, k64: int = 32) -> pd.DataFrame:
    """:func:`label_counts` with the zone of each question and DAE's mean advantage after BCS (``k`` = ``k64``
    rescaled to the question's N, as the claims study does): ``zone`` is "negative", "zero" or "positive"."""
    k = np.maximum(1, np.round(k64 * counts["n"] / 64)).astype(int)
    adv = [float(dae_mean_advantage(c, n, kk)) for c, n, kk in zip(counts["c"], counts["n"], k)]
    zone = np.select([np.array(adv) < 0, np.array(adv) > 0], ["negative", "positive"], "zero")
    return counts.assign(k=k, dae_mean_advantage=adv, zone=zone)


def dae_zone_shares(by_question: pd.DataFrame) -> pd.DataFrame:
    """Per regime of :func:`dae_advantage_by_question` rows: ``questions``, the share (%) of them in each zone
    (``negative``, ``zero``, ``positive``) and ``predicted``, DAE's mean advantage over BCS's picks averaged over
    the questions (what a step's mean advantage is on average, before training moves the counts)."""
    g = by_question if "regime" in by_question.columns else by_question.assign(regime="all")
    rows = []
    for r, part in g.groupby("regime", sort=False):
        share = part["zone"].value_counts(normalize=True)
        rows.append({"regime": r, "questions": len(part),
                     **{z: 100 * float(share.get(z, 0.0)) for z in ("negative", "zero", "positive")},
                     "predicted": float(part["dae_mean_advantage"].mean())})
    return pd.DataFrame(rows)


def advantage_course(steps: pd.DataFrame, window: int = 8) -> pd.DataFrame:
    """Per regime of step logs (``regime``, ``seed``, ``step``, ``adv/mean``, ``label/majority_ratio``): how many
    ``runs`` and ``steps``, and the mean over runs and the first / last ``window`` steps of the batch's mean
    advantage (``adv_start``, ``adv_end``) and of the share of rollouts agreeing with the label (``maj_start``,
    ``maj_end``)."""
    rows = []
    for r, part in steps.groupby("regime", sort=False):
        last = int(part["step"].max())
        head, tail = part[part["step"] < window], part[part["step"] > last - window]
        rows.append({"regime": r, "runs": part["seed"].nunique(), "steps": last + 1,
                     "adv_start": float(head["adv/mean"].mean()), "adv_end": float(tail["adv/mean"].mean()),
                     "maj_start": float(head["label/majority_ratio"].mean()),
                     "maj_end": float(tail["label/majority_ratio"].mean())})
    return pd.DataFrame(rows)


#: Bands of the pseudo-label's count (of 64) for :func:`selection_by_band`: the claims' rare (<= 5) and frequent
#: (>= 45) bands, their middle split where BCS's quota K+ = min(c, 16) stops growing.
SELECTION_BANDS_64: tuple[tuple[int, int], ...] = ((1, 5), (6, 15), (16, 44), (45, 64))


def selection_by_band(sel: pd.DataFrame, bands64: Sequence[tuple[int, int]] = SELECTION_BANDS_64) -> pd.DataFrame:
    """What each selection rule keeps, by the band of the pseudo-label's count (at N = 64).

    ``sel`` has one row per (question, rule) as :func:`ddrl.study.analysis.selection_errors` returns it: ``rule``,
    ``n``, ``label_count``, ``orders`` and the sums over ``orders`` random orders of ``kept`` rollouts, ``neg``
    (reward 0), ``fn`` (reward 0, right) and ``fp`` (reward 1, wrong). Per rule and band: ``questions``, the share
    of all questions in the band (``weight``), the mean per question of the share of kept rollouts that are false
    positives (``fp_share``, %; E2's measure), of label copies kept (``copies``, per question and order) and of
    correct answers among the kept negatives (``fn_share``, %; E1's). A rule's mean of ``fp_share`` over all
    questions is the weight-averaged band values (:func:`selection_summary`).
    """
    c64 = np.clip(np.round(64 * sel["label_count"] / sel["n"]).astype(int), 1, 64)
    rows = []
    total = sel.groupby("rule").size()
    for rule in dict.fromkeys(sel["rule"]):
        for lo, hi in bands64:
            b = sel[(sel["rule"] == rule) & (c64 >= lo) & (c64 <= hi)]
            with np.errstate(invalid="ignore", divide="ignore"):
                fn_share = (100 * b["fn"] / b["neg"].where(b["neg"] > 0)).mean() if len(b) else np.nan
            rows.append({"rule": rule, "band": band_label(lo, hi), "lo": lo, "hi": hi, "questions": len(b),
                         "weight": len(b) / total[rule],
                         "fp_share": float((100 * b["fp"] / b["kept"]).mean()) if len(b) else np.nan,
                         "copies": float(((b["kept"] - b["neg"]) / b["orders"]).mean()) if len(b) else np.nan,
                         "fn_share": float(fn_share)})
    return pd.DataFrame(rows)


def selection_summary(sel: pd.DataFrame) -> dict[str, float]:
    """Per rule, the mean over questions of the share of kept rollouts that are false positives (``random``,
    ``bcs``, %) and E2's point estimate ``e2`` = random - bcs (points; positive: BCS keeps fewer false positives);
    the mean share of correct answers among the kept negatives (``fn_random``, ``fn_bcs``, %; over the questions
    where both rules keep a negative) and E1's ``e1`` = fn_random - fn_bcs."""
    share = (100 * sel["fp"] / sel["kept"]).groupby(sel["rule"]).mean()
    q = [c for c in ("regime", "seed", "question") if c in sel.columns]
    fn = sel.assign(v=100 * sel["fn"] / sel["neg"].where(sel["neg"] > 0)).pivot_table(
        index=q, columns="rule", values="v", aggfunc="first").dropna()
    return {"random": float(share["random"]), "bcs": float(share["bcs"]), "e2": float(share["random"] - share["bcs"]),
            "fn_random": float(fn["random"].mean()), "fn_bcs": float(fn["bcs"].mean()),
            "e1": float((fn["random"] - fn["bcs"]).mean())}


# ---------------------------------------------------------------------------------------------------------
# Grading one question's sampled answers (the sampling pipeline is in ddrl.run.experiments)
# ---------------------------------------------------------------------------------------------------------


def vote_and_grade(answers: Sequence[str | None], truth: str, problem_id: Any = None) -> dict:
    """Vote on and grade one question's extracted answers.

    Returns ``{id, truth, answers, keys, correct, label, label_count, label_correct}``: ``keys`` are the
    vote's cluster keys (:func:`ddrl.voting.majority_vote`: equivalent answers share one), and every
    cluster is graded once against ``truth`` (:func:`ddrl.answers.grade_answers`, math-verify).
    """

    answers = list(answers)
    vote = majority_vote(answers)
    correct = grade_answers(answers, truth, vote.keys)
    label_correct = vote.label is not None and correct[vote.keys.index(vote.label_key)]
    return {"id": problem_id, "truth": truth, "answers": answers, "keys": list(vote.keys), "correct": correct,
            "label": vote.label, "label_count": vote.label_count, "label_correct": bool(label_correct)}


def grade_problem(texts: Sequence[str], truth: str, problem_id: Any = None) -> dict:
    """:func:`vote_and_grade` on the boxed answers of one question's sampled responses."""

    return vote_and_grade([extract_boxed(t) for t in texts], truth, problem_id)


def svamp_problems(records: Sequence[dict]) -> list[dict]:
    """SVAMP Codex rollouts (``ddrl.data.load_dataset("svamp_codex_rollouts")``) in the form of
    :func:`answer_groups`: numeric answers are their own voting keys (None stays None)."""
    return [{"id": r["id"], "keys": list(r["answers"]), "correct": [bool(c) for c in r["correct"]]} for r in records]


def summary(problems: Sequence[dict]) -> dict[str, float]:
    """Mean single-sample accuracy, majority-vote accuracy and the no-answer rate of graded problems."""

    n_samples = sum(len(p["correct"]) for p in problems)
    maj = []
    for p in problems:
        if "label_correct" in p:
            maj.append(bool(p["label_correct"]))
        else:  # SVAMP-style problems: vote here, on their keys
            vote = count_votes(p["keys"])
            maj.append(vote.label is not None and p["correct"][p["keys"].index(vote.label_key)])
    return {
        "problems": len(problems),
        "samples": n_samples,
        "mean_accuracy": sum(sum(p["correct"]) for p in problems) / n_samples if n_samples else math.nan,
        "maj_accuracy": float(np.mean(maj)) if maj else math.nan,
        "no_answer_rate": sum(k is None for p in problems for k in p["keys"]) / n_samples if n_samples else math.nan,
    }


def subsample(problems: Sequence[dict], n: int) -> list[dict]:
    """The first ``n`` samples of every problem (what the analysis would have seen with N = n); the
    graded fields ``keys`` and ``correct`` are cut, vote fields are dropped (they depended on all N)."""
    out = []
    for i, p in enumerate(problems):
        if n < 1 or n > len(p["keys"]):
            raise ValueError(f"subsample: n must be in 1..{len(p['keys'])} (problem {p.get('id', i)!r}), got {n}")
        out.append({"id": p.get("id", i), "keys": list(p["keys"][:n]), "correct": list(p["correct"][:n])})
    return out


# ---------------------------------------------------------------------------------------------------------
# Label-free rewards on measured groups (plan Stage 3, item 7)
# ---------------------------------------------------------------------------------------------------------


def problems_from_groups(groups: pd.DataFrame) -> list[dict]:
    """The problems (``{"id", "keys", "correct"}``, :func:`answer_groups`' input) behind answer-group rows: each row's
    ``count`` copies of one answer, then ``n - sum(count)`` rollouts without an answer. One row per (question,
    answer) with ``question`` (or ``problem``), ``count``, ``n`` and ``correct``: the committed base rollouts' CSVs."""
    qcol = "question" if "question" in groups else "problem"
    out = []
    for q, g in groups.groupby(qcol, sort=False):
        n = int(g["n"].iloc[0])
        if (g["n"] != n).any() or int(g["count"].sum()) > n:
            raise ValueError(f"problems_from_groups: question {q!r} has counts {g['count'].tolist()} for n = {n}")
        keys = [k for k, c in enumerate(g["count"]) for _ in range(int(c))]
        correct = [bool(ok) for ok, c in zip(g["correct"], g["count"]) for _ in range(int(c))]
        out.append({"id": q, "keys": keys + [None] * (n - len(keys)), "correct": correct + [False] * (n - len(keys))})
    return out


def reward_signal(problems: Sequence[dict], rewards: Sequence[str], k: int, bands: Sequence[tuple[int, int]],
                  seed: int = 0, gate: float = 0.5) -> pd.DataFrame:
    """How often each label-free reward (:mod:`ddrl.rewards`) favours a wrong answer, by frequency band, and how much
    GRPO advantage TTRL's step gives the wrong answers it favours (the paper's Fig. 3a question, per reward).

    Per problem, every reward is computed on all N rollouts (``entropies`` per rollout where the problem has them,
    else ``neg_entropy`` is skipped); a rollout is *favoured* when its reward is 1 (a 0/1 reward) or above the
    question's mean (any other). TTRL's random K of N (one draw per problem and reward, ``seed``) gets GRPO
    advantages. Rows per (reward, band of the rollout's answer count; "none" without an answer): ``rollouts``,
    ``wrong``, ``favoured``, ``favoured_wrong``, ``fp_rate`` (favoured wrong / wrong: the spurious positive rate),
    ``wrong_share`` (favoured wrong / favoured), ``pos_adv_wrong`` (the GRPO advantage > 0 given to wrong rollouts in
    the band, over all positive advantage of the reward: where the amplified wrong signal sits)."""
    band_of = {c: f"{lo}-{hi}" for lo, hi in bands for c in range(lo, hi + 1)}
    cfg, grpo, rows = SimpleNamespace(reward_gate=gate), get_advantage("grpo"), []
    for name in rewards:
        for i, p in enumerate(problems):
            ents = p.get("entropies")
            if name == "neg_entropy" and ents is None:
                continue
            vote = count_votes(list(p["keys"]))
            r = np.asarray(get_reward(name)(Group(vote, ents, numpy_generator(seed, "reward_signal", name, i)), cfg),
                           dtype=np.float64)
            idx = get_selection("random")(vote.counts, k, numpy_generator(seed, "reward_signal_k", name, i))
            adv = np.zeros(len(r))
            adv[idx] = grpo(r[idx])
            for c, ok, f, a in zip(vote.counts, p["correct"], favoured(r, is_binary(name)), adv):
                rows.append((name, band_of.get(c, "none"), bool(ok), bool(f), max(float(a), 0.0)))
    df = pd.DataFrame(rows, columns=["reward", "band", "correct", "favoured", "pos_adv"])
    df["wrong"], df["favoured_wrong"] = ~df["correct"], df["favoured"] & ~df["correct"]
    df["pos_adv_wrong"] = df["pos_adv"].where(df["wrong"], 0.0)
    out = df.groupby(["reward", "band"], sort=False).agg(
        rollouts=("correct", "size"), wrong=("wrong", "sum"), favoured=("favoured", "sum"),
        favoured_wrong=("favoured_wrong", "sum"), pos_adv_wrong=("pos_adv_wrong", "sum")).reset_index()
    total_pos = df.groupby("reward", sort=False)["pos_adv"].sum()
    out["fp_rate"] = out["favoured_wrong"] / out["wrong"].where(out["wrong"] > 0)
    out["wrong_share"] = out["favoured_wrong"] / out["favoured"].where(out["favoured"] > 0)
    out["pos_adv_wrong"] = out["pos_adv_wrong"] / out["reward"].map(total_pos).where(lambda s: s > 0)
    return out
