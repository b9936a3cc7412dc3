"""Plan Amendments 45 and 46's held-out part (``ddrl.study.amendments.etmr_heldout``): ETMR, TTRL and DDRL at lr/10 on fresh questions."""

from __future__ import annotations

import json
from datetime import datetime

import pandas as pd
import pytest

from ddrl.study.amendments import etmr_heldout as H
from ddrl.study.amendments import small_lr
from ddrl.study.amendments import small_lr_etmr as E
from ddrl.study import runner as study
from ddrl.study.plan import untrained
from ddrl.report.stats import predicted_half_width, variance_components
from ddrl.study.analysis import paired_matrix
from ddrl.study.plan import HELDOUT_X, SCALES, SMALL_LR, Job, heldout_x_path

XEON, AMC = H.DESIGNS["xeon"], H.DESIGNS["xeon_amc"]


def test_designs_evaluate_what_no_committed_csv_holds_and_read_the_rest():
    """The registered build evaluates ETMR only (Amendment 31's CSVs hold the others); the Xeon build every run of
    Amendment 44 and the untrained model; the AMC-like design ETMR only (Amendment 38's CSVs hold the others), on the
    seeds Amendment 46's runs complete."""
    assert H.REGISTERED.evaluates == ("etmr",) and H.REGISTERED.seeds == tuple(range(18))
    assert H.reads(H.REGISTERED) == ["no_adaptation", "ttrl", "etmr", "ddrl"]
    assert H.reads(XEON) == list(XEON.evaluates) == ["no_adaptation", "ttrl", "bcs_dae", "etmr", "ddrl"]
    assert XEON.claims == ("H1x", "H1xT", "H1xD", "H1xC", "H1xR", "P3x", "M2x", "M3x")
    assert [(j.regime, j.seed, j.methods, j.label) for j in H.jobs(H.REGISTERED)][:1] == [
        (small_lr.REGIME, 0, ("etmr",), "H1x")]
    assert AMC.regime == SMALL_LR and AMC.runs_of == "xeon_amc" and AMC.amendment == 46
    assert AMC.complete() == E.done_seeds(E.DESIGNS["xeon_amc"])
    for design in H.DESIGNS.values():  # the committed evaluations the designs read but do not make
        for m in set(H.reads(design)) - set(design.evaluates):
            assert all(heldout_x_path(design.out, design.regime, m, s).is_file() for s in design.complete()), m
    assert [H.pair(c) for c in ("P3x", "M2x", "M3x", "H1xD")] == [
        ("etmr", "no_adaptation"), ("ddrl", "etmr"), ("etmr", "ttrl"), ("ddrl", "ttrl")]


def _heldout(out, regime: str, methods, seeds) -> pd.DataFrame:
    return pd.concat([pd.read_csv(heldout_x_path(out, regime, m, s), dtype={"question": str})
                      for m in methods for s in seeds], ignore_index=True)


def test_the_plans_predicted_half_widths_are_the_measured_components():
    """Each design's predictions at its seeds x 1,536, from the committed matrices the plan names (the registered
    build's lr/10 MATH-500-like held-out ones of Amendment 31; the Xeon build's lr/10 AMC-like ones of Amendment 38),
    as the designs and the plan state them."""
    methods = ("no_adaptation", "ttrl", "bcs_dae", "ddrl")
    reg = _heldout(small_lr.RUNS, small_lr.REGIME, methods, range(18))
    amc = _heldout(XEON.out, SMALL_LR, methods, range(12))
    amc_default = _heldout(small_lr.RUNS, "amc_like", ("no_adaptation", "ttrl"), range(19))  # registered, default lr
    stand_in = {"P3x": "H1xT", "M2x": "H1xD", "M3x": "H1xR"}

    def hw(df, regime, cid, n):
        vc = variance_components(paired_matrix(df, regime, *H.pair(stand_in.get(cid, cid)), HELDOUT_X).to_numpy())
        return f"{predicted_half_width(vc, n, 1536):.2f}"

    plan = " ".join((small_lr.RESULTS / "plan.md").read_text().split())
    for design, sets in ((H.REGISTERED, lambda c: [hw(reg, small_lr.REGIME, c, 18)]),
                         (XEON, lambda c: [hw(reg, small_lr.REGIME, c, 10), hw(amc, SMALL_LR, c, 10)]),
                         (AMC, lambda c: [hw(amc, SMALL_LR, c, 12)]),
                         (H.DESIGNS["registered_amc"], lambda c: [hw(amc, SMALL_LR, c, 12),
                                                                   hw(amc_default, "amc_like", c, 12)])):
        for cid in design.claims:
            assert design.predicted[cid] == " / ".join(sets(cid)), (design.build, design.regime, cid)
    section = plan[plan.index("45. **Why**"):plan.index("46. **Why**")]
    assert "seeds **P3x** 0.36, **M2x** 0.71, **M3x** 0.16" in section
    assert all(f"**{c}** {XEON.predicted[c]}" in section for c in XEON.claims)
    assert "**P3x** 0.73, **M2x** 0.63, **M3x** 0.31" in plan[plan.index("46. **Why**"):]
    a48 = plan[plan.index("48. **Why**"):]
    assert "lr/10 AMC-like H1xT matrix (Amendment 38, TTRL - no adaptation) **0.73**" in a48
    assert "default-lr AMC-like H1xT matrix (19 seeds) **1.47**" in a48


def _clock(design: E.EtmrDesign, minutes: float) -> float:
    return datetime.fromisoformat(design.cutoff).timestamp() + 60 * minutes


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The real entry points on the tiny testbed, seeds 0-1: the untrained, TTRL, DDRL and ETMR runs at lr/10 in
    MATH-500-like, then the Xeon design's H1x jobs (all five runs on the fresh questions), then the registered design's
    (ETMR's evaluation: loaded). Returns (CSV folder, run folder)."""
    tmp = tmp_path_factory.mktemp("etmr_heldout")
    out, runs = tmp / "out", str(tmp / "runs")
    todo = [*small_lr.jobs([0, 1]), *E.jobs(E.REGISTERED, [0, 1], now=_clock(E.REGISTERED, -1))]
    assert {s["status"] for s in study.run_jobs(todo, SCALES["smoke"], out, runs, workers=2, progress=False)} == {"ran"}
    assert untrained([0, 1], runs, "smoke", small_lr.REGIME, H.TRAINED) == []
    assert untrained([2], runs, "smoke", small_lr.REGIME, ("etmr",)) == [("etmr", 2)]  # never trained: refused by run
    statuses = study.run_jobs(H.jobs(XEON, [0, 1]), SCALES["smoke"], out, runs, workers=2, progress=False)
    assert {s["status"] for s in statuses} == {"ran"}
    statuses = study.run_jobs(H.jobs(H.REGISTERED, [0, 1]), SCALES["smoke"], out, runs, workers=1, progress=False)
    assert {s["status"] for s in statuses} == {"loaded"}
    return out, runs


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_analyses_of_both_builds_designs(smoke):
    """On the smoke runs: every loaded run's adapted rows equal its CSV; M2x + M3x is DDRL - TTRL on the fresh
    questions, seed by seed and question by question (H1xD); the registered design's entries equal the Xeon design's
    (same streams, same CSVs); the tables name each claim and run."""
    out, _ = smoke
    with pytest.raises(ValueError, match="lack a held-out evaluation"):
        H.analyse(H.REGISTERED, out, n_boot=200, seeds=[0, 1, 2])
    res = H.analyse(XEON, out, n_boot=200, seeds=[0, 1])
    got = {e["id"]: e for e in res["entries"]}
    assert list(got) == list(XEON.claims) and {e["regime"] for e in res["entries"]} == {small_lr.REGIME}
    assert got["M2x"]["estimate"] + got["M3x"]["estimate"] == pytest.approx(got["H1xD"]["estimate"])
    assert all(got[c]["paper"] is None and got[c]["metric"].startswith("held-out pass@1") for c in H.CLAIMS)
    assert res["registered_reproduced"] == res["registered_checked"] == 6  # TTRL, ETMR, DDRL x 2 seeds
    assert [r["method"] for r in res["levels"]] == H.reads(XEON)
    registered = H.analyse(H.REGISTERED, out, n_boot=200, seeds=[0, 1])
    assert registered["entries"] == [got[c] for c in H.CLAIMS]
    table = H.markdown(res, XEON).splitlines()
    assert table[0].startswith("| claim (held-out pass@1 on 1,536 fresh MATH-500-like questions, points; Xeon build")
    assert table[2].startswith("| H1x DDRL at lr/10 - no adaptation, held-out | 2 |") and "(0.97 / 1.12)" in table[2]
    assert table[9].startswith("| M3x ETMR - TTRL at lr/10, held-out | 2 |") and table[-1].startswith("| ddrl |")


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_the_amc_like_design_follows_amendment_46s_runs(smoke, tmp_path):
    """Amendment 46's held-out part: its seeds are the ETMR runs' complete seeds, and its analysis refuses before
    their clock (unless all 12 are complete) and below the plan's six seeds."""
    out, runs = smoke
    assert AMC.complete(out) == []  # no AMC-like lr/10 runs in the smoke tree
    with pytest.raises(ValueError, match="0 complete seeds of its runs"):
        H.analyse(AMC, out, n_boot=200, now=_clock(E.DESIGNS["xeon_amc"], +1))
    assert H.jobs(AMC) == [Job(SMALL_LR, s, ("etmr",), "H1x") for s in AMC.complete()]


@pytest.mark.regenerate  # the committed analysis recomputed: make test-study (test_study_regenerates.py covers it too)
def test_committed_analyses_recompute():
    for design in H.DESIGNS.values():
        if not design.analysis.is_file():
            continue  # not analysed yet
        committed = json.loads(design.analysis.read_text())
        assert json.loads(json.dumps(H.analyse(design))) == committed, (design.amendment, design.build)


def test_a_held_out_part_never_run_says_why_and_refuses_to_run(capsys):
    """Amendment 46's evaluations needed its runs' weights, lost with the Xeon machine's cache: ``run`` refuses with the
    reason (before any work), ``status`` states it; the designs that ran carry no such reason."""
    assert H.DESIGNS["xeon_amc"].not_run.startswith("not run: its ETMR runs' weights were lost")
    assert not H.DESIGNS["registered"].not_run and not H.DESIGNS["xeon"].not_run
    with pytest.raises(SystemExit) as e:
        H.main(["run", "--build", "xeon_amc"])
    assert e.value.code == 2 and "Amendment 46's held-out part was not run" in capsys.readouterr().err
    H.main(["status", "--build", "xeon_amc"])
    assert capsys.readouterr().out.rstrip().endswith("(plan note of 2026-12-01)")


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_the_registered_amc_like_design_evaluates_amendment_47s_etmr_runs_and_the_untrained_model(smoke):
    """Amendment 48: P3x only (the registered lr/10 TTRL and DDRL runs in AMC-like kept no weights), on the seeds
    Amendment 47's ETMR runs completed; each job evaluates the untrained model and ETMR in ``amc_like_small_lr``."""
    out, _ = smoke
    design = H.DESIGNS["registered_amc"]
    assert design.claims == ("P3x",) and H.reads(design) == ["no_adaptation", "etmr"] and not design.not_run
    assert design.runs_of == "registered_amc" and design.regime == SMALL_LR and design.amendment == 48
    assert design.complete(out) == []  # no AMC-like lr/10 runs in the smoke tree
    assert H.jobs(design, [0, 1]) == [Job(SMALL_LR, s, ("no_adaptation", "etmr"), "H1x") for s in (0, 1)]
