"""ddrl.study.rerun (comparisons fast, one committed run recomputed: slow) and ddrl.study.lesson (notebooks 03-05)."""

import numpy as np
import pandas as pd
import pytest

from ddrl.study import lesson as Lsn
from ddrl.study import rerun as R
from ddrl.study.designs import REWARD_RUNS
from ddrl.study.plan import RESULTS
from ddrl.study.runner import main as study_main


def _questions(p):
    return pd.DataFrame({"split": ["adapted"] * 3 + ["heldout"], "question": ["a", "b", "c", "a"],
                         "pass@1": p, "maj@n": [0.5] * 4})


def test_compare_questions_names_each_differing_question_and_nothing_else():
    base = _questions([0.25, 0.5, 0.0, 1.0])
    assert R.compare_questions(base, base.copy()).empty
    diff = R.compare_questions(base, _questions([0.25, 0.5, 0.125, 1.0]))
    assert diff.to_dict("records") == [{"split": "adapted", "question": "c", "metric": "pass@1", "committed": 0.0,
                                        "rerun": 0.125}]
    # the same question id in another split is another row; a question the rerun lacks is shown, not dropped
    lost = R.compare_questions(base, base.iloc[:3])
    assert set(zip(lost["split"], lost["question"])) == {("heldout", "a")}
    assert lost["rerun"].isna().all()
    with pytest.raises(ValueError, match="rerun rows lack.*pass@1"):
        R.compare_questions(base, base.drop(columns="pass@1"))


def test_compare_steps_finds_the_first_divergence_within_k():
    log = pd.DataFrame({"step": range(5), "lr": [1e-6] * 5, "adv/mean": [0.0, 0.1, 0.2, 0.3, 0.4],
                        "label/majority_ratio": [0.5] * 5, "time/step_s": [3.0] * 5})
    fresh = log.copy().assign(**{"time/step_s": 9.0})  # wall time is never compared
    assert R.compare_steps(log, fresh, 5).empty
    fresh.loc[3, "adv/mean"] = 0.31
    assert R.compare_steps(log, fresh, 3).empty  # step 3 is past the first 3 steps
    diff = R.compare_steps(log, fresh, 4)
    assert R.first_divergence(diff) == 3 and diff["metric"].tolist() == ["adv/mean"]
    assert R.first_divergence(R.compare_steps(log, fresh.iloc[:2], 3)) == 2  # a missing step differs
    with pytest.raises(ValueError, match="k must be >= 1"):
        R.compare_steps(log, fresh, 0)


def test_report_names_the_cpu_and_says_identical_or_shows_the_differences():
    text = "processor\t: 0\nmodel name\t: AMD EPYC\ncpu family\t: 25\nmodel\t\t: 17\nflags\t\t: fpu avx2 avx512f\n" \
           "processor\t: 1\nmodel name\t: other\n"
    info = R.cpu_info(text)
    assert info == {"model name": "AMD EPYC", "family": "25", "model": "17", "avx512": True}
    assert R.cpu_line(info) == "AMD EPYC, family 25 model 17, AVX-512"
    assert R.cpu_info(text.replace(" avx512f", ""))["avx512"] is False
    t = R.locate("registered", "aime_like", "no_adaptation", 0)
    cpu = {**info, "avx512": False}
    assert "identical: all 4 compared" in R.report(t, R.compare_questions(_questions([0] * 4), _questions([0] * 4)),
                                                   4, "x", cpu)
    steps = pd.DataFrame({"step": [0, 1], "lr": [1.0, 1.0]})
    text = R.report(t, R.compare_steps(steps, steps.assign(lr=[1.0, 2.0]), 2), 2, "x", cpu)
    assert "1 of 2 compared values differ" in text and "first at step 1" in text and "e4d7f1c9" in text


def test_locate_names_what_exists_before_any_work(capsys):
    t = R.locate("registered", "amc_like", "ttrl", 0)
    assert t.csv.is_file() and t.steps_csv.is_file() and t.regimes_file == RESULTS / "regimes_base.json"
    xeon = R.locate("replication_xeon", "amc_like", "ttrl", 0)
    assert xeon.regimes_file == RESULTS / "replication_xeon" / "regimes_base.json"
    by_id = R.locate("claims_xeon", "amc_like", "ttrl", 0)  # a row of the designs' table, by its id
    assert (by_id.csv, by_id.steps_csv, by_id.regimes_file) == (xeon.csv, xeon.steps_csv, xeon.regimes_file)
    wide = R.locate("wide", "math500_like_768", "ddrl", 200)
    assert wide.csv.parent == RESULTS / "wide" / "math500_like_768" and wide.regimes_file == t.regimes_file
    with pytest.raises(ValueError, match=r"no committed run of ttrl seed 999 in amc_like.*seeds: \[0, 1, 2"):
        R.locate("registered", "amc_like", "ttrl", 999)
    with pytest.raises(ValueError, match=r"methods of amc_like: \[.*'ttrl'"):
        R.locate("registered", "amc_like", "nope", 0)
    with pytest.raises(ValueError, match="no design 'nope'.*registered"):
        R.locate("nope", "amc_like", "ttrl", 0)
    assert study_main(["rerun", "registered", "amc_like", "ttrl", "999"]) == 2
    assert "no committed run" in capsys.readouterr().err


@pytest.mark.slow
def test_rerun_recomputes_a_committed_run_exactly(tmp_path):
    """AIME-like no-adaptation seed 0 (~1 min) and TTRL seed 0's first 2 RL steps, each from a fresh cache: identical
    to the committed CSVs on the CPU kind that made them (AMD EPYC family 25; checked 2026-12-05 on model 17)."""
    diff, text = R.check("registered", "aime_like", "no_adaptation", 0, work=tmp_path / "run")
    assert diff.empty, text
    diff, text = R.check("registered", "aime_like", "ttrl", 0, steps=2, work=tmp_path / "steps")
    assert diff.empty, text
    assert np.isfinite(pd.read_csv(tmp_path / "steps" / "steps.csv.gz")["adv/mean"]).all()


@pytest.mark.slow
@pytest.mark.parametrize("method", REWARD_RUNS)
def test_rerun_recomputes_the_first_step_of_each_label_free_reward(tmp_path, method):
    """issue 97: ``rerun`` works for a job of each new method. Stage 3's AMC-like seed-0 runs, their first RL step
    recomputed in a fresh run directory, identical to the committed step log (5 s to 1 min each; checked 2026-12-07 on
    the Xeon that ran them)."""
    diff, text = R.check("rewards_amc", "amc_like", method, 0, steps=1, work=tmp_path / "steps")
    assert diff.empty, text


def test_decide_recomputes_the_committed_entry_of_a_registered_and_an_amendment_cell():
    """P1 in AIME-like (results/claims.json), A1 at lr/10 (results/small_lr/ablation.json, its 12 seeds) and P1 at lr/10
    (its untrained runs: AMC-like's, the same base)."""
    table = Lsn.decided_table([("P1", "aime_like"), ("A1", "math500_like_small_lr"), ("P1", "amc_like_small_lr")])
    assert table["as committed"].tolist() == ["yes (results/claims.json)", "yes (results/small_lr/ablation.json)",
                                              "yes (results/claims.json)"]
    assert table["seeds"].tolist()[:2] == [6, 12] and table["regime"].tolist() == [
        "AIME-like", "MATH-500-like, lr/10", "AMC-like, lr/10"]
    # on other seeds the same cell is another estimate, and the table says it is not the committed one
    other = Lsn.decide("A1", "math500_like_small_lr", seeds=range(6))
    assert other["n_seeds"] == 6 and other["estimate"] != table["testbed"].iloc[1]


def test_committed_cells_keeps_what_was_decided_and_refuses_unknown_claims():
    assert Lsn.committed_cells(["M1", "H1"], ["amc_like_small_lr", "amc_like"]) == [
        ("M1", "amc_like_small_lr"), ("M1", "amc_like"), ("H1", "amc_like")]  # H1 was never decided at lr/10
    with pytest.raises(ValueError, match=r"\['C2'\] are not paired"):
        Lsn.committed_cells(["C2"], ["amc_like"])


def test_verdict_sentences_one_per_verdict_present():
    table = pd.DataFrame({"what": ["a", "b", "c"], "regime": ["R", "R", "S"], "testbed": [3.0, -2.0, 0.5],
                          "verdict": ["reproduced", "contradicted", "reproduced"]})
    s = Lsn.verdict_sentences(table)
    assert s == ["Holds on the testbed: a (R, +3.0 points); c (S, +0.5 points).",
                 "Contradicted (the interval excludes zero on the other side): b (R, -2.0 points)."]


def test_parse_rerun_and_seed_position():  # the notebooks' own entries parse: tests/test_notebooks.py
    assert Lsn.parse_rerun("registered amc_like ddrl 3 --steps 2") == ("registered", "amc_like", "ddrl", 3, 2)
    for bad in ("registered amc_like ddrl", "registered amc_like ddrl x", "registered amc_like ddrl 3 --steps 0"):
        with pytest.raises(ValueError, match="DESIGN REGIME METHOD SEED"):
            Lsn.parse_rerun(bad)
    pos = Lsn.seed_position("aime_like", "ttrl", 0, 2.0)
    assert pos["rank"] == pos["n"] + 1 and pos["n"] >= 6  # above every committed seed
    assert Lsn.seed_position("aime_like", "ttrl", 0, pos["min"])["rank"] == 1  # a tie with the lowest: still first
    assert Lsn.seeds_needed("math500_like_small_lr") == Lsn.seeds_needed("math500_like") > 2


def test_rerun_table_says_why_a_run_was_not_rerun(monkeypatch):
    monkeypatch.setattr(Lsn, "check", lambda *a: (_ for _ in ()).throw(ValueError("written under key(s) X")))
    table, texts = Lsn.rerun_table(["registered aime_like ttrl 0 --steps 1"])
    assert table["result"].tolist() == ["not rerun: written under key(s) X"] and "key(s) X" in texts[0]
