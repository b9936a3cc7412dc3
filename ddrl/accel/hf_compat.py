"""What differs between the transformers versions the companion runs on, in one place.

transformers 5.x renamed the KV cache of a model's ``forward`` and of its outputs from ``past_key_values`` to
``cache`` and keeps the old name only as a deprecated alias (removed in 5.40). The companion's two hand-written
users of a cache, :class:`ddrl.sampling.HFSampler`'s decode loop and :mod:`ddrl.logprobs`' shared-prompt forward,
ask these functions for the name instead of spelling either one.
"""
from __future__ import annotations

import inspect


def base_model(model):
    """The Hugging Face model under a PEFT wrapper (the model itself otherwise)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def cache_kwarg(model) -> str:
    """The keyword under which ``model.forward`` takes a KV cache: ``cache`` where its (PEFT-unwrapped) forward
    names it, ``past_key_values`` otherwise (transformers before the rename)."""
    params = inspect.signature(base_model(model).forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def output_cache(out):
    """The KV cache a model's forward returned: ``out.cache`` where the output class (a dataclass) has the field,
    even when empty; ``out.past_key_values`` otherwise (reading the old name on a new output warns of its
    removal)."""
    return out.cache if "cache" in getattr(type(out), "__dataclass_fields__", {}) else out.past_key_values
