#!/usr/bin/env bash
# Build the separate verl test environment from scratch (CPU only; no CUDA torch, no vLLM).
#   ddrl/integrations/verl/install_venv.sh [VENV_DIR]      (default: .venv-verl at the repo root)
# Measured here (shared 2-core box): 183 s from scratch with a warm pip cache, ~6.5 min cold (pip alone, before uv).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
VENV=${1:-$ROOT/.venv-verl}
PYTHON=${PYTHON:-python3}
TORCH=${TORCH:-torch==2.13.0}
# The exact versions CI's verl tier passed with (ddrl/run/lockfile.py; `make lock-verl` writes it); LOCK= takes the newest.
LOCK=${LOCK-$ROOT/ddrl/integrations/verl/constraints.txt}
start=$(date +%s)
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
$PIP install -q "$TORCH"                       # first, alone: the CPU wheel
constraints=$(mktemp); trap 'rm -f "$constraints"' EXIT
echo "$TORCH" > "$constraints"                  # nothing below may replace torch
if [ -n "$LOCK" ]; then cat "$LOCK" >> "$constraints"; fi
# verl 0.9.1 pins transformers>=5.5.3,<5.11 (not 5.11+); cachetools/uvicorn/fastapi are imported by
# verl.trainer.main_ppo_v0 but not declared as dependencies.
# The rest through uv (as `make install`: the same packages as pip resolves, minutes faster, so that CI's build beside
# `make test` no longer takes a core from the tests for ~5 min); pip installs them should uv fail.
deps=("verl==0.9.1" cachetools uvicorn fastapi math-verify numpy scipy pandas tqdm pyyaml pytest pytest-timeout)
$PIP install -q uv
"$VENV/bin/python" -m uv pip install -q --python "$VENV/bin/python" -c "$constraints" "${deps[@]}" \
    || $PIP install -q -c "$constraints" "${deps[@]}"
"$VENV/bin/python" -m uv pip install -q --python "$VENV/bin/python" --no-deps -e "$ROOT" \
    || $PIP install -q --no-deps -e "$ROOT"
"$VENV/bin/python" -c "import torch, verl; assert torch.__version__.startswith('${TORCH#torch==}'), torch.__version__; print('verl', verl.__version__, 'torch', torch.__version__)"
echo "install_venv.sh: $VENV ready in $(( $(date +%s) - start )) s"
