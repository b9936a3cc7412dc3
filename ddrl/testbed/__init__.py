"""The embedded testbed: a synthetic arithmetic task and a tiny ``Qwen2ForCausalLM`` trained on it, so every
notebook runs on a 2-core CPU with no downloads and still takes the Hugging Face code path.

- :func:`generate_split` -- records ``{prompt, answer, source, id}`` (train: 1-4 operations; test: 4)
- :func:`build` -- pretrain (or fetch from the cache) and return a ``save_pretrained`` directory
- :func:`load` -- ``(model, tokenizer)`` from that directory via ``AutoModelForCausalLM`` / ``AutoTokenizer``

``python -m ddrl.testbed build --preset {tiny,default}`` builds from the command line.
"""

from __future__ import annotations

import importlib

# Names -> the submodule that defines them, imported on first use (PEP 562), so that ``ddrl.testbed.config``
# (the presets) can be read without importing torch and transformers.
_WHERE = {"PRESETS": "config", "PretrainConfig": "config", "build": "pretrain", "load": "pretrain",
          "read_meta": "pretrain", "SPLITS": "task", "evaluate_question": "task", "generate_split": "task",
          "solution_text": "task", "build_tokenizer": "tokenizer"}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"ddrl.testbed.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'ddrl.testbed' has no attribute {name!r}")

__all__ = ["PRESETS", "PretrainConfig", "SPLITS", "build", "build_tokenizer", "evaluate_question",
           "generate_split", "load", "read_meta", "solution_text"]
