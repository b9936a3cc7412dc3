"""The parameters of notebooks 01-05 that name something of the repository: a dataset, claims of the study, the
regimes they were decided in, runs to rerun. Checked before any work, in well under a second, by
:mod:`ddrl.run.params` (issue 98): each error names the parameter and the values allowed.

The notebooks read these through :mod:`ddrl.data` and :mod:`ddrl.study.lesson`, which import pandas and torch
(seconds); the checks here read the same files (the data registry, the committed claim entries) with the standard
library and :mod:`ddrl.study.plan` (a fraction of a second), and ``tests/test_study_params.py`` holds them to the
modules the notebooks use: the same datasets, the same committed cells, the same reading of a rerun line. Whether a
named run is committed (:func:`ddrl.study.rerun.locate`) is a deferred check: it imports the study's runner.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Sequence

import yaml

from ddrl.run.storage import REPO

RESULTS = REPO / "results"
#: The data registry :mod:`ddrl.data` reads (``data/registry.yaml``; the copy beside the package when installed).
REGISTRIES = (REPO / "data" / "registry.yaml", Path(__file__).resolve().parents[1] / "registry.yaml")
#: Where claims decided in an amendment are committed (``ddrl.study.lesson.AMENDMENT_ENTRIES``).
AMENDMENT_FOLDER = "small_lr"


@functools.lru_cache(maxsize=None)
def dataset_names() -> tuple[str, ...]:
    """The datasets ``ddrl.data.load_dataset`` knows: the entries of the data registry."""
    for path in REGISTRIES:
        if path.is_file():
            return tuple(sorted((yaml.safe_load(path.read_text()) or {}).get("datasets", {})))
    return ()


def paired_claims() -> tuple[str, ...]:
    """The paired pass@1 claims of the study (``ddrl.study.plan.PAIRED``), the ids ``study_claims`` takes."""
    from ddrl.study.plan import PAIRED  # ~0.15 s: plain data and the testbed's configuration, no torch

    return tuple(PAIRED)


@functools.lru_cache(maxsize=None)
def committed_entries(results: Path = RESULTS) -> tuple[tuple[str, str], ...]:
    """``(claim, regime)`` of every committed entry :func:`ddrl.study.lesson.committed_entry` finds: those of
    ``results/claims.json`` and the registered claims (no ``"a"`` field) of ``results/small_lr/*.json``."""
    cells = [(e["id"], e["regime"]) for e in json.loads((results / "claims.json").read_text())]
    for path in sorted((results / AMENDMENT_FOLDER).glob("*.json")):
        data = json.loads(path.read_text())
        cells += [(e.get("id"), e.get("regime")) for e in (data.get("entries", []) if isinstance(data, dict) else [])
                  if "a" not in e]
    return tuple(dict.fromkeys(cells))


def committed_regimes(results: Path = RESULTS) -> tuple[str, ...]:
    """The regimes some paired claim was decided in (a committed entry)."""
    paired = set(paired_claims())
    return tuple(sorted({r for c, r in committed_entries(results) if c in paired and isinstance(r, str)}))


def committed_cells(claims: Sequence[str], regimes: Sequence[str], results: Path = RESULTS) -> list[tuple[str, str]]:
    """The cells of ``claims`` x ``regimes`` with a committed entry, in order (as the notebooks' decided table)."""
    have = set(committed_entries(results))
    return [(c, r) for c in claims for r in regimes if (c, r) in have]


def parse_rerun(spec: str) -> tuple[str, str, str, int, int | None]:
    """``"DESIGN REGIME METHOD SEED [--steps K]"`` -> (design, regime, method, seed, K or None), or ValueError
    (``ddrl.study.lesson.parse_rerun``'s reading, which the notebooks use)."""
    words = spec.split()
    steps = None
    if len(words) == 6 and words[4] == "--steps" and words[5].isdigit() and int(words[5]) > 0:
        steps, words = int(words[5]), words[:4]
    if len(words) != 4 or not words[3].isdigit():
        raise ValueError(f"rerun {spec!r}: expected 'DESIGN REGIME METHOD SEED [--steps K]' (K >= 1), "
                         "e.g. 'registered aime_like no_adaptation 0'")
    return words[0], words[1], words[2], int(words[3]), steps


# --- the rules (:mod:`ddrl.run.params`): what is expected, or None --------------------------------------------------

def dataset_rule(v) -> str | None:
    names = dataset_names()
    return None if isinstance(v, str) and v in names else f"a dataset of the data registry, one of {list(names)}"


def claims_rule(v) -> str | None:
    known = paired_claims()
    bad = [c for c in v if c not in known]
    return f"a list of the study's paired claims {list(known)}; unknown: {bad}" if bad else None


def regimes_rule(v) -> str | None:
    known = committed_regimes()
    bad = [r for r in v if r not in known]
    return f"a list of regimes a claim was decided in {list(known)}; unknown: {bad}" if bad else None


def rerun_rule(v) -> str | None:
    form = ("a list of `python -m ddrl.study rerun` lines 'DESIGN REGIME METHOD SEED [--steps K]' (K >= 1), e.g. "
            "'registered aime_like no_adaptation 0'")
    for spec in v:
        try:
            parse_rerun(spec)
        except (ValueError, AttributeError):
            return f"{form}; not one: {spec!r}"
    return None


def rerun_committed_rule(v) -> str | None:
    """The deferred half: every rerun names a committed run (``ddrl.study.rerun.locate``; imports the runner)."""
    from ddrl.study.rerun import locate

    for spec in v:
        design, regime, method, seed, _ = parse_rerun(spec)
        try:
            locate(design, regime, method, seed)
        except ValueError as e:
            return f"runs that are committed; {spec!r}: {e}"
    return None


def cells_rule(claims: Sequence[str], regimes: Sequence[str]) -> str | None:
    """``study_claims`` x ``study_regimes`` must hold a committed cell, or the decided table has no row."""
    if committed_cells(claims, regimes):
        return None
    where = {c: sorted(r for cc, r in committed_entries() if cc == c) for c in claims}
    return f"claims and regimes with at least one committed entry; the regimes of these claims: {where}"
