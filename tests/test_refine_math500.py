"""Plan Amendment 59: COR's refinement size (R1) at lr/10 in MATH-500-like (``ddrl.study.amendments.refine_math500``)."""

from __future__ import annotations

import json
from datetime import datetime

import pandas as pd
import pytest

from ddrl.study import claims
from ddrl.study.amendments import small_lr
from ddrl.study.amendments.small_lr_refine import check_rows as refine_check_rows
from ddrl.study import runner as study
from ddrl.study.amendments import refine_math500 as M
from ddrl.run.storage import REPO
from ddrl.report.stats import predicted_half_width, variance_components
from ddrl.study.analysis import paired_matrix
from ddrl.study.plan import COR_4X, HELDOUT_X, SCALES, SMALL_LR, Job, csv_path, heldout_x_path

REGIME = small_lr.REGIME  # math500_like_small_lr


def test_jobs_go_seed_by_seed_and_stop_at_the_clock_after_the_first_six():
    clock = datetime.fromisoformat(M.CUTOFF).timestamp()
    before, after = M.jobs(now=clock - 60), M.jobs(now=clock + 1)
    assert [(j.regime, j.seed, j.methods) for j in before] == [(REGIME, s, (COR_4X,)) for s in range(10)]
    assert after == before[:6]
    assert M.jobs((7, 2), now=clock + 1) == [Job(REGIME, 2, (COR_4X,), "R1 lr/10 (A59)")]
    assert [(j.seed, j.methods) for j in M.check_jobs((3, 4))] == [(3, ("ddrl",)), (4, ("ddrl",))]


def test_the_heldout_repeat_check_reads_the_fresh_questions_folders(tmp_path):
    """Amendment 60's check is Amendment 56's description on the ``heldout_x`` split, under each folder's
    ``heldout_x/``: the adapted CSVs there are not read."""
    out, check = tmp_path / "out", tmp_path / "check"

    def write(root, method, seed, values):
        p = heldout_x_path(root, REGIME, method, seed)
        p.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"regime": REGIME, "method": method, "seed": seed, "split": HELDOUT_X,
                      "question": [f"x{i}" for i in range(len(values))], "pass@1": values}).to_csv(p, index=False)

    for s in (0, 1):
        write(out, "ddrl", s, [0.5, 0.25, 1.0])
        write(out, COR_4X, s, [0.25, 0.25, 1.0])
        _write(check, "ddrl", s, [0.0, 0.0])  # an adapted re-evaluation: not the held-out check's
    write(check, "ddrl", 0, [0.5, 0.25, 1.0])
    assert refine_check_rows(out, check, (0, 1), REGIME, HELDOUT_X) is None
    write(check, "ddrl", 1, [0.5, 0.5, 1.0])
    assert refine_check_rows(out, check, (0, 1), REGIME, HELDOUT_X) == {
        "questions_equal": 5, "questions": 6, "seeds_equal": 1,
        "r1_against_reevaluated": pytest.approx(100 * (-0.25 - 0.25 - 0.25) / 6)}


def test_predicted_half_widths_are_the_measured_components():
    """The plan's predictions at 6 / 10 seeds x 256 questions, from the committed matrices it names."""
    def hw(regime, a, b, seeds):
        df = pd.concat([pd.read_csv(csv_path(small_lr.RUNS, regime, m, s), dtype={"question": str})
                        for m in (a, b) for s in seeds])
        vc = variance_components(paired_matrix(df, regime, a, b, "adapted").dropna().to_numpy())
        return " / ".join(f"{predicted_half_width(vc, n, 256):.2f}" for n in (6, 10))

    got = ", ".join([hw("math500_like", COR_4X, "ddrl", range(6)), hw(SMALL_LR, COR_4X, "ddrl", range(10)),
                     hw(REGIME, "ddrl", "bcs_dae", range(18))])
    assert got == M.PREDICTED
    plan = " ".join((small_lr.RESULTS / "plan.md").read_text().split("59. **Why**")[1].split())
    assert all(f"**{v}**" in plan for v in M.PREDICTED.split(", "))
    assert "2026-12-03 14:05 UTC" in plan and M.CUTOFF.startswith("2026-12-03T14:05")


def _write(root, method, seed, values, steps=None):
    p = csv_path(root, REGIME, method, seed)
    p.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"regime": REGIME, "method": method, "seed": seed, "split": "adapted",
                  "question": [f"q{i}" for i in range(len(values))], "pass@1": values}).to_csv(p, index=False)
    if steps is not None:
        pd.DataFrame({"regime": REGIME, "method": method, "seed": seed, "phase": "rl", "step": range(len(steps)),
                      "adv/mean": steps}).to_csv(csv_path(root, REGIME, method, seed, steps=True), index=False)


def test_the_repeat_check_counts_equal_questions_and_finds_the_first_divergent_step(tmp_path):
    """The check's description: questions and whole seeds whose re-evaluated DDRL pass@1 equals the committed one,
    each retrained run's first RL step off the committed trajectory, and R1 against the re-evaluated runs; None until
    every re-evaluation is written."""
    out, check = tmp_path / "out", tmp_path / "check"
    for s in (0, 1):
        _write(out, "ddrl", s, [0.5, 0.25], steps=[0.1, 0.2, 0.3])
        _write(out, COR_4X, s, [0.75, 0.25])
    _write(check, "ddrl", 0, [0.5, 0.25], steps=[0.1, 0.2, 0.3])
    assert M.check_rows(out, check, (0, 1)) is None
    _write(check, "ddrl", 1, [0.5, 0.5], steps=[0.1, 0.25, 0.3])
    assert M.check_rows(out, check, (0, 1)) == {
        "questions_equal": 3, "questions": 4, "seeds_equal": 1, "diverged_at": {0: -1, 1: 1},
        "r1_against_reevaluated": pytest.approx(100 * (0.25 + 0 + 0.25 - 0.25) / 4)}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The tiny testbed, seeds 0-1 in MATH-500-like at lr/10: BCS+DAE and DDRL (one DDRL run, trained here) as
    Amendments 28-29 left them, in a CSV folder and a run folder of their own; the R1 jobs then start from an empty
    run folder, as this amendment's did. (CSV folder, empty run folder.)"""
    tmp = tmp_path_factory.mktemp("refine_math500")
    out = tmp / "out"
    study.run_jobs([Job(REGIME, s, (m,), "A3") for s in (0, 1) for m in ("bcs_dae", "ddrl")], SCALES["smoke"], out,
                   str(tmp / "committed_runs"), workers=2, progress=False)
    return out, str(tmp / "runs")


def test_smoke_run_and_analyse(smoke, tmp_path, monkeypatch, capsys):
    """The real entry point on the smoke scale: the R1 jobs train each DDRL run again and refine it, the check
    evaluates the retrained runs into its own folder (the committed DDRL CSV untouched) and finds them equal, question
    by question and step by step; then status and the analysis."""
    out, runs = smoke
    monkeypatch.setattr(M, "CHECK", tmp_path / "check")
    committed = csv_path(out, REGIME, "ddrl", 0).read_bytes()
    assert M.main(["run", "--seeds", "0-1", "--scale", "smoke", "--workers", "2", "--out", str(out),
                   "--runs-root", runs]) == 0
    assert csv_path(out, REGIME, "ddrl", 0).read_bytes() == committed
    assert csv_path(tmp_path / "check", REGIME, "ddrl", 1, steps=True).is_file()
    assert M.main(["status", "--out", str(out)]) == 0
    assert "Amendment 59 (math500_like_small_lr): 2 of 10 seeds complete" in capsys.readouterr().out
    res = M.analyse(out, n_boot=200, seeds=(0, 1), check=tmp_path / "check")
    assert [(e["id"], e["regime"], e["paper"], e["n_seeds"]) for e in res["entries"]] == [("R1", REGIME, 0.1, 2)]
    q = pd.concat([pd.read_csv(csv_path(out, REGIME, m, s)).assign(m=m) for s in (0, 1)
                   for m in M.METHODS]).query("split == 'adapted'").pivot_table("pass@1", ["seed", "question"], "m")
    assert res["entries"][0]["estimate"] == pytest.approx(100 * (q[COR_4X] - q.ddrl).mean())
    assert res["check"]["questions_equal"] == res["check"]["questions"] == len(q)
    assert res["check"]["seeds_equal"] == 2 and res["check"]["diverged_at"] == {0: -1, 1: -1}
    assert [r["method"] for r in res["levels"]] == list(M.METHODS)
    assert res["cor_kept"][COR_4X] >= res["cor_kept"]["ddrl"] > 0  # the smoke scale has few agreeing rollouts to keep
    table = M.markdown(res, claims.load(small_lr.RESULTS / "claims.json")).splitlines()
    assert table[2].startswith("| R1 COR keeping 4x the rollouts - DDRL (COR 1x) | +0.1 | +0.7")
    assert f"({M.PREDICTED})" in table[2]


def test_an_early_analysis_is_refused():
    """Before every seed is written and before the clock, no estimate: the committed CSVs hold no COR 4x run here
    until this amendment's are added."""
    clock = datetime.fromisoformat(M.CUTOFF).timestamp()
    if not M.missing():
        pytest.skip("every seed of Amendment 59 is written")
    with pytest.raises(ValueError, match="Amendment 59"):
        M.analyse(now=clock - 60)


def test_committed_analysis_recomputes_and_docs_quote_it():
    """The committed analysis is what the code computes from the committed CSVs, on the plan's seeds from 0 (at least
    6), and docs/results.md quotes its table in its own section."""
    path, analyse, section = M.ANALYSIS, M.analyse, M.SECTION
    markdown = lambda res: M.markdown(res, claims.load(small_lr.RESULTS / "claims.json"))  # noqa: E731
    if not path.is_file():
        pytest.skip(f"{path}: not analysed yet (python -m ddrl.study.amendments.refine_math500 status)")
    committed = json.loads(path.read_text())
    assert committed["seeds"] == list(M.SEEDS[:len(committed["seeds"])]) and len(committed["seeds"]) >= 6
    assert json.loads(json.dumps(analyse(n_boot=4000))) == committed
    docs = (REPO / "docs" / "results.md").read_text()
    start = docs.index(section)
    assert markdown(committed) in docs[start:docs.index("\n## ", start + 1)]
