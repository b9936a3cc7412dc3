"""Issue 95: generated sentences still read as a person wrote them: no sentence shape more than three times in a
published notebook (:data:`ddrl.report.prose.SHAPE_LIMIT`).

What a student reads in ``docs/notebooks/0*.ipynb``: the Markdown cells, and of the code cells' outputs the
``text/markdown`` displays, the ``text/plain`` ones that stand alone (not the plain fallback of a table or an image)
and what they print to stdout, a line at a time. Not code, not tables (HTML or Markdown rows), not tracebacks or
stderr. :func:`ddrl.report.prose.sentences` splits that text into sentences (and says what is not one: headings and
run-in headings, table rows, `` `key`: value`` lines, fragments of fewer than three words);
:func:`ddrl.report.prose.sentence_shape` reduces each to its shape (numbers, intervals, signed values, percentages,
regimes, method names, claim ids and quoted identifiers replaced by placeholders).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddrl.report.prose import SHAPE_LIMIT, repeated_shapes, sentence_shape, sentences

PUBLISHED = Path(__file__).resolve().parents[1] / "docs" / "notebooks"
NOTEBOOKS = sorted(PUBLISHED.glob("0*.ipynb"))
#: A plain-text output that is only the fallback of a richer one (a DataFrame's table, a figure).
RICHER = {"text/html", "image/png", "image/svg+xml", "image/jpeg", "application/pdf"}


def reader_texts(nb: dict) -> list[str]:
    """What a student reads in notebook ``nb`` (the module docstring): Markdown as it is, printed text a line apiece."""
    out = []
    for cell in nb.get("cells", []):
        if cell["cell_type"] == "markdown":
            out.append("".join(cell["source"]))
            continue
        for o in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            data = o.get("data", {})
            if o["output_type"] == "stream" and o.get("name") == "stdout":
                out += "".join(o["text"]).splitlines()
            elif "text/markdown" in data:
                out.append("".join(data["text/markdown"]))
            elif "text/plain" in data and not RICHER & set(data):
                out += "".join(data["text/plain"]).splitlines()
    return out


def shape_findings(nb: dict, name: str, limit: int = SHAPE_LIMIT) -> list[str]:
    """One line per sentence shape that occurs more than ``limit`` times in ``nb``: the notebook, count and shape."""
    return [f"{name}: {n} x {shape!r}" for shape, n in repeated_shapes(reader_texts(nb), limit).items()]


def _md_cell(text: str) -> dict:
    return {"cell_type": "markdown", "source": [text], "metadata": {}}


def _out_cell(**data) -> dict:
    return {"cell_type": "code", "source": ["print(...)"], "metadata": {},
            "outputs": [{"output_type": "display_data", "data": {k.replace("_", "/"): v for k, v in data.items()}}]}


def test_a_shape_repeated_four_times_is_named_with_its_count():
    """A planted notebook: one generated sentence four times (numbers, signs, intervals, methods and regimes differ,
    in Markdown cells and displayed outputs) fails; three times passes, and so do four different sentences."""
    said = ["DDRL ends +3.0 points [+0.9, +5.0] above TTRL in AMC-like, lr/10 over 18 seeds.",
            "BCS + DAE ends -1.2 points [-2.0, -0.5] above GRPO in MATH-500-like over three seeds.",
            "ETMR ends 0.4 points [-0.1, +0.9] above TTRL in AIME-like over 46 seeds.",
            "COR ends +12.5 points [+9.0, +16.0] above DDRL (BCS + DAE + COR) in AMC-like over one seed."]
    cells = [_md_cell(f"Some words first. {said[0]}"), _out_cell(text_markdown=[said[1]]), _md_cell(f"- {said[2]}"),
             _out_cell(text_plain=[said[3]])]
    found = shape_findings({"cells": cells}, "planted.ipynb")
    assert found == ["planted.ipynb: 4 x '‹method› ends ‹number› point ‹interval› above ‹method› in ‹regime› over "
                     "‹number› seed.'"]
    assert shape_findings({"cells": cells[:3]}, "planted.ipynb") == []
    varied = ["DDRL ends 3 points above TTRL.", "The gap closes over 18 seeds.", "BCS keeps fewer wrong answers.",
              "Only the testbed's smallest band differs."]
    assert shape_findings({"cells": [_md_cell(" ".join(varied))]}, "varied.ipynb") == []


def test_what_is_not_a_sentence():
    text = ("# A heading that repeats itself\n\n**What to look for.** The bars.\n\n| a table | row of values |\n\n"
            "- `seed_pass1`: 90 records (in the analysis file)\n\n```\ncode that is shown\n```\n")
    assert sentences(text) == ["The bars."]
    assert sentence_shape("seed 0: identical") is None  # fewer than three words
    assert sentence_shape("{'problems': 200, 'samples': 12800}") is None  # a printed dict
    assert sentence_shape("See Fig. 4 for the e.g. case.") == "see fig. ‹number› for the e.g. case."
    assert sentences("It holds (see Fig. 4). Then A1 fails. x = 0.5 is where, e.g. The rest.") == [
        "It holds (see Fig. 4).", "Then A1 fails.", "x = 0.5 is where, e.g. The rest."]
    # the plain fallback of a table is not read; a figure's neither
    cell = _out_cell(text_html=["<table>"], text_plain=["the same words " * 3] * 5)
    assert reader_texts({"cells": [cell]}) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_sentence_shape_more_than_three_times_in_a_published_notebook(path):
    found = shape_findings(json.loads(path.read_text()), f"docs/notebooks/{path.name}")
    assert not found, ("sentence shapes repeated more than three times (write the sentences from the numbers once, "
                       "listing the items, in the code that prints them):\n" + "\n".join(found))


def test_the_published_notebooks_are_read():
    """The published notebooks exist and give the check sentences to count (a reader that reads nothing passes all)."""
    assert len(NOTEBOOKS) == 7
    for path in NOTEBOOKS:
        texts = reader_texts(json.loads(path.read_text()))
        shapes = [sh for t in texts for s in sentences(t) if (sh := sentence_shape(s))]
        assert len(shapes) >= 20, f"{path.name}: only {len(shapes)} sentences read"


def test_the_sentence_generators_list_rows_instead_of_repeating_a_sentence():
    """The functions that write a notebook's result sentences from a table write one sentence per verdict listing its
    rows, so six rows of one verdict never read as six sentences of one shape (notebook 02 printed the "opposite
    direction (or none), but within noise" sentence four times before ``direction_sentences`` grouped them)."""
    import pandas as pd

    from ddrl.report import tables as T
    from ddrl.report.prose import claim_digest
    from ddrl.study.lesson import verdict_sentences

    names = ["ttrl", "ddrl", "etmr", "bcs", "bcs_dae", "dae", "grpo_no_std"]
    paper = {m: 70.0 + i for i, m in enumerate(names)}
    measured = {m: (0.5, 0.3, 0.7) for m in names}  # every difference zero within noise: one verdict for all
    table = T.direction_table([(m, "ttrl") for m in names[1:]], paper, measured)
    assert set(table["direction reproduced"]) == {"no, within noise"} and len(table) == 6
    assert repeated_shapes(T.direction_sentences(table)) == {}
    per_row = [f"{r['difference']}: the paper reports {r['paper Δ']:+g} points, the testbed {r['measured Δ']:+.1f}, "
               f"{T.DIRECTION_WORDS[r['direction reproduced']]}." for _, r in table.iterrows()]
    assert max(repeated_shapes(per_row).values(), default=0) > SHAPE_LIMIT  # the old way: a sentence per row

    rows = pd.DataFrame({"what": ["DDRL beats TTRL"] * 6, "regime": ["AMC-like", "AIME-like", "MATH-500-like"] * 2,
                         "testbed": [3.0, 2.5, 1.2, 4.0, 0.8, 2.2], "verdict": ["reproduced"] * 6})
    assert repeated_shapes(verdict_sentences(rows)) == {}
    assert repeated_shapes([claim_digest(rows, "DDRL beats TTRL")]) == {}
