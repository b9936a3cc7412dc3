"""Shared fixtures: where the real data lies, and the test tiers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """``$DDRL_SHARED_DATA`` or ``../shared/data`` beside the repository (never committed)."""
    return Path(os.environ.get("DDRL_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    d = shared_data_dir()
    if not (d / "MATH-TTT" / "test.json").is_file():
        pytest.skip(f"real benchmark data not found at {d} (set DDRL_SHARED_DATA or place shared/ beside the repo)")
    return d
