"""The executed notebooks a reader sees without running anything (docs/notebooks/, `make publish`), and the pairing
that lets JupyterLab open the sources as notebooks (jupytext.toml, `make install`'s lab settings).

A published copy is current when its code cells equal those of ``notebooks/NN_*.py`` (papermill's injected
parameters aside): an edit of a notebook's code fails here until ``make reproduce && make publish`` runs again.
"""

from __future__ import annotations

import json
import re

import nbformat
import pytest

from conftest import REPO
from ddrl.run import labsettings, publish

STEMS = publish.source_stems()
#: the committed folder's budget: six notebooks with their PNG figures (the smoke preset's copies are ~1.8 MiB)
MAX_TOTAL_MIB = 8.0


def published(stem: str):
    path = publish.PUBLISHED_DIR / f"{stem}.ipynb"
    assert path.is_file(), f"{path.relative_to(REPO)} is not published: run `make reproduce && make publish`"
    return nbformat.read(path, as_version=4)


def test_seven_notebooks_to_publish():
    assert len(STEMS) == 7, STEMS


@pytest.mark.parametrize("stem", STEMS)
def test_published_copy_equals_its_source(stem):
    stale = publish.stale_cells(stem, published(stem))
    assert stale is None, f"docs/notebooks/{stem}.ipynb is stale: {stale}; run `make reproduce && make publish`"


@pytest.mark.parametrize("stem", STEMS)
def test_published_copy_names_commit_and_preset_and_is_executed(stem):
    nb = published(stem)
    head = nb.cells[0]
    assert publish.HEADER_TAG in head.metadata.get("tags", []), "the first cell is the publish header"
    assert "on the `default` preset" in head.source, "published copies are the default preset's"
    assert re.search(r"at commit `[0-9a-f]{12}`", head.source), head.source
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code), "every code cell of a published copy ran"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"], "a published copy shows no error"


def test_published_folder_is_small_and_png_only():
    paths = [publish.PUBLISHED_DIR / f"{s}.ipynb" for s in STEMS]
    missing = [p.name for p in paths if not p.is_file()]
    assert not missing, f"not published: {missing}; run `make reproduce && make publish`"
    total = sum(p.stat().st_size for p in paths) / 2**20
    assert total <= MAX_TOTAL_MIB, f"docs/notebooks/ holds {total:.1f} MiB of notebooks (budget {MAX_TOTAL_MIB})"
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        assert "widgets" not in nb.metadata, f"{p.name} carries widget state"
        twins = [m for c in nb.cells for o in c.get("outputs", []) for m in publish.DROPPED_MIME
                 if m in o.get("data", {}) and len(o["data"]) > 1]
        assert not twins, f"{p.name} keeps {sorted(set(twins))} beside another representation"


# --- make publish's checks, on synthetic notebooks (no kernel) ---


SOURCE = """# %% [markdown]
# # A notebook

# %% tags=["parameters"]
n = 1

# %%
print(n + 1)
"""


def png_b64() -> str:
    """An opaque 200 x 120 RGBA PNG drawn like a plot (three coloured lines on white), base64 as a notebook stores
    it; truecolour, as matplotlib writes it."""
    import base64
    import io

    from PIL import Image, ImageDraw

    im = Image.new("RGBA", (200, 120), (255, 255, 255, 255))
    draw = ImageDraw.Draw(im)
    for i, colour in enumerate([(31, 119, 180), (214, 39, 40), (44, 160, 44)]):
        draw.line([(0, 20 + 30 * i), (199, 100 - 25 * i)], fill=colour + (255,), width=3)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return base64.b64encode(buf.getvalue()).decode()


def executed_copy(source_dir, stem, code_edit=None):
    """``notebooks/<stem>.py`` as papermill would leave it executed: the injected parameters cell after the
    parameters cell, every code cell run."""
    import jupytext

    nb = jupytext.read(source_dir / f"{stem}.py")
    cells = list(nb.cells)
    injected = nbformat.v4.new_code_cell("n = 2", metadata={"tags": [publish.INJECTED_TAG]})
    cells.insert(2, injected)
    for i, c in enumerate(c for c in cells if c.cell_type == "code"):
        c.execution_count = i + 1
        c.outputs = [nbformat.v4.new_output("display_data", data={
            "image/png": png_b64(), "application/pdf": "JVBERi0=", "text/plain": "<Figure>"})]
    if code_edit:
        cells[-1].source = code_edit
    nb.cells = cells
    nb.metadata["widgets"] = {"state": {}}
    return nb


@pytest.fixture
def executed(tmp_path):
    """(source dir, out dir) with one source notebook and its executed copy and manifest entry at commit 'abc'."""
    src, out = tmp_path / "notebooks", tmp_path / "out"
    src.mkdir(), out.mkdir()
    (src / "01_demo.py").write_text(SOURCE)
    nbformat.write(executed_copy(src, "01_demo"), out / "01_demo.ipynb")
    manifest = {"notebooks": {"01_demo": {"git_sha": "abc" * 13 + "a", "seconds": 3.0,
                                          "parameters": {"preset": "default"}}}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "01_demo" / "artifacts").mkdir(parents=True)  # its Reporter's legibility log: one clean figure
    (out / "01_demo" / "artifacts" / "01_demo.legibility.jsonl").write_text(
        json.dumps({"name": "curve", "overlaps": [], "legend_on_data": []}) + "\n")
    return src, out


def test_check_accepts_a_current_run_and_slims_it(executed):
    src, out = executed
    runs = publish.check_executed(out, "default", "abc" * 13 + "a", ["01_demo"], src)
    nb = publish.published_copy(out / "01_demo.ipynb", "01_demo", "abc" * 13 + "a", "default", runs["01_demo"]["seconds"])
    assert publish.HEADER_TAG in nb.cells[0].metadata["tags"] and "commit `abcabcabcabc`" in nb.cells[0].source
    assert publish.stale_cells("01_demo", nb, src) is None
    assert "widgets" not in nb.metadata
    assert all(set(o.data) == {"image/png", "text/plain"} for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    shrunk = [o.data["image/png"] for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert all(len(b) < len(png_b64()) for b in shrunk), "figures re-encoded with a palette (smaller)"


@pytest.mark.parametrize("problem, expected", [
    ("no manifest", "manifest.json: missing"),
    ("other commit", "executed at commit abcabcabcabc, HEAD is 000000000000"),
    ("other preset", "executed on preset 'smoke', not 'default'"),
    ("missing notebook", "not executed in"),
    ("stale code", "code cell 2 differs from notebooks/01_demo.py"),
    ("illegible figure", "01_demo: figure curve is not legible: 'a' overlaps 'b'"),
    ("no legibility log", "01_demo.legibility.jsonl is missing"),
])
def test_check_refuses_naming_the_problem(executed, problem, expected):
    src, out = executed
    sha = "abc" * 13 + "a"
    if problem == "no manifest":
        (out / "manifest.json").unlink()
    elif problem == "other commit":
        sha = "0" * 40
    elif problem == "other preset":
        m = json.loads((out / "manifest.json").read_text())
        m["notebooks"]["01_demo"]["parameters"]["preset"] = "smoke"
        (out / "manifest.json").write_text(json.dumps(m))
    elif problem == "missing notebook":
        (out / "01_demo.ipynb").unlink()
    elif problem == "stale code":
        nbformat.write(executed_copy(src, "01_demo", code_edit="print(n + 3)"), out / "01_demo.ipynb")
    elif problem == "illegible figure":
        (out / "01_demo" / "artifacts" / "01_demo.legibility.jsonl").write_text(
            json.dumps({"name": "curve", "overlaps": ["'a' overlaps 'b'"], "legend_on_data": []}) + "\n")
    elif problem == "no legibility log":
        (out / "01_demo" / "artifacts" / "01_demo.legibility.jsonl").unlink()
    with pytest.raises(publish.PublishError, match=re.escape(expected)):
        publish.check_executed(out, "default", sha, ["01_demo"], src)


# --- JupyterLab and jupytext ---


def test_jupytext_pairs_the_sources_and_not_the_published_copies():
    from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file

    def formats(path):
        config = load_jupytext_configuration_file(find_jupytext_configuration_file(str(path.parent)))
        return config.default_formats(str(path))

    stem = STEMS[0]
    assert formats(REPO / "notebooks" / f"{stem}.py") == "notebooks///ipynb,notebooks///py:percent"
    assert formats(REPO / "notebooks" / f"{stem}.ipynb") == "notebooks///ipynb,notebooks///py:percent"
    assert formats(publish.PUBLISHED_DIR / f"{stem}.ipynb") == "ipynb"


def test_lab_settings_are_an_override_jupyterlab_reads(tmp_path):
    """`make install` writes the default viewer where JupyterLab's settings server reads per-package overrides: in
    its application directory (this environment's), under ``settings/overrides.d/``."""
    from jupyterlab_server.settings_utils import _get_overrides

    assert labsettings.overrides_path().parents[2] == labsettings.app_dir()
    path = labsettings.write(tmp_path / "lab")
    overrides, error = _get_overrides(str(path.parents[1]))
    assert not error, error
    assert overrides[labsettings.PLUGIN]["defaultViewers"]["python"] == "Jupytext Notebook"
