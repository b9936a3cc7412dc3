"""Plan Amendment 40: distance from the base at both learning rates on the Xeon build (``ddrl.study.amendments.lr_drift``): the claims
on a made-up world with known answers, the clock, the refusals, and the committed analysis recomputed.

The synthetic tables below are TEST INPUT made up here, never results and never committed."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import committed_json, write_h1x

from ddrl.study import drift_data
from ddrl.study.amendments import lr_drift as W
from ddrl.study.drift import x3h_slope
from ddrl.study.plan import heldout_x_path

KL = {("default", "ttrl"): 18.0, ("default", "bcs_dae"): 21.0, ("default", "ddrl"): 24.0,
      ("lr10", "ttrl"): 3.0, ("lr10", "bcs_dae"): 4.0, ("lr10", "ddrl"): 6.0}


def _world(tmp: Path, slope: float, lr_term: float, base_term: float, seeds=range(4)) -> tuple[Path, Path]:
    """H1x CSVs (out) and drift files (dest) where a run's held-out pass@1 (points) = 55 + slope x KL + lr_term x
    [lr/10] (two questions, +-5 around it), its held-out KL the method's above + 0.5 x seed, and the untrained model
    55 + base_term at KL 0."""
    out, dest = tmp / "out", tmp / "dest"
    lr_of = {v: k for k, v in W.REGIMES.items()}

    def h1x(regime: str, method: str, seed: int, acc: float) -> None:
        write_h1x(out, regime, method, seed, acc, f"{method}-{regime}-{seed}")

    for s in seeds:
        h1x(W.DEFAULT, "no_adaptation", s, 55 + base_term)
        for (lr, m), k in KL.items():
            regime, kl = lr_of[lr], k + 0.5 * s
            h1x(regime, m, s, 55 + slope * kl + (lr_term if lr == "lr10" else 0))
            steps = drift_data.drift_path(dest, regime, m, s)
            steps.parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame({"method": m, "seed": s, "step": [0, 1], "episode": [0, 1], "actor/kl": kl * 1e-3,
                          "rollout/entropy": 0.03, "gt/bin0-0.125/n": 80}).to_csv(steps, index=False)
            drift_data.drift_path(dest, regime, m, s, "kl").write_text(json.dumps({"kl": kl}))
    return out, dest


def test_the_claims_recover_a_known_world(tmp_path):
    """On one line of slope -0.41 (the registered one) with lr/10 on it, W4 is the slope, W5, W6 and W7-W9 are 0 and
    W1-W3 the distance differences; lr/10 2 points above the line moves W5 and W7-W9 by exactly 2."""
    s = x3h_slope()
    out, dest = _world(tmp_path / "on", s, 0.0, 0.0)
    res = W.analyse(out=out, dest=dest)
    e = {x["id"]: x for x in res["entries"]}
    assert res["seeds"] == [0, 1, 2, 3] and list(e) == list(W.CLAIMS)
    for cid, m in (("W1", "ttrl"), ("W2", "bcs_dae"), ("W3", "ddrl")):
        assert e[cid]["estimate"] == pytest.approx(KL["lr10", m] - KL["default", m])
        assert e[cid]["verdict"] == "reproduced"  # no noise: a zero-width interval below 0
    assert e["W4"]["estimate"] == pytest.approx(s) and e["W4"]["verdict"] == "reproduced"
    for cid in ("W5", "W6", "W7", "W8", "W9"):
        assert e[cid]["estimate"] == pytest.approx(0, abs=1e-9) and e[cid]["verdict"] == "reproduced", cid
    g = {x["method"]: x for x in res["gains"]}
    assert g["ttrl"]["measured_gain"] == pytest.approx(g["ttrl"]["predicted_gain"]) == pytest.approx(s * -15.0)
    off = W.analyse(out=(w := _world(tmp_path / "off", s, 2.0, -3.0))[0], dest=w[1])
    e = {x["id"]: x for x in off["entries"]}
    for cid in ("W5", "W7", "W8", "W9"):
        assert e[cid]["estimate"] == pytest.approx(2.0) and e[cid]["verdict"] == "contradicted", cid
    assert e["W6"]["estimate"] == pytest.approx(-3.0) and e["W6"]["verdict"] == "contradicted"
    assert e["W4"]["estimate"] == pytest.approx(s)  # one intercept per learning rate: the slope is unmoved
    md = W.markdown(off)
    assert md.count("\n| W") == len(W.CLAIMS) and "| lr10 | ddrl |" in md and "| none | no_adaptation |" in md
    fig = W.figure(json.loads(json.dumps(off)))
    ax = fig.get_axes()[0]
    assert sum(len(c.get_offsets()) for c in ax.collections) == len(off["runs"]) == 4 * 7  # one point per run
    assert [ln.get_xdata()[0] for ln in ax.get_lines() if len(ln.get_xdata())] == [0.0, 0.0]  # both reach KL 0


def test_the_analysis_reads_complete_seeds_only(tmp_path):
    out, dest = _world(tmp_path, -0.4, 0.0, 0.0, seeds=range(4))
    drift_data.drift_path(dest, W.SMALL_LR, "ddrl", 3, "kl").unlink()
    assert W.complete(dest, range(4)) == [0, 1, 2]
    assert W.analyse(out=out, dest=dest)["seeds"] == [0, 1, 2]
    with pytest.raises(ValueError, match="at least 3"):
        W.analyse(seeds=[0, 1, 3], out=out, dest=dest)


def test_the_clock_refuses_measurements_after_it(monkeypatch, tmp_path):
    cutoff = datetime.fromisoformat(W.CUTOFF).timestamp()
    assert W.minutes_left(cutoff - 600) == pytest.approx(10) and W.minutes_left(cutoff + 60) < 0
    monkeypatch.setattr(W, "minutes_left", lambda now=None: -1.0)
    with pytest.raises(SystemExit, match="Amendment 40's clock"):
        W.measure(W.DEFAULT, tmp_path)


def test_committed_analysis_reads_every_complete_seed():  # recomputed by make test-study
    path = W.XEON / "lr_drift.json"
    res = committed_json(path, f"python -m ddrl.study.amendments.lr_drift analyse --json {path}")
    assert res["seeds"] == W.complete() and len(res["seeds"]) >= 3
    assert np.isfinite([e["estimate"] for e in res["entries"]]).all()


def _cor_world(tmp: Path, gains, kls, reproduced=True) -> tuple[Path, Path]:
    """Held-out CSVs of COR alone and the untrained model at lr/10 (COR alone ``gains[s]`` points above it) and COR
    alone's KL JSONs (``kls[s]``)."""
    out, dest = tmp / "out", tmp / "dest"
    for s, (g, k) in enumerate(zip(gains, kls)):
        for m, acc in (("no_adaptation", 50.0), ("cor_only", 50.0 + g)):
            p = heldout_x_path(out, W.SMALL_LR, m, s)
            p.parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame({"regime": W.SMALL_LR, "method": m, "seed": s, "split": "heldout_x", "question": ["q0", "q1"],
                          "pass@1": [(acc - 4) / 100, (acc + 4) / 100]}).to_csv(p, index=False)
        path = drift_data.drift_path(dest, W.DEFAULT, "cor_only", s, "kl")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"kl": k, "adapted_reproduced": reproduced}))
    return out, dest


def test_cor_alone_claims_are_the_residual_from_each_line(tmp_path):
    gains, kls = [0.5, 0.0, 1.0, 0.3], [2.0, 1.0, 3.0, 2.0]
    out, dest = _cor_world(tmp_path, gains, kls)
    res = W.analyse_cor(out=out, dest=dest)
    e = {x["id"]: x for x in res["entries"]}
    for cid, which in (("Y1", "registered"), ("Y2", "w4")):
        want = np.mean(np.array(gains) - res["slopes"][which] * np.array(kls))
        assert e[cid]["estimate"] == pytest.approx(want) and e[cid]["n_seeds"] == 4
        assert e[cid]["ci_low"] < want < e[cid]["ci_high"]
    assert res["slopes"]["registered"] == pytest.approx(x3h_slope()) and res["kl_mean"] == pytest.approx(2.0)
    assert [r["heldout"] for r in res["runs"]] == pytest.approx([50.0 + g for g in gains])
    base = W.analyse(out=(w := _world(tmp_path / "w", -0.4, 0.0, 0.0))[0], dest=w[1])
    assert W.cor_markdown(res).count("\n| Y") == 2
    ax = W.figure(base, res).get_axes()[0]  # COR alone's runs join the figure's points
    assert sum(len(c.get_offsets()) for c in ax.collections) == len(base["runs"]) + len(res["runs"])
    with pytest.raises(ValueError, match="at least 3 seeds"):
        W.analyse_cor(seeds=[0, 1], out=out, dest=dest)
    with pytest.raises(ValueError, match="measured \\[0, 1, 2, 3\\]"):
        W.analyse_cor(seeds=[0, 1, 2, 3, 4], out=out, dest=dest)
    out, dest = _cor_world(tmp_path / "b", gains, kls, reproduced=False)
    with pytest.raises(ValueError, match="reproducing its committed"):
        W.analyse_cor(out=out, dest=dest)


def test_cor_alone_recomputed_equals_the_studys_cor_alone_on_the_tiny_testbed(tmp_path):
    """cor_alone_kl recomputes COR alone the way the study's job computed it: the same adapted evaluation on every
    question (so the same weights), a positive distance from the base, the same weights twice."""
    from ddrl.study.pool import run_jobs
    from ddrl.study.plan import RESULTS, SCALES, Job

    run_jobs([Job(W.DEFAULT, 0, ("cor_only",), "")], SCALES["smoke"], tmp_path, tmp_path / "runs", None, 1, desc="t")
    a = W.cor_alone_kl(0, scale="smoke", regimes=RESULTS / "regimes_base.json", out=tmp_path)
    b = W.cor_alone_kl(0, scale="smoke", regimes=RESULTS / "regimes_base.json", out=tmp_path)
    assert a["adapted_reproduced"] and a == b and a["kl"] > 0 and a["n_samples"] == 8


def test_committed_cor_alone_analysis_reads_its_seeds():  # recomputed by make test-study
    path = W.XEON / "cor_alone_drift.json"
    res = committed_json(path, f"python -m ddrl.study.amendments.lr_drift analyse --cor-alone --json {path}")
    assert res["seeds"] == list(W.COR_SEEDS[:len(res["seeds"])]) and len(res["seeds"]) >= 3
