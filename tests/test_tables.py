from __future__ import annotations

import math

import pandas as pd
import pytest

from ddrl.report import tables as T
from ddrl.run.experiments import summarize


def _df():
    # hand-worked: ttrl adapted seeds 0.2, 0.4 -> mean 0.3; ddrl adapted 0.5, 0.5 -> mean 0.5, zero-width CI
    return pd.DataFrame([
        {"method": "ttrl", "split": "adapted", "seed": 0, "pass@1": 0.2},
        {"method": "ttrl", "split": "adapted", "seed": 1, "pass@1": 0.4},
        {"method": "ddrl", "split": "adapted", "seed": 0, "pass@1": 0.5},
        {"method": "ddrl", "split": "adapted", "seed": 1, "pass@1": 0.5},
        {"method": "ttrl", "split": "heldout", "seed": 0, "pass@1": 0.1},
        {"method": "ttrl", "split": "heldout", "seed": 1, "pass@1": 0.1},
        {"method": "ddrl", "split": "heldout", "seed": 0, "pass@1": 0.3},
        {"method": "ddrl", "split": "heldout", "seed": 1, "pass@1": 0.3},
    ])


def test_paper_cell_none_and_value():
    assert T.paper_cell(None) == T.NOT_REPORTED
    assert T.paper_cell(float("nan")) == T.NOT_REPORTED
    assert T.paper_cell(0.1234) == "0.123"


def test_paper_value_missing_key_is_none():
    assert T.paper_value(("table2", "no such", "row")) is None
    assert T.paper_value(("table2", "Qwen2.5-Math-1.5B", "MATH-500", "ddrl")) == 80.7
    assert T.paper_value(("setting", "n_votes")) == 64


def test_fmt_ci():
    assert T.fmt_ci(0.5, 0.25, 0.75) == "0.500 [0.250, 0.750]"
    assert T.fmt_ci(0.5, float("nan"), float("nan")) == "0.500"
    assert T.fmt_ci(float("nan"), 0, 1) == "n/a"


def test_ci_relation_cases():
    assert T.ci_relation((0.6, 0.55, 0.65), (0.4, 0.35, 0.45)) == "higher"
    assert T.ci_relation((0.4, 0.35, 0.45), (0.6, 0.55, 0.65)) == "lower"
    assert T.ci_relation((0.5, 0.4, 0.6), (0.55, 0.5, 0.6)) == "overlap"
    assert T.ci_relation((0.9, float("nan"), float("nan")), (0.1, 0.0, 0.2)) == "overlap"


def test_lookup_and_measured_vs_paper():
    s = summarize(_df(), "pass@1", by=("method", "split"))
    m, lo, hi = T.lookup(s, method="ddrl", split="adapted")
    assert (m, lo, hi) == (0.5, 0.5, 0.5)
    m, lo, hi = T.lookup(s, method="ttrl", split="adapted")
    assert m == pytest.approx(0.3) and lo < 0.2 and hi > 0.4  # t with 1 dof: half width 12.7 * 0.1
    with pytest.raises(KeyError, match="expected one summary row"):
        T.lookup(s, method="etmr", split="adapted")
    with pytest.raises(KeyError, match="no column"):
        T.lookup(s, arm="ttrl")
    tab = T.measured_vs_paper(s, ["ttrl", "ddrl"], {"ttrl": None, "ddrl": 0.42}, labels={"ddrl": "DDRL"})
    assert list(tab["method"]) == ["ttrl", "DDRL"]
    assert list(tab["paper"]) == [T.NOT_REPORTED, "0.42"]
    assert tab.loc[1, "pass@1 adapted (measured)"] == "0.500 [0.500, 0.500]"
    assert tab.loc[1, "pass@1 heldout (measured)"] == "0.300 [0.300, 0.300]"
    assert list(tab["seeds"]) == [2, 2]
    with pytest.raises(KeyError, match="no summary rows"):
        T.measured_vs_paper(s, ["etmr"], {})


def test_curve_band():
    c = pd.DataFrame({"method": ["a"] * 4, "step": [0, 0, 1, 1], "seed": [0, 1, 0, 1], "adv/mean": [0.0, 1.0, -1.0, -3.0]})
    b = T.curve_band(c, "adv/mean")
    assert list(b["mean"]) == [0.5, -2.0] and list(b["lo"]) == [0.0, -3.0] and list(b["hi"]) == [1.0, -1.0]
    assert math.isclose(b["seeds"].sum(), 4)
    with pytest.raises(KeyError, match="no metric"):
        T.curve_band(c, "gt/label_acc")


def test_method_label_distinguishes_ddrl_from_rl_only():  # tables re-exports ddrl.report.plotting.label
    assert T.method_label("ddrl") == "DDRL (BCS + DAE + COR)"
    assert T.method_label("bcs_dae") == "BCS + DAE"
    assert T.method_label("unknown") == "unknown"


def test_direction_reproduced_cases():
    up, down = (0.6, 0.55, 0.65), (0.4, 0.35, 0.45)
    wide_up = (0.6, 0.3, 0.9)
    assert T.direction_reproduced(+2.0, up, down) == "yes"
    assert T.direction_reproduced(-2.0, down, up) == "yes"
    assert T.direction_reproduced(+2.0, wide_up, down) == "same sign, within noise"
    assert T.direction_reproduced(+2.0, (0.6, math.nan, math.nan), down) == "same sign, within noise"  # one seed
    assert T.direction_reproduced(+2.0, down, up) == "no, intervals apart"
    assert T.direction_reproduced(+2.0, (0.4, 0.1, 0.7), up) == "no, within noise"
    assert T.direction_reproduced(+2.0, up, up) == "no, within noise"  # zero measured difference is not a match
    assert T.direction_reproduced(0.0, up, down) == "paper: no difference"
    assert T.direction_reproduced(+1, (math.nan, math.nan, math.nan), down) == "not measured"
    assert set(T.DIRECTION_WORDS) >= {"yes", "same sign, within noise", "no, within noise", "no, intervals apart"}


def test_direction_table_and_sentences():
    paper = {"ttrl": 73.0, "ddrl": 80.7, "etmr": 76.9}
    measured = {"ttrl": (0.30, 0.28, 0.32), "ddrl": (0.50, 0.48, 0.52), "etmr": (0.55, 0.40, 0.70)}
    tab = T.direction_table([("ddrl", "ttrl"), ("ddrl", "etmr")], paper, measured)
    assert list(tab["difference"]) == ["DDRL (BCS + DAE + COR) − TTRL", "DDRL (BCS + DAE + COR) − ETMR"]
    assert list(tab["paper Δ"]) == [7.7, 3.8]
    assert list(tab["measured Δ"]) == [0.2, -0.05]
    assert set(tab["paper unit"]) == {"points"} and set(tab["measured unit"]) == {"pass@1"}
    assert list(tab["direction reproduced"]) == ["yes", "no, within noise"]
    lines = T.direction_sentences(tab)
    assert len(lines) == 3
    assert "+7.7 points" in lines[0] and "+0.200 pass@1" in lines[0] and "reproduced" in lines[0]
    assert "-0.050" in lines[1] and "not reproduced" in lines[1]
    assert lines[2] == "Of the paper's 2 differences here, the testbed has the same sign for 1 (1 of them with 95% intervals apart)."
    # rows of one verdict share one sentence (no sentence shape repeated per row)
    two = T.direction_table([("ddrl", "ttrl"), ("etmr", "ttrl")], paper, {**measured, "etmr": (0.45, 0.43, 0.47)})
    assert list(two["direction reproduced"]) == ["yes", "yes"]
    lines = T.direction_sentences(two)
    assert len(lines) == 2 and lines[0].startswith("The same direction, with the 95% intervals apart: reproduced: ")
    assert "DDRL (BCS + DAE + COR) − TTRL (paper +7.7 points" in lines[0] and "ETMR − TTRL (paper +3.9 points" in lines[0]
    with pytest.raises(KeyError, match="no paper value for 'bcs'"):
        T.direction_table([("bcs", "ttrl")], paper, measured)
    with pytest.raises(KeyError, match="no measured value"):
        T.direction_table([("ddrl", "ttrl")], paper, {"ttrl": (0.3, 0.3, 0.3)})


def test_paper_reference_and_pass1():
    assert T.paper_reference("testbed_test", "testbed") == ("Qwen2.5-Math-1.5B", "MATH-500")
    assert T.paper_reference("aime2024", "llama-3.1-8b-instruct") == ("Llama-3.1-8B-Instruct", "AIME 2024")
    assert T.paper_pass1("ddrl", "Qwen2.5-3B", "AMC") == 42.2  # Table 2
    assert T.paper_pass1("bcs_dae", "Qwen2.5-Math-1.5B", "MATH-500") == 74.6  # Table 3
    assert T.paper_pass1("etmr", "Llama-3.1-8B-Instruct", "AIME 2024") == 16.9
    assert T.paper_pass1("dae", "Qwen2.5-Math-1.5B", "MATH-500") is None


def test_ci_yerr_is_the_distance_to_each_end_and_no_bar_without_an_interval():
    import numpy as np
    import pandas as pd

    from ddrl.report.plotting import ci_yerr

    s = pd.DataFrame({"mean": [0.5, 0.3], "ci_lo": [0.4, np.nan], "ci_hi": [0.7, np.nan]})
    assert np.allclose(ci_yerr(s), [[0.1, 0.0], [0.2, 0.0]])


def test_bootstrap_ci95_brackets_the_mean_and_covers_at_about_95_percent():
    """The advantage-dynamics band (seaborn's ``errorbar=`` callable): deterministic, the package's one percentile
    bootstrap at seed 0, around the mean, about as wide as a normal interval, covering a known mean in ~95% of
    samples; no spread without two distinct values."""
    import numpy as np

    from ddrl.report.plotting import bootstrap_ci95

    rng = np.random.default_rng(3)
    x = rng.normal(1.0, 2.0, 19)
    lo, hi = bootstrap_ci95(x)
    assert (lo, hi) == bootstrap_ci95(x) and lo < x.mean() < hi
    from ddrl.report.stats import percentile_bootstrap  # the one bootstrap of the package, at seed 0
    assert (lo, hi) == percentile_bootstrap(x, np.random.default_rng(0), 1000)
    assert 0.7 < (hi - lo) / (2 * 1.96 * x.std(ddof=1) / np.sqrt(19)) < 1.2
    assert bootstrap_ci95([0.5, 0.5, 0.5]) == (0.5, 0.5) and bootstrap_ci95([2.0]) == (2.0, 2.0)
    hits = sum(lo <= 0 <= hi for lo, hi in (bootstrap_ci95(rng.normal(0, 1, 30), n_resamples=400) for _ in range(300)))
    assert 0.88 < hits / 300 < 0.99, hits


def test_committed_markdown_renders_the_file_or_says_it_is_not_written(tmp_path):
    path = tmp_path / "analysis.json"
    says = T.committed_markdown(path, lambda res: "never called", 58, "python -m ddrl.study.amendments.ttrl_heldout status")
    assert says == "Amendment 58's analysis is not committed yet (`python -m ddrl.study.amendments.ttrl_heldout status`)."
    path.write_text('{"seeds": [0, 1]}')
    assert T.committed_markdown(path, lambda res: f"| {res['seeds']} |", 58, "unused") == "| [0, 1] |"
