"""Which way :mod:`ddrl.logprobs` computes the update's log-probs, without torch: ``DDRL_LOGPROBS`` read and checked
(:func:`env_choice`), what a cached run's key records of it (:func:`backend_key`), and a block pinned to one backend
(:func:`pinned_backend`, as the claims study pins ``"hf"``). The study's job lists and notebook 06's renderer import
these without loading torch; :func:`ddrl.logprobs.logprob_backend` turns the choice into a backend for a model.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

from ddrl.infra.pool import environ

#: what ``DDRL_LOGPROBS`` / :func:`ddrl.logprobs.logprob_backend` accept
LOGPROB_BACKENDS = ("auto", "hf", "shared-prompt")


def env_choice() -> str:
    """``DDRL_LOGPROBS`` (default ``auto``), refused by name unless one of :data:`LOGPROB_BACKENDS`."""
    choice = os.environ.get("DDRL_LOGPROBS") or "auto"
    if choice not in LOGPROB_BACKENDS:
        raise ValueError(f"DDRL_LOGPROBS must be one of {LOGPROB_BACKENDS}, got {choice!r}")
    return choice


def backend_key() -> dict:
    """What a cached run's key records of the log-prob backend: nothing when ``DDRL_LOGPROBS=hf`` (so the runs
    computed before the shared-prompt forward existed, all ``"hf"``, keep their keys), else the choice; under
    ``auto`` also that the old log-probs may come from the sampler (:func:`ddrl.logprobs.old_logprobs_from_sampler`),
    so runs computed before that rule get other keys."""
    choice = env_choice()
    if choice == "hf":
        return {}
    return {"logprobs": choice, **({"old_logprobs": "sampler"} if choice == "auto" else {})}


@contextlib.contextmanager
def pinned_backend(name: str) -> Iterator[None]:
    """Run the block (and the processes it starts) with ``DDRL_LOGPROBS=name`` and the sampler's decode attention
    pinned to torch's (``DDRL_DECODE_ATTENTION=torch``, :mod:`ddrl.accel.native_attention`): the claims study's runs were
    all computed that way. The previous values are restored."""
    if name not in LOGPROB_BACKENDS:
        raise ValueError(f"logprob backend must be one of {LOGPROB_BACKENDS}, got {name!r}")
    with environ(DDRL_LOGPROBS=name, DDRL_DECODE_ATTENTION="torch"):
        yield
