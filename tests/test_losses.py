"""Losses (ddrl.losses)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ddrl.losses import KL_COEF, kl_low_var, masked_token_mean, policy_loss, sft_nll


def one_token(log_ratio: float, advantage: float) -> torch.Tensor:
    """The policy loss of a single token with the given log-ratio and advantage."""
    logp = torch.tensor([[log_ratio]])
    loss, _ = policy_loss(logp, torch.zeros(1, 1), torch.tensor([advantage]), torch.ones(1, 1))
    return loss


@pytest.mark.parametrize(
    "ratio, advantage, expected",
    [
        (1.0, 1.0, -1.0),
        (2.0, 1.0, -1.2),  # A > 0: ratio clipped at 1 + 0.2
        (0.5, 1.0, -0.5),  # A > 0, ratio low: the unclipped (pessimistic) term
        (0.5, -1.0, 0.8),  # A < 0: ratio clipped at 1 - 0.2
        (2.0, -1.0, 2.0),  # A < 0, ratio high: unclipped, below the dual-clip cap
        (5.0, -1.0, 3.0),  # A < 0, ratio > 3: dual clip caps the loss at -3 A
        (5.0, -2.0, 6.0),
    ],
)
def test_policy_loss_worked_cases(ratio: float, advantage: float, expected: float) -> None:
    assert one_token(math.log(ratio), advantage).item() == pytest.approx(expected, rel=1e-6)


def test_log_ratio_is_clamped() -> None:
    logp = torch.tensor([[-50.0, 50.0]])
    loss, _ = policy_loss(logp, torch.zeros(1, 2), torch.tensor([[1.0, -1.0]]), torch.ones(1, 2))
    # token 1: ratio e^-20 (not e^-50) -> -e^-20; token 2: capped at 3.
    assert loss.item() == pytest.approx((-math.exp(-20) + 3.0) / 2, rel=1e-6)
    _, metrics = policy_loss(torch.tensor([[-50.0]]), torch.zeros(1, 1), torch.tensor([1.0]), torch.ones(1, 1))
    assert metrics["ppo_kl"] == pytest.approx(20.0)  # old - new log-prob after the clamp: 20, not 50


def test_token_mean_over_the_batch_and_mask() -> None:
    # Two sequences, per-sequence advantages +1 and -1, 2 and 1 real tokens: token-mean = -(1 + 1 - 1) / 3.
    logp = torch.zeros(2, 3)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    loss, metrics = policy_loss(logp, logp, torch.tensor([1.0, -1.0]), mask)
    assert loss.item() == pytest.approx(-1 / 3)
    assert metrics == {"clipfrac": 0.0, "clipfrac_lower": 0.0, "ppo_kl": 0.0, "ratio_mean": 1.0}
    # Masked positions do not matter, whatever they hold.
    logp2 = logp.clone()
    logp2[0, 2] = 7.0
    logp2[1, 1:] = -9.0
    assert policy_loss(logp2, logp, torch.tensor([1.0, -1.0]), mask)[0].item() == pytest.approx(-1 / 3)


def test_gradient_at_ratio_one() -> None:
    logp = torch.zeros(2, 2, requires_grad=True)
    loss, _ = policy_loss(logp, torch.zeros(2, 2), torch.tensor([2.0, -1.0]), torch.ones(2, 2))
    loss.backward()
    # d/dlogp of -A exp(logp - old) at logp = old is -A, divided by the 4 tokens.
    assert logp.grad.tolist() == [[-0.5, -0.5], [0.25, 0.25]]


def test_clip_metrics() -> None:
    logp = torch.log(torch.tensor([[2.0, 5.0, 1.0, 0.5]]))
    loss, m = policy_loss(logp, torch.zeros(1, 4), torch.tensor([[1.0, -1.0, 1.0, -1.0]]), torch.ones(1, 4))
    assert loss.item() == pytest.approx((-1.2 + 3.0 - 1.0 + 0.8) / 4)
    assert m["clipfrac"] == pytest.approx(2 / 4)  # tokens 1 and 4
    assert m["clipfrac_lower"] == pytest.approx(1 / 4)  # token 2


def test_policy_loss_bad_input() -> None:
    z = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="one shape"):
        policy_loss(z, torch.zeros(2, 4), torch.zeros(2), torch.ones(2, 3))
    with pytest.raises(ValueError, match="advantages"):
        policy_loss(z, z, torch.zeros(3), torch.ones(2, 3))
    with pytest.raises(ValueError, match="dual_clip"):
        policy_loss(z, z, torch.zeros(2), torch.ones(2, 3), dual_clip=1.0)


def test_kl_low_var_worked_cases() -> None:
    # d = ref - logp: ln 2 -> 2 - ln 2 - 1; -ln 2 -> 1/2 + ln 2 - 1; 30 -> clamped to 20 -> e^20 - 21 -> 10.
    logp = torch.tensor([[0.0, 0.0, 0.0, 0.0]])
    ref = torch.tensor([[math.log(2), -math.log(2), 30.0, 5.0]])
    kl = kl_low_var(logp, ref, torch.tensor([[1, 1, 1, 0]]))
    expected = [1 - math.log(2), math.log(2) - 0.5, 10.0, 0.0]  # the last token is masked
    assert kl[0].tolist() == pytest.approx(expected, rel=1e-6)
    assert KL_COEF == 1e-3


def test_sft_nll_counts_response_tokens_only() -> None:
    logp = torch.tensor([[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0]])
    mask = torch.tensor([[0, 1, 1], [0, 0, 1]])  # prompt / padding positions are 0
    assert sft_nll(logp, mask).item() == pytest.approx((2 + 3 + 6) / 3)


def test_masked_token_mean_of_nothing_is_zero() -> None:
    assert masked_token_mean(torch.ones(2, 2), torch.zeros(2, 2)).item() == 0.0


shapes = st.tuples(st.integers(1, 4), st.integers(1, 6))


def tensors(draw: st.DrawFn, shape: tuple[int, int], lo: float, hi: float) -> torch.Tensor:
    values = draw(st.lists(st.floats(lo, hi), min_size=shape[0] * shape[1], max_size=shape[0] * shape[1]))
    return torch.tensor(values, dtype=torch.float64).reshape(shape)


@settings(max_examples=50, deadline=None)
@given(st.data(), shapes)
def test_clipped_loss_is_plain_surrogate_at_ratio_one(data: st.DataObject, shape: tuple[int, int]) -> None:
    logp = tensors(data.draw, shape, -30.0, 0.0)
    adv = tensors(data.draw, shape, -5.0, 5.0)
    mask = tensors(data.draw, shape, 0.0, 1.0).round()
    loss, m = policy_loss(logp, logp.clone(), adv, mask)
    plain = -(adv * mask).sum() / mask.sum().clamp(min=1)
    assert loss.item() == pytest.approx(plain.item(), abs=1e-9)
    assert m["clipfrac"] == 0.0 and m["clipfrac_lower"] == 0.0


@settings(max_examples=50, deadline=None)
@given(st.data(), shapes)
def test_kl_is_zero_iff_policy_is_reference(data: st.DataObject, shape: tuple[int, int]) -> None:
    logp = tensors(data.draw, shape, -30.0, 0.0)
    ref = tensors(data.draw, shape, -30.0, 0.0)
    mask = torch.ones(shape, dtype=torch.float64)
    assert torch.all(kl_low_var(logp, logp.clone(), mask) == 0)
    kl = kl_low_var(logp, ref, mask)
    assert torch.all(kl >= 0) and torch.all(kl <= 10)
