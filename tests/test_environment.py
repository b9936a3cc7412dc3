"""pyproject.toml and environment.yml name the same packages with compatible versions."""

from __future__ import annotations

import re
import tomllib

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
    reqs = list(data["dependencies"]) + list(extras["dev"]) + list(extras["browser"])
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


def test_vllm_is_an_optional_extra_only():
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not any(_norm(Requirement(r).name) == "vllm" for r in data["dependencies"])
    assert any(_norm(Requirement(r).name) == "vllm" for r in data["optional-dependencies"]["vllm"])
    assert "vllm" not in environment_requirements()
