"""Where a data file comes from and whether its bytes are the registered ones: the lookup order of
:mod:`ddrl.data` (``data_dir=``, ``$DDRL_DATA_DIR``, the download cache, a download), sha256 verification
(gzip'd twins accepted), atomic downloads into the cache, and the errors every data problem raises.
:mod:`ddrl.data` reads the registry and parses the verified bytes into records.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

from ddrl.infra.progress import tqdm

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR_ENV = "DDRL_DATA_DIR"
CACHE_DIR_ENV = "DDRL_CACHE_DIR"
MIRROR_ENV = "DDRL_DATA_MIRROR"


class DataError(ValueError):
    """A data file is missing, unreachable or malformed."""


class DataUnavailable(DataError):
    """A data file that is not here and cannot be fetched (not in the data folder or the cache; offline or downloads
    disabled): absent, not damaged. The one data error a notebook may answer by skipping a section, saying so
    (:meth:`ddrl.report.reporter.Reporter.skipped`); a damaged file (:class:`ChecksumError`, :class:`RecordError`)
    is always an error."""


class ChecksumError(DataError):
    """A data file's bytes do not have the registered sha256."""


class RecordError(DataError):
    """A record lacks a field or has one of the wrong type."""


class RegistryError(DataError):
    """``data/registry.yaml`` is missing an entry's field or has one of the wrong form."""


# ---------------------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataFile:
    """One source file: where it lives relative to a data root, where it is downloaded from, its hash."""

    relpath: str  # e.g. "AIME-TTT/test.json" (the layout of shared/data and of the cache)
    url: str
    sha256: str  # of the uncompressed bytes
    git_blob: str | None = None  # the source repository's blob id, for provenance


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def default_cache_dir() -> Path:
    """``$DDRL_CACHE_DIR/data``, by default ``<repo>/.cache/data`` (the same root as ddrl.infra.cache's cache)."""
    return Path(os.environ.get(CACHE_DIR_ENV) or REPO_ROOT / ".cache") / "data"


def resolve_data_dir(data_dir: str | None) -> str | None:
    """``data_dir`` if given; else ``$DDRL_DATA_DIR`` (:data:`DATA_DIR_ENV`, the one environment variable for
    where data lives) or ``<repo>/../shared/data`` when it holds the real data; else None (:func:`locate`
    then looks in the cache and downloads)."""
    if data_dir is not None:
        return data_dir
    candidate = Path(os.environ.get(DATA_DIR_ENV) or REPO_ROOT.parent / "shared" / "data")
    return str(candidate) if (candidate / "MATH-TTT").is_dir() or (candidate / "rollouts").is_dir() else None


def read_verified(path: Path, file: DataFile) -> bytes:
    """The bytes of a local copy of ``file`` (decompressed if ``path`` ends in ``.gz``), after checking
    their sha256; a mismatch is a :class:`ChecksumError` naming the path, expected and actual hash."""
    path = Path(path)
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:  # zlib.error: a damaged compressed stream
            raise ChecksumError(f"{path}: not a valid gzip file ({type(e).__name__}: {e}); expected a gzip'd copy "
                                f"of {file.relpath}") from e
    actual = sha256_hex(data)
    if actual != file.sha256:
        what = "decompressed bytes of " if path.suffix == ".gz" else ""
        raise ChecksumError(
            f"{path}: sha256 mismatch for {file.relpath}: expected {file.sha256}, "
            f"got {actual} ({what}{len(data):,} bytes); the file is corrupted or a different version"
        )
    return data


def _candidates(root: Path, file: DataFile) -> list[Path]:
    return [root / file.relpath, root / (file.relpath + ".gz")]


def download(
    file: DataFile,
    cache_dir: Path | str | None = None,
    *,
    mirror: str | None = None,
    timeout: float = 60.0,
    progress: bool = False,
) -> Path:
    """Download ``file`` into the cache and return its path there.

    The bytes go to a temporary file in the cache directory while being hashed; only if the sha256
    matches is it renamed (atomically) to ``<cache>/<relpath>``, so a corrupted or partial download never
    lands in the cache. ``mirror`` (a base URL) replaces the source URL by ``mirror/relpath``.
    """
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    url = f"{mirror.rstrip('/')}/{file.relpath}" if mirror else file.url
    dest = cache_dir / file.relpath
    dest.parent.mkdir(parents=True, exist_ok=True)
    hasher = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
                total = resp.headers.get("Content-Length")
                with tqdm(
                    total=int(total) if total else None, unit="B", unit_scale=True,
                    desc=f"download {file.relpath}", disable=not progress,
                ) as bar:
                    while chunk := resp.read(1 << 16):
                        hasher.update(chunk)
                        out.write(chunk)
                        bar.update(len(chunk))
        except (urllib.error.URLError, OSError) as e:
            raise DataUnavailable(
                f"could not download {file.relpath} from {url}: {e}. Offline? Point {DATA_DIR_ENV} (or data_dir=) "
                f"at a directory holding {file.relpath} (or {file.relpath}.gz)"
            ) from e
        actual = hasher.hexdigest()
        if actual != file.sha256:
            raise ChecksumError(
                f"{url}: sha256 mismatch for {file.relpath}: expected {file.sha256}, got {actual}; "
                "the download was refused and not cached"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def locate(
    file: DataFile,
    data_dir: Path | str | None = None,
    *,
    cache_dir: Path | str | None = None,
    mirror: str | None = None,
    allow_download: bool = True,
    progress: bool = False,
) -> tuple[Path, bytes]:
    """Find (or download) ``file`` and return ``(path, verified uncompressed bytes)``.

    Order: ``data_dir`` (must hold the file) > ``$DDRL_DATA_DIR`` > cache > download (see module docs).
    """
    if data_dir is not None:
        for p in _candidates(Path(data_dir), file):
            if p.is_file():
                return p, read_verified(p, file)
        raise DataUnavailable(
            f"{file.relpath} not found in data_dir={data_dir}: looked for "
            + " and ".join(str(p) for p in _candidates(Path(data_dir), file))
        )
    looked: list[Path] = []
    env_dir = os.environ.get(DATA_DIR_ENV)
    if env_dir:
        for p in _candidates(Path(env_dir), file):
            looked.append(p)
            if p.is_file():
                return p, read_verified(p, file)
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cached = cache_dir / file.relpath
    looked.append(cached)
    if cached.is_file():
        try:
            return cached, read_verified(cached, file)
        except ChecksumError as e:
            raise ChecksumError(f"{e}. Delete the cached copy to download it again") from e
    if not allow_download:
        raise DataUnavailable(
            f"{file.relpath} not found (looked in {', '.join(map(str, looked))}) and downloads are disabled; "
            f"set {DATA_DIR_ENV} to a directory holding it"
        )
    mirror = mirror or os.environ.get(MIRROR_ENV) or None
    path = download(file, cache_dir, mirror=mirror, progress=progress)
    return path, read_verified(path, file)
