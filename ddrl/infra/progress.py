"""Progress bars that show where they are looked at: widgets in JupyterLab, text lines in a batch run.

Every long loop in ``ddrl`` takes its bar from :func:`tqdm`. In a notebook opened by hand it is
``tqdm.auto`` (a widget). Under ``python -m ddrl.run.reproduce`` the runner sets ``$DDRL_PROGRESS_FILE`` in the
kernel's environment: the bars are then plain-text ``tqdm`` bars appended to that file, which the runner
reads and reports on the terminal at a fixed cadence (:func:`latest_bar`), so the executed notebooks do not
fill up with bar updates and a batch log shows what the kernel is doing.

The runner creates that file and removes it on every way out (:class:`ddrl.run.reproduce.LiveProgress`); a bar
never creates it, so a kernel or pool worker still drawing after the runner is gone leaves nothing behind
(its bars go to ``os.devnull``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm as auto_tqdm
from tqdm.std import tqdm as text_tqdm

PROGRESS_FILE_ENV = "DDRL_PROGRESS_FILE"
#: Seconds between two writes of one text bar (tqdm's ``mininterval``) in batch runs.
FILE_MININTERVAL = 1.0

#: Counts, rate and ETA without the bar graphic: one status line is short enough for a log.
FILE_BAR_FORMAT = "{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"

_streams: dict[str, Any] = {}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def tqdm(*args: Any, **kwargs: Any):
    """``tqdm.auto.tqdm(*args, **kwargs)``, or a text bar written to ``$DDRL_PROGRESS_FILE`` when that is set."""
    path = os.environ.get(PROGRESS_FILE_ENV)
    if not path:
        return auto_tqdm(*args, **kwargs)
    if path not in _streams:
        _streams[path] = _open_existing(path)
    kwargs.setdefault("mininterval", FILE_MININTERVAL)
    kwargs.setdefault("bar_format", FILE_BAR_FORMAT)
    return text_tqdm(*args, file=_streams[path], **kwargs)


def _open_existing(path: str):
    """``path`` opened for appending text, line-buffered, without creating it: when the runner has removed it (it
    ended), the stream is ``os.devnull``, so no stray progress file reappears."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except FileNotFoundError:
        return open(os.devnull, "w", encoding="utf-8")
    return open(fd, "a", encoding="utf-8", buffering=1)


def latest_bar(path: str | Path, since: int = 0, tail: int = 8192) -> str | None:
    """The most recent bar state written to a progress file after byte ``since`` (its last non-empty
    ``\\r``/newline-separated segment, escape codes removed), or None if nothing was written there."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(since, f.tell() - tail))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    segments = [s.strip() for s in re.split(r"[\r\n]", _ANSI.sub("", text)) if s.strip()]
    return segments[-1] if segments else None
