"""The update's log-probs two ways (``ddrl.logprobs``): the shared-prompt forward gives the Hugging Face
forward's log-probs, entropies and gradients (tolerances stated), on Qwen2 and Llama models, with and without a
LoRA adapter; the backend choice, its pin and its place in run keys."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from conftest import requires_peft
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from ddrl import logprobs as L
from ddrl.accel import logprob_backends as LB
from ddrl.accel import native_attention
from ddrl.models import device_key

#: float32: log-probs and entropies of the two forwards (on the testbed they were bitwise equal)
ATOL = 1e-5
#: gradients: the prompt's share is summed over its rows in another order (~1e-6 relative seen)
GRAD_RTOL = 1e-4

# ids >= 2 (0 pads, 1 ends); repeated prompts of different lengths, responses of lengths 1..7 (one ends early)
PROMPTS = [[5, 9, 3, 17], [7], [5, 9, 3, 17], [30, 2, 2, 40, 11, 8], [7], [5, 9, 3, 17]]
RESPONSES = [[4, 4, 6, 1], [12], [8, 3, 3, 3, 9, 10, 1], [2, 5], [13, 14, 15], [4, 4, 6, 20, 21]]


def _llama(vocab: int = 48):
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                        tie_word_embeddings=False, pad_token_id=0, eos_token_id=1, bos_token_id=None))


def _qwen2(tiny_lm):
    model, tok = tiny_lm
    v = model.config.vocab_size
    return model, [[2 + x % (v - 2) for x in p] for p in PROMPTS], [[2 + x % (v - 2) for x in r] for r in RESPONSES]


def _lora(model):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(1)
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "up_proj"],
                                                  init_lora_weights=False))  # non-zero B: the adapter acts
    return peft_model


def _grads(model, fn, prompts, responses, temperature):
    model.zero_grad(set_to_none=True)
    logp, mask, _ = fn(model, prompts, responses, temperature, 0)
    weights = torch.linspace(-1.0, 2.0, logp.numel()).reshape(logp.shape)  # every token its own weight
    (logp * weights).sum().backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _check_same(model, prompts, responses, temperature, grads: bool = True):
    a = L.hf_response_logprobs(model, prompts, responses, temperature, 0, with_entropy=True)
    b = L.shared_prompt_response_logprobs(model, prompts, responses, temperature, 0, with_entropy=True)
    assert torch.equal(a[1], b[1])  # the same response mask
    for x, y in ((a[0], b[0]), (a[2], b[2])):
        assert x.shape == y.shape
        torch.testing.assert_close(y, x, atol=ATOL, rtol=0)
    assert (b[0][b[1] == 0] == 0).all()
    if not grads:
        return
    ga = _grads(model, L.hf_response_logprobs, prompts, responses, temperature)
    gb = _grads(model, L.shared_prompt_response_logprobs, prompts, responses, temperature)
    assert ga.keys() == gb.keys() and ga
    for n in ga:
        scale = float(ga[n].abs().max()) or 1.0
        assert float((ga[n] - gb[n]).abs().max()) <= GRAD_RTOL * scale, n


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_shared_prompt_equals_the_hf_forward_on_qwen2(tiny_lm, temperature):
    model, prompts, responses = _qwen2(tiny_lm)
    model.train()
    try:
        _check_same(model, prompts, responses, temperature)
    finally:
        model.eval()


def test_shared_prompt_equals_the_hf_forward_on_llama():
    _check_same(_llama().train(), PROMPTS, RESPONSES, 1.0)


@requires_peft
def test_shared_prompt_equals_the_hf_forward_with_a_lora_adapter_and_without_it():
    """The PEFT-wrapped policy (paper scale) and its reference pass (the adapter disabled)."""
    model = _lora(_llama())
    assert L.logprob_backend(model) == "shared-prompt"
    _check_same(model, PROMPTS, RESPONSES, 1.0)
    assert all("lora_" in n for n in _grads(model, L.shared_prompt_response_logprobs, PROMPTS, RESPONSES, 1.0))
    with model.disable_adapter(), torch.no_grad():  # the reference pass: no grad, nothing trainable in it
        _check_same(model, PROMPTS, RESPONSES, 1.0, grads=False)


def test_the_backend_choice(monkeypatch, tiny_lm):
    model, prompts, responses = _qwen2(tiny_lm)
    monkeypatch.delenv("DDRL_LOGPROBS", raising=False)
    assert L.logprob_backend(model) == "shared-prompt"  # auto, a supported model
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_embd=16, n_layer=1, n_head=2, n_positions=64))
    assert L.logprob_backend(gpt2) == "hf" and "model_type" in L.shared_prompt_unsupported_reason(gpt2)
    monkeypatch.setenv("DDRL_LOGPROBS", "shared-prompt")
    with pytest.raises(ValueError, match="DDRL_LOGPROBS=shared-prompt.*not supported"):
        L.logprob_backend(gpt2)
    monkeypatch.setenv("DDRL_LOGPROBS", "fast")
    with pytest.raises(ValueError, match="DDRL_LOGPROBS must be one of"):
        L.logprob_backend(model)
    monkeypatch.setenv("DDRL_LOGPROBS", "hf")
    assert L.logprob_backend(model) == "hf"


def test_auto_keeps_the_hf_forward_off_the_cpu(monkeypatch, tiny_lm):
    """auto picks shared-prompt on the CPU only (on a GPU it measured slower); forcing it still works there."""
    model, _, _ = _qwen2(tiny_lm)
    off_cpu = copy.deepcopy(model).to("meta")  # parameters on a non-CPU device, nothing allocated
    monkeypatch.delenv("DDRL_LOGPROBS", raising=False)
    assert L.logprob_backend(model) == "shared-prompt" and L.logprob_backend(off_cpu) == "hf"
    monkeypatch.setenv("DDRL_LOGPROBS", "shared-prompt")
    assert L.logprob_backend(off_cpu) == "shared-prompt"


def test_response_logprobs_dispatches(monkeypatch, tiny_lm):
    """Shared-prompt where rows share a prompt and the backend is it; the HF forward otherwise."""
    model, prompts, responses = _qwen2(tiny_lm)
    calls = []
    for name in ("hf_response_logprobs", "shared_prompt_response_logprobs"):
        real = getattr(L, name)
        monkeypatch.setattr(L, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    monkeypatch.delenv("DDRL_LOGPROBS", raising=False)
    L.response_logprobs(model, prompts, responses, 1.0, 0)
    L.response_logprobs(model, prompts[:2], responses[:2], 1.0, 0)  # distinct prompts: nothing to share
    with LB.pinned_backend("hf"):
        L.response_logprobs(model, prompts, responses, 1.0, 0)
    assert calls == ["shared_prompt_response_logprobs", "hf_response_logprobs", "hf_response_logprobs"]
    with pytest.raises(ValueError, match="3 prompts but 2 responses"):
        L.response_logprobs(model, prompts[:3], responses[:2], 1.0, 0)


def test_pinned_backend_restores_the_environment(monkeypatch):
    monkeypatch.setenv("DDRL_LOGPROBS", "auto")
    monkeypatch.delenv("DDRL_DECODE_ATTENTION", raising=False)
    with LB.pinned_backend("hf"):  # the study's way: the HF forward and torch's decode attention
        assert os.environ["DDRL_LOGPROBS"] == "hf" and LB.backend_key() == {}
        assert os.environ["DDRL_DECODE_ATTENTION"] == "torch" and device_key("cpu") == {}
    assert os.environ["DDRL_LOGPROBS"] == "auto" and LB.backend_key() == {"logprobs": "auto", "old_logprobs": "sampler"}
    assert "DDRL_DECODE_ATTENTION" not in os.environ
    monkeypatch.delenv("DDRL_LOGPROBS")
    with LB.pinned_backend("shared-prompt"):
        assert LB.backend_key() == {"logprobs": "shared-prompt"}
    assert "DDRL_LOGPROBS" not in os.environ
    with pytest.raises(ValueError, match="logprob backend must be one of"):
        with LB.pinned_backend("fast"):
            pass


def test_the_study_runs_with_the_hf_forward(monkeypatch):
    """plan Amendment 10: every study job computes its log-probs as the study's first 1,125 CSVs did."""
    from ddrl.study import jobs as study_jobs

    monkeypatch.delenv("DDRL_LOGPROBS", raising=False)
    monkeypatch.delenv("DDRL_DECODE_ATTENTION", raising=False)
    monkeypatch.setattr(study_jobs, "_run_job",
                        lambda job: (os.environ.get("DDRL_LOGPROBS"), os.environ.get("DDRL_DECODE_ATTENTION")))
    assert study_jobs.run_job(None) == ("hf", "torch")  # and torch's decode attention, as its runs were sampled
    assert "DDRL_LOGPROBS" not in os.environ and "DDRL_DECODE_ATTENTION" not in os.environ


def test_run_directories_of_hf_runs_keep_their_keys(monkeypatch, tmp_path):
    """Under ``hf`` and torch's decode attention (what ``pinned_backend("hf")`` sets) a run's directory is keyed as
    before either choice existed (the study's cached runs stay found); under any other backend, or with the
    native decode attention, it is another directory."""
    from dataclasses import asdict

    from ddrl.config import key_fields
    from ddrl.run import experiments as E
    from ddrl.infra.cache import content_key, records_key
    from ddrl.grading.fingerprint import grader_fingerprint

    monkeypatch.setattr(E, "model_fingerprint", lambda name: {"model": name, "weights": "w"})
    recs = [{"id": "q0", "prompt": "1+2", "answer": "3"}]
    exp = E.Experiment(adapted=recs, runs_root=tmp_path)
    cfg = exp.config("ttrl", 0)
    # the config as it was before the reward fields existed (issue 96: ddrl.config.key_fields leaves out a later
    # field at its default, so these keys stay)
    before = {k: v for k, v in asdict(cfg).items() if k not in ("reward", "reward_gate")}
    assert key_fields(cfg) == before
    old = content_key({"config": before, "weights": {"model": cfg.model, "weights": "w"},
                       "questions": E.fingerprint(recs), "answers": records_key(recs, ("answer",)),
                       "grader": grader_fingerprint()})
    monkeypatch.setenv("DDRL_LOGPROBS", "hf")
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "torch")
    assert exp.run_dir("ttrl", cfg) == tmp_path / f"ttrl-{old[:16]}"
    monkeypatch.setenv("DDRL_LOGPROBS", "auto")
    assert exp.run_dir("ttrl", cfg) != tmp_path / f"ttrl-{old[:16]}"
    monkeypatch.setenv("DDRL_LOGPROBS", "hf")
    monkeypatch.setattr(native_attention, "unavailable_reason", lambda: None)
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "native")
    assert exp.run_dir("ttrl", cfg) != tmp_path / f"ttrl-{old[:16]}"


def test_a_prompt_pass_that_caches_nothing_is_refused():
    """Gradient checkpointing makes a Hugging Face model drop ``use_cache``: the responses would then attend to
    no prompt, so the shared-prompt forward refuses (instead of returning wrong log-probs)."""
    model = _llama().train()
    # transformers 5.x renamed it (the old name warns of its removal in v6)
    (getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable)()
    with pytest.raises(RuntimeError, match="DDRL_LOGPROBS=hf"):
        L.shared_prompt_response_logprobs(model, PROMPTS, RESPONSES, 1.0, 0)
