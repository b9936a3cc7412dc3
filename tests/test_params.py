"""Notebook parameters are coerced to their declared types and checked before any work (issue 19)."""

from __future__ import annotations

import time

import pytest

from ddrl.run import reproduce
from ddrl.run.params import ParameterError, check_parameter, check_parameters

NB03 = reproduce.NOTEBOOK_DIR / "03_test_time_training.ipynb"


@pytest.fixture(scope="module")
def declared03():
    return reproduce.declared_parameters(NB03)


def resolve(declared, **overrides):
    """What the runner does for ``--preset smoke --only 03 -p NAME VALUE`` (values as YAML strings)."""
    parsed = reproduce.parse_overrides([[k, v] for k, v in overrides.items()])
    return check_parameters("03_test_time_training", declared, {**reproduce.load_preset("smoke", NB03), **parsed})


def test_yaml_strings_are_coerced_to_the_declared_float(declared03):
    """YAML 1.1 reads ``1e-4`` as a string; the notebook declares ``lr = 3e-5``, a float."""
    assert reproduce.parse_overrides([["lr", "1e-4"]]) == {"lr": "1e-4"}
    params = resolve(declared03, lr="1e-4")
    assert params["lr"] == 1e-4 and isinstance(params["lr"], float)
    assert resolve(declared03, episodes="2.0")["episodes"] == 2  # a whole float is a whole number
    assert resolve(declared03, seeds="[3]")["seeds"] == [3]


@pytest.mark.parametrize("name, value, expected", [
    ("episodes", "1.5", "a whole number"),
    ("episodes", "0", "a whole number >= 1"),
    ("seeds", "[]", "a non-empty list of whole numbers"),
    ("seeds", "[0, 0]", "without repeats"),
    ("seeds", "[0, -1]", ">= 0"),
    ("methods", "[no_adaptation]", "at least one method with an RL run of its own"),
    ("methods", "[ttrl, bogus]", "unknown: ['bogus']"),
    ("lr", "fast", "a number"),
    ("lr", "-1e-4", "a number in (0"),
    ("lr", ".nan", "a number"),
    ("progress", "maybe", "true or false"),
    ("device", "gpu", '"cuda"'),
    ("data_dir", "/no/such/dir", "an existing directory"),
    ("testbed_preset", "huge", "['default', 'tiny', 'weak']"),
    ("paper_settings", "qwen", "ddrl.models presets"),
])
def test_bad_values_name_the_parameter_the_value_and_what_is_expected(declared03, name, value, expected):
    with pytest.raises(ParameterError) as e:
        resolve(declared03, **{name: value})
    msg = str(e.value)
    assert f"parameter {name} = " in msg and expected in msg, msg


def test_trainer_knobs_are_checked_together(declared03):
    with pytest.raises(ParameterError, match=r"k_train = 100 and n_votes = 8 do not fit together: expected k_train <= n_votes"):
        resolve(declared03, k_train="100")


def test_every_preset_file_passes_the_checks(monkeypatch):
    from ddrl.run import params

    # The files, not this machine: the paper preset asks for device cuda, which a CPU machine refuses (tested below).
    monkeypatch.setattr(params, "no_cuda_reason", lambda: None)
    monkeypatch.setitem(params.DEFERRED_RULES, "device", lambda v: None)
    monkeypatch.setattr(params, "_hub_id_missing", lambda repo_id: None)  # nor this machine's Hugging Face cache
    for preset in reproduce.PRESETS:
        notebooks = [nb for nb in reproduce.discover() if reproduce.preset_file(preset, nb).is_file()]
        # every notebook has a file in the presets that run them all; "study" is notebook 06's alone (--only 06)
        assert len(notebooks) == (1 if preset == "study" else len(reproduce.discover())), preset
        for nb in notebooks:
            reproduce.resolve_parameters(nb, reproduce.load_preset(preset, nb), {}, source=preset)


def test_check_parameter_is_type_driven():
    assert check_parameter("nb", "x", "3", '"a"') == "3"
    with pytest.raises(ParameterError, match="expected a string"):
        check_parameter("nb", "x", 3, '"a"')
    assert check_parameter("nb", "anything", [1, "a"], "None") == [1, "a"]  # no declared type: no check
    assert check_parameter("nb", "bands", [[1, 2], [3, 4]], "[[1, 4], [5, 12]]") == [[1, 2], [3, 4]]
    with pytest.raises(ParameterError, match="non-empty list of"):
        check_parameter("nb", "bands", [1, 2], "[[1, 4], [5, 12]]")


def test_the_runner_refuses_a_bad_value_before_any_work(capsys, tmp_path):
    """The command line of the issue: exit status 2 and one line naming the parameter, in seconds (no
    testbed build, no notebook started, no output directory made)."""
    t0 = time.perf_counter()
    rc = reproduce.main(["--preset", "smoke", "--only", "03", "-p", "episodes", "1.5", "--output-dir", str(tmp_path / "o")])
    assert rc == 2 and time.perf_counter() - t0 < 5
    assert "parameter episodes = 1.5: expected a whole number" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_paper_settings_refuses_a_learning_rate_it_would_replace(declared03):
    """With ``paper_settings`` the official scripts' trainer values replace the notebook's: a given ``lr`` is refused by
    name instead of being dropped (issue 96); the other knobs it keeps (``device``, ``cor_m``, ...) stay allowed."""
    with pytest.raises(ParameterError, match=r"paper_settings = 'qwen2.5-math-1.5b' and lr do not fit together"):
        resolve(declared03, paper_settings="qwen2.5-math-1.5b", lr="1e-6")
    assert resolve(declared03, paper_settings="qwen2.5-math-1.5b", cor_m="64")["cor_m"] == 64
    assert resolve(declared03, lr="1e-6")["lr"] == 1e-6
