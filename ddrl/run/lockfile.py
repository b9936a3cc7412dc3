"""The exact package versions the tests and CI run with: ``constraints.txt``, read by ``make install``.

``pyproject.toml`` gives ranges (``pandas>=2.1``), so a fresh ``make install`` used to take the newest releases
of the day. Two things in this repository depend on the exact versions: the committed figure store
(:func:`ddrl.report.figure_keys.figure_key` keys each figure by matplotlib's, seaborn's and pandas' versions, so a new
pandas release retires all of notebook 06's committed figures on a fresh clone and fails the store's test), and the
numbers of any rerun (transformers' modules, the grader's normalisation). The lock pins every package of the
environment ``make install`` builds, except torch (the Makefile's ``TORCH``) and the installers, at the versions
of one fresh build on one platform, and each line carries that platform's environment marker: on another Python or
platform no line applies and only the ranges do (nothing is claimed for an environment that was not built).

``make lock`` builds that environment in a throwaway venv with no lock and writes the file again
(``python -m ddrl.run.lockfile write --python VENV/bin/python``); ``make install LOCK=`` installs without it. The verl
tier's separate environment (``make install-verl``, CI) has its own lock, :data:`VERL_LOCK`, written by
``make lock-verl`` the same way.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ddrl.infra.storage import atomic_write_bytes

LOCK = Path(__file__).resolve().parents[2] / "constraints.txt"
#: The verl test environment's lock (``make lock-verl``; ``ddrl/integrations/verl/install_venv.sh`` reads it).
VERL_LOCK = Path(__file__).resolve().parents[1] / "integrations" / "verl" / "constraints.txt"
#: Installed by the Makefile itself, never pinned here: torch (``TORCH``, the CPU wheel first) and the installers.
UNPINNED = frozenset({"torch", "pip", "uv", "setuptools", "wheel"})
#: The environment markers a lock line carries (the platform it was built on).
MARKER_KEYS = ("python_version", "sys_platform", "platform_machine")

_PLATFORM = ("import json, platform, sys; print(json.dumps({'python_version': '%d.%d' % sys.version_info[:2], "
             "'sys_platform': sys.platform, 'platform_machine': platform.machine()}))")


def platform_marker(python: str = sys.executable) -> str:
    """The environment marker of interpreter ``python``: ``python_version == "3.11" and sys_platform == "linux"
    and platform_machine == "x86_64"``."""
    env = json.loads(subprocess.run([python, "-c", _PLATFORM], check=True, capture_output=True, text=True).stdout)
    return " and ".join(f'{k} == "{env[k]}"' for k in MARKER_KEYS)


def frozen(python: str) -> list[str]:
    """``name==version`` of every distribution installed for ``python`` (editable installs left out), sorted, as
    ``uv pip freeze`` prints them, less :data:`UNPINNED`."""
    out = subprocess.run([python, "-m", "uv", "pip", "freeze", "--exclude-editable", "--python", python],
                         check=True, capture_output=True, text=True).stdout
    pins = [Requirement(line.strip()) for line in out.splitlines() if line.strip() and not line.startswith("#")]
    bad = [str(p) for p in pins if len(p.specifier) != 1 or next(iter(p.specifier)).operator != "=="]
    if bad:
        raise ValueError(f"{python}: uv pip freeze printed lines that are not name==version: {bad}")
    pins = sorted(pins, key=lambda p: canonicalize_name(p.name))
    return [str(p) for p in pins if canonicalize_name(p.name) not in UNPINNED]


def render(pins: list[str], marker: str, how: str, target: str = "lock") -> str:
    """The lock file's text: a header saying how it was made (by ``make <target>``), then one
    ``name==version ; marker`` per line."""
    Marker(marker)  # a malformed marker fails here, not in a later install
    head = ["# The exact versions an install takes on the platform each line names (ddrl/run/lockfile.py).",
            f"# Written by `make {target}`: {how}.",
            "# Not pinned here: torch (the Makefile's TORCH, installed first) and the installers."]
    return "\n".join(head + [f"{p} ; {marker}" for p in pins]) + "\n"


def read(path: Path | str = LOCK) -> dict[str, tuple[str, str]]:
    """``{canonical name: (version, marker)}`` of a lock file; a line that is not ``name==version ; marker`` is a
    ValueError naming the file and line."""
    out: dict[str, tuple[str, str]] = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        req = Requirement(line)
        spec = list(req.specifier)
        if len(spec) != 1 or spec[0].operator != "==" or req.marker is None:
            raise ValueError(f"{path}:{n}: expected 'name==version ; marker', got {line!r}")
        name = canonicalize_name(req.name)
        if name in out:
            raise ValueError(f"{path}:{n}: {req.name} is pinned twice")
        out[name] = (spec[0].version, str(req.marker))
    return out


BUILT = "`pip install TORCH`, then `uv pip install -e .[dev,browser]`"  # how `make lock` builds its environment


def drift(path: Path | str = LOCK, absent_ok: frozenset[str] = frozenset()) -> dict[str, tuple[str, str | None]]:
    """``{name: (pinned, installed)}`` for every package of the lock at ``path`` whose version in this interpreter's
    environment is not its pin (installed None: missing), except missing packages named in ``absent_ok``."""
    out = {}
    for name, (pinned, _) in read(path).items():
        try:
            got = version(name)
        except PackageNotFoundError:
            if name in absent_ok:
                continue
            got = None
        if got != pinned:
            out[name] = (pinned, got)
    return out


def write(python: str, out: Path | str = LOCK, built: str = BUILT, target: str = "lock") -> Path:
    """Write the lock of the environment of ``python``, which ``make <target>`` has just built with no lock as
    ``built`` says."""
    py = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], check=True, capture_output=True,
                        text=True).stdout.strip()
    text = render(frozen(python), platform_marker(python), f"a fresh venv, CPython {py}, {built}", target)
    atomic_write_bytes(out, text.encode())
    return Path(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the lock of an environment built without one")
    w.add_argument("--python", required=True, help="that environment's interpreter")
    w.add_argument("--out", default=str(LOCK))
    w.add_argument("--built", default=None, help="how that environment was built (the file's header says it)")
    w.add_argument("--target", default="lock", help="the make target that writes this file (the header names it)")
    args = ap.parse_args(argv)
    kw = {"built": args.built} if args.built else {}
    path = write(args.python, args.out, target=args.target, **kw)
    print(f"{path}: {len(read(path))} packages pinned for {platform_marker(args.python)}")


if __name__ == "__main__":
    main()
