"""ddrl.study.figures: the claims study's figures from per-run CSVs. Every frame here is SYNTHETIC TEST INPUT."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from ddrl.study import claims
from ddrl.study import figures as F


def synthetic_steps(regimes=("aime_like", "math500_like"), seeds=3, steps=6) -> pd.DataFrame:
    rows = []
    for r in regimes:
        for m, drift in (("ttrl", 0.0), ("ddrl", 0.1), ("etmr", 0.5)):
            for s in range(seeds):
                for t in range(steps + 1):  # the last step is past the RL schedule (additional RL's phase)
                    rows.append({"regime": r, "method": m, "seed": s, "step": t, "adv/mean": -0.3 + drift * t,
                                 "phase": "rl" if t < steps else "extra", "episode": t // 3,
                                 "label/majority_ratio": 0.5 + 0.05 * t, "gt/label_acc": 0.6})
    return pd.DataFrame(rows)


def write_steps(runs):
    for (r, m, s), g in synthetic_steps().groupby(["regime", "method", "seed"]):
        (runs / r).mkdir(parents=True, exist_ok=True)
        g.to_csv(runs / r / f"{m}-seed{s:02d}-steps.csv.gz", index=False)


def test_advantage_dynamics_keeps_the_rl_steps_of_the_asked_methods():
    d = F.advantage_dynamics(synthetic_steps(), methods=("ttrl", "ddrl"), regimes=("math500_like",))
    assert set(d.method) == {"ttrl", "ddrl"} and set(d.regime) == {"math500_like"}
    assert d.step.max() == 5 and len(d) == 2 * 3 * 6
    fig = F.advantage_dynamics_figure(F.advantage_dynamics(synthetic_steps()))
    assert len(fig.axes) == 2  # one panel per regime with runs
    assert F.advantage_dynamics_figure(F.advantage_dynamics(synthetic_steps()), regimes=("amc_like",)) is None


def test_pseudo_labels_by_episode_compare_the_first_and_last_visit_of_the_questions():
    rows = [{"regime": "amc_like", "method": m, "seed": s, "step": t, "episode": t // 2, "phase": "rl",
             "label/majority_ratio": 0.5 + 0.1 * (t // 2), "gt/label_acc": 0.7 - 0.05 * (t // 2) + (0.1 if m == "ddrl" else 0)}
            for m in ("ttrl", "ddrl", "etmr") for s in (0, 1) for t in range(6)]
    rows.append({**rows[0], "step": 6, "phase": "extra", "gt/label_acc": 0.0})  # additional RL's steps: not RL phase
    by_ep = F.pseudo_labels_by_episode(pd.DataFrame(rows))
    assert set(by_ep.method) == {"ttrl", "ddrl"} and by_ep.episode.tolist().count(2) == 2 and (by_ep.n_seeds == 2).all()
    d = F.pseudo_label_drift(by_ep).set_index("method")
    assert d.loc["ttrl", "episodes"] == 3 and d.loc["ttrl", "majority_ratio_first"] == pytest.approx(0.5)
    assert d.loc["ttrl", "majority_ratio_last"] == pytest.approx(0.7) and d.loc["ttrl", "label_acc_last"] == pytest.approx(0.6)
    assert d.loc["ddrl", "label_acc_first"] == pytest.approx(0.8)


def test_band_accuracy_counts_and_rescales_to_64():
    groups = pd.DataFrame({"regime": "amc_like", "seed": 0, "question": ["a", "a", "b", "b", "c", "d"],
                           "count": [1, 50, 3, 20, 8, 7], "n": [64, 64, 64, 64, 16, 30],  # 8 of 16 = 32 of 64;
                           "correct": [False, True, False, True, True, True]})  # 7 of 30 = 14.9 -> 15 of 64
    t = F.band_accuracy(groups).set_index("bin")
    assert t.loc["1", "answers"] == 1 and t.loc["1", "accuracy"] == 0.0
    assert t.loc["2-5", "answers"] == 1 and t.loc["45-54", "accuracy"] == 1.0
    assert t.loc["25-34", "answers"] == 1 and t.loc["15-24", "answers"] == 2
    assert np.isnan(t.loc["55-64", "accuracy"]) and t.loc["55-64", "answers"] == 0
    assert (t.ci_lo.dropna() <= t.accuracy.dropna()).all()
    assert F.band_accuracy_figure(F.band_accuracy(groups)) is not None
    assert F.band_accuracy(pd.DataFrame()).empty and F.band_accuracy_figure(F.band_accuracy(pd.DataFrame())) is None


def test_selection_by_label_count_bins_each_rule_by_the_labels_count(tmp_path):
    """E1/E2's figure: a wrong label seen 10 times (BCS keeps its 10 copies, random 5; the truth, seen 6 times,
    never among BCS's negatives) lands in bin 6-14; a right label seen 50 times (no false reward) in 45-54."""
    shapes = {"A": [(10, False), (6, True)] + [(1, False)] * 48, "B": [(50, True)] + [(1, False)] * 14}
    groups = pd.DataFrame([{"regime": "amc_like", "seed": s, "question": f"{k}{i}", "count": c, "n": 64, "correct": ok}
                           for s in (0, 1) for k, shape in shapes.items() for i in range(3) for c, ok in shape])
    from ddrl.study.analysis import selection_errors

    sel = selection_errors(groups, orders=32)
    t = F.selection_by_label_count(sel).set_index(["rule", "bin"])
    assert t.loc[("bcs", "6-14"), "fp_per_question"] == 10 and t.loc[("bcs", "6-14"), "fn_share"] == 0
    assert abs(t.loc[("random", "6-14"), "fp_per_question"] - 5) < 0.5
    assert t.loc[("bcs", "45-54"), "fp_per_question"] == 0 and t.loc[("bcs", "45-54"), "questions"] == 6
    assert t.loc[("bcs", "1"), "questions"] == 0 and np.isnan(t.loc[("bcs", "1"), "fp_per_question"])
    assert (t.regimes == 1).all() and (t.seeds == 2).all() and (t.orders == 32).all()  # the figure's title
    fig = F.selection_errors_figure(t.reset_index())
    assert [tick.get_text() for tick in fig.axes[0].get_xticklabels()] == ["6-14", "45-54"]  # empty bins left out
    assert "12 question x sampling-seed cells (1 regimes, 2 seeds), each averaged over 32 orders" in fig._suptitle.get_text()
    assert F.selection_errors_figure(F.selection_by_label_count(sel.iloc[:0])) is None


def synthetic_transfer() -> pd.DataFrame:
    """Six methods, seeds 0-2: pass@1 ``level`` on every question, 10 points lower on H1x's (seeds 0-1, no ETMR)."""
    rows = []
    for m, level in (("no_adaptation", 0.5), ("ttrl", 0.6), ("bcs", 0.55), ("bcs_dae", 0.6), ("ddrl", 0.7), ("etmr", 0.9)):
        for s in (0, 1, 2):
            for split, drop, qs in (("adapted", 0.0, ("a1", "a2")), ("heldout", 0.3, ("h1",)), ("heldout_x", 0.1, ("x1", "x2", "x3"))):
                if split == "heldout_x" and (s == 2 or m == "etmr"):
                    continue
                rows += [{"regime": "amc_like", "method": m, "seed": s, "split": split, "question": q,
                          "pass@1": level - drop} for q in qs]
    return pd.DataFrame(rows)


def test_transfer_averages_the_h1x_seeds_on_both_question_sets():
    t = F.transfer(synthetic_transfer())
    assert set(t.method) == set(F.TRANSFER_METHODS) and set(t.split) == {"adapted", "heldout_x"}  # no ETMR, no H1
    assert set(t.seed) == {0, 1}  # seed 2 has no H1x CSV: left out of both columns
    v = t.set_index(["method", "seed", "split"])["pass@1"]
    assert v[("ddrl", 0, "adapted")] == pytest.approx(70.0) and v[("ddrl", 1, "heldout_x")] == pytest.approx(60.0)
    fig = F.transfer_figure(F.transfer(synthetic_transfer()))
    assert len(fig.axes) == 1 and fig.axes[0].get_title() == "amc_like (2 seeds)"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["No adaptation", "TTRL", "BCS", "BCS + DAE", "DDRL (BCS + DAE + COR)"]
    assert F.transfer_figure(F.transfer(synthetic_transfer().query("split != 'heldout_x'"))) is None


def test_render_results_writes_every_figure_and_reads_its_tables_back_only_for_their_inputs(tmp_path):
    """render_results writes what the runs allow, every table and a manifest; committed_tables reads them back equal
    to study_tables' and refuses them (None) once a run CSV, a new run or the scorecard differs."""
    runs, docs = tmp_path / "runs", tmp_path / "docs"
    write_steps(runs)
    paths = F.render_results([claims.entry("M1", "aime_like", 5.0, 3.2, 6.8, 8, 64)], runs, docs,
                             missing=["M2 aime_like: fewer than 2 seeds with the runs it needs"])
    assert paths["missing.md"].read_text() == "- M2 aime_like: fewer than 2 seeds with the runs it needs\n"
    assert {"scorecard.png", "scorecard.md", "advantage_dynamics.png", "advantage_dynamics.pdf", "labels.md"} <= set(paths)
    assert "base_bands.png" not in paths and "selection_errors.png" not in paths  # no base rollouts written
    assert "heldout_transfer.png" not in paths  # no H1x CSV written
    assert "seeds.md" not in paths  # no method CSV written: no pass@1 claim to show seed by seed
    assert "none: every pass@1 comparison reached the target" in paths["shortfall.md"].read_text()
    assert all(p.stat().st_size > 0 for p in paths.values())
    (runs / "amc_like").mkdir()
    for m, v in (("ttrl", 0.5), ("ddrl", 0.75)):  # DDRL ahead by 25 points in both seeds
        for s in (0, 1):
            pd.DataFrame({"regime": "amc_like", "method": m, "seed": s, "split": "adapted", "question": ["q1", "q2"],
                          "pass@1": v}).to_csv(runs / "amc_like" / f"{m}-seed{s:02d}.csv.gz", index=False)
    entries = [claims.entry("M1", "amc_like", 25.0, 25.0, 25.0, 2, 2)]
    paths = F.render_results(entries, runs, docs)
    seeds = pd.read_csv(paths["claims_seeds.csv"])
    assert seeds[["id", "regime", "n_seeds", "ahead", "behind", "min", "max"]].values.tolist() == [["M1", "amc_like", 2, 2, 0, 25.0, 25.0]]
    assert "| M1   | amc_like |" in paths["seeds.md"].read_text()
    assert {f"{n}.csv" for n in F.TABLES} | {"tables.json"} <= set(paths)
    got, want = F.committed_tables(docs, runs, entries), F.study_tables(runs, entries)
    assert set(got) == set(F.TABLES)
    for name in F.TABLES:
        if want[name].empty:
            assert got[name].empty and list(got[name].columns) == list(want[name].columns), name
        else:
            pd.testing.assert_frame_equal(got[name], want[name], check_dtype=False, obj=name)
    assert F.committed_tables(docs, runs, [dict(entries[0], estimate=5.1)]) is None  # another scorecard
    first = sorted(runs.glob("*/*-steps.csv.gz"))[0]
    first.write_bytes(gzip.compress(gzip.decompress(first.read_bytes()), mtime=1))  # same rows, other bytes
    assert F.committed_tables(docs, runs, entries) is None
    F.render_results(entries, runs, docs)
    assert F.committed_tables(docs, runs, entries) is not None
    (docs / F.TABLES["base_bands"]).unlink()
    assert F.committed_tables(docs, runs, entries) is None
    with pytest.raises(ValueError, match="missing field"):
        F.render_results([{"id": "M1"}], runs, docs)


@pytest.mark.slow  # replays the selection rules over ~2,000 committed run CSVs (~30 s): make test-slow, CI when time allows
def test_committed_study_tables_equal_a_fresh_computation():
    """The tables notebook 06 reads from docs/results/ are study_tables' on the committed runs and scorecard, and their
    manifest names those inputs (a table changed without ``analyse claims`` rewriting it fails here)."""
    from conftest import REPO

    entries = claims.load(REPO / "results" / "claims.json")
    docs, runs = REPO / "docs" / "results", REPO / "results" / "runs"
    got = F.committed_tables(docs, runs, entries)
    assert got is not None, "docs/results/tables.json does not name the committed runs and claims.json"
    want = F.study_tables(runs, entries)
    for name in F.TABLES:
        pd.testing.assert_frame_equal(got[name], want[name], check_dtype=False, obj=name)


def test_stage3_runs_are_neither_read_nor_keyed_by_the_claims_studys_tables(tmp_path):
    """Stage 3's runs are committed beside the claims study's: adding one leaves the tables' key as it was (so the
    committed tables stay current), while a change to a claims-study run moves it."""
    runs = tmp_path / "runs" / "amc_like"
    runs.mkdir(parents=True)
    (runs / "ttrl-seed00.csv.gz").write_bytes(b"one")
    before = F.tables_key(tmp_path / "runs", [])
    (runs / "soft_vote-seed00.csv.gz").write_bytes(b"two")
    (runs / "soft_vote-seed00-steps.csv.gz").write_bytes(b"three")
    assert F.tables_key(tmp_path / "runs", []) == before
    (runs / "ttrl-seed00.csv.gz").write_bytes(b"changed")
    assert F.tables_key(tmp_path / "runs", []) != before


def test_the_committed_shortfall_page_is_the_committed_claims():
    """docs/results/power_shortfall.md is the page of the committed shortfall table (recomputed by the slow test)."""
    from conftest import REPO

    entries = claims.load(REPO / "results" / "claims.json")
    tables = F.committed_tables(REPO / "docs" / "results", REPO / "results" / "runs", entries)
    assert tables is not None, "docs/results/tables.json does not name the committed runs and claims.json"
    assert (REPO / "docs" / "results" / "power_shortfall.md").read_text() == F.shortfall_page(tables["power_shortfall"])


def test_the_committed_scorecard_is_the_committed_claims_rendered(tmp_path):
    """docs/results/claims_scorecard.md and .csv are ``claims.render`` of results/claims.json (``python -m ddrl.study
    analyse claims`` writes them): a scorecard left behind by a change to its code fails here. Its intervals are the
    results page's (cut at their bounds by ``claims.shown``), and the Markdown says why once."""
    from conftest import REPO

    entries = claims.load(REPO / "results" / "claims.json")
    got = claims.render(entries, tmp_path)
    for ext in ("md", "csv"):
        committed = REPO / "docs" / "results" / f"claims_scorecard.{ext}"
        assert committed.read_text() == got[ext].read_text(), f"{committed} is stale: python -m ddrl.study analyse claims"
    md = got["md"].read_text()
    assert md.count(claims.BOUND_WORDS) == (1 if claims.cut_words(entries) else 0)


def committed_figures_drawn_here() -> dict:
    """Every committed figure no notebook draws (``analyse claims`` of the registered study and its replications: the
    scorecard and the tables' figures; drift's MATH-500-like arms) -> a function that draws it again from the
    committed results with the code that drew it. Notebook 06's figures (the store, ``docs/results/figures.json``)
    are drawn by its render (tests/test_study.py)."""
    from conftest import REPO
    from ddrl.study import drift

    out = {}
    for folder, results in ((REPO / "docs" / "results", REPO / "results"),
                            *((d / "figures", d) for d in sorted((REPO / "results").glob("replication_*")))):
        entries = claims.load(results / "claims.json")
        if entries:
            out[folder / "claims_scorecard.png"] = lambda e=entries: claims.scorecard_figure(e)
        for name, draw in F.RESULT_FIGURES.items():
            if (folder / F.TABLES[name]).is_file():
                out[folder / f"{name}.png"] = lambda d=draw, f=folder / F.TABLES[name]: d(pd.read_csv(f))
    for which in ("methods", "penalty"):  # drawn for MATH-500-like by drift's retired `figure --regime` command
        out[REPO / "docs" / "results" / f"drift_{which}_math500_like.png"] = lambda w=which: drift.arms_figure(
            drift.arms_table(REPO / drift.DOSE_OUT, "math500_like", w), drift.x3h_slope(), w)
    return out


def test_every_committed_figure_no_notebook_draws_is_legible():
    """Issue 95: each committed PNG outside notebook 06's store, drawn again from the committed results, has no
    overlapping text and no legend on its data (ddrl.report.legibility); a committed figure neither here nor in the
    store fails (no figure goes unchecked)."""
    import subprocess

    import matplotlib.pyplot as plt

    from conftest import REPO
    from ddrl.report import figure_store
    from ddrl.report.legibility import findings

    tracked = subprocess.run(["git", "ls-files", "*.png"], cwd=REPO, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout: the committed figures are not listed")
    store = {figure_store.COMMITTED / f"{e['name']}.png" for e in figure_store.manifest()}
    drawers = committed_figures_drawn_here()
    committed = {REPO / p for p in tracked if p.startswith(("docs/results/", "results/"))} - store
    assert committed <= set(drawers), f"committed figures no test draws: {sorted(map(str, committed - set(drawers)))}"
    bad = {}
    for png in sorted(committed):
        fig = drawers[png]()
        assert fig is not None, f"{png}: its code draws nothing from the committed results"
        found = findings(fig)
        plt.close(fig)
        if found["overlaps"] or found["legend_on_data"]:
            bad[str(png.relative_to(REPO))] = found["overlaps"] + found["legend_on_data"]
    assert not bad, f"figures with overlapping text or a legend on the data (fix the drawing code, redraw): {bad}"


def test_replication_table_sets_each_study_beside_the_registered_one():
    reg = [claims.entry("M1", "amc_like", -0.2, -2.0, 1.6, 19, 128), claims.entry("M2", "amc_like", 1.0, -3.0, 5.0, 6, 128)]
    rep = [claims.entry("M1", "amc_like", -1.9, -4.5, 0.7, 12, 128), claims.entry("H1", "amc_like", -5.5, -9.6, -1.5, 12, 128)]
    t = claims.replication_table({"registered": reg, "rep": rep})
    assert list(zip(t.id, t.regime)) == [("M1", "amc_like"), ("H1", "amc_like")]  # the replication's rows only
    m1 = t.iloc[0]
    assert (m1.paper, m1.registered, m1["registered seeds"], m1.rep) == ("+4.0", "-0.2 [-2.0, +1.6]", 19, "-1.9 [-4.5, +0.7]")
    assert m1["rep verdict"] == "not resolved" and t.iloc[1].registered == "-" and t.iloc[1].paper == "n/a"
    fig = claims.replication_figure({"registered": reg, "rep": rep})
    assert len(fig.axes[0].get_yticklabels()) == 2
    with pytest.raises(ValueError, match="at least one replication"):
        claims.replication_table({"registered": reg})


def test_divergence_report_lists_diverged_pairs_and_c1_on_the_agreeing_seeds():
    """Plan Amendment 9: seed 2's additional-RL run leaves the DDRL trajectory at step 1; C1 beside the registered
    estimate on seeds 0, 1 alone (DDRL ahead by 10 points there, by 40 in seed 2)."""
    steps, rows = [], []
    for s in range(3):
        for m in ("ddrl", "additional_rl"):
            adv = [0.1, 0.9 if (m, s) == ("additional_rl", 2) else 0.2]
            steps.append(pd.DataFrame({"regime": "amc_like", "method": m, "seed": s, "step": [0, 1], "episode": 0,
                                       "lr": 1e-5, "adv/mean": adv, "label/majority_ratio": 0.5, "gt/label_acc": 1.0,
                                       "phase": "rl"}))
            v = (0.6 if s < 2 else 0.9) if m == "ddrl" else 0.5
            rows.append(pd.DataFrame({"regime": "amc_like", "method": m, "seed": s, "split": "adapted",
                                      "question": ["q1", "q2", "q3"], "pass@1": [v, v + 0.01 * s, v]}))
    full = claims.entry("C1", "amc_like", 20.0, 0.0, 40.0, 3, 3)
    div, page = F.divergence_report(pd.concat(rows), pd.concat(steps), [full])
    assert div.set_index("seed").diverged_at.to_dict() == {0: -1, 1: -1, 2: 1}
    assert "3 BCS+DAE / additional-RL runs compared" in page and "1 left its trajectory" in page
    assert "| amc_like | +20.0 [+0.0, +40.0] (3 seeds, not resolved) | +10.0 [+10.0, +10.0] (2 seeds, reproduced) |" in page
    _, quiet = F.divergence_report(pd.concat(rows), pd.concat(steps)[lambda d: d.seed < 2], [full])
    assert "0 left its trajectory" in quiet and "C1 on the seeds" not in quiet
