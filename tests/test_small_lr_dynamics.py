"""Plan Amendment 54: D2 at the paper's small learning rate, from the committed step logs (``ddrl.study.amendments.small_lr_dynamics``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps

from ddrl.study import claims
from ddrl.study.amendments import small_lr_dynamics as dyn
from ddrl.run.storage import REPO
from ddrl.report.stats import advantage_statistic
from ddrl.study.plan import csv_path

RESULTS = REPO / "results"


def _steps(tmp_path, regime: str, seed: int, adv) -> None:
    p = csv_path(tmp_path, regime, "ddrl", seed, steps=True)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = len(adv)
    rows = pd.DataFrame({"step": range(n + 2), "adv/mean": [*adv, 9.0, 9.0], "phase": ["rl"] * n + ["extra"] * 2})
    rows.sample(frac=1, random_state=0).to_csv(p, index=False)  # rows out of step order


def test_the_statistic_is_last_minus_first_quarter_of_the_rl_steps(tmp_path):
    """D2 = 100 x (last quarter's mean - first quarter's) in step order; D1 = -100 x the mean; the quarters and the
    RL phase alone (extra steps left out) per run, and a missing log is named."""
    adv = np.array([-0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    assert advantage_statistic("D2", adv) == pytest.approx(100 * (0.45 - -0.15))
    assert advantage_statistic("D1", adv) == pytest.approx(-100 * adv.mean())
    _steps(tmp_path, "math500_like_small_lr", 0, adv[::-1])
    per = dyn.run_statistics(tmp_path, "math500_like_small_lr", [0])
    assert per.iloc[0][["steps", "d2", "first", "last"]].tolist() == pytest.approx([8, -60.0, 45.0, -15.0])
    with pytest.raises(FileNotFoundError, match="ddrl-seed01-steps.csv.gz: the committed DDRL step log of seed 1"):
        dyn.run_statistics(tmp_path, "math500_like_small_lr", [0, 1])


def test_the_default_lr_row_is_the_registered_d2():
    """One statistic: the descriptive default-lr MATH-500-like row, from the same committed step logs, is the
    registered scorecard's D2 entry (the study's own code path)."""
    registered = {(e["id"], e["regime"]): e for e in claims.load(RESULTS / "claims.json")}[("D2", "math500_like")]
    per = dyn.run_statistics(dyn.RUNS, "math500_like", range(registered["n_seeds"]))
    row = dyn.summary(per)
    assert (row["estimate"], row["ci_low"], row["ci_high"]) == pytest.approx(
        (registered["estimate"], registered["ci_low"], registered["ci_high"]), abs=1e-9)


def test_amendment_54s_prediction_is_the_default_lr_spread():
    """The plan's predicted half-width at 18 seeds: t_17 x the registered default-lr D2's per-seed SD / sqrt(18)."""
    per = dyn.run_statistics(dyn.RUNS, "math500_like", range(46))
    sd = per.d2.std(ddof=1)
    got = round(float(sps.t.ppf(0.975, 17) * sd / np.sqrt(18)), 2)
    assert got == dyn.PREDICTED and len(dyn.DECIDED[1]) == 18
    section = " ".join((RESULTS / "plan.md").read_text().split("54. **Why**")[1].split())
    assert f"per-seed SD ({sd:.2f}, 46 seeds) predicts a half-width of **{got:.2f}** at 18 seeds" in section


