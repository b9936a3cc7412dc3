"""The parameters of notebooks 01-05 that name something of the repository: a dataset, claims of the study, the
regimes they were decided in, runs to rerun. Checked before any work, in well under a second, by
:mod:`ddrl.run.params` (issue 98): each error names the parameter and the values allowed.

The notebooks read these through :mod:`ddrl.data` and :mod:`ddrl.study.lesson`, which import pandas and torch
(seconds), and the run layer does not import the study (``tests/test_structure.py``); the checks here read the same
files (the data registry, the committed claim entries, the committed per-run CSVs) with the standard library, and
``tests/test_study_params.py`` holds them to the modules the notebooks use: the same datasets, the same paired
claims, the same committed cells, the same reading of a rerun line, the same CSV of a registered run.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Sequence

import yaml

from ddrl.infra.storage import REPO

RESULTS = REPO / "results"
#: The data registry :mod:`ddrl.data` reads (``data/registry.yaml``; the copy beside the package when installed).
REGISTRIES = (REPO / "data" / "registry.yaml", Path(__file__).resolve().parents[1] / "registry.yaml")
#: Where claims decided in an amendment are committed (``ddrl.study.lesson.AMENDMENT_ENTRIES``).
AMENDMENT_FOLDER = "small_lr"
#: The study's paired pass@1 claims, the ids ``study_claims`` takes: ``ddrl.study.plan.PAIRED``'s keys (a test
#: checks they agree).
PAIRED_CLAIMS = ("P1", "P2", "M1", "M2", "A1", "A2", "A3", "C1", "T1", "R1", "H1", "H1x", "H1xT", "H1xD", "H1xC",
                 "H1xR", "H1xB", "H1xA", "H1xN", "H1xP")
#: The design whose runs are results/runs/ (``ddrl.study.rerun``'s ``registered``).
REGISTERED = "registered"


@functools.lru_cache(maxsize=None)
def dataset_names() -> tuple[str, ...]:
    """The datasets ``ddrl.data.load_dataset`` knows: the entries of the data registry."""
    for path in REGISTRIES:
        if path.is_file():
            return tuple(sorted((yaml.safe_load(path.read_text()) or {}).get("datasets", {})))
    return ()


def paired_claims() -> tuple[str, ...]:
    """The paired pass@1 claims of the study (:data:`PAIRED_CLAIMS`), the ids ``study_claims`` takes."""
    return PAIRED_CLAIMS


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
    return registered_rule(v)


def registered_csv(regime: str, method: str, seed: int, results: Path = RESULTS) -> Path:
    """The per-question CSV of a registered run (``ddrl.study.plan.csv_path`` under ``results/runs``)."""
    return results / "runs" / regime / f"{method}-seed{seed:02d}.csv.gz"


def registered_rule(v) -> str | None:
    """Every rerun of the registered design names a committed run (its CSV is there); the other designs' runs
    (``wide``, ``small_lr``, ...) are found by ``ddrl.study.rerun.locate`` in the notebook, which says in its rerun
    table why a run is not rerun."""
    for spec in v:
        design, regime, method, seed, _ = parse_rerun(spec)
        path = registered_csv(regime, method, seed)
        if design == REGISTERED and not path.is_file():
            folder = path.parent
            seeds = sorted(int(p.name.removesuffix(".csv.gz").rsplit("-seed", 1)[1]) for p in
                           folder.glob(f"{method}-seed[0-9][0-9].csv.gz")) if folder.is_dir() else []
            there = (f"its committed seeds: {seeds}" if seeds else f"committed regimes: "
                     f"{sorted(p.name for p in folder.parent.iterdir() if p.is_dir())}" if not folder.is_dir() else
                     f"methods of {regime}: {sorted({p.name.rsplit('-seed', 1)[0] for p in folder.glob('*.csv.gz')})}")
            return f"committed runs; {spec!r}: {path.relative_to(REPO)} is not there ({there})"
    return None


def cells_rule(claims: Sequence[str], regimes: Sequence[str]) -> str | None:
    """``study_claims`` x ``study_regimes`` must hold a committed cell, or the decided table has no row."""
    if committed_cells(claims, regimes):
        return None
    where = {c: sorted(r for cc, r in committed_entries() if cc == c) for c in claims}
    return f"claims and regimes with at least one committed entry; the regimes of these claims: {where}"
