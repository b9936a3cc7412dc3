"""The statistics behind issue 3's acceptance lines (``bench/testbed.py``) and its config overrides."""

from __future__ import annotations

import pytest

from conftest import load_bench
from ddrl.testbed.pretrain import PRESETS


@pytest.fixture(scope="module")
def bench():
    return load_bench("testbed")


def test_frequency_bands_count_distinct_answers_by_votes(bench):
    bands = ((1, 1), (2, 3), (4, 4))
    # question 1 (truth 7): "7" x3 (right, band 2-3), "8" x1 (wrong, band 1); no-box samples are not answers
    # question 2 (truth 5): "05" and "5" share a voting key -> 4 votes (right, band 4)
    answers = [["7", "7", "7", "8", None], ["5", "05", "5", "5"]]
    out = bench.frequency_bands(answers, ["7", "5"], bands)
    assert [(s["band"], s["distinct_answers"], s["correct"]) for s in out] == [("1-1", 1, 0), ("2-3", 1, 1),
                                                                              ("4-4", 1, 1)]
    assert [s["fraction_correct"] for s in out] == [0.0, 1.0, 1.0]
    empty = bench.frequency_bands([[None]], ["1"], bands)
    assert all(s["fraction_correct"] is None for s in empty)


def test_parse_set_types_and_errors(bench):
    cfg = bench.parse_set(["seed=3", "lr=1e-3", "schedule=step", "ema_decay=0.995"], PRESETS["default"])
    assert (cfg.seed, cfg.lr, cfg.schedule, cfg.ema_decay) == (3, 1e-3, "step", 0.995)
    assert cfg.hidden_size == PRESETS["default"].hidden_size
    with pytest.raises(SystemExit, match="PretrainConfig field"):
        bench.parse_set(["hidden=8"], PRESETS["default"])
    with pytest.raises(SystemExit, match="name=value"):
        bench.parse_set(["seed"], PRESETS["default"])
