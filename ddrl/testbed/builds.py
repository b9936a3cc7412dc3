"""The testbed's builds on disk, without torch: where the cache keeps them (:func:`cache_root`), the reference builds
committed under ``results/base_models/`` (:func:`committed_dir`, :func:`reference_build`) and how one is copied or
installed so that a reader never sees half a build (:func:`copy_build`, :func:`install_build`).
:func:`ddrl.testbed.pretrain.build` makes or installs a build with these; the claims study checks its weights with
them, and notebook 06's renderer imports that check without loading torch.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from ddrl.infra.storage import sha256_file
from ddrl.infra.cache import weight_files
from ddrl.testbed.config import PretrainConfig

REPO = Path(__file__).resolve().parents[2]
META_FILE = "testbed.json"


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir``, else ``$DDRL_CACHE_DIR``, else ``<repo>/.cache`` (gitignored); builds go in ``testbed/``."""
    root = Path(cache_dir) if cache_dir is not None else Path(os.environ.get("DDRL_CACHE_DIR") or REPO / ".cache")
    return root / "testbed"


#: Builds committed as files, ``<preset>-<config hash>-<sha256 of model.safetensors, 12 hex>/``: a build's bits
#: depend on the CPU that pretrained it (docs/testbed.md), so a committed one is the same on every machine.
COMMITTED = REPO / "results" / "base_models"
#: The files that name a preset's *reference* build: the weights the claims study measured its regimes on
#: (``{"weights": {"model": "testbed:<preset>", "model.safetensors": <sha256>}}``).
REFERENCE_FILES = (REPO / "results" / "regimes_base.json", REPO / "results" / "regimes_weak.json")
#: ``build``'s source of a missing build: ``committed`` installs the reference build when one is committed for
#: the preset's configuration (else pretrains), ``pretrain`` always pretrains on this CPU.
SOURCES = ("committed", "pretrain")


def weight_sha256s(directory: str | os.PathLike) -> dict[str, str]:
    """sha256 of each weight file of a build directory (:func:`ddrl.infra.cache.weight_files`), by file name."""
    return {f.name: sha256_file(f) for f in weight_files(directory)}


def file_sha256s(directory: str | os.PathLike) -> dict[str, str]:
    """sha256 of every file of a build directory but its record (``testbed.json``), by file name: the weights and
    all that loading reads besides (``config.json``, ``generation_config.json``, ``tokenizer.json``,
    ``tokenizer_config.json``, ``chat_template.jinja``)."""
    return {f.name: sha256_file(f) for f in sorted(Path(directory).iterdir()) if f.is_file() and f.name != META_FILE}


def committed_dir(name: str, sha256: str, root: Path | None = None) -> Path:
    """Where the committed copy of the build ``name`` (``<preset>-<config hash>``) with these weights lies."""
    return (COMMITTED if root is None else Path(root)) / f"{name}-{sha256[:12]}"


def reference_build(preset: str, cfg: PretrainConfig) -> tuple[Path, dict[str, str]] | None:
    """The committed reference build of ``preset`` at configuration ``cfg`` (see :data:`REFERENCE_FILES`) and
    its weights (file name -> sha256), or None when this configuration has none committed."""
    for f in REFERENCE_FILES:
        if not f.is_file():
            continue
        weights = json.loads(f.read_text()).get("weights", {})
        if weights.get("model") != f"testbed:{preset}" or "model.safetensors" not in weights:
            continue
        where = committed_dir(f"{preset}-{cfg.config_hash()}", weights["model.safetensors"])
        if (where / META_FILE).is_file():
            return where, {k: v for k, v in weights.items() if k != "model"}
    return None


def copy_build(src: Path, dest: Path) -> None:
    """``src``'s files into a new directory ``dest``, written beside it under a temporary name, then renamed
    (a reader never sees half a build)."""
    tmp = dest.parent / f".tmp-{dest.name}-{os.getpid()}-{time.time_ns()}"
    try:
        shutil.copytree(src, tmp)
        os.rename(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def install_build(src: Path, dest: Path, weights: dict[str, str]) -> None:
    """Copy the committed build ``src`` to ``dest`` once its weight files hash to ``weights`` (file name ->
    sha256); raises ``ValueError`` naming both otherwise (a damaged copy, a Git LFS pointer). The caller holds
    ``dest``'s build lock."""
    got = weight_sha256s(src)
    if got != weights:
        raise ValueError(f"{src}: the committed build's weights {got} are not the measured {weights}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    copy_build(src, dest)
