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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """ddrl module -> the ddrl modules it imports, counting imports inside functions too (a lazy import
    hides a cycle from Python, not from the reader)."""
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}

    def resolve(name: str) -> str | None:  # "ddrl.train.make_config" -> "ddrl.train"
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for mod, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("ddrl"):
                deps |= {resolve(f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {resolve(a.name) for a in node.names if a.name.startswith("ddrl")}
        graph[mod] = deps - {mod, None, "ddrl"}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None (depth-first search)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state and (c := visit(d)):
                return c
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_find_cycle_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_inside_ddrl():
    graph = import_graph()
    assert "ddrl.cor" in graph["ddrl.train"] and "ddrl.logprobs" in graph["ddrl.cor"]  # the graph sees lazy imports
    assert find_cycle(graph) is None


#: Modules still longer than MAX_LINES, each with what would split it. Shrink this list; never grow it.
TOO_LONG = {
    "ddrl/train.py",  # config + presets + one RL step + the loop; the rollout/update pieces could move out
    "ddrl/analysis.py",  # frequency/Bayes analysis (notebook 01) and the GRPO amplification pipeline (02)
    "ddrl/data.py",  # file lookup/verification and the dataset parsers: two modules' worth
}
MAX_LINES = 500


def test_no_module_over_max_lines_except_the_allow_list():
    lengths = {p.relative_to(REPO).as_posix(): len(p.read_text().splitlines()) for p in PKG.rglob("*.py")}
    too_long = {p for p, n in lengths.items() if n > MAX_LINES}
    assert too_long <= TOO_LONG, {p: lengths[p] for p in too_long - TOO_LONG}
    assert all(p in lengths for p in TOO_LONG)  # a module that was split or renamed leaves the list
