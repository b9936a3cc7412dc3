"""docs/results.md, rendered from the committed analyses by ddrl.study.page. Entries made by ``_e`` are SYNTHETIC."""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO
from ddrl.study import page
from ddrl.study.claims import FLOOR_NOTE, interval

PAGE = REPO / "docs" / "results.md"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("page") / "results.md"
    assert page.main(["--out", str(out)]) == 0
    return out.read_text()


def test_make_docs_leaves_no_diff(rendered):
    assert PAGE.read_text() == rendered, "docs/results.md differs from its rendering: run `make docs`"


def test_the_page_is_short_and_answers_first(rendered):
    """At most 500 lines; the first 40 give M1's committed estimates at lr/10 with their verdicts; figures exist."""
    lines = rendered.splitlines()
    assert len(lines) <= 500, f"docs/results.md has {len(lines)} lines"
    top = "\n".join(lines[:40])
    by = page.gather()
    assert "## Does DDRL beat TTRL?" in top
    for regime, name in (("amc_like_small_lr", "AMC-like"), ("math500_like_small_lr", "MATH-500-like")):
        e = by[("M1", regime)][0]
        assert f"{interval(e)} in {name} ({e['verdict']};" in " ".join(top.split()), (regime, interval(e))
    for link in (ln.split("](")[1].rstrip(")") for ln in lines if ln.startswith("![")):
        assert (PAGE.parent / link).is_file(), link


def _e(cid, regime, est, lo, hi, verdict, paper=None, seeds=4, questions=128, **extra):
    return {"id": cid, "claim": "c", "regime": regime, "metric": "pass@1 a - b [points]", "paper": paper,
            "estimate": est, "ci_low": lo, "ci_high": hi, "n_seeds": seeds, "n_questions": questions,
            "verdict": verdict, **extra}


@pytest.fixture
def results(tmp_path):
    """The registered scorecard (a list) and amendments' analyses (dicts with ``entries``)."""
    (tmp_path / "claims.json").write_text(json.dumps([
        _e("M1", "amc_like", -0.2, -2.0, 1.6, "not resolved", 4.0, 19),
        _e("M1", "aime_like", 0.0, 0.0, 0.0, "no effect", 9.2, 6, 64, note=FLOOR_NOTE),
        _e("M1", "amc_like_small_lr", 3.0, 0.9, 5.0, "reproduced", 4.0, 19),
        _e("F1", "base", 49.4, 49.1, 49.6, "reproduced", None, 2, 435)]))
    (tmp_path / "multiplicity.json").write_text(json.dumps({"entries": [  # a correction, synthetic too
        {"id": "M1", "regime": "amc_like_small_lr", "verdict": "reproduced", "p": 0.003, "survives": True},
        {"id": "M1", "regime": "amc_like", "verdict": "not resolved", "p": 0.8, "survives": None},
        {"id": "M1", "regime": "aime_like", "verdict": "no effect", "p": None, "survives": None},
        {"id": "F1", "regime": "base", "verdict": "reproduced", "p": 0.04, "survives": False}]}))
    (tmp_path / "small_lr").mkdir()
    (tmp_path / "small_lr" / "claims.json").write_text(json.dumps({"regime": "math500_like_small_lr", "entries": [
        _e("M1", "math500_like_small_lr", 3.9, 2.1, 5.8, "reproduced", 7.7, 18, 256)]}))
    (tmp_path / "wide").mkdir()
    (tmp_path / "wide" / "claims.json").write_text(json.dumps({"entries": [
        _e("M1", "math500_like_768", 1.9, 0.0, 3.8, "reproduced", 7.7, 24, 768)]}))
    return tmp_path


def test_a_row_per_claim_and_regime_with_both_learning_rates_side_by_side(results):
    rows = {(r["id"], r["regime"]): r for r in page.table(page.gather(results))}
    assert set(rows) == {("M1", "AIME-like"), ("M1", "AMC-like"), ("M1", "MATH-500-like")}  # nothing else was measured
    amc = rows["M1", "AMC-like"]
    assert amc["paper"] == "+4.0" and amc["claim"] == "DDRL beats TTRL"
    assert amc["lr10"] == "+3.0 [+0.9, +5.0] reproduced (19 x 128; confirmatory, survives BH)"
    assert amc["default"] == "-0.2 [-2.0, +1.6] not resolved (19 x 128; confirmatory)"
    assert rows["M1", "AIME-like"] == {**rows["M1", "AIME-like"], "lr10": "-",
                                       "default": "+0.0 [+0.0, +0.0] no effect, floor (6 x 64; confirmatory)"}  # no lr/10
    math = rows["M1", "MATH-500-like"]  # the 768-question design joins the default column with its label
    assert math["lr10"] == "+3.9 [+2.1, +5.8] reproduced (18 x 256; exploratory)"
    assert math["default"] == "768 questions: +1.9 [+0.0, +3.8] reproduced (24 x 768; exploratory)"
    by = {("K4", "amc_like_small_lr"): [_e("K4", "amc_like_small_lr", 0.3, -3.0, 3.6, "not resolved")],
          ("K5", "amc_like"): [_e("K5", "amc_like", -1.7, -5.5, 2.1, "not resolved")]}
    (row,) = page.table(by)  # a row whose ids differ by learning rate names both
    assert row["id"] == "K4 / K5" and row["paper"] == "n/a"
    assert row["lr10"].startswith("+0.3 [") and row["default"].startswith("-1.7 [")
    samples = page.family_table(page.gather(results), page.FAMILIES[0])  # F1-F3: no real-LLM entry here
    assert samples.iloc[0].tolist()[1:] == ["+49.4 [+49.1, +49.6] reproduced (2 x 435; confirmatory, does not survive BH)", "-"]


def test_a_bad_entry_or_a_family_with_no_entry_is_an_error_naming_it(results, tmp_path):
    with pytest.raises(ValueError, match="no committed analysis"):
        page.render(tmp_path / "empty")
    with pytest.raises(ValueError, match="nothing here"):
        page.family_table(page.gather(results), page.Family("nothing here", ("Q9",), "asks"))
    (results / "small_lr" / "etmr.json").write_text(json.dumps({"entries": [
        _e("M2", "math500_like_small_lr", 5.0, 1.0, 4.0, "reproduced")]}))  # estimate outside its interval
    with pytest.raises(ValueError, match="small_lr/etmr.json"):
        page.gather(results)


def test_the_lr_figure_sets_each_lr10_comparison_beside_its_default_lr_twin(results):
    studies = page.learning_rates(page.gather(results))
    assert [(e["id"], e["regime"], e["estimate"]) for e in studies["lr/10"]] == [("M1", "AMC-like", 3.0),
                                                                                ("M1", "MATH-500-like", 3.9)]
    # the default lr's 256/128-question design only (here none for MATH-500: the 768-question one is left out)
    assert [(e["id"], e["regime"], e["estimate"]) for e in studies["default lr"]] == [("M1", "AMC-like", -0.2)]
    assert all(e["paper"] is None for s in studies.values() for e in s)


def test_every_committed_analysis_with_verdicts_is_in_sources_or_named_as_left_out():
    """A new analysis file must join page.SOURCES (or page.ELSEWHERE, saying why) so the page never misses it."""
    found = []
    for path in sorted((REPO / "results").rglob("*.json")):
        rel = path.relative_to(REPO / "results").as_posix()
        if rel.startswith(("replication_", "runs/", "base_models/")):
            continue  # other builds (their own section), per-run files
        data = json.loads(path.read_text())
        entries = data.get("entries") if isinstance(data, dict) else data
        if isinstance(entries, list) and entries and isinstance(entries[0], dict) and "verdict" in entries[0]:
            found.append(rel)
    assert "claims.json" in found and "small_lr/etmr.json" in found  # the walk sees the committed analyses
    unlisted = [f for f in found if f not in page.SOURCES and not any(f.startswith(k) for k in page.ELSEWHERE)]
    assert not unlisted, f"committed analyses neither in ddrl.study.page.SOURCES nor in ELSEWHERE: {unlisted}"


# Issue 95: every entry with its strength, registration and correction; bounded intervals inside their bounds

def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_entry_on_the_page_shows_its_verdict_strength_registration_and_correction(rendered):
    """Each entry the page's tables show prints its registered verdict, its strength beside it (floor / below 1
    point), confirmatory or exploratory, and for a decided confirmatory one whether it survives the correction."""
    from ddrl.study import strength

    by, flat = page.gather(), _flat(rendered)
    rows = strength.load()
    ids = {i for _, *two in page.ROWS for i in two} | {cid for _, cid in page.SAMPLE_ROWS}
    shown = [e for (cid, _), es in by.items() if cid in ids for e in es]
    assert len(shown) > 100
    missing, wrong = [], []
    for e in shown:
        c = page.cell(e)
        if c not in flat:
            missing.append(c)
        want = [e["verdict"], strength.registration(e)]
        if strength.strength(e) != "-":
            want.append(f"{e['verdict']}, {strength.strength(e)}")
        if strength.correction(e, rows) in ("survives", "does not survive"):
            want.append(f"{strength.correction(e, rows)} BH")
        wrong += [f"{e['id']} {e['regime']}: {c!r} lacks {w!r}" for w in want if w not in c]
    assert not missing, f"entries whose cell the page does not show: {missing[:5]}"
    assert not wrong, "\n".join(wrong)
    floors = [e for e in shown if e.get("note") == FLOOR_NOTE]
    assert floors and all(f"{e['verdict']}, floor" in page.cell(e) for e in floors)  # R1 AIME-like: reproduced, floor
    a3 = by[("A3", "amc_like")][0]
    assert "reproduced, below 1 point" in page.cell(a3)  # +0.5 [+0.1, +0.9]


def test_no_interval_on_the_page_leaves_its_quantitys_bounds(rendered):
    """F3's committed interval reaches +101.4 for a difference of accuracies; the page shows it cut at +100."""
    from ddrl.study.claims import bounds, shown

    for es in page.gather().values():
        for e in es:
            b = bounds(e["metric"])
            if b is not None:
                lo, hi = shown(e)
                assert b[0] <= lo <= e["estimate"] <= hi <= b[1], (e["id"], e["regime"], lo, hi)
    ends = [float(x) for pair in re.findall(r"\[([+-]\d+\.\d), ([+-]\d+\.\d)\]", rendered) for x in pair]
    assert ends and max(abs(x) for x in ends) <= 100.0, sorted(ends)[-3:]
    f3 = page.gather()[("F3", "base")][0]
    assert f3["ci_high"] > 100 and interval(f3).endswith(", +100.0]")


def test_the_amplification_section_says_what_e2_found(rendered):
    """BCS's false positives (E2) are said from the entries: the opposite holds on the testbed's base model."""
    by = page.gather()
    sentence = page.said(by, "E2")
    assert _flat(sentence) in _flat(rendered)
    for reg in page.SAMPLE_COLUMNS:
        for e in by.get(("E2", reg), []):
            assert f"on {page.SAID_WHERE[reg]} {page.SAID[e['verdict']]} ({interval(e)}" in sentence
    assert "keeps fewer of those false positives" not in _flat(rendered)


def test_the_one_name_of_each_claim_is_the_pages():
    """The page's claim words start with claim_name's, the one name README and the notebooks print."""
    from ddrl.study.claims import claim_name

    for claim, small, default in page.ROWS:
        assert claim.startswith(claim_name(small)) and claim_name(small) == claim_name(default)
    for claim, cid in page.SAMPLE_ROWS:
        assert claim.startswith(claim_name(cid))
