"""``bench/gpu_vs_cpu.py``: GPU seeds against CPU seeds (docs/benchmarks.md, "GPU runs beside CPU runs")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("gpu_vs_cpu")


def write_runs(root, seeds, pass1, methods=("no_adaptation", "ttrl", "ddrl")):
    """One study CSV per method and seed: two adapted questions at ``pass1[method][seed]`` and a held-out row."""
    d = root / "math500_like"
    d.mkdir(parents=True, exist_ok=True)
    for m in methods:
        for s in seeds:
            pd.DataFrame({"regime": "math500_like", "method": m, "seed": s, "split": ["adapted", "adapted", "heldout"],
                          "question": ["q0", "q1", "h0"], "pass@1": [pass1[m][s], pass1[m][s], 0.0]}).to_csv(
                d / f"{m}-seed{s:02d}.csv", index=False)


def test_seed_means_keep_complete_seeds_in_points_on_adapted_rows(bench, tmp_path):
    p = {m: {0: 0.5, 1: 0.25} for m in ("no_adaptation", "ttrl", "ddrl")}
    write_runs(tmp_path, [0, 1], p)
    (tmp_path / "math500_like" / "ddrl-seed01.csv").unlink()  # seed 1 incomplete: left out
    t = bench.seed_means(tmp_path)
    assert list(t.index) == [0] and t.loc[0].tolist() == [50.0, 50.0, 50.0]
    with pytest.raises(FileNotFoundError, match="no_adaptation/ttrl/ddrl"):
        bench.seed_means(tmp_path / "nothing")


def test_welch_interval_and_the_plans_verdicts(bench):
    rng = np.random.default_rng(0)
    cpu = rng.normal(60, 3, 46)
    same = bench.welch(cpu + 0.0, cpu)  # identical samples: estimate 0, interval symmetric around it
    assert same["estimate"] == pytest.approx(0) and same["ci_low"] == pytest.approx(-same["ci_high"])
    assert bench.welch(cpu + 10, cpu)["verdict"] == "shifted"
    assert bench.welch(rng.normal(60, 3, 22), cpu)["verdict"] == "not resolved"  # half-width ~1.5 > 1
    tight = bench.welch(np.full(40, 60.0) + rng.normal(0, 0.1, 40), np.full(40, 60.0) + rng.normal(0, 0.1, 40))
    assert tight["verdict"] == "same within 1 point" and tight["half_width"] < 0.1
    # Welch by hand: diff / se with Satterthwaite's degrees of freedom
    a, b = cpu[:10] + 1, cpu
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    from scipy import stats

    assert bench.welch(a, b)["half_width"] == pytest.approx(stats.t.ppf(0.975, dof) * np.sqrt(va + vb))


def test_compare_and_predict_cover_the_plans_comparisons(bench, tmp_path):
    seeds = range(4)
    p = {"no_adaptation": {s: 0.5 for s in seeds}, "ttrl": {s: 0.5 + 0.05 * s for s in seeds},
         "ddrl": {s: 0.6 + 0.05 * s for s in seeds}}
    write_runs(tmp_path, seeds, p)
    t = bench.seed_means(tmp_path)
    res = bench.compare(t, t)
    assert set(res) == {"no_adaptation", "ttrl", "ddrl", "ddrl_minus_ttrl"}
    assert res["ttrl"]["estimate"] == pytest.approx(0)
    pred = bench.predict(20, t)
    assert pred["ttrl"]["half_width"] == pytest.approx(1.96 * t["ttrl"].std(ddof=1) * np.sqrt(1 / 20 + 1 / 4))
