"""Every ``ddrl`` name the notebooks use exists: the fast tier's guard of the notebooks' code against a renamed, moved or
removed function (their smoke run, which executes them, is in the slow tier: ``make test-slow``)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.py"))


def ddrl_names(source: str) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` for each name a notebook's code takes from ``ddrl``: ``from ddrl.m import name`` and
    ``alias.name`` where ``alias`` is a ``ddrl`` module it imported (``from ddrl import analysis as an``,
    ``import ddrl.m as alias``; not an alias the code assigns again); ``name`` is ``""`` where only the module itself
    is imported."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ddrl" and not node.level:
            for a in node.names:
                found.append((node.lineno, node.module, a.name))
                if importlib.util.find_spec(node.module) and _is_module(f"{node.module}.{a.name}"):
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "ddrl":
                    found.append((node.lineno, a.name, ""))
                    if a.asname:
                        aliases[a.asname] = a.name
    rebound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for name in rebound:  # an alias the notebook assigns again (a table named like a module) is not followed
        aliases.pop(name, None)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found.append((node.lineno, aliases[node.value.id], node.attr))
    return found


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def missing(found: list[tuple[int, str, str]]) -> list[str]:
    """The names of ``found`` that do not exist, as ``line: module.name``."""
    out = []
    for line, module, name in found:
        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            out.append(f"{line}: {module} ({e})")
            continue
        if name and not hasattr(mod, name) and not _is_module(f"{module}.{name}"):
            out.append(f"{line}: {module}.{name}")
    return out


def test_the_scan_sees_imports_and_module_attributes():
    src = ("from ddrl import analysis as an\nfrom ddrl.voting import majority_vote, no_such_thing\n"
           "an.no_such_function(1)\nan.band_label(1, 2)\nimport os\nos.path\n"
           "from ddrl.study import drift\ndrift = 1\ndrift.round\n")
    found = ddrl_names(src)
    assert {(3, "ddrl.analysis", "no_such_function"), (4, "ddrl.analysis", "band_label")} <= set(found)
    assert not any(m == "os" for _, m, _ in found)
    assert sorted(missing(found)) == ["2: ddrl.voting.no_such_thing", "3: ddrl.analysis.no_such_function"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_ddrl_name_a_notebook_uses_exists(path):
    found = ddrl_names(path.read_text())
    assert found, f"{path.name}: no ddrl name found (the scan is broken)"
    assert missing(found) == [], f"{path.name} uses names that do not exist: {missing(found)}"
