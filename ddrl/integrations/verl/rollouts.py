"""Vote on N rollouts per prompt, keep K of them, and write the 0/1 rewards, on a verl ``DataProto``.

verl (0.9.x) has no hook to drop rollouts, so :class:`VotingRolloutManager` wraps the trainer's rollout
manager: asked for ``rollout.n`` (K=32) responses per prompt, it generates ``n_votes`` (N=64), votes on
all N with :func:`ddrl.voting.majority_vote`, selects K with :mod:`ddrl.selection` (``random`` = TTRL,
``bcs`` = DDRL) and returns exactly the K rows per prompt verl expects, in verl's order, with the
pseudo-rewards written where verl reads the scores (``rm_scores``, the last response token).
Validation requests (``meta_info["validate"]``) pass through untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from verl import DataProto

from ddrl.seeds import numpy_generator
from ddrl.selection import get_selection
from ddrl.voting import Vote, majority_vote, pseudo_rewards

__all__ = [
    "group_rows",
    "pseudo_rewards",
    "expand_for_votes",
    "last_token_scores",
    "vote_and_select",
    "VotingRolloutManager",
]

#: Non-tensor fields the selection adds (per kept rollout); also listed in ``meta_info["reward_extra_keys"]``.
EXTRA_KEYS = ("ddrl_label", "ddrl_majority_ratio", "ddrl_pseudo_reward", "ddrl_count")


def group_rows(uids: Sequence[Any]) -> list[list[int]]:
    """Row indices of each prompt, prompts in order of first appearance, rows in order within a prompt."""
    groups: dict[Any, list[int]] = {}
    for i, u in enumerate(uids):
        groups.setdefault(u, []).append(i)
    return list(groups.values())


def expand_for_votes(gen_batch: DataProto, n_votes: int) -> tuple[DataProto, list[list[int]]]:
    """From verl's generation batch (each prompt repeated ``rollout.n`` times, consecutively, sharing a
    ``uid``) build one with each prompt repeated ``n_votes`` times. Returns it and the row groups of the
    input (one list of rows per prompt)."""
    if "uid" not in gen_batch.non_tensor_batch:
        raise KeyError("expand_for_votes: the generation batch has no non-tensor field 'uid' (verl's prompt id)")
    groups = group_rows(gen_batch.non_tensor_batch["uid"])
    for rows in groups:
        if rows != list(range(rows[0], rows[0] + len(rows))):
            raise ValueError("expand_for_votes: each prompt's rows must be consecutive (verl's interleaved repeat)")
    first = gen_batch.select_idxs(np.array([rows[0] for rows in groups], dtype=np.int64))
    return first.repeat(repeat_times=n_votes, interleave=True), groups


def last_token_scores(response_mask: torch.Tensor, rewards: Sequence[float]) -> torch.Tensor:
    """(batch, response_len) float32 zeros with ``rewards[i]`` at row i's last response token (where
    verl's agent loop puts a sequence score; a response with no token gets it at position 0)."""
    mask = response_mask.to(torch.long)
    last = (mask * torch.arange(mask.shape[1], device=mask.device)).argmax(dim=1)
    out = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    out[torch.arange(mask.shape[0], device=mask.device), last] = torch.as_tensor(
        np.asarray(rewards, dtype=np.float32), device=mask.device
    )
    return out


@dataclass(frozen=True)
class Selected:
    """What :func:`vote_and_select` keeps: the K rows per prompt and the step's metrics."""

    batch: DataProto
    metrics: dict[str, float]
    votes: list[Vote]
    indices: list[list[int]]  # per prompt, the kept rollouts' positions among its N


def vote_and_select(
    output: DataProto,
    n_votes: int,
    n_train: int,
    selection: str,
    seed: int,
    step: int,
    answer_key: str = "pred",
) -> Selected:
    """Vote and select on ``output``: prompt p's N=``n_votes`` rollouts are rows [p*N, (p+1)*N).

    Answers come from ``output.non_tensor_batch[answer_key]`` (the reward function's ``pred``). Rows are
    indexed with ``DataProto.select_idxs``, so tensors and non-tensor fields stay aligned. ``rm_scores``
    (added if missing) becomes the 0/1 pseudo-reward; the ground-truth score the reward function wrote
    is kept as ``acc``. ``random`` selection draws from ``numpy_generator(seed, "select", step, p)``.
    """
    if answer_key not in output.non_tensor_batch:
        raise KeyError(
            f"vote_and_select: no non-tensor field {answer_key!r} in the rollouts (fields: "
            f"{sorted(output.non_tensor_batch)}); set reward.custom_reward_function to "
            "ddrl/integrations/verl/reward.py:compute_score"
        )
    rows = len(output)
    if n_votes < 1 or rows % n_votes:
        raise ValueError(f"vote_and_select: {rows} rollouts is not a multiple of n_votes={n_votes}")
    select = get_selection(selection)
    answers = output.non_tensor_batch[answer_key]
    keep: list[int] = []
    rewards: list[float] = []
    votes: list[Vote] = []
    indices: list[list[int]] = []
    extra: dict[str, list] = {k: [] for k in EXTRA_KEYS}
    for p in range(rows // n_votes):
        base = p * n_votes
        group = [None if a is None or a == "" else str(a) for a in answers[base : base + n_votes]]
        vote = majority_vote(group)
        r = pseudo_rewards(vote)
        idx = [int(i) for i in select(vote.counts, n_train, numpy_generator(seed, "select", step, p))]
        keep += [base + i for i in idx]
        rewards += [float(r[i]) for i in idx]
        extra["ddrl_label"] += [vote.label or ""] * len(idx)
        extra["ddrl_majority_ratio"] += [vote.majority_ratio] * len(idx)
        extra["ddrl_pseudo_reward"] += [float(r[i]) for i in idx]
        extra["ddrl_count"] += [vote.counts[i] for i in idx]
        votes.append(vote)
        indices.append(idx)
    kept = output.select_idxs(np.asarray(keep, dtype=np.int64))
    kept.meta_info = dict(output.meta_info)
    kept.batch["rm_scores"] = last_token_scores(kept.batch["response_mask"], rewards)
    for k, v in extra.items():
        kept.non_tensor_batch[k] = np.asarray(v, dtype=object if k == "ddrl_label" else None)
    keys = list(kept.meta_info.get("reward_extra_keys", []))
    kept.meta_info["reward_extra_keys"] = keys + [k for k in EXTRA_KEYS if k not in keys]
    metrics = _metrics(votes, np.asarray(rewards), output, answer_key)
    return Selected(kept, metrics, votes, indices)


def _metrics(votes: list[Vote], kept_rewards: np.ndarray, output: DataProto, answer_key: str) -> dict[str, float]:
    answers = output.non_tensor_batch[answer_key]
    m = {
        "ddrl/label_none_frac": float(np.mean([v.label is None for v in votes])),
        "ddrl/majority_ratio": float(np.mean([v.majority_ratio for v in votes])),
        "ddrl/selected_reward_mean": float(kept_rewards.mean()) if kept_rewards.size else float("nan"),
        "ddrl/no_answer_frac": float(np.mean([a is None or a == "" for a in answers])),
    }
    if "acc" in output.non_tensor_batch:  # ground truth, logged only: accuracy of all N rollouts
        m["ddrl/gt_acc_all_votes"] = float(np.mean(output.non_tensor_batch["acc"].astype(np.float64)))
    return m


class VotingRolloutManager:
    """Wraps verl's rollout manager: N-vote generation and K-selection for training batches.

    ``generate_sequences(batch)`` with ``meta_info["validate"]`` set is forwarded unchanged; otherwise
    the batch (K rows per prompt) is expanded to N rows per prompt, generated, voted on and cut back to
    K rows per prompt (:func:`vote_and_select`). Other attributes are forwarded to the wrapped manager.
    The latest step's metrics are kept in :attr:`last_metrics` for the trainer to log.
    """

    def __init__(self, manager: Any, n_votes: int, n_train: int, selection: str, seed: int) -> None:
        if n_votes < n_train:
            raise ValueError(f"ddrl.n_votes ({n_votes}) must be >= actor_rollout_ref.rollout.n ({n_train})")
        get_selection(selection)  # fail early on an unknown name
        self.manager, self.n_votes, self.n_train = manager, n_votes, n_train
        self.selection, self.seed = selection, seed
        self.last_metrics: dict[str, float] = {}
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.manager, name)

    def generate_sequences(self, batch: DataProto) -> DataProto:
        if batch.meta_info.get("validate", False):
            return self.manager.generate_sequences(batch)
        expanded, groups = expand_for_votes(batch, self.n_votes)
        if any(len(rows) != self.n_train for rows in groups):
            raise ValueError(
                f"VotingRolloutManager: expected {self.n_train} rows per prompt (rollout.n), got "
                f"{sorted({len(r) for r in groups})}"
            )
        step = int(batch.meta_info.get("global_steps", self.calls))
        self.calls += 1
        output = self.manager.generate_sequences(expanded)
        selected = vote_and_select(output, self.n_votes, self.n_train, self.selection, self.seed, step)
        self.last_metrics = selected.metrics
        return selected.batch
