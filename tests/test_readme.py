"""README.md for a newcomer (issue 84): short, its answer table quoted from the committed analyses, its links alive.

Every cell of the table under "## The answer" must be what :func:`ddrl.study.page.cell` prints for a committed
entry of the same claim, regime and learning rate (the digest reads ``results/claims.json`` and the amendments'
analysis files), and every signed number of that section's prose must be one of the table's; so a new analysis
that moves an estimate fails here until the README says it.
"""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from ddrl.study import page

README = REPO / "README.md"
NUMBER = re.compile(r"(?<![\w.])[+-]\d+\.\d\b")
#: the table's header, as the test parses it (a changed header is a changed table: update both)
HEADER = "| claim | id | regime | paper | testbed at lr/10 | testbed at the default lr |"


def section(text: str, title: str) -> str:
    """The body of the ``## title`` section of a Markdown text."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert m, f"README.md has no '## {title}' section"
    return m.group(1)


def answer_rows(text: str) -> list[list[str]]:
    """The answer table's rows, each as its six cells."""
    body = section(text, "The answer")
    assert HEADER in body, f"README.md's answer table lost its header {HEADER!r}"
    lines = body[body.index(HEADER):].splitlines()[2:]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if line.startswith("|")]
    assert rows and all(len(r) == 6 for r in rows), "every row of the answer table has six cells"
    return rows


def expected_cells(by: dict, ids: str, regime: str) -> tuple[set[str], set[str], str]:
    """The digest's cells for a README row: (at lr/10, at the default lr, the paper's number), from the committed
    entries of the claim ``ids`` (``M1``, or ``K4 / K5`` where the learning rates' ids differ) in ``regime``
    (``AMC-like``: :data:`ddrl.study.page.STANDS_FOR`)."""
    assert regime in page.STANDS_FOR, f"README regime {regime!r} is none of {sorted(page.STANDS_FOR)}"
    small_id, default_id = ids.split(" / ")[0], ids.split(" / ")[-1]
    small, defaults = page.STANDS_FOR[regime]
    default = next(iter(defaults))  # the regime's registered questions, not the 768-question design
    at_small = by.get((small_id, small), []) if small else []
    at_default = by.get((default_id, default), [])
    papers = {e["paper"] for e in at_small + at_default if e["paper"] is not None}
    paper = " / ".join(f"{p:+.1f}" for p in sorted(papers)) if papers else "n/a"
    return {page.cell(e) for e in at_small} or {"-"}, {page.cell(e) for e in at_default} or {"-"}, paper


def test_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= 160, f"README.md has {len(lines)} lines: a newcomer's page (issue 84 asks for ~150)"


def test_first_screen_says_what_it_is_the_two_commands_and_the_answer():
    """What a newcomer reads first: what it is, `make reproduce` and `make test`, and the answer table."""
    text = README.read_text()
    assert "make reproduce" in text.split("## The answer")[0] and "make test" in text.split("## The answer")[0]
    order = [text.index(s) for s in ("## Two commands", "## The answer", HEADER, "## The notebooks")]
    assert order == sorted(order), "README's order: what it is, the two commands, the answer, the notebooks"


def test_answer_table_quotes_the_committed_analyses():
    by = page.gather()
    rows = answer_rows(README.read_text())
    wrong = []
    for claim, ids, regime, paper, lr10, default in rows:
        want_small, want_default, want_paper = expected_cells(by, ids, regime)
        for got, want, column in ((lr10, want_small, "lr/10"), (default, want_default, "default lr"),
                                  (paper, {want_paper}, "paper")):
            if got not in want:
                wrong.append(f"{ids} {regime} {column}: README {got!r}, committed {sorted(want)}")
    assert not wrong, "README's answer table differs from the committed analyses:\n" + "\n".join(wrong)
    assert {r[1] for r in rows} >= {"M1"}, "the answer table answers 'does DDRL beat TTRL?' (M1)"


def answer_paragraph(text: str) -> str:
    """The bold paragraph that opens README's answer, its whitespace and bold marks normalised."""
    first = section(text, "The answer").strip().split("\n\n")[0]
    assert first.startswith("**") and first.endswith("**"), "README's answer opens with its answer in bold"
    return " ".join(first.strip("*").split())


def test_the_answer_is_the_results_pages_generated_from_the_numbers():
    """README's answer to "does DDRL beat TTRL?" is :func:`ddrl.study.page.answer_text` word for word, the sentence
    the results page opens with, written from the committed M1 and H1xD entries (fresh questions included)."""
    want = page.answer_text(page.gather())
    got = answer_paragraph(README.read_text())
    assert got == want, ("README.md's answer differs from the one written from the numbers; paste "
                         f"ddrl.study.page.answer_text(page.gather()) in bold:\n{want}")
    assert f"**{want}**" in " ".join(page.render().split()), "the results page opens with the same answer"


def test_answer_prose_quotes_only_the_table():
    """Each signed number in the answer's other sentences is an estimate or a paper's number of the table (not a
    bound: a sentence quoting a size quotes an estimate); the generated answer paragraph is checked above."""
    text = README.read_text()
    body = section(text, "The answer").strip().split("\n\n", 1)[1]
    prose = "\n".join(line for line in body.splitlines() if not line.startswith("|"))
    quoted = {NUMBER.match(cell).group(0) for row in answer_rows(text) for cell in (row[3], row[4], row[5])
              if NUMBER.match(cell)}
    stray = sorted(set(NUMBER.findall(prose)) - quoted)
    assert not stray, f"numbers in README's answer prose that its table does not hold: {stray}"


@pytest.mark.parametrize("target", sorted(set(re.findall(r"\]\(((?!https?:|#)[^)#\s]+)", README.read_text()))))
def test_relative_links_resolve(target):
    """Every relative link of README.md names a committed path (docs/notebooks/ is written by `make publish`)."""
    assert (REPO / target).exists(), f"README.md links {target}, which does not exist" + (
        "; run `make reproduce && make publish`" if target.startswith("docs/notebooks/") else "")
