"""The embedded testbed: a synthetic arithmetic task and a tiny ``Qwen2ForCausalLM`` trained on it, so every
notebook runs on a 2-core CPU with no downloads and still takes the Hugging Face code path.

- :func:`generate_split` -- records ``{prompt, answer, source, id}`` (train: 1-4 operations; test: 4)
- :func:`build` -- pretrain (or fetch from the cache) and return a ``save_pretrained`` directory
- :func:`load` -- ``(model, tokenizer)`` from that directory via ``AutoModelForCausalLM`` / ``AutoTokenizer``

``python -m ddrl.testbed build --preset {tiny,default}`` builds from the command line.
"""

from __future__ import annotations

from ddrl.testbed.pretrain import PRESETS, PretrainConfig, build, load, read_meta
from ddrl.testbed.task import SPLITS, evaluate_question, generate_split, solution_text
from ddrl.testbed.tokenizer import build_tokenizer

__all__ = ["PRESETS", "PretrainConfig", "SPLITS", "build", "build_tokenizer", "evaluate_question",
           "generate_split", "load", "read_meta", "solution_text"]
