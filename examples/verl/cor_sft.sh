#!/usr/bin/env bash
# COR stage after an RL run: consensus rollouts -> SFT parquet -> verl's SFT trainer (5 epochs).
#   examples/verl/cor_sft.sh <rollout_data_dir> <rl_train.parquet> <model_path> <out_dir> [SFT overrides]
# The rollout dumps are the JSONL files verl writes to trainer.rollout_data_dir; only rollouts whose
# pseudo-reward is 1 (they agree with the majority) are kept. Needs GPUs; the SFT command is composed
# from verl 0.9.1's sft_trainer_engine.yaml keys but was not run here (docs/scaling_out.md).
set -euo pipefail
ROLLOUTS=$1; PROMPTS=$2; MODEL_PATH=$3; OUT=$4; shift 4
PYTHON=${PYTHON:-python}
NGPUS=${NGPUS:-8}
"$PYTHON" -m ddrl.integrations.verl.cor --rollouts "$ROLLOUTS" --prompts "$PROMPTS" --out "$OUT/cor.parquet"
exec torchrun --standalone --nnodes=1 --nproc_per_node="$NGPUS" -m verl.trainer.sft_trainer \
  data.train_files="$OUT/cor.parquet" data.val_files="$OUT/cor.parquet" \
  data.messages_key=messages \
  model.path="$MODEL_PATH" \
  trainer.total_epochs=5 trainer.default_local_dir="$OUT/ckpt" \
  trainer.project_name=ddrl-cor trainer.experiment_name=cor trainer.logger='[console]' "$@"
