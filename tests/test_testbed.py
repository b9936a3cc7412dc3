"""The embedded testbed: task, tokenizer, Hugging Face loading, the cached deterministic build, the CLI."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ddrl.testbed import build, generate_split, load, read_meta
from ddrl.testbed.pretrain import (PRESETS, PretrainConfig, ema_update, encode_example, lr_at, pack_examples,
                                   pretrain)
from ddrl.testbed.task import MAX_VALUE, evaluate_question, sample_chain, solution_text
from ddrl.testbed.tokenizer import build_tokenizer

REPO = Path(__file__).resolve().parents[1]


# --- task ---------------------------------------------------------------------------------------------


def test_evaluate_question_left_to_right():
    assert evaluate_question("47+38*2-9") == 161
    assert evaluate_question("2+3*4") == 20  # left to right, not precedence
    assert evaluate_question("10-4") == 6
    with pytest.raises(ValueError, match="question"):
        evaluate_question("2+")


def test_solution_text_matches_issue_example():
    assert solution_text(47, [("+", 38), ("*", 2), ("-", 9)]) == "47+38=85;85*2=170;170-9=161;\\boxed{161}"


def _check_chain(question: str, answer: str, solution: str) -> None:
    steps = solution.split(";")
    assert steps[-1] == f"\\boxed{{{answer}}}"
    value = None
    for step in steps[:-1]:
        lhs, rhs = step.split("=")
        if value is not None:
            assert lhs.startswith(str(value))
        value = evaluate_question(lhs)
        assert int(rhs) == value and 0 <= value <= MAX_VALUE
    assert value == int(answer) == evaluate_question(question)


@pytest.mark.parametrize("split,ops", [("train", {1, 2, 3, 4}), ("test", {4}), ("dev", {4})])
def test_split_records_are_correct_and_shifted(split, ops):
    recs = generate_split(split, 400, seed=3)
    assert [r["id"] for r in recs[:2]] == [f"testbed-{split}-0", f"testbed-{split}-1"]
    assert {r["source"] for r in recs} == {f"testbed-{split}"}
    seen = set()
    for r in recs:
        assert set(r) == {"prompt", "answer", "source", "id"}
        assert r["answer"] == str(evaluate_question(r["prompt"]))
        seen.add(sum(r["prompt"].count(c) for c in "+-*"))
    assert seen == ops


def test_chains_stay_in_range_and_solutions_check():
    rng = np.random.default_rng(0)
    for _ in range(500):
        start, steps = sample_chain(int(rng.integers(1, 6)), rng)
        q = str(start) + "".join(f"{o}{b}" for o, b in steps)
        _check_chain(q, str(evaluate_question(q)), solution_text(start, steps))


def test_split_deterministic_and_prefix_stable():
    a = generate_split("test", 50, seed=7)
    assert a == generate_split("test", 50, seed=7)
    assert a[:20] == generate_split("test", 20, seed=7)
    assert a != generate_split("test", 50, seed=8)
    assert [r["prompt"] for r in generate_split("dev", 20, 7)] != [r["prompt"] for r in a[:20]]


def test_kept_streams_give_what_a_fresh_draw_gives(monkeypatch):
    """generate_records keeps each stream it drew (the study's keys regenerate questions per job): a prefix, then
    a longer draw extending the kept one, equal a fresh process's one-shot draws; callers get their own dicts."""
    from ddrl.testbed import task

    monkeypatch.setattr(task, "_STREAMS", {})
    spec = task.SplitSpec((3, 5), (0.5, 0.5))
    short = task.generate_records(spec, 30, 4, "ops35")
    longer = task.generate_records(spec, 80, 4, "ops35")
    short[0]["prompt"] = "changed"
    assert task.generate_records(spec, 1, 4, "ops35")[0]["prompt"] != "changed"
    monkeypatch.setattr(task, "_STREAMS", {})
    fresh = task.generate_records(spec, 80, 4, "ops35")
    assert longer == fresh and longer[:30] == fresh[:30]
    monkeypatch.setattr(task, "_STREAMS", {})
    assert task.generate_records(spec, 30, 4, "ops35") == fresh[:30]
    assert task.generate_records(task.SplitSpec([3, 5], [0.5, 0.5]), 30, 4, "ops35") == fresh[:30]  # lists hash too
    monkeypatch.setattr(task, "_MAX_STREAMS", 2)
    for seed in range(5):
        assert task.generate_records(spec, 3, seed, "ops35")[0]["id"] == "testbed-ops35-0"
    assert len(task._STREAMS) == 2


def test_split_bad_input():
    with pytest.raises(ValueError, match="split"):
        generate_split("valid", 3, 0)
    with pytest.raises(ValueError, match="n must be"):
        generate_split("test", -1, 0)


# --- tokenizer ----------------------------------------------------------------------------------------


def test_tokenizer_round_trip_and_boxed_token():
    tok = build_tokenizer()
    text = "47+38=85;85*2=170;170-9=161;\\boxed{161}"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    assert tok.convert_tokens_to_ids("\\boxed{") in ids
    assert len(ids) == len(text) - len("\\boxed{") + 1
    assert tok.unk_token_id not in ids
    assert tok("a", add_special_tokens=False)["input_ids"] == [tok.unk_token_id]


def test_chat_template_is_short_for_every_cue():
    from ddrl.prompts import CUE_PLACEMENTS, format_prompt

    tok = build_tokenizer()
    for cue in CUE_PLACEMENTS:
        assert format_prompt(tok, "47+38*2-9", cue=cue) == "<|user|>47+38*2-9<|assistant|>"
    full = tok.apply_chat_template([{"role": "user", "content": "1+2"}, {"role": "assistant", "content": "1+2=3;\\boxed{3}"}],
                                   tokenize=False)
    assert full == "<|user|>1+2<|assistant|>1+2=3;\\boxed{3}<|end|>"


def test_encode_example_is_the_template_rendering():
    tok = build_tokenizer()
    p, r = encode_example(tok, "1+2", "1+2=3;\\boxed{3}")
    text = tok.apply_chat_template([{"role": "user", "content": "1+2"}, {"role": "assistant", "content": "1+2=3;\\boxed{3}"}],
                                   tokenize=False)
    assert p + r == tok(text, add_special_tokens=False)["input_ids"]
    assert r[-1] == tok.eos_token_id


# --- packing ------------------------------------------------------------------------------------------


def test_packed_rows_attend_within_each_sequence():
    from ddrl.testbed.model import build_model

    tok = build_tokenizer()
    model = build_model(tok, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_positions=256, seed=0).eval()
    examples = [encode_example(tok, q, solution_text(s, st)) for q, s, st in
                [("5+3", 5, [("+", 3)]), ("12*3-4", 12, [("*", 3), ("-", 4)]), ("9-2", 9, [("-", 2)])]]
    ids, pos, tgt = pack_examples(examples, 64, tok.pad_token_id)
    assert ids.shape[0] == 1  # all three fit one row
    with torch.no_grad():
        packed = model(input_ids=ids, position_ids=pos, use_cache=False).logits[0]
        start = 0
        for p, r in examples:
            seq = torch.tensor([p + r])
            alone = model(input_ids=seq, use_cache=False).logits[0]
            torch.testing.assert_close(packed[start : start + len(p) + len(r)], alone, atol=1e-5, rtol=1e-5)
            # targets: next response token, -100 on the prompt and at the sequence end
            t = tgt[0, start : start + len(p) + len(r)].tolist()
            assert t == [-100] * (len(p) - 1) + r + [-100]
            start += len(p) + len(r)


def test_pack_rejects_too_long():
    with pytest.raises(ValueError, match="pack_len"):
        pack_examples([([1] * 10, [2] * 10)], 8, 0)


def test_lr_schedule():
    cfg = PretrainConfig(steps=110, warmup_steps=10, lr=1.0)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(10, cfg) == pytest.approx(1.0)
    assert lr_at(60, cfg) == pytest.approx(0.5)
    assert lr_at(110, cfg) == pytest.approx(0.0, abs=1e-12)
    step = PretrainConfig(steps=110, warmup_steps=10, lr=1.0, schedule="step", decay_step=50, decay_factor=0.25)
    assert [lr_at(i, step) for i in (4, 10, 49, 50, 109)] == pytest.approx([0.5, 1.0, 1.0, 0.25, 0.25])


# --- the build ----------------------------------------------------------------------------------------


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_build_computes_with_build_threads_whatever_the_callers_count(tmp_path):
    """The weights do not depend on the caller's thread count (a pool worker runs under 1), and two builds from
    scratch give the same bits: the build runs under BUILD_THREADS and restores the caller's count; a cached build
    made under another count is rebuilt."""
    from ddrl.testbed.config import BUILD_THREADS

    before = torch.get_num_threads()
    try:
        shas = []
        for i, threads in enumerate((1, 3)):
            torch.set_num_threads(threads)
            path = build("tiny", cache_dir=tmp_path / str(i), progress=False)
            assert torch.get_num_threads() == threads, "the caller's thread count is restored"
            assert read_meta(path)["num_threads"] == BUILD_THREADS
            shas.append(_sha(path / "model.safetensors"))
        assert shas[0] == shas[1]
        meta_file = path / "testbed.json"
        meta = json.loads(meta_file.read_text())
        meta["num_threads"] = BUILD_THREADS + 1  # as a build made before the count was fixed
        meta_file.write_text(json.dumps(meta))
        assert build("tiny", cache_dir=tmp_path / "1", progress=False) == path
        assert read_meta(path)["num_threads"] == BUILD_THREADS, "a build under another thread count is rebuilt"
        assert not [p for p in path.parent.iterdir() if p.name.startswith((".tmp", ".stale"))]
    finally:
        torch.set_num_threads(before)


def test_tiny_build_cached_and_loadable(tmp_path):
    """A build is named by its config's hash, read from the cache once made, and loads as a Qwen2 model the samplers
    run. (Two builds from scratch giving the same bits: ``test_build_computes_with_build_threads_whatever_the_callers_count``.)"""
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2ForCausalLM

    a = build("tiny", cache_dir=tmp_path / "a", progress=False)
    assert a.name == f"tiny-{PRESETS['tiny'].config_hash()}"
    assert not [p for p in a.parent.iterdir() if p.name.startswith(".tmp")]
    mtime = (a / "model.safetensors").stat().st_mtime_ns
    assert build("tiny", cache_dir=tmp_path / "a", progress=False) == a  # cached: not rebuilt
    assert (a / "model.safetensors").stat().st_mtime_ns == mtime
    meta = read_meta(a)
    # the tiny build's size is its step count; its time is recorded, not bounded (a wall-clock bound failed at
    # 50 s on two cores shared with a study's workers: timing belongs to bench/, not to the tests)
    assert meta["steps"] == PRESETS["tiny"].steps and meta["pretrain_seconds"] > 0
    # every file loading reads is recorded (issue 98), and a changed one is told from the record
    from ddrl.testbed.builds import file_sha256s
    from ddrl.testbed.pretrain import _intact

    assert set(meta["files"]) == {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                                  "tokenizer_config.json", "chat_template.jinja"} and meta["files"] == file_sha256s(a)
    assert _intact(a, "tiny", PRESETS["tiny"], warn=False)
    config = (a / "config.json").read_bytes()
    (a / "config.json").write_bytes(config.replace(b'"hidden_act": "silu"', b'"hidden_act": "gelu"'))
    assert not _intact(a, "tiny", PRESETS["tiny"], warn=False)
    (a / "config.json").write_bytes(config)

    tok = AutoTokenizer.from_pretrained(a)
    model = AutoModelForCausalLM.from_pretrained(a)
    assert isinstance(model, Qwen2ForCausalLM) and model.config.tie_word_embeddings
    assert tok.eos_token_id == model.config.eos_token_id == model.generation_config.eos_token_id
    from ddrl.prompts import format_prompt

    assert format_prompt(tok, "1+2", cue="system") == "<|user|>1+2<|assistant|>"
    model2, tok2 = load(a)
    assert tok2.chat_template == tok.chat_template
    ids = torch.tensor([tok("<|user|>1+2<|assistant|>", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, model2(ids).logits)
    # the project's sampler runs on it
    from ddrl.sampling import HFSampler

    rs = HFSampler(model, tok, batch_size=8).sample(["<|user|>1+2<|assistant|>"], n=4, max_new_tokens=8, seed=0)
    assert len(rs[0]) == 4 and all(len(r.token_ids) <= 8 for r in rs[0])


def test_build_installs_the_committed_reference_build_instead_of_pretraining(tmp_path, monkeypatch):
    """A missing build whose configuration has a committed reference build (the weights a reference file
    names) is installed, not pretrained, so every CPU adapts the same bits; ``source="pretrain"`` (or
    ``$DDRL_TESTBED=pretrain``) pretrains; a committed copy with other bits is refused, nothing installed."""
    import ddrl.testbed.builds as B
    import ddrl.testbed.pretrain as pt

    class Pretrained(Exception):
        pass

    def no_pretraining(*a, **k):
        raise Pretrained

    monkeypatch.setattr(pt, "pretrain", no_pretraining)
    monkeypatch.delenv("DDRL_TESTBED", raising=False)
    name = f"tiny-{PRESETS['tiny'].config_hash()}"
    sha = hashlib.sha256(b"the reference bits").hexdigest()
    pin = tmp_path / "committed" / f"{name}-{sha[:12]}"
    pin.mkdir(parents=True)
    (pin / "model.safetensors").write_bytes(b"the reference bits")
    (pin / "testbed.json").write_text(json.dumps({"num_threads": pt.BUILD_THREADS}))
    ref = tmp_path / "regimes_base.json"
    ref.write_text(json.dumps({"weights": {"model": "testbed:tiny", "model.safetensors": sha}}))
    monkeypatch.setattr(B, "COMMITTED", tmp_path / "committed")
    monkeypatch.setattr(B, "REFERENCE_FILES", (tmp_path / "absent.json", ref))

    assert B.reference_build("tiny", PRESETS["tiny"]) == (pin, {"model.safetensors": sha})
    assert B.reference_build("default", PRESETS["default"]) is None  # the file names another preset
    got = build("tiny", cache_dir=tmp_path / "a", progress=False)
    assert got.name == name and (got / "model.safetensors").read_bytes() == b"the reference bits"
    assert not [p for p in got.parent.iterdir() if p.name.startswith(".tmp")]
    assert build("tiny", cache_dir=tmp_path / "a", progress=False) == got  # installed once, then read

    with pytest.raises(Pretrained):
        build("tiny", cache_dir=tmp_path / "b", progress=False, source="pretrain")
    monkeypatch.setenv("DDRL_TESTBED", "pretrain")
    with pytest.raises(Pretrained):
        build("tiny", cache_dir=tmp_path / "c", progress=False)
    monkeypatch.setenv("DDRL_TESTBED", "download")
    with pytest.raises(ValueError, match=r"'download' \(argument or \$DDRL_TESTBED\): expected one of"):
        build("tiny", cache_dir=tmp_path / "d", progress=False)
    monkeypatch.delenv("DDRL_TESTBED")

    (pin / "model.safetensors").write_bytes(b"damaged")  # e.g. a Git LFS pointer instead of the weights
    with pytest.raises(ValueError, match=f"{pin}: the committed build's weights"):
        build("tiny", cache_dir=tmp_path / "e", progress=False)
    assert not (tmp_path / "e" / "testbed" / name).exists()
    monkeypatch.setattr(B, "REFERENCE_FILES", (tmp_path / "absent.json",))  # nothing committed: pretrain
    with pytest.raises(Pretrained):
        build("tiny", cache_dir=tmp_path / "f", progress=False)


def test_the_default_and_weak_presets_have_their_committed_reference_builds():
    """The committed reference builds are intact (their weights hash to what results/regimes_*.json name), so a
    fresh machine installs the claims study's base instead of pretraining its own CPU's bits."""
    import ddrl.testbed.builds as B

    for preset in ("default", "weak"):
        ref = B.reference_build(preset, PRESETS[preset])
        assert ref is not None, f"no committed reference build of the {preset!r} preset's configuration"
        where, weights = ref
        assert B.weight_sha256s(where) == weights, f"{where} does not hold the weights the reference file names"
        assert read_meta(where)["hash"] == PRESETS[preset].config_hash()


def test_config_hash_changes_with_config():
    assert PretrainConfig().config_hash() != PretrainConfig(lr=1e-3).config_hash()
    assert PretrainConfig().config_hash() == PretrainConfig().config_hash()
    with pytest.raises(ValueError, match="schedule"):
        PretrainConfig(schedule="linear")
    base = PretrainConfig()
    assert PretrainConfig(decay_step=123).config_hash() == base.config_hash(), "unused by the cosine schedule"
    step = PretrainConfig(schedule="step")
    assert step.config_hash() != base.config_hash()
    assert PretrainConfig(schedule="step", decay_step=123).config_hash() != step.config_hash()


def test_ema_config_hash_and_validation():
    base = PretrainConfig()
    assert PretrainConfig(ema_decay=0.0).config_hash() == base.config_hash(), "off: older hashes stay"
    assert PretrainConfig(ema_decay=0.99).config_hash() != base.config_hash()
    assert PretrainConfig(ema_decay=0.99).config_hash() != PretrainConfig(ema_decay=0.995).config_hash()
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match="ema_decay"):
            PretrainConfig(ema_decay=bad)


def test_ema_update_is_the_moving_average():
    a, m = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    a0 = [p.detach().clone() for p in a.parameters()]
    ema_update(a, m, 0.9, step=1000)  # the warmup (1001/1010 > 0.9) no longer binds
    for p0, pa, pm in zip(a0, a.parameters(), m.parameters()):
        torch.testing.assert_close(pa, 0.9 * p0 + 0.1 * pm)
    a1 = [p.detach().clone() for p in a.parameters()]
    ema_update(a, m, 0.9, step=0)  # first step: d = 1/10, mostly the new weights
    for p1, pa, pm in zip(a1, a.parameters(), m.parameters()):
        torch.testing.assert_close(pa, 0.1 * p1 + 0.9 * pm)


def test_pretrain_with_average_returns_the_average():
    """The returned model is the callback's model, which is the average, not the last iterate."""
    cfg = dataclasses.replace(PRESETS["tiny"], steps=6, ema_decay=0.9)
    seen = []
    model, _, info = pretrain(cfg, progress=False, callback=lambda step, m: seen.append((step, m)))
    assert [s for s, _ in seen] == list(range(1, 7)) and all(m is model for _, m in seen)
    raw, _, _ = pretrain(dataclasses.replace(cfg, ema_decay=0.0), progress=False)
    diffs = [(p - q).abs().max().item() for p, q in zip(model.parameters(), raw.parameters())]
    assert max(diffs) > 0, "the average differs from the last iterate"


def test_average_computed_alongside_equals_the_built_in_one():
    """bench/testbed_sweep.py averages a run with ema_decay=0 from ``initial_model``; that must be the model a
    run with ema_decay > 0 returns."""
    import copy

    from ddrl.testbed.pretrain import initial_model
    from ddrl.testbed.tokenizer import build_tokenizer

    cfg = dataclasses.replace(PRESETS["tiny"], steps=6, ema_decay=0.9)
    built_in, _, _ = pretrain(cfg, progress=False)
    plain = dataclasses.replace(cfg, ema_decay=0.0)
    average = copy.deepcopy(initial_model(plain, build_tokenizer(model_max_length=plain.max_positions)))
    pretrain(plain, progress=False, callback=lambda step, m: ema_update(average, m, cfg.ema_decay, step - 1))
    for p, q in zip(built_in.parameters(), average.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_unknown_preset_and_missing_dir(tmp_path):
    with pytest.raises(ValueError, match="preset"):
        build("huge", cache_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="config.json"):
        load(tmp_path)


def test_cli_builds_and_prints_path(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "ddrl.testbed", "build", "--preset", "tiny", "--cache-dir",
                          str(tmp_path), "--quiet"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    path = Path(out.stdout.strip().splitlines()[-1])
    assert (path / "model.safetensors").is_file() and path.parent == tmp_path / "testbed"
    assert json.loads(out.stderr.strip().splitlines()[-1])["preset"] == "tiny"
