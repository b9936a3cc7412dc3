"""The sampler's decode attention as a C loop (``ddrl.accel.native_attention``, ``ddrl/accel/decode_attention.c``): the same
attention as torch's ``_SharedPromptAttention`` up to float rounding (padding, grouped-query heads, the cache write),
the same bits at any thread count, one OpenMP runtime, a build keyed by what it depends on and safe to race, and a
clear refusal where it cannot be built. The sampler-level checks (log-probs against the Hugging Face forward, the
same draws, compaction) run with both attentions in ``tests/test_fast_sampling.py``."""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
from pathlib import Path

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from ddrl.accel import native_attention as NA
from ddrl.accel.fast_sampling import StaticCacheSampler, _NativeAttention, _SharedPromptAttention

needs_compiler = pytest.mark.skipif(NA.compiler() is None, reason="no C compiler to build the native decode attention")


def _step_inputs(n_heads, n_kv, head_dim, t, seed=0):
    """One decode step of 7 rows over 3 distinct prompts (width 5, left padding on two of them), in both classes'
    cache layouts with the same keys and values at positions < t; q/k/v are views of one fused projection, as the
    sampler's forward passes them."""
    g = torch.Generator().manual_seed(seed)
    rows, n_u, width, steps = 7, 3, 5, 12
    group = torch.tensor([0, 0, 1, 2, 1, 0, 2])
    prompt_cache = [(torch.randn(n_u, n_kv, width, head_dim, generator=g),
                     torch.randn(n_u, n_kv, width, head_dim, generator=g))]
    valid = torch.ones(n_u, width, dtype=torch.bool)
    valid[1, :2] = False
    valid[2, :4] = False
    bias = torch.zeros(n_u, width).masked_fill(~valid, float("-inf"))
    keys, values = torch.randn(rows, n_kv, steps, head_dim, generator=g), torch.randn(rows, n_kv, steps, head_dim,
                                                                                     generator=g)
    qkv = torch.randn(rows, 1, n_heads + 2 * n_kv, head_dim, generator=g).transpose(1, 2)
    q, k, v = qkv[:, :n_heads], qkv[:, n_heads:n_heads + n_kv], qkv[:, n_heads + n_kv:]
    caches = {}
    for cls in (_SharedPromptAttention, _NativeAttention):
        ck, cv = cls.response_cache((rows, n_kv, steps, head_dim), torch.float32, "cpu")
        ck.copy_(keys.transpose(-1, -2) if cls is _NativeAttention else keys)  # the C loop keeps keys transposed
        cv.copy_(values)
        caches[cls] = (ck, cv)
    return prompt_cache, bias, group, caches, (q, k, v)


def _attend(cls, prompt_cache, bias, group, cache, qkv, t):
    att = cls(prompt_cache, bias, group)
    att.resp_cache, att.t = [cache], t
    return att(0, *qkv)


@needs_compiler
@pytest.mark.parametrize("n_heads,n_kv,head_dim", [(4, 4, 24), (4, 2, 8), (6, 2, 16)])
@pytest.mark.parametrize("t", [0, 3, 11])
def test_the_c_loop_computes_torchs_attention(n_heads, n_kv, head_dim, t):
    assert NA.unavailable_reason() is None, NA.unavailable_reason()
    prompt_cache, bias, group, caches, qkv = _step_inputs(n_heads, n_kv, head_dim, t)
    ref = _attend(_SharedPromptAttention, prompt_cache, bias, group, caches[_SharedPromptAttention], qkv, t)
    got = _attend(_NativeAttention, prompt_cache, bias, group, caches[_NativeAttention], qkv, t)
    assert got.shape == ref.shape == (7, n_heads, 1, head_dim)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    # the step's key and value went into each row's cache at position t, in each class's layout
    (rk, rv), (nk, nv) = caches[_SharedPromptAttention], caches[_NativeAttention]
    torch.testing.assert_close(nk.transpose(-1, -2)[:, :, : t + 1], rk[:, :, : t + 1], atol=0, rtol=0)
    torch.testing.assert_close(nv[:, :, : t + 1], rv[:, :, : t + 1], atol=0, rtol=0)
    torch.testing.assert_close(rk[:, :, t], qkv[1][:, :, 0], atol=0, rtol=0)


@needs_compiler
def test_the_same_bits_at_any_thread_count_and_one_openmp_runtime():
    """Rows are split over threads, each row computed by one thread in one order: the result does not depend on
    the thread count. The library shares torch's libgomp instead of loading a second runtime."""
    NA.library()
    runtimes = NA._openmp_runtimes()
    assert len(runtimes) == 1 and "libgomp" in next(iter(runtimes)), runtimes
    prompt_cache, bias, group, caches, qkv = _step_inputs(4, 4, 24, 9, seed=3)
    before = torch.get_num_threads()
    outs = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            outs.append(_attend(_NativeAttention, prompt_cache, bias, group, caches[_NativeAttention], qkv, 9))
    finally:
        torch.set_num_threads(before)
    assert torch.equal(outs[0], outs[1])


@needs_compiler
def test_the_build_is_keyed_and_reused(tmp_path, monkeypatch):
    first = NA.build(tmp_path)
    assert first.parent == tmp_path / "native" and first.name.startswith("decode_attention-")
    mtime = first.stat().st_mtime_ns
    assert NA.build(tmp_path) == first and first.stat().st_mtime_ns == mtime  # a finished library is only read
    monkeypatch.setattr(NA, "_cpu_identity", lambda: "another CPU")  # -march=native: another CPU, another build
    other = NA.build(tmp_path)
    assert other != first and other.is_file()
    assert sorted(p.name for p in (tmp_path / "native").iterdir()) == sorted(
        [first.name, other.name, NA.record_path(first).name, NA.record_path(other).name])


def _build_in(path: str, queue) -> None:
    queue.put(str(NA.build(path)))


@needs_compiler
def test_processes_building_at_once_leave_one_whole_library(tmp_path):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_build_in, args=(str(tmp_path), queue)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    paths = {queue.get(timeout=5) for _ in procs}
    assert len(paths) == 1
    lib = Path(paths.pop())
    assert sorted(p.name for p in (tmp_path / "native").iterdir()) == sorted([lib.name, NA.record_path(lib).name])
    NA.load_verified(lib).ddrl_decode_attention  # loadable, and the bytes are the ones the record names


class _IdTokenizer:
    pad_token_id, eos_token_id = 0, 1

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def test_without_a_compiler_auto_falls_back_and_native_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path))  # a fresh entry of the per-process load cache
    NA._load.cache_clear()
    try:
        assert "no C compiler" in NA.unavailable_reason()
        monkeypatch.setenv("DDRL_DECODE_ATTENTION", "auto")
        assert not NA.use_native() and NA.key() == {}
        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(vocab_size=16, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                             num_attention_heads=2, num_key_value_heads=2, pad_token_id=0,
                                             eos_token_id=1, bos_token_id=None)).eval()
        tok = _IdTokenizer()
        sampler = StaticCacheSampler(model, tok, batch_size=4)
        assert not sampler.native  # samples with torch's attention
        assert sampler.sample_ids([[3, 4]], n=2, max_new_tokens=3)[0][0].token_ids
        monkeypatch.setenv("DDRL_DECODE_ATTENTION", "native")
        with pytest.raises(RuntimeError, match="DDRL_DECODE_ATTENTION=native.*no C compiler"):
            StaticCacheSampler(model, tok, batch_size=4)
    finally:
        NA._load.cache_clear()


def test_an_unknown_choice_is_named(monkeypatch):
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "cuda")
    with pytest.raises(ValueError, match="DDRL_DECODE_ATTENTION must be one of"):
        NA.choice()


# --- native code is trusted only when built here (issue 85) --------------------------------------------------------


def _library_path(cache: Path) -> Path:
    return cache / "native" / f"decode_attention-{NA.library_key(NA.compiler())[:16]}.so"


@pytest.fixture
def fresh_load(tmp_path, monkeypatch):
    """A private cache and a fresh entry of the per-process load cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("DDRL_CACHE_DIR", str(cache))
    NA._load.cache_clear()
    yield cache
    NA._load.cache_clear()


@needs_compiler
@pytest.mark.parametrize("record", ["none", "stale", "of the genuine build"])
def test_a_planted_library_is_never_executed(tmp_path, fresh_load, monkeypatch, record):
    """Issue 85: a library planted at the C attention's path in <cache>/native/ was loaded (its constructor ran).
    Here a library whose constructor writes a marker file is planted there with no record, a record of other bytes,
    or over a genuine build (whose record stays): it is built again and never runs; the genuine one is used."""
    marker = tmp_path / "constructor-ran"
    src = tmp_path / "planted.c"
    src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void ran(void) { FILE *f = fopen("'
                   + str(marker) + '", "w"); if (f) fclose(f); }\n'
                   "void ddrl_decode_attention(void) {}\nvoid ddrl_decode_attention_limits(void) {}\n")
    planted = tmp_path / "planted.so"
    subprocess.run([NA.compiler(), "-shared", "-fPIC", str(src), "-o", str(planted)], check=True)
    path = _library_path(fresh_load)
    if record == "of the genuine build":
        assert NA.build(fresh_load) == path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(planted.read_bytes())
    if record == "stale":
        NA.record_path(path).write_text("0" * 64 + "\n")
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "native")
    assert NA.unavailable_reason() is None and NA.use_native()
    assert not marker.exists(), "the planted library's constructor ran"
    assert path.read_bytes() != planted.read_bytes() and NA.verified_bytes(path)[0] is not None  # rebuilt
    NA.library().ddrl_decode_attention_limits  # the genuine library is the one loaded


@needs_compiler
def test_a_library_that_lacks_its_symbols_or_does_not_load_falls_back_named(fresh_load, monkeypatch):
    """A library that lacks the symbols (here: one more asked for) or that does not load (bytes that are no ELF
    file, recorded as this build's) is the torch attention under auto, the reason naming the file; under native
    that reason is the error."""
    path = _library_path(fresh_load)
    monkeypatch.setattr(NA, "SYMBOLS", NA.SYMBOLS + ("ddrl_no_such_symbol",))
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "auto")
    assert not NA.use_native() and NA.key() == {}
    assert str(path) in NA.unavailable_reason() and "ddrl_no_such_symbol" in NA.unavailable_reason()
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "native")
    with pytest.raises(RuntimeError, match=rf"DDRL_DECODE_ATTENTION=native.*{path}.*lacks the symbol"):
        NA.use_native()
    monkeypatch.undo()
    monkeypatch.setenv("DDRL_CACHE_DIR", str(fresh_load))
    NA._load.cache_clear()
    path.write_bytes(b"not an ELF file")
    NA.record_path(path).write_text(NA.sha256_bytes(b"not an ELF file") + "\n")
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "auto")
    assert not NA.use_native() and f"{path} does not load" in NA.unavailable_reason()


@needs_compiler
def test_a_build_under_umask_002_verifies(tmp_path):
    """Files made under a group-writable umask (and a native folder an older version made so) would fail the
    privacy check forever, turning the C loop off for good: the build makes them this user's only."""
    old = os.umask(0o002)
    try:
        (tmp_path / "native").mkdir(mode=0o775)
        os.chmod(tmp_path / "native", 0o775)
        path = NA.build(tmp_path)
        assert NA.verified_bytes(path)[0] is not None, NA.verified_bytes(path)[1]
    finally:
        os.umask(old)
