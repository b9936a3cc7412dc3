"""The paper's claims with ids (registered in ``results/plan.md``), the ``results/claims.json`` schema, the scorecard,
and a replication on another build beside the registered study.

Each claim is a signed effect decided by its 95% interval (:func:`ddrl.report.stats.verdict`); ``paper`` is the
paper's number (Qwen2.5-Math-1.5B, :mod:`ddrl.paper`), in pass@1 points unless ``metric`` says otherwise.
``results/claims.json`` is a list of entries, one per claim x regime, as :func:`validate` checks them::

    {id, claim, regime, metric, paper, estimate, ci_low, ci_high, n_seeds, n_questions, verdict[, note]}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ddrl.paper import value
from ddrl.report.reporter import save_figure
from ddrl.seeds import derive_seed
from ddrl.report.stats import NO_EFFECT_MARGIN, VERDICTS, decided, detectable_effect, verdict

FIELDS = ("id", "claim", "regime", "metric", "paper", "estimate", "ci_low", "ci_high", "n_seeds", "n_questions",
          "verdict")
#: regime -> the paper's benchmark whose number stands beside it
BENCHMARK = {"aime_like": "AIME 2024", "amc_like": "AMC", "math500_like": "MATH-500", "amc_like_small_lr": "AMC"}


@dataclass(frozen=True)
class Claim:
    """One pre-registered claim: what is compared, where, and what the paper reports."""

    id: str
    claim: str
    metric: str  # how the effect is measured (units in brackets)
    regimes: tuple[str, ...]
    paper: dict  # regime -> the paper's effect (None: the paper gives no number)
    paper_sign: int  # +1 / -1 signed claim, 0 null claim ("barely matters")
    where: str  # the paper's table / figure / section
    margin: float = NO_EFFECT_MARGIN


def _d(a: float, b: float) -> float:
    return round(a - b, 1)


THREE = ("aime_like", "amc_like", "math500_like")


def _row(table: str, method: str, regimes: tuple[str, ...] = THREE) -> dict[str, float]:
    """The paper's Qwen2.5-Math-1.5B numbers of ``method`` in ``table`` per regime."""
    if table == "table4":
        return {r: value(("table4", BENCHMARK[r], method, "pass@1")) for r in regimes}
    if table == "table6":
        return {r: value(("table6", method, BENCHMARK[r])) for r in regimes}
    return {r: value((table, "Qwen2.5-Math-1.5B", BENCHMARK[r], method)) for r in regimes}


def table2_difference(a: str, b: str, regime: str) -> float:
    """The paper's Table 2 difference a - b in points on the benchmark ``regime`` stands for (M3, P3)."""
    row = _row("table2", a, (regime,)), _row("table2", b, (regime,))
    return _d(row[0][regime], row[1][regime])


_NONE, _TTRL, _ETMR, _DDRL = (_row("table2", m) for m in ("no_adaptation", "ttrl", "etmr", "ddrl"))
_BCS, _BCS_DAE = _row("table3", "bcs"), _row("table3", "bcs_dae")
_EXTRA_RL = _row("table4", "additional_rl")
_SIZE_4X = _row("table6", "4x")
_NO_NORM = _row("table1", "grpo_no_norm", ("aime_like", "math500_like"))  # Table 1 (printed "AIME2024", "MATH")
_WEAK = "Qwen2.5-3B"  # S1's weaker model: the paper's AMC gain of DDRL over TTRL there
_S1 = _d(_DDRL["amc_like"] - _TTRL["amc_like"],
         value(("table2", _WEAK, "AMC", "ddrl")) - value(("table2", _WEAK, "AMC", "ttrl")))
_WITH_SMALL_LR = THREE + ("amc_like_small_lr",)  # M1, P1, P2: the three regimes and AMC-like at lr/10


def _with_small_lr(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """The paper's a - b per regime of :data:`THREE`, and at lr/10 AMC's (the regime's questions are AMC-like)."""
    d = {k: _d(a[k], b[k]) for k in THREE}
    return {**d, "amc_like_small_lr": d["amc_like"]}


#: The testbed's base (pooled over the three regimes) and code-davinci-002 on SVAMP; no paper number
_SAMPLES = ("base", "svamp_codex")
_NO_PAPER = {r: None for r in _SAMPLES}


def _ours(cid: str, claim: str, metric: str, source: str) -> Claim:
    """A claim of ours: the three regimes, no paper number, sign +1."""
    return Claim(cid, claim, metric, THREE, {k: None for k in THREE}, +1, source)


CLAIMS: tuple[Claim, ...] = (
    Claim("F1", "answers seen <= 5 of 64 times are mostly wrong", "50 - accuracy of answers seen <= 5/64 [points]",
          _SAMPLES, _NO_PAPER, +1, "Sec. 2.2, Fig. 2; appendix Fig. 7 (bands <=5 and >=45)"),
    Claim("F2", "answers seen >= 45 of 64 times are mostly right", "accuracy of answers seen >= 45/64 - 50 [points]",
          _SAMPLES, _NO_PAPER, +1, "Sec. 2.2, Fig. 2; appendix Fig. 7"),
    Claim("F3", "the middle band is ambiguous: less reliable than the top band",
          "accuracy(>= 45/64) - accuracy(6-44/64) [points]", _SAMPLES, _NO_PAPER, +1, "Sec. 2.2, Fig. 2"),
    Claim("G1", "GRPO gives larger positive advantages when the pseudo-label is wrong",
          "mean GRPO advantage of positives, wrong - right pseudo-label [advantage x 100]", _SAMPLES,
          _NO_PAPER, +1, "Sec. 2.3, Fig. 3a"),
    Claim("E1", "BCS keeps fewer correct answers among its negatives than TTRL's random K",
          "share of correct answers among kept reward-0 rollouts, random - BCS [points]", _SAMPLES,
          _NO_PAPER, +1, "appendix, 'Why is DDRL effective?', false negatives (plan Amendment 8)"),
    Claim("E2", "BCS keeps fewer false positives than TTRL's random K",
          "share of kept rollouts that are reward-1 and wrong, random - BCS [points]", _SAMPLES,
          _NO_PAPER, +1, "appendix, 'Why is DDRL effective?', false positives (plan Amendment 8)"),
    Claim("N1", "the middle band is the primary source of TTRL's wrong rewards",
          "share of TTRL's wrong rewards on middle-band (6-44/64) rollouts - 50 [points]", _SAMPLES, _NO_PAPER, +1,
          "abstract; Sec. 2.2 (plan Amendment 63)"),
    Claim("N2", "middle-band rollouts are rewarded wrongly more often than the outer bands'",
          "wrong-reward rate, middle band - low and high bands [points]", _SAMPLES, _NO_PAPER, +1,
          "Sec. 1, contributions; Sec. 2.2 (plan Amendment 63)"),
    Claim("T1", "removing GRPO's normalisation helps TTRL", "pass@1 GRPO w/o norm. - GRPO [points]",
          ("aime_like", "math500_like"), {k: _d(_NO_NORM[k], _TTRL[k]) for k in _NO_NORM}, +1, "Table 1"),
    Claim("P1", "TTRL improves on no adaptation", "pass@1 TTRL - no adaptation [points]", _WITH_SMALL_LR,
          _with_small_lr(_TTRL, _NONE), +1, "Table 2"),
    Claim("P2", "DDRL improves on no adaptation", "pass@1 DDRL - no adaptation [points]", _WITH_SMALL_LR,
          _with_small_lr(_DDRL, _NONE), +1, "Table 2"),
    Claim("M1", "DDRL beats TTRL", "pass@1 DDRL - TTRL [points]", _WITH_SMALL_LR,
          _with_small_lr(_DDRL, _TTRL), +1, "Table 2"),
    Claim("M2", "DDRL is at least as good as ETMR", "pass@1 DDRL - ETMR [points]", THREE,
          {k: _d(_DDRL[k], _ETMR[k]) for k in THREE}, +1, "Table 2"),
    Claim("A1", "BCS alone changes TTRL (paper: + on AIME/MATH, - on AMC)", "pass@1 BCS - TTRL [points]", THREE,
          {k: _d(_BCS[k], _TTRL[k]) for k in THREE}, +1, "Table 3"),
    Claim("A2", "adding DAE to BCS helps", "pass@1 BCS+DAE - BCS [points]", THREE,
          {k: _d(_BCS_DAE[k], _BCS[k]) for k in THREE}, +1, "Table 3"),
    Claim("A3", "adding COR to BCS+DAE helps", "pass@1 DDRL - BCS+DAE [points]", THREE,
          {k: _d(_DDRL[k], _BCS_DAE[k]) for k in THREE}, +1, "Table 3, Table 4"),
    Claim("D1", "on AIME, DDRL's mean advantage stays negative", "- mean advantage of DDRL over training [x 100]",
          ("aime_like",), {"aime_like": None}, +1, "Sec. 5.4, Fig. 4a", margin=5.0),
    Claim("D2", "on MATH-500, DDRL's mean advantage rises from negative to positive",
          "mean advantage, last - first quarter of training, DDRL [x 100]", ("math500_like",),
          {"math500_like": None}, +1, "Sec. 5.4, Fig. 4b", margin=5.0),
    Claim("C1", "COR beats additional RL", "pass@1 (BCS+DAE+COR) - (BCS+DAE+additional RL) [points]", THREE,
          {k: _d(_DDRL[k], _EXTRA_RL[k]) for k in THREE}, +1, "Table 4"),
    Claim("C2", "COR costs a fraction of additional RL", "wall time additional RL - COR [% of the RL phase]", THREE,
          {"aime_like": None, "amc_like": None, "math500_like": None}, +1,
          "Table 4 (15/42/72 min vs 3/3/5 min; RL phase time not given)"),
    Claim("R1", "refinement size barely matters", "pass@1 COR 4x - COR 1x kept rollouts [points]", THREE,
          {k: _d(_SIZE_4X[k], _DDRL[k]) for k in THREE}, 0, "Table 6"),
    Claim("S1", "DDRL's gain over TTRL is larger with a stronger base model",
          "(DDRL - TTRL) default testbed - (DDRL - TTRL) weaker testbed [points]", ("amc_like",),
          {"amc_like": _S1}, +1,
          "Sec. 5.2 (Qwen2.5-Math-1.5B vs Qwen2.5-3B on AMC); Table 5 (7B: +0.9 on AMC) is in tension"),
    _ours("H1", "(ours) adaptation transfers to held-out questions", "held-out pass@1 DDRL - no adaptation [points]",
          "not in the paper (TTRL adapts on the test set itself)"),
    _ours("H1x", "(ours) adaptation transfers to held-out questions (1,536 fresh ones)",
          "held-out pass@1 DDRL - no adaptation, 1,536 fresh questions [points]",
          "not in the paper; plan Amendments 11, 12 (H1's power)"),
    _ours("H1xT", "(ours) adaptation transfers to held-out questions: TTRL (1,536 fresh ones)",
          "held-out pass@1 TTRL - no adaptation, 1,536 fresh questions [points]",
          "not in the paper; plan Amendment 13 (H1's TTRL, reported alongside, at H1x's power)"),
    _ours("H1xD", "(ours) DDRL transfers to held-out questions at least as well as TTRL (1,536 fresh ones)",
          "held-out pass@1 DDRL - TTRL, 1,536 fresh questions [points]",
          "not in the paper; plan Amendment 13 (the sign of M1)"),
    _ours("H1xC", "(ours) COR does not cost held-out accuracy (1,536 fresh ones)",
          "held-out pass@1 DDRL - BCS+DAE, 1,536 fresh questions [points]",
          "not in the paper; plan Amendment 14 (H1xD's COR part; A3's sign)"),
    _ours("H1xR", "(ours) BCS + DAE do not cost held-out accuracy against TTRL (1,536 fresh ones)",
          "held-out pass@1 BCS+DAE - TTRL, 1,536 fresh questions [points]",
          "not in the paper; plan Amendment 14 (H1xD's RL-phase part; the sign of A1 + A2)"),
    Claim("H1xB", "(ours) BCS alone does not cost held-out accuracy against TTRL (1,536 fresh ones)",
          "held-out pass@1 BCS - TTRL, 1,536 fresh questions [points]", ("amc_like", "math500_like"),
          {"amc_like": None, "math500_like": None}, +1,
          "not in the paper; plan Amendments 17, 20 (H1xR's BCS part; A1 on fresh questions)"),
    Claim("H1xA", "(ours) adding DAE to BCS does not cost held-out accuracy (1,536 fresh ones)",
          "held-out pass@1 BCS+DAE - BCS, 1,536 fresh questions [points]", ("amc_like", "math500_like"),
          {"amc_like": None, "math500_like": None}, +1,
          "not in the paper; plan Amendments 17, 20 (H1xR's DAE part; A2 on fresh questions)"),
    Claim("H1xN", "(ours) BCS's rarest-answer negatives do not cost held-out accuracy vs random ones (1,536 fresh ones)",
          "held-out pass@1 BCS - BCS positives with random negatives, 1,536 fresh questions [points]", ("amc_like",),
          {"amc_like": None}, +1, "not in the paper; plan Amendment 19 (H1xB's confidence part, BCS principle i)"),
    Claim("H1xP", "(ours) BCS's balanced positives do not cost held-out accuracy against TTRL (1,536 fresh ones)",
          "held-out pass@1 BCS positives with random negatives - TTRL, 1,536 fresh questions [points]", ("amc_like",),
          {"amc_like": None}, +1, "not in the paper; plan Amendment 19 (H1xB's balance part, BCS principle ii)"),
)


#: One name for each claim, in the words README.md, docs/results.md and the notebooks print (issue 95): read it with
#: :func:`claim_name`, never retype it. A claim of ours starts with "(ours)"; a claim without a name here is named by
#: its registered words (:data:`CLAIMS`).
NAMES: dict[str, str] = {
    "F1": "answers seen <= 5 of 64 times are mostly wrong",
    "F2": "answers seen >= 45 of 64 times are mostly right",
    "F3": "the middle band is less reliable than the top band",
    "G1": "GRPO gives larger positive advantages when the pseudo-label is wrong",
    "E1": "BCS keeps fewer correct answers among its negatives than TTRL's random K",
    "E2": "BCS keeps fewer false positives than TTRL's random K",
    "N1": "the middle band is the primary source of TTRL's wrong rewards",
    "N2": "middle-band rollouts are rewarded wrongly more often",
    "P1": "TTRL improves on no adaptation",
    "P2": "DDRL improves on no adaptation",
    "P3": "ETMR improves on no adaptation",
    "M1": "DDRL beats TTRL",
    "M2": "DDRL is at least as good as ETMR",
    "M3": "ETMR beats TTRL",
    "T1": "GRPO without its std normalisation helps TTRL",
    "T1f": "fixed +1/-1 advantages instead of GRPO's help TTRL",
    "A1": "BCS alone changes TTRL",
    "A2": "adding DAE to BCS helps",
    "A3": "adding COR to BCS+DAE helps",
    "C1": "COR beats additional RL",
    "C2": "COR costs a fraction of additional RL",
    "R1": "refinement size barely matters",
    "S1": "DDRL's gain over TTRL is larger with a stronger base model",
    "D1": "on AIME, DDRL's mean advantage stays negative",
    "D2": "on MATH-500, DDRL's mean advantage rises from negative to positive",
    "H1": "(ours) DDRL's adaptation transfers: it gains on 128 held-out questions",
    "K3": "(ours) COR alone improves on no adaptation",
    "K4": "(ours) DDRL beats COR alone",
    "K5": "(ours) DDRL beats COR alone",
    "H1xT": "(ours) TTRL's adaptation transfers: it gains on 1,536 fresh questions",
    "H1x": "(ours) DDRL's adaptation transfers: it gains on 1,536 fresh questions",
    "H1xD": "(ours) DDRL beats TTRL on 1,536 fresh questions",
    "H1xC": "(ours) COR does not cost accuracy on 1,536 fresh questions",
    "R1x": "(ours) COR 4x's extra gain holds on 1,536 fresh questions",
    "K1x": "(ours) COR at a tenth of its rate gains on 1,536 fresh questions",
    "K1g": "(ours) COR keeping 4x the rollouts at a tenth of its rate helps BCS+DAE",
    "K1gx": "(ours) COR keeping 4x the rollouts at a tenth of its rate gains on 1,536 fresh questions",
    "P3x": "(ours) ETMR's adaptation transfers: it gains on 1,536 fresh questions",
    "M2x": "(ours) DDRL is at least as good as ETMR on 1,536 fresh questions",
}


def claim_name(cid: str) -> str:
    """A claim's one name (:data:`NAMES`; else its registered words in :data:`CLAIMS`): ``A1`` -> "BCS alone changes
    TTRL". README.md, docs/results.md and notebooks 03-06 print this, so a claim reads the same everywhere."""
    if cid in NAMES:
        return NAMES[cid]
    c = next((c for c in CLAIMS if c.id == cid), None)
    if c is None:
        raise KeyError(f"no name for claim {cid!r}: add it to ddrl.study.claims.NAMES")
    return c.claim


def get(claim_id: str) -> Claim:
    c = next((c for c in CLAIMS if c.id == claim_id), None)
    if c is None:
        raise KeyError(f"unknown claim {claim_id!r}; ids: {[c.id for c in CLAIMS]}")
    return c


def entry(claim_id: str, regime: str, estimate: float, ci_low: float, ci_high: float, n_seeds: int,
          n_questions: int) -> dict:
    """One ``claims.json`` entry, its verdict computed by the registered rule."""
    c = get(claim_id)
    if regime not in c.regimes:
        raise ValueError(f"claim {claim_id} is registered for regimes {c.regimes}, not {regime!r}")
    return {"id": c.id, "claim": c.claim, "regime": regime, "metric": c.metric, "paper": c.paper.get(regime),
            "estimate": float(estimate), "ci_low": float(ci_low), "ci_high": float(ci_high),
            "n_seeds": int(n_seeds), "n_questions": int(n_questions),
            "verdict": verdict(ci_low, ci_high, paper_sign(c, regime), c.margin)}


def amendment_entry(cid: str, regime: str, claim: str, metric: str, a: str, b: str, diffs,
                    margin: float = NO_EFFECT_MARGIN, n_boot: int = 4000, stream: str | None = None) -> dict:
    """An amendment's claim (no paper number; sign +1: ``a`` above ``b``) decided from its seeds x questions matrix
    of ``a - b`` on the stream ``derive_seed(0, "claims", cid, stream or regime)``."""
    rng = np.random.default_rng(derive_seed(0, "claims", cid, stream or regime))
    return {"id": cid, "claim": claim, "regime": regime, "metric": metric, "paper": None, "a": a, "b": b,
            **decided(np.asarray(diffs), rng, +1, margin, n_boot)}


def with_half_width(entries: list[dict]) -> list[dict]:
    """Each entry given its 95% interval's ``half_width`` (in place)."""
    for e in entries:
        e["half_width"] = (e["ci_high"] - e["ci_low"]) / 2
    return entries


def paper_sign(c: Claim, regime: str) -> int:
    """The sign the verdict tests: the paper's number's in the regime (A1's AMC is -2.0), else the claim's (R1: 0)."""
    p = c.paper.get(regime)
    if c.paper_sign == 0 or p is None or p == 0:
        return c.paper_sign
    return 1 if p > 0 else -1


def validate(entries, where: str = "claims") -> list[dict]:
    """The claims list, checked against the schema (``ValueError`` naming the entry and field)."""
    if not isinstance(entries, list):
        raise ValueError(f"{where}: expected a list of claim entries, got {type(entries).__name__}")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ValueError(f"{where}[{i}]: expected an object, got {type(e).__name__}")
        at = f"{where}[{i}] ({e.get('id')})"
        missing = [f for f in FIELDS if f not in e]
        if missing:
            raise ValueError(f"{at}: missing field(s) {missing}; expected {list(FIELDS)}")
        for f in ("estimate", "ci_low", "ci_high"):
            if not isinstance(e[f], (int, float)) or not np.isfinite(e[f]):
                raise ValueError(f"{at}: {f} must be a finite number, got {e[f]!r}")
        if e["paper"] is not None and not isinstance(e["paper"], (int, float)):
            raise ValueError(f"{at}: paper must be a number or null, got {e['paper']!r}")
        if not e["ci_low"] <= e["estimate"] <= e["ci_high"]:
            raise ValueError(f"{at}: need ci_low <= estimate <= ci_high, got "
                             f"{e['ci_low']} / {e['estimate']} / {e['ci_high']}")
        if e["verdict"] not in VERDICTS:
            raise ValueError(f"{at}: verdict must be one of {VERDICTS}, got {e['verdict']!r}")
        for f in ("n_seeds", "n_questions"):
            if not isinstance(e[f], int) or e[f] < 1:
                raise ValueError(f"{at}: {f} must be a positive integer, got {e[f]!r}")
        if not isinstance(e.get("note", ""), str):
            raise ValueError(f"{at}: note (optional) must be a string, got {e['note']!r}")
    return entries


def load(path: str | Path) -> list[dict] | None:
    """The committed results, validated; None when there is no file."""
    path = Path(path)
    if not path.is_file():
        return None
    return validate(json.loads(path.read_text()), str(path))


FLOOR_NOTE = "floor: both methods score pass@1 0 on every question of every seed; the regime cannot test this claim"


def floor_marks(df: pd.DataFrame) -> pd.Series:
    """`` (floor)`` for the entries whose ``note`` is :data:`FLOOR_NOTE`, else ""."""
    notes = df["note"] if "note" in df else pd.Series("", index=df.index)
    return notes.map(lambda n: " (floor)" if n == FLOOR_NOTE else "")


def scorecard(entries: Sequence[dict]) -> pd.DataFrame:
    """One row per claim x regime: paper, testbed (its interval as :func:`shown`), 95% half-width and the minimum
    detectable effect (80% power), both of the committed interval."""
    df = pd.DataFrame(validate(list(entries)))
    df["half_width"] = (df.ci_high - df.ci_low) / 2
    df["mde"] = df.half_width.map(detectable_effect)
    df["testbed"] = [interval(e) for e in df.to_dict(orient="records")]  # cut at its quantity's bounds
    df["paper_"] = [("n/a" if p is None or pd.isna(p) else f"{p:+.1f}") for p in df.paper]
    df["verdict"] = df.verdict + floor_marks(df)
    out = df[["id", "claim", "regime", "metric", "paper_", "testbed", "half_width", "mde", "n_seeds", "n_questions",
              "verdict"]].rename(columns={"paper_": "paper"})
    return out.reset_index(drop=True)


VERDICT_COLORS = {"reproduced": "#2ca02c", "contradicted": "#d62728", "no effect": "#1f77b4",
                  "not resolved": "#7f7f7f"}


def unit(metric: str) -> str:
    """A metric's units: ``"pass@1 DDRL - TTRL [points]"`` -> ``"points"``."""
    return metric[metric.rindex("[") + 1:metric.rindex("]")] if "[" in metric else "points"


def forest(ax, rows: pd.DataFrame, band: bool = True, right: float | None = None) -> None:
    """Each row's 95% interval (as :func:`shown`: cut at its ``metric``'s bounds) and estimate at its ``y`` in its
    ``color``; its ``paper`` number a hollow diamond (past ``right``: an arrow and the value); the +-1 no-effect band
    in grey where ``band``."""
    for r in rows.itertuples():
        ax.plot(shown(r._asdict()), [r.y, r.y], color=r.color, lw=2.2)
        ax.plot(r.estimate, r.y, "o", color=r.color)
        if r.paper is None or pd.isna(r.paper):
            continue
        if right is None or r.paper <= right:
            ax.plot(r.paper, r.y, "D", mfc="none", mec="black", ms=6)
        else:
            ax.plot(right - 0.15, r.y, ">", mfc="none", mec="black", ms=6)
            ax.annotate(f"paper {r.paper:+.0f}", (right - 0.5, r.y), ha="right", va="center", fontsize=7)
    if band:
        ax.axvspan(-NO_EFFECT_MARGIN, NO_EFFECT_MARGIN, color="#dddddd", zorder=0)
    ax.axvline(0, color="black", lw=0.8)
    sns.despine(ax=ax, left=True)


def legend(where, colors: dict, paper: bool = True, **kw) -> None:
    """A legend of ``colors`` (name -> colour) and, with ``paper``, the paper's hollow diamond."""
    handles = [plt.Line2D([], [], color=c, marker="o", lw=2, label=v) for v, c in colors.items()]
    handles += [plt.Line2D([], [], ls="", marker="D", mfc="none", mec="black", label="paper")] if paper else []
    where.legend(handles=handles, **{"ncol": len(handles), "fontsize": 8, "frameon": False, **kw})


def scorecard_figure(entries: Sequence[dict]):
    """:func:`forest` of every entry, a panel per unit (points first), coloured by verdict."""
    df = pd.DataFrame(validate(list(entries)))
    df["label"] = df.id + "  " + df.regime + floor_marks(df)
    df["unit"] = df.metric.map(unit)
    units = sorted(df.unit.unique(), key=lambda u: (u != "points", u))
    sizes = [int((df.unit == u).sum()) for u in units]
    fig, axes = plt.subplots(len(units), 1, figsize=(7.5, 0.36 * len(df) + 1.1 * len(units) + 0.6), squeeze=False,
                             gridspec_kw={"height_ratios": [n + 1.2 for n in sizes]})
    for ax, u in zip(axes[:, 0], units):
        d = df[df.unit == u]
        d = d.assign(y=np.arange(len(d))[::-1], color=d.verdict.map(VERDICT_COLORS))
        forest(ax, d, band=u == "points")
        ax.set_yticks(d.y, d.label)
        ax.set_ylim(-0.7, len(d) - 0.3)
        ax.set_xlabel(f"effect [{u}]" + (" (grey: the +-1 no-effect band)" if u == "points" else ""))
    legend(fig, VERDICT_COLORS, loc="lower center")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def _write(out_dir: str | Path, name: str, table: pd.DataFrame, md: str, fig) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out_dir / f"{name}.csv", "md": out_dir / f"{name}.md"}
    table.to_csv(paths["csv"], index=False)
    paths["md"].write_text(md + "\n")
    paths.update(save_figure(fig, out_dir, name))
    plt.close(fig)
    return paths


def render(entries: Sequence[dict], out_dir: str | Path, name: str = "claims_scorecard") -> dict[str, Path]:
    """Write the scorecard (Markdown, CSV) and its figure (PNG, PDF) under ``out_dir``; returns the paths. The
    Markdown says below the table which intervals it shows cut at their bounds, and why (:func:`cut_words`)."""
    table = scorecard(entries)
    md = table.to_markdown(index=False, floatfmt=".1f") + "".join(f"\n\n{w}" for w in [cut_words(entries)] if w)
    return _write(out_dir, name, table, md, scorecard_figure(entries))


def bounds(metric: str) -> tuple[float, float] | None:
    """What a claim's quantity can take, in its units: a difference of two accuracies or rates in points +-100, an
    accuracy or share minus 50 +-50, a difference of two differences (S1) +-200; None where the metric is no such
    difference (advantages, wall time)."""
    if not metric.endswith("[points]"):
        return None
    half = 50.0 if (metric.startswith("50 - ") or metric.removesuffix(" [points]").endswith(" - 50")) else 100.0
    half = 200.0 if metric.count(" - ") >= 3 else half
    return -half, half


#: Why an interval is shown cut, in the words of the results page and the scorecard.
BOUND_WORDS = ("An interval that the small-sample widening carries past what its quantity can take (a difference of "
               "two accuracies cannot pass +-100 points) is shown cut at the bound.")


def shown(e: dict) -> tuple[float, float]:
    """An entry's 95% interval as shown: the committed one, cut at its quantity's :func:`bounds` (the bootstrap's
    small-sample ``t / z`` widening can carry it past what the quantity can take; the committed numbers are kept).
    Every table, page and forest plot of an interval shows it through this function."""
    lo, hi = e["ci_low"], e["ci_high"]
    metric = e.get("metric")
    b = bounds(metric) if isinstance(metric, str) else None
    return (lo, hi) if b is None else (max(lo, b[0]), min(hi, b[1]))


def cut_words(entries: Sequence[dict]) -> str:
    """:data:`BOUND_WORDS` and the entries whose interval :func:`shown` cuts, with the committed interval; "" where
    none is cut."""
    cut = [f"{e['id']} ({e['regime']}), committed as [{e['ci_low']:+.1f}, {e['ci_high']:+.1f}]" for e in entries
           if shown(e) != (e["ci_low"], e["ci_high"])]
    if not cut:
        return ""
    return (f"{BOUND_WORDS} This table and its figure cut {' and '.join(cut)}; the analysis file keeps the committed "
            "numbers.")  # (not prose.join_words: every figure of this module would depend on that module's code)


def interval(e: dict) -> str:
    """An entry's estimate and 95% interval as the tables print them: ``+3.0 [+0.9, +5.0]`` (cut at the quantity's
    bounds, :func:`shown`)."""
    lo, hi = shown(e)
    return f"{e['estimate']:+.1f} [{lo:+.1f}, {hi:+.1f}]"


def replication_table(studies: dict[str, Sequence[dict]]) -> pd.DataFrame:
    """Per claim x regime of the later ``studies`` (name -> entries, the registered first), side by side and never
    pooled: the paper's number and each study's interval, seeds and verdict ("-": none)."""
    names = list(studies)
    if len(names) < 2:
        raise ValueError(f"replication_table needs the registered study and at least one replication, got {names}")
    by = {n: {(e["id"], e["regime"]): e for e in validate(list(studies[n]), where=n)} for n in names}
    keys = list(dict.fromkeys(k for n in names[1:] for k in by[n]))
    rows = []
    for k in keys:
        first = next(by[n][k] for n in names if k in by[n])
        row = {"id": k[0], "regime": k[1], "metric": first["metric"],
               "paper": "n/a" if first["paper"] is None else f"{first['paper']:+.1f}"}
        for n in names:
            e = by[n].get(k)
            row[n] = interval(e) if e else "-"
            row[f"{n} seeds"] = e["n_seeds"] if e else "-"
            row[f"{n} verdict"] = e["verdict"] if e else "-"
        rows.append(row)
    return pd.DataFrame(rows)


def replication_figure(studies: dict[str, Sequence[dict]]):
    """:func:`forest` of :func:`replication_table`'s rows, a colour per study, within +-0.2 of the claim's tick."""
    table = replication_table(studies)
    keys = list(zip(table.id, table.regime))
    names = list(studies)
    colors = dict(zip(names, sns.color_palette("colorblind", len(names))))
    by = {n: {(e["id"], e["regime"]): e for e in studies[n]} for n in names}
    step = 0.4 / max(len(names) - 1, 1)
    rows = pd.DataFrame([{**by[n][k], "y": len(keys) - 1 - i + 0.2 - j * step, "color": colors[n]}
                         for i, k in enumerate(keys) for j, n in enumerate(names) if k in by[n]])
    rows["paper"] = rows.paper.where(~rows.duplicated(["id", "regime"]), None)  # the paper's number once per claim
    fig, ax = plt.subplots(figsize=(7.5, 0.55 * len(keys) * len(names) / 2 + 1.6))
    forest(ax, rows)
    ax.set_yticks(range(len(keys))[::-1], [f"{i}  {r}" for i, r in keys])
    ax.set_xlabel("effect, in each metric's units (grey: the +-1 no-effect band)")
    legend(ax, colors, paper=rows.paper.notna().any(), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout()
    return fig
