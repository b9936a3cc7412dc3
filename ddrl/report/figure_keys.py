"""What a drawn figure depends on, so a rerun can copy it instead of drawing it again
(:meth:`ddrl.report.reporter.Reporter.draw`, :mod:`ddrl.report.figure_store`).

A figure ``draw(*args, **kwargs)`` depends on three things, each recorded here:

- :func:`figure_key`: the function's name, the plotting libraries' versions, the style (rcParams), the saved
  resolution and the content of the arguments;
- :func:`code_deps`: the sha256 of the code (:func:`module_sha`: the syntax tree, not the prose) of each ddrl module
  whose code the function can run (:func:`reachable_modules`: the names its code mentions, resolved, to the end; the
  figure's own code, not the whole package) and of each ddrl module those import (the constants a function reads
  without calling into their module: a palette, a table of claims), checked again by :func:`deps_current` before a
  stored figure is used. What this does not see: a method reached only through an object it is handed, and a
  constant a module computes at import from a module two imports away; for the committed figures
  ``tests/test_study.py`` draws every one again and compares the bytes. (Found statically because tracing the calls
  made drawing 1.5x slower: a trace function disables Python 3.11's specialising interpreter; on notebook 06's 29
  figures the static set holds every module a trace saw run.)
- :func:`reads_while`: the data files the function opens while it draws (an audit hook); one that reads its own
  inputs is never stored under a key that does not hold them.

numpy, pandas and matplotlib are looked up, not imported (an argument of theirs, or a figure, means they are loaded):
the module costs :mod:`ddrl.infra.cache`, which every process imports, nothing.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import os
import sys
import types
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable

#: The ddrl package's folder: the modules :func:`watch` notes and :func:`code_deps` hashes.
PACKAGE = Path(__file__).resolve().parents[1]

#: rcParams that change how a figure is shown, not what its saved files hold (left out of :func:`figure_key`).
_RC_NOT_DRAWN = ("backend", "backend_fallback", "interactive", "webagg.port", "webagg.open_in_browser")


def _feed(h, obj: Any) -> None:
    """Feed the content of ``obj`` to the hash ``h``, in order (a dict's order can decide a figure's panels):
    None, bools, numbers, strings, lists, tuples, dicts, numpy arrays and scalars, pandas frames and series,
    dataclasses (their fields), and paths (the path, relative to the repository where inside it, and the bytes of a
    file). Anything else raises TypeError."""
    np, pd = sys.modules.get("numpy"), sys.modules.get("pandas")

    def tag(t: str, payload: bytes = b"") -> None:
        h.update(f"<{t}:{len(payload)}>".encode())
        h.update(payload)

    if obj is None or isinstance(obj, (bool, int, float, str)):
        tag(type(obj).__name__, repr(obj).encode())
    elif np is not None and isinstance(obj, np.generic):
        _feed(h, obj.item())
    elif isinstance(obj, (list, tuple)):
        tag(f"{type(obj).__name__}{len(obj)}")
        for x in obj:
            _feed(h, x)
    elif isinstance(obj, dict):
        tag(f"dict{len(obj)}")
        for k, v in obj.items():
            _feed(h, k)
            _feed(h, v)
    elif np is not None and isinstance(obj, np.ndarray):
        if obj.dtype == object:
            _feed(h, obj.tolist())
        else:
            tag(f"ndarray{obj.dtype.str}{obj.shape}", np.ascontiguousarray(obj).tobytes())
    elif pd is not None and isinstance(obj, (pd.DataFrame, pd.Series)):
        frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
        tag(type(obj).__name__, repr([(str(c), str(t)) for c, t in frame.dtypes.items()]).encode())
        _feed(h, frame.index.to_numpy())
        for c in frame.columns:
            _feed(h, frame[c].to_numpy())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        tag(f"{type(obj).__module__}.{type(obj).__qualname__}")
        for f in dataclasses.fields(obj):
            _feed(h, f.name)
            _feed(h, getattr(obj, f.name))
    elif isinstance(obj, Path):  # one inside the repository by its place there: a clone elsewhere keys it alike
        resolved = obj.resolve()
        tag("path", str(resolved.relative_to(PACKAGE.parent) if resolved.is_relative_to(PACKAGE.parent) else obj)
            .encode())
        if obj.is_file():
            tag("file", hashlib.sha256(obj.read_bytes()).digest())
    else:
        raise TypeError(f"figure_key: cannot key an argument of type {type(obj).__name__}")


#: The libraries whose versions key every figure (:func:`figure_key`; ``constraints.txt`` pins them).
KEYED_LIBRARIES = ("matplotlib", "seaborn", "pandas")


def figure_key(draw: Callable, args: tuple = (), kwargs: dict | None = None, dpi: float = 150) -> str:
    """The content key of the figure ``draw(*args, **kwargs)`` as :func:`ddrl.report.reporter.save_figure` saves it: the
    function's name, matplotlib's, seaborn's and pandas' versions, the rcParams in force (the style), the resolution
    it is saved at (``dpi``), and the content of the arguments (:func:`_feed`). The code it runs is not in the key:
    :func:`watch` notes it while the figure is drawn and :func:`code_deps` records it beside the stored figure. Only a
    function of the ddrl package is keyed (its code is what :func:`watch` follows), and only one that draws from its
    arguments alone, reading no file itself. Raises TypeError for any other function or an argument it cannot read."""
    module, name = getattr(draw, "__module__", None) or "", getattr(draw, "__qualname__", "")
    if not module.startswith("ddrl.") or "<" in name:
        raise TypeError(f"figure_key: {module}.{name} is not a function of the ddrl package")
    h = hashlib.sha256()
    mpl = sys.modules.get("matplotlib")
    rc = mpl and {k: repr(v) for k, v in sorted(mpl.rcParams.items()) if k not in _RC_NOT_DRAWN}
    versions = {p: version(p) for p in KEYED_LIBRARIES}
    _feed(h, [f"{module}.{name}", versions, rc, dpi])
    _feed(h, list(args))
    _feed(h, dict(sorted((kwargs or {}).items())))
    return h.hexdigest()


#: Files opened while :func:`watch` runs a function (None otherwise), noted by :func:`_note_open`.
_OPENED: list | None = None
_HOOKED: list = []  # the audit hook, once installed (a hook cannot be removed)


def _note_open(event: str, args: tuple) -> None:
    """An audit hook (``sys.addaudithook``): notes each file opened while :func:`watch` runs a function."""
    if event == "open" and _OPENED is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED.append(os.fsdecode(args[0]))


def reads_while(fn: Callable, *args, **kwargs) -> tuple[Any, list[str]]:
    """``(fn(*args, **kwargs), the data files it opened)``: every file opened while it ran (an audit hook watches)
    but the installed packages' own (fonts, matplotlib's cache, the standard library)."""
    global _OPENED
    if not _HOOKED:
        sys.addaudithook(_note_open)
        _HOOKED.append(_note_open)
    _OPENED = []
    try:
        value = fn(*args, **kwargs)
    finally:
        opened, _OPENED = _OPENED, None
    mpl = sys.modules.get("matplotlib")
    own = tuple(str(Path(p).resolve()) + os.sep
                for p in {sys.prefix, sys.base_prefix, *([mpl.get_cachedir()] if mpl else [])})
    return value, [f for f in dict.fromkeys(opened) if not str(Path(f).resolve()).startswith(own)]


def _package_file(obj: Any) -> str | None:
    """The path relative to :data:`PACKAGE` of the ddrl module that defines ``obj`` (a module, function or class),
    None for anything else."""
    if isinstance(obj, types.ModuleType):
        f = getattr(obj, "__file__", None)
    elif isinstance(obj, types.FunctionType):
        f = obj.__code__.co_filename
    else:
        mod = sys.modules.get(getattr(obj, "__module__", None) or "") if isinstance(obj, type) else None
        f = getattr(mod, "__file__", None)
    if not f or not str(Path(f).resolve()).startswith(str(PACKAGE) + os.sep):
        return None
    return str(Path(f).resolve().relative_to(PACKAGE))


def _names(code: types.CodeType) -> set[str]:
    """Every global and attribute name ``code`` and the code nested in it (lambdas, comprehensions, inner functions)
    mention."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def reachable_modules(fn: Callable) -> list[str]:
    """The ddrl modules whose code ``fn`` can run, found without running it: ``fn``'s own, and, from every name its
    code mentions, resolved in its globals (and ``ddrl.<name>`` among the loaded modules, for a module imported
    inside a function), each ddrl function, class (its methods) and module (each of its attributes the code names)
    in turn, to the end. Over-counts (a branch never taken) rather than under; what it cannot see is a method
    called on an object that reaches the function as an argument or a return value of a class it never names."""
    files, seen, stack = set(), set(), [fn]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or (rel := _package_file(obj)) is None:
            continue
        seen.add(id(obj))
        files.add(rel)
        if isinstance(obj, type):
            for v in vars(obj).values():
                v = getattr(v, "__func__", v)  # staticmethod, classmethod
                stack.extend([v.fget, v.fset] if isinstance(v, property) else [v])
        elif isinstance(obj, types.FunctionType):
            names = _names(obj.__code__)
            stack.extend(c.cell_contents for c in obj.__closure__ or () if _filled(c))
            for n in names:
                for v in (obj.__globals__.get(n), sys.modules.get(f"ddrl.{n}"), sys.modules.get(n)):
                    if isinstance(v, types.ModuleType) and _package_file(v) is not None:
                        files.add(_package_file(v))
                        stack.extend(getattr(v, a) for a in names if isinstance(getattr(v, a, None),
                                                                             (types.FunctionType, type)))
                    elif isinstance(v, (types.FunctionType, type)):
                        stack.append(v)
    return sorted(files)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


_SHA: dict[str, tuple[tuple[int, int], str]] = {}  # path -> ((mtime_ns, size), sha256), this process's reads


def file_sha(rel: str) -> str | None:
    """sha256 of the bytes of the ddrl module ``rel`` (a path relative to :data:`PACKAGE`), None where there is none;
    read again whenever its modification time or size changed."""
    p = PACKAGE / rel
    try:
        st = p.stat()
    except FileNotFoundError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    if rel not in _SHA or _SHA[rel][0] != stamp:
        _SHA[rel] = (stamp, hashlib.sha256(p.read_bytes()).hexdigest())
    return _SHA[rel][1]


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
                and isinstance(node.body[0].value.value, str)):
            node.body = node.body[1:] or [ast.Pass()]
    return tree


@functools.lru_cache(maxsize=None)
def _code_sha(rel: str, sha: str) -> str:
    tree = _without_docstrings(ast.parse((PACKAGE / rel).read_bytes()))
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def module_sha(rel: str) -> str | None:
    """sha256 of the *code* of the ddrl module ``rel``: its syntax tree without docstrings, comments, line numbers or
    layout, so an edit of its prose leaves every figure it serves stored (~5 ms a module; None where there is none).
    Byte-level: :func:`file_sha`."""
    sha = file_sha(rel)
    return None if sha is None else _code_sha(rel, sha)


@functools.lru_cache(maxsize=None)
def _imports(rel: str, sha: str) -> tuple[str, ...]:
    """The ddrl modules the module ``rel`` (at content ``sha``) imports anywhere in its code, as paths relative to
    :data:`PACKAGE` (``from ddrl import x``, ``from ddrl.x import y``, ``import ddrl.x``, relative imports)."""
    names = set()
    for node in ast.walk(ast.parse((PACKAGE / rel).read_bytes())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("ddrl.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative to the module's own package (ddrl, or a subpackage such as ddrl.testbed)
                package = ["ddrl", *Path(rel).parent.parts][:max(1, len(Path(rel).parent.parts) + 2 - node.level)]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base == "ddrl" or base.startswith("ddrl."):
                names.add(base)
                names |= {f"{base}.{a.name}" for a in node.names}  # `from ddrl import x`: x may be a module
    found = []
    for n in sorted(names):
        parts = n.split(".")[1:]
        for cand in (Path(*parts).with_suffix(".py"), Path(*parts, "__init__.py")) if parts else ():
            if (PACKAGE / cand).is_file():
                found.append(str(cand))
                break
    return tuple(found)


def code_deps(fn: Callable) -> dict[str, str]:
    """``{module: sha256}`` of the code the figure function ``fn`` depends on: each ddrl module whose code it can run
    (:func:`reachable_modules`) and each ddrl module those import (the constants they read), sorted by path."""
    ran = reachable_modules(fn)
    deps = set(ran)
    for rel in ran:
        if (sha := module_sha(rel)) is not None:
            deps.update(_imports(rel, sha))
    return {rel: module_sha(rel) for rel in sorted(deps)}


def file_shas(deps: dict[str, str]) -> dict[str, str | None]:
    """:func:`file_sha` of every module of ``deps``: what :func:`deps_current` checks first."""
    return {rel: file_sha(rel) for rel in deps}


def deps_current(deps: dict[str, str], files: dict[str, str] | None = None) -> bool:
    """Whether every module of ``deps`` (:func:`code_deps`) still has the recorded code: a module whose bytes are
    still ``files``' (:func:`file_shas`, recorded beside) is, without parsing it; any other is parsed and compared."""
    files = files or {}
    return all((rel in files and file_sha(rel) == files[rel]) or module_sha(rel) == sha for rel, sha in deps.items())
