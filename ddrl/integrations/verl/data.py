"""Benchmarks as verl RL parquet files: ``<out>/<benchmark>/{train,test}.parquet``.

Test-time RL trains on the unlabeled test questions, so train and test hold the same questions (as in
the official scripts' ``*-TTT`` data). The answer goes to ``reward_model.ground_truth``: verl's reward
function grades against it for evaluation and logging only; the DDRL trainer replaces the training
reward with the majority-vote pseudo-reward before any advantage is computed.

    python -m ddrl.integrations.verl.data --benchmark aime2024 --model qwen2.5-math-1.5b --out data/verl
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ddrl.prompts import chat_messages

__all__ = ["to_verl_rows", "write_benchmark"]


def to_verl_rows(records: Sequence[dict], cue: str) -> list[dict]:
    """verl RL rows (``data_source``, ``prompt`` chat messages, ``reward_model``, ``extra_info``) from
    ``{prompt, answer, source, id}`` records; ``cue`` places the boxed-answer instruction
    (:func:`ddrl.prompts.chat_messages`)."""
    rows = []
    for i, rec in enumerate(records):
        missing = [k for k in ("prompt", "answer") if k not in rec]
        if missing:
            raise KeyError(f"to_verl_rows: record {i} lacks field(s) {missing}; expected {{prompt, answer, source, id}}")
        rows.append({
            "data_source": str(rec.get("source", "ddrl")),
            "prompt": chat_messages(rec["prompt"], cue),
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(rec["answer"])},
            "extra_info": {"index": i, "id": str(rec.get("id", i))},
        })
    return rows


def write_benchmark(benchmark: str, model: str, out: str | Path, data_dir: str | Path | None = None) -> Path:
    """Write ``out/<benchmark>/{train,test}.parquet`` for ``model``'s cue placement; returns the folder."""
    import pandas as pd

    from ddrl.data import load_dataset
    from ddrl.models import get_preset

    rows = to_verl_rows(load_dataset(benchmark, data_dir=data_dir), get_preset(model).cue)
    folder = Path(out) / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        pd.DataFrame(rows).to_parquet(folder / f"{split}.parquet")
    return folder


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Write a benchmark as verl parquet files")
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--model", required=True, help="ddrl.models preset (decides where the cue goes)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--data-dir", default=None, help="benchmark data folder (default: ddrl.data's lookup)")
    args = ap.parse_args(argv)
    print(write_benchmark(args.benchmark, args.model, args.out, args.data_dir))


if __name__ == "__main__":
    main()
