"""The Hugging Face sampling backend: log-probs, entropies, padding, determinism."""

from __future__ import annotations

import math

import pytest
import torch

from ddrl.prompts import format_prompt
from ddrl.sampling import HFSampler, entropy_from_logprobs, make_sampler, sampling_logprobs


def test_top_p_keeps_smallest_nucleus_and_renormalises():
    logits = torch.log(torch.tensor([[0.2, 0.5, 0.3]]))
    lp = sampling_logprobs(logits, temperature=1.0, top_p=0.7)
    p = lp.exp()[0]
    # 0.5 + 0.3 reaches 0.7: the 0.2 token is dropped, the rest renormalised to 0.625 / 0.375.
    assert torch.allclose(p, torch.tensor([0.0, 0.625, 0.375]), atol=1e-6)
    # top_p = 1 keeps everything; the first token always survives however small top_p is.
    assert torch.allclose(sampling_logprobs(logits, 1.0, 1.0).exp()[0], torch.tensor([0.2, 0.5, 0.3]), atol=1e-6)
    assert sampling_logprobs(logits, 1.0, 1e-9).exp()[0].tolist() == [0.0, 1.0, 0.0]


def test_temperature_and_entropy():
    logits = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    t2 = sampling_logprobs(logits, temperature=2.0, top_p=1.0)
    assert torch.allclose(t2, (logits / 2).log_softmax(-1))
    uniform = torch.full((1, 8), -math.log(8))
    assert entropy_from_logprobs(uniform).item() == pytest.approx(math.log(8))
    assert entropy_from_logprobs(sampling_logprobs(logits, 1.0, 1e-9)).item() == pytest.approx(0.0)
    with pytest.raises(ValueError, match="top_p"):
        sampling_logprobs(logits, 1.0, 0.0)
    with pytest.raises(ValueError, match="temperature"):
        sampling_logprobs(logits, -1.0, 1.0)


def _prompts(tok):
    return [format_prompt(tok, q, cue="none") for q in ["1+2", "47+38*2-9", "5"]]


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.6, 0.95)])
def test_logprobs_match_teacher_forcing(tiny_lm, temperature, top_p):
    """Each sampled token's log-prob equals a fresh full forward pass over prompt + response, processed the
    same way: the KV cache, left padding and position ids of the batched loop are right."""
    model, tok = tiny_lm
    sampler = HFSampler(model, tok, batch_size=5)  # chunks cut across prompts of different lengths
    prompts = _prompts(tok)
    out = sampler.sample(prompts, n=4, temperature=temperature, top_p=top_p, max_new_tokens=12, seed=3)
    assert [len(r) for r in out] == [4, 4, 4]
    for i, rollouts in enumerate(out):
        p_ids = sampler.encode([prompts[i]])[0]
        for r in rollouts:
            assert r.prompt_index == i
            assert len(r.token_ids) == len(r.logprobs) == len(r.entropies) >= 1
            assert r.finish_reason in ("stop", "length")
            assert (r.finish_reason == "stop") == (r.token_ids[-1] == tok.eos_token_id)
            ids = torch.tensor([p_ids + r.token_ids])
            with torch.no_grad():
                logits = model(input_ids=ids).logits[0, len(p_ids) - 1 : -1]
            ref = sampling_logprobs(logits, temperature, top_p)
            want = ref.gather(1, torch.tensor(r.token_ids)[:, None]).squeeze(1)
            assert torch.allclose(torch.tensor(r.logprobs), want, atol=1e-4)
            assert torch.allclose(torch.tensor(r.entropies), entropy_from_logprobs(ref), atol=1e-4)


def test_seed_determines_samples(tiny_lm):
    model, tok = tiny_lm
    s = HFSampler(model, tok, batch_size=8)
    a = s.sample(_prompts(tok), n=4, max_new_tokens=10, seed=1)
    b = s.sample(_prompts(tok), n=4, max_new_tokens=10, seed=1)
    c = s.sample(_prompts(tok), n=4, max_new_tokens=10, seed=2)
    key = lambda out: [[r.token_ids for r in rs] for rs in out]  # noqa: E731
    assert key(a) == key(b)
    assert key(a) != key(c)


def test_greedy_matches_generate(tiny_lm):
    model, tok = tiny_lm
    prompts = _prompts(tok)
    s = HFSampler(model, tok, batch_size=16)
    out = s.sample(prompts, n=2, temperature=0.0, max_new_tokens=8, seed=0)
    for i, p in enumerate(prompts):
        ids = torch.tensor([s.encode([p])[0]])
        ref = model.generate(ids, do_sample=False, max_new_tokens=8, pad_token_id=0, eos_token_id=1)[0, ids.shape[1]:]
        ref = ref.tolist()
        if 1 in ref:
            ref = ref[: ref.index(1) + 1]
        assert out[i][0].token_ids == ref == out[i][1].token_ids


def test_bad_arguments_are_named(tiny_lm):
    model, tok = tiny_lm
    with pytest.raises(ValueError, match="batch_size"):
        HFSampler(model, tok, batch_size=0)
    with pytest.raises(ValueError, match="backend"):
        make_sampler("tgi", model, tok)
    with pytest.raises(ValueError, match="n must be"):
        HFSampler(model, tok).sample(["x"], n=0)


def test_vllm_backend_names_the_extra_when_missing(tiny_lm):
    try:
        import vllm  # noqa: F401
        pytest.skip("vllm is installed here; the missing-extra message cannot be exercised")
    except ImportError:
        pass
    with pytest.raises(ImportError, match=r"ddrl-companion\[vllm\]"):
        make_sampler("vllm", "some/model", None)


# --- ETMR tree rollouts --------------------------------------------------------------------------------


def test_fork_points_pick_top_entropy_positions():
    from ddrl.etmr import fork_points

    ent = [0.1, 0.9, 0.3, 0.9, 2.0]
    assert fork_points(ent, 2) == [1, 3]  # position 4 (the final EOS) excluded; tie 1 vs 3 -> both kept
    assert fork_points(ent, 2, exclude_final=False) == [1, 4]
    assert fork_points(ent, 1) == [1]  # ties go to the earlier position
    assert fork_points([0.5], 2) == []  # a one-token (EOS-only) response has no fork point
    assert fork_points(ent, 0) == []
    with pytest.raises(ValueError, match="forks"):
        fork_points(ent, -1)


def test_tree_leaf_count_prefixes_and_exact_token_count(tiny_lm):
    from ddrl.etmr import fork_points, tree_sample

    model, tok = tiny_lm
    s = HFSampler(model, tok, batch_size=16)
    prompts = _prompts(tok)[:2]
    m, forks, branches, max_new = 3, 2, 2, 10
    tree = tree_sample(s, prompts, m=m, forks=forks, branches=branches, max_new_tokens=max_new, seed=5)
    for i in range(len(prompts)):
        leaves, parent, pos = tree.leaves[i], tree.parent[i], tree.fork_position[i]
        roots = leaves[:m]
        expected_forks = sum(
            len(fork_points(r.entropies, forks, exclude_final=r.finish_reason == "stop")) for r in roots
        )
        assert len(leaves) == m + branches * expected_forks
        assert parent[:m] == [None] * m
        generated = sum(r.num_tokens for r in roots)
        for leaf, j, t in zip(leaves[m:], parent[m:], pos[m:]):
            root = roots[j]
            assert t in fork_points(root.entropies, forks, exclude_final=root.finish_reason == "stop")
            assert leaf.token_ids[:t] == root.token_ids[:t] and leaf.logprobs[:t] == root.logprobs[:t]
            assert len(leaf.token_ids) <= max_new and len(leaf.logprobs) == len(leaf.token_ids)
            generated += leaf.num_tokens - t  # only the tokens after the fork were decoded
        assert tree.generated_tokens[i] == generated


def test_tree_with_full_forks_has_reported_leaf_count(tiny_lm):
    """M=12, F=2, B=2 -> 60 leaves per question whenever every root has >= 3 tokens."""
    from ddrl.etmr import tree_sample

    model, tok = tiny_lm
    s = HFSampler(model, tok, batch_size=64)
    for seed in range(50):  # the random model sometimes stops early; find a draw where every root is long
        tree = tree_sample(s, _prompts(tok)[:1], m=12, forks=2, branches=2, max_new_tokens=8, seed=seed)
        roots = tree.leaves[0][:12]
        if all(r.num_tokens >= 3 for r in roots):  # then every root offers two fork points
            break
    else:
        pytest.fail("no seed gave 12 roots of >= 3 tokens")
    assert len(tree.leaves[0]) == 60
    assert tree.generated_tokens[0] < sum(leaf.num_tokens for leaf in tree.leaves[0])  # prefixes are shared
