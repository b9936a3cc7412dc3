"""Verdicts with their strength (issue 95): floor / below 1 point, confirmatory or exploratory, the correction of the
confirmatory family from the same bootstrap draws (``ddrl.study.strength``). Entries made by ``_e`` are SYNTHETIC."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from conftest import REPO
from ddrl.report.stats import bootstrap_p, hierarchical_bootstrap, hierarchical_draws, t_p
from ddrl.study import strength as ST
from ddrl.study.claims import FLOOR_NOTE, bounds, shown

RESULTS = REPO / "results"


def _e(cid, regime, est, lo, hi, verdict, metric="pass@1 a - b [points]", **extra):
    return {"id": cid, "claim": "c", "regime": regime, "metric": metric, "paper": None, "estimate": est,
            "ci_low": lo, "ci_high": hi, "n_seeds": 4, "n_questions": 128, "verdict": verdict, **extra}


def test_the_confirmatory_claims_are_the_plans_section_1_table():
    """CONFIRMATORY names exactly the claims of results/plan.md's Sec. 1 table (registered before any run)."""
    plan = (RESULTS / "plan.md").read_text()
    sec1 = plan[plan.index("## 1. Claims"):plan.index("## 2. Regimes")]
    ids = re.findall(r"^\| ([A-Z]\d) \|", sec1, flags=re.M)
    assert ids and set(ids) == set(ST.CONFIRMATORY)
    assert ST.CONFIRMATORY["M1"][-1] == "amc_like_small_lr"  # "all three + AMC-like at lr/10"


def test_strength_and_registration_of_synthetic_entries():
    assert ST.strength(_e("M1", "aime_like", 0.0, 0.0, 0.0, "no effect", note=FLOOR_NOTE)) == "floor"
    assert ST.strength(_e("A3", "amc_like", 0.5, 0.1, 0.9, "reproduced")) == "below 1 point"
    assert ST.strength(_e("A1", "math500_like", -0.5, -0.9, -0.1, "contradicted")) == "below 1 point"
    assert ST.strength(_e("A3", "amc_like", 1.5, 0.7, 2.2, "reproduced")) == "-"
    assert ST.strength(_e("A2", "amc_like", 0.1, -0.5, 0.5, "no effect")) == "-"  # the band is the verdict itself
    assert ST.strength(_e("R1", "amc_like", 0.3, 0.1, 0.5, "reproduced")) == "-"  # a null claim's own band
    assert ST.registration(_e("M1", "amc_like_small_lr", 3, 1, 5, "reproduced")) == "confirmatory"
    assert ST.registration(_e("M1", "math500_like_small_lr", 3, 1, 5, "reproduced")) == "exploratory"  # Amendment 28
    assert ST.registration(_e("P1", "amc_like", 3, 1, 5, "reproduced")) == "exploratory"  # Amendment 16
    assert ST.registration(_e("A3", "amc_like", 3, 1, 5, "reproduced", a="ddrl", b="bcs_dae")) == "exploratory"


def test_bounds_cut_only_what_the_quantity_cannot_take():
    assert bounds("accuracy(>= 45/64) - accuracy(6-44/64) [points]") == (-100.0, 100.0)
    assert bounds("50 - accuracy of answers seen <= 5/64 [points]") == (-50.0, 50.0)
    assert bounds("(DDRL - TTRL) default testbed - (DDRL - TTRL) weaker testbed [points]") == (-200.0, 200.0)
    assert bounds("wall time additional RL - COR [% of the RL phase]") is None
    assert shown(_e("F3", "base", 80.8, 56.0, 101.4, "reproduced")) == (56.0, 100.0)
    assert shown(_e("M1", "amc_like", 3.0, 0.9, 5.0, "reproduced")) == (0.9, 5.0)


def test_p_values_read_from_the_draws_decide_as_the_interval_does():
    """bootstrap_p < 0.05 exactly where the 95% percentile interval of the same draws decides (away from the edge);
    the draws are hierarchical_bootstrap's own (the same stream gives the same interval)."""
    rng = np.random.default_rng(0)
    for shift in (-3.0, -1.2, 0.0, 0.4, 2.5):
        d = shift + rng.normal(0, 4, size=(8, 64)) + rng.normal(0, 2, size=(8, 1))
        iv = hierarchical_bootstrap(d, np.random.default_rng(1))
        reps = hierarchical_draws(d, np.random.default_rng(1))
        assert np.quantile(reps, [0.025, 0.975]) == pytest.approx([iv.ci_low, iv.ci_high], abs=1e-12)
        p = bootstrap_p(reps, "sign")
        excludes = iv.ci_low > 0 or iv.ci_high < 0
        if abs(iv.ci_low) > 0.05 and abs(iv.ci_high) > 0.05:
            assert (p < 0.05) == excludes, (shift, p, iv)
        inside = -1 <= iv.ci_low and iv.ci_high <= 1
        assert (bootstrap_p(reps, "inside") < 0.05) == inside or min(abs(abs(iv.ci_low) - 1), abs(abs(iv.ci_high) - 1)) < 0.05
    assert bootstrap_p(np.zeros(4000), "sign") == 1.0  # a floor: no evidence of a sign
    # a t-interval's p-value from the interval alone
    assert t_p(2.0, 0.0, 4.0, 10) == pytest.approx(0.05, abs=1e-9)


def test_holm_by_hand():
    assert ST.holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])


def test_the_committed_correction_is_the_confirmatory_family_of_the_committed_claims():
    """results/multiplicity.json holds every confirmatory entry of results/claims.json with its verdict; its adjusted
    p-values are BH's (and Holm's) of its p-values; a decided verdict survives iff adjusted p < 0.05; a decided sign
    verdict's p is below 0.05 (its interval excluded 0); the floor stays out of the family. Recomputed from the
    draws by ``make test-study`` (tests/test_study_regenerates.py)."""
    data = json.loads((RESULTS / ST.CORRECTION).read_text())
    rows = data["entries"]
    claims = [e for e in json.loads((RESULTS / "claims.json").read_text()) if ST.registration(e) == "confirmatory"]
    assert [(r["id"], r["regime"], r["verdict"]) for r in rows] == [(e["id"], e["regime"], e["verdict"]) for e in claims]
    floors = {(e["id"], e["regime"]) for e in claims if e.get("note") == FLOOR_NOTE}
    assert {(r["id"], r["regime"]) for r in rows if r["p"] is None} == floors
    tested = [r for r in rows if r["p"] is not None]
    assert [r["p_adjusted"] for r in tested] == pytest.approx(false_discovery_control([r["p"] for r in tested]).tolist())
    assert [r["p_holm"] for r in tested] == pytest.approx(ST.holm([r["p"] for r in tested]).tolist())
    for r in rows:
        decided = r["p"] is not None and r["verdict"] != "not resolved"
        assert r["survives"] == (r["p_adjusted"] < ST.ALPHA if decided else None), r
        if decided:
            assert r["p"] < 0.05 + 2 / (data["n_boot"] + 1), r  # the interval decided at 95%
    s = ST.summary(ST.load())
    assert s["confirmatory"] == len(claims) and s["floor"] == len(floors) and 0 < s["survive_holm"] <= s["survive"]


def test_stage3s_family_is_corrected_by_holm_from_each_entrys_own_draws():
    """Stage 3 (plan item 4): each entry's p comes from the draws of its interval (a matrix that is not the entry's
    is refused), Holm runs over every entry of the stage's regimes, and a decided verdict survives iff Holm's p is
    below 0.05. SYNTHETIC matrices: one clear effect, one too noisy to resolve."""
    from ddrl.study.claims import amendment_entry

    rng = np.random.default_rng(3)
    clear, null = 4 + rng.normal(0, 3, (10, 64)), rng.normal(0.5, 25, (10, 64))
    e1 = amendment_entry("L0", "amc_like", "c", "adapted pass@1, a - b [points]", "ttrl", "random_reward", clear)
    e2 = amendment_entry("L1r", "amc_like", "c", "adapted pass@1, a - b [points]", "random_reward", "ttrl", null)
    p1, p2 = ST.entry_p(e1, clear), ST.entry_p(e2, null)
    assert (e1["verdict"], e2["verdict"]) == ("reproduced", "not resolved") and p1 < 0.05 <= p2
    with pytest.raises(ValueError, match="L0 amc_like: the draws give"):
        ST.entry_p(e1, null)
    rows = ST.stage_correction([{"entries": [e1, e2], "p": {"L0": p1, "L1r": p2}}])
    assert rows["L0", "amc_like"]["p_holm"] == pytest.approx(min(1, 2 * min(p1, p2)))
    assert rows["L0", "amc_like"]["survives"] is True
    assert rows["L1r", "amc_like"]["survives"] is None  # not resolved: nothing to lose
    assert ST.stage_marks(e1, rows) == ["confirmatory, survives Holm"] and ST.stage_marks(e2, rows) == ["confirmatory"]
    weak = ST.stage_correction([{"entries": [e1, e2], "p": {"L0": 0.03, "L1r": 0.5}}])  # 2 x 0.03 > 0.05
    assert ST.stage_marks(e1, weak) == ["confirmatory, does not survive Holm"]
    with pytest.raises(ValueError, match="entry L1r has no p-value"):
        ST.stage_correction([{"entries": [e1, e2], "p": {"L0": p1}}])
