"""Plan Amendment 39: the Xeon build's default-lr runs on the fresh questions, paired with Amendment 38's lr/10 ones
(``ddrl.study.amendments.lr_heldout``)."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import pytest
from conftest import committed_json

from ddrl.study.amendments import lr_heldout as L
from ddrl.study.plan import HELDOUT_X, HELDOUT_X_METHODS, SMALL_LR, heldout_x_path


def test_jobs_are_the_studys_h1x_job_at_the_default_lr_seed_by_seed():
    assert [(j.regime, j.seed, j.methods, j.label) for j in L.jobs((0, 1))] == [
        ("amc_like", 0, HELDOUT_X_METHODS, "H1x"), ("amc_like", 1, HELDOUT_X_METHODS, "H1x")]
    assert L.SEEDS == tuple(range(12)) and L.XEON.name == "replication_xeon"
    cutoff = datetime.fromisoformat(L.CUTOFF).timestamp()
    assert L.minutes_left(cutoff - 600) == pytest.approx(10) and L.minutes_left(cutoff + 60) < 0


def _rows(regime: str, method: str, seeds, values) -> list[dict]:
    return [{"regime": regime, "method": method, "seed": s, "split": HELDOUT_X, "question": q, "pass@1": v}
            for s in seeds for q, v in zip(("a", "b"), values)]


def test_matrix_pairs_a_method_across_learning_rates_by_seed_and_question():
    df = pd.DataFrame(_rows(SMALL_LR, "ddrl", (0, 1), (0.5, 0.75)) + _rows("amc_like", "ddrl", (0, 1), (0.25, 0.75))
                      + _rows("amc_like", "ttrl", (0, 1), (0.0, 0.0)))
    np.testing.assert_allclose(L.matrix(df, "ddrl").to_numpy(), [[25.0, 0.0], [25.0, 0.0]])
    with pytest.raises(ValueError, match="ttrl: the lr/10 and default-lr runs cover other seeds or questions"):
        L.matrix(df, "ttrl")


def test_analysis_refuses_incomplete_seeds(tmp_path):
    for r, ms in L.READS:
        for m in ms:
            path = heldout_x_path(tmp_path, r, m, 0)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
    assert L.complete(tmp_path, (0, 1)) == [0]
    with pytest.raises(ValueError, match=r"seeds \[0, 1\], incomplete \[1\]"):
        L.analyse(tmp_path, seeds=(0, 1))
    with pytest.raises(ValueError, match="at least 2"):
        L.analyse(tmp_path)


def test_committed_analysis_reads_its_seeds_and_every_retrain_reproduced():
    """Amendment 39's committed analysis (recomputed by make test-study) reads the seeds complete by its clock, and
    every retrained default-lr run reproduces Amendment 5's adapted rows."""
    path = L.XEON / "lr_heldout.json"
    res = committed_json(path, f"python -m ddrl.study.amendments.lr_heldout analyse --json {path}")
    assert res["seeds"] == L.complete() and len(res["seeds"]) >= 2
    assert res["registered_reproduced"] == res["registered_checked"] == 3 * len(res["seeds"])  # TTRL, DDRL, untrained
