"""What a drawn figure depends on, so a rerun can copy it instead of drawing it again
(:meth:`ddrl.reporting.Reporter.draw`).

:func:`figure_key` is the content key of ``draw(*args, **kwargs)`` as saved: the function, the source of every ddrl
module, the plotting libraries' versions, the style (rcParams) and the content of the arguments. It holds for a
function that draws from its arguments alone; :func:`reads_while` notes the data files a function opens while it
draws, so one that reads its own inputs is never stored under a key that does not hold them. numpy, pandas and
matplotlib are looked up, not imported (an argument of theirs, or a figure, means they are loaded): the module costs
:mod:`ddrl.reporting`, which every process imports, nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable

#: rcParams that change how a figure is shown, not what its saved files hold (left out of :func:`figure_key`).
_RC_NOT_DRAWN = ("backend", "backend_fallback", "interactive", "webagg.port", "webagg.open_in_browser")


def _feed(h, obj: Any) -> None:
    """Feed the content of ``obj`` to the hash ``h``, in order (a dict's order can decide a figure's panels):
    None, bools, numbers, strings, lists, tuples, dicts, numpy arrays and scalars, pandas frames and series,
    dataclasses (their fields), and paths (the path, and the bytes of a file). Anything else raises TypeError."""
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
    elif isinstance(obj, Path):
        tag("path", str(obj).encode())
        if obj.is_file():
            tag("file", hashlib.sha256(obj.read_bytes()).digest())
    else:
        raise TypeError(f"figure_key: cannot key an argument of type {type(obj).__name__}")


@functools.lru_cache(maxsize=1)
def _ddrl_source() -> str:
    """sha256 of every module of the ddrl package: a figure function may call any of them."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(here.rglob("*.py")):
        h.update(str(p.relative_to(here)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def figure_key(draw: Callable, args: tuple = (), kwargs: dict | None = None, dpi: float = 150) -> str:
    """The content key of the figure ``draw(*args, **kwargs)`` as :func:`ddrl.reporting.save_figure` saves it: the
    function's name, the source of every ddrl module, matplotlib's, seaborn's and pandas' versions, the rcParams in
    force (the style), the resolution it is saved at (``dpi``), and the content of the arguments (:func:`_feed`).
    Only a function of the ddrl package is keyed (its code is in the key), and only one that draws from its
    arguments alone, reading no file itself. Raises TypeError for any other function or an argument it cannot read."""
    module, name = getattr(draw, "__module__", None) or "", getattr(draw, "__qualname__", "")
    if not module.startswith("ddrl.") or "<" in name:
        raise TypeError(f"figure_key: {module}.{name} is not a function of the ddrl package")
    h = hashlib.sha256()
    mpl = sys.modules.get("matplotlib")
    rc = mpl and {k: repr(v) for k, v in sorted(mpl.rcParams.items()) if k not in _RC_NOT_DRAWN}
    versions = {p: version(p) for p in ("matplotlib", "seaborn", "pandas")}
    _feed(h, [f"{module}.{name}", _ddrl_source(), versions, rc, dpi])
    _feed(h, list(args))
    _feed(h, dict(sorted((kwargs or {}).items())))
    return h.hexdigest()


#: Files opened while :func:`reads_while` runs a function (None otherwise), noted by :func:`_note_open`.
_OPENED: list | None = None
_HOOKED: list = []  # the audit hook, once installed (a hook cannot be removed)


def _note_open(event: str, args: tuple) -> None:
    """An audit hook (``sys.addaudithook``): notes each file opened while :func:`reads_while` runs a function."""
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
