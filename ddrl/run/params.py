"""Notebook parameters: checked and coerced before any work, with errors that name the parameter.

A notebook declares its parameters, with defaults, in its ``parameters`` cell; the default's type is the
parameter's type (``lr = 3e-5`` is a float, ``seeds = [0, 1, 2]`` a list of ints). :func:`check_parameters`
coerces what YAML gave (``-p lr 1e-4`` reads as the *string* ``"1e-4"`` in YAML 1.1) and checks each value
against that type and the constraints in :data:`RULES` (ranges, choices, non-empty lists), then the trainer
knobs together through :func:`ddrl.config.validate_config`. Every error names the notebook, the parameter,
the value given and what is expected.
"""

from __future__ import annotations

import ast
import math
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

from ddrl.config import METHODS, TrainConfig, make_config, validate_config
from ddrl.selection import SELECTIONS
from ddrl.testbed.config import PRESETS as TESTBED_PRESETS


class ParameterError(ValueError):
    """An unknown or malformed notebook parameter."""


def _whole(lo: int) -> Callable[[Any], str | None]:
    return lambda v: None if v >= lo else f"a whole number >= {lo}"


def _real(lo: float, hi: float = math.inf, lo_open: bool = True, hi_open: bool = False) -> Callable[[Any], str | None]:
    def check(v):
        ok = (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
        return None if ok else f"a number in {'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
    return check


def _choice(*options: str) -> Callable[[Any], str | None]:
    return lambda v: None if v in options else f"one of {list(options)}"


def _methods(v):
    bad = [m for m in v if m not in METHODS]
    return f"a list of ddrl.config.METHODS names {sorted(METHODS)}; unknown: {bad}" if bad else None


def _testbed_preset(v):
    return None if v in TESTBED_PRESETS else f"one of the testbed presets {sorted(TESTBED_PRESETS)}"


# ddrl.models imports torch and transformers (seconds): only a parameter that names a model preset pays for
# them, so a bad value of any other parameter fails at once.
def _paper_settings(v):
    from ddrl.models import PRESETS

    return None if v is None or v in PRESETS else f"None or one of the ddrl.models presets {sorted(PRESETS)}"


def _data_dir(v):
    if v is None:
        return None
    if not isinstance(v, str):
        return "None or a directory path (a string)"
    return None if Path(v).expanduser().is_dir() else "None or an existing directory"


def _bandwidth(v):
    if v is None or v in ("scott", "silverman"):
        return None
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
        return None
    return 'None, "scott", "silverman" or a positive number'


POSITIVE_INTS = ("episodes", "prompts_per_step", "n_votes", "k_train", "eval_n", "cor_m", "cor_keep", "etmr_m",
                 "max_new_tokens", "sample_batch_size", "batch_size", "n_samples", "n_questions", "n_adapted", "k",
                 "svamp_questions", "table1_questions", "table1_episodes", "table1_prompts_per_step",
                 "table1_n_votes", "table1_k_train", "table1_eval_n")

#: Constraints beyond the declared type, by parameter name (a name means the same in every notebook).
#: Lists (``*seeds``, ``*methods``, ...) must be non-empty and without repeats.
RULES: dict[str, Callable[[Any], str | None]] = {
    **{name: _whole(1) for name in POSITIVE_INTS},
    "n_heldout": _whole(0), "seed": _whole(0),
    "lr": _real(0), "table1_lr": _real(0), "extra_rl_lr": _real(0), "temperature": _real(0), "eps": _real(0),
    "top_p": _real(0, 1), "confidence": _real(0, 1, hi_open=True), "ambiguous_lo": _real(0, 1, lo_open=False),
    "ambiguous_hi": _real(0, 1, lo_open=False), "extra_rl_fraction": _real(0, lo_open=False),
    "device": lambda v: None if v in ("auto", "cpu", "cuda") or v.startswith("cuda:") else '"auto", "cpu", "cuda" or "cuda:<index>"',
    "backend": _choice("hf", "vllm"), "cue": _choice("auto", "system", "suffix", "none"),
    "selection": _choice(*SELECTIONS), "kde_weight": _choice("distinct", "samples"),
    "data_dir": _data_dir, "kde_bandwidth": _bandwidth,
}
#: Rules that import part of the package: applied once every cheap check has passed, so a mistyped value fails
#: in well under a second (measured 0.3-0.4 s); these and the TrainConfig cross-check import torch and
#: transformers (seconds, still before any work).
DEFERRED_RULES: dict[str, Callable[[Any], str | None]] = {"testbed_preset": _testbed_preset,
                                                          "paper_settings": _paper_settings}
#: List parameters whose elements have a rule of their own (by the name's suffix).
ELEMENT_RULES: dict[str, Callable[[Any], str | None]] = {"seeds": _whole(0), "lrs": _real(0), "multipliers": _whole(1)}
#: Whole-list rules, by the name's suffix (deferred: they import ddrl.run.experiments).
LIST_RULES: dict[str, Callable[[Any], str | None]] = {"methods": _methods}
#: Notebook-specific needs: (notebook name prefix, parameter) -> rule.
NOTEBOOK_RULES: dict[tuple[str, str], Callable[[Any], str | None]] = {
    ("03", "methods"): lambda v: None if {"ttrl", "etmr", "ddrl"} & set(v) else
    "a list that includes at least one of 'ttrl', 'etmr', 'ddrl' (section 2 draws their training curves)",
}


def default_value(source: str) -> Any:
    """The Python value of a ``parameters``-cell default as papermill reports it (source text)."""
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError):
        return None  # an expression: no declared type, only RULES apply


def describe(default: Any) -> str:
    """The type a default declares, in words (``"a list of int"``)."""
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, (int, float, str)):
        return {int: "a whole number", float: "a number", str: "a string"}[type(default)]
    if isinstance(default, list):
        if not default:
            return "a list"
        inner = describe(default[0])
        plural = {"a whole number": "whole numbers", "a number": "numbers", "a string": "strings",
                  "true or false": "booleans"}.get(inner, inner.removeprefix("a ") + "s")
        return f"a non-empty list of {plural}"
    return "any value"


def coerce(value: Any, default: Any) -> tuple[Any, bool]:
    """``(value as the default's type, ok)``: ints stay ints (``2.0`` -> 2, ``1.5`` is not ok), numbers and
    number strings become floats for float defaults (``"1e-4"`` -> 1e-4), lists are coerced element-wise
    against the default's first element; a None default accepts anything (its rule decides)."""
    if default is None:
        return value, True
    if isinstance(default, bool):
        return value, isinstance(value, bool)
    if isinstance(default, int):
        if isinstance(value, bool):
            return value, False
        if isinstance(value, float) and value.is_integer():
            return int(value), True
        return value, isinstance(value, int)
    if isinstance(default, float):
        if isinstance(value, bool):
            return value, False
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return value, False
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value), True
        return value, False
    if isinstance(default, str):
        return value, isinstance(value, str)
    if isinstance(default, list):
        if not isinstance(value, list) or not value:
            return value, False
        if not default:
            return value, True
        out = []
        for v in value:
            c, ok = coerce(v, default[0])
            if not ok:
                return value, False
            out.append(c)
        return out, True
    return value, True


def check_parameter(notebook: str, name: str, value: Any, default_source: str) -> Any:
    """``value`` coerced to the type of the declared default and checked against :data:`RULES`,
    :data:`DEFERRED_RULES` and :data:`LIST_RULES`; a :class:`ParameterError` naming the notebook, the
    parameter, the value and what is expected otherwise."""
    value = _check(notebook, name, value, default_source, deferred=False)
    return _check(notebook, name, value, default_source, deferred=True)


def _check(notebook: str, name: str, value: Any, default_source: str, deferred: bool) -> Any:
    """One pass of :func:`check_parameter`: the cheap checks, or (``deferred``) those that import."""
    default = default_value(default_source)
    coerced, ok = coerce(value, default)

    def fail(expected: str) -> ParameterError:
        return ParameterError(f"{notebook}: parameter {name} = {value!r}: expected {expected} "
                              f"(declared default: {default_source})")

    if deferred:
        rule = DEFERRED_RULES.get(name)
        why = rule(coerced) if rule is not None and coerced is not None else None
        if why:
            raise fail(why)
        for suffix, lrule in LIST_RULES.items():
            if isinstance(coerced, list) and name.endswith(suffix) and lrule(coerced):
                raise fail(lrule(coerced))
        return coerced
    if not ok:
        raise fail(describe(default))
    rule = RULES.get(name)
    if rule is not None and coerced is not None:
        why = rule(coerced)
        if why:
            raise fail(why)
    if isinstance(coerced, list):
        if len({repr(v) for v in coerced}) != len(coerced):
            raise fail(f"{describe(default)} without repeats")
        for suffix, erule in ELEMENT_RULES.items():
            if name.endswith(suffix):
                bad = [v for v in coerced if erule(v)]
                if bad:
                    raise fail(f"{describe(default)}, each {erule(bad[0])}; bad: {bad}")
    for (prefix, pname), nrule in NOTEBOOK_RULES.items():
        if pname == name and notebook.startswith(prefix) and nrule(coerced):
            raise fail(nrule(coerced))
    return coerced


def check_trainer_knobs(notebook: str, params: dict) -> None:
    """The :class:`ddrl.config.TrainConfig` fields among ``params``, checked together
    (:func:`ddrl.config.validate_config`: e.g. ``k_train <= n_votes``), before any work."""
    names = {f.name for f in fields(TrainConfig)} - {"model", "seed"}
    knobs = {k: v for k, v in params.items() if k in names}
    if not knobs:
        return
    try:
        validate_config(make_config("ttrl", **knobs))
    except (ValueError, TypeError) as e:
        raise ParameterError(f"{notebook}: trainer parameters do not fit together: {e}") from None


def check_parameters(notebook: str, declared: dict[str, str], params: dict) -> dict:
    """Every parameter in ``params`` checked and coerced (:func:`check_parameter`) against ``declared``
    (name -> default source, as :func:`ddrl.run.reproduce.declared_parameters` returns), with the declared
    defaults filling in what ``params`` leaves out for the checks across parameters. Returns the coerced
    ``params`` (only the keys given)."""
    out = {name: _check(notebook, name, value, declared[name], deferred=False) for name, value in params.items()}
    for name in sorted(out, key=lambda n: n == "testbed_preset"):  # the import of ddrl.testbed (torch, transformers) last
        out[name] = _check(notebook, name, out[name], declared[name], deferred=True)
    if {"n_votes", "k_train", "episodes"} <= set(declared):  # notebooks 03-05 pass these to TrainConfig
        full = {name: default_value(src) for name, src in declared.items()}
        full.update(out)
        check_trainer_knobs(notebook, full)
    return out
