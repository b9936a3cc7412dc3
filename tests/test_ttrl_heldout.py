"""Plan Amendment 58: TTRL, and COR at a tenth of its rate, at lr/10 on fresh AMC-like questions
(``ddrl.study.amendments.ttrl_heldout``)."""

from __future__ import annotations

import json
from datetime import datetime

import pandas as pd
import pytest

from ddrl.study import claims
from ddrl.study.amendments import small_lr
from ddrl.study import runner as study
from ddrl.study.amendments import ttrl_heldout as T
from ddrl.report.stats import predicted_half_width, variance_components
from ddrl.study.analysis import paired_matrix
from ddrl.study.plan import COR_LR10, HELDOUT_X, SCALES, SMALL_LR, Job, csv_path, heldout_x_path


def test_jobs_go_seed_by_seed_ttrl_first_and_stop_at_the_clock_after_the_first_six():
    clock = datetime.fromisoformat(T.CUTOFF).timestamp()
    before, after = T.jobs(now=clock - 60), T.jobs(now=clock + 1)
    assert [(j.regime, j.seed, j.methods, j.label) for j in before] == [
        (SMALL_LR, s, (m,), "H1x") for s in range(10) for m in ("ttrl", COR_LR10)]
    assert after == before[:12]
    assert T.jobs((7, 2), now=clock + 1) == [Job(SMALL_LR, 2, (m,), "H1x") for m in ("ttrl", COR_LR10)]


def test_predicted_half_widths_are_the_measured_components():
    """The plan's predictions at 10 / 6 seeds x 1,536 from the matrices it names: the Xeon build's lr/10 AMC-like
    H1xT, H1xD, H1xR (Amendment 38) and this build's H1xC (Amendment 57) for K1x and K2x; the plan quotes them."""
    def hw(root, a, b):
        df = pd.concat([pd.read_csv(p, dtype={"question": str}) for m in (a, b)
                        for p in sorted((root / "heldout_x" / SMALL_LR).glob(f"{m}-seed[0-9][0-9].csv.gz"))])
        vc = variance_components(paired_matrix(df, SMALL_LR, a, b, HELDOUT_X).dropna().to_numpy())
        return " / ".join(f"{predicted_half_width(vc, n, 1536):.2f}" for n in (10, 6))

    xeon = small_lr.RESULTS / "replication_xeon" / "runs"
    cor = hw(small_lr.RUNS, "ddrl", "bcs_dae")
    assert T.PREDICTED == {"H1xT": hw(xeon, "ttrl", "no_adaptation"), "H1xD": hw(xeon, "ddrl", "ttrl"),
                           "H1xR": hw(xeon, "bcs_dae", "ttrl"), "K1x": cor, "K2x": cor}
    plan = " ".join((small_lr.RESULTS / "plan.md").read_text().split("58. **Why**")[1].split())
    assert all(f"{cid} matrix" in plan for cid in ("H1xT", "H1xD", "H1xR", "H1xC"))
    assert all(f"**{v}**" in plan for v in T.PREDICTED.values())
    assert "2026-12-03 11:25 UTC" in plan and T.CUTOFF.startswith("2026-12-03T11:25")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The tiny testbed, seeds 0-1 in AMC-like at lr/10, as Amendments 55-57 left them: TTRL, BCS+DAE (which trains
    the DDRL run), DDRL and COR at 1e-6 on the adapted questions, then the untrained model, BCS+DAE and DDRL on the
    fresh ones. (CSV folder, run folder.)"""
    tmp = tmp_path_factory.mktemp("ttrl_heldout")
    out, runs = tmp / "out", str(tmp / "runs")
    adapted = [Job(SMALL_LR, s, (m,), "A") for s in (0, 1) for m in ("ttrl", "bcs_dae", "ddrl", COR_LR10)]
    held = [Job(SMALL_LR, s, ("no_adaptation", "bcs_dae", "ddrl"), "H1x") for s in (0, 1)]
    study.run_jobs(adapted + held, SCALES["smoke"], out, runs, workers=2, progress=False)
    return out, runs


def test_smoke_run_and_analyse(smoke, tmp_path, capsys):
    """The real entry point on the smoke runs: a runs root without the DDRL runs is refused by name before any job;
    then both evaluations (their adapted rows equal the adapted CSVs), status and the analysis."""
    out, runs = smoke
    common = ["--seeds", "0-1", "--scale", "smoke", "--workers", "2", "--out", str(out)]
    with pytest.raises(ValueError, match=r"DDRL runs of seeds \[0, 1\] in amc_like_small_lr are not finished"):
        T.main(["run", *common, "--runs-root", str(tmp_path / "empty")])
    assert not heldout_x_path(out, SMALL_LR, "ttrl", 0).exists()
    assert T.main(["run", *common, "--runs-root", runs]) == 0
    assert T.main(["status", "--out", str(out)]) == 0
    assert "Amendment 58 (amc_like_small_lr, held-out): 2 of 10 seeds complete" in capsys.readouterr().out
    res = T.analyse(out, n_boot=200, seeds=(0, 1))
    assert [(e["id"], e["regime"], e["n_seeds"], e["n_questions"]) for e in res["entries"]] == [
        (cid, SMALL_LR, 2, SCALES["smoke"].n_heldout_x) for cid in ("H1xT", "H1xD", "H1xR", "K1x", "K2x")]
    assert res["reproduced_by_method"] == {m: {"registered_reproduced": 2, "registered_checked": 2}
                                           for m in ("ttrl", COR_LR10)}
    h = pd.concat([pd.read_csv(heldout_x_path(out, SMALL_LR, m, s)) for s in (0, 1)
                   for m in T.METHODS]).pivot_table("pass@1", ["seed", "question"], "method")
    est = {e["id"]: e["estimate"] for e in res["entries"]}
    assert est["H1xT"] == pytest.approx(100 * (h.ttrl - h.no_adaptation).mean())
    assert est["H1xD"] == pytest.approx(100 * (h.ddrl - h.ttrl).mean())
    assert est["K1x"] == pytest.approx(100 * (h[COR_LR10] - h.bcs_dae).mean())
    assert est["K2x"] == pytest.approx(100 * (h.ddrl - h[COR_LR10]).mean())
    assert [r["method"] for r in res["levels"]] == list(T.METHODS)
    md = T.markdown(res, claims.load(small_lr.RESULTS / "claims.json")).splitlines()
    assert md[2].startswith("| H1xT TTRL - untrained | ") and "(0.73 / 0.74)" in md[2]
    assert md[5].startswith("| K1x COR at lr 1e-6 - BCS+DAE (its cost on fresh questions) | - | **")


def test_a_clean_clone_is_refused_and_an_early_analysis_too(tmp_path):
    """Before every seed is written and before the clock, no estimate; a seed without its TTRL CSV is missing."""
    assert T.missing(tmp_path) == list(T.SEEDS)
    clock = datetime.fromisoformat(T.CUTOFF).timestamp()
    with pytest.raises(ValueError, match="Amendment 58 seeds missing"):
        T.analyse(tmp_path, now=clock - 60)


def test_committed_analysis_recomputes():
    """The committed analysis is what the code computes from the committed CSVs, on the plan's seeds from 0 (at least
    6)."""
    if not T.ANALYSIS.is_file():
        pytest.skip(f"{T.ANALYSIS}: not analysed yet (python -m ddrl.study.amendments.ttrl_heldout status)")
    committed = json.loads(T.ANALYSIS.read_text())
    assert committed["seeds"] == list(T.SEEDS[:len(committed["seeds"])]) and len(committed["seeds"]) >= 6
    assert json.loads(json.dumps(T.analyse(n_boot=4000))) == committed
