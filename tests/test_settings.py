"""ddrl.run.settings: a notebook's cell shows the knobs of its lesson; the rest are settings, set and checked by name."""

from __future__ import annotations

import ast

import pytest

from conftest import REPO
from ddrl.run import reproduce
from ddrl.run.params import ParameterError
from ddrl.run.settings import SETTINGS, flatten, nest, notebook_settings

NOTEBOOKS = reproduce.discover()
#: Most lines (not blank) a ``parameters`` cell may have, its tag line included (issue 95: "at most ~20 lines").
MAX_CELL_LINES = 22


def _cell_lines(nb) -> list[str]:
    src = (REPO / "notebooks" / f"{nb.stem}.py").read_text()
    cell = src.split('# %% tags=["parameters"]\n', 1)[1].split("\n# %%", 1)[0]
    return ['# %% tags=["parameters"]'] + [line for line in cell.splitlines() if line.strip()]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_parameters_cell_shows_the_lessons_knobs_in_at_most_22_lines(nb):
    lines = _cell_lines(nb)
    assert len(lines) <= MAX_CELL_LINES, f"{nb.stem}: {len(lines)} lines in its parameters cell:\n" + "\n".join(lines)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_settings_are_what_the_cell_does_not_show_and_the_notebook_reads_them(nb):
    cell = reproduce.cell_parameters(nb)
    if nb.stem not in SETTINGS:
        assert "settings" not in cell
        return
    assert ast.literal_eval(cell["settings"]) == {}, "the cell's settings default to the package's"
    assert not set(cell) & set(SETTINGS[nb.stem]), "a knob is either shown or a setting, never both"
    src = (REPO / "notebooks" / f"{nb.stem}.py").read_text()
    assert f'notebook_settings("{nb.stem}", settings' in src


def test_every_setting_of_every_preset_is_one_of_the_notebooks_knobs():
    """Preset files stay flat: each name is a cell parameter or a setting of that notebook (the runner refuses others)."""
    import yaml

    for path in sorted((REPO / "params").glob("*/*.yaml")):
        nb = REPO / "notebooks" / f"{path.stem}.ipynb"
        values = yaml.safe_load(path.read_text()) or {}
        assert set(values) <= set(reproduce.declared_parameters(nb)), path


def test_notebook_settings_fills_checks_and_names_what_is_wrong():
    s = notebook_settings("04_ablations", {"lr": "3e-4"}, n_adapted=32, seed=0, progress=False)
    assert s["lr"] == 3e-4 and s["episodes"] == SETTINGS["04_ablations"]["episodes"] and s["n_adapted"] == 32
    with pytest.raises(ParameterError, match=r"04_ablations: unknown setting\(s\) \['lrr'\]; its settings are"):
        notebook_settings("04_ablations", {"lrr": 1e-4})
    with pytest.raises(ParameterError, match="parameter episodes = 1.5: expected a whole number"):
        notebook_settings("04_ablations", {"episodes": 1.5})
    with pytest.raises(ParameterError, match="k_train <= n_votes"):
        notebook_settings("05_offpolicy_cost", {"k_train": 64, "n_votes": 8})
    with pytest.raises(ParameterError, match="parameters cell sets the others"):
        notebook_settings("03_test_time_training", {"episodes": 2}, episodes=4)
    with pytest.raises(ParameterError, match="expected a mapping"):
        notebook_settings("01_frequency_and_bayes", ["dataset"])


def test_the_runner_takes_settings_flat_or_nested_and_hands_them_over_nested():
    assert flatten({"settings": {"lr": 1e-4}, "episodes": 2}, "x.yaml") == {"lr": 1e-4, "episodes": 2}
    with pytest.raises(ParameterError, match=r"x.yaml: \['lr'\] given both by name and inside settings"):
        flatten({"settings": {"lr": 1e-4}, "lr": 3e-4}, "x.yaml")
    assert nest("04_ablations", {"n_adapted": 8, "lr": 1e-4, "preset": "smoke"}) == {
        "n_adapted": 8, "preset": "smoke", "settings": {"lr": 1e-4}}
    assert nest("06_claims", {"preset": "smoke"}) == {"preset": "smoke"}
    nb = REPO / "notebooks" / "04_ablations.ipynb"
    params = reproduce.resolve_parameters(nb, {"settings": {"lr": "1e-4"}, "n_adapted": 8}, {"episodes": 1}, "test",
                                          deferred=False)
    assert params == {"lr": 1e-4, "n_adapted": 8, "episodes": 1}
    with pytest.raises(ParameterError, match=r"unknown parameter\(s\) \['lrr'\]"):
        reproduce.resolve_parameters(nb, {"settings": {"lrr": 1e-4}}, {}, "test", deferred=False)
