"""Issue 98: the study's and the data's names among the notebooks' parameters are checked before any work, in under a
second, by reading the repository's files (ddrl.run.study_params); here they are held to the modules the notebooks
use (ddrl.data, ddrl.study.lesson, ddrl.study.rerun), and each attack of the issue is refused by name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ddrl.run import study_params as SP
from ddrl.infra.storage import REPO


def test_the_datasets_are_ddrl_datas():
    from ddrl.data import DATASETS

    assert SP.dataset_names() == tuple(sorted(DATASETS))


def test_the_paired_claims_and_a_registered_runs_csv_are_the_studys():
    from ddrl.study import plan
    from ddrl.study.rerun import locate

    assert SP.PAIRED_CLAIMS == tuple(plan.PAIRED)
    for regime, method, seed in [("aime_like", "ttrl", 0), ("amc_like_small_lr", "ddrl", 3), ("math500_like", "x", 77)]:
        assert SP.registered_csv(regime, method, seed) == plan.csv_path(plan.RESULTS / "runs", regime, method, seed)
    assert SP.registered_csv("aime_like", "ttrl", 0) == locate("registered", "aime_like", "ttrl", 0).csv


def test_the_committed_cells_are_the_lessons():
    """Every claim x every regime: the cheap reading finds exactly the cells ddrl.study.lesson.committed_cells finds."""
    from ddrl.study import lesson

    claims = list(SP.paired_claims())
    regimes = sorted({r for _, r in SP.committed_entries()})
    assert SP.committed_cells(claims, regimes) == lesson.committed_cells(claims, regimes)
    assert set(SP.committed_regimes()) == {r for _, r in lesson.committed_cells(claims, regimes)}


def test_an_amendments_unregistered_entries_are_no_committed_cells(tmp_path):
    """A folder of results like the committed one: claims.json, and an amendment file with a registered entry and a
    comparison of its own (an ``"a"`` field): the lesson's cells, and the cheap reading's, are the registered ones."""
    import json

    from ddrl.study import lesson

    (tmp_path / "claims.json").write_text(json.dumps([{"id": "M1", "regime": "amc_like"}]))
    (tmp_path / "small_lr").mkdir()
    (tmp_path / "small_lr" / "x.json").write_text(json.dumps({"entries": [
        {"id": "M2", "regime": "amc_like_small_lr"}, {"id": "A1", "regime": "amc_like_small_lr", "a": "bcs"}]}))
    claims, regimes = ["M1", "M2", "A1"], ["amc_like", "amc_like_small_lr"]
    want = lesson.committed_cells(claims, regimes, results=tmp_path)
    assert want == [("M1", "amc_like"), ("M2", "amc_like_small_lr")]
    assert SP.committed_cells(claims, regimes, results=tmp_path) == want


@pytest.mark.parametrize("spec", ["registered aime_like no_adaptation 0", "registered amc_like ddrl 3 --steps 2",
                                  "nope", "a b c d --steps 0", "a b c 1 --steps 0", "a b c x", "a b c 1 --steps", "a b c 1 2 3", ""])
def test_a_rerun_line_is_read_as_the_lesson_reads_it(spec):
    from ddrl.study import lesson

    try:
        want = lesson.parse_rerun(spec)
    except ValueError:
        with pytest.raises(ValueError):
            SP.parse_rerun(spec)
        assert SP.rerun_rule([spec]) is not None
    else:
        assert SP.parse_rerun(spec) == want and SP.rerun_rule([spec]) is None


ATTACKS = {  # the four, as written, and a rerun of a run that is not committed (the deferred check)
    "study_regimes": (["-p", "study_regimes", "[nope_regime]"], "parameter study_regimes = ['nope_regime']: expected "
                      "a list of regimes a claim was decided in ['aime_like', 'amc_like'"),
    "dataset": (["-p", "dataset", "nope"], "parameter dataset = 'nope': expected a dataset of the data registry, one "
                "of ['aime2024', 'amc', 'math500'"),
    "study_claims": (["-p", "study_claims", "[ZZ9]"], "parameter study_claims = ['ZZ9']: expected a list of the "
                     "study's paired claims ['P1', 'P2', 'M1'"),
    "rerun": (["-p", "rerun", "[nope]"], "parameter rerun = ['nope']: expected a list of `python -m ddrl.study rerun` "
              "lines 'DESIGN REGIME METHOD SEED [--steps K]'"),
    "cells": (["-p", "study_claims", "[H1xP]", "-p", "study_regimes", "[aime_like]"], "name no committed claim"),
}


@pytest.mark.parametrize("name", ATTACKS)
def test_a_bad_study_or_dataset_parameter_is_refused_by_name_at_once(name, tmp_path):
    """Through the command line, as the issue ran them: exit 2 naming the parameter and the allowed values, no
    traceback, no output folder (the cheap pass refuses it: no torch, no pandas imported, see below)."""
    argv, said = ATTACKS[name]
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "ddrl.run.reproduce", "--preset", "smoke", "--only", "03",
                          "--output-dir", str(out), *argv], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 2, run.stderr
    assert said in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert not out.exists()


def test_the_cheap_pass_imports_neither_torch_nor_pandas():
    """What keeps the checks under a second on any machine: the cheap pass reads files and imports no heavy library
    (measured: 0.4 s for the whole command on 2 shared cores)."""
    code = ("import sys; from ddrl.run import reproduce, params; from pathlib import Path; "
            "nb = [n for n in reproduce.discover(['03'])][0]; "
            "reproduce.resolve_parameters(nb, reproduce.load_preset('smoke', nb), {}, source='x', deferred=False); "
            "print(sorted(m for m in ('torch', 'pandas', 'transformers') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_a_rerun_of_a_run_that_is_not_committed_is_refused_before_any_work(tmp_path, capsys):
    from ddrl.run import reproduce

    out = tmp_path / "out"
    rc = reproduce.main(["--preset", "smoke", "--only", "03", "--output-dir", str(out), "-p", "rerun",
                         "[registered aime_like ttrl 77]"])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err
    assert ("parameter rerun = ['registered aime_like ttrl 77']: expected committed runs; 'registered aime_like ttrl "
            "77': results/runs/aime_like/ttrl-seed77.csv.gz is not there (its committed seeds: [0, 1, 2, 3, 4, 5])") in err
