"""The paper's reported numbers and settings, each with where it is reported and where we read it.

Paper: Yu et al., "Understanding and Mitigating Spurious Signal Amplification in Test-Time Reinforcement
Learning for Math Reasoning", arXiv 2604.21327 (ACL 2026 Findings); code github.com/yuyongcan/DDRL.

Rules of this module:

- Only numbers someone actually read go in, with ``where`` (table / figure / section, or the code file)
  and ``source`` (the document it was read from).
- A number the companion compares against but that we could not read is kept as ``value=None`` with a
  ``note`` saying so; it is never guessed. Notebooks print "not available" for it.

Keys are tuples: ``("setting", name)``, ``("claim", name)``, ``("table1", model, benchmark, method)``,
``("fig2", name)``. :func:`compare` builds the "paper vs measured" tables the notebooks show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

ARXIV_ID = "2604.21327"
ARXIV_HTML = "https://arxiv.org/html/2604.21327v1"
PAPERNOTES = ("https://en.papernotes.org/ACL2026/llm_reasoning/"
              "understanding_and_mitigating_spurious_signal_amplification_in_test-time_reinforc/")
CODE_COMMIT = "56c25384aa182e11eb9d95fe0de7100c911bc78d"  # yuyongcan/DDRL "Initial commit" (scripts read there)
CODE = f"github.com/yuyongcan/DDRL@{CODE_COMMIT[:7]}"
TEAM_BRIEF = "docs/TEAM_BRIEF.md (the lead's summary of the paper; not re-checked against the paper text)"

NOT_REACHED = ("not read: the search excerpts of the arXiv HTML (" + ARXIV_HTML + ") available to us stop at the "
               "abstract, so this table's numbers were never seen; fill in from the paper")


@dataclass(frozen=True)
class Reported:
    """One number of the paper: its value (None = not read), where the paper reports it, where we read it."""

    value: float | int | None
    where: str
    source: str
    note: str = ""

    @property
    def available(self) -> bool:
        return self.value is not None


def _missing(where: str) -> Reported:
    return Reported(None, where, ARXIV_HTML, NOT_REACHED)


PAPER: dict[tuple, Reported] = {
    # --- settings (read in the official launch scripts and code) ------------------------------------
    ("setting", "n_votes"): Reported(64, "N, rollouts voted on per prompt", f"{CODE} verl/examples/ddrl/*/*.sh",
                                     "N_VOTES_PER_PROMPT=64 in every DDRL launch script"),
    ("setting", "k_train"): Reported(32, "K, rollouts trained on per prompt", f"{CODE} verl/examples/ddrl/*/*.sh",
                                     "N_SAMPLES_PER_PROMPT=32 in every DDRL launch script"),
    ("setting", "rollout_temperature"): Reported(1.0, "training rollouts", f"{CODE} verl/examples/ddrl/*/*.sh",
                                                 "actor_rollout_ref.rollout.temperature=1.0"),
    ("setting", "eval_temperature"): Reported(0.6, "evaluation sampling", f"{CODE} verl/examples/ddrl/*/*.sh",
                                              "rollout.val_kwargs.temperature=0.6"),
    ("setting", "eval_top_p"): Reported(0.95, "evaluation sampling", f"{CODE} verl/examples/ddrl/*/*.sh",
                                        "rollout.val_kwargs.top_p=0.95"),
    ("setting", "eval_samples"): Reported(16, "evaluation samples per question", f"{CODE} verl/examples/ddrl/*/*.sh",
                                          "val_kwargs.n = 16 for a 3k-token response budget (4 above 8k)"),
    ("setting", "max_response_tokens"): Reported(3072, "response length", f"{CODE} verl/examples/ddrl/*/*.sh",
                                                 "MAX_RESPONSE_LENGTH = 1024 * 3"),
    ("setting", "max_prompt_tokens"): Reported(512, "prompt length", f"{CODE} verl/examples/ddrl/*/*.sh"),
    ("setting", "lr_qwen2.5-math-1.5b"): Reported(5e-7, "actor learning rate, Qwen2.5-Math-1.5B",
                                                  f"{CODE} verl/examples/ddrl/Qwen2.5-Math/*.sh"),
    ("setting", "lr_qwen2.5-3b"): Reported(5e-7, "actor learning rate, Qwen2.5-3B", f"{CODE} verl/examples/ddrl/Qwen2.5/*.sh"),
    ("setting", "lr_llama-3.1-8b-instruct"): Reported(2e-7, "actor learning rate, Llama-3.1-8B-Instruct",
                                                      f"{CODE} verl/examples/ddrl/LLaMA3.1-Instruct/*.sh"),
    ("setting", "kl_coef"): Reported(0.0, "reward KL coefficient", f"{CODE} verl/examples/ddrl/*/*.sh",
                                     "algorithm.kl_ctrl.kl_coef=0.00 (use_kl_loss=True, coefficient from the config)"),
    ("setting", "episodes_aime"): Reported(80, "epochs over AIME 2024", f"{CODE} verl/examples/ddrl/*/aime.sh"),
    ("setting", "episodes_amc"): Reported(30, "epochs over AMC", f"{CODE} verl/examples/ddrl/*/amc.sh"),
    ("setting", "episodes_math500"): Reported(10, "epochs over MATH-500", f"{CODE} verl/examples/ddrl/*/math.sh"),
    ("setting", "bcs_k_pos_cap"): Reported(16, "BCS: K+ = min(count(y*), K//2), K- = K - K+",
                                           f"{CODE} verl/verl/trainer/ppo/ttrl_utils.py select_top_k_per_prompt_cnt",
                                           "the cap K//2 = 16 for K = 32"),
    ("setting", "cor_samples"): Reported(128, "COR: M rollouts sampled after RL", TEAM_BRIEF),
    ("setting", "cor_epochs"): Reported(5, "COR: SFT epochs", TEAM_BRIEF),
    # --- headline claims ---------------------------------------------------------------------------
    ("claim", "ddrl_relative_gain_qwen2.5-math-1.5b_pct"): Reported(
        15.3, "abstract-level summary (relative improvement of DDRL on Qwen2.5-Math-1.5B)", PAPERNOTES,
        "read in the papernotes TL;DR; the baseline and the metric it is relative to are not stated there"),
    ("claim", "n_models"): Reported(3, "abstract: 'three LLMs'", "https://arxiv.org/abs/2604.21327"),
    # --- Fig. 2 / Fig. 6 (fraction correct vs frequency): shapes only were read -----------------------
    ("fig2", "ambiguous_region_lo"): Reported(None, "Fig. 2", ARXIV_HTML,
                                              "the abstract and summaries say 'medium consistency' forms the ambiguity "
                                              "region; its numeric bounds were not read"),
    ("fig2", "ambiguous_region_hi"): Reported(None, "Fig. 2", ARXIV_HTML, "see ambiguous_region_lo"),
    # --- Fig. 3a: the GRPO amplification is an equation, so its values are derived, not read ---------
    ("fig3a", "grpo_pos_adv_m1_k32"): Reported(None, "Fig. 3a", ARXIV_HTML,
                                              "not read; the closed form (ddrl.analysis.grpo_closed_form) gives 5.48"),
}

MODELS = ("Qwen2.5-Math-1.5B", "Qwen2.5-3B", "Llama-3.1-8B-Instruct")  # the code's DDRL launch scripts
BENCHMARKS = ("AIME 2024", "AMC", "MATH-500", "Avg")
for _model in MODELS:
    for _bench in BENCHMARKS:
        for _method in ("grpo", "grpo_no_std"):
            PAPER[("table1", _model, _bench, _method)] = _missing("Table 1 (GRPO vs GRPO w/o norm.)")
        for _method in ("no_adaptation", "ttrl", "etmr", "ddrl"):
            PAPER[("main", _model, _bench, _method)] = _missing("main results table")


def get(key: tuple) -> Reported:
    """The entry for ``key``; an unknown key is an error listing the kinds of keys there are."""
    try:
        return PAPER[key]
    except KeyError:
        kinds = sorted({k[0] for k in PAPER})
        raise KeyError(f"ddrl.paper: no entry {key!r}; key kinds: {kinds}") from None


def value(key: tuple) -> float | int | None:
    """The reported value (None when it was not read)."""
    return get(key).value


def fmt(key: tuple, spec: str = ".3g") -> str:
    """The value formatted for prose, or "not available" (never a made-up number)."""
    v = value(key)
    return "not available" if v is None else format(v, spec)


def missing() -> list[tuple]:
    """Keys whose value we could not read."""
    return [k for k, r in PAPER.items() if r.value is None]


def compare(rows: Iterable[tuple[str, tuple | None, Any]]) -> "pd.DataFrame":
    """A "paper vs measured" table from ``(quantity, paper key or None, measured value)`` rows.

    Columns: quantity, paper (None if not read / not reported), measured, where, source, note.
    """
    import pandas as pd

    out = []
    for quantity, key, measured in rows:
        r = get(key) if key is not None else Reported(None, "", "", "not a quantity the paper reports")
        out.append({"quantity": quantity, "paper": r.value, "measured": measured, "where": r.where,
                    "source": r.source, "note": r.note})
    df = pd.DataFrame(out)
    df["paper"] = pd.Series([r["paper"] for r in out], dtype=object)  # keep None (not read) apart from NaN
    return df


def integrity_errors() -> list[str]:
    """Problems with the table itself (used by the tests): missing sources, NaN values, unexplained Nones."""
    errors = []
    for k, r in PAPER.items():
        if not r.source or not r.where:
            errors.append(f"{k}: no source or location")
        if isinstance(r.value, float) and math.isnan(r.value):
            errors.append(f"{k}: NaN value (use None with a note)")
        if r.value is None and not r.note:
            errors.append(f"{k}: missing value without a note")
    return errors
