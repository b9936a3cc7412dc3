"""Vote-and-select on a verl DataProto keeps tensors and non-tensor fields aligned (needs verl)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("verl.protocol", reason="verl is not installed (optional extra; build .venv-verl, see docs/scaling_out.md)")
torch = pytest.importorskip("torch")

from verl import DataProto  # noqa: E402

from ddrl.integrations.verl.reward import compute_score  # noqa: E402
from ddrl.integrations.verl.rollouts import (  # noqa: E402
    VotingRolloutManager,
    expand_for_votes,
    last_token_scores,
    vote_and_select,
)
from ddrl.seeds import numpy_generator  # noqa: E402
from ddrl.selection import bcs, random_subset  # noqa: E402
from ddrl.voting import majority_vote  # noqa: E402

N, K, L = 8, 4, 6
ANSWERS = [
    ["7", "7", "3", "7", None, "3", "07", "5"],  # label 7 (count 4 with "07")
    [None] * N,  # no answer at all
    ["1", "2", "2", "1", "2", "9", "1", "1"],  # label 1
]


def _output(answers, rng):
    """A fake rollout output: row r's response tokens all equal r, random lengths, rm_scores = gt acc."""
    rows = sum(len(a) for a in answers)
    lengths = rng.integers(1, L + 1, size=rows)
    mask = (torch.arange(L)[None, :] < torch.as_tensor(lengths)[:, None]).long()
    responses = torch.arange(rows)[:, None].repeat(1, L) * mask
    flat = [a for group in answers for a in group]
    return DataProto.from_dict(
        tensors={"responses": responses, "response_mask": mask, "rm_scores": torch.zeros(rows, L)},
        non_tensors={
            "pred": np.array(["" if a is None else a for a in flat], dtype=object),
            "row_id": np.arange(rows),
            "acc": np.zeros(rows),
        },
        meta_info={"timing": {"gen": 1.0}, "reward_extra_keys": ["pred", "acc"]},
    )


@pytest.mark.parametrize("selection", ["bcs", "random"])
def test_vote_and_select_keeps_rows_aligned(selection):
    out = _output(ANSWERS, np.random.default_rng(0))
    sel = vote_and_select(out, N, K, selection, seed=3, step=5)
    kept = sel.batch
    assert len(kept) == K * len(ANSWERS)
    expected_rows = []
    for p, answers in enumerate(ANSWERS):
        vote = majority_vote(answers)
        idx = bcs(vote.counts, K) if selection == "bcs" else random_subset(N, K, numpy_generator(3, "select", 5, p))
        assert sel.indices[p] == idx
        expected_rows += [p * N + i for i in idx]
    row_id = kept.non_tensor_batch["row_id"].tolist()
    assert row_id == expected_rows
    # tensors moved with the non-tensor fields
    assert kept.batch["responses"][:, 0].tolist() == row_id
    assert kept.batch["response_mask"].tolist() == out.batch["response_mask"][row_id].tolist()
    assert kept.non_tensor_batch["pred"].tolist() == out.non_tensor_batch["pred"][row_id].tolist()
    # 0/1 pseudo-rewards at each kept row's last response token, nowhere else
    label_of = {0: "7", 1: None, 2: "1"}
    for j, r in enumerate(row_id):
        p = r // N
        pred = ANSWERS[p][r % N]
        want = 1.0 if label_of[p] is not None and pred is not None and int(pred) == int(label_of[p]) else 0.0
        last = int(kept.batch["response_mask"][j].nonzero().max())
        assert kept.batch["rm_scores"][j, last].item() == want
        assert kept.batch["rm_scores"][j].sum().item() == want
        assert kept.non_tensor_batch["ddrl_pseudo_reward"][j] == want
    assert kept.meta_info["timing"] == {"gen": 1.0}
    assert {"pred", "acc", "ddrl_label", "ddrl_pseudo_reward"} <= set(kept.meta_info["reward_extra_keys"])
    assert sel.metrics["ddrl/label_none_frac"] == pytest.approx(1 / 3)


def test_bcs_keeps_majority_as_positives_on_the_batch():
    sel = vote_and_select(_output(ANSWERS[:1], np.random.default_rng(1)), N, K, "bcs", seed=0, step=0)
    # c* = 4 ("7","7","7","07"), K+ = min(4, 2) = 2 positives then the 2 lowest-count rollouts
    assert sel.indices[0] == [0, 1, 7, 4]
    assert sel.batch.non_tensor_batch["ddrl_pseudo_reward"].tolist() == [1.0, 1.0, 0.0, 0.0]


def test_vote_and_select_errors_name_the_problem():
    out = _output(ANSWERS, np.random.default_rng(0))
    with pytest.raises(ValueError, match="multiple of n_votes"):
        vote_and_select(out, 5, 2, "bcs", 0, 0)
    out.non_tensor_batch.pop("pred")
    with pytest.raises(KeyError, match="custom_reward_function"):
        vote_and_select(out, N, K, "bcs", 0, 0)


def test_last_token_scores():
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [0, 0, 0]])
    assert last_token_scores(mask, [1, 0.5, 1]).tolist() == [[0, 1, 0], [0, 0, 0.5], [1, 0, 0]]


class _FakeManager:
    """Answers each row with the boxed prompt id; records what it was asked."""

    def __init__(self):
        self.seen = []

    def generate_sequences(self, batch):
        self.seen.append(batch)
        rows = len(batch)
        pid = batch.non_tensor_batch["prompt_id"]
        mask = torch.ones(rows, L, dtype=torch.long)
        return DataProto.from_dict(
            tensors={"responses": torch.arange(rows)[:, None].repeat(1, L), "response_mask": mask},
            non_tensors={"pred": np.array([str(p) if i % 3 else "x" for i, p in enumerate(pid)], dtype=object)},
            meta_info={"timing": {}},
        )


def _gen_batch(prompts, k, validate=False):
    base = DataProto.from_dict(
        tensors={"input_ids": torch.arange(prompts)[:, None].repeat(1, 3)},
        non_tensors={"uid": np.array([f"u{i}" for i in range(prompts)], dtype=object), "prompt_id": np.arange(prompts)},
        meta_info={"global_steps": 2, **({"validate": True} if validate else {})},
    )
    return base.repeat(repeat_times=k, interleave=True)


def test_expand_for_votes_repeats_each_prompt_n_times():
    expanded, groups = expand_for_votes(_gen_batch(3, K), N)
    assert groups == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert expanded.non_tensor_batch["prompt_id"].tolist() == [p for p in range(3) for _ in range(N)]
    assert expanded.batch["input_ids"][:, 0].tolist() == [p for p in range(3) for _ in range(N)]


def test_voting_manager_generates_n_returns_k_and_passes_validation_through():
    fake = _FakeManager()
    mgr = VotingRolloutManager(fake, n_votes=N, n_train=K, selection="bcs", seed=0)
    out = mgr.generate_sequences(_gen_batch(3, K))
    assert len(fake.seen[0]) == 3 * N and len(out) == 3 * K
    assert 0.5 <= mgr.last_metrics["ddrl/majority_ratio"] <= 1.0  # "x" answers are a minority of each 8
    # prompt p's kept rows come from prompt p's generations, in prompt order (verl unions by position)
    assert [int(r) // N for r in out.batch["responses"][:, 0]] == [p for p in range(3) for _ in range(K)]
    val = _gen_batch(2, 3, validate=True)
    assert len(mgr.generate_sequences(val)) == 6 and len(fake.seen[-1]) == 6
    with pytest.raises(ValueError, match="n_votes"):
        VotingRolloutManager(fake, n_votes=2, n_train=K, selection="bcs", seed=0)


def test_reward_function_extracts_boxed_answer_and_grades_from_threads():
    cases = [("so \\boxed{\\frac{1}{2}}", "0.5", 1.0, "\\frac{1}{2}"), ("no box", "3", 0.0, ""),
             ("\\boxed{4}", "5", 0.0, "4"), ("\\boxed{25.0}", "25", 1.0, "25.0")] * 3
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda c: compute_score("aime", c[0], c[1], {}), cases))
    for (_, _, acc, pred), res in zip(cases, results):
        assert res == {"score": acc, "acc": acc, "pred": pred, "index": -1}  # extra_info without "index"
