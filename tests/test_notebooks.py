"""The companion's notebooks: stripped, paired with their jupytext sources, and runnable under papermill.

The smoke run executes every notebook once with the smoke preset (CI budget: <= 5 minutes for all of them)
through the real entry point, ``python -m ddrl.run.reproduce --preset smoke``, into a temporary directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jupytext
import nbformat
import pytest
from conftest import REPO
from ddrl.report.legibility import run_findings

NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_the_numbered_notebooks_are_there():
    assert len(NOTEBOOKS) >= 6, [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_is_stripped(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; run `nbstripout {path}`"
    r = subprocess.run([sys.executable, "-m", "nbstripout", "--verify", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, f"nbstripout --verify {path.name}: {r.stdout}{r.stderr}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_jupytext_pair_in_sync(path):
    py = path.with_suffix(".py")
    assert py.is_file(), f"{py.name} (the jupytext py:percent twin of {path.name}) is missing"
    a = jupytext.read(path)
    b = jupytext.read(py)
    src = lambda nb: [(c.cell_type, c.source.strip()) for c in nb.cells]
    assert src(a) == src(b), f"{path.name} and {py.name} differ; run `jupytext --sync {py}`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_declares_runner_parameters(path):
    from ddrl.run.reproduce import RUNNER_PARAMS, declared_parameters

    params = declared_parameters(path)
    assert set(RUNNER_PARAMS) <= set(params), f"{path.name} must declare {RUNNER_PARAMS} in its parameters cell"


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run(
        [sys.executable, "-m", "ddrl.run.reproduce", "--preset", "smoke", "--output-dir", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert r.returncode == 0, f"smoke run failed:\n{r.stdout[-4000:]}\n{r.stderr[-6000:]}"
    return out


@pytest.mark.e2e
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_smoke_run_produces_metrics_and_artifacts(smoke_run, path):
    metrics = smoke_run / path.stem / "metrics" / f"{path.stem}.json"
    assert metrics.is_file() and json.loads(metrics.read_text()), f"{metrics} missing or empty"
    manifest = json.loads((smoke_run / "manifest.json").read_text())
    mine = [a for a in manifest["artifacts"] if a["notebook"] == path.stem]
    assert {"executed-notebook", "html", "metrics", "figure"} <= {a["kind"] for a in mine}
    for a in mine:
        f = smoke_run / a["path"]
        assert f.is_file() and f.stat().st_size > 0, f"{a['path']} missing or empty"
    # the executed copy shows its figures although the caller's MPLBACKEND is Agg (the kernel's is inline)
    outputs = [o for c in json.loads((smoke_run / f"{path.stem}.ipynb").read_text())["cells"] for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.stem}: no figure in the executed notebook"


def test_legibility_findings_name_overlaps_legends_on_data_and_unchecked_figures(tmp_path):
    """The smoke batch's check on a planted notebook folder: a real figure with two texts on one spot, drawn through
    the Reporter, is named with its texts; a figure saved beside it without the Reporter, and a missing log, too."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ddrl.report.reporter import Reporter, save_figure

    rep = Reporter(tmp_path, "nb")
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1], label="data")
    ax.legend(loc="lower right")
    rep.figure(fig, "clean")
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.text(0.5, 0.5, "one note")
    ax.text(0.5, 0.5, "another note")
    rep.figure(fig, "crowded")
    assert run_findings(tmp_path, "nb") == {"crowded": ["'one note' overlaps 'another note'"]}
    save_figure(fig, tmp_path / "figures", "by_hand")
    assert list(run_findings(tmp_path, "nb")) == ["crowded", "by_hand"]
    plt.close("all")
    assert "is missing" in run_findings(tmp_path, "other")["(the notebook)"][0]


@pytest.mark.e2e
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_smoke_run_figures_are_legible(smoke_run, path):
    """Every figure each notebook draws on the smoke preset's data has no overlapping text and no legend on its data
    (ddrl.report.legibility, as matplotlib lays the figure out)."""
    bad = run_findings(smoke_run / path.stem, path.stem)
    assert not bad, f"{path.stem}: figures with overlapping text or a legend on the data (fix the drawing code): {bad}"


@pytest.mark.e2e
def test_smoke_run_leaves_every_artifact_path_to_one_notebook_and_its_sha256_in_the_manifest(smoke_run):
    """Issue 98: a solo batch lost 03's decided table to 04 and 05 (the same names), and the manifest listed the
    survivor under each with the last writer's sha256. Each notebook writes in its own folder now: no path is
    claimed twice, every listed file is there with the listed sha256, and every file of the output folder is listed."""
    from ddrl.infra.storage import sha256_file

    manifest = json.loads((smoke_run / "manifest.json").read_text())
    paths = [a["path"] for a in manifest["artifacts"]]
    assert len(paths) == len(set(paths)), sorted(p for p in paths if paths.count(p) > 1)
    for a in manifest["artifacts"]:
        assert a["path"].startswith(f"{a['notebook']}/") or a["kind"] in ("executed-notebook", "html"), a
        assert sha256_file(smoke_run / a["path"]) == a["sha256"], a["path"]
    made = {str(p.relative_to(smoke_run)) for p in smoke_run.rglob("*") if p.is_file()
            and p.parent.name in ("figures", "tables", "metrics") and "study" not in p.relative_to(smoke_run).parts}
    assert made <= set(paths), sorted(made - set(paths))
    for stem in ("03_test_time_training", "04_ablations", "05_offpolicy_cost"):
        assert f"{stem}/tables/decided.csv" in paths and f"{stem}/figures/decided.png" in paths
    # every notebook ran whole; only 01's SVAMP part may be left out, said so, where the data is not here (offline)
    assert all(n["status"] == "ok" or k.startswith("01") and "svamp_codex_rollouts: " in n["status"]
               for k, n in manifest["notebooks"].items()), {k: n["status"] for k, n in manifest["notebooks"].items()}


@pytest.mark.slow
def test_notebook_01_fails_on_a_damaged_data_file_and_says_when_it_skips(tmp_path):
    """Issue 98's attack: a zlib error inside the SVAMP rollouts' .gz made notebook 01 skip its SVAMP part and the
    batch read "1/1 ok". Now the damaged file fails the notebook, naming it (exit 1); an empty data folder (the data
    absent, as offline) is a skip said in the log and the manifest. Needs no real data: the damaged file is made here."""
    from ddrl.data import DATASETS

    relpath = DATASETS["svamp_codex_rollouts"].files[0].relpath
    damaged = tmp_path / "damaged" / f"{relpath}.gz"
    damaged.parent.mkdir(parents=True)
    data = bytearray(__import__("gzip").compress(b'{"question": "1"}\n' * 5000, mtime=0))
    data[20] ^= 0xFF  # inside the deflate stream: a zlib error
    damaged.write_bytes(bytes(data))
    (tmp_path / "empty").mkdir()
    runs = {}
    for name in ("damaged", "empty"):
        runs[name] = subprocess.run(
            [sys.executable, "-m", "ddrl.run.reproduce", "--preset", "smoke", "--only", "01", "--no-html",
             "-p", "data_dir", str(tmp_path / name), "--output-dir", str(tmp_path / f"out-{name}")],
            cwd=REPO, env=dict(os.environ, MPLBACKEND="Agg"), capture_output=True, text=True, timeout=900)
    bad, empty = runs["damaged"], runs["empty"]
    assert bad.returncode == 1, bad.stdout[-3000:]
    assert "ChecksumError" in bad.stdout + bad.stderr and str(damaged) in bad.stderr, bad.stderr[-3000:]
    assert "0/1 notebook(s)" in bad.stdout
    assert empty.returncode == 0, empty.stderr[-3000:]
    said = "ok, 1 section skipped: svamp_codex_rollouts: "
    assert said in empty.stdout and "(1 with sections skipped)" in empty.stdout, empty.stdout[-3000:]
    manifest = json.loads((tmp_path / "out-empty" / "manifest.json").read_text())
    assert manifest["notebooks"]["01_frequency_and_bayes"]["status"].startswith(said)
    assert not [a for a in manifest["artifacts"] if "svamp" in a["path"]]  # what was skipped is not there


@pytest.mark.parametrize("stem", ["03_test_time_training", "04_ablations", "05_offpolicy_cost"])
def test_training_notebooks_name_committed_runs_and_decided_cells(stem):
    """Notebooks 03-05 show the claims study's decided comparisons and rerun committed runs: in the notebook's own
    defaults and in every preset, each ``rerun`` entry parses and names a committed run (bad ones fail here, before
    a reader waits on an execution), and the study cells select at least one committed entry."""
    import ast

    import yaml

    from ddrl.run.reproduce import declared_parameters
    from ddrl.study import lesson
    from ddrl.study.rerun import locate

    declared = {k: ast.literal_eval(v) for k, v in declared_parameters(REPO / "notebooks" / f"{stem}.ipynb").items()
                if k in ("rerun", "study_claims", "study_regimes")}
    settings = [declared] + [{**declared, **(yaml.safe_load(p.read_text()) or {})}
                             for p in sorted((REPO / "params").glob(f"*/{stem}.yaml"))]
    for s in settings:
        for spec in s["rerun"]:
            design, regime, method, seed, _ = lesson.parse_rerun(spec)
            assert locate(design, regime, method, seed).csv.is_file()
        assert lesson.committed_cells(s["study_claims"], s["study_regimes"])


#: What a student should not read in a lecture's prose: the study's regime ids, a CPU's family and model numbers or
#: brand, and the results files' paths (the decided tables say "yes", not which JSON; issue 95).
INTERNAL_IDS = r"\b(?:aime|amc|math500)_like\w*|family \d+ model \d+|\bEPYC\b|\bXeon\b|results/[\w/]+\.json"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem[:2] in ("01", "02", "03", "04", "05")],
                         ids=lambda p: p.stem)
def test_teaching_prose_has_no_internal_ids(path):
    import re

    nb = nbformat.read(path, as_version=4)
    hits = [(i, m.group(0)) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
            for m in re.finditer(INTERNAL_IDS, c.source)]
    assert not hits, f"{path.name}: markdown cells name internal ids or machines {hits}; say them in words"
