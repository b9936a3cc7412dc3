"""``python -m ddrl.testbed build --preset {tiny,default,...} [--cache-dir DIR] [--pretrain] [--quiet]``: build (or
find in the cache, or install from the committed reference build) the testbed model and print its directory on
the last line of stdout."""

from __future__ import annotations

import argparse
import json
import sys

from ddrl.testbed.pretrain import PRESETS, build, read_meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ddrl.testbed", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="pretrain the testbed model (cached by a hash of its configuration)")
    b.add_argument("--preset", choices=sorted(PRESETS), default="default")
    b.add_argument("--cache-dir", default=None, help="default: $DDRL_CACHE_DIR or <repo>/.cache")
    b.add_argument("--pretrain", action="store_true", help="pretrain on this CPU even where a reference build is "
                   "committed (results/base_models/); use a fresh --cache-dir, as a cached build is reused")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    path = build(args.preset, cache_dir=args.cache_dir, progress=not args.quiet,
                 source="pretrain" if args.pretrain else None)
    meta = read_meta(path)
    summary = {k: meta[k] for k in ("preset", "hash", "steps", "stop_reason", "pretrain_seconds", "num_parameters")}
    print(json.dumps(summary), file=sys.stderr)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
