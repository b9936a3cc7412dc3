"""Hostile inputs (issue 85): the vote and the grader on long numbers, parameters refused by name before
any work, progress side files removed on every exit path."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from fractions import Fraction
from pathlib import Path

import pytest

from ddrl.answers import (
    MAX_NUMBER_DIGITS,
    grade_answers,
    is_equivalent,
    plain_number,
    voting_key,
)
from ddrl.run import params as P
from ddrl.infra import progress
from ddrl.run import reproduce
from ddrl.infra.datafiles import ChecksumError, DataFile, read_verified
from ddrl.voting import count_votes, majority_vote

# ------------------------------------------------------------------------ long numbers (deliverable 3)

# 4,300 digits is the longest that Python converts to int by default; 4,301 raised ValueError before.
LENGTHS = [MAX_NUMBER_DIGITS, MAX_NUMBER_DIGITS + 1, 100_000]


def test_the_bound_is_pythons_default_int_string_limit() -> None:
    import sys

    assert MAX_NUMBER_DIGITS == sys.int_info.default_max_str_digits


@pytest.mark.parametrize("n", LENGTHS)
def test_voting_key_never_raises_on_long_numbers(n: int) -> None:
    d = "1" * n
    assert voting_key(d) == d
    assert voting_key(f"\\boxed{{{d}.0}}") == d
    for answer in (f"\\frac{{{d}}}{{3}}", f"\\dfrac{{3}}{{{d}}}", f"2\\frac{{1}}{{{d}}}", f"{d}\\frac{{1}}{{2}}", f"{d}/{d}"):
        assert isinstance(voting_key(answer), str)


def test_numbers_up_to_the_bound_are_read_exactly_as_before() -> None:
    d = "1" * MAX_NUMBER_DIGITS
    assert voting_key(f"\\frac{{{d}}}{{3}}") == f"{d}/3"
    assert plain_number(d) == Fraction(int(d))
    assert plain_number(f"-{d}.{d}") == -(int(d) + Fraction(int(d), 10**MAX_NUMBER_DIGITS))
    assert plain_number(f"{d}/7") == Fraction(int(d), 7)
    # A mixed number whose improper numerator has exactly 4,300 digits is still a/b; one more digit is text.
    nines = "9" * (MAX_NUMBER_DIGITS // 2)
    assert voting_key(f"{nines}\\frac{{1}}{{{nines}}}") == f"{int(nines) ** 2 + 1}/{nines}"
    longer = f"{nines}9\\frac{{1}}{{{nines}}}"
    assert voting_key(longer) == longer


@pytest.mark.parametrize("n", LENGTHS[1:])
def test_numbers_beyond_the_bound_are_text(n: int) -> None:
    d = "1" * n
    assert plain_number(d) is None and plain_number(f"{d}/3") is None and plain_number(f"0.{d}") is None
    assert voting_key(f"\\frac{{{d}}}{{3}}") == f"\\frac{{{d}}}{{3}}"


@pytest.mark.parametrize("n", LENGTHS)
def test_is_equivalent_and_grade_answers_never_raise_on_long_numbers(n: int) -> None:
    d = "1" * n
    assert is_equivalent(d, f"\\boxed{{{d}.0}}")  # one voting key
    assert not is_equivalent(d, "2")
    assert not is_equivalent("2", d)
    assert grade_answers([d, "2", f"0{d}", None], d) == [True, False, True, False]


@pytest.mark.parametrize("n", LENGTHS)
def test_the_vote_never_raises_on_long_numbers(n: int) -> None:
    d = "1" * n
    vote = majority_vote([d, "2", d, None])
    assert (vote.label, vote.label_count, vote.counts, vote.tied) == (d, 2, [2, 1, 2, 0], False)
    assert count_votes([voting_key(a) for a in (d, d, "2")]).label == d


def test_acceptance_majority_vote_on_5000_digit_answers() -> None:
    d = "1" * 5000
    vote = majority_vote([d, d, "2"])
    assert (vote.label, vote.label_count, vote.counts, vote.keys) == (d, 2, [2, 2, 1], [d, d, "2"])


# ------------------------------------------------------------------------ parameters (deliverable 5)

REPO = Path(__file__).resolve().parents[1]
#: A refusal comes before any work: the runner's own start (imports, reading the notebooks) and the checks.
REFUSAL_S = 5.0


def refused(capsys, tmp_path, *argv: str) -> str:
    """Run the runner's main() on ``argv``; assert it refused (exit 2) in seconds without making its output
    directory, and return what it printed on stderr."""
    out = tmp_path / "out"
    t0 = time.perf_counter()
    rc = reproduce.main(["--preset", "smoke", "--output-dir", str(out), *argv])
    took = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert rc == 2, err
    assert took < REFUSAL_S, took
    assert not out.exists()
    return err


def test_acceptance_cor_keep_above_cor_m_is_refused_by_name_through_the_cli(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "ddrl.run.reproduce", "--preset", "smoke", "-p", "cor_keep", "100",
                          "--output-dir", str(tmp_path / "out")], check=False, capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "cor_keep = 100 and cor_m = 8 do not fit together: expected cor_keep <= cor_m" in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "out").exists()
    assert time.perf_counter() - t0 < 30  # the interpreter's start included, on a loaded 2-core machine


def test_acceptance_broken_yaml_in_a_parameter_is_refused_by_name(capsys, tmp_path):
    err = refused(capsys, tmp_path, "-p", "seeds", "[0, 1")
    assert "-p seeds '[0, 1': not valid YAML: line 1" in err and "Traceback" not in err


@pytest.mark.parametrize("argv, expected", [
    (["--only", "03", "-p", "cor_keep", "9"], "cor_keep = 9 and cor_m = 8 do not fit together"),
    (["--only", "03", "-p", "prompts_per_step", "5"], "prompts_per_step = 5 and n_adapted = 4 do not fit together"),
    (["--only", "02", "-p", "k", "65"], "k = 65 and n_samples = 64 (default) do not fit together"),
    (["--only", "02", "-p", "table1_k_train", "17"], "table1_k_train = 17 and table1_n_votes = 16 do not fit"),
    (["--only", "01", "-p", "ambiguous_lo", "0.9"], "ambiguous_lo = 0.9 and ambiguous_hi = 0.8 (default) do not fit"),
    (["--only", "05", "-p", "extra_rl_lr", "{a: 1}"], "parameter extra_rl_lr = {'a': 1}: expected a number"),
    (["--only", "06", "-p", "study_scale", "nope"], "parameter study_scale = 'nope': expected one of ['default', 'smoke']"),
    (["--only", "06", "-p", "study_regimes", "[1]"], "parameter study_regimes = [1]"),
    (["--only", "01", "-p", "bands", "[[5, 1]]"], "parameter bands = [[5, 1]]"),
    (["--only", "03", "-p", "paper_settings", "{a: 1}"], "parameter paper_settings = {'a': 1}"),
    (["--only", "03", "-p", "device", "[cuda]"], "parameter device = ['cuda']"),
    (["--only", "03", "-p", "methods", "[[ttrl]]"], "parameter methods = [['ttrl']]"),
])
def test_bad_values_and_combinations_are_refused_by_name(capsys, tmp_path, argv, expected):
    err = refused(capsys, tmp_path, *argv)
    assert expected in err, err


#: Each parameter the notebooks declare, with the first notebook (its number) that declares it.
DECLARED = {name: nb.stem[:2] for nb in reversed(reproduce.discover()) for name in reproduce.declared_parameters(nb)
            if name not in reproduce.RUNNER_PARAMS}


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_every_declared_parameter_refuses_a_mapping_without_crashing(capsys, tmp_path, name):
    """A YAML mapping fits no parameter: each is refused naming the parameter (the checker never crashes)."""
    err = refused(capsys, tmp_path, "--only", DECLARED[name], "-p", name, "{a: 1}")
    assert f"parameter {name} = {{'a': 1}}" in err, err


def test_the_study_scales_the_checker_knows_are_the_studys():
    from ddrl.study.plan import SCALES

    assert set(P.STUDY_SCALES) == set(SCALES)


def test_a_cuda_device_on_a_machine_without_one_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(P, "CUDA_DRIVER_PATHS", (str(tmp_path / "no-driver"),))
    err = refused(capsys, tmp_path, "--only", "03", "-p", "device", "cuda")
    assert "parameter device = 'cuda'" in err and "no CUDA driver" in err
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert "hides every device" in P.no_cuda_reason()


def test_an_unknown_model_id_offline_is_refused_before_any_hub_call(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    err = refused(capsys, tmp_path, "--only", "01", "-p", "model", "nobody/no-such-model")
    assert "parameter model = 'nobody/no-such-model'" in err and "not cached" in err
    (tmp_path / "weights.bin").write_bytes(b"x")
    err = refused(capsys, tmp_path, "--only", "01", "-p", "model", str(tmp_path / "weights.bin"))
    assert "not a file" in err
    # A cached id passes; the cache is found where huggingface_hub looks for it.
    from huggingface_hub import try_to_load_from_cache

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    config = tmp_path / "hub" / "models--nobody--cached-model" / "snapshots" / "abc123" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text("{}")
    (tmp_path / "hub" / "models--nobody--cached-model" / "refs").mkdir()
    (tmp_path / "hub" / "models--nobody--cached-model" / "refs" / "main").write_text("abc123")
    assert try_to_load_from_cache("nobody/cached-model", "config.json", cache_dir=tmp_path / "hub") == str(config)
    assert P.check_parameter("01", "model", "nobody/cached-model", '"testbed"') == "nobody/cached-model"
    with pytest.raises(P.ParameterError, match="not cached"):
        P.check_parameter("01", "model", "nobody/no-such-model", '"testbed"')


def test_an_output_dir_that_is_a_file_is_refused(capsys, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    for target, expected in ((afile, "is a file, not a directory"), (afile / "below", "is a file, so no directory")):
        rc = reproduce.main(["--preset", "smoke", "--only", "03", "--output-dir", str(target)])
        assert rc == 2 and f"--output-dir {target}: " in (err := capsys.readouterr().err) and expected in err, err


def test_preset_file_errors_name_the_file_and_line(tmp_path):
    nb = reproduce.NOTEBOOK_DIR / "03_test_time_training.ipynb"
    (tmp_path / "smoke").mkdir()
    path = tmp_path / "smoke" / f"{nb.stem}.yaml"
    path.write_text("episodes: 1\nseeds: [0, 1\nlr: 3e-5\n")
    with pytest.raises(P.ParameterError, match=rf"{path}: not valid YAML: line \d+, column \d+: "):
        reproduce.load_preset("smoke", nb, params_dir=tmp_path)
    path.write_text("episodes: 1\nlr: 3e-5\nepisodes: 2\n")
    with pytest.raises(P.ParameterError, match=rf"{path}: not valid YAML: line 3, column 1: duplicate key 'episodes' "
                                               r"\(first given on line 1\)"):
        reproduce.load_preset("smoke", nb, params_dir=tmp_path)
    path.write_text("episodes: 1\nlr: 3e-5\n")
    assert reproduce.load_preset("smoke", nb, params_dir=tmp_path) == {"episodes": 1, "lr": "3e-5"}


def test_an_absurd_learning_rate_warns_and_still_runs(capsys, tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(reproduce, "run_batch", lambda args, plan, out_dir: ran.append(plan) or 0)
    rc = reproduce.main(["--preset", "smoke", "--only", "04", "-p", "lr", "1e6", "-p", "sweep_lrs", "[3e-5, 2.0]"])
    err = capsys.readouterr().err
    assert rc == 0 and ran
    assert "warning: 04_ablations: parameter lr = 1000000.0: a learning rate >= 1" in err, err
    assert "warning: 04_ablations: parameter sweep_lrs = 2.0: a learning rate >= 1" in err
    rc = reproduce.main(["--preset", "smoke", "--only", "04", "-p", "lr", "1e-4"])
    assert rc == 0 and "warning" not in capsys.readouterr().err


def test_a_gzip_with_a_damaged_stream_is_named(tmp_path):
    raw = b'{"a": 1}\n' * 3000
    data = bytearray(gzip.compress(raw, mtime=0))
    data[20] ^= 0xFF  # inside the deflate stream: zlib.error, not a gzip header or CRC error
    with pytest.raises(zlib.error):
        gzip.decompress(bytes(data))
    path = tmp_path / "test.json.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match=rf"{path}: not a valid gzip file \(error: .*\); expected a gzip'd copy of x/test\.json"):
        read_verified(path, DataFile("x/test.json", "https://example.invalid/x", "0" * 64))


# ------------------------------------------------------------------------ progress side files (deliverable 6)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """tempfile's directory moved to a fresh folder, so the progress files made here are the only ones there."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def planned_only_03(monkeypatch):
    monkeypatch.setattr(reproduce, "plan_batch", lambda preset, only, pairs, out_dir: [
        (reproduce.NOTEBOOK_DIR / "03_test_time_training.ipynb", {})])


@pytest.mark.parametrize("error", [RuntimeError("cell failed"), KeyboardInterrupt(), SystemExit(143)])
def test_the_progress_file_is_removed_whatever_ends_the_notebook(private_tmp, tmp_path, monkeypatch, error):
    seen = []

    def run_notebook(nb, params, out_dir, progress=True):
        seen.extend(private_tmp.glob("ddrl-progress-*.txt"))
        assert os.environ[reproduce.PROGRESS_FILE_ENV] == str(seen[0])
        raise error

    planned_only_03(monkeypatch)
    monkeypatch.setattr(reproduce, "run_notebook", run_notebook)
    argv = ["--preset", "smoke", "--output-dir", str(tmp_path / "out")]
    if isinstance(error, Exception):
        assert reproduce.main(argv) == 1
    else:
        with pytest.raises(type(error)):
            reproduce.main(argv)
    assert len(seen) == 1 and list(private_tmp.iterdir()) == []
    assert reproduce.PROGRESS_FILE_ENV not in os.environ and reproduce._ACTIVE == []


SIGTERM_SCRIPT = """
import sys, tempfile, time
tempfile.tempdir = sys.argv[1]
from ddrl.run import reproduce
def run_notebook(nb, params, out_dir, progress=True):
    print("running", flush=True)
    time.sleep(60)
reproduce.run_notebook = run_notebook
reproduce.plan_batch = lambda *a: [(reproduce.NOTEBOOK_DIR / "03_test_time_training.ipynb", {})]
sys.exit(reproduce.main(["--preset", "smoke", "--output-dir", sys.argv[2]]))
"""


def test_sigterm_removes_the_progress_file(private_tmp, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_SCRIPT, str(private_tmp), str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines = iter(proc.stdout.readline, "")
        assert any(line.strip() == "running" for line in lines)  # inside the notebook's LiveProgress block
        assert len(list(private_tmp.glob("ddrl-progress-*.txt"))) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        proc.kill()
    assert list(private_tmp.iterdir()) == []


def test_a_file_left_by_a_killed_runner_is_removed_by_the_next_batch(private_tmp, tmp_path):
    """kill -9 runs no cleanup; the next LiveProgress removes files whose runner pid is gone, and only those."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_SCRIPT, str(private_tmp), str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert any(line.strip() == "running" for line in iter(proc.stdout.readline, ""))
        proc.kill()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    (left,) = private_tmp.glob("ddrl-progress-*.txt")
    alive = private_tmp / f"ddrl-progress-04-pid{os.getpid()}-abc123.txt"  # a live runner's (this process)
    other = private_tmp / "ddrl-progress-notes.txt"  # no pid in the name: not ours to judge
    alive.write_text("")
    other.write_text("")
    with reproduce.LiveProgress("05", interval=60) as live:
        assert not left.exists() and alive.exists() and other.exists() and live.path.exists()
    assert sorted(p.name for p in private_tmp.iterdir()) == sorted([alive.name, other.name])


def test_a_bar_never_recreates_a_removed_progress_file(tmp_path, monkeypatch):
    path = tmp_path / "gone.txt"
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(path))
    for _ in progress.tqdm(range(3), desc="late", mininterval=0):
        pass
    assert not path.exists()
    path.write_text("")
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(path))
    monkeypatch.setattr(progress, "_streams", {})
    for _ in progress.tqdm(range(3), desc="bars", mininterval=0):
        pass
    assert progress.latest_bar(path).startswith("bars: 100% 3/3")


# ------------------------------------------------------------------------ a quiet batch log (issue 83.5)

QUIET_SCRIPT = """
import os, sys
from transformers.utils import logging
from ddrl.infra import progress
print("transformers bars:", logging.is_progress_bar_enabled())
for _ in progress.tqdm(range(4), desc="ours", mininterval=0):
    pass
print("ours:", progress.latest_bar(os.environ[progress.PROGRESS_FILE_ENV]))
"""


def test_the_kernel_environment_silences_third_party_bars_and_keeps_ours(tmp_path):
    """What a kernel (and every pool worker it starts) sees under the runner: transformers' "Loading weights" and
    "Writing model shards" bars off, the project's own bars still written to the progress file."""
    bars = tmp_path / "bars.txt"
    bars.write_text("")
    base = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    base.update(PYTHONPATH=str(REPO), **{progress.PROGRESS_FILE_ENV: str(bars)})
    run = subprocess.run([sys.executable, "-c", QUIET_SCRIPT], check=False, capture_output=True, text=True, timeout=300,
                         env={**base, **reproduce.KERNEL_ENV})
    assert "transformers bars: False" in run.stdout and "ours: ours: 100% 4/4" in run.stdout, run.stdout + run.stderr
    run = subprocess.run([sys.executable, "-c", QUIET_SCRIPT], check=False, capture_output=True, text=True, timeout=300, env=base)
    assert "transformers bars: True" in run.stdout, run.stdout + run.stderr  # on by default: the switch is what does it
