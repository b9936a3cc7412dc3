"""transformers' cache rename (``past_key_values`` -> ``cache``): the companion asks ddrl.accel.hf_compat for the name."""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
from types import SimpleNamespace

import torch
from conftest import requires_peft

from ddrl.accel.hf_compat import base_model, cache_kwarg, output_cache
from ddrl.prompts import format_prompt
from ddrl.sampling import HFSampler


class _OldModel(torch.nn.Module):
    """A model whose forward still spells the cache the old way."""

    def forward(self, input_ids=None, past_key_values=None, use_cache=None):  # noqa: D401
        return None


class _NewModel(torch.nn.Module):
    def forward(self, input_ids=None, cache=None, use_cache=None):
        return None


def test_cache_kwarg_follows_the_forward_signature(tiny_lm):
    assert cache_kwarg(_OldModel()) == "past_key_values"
    assert cache_kwarg(_NewModel()) == "cache"
    model, _ = tiny_lm
    expected = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    assert cache_kwarg(model) == expected


@requires_peft
def test_cache_kwarg_looks_under_peft(tiny_lm):
    import peft

    model = copy.deepcopy(tiny_lm[0])  # PEFT wraps in place: keep the session's model clean
    lora = peft.get_peft_model(model, peft.LoraConfig(r=2, target_modules=["q_proj"]))
    assert base_model(lora) is lora.get_base_model()
    assert cache_kwarg(lora) == cache_kwarg(tiny_lm[0])


def test_output_cache_reads_either_name():
    assert output_cache(SimpleNamespace(past_key_values="old")) == "old"

    @dataclasses.dataclass
    class New:
        cache: object = None
    assert output_cache(New(cache="new")) == "new"
    assert output_cache(New()) is None  # the field exists even when empty: never falls back to the old name


def test_hf_sampler_passes_the_cache_by_its_current_name(tiny_lm):
    """Every decode step hands the cache back under ``cache_kwarg`` and never under the deprecated name where the
    model takes the new one (the old name warns of its removal in transformers 5.40)."""
    model, tok = tiny_lm
    seen: list[set[str]] = []
    forward = model.forward

    @functools.wraps(forward)  # keeps the signature cache_kwarg reads
    def spy(*args, **kwargs):
        seen.append(set(kwargs))
        return forward(*args, **kwargs)

    model.forward = spy
    try:
        HFSampler(model, tok, batch_size=4).sample([format_prompt(tok, "1+2", cue="none")], n=2,
                                                   temperature=1.0, top_p=1.0, max_new_tokens=5, seed=0)
    finally:
        del model.forward
    kw = cache_kwarg(model)
    assert len(seen) >= 2  # the prompt pass and at least one decode step
    assert all(kw in s for s in seen[1:])
    if kw == "cache":
        assert not any("past_key_values" in s for s in seen)
