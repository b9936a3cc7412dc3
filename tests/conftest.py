"""Shared fixtures: where the real data lies, and the test tiers."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# `make test` runs the fast tier in pytest-xdist workers (Makefile TEST_WORKERS): each gets its share of the cores
# for torch and BLAS (set before either is imported), so two workers on 2 cores do not each start 2 threads.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))


#: `make test` runs the fast tier in a pytest-xdist pool (Makefile). Test files go to the two workers in collection
#: order, a file per worker at a time, so the longest go first and the tail is short files. (The notebooks' smoke run,
#: which used to lead here, is in the slow tier now: `make test-slow`.)
LONGEST_FIRST = ("tests/test_study.py", "tests/test_parallel.py")


def pytest_collection_modifyitems(config, items):
    """Reorder whole files (a stable sort: each file's tests keep their order) so :data:`LONGEST_FIRST` come first."""
    rank = {f: i for i, f in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda it: rank.get(it.nodeid.split("::")[0], len(rank)))


#: A test of LoRA training (peft is the ``lora`` extra, which ``make install`` takes): skipped, saying why, without it.
requires_peft = pytest.mark.skipif(importlib.util.find_spec("peft") is None,
                                   reason="peft is not installed: LoRA is the `lora` extra (pip install -e '.[lora]')")


def shared_data_dir() -> Path:
    """``$DDRL_DATA_DIR`` or ``../shared/data`` beside the repository (never committed)."""
    return Path(os.environ.get("DDRL_DATA_DIR") or REPO.parent / "shared" / "data")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    d = shared_data_dir()
    if not (d / "MATH-TTT" / "test.json").is_file():
        pytest.skip(f"real benchmark data not found at {d} (set DDRL_DATA_DIR or place shared/ beside the repo)")
    return d


def committed_json(path: Path, command: str) -> dict:
    """A committed analysis (JSON), or a skip naming the ``command`` that writes it while it is not written yet."""
    if not path.is_file():
        pytest.skip(f"{path}: not analysed yet ({command})")
    return json.loads(path.read_text())


def same_json(got, committed, rel: float = 1e-9) -> bool:
    """Whether a recomputed analysis (``got``, through one JSON round trip) equals the ``committed`` one: keys in their
    order (the file ``analyse --json`` writes is the committed one), strings and integers exactly, floats to ``rel`` (a
    least-squares fit's last digits differ between CPU families' BLAS)."""

    def same(g, c) -> bool:
        if isinstance(c, dict):
            return isinstance(g, dict) and list(g) == list(c) and all(same(g[k], c[k]) for k in c)
        if isinstance(c, list):
            return isinstance(g, list) and len(g) == len(c) and all(same(x, y) for x, y in zip(g, c))
        if isinstance(c, float) and isinstance(g, (int, float)) and not isinstance(g, bool):
            return g == pytest.approx(c, rel=rel, abs=1e-12, nan_ok=True)
        return g == c

    return same(json.loads(json.dumps(got)), committed)


def write_h1x(out: Path, regime: str, method: str, seed: int, acc: float, run: str) -> None:
    """A made-up H1x CSV (TEST INPUT): two fresh questions at ``acc`` -+ 5 points, so their mean is ``acc``."""
    import pandas as pd

    from ddrl.study.plan import heldout_x_path

    p = heldout_x_path(out, regime, method, seed)
    p.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"regime": regime, "method": method, "seed": seed, "split": "heldout_x", "question": ["q0", "q1"],
                  "pass@1": [(acc - 5) / 100, (acc + 5) / 100], "run": run}).to_csv(p, index=False)


def load_bench(name: str):
    """``bench/<name>.py`` as a module (the bench scripts are scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_tiny_lm(vocab_chars: str = "0123456789+-*=;", hidden: int = 32, layers: int = 2, seed: int = 0):
    """A random tiny Qwen2 causal LM and a character tokenizer with a chat template (no downloads).

    Only for tests of the machinery (sampling, losses, training steps), not for accuracy.
    """
    import torch
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    specials = ["<pad>", "<eos>", "<|user|>", "<|assistant|>", "\\boxed{", "}"]
    vocab = {t: i for i, t in enumerate(specials + list(vocab_chars))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex(r"\\boxed\{|<\|user\|>|<\|assistant\|>|."), behavior="isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>")
    tok.add_special_tokens({"additional_special_tokens": ["<|user|>", "<|assistant|>"]})
    tok.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'user' %}<|user|>{{ m['content'] }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    cfg = Qwen2Config(
        vocab_size=len(vocab), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=True,
        pad_token_id=0, eos_token_id=1, bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg).eval()
    assert tok("1+2=3")["input_ids"] == [vocab[c] for c in "1+2=3"], "tiny tokenizer must split characters"
    return model, tok


@pytest.fixture(scope="session")
def tiny_lm():
    return make_tiny_lm()


@pytest.fixture(scope="session")
def tiny_testbed() -> Path:
    """The tiny testbed build in the default cache (pretrained once per clone, ~10 s on 2 cores; then read)."""
    from ddrl.testbed import build

    return build("tiny", progress=False)


@pytest.fixture
def testbed_cache(tmp_path, tiny_testbed, monkeypatch) -> Path:
    """A fresh ``$DDRL_CACHE_DIR`` (nothing cached: runs, evaluations, rollouts) holding the session's tiny testbed
    build as a link, so a test that wants its own cache does not pretrain the tiny testbed again."""
    cache = tmp_path / "cache"
    (cache / "testbed").mkdir(parents=True)
    (cache / "testbed" / tiny_testbed.name).symlink_to(tiny_testbed, target_is_directory=True)
    monkeypatch.setenv("DDRL_CACHE_DIR", str(cache))
    return cache


def kill_after_first_run(cmd: list[str], env: dict, runs: Path, deadline_s: float = 300) -> list[Path]:
    """Start ``cmd`` in its own process group, SIGKILL the whole group (parent and pool workers) as soon as a
    first run directory under ``runs`` has finished, and return the finished runs' ``result.json`` paths
    (empty if the command ended or the deadline passed first)."""
    proc = subprocess.Popen(cmd, start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + deadline_s
    finished: list[Path] = []
    try:
        while not finished and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            finished = list(runs.glob("*/final/result.json"))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return finished


def full_disk_open(after_bytes: int = 0):
    """``open`` whose files opened for writing raise ENOSPC once ``after_bytes`` are written, as a full disk does
    (tests/test_reliability.py, tests/test_reproduce.py: monkeypatch it over ``builtins.open``)."""
    import builtins
    import errno

    real_open = builtins.open

    class Full:
        def __init__(self, f):
            self.f, self.n = f, 0

        def write(self, b):
            self.n += len(b)
            if self.n > after_bytes:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(b)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def fake(file, mode="r", *a, **k):
        f = real_open(file, mode, *a, **k)
        return Full(f) if any(c in mode for c in "wa") else f

    return fake
