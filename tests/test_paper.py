"""Integrity of the paper's reported numbers (ddrl.paper)."""

from __future__ import annotations

import pytest

from ddrl import analysis
from ddrl import paper


def test_every_entry_has_a_source_and_no_nan():
    assert paper.integrity_errors() == []


def test_integrity_check_catches_bad_entries(monkeypatch):
    monkeypatch.setitem(paper.PAPER, ("setting", "bad"), paper.Reported(float("nan"), "x", "y"))
    monkeypatch.setitem(paper.PAPER, ("setting", "bad2"), paper.Reported(None, "x", "y"))
    monkeypatch.setitem(paper.PAPER, ("setting", "bad3"), paper.Reported(1, "", "y"))
    errors = paper.integrity_errors()
    assert len(errors) == 3 and any("NaN" in e for e in errors)


def test_settings_agree_with_the_companion_defaults():
    assert paper.value(("setting", "n_votes")) == 64
    assert paper.value(("setting", "k_train")) == 32
    assert paper.value(("setting", "bcs_k_pos_cap")) == paper.value(("setting", "k_train")) // 2


def test_missing_values_are_none_and_formatted_as_unavailable():
    key = ("table1", "Qwen2.5-Math-1.5B", "AIME 2024", "grpo")
    assert key in paper.missing()
    assert paper.fmt(key) == "not available"
    assert paper.fmt(("setting", "n_votes")) == "64"


def test_unknown_key_is_a_clear_error():
    with pytest.raises(KeyError, match="key kinds"):
        paper.get(("table9", "x"))


def test_compare_builds_paper_vs_measured():
    df = paper.compare([("N", ("setting", "n_votes"), 64), ("ours only", None, 1.5)])
    assert list(df.columns) == ["quantity", "paper", "measured", "where", "source", "note"]
    assert df.loc[0, "paper"] == 64 and df.loc[1, "paper"] is None


def test_fig3a_note_matches_the_closed_form():
    a_pos, _ = analysis.grpo_closed_form(1, 32)
    assert "5.48" in paper.get(("fig3a", "grpo_pos_adv_m1_k32")).note
    assert round(float(a_pos), 2) == 5.48
