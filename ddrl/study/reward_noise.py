"""Where TTRL's wrong rewards come from, by the frequency band of each rollout's answer (plan Amendment 63).

The paper's first finding (abstract; Sec. 2.2): answers of medium frequency "constitute the primary source of reward
noise". On a question's N rollouts TTRL votes a pseudo-label and rewards agreement (:func:`ddrl.analysis.
select_and_reward`, the trainer's own path). A reward is *wrong* when it disagrees with the rollout's correctness:
reward 1 on a wrong answer (a false positive, a copy of a wrong label) or reward 0 on the right answer (a false
negative). A rollout's band is its own answer's count c of N (F1-F3's bands, :data:`ddrl.study.plan.BANDS_64`,
rescaled to N). :func:`wrong_rewards` counts them per band from the committed answer groups, :func:`noise_matrix`
turns them into the seeds x questions matrix that Sec. 4's bootstrap takes for N1 and N2.

Both effects are ratios of sums over questions, so each cell carries its linearised value (the delta method's
influence value plus the estimate): the matrix's mean is the pooled ratio exactly, and the bootstrap of that mean is
the first-order bootstrap of the ratio.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddrl.analysis import scale_bands, select_and_reward
from ddrl.seeds import derive_seed
from ddrl.study.plan import BANDS_64, SELECTION_ORDERS

BAND_NAMES = ("low", "middle", "high")  # BANDS_64 in order: <= 5, 6-44, >= 45 of 64
COLUMNS = ["regime", "seed", "question", "band", "n", "orders", "answered", "fp", "fn"]


def rebuild_rollouts(g: pd.DataFrame, where: str = "") -> tuple[list, np.ndarray, int]:
    """One question's N rollouts rebuilt from its answer groups (rows ``count``, ``n``, ``correct`` per distinct
    answer): the voting keys (the group's index, None for a rollout without an answer, last), each rollout's
    correctness and N. Raises ValueError, naming ``where``, when the counts sum to more than N."""
    n, counts = int(g["n"].iloc[0]), g["count"].to_numpy()
    keys = np.repeat(np.arange(len(g)), counts).tolist()
    if len(keys) > n:
        raise ValueError(f"{where}: answer counts sum to {len(keys)}, more than N = {n}")
    correct = np.repeat(g["correct"].to_numpy(dtype=bool), counts)
    missing = n - len(keys)
    return keys + [None] * missing, np.concatenate([correct, np.zeros(missing, dtype=bool)]), n


def question_orders(groups: pd.DataFrame, stream: str, orders: int, where: str):
    """Each question of the answer groups (sorted by regime, sampling seed, question) with its rollouts rebuilt
    (:func:`rebuild_rollouts`) and ``orders`` random orders of them: yields ``(regime, seed, question, g, keys,
    correct, n, rng, perms)``. One generator per (regime, seed), ``derive_seed(0, "claims", stream, regime, seed)``;
    ``perms`` draws each order from it only when the caller asks for it, so the caller's own draws from ``rng`` (a
    random selection) fall between them in the stream. Questions without any answer (no label) are skipped."""
    for (regime, seed), part in groups.groupby(["regime", "seed"], sort=True):
        rng = np.random.default_rng(derive_seed(0, "claims", stream, regime, int(seed)))
        for q, g in part.groupby("question", sort=True):
            keys, correct, n = rebuild_rollouts(g, f"{where}: {regime} seed {seed} question {q!r}")
            if keys[0] is None:
                continue  # no answer at all: no label
            yield regime, int(seed), q, g, keys, correct, n, rng, (rng.permutation(n) for _ in range(orders))


def band_of(counts: np.ndarray, n: int) -> np.ndarray:
    """The band index (0 low, 1 middle, 2 high) of each answer count of N = ``n`` (:data:`BANDS_64` rescaled)."""
    edges = [hi for _, hi in scale_bands(BANDS_64, 64, n)]
    return np.searchsorted(edges, counts)


def wrong_rewards(groups: pd.DataFrame, orders: int = SELECTION_ORDERS) -> pd.DataFrame:
    """N1, N2's counts: one row per (regime, seed, question, band) of TTRL's pseudo-rewards on all N rollouts.

    ``answered`` rollouts whose answer's count lies in the band, and among them ``fp`` (reward 1, wrong) and ``fn``
    (reward 0, right), each the mean over ``orders`` random orders of the rollouts (the vote breaks ties by order),
    stream ``derive_seed(0, "claims", "reward_noise", regime, seed)``. Rollouts without an answer are never rewarded
    and never right, so never wrongly rewarded; questions without any answer (no label) are left out."""
    rows = []
    for regime, seed, q, g, keys, correct, n, rng, perms in question_orders(groups, "reward_noise", orders,
                                                                             "wrong_rewards"):
        group_band = band_of(g["count"].to_numpy(), n)
        band = np.array([group_band[k] if k is not None else -1 for k in keys])  # -1: no answer
        fp, fn = np.zeros(3), np.zeros(3)
        for perm in perms:
            _, idx, rew = select_and_reward([keys[i] for i in perm], n, "random", rng)
            b, truth, pos = band[perm][idx], correct[perm][idx], rew == 1
            fp += np.bincount(b[pos & ~truth], minlength=3)[:3]
            fn += np.bincount(b[~pos & truth], minlength=3)[:3]
        counted = np.bincount(band[band >= 0], minlength=3)
        for i, name in enumerate(BAND_NAMES):
            rows.append({"regime": regime, "seed": seed, "question": q, "band": name, "n": n, "orders": orders,
                         "answered": int(counted[i]), "fp": fp[i] / orders, "fn": fn[i] / orders})
    return pd.DataFrame(rows, columns=COLUMNS)


def _cells(table: pd.DataFrame, value: str, bands: tuple[str, ...]) -> pd.DataFrame:
    """seeds x questions (``regime/question``) of ``value`` summed over ``bands``; a cell without rows is 0."""
    t = table[table.band.isin(bands)]
    return t.assign(q=t.regime + "/" + t.question.astype(str)).pivot_table(
        index="seed", columns="q", values=value, aggfunc="sum", fill_value=0)


def _linearised(num: pd.DataFrame, den: pd.DataFrame) -> pd.DataFrame | None:
    """Per cell, the ratio of sums sum(num) / sum(den) plus the cell's influence value (num - ratio x den) /
    mean(den): the matrix's mean is the pooled ratio exactly. None where the denominator sums to 0 (no ratio)."""
    if den.to_numpy().sum() <= 0:
        return None
    ratio = num.to_numpy().sum() / den.to_numpy().sum()
    return ratio + (num - ratio * den) / den.to_numpy().mean()


def noise_matrix(table: pd.DataFrame, cid: str) -> pd.DataFrame:
    """seeds x questions of N1's or N2's linearised effect (points) from :func:`wrong_rewards`.

    N1: 100 x (share of all wrong rewards carried by middle-band rollouts) - 50. N2: 100 x (wrong-reward rate of
    the middle band's answered rollouts - the rate of the low and high bands' together). Empty where a ratio has no
    denominator (no wrong reward at all for N1; no answered rollout in the middle or in the outer bands for N2)."""
    if cid not in ("N1", "N2"):
        raise ValueError(f"noise_matrix: claim must be 'N1' or 'N2', got {cid!r}")
    t = table.assign(wrong=table.fp + table.fn)
    every = _cells(t, "answered", BAND_NAMES)  # every (seed, question) cell with an answered rollout
    cells = lambda value, bands: _cells(t, value, bands).reindex_like(every).fillna(0.0)  # noqa: E731
    if cid == "N1":
        parts = (_linearised(cells("wrong", ("middle",)), cells("wrong", BAND_NAMES)),)
    else:
        outer = ("low", "high")
        parts = (_linearised(cells("wrong", ("middle",)), cells("answered", ("middle",))),
                 _linearised(cells("wrong", outer), cells("answered", outer)))
    if any(p is None for p in parts):
        return pd.DataFrame()
    return 100 * parts[0] - 50 if cid == "N1" else 100 * (parts[0] - parts[1])


def description(groups: pd.DataFrame, real: pd.DataFrame | None = None, pooled: str = "base") -> pd.DataFrame:
    """Amendment 63's description: :func:`by_band` of :func:`wrong_rewards`, first the testbed's regimes (``groups``)
    pooled as ``pooled`` (as N1, N2 pool them), then each of them apart, then each regime of a real LLM's samples
    (``real``, never pooled). Empty (with its columns) without any groups."""
    testbed, llm = (wrong_rewards(g) if g is not None and not g.empty else None for g in (groups, real))
    parts = ([by_band(testbed.assign(regime=pooled)), by_band(testbed)] if testbed is not None else []) + (
        [by_band(llm)] if llm is not None else [])
    return pd.concat(parts, ignore_index=True) if parts else by_band(pd.DataFrame(columns=COLUMNS))


def by_band(table: pd.DataFrame) -> pd.DataFrame:
    """The description of Amendment 63: per regime and band, answered rollouts, false positives and negatives (sums
    over seeds and questions of the means over orders), the wrong-reward rate and the band's share of all wrong
    rewards (%)."""
    s = table.groupby(["regime", "band"], sort=False)[["answered", "fp", "fn"]].sum().reset_index()
    s["wrong"] = s.fp + s.fn
    s["rate_%"] = 100 * s.wrong / s.answered.where(s.answered > 0)
    s["share_%"] = 100 * s.wrong / s.groupby("regime").wrong.transform("sum")
    return s


def markdown(desc: pd.DataFrame) -> str:
    """:func:`description`'s table as docs/results.md quotes it (counts summed over sampling seeds and questions)."""
    t = desc.rename(columns={"answered": "answered rollouts", "fp": "false positives", "fn": "false negatives",
                             "wrong": "wrong rewards", "rate_%": "wrong-reward rate %", "share_%": "share of wrong %"})
    return t.to_markdown(index=False, floatfmt=".1f") + "\n"


def summary(desc: pd.DataFrame, entries, regimes=("base", "svamp_codex")) -> str:
    """A sentence per regime of :func:`description`'s table ``desc``: the middle band's share of TTRL's wrong rewards
    and the scorecard ``entries``' N1 and N2 there (or that a claim has no ratio to take, as on the smoke scale)."""
    mid = desc[desc.band == "middle"].set_index("regime")["share_%"]
    found = {(e["id"], e["regime"]): e for e in entries if e["id"] in ("N1", "N2")}

    def said(cid: str, r: str) -> str:
        e = found.get((cid, r))
        return f"{cid} {e['estimate']:+.1f} points, {e['verdict']}" if e else f"{cid} not computed: no ratio to take"

    return " ".join(f"**{r}**: the middle band carries {mid[r]:.0f}% of TTRL's wrong rewards ({said('N1', r)}; "
                    f"{said('N2', r)})." for r in regimes if r in mid.index)
