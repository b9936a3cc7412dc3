#!/usr/bin/env bash
# COR stage after an RL run (the paper's Algorithm 1): M = 128 samples per question from the RL-adapted model,
# majority vote, keep at most K agreeing samples per question (4 MATH-500, 16 AMC / AIME 2024), then SFT for
# 5 epochs at lr 1e-5 with verl's SFT trainer.
#   examples/verl/cor_sft.sh <rl_model_path> <rl_train.parquet> <benchmark> <out_dir> [SFT overrides]
#     benchmark: aime2024 | amc | math500 (sets the kept samples per question); M=128 by default (COR_M)
# The official README's variant (the rollouts dumped during RL with pseudo-reward 1, uncapped) is kept as a
# named option:  COR_SOURCE=readme ROLLOUTS=<trainer.rollout_data_dir> examples/verl/cor_sft.sh ...
# Needs GPUs (vLLM for the samples); the commands are composed from ddrl.integrations.verl.cor and verl 0.9.1's
# sft_trainer_engine.yaml keys but were not run here (docs/scaling_out.md).
set -euo pipefail
MODEL_PATH=$1; PROMPTS=$2; BENCHMARK=$3; OUT=$4; shift 4
PYTHON=${PYTHON:-python}
NGPUS=${NGPUS:-8}
COR_SOURCE=${COR_SOURCE:-algorithm1}
COR_M=${COR_M:-128}
case "$COR_SOURCE" in
  algorithm1)
    "$PYTHON" -m ddrl.integrations.verl.cor sample --model "$MODEL_PATH" --prompts "$PROMPTS" --m "$COR_M" \
      --out "$OUT/cor_samples.parquet" --tensor-parallel-size "${TP:-1}"
    "$PYTHON" -m ddrl.integrations.verl.cor select --samples "$OUT/cor_samples.parquet" --prompts "$PROMPTS" \
      --benchmark "$BENCHMARK" --out "$OUT/cor.parquet" ;;
  readme)
    "$PYTHON" -m ddrl.integrations.verl.cor readme --rollouts "${ROLLOUTS:?set ROLLOUTS=<trainer.rollout_data_dir>}" \
      --prompts "$PROMPTS" --out "$OUT/cor.parquet" ;;
  *) echo "COR_SOURCE must be algorithm1 or readme, got $COR_SOURCE" >&2; exit 2 ;;
esac
exec torchrun --standalone --nnodes=1 --nproc_per_node="$NGPUS" -m verl.trainer.sft_trainer \
  data.train_files="$OUT/cor.parquet" data.val_files="$OUT/cor.parquet" \
  data.messages_key=messages \
  model.path="$MODEL_PATH" \
  optim.lr=1e-5 \
  trainer.total_epochs=5 trainer.default_local_dir="$OUT/ckpt" \
  trainer.project_name=ddrl-cor trainer.experiment_name=cor trainer.logger='[console]' "$@"
