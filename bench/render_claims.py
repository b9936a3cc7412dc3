"""How long notebook 06's default render takes, one way against another, timed in one process in alternating rounds.

Each render is the runner's own command, ``python -m ddrl.run.reproduce --preset default --only 06 --no-html`` (a fresh
kernel each time: imports, the scorecard, every section's figures saved as PNG and PDF and shown inline). The modes:

- ``committed``: this working tree as it is (the study's tables read from ``docs/results/``);
- ``computed``: the tables computed from the ~2,000 committed run CSVs (``-p tables_dir ""``, every render before
  2026-12-02);
- ``rev:<REV>``: the render of git revision REV (a worktree of it; ``PYTHONPATH`` makes its kernel import its ddrl),
  in this environment;
- ``<mode>+source``: that mode with every Python module of the render (runner, kernel) compiled from source, as every
  process was where ``PYTHONDONTWRITEBYTECODE`` is set and ``make install`` wrote no bytecode (uv without
  ``--compile-bytecode``, until 2026-12-02 evening): ``PYTHONPYCACHEPREFIX`` points at an empty folder;
- ``<mode>+cold``: that mode with an empty cache (``DDRL_CACHE_DIR`` at a new folder for each render), as on a fresh
  clone: every figure drawn, or, since 2026-12-04, copied from the committed figure store (``ddrl.report.figure_store``,
  ``docs/results/figures.json``) where its code is unchanged. Without it a mode renders with the benchmark's own
  cache, filled by one untimed render of each mode before the rounds: the figures ``Reporter.draw`` stored are
  copied, as on every later render.
- ``<mode>+nostore``: that mode without the committed figure store (``DDRL_FIGURE_STORE=''``): with ``+cold``, every
  figure drawn, as in a checkout whose edits changed the code under every figure.

Writes ``bench/results/render_claims.json``::

    .venv/bin/python bench/render_claims.py --rounds 3 --modes committed+cold committed+cold+nostore rev:507c14a+cold committed
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runs_per_hour import cpu  # bench/ is this script's folder

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ["-m", "ddrl.run.reproduce", "--preset", "default", "--only", "06", "--no-html"]


@contextlib.contextmanager
def mode_setup(mode: str):
    """``(working directory, extra runner arguments, environment)`` of a mode, for the duration of the block."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    if mode.endswith("+nostore"):  # ... and no committed figure store, as a checkout whose code changed under each
        with mode_setup(mode.removesuffix("+nostore")) as (cwd, extra, env):
            yield cwd, extra, {**env, "DDRL_FIGURE_STORE": ""}
    elif mode.endswith("+cold"):  # a mode's render with an empty cache (every figure drawn, or copied from the
        # committed store where the tree has one: ddrl.report.figure_store)
        with mode_setup(mode.removesuffix("+cold")) as (cwd, extra, env), tempfile.TemporaryDirectory() as empty:
            yield cwd, extra, {**env, "DDRL_CACHE_DIR": empty}
    elif mode.endswith("+source"):  # a mode's render with every module compiled from source
        with mode_setup(mode.removesuffix("+source")) as (cwd, extra, env), tempfile.TemporaryDirectory() as empty:
            yield cwd, extra, {**env, "PYTHONPYCACHEPREFIX": empty, "PYTHONDONTWRITEBYTECODE": "1"}
    elif mode == "committed":
        yield ROOT, [], env
    elif mode == "computed":
        yield ROOT, ["-p", "tables_dir", "''"], env
    elif mode.startswith("rev:"):
        with tempfile.TemporaryDirectory() as tree:
            subprocess.run(["git", "worktree", "add", "--detach", "-q", tree, mode[4:]], cwd=ROOT, check=True)
            subprocess.run([sys.executable, "-m", "compileall", "-q", "ddrl"], cwd=tree, check=True,
                           capture_output=True)  # its bytecode, as `make install` writes this tree's
            try:
                yield Path(tree), [], {**env, "PYTHONPATH": tree}
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=ROOT, check=True)
    else:
        raise SystemExit(f"--modes: unknown mode {mode!r} (committed, computed or rev:<REV>, each with any of "
                         "+source, +cold, +nostore, in that order)")


def render(mode: str) -> float:
    """Wall seconds of one default render of notebook 06, in ``mode``, into a fresh output folder."""
    with mode_setup(mode) as (cwd, extra, env), tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, *RUNNER, "--output-dir", out, *extra]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, env=env)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modes", nargs="+", default=["committed", "computed"],
                    help="the first is the one the others are compared with (their time / its time)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "render_claims.json"))
    args = ap.parse_args()

    warm = tempfile.TemporaryDirectory()  # the cache of the modes without +cold, filled before the rounds
    os.environ["DDRL_CACHE_DIR"] = warm.name
    for mode in args.modes:
        if "+cold" not in mode:
            print(f"filling the cache: {mode} {render(mode):.1f} s (not counted)", flush=True)
    seconds: dict[str, list[float]] = {m: [] for m in args.modes}
    for r in range(args.rounds):
        for mode in (args.modes if r % 2 == 0 else args.modes[::-1]):
            seconds[mode].append(render(mode))
            print(f"round {r}: {mode} {seconds[mode][-1]:.1f} s", flush=True)
    med = {m: statistics.median(v) for m, v in seconds.items()}
    first = args.modes[0]
    result = {"cpu": cpu(), "cpu_count": os.cpu_count(),
              "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE", ""), "rounds": args.rounds,
              "modes": args.modes, "seconds": seconds, "median_s": med,
              "ratio_to_first": {m: med[m] / med[first] for m in args.modes}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print("median render: " + ", ".join(f"{m} {med[m]:.1f} s ({med[m] / med[first]:.2f}x)" for m in args.modes))


if __name__ == "__main__":
    main()
