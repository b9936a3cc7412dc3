"""COR data for a verl DDRL run: consensus rollouts as an SFT parquet of chat ``messages``.

Two sources, one output format (``messages`` = the question's prompt messages from the RL parquet + the
response as the assistant turn, for verl's SFT trainer with ``data.messages_key=messages`` or any chat SFT):

- ``algorithm1`` (default; the paper's Algorithm 1 and Sec. 3.3): after RL, sample M = 128 responses per
  question from the RL-adapted model (:func:`sample_responses`, vLLM, at the evaluation settings T = 0.6,
  top-p 0.95 as the companion's trainer does), majority-vote them, and keep the responses that agree with
  the vote, at most ``keep`` per question (Sec. 4.1: 4 for MATH-500, 16 for AMC and AIME 2024). The
  selection is :func:`ddrl.cor.consensus_indices`, the same function the companion's own COR uses.
- ``readme`` (the official code's README variant, kept as a named option): the rollouts verl dumped to
  ``trainer.rollout_data_dir`` *during* RL whose pseudo-reward is 1, every one of them (no cap, no fresh
  samples), as ``github.com/yuyongcan/DDRL``'s README suggests feeding to an external SFT framework.

``python -m ddrl.integrations.verl.cor sample ...`` writes the M samples (a parquet: ``index``,
``responses``); ``select`` turns them into the SFT parquet; ``readme`` reads RL dumps instead.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

__all__ = ["SOURCES", "algorithm1_rows", "consensus_rows", "keep_for", "main", "sample_responses",
           "samples_by_question"]

#: The COR data sources: Algorithm 1 (the paper) and the official README's variant.
SOURCES = ("algorithm1", "readme")


def keep_for(benchmark: str) -> int:
    """The paper's COR samples kept per question for a :mod:`ddrl.data` benchmark (4 MATH-500, 16 AMC / AIME 2024)."""
    from ddrl import paper

    return int(paper.setting_for("cor_keep", benchmark))


def _messages(prompt, response: str) -> list[dict]:
    return [*map(dict, prompt), {"role": "assistant", "content": response}]


def algorithm1_rows(prompts: Sequence, responses: Sequence[Sequence[str]], keep: int) -> tuple[list[dict], list[dict]]:
    """Algorithm 1's COR data: for question ``i`` (prompt messages ``prompts[i]``), the responses among
    ``responses[i]`` (its M samples after RL) that agree with their majority vote, at most ``keep``.

    Returns ``(rows, stats)``: SFT rows ``{"messages": [...]}`` and per question ``{index, label, label_count,
    m, kept}``. A count mismatch is an error naming both lengths."""
    from ddrl.cor import consensus_indices

    if len(prompts) != len(responses):
        raise ValueError(f"algorithm1_rows: {len(prompts)} prompts but responses for {len(responses)} questions")
    rows, stats = [], []
    for i, (prompt, texts) in enumerate(zip(prompts, responses)):
        texts = [str(t) for t in texts]
        agree, label, count = consensus_indices(texts, keep)
        rows.extend({"messages": _messages(prompt, texts[j])} for j in agree)
        stats.append({"index": i, "label": label, "label_count": count, "m": len(texts), "kept": len(agree)})
    return rows, stats


def samples_by_question(samples, n_questions: int, name: str = "samples") -> list[list[str]]:
    """The ``responses`` of a samples frame (columns ``index``, ``responses``; any row order) as one list per
    question ``0..n_questions-1``; a missing or extra question is an error naming ``name``."""
    for col in ("index", "responses"):
        if col not in samples.columns:
            raise KeyError(f"{name}: no column {col!r} (expected the parquet written by `sample`)")
    samples = samples.sort_values("index")
    if [int(i) for i in samples["index"]] != list(range(n_questions)):
        raise ValueError(f"{name}: expected one row per question 0..{n_questions - 1} of the prompt table, "
                         f"got indices {sorted(map(int, samples['index']))[:10]}...")
    return [list(r) for r in samples["responses"]]


def consensus_rows(dump_dir: str | Path, prompts: list) -> list[dict]:
    """The README variant: ``[{"messages": [...prompt, {"role": "assistant", "content": response}]}]`` for
    every rollout dumped during RL with ``ddrl_pseudo_reward == 1``; ``prompts[i]`` are question i's prompt
    messages."""
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
            rows.append({"messages": _messages(prompts[i], rec["output"])})
    return rows


def sample_responses(model_path: str, prompts: Sequence, m: int, *, temperature: float = 0.6, top_p: float = 0.95,
                     max_new_tokens: int = 3072, seed: int = 0, **engine_kwargs) -> list[list[str]]:
    """M responses per question from the RL-adapted model (GPU, vLLM via :class:`ddrl.sampling.VLLMSampler`);
    ``prompts[i]`` are chat messages, formatted with the model's chat template."""
    from ddrl.sampling import VLLMSampler

    sampler = VLLMSampler(model_path, seed=seed, **engine_kwargs)
    texts = [sampler.tokenizer.apply_chat_template([dict(x) for x in p], tokenize=False, add_generation_prompt=True)
             for p in prompts]
    return [[r.text for r in rs] for rs in sampler.sample(texts, n=m, temperature=temperature, top_p=top_p,
                                                          max_new_tokens=max_new_tokens, seed=seed)]


def main(argv: list[str] | None = None) -> None:
    import pandas as pd

    ap = argparse.ArgumentParser(description="COR data of a verl DDRL run -> SFT parquet (Algorithm 1, or the README variant)")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="Algorithm 1, step 1: M samples per question from the RL-adapted model (GPU)")
    s.add_argument("--model", required=True, help="the RL-adapted model (HF checkpoint directory)")
    s.add_argument("--prompts", required=True, help="the RL run's train.parquet (prompt messages)")
    s.add_argument("--out", required=True, help="output parquet of samples (index, responses)")
    s.add_argument("--m", type=int, default=128, help="M, samples per question (paper: 128)")
    s.add_argument("--temperature", type=float, default=0.6)
    s.add_argument("--top-p", type=float, default=0.95)
    s.add_argument("--max-tokens", type=int, default=3072)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--tensor-parallel-size", type=int, default=1)
    c = sub.add_parser("select", help="Algorithm 1, step 2: majority vote, keep up to --keep agreeing per question")
    c.add_argument("--samples", required=True, help="the parquet written by `sample`")
    c.add_argument("--prompts", required=True, help="the RL run's train.parquet (prompt messages)")
    c.add_argument("--out", required=True, help="output SFT parquet")
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--keep", type=int, help="agreeing samples kept per question")
    g.add_argument("--benchmark", choices=("aime2024", "amc", "math500"), help="the paper's keep for it (4 or 16)")
    r = sub.add_parser("readme", help="the official README's variant: RL-time rollouts with pseudo-reward 1, uncapped")
    r.add_argument("--rollouts", required=True, help="trainer.rollout_data_dir of the RL run")
    r.add_argument("--prompts", required=True, help="the RL run's train.parquet (prompt messages)")
    r.add_argument("--out", required=True, help="output SFT parquet")
    args = ap.parse_args(argv)

    prompts = list(pd.read_parquet(args.prompts)["prompt"])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    if args.command == "sample":
        if args.m < 1:
            ap.error(f"--m must be >= 1, got {args.m}")
        responses = sample_responses(args.model, prompts, args.m, temperature=args.temperature, top_p=args.top_p,
                                     max_new_tokens=args.max_tokens, seed=args.seed,
                                     tensor_parallel_size=args.tensor_parallel_size)
        pd.DataFrame({"index": range(len(prompts)), "responses": responses}).to_parquet(args.out)
        print(f"{len(prompts)} questions x {args.m} samples -> {args.out}")
        return
    if args.command == "select":
        responses = samples_by_question(pd.read_parquet(args.samples), len(prompts), args.samples)
        keep = args.keep if args.keep is not None else keep_for(args.benchmark)
        if keep < 1:
            ap.error(f"--keep must be >= 1, got {keep}")
        rows, stats = algorithm1_rows(prompts, responses, keep)
        pd.DataFrame(rows).to_parquet(args.out)
        print(f"{len(rows)} consensus samples ({keep} at most per question, {sum(s['kept'] > 0 for s in stats)} "
              f"of {len(stats)} questions) -> {args.out}")
        return
    rows = consensus_rows(args.rollouts, prompts)
    pd.DataFrame(rows).to_parquet(args.out)
    print(f"{len(rows)} consensus rollouts (README variant) -> {args.out}")


if __name__ == "__main__":
    main()
