"""Every number the paper prints, each with the LaTeX section it is printed in, and the official scripts' values.

Paper: Yu et al., "Understanding and Mitigating Spurious Signal Amplification in Test-Time Reinforcement
Learning for Math Reasoning", arXiv 2604.21327 (ACL 2026 Findings). Read from its full LaTeX source
(``<repo>/../shared/paper/000_45b6899f74069425.txt`` or ``$DDRL_PAPER_TEX``; every file of the source starts
with a ``%% file: <path>`` line, and ``source`` below names that file). Tables are numbered as the compiled
paper shows them: Table 1 GRPO vs GRPO (w/o norm.), 2 main results, 3 ablation, 4 COR vs additional RL,
5 Qwen2.5-Math-7B, 6 refinement size.

Keys are tuples whose first element is the kind:

- ``("setting", name)``: a setting the paper's text states (``sections/exp.tex`` and others);
- ``("script", name)``: a setting of the official launch scripts (github.com/yuyongcan/DDRL); where it differs
  from the text, the ``note`` of both entries says so (e.g. the rollout temperature);
- ``("claim", name, ...)``: numbers the prose states (the introduction's relative gains over TTRL);
- ``("band", name)``: the answer-frequency counts the appendix calls reliable;
- ``("table1", model, benchmark, row)`` ... ``("table6", size, benchmark)``: table cells (pass@1 in %).

No value is None: the source prints every one. :func:`compare` builds the "paper vs measured" tables of the
notebooks; :func:`latex_table` parses a table of the LaTeX file (the tests check every cell against it).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ddrl.infra.storage import REPO

ARXIV_ID = "2604.21327"
TEX_NAME = "000_45b6899f74069425.txt"
CODE_COMMIT = "a8270bf4f380ffb5e91cd877ff66e985f33d89c0"  # yuyongcan/DDRL (launch scripts read there)
CODE = f"github.com/yuyongcan/DDRL@{CODE_COMMIT[:7]}"
SCRIPTS = f"{CODE} verl/examples/ddrl/<model>/<benchmark>.sh"


def tex(section: str) -> str:
    """The ``source`` of a number printed in ``section`` of the LaTeX file (e.g. ``"tabs/main_res.tex"``)."""
    return f"paper LaTeX ({TEX_NAME}) {section}"


EXP, OBS, METHOD, INTRO, APPX = (tex(s) for s in ("sections/exp.tex", "sections/observations.tex",
                                                    "sections/method.tex", "sections/intro.tex",
                                                    "sections/appendix.tex"))


@dataclass(frozen=True)
class Reported:
    """One number of the paper (or of its official scripts): value, where it is printed, the file read."""

    value: float | int
    where: str
    source: str
    note: str = ""


#: The three models of Tables 2-3 (the tables write "Qwen2.5-Base-3B" for the text's Qwen2.5-3B).
MODELS = ("Qwen2.5-Math-1.5B", "Qwen2.5-3B", "Llama-3.1-8B-Instruct")
BENCHMARKS = ("AIME 2024", "AMC", "MATH-500", "Avg")
#: Row labels of the tables as printed -> our names (methods of ddrl.run.experiments where there is one).
TABLE_MODEL_NAMES = {"Qwen2.5-Math-1.5B": "Qwen2.5-Math-1.5B", "Qwen2.5-Base-3B": "Qwen2.5-3B",
                     "Llama-3.1-8B-Instruct": "Llama-3.1-8B-Instruct"}

PAPER: dict[tuple, Reported] = {}


def _put(key: tuple, value: float | int, where: str, source: str, note: str = "") -> None:
    PAPER[key] = Reported(value, where, source, note)


# --- settings stated in the text ---------------------------------------------------------------------------
_S = "Sec. 4.1 Implementation Details"
_put(("setting", "n_votes"), 64, f"{_S}: N rollouts per prompt for the pseudo-label", EXP)
_put(("setting", "k_train"), 32, f"{_S}: rollouts downsampled to 32 trajectories for training", EXP)
_put(("setting", "rollout_temperature_math"), 1.0, f"{_S}: rollout temperature, math-specialised models", EXP,
     "the official scripts agree (script rollout_temperature = 1.0)")
_put(("setting", "rollout_temperature_other"), 0.6, f"{_S}: rollout temperature, other models "
     "(Qwen2.5-3B, Llama-3.1-8B-Instruct)", EXP,
     "the official scripts differ: they sample at 1.0 for every model (script rollout_temperature)")
_put(("setting", "lr_qwen"), 5e-7, f"{_S}: peak AdamW learning rate (cosine schedule), Qwen models", EXP)
_put(("setting", "lr_llama"), 2e-7, f"{_S}: peak AdamW learning rate (cosine schedule), Llama", EXP)
_put(("setting", "max_response_tokens"), 3072, f"{_S}: maximum generation length", EXP)
_put(("setting", "episodes_math500"), 10, f"{_S}: training episodes, MATH-500", EXP)
_put(("setting", "episodes_amc"), 30, f"{_S}: training episodes, AMC", EXP)
_put(("setting", "episodes_aime2024"), 80, f"{_S}: training episodes, AIME 2024", EXP)
_put(("setting", "cor_m"), 128, "Sec. 3.3 (COR): M responses sampled per query after RL", METHOD)
_put(("setting", "cor_keep_math500"), 4, f"{_S}: COR samples kept per prompt, MATH-500", EXP,
     "the text says 'retain a fixed number of high-confidence samples'; which of the agreeing M is not stated")
_put(("setting", "cor_keep_amc"), 16, f"{_S}: COR samples kept per prompt, AMC", EXP)
_put(("setting", "cor_keep_aime2024"), 16, f"{_S}: COR samples kept per prompt, AIME 2024", EXP)
_put(("setting", "cor_epochs"), 5, f"{_S}: COR supervised fine-tuning epochs", EXP)
_put(("setting", "cor_lr"), 1e-5, f"{_S}: COR learning rate", EXP)
_put(("setting", "eval_samples"), 16, f"{_S}: pass@1 following DeepSeek-R1, responses per prompt", EXP)
_put(("setting", "eval_temperature"), 0.6, f"{_S}: evaluation temperature", EXP)
_put(("setting", "eval_top_p"), 0.95, f"{_S}: evaluation top-p", EXP)
_put(("setting", "bcs_k_pos_cap"), 16, "Sec. 3.1 (BCS): K+ = min(c(y*), floor(K/2)); the cap for K = 32", METHOD)
_put(("setting", "additional_rl_fraction"), 0.1, "Sec. 4.4 Analysis of the Off-Policy Stage: additional RL of "
     "'approximately one-tenth of the original RL budget'", EXP,
     "Table 4's epochs (8, 3, 1) are a tenth of the episodes (80, 30, 10); no learning rate is stated for them")
_put(("setting", "frequency_samples"), 64, "Fig. 2 caption: each prompt sampled 64 times for the "
     "frequency analysis", INTRO)

# --- the official launch scripts (where they are the only source, or differ from the text) ------------------
_put(("script", "rollout_temperature"), 1.0, "actor_rollout_ref.rollout.temperature, every model", SCRIPTS,
     "differs from the text for the non-math models (text: 0.6)")
_put(("script", "eval_temperature"), 0.6, "rollout.val_kwargs.temperature", SCRIPTS, "agrees with the text")
_put(("script", "eval_top_p"), 0.95, "rollout.val_kwargs.top_p", SCRIPTS, "agrees with the text")
_put(("script", "eval_samples"), 16, "rollout.val_kwargs.n (16 for a 3k-token budget)", SCRIPTS, "agrees with the text")
_put(("script", "max_prompt_tokens"), 512, "data.max_prompt_length", SCRIPTS, "not stated in the text")
_put(("script", "kl_loss_coef"), 0.001, "actor.kl_loss_coef (use_kl_loss=True, low_var_kl)", SCRIPTS,
     "not stated in the text")
_put(("script", "warmup_ratio"), 0.03, "actor.optim.lr_warmup_steps_ratio", SCRIPTS, "not stated in the text")
_put(("script", "drop_last"), 1, "the RL dataloader drops the last partial batch (ray_trainer.py, drop_last=True)",
     f"{CODE} verl/verl/trainer/ppo/ray_trainer.py", "not stated in the text; 1 = True")

# --- claims of the prose -------------------------------------------------------------------------------------
_put(("claim", "rel_gain_over_ttrl_pct", "Qwen2.5-Math-1.5B"), 15.3,
     "Sec. 1: DDRL's relative improvement over TTRL", INTRO,
     "relative to TTRL's Avg pass@1 in Table 2: (52.9 - 45.9) / 45.9 = 15.25%")
_put(("claim", "rel_gain_over_ttrl_pct", "Llama-3.1-8B-Instruct"), 12.7,
     "Sec. 1: DDRL's relative improvement over TTRL", INTRO,
     "relative to TTRL's Avg pass@1 in Table 2: (39.8 - 35.3) / 35.3 = 12.75%")
_put(("claim", "additional_rl_max_minutes"), 72, "Sec. 4.4: extended RL runs 'require up to 72 minutes'", EXP)
_put(("claim", "cor_minutes_min"), 3, "Sec. 4.4: 'five SFT epochs (3-5 minutes)'", EXP)
_put(("claim", "cor_minutes_max"), 5, "Sec. 4.4: 'five SFT epochs (3-5 minutes)'", EXP)

# --- the appendix's reliable frequency bands (out of 64 samples; AIME 1983-2024, 933 problems) ---------------
_put(("band", "reliable_low_max_count"), 5, "App. C Additional Results: low-frequency region '(<=5)' is reliable",
     APPX, "counts of an answer among 64 samples (Fig. 9, AIME 1983-2024, 933 problems)")
_put(("band", "reliable_high_min_count"), 45, "App. C Additional Results: high-frequency region '(>=45)' is "
     "reliable", APPX, "counts of an answer among 64 samples; the ambiguous band is 6-44 of 64")
_put(("band", "aime_problems"), 933, "App. C: AIME 1983-2024 collection size", APPX)

# --- Table 1 (sections/observations.tex, tab:adv_cmp): TTRL with GRPO vs GRPO (w/o norm.), Qwen2.5-Math-1.5B --
_T1 = "Table 1 (GRPO vs GRPO w/o norm., Qwen2.5-Math-1.5B)"
for _bench, _g, _n in (("AIME 2024", 15.8, 20.6), ("MATH-500", 73.0, 75.0)):
    _put(("table1", "Qwen2.5-Math-1.5B", _bench, "grpo"), _g, _T1, OBS, "printed as 'AIME2024' / 'MATH'")
    _put(("table1", "Qwen2.5-Math-1.5B", _bench, "grpo_no_norm"), _n, _T1, OBS,
         "caption: 'removes the advantage normalization in GRPO'; text: 'constant, label-dependent values' "
         "(two readings, see notebook 02)")

# --- Table 2 (tabs/main_res.tex, tab:main): pass@1 -----------------------------------------------------------
_MAIN = {
    "Qwen2.5-Math-1.5B": {"no_adaptation": (7.7, 28.6, 32.7, 23.0), "ttrl": (15.8, 48.9, 73.0, 45.9),
                          "etmr": (21.0, 50.8, 76.9, 49.6), "ddrl": (25.0, 52.9, 80.7, 52.9),
                          "delta": (19.0, 4.1, 4.9, 6.7)},
    "Qwen2.5-3B": {"no_adaptation": (4.4, 24.5, 53.2, 27.4), "ttrl": (7.9, 40.7, 72.2, 40.3),
                   "etmr": (9.2, 41.7, 71.7, 40.9), "ddrl": (10.0, 42.2, 72.7, 41.6),
                   "delta": (8.2, 1.2, 1.4, 1.7)},
    "Llama-3.1-8B-Instruct": {"no_adaptation": (4.6, 23.3, 48.6, 25.5), "ttrl": (10.0, 32.3, 63.7, 35.3),
                              "etmr": (16.9, 35.4, 59.5, 37.3), "ddrl": (13.3, 38.6, 67.6, 39.8),
                              "delta": (-21.3, 9.0, 13.6, 6.7)},
}
for _model, _rows in _MAIN.items():
    for _method, _vals in _rows.items():
        for _bench, _v in zip(BENCHMARKS, _vals):
            if _method != "delta":
                _put(("table2", _model, _bench, _method), _v, "Table 2 (main results, pass@1)", tex("tabs/main_res.tex"))
                continue
            _d, _e = _rows["ddrl"][BENCHMARKS.index(_bench)], _rows["etmr"][BENCHMARKS.index(_bench)]
            _re = 100 * (_d - _e) / _e
            _note = f"relative gain of DDRL over ETMR; recomputed from the table: {_re:+.2f}%"
            if abs(_re - _v) >= 0.05:
                _note += f" (the printed {_v:+.1f}% disagrees with the table; kept as printed)"
            _put(("table2_delta_pct", _model, _bench), _v, "Table 2, row Delta (% gain of DDRL over ETMR)",
                 tex("tabs/main_res.tex"), _note)

# --- Table 3 (tabs/abla.tex, tab:abla): ablation, rows = which of BCS / DAE / COR ----------------------------
_ABLA = {
    "Qwen2.5-Math-1.5B": {"ttrl": (15.8, 48.9, 73.0, 45.9), "bcs": (17.3, 46.9, 74.1, 46.1),
                          "bcs_dae": (20.2, 46.3, 74.6, 47.0), "ddrl": (25.0, 52.9, 80.7, 52.9)},
    "Qwen2.5-3B": {"ttrl": (7.9, 40.7, 72.2, 40.3), "bcs": (6.7, 41.3, 72.0, 40.0),
                   "bcs_dae": (10.0, 42.2, 72.3, 41.5), "ddrl": (10.0, 42.2, 72.7, 41.6)},
    "Llama-3.1-8B-Instruct": {"ttrl": (10.0, 32.3, 63.7, 35.3), "bcs": (13.3, 38.4, 64.4, 38.7),
                              "bcs_dae": (13.3, 38.5, 67.4, 39.7), "ddrl": (13.3, 38.6, 67.6, 39.8)},
}
#: Table 3's rows: which components are on (BCS, DAE, COR).
TABLE3_ROWS = {"ttrl": (False, False, False), "bcs": (True, False, False), "bcs_dae": (True, True, False),
               "ddrl": (True, True, True)}
for _model, _rows in _ABLA.items():
    for _method, _vals in _rows.items():
        for _bench, _v in zip(BENCHMARKS, _vals):
            _put(("table3", _model, _bench, _method), _v, "Table 3 (ablation, pass@1)", tex("tabs/abla.tex"))

# --- Table 4 (tabs/sft_cost.tex, tab:offpolicy_vs_rl): Qwen2.5-Math-1.5B --------------------------------------
_COST = {  # benchmark -> row -> (epochs, minutes, pass@1); "BCS + DAE" has no epochs/minutes ("--")
    "AIME 2024": {"bcs_dae": (None, None, 20.2), "additional_rl": (8, 15, 19.2), "ddrl": (5, 3, 25.0)},
    "AMC": {"bcs_dae": (None, None, 46.3), "additional_rl": (3, 42, 46.9), "ddrl": (5, 3, 52.9)},
    "MATH-500": {"bcs_dae": (None, None, 74.6), "additional_rl": (1, 72, 74.4), "ddrl": (5, 5, 80.7)},
}
for _bench, _rows in _COST.items():
    for _method, _vals in _rows.items():
        for _q, _v in zip(("epochs", "minutes", "pass@1"), _vals):
            if _v is not None:
                _put(("table4", _bench, _method, _q), _v, "Table 4 (COR vs additional RL, Qwen2.5-Math-1.5B)",
                     tex("tabs/sft_cost.tex"), "'ddrl' is the row '+ COR (Ours)'; benchmarks printed as AIME / AMC / MATH")

# --- Table 5 (sections/appendix.tex, tab:qwenmath-7b) ----------------------------------------------------------
for _method, _vals in {"no_adaptation": (12.9, 35.6, 46.7, 31.7), "ttrl": (40.2, 68.1, 83.4, 63.9),
                       "ddrl": (40.3, 69.0, 86.7, 65.3)}.items():
    for _bench, _v in zip(BENCHMARKS, _vals):
        _put(("table5", "Qwen2.5-Math-7B", _bench, _method), _v, "Table 5 (Qwen2.5-Math-7B, pass@1)", APPX)

# --- Table 6 (sections/appendix.tex, tab:rs): refinement size (DDRL on Qwen2.5-Math-1.5B) ---------------------
for _size, _vals in {"1x": (25.0, 52.9, 80.7), "2x": (25.2, 53.0, 80.7), "4x": (25.3, 53.0, 80.8)}.items():
    for _bench, _v in zip(BENCHMARKS[:3], _vals):
        _put(("table6", _size, _bench), _v, "Table 6 (refinement size, pass@1)", APPX,
             "sizes relative to the original setting (4 kept per MATH-500 prompt, 16 for AMC / AIME 2024); "
             "the model is not named in the table; 1x equals Table 2's Qwen2.5-Math-1.5B DDRL row")


def get(key: tuple) -> Reported:
    """The entry for ``key``; an unknown key is an error listing the kinds of keys there are."""
    try:
        return PAPER[key]
    except KeyError:
        kinds = sorted({k[0] for k in PAPER})
        raise KeyError(f"ddrl.paper: no entry {key!r}; key kinds: {kinds}") from None


def value(key: tuple) -> float | int:
    """The printed value of ``key``."""
    return get(key).value


def fmt(key: tuple, spec: str = "g") -> str:
    """The value formatted for prose."""
    return format(value(key), spec)


def setting_for(name: str, benchmark: str) -> float | int:
    """A per-benchmark setting of the text (``episodes``, ``cor_keep``) for a :mod:`ddrl.data` benchmark name
    (``aime2024``, ``amc``, ``math500``)."""
    return value(("setting", f"{name}_{benchmark}"))


def rollout_temperature(model_name: str, source: str = "paper") -> float:
    """The rollout temperature for ``model_name``: ``source="paper"`` gives the text's 1.0 for math-specialised
    models (name contains "math") and 0.6 for the others; ``source="scripts"`` the official scripts' 1.0."""
    if source == "scripts":
        return float(value(("script", "rollout_temperature")))
    if source != "paper":
        raise ValueError(f"rollout_temperature: source must be 'paper' or 'scripts', got {source!r}")
    kind = "math" if "math" in model_name.lower() else "other"
    return float(value(("setting", f"rollout_temperature_{kind}")))


def compare(rows: Iterable[tuple[str, tuple | None, Any]]) -> "pd.DataFrame":
    """A "paper vs measured" table from ``(quantity, paper key or None, measured value)`` rows.

    Columns: quantity, paper (None where the paper reports no such quantity), measured, where, source, note.
    """

    out = []
    for quantity, key, measured in rows:
        r = get(key) if key is not None else None
        out.append({"quantity": quantity, "paper": r.value if r else None, "measured": measured,
                    "where": r.where if r else "", "source": r.source if r else "",
                    "note": r.note if r else "not a quantity the paper reports"})
    df = pd.DataFrame(out)
    df["paper"] = pd.Series([r["paper"] for r in out], dtype=object)
    return df


def integrity_errors() -> list[str]:
    """Problems with the table itself (used by the tests): missing sources, None or NaN values."""
    errors = []
    for k, r in PAPER.items():
        if not r.source or not r.where:
            errors.append(f"{k}: no source or location")
        if r.value is None:
            errors.append(f"{k}: value is None")
        elif isinstance(r.value, float) and math.isnan(r.value):
            errors.append(f"{k}: NaN value")
    return errors


# ---------------------------------------------------------------------------------------------------------
# Reading the LaTeX source (for the tests, and for anyone who wants to check a number)
# ---------------------------------------------------------------------------------------------------------

#: LaTeX label of each numbered table.
TABLE_LABELS = {1: "tab:adv_cmp", 2: "tab:main", 3: "tab:abla", 4: "tab:offpolicy_vs_rl", 5: "tab:qwenmath-7b",
                6: "tab:rs"}


def tex_path() -> Path:
    """Where the LaTeX file is looked for: ``$DDRL_PAPER_TEX``, else ``<repo>/../shared/paper/<file>``."""

    return Path(os.environ.get("DDRL_PAPER_TEX", REPO.parent / "shared" / "paper" / TEX_NAME))


def _clean_cell(s: str) -> str:
    s = re.sub(r"\\cellcolor\{[^}]*\}|\\color\{[^}]*\}|~?\\citep\{[^}]*\}|\\multirow\{[^}]*\}\{[^}]*\}", "", s)
    s = s.replace(r"$\uparrow$", "+").replace(r"$\downarrow$", "-").replace(r"$\Delta$", "Delta")
    s = s.replace(r"\%", "%").replace(r"\cmark", "yes").replace(r"\textbf", "")
    return re.sub(r"[{}$]", "", s).strip()


def latex_table(text: str, number: int) -> list[list[str]]:
    """The rows of the paper's Table ``number`` in the LaTeX ``text``: cells with colour, bold, citation and
    multirow commands removed (arrows become +/-); the first row is the header. A missing table is an error."""
    label = TABLE_LABELS[number]
    at = text.find(rf"\label{{{label}}}")
    if at < 0:
        raise ValueError(f"paper LaTeX: no \\label{{{label}}} (Table {number})")
    begin = text.rfind(r"\begin{tabular}", 0, at)
    end = text.find(r"\end{tabular}", begin)
    if begin < 0 or end < 0 or end > at:
        raise ValueError(f"paper LaTeX: no tabular before \\label{{{label}}} (Table {number})")
    body = text[re.compile(r"\\begin\{tabular\}\{[^}]*\}").match(text, begin).end() : end]
    body = re.sub(r"\\(toprule|midrule|bottomrule)", "", body)
    rows = []
    for raw in body.split(r"\\"):
        if raw.strip():
            rows.append([_clean_cell(c) for c in raw.split("&")])
    return rows
