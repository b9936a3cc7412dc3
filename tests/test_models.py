"""Tests of ddrl.models: the official presets and load_model (local directories and hub ids alike)."""

from __future__ import annotations

import pytest
import torch

from ddrl import models as M
from ddrl.data import DATASETS


# ---------------------------------------------------------------------------------------------------------
# Presets (values from yuyongcan/DDRL verl/examples/ddrl/*/*.sh; see docs/real_scale.md)
# ---------------------------------------------------------------------------------------------------------


def test_registry_names():
    assert set(M.PRESETS) == {"qwen2.5-math-1.5b", "qwen2.5-3b", "llama-3.1-8b-instruct", "testbed"}
    with pytest.raises(KeyError, match="unknown model preset 'gpt2'.*qwen2.5-3b"):
        M.get_preset("gpt2")


@pytest.mark.parametrize(
    "name, hub_id, cue, lr, aime_prompts",
    [
        ("qwen2.5-math-1.5b", "Qwen/Qwen2.5-Math-1.5B", "system", 5e-7, 8),
        ("qwen2.5-3b", "Qwen/Qwen2.5-3B", "suffix", 5e-7, 10),
        ("llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct", "suffix", 2e-7, 10),
    ],
)
def test_paper_presets(name, hub_id, cue, lr, aime_prompts):
    p = M.get_preset(name)
    assert (p.hub_id, p.cue, p.lr, p.official) == (hub_id, cue, lr, True)
    assert dict(p.episodes) == {"aime2024": 80, "amc": 30, "math500": 10}
    assert dict(p.prompts_per_step) == {"aime2024": aime_prompts, "amc": 8, "math500": 32}
    assert (p.max_prompt_len, p.max_response_len, p.n_votes, p.n_train) == (512, 3072, 64, 32)
    assert (p.rollout_temperature, p.rollout_top_p) == (1.0, 1.0)
    assert (p.eval_n, p.eval_temperature, p.eval_top_p) == (16, 0.6, 0.95)
    assert (p.warmup_ratio, p.lr_schedule, p.kl_coef, p.kl_type, p.mini_batch_prompts) == (
        0.03, "cosine", 0.001, "low_var_kl", 1)
    assert set(p.episodes) <= set(DATASETS)  # benchmark keys are dataset names


def test_settings_flatten_per_benchmark():
    s = M.get_preset("qwen2.5-3b").settings("amc")
    assert (s["benchmark"], s["episodes"], s["prompts_per_step"], s["lr"]) == ("amc", 30, 8, 5e-7)
    assert M.get_preset("qwen2.5-3b").settings()["episodes"] == {"aime2024": 80, "amc": 30, "math500": 10}
    with pytest.raises(KeyError, match="no episodes for benchmark 'gsm8k'"):
        M.get_preset("qwen2.5-3b").settings("gsm8k")
    with pytest.raises(KeyError, match="preset 'testbed' has no prompts_per_step"):
        M.get_preset("testbed").prompts_per_step_for("amc")


# ---------------------------------------------------------------------------------------------------------
# load_model
# ---------------------------------------------------------------------------------------------------------


def _tiny_qwen2(seed: int = 0):
    """A random 2-layer Qwen2ForCausalLM and a character-level tokenizer with a chat template."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<|user|>", "<|assistant|>", *"0123456789+-*=;"])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"<\|user\|>|<\|assistant\|>|."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<eos>", additional_special_tokens=["<|user|>", "<|assistant|>"],
        chat_template=("{% for m in messages %}<|user|>{{ m['content'] }}{% endfor %}"
                       "{% if add_generation_prompt %}<|assistant|>{% endif %}"),
    )
    config = Qwen2Config(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         eos_token_id=1, bos_token_id=None, pad_token_id=None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config).eval()
    return model, tok


@pytest.fixture
def saved_tiny(tmp_path):
    """The tiny model and tokenizer, saved in Hugging Face layout (no pad token: load_model adds one)."""
    model, tok = _tiny_qwen2()
    model.save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    return tmp_path / "tiny", model, tok


def test_load_model_from_local_directory(saved_tiny):
    path, ref_model, ref_tok = saved_tiny
    model, tok = M.load_model(path)
    assert type(model).__name__ == "Qwen2ForCausalLM" and not model.training
    assert model.config.num_hidden_layers == 2
    ids = tok("12+3=", return_tensors="pt").input_ids
    assert ids.tolist() == ref_tok("12+3=", return_tensors="pt").input_ids.tolist() == [[5, 6, 14, 7, 17]]
    with torch.no_grad():
        assert torch.equal(model(ids).logits, ref_model(ids).logits)  # the very weights that were saved
    # no pad token was saved (transformers 5 may even invent one outside the vocabulary): eos is used
    assert ref_tok.pad_token is None and tok.pad_token == "<eos>" and tok.padding_side == "left"
    assert tok.pad_token_id < model.get_input_embeddings().num_embeddings
    assert tok.apply_chat_template([{"role": "user", "content": "1+1"}], tokenize=False,
                                   add_generation_prompt=True) == "<|user|>1+1<|assistant|>"


def test_load_model_dtype(saved_tiny):
    model, _ = M.load_model(str(saved_tiny[0]), dtype="bfloat16")
    assert next(model.parameters()).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="dtype must be"):
        M.load_model(saved_tiny[0], dtype="bf17")


def test_hub_ids_and_directories_take_the_same_path(saved_tiny, monkeypatch):
    """A preset name resolves to its hub id and then reaches the very same from_pretrained calls."""
    import transformers

    calls = []
    real_tok, real_model = transformers.AutoTokenizer.from_pretrained, transformers.AutoModelForCausalLM.from_pretrained
    local = str(saved_tiny[0])

    def tok_from_pretrained(source, **kw):
        calls.append(("tokenizer", source, kw))
        return real_tok(local, **kw)

    def model_from_pretrained(source, **kw):
        calls.append(("model", source, kw))
        return real_model(local, **kw)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tok_from_pretrained)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", model_from_pretrained)
    M.load_model(local)
    M.load_model("qwen2.5-math-1.5b")
    assert [c[1] for c in calls] == [local, local, "Qwen/Qwen2.5-Math-1.5B", "Qwen/Qwen2.5-Math-1.5B"]
    assert calls[0][2] == calls[2][2] and calls[1][2] == calls[3][2]  # identical arguments


def test_offline_hub_id_is_a_clear_error(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    with pytest.raises(M.ModelLoadError) as e:
        M.load_model("ddrl-test/no-such-model")
    msg = str(e.value)
    assert "'ddrl-test/no-such-model'" in msg and "HF_HUB_OFFLINE=1" in msg and "offline mode on" in msg


def test_a_file_is_not_a_model(tmp_path):
    f = tmp_path / "model.bin"
    f.write_bytes(b"")
    with pytest.raises(M.ModelLoadError, match="expected a directory saved with save_pretrained"):
        M.load_model(f)


def test_testbed_preset_loads_what_the_testbed_builds(saved_tiny, monkeypatch):
    from ddrl import testbed

    monkeypatch.setattr(testbed, "build", lambda progress=True, **kw: saved_tiny[0], raising=False)
    model, _ = M.load_model("testbed")
    assert model.config.num_hidden_layers == 2
