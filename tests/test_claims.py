"""ddrl.study.claims: the registry read from the paper, the claims.json schema and the scorecard renderer.

Every claims list below is SYNTHETIC TEST INPUT made up for these tests, never a result and never committed
under results/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddrl.study import claims

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO.parent / "shared" / "paper" / "000_45b6899f74069425.txt"


def synthetic_entries() -> list[dict]:
    """SYNTHETIC test input: one entry per verdict kind."""
    return [
        claims.entry("M1", "aime_like", 5.0, 3.2, 6.8, 8, 64),       # reproduced
        claims.entry("A1", "amc_like", 2.0, 0.5, 3.5, 8, 128),       # paper -2.0 on AMC: contradicted
        claims.entry("R1", "math500_like", 0.1, -0.6, 0.8, 8, 256),  # null claim inside the band: reproduced
        claims.entry("T1", "math500_like", 0.2, -0.7, 0.9, 8, 256),  # no effect
        claims.entry("H1", "amc_like", -1.0, -4.0, 2.0, 8, 128),     # not resolved, no paper number
    ]


def test_entries_get_the_pre_registered_verdicts():
    assert [e["verdict"] for e in synthetic_entries()] == [
        "reproduced", "contradicted", "reproduced", "no effect", "not resolved"]
    with pytest.raises(ValueError, match="registered for regimes"):
        claims.entry("D1", "math500_like", 0, -1, 1, 2, 2)
    with pytest.raises(KeyError, match="unknown claim"):
        claims.get("Z9")


def test_validate_names_the_bad_field():
    good = synthetic_entries()
    claims.validate(good)
    bad = [dict(good[0])]
    del bad[0]["ci_low"]
    with pytest.raises(ValueError, match=r"claims\[0\] \(M1\): missing field\(s\) \['ci_low'\]"):
        claims.validate(bad)
    with pytest.raises(ValueError, match="verdict must be one of"):
        claims.validate([{**good[0], "verdict": "holds"}])
    with pytest.raises(ValueError, match="ci_low <= estimate <= ci_high"):
        claims.validate([{**good[0], "estimate": 99.0}])
    with pytest.raises(ValueError, match="n_seeds must be a positive integer"):
        claims.validate([{**good[0], "n_seeds": 0}])


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


@pytest.mark.skipif(not PAPER.is_file(), reason=f"the paper's LaTeX is not at {PAPER}")
def test_paper_numbers_are_in_the_latex():
    """Every table number the registry derives its differences from appears in the paper's LaTeX."""
    text = PAPER.read_text()
    for v in (15.8, 48.9, 73.0, 21.0, 50.8, 76.9, 17.3, 46.9, 74.1, 20.2, 46.3, 74.6, 25.0, 52.9, 80.7, 19.2,
              74.4, 25.3, 53.0, 80.8, 20.6, 75.0, 42.2, 40.7):
        assert f"{v:.1f}" in text, v
    ids = [c.id for c in claims.CLAIMS]
    assert len(ids) == len(set(ids))
    assert claims.get("M1").paper["math500_like"] == pytest.approx(80.7 - 73.0)
