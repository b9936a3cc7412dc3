"""Nothing lost (issue 82): every claim entry committed under ``results/`` is regenerated from the committed per-run
CSVs by today's code, with the same estimate, interval and verdict.

:data:`REGENERATE` names, for each committed analysis holding claim entries, the computation that writes it. The
test walks the committed JSON, finds every entry (a dict with a ``verdict``) at its place, and compares it with the
entry at the same place in the recomputed analysis, then the whole analysis (floats to 1e-9). A committed analysis
with entries that no row regenerates fails the coverage test, so a new results file cannot slip past unchecked. No
training and no torch: reading CSVs and bootstrapping only. The bootstrap's draws make it slow (~4 s per entry on
these 2 cores: a multinomial draw per cell of a 10-seed x 1,536-question matrix, 4,000 times), so it is its own tier,
``make test-study``; the per-module recomputations it replaced were deleted."""

from __future__ import annotations

import json

import pytest
from conftest import same_json

from ddrl.infra.storage import REPO
from ddrl.study.strength import CORRECTION

RESULTS = REPO / "results"
#: The fields an entry is compared on: the estimate and its interval to 1e-9 (a least-squares fit's last digits
#: differ between CPU families' BLAS), the verdict and the sample sizes exactly.
FLOATS = ("estimate", "ci_low", "ci_high", "half_width", "predicted")
EXACT = ("id", "regime", "verdict", "n_seeds", "arm")


def _table(committed: bool = True) -> dict:
    """The designs of :data:`ddrl.study.designs.DESIGNS` whose analysis is committed (or, ``committed=False``, those
    declared before their runs): each analysis by the one generic computation (:func:`ddrl.study.runner.analyse`)."""
    from ddrl.study.designs import DESIGNS
    from ddrl.study.runner import analyse

    return {d.analysis.relative_to(RESULTS).as_posix(): (lambda d=d: analyse(d)) for d in DESIGNS.values()
            if d.committed == committed}


#: committed analysis (relative to results/) -> its design's analysis (every committed analysis is a row of DESIGNS)
REGENERATE = _table()
#: the rows declared before their runs (a registered stage's): nothing to regenerate yet, each skipped by name
DECLARED = _table(committed=False)

#: The number of claim entries committed (results/**/*.json, every dict with a ``verdict``): the 297 of issue 82,
#: then Stage 3's 39 (13 entries x 3 regimes, results/rewards/, issue 97).
COMMITTED_ENTRIES = 297 + 39


def entries(obj, where: tuple = ()) -> dict[tuple, dict]:
    """Every claim entry (a dict with a ``verdict``) in a JSON value, by its place (keys and list positions)."""
    if isinstance(obj, dict):
        if "verdict" in obj:
            return {where: obj}
        return {k: v for key, sub in obj.items() for k, v in entries(sub, where + (key,)).items()}
    if isinstance(obj, list):
        return {k: v for i, sub in enumerate(obj) for k, v in entries(sub, where + (i,)).items()}
    return {}


def committed_analyses() -> dict[str, dict[tuple, dict]]:
    """Each committed JSON under results/ that holds claim entries (not the per-run KL files or base builds)."""
    out = {}
    for p in sorted(RESULTS.rglob("*.json")):
        if "base_models" in p.parts or p.name.endswith("-kl.json") or p == RESULTS / CORRECTION:
            continue  # the correction beside the registered entries: test_the_correction_regenerates
        got = entries(json.loads(p.read_text()))
        if got:
            out[p.relative_to(RESULTS).as_posix()] = got
    return out


def differences(got: dict[tuple, dict], want: dict[tuple, dict]) -> list[str]:
    """What differs between recomputed and committed entries: a missing or extra place, an exact field, a float."""
    diffs = [f"{w}: not regenerated" for w in want if w not in got] + [f"{g}: new" for g in got if g not in want]
    for w, e in want.items():
        g = got.get(w)
        if g is None:
            continue
        diffs += [f"{w} {e.get('id')} {k}: {g.get(k)!r} != {e[k]!r}" for k in EXACT if k in e and g.get(k) != e[k]]
        diffs += [f"{w} {e.get('id')} {k}: {g.get(k)!r} != {e[k]!r}" for k in FLOATS
                  if isinstance(e.get(k), float) and not (g.get(k) == pytest.approx(e[k], rel=1e-9, abs=1e-9, nan_ok=True))]
    return diffs


def test_every_committed_entry_has_a_regeneration_and_they_are_all_counted():
    committed = committed_analyses()
    assert sorted(set(committed) - set(REGENERATE)) == [], "committed claim entries no row of REGENERATE recomputes"
    assert sorted(set(REGENERATE) - set(committed)) == [], "a REGENERATE row names no committed analysis"
    assert sum(map(len, committed.values())) == COMMITTED_ENTRIES


@pytest.mark.regenerate
@pytest.mark.parametrize("name", sorted(REGENERATE) + sorted(DECLARED))
def test_committed_entries_regenerate_from_the_committed_csvs(name):
    """Every entry on estimate, interval, verdict and sample sizes (named differences first), then the whole analysis
    (levels, reproduced counts, checks, fits: what the results page and notebook 06 quote beside the entries)."""
    if name in DECLARED:
        pytest.skip(f"{name}: its design is declared before its runs; no committed analysis to regenerate yet")
    committed = json.loads((RESULTS / name).read_text())
    got = json.loads(json.dumps(REGENERATE[name]()))
    assert differences(entries(got), entries(committed)) == []
    assert same_json(got, committed)


@pytest.mark.regenerate
def test_the_correction_regenerates_from_the_committed_csvs():
    """results/multiplicity.json (``python -m ddrl.study correct``): the confirmatory family's p-values drawn again
    from the committed runs (each entry's draws checked against its committed interval), BH and Holm adjusted."""
    from ddrl.study.strength import correct

    committed = json.loads((RESULTS / CORRECTION).read_text())
    assert same_json(json.loads(json.dumps(correct(RESULTS))), committed)
