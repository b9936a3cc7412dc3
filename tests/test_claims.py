"""ddrl.study.claims: the registry, the claims.json schema and the scorecard. Entries here are SYNTHETIC TEST INPUT."""

from __future__ import annotations

import json

import pytest

from ddrl.study import claims


def synthetic_entries() -> list[dict]:
    """One entry per verdict kind."""
    return [
        claims.entry("M1", "aime_like", 5.0, 3.2, 6.8, 8, 64),       # reproduced
        claims.entry("A1", "amc_like", 2.0, 0.5, 3.5, 8, 128),       # paper -2.0 on AMC: contradicted
        claims.entry("R1", "math500_like", 0.1, -0.6, 0.8, 8, 256),  # null claim inside the band: reproduced
        claims.entry("T1", "math500_like", 0.2, -0.7, 0.9, 8, 256),  # no effect
        claims.entry("H1", "amc_like", -1.0, -4.0, 2.0, 8, 128),     # not resolved, no paper number
    ]


def test_entries_get_the_pre_registered_verdicts_and_the_papers_differences():
    assert [e["verdict"] for e in synthetic_entries()] == [
        "reproduced", "contradicted", "reproduced", "no effect", "not resolved"]
    with pytest.raises(ValueError, match="registered for regimes"):
        claims.entry("D1", "math500_like", 0, -1, 1, 2, 2)
    with pytest.raises(KeyError, match="unknown claim"):
        claims.get("Z9")
    ids = [c.id for c in claims.CLAIMS]  # the numbers themselves: tests/test_paper.py against the LaTeX
    assert len(ids) == len(set(ids))
    assert claims.get("M1").paper["math500_like"] == pytest.approx(80.7 - 73.0)


@pytest.mark.parametrize("change, message", [
    ({"ci_low": None}, r"claims\[0\] \(M1\): missing field\(s\) \['ci_low'\]"),
    ({"verdict": "holds"}, "verdict must be one of"), ({"estimate": 99.0}, "ci_low <= estimate <= ci_high"),
    ({"n_seeds": 0}, "n_seeds must be a positive integer")])
def test_validate_names_the_bad_field(change, message):
    good = synthetic_entries()
    claims.validate(good)
    bad = {k: v for k, v in {**good[0], **change}.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        claims.validate([bad])


def test_render_writes_table_and_figure_and_load_reads_them_back(tmp_path):
    paths = claims.render(synthetic_entries(), tmp_path)
    for k in ("csv", "md", "png", "pdf"):
        assert paths[k].is_file() and paths[k].stat().st_size > 0
    md = paths["md"].read_text()
    assert "contradicted" in md and "+9.2" in md and "n/a" in md  # paper's M1 AIME number beside ours
    table = claims.scorecard(synthetic_entries())
    assert list(table.verdict) == [e["verdict"] for e in synthetic_entries()]
    assert table.half_width.iloc[0] == pytest.approx(1.8)
    assert table.mde.iloc[0] == pytest.approx(1.8 * (1.959964 + 0.841621) / 1.959964, rel=1e-5)
    assert claims.load(tmp_path / "claims.json") is None
    (tmp_path / "claims.json").write_text(json.dumps(synthetic_entries()))
    assert len(claims.load(tmp_path / "claims.json")) == 5


def test_forest_draws_each_interval_its_colour_and_the_papers_number_or_an_arrow_past_the_range():
    """Each row: its interval and estimate in its colour at its y; the paper's number a hollow diamond, past ``right``
    an arrow at the edge with the value written; none where the paper gives none."""
    import matplotlib.pyplot as plt
    import pandas as pd

    rows = pd.DataFrame({"y": [1, 0, 2], "estimate": [1.0, -2.0, 0.5], "ci_low": [0.0, -3.0, 0.2],
                         "ci_high": [2.0, -1.0, 0.8], "color": ["red", "blue", "green"], "paper": [1.5, 40.0, None]})
    fig, ax = plt.subplots()
    claims.forest(ax, rows, right=10.0)
    lines = [(tuple(ln.get_xdata()), tuple(ln.get_ydata()), ln.get_marker(), ln.get_color()) for ln in ax.lines]
    for r in rows.itertuples():
        assert ((r.ci_low, r.ci_high), (r.y, r.y), "None", r.color) in lines and ((r.estimate,), (r.y,), "o", r.color) in lines
    assert ((1.5,), (1,), "D") in [x[:3] for x in lines] and ((9.85,), (0,), ">") in [x[:3] for x in lines]
    assert [t.get_text() for t in ax.texts] == ["paper +40"] and len([x for x in lines if x[2] in "D>"]) == 2
    plt.close(fig)


def bounded_entries() -> list[dict]:
    """F3's committed situation: a difference of accuracies whose widened interval passes +100; an advantage with no
    bound that passes it too; a pass@1 difference inside its bounds."""
    f3 = {**claims.entry("F3", "base", 80.8, 56.0, 101.4, 4, 200), "metric": "accuracy(>= 45/64) - accuracy(6-44/64) [points]"}
    d1 = {**claims.entry("M1", "amc_like", 90.0, 70.0, 120.0, 8, 128), "metric": "advantage [units]"}  # no bound
    return [f3, d1, claims.entry("M1", "aime_like", 5.0, 3.2, 6.8, 8, 64)]


def test_the_scorecard_and_its_forest_plot_show_intervals_cut_at_their_bounds_and_say_why_once(tmp_path):
    """The scorecard's table, its Markdown and its figure show F3's [+56.0, +101.4] as [+56.0, +100.0] (``shown``,
    the results page's one function); the Markdown states the reason once, naming what it cut and the committed
    interval; an interval of a quantity without bounds, and one inside its bounds, are drawn as committed."""
    import matplotlib.pyplot as plt

    entries = bounded_entries()
    table = claims.scorecard(entries)
    assert table.testbed.tolist() == ["+80.8 [+56.0, +100.0]", "+90.0 [+70.0, +120.0]", "+5.0 [+3.2, +6.8]"]
    assert table.half_width.iloc[0] == pytest.approx((101.4 - 56.0) / 2)  # the committed interval's precision
    md = claims.render(entries, tmp_path)["md"].read_text()
    assert md.count(claims.BOUND_WORDS) == 1 and "cut F3 (base), committed as [+56.0, +101.4];" in md
    assert "+101.4]" not in md.split(claims.BOUND_WORDS)[0]  # the table itself
    assert claims.cut_words(entries[1:]) == "" and claims.BOUND_WORDS not in claims.render(entries[1:], tmp_path)["md"].read_text()
    fig = claims.scorecard_figure(entries)
    spans = sorted(tuple(ln.get_xdata()) for ax in fig.axes for ln in ax.lines if len(ln.get_xdata()) == 2
                   and ln.get_ydata()[0] == ln.get_ydata()[1])  # each row's interval (the lines of two points)
    assert spans == [(3.2, 6.8), (56.0, 100.0), (70.0, 120.0)], spans
    plt.close(fig)
