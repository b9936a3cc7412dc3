"""Plan Amendment 42: a third learning rate on the Xeon build (``ddrl.study.amendments.lr_curve``): the registered readings refit from
Amendment 40's committed runs, the claims on made-up worlds with known answers, the clocks and refusals, and (once
committed) the analysis recomputed and quoted.

The synthetic tables below are TEST INPUT made up here, never results and never committed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import committed_json, write_h1x

from ddrl.study import drift_data
from ddrl.study.amendments import lr_curve as C
from ddrl.study.drift import x3h_slope
from ddrl.study.plan import SMALL_LR

KL = {"ttrl": 4.6, "bcs_dae": 5.9, "ddrl": 9.9}
BASE = 54.0


def _world(tmp: Path, reading: str, offset: float = 0.0, seeds=range(5)) -> tuple[Path, Path]:
    """H1x CSVs (out) and drift files (dest) of the lr/3 runs where each run's held-out pass@1 (points) = the untrained
    model's (54) + ``reading``'s prediction at its KL + ``offset`` (two questions, +-5 around it); KL = the method's
    above + 0.3 x seed."""
    out, dest = tmp / "out", tmp / "dest"

    def h1x(regime: str, method: str, seed: int, acc: float) -> None:
        write_h1x(out, regime, method, seed, acc, f"{method}-{seed}")

    for s in seeds:
        h1x(SMALL_LR, "no_adaptation", s, BASE)
        for m, k in KL.items():
            kl = k + 0.3 * s
            h1x(C.REGIME, m, s, BASE + float(C.reading(reading, kl)) + offset)
            steps = drift_data.drift_path(dest, C.REGIME, m, s)
            steps.parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame({"method": m, "seed": s, "step": [0, 1], "episode": [0, 1], "actor/kl": kl * 1e-3,
                          "rollout/entropy": 0.03, "gt/bin0-0.125/n": 80}).to_csv(steps, index=False)
            drift_data.drift_path(dest, C.REGIME, m, s, "kl").write_text(json.dumps({"kl": kl}))
    return out, dest


def test_the_registered_readings_are_the_fit_on_amendment_40s_runs():
    """L and H as the plan writes them are the least-squares fits on Amendment 40's committed 60 RL runs (rounded as
    written), and H fits them better (residual sums of squares 23.9 vs 60.6)."""
    runs = C.amendment40_runs()
    assert len(runs) == 60 and set(runs["lr"]) == {"default", "lr10"}
    f = C.fit_readings(runs)
    assert round(f["line"], 4) == C.LINE
    assert round(f["hinge_k0"], 3) == C.HINGE_K0 and round(f["hinge_b"], 4) == C.HINGE_B
    assert round(f["rss_line"], 1) == 60.6 and round(f["rss_hinge"], 1) == 23.9


def test_readings():
    assert C.reading("H", [0.0, C.HINGE_K0, C.HINGE_K0 + 2]).tolist() == pytest.approx([0, 0, -2 * C.HINGE_B])
    assert C.reading("L", 10.0) == pytest.approx(10 * C.LINE)
    assert C.reading("R", 10.0) == pytest.approx(10 * x3h_slope())
    # the two readings cross where the plan says (17.5 units): H above L nearer the base
    assert C.reading("H", 10.0) > C.reading("L", 10.0) and C.reading("H", 20.0) < C.reading("L", 20.0)
    with pytest.raises(ValueError, match="'L', 'R' or 'H'"):
        C.reading("X", 1.0)


@pytest.mark.parametrize("reading", ["H", "L"])
def test_the_claims_recover_a_known_world(tmp_path, reading):
    """Runs exactly on H: Z3 is 0, Z1 half of H - L (> 0, *reproduced*); exactly on L: Z4 is 0, Z1 minus that
    (*contradicted*). Z2 likewise with R."""
    out, dest = _world(tmp_path, reading)
    res = C.analyse(out=out, dest=dest)
    e = {x["id"]: x for x in res["entries"]}
    assert res["seeds"] == [0, 1, 2, 3, 4] and list(e) == list(C.CLAIMS)
    k = np.array([KL[m] + 0.3 * s for s in range(5) for m in KL])
    half = float(np.mean((C.reading("H", k) - C.reading("L", k)) / 2))
    sign = 1 if reading == "H" else -1
    assert e["Z1"]["estimate"] == pytest.approx(sign * half, abs=1e-9)
    assert e["Z1"]["verdict"] == ("reproduced" if reading == "H" else "contradicted")
    own = "Z3" if reading == "H" else "Z4"
    assert e[own]["estimate"] == pytest.approx(0, abs=1e-9) and e[own]["verdict"] == "reproduced"
    if reading == "H":
        half_r = float(np.mean((C.reading("H", k) - C.reading("R", k)) / 2))
        assert e["Z2"]["estimate"] == pytest.approx(half_r, abs=1e-9)
    assert res["rmse"][reading] == pytest.approx(0, abs=1e-9)
    assert {(r["lr"], r["method"]) for r in res["levels"]} >= {("lr3", m) for m in KL}
    fig = C.figure(res, C.amendment40_runs(), x3h_slope())
    assert len(fig.get_axes()) == 2  # drawn without adapted rows too (this world keeps none)


def test_an_offset_moves_every_claim_by_it(tmp_path):
    """Two points above H: Z1, Z2, Z3 and Z4 all move by exactly 2 (Z3 then lies beyond the 1-point margin)."""
    out, dest = _world(tmp_path / "a", "H")
    on = {e["id"]: e["estimate"] for e in C.analyse(out=out, dest=dest)["entries"]}
    out, dest = _world(tmp_path / "b", "H", offset=2.0)
    res = C.analyse(out=out, dest=dest)
    for e in res["entries"]:
        assert e["estimate"] == pytest.approx(on[e["id"]] + 2.0, abs=1e-9)
    assert next(e for e in res["entries"] if e["id"] == "Z3")["verdict"] == "contradicted"


def test_the_analysis_refuses_fewer_than_five_complete_seeds(tmp_path):
    out, dest = _world(tmp_path, "H", seeds=range(4))
    with pytest.raises(ValueError, match="at least 5"):
        C.analyse(out=out, dest=dest)
    drift_data.drift_path(dest, C.REGIME, "ttrl", 0, "kl").unlink()
    with pytest.raises(ValueError, match="at least 5"):
        C.analyse(seeds=[0, 1, 2, 3, 4], out=out, dest=dest)


def test_the_clocks_refuse_work_after_them(monkeypatch, tmp_path):
    with pytest.raises(SystemExit, match="clock"):
        C.run(seeds=[0], out=tmp_path, cutoff="2020-01-01T00:00:00+00:00")
    monkeypatch.setattr(C, "KL_CUTOFF", "2020-01-01T00:00:00+00:00")
    with pytest.raises(SystemExit, match="clock"):
        C.kl(tmp_path, seeds=[0], out=tmp_path, dest=tmp_path)


def test_the_regime_changes_only_the_learning_rate():
    from ddrl.study.amendments.lr_heldout import XEON
    from ddrl.study.plan import load_regimes, regimes_path

    amc = load_regimes(regimes_path(XEON), names=["amc_like"])["amc_like"]
    r = C.regime()  # read from the committed regimes_lr3.json, which is what the rule writes
    assert json.loads((XEON / "regimes_lr3.json").read_text()) == json.loads(json.dumps(C.regime_file()))
    assert r.name == C.REGIME and r.lr == pytest.approx(amc.lr / 3)
    assert (r.num_ops, r.n_adapted, r.n_heldout, r.episodes, r.overrides) == (
        amc.num_ops, amc.n_adapted, amc.n_heldout, amc.episodes, amc.overrides)


def test_committed_analysis_reads_every_measured_seed_and_draws():  # recomputed by make test-study
    path = C.XEON / "lr_curve.json"
    res = committed_json(path, f"python -m ddrl.study.amendments.lr_curve analyse --json {path}")
    assert res["seeds"] == C.measured() and len(res["seeds"]) >= 5
    assert len(res["runs"]) == 3 * len(res["seeds"]) and {r["lr"] for r in res["runs"]} == {"lr3"}
    assert {(t["lr"], t["method"]) for t in res["tradeoff"]} == {(lr, m) for lr in ("default", "lr3", "lr10")
                                                                 for m in C.METHODS}
    fig = C.figure(res, C.amendment40_runs(), x3h_slope())
    assert len(fig.get_axes()) == 2
