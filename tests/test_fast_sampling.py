"""The static-KV-cache sampler (``ddrl.accel.fast_sampling``): the same rollouts, log-probs and entropies as the
Hugging Face reference, on the testbed's Qwen2 and on random-weight Llama models, and the backend selection."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

import ddrl.accel.fast_sampling as fast_sampling
from ddrl.accel.fast_sampling import StaticCacheSampler, unsupported_reason
from ddrl.accel.native_attention import compiler
from ddrl.prompts import format_prompt
from ddrl.sampling import HFSampler, entropy_from_logprobs, make_sampler, sampling_logprobs

#: float32 agreement of every per-token log-prob and entropy with a full-sequence HF forward pass
ATOL = 1e-4


class IdTokenizer:
    """What the samplers need of a tokenizer when prompts are token ids (random-weight models)."""

    pad_token_id, eos_token_id = 0, 1

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def _llama(**overrides):
    cfg = dict(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False, pad_token_id=0,
               eos_token_id=1, bos_token_id=None)
    cfg.update(overrides)
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(**cfg)).eval()


@pytest.fixture(params=["torch", "native"])
def decode_attention(request, monkeypatch):
    """Run the test with each decode attention (``DDRL_DECODE_ATTENTION``); with ``native`` the C loop must really
    have run (it is skipped only on a machine without a C compiler)."""
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", request.param)
    if request.param == "torch":
        yield request.param
        return
    if compiler() is None:
        pytest.skip("no C compiler to build the native decode attention")
    built = []
    init = fast_sampling._NativeAttention.__init__

    def counted(self, *args):
        built.append(1)
        init(self, *args)

    monkeypatch.setattr(fast_sampling._NativeAttention, "__init__", counted)
    yield request.param
    assert built, "DDRL_DECODE_ATTENTION=native, but the sampler did not use the C loop"


@pytest.fixture(scope="module")
def testbed():
    from ddrl.testbed import build, load

    model, tok = load(build("tiny", progress=False))
    return model.eval(), tok


def _testbed_prompts(sampler, tok):
    return sampler.encode([format_prompt(tok, q, cue="none") for q in ["1+2", "47+38*2-9", "5", "1+2"]])


# ids 2.. so that pad (0) and eos (1) never occur in prompts; a repeated prompt, cut across chunks
LLAMA_PROMPTS = [[5, 9, 3, 17], [7], [30, 2, 2, 40, 11, 8, 6], [5, 9, 3, 17]]


def _cases():
    return [("testbed", None), ("llama", {}), ("llama", {"attention_bias": True, "mlp_bias": True}),
            ("llama", {"rope_parameters": {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 16}})]


def _model_and_prompts(kind, overrides, testbed):
    if kind == "testbed":
        model, tok = testbed
        return model, tok, _testbed_prompts(StaticCacheSampler(model, tok), tok)
    return _llama(**overrides), IdTokenizer(), LLAMA_PROMPTS


def _check_against_hf_forward(model, prompt_ids, out, temperature, top_p, limits):
    """Every rollout's per-token log-probs and entropies equal HF's full-sequence forward pass, processed by
    ``sampling_logprobs``; finish reasons and lengths are consistent with EOS and ``limits``."""
    eos = model.generation_config.eos_token_id if model.generation_config.eos_token_id is not None else 1
    worst = 0.0
    for i, rollouts in enumerate(out):
        for r in rollouts:
            assert r.prompt_index == i
            assert 1 <= len(r.token_ids) == len(r.logprobs) == len(r.entropies) <= limits[i]
            assert eos not in r.token_ids[:-1]
            if r.finish_reason == "stop":
                assert r.token_ids[-1] == eos
            else:
                assert r.finish_reason == "length" and len(r.token_ids) == limits[i]
            ids = torch.tensor([list(prompt_ids[i]) + r.token_ids])
            with torch.no_grad():
                logits = model(input_ids=ids).logits[0, len(prompt_ids[i]) - 1 : -1]
            logp = sampling_logprobs(logits, temperature, top_p)
            ref_lp = logp.gather(1, torch.tensor(r.token_ids)[:, None]).squeeze(1)
            ref_ent = entropy_from_logprobs(logp)
            worst = max(worst, (ref_lp - torch.tensor(r.logprobs)).abs().max().item(),
                        (ref_ent - torch.tensor(r.entropies)).abs().max().item())
    assert worst < ATOL, f"fast sampler differs from the HF forward pass by {worst:.2e} (> {ATOL})"


@pytest.mark.parametrize("kind,overrides", _cases())
@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 0.9)])
def test_logprobs_and_entropies_match_hf_forward(testbed, decode_attention, kind, overrides, temperature, top_p):
    model, tok, prompts = _model_and_prompts(kind, overrides, testbed)
    assert unsupported_reason(model) is None
    limits = [24, 9, 24, 16]  # per-prompt limits: rows finish at different steps, some by length
    sampler = StaticCacheSampler(model, tok, batch_size=6, compact_fraction=0.0)  # compact at every finish
    out = sampler.sample_ids(prompts, n=3, temperature=temperature, top_p=top_p, max_new_tokens=limits, seed=5)
    assert [len(rs) for rs in out] == [3] * len(prompts)
    _check_against_hf_forward(model, prompts, out, temperature, top_p, limits)
    reasons = {r.finish_reason for rs in out for r in rs}
    assert reasons == {"stop", "length"}, f"the case should exercise both finish reasons, got {reasons}"


@pytest.mark.parametrize("kind", ["testbed", "llama"])
def test_same_tokens_as_hf_sampler(testbed, decode_attention, kind):
    """Greedy decoding gives HFSampler's tokens; at T = 1 the same generator draws give the same samples
    (a flip needs a near-tie within float rounding of the two forward passes, which these cases do not hit)."""
    model, tok, prompts = _model_and_prompts(kind, {}, testbed)
    for temperature in (0.0, 1.0):
        kw = dict(n=4, temperature=temperature, max_new_tokens=20, seed=11)
        ref = HFSampler(model, tok, batch_size=7).sample_ids(prompts, **kw)
        new = StaticCacheSampler(model, tok, batch_size=7).sample_ids(prompts, **kw)
        for rs_ref, rs_new in zip(ref, new):
            for a, b in zip(rs_ref, rs_new):
                assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason
                assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < ATOL


def test_seeds_reproducible_and_compaction_invisible(testbed, decode_attention):
    model, tok = testbed
    sampler = StaticCacheSampler(model, tok, batch_size=8)
    prompts = _testbed_prompts(sampler, tok)
    a = sampler.sample_ids(prompts, n=4, max_new_tokens=30, seed=1)
    b = sampler.sample_ids(prompts, n=4, max_new_tokens=30, seed=1)
    c = sampler.sample_ids(prompts, n=4, max_new_tokens=30, seed=2)
    assert a == b
    assert [r.token_ids for rs in a for r in rs] != [r.token_ids for rs in c for r in rs]
    never = StaticCacheSampler(model, tok, batch_size=8, compact_fraction=1.0)  # finished rows ride along
    always = StaticCacheSampler(model, tok, batch_size=8, compact_fraction=0.0)  # leave at once
    for other in (never, always):
        d = other.sample_ids(prompts, n=4, max_new_tokens=30, seed=1)
        assert [r.token_ids for rs in a for r in rs] == [r.token_ids for rs in d for r in rs]
        assert max(abs(x - y) for ra, rd in zip(a, d) for p, q in zip(ra, rd)
                   for x, y in zip(p.logprobs, q.logprobs)) < 1e-5


def test_reads_weights_afresh_at_every_call(testbed, decode_attention):
    """The trainer updates the policy in place between steps; the next call samples from the new weights."""
    model = _llama()
    tok = IdTokenizer()
    sampler = StaticCacheSampler(model, tok, batch_size=8)
    before = sampler.sample_ids(LLAMA_PROMPTS, n=2, max_new_tokens=12, seed=0)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1.5)
    after = sampler.sample_ids(LLAMA_PROMPTS, n=2, max_new_tokens=12, seed=0)
    assert [r.logprobs for rs in before for r in rs] != [r.logprobs for rs in after for r in rs]
    _check_against_hf_forward(model, LLAMA_PROMPTS, after, 1.0, 1.0, [12] * len(LLAMA_PROMPTS))


def test_backend_selection_and_fallback(testbed, monkeypatch):
    model, tok = testbed
    monkeypatch.delenv("DDRL_SAMPLER", raising=False)
    assert isinstance(make_sampler("auto", model, tok, batch_size=4), StaticCacheSampler)
    assert isinstance(make_sampler("hf", model, tok, batch_size=4), HFSampler)
    # off the CPU auto keeps HFSampler (slower there at paper scale); DDRL_SAMPLER=fast still forces it
    assert isinstance(make_sampler("auto", model, tok, device="meta"), HFSampler)
    monkeypatch.setenv("DDRL_SAMPLER", "fast")
    assert isinstance(make_sampler("auto", model, tok, device="meta"), StaticCacheSampler)
    monkeypatch.setenv("DDRL_SAMPLER", "hf")
    assert isinstance(make_sampler("auto", model, tok), HFSampler)
    monkeypatch.setenv("DDRL_SAMPLER", "tgi")
    with pytest.raises(ValueError, match="DDRL_SAMPLER"):
        make_sampler("auto", model, tok)
    monkeypatch.delenv("DDRL_SAMPLER")

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_embd=16, n_layer=1, n_head=2, n_positions=64,
                                      eos_token_id=1, pad_token_id=0)).eval()
    sliding = Qwen2ForCausalLM(Qwen2Config(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                           num_attention_heads=2, num_key_value_heads=2, use_sliding_window=True,
                                           sliding_window=8, max_window_layers=0, eos_token_id=1)).eval()
    dynamic = _llama(rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0})
    for unsupported, reason in ((gpt2, "model_type 'gpt2'"), (sliding, "sliding"), (dynamic, "rope_type 'dynamic'")):
        assert reason in unsupported_reason(unsupported)
        assert isinstance(make_sampler("auto", unsupported, IdTokenizer()), HFSampler)
        with pytest.raises(ValueError, match="cannot run this model"):
            make_sampler("fast", unsupported, IdTokenizer())
    # the fallback still samples
    out = make_sampler("auto", gpt2, IdTokenizer(), batch_size=4).sample_ids([[3, 4]], n=2, max_new_tokens=3)
    assert len(out[0]) == 2


def test_bad_arguments_fail_early(testbed):
    model, tok = testbed
    with pytest.raises(ValueError, match="batch_size"):
        StaticCacheSampler(model, tok, batch_size=0)
    with pytest.raises(ValueError, match="compact_fraction"):
        StaticCacheSampler(model, tok, compact_fraction=2.0)
    s = StaticCacheSampler(model, tok)
    with pytest.raises(ValueError, match="n must be"):
        s.sample(["x"], n=0)
    with pytest.raises(ValueError, match="top_p"):
        s.sample_ids([[3]], n=1, top_p=0.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        s.sample_ids([[3], [4]], n=1, max_new_tokens=[3])
    with pytest.raises(ValueError, match="prompt 1 is empty"):
        s.sample_ids([[3], []], n=1)
