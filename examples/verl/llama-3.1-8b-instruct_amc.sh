#!/usr/bin/env bash
# DDRL (BCS + DAE) on llama-3.1-8b-instruct, amc: official hyperparameters (docs/scaling_out.md). Extra args go to run.sh.
exec "$(dirname "$0")/run.sh" llama-3.1-8b-instruct amc "$@"
