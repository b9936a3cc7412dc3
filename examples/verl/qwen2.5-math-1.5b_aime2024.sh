#!/usr/bin/env bash
# DDRL (BCS + DAE) on qwen2.5-math-1.5b, aime2024: official hyperparameters (docs/scaling_out.md). Extra args go to run.sh.
exec "$(dirname "$0")/run.sh" qwen2.5-math-1.5b aime2024 "$@"
