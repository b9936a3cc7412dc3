"""Advantage estimators (ddrl.advantages)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddrl.advantages import ADVANTAGES, fixed, get_advantage, grpo, grpo_no_std


def test_grpo_balanced_group() -> None:
    # mean 0.5, unbiased std sqrt(4 * 0.25 / 3) = 0.57735 -> +-0.5 / 0.57735 = +-0.866
    a = grpo([1, 0, 0, 1])
    assert a.dtype == np.float64
    np.testing.assert_allclose(a, [0.866, -0.866, -0.866, 0.866], atol=5e-4)
    np.testing.assert_allclose(a, np.array([1, -1, -1, 1]) * 0.5 / (np.sqrt(1 / 3) + 1e-6), rtol=1e-12)


def test_grpo_one_dissenter() -> None:
    # [1, 0, 0, 0]: mean 0.25, unbiased std sqrt((0.5625 + 3 * 0.0625) / 3) = 0.5 -> [1.5, -0.5, -0.5, -0.5]
    np.testing.assert_allclose(grpo([1, 0, 0, 0]), [1.5, -0.5, -0.5, -0.5], atol=1e-5)
    # The lone dissenter's advantage grows with the group: the "spurious amplification" DAE removes.
    # [1] + [0] * 31: mean 1/32, unbiased std sqrt(1/32) -> (31/32) / sqrt(1/32) = 31 / sqrt(32) = 5.48.
    assert grpo([1] + [0] * 31)[0] == pytest.approx(31 / np.sqrt(32), rel=1e-5)


def test_grpo_equal_rewards_and_singletons_are_zero() -> None:
    assert grpo([1, 1, 1]).tolist() == [0.0, 0.0, 0.0]
    assert grpo([0, 0]).tolist() == [0.0, 0.0]
    assert grpo([1]).tolist() == [0.0]
    assert grpo_no_std([1]).tolist() == [0.0]


def test_grpo_eps() -> None:
    np.testing.assert_allclose(grpo([1, 0], eps=0.0), [np.sqrt(0.5), -np.sqrt(0.5)])
    with pytest.raises(ValueError, match="eps"):
        grpo([1, 0], eps=-1.0)


def test_grpo_no_std() -> None:
    assert grpo_no_std([1, 0, 0, 1]).tolist() == [0.5, -0.5, -0.5, 0.5]
    assert grpo_no_std([1, 0, 0, 0]).tolist() == [0.75, -0.25, -0.25, -0.25]


def test_fixed_is_dae() -> None:
    assert fixed([1, 0, 0, 1]).tolist() == [1.0, -1.0, -1.0, 1.0]
    assert fixed([0, 0, 0]).tolist() == [-1.0, -1.0, -1.0]  # e.g. a group with no answers at all
    assert fixed(np.array([True, False])).tolist() == [1.0, -1.0]
    with pytest.raises(ValueError, match="0 or 1"):
        fixed([1, 0.5])


@pytest.mark.parametrize("name", sorted(ADVANTAGES))
def test_bad_groups(name: str) -> None:
    f = get_advantage(name)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        f([])
    with pytest.raises(ValueError, match="non-empty 1-D"):
        f([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="finite"):
        f([1, float("nan")])


def test_registry() -> None:
    assert get_advantage("grpo") is grpo
    assert get_advantage("grpo_no_std") is grpo_no_std
    assert get_advantage("fixed") is fixed
    with pytest.raises(KeyError, match="grpo"):
        get_advantage("dae")


binary_groups = st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=128)
real_groups = st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=128)


@given(binary_groups)
def test_advantages_are_finite_on_binary_rewards(rewards: list[float]) -> None:
    for f in ADVANTAGES.values():
        a = f(rewards)
        assert a.shape == (len(rewards),) and np.all(np.isfinite(a))
    assert abs(grpo(rewards).sum()) < 1e-6  # centred
    assert set(fixed(rewards).tolist()) <= {-1.0, 1.0}


@given(real_groups)
def test_grpo_is_finite_on_real_rewards(rewards: list[float]) -> None:
    for f in (grpo, grpo_no_std):
        assert np.all(np.isfinite(f(rewards)))


def test_entropy_reshape_hand_worked() -> None:
    from ddrl.advantages import entropy_reshape

    # H = mean(1, 3) = 2: the confident response (H_i = 1) is scaled by 1 + 1/2, the uncertain one by 1 - 1/2.
    np.testing.assert_allclose(entropy_reshape([1.0, -1.0], [1.0, 3.0]), [1.5, -0.5])
    np.testing.assert_allclose(entropy_reshape([0.7, -0.3], [2.0, 2.0]), [0.7, -0.3])  # equal entropies: unchanged
    np.testing.assert_allclose(entropy_reshape([1.0, -1.0], [0.0, 0.0]), [1.0, -1.0])  # H = 0: unchanged
    with pytest.raises(ValueError, match="shapes"):
        entropy_reshape([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="entropies"):
        entropy_reshape([1.0], [-1.0])


def test_clip_advantages() -> None:
    from ddrl.advantages import clip_advantages

    assert clip_advantages([-5.48, 0.5, 3.0]).tolist() == [-2.0, 0.5, 2.0]
    with pytest.raises(ValueError, match="bound"):
        clip_advantages([1.0], bound=0)
