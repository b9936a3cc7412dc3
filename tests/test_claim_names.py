"""One name for each claim (issue 95): README.md, docs/results.md, notebook 06 (through ddrl.study.page) and notebooks
03-05 (through ddrl.study.lesson) read a claim's words from ddrl.study.claims.NAMES, by claim_name."""

from __future__ import annotations

import re

from conftest import REPO
from ddrl.study import lesson, page
from ddrl.study.claims import CLAIMS, NAMES, claim_name


def test_every_claim_has_one_name_and_the_lessons_and_page_use_it():
    assert {c.id for c in CLAIMS} - set(NAMES) <= {"H1xR", "H1xB", "H1xA", "H1xN", "H1xP"}  # named by CLAIMS
    for cid in NAMES:
        assert lesson.claim_words(cid) == claim_name(cid)
    for claim, small, default in page.ROWS:
        assert claim.startswith(claim_name(small)) and claim_name(default) == claim_name(small)


def test_readmes_answer_table_names_each_claim_by_its_one_name():
    text = (REPO / "README.md").read_text()
    body = text[text.index("## The answer"):text.index("## The notebooks")]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in body.splitlines()
            if line.startswith("| ") and not line.startswith("| claim |")]
    assert rows
    wrong = [(r[0], r[1]) for r in rows if r[0] != claim_name(r[1].split(" / ")[0])]
    assert not wrong, f"README names these claims otherwise than ddrl.study.claims.claim_name: {wrong}"


def test_no_other_name_of_a_claim_in_readme_or_the_results_page():
    """The names the notebooks used before the one table (issue 95) appear nowhere a reader looks."""
    old = ("BCS beats TTRL's random K", "COR beats as much more RL", "COR adds to BCS + DAE",
           "TTRL beats no adaptation", "DAE's fixed ±1 beats GRPO")
    for path in (REPO / "README.md", REPO / "docs" / "results.md"):
        text = " ".join(path.read_text().split())
        found = [o for o in old if re.search(re.escape(o), text)]
        assert not found, f"{path.name}: {found}"
