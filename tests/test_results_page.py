"""The results page, docs/results.md, is what ``make docs`` renders from the committed analyses (ddrl.study.page):
no number on it is typed or pasted, so it cannot drift from results/. One check replaces the paste checks that held the
hand-written page in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddrl.study import page
from ddrl.study.claims import interval
from ddrl.study.digest import gather

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "results.md"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("page") / "results.md"
    assert page.main(["--out", str(out)]) == 0
    return out.read_text()


def test_make_docs_leaves_no_diff(rendered):
    """The committed page equals a fresh rendering byte for byte (`make docs` writes it again)."""
    committed = PAGE.read_text()
    if committed != rendered:
        got, want = committed.splitlines(), rendered.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        pytest.fail(f"docs/results.md differs from its rendering from line {first + 1} (committed "
                    f"{got[first] if first < len(got) else '<end>'!r}, rendered "
                    f"{want[first] if first < len(want) else '<end>'!r}): run `make docs`")


def test_the_page_is_short_and_answers_first(rendered):
    """At most 500 lines, and its first 40 lines answer "does DDRL beat TTRL, and where": M1's committed estimate and
    interval at lr/10 in AMC-like and MATH-500-like, with their verdicts; its figures exist."""
    lines = rendered.splitlines()
    assert len(lines) <= 500, f"docs/results.md has {len(lines)} lines"
    top = "\n".join(lines[:40])
    by = gather()
    assert "## Does DDRL beat TTRL?" in top
    for regime, name in (("amc_like_small_lr", "AMC-like"), ("math500_like_small_lr", "MATH-500-like")):
        e = by[("M1", regime)][0]
        assert f"{interval(e)} in {name} ({e['verdict']};" in " ".join(top.split()), (regime, interval(e))
    for link in (ln.split("](")[1].rstrip(")") for ln in lines if ln.startswith("![")):
        assert (PAGE.parent / link).is_file(), link


def test_a_family_with_no_committed_entry_is_an_error(tmp_path):
    """A results folder without the analyses a family reads names the family instead of rendering an empty section."""
    with pytest.raises(ValueError, match="no committed analysis"):
        page.render(tmp_path)
    fam = page.Family("nothing here", ("Q9",), "asks")
    with pytest.raises(ValueError, match="nothing here"):
        page.family_table(gather(), fam)
