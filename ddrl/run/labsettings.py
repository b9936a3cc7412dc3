"""JupyterLab opens the paired ``notebooks/NN_*.py`` files as notebooks: ``make install`` runs this module.

    python -m ddrl.run.labsettings [--prefix PREFIX]

JupyterLab's default viewer for a ``.py`` file is the text editor; jupytext's lab extension (shipped with
jupytext >= 1.16) registers the viewer "Jupytext Notebook", and JupyterLab's document manager picks a file type's
default viewer from its ``defaultViewers`` setting. This module sets ``{"python": "Jupytext Notebook"}`` there as
a settings override of the environment: ``<prefix>/share/jupyter/lab/settings/overrides.d/ddrl.json``, one of the
per-package override files JupyterLab reads from its application directory (``sys.prefix``'s unless
``JUPYTERLAB_DIR`` says otherwise). So it applies to this virtual environment only, never touches the user's own
settings or the environment's ``overrides.json`` (which, like the user's settings, still wins). Double-clicking a
``.py`` file then opens it as a notebook; right-click > Open With > Editor still opens it as text.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PLUGIN = "@jupyterlab/docmanager-extension:plugin"
OVERRIDES = {PLUGIN: {"defaultViewers": {"python": "Jupytext Notebook"}}}


def overrides_path(prefix: str | Path = sys.prefix) -> Path:
    """This package's override file in the JupyterLab application directory of the environment at ``prefix``."""
    return Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.d" / "ddrl.json"


def write(prefix: str | Path = sys.prefix) -> Path:
    """Write :data:`OVERRIDES` to :func:`overrides_path` (replacing this package's file only); returns its path."""
    path = overrides_path(prefix)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(OVERRIDES, indent=2) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.run.labsettings", description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", default=sys.prefix, help="the environment's prefix (default: this Python's)")
    print(write(ap.parse_args(argv).prefix))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
