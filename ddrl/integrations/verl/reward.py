"""verl's per-sample reward function for DDRL: extract the boxed answer, grade it against ground truth.

verl (0.9.x) calls ``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)``
once per response, from a thread pool inside the rollout (agent) loop. We return a dict: ``score`` goes
where verl reads rewards (``rm_scores``), every key goes into the batch's non-tensor fields.

- ``pred``: the boxed answer (:func:`ddrl.answers.extract_boxed`; ``""`` when there is none). The DDRL
  trainer votes on these and *replaces* ``score`` with the 0/1 pseudo-reward, so ground truth never
  reaches the policy gradient during test-time training.
- ``index``: ``extra_info["index"]`` (the question's row in the parquet; -1 if absent), so the COR stage
  can join dumped rollouts back to their prompt messages (:mod:`ddrl.integrations.verl.cor`).
- ``acc`` / ``score``: 1.0 if ``pred`` is equivalent to ``ground_truth`` (math-verify), else 0.0. Used as
  is for validation (verl reports it as test accuracy) and logged during training.

Grading goes through :func:`ddrl.answers.is_equivalent`: math-verify runs in a helper process with its own
signal-based timeouts disabled (they only work in the main thread, and this runs in threads), and our
wall-clock timeout (``$DDRL_GRADER_TIMEOUT`` seconds, default 5) is enforced by killing the helper.
This module does not import verl, so it is unit-testable anywhere.
"""

from __future__ import annotations

import os
from typing import Any

from ddrl.answers import extract_boxed, is_equivalent

__all__ = ["compute_score", "grader_timeout"]


def grader_timeout() -> float:
    """Seconds one math-verify comparison may take (``$DDRL_GRADER_TIMEOUT``, default 5.0)."""
    raw = os.environ.get("DDRL_GRADER_TIMEOUT", "5.0")
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"$DDRL_GRADER_TIMEOUT: expected a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"$DDRL_GRADER_TIMEOUT: expected a positive number of seconds, got {raw!r}")
    return value


def compute_score(
    data_source: str | None = None,
    solution_str: str | None = None,
    ground_truth: Any = None,
    extra_info: dict | None = None,
    **kwargs: Any,
) -> dict[str, float | str]:
    """``{"score": acc, "acc": acc, "pred": boxed answer or "", "index": question row}`` for one response (verl's signature).

    ``ground_truth`` may be None or empty (an unlabeled test-time set): then ``acc`` is 0.0.
    Extra keyword arguments that verl may pass (``reward_router_address`` ...) are ignored.
    """
    if solution_str is not None and not isinstance(solution_str, str):
        raise TypeError(f"compute_score(solution_str): expected str, got {type(solution_str).__name__}")
    pred = extract_boxed(solution_str)
    truth = None if ground_truth is None else str(ground_truth)
    acc = 1.0 if (pred and truth and is_equivalent(pred, truth, timeout=grader_timeout())) else 0.0
    index = (extra_info or {}).get("index", -1)
    return {"score": acc, "acc": acc, "pred": pred or "", "index": int(index) if index is not None else -1}
