"""COR data from a verl DDRL run: consensus rollouts as an SFT parquet of chat ``messages``.

Reads the JSONL files verl writes to ``trainer.rollout_data_dir`` (one per step; the DDRL trainer adds
``ddrl_pseudo_reward`` and the reward function adds ``index``), keeps the rollouts whose pseudo-reward is
1 (they agree with the majority vote), and writes ``messages`` = the question's prompt messages (from the
RL parquet) + the rollout as the assistant turn, for verl's SFT trainer (``data.messages_key=messages``)
or any chat SFT. As in the official code's README, the consensus rollouts are those sampled during RL;
the paper's M=128 fresh samples would need a separate generation pass (not part of this module).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["consensus_rows", "main"]


def consensus_rows(dump_dir: str | Path, prompts: list) -> list[dict]:
    """``[{"messages": [...prompt, {"role": "assistant", "content": response}]}]`` for every dumped
    rollout with ``ddrl_pseudo_reward == 1``; ``prompts[i]`` are question i's prompt messages."""
    files = sorted(Path(dump_dir).glob("*.jsonl"), key=lambda f: (len(f.stem), f.stem))
    if not files:
        raise FileNotFoundError(f"no *.jsonl rollout dumps in {dump_dir} (trainer.rollout_data_dir of the RL run)")
    rows = []
    for f in files:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            rec = json.loads(line)
            for key in ("ddrl_pseudo_reward", "index", "output"):
                if key not in rec:
                    raise KeyError(f"{f}:{n}: no field {key!r}; was the run launched with ddrl.integrations.verl?")
            if float(rec["ddrl_pseudo_reward"]) != 1.0:
                continue
            i = int(rec["index"])
            if not 0 <= i < len(prompts):
                raise IndexError(f"{f}:{n}: question index {i} outside the prompt table ({len(prompts)} questions)")
            rows.append({"messages": [*map(dict, prompts[i]), {"role": "assistant", "content": rec["output"]}]})
    return rows


def main(argv: list[str] | None = None) -> None:
    import pandas as pd

    ap = argparse.ArgumentParser(description="Consensus rollouts of a verl DDRL run -> SFT parquet")
    ap.add_argument("--rollouts", required=True, help="trainer.rollout_data_dir of the RL run")
    ap.add_argument("--prompts", required=True, help="the RL run's train.parquet (prompt messages)")
    ap.add_argument("--out", required=True, help="output parquet")
    args = ap.parse_args(argv)
    prompts = list(pd.read_parquet(args.prompts)["prompt"])
    rows = consensus_rows(args.rollouts, prompts)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(args.out)
    print(f"{len(rows)} consensus rollouts -> {args.out}")


if __name__ == "__main__":
    main()
