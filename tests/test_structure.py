"""The package's structure (issue 18): one name for each thing, one table of method labels, no import cycle,
no module too long to read."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ddrl.experiments import METHODS
from ddrl.plotting import METHOD_LABELS, label
from ddrl.train import PRESETS

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "ddrl"


def test_method_names_equal_preset_names_and_have_one_label():
    assert set(METHODS) <= set(PRESETS), sorted(set(METHODS) - set(PRESETS))
    assert set(METHOD_LABELS) == set(PRESETS), set(METHOD_LABELS) ^ set(PRESETS)
    assert label("ddrl") == "DDRL (BCS + DAE + COR)" and label("bcs_dae") == "BCS + DAE"


def test_no_second_table_of_method_labels():
    """A dict literal mapping "ttrl" to "TTRL" exists once (ddrl/plotting.py) in the package, bench and notebooks."""
    hits = []
    for path in [*PKG.rglob("*.py"), *(REPO / "bench").glob("*.py"), *(REPO / "notebooks").glob("*.py")]:
        if re.search(r'"ttrl"\s*:\s*"TTRL"', path.read_text()):
            hits.append(path.relative_to(REPO).as_posix())
    assert hits == ["ddrl/plotting.py"]


def test_one_git_sha_and_one_data_env_variable():
    defs = [p.relative_to(REPO).as_posix() for p in PKG.rglob("*.py") if re.search(r"^def git_sha\(", p.read_text(), re.M)]
    assert defs == ["ddrl/reporting.py"]
    users = [p.relative_to(REPO).as_posix() for p in [*PKG.rglob("*.py"), *(REPO / "tests").glob("*.py")]
             if "DDRL_SHARED_DATA" in p.read_text() and p.name != "test_structure.py"]
    assert users == []


def test_votes_are_counted_only_in_voting():
    """No Counter/most_common tally of answers outside ddrl/voting.py (package, bench, notebooks)."""
    hits = []
    for path in [*PKG.rglob("*.py"), *(REPO / "bench").glob("*.py"), *(REPO / "notebooks").glob("*.py")]:
        if path.name != "voting.py" and re.search(r"\bCounter\(|most_common\(", path.read_text()):
            hits.append(path.relative_to(REPO).as_posix())
    assert hits == []
