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
import glob
import math
import os
import warnings
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

from ddrl import methods
from ddrl.config import METHODS, TrainConfig, make_config, validate_config
from ddrl.run import study_params
from ddrl.selection import SELECTIONS
from ddrl.testbed.config import PRESETS as TESTBED_PRESETS


class ParameterError(ValueError):
    """An unknown or malformed notebook parameter."""


class ParameterWarning(UserWarning):
    """A parameter value that is allowed but almost surely a mistake (a learning rate >= 1)."""


# Every rule first checks the value's type: a parameter whose default is None has no declared type, so its rule
# may see any YAML value (a mapping, a list) and must say what it expects instead of failing on a comparison.
def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _whole(lo: int) -> Callable[[Any], str | None]:
    return lambda v: None if isinstance(v, int) and not isinstance(v, bool) and v >= lo else f"a whole number >= {lo}"


def _real(lo: float, hi: float = math.inf, lo_open: bool = True, hi_open: bool = False) -> Callable[[Any], str | None]:
    def check(v):
        ok = _is_number(v) and (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
        return None if ok else f"a number in {'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
    return check


def _choice(*options: str) -> Callable[[Any], str | None]:
    return lambda v: None if isinstance(v, str) and v in options else f"one of {list(options)}"


def _methods(v):
    bad = [m for m in v if not isinstance(m, str) or m not in METHODS]
    return f"a list of ddrl.config.METHODS names {sorted(METHODS)}; unknown: {bad}" if bad else None


def _testbed_preset(v):
    return None if isinstance(v, str) and v in TESTBED_PRESETS else f"one of the testbed presets {sorted(TESTBED_PRESETS)}"


# ddrl.models imports torch and transformers (seconds): only a parameter that names a model preset pays for
# them, so a bad value of any other parameter fails at once.
def _paper_settings(v):
    from ddrl.models import PRESETS

    ok = v is None or isinstance(v, str) and v in PRESETS
    return None if ok else f"None or one of the ddrl.models presets {sorted(PRESETS)}"


#: Where a CUDA (or ROCm) driver shows itself without importing torch: none of these on a machine means no GPU.
CUDA_DRIVER_PATHS = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/nvidia[0-9]*", "/dev/kfd")


def no_cuda_reason() -> str | None:
    """Why no CUDA device can be used here, read in microseconds without torch; None when one may be (torch then
    decides, in the deferred check :func:`_cuda_device`)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides every device"
    if any(glob.glob(p) for p in CUDA_DRIVER_PATHS):
        return None
    return f"this machine has no CUDA driver (none of {list(CUDA_DRIVER_PATHS)})"


def _device(v):
    expected = '"auto", "cpu", "cuda" or "cuda:<index>"'
    if not isinstance(v, str) or not (v in ("auto", "cpu", "cuda") or v.startswith("cuda:") and v[5:].isdigit()):
        return expected
    if v.startswith("cuda") and (why := no_cuda_reason()):
        return f"{expected} on a device that is there; {why}: use device=auto or cpu"
    return None


def _cuda_device(v):
    """The deferred half of the device check: torch sees the CUDA device ``v`` names (ddrl.models imports torch)."""
    if not (isinstance(v, str) and v.startswith("cuda")):
        return None
    from ddrl.models import cuda_device_problem

    why = cuda_device_problem(v)
    return f"a CUDA device torch sees; {why}: use device=auto or cpu" if why else None


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def _model(v):
    """``"testbed"``, a local directory, a ddrl.models preset or a hub id; with ``HF_HUB_OFFLINE`` on, a hub id must
    be in the local Hugging Face cache (checked here, so a missing one fails by name instead of at the first load).
    A name without ``/`` may be a preset (ddrl.models imports torch): that case is left to the deferred check."""
    if not isinstance(v, str) or not v:
        return '"testbed", a ddrl.models preset, a Hugging Face id or a local directory'
    path = Path(v).expanduser()
    if v == "testbed" or path.is_dir():
        return None
    if path.exists():
        return "a directory saved with save_pretrained, not a file"
    if "/" not in v or not _hub_offline():
        return None
    return _hub_id_missing(v)


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, found as huggingface_hub finds it (``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE``,
    ``HF_HOME``/hub, ``XDG_CACHE_HOME``/huggingface/hub, ~/.cache/huggingface/hub) without importing it."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache") / "huggingface"
    return Path(home).expanduser() / "hub"


def _hub_id_missing(repo_id: str) -> str | None:
    """None when the hub cache holds a snapshot of ``repo_id`` with its config, else what is expected."""
    folder = hub_cache_dir() / ("models--" + repo_id.replace("/", "--"))
    if any(folder.glob("snapshots/*/config.json")):
        return None
    return ("a ddrl.models preset, a local directory or a Hugging Face id in the local cache: HF_HUB_OFFLINE is on "
            "and this id is not cached (download it where there is network: huggingface-cli download ID)")


def _model_preset_or_cached(v):
    """The deferred half of the model check, for names without ``/``: a ddrl.models preset, or (offline) a cached id."""
    if not isinstance(v, str) or "/" in v or v == "testbed" or Path(v).expanduser().exists():
        return None
    from ddrl.models import PRESETS

    if v in PRESETS or not _hub_offline():
        return None
    return _hub_id_missing(v)


def _bands(v):
    ok = all(isinstance(b, list) and len(b) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in b)
             and 1 <= b[0] <= b[1] <= 64 for b in v)
    return None if ok else "a list of [lo, hi] count bands out of 64 samples, 1 <= lo <= hi <= 64"


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


#: The claims study's scales, ``ddrl.study.plan.SCALES``'s names.
STUDY_SCALES = ("default", "smoke")

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
    "device": _device, "model": _model, "bands": _bands,
    "backend": _choice("hf", "vllm"), "cue": _choice("auto", "system", "suffix", "none"),
    "selection": _choice(*SELECTIONS), "kde_weight": _choice("distinct", "samples"),
    "paper_temperature": _choice("paper", "scripts"),
    # ddrl.study.plan.SCALES (the run layer does not import the study; a test checks the two agree)
    "study_scale": _choice(*STUDY_SCALES),
    # the type here, the preset name in DEFERRED_RULES (it imports ddrl.models)
    "paper_settings": lambda v: None if isinstance(v, str) else "None or one of the ddrl.models presets (a name)",
    "data_dir": _data_dir, "kde_bandwidth": _bandwidth,
    # names of the repository's data and study, read from its files (ddrl.run.study_params; tests hold them to
    # ddrl.data and ddrl.study.lesson, which the notebooks use)
    "dataset": study_params.dataset_rule, "rerun": study_params.rerun_rule,
}
#: Rules that import part of the package: applied once every cheap check has passed, so a mistyped value fails
#: in well under a second (measured 0.3-0.4 s); these and the TrainConfig cross-check import torch and
#: transformers (seconds, still before any work).
DEFERRED_RULES: dict[str, Callable[[Any], str | None]] = {"testbed_preset": _testbed_preset,
                                                          "paper_settings": _paper_settings,
                                                          "device": _cuda_device,
                                                          "model": _model_preset_or_cached}
#: List parameters whose elements have a rule of their own (by the name's suffix).
ELEMENT_RULES: dict[str, Callable[[Any], str | None]] = {
    "seeds": _whole(0), "lrs": _real(0), "multipliers": _whole(1),
    "regimes": lambda v: None if isinstance(v, str) else "a regime name (a string)",
}

#: Parameters that only make sense together, checked (cheaply) once each has passed its own rule: (names, test on
#: their values, what is expected). A notebook that declares all the names is checked, with the declared defaults
#: standing in for what was not given; a setting that could not take effect is refused instead of recorded.
CROSS_RULES: list[tuple[tuple[str, ...], Callable[..., bool], str]] = [
    (("cor_keep", "cor_m"), lambda keep, m: keep <= m, "cor_keep <= cor_m (COR keeps cor_keep of its cor_m samples)"),
    (("k_train", "n_votes"), lambda k, n: k <= n, "k_train <= n_votes (K of the N voted rollouts are trained on)"),
    (("table1_k_train", "table1_n_votes"), lambda k, n: k <= n, "table1_k_train <= table1_n_votes"),
    (("k", "n_samples"), lambda k, n: k <= n, "k <= n_samples (Fig. 3's K rollouts are drawn from the N samples)"),
    (("prompts_per_step", "n_adapted"), lambda p, n: p <= n,
     "prompts_per_step <= n_adapted (a step takes prompts_per_step of the adapted questions)"),
    (("table1_prompts_per_step", "table1_questions"), lambda p, n: p <= n, "table1_prompts_per_step <= table1_questions"),
    (("ambiguous_lo", "ambiguous_hi"), lambda lo, hi: lo < hi, "ambiguous_lo < ambiguous_hi"),
]

#: Values allowed but almost surely a mistake, by parameter name (``*lrs`` lists: each element): a warning, no error.
WARN_RULES: dict[str, Callable[[Any], str | None]] = {
    name: (lambda v: "a learning rate >= 1 makes every update overshoot; the notebooks use 1e-6 to 1e-3"
           if _is_number(v) and v >= 1 else None)
    for name in ("lr", "table1_lr", "extra_rl_lr", "lrs")
}
#: Whole-list rules, by the name's suffix (deferred: they import ddrl.run.experiments).
LIST_RULES: dict[str, Callable[[Any], str | None]] = {"methods": _methods}
#: Notebook-specific needs: (notebook name prefix, parameter) -> rule.
NOTEBOOK_RULES: dict[tuple[str, str], Callable[[Any], str | None]] = {
    ("03", "methods"): lambda v: None if any(methods.trains(m) for m in v if m in METHODS) else
    "a list that includes at least one method with an RL run of its own (section 2 draws their training curves), "
    f"one of {sorted(m for m in METHODS if methods.trains(m))}",
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
        if not default:  # an empty default (study_regimes = []): any list, the empty one included
            return value, isinstance(value, list)
        if not isinstance(value, list) or not value:
            return value, False
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
        why = _why(rule, coerced) if rule is not None and coerced is not None else None
        if why:
            raise fail(why)
        for suffix, lrule in LIST_RULES.items():
            if isinstance(coerced, list) and name.endswith(suffix) and _why(lrule, coerced):
                raise fail(_why(lrule, coerced))
        return coerced
    if not ok:
        raise fail(describe(default))
    rule = RULES.get(name)
    if rule is not None and coerced is not None:
        why = _why(rule, coerced)
        if why:
            raise fail(why)
    if isinstance(coerced, list):
        if len({repr(v) for v in coerced}) != len(coerced):
            raise fail(f"{describe(default)} without repeats")
        for suffix, erule in ELEMENT_RULES.items():
            if name.endswith(suffix):
                bad = [v for v in coerced if _why(erule, v)]
                if bad:
                    raise fail(f"{describe(default)}, each {_why(erule, bad[0])}; bad: {bad}")
    for (prefix, pname), nrule in NOTEBOOK_RULES.items():
        if pname == name and notebook.startswith(prefix) and _why(nrule, coerced):
            raise fail(_why(nrule, coerced))
    return coerced


def _why(rule: Callable[[Any], str | None], value: Any) -> str | None:
    """``rule(value)``: what is expected, or None. The rules check types first; a rule that still fails on a value
    (a mapping where a number belongs) is a refusal of that value, never a crash of the checker."""
    try:
        return rule(value)
    except Exception as e:  # noqa: BLE001 - any failure of a rule is a value it cannot read
        return f"a value of the documented kind (its check failed: {type(e).__name__}: {e})"


#: The trainer knobs a notebook's ``paper_settings`` replaces with the official scripts' values whatever they are set to:
#: set to anything but the notebook's default beside it, they are refused by name rather than dropped.
_PAPER_REPLACES = ("lr",)


def check_together(notebook: str, declared: dict[str, str], params: dict) -> None:
    """:data:`CROSS_RULES` on ``params`` (already checked one by one), the declared defaults standing in for
    what is not given; a :class:`ParameterError` naming every parameter of the broken rule and its value."""
    for names, holds, expected in CROSS_RULES:
        if not set(names) <= set(declared) or not set(names) & set(params):
            continue
        values = [params[n] if n in params else default_value(declared[n]) for n in names]
        if not all(_is_number(v) for v in values) or holds(*values):
            continue
        given = " and ".join(f"{n} = {v!r}" + ("" if n in params else " (default)") for n, v in zip(names, values))
        raise ParameterError(f"{notebook}: parameters {given} do not fit together: expected {expected}")
    paper = params.get("paper_settings", default_value(declared["paper_settings"]) if "paper_settings" in declared else None)
    dropped = sorted(k for k in params if k in declared and k in _PAPER_REPLACES and params[k] != default_value(declared[k]))
    if paper and dropped:  # ddrl.run.experiments.notebook_experiment would replace them with the official values
        raise ParameterError(f"{notebook}: parameters paper_settings = {paper!r} and {', '.join(dropped)} do not fit "
                             f"together: paper_settings trains with the official scripts' values of "
                             f"{', '.join(dropped)}; leave them out, or set paper_settings = None to train with yours")


def check_study(notebook: str, declared: dict[str, str], params: dict) -> None:
    """The study's claims and regimes of a notebook that re-analyses committed claims (03-05 declare
    ``study_claims`` and ``study_regimes``): each claim a paired claim of the study, each regime one a claim was
    decided in, and together at least one committed cell; the declared defaults stand in for what is not given.
    A :class:`ParameterError` naming the parameter, its value and the names allowed."""
    names = ("study_claims", "study_regimes")
    if not set(names) <= set(declared):
        return
    values = {n: params[n] if n in params else default_value(declared[n]) for n in names}
    for name, rule in zip(names, (study_params.claims_rule, study_params.regimes_rule)):
        if isinstance(values[name], list) and (why := _why(rule, values[name])):
            raise ParameterError(f"{notebook}: parameter {name} = {values[name]!r}: expected {why}")
    if all(isinstance(v, list) for v in values.values()) and (why := _why(lambda _: study_params.cells_rule(
            values["study_claims"], values["study_regimes"]), None)):
        raise ParameterError(f"{notebook}: parameters study_claims = {values['study_claims']!r} and study_regimes = "
                             f"{values['study_regimes']!r} name no committed claim: expected {why}")


def warn_absurd(notebook: str, params: dict) -> list[str]:
    """A :class:`ParameterWarning` for each value :data:`WARN_RULES` calls almost surely a mistake (for a list, each
    element); returns the messages."""
    out = []
    for name, value in params.items():
        rule = next((r for suffix, r in WARN_RULES.items() if name.endswith(suffix)), None)
        for v in (value if isinstance(value, list) else [value]) if rule else []:
            why = _why(rule, v)
            if why:
                out.append(f"{notebook}: parameter {name} = {v!r}: {why}")
                warnings.warn(out[-1], ParameterWarning, stacklevel=2)
    return out


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


def check_parameters(notebook: str, declared: dict[str, str], params: dict, deferred: bool = True) -> dict:
    """Every parameter in ``params`` checked and coerced (:func:`check_parameter`) against ``declared``
    (name -> default source, as :func:`ddrl.run.reproduce.declared_parameters` returns), then together
    (:func:`check_together`, with the declared defaults filling in what ``params`` leaves out), with a warning for
    absurd values (:func:`warn_absurd`). Returns the coerced ``params`` (only the keys given).

    ``deferred=False`` stops after these cheap checks (well under a second); the rest, which imports part of the
    package (seconds), is :func:`check_deferred`. The runner makes the cheap pass over every notebook first, so a
    mistyped value in the last notebook does not wait for an import made for the first."""
    out = {name: _check(notebook, name, value, declared[name], deferred=False) for name, value in params.items()}
    check_together(notebook, declared, out)
    check_study(notebook, declared, out)
    warn_absurd(notebook, out)
    return check_deferred(notebook, declared, out) if deferred else out


def check_deferred(notebook: str, declared: dict[str, str], params: dict) -> dict:
    """The checks of :func:`check_parameters` that import (:data:`DEFERRED_RULES`, :data:`LIST_RULES`, the
    :class:`ddrl.config.TrainConfig` cross-check), on ``params`` that passed the cheap ones."""
    out = dict(params)
    for name in sorted(out, key=lambda n: n == "testbed_preset"):  # the import of ddrl.testbed (torch, transformers) last
        out[name] = _check(notebook, name, out[name], declared[name], deferred=True)
    if {"n_votes", "k_train", "episodes"} <= set(declared):  # notebooks 03-05 pass these to TrainConfig
        full = {name: default_value(src) for name, src in declared.items()}
        full.update(out)
        check_trainer_knobs(notebook, full)
    return out
