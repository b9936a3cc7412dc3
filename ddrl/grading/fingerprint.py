"""What a graded result depends on besides its inputs (:func:`grader_fingerprint`): every cached grade is keyed by it.
Beside the grading machinery it describes; moved out of the cache (issue 96) so the low-level cache imports nothing of the
paper's modules."""

from __future__ import annotations

import hashlib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ddrl import answers

#: The grading modules whose source is hashed into :func:`grader_fingerprint`: an edit there invalidates
#: every cached graded result, on top of :data:`ddrl.answers.GRADER_VERSION` (the one version number).
_GRADER_SOURCES = ("answers.py", "voting.py", "grading/grader_pool.py")


def grader_fingerprint() -> dict[str, Any]:
    """What a graded result depends on besides its inputs: :data:`ddrl.answers.GRADER_VERSION`, the
    math-verify version and the sha256 of the grading modules' source (``answers.py``, ``voting.py``,
    ``grader_pool.py``)."""

    try:
        mv = version("math-verify")
    except PackageNotFoundError:  # pragma: no cover
        mv = None
    here = Path(__file__).resolve().parents[1]  # the ddrl package
    src = hashlib.sha256(b"".join((here / f).read_bytes() for f in _GRADER_SOURCES)).hexdigest()[:16]
    return {"grader_version": answers.GRADER_VERSION, "math_verify": mv, "source": src}


