"""Model presets for the paper's runs, and one way to load any model.

    model, tokenizer = load_model("qwen2.5-math-1.5b", dtype="bfloat16", device="cuda")
    model, tokenizer = load_model("/path/to/a/save_pretrained/dir")   # the same code path
    PRESETS["llama-3.1-8b-instruct"].settings("aime2024")             # the official hyperparameters

The settings are those of the official DDRL launch scripts (github.com/yuyongcan/DDRL, commit
``a8270bf``, ``verl/examples/ddrl/<model>/<benchmark>.sh``) plus the verl defaults they inherit
(``verl/verl/trainer/config/ppo_trainer.yaml``); ``docs/real_scale.md`` lists each value with the file it
comes from. Benchmarks are named as in :data:`ddrl.data.DATASETS`: ``aime2024``, ``amc``, ``math500``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

import torch
from huggingface_hub import constants as hub_constants
from transformers import AutoModelForCausalLM, AutoTokenizer

from ddrl import paper, testbed
from ddrl.accel import native_attention

DDRL_COMMIT = "a8270bf4f380ffb5e91cd877ff66e985f33d89c0"
BENCHMARKS = ("aime2024", "amc", "math500")


@dataclass(frozen=True)
class ModelPreset:
    """A model and the settings the paper trains and evaluates it with.

    Per-benchmark values (``episodes``, ``prompts_per_step``) are mappings keyed by benchmark name.
    An "episode" is one pass over the benchmark (verl's ``trainer.total_epochs``); a step takes
    ``prompts_per_step`` questions (``data.train_batch_size``), samples ``n_votes`` rollouts per question
    for the vote, trains on ``n_train`` of them, and makes one optimizer update per
    ``mini_batch_prompts`` questions (``ppo_mini_batch_size``).
    """

    name: str
    hub_id: str | None  # None: built locally (the testbed)
    cue: Literal["system", "suffix", "none"]  # where ddrl.prompts.CUE goes (see ddrl.prompts.format_prompt)
    lr: float | None
    episodes: Mapping[str, int] = field(default_factory=dict)
    prompts_per_step: Mapping[str, int] = field(default_factory=dict)
    dtype: str = "bfloat16"
    # sampling
    max_prompt_len: int = 512
    max_response_len: int = 3072  # 1024 * K with K=3 in every script
    n_votes: int = 64  # rollouts per question for the majority vote (ttrl.n_votes_per_prompt)
    n_train: int = 32  # rollouts per question trained on (ttrl.n_samples_per_prompt, rollout.n)
    # The scripts' 1.0 for every model. The paper's text (Sec. 4.1) says 1.0 for math-specialised models and 0.6
    # for the others: paper_overrides(temperature="paper") uses the text, "scripts" this value.
    rollout_temperature: float = 1.0
    rollout_top_p: float = 1.0  # verl default
    # evaluation (rollout.val_kwargs; N=16 because K=3 <= 8 in the scripts)
    eval_n: int = 16
    eval_temperature: float = 0.6
    eval_top_p: float = 0.95
    eval_every: int = 2  # trainer.test_freq, in steps
    # optimisation (AdamW in verl's FSDP worker)
    warmup_ratio: float = 0.03
    lr_schedule: str = "cosine"
    min_lr_ratio: float = 0.0  # verl default
    weight_decay: float = 0.01  # verl default
    adam_betas: tuple[float, float] = (0.9, 0.999)  # verl default
    grad_clip: float = 1.0  # verl default
    mini_batch_prompts: int = 1  # ppo_mini_batch_size (questions per optimizer update)
    ppo_epochs: int = 1  # verl default
    # loss (verl defaults; use_kl_loss=True in every script)
    clip_ratio: float = 0.2
    dual_clip: float = 3.0  # clip_ratio_c
    kl_coef: float = 0.001  # kl_loss_coef
    kl_type: str = "low_var_kl"
    entropy_coeff: float = 0.0
    loss_agg: str = "token-mean"
    official: bool = True  # False: chosen here, not from the paper's scripts
    source: str = ""  # where the values come from

    def episodes_for(self, benchmark: str) -> int:
        return _lookup(self, "episodes", benchmark)

    def prompts_per_step_for(self, benchmark: str) -> int:
        return _lookup(self, "prompts_per_step", benchmark)

    def settings(self, benchmark: str | None = None) -> dict[str, Any]:
        """All fields as a flat dict; with ``benchmark``, ``episodes``/``prompts_per_step`` become that
        benchmark's integers (handy as notebook parameters)."""
        out = asdict(self)
        out["adam_betas"] = list(self.adam_betas)
        out["episodes"], out["prompts_per_step"] = dict(self.episodes), dict(self.prompts_per_step)
        if benchmark is not None:
            out["benchmark"] = benchmark
            out["episodes"] = self.episodes_for(benchmark)
            out["prompts_per_step"] = self.prompts_per_step_for(benchmark)
        return out


def _lookup(preset: ModelPreset, what: str, benchmark: str) -> int:
    table = getattr(preset, what)
    if benchmark not in table:
        raise KeyError(
            f"preset {preset.name!r} has no {what} for benchmark {benchmark!r}; it has {sorted(table) or 'none'}"
        )
    return table[benchmark]


def _scripts(model_dir: str) -> str:
    return f"yuyongcan/DDRL@{DDRL_COMMIT[:7]}:verl/examples/ddrl/{model_dir}/{{aime,amc,math}}.sh"


PRESETS: dict[str, ModelPreset] = {
    p.name: p
    for p in (
        ModelPreset(
            name="qwen2.5-math-1.5b",
            hub_id="Qwen/Qwen2.5-Math-1.5B",
            # No suffix in the scripts: the Qwen2.5-Math chat template inserts the cue as the default
            # system message when there is none. cue="system" passes it explicitly: the same text.
            cue="system",
            lr=5e-7,
            episodes={"aime2024": 80, "amc": 30, "math500": 10},
            prompts_per_step={"aime2024": 8, "amc": 8, "math500": 32},
            source=_scripts("Qwen2.5-Math"),
        ),
        ModelPreset(
            name="qwen2.5-3b",
            hub_id="Qwen/Qwen2.5-3B",
            cue="suffix",  # +data.suffix_prompt='"\nPlease reason step by step, ..."'
            lr=5e-7,
            episodes={"aime2024": 80, "amc": 30, "math500": 10},
            prompts_per_step={"aime2024": 10, "amc": 8, "math500": 32},
            source=_scripts("Qwen2.5"),
        ),
        ModelPreset(
            name="llama-3.1-8b-instruct",
            hub_id="meta-llama/Llama-3.1-8B-Instruct",
            cue="suffix",
            lr=2e-7,
            episodes={"aime2024": 80, "amc": 30, "math500": 10},
            prompts_per_step={"aime2024": 10, "amc": 8, "math500": 32},
            source=_scripts("LLaMA3.1-Instruct"),
        ),
        # The CPU testbed: a tiny model built by ddrl.testbed, whose chat template ignores the cue. Its
        # training settings live in the runner's testbed presets (params/), not here: lr=None says so.
        ModelPreset(
            name="testbed",
            hub_id=None,
            cue="none",
            lr=None,
            dtype="float32",
            official=False,
            source="ddrl.testbed.build(); training settings in params/<preset>/*.yaml",
        ),
    )
}


def get_preset(name: str) -> ModelPreset:
    if name not in PRESETS:
        raise KeyError(f"unknown model preset {name!r}; presets: {', '.join(PRESETS)}")
    return PRESETS[name]


# ---------------------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------------------


class ModelLoadError(OSError):
    """A model or tokenizer could not be loaded (missing directory, unreachable hub id, ...)."""


def resolve_model_source(name_or_path: str | os.PathLike) -> str:
    """What ``from_pretrained`` gets: a preset's hub id, the testbed's built directory, a local directory,
    or the argument itself (taken as a hub id)."""
    name = str(name_or_path)
    if name in PRESETS:
        preset = PRESETS[name]
        if preset.hub_id is not None:
            return preset.hub_id
        return str(testbed.build(progress=True))
    return name


def _torch_dtype(dtype: Any):
    if dtype is None or dtype == "auto" or isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str) and isinstance(getattr(torch, dtype, None), torch.dtype):
        return getattr(torch, dtype)
    raise ValueError(f"dtype must be None, 'auto', a torch.dtype or its name (e.g. 'bfloat16'), got {dtype!r}")


def resolve_device(device: str) -> torch.device:
    """``"auto"``: CUDA when available, else CPU; any other name as given."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def cuda_device_problem(device: str) -> str | None:
    """Why torch cannot compute on ``device`` (``"cuda"`` or ``"cuda:<index>"``), or None when it can (or the name
    is not a CUDA device). The parameter check asks before any work."""
    if not (isinstance(device, str) and device.startswith("cuda")):
        return None
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device[5:]) if device[5:].isdigit() else 0
    return None if index < count else f"torch sees {count} CUDA device(s)"


def device_key(device: str) -> dict:
    """What a cache key records of the device that computes a result: nothing on the CPU, ``{"device": kind}``
    elsewhere (``cuda``, ...). A GPU's kernels round differently and its generators draw other numbers, so the
    same config, weights and seed give another run (a DDRL run on an H200 ended 6.5 points below the CPU run of
    the same study job, docs/benchmarks.md); keys computed on the CPU before this existed stay as they were.
    ``device`` as in a config: ``"auto"`` is resolved on this machine (:func:`resolve_device`).

    On the CPU it also records the sampler's decode attention where that is the C loop
    (:func:`ddrl.accel.native_attention.key`): it rounds differently from torch's, so a near-tie draw may flip."""
    kind = resolve_device(device).type
    return native_attention.key() if kind == "cpu" else {"device": kind}


def load_model(
    name_or_path: str | os.PathLike,
    dtype: Any = None,
    device: str = "cpu",
    *,
    revision: str | None = None,
    trust_remote_code: bool = False,
    progress: bool = False,
):
    """``(model, tokenizer)`` for a preset name, a hub id or a local ``save_pretrained`` directory.

    All three go through ``AutoTokenizer.from_pretrained`` and ``AutoModelForCausalLM.from_pretrained``
    with the same arguments; only the source string differs (:func:`resolve_model_source`). The model is
    put in eval mode on ``device``. A tokenizer without a usable pad token (none, as Llama's, or one outside
    the model's vocabulary) gets its eos token as pad token, and padding goes on the left (decoder-only
    generation). Failure is a :class:`ModelLoadError` naming
    the source and, for hub ids, the ``HF_HUB_OFFLINE`` setting.

    ``"testbed:<preset>"`` builds (or reuses) that testbed preset (:func:`ddrl.testbed.build`) and loads it in
    ``dtype`` (float32 when None). ``device="auto"`` is CUDA when available (:func:`resolve_device`).
    """
    name = str(name_or_path)
    if name.startswith("testbed:"):
        model, tok = testbed.load(testbed.build(name.split(":", 1)[1], progress=progress))
        model = model.to(_torch_dtype(dtype) if dtype not in (None, "auto") else torch.float32)
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        return model.to(resolve_device(device)), tok
    source = resolve_model_source(name_or_path)
    torch_dtype = _torch_dtype(dtype)
    local = Path(source).expanduser()
    if local.exists() and not local.is_dir():
        raise ModelLoadError(f"{source}: expected a directory saved with save_pretrained, got a file")
    # Offline, say so to transformers as well: nothing then asks the hub (no retries), whenever huggingface_hub
    # read its HF_HUB_OFFLINE, and an id missing from the cache fails at once with the ModelLoadError below.
    offline = hub_constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, revision=revision, trust_remote_code=trust_remote_code,
                                                  local_files_only=offline)
        model = AutoModelForCausalLM.from_pretrained(
            source, revision=revision, trust_remote_code=trust_remote_code, dtype=torch_dtype, local_files_only=offline,
        )
    except OSError as e:
        if local.is_dir():
            raise ModelLoadError(f"could not load a model and tokenizer from the directory {source}: {e}") from e
        offline = os.environ.get("HF_HUB_OFFLINE", "<unset>")
        raise ModelLoadError(
            f"could not load {source!r}: not a local directory, and as a hub id it is neither in the local "
            f"Hugging Face cache nor reachable (HF_HUB_OFFLINE={offline}, "
            f"offline mode {'on' if hub_constants.HF_HUB_OFFLINE else 'off'}). Download it on a machine with "
            f"network access (huggingface-cli download {source}) or pass a local directory. Cause: {e}"
        ) from e
    # Llama has no pad token. And transformers 5 may load a custom tokenizer saved beside a Qwen2 config as
    # Qwen2Tokenizer, which adds a default pad token "<|endoftext|>" outside the model's vocabulary.
    vocab = model.get_input_embeddings().num_embeddings
    if tokenizer.pad_token_id is None or tokenizer.pad_token_id >= vocab:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model.to(resolve_device(device))
    model.eval()
    return model, tokenizer


def paper_overrides(model_preset: str, benchmark: str, temperature: str = "paper") -> dict[str, Any]:
    """Overrides for the paper's full-scale runs, from the official per-model settings in
    :mod:`ddrl.models` (``PRESETS[model_preset].settings(benchmark)``), mapped onto :class:`ddrl.config.TrainConfig`,
    and the settings the paper's text states (:mod:`ddrl.paper`, Sec. 4.1):

    - ``rollout_temperature``: ``temperature="paper"`` (default) takes the text's 1.0 for math-specialised
      models and 0.6 for the others; ``"scripts"`` the official launch scripts' 1.0 for every model (the two
      agree for Qwen2.5-Math-1.5B and differ for Qwen2.5-3B and Llama-3.1-8B-Instruct);
    - COR: M = 128 samples, ``cor_keep`` = 4 for MATH-500 and 16 for AMC and AIME 2024, 5 epochs at 1e-5;
    - ``drop_last=True``: each episode drops its last partial step, as the official RL dataloader does
      (``StatefulDataLoader(..., drop_last=True)`` in verl's ``ray_trainer.py``), so an episode has
      ``floor(questions / prompts_per_step)`` steps (AIME 2024: 3 of 8 questions per step, 6 questions unseen
      per episode, a different 6 each episode as the order is reshuffled).

    ``micro_batch_size`` and ``sample_batch_size`` are memory knobs, not the paper's: set them for your GPU.
    """
    if temperature not in ("paper", "scripts"):
        raise ValueError(f"paper_overrides: temperature must be 'paper' (the text) or 'scripts' (the official "
                         f"launch scripts), got {temperature!r}")
    s = get_preset(model_preset).settings(benchmark)
    if s["lr"] is None:
        raise ValueError(f"model preset {model_preset!r} has no official learning rate; pass lr= yourself")
    return {
        "model": model_preset, "cue": s["cue"], "dtype": s["dtype"], "device": "auto",
        "lr": s["lr"], "episodes": s["episodes"], "prompts_per_step": s["prompts_per_step"],
        "max_new_tokens": s["max_response_len"], "n_votes": s["n_votes"], "k_train": s["n_train"],
        "rollout_temperature": (paper.rollout_temperature(model_preset) if temperature == "paper"
                                else s["rollout_temperature"]),
        "rollout_top_p": s["rollout_top_p"], "drop_last": bool(paper.value(("script", "drop_last"))),
        "cor_m": paper.value(("setting", "cor_m")), "cor_keep": paper.setting_for("cor_keep", benchmark),
        "cor_epochs": paper.value(("setting", "cor_epochs")), "cor_lr": paper.value(("setting", "cor_lr")),
        "eval_n": s["eval_n"], "eval_temperature": s["eval_temperature"], "eval_top_p": s["eval_top_p"],
        "warmup_steps": -1, "warmup_ratio": s["warmup_ratio"], "weight_decay": s["weight_decay"],
        "adam_beta1": s["adam_betas"][0], "adam_beta2": s["adam_betas"][1], "grad_clip": s["grad_clip"],
        "ppo_epochs": s["ppo_epochs"], "mini_batch_size": s["mini_batch_prompts"] * s["n_train"],
        "micro_batch_size": 8, "clip_ratio": s["clip_ratio"], "dual_clip": s["dual_clip"], "kl_coef": s["kl_coef"],
    }
