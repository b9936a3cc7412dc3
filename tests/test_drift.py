"""ddrl.study.drift (plan Amendments 21-25) on made-up runs with known answers (TEST INPUT) and on the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ddrl.study import drift, runner
from ddrl.study.designs import DESIGNS
from ddrl.models import load_model
from ddrl.infra.rundir import RunDir
from ddrl.seeds import seed_range
from ddrl.study.plan import adapted_x_path, heldout_x_path


def _metrics(path: Path, kl: list[float], episodes: int) -> None:
    per = len(kl) // episodes
    rows = [{"step": i, "episode": i // per, "actor/kl": k, "rollout/entropy": 0.05 - k, "gt/bin0-0.125/n": 10 + i,
             "label/majority_ratio": 0.5, "gt/label_acc": 0.75, "time/step_s": 1.0} for i, k in enumerate(kl)]
    rows.append({"step": len(kl), "cor/loss": 0.1})  # a COR step: no actor/kl, left out
    path.mkdir(parents=True, exist_ok=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _h1x_csv(out: Path, method: str, seed: int, pass1: np.ndarray, split: str = "heldout_x") -> None:
    """An AMC-like H1x CSV, one row per question (``split="adapted"``: the run's kept adapted rows)."""
    p = (heldout_x_path if split == "heldout_x" else adapted_x_path)(out, "amc_like", method, seed)
    p.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"regime": "amc_like", "method": method, "seed": seed, "split": split,
                  "question": [f"{split[0]}{i}" for i in range(len(pass1))], "pass@1": pass1,
                  "run": f"{method}-{seed}"}).to_csv(p, index=False)


def _world(tmp_path: Path, arms=(("bcs", -3), ("bcs_random_neg", 0)), seeds=range(100, 108), slope=-0.5,
           term=0.0, noise=0.1, adapted: dict | None = None, export=True):
    """Runs of each (method, drop): KL 20 - drop + N(0, 2) [1e-3] (late and held-out alike), held-out pass@1 (points)
    60 + slope * KL + noise + 6 question effects (+ ``term`` for the second method); ``adapted``: method -> adapted
    pass@1 on 4 kept questions. Returns the output folder, the runs' root and each run's (KL, held-out pass@1)."""
    rng = np.random.default_rng(0)
    out, runs, q_eff, truth = tmp_path / "out", tmp_path / "runs", rng.normal(0, 5, 6), {}
    for s in seeds:
        for m, drop in arms:
            kl = 20 - drop + rng.normal(0, 2)
            acc = 60 + slope * kl + (term if m == arms[1][0] else 0) + noise * rng.normal()
            truth[m, s] = (kl, acc + q_eff.mean())
            _metrics(runs / f"{m}-{s}", [0.0] * 8 + [kl * drift.KL_UNIT] * 4, episodes=6)  # last 2 episodes = kl
            _h1x_csv(out, m, s, (acc + q_eff) / 100)
            if adapted and m in adapted:
                _h1x_csv(out, m, s, np.full(4, adapted[m] / 100), "adapted")
            kp = drift.drift_path(out, "amc_like", m, s, "kl")  # the held-out KL
            kp.parent.mkdir(parents=True, exist_ok=True)
            kp.write_text(json.dumps({"kl": kl}))
    if export:
        drift.export_steps(out, runs, "amc_like", tuple(m for m, _ in arms))
    return out, runs, truth


def test_drift_steps_keep_rl_steps_and_the_columns_and_errors_name_the_file(tmp_path):
    _metrics(tmp_path / "r", [0.001, 0.002, 0.003, 0.004], episodes=2)
    df = drift.drift_steps(tmp_path / "r")
    assert list(df.columns) == list(drift.DRIFT_COLUMNS) and len(df) == 4  # COR's row dropped, time/step_s not kept
    assert drift.late_mean(df, "actor/kl", episodes=1) == pytest.approx(0.0035)
    assert drift.late_mean(df, "actor/kl", episodes=2) == pytest.approx(0.0025)
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        drift.drift_steps(tmp_path / "absent")
    (tmp_path / "cor").mkdir()
    (tmp_path / "cor" / "metrics.jsonl").write_text(json.dumps({"step": 0, "cor/loss": 1.0}) + "\n")
    with pytest.raises(ValueError, match="no RL step"):
        drift.drift_steps(tmp_path / "cor")


def test_export_then_seed_table_and_kl_fit_recover_each_run(tmp_path):
    out, runs, truth = _world(tmp_path, slope=-0.6, term=1.5, noise=0.0, export=False)
    (runs / "bcs-103").rename(runs / "elsewhere")  # a run directory this machine does not hold
    n, missing = drift.export_steps(out, runs, "amc_like")
    assert n == 15 and missing == ["bcs-103"]
    t = drift.seed_table(out, "amc_like")
    assert len(t) == 15  # the run without a drift CSV is left out
    for r in t.itertuples():
        kl, acc = truth[r.method, r.seed]
        assert r.kl_late == pytest.approx(kl) and r.heldout == pytest.approx(acc)
    fit = drift.kl_fit(t)  # no noise: the slope and the method term exactly
    assert fit["slope"]["estimate"] == pytest.approx(-0.6, abs=1e-9)
    assert fit["adjusted"]["estimate"] == pytest.approx(-1.5, abs=1e-9)
    assert fit["n_runs"] == 15 and fit["dof"] == 12
    axes = drift.drift_figure({"a": t, "b": t}).get_axes()
    assert len(axes) == 2 and all("slope" in ax.get_title() for ax in axes)
    assert sum(len(c.get_offsets()) for c in axes[0].collections) == len(t)  # one point per run
    fig = drift.drift_figure({"a": t.assign(kl_heldout=t.kl_late), "none": t.assign(kl_heldout=np.nan)}, "kl_heldout")
    assert len(fig.get_axes()) == 1  # a set without the measure gets no panel


def test_kl_fit_interval_covers_at_its_nominal_rate():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(400):
        kl = rng.normal(20, 2, 16) + np.r_[np.full(8, 3.0), np.zeros(8)]
        meth = np.r_[["bcs"] * 8, ["bcs_random_neg"] * 8]
        held = 50 - 0.5 * kl + rng.normal(0, 1, 16)
        f = drift.kl_fit(pd.DataFrame({"method": meth, "kl_late": kl, "heldout": held}))["slope"]
        hits += f["ci_low"] <= -0.5 <= f["ci_high"]
    assert 0.92 <= hits / 400 <= 0.98


def test_kl_fit_and_paired_t_reject_too_little_data():
    with pytest.raises(ValueError, match="both"):
        drift.kl_fit(pd.DataFrame({"method": ["bcs"] * 4, "kl_late": [1, 2, 3, 4], "heldout": [1, 2, 3, 4]}))
    with pytest.raises(ValueError, match="degrees of freedom"):
        drift.kl_fit(pd.DataFrame({"method": ["bcs", "bcs_random_neg", "bcs"], "kl_late": [1, 2, 3],
                                   "heldout": [1, 2, 3]}))
    with pytest.raises(ValueError, match=">= 2 seeds"):
        drift.paired_t([1.0])
    r = drift.paired_t([1.0, 3.0])
    assert r["estimate"] == 2.0 and r["ci_low"] < 2.0 < r["ci_high"]


def test_analyse_gives_the_registered_verdicts(tmp_path):
    out, _, _ = _world(tmp_path)  # BCS's KL 3 higher (X2 +), slope -0.5 (X3 -), no term: X4 inside +-1, X1 -1.5
    e = {x["id"]: x for x in drift.analyse(out, "amc_like", np.random.default_rng(0))}
    assert set(e) == {"X1", "X2", "X3", "X4"} and all(x["n_seeds"] == 8 for x in e.values())
    assert e["X2"]["verdict"] == "reproduced" and e["X2"]["estimate"] > 0
    assert e["X3"]["verdict"] == "reproduced" and e["X3"]["estimate"] == pytest.approx(-0.5, abs=0.05)
    assert e["X4"]["verdict"] == "reproduced"  # a null claim: inside +-1
    assert e["X1"]["estimate"] < 0 and e["X1"]["n_questions"] == 6
    ex = drift.analyse(out, "amc_like", np.random.default_rng(0), exploratory=True)
    assert {x["verdict"] for x in ex} == {"exploratory"}


def test_jobs_go_seed_by_seed_and_seeds_parse():
    js = runner.jobs(DESIGNS["drift_amc_like_cpu"], [100, 101])  # the generic job list of a drift design
    assert [(j.regime, j.seed, j.methods) for j in js] == [(r, s, (m,)) for r in ["amc_like"] for s in (100, 101)
                                                           for m in ("bcs", "bcs_random_neg")]
    assert all(j.label == "H1x" for j in js) and not runner.jobs(DESIGNS["drift_amc_like_gpu"])  # an H100's runs
    assert seed_range("100-103") == [100, 101, 102, 103] and seed_range("7") == [7]
    for bad in ("a-b", "5-3", "-2"):
        with pytest.raises(ValueError, match="expected N or N-M"):
            seed_range(bad)
    with pytest.raises(SystemExit):  # the CLIs' argparse reports it before any work
        drift.main(["kl", "--seeds", "5-3", "--out", "x"])


def test_run_command_then_heldout_kl_on_the_tiny_model(tmp_path):
    """``run drift_amc_like_cpu`` (X1-X4), then held-out KL: base vs itself 0, trained runs > 0, one JSON per run, not
    redone."""
    base, tok = load_model("testbed:tiny", "float32", "cpu")
    prompts = ["What is 2 + 3?", "What is 7 - 4?"]
    kl, n_tok = drift.heldout_kl(base, base, tok, prompts, 4, 16, seed=1)
    assert kl == 0.0 and n_tok > 0
    out, runs = tmp_path / "out", tmp_path / "runs"
    assert runner.main(["run", "drift_amc_like_cpu", "--scale", "smoke", "--seeds", "100-102", "--workers", "1",
                        "--out", str(out), "--runs-root", str(runs)]) == 0
    e = drift.analyse(out, "amc_like", np.random.default_rng(0))
    assert [x["id"] for x in e] == ["X1", "X2", "X3", "X4"] and all(x["n_seeds"] == 3 for x in e)
    n, missing = drift.measure_kl(out, runs, "amc_like", scale="smoke", progress=False)
    assert n == 6 and missing == []
    recs = [json.loads(p.read_text()) for p in sorted((out / drift.DRIFT / "amc_like").glob("*-kl.json"))]
    assert len(recs) == 6 and all(r["n_samples"] == drift.KL_SAMPLES and r["n_tokens"] > 0 for r in recs)
    assert np.mean([r["kl"] for r in recs]) > 0  # trained policies moved away from the base
    assert drift.measure_kl(out, runs, "amc_like", scale="smoke", progress=False) == (0, [])  # read, not redone
    kp = drift.drift_path(out, "amc_like", "bcs", 100, "kl")  # a JSON of other weights is measured again
    kp.write_text(json.dumps(dict(json.loads(kp.read_text()), policy_fingerprint={"model.safetensors": "other"})))
    assert drift.measure_kl(out, runs, "amc_like", scale="smoke", progress=False) == (1, [])
    assert json.loads(kp.read_text())["policy_fingerprint"] == recs[0]["policy_fingerprint"]
    t = drift.seed_table(out, "amc_like")  # no registered CSV for seeds 100+: their adapted rows are kept
    assert t["kl_heldout"].notna().all() and len(t) == 6 and t["adapted"].between(0, 100).all()
    # BCS+DAE's weights are DDRL's rl/ snapshot, not its final ones: an rl/ holding the base measures exactly 0
    h = pd.read_csv(heldout_x_path(out, "amc_like", "bcs", 100))
    h.assign(method="bcs_dae").to_csv(heldout_x_path(out, "amc_like", "bcs_dae", 100), index=False)
    RunDir(runs / h["run"].iloc[0]).save_weights("rl", base)
    assert drift.measure_kl(out, runs, "amc_like", ("bcs_dae",), scale="smoke", progress=False,
                            seeds=[100, 101]) == (1, [])
    assert json.loads(drift.drift_path(out, "amc_like", "bcs_dae", 100, "kl").read_text())["kl"] == 0.0
    assert drift.measure_kl(out, runs, "amc_like", ("bcs",), scale="smoke", progress=False, seeds=[]) == (0, [])
    e = drift.analyse(out, "amc_like", np.random.default_rng(0), measure="kl_heldout")
    assert [x["id"] for x in e] == ["X2h", "X3h", "X4h"]
    with pytest.raises(ValueError, match="measure"):
        drift.analyse(out, "amc_like", np.random.default_rng(0), measure="entropy")


def _by_arm(entries: list[dict]) -> dict:
    return {(x["id"], x["arm"]): x for x in entries}


ADAPTED_25 = {"ttrl": 70.0, "ttrl_kl100x": 70.5, "ddrl": 71.0, "ddrl_kl100x": 66.0}


@pytest.mark.parametrize("which, arms, adapted, slope, extra", [
    ("dose", (("bcs", 0), ("bcs_kl10x", 6), ("bcs_kl100x", 12)), None, -0.5, {}),
    ("methods", (("bcs", 0), ("ttrl", 5), ("ddrl", -4)), {"bcs": 70.0, "ttrl": 72.5, "ddrl": 69.0}, None,
     {("Ad", "ttrl"): (2.5, "descriptive"), ("Ad", "ddrl"): (-1.0, "descriptive")}),
    ("penalty", (("bcs", 0), ("ttrl", 5), ("ddrl", -4), ("ttrl_kl100x", 13), ("ddrl_kl100x", 6)), ADAPTED_25, -0.5,
     {("L4", "ttrl_kl100x"): (0.5, "reproduced"), ("L4", "ddrl_kl100x"): (-5.0, "contradicted")})])
def test_arms_move_by_their_drop_and_lie_on_the_line(tmp_path, which, arms, adapted, slope, extra):
    """K (Amendment 22), Z (23, no slope), L (25): KL falls by the arm's drop, pass@1 follows the line; Ad extra."""
    drop = dict(arms)
    out, _, _ = _world(tmp_path, arms=arms, adapted=adapted)
    got = drift.analyse_arms(out, "amc_like", np.random.default_rng(0), which, slope=slope)
    e = _by_arm(got)
    assert sorted(e) == sorted({(i, a) for a, (_, ids) in drift.ARMS[which].items() for i in ids} | set(extra))
    for arm, (base, ids) in drift.ARMS[which].items():
        dist, acc, adj = (e[i, arm] for k in ("dist", "acc", "adjusted") for i in ids if drift.PREDICTIONS[i][3] == k)
        assert dist["estimate"] == pytest.approx(drop[base] - drop[arm], abs=3.0) and dist["n_seeds"] == 8
        assert acc["estimate"] == pytest.approx(-0.5 * dist["estimate"], abs=0.3) and acc["n_questions"] == 6
        assert acc.get("predicted") == (None if slope is None else pytest.approx(slope * dist["estimate"]))
        assert abs(adj["estimate"]) < 0.5 and dist["verdict"] == adj["verdict"] == "reproduced"
        assert acc["verdict"] == ("descriptive" if which == "methods" else "reproduced")
        assert dist["metric"].endswith(f"{drift.label(arm)} - {drift.label(base)} [1e-3 nats/token]")
    for key, (estimate, verdict) in extra.items():
        assert (e[key]["estimate"], e[key]["verdict"]) == (pytest.approx(estimate), verdict)
    if which == "methods":
        bare, _, _ = _world(tmp_path / "bare", arms=arms)
        assert got[:6] == drift.analyse_arms(bare, "amc_like", np.random.default_rng(0), which)
    kept = drift.seed_table(out, "amc_like", drift.arm_methods(which)).groupby("method")["adapted"].mean()
    assert kept.dropna().to_dict() == pytest.approx(adapted or {})  # none kept: NaN
    assert drift.arm_methods(which) == tuple(m for m, _ in arms)  # the committed figures' order
    fig = drift.arms_figure(drift.arms_table(out, "amc_like", which), -0.5, which)
    assert sum(len(c.get_offsets()) for c in fig.get_axes()[0].collections) == 8 * len(arms)  # one point per run


def test_an_arm_off_the_line_is_caught(tmp_path):
    out, _, _ = _world(tmp_path, arms=(("bcs", 0), ("bcs_kl10x", 6), ("bcs_kl100x", 12)), term=3.0)
    off = _by_arm(drift.analyse_arms(out, "amc_like", np.random.default_rng(0), slope=-0.5))
    assert off["K3", "bcs_kl10x"]["estimate"] == pytest.approx(3.0, abs=0.6)
    assert off["K3", "bcs_kl10x"]["verdict"] == "contradicted" and off["K3", "bcs_kl100x"]["verdict"] == "reproduced"
    assert drift.arms_table(out, "amc_like", "penalty") is None  # no penalised TTRL or DDRL runs in this world


@pytest.mark.slow  # COR alone trained twice on the tiny model: make test-slow, CI when time allows
def test_cor_alone_recomputed_by_the_kl_command_equals_the_studys_cor_alone(tmp_path):
    """``kl --cor-alone`` (Amendment 41) recomputes the study's COR alone (same weights), the same record twice."""
    from ddrl.study.plan import COR_ONLY, RESULTS, SCALES, Job
    from ddrl.study.jobs import run_jobs

    run_jobs([Job("amc_like", 0, (COR_ONLY,), "")], SCALES["smoke"], tmp_path, tmp_path / "runs", None, 1, desc="t")
    assert drift.main(["kl", "--cor-alone", "--seeds", "0-0", "--scale", "smoke", "--out", str(tmp_path)]) == 0
    a = json.loads(drift.drift_path(tmp_path, "amc_like", COR_ONLY, 0, "kl").read_text())
    b = drift.cor_alone_kl(0, RESULTS / "regimes_base.json", tmp_path, scale="smoke")
    assert a["adapted_reproduced"] and a == json.loads(json.dumps(b)) and a["kl"] > 0 and a["n_samples"] == 8
