"""Plan Amendments 43 and 44 (``ddrl.study.amendments.small_lr_etmr``): ETMR at lr/10 in MATH-500-like, on the registered and the
Xeon build; 46 and 47: in AMC-like, on the Xeon and the registered build."""

from __future__ import annotations

import json
from datetime import datetime

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from ddrl.study.amendments import small_lr
from ddrl.study.amendments import small_lr_etmr as E
from ddrl.study import runner as study
from ddrl.study.analysis import paired_matrix
from ddrl.study.plan import SCALES, SMALL_LR, Job
from ddrl.report.tables import entry_ci
from ddrl.study.amendments.wide import read_csvs

XEON, AMC, REG_AMC = E.DESIGNS["xeon"], E.DESIGNS["xeon_amc"], E.DESIGNS["registered_amc"]


def _clock(design: E.EtmrDesign, minutes: float) -> float:
    """Epoch seconds ``minutes`` after the design's clock (negative: before it)."""
    return datetime.fromisoformat(design.cutoff).timestamp() + 60 * minutes


def test_jobs_go_seed_by_seed_and_stop_at_each_plans_clock():
    js = E.jobs(E.REGISTERED, now=_clock(E.REGISTERED, -1))
    assert [(j.regime, j.seed, j.methods) for j in js] == [(small_lr.REGIME, s, ("etmr",)) for s in range(18)]
    js = E.jobs(XEON, now=_clock(XEON, -1))
    assert [(j.seed, j.methods) for j in js] == [(s, (m,)) for s in range(12) for m in ("ttrl", "ddrl", "etmr")]
    assert E.jobs(E.REGISTERED, now=_clock(E.REGISTERED, +1)) == [] == E.jobs(XEON, now=_clock(XEON, +1))
    assert E.REGISTERED.cutoff < XEON.cutoff  # Amendment 44 runs after Amendment 43
    js = E.jobs(AMC, now=_clock(AMC, -1))  # Amendment 46: ETMR only, in AMC-like at lr/10
    assert [(j.regime, j.seed, j.methods) for j in js] == [(SMALL_LR, s, ("etmr",)) for s in range(12)]
    assert E.jobs(AMC, now=_clock(AMC, +1)) == [] and (AMC.base, AMC.stands_for, AMC.name) == ("amc_like",) * 2 + ("AMC-like",)
    js = E.jobs(REG_AMC, now=_clock(REG_AMC, -1))  # Amendment 47: the same on the registered build, its 19 seeds
    assert [(j.regime, j.seed, j.methods) for j in js] == [(SMALL_LR, s, ("etmr",)) for s in range(19)]
    assert E.jobs(REG_AMC, now=_clock(REG_AMC, +1)) == [] and REG_AMC.out == small_lr.RUNS


def test_the_xeon_designs_regime_is_the_registered_one_on_the_xeon_weights():
    """Amendment 44's regime: the registered lr/10 rule on the Xeon build's MATH-500-like regime - the same regime
    definition as Amendment 28's, the Xeon build's weights (written by ``python -m ddrl.study.amendments.small_lr_etmr regime --build
    xeon``)."""
    xeon = small_lr.regime_file(XEON.results / "regimes_base.json")
    registered = json.loads(small_lr.REGIME_FILE.read_text())
    assert xeon["regimes"] == registered["regimes"] and xeon["weights"] != registered["weights"]
    committed = XEON.results / small_lr.REGIME_FILE.name
    if committed.is_file():
        assert json.loads(committed.read_text()) == json.loads(json.dumps(xeon))


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The real entry points on the tiny testbed, seeds 0-2: Amendment 28's untrained, TTRL and DDRL runs, then
    Amendment 43's ETMR run (before its clock). Returns (CSV folder, run folder)."""
    tmp = tmp_path_factory.mktemp("small_lr_etmr")
    out, runs = tmp / "out", str(tmp / "runs")
    todo = [*small_lr.jobs([0, 1, 2]), *E.jobs(E.REGISTERED, [0, 1, 2], now=_clock(E.REGISTERED, -1))]
    statuses = study.run_jobs(todo, SCALES["smoke"], out, runs, workers=2, progress=False)
    assert {s["status"] for s in statuses} == {"ran"}
    return out, runs


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_registered_design_smoke_analysis(smoke):
    """Amendment 43 on the smoke runs: the analysis refuses before the clock and below its seed minimum, then gives M2,
    M3, P3 with the paper's Table 2 differences; M2 + M3 is DDRL - TTRL seed by seed and question by question, so
    their estimates add up to M1's."""
    out, _ = smoke
    assert E.done_seeds(E.REGISTERED, out) == [0, 1, 2]
    with pytest.raises(ValueError, match=r"Amendment 43 seeds missing \[3, 4, .*17\] before its clock"):
        E.analyse(E.REGISTERED, out, n_boot=200, now=_clock(E.REGISTERED, -1))
    with pytest.raises(ValueError, match="Amendment 43: 3 complete seeds from 0, the plan needs 6"):
        E.analyse(E.REGISTERED, out, n_boot=200, now=_clock(E.REGISTERED, +1))
    res = E.analyse(E.REGISTERED, out, n_boot=200, now=_clock(E.REGISTERED, +1), min_seeds=3)
    assert [e["id"] for e in res["entries"]] == ["M2", "M3", "P3"] and res["seeds"] == [0, 1, 2]
    assert [e["paper"] for e in res["entries"]] == [3.8, 3.9, 44.2]  # Table 2, MATH-500: 80.7, 76.9, 73.0, 32.7
    assert {e["regime"] for e in res["entries"]} == {small_lr.REGIME} and all(e["n_seeds"] == 3 for e in res["entries"])
    m1 = small_lr.analyse(out, n_boot=200, seeds=range(3))["entries"][2]
    assert m1["id"] == "M1" and res["entries"][0]["estimate"] + res["entries"][1]["estimate"] == pytest.approx(m1["estimate"])
    assert set(res["rl_minutes"]) == {"ttrl", "etmr", "ddrl"}
    assert {(r["regime"], r["method"]) for r in res["levels"]} == {
        ("math500_like", "no_adaptation"), *((small_lr.REGIME, m) for m in ("ttrl", "etmr", "ddrl"))}
    assert {(v["regime"], v["method"]) for v in res["vote"]} == {(small_lr.REGIME, m) for m in ("ttrl", "etmr", "ddrl")}
    shown = E.beside(E.REGISTERED)  # the registered study's MATH-500-like M2 at the default lr
    table = E.markdown(res, E.REGISTERED).splitlines()
    assert table[2].startswith(f"| M2 DDRL - ETMR | +3.8 | {entry_ci(shown['M2'])}, 46 seeds, *not resolved* |")
    assert "| M3 ETMR - TTRL | +3.9 | not measured |" in table[3]
    assert "(2.53 / 2.46 / 2.36; 1.01 / 1.00 / 0.99)" in table[4] and "predicted at 12 / 14 / 18 seeds" in table[0]
    assert table[-1].startswith("| ddrl | lr/10 (3e-6) |") and table[-4].startswith("| no_adaptation | - |")
    fig = E.etmr_figure(res, E.REGISTERED)
    assert len(fig.axes) == 3 and "Amendment 43, seeds 0-2" in fig._suptitle.get_text()
    plt.close(fig)


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_xeon_design_smoke_analysis_gives_amendment_28s_entries_too(smoke):
    """Amendment 44's design on the same smoke runs (its jobs load every one: same keys): P1, P2, M1 equal Amendment
    28's analysis entry for entry (the same bootstrap streams), M2, M3, P3 Amendment 43's; the table shows the
    entries given beside them."""
    out, runs = smoke
    statuses = study.run_jobs(E.jobs(XEON, [0, 1, 2], now=_clock(XEON, -1)), SCALES["smoke"], out, runs, workers=1,
                              progress=False)
    assert {s["status"] for s in statuses} == {"loaded"}
    res = E.analyse(XEON, out, n_boot=200, now=_clock(XEON, +1), min_seeds=3)
    assert [e["id"] for e in res["entries"]] == ["P1", "P2", "M1", "M2", "M3", "P3"]
    registered = {e["id"]: e for e in E.analyse(E.REGISTERED, out, n_boot=200, now=_clock(E.REGISTERED, +1),
                                                 min_seeds=3)["entries"]}
    amendment28 = {e["id"]: e for e in small_lr.analyse(out, n_boot=200, seeds=range(3))["entries"]}
    for e in res["entries"]:
        assert e == (amendment28 if e["id"] in amendment28 else registered)[e["id"]], e["id"]
    table = E.markdown(res, XEON, shown=amendment28).splitlines()
    assert "registered build at lr/10 (Amendments 28, 43)" in table[0] and "predicted at 8 / 10 / 12 seeds" in table[0]
    assert table[2].startswith(f"| P1 TTRL - no adaptation | +40.3 | {entry_ci(amendment28['P1'])}, 3 seeds, ")
    assert "| M2 DDRL - ETMR | +3.8 | not measured |" in table[5]


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_amc_like_design_smoke_analysis(tmp_path):
    """Amendment 46's design on smoke runs in AMC-like (the untrained run in its base, TTRL, DDRL and ETMR at lr/10,
    seeds 0-1): AMC's Table 2 differences, M2 + M3 = DDRL - TTRL, the table and figure name the regime."""
    out, runs = tmp_path / "out", str(tmp_path / "runs")
    todo = [*(Job("amc_like", s, ("no_adaptation",), "smoke") for s in (0, 1)),
            *(Job(SMALL_LR, s, (m,), "smoke") for s in (0, 1) for m in ("ttrl", "ddrl")),
            *E.jobs(AMC, [0, 1], now=_clock(AMC, -1))]
    assert {s["status"] for s in study.run_jobs(todo, SCALES["smoke"], out, runs, workers=2, progress=False)} == {"ran"}
    assert E.done_seeds(AMC, out) == [0, 1]
    res = E.analyse(AMC, out, n_boot=200, now=_clock(AMC, +1), min_seeds=2)
    got = {e["id"]: e for e in res["entries"]}
    assert list(got) == ["M2", "M3", "P3"] and res["regime"] == SMALL_LR
    assert [e["paper"] for e in res["entries"]] == [2.1, 1.9, 22.2]  # Table 2, AMC: 52.9, 50.8, 48.9, 28.6
    assert {e["regime"] for e in res["entries"]} == {SMALL_LR}
    m1 = paired_matrix(read_csvs(tmp_path.glob("out/*/*-seed0?.csv.gz")), SMALL_LR, "ddrl", "ttrl", "adapted")
    assert got["M2"]["estimate"] + got["M3"]["estimate"] == pytest.approx(m1.to_numpy().mean())
    table = E.markdown(res, AMC, shown={}).splitlines()
    assert "| paper (AMC) | AMC-like, default lr (registered) | **Xeon build, AMC-like at lr/10 (Amendment 46, " in table[0]
    assert table[2].startswith("| M2 DDRL - ETMR | +2.1 | not measured |")
    assert {r["regime"] for r in res["levels"]} == {"amc_like", SMALL_LR} and table[-1].startswith("| ddrl | lr/10 (3e-6) |")
    fig = E.etmr_figure(res, AMC)
    assert fig._suptitle.get_text().startswith("AMC-like, Xeon build: ETMR beside TTRL and DDRL (plan Amendment 46")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]  # short names: long ones overlapped when rotated
    assert {"DDRL\nlr/10", "ETMR\nlr/10", "No adaptation"} <= set(ticks) and max(len(x) for t in ticks for x in t.split("\n")) <= 13
    plt.close(fig)


def _registered(root, regime: str, methods: tuple[str, ...], base: str | None = None) -> pd.DataFrame:
    paths = [p for m in methods for p in sorted((root / regime).glob(f"{m}-seed[0-9][0-9].csv.gz"))]
    if base:
        paths += sorted((root / base).glob("no_adaptation-seed[0-9][0-9].csv.gz"))
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in paths], ignore_index=True)


def test_the_plans_predicted_half_widths_are_the_measured_components():
    """Amendments 43 and 44's predictions at their seed counts x 256 questions, from the committed matrices the plans
    name (the registered default-lr MATH-500-like ones of the same difference; Amendment 28's lr/10 M1 and P1 standing
    in for ETMR's; the Xeon build's default-lr P1, P2, M1), as the designs and the plan state them."""
    from ddrl.report.stats import predicted_half_width, variance_components

    runs = small_lr.RUNS
    default = _registered(runs, "math500_like", ("ttrl", "etmr", "ddrl", "no_adaptation"))
    lr10 = _registered(runs, small_lr.REGIME, ("ttrl", "ddrl"), base="math500_like")
    xeon = _registered(XEON.out, "math500_like", ("ttrl", "ddrl", "no_adaptation"))
    stand_in = {"P1": "P1", "P2": "P2", "M1": "M1", "M2": "M1", "M3": "M1", "P3": "P1"}

    def vc(df, regime, cid):
        return variance_components(paired_matrix(df, regime, *E.PAIRS[cid], "adapted").to_numpy())

    plan = " ".join((small_lr.RESULTS / "plan.md").read_text().split())
    for design, sets in ((E.REGISTERED, lambda c: (vc(default, "math500_like", c), vc(lr10, small_lr.REGIME, stand_in[c]))),
                         (XEON, lambda c: (vc(lr10, small_lr.REGIME, stand_in[c]),
                                           vc(xeon if c in ("P1", "P2", "M1") else default, "math500_like", c)))):
        section = plan[plan.index(f"{design.amendment}. **Why**"):]
        for cid in design.claims:
            got = tuple(tuple(round(predicted_half_width(v, n, 256), 2) for n in design.predicted_at) for v in sets(cid))
            assert got == design.predicted[cid], (design.amendment, cid)
            first, second = (" / ".join(f"{x:.2f}" for x in g) for g in got)
            assert f"**{cid}** {first} vs " in section and f"vs {second}" in section, (design.amendment, cid)
    # Amendments 46 and 47: at their seed counts x 128, the build's lr/10 AMC-like M1 and P1 (Xeon: Amendments 36-37;
    # registered: Amendment 6's registered side) standing in, then the registered default-lr AMC-like matrices of the
    # same differences
    amc = _registered(runs, "amc_like", ("ttrl", "etmr", "ddrl", "no_adaptation"))
    for design in (AMC, REG_AMC):
        amc10 = _registered(design.out, SMALL_LR, ("ttrl", "ddrl"), base="amc_like")
        section = plan[plan.index(f"{design.amendment}. **Why**"):]
        for cid in design.claims:
            got = tuple(tuple(round(predicted_half_width(v, n, 128), 2) for n in design.predicted_at)
                        for v in (vc(amc10, SMALL_LR, stand_in[cid]), vc(amc, "amc_like", cid)))
            assert got == design.predicted[cid], (design.amendment, cid)
            first, second = (" / ".join(f"{x:.2f}" for x in g) for g in got)
            assert f"**{cid}** {first} vs {second}" in section, (design.amendment, cid)


@pytest.mark.regenerate  # the committed analysis recomputed: make test-study (test_study_regenerates.py covers it too)
def test_committed_analyses_recompute_from_the_committed_csvs():
    for design in E.DESIGNS.values():
        if not design.analysis.is_file():
            continue  # not analysed yet
        committed = json.loads(design.analysis.read_text())
        assert json.loads(json.dumps(E.analyse(design))) == committed, design.amendment
