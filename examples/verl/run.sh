#!/usr/bin/env bash
# DDRL (or TTRL) on verl for one model x benchmark, with the official hyperparameters.
#   examples/verl/run.sh <model> <benchmark> [--method ddrl|ttrl] [--n-gpus G] [--model-path DIR] [-- hydra overrides]
# model: qwen2.5-math-1.5b | qwen2.5-3b | llama-3.1-8b-instruct; benchmark: aime2024 | amc | math500.
# Needs GPUs, vLLM and verl 0.9.x in $PYTHON's environment (docs/scaling_out.md).
set -euo pipefail
MODEL=$1; BENCH=$2; shift 2
PYTHON=${PYTHON:-python}
DATA=${DATA:-data/verl}
OUT=${OUT:-runs/verl}
export HYDRA_FULL_ERROR=1 VLLM_USE_V1=1
"$PYTHON" -m ddrl.integrations.verl.data --benchmark "$BENCH" --model "$MODEL" --out "$DATA" ${DDRL_DATA_DIR:+--data-dir "$DDRL_DATA_DIR"}
exec "$PYTHON" -m ddrl.integrations.verl.launch --model "$MODEL" --benchmark "$BENCH" --data-dir "$DATA" --out "$OUT" "$@"
