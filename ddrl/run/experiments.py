"""Methods x seeds on adapted and held-out questions: the experiment loop behind notebooks 03-05 and
``bench/train.py``, and the sampling/caching pipeline of notebooks 01-02 (:func:`cached_rollouts`,
:func:`sample_and_grade`, :func:`weights_sha256`, :func:`train_and_evaluate`).

A *method* is a row of the paper's tables. Each maps to a trainer preset and to which weights of that run
are evaluated, so one DDRL run (RL, then COR) serves three rows: BCS + DAE (its RL-only weights), DDRL
(after COR) and, through its metrics, the training curves. Runs live in ``runs_root/<preset>-<hash of the
config and the base weights>`` so the same configuration is trained once and reused by every notebook (a finished run directory
loads instantly; a killed one resumes). Evaluations are cached by content as well.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch
from transformers import AutoTokenizer

from ddrl.analysis import grade_problem
from ddrl.data import load_questions, resolve_data_dir
from ddrl.evaluate import evaluate
from ddrl.run.fingerprints import model_fingerprint
from ddrl.accel.logprob_backends import backend_key
from ddrl.models import device_key, load_model, paper_overrides, resolve_device
from ddrl.infra.pool import compute_threads, default_workers, run_pool
from ddrl.infra.progress import tqdm
from ddrl.prompts import format_prompt
from ddrl.infra.storage import cache_root
from ddrl.infra.cache import cached, content_key, records_key
from ddrl.grading.fingerprint import grader_fingerprint
from ddrl.infra.rundir import RunDir, fingerprint
from ddrl.sampling import make_sampler
from ddrl.seeds import derive_seed
from ddrl.report.stats import mean_ci
from ddrl.config import METHODS, key_fields, make_config, resolve_cue
from ddrl.cor import refine_with_config
from ddrl.train import prepare_policy, strip_truth, train


@dataclass
class Experiment:
    """Shared setting of a comparison: which questions, which base config, where runs and caches go."""
    adapted: Sequence[dict]  # questions the methods adapt on (and are evaluated on)
    heldout: Sequence[dict] = ()  # same distribution, never adapted on
    overrides: dict[str, Any] = field(default_factory=dict)  # TrainConfig overrides shared by every method
    runs_root: Path | None = None  # default: <cache>/runs
    progress: bool = True
    workers: int | None = None  # processes for a grid's independent runs; None = ddrl.infra.pool.default_workers

    def config(self, method: str, seed: int, **extra: Any):
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {sorted(METHODS)}")
        preset, _, method_overrides = METHODS[method]
        return make_config(preset, **{**self.overrides, **method_overrides, **extra, "seed": seed})

    def run_dir(self, preset: str, cfg) -> Path:
        """``runs_root/<preset>-<hash of config, base weights, questions, answers and grader>``: same setting,
        same directory.

        The base model's weight hashes are part of the key (``cfg.model`` names ``testbed:default`` whatever its
        build), so a rebuilt testbed never resumes or reuses a run trained from the previous weights. The
        answers and :func:`~ddrl.grading.fingerprint.grader_fingerprint` are too: training never sees the answers, but the
        run's ground-truth diagnostics (``gt/*`` in metrics.jsonl) are graded against them, and the vote uses
        the grader's answer normalisation. So is the log-prob backend unless it is ``"hf"``
        (:func:`ddrl.accel.logprob_backends.backend_key`): the other rounds the update's gradients differently; and so is the
        device kind unless it is the CPU (:func:`ddrl.models.device_key`)."""
        key = content_key({"config": key_fields(cfg), "weights": model_fingerprint(cfg.model),
                           "questions": fingerprint(self.adapted), "answers": records_key(self.adapted, ("answer",)),
                           "grader": grader_fingerprint(), **backend_key(), **device_key(cfg.device)})
        return Path(self.runs_root or cache_root() / "runs") / f"{preset}-{key[:16]}"

    def train(self, method: str, seed: int, **extra: Any):
        """Train (or load) the run behind ``method``; returns the trainer's :class:`~ddrl.train.RunResult`.
        On the CPU it computes with one thread (:meth:`threads`)."""
        cfg = self.config(method, seed, **extra)
        with self.threads(extra):
            return train(cfg, list(self.adapted), self.run_dir(METHODS[method][0], cfg), progress=self.progress)

    def threads(self, extra: dict[str, Any] | None = None):
        """The compute-thread count of this experiment's work: on the CPU one thread, in a pool worker and in
        this process alike (:func:`ddrl.infra.pool.compute_threads`), so a run's and an evaluation's numbers do
        not depend on whether they were computed alone or in a batch (the cache keys do not name a thread
        count; docs/reliability.md). A config's explicit ``threads`` still applies to its training. Other
        devices: unchanged."""
        return compute_threads(1) if self._device(extra or {}).startswith("cpu") else contextlib.nullcontext()

    def evaluation_key(self, weights: dict, cfg, seed: int, split: str, recs: Sequence[dict]) -> dict:
        """What an evaluation's scores depend on: the evaluated weights (:func:`weights_sha256`
        of the model in memory), the questions' ids, prompts and answers, every sampling setting, the seed
        and :func:`~ddrl.grading.fingerprint.grader_fingerprint`, and the device kind off the CPU
        (:func:`ddrl.models.device_key`). Nothing else may serve a cached score. (v3: the cached
        value holds the per-question accuracies too, so v2 entries, which lack them, are not read.)"""
        return {"what": "evaluation-v3", "weights": weights, "split": split, "questions": records_key(recs),
                "n": cfg.eval_n, "T": cfg.eval_temperature, "top_p": cfg.eval_top_p,
                "max_new_tokens": cfg.max_new_tokens, "cue": cfg.cue, "batch_size": cfg.sample_batch_size,
                "seed": seed, "grader": grader_fingerprint(), **device_key(cfg.device)}

    def evaluate(self, model, tokenizer, cfg, seed: int, tag: str = "") -> dict[str, dict]:
        """pass@1 and maj@n on the adapted and held-out questions, cached by content
        (:meth:`evaluation_key`); ``tag`` only labels the evaluation in messages.

        Each split's value also holds ``per_question = {"id": [...], "pass@1": [...]}``: every question's
        pass@1 (the mean accuracy of its ``eval_n`` samples), in the records' order, what the claims study's
        paired differences are taken over (``results/plan.md`` Sec. 3)."""
        out = {}
        weights = {"model": cfg.model, "sha256": weights_sha256(model)}
        for split, recs in (("adapted", self.adapted), ("heldout", self.heldout)):
            if not recs:
                continue
            key = self.evaluation_key(weights, cfg, seed, split, recs)

            def run(recs=recs, split=split):
                t0 = time.perf_counter()
                e = evaluate(model, tokenizer, recs, n=cfg.eval_n, temperature=cfg.eval_temperature,
                             top_p=cfg.eval_top_p, max_new_tokens=cfg.max_new_tokens,
                             seed=derive_seed(seed, "eval", split), cue=resolve_cue(cfg.cue, cfg.model),
                             batch_size=cfg.sample_batch_size, progress=self.progress)
                return {"pass@1": e["pass@1"], "maj@n": e["maj@n"], "mean_tokens": e["mean_tokens"],
                        "eval_seconds": time.perf_counter() - t0,
                        "per_question": {"id": [q["id"] for q in e["questions"]],
                                         "pass@1": [q["accuracy"] for q in e["questions"]]}}

            with self.threads({"device": cfg.device}):
                out[split] = cached(key, run, namespace="evaluations")
        return out

    def run(self, method: str, seed: int, *, per_question: bool = False, **extra: Any) -> list[dict]:
        """Rows ``{method, seed, split, pass@1, maj@n, rl_seconds, cor_seconds, ...}`` for one method and seed;
        with ``per_question`` each row also holds ``per_question = {"id", "pass@1"}`` (see :meth:`evaluate`;
        :func:`question_rows` makes them a long table)."""
        with self.threads(extra):
            return self._run(method, seed, per_question, **extra)

    def _run(self, method: str, seed: int, per_question: bool, **extra: Any) -> list[dict]:
        cfg = self.config(method, seed, **extra)
        _, weights, _ = METHODS[method]
        info: dict[str, Any] = {"rl_seconds": 0.0, "cor_seconds": 0.0, "run_dir": None, "tokens_per_step": 0.0}
        if weights == "base":
            model, tok = load_model(cfg.model, cfg.dtype, cfg.device)
            tag = f"base:{content_key(model_fingerprint(cfg.model))}"  # the weights, not just the name
        else:
            res = self.train(method, seed, **extra)
            model, tok = res.model, res.tokenizer
            if weights == "rl":
                RunDir(res.run_dir).load_weights("rl", model)
            info = {"rl_seconds": res.rl_seconds, "cor_seconds": res.cor_seconds if weights == "final" else 0.0,
                    "run_dir": str(res.run_dir), "cor_kept": (res.cor or {}).get("num_kept") if weights == "final" else None,
                    "tokens_per_step": float(np.mean([m.get("rollout/generated_tokens", np.nan) for m in res.metrics]))
                    if res.metrics else 0.0}
            tag = f"{res.run_dir}:{weights}"
        evals = self.evaluate(model, tok, cfg, seed, tag)
        return [{"method": method, "seed": seed, "split": split, **{k: v for k, v in ev.items() if per_question or k != "per_question"},
                 **info, **extra} for split, ev in evals.items()]

    def refined(self, seed: int, keep: int, lr: float | None = None, start: str = "rl") -> list[dict]:
        """Refinement size (Table 6; claim R1): COR keeping ``keep`` agreeing rollouts per question, run from
        the RL-only weights of ``seed``'s DDRL run with the trainer's own COR call and settings
        (:func:`ddrl.cor.refine_with_config`), then evaluated (:meth:`evaluate`). Rows ``{seed, split, pass@1,
        maj@n, ..., per_question, rl_seconds, cor_seconds, cor_kept, run_dir}``, one per split, cached by the
        run, ``keep``, the questions and the grader (notebook 05 and the claims study share the entries).

        ``lr`` replaces the config's COR learning rate; ``start="base"`` runs COR from the untrained model
        instead (no RL phase, no DDRL run trained; plan Amendment 30). Both enter the cache key only when set,
        so the entries of the default call stay what they were; so does the device kind off the CPU
        (:func:`ddrl.models.device_key`: nothing on the CPU)."""
        if start not in ("rl", "base"):
            raise ValueError(f"refined: start must be 'rl' or 'base', got {start!r}")
        if lr is not None and not lr > 0:
            raise ValueError(f"refined: lr must be > 0, got {lr}")
        if start == "rl":
            res = self.train("ddrl", seed)
            c, run_name, rl_s = res.config, Path(res.run_dir).name, res.rl_seconds
        else:
            res, c = None, self.config("ddrl", seed)
            run_name, rl_s = f"base:{content_key(model_fingerprint(c.model))}", 0.0
        c = c if lr is None else replace(c, cor_lr=lr)

        def run():
            model, tok, cor, cor_s = self.refine(c, res, keep)
            ev = self.evaluate(model, tok, c, seed, f"{run_name}:{start}+cor_keep{keep}")
            return [{"seed": seed, "split": s, **e, "rl_seconds": rl_s, "cor_seconds": cor_s,
                     "cor_kept": cor.summary()["num_kept"], "run_dir": str(res.run_dir) if res else None}
                    for s, e in ev.items()]

        key = {"what": "cor-size-v1", "run": run_name, "keep": keep, "adapted": records_key(self.adapted),
               "heldout": records_key(self.heldout), "grader": grader_fingerprint(), **device_key(c.device)}
        if lr is not None or start != "rl":
            key.update({"cor_lr": c.cor_lr, "start": start, "config": key_fields(c)})
        with self.threads({"device": c.device}):
            return cached(key, run, namespace="evaluations")

    def refine(self, c, res=None, keep: int | None = None) -> tuple[Any, Any, Any, float]:
        """One COR call with config ``c`` on the adapted questions, truths stripped
        (:func:`ddrl.cor.refine_with_config`, ``keep`` default ``c.cor_keep``), from the untrained model (``res``
        None; LoRA-wrapped at paper scale, as the trainer hands COR its policy) or from the RL-only weights of the
        trained run ``res``. Returns (model, tokenizer, the COR result, its seconds)."""
        if res is None:
            model, tok = load_model(c.model, c.dtype, c.device)
            if c.lora_rank > 0:
                model = prepare_policy(model, c)[0]
        else:
            model, tok = res.model, res.tokenizer
            RunDir(res.run_dir).load_weights("rl", model)
        t0 = time.perf_counter()
        cor = refine_with_config(model, tok, [strip_truth(r) for r in self.adapted], c, keep=keep,
                                 progress=self.progress)
        return model, tok, cor, time.perf_counter() - t0

    def grid(self, methods: Sequence[str], seeds: Sequence[int], **extra: Any) -> pd.DataFrame:
        """:meth:`run` for every method and seed, as one long DataFrame.

        The (method, seed) pairs that share a run directory (``bcs_dae`` and ``ddrl`` are one run) form one
        job; the jobs go to :meth:`map` (a pool of workers on a CPU) and the rows come back in the serial
        order."""
        pairs = [(m, seed) for seed in seeds for m in methods]
        done = self.map(_run_pairs, [(g, extra) for g in self.independent_runs(pairs, **extra)], extra)
        by_pair = {pair: rows for group in done for pair, rows in group}
        return pd.DataFrame([row for pair in pairs for row in by_pair[pair]])

    def refined_grid(self, seeds: Sequence[int], keeps: Sequence[int]) -> dict[tuple[int, int], list[dict]]:
        """:meth:`refined` for every seed and refinement size, through :meth:`map`: ``{(seed, keep): rows}``."""
        jobs = [(seed, keep) for seed in seeds for keep in keeps]
        return dict(zip(jobs, self.map(_refine, jobs, {}, desc="refinements")))

    def map(self, fn: Callable[[Experiment, Any], Any], items: Sequence[Any], extra: dict[str, Any],
            desc: str = "runs") -> list[Any]:
        """``[fn(self, item) for item in items]``, independent jobs: with ``workers`` > 1 (by default one per
        core on a CPU, when there are >= 2 jobs) in :func:`ddrl.infra.pool.run_pool`'s single-thread workers
        (each gets a quiet copy of this experiment), else here. ``fn`` is a module-level function."""
        workers = self.workers if self.workers is not None else default_workers(len(items), self._device(extra))
        if workers <= 1:  # the serial path
            return [fn(self, item) for item in items]
        quiet = replace(self, progress=False, workers=1)
        return run_pool(_apply, [(fn, quiet, item) for item in items], workers, desc=desc, progress=self.progress)

    def independent_runs(self, pairs: Sequence[tuple[str, int]], **extra: Any) -> list[list[tuple[str, int]]]:
        """``pairs`` grouped by the run directory they train (or, for untrained methods, by method and seed),
        in first-seen order: the jobs that can run at the same time without waiting on each other."""
        groups: dict[Any, list[tuple[str, int]]] = {}
        for m, seed in pairs:
            cfg = self.config(m, seed, **extra)
            preset, weights, _ = METHODS[m]
            key = ("base", m, seed) if weights == "base" else self.run_dir(preset, cfg)
            groups.setdefault(key, []).append((m, seed))
        return list(groups.values())

    def _device(self, extra: dict) -> str:
        return str(resolve_device({**self.overrides, **extra}.get("device", "auto")))

    def training_curves(self, method: str, seeds: Sequence[int], **extra: Any) -> pd.DataFrame:
        """Per-step training metrics (metrics.jsonl) of ``method``'s runs, one row per (seed, step)."""
        frames = []
        for seed in seeds:
            res = self.train(method, seed, **extra)
            df = pd.DataFrame(res.metrics)
            df["method"], df["seed"] = method, seed
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _apply(job: tuple[Callable[[Experiment, Any], Any], Experiment, Any]) -> Any:
    """A pool worker's job (:meth:`Experiment.map`)."""
    fn, exp, item = job
    return fn(exp, item)


def _run_pairs(exp: Experiment, job: tuple[list[tuple[str, int]], dict[str, Any]]) -> list[tuple[tuple[str, int], list[dict]]]:
    """:meth:`Experiment.run` for (method, seed) pairs sharing one run (:meth:`Experiment.grid`)."""
    pairs, extra = job
    return [((m, seed), exp.run(m, seed, **extra)) for m, seed in pairs]


def _refine(exp: Experiment, job: tuple[int, int]) -> list[dict]:
    """:meth:`Experiment.refined` for one (seed, keep) (:meth:`Experiment.refined_grid`)."""
    return exp.refined(*job)


#: Notebook knobs kept when ``paper_settings`` replaces the rest with the paper's settings: memory and
#: size knobs for the user's machine, and the COR M / ETMR sizes the notebooks vary. ``cor_keep`` is not
#: kept: the paper's per-benchmark value (4 MATH-500, 16 AMC / AIME 2024) applies.
PAPER_KEEP = ("device", "sample_batch_size", "cor_m", "etmr_m")

#: The trainer settings notebooks 03-05 share (their ``trainer=`` knobs): the same names, defaults and preset
#: values in the three notebooks (tests/test_experiments.py checks it), so they train and reuse the same runs.
TRAINER_KNOBS = ("episodes", "prompts_per_step", "n_votes", "k_train", "lr", "eval_n", "cor_m", "cor_keep", "etmr_m",
                 "max_new_tokens", "sample_batch_size", "device")
#: The rest of the shared setting: which model and questions (:func:`notebook_experiment`'s other arguments).
SETTING_KNOBS = ("model", "testbed_preset", "dataset", "data_dir", "n_adapted", "n_heldout", "seed", "paper_settings",
                 "paper_temperature")


def notebook_experiment(*, model: str, testbed_preset: str, dataset: str, data_dir: str | None, n_adapted: int,
                        n_heldout: int, seed: int, paper_settings: str | None, trainer: dict[str, Any],
                        progress: bool = True, paper_temperature: str = "paper") -> Experiment:
    """The setting shared by notebooks 03-05, built from their ``parameters`` cells.

    Questions: the first ``n_adapted + n_heldout`` records of ``dataset`` (the testbed splits are generated
    with ``seed``; real benchmarks are read from ``data_dir``, else ``../shared/data``, else ``ddrl.data``'s
    lookup), the first ``n_adapted`` adapted on, the rest held out. ``model="testbed"`` means the testbed
    model of ``testbed_preset``. ``trainer`` holds the notebook's :class:`~ddrl.config.TrainConfig` knobs,
    shared by every method; with ``paper_settings`` (a :mod:`ddrl.models` preset) the official settings of
    the paper's launch scripts and text replace them (:func:`ddrl.models.paper_overrides`; its rollout
    temperature from the text or the scripts as ``paper_temperature`` says), except the knobs in
    :data:`PAPER_KEEP`. Notebooks 03-05 pass :data:`TRAINER_KNOBS` (:func:`shared_experiment`); an unknown name is an error of
    :func:`ddrl.config.make_config`.
    """
    records = load_questions(dataset, n_adapted + n_heldout, seed=seed, data_dir=resolve_data_dir(data_dir))
    if paper_settings:
        overrides = {**paper_overrides(paper_settings, dataset, paper_temperature), **{k: trainer[k] for k in PAPER_KEEP if k in trainer}}
    else:
        overrides = {"model": f"testbed:{testbed_preset}" if model == "testbed" else model, **trainer}
    return Experiment(records[:n_adapted], records[n_adapted:], overrides=overrides, progress=progress)


def shared_experiment(knobs: dict[str, Any]) -> Experiment:
    """:func:`notebook_experiment` from one notebook's knobs, flat (:func:`ddrl.run.settings.notebook_settings`: what
    its cell shows and its settings): :data:`SETTING_KNOBS` as the arguments, :data:`TRAINER_KNOBS` as ``trainer``.
    Notebooks 03-05 build their experiment this way, so the same knobs give the same runs in the three."""
    return notebook_experiment(**{k: knobs[k] for k in SETTING_KNOBS}, progress=knobs.get("progress", True),
                               trainer={k: knobs[k] for k in TRAINER_KNOBS})


def question_rows(rows: Sequence[dict], keep: Sequence[str] = ("method", "seed", "split")) -> pd.DataFrame:
    """Long table ``{method, seed, split, question, pass@1}`` (one row per question) from :meth:`Experiment.run`
    rows made with ``per_question=True``: the seed x question x method layout of the paired design
    (:func:`ddrl.report.stats.paired_differences` with ``question="question", value="pass@1"``)."""
    frames = []
    for r in rows:
        if "per_question" not in r:
            raise ValueError(f"question_rows: row {({k: r.get(k) for k in keep})} has no per_question values; "
                             "make it with Experiment.run(..., per_question=True)")
        pq = r["per_question"]
        f = pd.DataFrame({"question": pq["id"], "pass@1": pq["pass@1"]})
        for k in reversed(keep):
            f.insert(0, k, r[k])
        frames.append(f)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*keep, "question", "pass@1"])


def summarize(df: pd.DataFrame, metric: str = "pass@1", by: Sequence[str] = ("method", "split")) -> pd.DataFrame:
    """Mean and 95% t-interval over seeds of ``metric`` for each group of ``by``."""
    rows = []
    for keys, g in df.groupby(list(by), sort=False):
        m, lo, hi = mean_ci(g[metric].tolist())
        rows.append({**dict(zip(by, keys if isinstance(keys, tuple) else (keys,))), "seeds": len(g),
                     "mean": m, "ci_lo": lo, "ci_hi": hi})
    return pd.DataFrame(rows)

# ---------------------------------------------------------------------------------------------------------
# The sampling / caching pipeline of notebooks 01-02: sample N answers per question, grade, cache by content
# ---------------------------------------------------------------------------------------------------------


def sample_and_grade(model, tokenizer, records: Sequence[dict], n: int, *, temperature: float = 1.0,
                     top_p: float = 1.0, max_new_tokens: int = 64, seed: int = 0, batch_size: int = 256,
                     cue: str = "system", backend: str = "auto", progress: bool = False) -> list[dict]:
    """Sample ``n`` responses per record with :mod:`ddrl.sampling` and grade them (:func:`ddrl.analysis.grade_problem`).

    ``records`` are ``{prompt, answer, id}``; the prompt is chat-formatted with
    :func:`ddrl.prompts.format_prompt` (``cue`` placement). With ``backend="vllm"``, ``model`` is the
    model's name or directory.
    """

    kwargs = {"batch_size": batch_size} if backend == "hf" else {}
    sampler = make_sampler(backend, model, tokenizer, **kwargs)
    prompts = [format_prompt(tokenizer, r["prompt"], cue=cue) for r in records]
    rollouts = sampler.sample(prompts, n=n, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                              seed=seed, progress=progress)
    return [grade_problem([ro.text for ro in group], str(r["answer"]), r.get("id", i))
            for i, (r, group) in enumerate(tqdm(list(zip(records, rollouts)), desc="grading", disable=not progress))]


def weights_sha256(model) -> str:
    """sha256 of a model's parameters as they are in memory (names, dtypes, shapes and bytes): what an
    evaluation of that model depends on, whatever run or tag it came from."""
    h = hashlib.sha256()
    with torch.no_grad():
        for name, p in model.named_parameters():
            t = p.detach().to("cpu").contiguous().reshape(-1)
            h.update(f"{name}:{t.dtype}:{tuple(p.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def cached_rollouts(model_name: str, records: Sequence[dict], dataset: str, n: int, *, temperature: float = 1.0,
                    top_p: float = 1.0, max_new_tokens: int = 64, seed: int = 0, batch_size: int = 512,
                    cue: str = "auto", backend: str = "hf", device: str = "auto", progress: bool = False) -> list[dict]:
    """:func:`sample_and_grade` through :func:`ddrl.infra.cache.cached`, keyed by the model's weight hashes
    (:func:`model_fingerprint`), the questions' ids, prompts and answers, the grader
    (:func:`ddrl.grading.fingerprint.grader_fingerprint`), every sampling parameter and the device kind off the CPU
    (:func:`ddrl.models.device_key`; notebooks 01 and 02 share the cache). ``model_name`` is
    ``"testbed:<preset>"``, a hub id or a local directory."""
    def _sample() -> list[dict]:

        if backend == "vllm":
            mdl, tok = model_name, AutoTokenizer.from_pretrained(model_name)
        else:
            mdl, tok = load_model(model_name, "float32", device, progress=progress)
        return sample_and_grade(mdl, tok, records, n, temperature=temperature, top_p=top_p,
                                max_new_tokens=max_new_tokens, seed=seed, batch_size=batch_size,
                                cue=resolve_cue(cue, model_name), backend=backend, progress=progress)

    key = {"what": "rollouts-v2", "weights": model_fingerprint(model_name), "dataset": dataset,
           "questions": records_key(records), "grader": grader_fingerprint(), "n": n, "temperature": temperature, "top_p": top_p,
           "max_new_tokens": max_new_tokens, "seed": seed, "cue": cue, "backend": backend, "batch_size": batch_size,
           **device_key(device)}
    return cached(key, _sample, namespace="rollouts")


def train_and_evaluate(preset: str, records: Sequence[dict], run_root: str, *, eval_n: int = 16,
                       eval_temperature: float = 0.6, eval_top_p: float = 0.95, progress: bool = False,
                       **overrides: Any) -> dict:
    """Train one of :data:`ddrl.config.PRESETS` (e.g. "ttrl", "grpo_no_std") on ``records`` with
    :func:`ddrl.train.train`, then evaluate pass@1 / maj@n (:func:`ddrl.evaluate.evaluate`).

    Cached (:func:`ddrl.infra.cache.cached`) by the config, the base weights, the questions (ids, prompts,
    answers) and the grader; the run
    directory ``run_root/<preset>-<hash>`` also makes an interrupted run resume. Returns
    ``{"preset", "pass@1", "maj@n", "rl_seconds", "steps", "final": last step's metrics}``.
    """

    cfg = make_config(preset, **overrides)
    key = {"what": "train-eval-v2", "preset": preset, "config": {k: v for k, v in vars(cfg).items() if k != "threads"},
           "weights": model_fingerprint(cfg.model), "questions": records_key(records), "grader": grader_fingerprint(),
           "eval": [eval_n, eval_temperature, eval_top_p], **device_key(cfg.device)}

    def _run() -> dict:

        run_dir = Path(run_root) / f"{preset}-{content_key(key)[:12]}"
        res = train(cfg, records, run_dir, progress=progress)
        ev = evaluate(res.model, res.tokenizer, records, n=eval_n, temperature=eval_temperature, top_p=eval_top_p,
                      max_new_tokens=cfg.max_new_tokens, seed=cfg.seed, cue=resolve_cue(cfg.cue, cfg.model),
                      batch_size=cfg.sample_batch_size, progress=progress)
        last = res.metrics[-1] if res.metrics else {}
        return {"preset": preset, "pass@1": ev["pass@1"], "maj@n": ev["maj@n"], "rl_seconds": res.rl_seconds,
                "steps": len(res.metrics), "final": {k: v for k, v in last.items() if isinstance(v, (int, float))}}

    return cached(key, _run, namespace="train_eval")
