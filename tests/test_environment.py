"""pyproject.toml and environment.yml name the same packages with compatible versions, and constraints.txt pins
them (the versions `make install` takes)."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from conftest import REPO

# conda-forge names that differ from PyPI names
CONDA_TO_PYPI = {"pytorch": "torch"}
NOT_PACKAGES = {"python", "pip"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_requirements() -> dict[str, Requirement]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = data["optional-dependencies"]
    reqs = list(data["dependencies"]) + list(extras["dev"]) + list(extras["browser"]) + list(extras["lora"])
    return {_norm(Requirement(r).name): Requirement(r) for r in reqs}


def environment_requirements() -> dict[str, Requirement]:
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    out = {}
    for dep in env["dependencies"]:
        items = dep["pip"] if isinstance(dep, dict) else [dep]
        for item in items:
            if item.startswith("-"):  # pip options such as --extra-index-url
                continue
            # conda uses "name>=x" or "name=x"; normalise a single "=" to "=="
            spec = re.sub(r"(?<![<>=!~])=(?!=)", "==", item.replace(" ", ""))
            req = Requirement(spec)
            name = _norm(CONDA_TO_PYPI.get(req.name, req.name))
            if name not in NOT_PACKAGES:
                out[name] = req
    return out


def test_same_packages():
    py, env = pyproject_requirements(), environment_requirements()
    assert sorted(set(py) - set(env)) == [], "in pyproject.toml but not environment.yml"
    assert sorted(set(env) - set(py)) == [], "in environment.yml but not pyproject.toml"


def test_compatible_versions():
    py, env = pyproject_requirements(), environment_requirements()
    for name in py:
        assert str(py[name].specifier) == str(env[name].specifier), (
            f"{name}: pyproject.toml says {py[name].specifier!s}, environment.yml says {env[name].specifier!s}"
        )


def test_installed_versions_satisfy_both():
    """The environment the tests run in satisfies the declared ranges (catches a stale lower bound)."""
    from importlib.metadata import PackageNotFoundError, version

    for name, req in pyproject_requirements().items():
        try:
            v = version(name)
        except PackageNotFoundError:
            continue  # an optional tool not installed here (checked by its own tests)
        assert req.specifier.contains(v.split("+")[0], prereleases=True), f"{name} {v} violates {req.specifier}"


def test_peft_is_the_lora_extras_only():
    """peft (LoRA training, which no preset uses) is no core dependency: only the ``lora`` extra names it."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not any(_norm(Requirement(r).name) == "peft" for r in data["dependencies"])
    assert [_norm(Requirement(r).name) for r in data["optional-dependencies"]["lora"]] == ["peft"]


def test_vllm_is_an_optional_extra_only():
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not any(_norm(Requirement(r).name) == "vllm" for r in data["dependencies"])
    assert any(_norm(Requirement(r).name) == "vllm" for r in data["optional-dependencies"]["vllm"])
    assert "vllm" not in environment_requirements()


# --- constraints.txt: the exact versions `make install` takes (ddrl/run/lockfile.py) ---


def test_the_lock_pins_every_declared_requirement_inside_its_range():
    """Every package pyproject.toml declares (dependencies, dev, browser), torch aside, is pinned to one version
    that its declared range admits: a range tightened past the lock, or a package added without `make lock`, fails
    here."""
    from ddrl.run import lockfile

    lock = lockfile.read()
    for name, req in pyproject_requirements().items():
        if name in lockfile.UNPINNED:
            assert name not in lock, f"{name} is the Makefile's to install, not the lock's"
            continue
        assert name in lock, f"{name} is declared in pyproject.toml but not pinned in constraints.txt (make lock)"
        assert req.specifier.contains(lock[name][0], prereleases=True), (
            f"constraints.txt pins {name}=={lock[name][0]}, outside pyproject.toml's {req.specifier}")
    assert not lockfile.UNPINNED & set(lock), "torch and the installers are never pinned by the lock"


@pytest.mark.parametrize("which", ["LOCK", "VERL_LOCK"])
def test_every_lock_line_names_one_platform(which):
    """All lines of a lock (the main one, the verl tier's) carry the same marker, naming a Python version, OS and
    machine: the lock applies where it was built and nowhere else (elsewhere an install takes the ranges)."""
    from packaging.markers import Marker

    from ddrl.run import lockfile

    path = getattr(lockfile, which)
    markers = {m for _, m in lockfile.read(path).values()}
    assert len(markers) == 1, f"{path} mixes platforms: {sorted(markers)}"
    marker = markers.pop()
    for key in lockfile.MARKER_KEYS:
        assert f"{key} == " in marker, f"the lock's marker {marker!r} does not name {key}"
    other = {"python_version": "3.10", "sys_platform": "darwin", "platform_machine": "arm64"}
    assert not Marker(marker).evaluate(other)


def test_the_figure_key_libraries_are_locked():
    """The committed figure store is keyed by these libraries' versions (ddrl.report.figure_keys.figure_key): pinned, a
    fresh clone keys its figures as the store does instead of drawing all of them again."""
    from ddrl.report import figure_keys
    from ddrl.run import lockfile

    assert figure_keys.KEYED_LIBRARIES and set(figure_keys.KEYED_LIBRARIES) <= set(lockfile.read())


def test_the_verl_lock_pins_what_its_install_script_installs():
    """The verl tier's lock (``make lock-verl``) pins every package ``install_venv.sh`` names, verl at the script's
    own version, on one platform, torch left to ``TORCH``; the script reads the lock unless ``LOCK=`` is empty."""
    from ddrl.run import lockfile

    script = (REPO / "ddrl" / "integrations" / "verl" / "install_venv.sh").read_text()
    deps = [Requirement(d.strip('"')) for d in re.search(r"^deps=\((.*)\)$", script, re.M).group(1).split()]
    lock = lockfile.read(lockfile.VERL_LOCK)
    for req in deps:
        name = _norm(req.name)
        assert name in lock, f"install_venv.sh installs {req.name}, which {lockfile.VERL_LOCK.name} does not pin"
        assert req.specifier.contains(lock[name][0]), f"{name}: the script asks {req.specifier}, the lock {lock[name][0]}"
    assert not lockfile.UNPINNED & set(lock), "torch and the installers are never pinned by the lock"
    assert 'LOCK=${LOCK-$ROOT/ddrl/integrations/verl/constraints.txt}' in script and 'cat "$LOCK"' in script


def test_a_malformed_lock_line_is_named(tmp_path):
    from ddrl.run import lockfile

    good = 'numpy==2.4.6 ; python_version == "3.11"\n'
    (tmp_path / "c.txt").write_text(good + "pandas>=3\n")
    with pytest.raises(ValueError, match=r"c\.txt:2: expected 'name==version ; marker'"):
        lockfile.read(tmp_path / "c.txt")
    (tmp_path / "c.txt").write_text(good + good.replace("numpy", "NumPy"))
    with pytest.raises(ValueError, match="pinned twice"):
        lockfile.read(tmp_path / "c.txt")
    text = lockfile.render(["a==1", "b==2"], 'python_version == "3.11"', "by hand")
    (tmp_path / "r.txt").write_text(text)
    assert lockfile.read(tmp_path / "r.txt") == {"a": ("1", 'python_version == "3.11"'),
                                                  "b": ("2", 'python_version == "3.11"')}


def test_make_install_installed_the_lock():
    """Where `make install` built this environment with the lock (its stamp says so) and the lock's marker holds
    here, every pinned package is installed at its pinned version: the installer did not ignore the constraints."""
    from packaging.markers import Marker

    from ddrl.run import lockfile

    stamp = Path(sys.prefix) / ".ddrl-installed"
    if not stamp.is_file() or stamp.read_text().strip() != "lock=constraints.txt":
        pytest.skip(f"this environment ({sys.prefix}) was not built by `make install` with constraints.txt")
    lock = lockfile.read()
    marker = next(iter(lock.values()))[1]
    if not Marker(marker).evaluate():
        pytest.skip(f"the lock is for {marker}, not this interpreter")
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = data["optional-dependencies"]
    installed_by_make = {_norm(Requirement(r).name) for r in data["dependencies"] + extras["dev"] + extras["lora"]}
    # the browser extra's packages are missing until `make test-browser` installs them
    wrong = lockfile.drift(absent_ok=frozenset(lock) - installed_by_make)
    assert not wrong, f"installed versions that are not constraints.txt's (pinned, installed): {wrong}"
