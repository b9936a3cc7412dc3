"""verl's advantage path against ddrl.advantages (needs verl: run with .venv-verl, see docs/scaling_out.md)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("verl.protocol", reason="verl is not installed (optional extra; build .venv-verl, see docs/scaling_out.md)")
torch = pytest.importorskip("torch")

from verl import DataProto  # noqa: E402
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, get_adv_estimator_fn  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402

from ddrl.advantages import fixed, grpo  # noqa: E402
from ddrl.integrations.verl.advantage import register  # noqa: E402


def _batch(group_sizes, rng, length=7):
    """Random 0/1 outcome rewards at each response's last token; random response lengths >= 1."""
    n = sum(group_sizes)
    uids = np.array([f"p{g}" for g, s in enumerate(group_sizes) for _ in range(s)], dtype=object)
    perm = rng.permutation(n)  # groups interleaved, as after verl's balance_batch
    uids = uids[perm]
    lengths = rng.integers(1, length + 1, size=n)
    mask = (torch.arange(length)[None, :] < torch.as_tensor(lengths)[:, None]).float()
    r = rng.integers(0, 2, size=n).astype(np.float64)
    tlr = torch.zeros(n, length)
    tlr[torch.arange(n), torch.as_tensor(lengths - 1)] = torch.as_tensor(r, dtype=torch.float32)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": tlr, "response_mask": mask}, non_tensors={"uid": uids}
    )
    return data, r, uids, mask


def _reference(r, uids, fn):
    out = np.empty_like(r)
    for u in dict.fromkeys(uids):
        rows = np.flatnonzero(uids == u)
        out[rows] = fn(r[rows])
    return out


def test_ddrl_fixed_is_registered_under_its_name():
    register()
    assert get_adv_estimator_fn("ddrl_fixed").__name__ == "compute_ddrl_fixed_advantage"


@pytest.mark.parametrize("seed", range(5))
def test_ddrl_fixed_through_compute_advantage_equals_fixed(seed):
    register()
    rng = np.random.default_rng(seed)
    data, r, uids, mask = _batch([32, 32, 5, 1, 17], rng)
    out = compute_advantage(data, adv_estimator="ddrl_fixed")
    expected = torch.as_tensor(_reference(r, uids, fixed), dtype=torch.float32)[:, None] * mask
    torch.testing.assert_close(out.batch["advantages"], expected, atol=0, rtol=0)
    torch.testing.assert_close(out.batch["returns"], expected, atol=0, rtol=0)
    assert set(np.unique(out.batch["advantages"][mask.bool()].numpy())) <= {-1.0, 1.0}


def test_ddrl_fixed_rejects_non_binary_rewards():
    register()
    data, _, _, _ = _batch([4], np.random.default_rng(0))
    data.batch["token_level_rewards"][0, 0] += 0.5
    with pytest.raises(ValueError, match="binary"):
        compute_advantage(data, adv_estimator="ddrl_fixed")


@pytest.mark.parametrize("seed", range(5))
def test_verl_grpo_equals_ddrl_grpo_on_groups_of_two_or_more(seed):
    rng = np.random.default_rng(100 + seed)
    sizes = [int(s) for s in rng.integers(2, 40, size=6)] + [2, 32]
    data, r, uids, mask = _batch(sizes, rng)
    out = compute_advantage(data, adv_estimator="grpo")
    expected = _reference(r, uids, grpo)[:, None] * mask.numpy()
    np.testing.assert_allclose(out.batch["advantages"].numpy(), expected, atol=1e-6, rtol=0)


def test_verl_grpo_all_equal_group_is_zero_like_ddrl():
    mask = torch.ones(4, 3)
    tlr = torch.zeros(4, 3)
    tlr[:, -1] = 1.0
    adv, _ = compute_grpo_outcome_advantage(tlr, mask, np.array(["a"] * 4, dtype=object))
    assert torch.count_nonzero(adv) == 0
    assert np.all(grpo([1.0, 1.0, 1.0, 1.0]) == 0)


def test_documented_difference_singleton_group():
    """verl: a group of one gets mean 0, std 1, so A = r / (1 + eps); ddrl.advantages.grpo gives 0.
    Irrelevant for TTRL/DDRL (K = 32 rollouts per prompt), documented in docs/scaling_out.md."""
    tlr = torch.tensor([[0.0, 1.0]])
    adv, _ = compute_grpo_outcome_advantage(tlr, torch.ones(1, 2), np.array(["only"], dtype=object))
    assert adv[0, 0].item() == pytest.approx(1.0 / (1.0 + 1e-6))
    assert grpo([1.0]).tolist() == [0.0]
