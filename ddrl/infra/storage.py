"""Where the companion's files live and how they are written: the repository, the cache's root, durable atomic
writes (a unique temporary file, fsync, rename, fsync of the folder; a full disk named as such), the sha256 of a
file, and files that verify themselves (:func:`seal`/:func:`unseal`, :func:`json_with_digest`/:func:`read_json`:
a damaged one is a :class:`DamagedFileError` naming it). The lowest layer of the package's file handling: it imports nothing of ddrl, so every other module (among
them :mod:`ddrl.infra.cache`, which re-exports these names, and :mod:`ddrl.report.figure_store`) can build on it.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    """``$DDRL_CACHE_DIR`` or ``<repo>/.cache`` (gitignored)."""
    return Path(os.environ.get("DDRL_CACHE_DIR", REPO / ".cache"))


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def disk_error(exc: BaseException, path: str | Path) -> BaseException:
    """``exc`` re-described when the disk is full: an ``OSError(ENOSPC)`` naming ``path`` (torch's
    ``RuntimeError`` / ``iostream error`` hides the errno in its context). Other errors are returned as is."""

    seen, e = [], exc
    while e is not None and e not in seen:
        seen.append(e)
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            break
        e = e.__cause__ or e.__context__
    else:
        e = None
    full = e is not None
    if not full and isinstance(exc, RuntimeError):  # torch/C++ stream errors carry no errno
        try:
            full = shutil.disk_usage(Path(path).parent).free < 16 * 2**20
        except OSError:
            full = False
    if not full:
        return exc
    return OSError(errno.ENOSPC, f"No space left on device (ENOSPC) while writing {path}; free space there or "
                                 f"point $DDRL_CACHE_DIR / --output-dir at a larger disk", str(path))


def fsync_dir(path: str | Path) -> None:
    """fsync a directory, so a rename inside it survives a power cut (no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def unique_tmp(path: str | Path) -> Path:
    """A temporary sibling of ``path`` no other process or thread uses: ``.<name>.<pid>-<uuid>.tmp``."""

    path = Path(path)
    return path.parent / f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp"


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` durably: a unique temporary file, fsync, ``os.replace``, fsync of the
    directory. Never a half-written file; a full disk is an ``OSError(ENOSPC)`` naming ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = unique_tmp(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        err = disk_error(e, path)
        if err is e:
            raise
        raise err from e
    fsync_dir(path.parent)


def write_csv(path: str | Path, df) -> None:
    """``df`` (a DataFrame, no index) as a CSV at ``path`` by :func:`atomic_write_bytes`; gzipped where the name ends
    in ``.gz``, with no timestamp in its header, so the same rows always give the same bytes."""
    data = df.to_csv(index=False).encode()
    atomic_write_bytes(path, gzip.compress(data, mtime=0) if str(path).endswith(".gz") else data)


def write_json(path: str | Path | None, obj) -> str:
    """``obj`` as indented JSON text (with a final newline), written atomically to ``path`` when one is given
    (:func:`atomic_write_bytes`); returns the text (the CLIs also print it)."""
    text = json.dumps(obj, indent=1) + "\n"
    if path is not None:
        atomic_write_bytes(path, text.encode())
    return text


def git_sha(cwd: str | Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the repository holding this package (None outside git)."""
    cwd = cwd or Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


# --- files that verify themselves (issue 85) -------------------------------------------------------------------
#
# What a digest written with a file guarantees: a read that is not byte for byte what was written (a flipped bit, a
# truncated or torn file, another file copied over it) is detected and never used. It does not stop someone who can
# write the cache folder from writing another file *and* its digest; against that, the readers load only data that
# cannot execute (JSON; ``torch.load(weights_only=True)``; pickles through an allow-list of plain classes).

#: The first line of a sealed file: this magic, the sha256 of the rest of the file (the payload), a newline.
SEAL = b"ddrl-sha256 "
#: The key a digested JSON object carries its own digest under (:func:`json_with_digest`).
DIGEST_KEY = "_sha256"


class DamagedFileError(ValueError):
    """A file that does not verify against the digest written with it (or does not parse); names the file."""

    def __init__(self, path: str | Path, why: str):
        self.path, self.why = Path(path), why
        super().__init__(f"{path} is damaged: {why}")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def seal(payload: bytes) -> bytes:
    """``payload`` preceded by a line holding its sha256 (:data:`SEAL`): what :func:`unseal` verifies."""
    return SEAL + sha256_bytes(payload).encode() + b"\n" + payload


def unseal(data: bytes, path: str | Path) -> bytes:
    """The payload of :func:`seal`'s bytes ``data`` (read from ``path``), or :class:`DamagedFileError` naming
    ``path`` when the header is missing or the payload's sha256 is not the recorded one."""
    head, nl, payload = data.partition(b"\n")
    if not nl or not head.startswith(SEAL) or len(head) != len(SEAL) + 64:
        raise DamagedFileError(path, f"no sha256 header ({len(data)} bytes; written before entries carried digests, "
                                     "or its first line is damaged)")
    want, got = head[len(SEAL):].decode("ascii", "replace"), sha256_bytes(payload)
    if want != got:
        raise DamagedFileError(path, f"its sha256 is {got}, the one written with it {want}")
    return payload


def json_with_digest(obj: dict, **dumps) -> str:
    """``obj`` (a dict) as JSON text carrying the sha256 of its own canonical text under :data:`DIGEST_KEY`, so a
    reader (:func:`verify_json_digest`) can tell an altered file; ``dumps`` are ``json.dumps``'s options (the
    digest is of the text without it, which the parsed object, keeping the keys' order, gives back)."""
    body = {k: v for k, v in obj.items() if k != DIGEST_KEY}
    return json.dumps({**body, DIGEST_KEY: sha256_bytes(json.dumps(body, **dumps).encode())}, **dumps)


def verify_json_digest(obj: Any, path: str | Path, required: bool = False, **dumps) -> Any:
    """``obj`` (parsed from ``path``) without its :data:`DIGEST_KEY`, after checking that digest against the
    object's canonical text (``dumps`` as given to :func:`json_with_digest`); :class:`DamagedFileError` naming
    ``path`` on a mismatch, or on a missing digest when ``required`` (files written before issue 85 carry none)."""
    if not isinstance(obj, dict) or DIGEST_KEY not in obj:
        if required or not isinstance(obj, dict):
            raise DamagedFileError(path, "it carries no sha256 of its content")
        return obj
    body = {k: v for k, v in obj.items() if k != DIGEST_KEY}
    got = sha256_bytes(json.dumps(body, **dumps).encode())
    if obj[DIGEST_KEY] != got:
        raise DamagedFileError(path, f"its content's sha256 is {got}, the one written in it {obj[DIGEST_KEY]}")
    return body


def read_json(path: str | Path, digest: bool = True, required: bool = False, **dumps) -> Any:
    """A JSON file's object, its digest checked (:func:`verify_json_digest`) when ``digest``; any damage (not UTF-8,
    not JSON, another digest) is a :class:`DamagedFileError` naming the file, not a bare ``JSONDecodeError``."""
    try:
        obj = json.loads(Path(path).read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DamagedFileError(path, f"not valid JSON ({type(e).__name__}: {str(e)[:120]})") from None
    return verify_json_digest(obj, path, required=required, **dumps) if digest else obj
