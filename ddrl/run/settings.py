"""The settings a notebook's ``parameters`` cell does not show: where the model and questions come from, the hardware,
and the trainer knobs a student rarely turns (issue 95: the cell shows the knobs of the lesson, ~20 lines).

A notebook declares ``settings = {}`` in its ``parameters`` cell and reads the rest from here::

    S = notebook_settings("04_ablations", settings, n_adapted=n_adapted, seed=seed, progress=progress)

Each setting is a parameter like any other: a preset file (``params/<preset>/<notebook>.yaml``) or ``-p NAME VALUE``
sets it by name (``lr: 3.0e-4``), and the runner checks it by the same rules (:mod:`ddrl.run.params`) before any work
and hands it to the notebook inside ``settings``. Opened by hand, ``settings = {"lr": 3e-4}`` does the same, checked
when the notebook reads it. :data:`SETTINGS` lists each notebook's settings with their defaults; a name a notebook's
cell shows is never one of its settings.
"""

from __future__ import annotations

from typing import Any

from ddrl.run.params import ParameterError, check_parameters

#: Where the model and the questions come from, and the hardware (every notebook that samples or trains).
SOURCE: dict[str, Any] = {
    "model": "testbed",  # "testbed" (the model of testbed_preset), a Hugging Face id, a ddrl.models preset or a directory
    "testbed_preset": "default",  # ddrl.testbed.build preset: "tiny" | "default"
    "dataset": "testbed_test",  # ddrl.data dataset name (testbed_test, math500, aime2024, amc, ...)
    "data_dir": None,  # where the real data lies (None: $DDRL_DATA_DIR, ../../shared/data, then the download cache)
    "device": "auto",  # "auto" | "cpu" | "cuda"
}
#: How notebooks 01 and 02 sample (the same cached rollouts in both).
SAMPLING: dict[str, Any] = {
    "top_p": 1.0,  # nucleus
    "max_new_tokens": 64,  # response budget (the testbed needs ~50 tokens; real models ~3072)
    "batch_size": 512,  # sequences decoded together (HF backend)
    "backend": "hf",  # "hf" (CPU or GPU) or "vllm" (GPU)
    "cue": "auto",  # instruction placement: "auto" | "system" | "suffix" | "none"
}
#: The trainer of notebooks 03-05 (:class:`ddrl.config.TrainConfig` fields shared by every method; the three
#: notebooks share runs because they share these values, which a test holds).
TRAINER: dict[str, Any] = {
    "paper_settings": None,  # a ddrl.models preset (e.g. "qwen2.5-math-1.5b"): its official settings replace the knobs below
    "paper_temperature": "paper",  # with paper_settings: the text's rollout temperature ("paper") or the scripts' ("scripts")
    "episodes": 4,  # passes over the adapted questions
    "prompts_per_step": 8,  # questions per RL step
    "n_votes": 64,  # N: rollouts voted on per question
    "k_train": 32,  # K: rollouts trained on per question
    "lr": 3e-5,  # peak learning rate (testbed default)
    "eval_n": 16,  # samples per question for pass@1 and maj@n (the paper's 16)
    "cor_m": 128,  # COR: M samples per question
    "cor_keep": 4,  # COR: agreeing rollouts kept per question (with paper_settings: the paper's 4 MATH-500 / 16 AMC, AIME)
    "etmr_m": 12,  # ETMR: root responses per tree (leaves are 5x this)
    "max_new_tokens": 64,  # response budget
    "sample_batch_size": 512,  # sequences decoded together
}


def _without(d: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in names}


#: Each notebook's settings and their defaults (notebooks 06 and 07 show all they have).
SETTINGS: dict[str, dict[str, Any]] = {
    "01_frequency_and_bayes": {
        **SOURCE, **SAMPLING,
        "confidence": 0.95,  # confidence level of the binomial intervals (Wilson)
        "svamp_questions": 999,  # how many of the 999 SVAMP problems
    },
    "02_grpo_amplification": {
        **SOURCE, **SAMPLING,
        "temperature": 1.0,  # rollout temperature (TTRL's 1.0; notebook 01 shows it)
        "table1_prompts_per_step": 8,  # Table 1: questions per RL step
        "table1_n_votes": 64,  # Table 1: N during training
        "table1_k_train": 32,  # Table 1: K during training
        "table1_eval_n": 16,  # Table 1: samples per question for pass@1 (the paper's 16)
    },
    "03_test_time_training": {**SOURCE, **_without(TRAINER, "episodes")},
    "04_ablations": {**SOURCE, **TRAINER, "n_heldout": 64},  # n_heldout: as notebook 03, which shows it
    "05_offpolicy_cost": {**SOURCE, **TRAINER, "n_heldout": 64},
}


def settings_of(notebook: str) -> dict[str, Any]:
    """The settings of ``notebook`` (its file stem) with their defaults; ``{}`` for a notebook that has none."""
    return dict(SETTINGS.get(notebook, {}))


def notebook_settings(notebook: str, settings: dict | None = None, **shown: Any) -> dict[str, Any]:
    """Every knob of ``notebook`` as one flat dict: the defaults of :data:`SETTINGS`, then ``settings`` (the cell's
    ``settings`` parameter), then the values its cell ``shown`` passes, checked by :mod:`ddrl.run.params`'s rules
    (one by one, then together). A name that is not one of the notebook's settings, or a shown name given again in
    ``settings``, is a :class:`~ddrl.run.params.ParameterError` naming it and the valid settings."""
    defaults = settings_of(notebook)
    settings = {} if settings is None else settings
    if not isinstance(settings, dict):
        raise ParameterError(f"{notebook}: parameter settings = {settings!r}: expected a mapping of setting names "
                             f"to values, one of {sorted(defaults)}")
    unknown = sorted(set(settings) - set(defaults))
    if unknown:
        raise ParameterError(f"{notebook}: unknown setting(s) {unknown}; its settings are {sorted(defaults)}"
                             + (" (the parameters cell sets the others)" if set(unknown) & set(shown) else ""))
    declared = {**{k: repr(v) for k, v in defaults.items()}, **{k: repr(v) for k, v in shown.items()}}
    checked = check_parameters(notebook, declared, settings)
    return {**defaults, **checked, **shown}


def nest(notebook: str, params: dict) -> dict:
    """``params`` (flat, as the runner checks and records them) as the notebook's cell takes them: its settings
    gathered into one ``settings`` dict (left out when none is given)."""
    names = set(settings_of(notebook))
    out = {k: v for k, v in params.items() if k not in names}
    given = {k: v for k, v in params.items() if k in names}
    if given:
        out["settings"] = given
    return out


def flatten(values: dict, where: str) -> dict:
    """``values`` (a preset file's or the ``-p`` overrides) with a ``settings`` mapping spread into flat names, as the
    runner checks them; a setting given both ways is a :class:`~ddrl.run.params.ParameterError` naming ``where``."""
    if "settings" not in values:
        return dict(values)
    inner = values["settings"]
    if not isinstance(inner, dict):
        raise ParameterError(f"{where}: settings = {inner!r}: expected a mapping of setting names to values")
    twice = sorted(set(inner) & set(values))
    if twice:
        raise ParameterError(f"{where}: {twice} given both by name and inside settings; give each once")
    return {**{k: v for k, v in values.items() if k != "settings"}, **inner}
