"""The held-out KL of a trained policy against its base (plan Amendment 21's addendum, the second distance of
:mod:`ddrl.study.drift`): the final policy's own samples of fresh questions scored under both models
(:func:`heldout_kl`), for every run an H1x CSV names (:func:`measure_kl`, one JSON per run, read where its weights
are unchanged). :mod:`ddrl.study.drift` analyses and draws what this writes without loading torch.

    python -m ddrl.study.drift kl --out DIR      # measure_kl of every run under DIR

Plan Amendments 40 and 41 (designs ``lr_drift`` and ``cor_alone_drift``, the Xeon build; the KLs are committed under
``results/replication_xeon/lr_drift/``; ``DDRL_CACHE_DIR``: that build's cache, holding the runs' weights)::

    python -m ddrl.study.drift export --out results/replication_xeon/runs --drift-dir results/replication_xeon/lr_drift \
        --regime amc_like --methods ttrl bcs_dae ddrl   # the step CSVs; and amc_like_small_lr
    python -m ddrl.study.drift kl --out results/replication_xeon/runs --drift-dir results/replication_xeon/lr_drift \
        --regimes results/replication_xeon/regimes_base.json --regime amc_like --methods ttrl bcs_dae ddrl   # and amc_like_small_lr
    python -m ddrl.study.drift kl --cor-alone --seeds 0-11 --out results/replication_xeon/runs \
        --drift-dir results/replication_xeon/lr_drift --regimes results/replication_xeon/regimes_base.json  # cor_alone_kl
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch
from tqdm.auto import tqdm

from ddrl.accel.logprob_backends import pinned_backend
from ddrl.config import METHODS, resolve_cue
from ddrl.study.drift_data import KL_UNIT, PAIR, drift_path, h1x_runs
from ddrl.logprobs import response_logprobs
from ddrl.models import load_model
from ddrl.prompts import format_prompt
from ddrl.study.plan import Regime
from ddrl.run.experiments import weights_sha256
from ddrl.run.fingerprints import model_fingerprint
from ddrl.run.storage import write_json
from ddrl.run.rundir import RunDir
from ddrl.sampling import make_sampler
from ddrl.seeds import derive_seed
from ddrl.study.plan import (COR_ONLY, RESULTS, SCALES, check_weights, csv_path, experiment, heldout_x_records,
                             load_regimes)

#: Held-out KL (Amendment 21's addendum): samples of the final policy on the first questions of H1x's fresh ones
KL_QUESTIONS = 256
KL_SAMPLES = 8


def kl_prompts(reg: Regime, sc, tokenizer, cue: str, model: str) -> list[str]:
    """The held-out KL's prompts: the first :data:`KL_QUESTIONS` of ``reg``'s fresh H1x questions at scale ``sc``
    (fewer where the scale has fewer), formatted with the run's cue (``cue``, ``model``: its config's)."""
    records = heldout_x_records(reg, sc.n_heldout_x)[:KL_QUESTIONS]
    return [format_prompt(tokenizer, r["prompt"], resolve_cue(cue, model)) for r in records]


@dataclass(frozen=True)
class HeldoutKL:
    """A run's held-out KL (``kl``, nats per token in units of :data:`KL_UNIT`): the mean of log pi(y_t) - log
    pi_base(y_t) over ``n_tokens`` tokens of ``n_samples`` samples (T = 1) of the final policy, and its inputs."""

    kl: float
    n_tokens: int
    n_questions: int
    n_samples: int
    seed: int
    base_fingerprint: dict
    policy_fingerprint: dict


def heldout_kl(policy, base, tokenizer, prompts: Sequence[str], n: int, max_new_tokens: int, seed: int,
               batch_size: int = 512) -> tuple[float, int]:
    """KL(policy || base) per token on the policy's own samples of ``prompts``: the sequences' summed log-ratios
    (k1; each sequence's sum is unbiased for its sequence-level KL) over all sampled tokens, ``n`` samples per
    prompt at T = 1, top-p 1, ``derive_seed``-style ``seed``. Returns (KL in nats per token, tokens)."""
    sampler = make_sampler("hf", policy, tokenizer, batch_size=batch_size)
    ids = sampler.encode(prompts)
    rollouts = sampler.sample_ids(ids, n, temperature=1.0, top_p=1.0, max_new_tokens=max_new_tokens, seed=seed)
    pairs = [(ids[r.prompt_index], r.token_ids) for group in rollouts for r in group if r.token_ids]
    pad = tokenizer.pad_token_id
    total, tokens = 0.0, 0
    for i in range(0, len(pairs), batch_size):
        p, r = zip(*pairs[i:i + batch_size])
        with torch.inference_mode():
            lp, mask, _ = response_logprobs(policy, list(p), list(r), 1.0, pad)
            lb, _, _ = response_logprobs(base, list(p), list(r), 1.0, pad)
        total += float(((lp - lb) * mask).sum())
        tokens += int(mask.sum())
    if tokens == 0:
        raise ValueError("heldout_kl: the policy sampled no token")
    return total / tokens, tokens


def _weights(name: str | Path) -> dict:
    """sha256 of a model's weight files (:func:`ddrl.run.fingerprints.model_fingerprint` without the local path)."""
    return {k: v for k, v in model_fingerprint(str(name)).items() if k != "model"}


def measure_kl(out_dir: str | Path, runs_root: str | Path, regime: str, methods: Sequence[str] = PAIR,
               dest: str | Path | None = None, scale: str = "default", progress: bool = True,
               regimes: str | Path = RESULTS / "regimes_base.json",
               seeds: Sequence[int] | None = None) -> tuple[int, list[str]]:
    """:class:`HeldoutKL` of every run an H1x CSV under ``out_dir`` names (of ``seeds``, default all) whose weights
    are under ``runs_root`` (the method's: ``final/``, or ``rl/`` for ``bcs_dae``, DDRL's RL-only weights), against
    the base the runs started from (the scale's, checked against the build ``regimes`` measured: by default the
    registered one), written beside its drift CSV under ``dest`` (default ``out_dir``). A run whose JSON holds the
    same base and policy weights (sha256) and the same question and sample counts is read, not redone.
    ``regime``: a name in ``regimes`` (and the files beside it). Returns how many were measured and the runs not
    found."""
    sc = SCALES[scale]
    check_weights(regimes, sc)
    reg = load_regimes(regimes, sc, names=[regime])[regime]
    n_questions = min(KL_QUESTIONS, sc.n_heldout_x)  # kl_prompts' count
    found, missing = [], []
    for m, seed, name in h1x_runs(out_dir, regime, methods):
        run = Path(runs_root) / name
        if seeds is None or seed in seeds:
            (found if (run / METHODS[m][1] / "trainable.pt").is_file() else missing).append((m, seed, run))
    missing = [run.name for *_, run in missing]
    if not found:
        return 0, missing
    cfg = json.loads((found[0][2] / "config.json").read_text())
    base_fp = _weights(cfg["model"])

    def measured(path: Path, policy_fp: dict) -> bool:
        if not path.is_file():
            return False
        r = json.loads(path.read_text())
        return (r["base_fingerprint"], r["policy_fingerprint"], r["n_questions"], r["n_samples"]) == \
            (base_fp, policy_fp, n_questions, KL_SAMPLES)

    todo = [(m, seed, run, fp) for m, seed, run in found
            if not measured(drift_path(dest or out_dir, regime, m, seed, "kl"), fp := _weights(run / METHODS[m][1]))]
    if not todo:
        return 0, missing
    base, tok = load_model(cfg["model"], "float32", "cpu")
    prompts = kl_prompts(reg, sc, tok, cfg["cue"], cfg["model"])
    for m, seed, run, fp in tqdm(todo, desc="held-out KL", unit="run", disable=not progress):
        c = json.loads((run / "config.json").read_text())
        if (c["model"], c["cue"], c["max_new_tokens"]) != (cfg["model"], cfg["cue"], cfg["max_new_tokens"]):
            raise ValueError(f"{run}: model/cue/max_new_tokens differ from {found[0][2]}'s; measure them apart")
        policy, _ = load_model(cfg["model"], "float32", "cpu")
        RunDir(run).load_weights(METHODS[m][1], policy)  # the trained weights onto the base, as ddrl.run.experiments does
        s = derive_seed(seed, "drift", "kl")
        kl, n_tok = heldout_kl(policy, base, tok, prompts, KL_SAMPLES, c["max_new_tokens"], s)
        rec = HeldoutKL(kl / KL_UNIT, n_tok, len(prompts), KL_SAMPLES, s, base_fp, fp)
        path = drift_path(dest or out_dir, regime, m, seed, "kl")
        write_json(path, asdict(rec))
    return len(todo), missing


def cor_alone_kl(seed: int, regimes: str | Path, out: str | Path, regime: str = "amc_like",
                 scale: str = "default") -> dict:
    """COR alone (plan Amendment 41) of ``seed`` in ``regime`` recomputed as the study computed it
    (:func:`ddrl.study.jobs.method_rows`: the seed's DDRL config, :meth:`~ddrl.run.experiments.Experiment.refine` from
    the untrained model, one thread, log-probs pinned to "hf"; its weights were never kept), then its held-out KL to the
    untrained model (:func:`heldout_kl`, Amendment 21's questions, samples and stream) and whether its adapted
    evaluation equals the committed CSV under ``out`` on every question (``adapted_reproduced``). ``regimes``: the
    build's regimes file (the Xeon build's for the committed ``results/replication_xeon/lr_drift/``)."""
    sc = SCALES[scale]
    reg = load_regimes(regimes, sc, names=[regime])[regime]
    exp = experiment(reg, sc, False)
    c = exp.config("ddrl", seed)
    with pinned_backend("hf"), exp.threads({"device": c.device}):
        model, tok, _, _ = exp.refine(c)  # Experiment.refined's own COR call, start="base"
        ev = exp.evaluate(model, tok, c, seed)["adapted"]["per_question"]
        base, _ = load_model(c.model, c.dtype, c.device)
        prompts = kl_prompts(reg, sc, tok, c.cue, c.model)
        s = derive_seed(seed, "drift", "kl")
        kl, n_tok = heldout_kl(model, base, tok, prompts, KL_SAMPLES, c.max_new_tokens, s)
    committed = pd.read_csv(csv_path(out, regime, COR_ONLY, seed), dtype={"question": str})
    return {"kl": kl / KL_UNIT, "n_tokens": n_tok, "n_questions": len(prompts), "n_samples": KL_SAMPLES, "seed": s,
            "weights_sha256": weights_sha256(model), "adapted_reproduced": bool(
                committed["question"].tolist() == ev["id"] and committed["pass@1"].tolist() == ev["pass@1"])}
