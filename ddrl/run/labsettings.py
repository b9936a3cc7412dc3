"""JupyterLab opens the paired ``notebooks/NN_*.py`` files as notebooks: ``make install`` runs this module.

    python -m ddrl.run.labsettings [--app-dir DIR]

JupyterLab's default viewer for a ``.py`` file is the text editor; jupytext's lab extension (shipped with
jupytext >= 1.16) registers the viewer "Jupytext Notebook", and JupyterLab's document manager picks a file type's
default viewer from its ``defaultViewers`` setting. This module sets ``{"python": "Jupytext Notebook"}`` there as
a settings override in JupyterLab's application directory (``<venv>/share/jupyter/lab``, or ``$JUPYTERLAB_DIR``):
``settings/overrides.d/ddrl.json``, one of the per-package override files JupyterLab's settings server reads. So
it applies to this environment only and touches neither the user's own settings nor the environment's
``overrides.json`` (both still win over it). Double-clicking a ``.py`` file then opens it as a notebook;
right-click > Open With > Editor still opens it as text.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jupyterlab.commands import get_app_dir

PLUGIN = "@jupyterlab/docmanager-extension:plugin"
OVERRIDES = {PLUGIN: {"defaultViewers": {"python": "Jupytext Notebook"}}}


def app_dir() -> Path:
    """JupyterLab's application directory for this Python, as JupyterLab resolves it (``$JUPYTERLAB_DIR`` first)."""
    return Path(get_app_dir())


def overrides_path(app: str | Path | None = None) -> Path:
    """This package's override file in the JupyterLab application directory ``app`` (default: :func:`app_dir`)."""
    return Path(app or app_dir()) / "settings" / "overrides.d" / "ddrl.json"


def write(app: str | Path | None = None) -> Path:
    """Write :data:`OVERRIDES` to :func:`overrides_path` (replacing this package's file only); returns its path."""
    path = overrides_path(app)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(OVERRIDES, indent=2) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.run.labsettings", description=__doc__.split("\n\n")[0])
    ap.add_argument("--app-dir", default=None, help="JupyterLab's application directory (default: this Python's)")
    print(write(ap.parse_args(argv).app_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
