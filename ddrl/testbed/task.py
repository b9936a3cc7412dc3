"""The synthetic arithmetic task: left-to-right chains whose solutions end in ``\\boxed{N}``.

A question is a chain of integer operations evaluated strictly left to right (no operator precedence),
for example ``47+38*2-9``. Its solution writes one step per operation and then the boxed answer::

    47+38=85;85*2=170;170-9=161;\\boxed{161}

Chains start at 2-99; each step is ``+b`` or ``-b`` with ``b`` in 2-99 or ``*b`` with ``b`` in 2-9, and
every intermediate value stays in [0, 999] (an operation that would leave the range is never drawn).

The two splits differ only in the number of operations per chain (the distribution shift):

- ``train``: 1-4 operations with probabilities 0.3 / 0.3 / 0.3 / 0.1 (pretraining draws fresh problems);
- ``test``: exactly 4 operations (rare in training: the model is competent but unsure there);
- ``dev``: the test distribution from an independent random stream (used to stop pretraining).

Records have the fields of the real benchmarks: ``{prompt, answer, source, id}``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np

from ddrl.seeds import numpy_generator

MIN_START, MAX_START = 2, 99
MIN_ADD, MAX_ADD = 2, 99
MIN_MUL, MAX_MUL = 2, 9
MAX_VALUE = 999
OPS = ("+", "-", "*")


@dataclass(frozen=True)
class SplitSpec:
    """How many operations a split's chains have: ``num_ops[i]`` is drawn with probability ``weights[i]``."""

    num_ops: tuple[int, ...]
    weights: tuple[float, ...]


#: The distribution shift, explicit: train on 1-4 operations (mostly short), test on 4.
SPLITS: dict[str, SplitSpec] = {
    "train": SplitSpec(num_ops=(1, 2, 3, 4), weights=(0.3, 0.3, 0.3, 0.1)),
    "test": SplitSpec(num_ops=(4,), weights=(1.0,)),
    "dev": SplitSpec(num_ops=(4,), weights=(1.0,)),
}


def apply_op(value: int, op: str, operand: int) -> int:
    """One step of a chain."""
    if op == "+":
        return value + operand
    if op == "-":
        return value - operand
    if op == "*":
        return value * operand
    raise ValueError(f"op must be one of {OPS}, got {op!r}")


def sample_chain(num_ops: int, rng: np.random.Generator) -> tuple[int, list[tuple[str, int]]]:
    """A random chain ``(start, [(op, operand), ...])`` whose values all stay in [0, MAX_VALUE].

    Each step draws an operation uniformly among those that can keep the value in range, then an operand
    uniformly among those that do.
    """
    if num_ops < 1:
        raise ValueError(f"num_ops must be >= 1, got {num_ops}")
    value = int(rng.integers(MIN_START, MAX_START + 1))
    start, steps = value, []
    for _ in range(num_ops):
        feasible = []
        if value + MIN_ADD <= MAX_VALUE:
            feasible.append(("+", MIN_ADD, min(MAX_ADD, MAX_VALUE - value)))
        if value - MIN_ADD >= 0:
            feasible.append(("-", MIN_ADD, min(MAX_ADD, value)))
        if value * MIN_MUL <= MAX_VALUE:
            feasible.append(("*", MIN_MUL, min(MAX_MUL, MAX_VALUE // max(value, 1))))
        op, lo, hi = feasible[int(rng.integers(len(feasible)))]
        operand = int(rng.integers(lo, hi + 1))
        steps.append((op, operand))
        value = apply_op(value, op, operand)
    return start, steps


def question_text(start: int, steps: list[tuple[str, int]]) -> str:
    """``47+38*2-9``."""
    return str(start) + "".join(f"{op}{b}" for op, b in steps)


def solution_text(start: int, steps: list[tuple[str, int]]) -> str:
    """``47+38=85;85*2=170;170-9=161;\\boxed{161}`` (no end-of-sequence token)."""
    parts, value = [], start
    for op, b in steps:
        new = apply_op(value, op, b)
        parts.append(f"{value}{op}{b}={new};")
        value = new
    return "".join(parts) + f"\\boxed{{{value}}}"


_QUESTION = re.compile(r"^\d+(?:[+\-*]\d+)+$")
_TERM = re.compile(r"([+\-*])(\d+)")


def evaluate_question(question: str) -> int:
    """The answer to a question string, evaluated left to right (``2+3*4`` is 20, not 14)."""
    if not _QUESTION.match(question):
        raise ValueError(f"question must look like '47+38*2-9', got {question!r}")
    head = re.match(r"\d+", question)
    value = int(head.group(0))
    for op, b in _TERM.findall(question[head.end():]):
        value = apply_op(value, op, int(b))
    return value


def generate_split(split: str, n: int, seed: int) -> list[dict]:
    """``n`` records ``{prompt, answer, source, id}`` of ``split`` ("train", "test" or "dev").

    Deterministic for ``(split, seed)``; record ``i`` does not depend on ``n`` (a prefix of a larger
    split is the smaller split).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    return generate_records(SPLITS[split], n, seed, split)


def generate_records(spec: SplitSpec, n: int, seed: int, split: str) -> list[dict]:
    """``n`` records of chains drawn from ``spec``, from the random stream named ``split`` (ids
    ``testbed-<split>-<i>``). :func:`generate_split` is this with a registered spec; the claims study's
    regimes (``ddrl.study.plan``) use it for other operation counts.

    Each stream is drawn once per process and kept (:data:`_STREAMS`, the longest prefix asked for, extended
    in place): the study's content keys regenerate a regime's questions for every job, which cost ~100 s per
    check of the committed runs before. Callers get fresh dicts, so changing one changes no later call."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if len(spec.num_ops) != len(spec.weights) or min(spec.num_ops) < 1 or abs(sum(spec.weights) - 1) > 1e-9:
        raise ValueError(f"spec must pair operation counts >= 1 with weights summing to 1, got {spec}")
    with _STREAMS_LOCK:
        key = (tuple(spec.num_ops), tuple(spec.weights), seed, split)  # a spec given lists hashes too
        if key not in _STREAMS:
            if len(_STREAMS) >= _MAX_STREAMS:
                _STREAMS.pop(next(iter(_STREAMS)))  # the oldest stream
            _STREAMS[key] = ([], numpy_generator(seed, "testbed", split))
        records, rng = _STREAMS[key]
        for i in range(len(records), n):
            num_ops = int(rng.choice(spec.num_ops, p=spec.weights))
            start, steps = sample_chain(num_ops, rng)
            records.append(
                {
                    "prompt": question_text(start, steps),
                    "answer": str(evaluate_question(question_text(start, steps))),
                    "source": f"testbed-{split}",
                    "id": f"testbed-{split}-{i}",
                }
            )
        return [dict(r) for r in records[:n]]


#: :func:`generate_records`' streams drawn so far: (num_ops, weights, seed, split) -> (records, generator after them).
_STREAMS: dict[tuple, tuple[list[dict], np.random.Generator]] = {}
_STREAMS_LOCK = threading.Lock()
_MAX_STREAMS = 64


def sample_problems(num_ops: tuple[int, ...], weights: tuple[float, ...], n: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    """``n`` fresh ``(question, solution)`` pairs for pretraining, drawn from ``rng``."""
    out = []
    for _ in range(n):
        k = int(rng.choice(num_ops, p=weights))
        start, steps = sample_chain(k, rng)
        out.append((question_text(start, steps), solution_text(start, steps)))
    return out
