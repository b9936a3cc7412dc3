"""Records that point to what exists (issue 95): every command README.md and docs/ give runs (``--help``), every
``ddrl.*`` name they and results/plan.md use exists, or docs/study/then_and_now.md maps it to today's equivalent (or
says it is retired), and every ``make`` target they name is the Makefile's."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import re
import runpy
import sys

import pytest

from conftest import REPO

MAP = REPO / "docs" / "study" / "then_and_now.md"
#: Where the names are read: the newcomer's pages, every doc, and the plan (a record, mapped by MAP)
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), REPO / "results" / "plan.md"]
#: ``ddrl.x.y`` used as a name (not a path); :func:`names` drops config keys (``ddrl.bcs.enable=True``)
NAME = re.compile(r"(?<![\w/.+-])(ddrl(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(=?)")
#: Config keys the docs quote beside module names: the official DDRL code's script keys (docs/real_scale.md and
#: docs/scaling_out.md compare them with ours) and our verl trainer's ``ddrl:`` section (its YAML)
OFFICIAL_KEYS = ("ddrl.bcs", "ddrl.dae")
VERL_CONFIG = REPO / "ddrl" / "integrations" / "verl" / "config" / "ddrl_ppo_trainer.yaml"


def names(text: str) -> set[str]:
    """The ``ddrl.*`` names of a text that are not config keys."""
    section = VERL_CONFIG.read_text().split("\nddrl:\n", 1)[1]
    ours = {f"ddrl.{k}" for k in re.findall(r"^  ([a-z_]+):", section.split("\n\n")[0], flags=re.M)}
    return {n for n, eq in NAME.findall(text)
            if not eq and n not in ours and not any(n == k or n.startswith(k + ".") for k in OFFICIAL_KEYS)}
COMMAND = re.compile(r"python -m (ddrl(?:\.[A-Za-z_][A-Za-z0-9_]*)*)((?: [a-z][a-z0-9_-]*)?)")
#: Modules that run only in the verl environment (``make test-verl``): their existence is checked, not run here
OWN_ENV = ("ddrl.integrations.verl",)


def mapped() -> list[str]:
    """The names the map sends elsewhere (its first column)."""
    return re.findall(r"^\| `([^`]+)`", MAP.read_text(), flags=re.M)


def _retired(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") or name.startswith(m + " ") for m in mapped())


def resolves(name: str) -> bool:
    """Whether ``ddrl.a.b.c`` is a module today, or an attribute of one."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        mod = ".".join(parts[:i])
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            continue
        if i == len(parts):
            return True
        obj = importlib.import_module(mod)
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_ddrl_name_in_readme_docs_and_the_plan_exists_or_is_mapped():
    stale = []
    for path in DOCS:
        for name in sorted(names(path.read_text())):
            if not _retired(name) and not resolves(name):
                stale.append(f"{path.relative_to(REPO)}: {name}")
    assert not stale, ("names that neither exist nor are in docs/study/then_and_now.md (map them to today's "
                       "equivalent, or say retired):\n" + "\n".join(stale))


def test_the_map_maps_only_what_is_gone():
    """A name the map sends elsewhere must really be gone (else the map hides a live name)."""
    alive = [m for m in mapped() if not m.startswith("python ") and resolves(m)]
    assert not alive, f"docs/study/then_and_now.md maps names that still exist: {alive}"
    for path in (REPO / "results" / "plan.md", REPO / "docs" / "study" / "journal.md"):
        assert "then_and_now.md" in "\n".join(path.read_text().splitlines()[:12]), \
            f"{path.name} points to the map at its top"


def commands() -> list[tuple[str, str]]:
    """Each (module, subcommand) README.md and docs/ run with ``python -m``, not retired."""
    found = set()
    for path in DOCS[:-1]:
        for mod, sub in COMMAND.findall(path.read_text()):
            sub = sub.strip()
            if not _retired(f"python -m {mod} {sub}".strip()) and not _retired(mod):
                found.add((mod, sub))
    return sorted(found)


def test_the_docs_name_commands():
    cmds = commands()
    assert ("ddrl.study", "analyse") in cmds and ("ddrl.run.reproduce", "") in cmds and len(cmds) >= 8


@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")  # runpy on a module imported before
@pytest.mark.parametrize("mod,sub", commands())
def test_every_command_in_readme_and_docs_runs(mod, sub, monkeypatch):
    """``python -m MODULE [SUBCOMMAND] --help`` exits 0 (run in this process: the imports are shared)."""
    if mod.startswith(OWN_ENV):
        assert importlib.util.find_spec(mod) is not None, f"{mod} is gone"
        return
    monkeypatch.setattr(sys, "argv", [mod, *([sub] if sub else []), "--help"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), pytest.raises(SystemExit) as stop:
        runpy.run_module(mod, run_name="__main__", alter_sys=True)
    assert stop.value.code in (0, None), f"python -m {mod} {sub} --help exits {stop.value.code}:\n{out.getvalue()[-800:]}"
    assert "usage" in out.getvalue().lower(), out.getvalue()[-400:]


def test_every_make_target_the_docs_name_exists():
    targets = set(re.findall(r"^([a-z][a-z0-9_-]*):", (REPO / "Makefile").read_text(), flags=re.M))
    named = {t for path in DOCS[:-1] for t in re.findall(r"`make ([a-z][a-z0-9_-]*)", path.read_text())}
    assert named and not named - targets, f"make targets the docs name that the Makefile lacks: {named - targets}"


#: The scripts that measure docs/benchmarks.md's figures of today (its first table)
def bench_scripts() -> list[str]:
    text = (REPO / "docs" / "benchmarks.md").read_text()
    today = text[text.index("## Today's figures"):text.index("\n## ", text.index("## Today's figures") + 5)]
    return sorted(set(re.findall(r"(bench/[a-z_]+\.py)", today)))


def test_every_bench_script_the_docs_name_exists():
    named = {b for path in DOCS[:-1] for b in re.findall(r"(?<![\w/])(bench/[a-z_0-9]+\.py)", path.read_text())}
    assert named and not [b for b in named if not (REPO / b).is_file()], [b for b in named if not (REPO / b).is_file()]
    assert len(bench_scripts()) >= 5


@pytest.mark.parametrize("script", bench_scripts())
def test_the_benchmarks_of_today_run(script, monkeypatch):
    """Each script of docs/benchmarks.md's first table answers ``--help`` (its measurement takes minutes)."""
    monkeypatch.setattr(sys, "argv", [script, "--help"])
    monkeypatch.syspath_prepend(str(REPO / "bench"))  # a script imports its siblings
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), pytest.raises(SystemExit) as stop:
        runpy.run_path(str(REPO / script), run_name="__main__")
    assert stop.value.code in (0, None), out.getvalue()[-800:]
