"""The verl tier's environment is its lock's (``make install-verl`` with ``ddrl/integrations/verl/constraints.txt``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("verl.protocol", reason="verl is not installed (optional extra; build .venv-verl, see docs/scaling_out.md)")

from packaging.markers import Marker  # noqa: E402

from ddrl.run import lockfile  # noqa: E402


def test_make_install_verl_installed_its_lock():
    """Where ``make install-verl`` built this environment with its lock (its stamp says so) and the lock's marker
    holds here, every pinned package is installed at its pinned version: nothing the verl tier tests with moved
    since ``make lock-verl``."""
    stamp = Path(sys.prefix) / ".ddrl-installed"
    if not stamp.is_file() or not stamp.read_text().strip().endswith("verl/constraints.txt"):
        pytest.skip(f"this environment ({sys.prefix}) was not built by `make install-verl` with its lock")
    lock = lockfile.read(lockfile.VERL_LOCK)
    if not Marker(next(iter(lock.values()))[1]).evaluate():
        pytest.skip("the verl lock is for another platform")
    wrong = lockfile.drift(lockfile.VERL_LOCK)
    assert not wrong, f"installed versions that are not the verl lock's (pinned, installed): {wrong}"
