"""The round statistics of ``bench/rl_step.py --rounds`` (the RL-step ratio of issue 16)."""

from __future__ import annotations

import math

import pytest

from conftest import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("rl_step")


def test_geometric_mean_and_its_interval_are_taken_on_log_ratios(bench):
    gm, lo, hi = bench.geometric_mean_ci([1.2, 1.5])
    assert gm == pytest.approx(math.sqrt(1.2 * 1.5))
    # t(0.975, 1) = 12.706; sd of the two logs = |log 1.5 - log 1.2| / sqrt(2); se = sd / sqrt(2)
    half = 12.706 * abs(math.log(1.5) - math.log(1.2)) / 2
    assert lo == pytest.approx(gm * math.exp(-half), rel=1e-3) and hi == pytest.approx(gm * math.exp(half), rel=1e-3)
    assert bench.geometric_mean_ci([1.3, 1.3, 1.3]) == pytest.approx((1.3, 1.3, 1.3))


def test_rounds_merge_into_medians_of_per_round_medians(bench):
    def run(step, gen, upd):
        return {"median_step_s": step, "median_generate_s": gen, "median_update_s": upd, "loadavg_before": [1.0],
                "loadavg_after": [1.0], "what": "x", "steps": []}

    rounds = [{"ours": run(2.0, 0.5, 1.5), "trl": run(3.0, 1.0, 2.0)},
              {"trl": run(2.6, 0.9, 1.7), "ours": run(1.8, 0.4, 1.4)},
              {"ours": run(2.4, 0.6, 1.8), "trl": run(3.4, 1.1, 2.3)}]
    out = bench.merge_rounds(rounds)
    assert out["ours"]["median_step_s"] == 2.0 and out["trl"]["median_update_s"] == 2.0
    assert [r["median_step_s"] for r in out["ours"]["rounds"]] == [2.0, 1.8, 2.4]
