"""Plan Amendment 28: P1, P2 and M1 in MATH-500-like at the paper's small learning rate (``ddrl.study.amendments.small_lr``)."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from ddrl.study import claims
from ddrl.study.amendments import small_lr
from ddrl.study import runner as study
from ddrl.study import plan as study_plan
from ddrl.study.regimes import small_lr_regime
from ddrl.study.plan import SAME_BASE, SCALES, csv_path, load_regimes


def test_the_regime_is_math500_like_under_the_registered_lr10_rule():
    regs = load_regimes()
    math, r = regs["math500_like"], regs[small_lr.REGIME]
    assert r == small_lr_regime(math) and (r.lr, r.episodes) == (3e-6, 4)
    assert (r.num_ops, r.n_adapted, r.overrides) == (math.num_ops, math.n_adapted, math.overrides)
    assert r.records() == math.records()  # the same 256 adapted questions
    assert small_lr_regime(regs["amc_like"]) == regs["amc_like_small_lr"]  # one rule: the registered lr/10 regime's
    assert SAME_BASE[small_lr.REGIME] == "math500_like"  # its untrained runs are MATH-500-like's
    assert json.loads(small_lr.REGIME_FILE.read_text()) == small_lr.regime_file()  # the committed file is the rule's
    # Amendment 44's (``regime --results results/replication_xeon``): the same regime on the Xeon build's weights
    root = small_lr.RESULTS / "replication_xeon"
    xeon, registered = small_lr.regime_file(root / "regimes_base.json"), small_lr.regime_file()
    assert xeon["regimes"] == registered["regimes"] and xeon["weights"] != registered["weights"]
    assert json.loads((root / small_lr.REGIME_FILE.name).read_text()) == json.loads(json.dumps(xeon))
    exp = study_plan.experiment(r, SCALES["default"], study_plan.wants_heldout(r.name, "ttrl"))
    cfg = exp.config("ttrl", 0)
    assert (cfg.lr, cfg.episodes, cfg.max_new_tokens) == (3e-6, 4, 96) and not exp.heldout
    # the registered study's job lists never name it
    assert small_lr.REGIME not in {j.regime for j in study.stage1_jobs(list(regs), SCALES["default"])}


def test_a_status_line_counts_the_complete_seeds_and_the_minutes_to_a_clock():
    assert small_lr.seeds_line("X", 10, [8, 9]) == "X: 8 of 10 seeds complete; missing [8, 9]"
    line = small_lr.seeds_line("X", 10, [], "2000-01-01T00:00:00+00:00")
    assert line.startswith("X: 10 of 10 seeds complete; missing []; minutes to the clock -") and float(line.split()[-1]) < 0


def test_jobs_go_seed_by_seed_with_the_registered_untrained_run():
    js = small_lr.jobs([0, 1])
    assert [(j.regime, j.seed, j.methods) for j in js] == [
        (r, s, (m,)) for s in (0, 1) for r, m in (("math500_like", "no_adaptation"), (small_lr.REGIME, "ttrl"),
                                                  (small_lr.REGIME, "ddrl"))]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """Amendment 28's real entry point on the tiny testbed, seeds 0-2: (CSV folder, run folder, CLI arguments)."""
    tmp = tmp_path_factory.mktemp("small_lr")
    out, runs = tmp / "out", str(tmp / "runs")
    common = ["--scale", "smoke", "--workers", "2", "--runs-root", runs, "--out", str(out)]
    assert small_lr.main(["run", "--seeds", "0-2", *common]) == 0
    return out, runs, common


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_smoke_run_and_analyse_end_to_end(smoke):
    """The real entry point on the tiny testbed: seeds 0-2, then the analysis; a rerun loads every job."""
    out, runs, _ = smoke
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


def test_table1_jobs_train_grpo_no_std_and_load_amendment_28s_ttrl():
    js = small_lr.t1_jobs()
    assert [(j.regime, j.seed, j.methods) for j in js] == [
        (small_lr.REGIME, s, (m,)) for s in range(12) for m in ("grpo_no_std", "ttrl")]
    with pytest.raises(SystemExit):
        small_lr.main(["status", "--table1", "--table1-fixed"])


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_table1_smoke_run_and_analyse(smoke, capsys):
    """Amendment 49 on the smoke runs: ``grpo_no_std`` trains, TTRL's CSV is Amendment 28's (untouched); the analysis
    refuses an incomplete seed, then gives T1 with MATH-500's paper number and the tables."""
    out, runs, common = smoke
    ttrl = csv_path(out, small_lr.REGIME, "ttrl", 0).read_bytes()
    with pytest.raises(ValueError, match=r"Amendment 49 incomplete, seeds missing \[0, 1\]"):
        small_lr.analyse_t1(out, n_boot=200, seeds=[0, 1])
    assert small_lr.main(["run", "--table1", "--seeds", "0-1", *common]) == 0
    assert csv_path(out, small_lr.REGIME, "ttrl", 0).read_bytes() == ttrl
    assert small_lr.main(["status", "--table1", "--out", str(out)]) == 0
    assert "T1 (math500_like_small_lr): 2 of 12 seeds complete; missing [2, 3," in capsys.readouterr().out
    assert small_lr.t1_missing(out, [0, 1, 2]) == [2]
    res = small_lr.analyse_t1(out, n_boot=200, seeds=[0, 1])
    (e,) = res["entries"]
    assert (e["id"], e["regime"], e["paper"], e["n_seeds"]) == ("T1", small_lr.REGIME, 2.0, 2)
    diff = pd.concat([pd.read_csv(csv_path(out, small_lr.REGIME, m, s)).assign(m=m) for s in (0, 1)
                      for m in ("grpo_no_std", "ttrl")]).pivot_table("pass@1", ["seed", "question"], "m")
    assert e["estimate"] == pytest.approx(100 * (diff.grpo_no_std - diff.ttrl).mean())
    assert [r["method"] for r in res["levels"]] == ["ttrl", "grpo_no_std"]  # the smoke has no default-lr T1 runs
    assert {v["method"] for v in res["vote"]} == {"ttrl", "grpo_no_std"}
    table = small_lr.t1_markdown(res, claims.load(small_lr.RESULTS / "claims.json")).splitlines()
    assert table[2].startswith("| T1 TTRL without the std division - TTRL | +2.0 | +0.73 [+0.14, +1.34], 46 seeds, "
                               "*reproduced* |") and "(1.10 / 1.84 / 0.46)" in table[2]
    assert table[4] == "| method | learning rate | adapted pass@1, mean over seeds 0-1 (SD) | seeds below TTRL at its lr |"
    assert table[6].startswith("| ttrl | lr/10 (3e-6) |") and table[7].startswith("| grpo_no_std | lr/10 (3e-6) |")


def test_amendment_49s_predicted_half_widths_are_the_measured_components():
    """Amendment 49's predictions at 12 seeds x 256 questions from the registered MATH-500-like T1 matrix and the lr/10
    M1 (Amendment 28) and A1 (Amendment 29) matrices, as :data:`ddrl.study.amendments.small_lr.T1_PREDICTED` and the plan state them;
    the largest is <= 2.0 from 5 seeds on."""
    from ddrl.report.stats import predicted_half_width, variance_components
    from ddrl.study.analysis import claim_matrix

    lr10 = _registered(small_lr.REGIME, ("ttrl", "ddrl", "bcs"))
    lr10 = lr10[lr10.seed.isin(set(range(18)))]
    vcs = [variance_components(claim_matrix(_registered("math500_like", ("ttrl", "grpo_no_std")), "T1",
                                            "math500_like").to_numpy()),
           variance_components(claim_matrix(lr10, "M1", small_lr.REGIME).to_numpy()),
           variance_components(claim_matrix(lr10, "A1", small_lr.REGIME).to_numpy())]
    assert tuple(round(predicted_half_width(vc, 12, 256), 2) for vc in vcs) == small_lr.T1_PREDICTED
    largest = {n: max(predicted_half_width(vc, n, 256) for vc in vcs) for n in (4, 5)}
    assert largest[4] > 2.0 >= largest[5]
    section = " ".join((small_lr.RESULTS / "plan.md").read_text().split("49. **Why**")[1].split())
    assert "At **12 seeds {:.2f} / {:.2f} / {:.2f}**".format(*small_lr.T1_PREDICTED) in section


@pytest.mark.slow  # an amendment's run command on the tiny model (study machinery): make test-slow, CI when time allows
def test_table1_fixed_smoke_run_and_analyse(smoke, capsys, monkeypatch):
    """Amendment 50 on the smoke runs: ``dae`` trains at both learning rates into ``<out>/table1_fixed`` (never beside
    the registered regimes' CSVs), its TTRL partners are the runs under ``<out>``; the analysis refuses an incomplete
    regime, then gives T1f per regime with Table 1's MATH-500 number and sign."""
    out, runs, common = smoke
    assert [(j.regime, j.seed) for j in small_lr.t1f_jobs([0, 1])] == [
        ("math500_like", 0), ("math500_like", 1), (small_lr.REGIME, 0), (small_lr.REGIME, 1)]
    assert small_lr.main(["run", "--table1-fixed", "--seeds", "0-1", *common]) == 0
    fixed = out / small_lr.T1F_DIR
    assert {p.relative_to(fixed).as_posix() for p in fixed.rglob("dae-seed0[01].csv.gz")} == {
        f"{r}/dae-seed0{s}.csv.gz" for r in small_lr.T1F_REGIMES for s in (0, 1)}
    assert not list(out.glob("*/dae-*"))
    assert small_lr.main(["status", "--table1-fixed", "--out", str(out)]) == 0
    assert "T1f (math500_like): 0 of 12 seeds complete" in capsys.readouterr().out  # no default-lr TTRL in the smoke
    with pytest.raises(ValueError, match=r"Amendment 50 incomplete, seeds missing per regime \{'math500_like': \[0, 1\]\}"):
        small_lr.analyse_t1f(out, n_boot=200, seeds=[0, 1])
    study.run_jobs([study_plan.Job("math500_like", s, ("ttrl",), "test") for s in (0, 1)], SCALES["smoke"], out, runs,
                   workers=1, progress=False)
    res = small_lr.analyse_t1f(out, n_boot=200, seeds=[0, 1])
    assert [(e["id"], e["regime"], e["paper"], e["n_seeds"]) for e in res["entries"]] == [
        ("T1f", r, 2.0, 2) for r in small_lr.T1F_REGIMES]
    for e in res["entries"]:
        diff = pd.concat([pd.read_csv(csv_path(d, e["regime"], m, s)).assign(m=m) for s in (0, 1)
                          for d, m in ((fixed, "dae"), (out, "ttrl"))]).pivot_table("pass@1", ["seed", "question"], "m")
        assert e["estimate"] == pytest.approx(100 * (diff.dae - diff.ttrl).mean())
    assert {(r["regime"], r["method"]) for r in res["levels"]} >= {
        (r, m) for r in small_lr.T1F_REGIMES for m in ("ttrl", "dae")}
    caption = json.loads((small_lr.OUT / "table1.json").read_text())  # Amendment 49's committed analysis
    table = small_lr.t1f_markdown(res, claims.load(small_lr.RESULTS / "claims.json"), caption).splitlines()
    assert table[2].startswith("| default (3e-5) | +2.0 | +0.73 [+0.14, +1.34], 46 seeds, *reproduced* | **")
    assert table[3].startswith("| lr/10 (3e-6) | +2.0 | +0.21 [+0.06, +0.37], 12 seeds, *reproduced* | **")
    assert "(1.10 / 0.95)" in table[2] and "(1.84 / 0.13)" in table[3]
    assert table[5] == "| method | learning rate | adapted pass@1, mean over seeds 0-1 (SD) | seeds below TTRL at its lr |"
    # Amendment 51: the default lr alone, into the same folder; its verdict on the fresh seeds, the pooled one apart
    assert [(j.regime, j.seed) for j in small_lr.t1f_jobs([1], ("math500_like",))] == [("math500_like", 1)]
    assert small_lr.main(["run", "--table1-fixed-more", "--seeds", "0-1", *common]) == 0  # both written: nothing new
    assert not list(out.glob("*/dae-*")) and len(list(fixed.rglob("dae-seed*[0-9].csv.gz"))) == 4
    with pytest.raises(ValueError, match=r"Amendment 51 incomplete, seeds missing \[2\]"):
        small_lr.analyse_t1f_more(out, n_boot=200, seeds=[1, 2], seen=[0])
    streams, entry = [], small_lr.amendment_entry
    monkeypatch.setattr(small_lr, "amendment_entry", lambda *a, **k: streams.append(k["stream"]) or entry(*a, **k))
    more = small_lr.analyse_t1f_more(out, n_boot=200, seeds=[0, 1], seen=[0])
    assert streams == ["math500_like/fresh", "math500_like/pooled"]  # the plan's two streams
    (fresh,), default = more["entries"], res["entries"][0]
    assert (fresh["id"], fresh["regime"], fresh["paper"], fresh["n_seeds"]) == ("T1f", "math500_like", 2.0, 2)
    assert fresh["estimate"] == pytest.approx(default["estimate"]) == pytest.approx(more["pooled"]["estimate"])
    assert "verdict" not in more["pooled"] and {r["method"] for r in more["levels"]} == {"ttrl", "dae"}
    both = small_lr.t1f_markdown(res, claims.load(small_lr.RESULTS / "claims.json"), caption, more).splitlines()
    assert both[:3] == table[:3] and both[4:len(table) + 1] == table[3:]  # 51's row after the default lr's ...
    assert both[3].startswith("| default (3e-5), fresh seeds 0-1 (Amendment 51) | +2.0 | +0.73")
    assert "(1.28 / 0.69)" in both[3] and both[len(table) + 1] == ""  # ... and its levels after 50's


def test_amendment_51s_predicted_half_widths_are_the_measured_components():
    """Amendment 51's predictions at 34 seeds x 256 questions, as :data:`ddrl.study.amendments.small_lr.T1F_MORE_PREDICTED` and the plan
    state them: Amendment 50's committed T1f matrix at the default lr and the registered T1 matrix."""
    from ddrl.report.stats import predicted_half_width, variance_components
    from ddrl.study.analysis import claim_matrix, paired_matrix

    fixed = pd.concat([pd.read_csv(csv_path(small_lr.RUNS / small_lr.T1F_DIR, "math500_like", "dae", s),
                                   dtype={"question": str}) for s in small_lr.T1F_SEEDS])
    default = _registered("math500_like", ("ttrl", "grpo_no_std"))
    mats = (paired_matrix(pd.concat([fixed, default[default.seed < 12]]), "math500_like", "dae", "ttrl", "adapted"),
            claim_matrix(default, "T1", "math500_like"))
    got = tuple(round(predicted_half_width(variance_components(m.to_numpy()), 34, 256), 2) for m in mats)
    assert got == small_lr.T1F_MORE_PREDICTED
    section = " ".join((small_lr.RESULTS / "plan.md").read_text().split("51. **Why**")[1].split())
    assert f"the default lr **{got[0]:.2f}**, from the registered T1 matrix (46 seeds) **{got[1]:.2f}**" in section


def test_amendment_50s_predicted_half_widths_are_the_measured_components():
    """Amendment 50's predictions at 12 seeds x 256 questions per regime, as :data:`ddrl.study.amendments.small_lr.T1F_PREDICTED` and the
    plan state them: the registered T1 and A2 matrices (default lr), Amendment 28's M1 and 29's A2 (lr/10)."""
    from ddrl.report.stats import predicted_half_width, variance_components
    from ddrl.study.analysis import claim_matrix

    default = _registered("math500_like", ("ttrl", "grpo_no_std", "bcs", "bcs_dae"))
    lr10 = _registered(small_lr.REGIME, ("ttrl", "ddrl", "bcs", "bcs_dae"))
    mats = {"math500_like": (claim_matrix(default, "T1", "math500_like"), claim_matrix(default, "A2", "math500_like")),
            small_lr.REGIME: (claim_matrix(lr10[lr10.seed < 18], "M1", small_lr.REGIME),
                              claim_matrix(lr10[lr10.seed < 12], "A2", small_lr.REGIME))}
    for r, ms in mats.items():
        got = tuple(round(predicted_half_width(variance_components(m.to_numpy()), 12, 256), 2) for m in ms)
        assert got == small_lr.T1F_PREDICTED[r], r
    section = " ".join((small_lr.RESULTS / "plan.md").read_text().split("50. **Why**")[1].split())
    (a, b), (c, d) = small_lr.T1F_PREDICTED.values()
    assert f"T1 matrix **{a:.2f}** and the registered A2 matrix" in section and f"M1 matrix **{c:.2f}**" in section
    assert f"subset) **{b:.2f}**" in section and f"A2 matrix **{d:.2f}**" in section


def test_levels_count_the_seeds_below_their_own_untrained_run():
    from ddrl.study.analysis import level_table, run_levels

    rows = [{"regime": r, "method": m, "seed": s, "split": "adapted", "question": q, "pass@1": p}
            for s, (u, t) in enumerate(((0.5, 0.4), (0.5, 0.6), (0.3, 0.2)))
            for r, m, p in (("math500_like", "no_adaptation", u), (small_lr.REGIME, "ttrl", t)) for q in ("a", "b")]
    lv = level_table(run_levels(pd.DataFrame(rows)), ("regime", "method"), sort=False)
    assert list(lv.method) == ["no_adaptation", "ttrl"]  # in the order the runs come
    lv = lv.set_index("method")
    assert lv.loc["ttrl", "below_reference"] == 2 and lv.loc["no_adaptation", "below_reference"] == 0
    assert lv.loc["ttrl", "pass1"] == pytest.approx(40.0) and lv.loc["ttrl", "n_seeds"] == 3


@pytest.mark.regenerate  # the committed analysis recomputed: make test-study (test_study_regenerates.py covers it too)
def test_committed_entries_recompute_from_the_committed_csvs():
    path = small_lr.OUT / "claims.json"
    if not path.is_file():
        pytest.skip(f"{path}: Amendment 28 not analysed yet (python -m ddrl.study.amendments.small_lr analyse --json {path})")
    committed = json.loads(path.read_text())
    res = small_lr.analyse(n_boot=4000, seeds=committed["seeds"])
    assert json.loads(json.dumps(res)) == committed


def _registered(regime: str, methods: tuple[str, ...], base: str | None = None):
    runs = small_lr.RUNS
    paths = [p for m in methods for p in sorted((runs / regime).glob(f"{m}-seed[0-9][0-9].csv.gz"))]
    if base:
        paths += sorted((runs / base).glob("no_adaptation-seed[0-9][0-9].csv.gz"))
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in paths], ignore_index=True)


def test_the_plans_predicted_half_widths_are_the_registered_components():
    """The plan's predictions (18 seeds x 256 questions) from the registered MATH-500-like and AMC-like lr/10
    matrices' variance components, as :data:`ddrl.study.amendments.small_lr.PREDICTED_HALF_WIDTH` states and the plan prints them."""
    from ddrl.report.stats import predicted_half_width, variance_components
    from ddrl.study.analysis import claim_matrix

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


@pytest.mark.parametrize("name,flag,analyse,seeds", (
    ("table1.json", "--table1", small_lr.analyse_t1, {"seeds": list(small_lr.T1_SEEDS)}),  # Amendment 49
    ("table1_fixed.json", "--table1-fixed", small_lr.analyse_t1f, {"seeds": list(small_lr.T1F_SEEDS)}),  # 50
    ("table1_fixed_more.json", "--table1-fixed-more", small_lr.analyse_t1f_more,  # 51
     {"seeds": list(small_lr.T1F_MORE_SEEDS), "seen": list(small_lr.T1F_SEEDS)})),
    ids=("amendment49", "amendment50", "amendment51"))
@pytest.mark.regenerate  # the committed analysis recomputed: make test-study (test_study_regenerates.py covers it too)
def test_committed_table1_analyses_recompute_from_the_committed_csvs(name, flag, analyse, seeds):
    path = small_lr.OUT / name
    if not path.is_file():
        pytest.skip(f"{path}: not analysed yet (python -m ddrl.study.amendments.small_lr analyse {flag} --json {path})")
    committed = json.loads(path.read_text())
    assert {k: committed[k] for k in seeds} == seeds
    assert json.loads(json.dumps(analyse(n_boot=4000))) == committed
