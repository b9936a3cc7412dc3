"""Each verdict's strength, beside the registered rule and never instead of it (issue 95).

The registered verdict (``results/plan.md`` Sec. 4, :func:`ddrl.report.stats.verdict`) stays as computed. Beside it:

- **strength**: *floor* where both arms score pass@1 0 everywhere (the entry's note, :data:`FLOOR_NOTE`); *below 1
  point* where a sign verdict's whole interval lies inside the +-1-point band (the sign is shown, the size is not);
  otherwise none ("-").
- **registration**: *confirmatory* for a claim x regime of the plan's Sec. 1 table (:data:`CONFIRMATORY`), decided by
  the registered analysis (``results/claims.json``) and registered before any run; every other entry (the plan's
  amendments, the companion's own claims, the lr/10 regimes added later, the real LLM's samples) is *exploratory*:
  it was added after earlier results were known.
- **correction**: the confirmatory family's p-values, read from the same bootstrap draws as their intervals
  (:func:`ddrl.report.stats.bootstrap_p`; the t-interval claims D1, D2, C2 from their t distribution), adjusted by
  Benjamini-Hochberg (:func:`scipy.stats.false_discovery_control`, false discovery rate 5%). A decided verdict
  *survives* when its adjusted p is below 0.05; a *not resolved* one has nothing to lose. ``python -m ddrl.study
  correct`` writes them to :data:`CORRECTION` (``tests/test_study_regenerates.py`` recomputes it).
- **bounds**: a difference of two accuracies cannot pass +-100 points (an accuracy minus 50, +-50); the
  small-sample ``t / z`` widening of the bootstrap (plan Sec. 4) can carry an interval past them, so it is shown cut
  at the bound (:func:`ddrl.study.claims.interval`); the committed numbers are unchanged.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy.stats import false_discovery_control

from ddrl.report.stats import NO_EFFECT_MARGIN, bootstrap_p, hierarchical_draws, percentile_draws, t_p
from ddrl.seeds import derive_seed
from ddrl.study.analysis import _band_effect, _g1_bootstrap, claim_matrix, load_base, load_questions
from ddrl.study.claims import FLOOR_NOTE, THREE, get, paper_sign
from ddrl.study.plan import RESULTS

#: The plan's Sec. 1 table, registered before any run: claim -> the regimes it named (``base``: the base model's
#: rollouts pooled over the regimes; ``amc_like_small_lr``: "AMC-like at lr/10", M1's only)
CONFIRMATORY: dict[str, tuple[str, ...]] = {
    "F1": ("base",), "F2": ("base",), "F3": ("base",), "G1": ("base",),
    "T1": ("aime_like", "math500_like"), "M1": THREE + ("amc_like_small_lr",), "M2": THREE,
    "A1": THREE, "A2": THREE, "A3": THREE, "D1": ("aime_like",), "D2": ("math500_like",),
    "C1": THREE, "C2": THREE, "R1": THREE, "S1": ("amc_like",), "H1": THREE}
#: The registered analysis, relative to ``results/``
REGISTERED = "claims.json"
#: The correction of the confirmatory family, relative to ``results/``
CORRECTION = "multiplicity.json"
ALPHA = 0.05
METHOD = "Benjamini-Hochberg"
#: The t-interval claims (plan Sec. 4): their p-values from the t distribution of their interval
T_CLAIMS = ("D1", "D2", "C2")


def registration(e: dict) -> str:
    """``confirmatory`` for a registered claim x regime of the plan's Sec. 1 (an amendment's entry, which names its
    arms ``a`` and ``b``, never is), else ``exploratory``."""
    return "confirmatory" if e["regime"] in CONFIRMATORY.get(e["id"], ()) and "a" not in e else "exploratory"


def _margin(e: dict) -> float:
    try:
        return get(e["id"]).margin
    except KeyError:
        return NO_EFFECT_MARGIN


def strength(e: dict) -> str:
    """``floor``, ``below 1 point`` (a sign verdict whose interval lies inside +-1 point) or ``-``."""
    if e.get("note") == FLOOR_NOTE:
        return "floor"
    points = e["metric"].endswith("[points]")
    if points and e["verdict"] in ("reproduced", "contradicted") and _null(e) is False \
            and -NO_EFFECT_MARGIN <= e["ci_low"] and e["ci_high"] <= NO_EFFECT_MARGIN:
        return "below 1 point"
    return "-"


def _null(e: dict) -> bool:
    """Whether the entry's claim is a null claim (R1: "barely matters")."""
    try:
        return get(e["id"]).paper_sign == 0
    except KeyError:
        return False


def test_of(e: dict) -> str:
    """Which interval test the entry's verdict made (:func:`ddrl.report.stats.bootstrap_p`'s ``test``)."""
    if _null(e):
        return "beyond" if e["verdict"] == "contradicted" else "inside"
    return "inside" if e["verdict"] == "no effect" else "sign"


# The confirmatory family's draws

def _draws(e: dict, df, groups, g1, n_boot: int) -> np.ndarray:
    """The bootstrap replicates the registered analysis drew for ``e`` (``ddrl.study.analysis``'s own matrices and
    streams), checked against the committed interval."""
    cid, regime = e["id"], e["regime"]
    rng = np.random.default_rng(derive_seed(0, "claims", cid, regime))
    if cid == "G1":
        g = g1.dropna(subset=["pos_adv_grpo"]).assign(q=lambda x: x.regime + "/" + x.question.astype(str))
        _, reps = _g1_bootstrap(g, np.array(sorted(g.q.unique())), rng, n_boot)
        lo, hi = np.nanquantile(reps, [0.025, 0.975])
        lo, hi = min(lo, e["estimate"]), max(hi, e["estimate"])
    else:
        d = _band_effect(groups, cid) if cid in ("F1", "F2", "F3") else claim_matrix(df, cid, regime)
        if d is None:
            raise ValueError(f"{cid} {regime}: no matrix in the committed runs")
        d = d.to_numpy()
        reps = percentile_draws(d[0], rng, n_boot) if d.shape[0] == 1 else hierarchical_draws(d, rng, n_boot)
        lo, hi = np.quantile(reps, [0.025, 0.975])
    return _checked(e, reps, lo, hi)


def _checked(e: dict, reps: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``reps``, whose 95% interval is [``lo``, ``hi``], where that is ``e``'s interval; else a ``ValueError``: they
    are not the draws of its analysis."""
    if abs(lo - e["ci_low"]) > 1e-6 or abs(hi - e["ci_high"]) > 1e-6:
        raise ValueError(f"{e['id']} {e['regime']}: the draws give [{lo}, {hi}], the committed interval is "
                         f"[{e['ci_low']}, {e['ci_high']}]: not the draws of its analysis")
    return reps


def holm(ps: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error), for comparison beside Benjamini-Hochberg's."""
    ps = np.asarray(ps, dtype=float)
    m = ps.size
    order = np.argsort(ps, kind="stable")
    adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ps[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def entry_p(e: dict, diffs, n_boot: int = 4000) -> float:
    """An amendment-style entry's p-value (:func:`test_of`), read from the draws its interval was taken from: its
    seeds x questions matrix ``diffs`` on its own stream, ``derive_seed(0, "claims", id, regime)``, checked against
    the entry's interval (a ``ValueError`` where they are not the same draws)."""
    rng = np.random.default_rng(derive_seed(0, "claims", e["id"], e["regime"]))
    reps = hierarchical_draws(np.asarray(diffs, dtype=float), rng, n_boot)
    return bootstrap_p(_checked(e, reps, *np.quantile(reps, [0.025, 0.975])), test_of(e), NO_EFFECT_MARGIN)


#: Stage 3's family (results/plan.md, Stage 3 item 4): all its entries, corrected by Holm's step-down method
STAGE3_METHOD = "Holm"


def stage_correction(analyses: Sequence[dict]) -> dict[tuple[str, str], dict]:
    """Stage 3's confirmatory family (every entry of its regimes' ``analyses``, each with its ``p`` measure): (claim
    id, regime) -> ``p``, Holm's ``p_holm`` over the whole family, and whether a decided verdict ``survives`` it (None:
    not resolved, nothing to lose). A ``ValueError`` names an entry without its p-value."""
    rows = []
    for res in analyses:
        ps = res.get("p", {})
        for e in res["entries"]:
            if e["id"] not in ps:
                raise ValueError(f"Stage 3 {e['regime']}: entry {e['id']} has no p-value (its analysis lacks the "
                                 "p measure); rerun python -m ddrl.study analyse")
            rows.append({"id": e["id"], "regime": e["regime"], "verdict": e["verdict"], "p": float(ps[e["id"]])})
    for r, h in zip(rows, holm([r["p"] for r in rows]) if rows else []):
        r["p_holm"] = float(h)
        r["survives"] = bool(h < ALPHA) if r["verdict"] != "not resolved" else None
    return {(r["id"], r["regime"]): r for r in rows}


def stage_registration(e: dict, rows: dict[tuple[str, str], dict]) -> str:
    """``confirmatory, survives Holm`` / ``confirmatory, does not survive Holm`` (decided) or ``confirmatory`` (not
    resolved, or no correction yet): every entry of Stage 3 was registered before its runs."""
    r = rows.get((e["id"], e["regime"]))
    if r is None or r["survives"] is None:
        return "confirmatory"
    return f"confirmatory, {'survives' if r['survives'] else 'does not survive'} {STAGE3_METHOD}"


def stage_marks(e: dict, rows: dict[tuple[str, str], dict]) -> list[str]:
    """What a Stage 3 entry prints beside its verdict: its strength (if any), then :func:`stage_registration`."""
    return ([] if strength(e) == "-" else [strength(e)]) + [stage_registration(e, rows)]


def correct(results: str | Path = RESULTS, runs: str | Path | None = None, n_boot: int = 4000) -> dict:
    """The confirmatory family of ``results``' registered analysis: each entry's p-value (from its own draws) and its
    Benjamini-Hochberg adjusted p-value (Holm's beside it), and whether its verdict survives. An entry at the floor is
    no test (the regime cannot tell the methods apart) and stays out of the family (``p`` None)."""
    results = Path(results)
    runs = Path(runs) if runs is not None else results / "runs"
    entries = [e for e in json.loads((results / REGISTERED).read_text()) if registration(e) == "confirmatory"]
    df = load_questions(runs)
    groups, g1 = load_base(runs)
    rows = []
    for e in entries:
        test = test_of(e)
        margin = _margin(e)
        if e.get("note") == FLOOR_NOTE:
            p = None
        elif e["id"] in T_CLAIMS:
            p = t_p(e["estimate"], e["ci_low"], e["ci_high"], e["n_seeds"], test, margin)
        else:
            p = bootstrap_p(_draws(e, df, groups, g1, n_boot), test, margin)
        rows.append({"id": e["id"], "regime": e["regime"], "verdict": e["verdict"], "test": test, "p": p})
    tested = [r for r in rows if r["p"] is not None]
    ps = [r["p"] for r in tested]
    for r, q, h in zip(tested, false_discovery_control(ps, method="bh") if ps else [], holm(ps)):
        r["p_adjusted"], r["p_holm"] = float(q), float(h)
    for r in rows:
        decided = r["p"] is not None and r["verdict"] != "not resolved"
        r["survives"] = bool(r["p_adjusted"] < ALPHA) if decided else None
        r["survives_holm"] = bool(r["p_holm"] < ALPHA) if decided else None
    return {"family": f"the confirmatory entries of results/{REGISTERED} (plan Sec. 1) not at the floor",
            "method": METHOD, "alpha": ALPHA, "n_boot": n_boot, "entries": rows}


def load(results: str | Path = RESULTS) -> dict[tuple[str, str], dict]:
    """The committed correction, (claim id, regime) -> its row; empty where none is committed."""
    path = Path(results) / CORRECTION
    if not path.is_file():
        return {}
    return {(r["id"], r["regime"]): r for r in json.loads(path.read_text())["entries"]}


def correction(e: dict, rows: dict[tuple[str, str], dict]) -> str:
    """``survives``, ``does not survive``, ``-`` (a confirmatory entry not resolved, or none committed) or
    ``n/a`` (exploratory: outside the corrected family)."""
    if registration(e) != "confirmatory":
        return "n/a"
    r = rows.get((e["id"], e["regime"]))
    if r is None or r["survives"] is None:
        return "-"
    return "survives" if r["survives"] else "does not survive"


def marks(e: dict, rows: dict[tuple[str, str], dict]) -> list[str]:
    """What a cell prints beside the registered verdict: its strength (if any), its registration and, confirmatory,
    its correction: ``["below 1 point", "exploratory"]``, ``["confirmatory, survives BH"]``."""
    out = [] if strength(e) == "-" else [strength(e)]
    c = correction(e, rows)
    if c in ("survives", "does not survive"):
        out.append(f"confirmatory, {c} BH")
    else:
        out.append(registration(e))
    return out


def summary(rows: dict[tuple[str, str], dict]) -> dict[str, int]:
    """How many confirmatory entries, at the floor, in the family, decided there, and surviving BH (and Holm)."""
    decided = [r for r in rows.values() if r["survives"] is not None]
    return {"confirmatory": len(rows), "floor": sum(r["p"] is None for r in rows.values()),
            "family": sum(r["p"] is not None for r in rows.values()), "decided": len(decided),
            "survive": sum(r["survives"] for r in decided), "survive_holm": sum(r["survives_holm"] for r in decided)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study correct",
                                 description="The confirmatory family's p-values from its bootstrap draws, corrected "
                                             "by Benjamini-Hochberg -> results/multiplicity.json")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the committed analyses (default results/)")
    ap.add_argument("--out", type=Path, default=None, help="default: results/multiplicity.json")
    args = ap.parse_args(argv)
    data = correct(args.results)
    out = args.out or Path(args.results) / CORRECTION
    out.write_text(json.dumps(data, indent=1) + "\n")
    s = summary({(r["id"], r["regime"]): r for r in data["entries"]})
    print(f"ddrl.study: {s['confirmatory']} confirmatory entries ({s['floor']} at the floor), {s['decided']} of the "
          f"{s['family']} tested decided, {s['survive']} survive {METHOD} at {ALPHA} ({s['survive_holm']} Holm) -> {out}")
    return 0
