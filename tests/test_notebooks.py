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
    metrics = smoke_run / "metrics" / f"{path.stem}.json"
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
