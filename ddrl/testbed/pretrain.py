"""Pretraining the testbed model, and the cache that lets notebooks and tests reuse it.

Every step draws fresh problems from the training distribution (1-4 operations), renders them through
the tokenizer's chat template exactly as RL sampling will see them, and trains on the response tokens
only (the chain, the box and ``<|end|>``). Sequences are packed into rows of ``pack_len`` tokens with
restarting ``position_ids`` (Hugging Face's packed-sequence format: attention stays within a sequence),
which saves the ~35% of compute that padding short and long chains to one length would waste.

Because the useful regime is narrow (too few steps: pseudo-labels mostly wrong; too many: nothing left
to learn at test time), training stops once majority vote over ``dev_samples`` samples on a small dev set
drawn from the *test* distribution reaches ``target_dev_maj`` or dev pass@1 reaches ``target_dev_pass1``
(checked every ``eval_every`` steps from ``min_steps``), or at ``steps``. With ``ema_decay > 0`` the model
evaluated, returned and saved is the exponential moving average of the weights (:func:`ema_update`): in
this regime the raw iterate jitters into confidently wrong answers, which the average does not
(docs/testbed.md has the sweep).

The result is cached under ``<cache>/testbed/<preset>-<hash>/`` where the hash covers the whole
configuration and :data:`TESTBED_VERSION`; it is written to a temporary directory and renamed into place,
so an interrupted build never leaves a half cache. Pretraining is deterministic on one CPU but not across CPUs
(docs/testbed.md), so :func:`build` installs the *committed* reference build of a preset (the claims study's
base, ``results/base_models/``) where one exists, and pretrains only where none does or when asked to.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from ddrl.answers import extract_boxed, voting_key
from ddrl.infra.pool import compute_threads
from ddrl.infra.progress import tqdm
from ddrl.prompts import format_prompt
from ddrl.infra.cache import owner_lock
from ddrl.sampling import HFSampler
from ddrl.seeds import derive_seed, numpy_generator
from ddrl.testbed.builds import (COMMITTED, META_FILE, SOURCES, cache_root, file_sha256s, install_build,
                                 reference_build, weight_sha256s)
from ddrl.testbed.config import BUILD_THREADS, PRESETS, TESTBED_VERSION, PretrainConfig, get_config  # noqa: F401
from ddrl.testbed.model import build_model
from ddrl.testbed.task import SPLITS, generate_split, sample_problems
from ddrl.testbed.tokenizer import build_tokenizer
from ddrl.voting import count_votes

# ---------------------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------------------


def encode_example(tokenizer, question: str, solution: str) -> tuple[list[int], list[int]]:
    """``(prompt_ids, response_ids)``: the chat-formatted prompt (as ``ddrl.prompts.format_prompt`` renders
    it) and the solution followed by the end-of-sequence token."""
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                           add_generation_prompt=True)
    p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    r = tokenizer(solution, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return p, r


def pack_examples(examples: list[tuple[list[int], list[int]]], pack_len: int, pad_id: int):
    """Pack ``(prompt_ids, response_ids)`` pairs into rows of ``pack_len`` tokens, in order.

    Returns ``input_ids, position_ids, targets`` (LongTensors ``[rows, pack_len]``): positions restart at 0
    for every sequence (so attention stays inside it), ``targets[t]`` is the next token when that token
    belongs to the response, else -100. Padding at a row's end is its own segment with target -100.
    """
    rows: list[tuple[list[int], list[int], list[int]]] = []
    ids, pos, tgt = [], [], []
    for p, r in examples:
        seq = p + r
        if len(seq) > pack_len:
            raise ValueError(f"an example of {len(seq)} tokens does not fit pack_len={pack_len}")
        if len(ids) + len(seq) > pack_len:
            rows.append((ids, pos, tgt))
            ids, pos, tgt = [], [], []
        ids += seq
        pos += list(range(len(seq)))
        tgt += [seq[j + 1] if j + 1 >= len(p) else -100 for j in range(len(seq) - 1)] + [-100]
    rows.append((ids, pos, tgt))
    n = len(rows)
    input_ids = torch.full((n, pack_len), pad_id, dtype=torch.long)
    position_ids = torch.zeros((n, pack_len), dtype=torch.long)
    targets = torch.full((n, pack_len), -100, dtype=torch.long)
    for i, (a, b, c) in enumerate(rows):
        k = len(a)
        input_ids[i, :k] = torch.tensor(a)
        position_ids[i, :k] = torch.tensor(b)
        position_ids[i, k:] = torch.arange(pack_len - k)
        targets[i, :k] = torch.tensor(c)
    return input_ids, position_ids, targets


def lr_at(step: int, cfg: PretrainConfig) -> float:
    """Linear warmup over ``warmup_steps``, then constant, one step down at ``decay_step``, or cosine decay
    to 0 at ``cfg.steps``."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return cfg.lr
    if cfg.schedule == "step":
        return cfg.lr * (cfg.decay_factor if step >= cfg.decay_step else 1.0)
    frac = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return cfg.lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, frac)))


# ---------------------------------------------------------------------------------------------------------
# Dev evaluation (sampling through the project's sampler, like every later step)
# ---------------------------------------------------------------------------------------------------------


def sample_eval(model, tokenizer, records: list[dict], n: int, *, temperature: float = 1.0,
                max_new_tokens: int = 96, seed: int = 0, batch_size: int = 512, progress: bool = False) -> dict:
    """pass@1, maj@n and the no-box rate of ``n`` samples per record, plus the per-question answers.

    Answers are integers, so a sample is correct iff its boxed answer's voting key equals the truth's, and
    the vote groups by voting key too (:func:`ddrl.voting.count_votes`, no math-verify: the build, and so
    the testbed model, does not depend on the grader).
    """

    sampler = HFSampler(model, tokenizer, batch_size=batch_size)
    prompts = [format_prompt(tokenizer, r["prompt"], cue="none") for r in records]
    rollouts = sampler.sample(prompts, n=n, temperature=temperature, top_p=1.0, max_new_tokens=max_new_tokens,
                              seed=seed, progress=progress)
    answers, correct, maj_correct, nobox = [], [], [], 0
    for r, rs in zip(records, rollouts):
        a = [extract_boxed(x.text) for x in rs]
        truth = voting_key(str(r["answer"]))
        vote = count_votes([voting_key(x) for x in a], a)
        answers.append(a)
        correct.append([voting_key(x) == truth and x is not None for x in a])
        maj_correct.append(vote.label is not None and voting_key(vote.label) == truth)
        nobox += sum(voting_key(x) is None for x in a)
    return {
        "pass@1": float(np.mean([np.mean(c) for c in correct])),
        f"maj@{n}": float(np.mean(maj_correct)),
        "no_box_rate": nobox / (len(records) * n),
        "answers": answers,
        "correct": correct,
    }


# ---------------------------------------------------------------------------------------------------------
# Training and the cache
# ---------------------------------------------------------------------------------------------------------


def ema_update(average: torch.nn.Module, model: torch.nn.Module, decay: float, step: int) -> None:
    """``average <- d * average + (1 - d) * model`` over the parameters, in place, with
    ``d = min(decay, (1 + step) / (10 + step))`` so that early steps are not pinned to the initialisation
    (Polyak averaging, as in TensorFlow's ``ExponentialMovingAverage`` with ``num_updates``)."""
    d = min(decay, (1.0 + step) / (10.0 + step))
    with torch.no_grad():
        for a, p in zip(average.parameters(), model.parameters()):
            a.lerp_(p, 1.0 - d)


def initial_model(cfg: PretrainConfig, tokenizer):
    """The freshly initialised model pretraining starts from (deterministic for ``cfg.seed``)."""
    return build_model(tokenizer, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers, num_heads=cfg.num_heads,
                       intermediate_size=cfg.intermediate_size, max_positions=cfg.max_positions,
                       seed=derive_seed(cfg.seed, "testbed-init"))


def pretrain(cfg: PretrainConfig, progress: bool = True, callback=None):
    """Train a testbed model from scratch; returns ``(model, tokenizer, info)``. Deterministic for ``cfg``
    on one machine and thread count (:func:`build` fixes the count to :data:`BUILD_THREADS`).

    With ``cfg.ema_decay > 0`` the returned model (and the one the dev early stop evaluates) is the moving
    average of the weights. ``callback(step, model)``, if given, is called after every optimizer step with
    the model that would be returned (for benchmarks that inspect checkpoints); it must not change it.
    """
    tokenizer = build_tokenizer(model_max_length=cfg.max_positions)
    model = initial_model(cfg, tokenizer)
    average = copy.deepcopy(model) if cfg.ema_decay else None
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=cfg.betas)
    rng = numpy_generator(cfg.seed, "testbed-pretrain-data")
    spec = SPLITS["train"]
    dev = generate_split("dev", cfg.dev_questions, cfg.seed) if cfg.eval_every else []
    history: list[dict] = []
    stop_reason, step = "max_steps", 0
    t0 = time.perf_counter()
    bar = tqdm(range(cfg.steps), desc="pretraining testbed", unit="step", disable=not progress)
    model.train()
    for step in bar:
        problems = sample_problems(spec.num_ops, spec.weights, cfg.batch_size, rng)
        ids, pos, tgt = pack_examples([encode_example(tokenizer, q, s) for q, s in problems], cfg.pack_len,
                                      tokenizer.pad_token_id)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        logits = model(input_ids=ids, position_ids=pos, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), tgt.flatten(), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        done = step + 1
        if average is not None:
            ema_update(average, model, cfg.ema_decay, step)
        result = average if average is not None else model
        if callback is not None:
            callback(done, result)
        if done % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
        if cfg.eval_every and done >= cfg.min_steps and done % cfg.eval_every == 0:
            ev = sample_eval(result, tokenizer, dev, cfg.dev_samples, max_new_tokens=cfg.max_new_tokens,
                             seed=derive_seed(cfg.seed, "testbed-dev", done))
            model.train()
            maj = ev[f"maj@{cfg.dev_samples}"]
            history.append({"step": done, "loss": float(loss.item()), "dev_pass@1": ev["pass@1"],
                            "dev_maj": maj, "dev_no_box": ev["no_box_rate"],
                            "seconds": time.perf_counter() - t0})
            bar.set_postfix(loss=f"{loss.item():.3f}", dev_pass1=f"{ev['pass@1']:.2f}", dev_maj=f"{maj:.2f}")
            if maj >= cfg.target_dev_maj or ev["pass@1"] >= cfg.target_dev_pass1:
                stop_reason = (f"dev maj@{cfg.dev_samples} {maj:.3f} (target {cfg.target_dev_maj}), "
                               f"dev pass@1 {ev['pass@1']:.3f} (target {cfg.target_dev_pass1})")
                break
    bar.close()
    if average is not None:
        model = average
    model.eval()
    info = {
        "steps": step + 1,
        "stop_reason": stop_reason,
        "final_loss": float(loss.item()),
        "dev_history": history,
        "pretrain_seconds": time.perf_counter() - t0,
        "num_threads": torch.get_num_threads(),
        "num_parameters": sum(p.numel() for p in model.parameters()),
    }
    return model, tokenizer, info


# ---------------------------------------------------------------------------------------------------------
# Committed builds
# ---------------------------------------------------------------------------------------------------------

def build(preset: str = "default", cache_dir: str | os.PathLike | None = None, progress: bool = True,
          config: PretrainConfig | None = None, source: str | None = None) -> Path:
    """The directory of the built testbed (``save_pretrained`` format), made on first use.

    A missing build is installed from the committed reference build when ``source`` is ``"committed"`` (the
    default, or ``$DDRL_TESTBED``) and one is committed for this configuration (:func:`reference_build`: the
    claims study's base, so every machine adapts the same bits); otherwise it is pretrained here, on this CPU
    (``source="pretrain"``; give it its own cache, as a build already in the cache is reused whatever made it).
    ``config`` overrides the preset's configuration (its name still prefixes the directory).
    """
    source = source or os.environ.get("DDRL_TESTBED") or "committed"
    if source not in SOURCES:
        raise ValueError(f"testbed source {source!r} (argument or $DDRL_TESTBED): expected one of {SOURCES}")
    cfg = config if config is not None else get_config(preset)
    root = cache_root(cache_dir)
    final = root / f"{preset}-{cfg.config_hash()}"
    if _current(final) and _intact(final, preset, cfg, warn=False):
        return final
    root.mkdir(parents=True, exist_ok=True)

    with owner_lock(root / f"{final.name}.lock", f"testbed build {final}"):  # a second process waits, then reuses it
        if _current(final):
            if _intact(final, preset, cfg):
                return final
            damaged = root / f".damaged-{final.name}-{os.getpid()}-{time.time_ns()}"
            os.rename(final, damaged)  # built again below, from the committed copy or by pretraining
            shutil.rmtree(damaged, ignore_errors=True)
        reference = reference_build(preset, cfg) if source == "committed" and not final.exists() else None
        if reference is not None:
            src, weights = reference
            install_build(src, final, weights)
            return final
        tmp = root / f".tmp-{final.name}-{os.getpid()}-{time.time_ns()}"
        try:
            with compute_threads(BUILD_THREADS):
                model, tokenizer, info = pretrain(cfg, progress=progress)
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            meta = {"preset": preset, "hash": cfg.config_hash(), "version": TESTBED_VERSION, "config": cfg.to_dict(),
                    "torch": torch.__version__, **info, "weights": weight_sha256s(tmp), "files": file_sha256s(tmp)}
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
            if final.exists():  # a build made under another thread count (before BUILD_THREADS): replace it
                stale = root / f".stale-{final.name}-{os.getpid()}-{time.time_ns()}"
                os.rename(final, stale)
                shutil.rmtree(stale, ignore_errors=True)
            os.rename(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return final


def _current(path: Path) -> bool:
    """A finished build made with :data:`BUILD_THREADS` threads (older caches may hold one made under another
    thread count, whose weights differ: those are rebuilt)."""
    try:
        return read_meta(path).get("num_threads") == BUILD_THREADS
    except (OSError, ValueError):
        return False


#: Keys of a saved ``config.json`` / ``generation_config.json`` that record how it was saved, not the model: left out
#: when a build recorded before its files were (:func:`_made_by_configuration`) is compared with its configuration.
SAVE_KEYS = ("architectures", "dtype", "torch_dtype", "transformers_version")


def _intact(path: Path, preset: str, cfg: PretrainConfig, warn: bool = True) -> bool:
    """Whether every file of a finished build that loading reads is the bytes it was made with (issue 98: the
    weights, ``config.json``, ``generation_config.json``, the tokenizer and its chat template), against its record:

    - a build pretrained here records the sha256 of every file in its ``testbed.json`` (``files``);
    - a build installed from a committed build (``results/base_models/``: the reference build of
      ``results/regimes_*.json``, or another CPU's the study installs) carries that build's ``testbed.json``, and is
      compared file by file with it (the reference's weights with the measured sha256s);
    - a build pretrained before its files were recorded has its weights' sha256s only: those are checked, and its
      other files are compared with what its configuration makes (:func:`_made_by_configuration`);
    - a build with no record at all (pretrained before its weights were recorded: another CPU's bits, by design) has
      nothing to be checked against and is used as it is.

    A build whose files differ (a flipped bit, an edited ``rope_theta``, another template) is not used: with
    ``warn``, a one-line warning names the files and :func:`build` makes it again."""
    meta = read_meta(path)
    want = meta.get("files")
    if want is None and meta.get("weights") is None:
        pin = next((p for p in sorted(COMMITTED.glob(f"{path.name}-*")) if (p / META_FILE).is_file()
                    and read_meta(p) == meta), None)
        if pin is not None:  # installed from this committed build
            want = file_sha256s(pin)
            reference = reference_build(preset, cfg)
            if reference is not None and reference[0].resolve() == pin.resolve():
                want = {**want, **reference[1]}  # the reference's weights are the measured ones
        else:
            return True
    if want is None:  # recorded before issue 98: the weights' sha256s; the rest by the configuration
        weights, got = meta["weights"], weight_sha256s(path)
        bad = sorted(n for n in set(got) | set(weights) if got.get(n) != weights.get(n))
        bad += _made_by_configuration(path, cfg)
    else:
        got = file_sha256s(path)
        bad = sorted(n for n in set(got) | set(want) if got.get(n) != want.get(n))
    if bad:
        if warn:
            warnings.warn(f"testbed build {path} is damaged: {', '.join(bad)} "
                          f"{'is' if len(bad) == 1 else 'are'} not the bytes recorded when it was made; building it again",
                          RuntimeWarning, stacklevel=3)
        return False
    return True


def _made_by_configuration(path: Path, cfg: PretrainConfig) -> list[str]:
    """The files of a build (recorded before its files were) that are not what ``cfg`` makes: the tokenizer's files
    byte for byte, ``config.json`` and ``generation_config.json`` as values (:data:`SAVE_KEYS` aside). Builds the
    configuration's tokenizer and untrained model (tens of milliseconds for the presets)."""
    tokenizer = build_tokenizer(model_max_length=cfg.max_positions)
    model = initial_model(cfg, tokenizer)
    bad = []
    with tempfile.TemporaryDirectory(prefix="ddrl-testbed-files-") as tmp:
        tokenizer.save_pretrained(tmp)
        model.config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        for made in sorted(Path(tmp).iterdir()):
            have = path / made.name
            if not have.is_file():
                bad.append(made.name)
            elif made.suffix == ".json" and made.name in ("config.json", "generation_config.json"):
                try:
                    values = json.loads(have.read_text())
                except (UnicodeDecodeError, json.JSONDecodeError):
                    bad.append(made.name)
                    continue
                strip = lambda d: {k: v for k, v in d.items() if k not in SAVE_KEYS}  # noqa: E731
                if not isinstance(values, dict) or strip(values) != strip(json.loads(made.read_text())):
                    bad.append(made.name)
            elif have.read_bytes() != made.read_bytes():
                bad.append(made.name)
    return bad


def load(path: str | os.PathLike):
    """``(model, tokenizer)`` from a built directory, through the Auto classes (the Hugging Face path)."""

    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} is not a testbed build (no config.json); call ddrl.testbed.build() first")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    return model, tokenizer


def read_meta(path: str | os.PathLike) -> dict:
    """The build's ``testbed.json``: configuration, steps, stop reason, dev history, pretraining seconds."""
    return json.loads((Path(path) / META_FILE).read_text())
