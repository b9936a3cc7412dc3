"""How long notebook 06's default render takes with the study's tables read from ``docs/results/`` (written by
``python -m ddrl.study --analyse claims``, ``ddrl.study_figures.committed_tables``) against computing them from the
~2,000 committed run CSVs (``-p tables_dir ""``, what every render did before), timed in one process in
alternating rounds.

Each render is the runner's own command, ``python -m ddrl.reproduce --preset default --only 06 --no-html`` (a fresh
kernel each time: imports, the scorecard, every section's figures saved as PNG and PDF); rounds alternate which
mode goes first. Writes ``bench/results/render_claims.json``::

    .venv/bin/python bench/render_claims.py --rounds 2
"""

from __future__ import annotations

import argparse
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
MODES = {"committed": [], "computed": ["-p", "tables_dir", "''"]}


def render(extra: list[str]) -> float:
    """Wall seconds of one default render of notebook 06 into a fresh output folder."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "ddrl.reproduce", "--preset", "default", "--only", "06", "--no-html",
               "--output-dir", out, *extra]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, env={**os.environ, "MPLBACKEND": "Agg"})
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "render_claims.json"))
    args = ap.parse_args()

    seconds: dict[str, list[float]] = {m: [] for m in MODES}
    for r in range(args.rounds):
        for mode in (list(MODES) if r % 2 == 0 else list(MODES)[::-1]):
            seconds[mode].append(render(MODES[mode]))
            print(f"round {r}: {mode} {seconds[mode][-1]:.1f} s", flush=True)
    med = {m: statistics.median(v) for m, v in seconds.items()}
    result = {"cpu": cpu(), "cpu_count": os.cpu_count(),
              "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE", ""), "rounds": args.rounds,
              "seconds": seconds, "median_s": med, "speedup": med["computed"] / med["committed"]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"median render: committed tables {med['committed']:.1f} s, computed {med['computed']:.1f} s "
          f"({result['speedup']:.2f}x)")


if __name__ == "__main__":
    main()
