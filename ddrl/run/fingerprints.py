"""What a cache key records of a model's weights (:func:`model_fingerprint`): the sha256 of each weight file of a
local model directory, the testbed's build included (made on first use), or a hub id as it is. Torch-free, so that
the claims study's weight checks import without it; its own module because the testbed's build imports
:mod:`ddrl.infra.cache`, whose helpers this uses.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ddrl import testbed
from ddrl.infra.storage import sha256_file
from ddrl.infra.cache import weight_files


@functools.lru_cache(maxsize=256)
def _weight_file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a weight file, memoised per (path, size, mtime): a paper-scale checkpoint (GBs) is hashed once
    per process, not once per cache lookup (every run directory and evaluation key asks for it)."""
    return sha256_file(path)


def model_fingerprint(name: str) -> dict[str, str]:
    """What identifies a model's weights for the rollout cache: the sha256 of every weight file of a local
    directory (the testbed's ``build`` directory included), or the hub id itself for a remote model."""
    if name.startswith("testbed:"):
        path = Path(testbed.build(name.split(":", 1)[1], progress=True))
    else:
        path = Path(name)
    if not path.is_dir():
        return {"model": name}
    stats = {p: p.stat() for p in weight_files(path)}
    return {"model": name, **{p.name: _weight_file_sha256(str(p.resolve()), st.st_size, st.st_mtime_ns)
                              for p, st in stats.items()}}
