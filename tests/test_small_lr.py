"""Plan Amendment 28: P1, P2 and M1 in MATH-500-like at the paper's small learning rate (``ddrl.small_lr``)."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pytest

from ddrl import claims, small_lr, study
from ddrl.regimes import small_lr_regime
from ddrl.study_plan import SAME_BASE, SCALES, csv_path, load_regimes


def test_the_regime_is_math500_like_under_the_registered_lr10_rule():
    regs = load_regimes()
    math, r = regs["math500_like"], regs[small_lr.REGIME]
    assert r == small_lr_regime(math) and (r.lr, r.episodes) == (3e-6, 4)
    assert (r.num_ops, r.n_adapted, r.overrides) == (math.num_ops, math.n_adapted, math.overrides)
    assert r.records() == math.records()  # the same 256 adapted questions
    assert small_lr_regime(regs["amc_like"]) == regs["amc_like_small_lr"]  # one rule: the registered lr/10 regime's
    assert SAME_BASE[small_lr.REGIME] == "math500_like"  # its untrained runs are MATH-500-like's
    assert json.loads(small_lr.REGIME_FILE.read_text()) == small_lr.regime_file()  # the committed file is the rule's
    exp = study.experiment(r, SCALES["default"], study.wants_heldout(r.name, "ttrl"))
    cfg = exp.config("ttrl", 0)
    assert (cfg.lr, cfg.episodes, cfg.max_new_tokens) == (3e-6, 4, 96) and not exp.heldout
    # the registered study's job lists never name it
    assert small_lr.REGIME not in {j.regime for j in study.stage1_jobs(list(regs), SCALES["default"])}


def test_jobs_go_seed_by_seed_with_the_registered_untrained_run():
    js = small_lr.jobs([0, 1])
    assert [(j.regime, j.seed, j.methods) for j in js] == [
        (r, s, (m,)) for s in (0, 1) for r, m in (("math500_like", "no_adaptation"), (small_lr.REGIME, "ttrl"),
                                                  (small_lr.REGIME, "ddrl"))]


def test_smoke_run_and_analyse_end_to_end(tmp_path):
    """The real entry point on the tiny testbed: seeds 0-2, then the analysis; a rerun loads every job."""
    out, runs = tmp_path / "out", str(tmp_path / "runs")
    common = ["--scale", "smoke", "--workers", "2", "--runs-root", runs, "--out", str(out)]
    assert small_lr.main(["run", "--seeds", "0-2", *common]) == 0
    assert small_lr.done_seeds(out) == [0, 1, 2]
    assert csv_path(out, "math500_like", "no_adaptation", 0).is_file()
    before = csv_path(out, small_lr.REGIME, "ttrl", 1).read_bytes()
    statuses = study.run_jobs(small_lr.jobs([0, 1, 2]), SCALES["smoke"], out, runs, workers=1, progress=False)
    assert {s["status"] for s in statuses} == {"loaded"}
    assert csv_path(out, small_lr.REGIME, "ttrl", 1).read_bytes() == before
    with pytest.raises(ValueError, match="3 of 4 seeds complete"):
        small_lr.analyse(out, n_boot=200, seeds=range(4))
    res = small_lr.analyse(out, n_boot=200, seeds=range(3))
    assert [e["id"] for e in res["entries"]] == list(small_lr.CLAIMS) and res["seeds"] == [0, 1, 2]
    assert {e["regime"] for e in res["entries"]} == {small_lr.REGIME}
    assert [e["paper"] for e in res["entries"]] == [40.3, 48.0, 7.7]  # MATH-500's
    assert all(e["n_seeds"] == 3 and e["half_width"] == pytest.approx((e["ci_high"] - e["ci_low"]) / 2)
               for e in res["entries"])
    assert {(r["regime"], r["method"]) for r in res["levels"]} == {
        ("math500_like", "no_adaptation"), (small_lr.REGIME, "ttrl"), (small_lr.REGIME, "ddrl")}
    assert {(v["regime"], v["method"]) for v in res["vote"]} == {(small_lr.REGIME, "ttrl"), (small_lr.REGIME, "ddrl")}
    table = small_lr.markdown(res, claims.load(small_lr.RESULTS / "claims.json")).splitlines()
    assert len(table) == 2 + 3 and table[2].startswith("| P1 TTRL - no adaptation | +40.3 | -0.70 [-2.91, +1.42], 46 seeds, "
                                                         "*not resolved* | +5.89 [+3.34, +8.61], 19 seeds, *reproduced* |")
    assert "(2.42 / 1.92)" in table[2] and "(1.98 / 1.45)" in table[4]
    assert len(res["seed_pass1"]) == 3 * 3
    fig = small_lr.figure(res)
    assert len(fig.axes) == 3 and fig.axes[0].get_ylabel() == "adapted pass@1 (%)"
    plt.close(fig)
    lv = small_lr.levels_markdown(res).splitlines()
    assert lv[2].startswith("| no_adaptation | - |") and lv[-1].startswith("| ddrl | lr/10 (3e-6) |") and len(lv) == 5


def test_levels_count_the_seeds_below_their_own_untrained_run():
    import pandas as pd

    from ddrl.wide import level_table, run_levels

    rows = [{"regime": r, "method": m, "seed": s, "split": "adapted", "question": q, "pass@1": p}
            for s, (u, t) in enumerate(((0.5, 0.4), (0.5, 0.6), (0.3, 0.2)))
            for r, m, p in (("math500_like", "no_adaptation", u), (small_lr.REGIME, "ttrl", t)) for q in ("a", "b")]
    lv = level_table(run_levels(pd.DataFrame(rows)), ("regime", "method"), sort=False)
    assert list(lv.method) == ["no_adaptation", "ttrl"]  # in the order the runs come
    lv = lv.set_index("method")
    assert lv.loc["ttrl", "below_reference"] == 2 and lv.loc["no_adaptation", "below_reference"] == 0
    assert lv.loc["ttrl", "pass1"] == pytest.approx(40.0) and lv.loc["ttrl", "n_seeds"] == 3


def test_committed_entries_recompute_from_the_committed_csvs():
    path = small_lr.OUT / "claims.json"
    if not path.is_file():
        pytest.skip(f"{path}: Amendment 28 not analysed yet (python -m ddrl.small_lr analyse --json {path})")
    committed = json.loads(path.read_text())
    res = small_lr.analyse(n_boot=4000, seeds=committed["seeds"])
    assert json.loads(json.dumps(res)) == committed


def _registered(regime: str, methods: tuple[str, ...], base: str | None = None):
    import pandas as pd

    runs = small_lr.RUNS
    paths = [p for m in methods for p in sorted((runs / regime).glob(f"{m}-seed[0-9][0-9].csv"))]
    if base:
        paths += sorted((runs / base).glob("no_adaptation-seed[0-9][0-9].csv"))
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in paths], ignore_index=True)


def test_the_plans_predicted_half_widths_are_the_registered_components():
    """The plan's predictions (18 seeds x 256 questions) from the registered MATH-500-like and AMC-like lr/10
    matrices' variance components, as :data:`ddrl.small_lr.PREDICTED_HALF_WIDTH` states and the plan prints them."""
    from ddrl.stats import predicted_half_width, variance_components
    from ddrl.study_analysis import claim_matrix

    frames = {"math500_like": _registered("math500_like", ("ttrl", "ddrl", "no_adaptation")),
              "amc_like_small_lr": _registered("amc_like_small_lr", ("ttrl", "ddrl"), base="amc_like")}
    for cid, predicted in small_lr.PREDICTED_HALF_WIDTH.items():
        got = tuple(round(predicted_half_width(variance_components(claim_matrix(df, cid, r).to_numpy()),
                                               len(small_lr.SEEDS), 256), 2) for r, df in frames.items())
        assert got == predicted, cid
    plan = (small_lr.RESULTS / "plan.md").read_text()
    section = plan[plan.index("28. **Why**"):]
    p1, p2, m1 = (small_lr.PREDICTED_HALF_WIDTH[c] for c in ("P1", "P2", "M1"))
    assert f"P1 {p1[0]:.2f} / {p1[1]:.2f}" in section and f"P2 {p2[0]:.2f} / {p2[1]:.2f}" in section
    assert f"({m1[0]:.2f}, MATH-500-like components; {m1[1]:.2f} from AMC-like lr/10's" in section
    assert f"seeds\n      **0-{len(small_lr.SEEDS) - 1}**" in section


def test_docs_quote_amendment_28_from_its_claims_json():
    path = small_lr.OUT / "claims.json"
    if not path.is_file():
        pytest.skip(f"{path}: Amendment 28 not analysed yet")
    res = json.loads(path.read_text())
    docs = (small_lr.REPO / "docs" / "results.md").read_text()
    start = docs.index("## P1, P2 and M1 in MATH-500-like at the paper's small learning rate (plan Amendment 28)")
    section = docs[start:docs.index("\n## ", start + 1)]
    assert small_lr.markdown(res, claims.load(small_lr.RESULTS / "claims.json")) in section
    assert small_lr.levels_markdown(res) in section
    assert (small_lr.REPO / "docs" / "results" / "small_lr.png").is_file() and "results/small_lr.png" in section
