"""Issue 98: no ddrl module does work at import. ``ddrl.study.__main__`` ran the study's command line when imported
(a crafted cache pickle naming it ran it inside a notebook, and its SystemExit killed the kernel): every module's
top level holds definitions only, a command line runs under ``if __name__ == "__main__"``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ddrl"
#: Names of calls that start a program's work: a command line's entry point, an exit, a subprocess.
WORK = {"main", "exit", "_exit", "run", "system", "call", "check_call", "check_output", "Popen", "execute_notebook"}


def _called(node: ast.AST) -> str | None:
    func = node.func if isinstance(node, ast.Call) else None
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _main_guard(node: ast.stmt) -> bool:
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in t.comparators))


def test_no_module_starts_work_at_its_top_level():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if _main_guard(node) or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            found += [f"{path.relative_to(PACKAGE.parent)}:{n.lineno}: {ast.unparse(n)[:60]}"
                      for n in ast.walk(node) if isinstance(n, ast.Call) and _called(n) in WORK]
    assert not found, found


def test_importing_a_command_line_module_runs_nothing():
    mains = sorted(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts) for p in PACKAGE.rglob("__main__.py"))
    assert "ddrl.study.__main__" in mains
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\nprint('imported')"
    run = subprocess.run([sys.executable, "-c", code, *mains], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout == "imported\n", (run.returncode, run.stdout[-500:], run.stderr[-500:])
