"""The results page, ``docs/results.md``, rendered from the committed analyses under ``results/`` (``make docs``).

Every number on the page is read from the committed files; the prose here says what each family asks, never a
result. :func:`claims_figure` is drawn by notebook 06; after a code edit here, ``make figures``.
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ddrl.analysis import problems_from_groups, reward_signal
from ddrl.report.stats import NO_EFFECT_MARGIN
from ddrl.study import strength as ST
from ddrl.study.claims import BOUND_WORDS, FLOOR_NOTE, VERDICT_COLORS, claim_name, forest, interval, legend, validate
from ddrl.study.designs import DESIGNS, REWARD_CLAIMS, REWARD_RUNS, STAGE3_BUDGET_H, STAGE3_MDE
from ddrl.study.plan import BANDS_64, RESULTS, SAME_BASE, csv_path

PAGE = RESULTS.parent / "docs" / "results.md"
#: The page's figures and the journal, relative to the page
FIGURES = "results"
JOURNAL = "study/journal.md"
WIDTH = 118

#: The registered build's analyses with verdicts, relative to ``results/`` (a missing one leaves its cells empty)
SOURCES = ("claims.json", "wide/claims.json", "small_lr/claims.json", "small_lr/ablation.json",
           "small_lr/ablation_amc.json", "small_lr/extra_rl.json", "small_lr/extra_rl_amc.json", "small_lr/table1.json",
           "small_lr/table1_fixed_more.json", "small_lr/table1_fixed.json", "small_lr/etmr.json",
           "small_lr/etmr_amc.json", "small_lr/cor.json", "small_lr/refine_amc.json", "small_lr/refine_math500.json",
           "cor_alone/adapted.json",
           "small_lr/heldout.json", "small_lr/etmr_heldout.json", "small_lr/etmr_heldout_amc.json",
           "small_lr/refine_heldout_amc.json", "small_lr/refine_heldout_math500.json", "small_lr/ttrl_heldout_amc.json",
           "small_lr/cor_lr10_heldout_math500.json", "small_lr/cor4x_lr10_amc.json",
           "small_lr/cor4x_lr10_math500.json", "cor_alone/heldout.json",
           "small_lr/dynamics.json")
#: The registered build's other analyses with verdicts: no claims of the paper, ids of their own
ELSEWHERE = {"drift/": "why adaptation costs held-out accuracy: policy drift (plan Amendments 21-25, 42)",
             "wide/arms.json": "TTRL and DDRL with a 100x KL penalty (plan Amendment 27), no method of the paper",
             "multiplicity.json": "the confirmatory family's correction (ddrl.study.strength), shown beside each "
                                  "entry of claims.json, no entry of its own",
             "rewards/": "Stage 3's label-free rewards (plan Stage 3): their own section, 'Which reward without "
                         "labels?' (page.rewards_lines), not the paper's claims"}

#: Each benchmark's stand-in -> (its regime at lr/10 or None, {regime at the default lr: its cell's label})
STANDS_FOR = {"AIME-like": (None, {"aime_like": ""}),
              "AMC-like": ("amc_like_small_lr", {"amc_like": ""}),
              "MATH-500-like": ("math500_like_small_lr", {"math500_like": "", "math500_like_768": "768 questions: "})}

#: The page's claims: (its id at lr/10, its id at the default lr, what the page adds to its name: the metric in brackets,
#: asides in parentheses); the name is :func:`~ddrl.study.claims.claim_name`'s
_ROWS = (("P1", "P1", ""), ("P2", "P2", ""), ("P3", "P3", ""), ("M1", "M1", ""), ("M2", "M2", ""), ("M3", "M3", ""),
         ("T1", "T1", " (Table 1)"), ("T1f", "T1f", " (Table 1 as the paper's text describes it)"),
         ("A1", "A1", " (paper: + on AIME/MATH, - on AMC)"), ("A2", "A2", ""), ("A3", "A3", ""), ("C1", "C1", ""),
         ("C2", "C2", " [wall time, % of the RL phase]"), ("R1", "R1", " (COR 4x - 1x kept rollouts)"),
         ("S1", "S1", ""), ("D1", "D1", " (Fig. 4) [- mean advantage x 100]"),
         ("D2", "D2", " (Fig. 4) [last - first quarter, x 100]"),
         ("K3", "K3", " (SFT on the untrained model's majority answers, no RL phase: the column is the design that "
                      "measured it)"),
         ("K4", "K5", ""), ("H1xT", "H1xT", ""), ("H1x", "H1x", ""), ("H1xD", "H1xD", ""),
         ("H1xC", "H1xC", " (DDRL - BCS+DAE)"), ("R1x", "R1x", " (COR 4x - COR 1x kept rollouts)"),
         ("K1x", "K1x", " (COR at 1e-6 - BCS+DAE)"), ("K1g", "K1g", " (COR 4x at 1e-6 - BCS+DAE)"),
         ("K1gx", "K1gx", " (COR 4x at 1e-6 - BCS+DAE)"), ("P3x", "P3x", ""), ("M2x", "M2x", ""))
#: (the claim in words, its id at lr/10, its id at the default lr)
ROWS = tuple((claim_name(small) + aside, small, default) for small, default, aside in _ROWS)

#: The claims about a model's own samples (no learning rate): (claim, id)
SAMPLE_ROWS = tuple((claim_name(cid) + aside, cid) for cid, aside in (
    ("F1", " [50 - their accuracy, points]"), ("F2", " [their accuracy - 50, points]"),
    ("F3", " [accuracy difference, points]"), ("G1", " [advantage x 100]"),
    ("E1", " [share of correct answers among the kept negatives, random - BCS, points]"),
    ("E2", " [share of kept rollouts that are false positives, random - BCS, points]"),
    ("N1", " [its share of them - 50, points]"), ("N2", " [rate difference to the outer bands, points]")))
SAMPLE_COLUMNS = {"base": "testbed base model", "svamp_codex": "code-davinci-002 on SVAMP"}

#: What each verdict means, in the page's words (the rule registered in ``results/plan.md``)
VERDICTS = {"reproduced": "the paper's sign, the 95% interval excludes 0",
            "contradicted": "the opposite sign, the 95% interval excludes 0",
            "no effect": "the 95% interval lies inside +-1 point",
            "not resolved": "none of these"}
#: The order in which :func:`standing` groups verdicts, with each group's heading
GROUPS = (("reproduced", "Holds"), ("contradicted", "Contradicted"), ("no effect", "No effect"),
          ("not resolved", "Open (not resolved)"))

#: The replications on other builds of the base model: folder under ``results/`` -> (its label, its analyses)
BUILDS = {"replication_xeon": ("Xeon build", ("claims.json", "cor_alone.json", "small_lr_etmr.json",
                                              "small_lr_etmr_amc.json", "cor_alone_heldout.json",
                                              "etmr_heldout.json")),
          "replication_c49d": ("c49d994e build", ("claims.json", "cor_alone.json"))}
#: The claims the builds section compares
BUILD_IDS = ("P1", "P2", "P3", "M1", "M2", "M3", "K3", "K4", "K5", "H1xD", "H1x")


@dataclass(frozen=True)
class Family:
    """One section of the page: heading, ids of :data:`ROWS` (``samples``: of :data:`SAMPLE_ROWS`), what it asks (no
    numbers), its figures (file, alt text, caption) and the ids whose finding it says in a sentence written from the
    entries (:func:`said`)."""
    title: str
    ids: tuple[str, ...]
    asks: str
    figures: tuple[tuple[str, str, str], ...] = ()
    samples: bool = False
    said: tuple[str, ...] = ()


FAMILIES = (
    Family("Frequency bands: rare answers are wrong, frequent ones right", ("F1", "F2", "F3"),
           "The paper's diagnosis starts from how often a model samples an answer: answers seen rarely among 64 "
           "samples are mostly wrong, answers seen often are mostly right, and the middle band is ambiguous. "
           "Measured on the testbed's untrained model and on code-davinci-002's SVAMP samples (a real LLM).",
           (("base_bands.png", "accuracy of an answer by how often it is sampled",
             "The untrained model's answers grouped by how many of 64 samples give them: the share that is right, "
             "with 95% intervals; the red and green bands are the low and high bands of F1 and F2."),),
           samples=True),
    Family("Amplification: where TTRL's wrong rewards come from", ("G1", "N1", "N2", "E1", "E2"),
           "TTRL rewards the majority answer. When that pseudo-label is wrong, GRPO's normalisation gives the "
           "rollouts that agree with it larger positive advantages, so the error is amplified; the paper traces "
           "the wrong rewards to the middle frequency band. BCS (DDRL's selection) takes its negatives from the "
           "rarest answers; the paper's appendix says it keeps fewer false positives (E2) and fewer correct answers "
           "among its negatives (E1) than TTRL's random K.",
           (("reward_noise.png", "TTRL's wrong rewards by band",
             "Left: each band's share of TTRL's wrong rewards (N1; the dotted line is half). Right: how often a "
             "band's rollouts are rewarded wrongly (N2)."),
            ("selection_errors.png", "what BCS keeps",
             "On the untrained model's rollouts: false positives kept per question (left) and correct answers "
             "among the kept negatives (right), TTRL's random selection against BCS, by the pseudo-label's "
             "frequency.")),
           samples=True, said=("E2", "E1")),
    Family("The main table: TTRL, ETMR and DDRL against no adaptation and against each other",
           ("P1", "P2", "P3", "M1", "M2", "M3", "S1"),
           "The paper's Table 2: each method's gain over the untrained model (P1-P3) and the differences between "
           "methods (M1-M3), on the same questions and seeds. S1 asks whether DDRL's margin grows with a stronger "
           "base model.",
           (("small_lr_etmr.png", "ETMR beside TTRL and DDRL at both learning rates",
             "MATH-500-like: each seed's adapted pass@1 for TTRL, ETMR and DDRL at the default learning rate and "
             "at lr/10."),)),
    Family("Table 1: GRPO's normalisation", ("T1", "T1f"),
           "The paper's Table 1: TTRL with GRPO's advantages without the std normalisation (its caption), and "
           "with fixed +1/-1 advantages (its text), each against TTRL with GRPO's. At lr/10 both are drawn in the "
           "figure under the answer, beside the paper's number.", ()),
    Family("The ablation: which part of DDRL carries its margin", ("A1", "A2", "A3"),
           "The paper's Table 3 adds DDRL's parts to TTRL one at a time: BCS (balanced confidence-aware "
           "selection), then DAE (debiased advantage estimation), then COR (consensus off-policy refinement).",
           (("small_lr_cor.png", "each run's level on the adapted and on the fresh questions",
             "MATH-500-like at lr/10: each run's pass@1 on the questions it adapted on and on fresh questions, "
             "per method and setting of COR."),)),
    Family("COR and its cost", ("C1", "C2", "K3", "K4 / K5", "K1g"),
           "COR fine-tunes on the model's own consensus answers after the RL phase. The paper finds it beats "
           "spending the same budget on more RL (C1) at a fraction of the RL phase's time (C2). The companion "
           "adds COR alone (the same fine-tuning from the untrained model, no RL phase) and COR at a tenth of "
           "its learning rate.",
           (("cor_alone.png", "COR alone beside the adapted methods",
             "AMC-like and AIME-like: each run's level on the adapted and on the fresh questions, COR alone beside "
             "the RL methods."),)),
    Family("Refinement size", ("R1", "R1x"),
           "The paper finds that how many rollouts COR keeps barely matters (COR keeping four times as many "
           "against one). R1x asks whether the difference holds on fresh questions.",
           (("cor_trade.png", "COR's settings: adapted gain against held-out change",
             "COR's four settings (keeping one or four times the rollouts, at its rate or a tenth of it): each "
             "setting's mean gain over the RL-only weights on the adapted questions (x) against its mean change on "
             "fresh questions (y)."),)),
    Family("Dynamics: DDRL's mean advantage", ("D1", "D2"),
           "The paper's Figure 4: on AIME DDRL's mean advantage stays negative, on MATH-500 it rises from "
           "negative to positive as training proceeds.",
           (("advantage_dynamics.png", "mean advantage over training",
             "DDRL's mean advantage per training step, per regime, averaged over seeds."),)),
    Family("Transfer to fresh questions", ("H1xT", "H1x", "H1xD", "H1xC", "K1x", "K1gx", "P3x", "M2x"),
           "Test-time adaptation trains on the questions it is evaluated on. The companion asks whether what it "
           "learns transfers: each method's pass@1 on 1,536 fresh questions of the same distribution, against "
           "the untrained model and against each other. Why it costs: the further a run moves from the "
           "untrained model (its KL on fresh questions), the lower its held-out accuracy.",
           (("heldout_transfer.png", "adapted and fresh held-out questions",
             "Each method's pass@1 on the adapted questions and on the fresh ones, at the default learning "
             "rate."),
            ("lr_drift.png", "held-out pass@1 against held-out KL at both learning rates",
             "Each run's held-out pass@1 against its KL from the untrained model on fresh questions, at both "
             "learning rates (the Xeon build)."))),
)

BUILDS_ASKS = ("The same recipe trained on another kind of CPU gives another base model (another build). Two "
               "builds replicate parts of the study with their own seeds; each build's verdict is its own, never "
               "pooled with the registered one's.")


# The committed entries, per claim and regime

def gather(results: str | Path = RESULTS, sources: Sequence[str] = SOURCES,
           registered: bool = True) -> dict[tuple[str, str], list[dict]]:
    """(claim id, regime) -> the validated entries of the files ``sources`` under ``results`` that exist, in order,
    each with its ``strength``, ``registration`` and ``correction`` (:mod:`ddrl.study.strength`, from ``results``'
    committed correction); ``registered`` False (another build's): every entry exploratory."""
    by: dict[tuple[str, str], list[dict]] = {}
    rows = ST.load(results) if registered else {}
    for name in sources:
        path = Path(results) / name
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        for e in validate(data["entries"] if isinstance(data, dict) else data, str(path)):
            reg = ST.registration(e) if registered and name == ST.REGISTERED else "exploratory"
            by.setdefault((e["id"], e["regime"]), []).append(
                {**e, "strength": ST.strength(e), "registration": reg,
                 "correction": ST.correction(e, rows) if reg == "confirmatory" else "n/a"})
    return by


def _floor(e: dict) -> bool:
    return e.get("note") == FLOOR_NOTE


def verdict_words(e: dict) -> str:
    """The registered verdict and, beside it, its strength: ``reproduced, below 1 point``, ``no effect, floor``."""
    st = e.get("strength", ST.strength(e))
    return e["verdict"] + ("" if st == "-" else f", {st}")


def registration_words(e: dict) -> str:
    """``exploratory``, ``confirmatory``, or ``confirmatory, survives BH`` / ``confirmatory, does not survive BH``."""
    reg, c = e.get("registration", "exploratory"), e.get("correction", "n/a")
    return f"{reg}, {c} BH" if reg == "confirmatory" and c in ("survives", "does not survive") else reg


def cell(e: dict) -> str:
    """An entry as the tables print it: estimate [95% CI], the registered verdict with its strength, seeds x
    questions, and confirmatory or exploratory (confirmatory: whether it survives the correction)."""
    return f"{interval(e)} {verdict_words(e)} ({size_words(e)}; {registration_words(e)})"


def size_words(e: dict) -> str:
    """``10 x 128``: an entry's seeds x questions."""
    return f"{e['n_seeds']} x {e['n_questions']}"


def _at(by: dict, small_id: str, default_id: str, name: str) -> tuple[list[tuple[str, dict]], list[tuple[str, dict]]]:
    """A row's [(label, entry)] at lr/10 and at the default lr in the regimes standing for ``name``."""
    small, default = STANDS_FOR[name]
    at_small = [("", e) for e in by.get((small_id, small), [])] if small else []
    return at_small, [(label, e) for reg, label in default.items() for e in by.get((default_id, reg), [])]


def _paper(pairs: Sequence[tuple[str, dict]]) -> str:
    nums = sorted({e["paper"] for _, e in pairs if e["paper"] is not None})
    return " / ".join(f"{p:+.1f}" for p in nums) or "n/a"


def _row_id(small_id: str, default_id: str) -> str:
    """``M1``, or ``K4 / K5`` where the learning rates' ids differ."""
    return small_id if small_id == default_id else f"{small_id} / {default_id}"


def table(by: dict) -> list[dict]:
    """Per row of :data:`ROWS` and regime with an entry: the paper's number and the cells at both learning rates."""
    rows = []
    for claim, small_id, default_id in ROWS:
        for name in STANDS_FOR:
            at_small, at_default = _at(by, small_id, default_id, name)
            if at_small or at_default:
                rows.append({"claim": claim, "id": _row_id(small_id, default_id), "regime": name,
                             "paper": _paper(at_small + at_default),
                             "lr10": "; ".join(label + cell(e) for label, e in at_small) or "-",
                             "default": "; ".join(label + cell(e) for label, e in at_default) or "-"})
    return rows


def learning_rates(by: dict) -> dict[str, list[dict]]:
    """The pass@1 comparisons at lr/10 and the same at the default lr, as ``claims.replication_figure``'s studies; the
    paper's numbers (20-48 points) dropped so they do not squeeze the intervals."""
    studies: dict[str, list[dict]] = {"default lr": [], "lr/10": []}
    for _, small_id, default_id in ROWS:
        for name in STANDS_FOR:
            at_small, at_default = _at(by, small_id, default_id, name)
            if not at_small or "[points]" not in at_small[0][1]["metric"]:
                continue
            # the first source's entry; at the default lr, the unlabelled regime's
            for lr, pairs in (("lr/10", at_small[:1]), ("default lr", [p for p in at_default if not p[0]][:1])):
                studies[lr] += [{**e, "id": _row_id(small_id, default_id), "regime": name, "paper": None}
                                for _, e in pairs]
    return studies


# Text

def _wrap(text: str, prefix: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=prefix, subsequent_indent=" " * len(prefix),
                         break_on_hyphens=False, break_long_words=False)


def _md(df: pd.DataFrame) -> list[str]:
    return df.to_markdown(index=False, disable_numparse=True).splitlines()


def _plain(claim: str) -> str:
    """A claim without its asides that contain a colon."""
    return re.sub(r"\s*\([^)]*:[^)]*\)", "", claim)


def _short(claim: str) -> str:
    """A claim without its metric in brackets or its asides (``(ours)`` stays)."""
    return re.sub(r"\s+", " ", re.sub(r"\s*\[[^]]*\]|\s*\((?!ours\))[^)]*\)", "", claim)).strip()


# The answer

def _lr_entries(by: dict, small_id: str, default_id: str) -> dict[str, list[tuple[str, dict]]]:
    """A row's ``lr/10`` and ``default lr`` -> [(where, entry)]."""
    out: dict[str, list[tuple[str, dict]]] = {"lr/10": [], "default lr": []}
    for name in STANDS_FOR:
        at_small, at_default = _at(by, small_id, default_id, name)
        out["lr/10"] += [(name, e) for _, e in at_small]
        out["default lr"] += [(f"{name}, {label.rstrip(': ')}" if label else name, e) for label, e in at_default]
    return out


def _quote(where: str, e: dict) -> str:
    """``+3.0 [+0.9, +5.0] in AMC-like (reproduced; 19 seeds x 128 questions; paper +4.0; confirmatory, survives
    BH)``."""
    paper = "" if e["paper"] is None else f"; paper {e['paper']:+.1f}"
    return (f"{interval(e)} in {where} ({verdict_words(e)}; {e['n_seeds']} seeds x {e['n_questions']} questions"
            f"{paper}; {registration_words(e)})")


def _gist(entries: Sequence[tuple[str, dict]]) -> str:
    """What the entries (not at the floor) say to "does DDRL beat TTRL?", counted: ``yes``, ``in part (ahead in 1 of
    3 comparisons)``, ``no, the opposite``, ``no (behind in 2 of 3 comparisons)``, ``no difference``, ``not shown``."""
    tested = [e for _, e in entries if not _floor(e)]
    n = len(tested)
    rep, con = (sum(e["verdict"] == v for e in tested) for v in ("reproduced", "contradicted"))
    if not n:
        return "cannot be tested"
    if rep == n:
        return "yes"
    if con == n:
        return "no, the opposite"
    if rep and con:
        return f"mixed (ahead in {rep}, behind in {con} of {n} comparisons)"
    if rep:
        return f"in part (ahead in {rep} of {n} comparisons)"
    if con:
        return f"no (behind in {con} of {n} comparisons)"
    return "no difference" if all(e["verdict"] == "no effect" for e in tested) else "not shown"


#: The answer's learning rates in words
LR_WORDS = {"lr/10": "at lr/10 (the paper's small learning rate)", "default lr": "at the default learning rate"}
#: The answer's two questions: (claim id, on which questions)
ANSWER_IDS = (("M1", "the questions it adapts on"), ("H1xD", "1,536 fresh questions"))


def _says(lr: str, entries: Sequence[tuple[str, dict]]) -> str:
    """``at lr/10 (...), yes: +3.0 in AMC-like (reproduced; confirmatory, survives BH) and ...; AIME-like cannot
    tell (both methods at pass@1 0)``."""
    tested = [f"{e['estimate']:+.1f} in {w} ({verdict_words(e)}; {registration_words(e)})"
              for w, e in entries if not _floor(e)]
    floors = [w for w, e in entries if _floor(e)]
    said = f"{LR_WORDS[lr]}, {_gist(entries)}"
    if tested:
        said += ": " + (", ".join(tested[:-1]) + " and " + tested[-1] if len(tested) > 1 else tested[0])
    if floors:
        said += f"; {', '.join(floors)} cannot tell (both methods at pass@1 0)"
    return said


def answer_text(by: dict) -> str:
    """The answer to "does DDRL beat TTRL?" in one paragraph, written from the committed entries: M1 on the adapted
    questions and H1xD on fresh ones, at both learning rates. README.md's answer is this paragraph
    (``tests/test_readme.py``) and the results page opens with it."""
    parts = []
    for cid, where in ANSWER_IDS:
        said = [_says(lr, entries) for lr, entries in _lr_entries(by, cid, cid).items() if entries]
        if said:
            parts.append(f"On {where}, " + "; ".join(said) + ".")
    if not parts:
        raise ValueError("answer_text: no committed M1 or H1xD entry")
    return "Does DDRL beat TTRL? " + " ".join(parts)


def answer(by: dict, figure: bool = True) -> list[str]:
    """Does DDRL beat TTRL: :func:`answer_text`, then M1 and H1xD at each learning rate in detail, then the figure."""
    parts = []
    for cid, fresh in (("M1", ""), ("H1xD", " on 1,536 fresh questions")):
        for lr, entries in _lr_entries(by, cid, cid).items():
            if entries:
                tested = [(w, e) for w, e in entries if not _floor(e)]
                floors = [w for w, e in entries if _floor(e)]
                parts.append(f"**{LR_WORDS[lr][0].upper() + LR_WORDS[lr][1:]}{fresh}: {_gist(entries)}**. "
                             "DDRL - TTRL is " + "; ".join(_quote(w, e) for w, e in tested) + "."
                             + (f" {', '.join(floors)} cannot test it (both methods score 0 everywhere)."
                                if floors else ""))
    lines = ["## Does DDRL beat TTRL?", ""] + _wrap(f"**{answer_text(by)}**") + [""]
    lines += _wrap("Pass@1 differences in points, with a 95% interval from a hierarchical bootstrap over seeds and "
                   "questions; the paper's number is Qwen2.5-Math-1.5B's on the benchmark the regime stands for.")
    for p in parts:
        lines += [""] + _wrap(p, "- ")
    if not figure:
        return lines
    lines += ["", f"![The paper's claims at lr/10, in words, beside the paper's numbers]({FIGURES}/{FIGURE}.png)", ""]
    lines += _wrap("*Every pass@1 claim of the paper at lr/10, and DDRL against TTRL on fresh questions: the "
                   "testbed's estimate and 95% interval, coloured by its verdict; the paper's number as a hollow "
                   "diamond, or an arrow with its value where it lies beyond the testbed's range.*")
    return lines


def _marked(where: str, e: dict) -> str:
    """``AMC-like: below 1 point, exploratory``: where, with the entry's strength and registration."""
    st = e.get("strength", "-")
    return f"{where}: " + ("" if st == "-" else f"{st}, ") + registration_words(e)


def standing(by: dict, lr: str) -> dict[str, list[str]]:
    """At ``lr`` (``lr/10`` or ``default lr``): registered verdict -> ["claim (regime: strength; registration, ...)"]
    over :data:`ROWS`."""
    out: dict[str, dict[str, list[str]]] = {}
    for claim, small_id, default_id in ROWS:
        for where, e in _lr_entries(by, small_id, default_id)[lr]:
            out.setdefault(e["verdict"], {}).setdefault(_short(claim), []).append(_marked(where, e))
    return {v: [f"{c} ({'; '.join(w)})" for c, w in out[v].items()] for v, _ in GROUPS if v in out}


#: What the page's words beside a verdict mean (README.md says the same in its own paragraph)
STRENGTH_WORDS = (
    "Beside each registered verdict, never instead of it: *floor*: both methods score pass@1 0 on every question "
    "of every seed, so the regime cannot test the claim whatever the rule printed; *below 1 point*: the verdict "
    "gives a sign but the whole interval lies inside the +-1-point band, so the effect is real and small; "
    "no mark: neither. *Confirmatory*: a claim and regime of the plan's Sec. 1, registered before any run; "
    "*exploratory*: added by a later amendment, after earlier results were known (the lr/10 regimes but AMC-like's "
    "M1, the companion's own claims, the real LLM's samples, other builds). The confirmatory entries not at the "
    "floor form one family: each entry's p-value read from the same bootstrap draws as its interval, adjusted by "
    "Benjamini-Hochberg (false discovery rate 5%); *survives BH* / *does not survive BH* say whether its verdict "
    "holds after that. " + BOUND_WORDS)


def standing_lines(by: dict, rows: dict | None = None) -> list[str]:
    lines = ["## What holds, what is contradicted, what stays open", ""]
    lines += _wrap("Every claim of the at-a-glance table below, grouped by its verdict. The verdict rule was "
                   "registered before the runs (results/plan.md): "
                   + "; ".join(f"*{v}*: {w}" for v, w in VERDICTS.items())
                   + ". Claims marked (ours) are the companion's own questions, not the paper's.")
    lines += [""] + _wrap(STRENGTH_WORDS + " " + correction_sentence(rows if rows is not None else ST.load()))
    for lr, words in (("lr/10", "At lr/10, the paper's small learning rate"),
                      ("default lr", "At the default learning rate (ten times larger)")):
        lines += ["", f"**{words}:**", ""]
        for v, name in GROUPS:
            items = standing(by, lr).get(v)
            if items:
                lines += _wrap(f"**{name}**: " + "; ".join(items) + ".", "- ")
    return lines


def correction_sentence(rows: dict) -> str:
    """How many confirmatory entries there are, how many the correction tested and decided, and how many survive
    it (Holm's stricter count beside), from the committed correction."""
    if not rows:
        return "No correction is committed (`python -m ddrl.study correct` writes it)."
    s = ST.summary(rows)
    return (f"Of the {s['confirmatory']} confirmatory entries, {s['floor']} sit at the floor; of the other "
            f"{s['family']}, {s['decided']} are decided and {s['survive']} of them survive Benjamini-Hochberg "
            f"({s['survive_holm']} survive Holm's stricter family-wise correction).")


def _brief(e: dict) -> str:
    return f"{e['estimate']:+.1f} {verdict_words(e)} ({registration_words(e)})"


def glance_table(by: dict) -> pd.DataFrame:
    """One row per claim: the paper's number per regime, the testbed's estimate and verdict per regime and lr."""
    rows = []
    for claim, small_id, default_id in ROWS:
        papers, cells = [], {}
        for name, (small, _) in STANDS_FOR.items():
            at_small, at_default = _at(by, small_id, default_id, name)
            papers.append(_paper(at_small + at_default))
            if small:
                cells[f"{name} lr/10"] = "; ".join(_brief(e) for _, e in at_small) or "-"
            cells[f"{name} default lr"] = "; ".join(_brief(e) for _, e in at_default) or "-"
        rows.append({"claim": _short(claim),
                     "paper (AIME / AMC / MATH-500)": " / ".join(papers) if set(papers) != {"n/a"} else "n/a", **cells})
    return pd.DataFrame(rows)


def glance(by: dict) -> list[str]:
    lines = ["## At a glance", ""]
    lines += _wrap("One row per claim: the testbed's estimate and verdict per regime, at lr/10 and at the default "
                   "learning rate (in MATH-500-like at the default lr the second entry is the 768-question "
                   "design, in Table 1's fixed advantages the second seeds' design). *floor*: both methods score 0 "
                   "everywhere; \"-\": no design measured it. The paper's numbers are Qwen2.5-Math-1.5B's (Tables "
                   "1-4). The testbed's effects are smaller than the paper's almost everywhere, so read the sign and "
                   "the verdict, not the size; each family's section below gives the intervals and sizes.")
    lines += [""] + _md(glance_table(by))
    lines += ["", f"![The testbed's comparisons at both learning rates]({FIGURES}/at_a_glance.png)", ""]
    lines += _wrap("*The comparisons measured at lr/10 beside the same comparison at the default learning rate on "
                   "the same questions: 95% intervals, the +-1 no-effect band in grey; the paper's numbers are in "
                   "the table, not drawn.*")
    return lines


# The answer's figure: the paper's claims at lr/10 in words

#: The claims the figure shows at lr/10
FIGURE_IDS = ("P1", "P2", "P3", "M1", "M2", "M3", "T1", "A1", "A2", "A3", "C1", "R1", "H1xD")
FIGURE = "claims_in_words"


def figure_rows(by: dict) -> list[dict]:
    """Per claim of :data:`FIGURE_IDS` and regime at lr/10: claim, regime, estimate, interval, verdict, paper."""
    rows = []
    for claim, small_id, default_id in ROWS:
        if small_id not in FIGURE_IDS:
            continue
        for name in STANDS_FOR:
            for _, e in _at(by, small_id, default_id, name)[0][:1]:
                rows.append({"claim": _short(claim), "regime": name, "estimate": e["estimate"],
                             "ci_low": e["ci_low"], "ci_high": e["ci_high"], "verdict": e["verdict"],
                             "paper": e["paper"]})
    return rows


def claims_figure(rows: Sequence[dict]):
    """:func:`~ddrl.study.claims.forest` of :func:`figure_rows` by verdict; the paper's number past the testbed's range
    an arrow with its value."""
    if not rows:
        raise ValueError("claims_figure: no rows (figure_rows found no lr/10 entry of FIGURE_IDS)")
    df = pd.DataFrame(rows)
    df = df.assign(y=np.arange(len(df))[::-1], color=df.verdict.map(VERDICT_COLORS).fillna("grey"))
    right = df.ci_high.max() + 5.0  # room for the paper's numbers
    fig, ax = plt.subplots(figsize=(9.0, 0.32 * len(rows) + 1.4))
    forest(ax, df, right=right)
    ax.set_xlim(min(df.ci_low.min() - 1.0, -NO_EFFECT_MARGIN - 0.5), right)
    ax.set_yticks(df.y, [f"{r['claim']} ({r['regime']})" for r in rows], fontsize=8)
    ax.set_xlabel("pass@1 difference at lr/10, points (95% interval; grey: the +-1 no-effect band)")
    legend(ax, VERDICT_COLORS, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout()
    return fig


# The claim families

def family_table(by: dict, fam: Family) -> pd.DataFrame:
    """A family's rows of :func:`table` (sample claims: one row per claim, a column per :data:`SAMPLE_COLUMNS`)."""
    if fam.samples:
        rows = [{"claim": claim, **{label: " ".join(cell(e) for e in by.get((cid, reg), [])) or "-"
                                    for reg, label in SAMPLE_COLUMNS.items()}}
                for claim, cid in SAMPLE_ROWS if cid in fam.ids]
        return pd.DataFrame(rows)
    rows = [{**r, "claim": _plain(r["claim"])} for r in table(by) if r["id"] in fam.ids]
    if not rows:
        raise ValueError(f"the family {fam.title!r}: no committed entry of {fam.ids} under {RESULTS}")
    return (pd.DataFrame(rows).drop(columns="id")
            .rename(columns={"lr10": "testbed at lr/10", "default": "testbed at the default lr"}))


#: What a sentence of :func:`said` writes for each verdict
SAID = {"reproduced": "it holds", "contradicted": "the opposite holds", "no effect": "no difference is shown",
        "not resolved": "not resolved"}


#: Where :func:`said` says a sample claim was measured
SAID_WHERE = {"base": "the testbed's base model", "svamp_codex": "code-davinci-002's SVAMP rollouts"}


def said(by: dict, cid: str) -> str:
    """A sample claim's finding in a sentence written from its entries, regime by regime: ``BCS keeps fewer false
    positives than TTRL's random K (E2): on the testbed base model the opposite holds (-3.8 [-4.5, -3.0],
    contradicted); ...``."""
    parts = [f"on {SAID_WHERE[reg]} {SAID[e['verdict']]} ({interval(e)}, {verdict_words(e)})"
             for reg in SAMPLE_COLUMNS for e in by.get((cid, reg), [])]
    if not parts:
        raise ValueError(f"said: no committed entry of {cid}")
    return f"{claim_name(cid)} ({cid}): " + "; ".join(parts) + "."


def family_lines(by: dict, fam: Family) -> list[str]:
    asks = " ".join([fam.asks, *(said(by, cid) for cid in fam.said if any(k[0] == cid for k in by))])
    lines = [f"## {fam.title}", ""] + _wrap(asks) + [""] + _md(family_table(by, fam))
    for png, alt, caption in fam.figures:
        lines += ["", f"![{alt}]({FIGURES}/{png})", ""] + _wrap(f"*{caption}*")
    return lines


def builds_table(results: Path, registered: dict) -> pd.DataFrame:
    """The registered build beside each of :data:`BUILDS`, per claim of :data:`BUILD_IDS` and regime measured."""
    builds = {label: gather(results / folder, sources, registered=False) for folder, (label, sources) in BUILDS.items()
              if (results / folder).is_dir()}
    names = {small: f"{name} at lr/10" for name, (small, _) in STANDS_FOR.items() if small}
    names.update({reg: f"{name} at the default lr" for name, (_, d) in STANDS_FOR.items() for reg in d if not d[reg]})
    words = {i: _short(claim) for claim, *ids in ROWS for i in ids}
    rows = []
    for cid in BUILD_IDS:
        for reg, where in names.items():
            cells = {label: "; ".join(cell(e) for e in b.get((cid, reg), [])) for label, b in builds.items()}
            if any(cells.values()):
                reg_cell = "; ".join(cell(e) for e in registered.get((cid, reg), [])) or "-"
                rows.append({"claim": words.get(cid, cid), "regime": where, "registered build": reg_cell,
                             **{k: v or "-" for k, v in cells.items()}})
    return pd.DataFrame(rows)


def builds_lines(results: Path, by: dict) -> list[str]:
    lines = ["## Builds: the same recipe on other machines", ""] + _wrap(BUILDS_ASKS)
    lines += ["", *_md(builds_table(results, by))]
    for folder, (label, _) in BUILDS.items():
        png = f"replication_{folder.removeprefix('replication_')}_vs_registered.png"
        lines += ["", f"![the registered build beside the {label}]({FIGURES}/{png})"]
    lines += [""] + _wrap("*Each claim's estimate and 95% interval on the registered build beside the replication's, "
                          "descriptively.*")
    return lines


# The page

INTRO = ("For every claim of the paper, the testbed's estimate, a 95% interval and a verdict decided by a rule "
         "registered before the runs. The testbed is a small model trained from scratch on step-by-step arithmetic "
         "and adapted to questions under a shift; three regimes stand for the paper's benchmarks (AIME-like, "
         "AMC-like, MATH-500-like), each at the default learning rate and at one ten times smaller (lr/10, the "
         "paper's small-learning-rate regime). Every comparison is paired: the methods adapt on the same questions "
         "with the same seeds.")


# --- Stage 3: which reward without labels (notebook 07 reads these too) ---

REGIME_WORDS = {"aime_like": "AIME-like", "amc_like": "AMC-like", "math500_like": "MATH-500-like"}


def regime_words(regime: str) -> str:
    """``math500_like_small_lr`` -> ``MATH-500-like, lr/10``."""
    base = SAME_BASE.get(regime, regime)
    return REGIME_WORDS.get(base, base) + (", lr/10" if base != regime else "")


def reward_signal_sentences(sig: pd.DataFrame, band: str, reference: str = "vote", of: int = 64) -> list[str]:
    """What :func:`ddrl.analysis.reward_signal`'s table says of ``band``, in words that follow its numbers: the
    ``reference`` reward's (the vote's) share of wrong rollouts favoured and of positive advantage landing on them, then
    which rewards put less, more, or within a point as much of their positive advantage on those wrong rollouts
    (``of``: the rollouts per question the bands count)."""
    rows = sig[sig["band"] == band].set_index("reward")
    ref = rows.loc[reference]
    out = [f"In the middle band (answers seen {band} times of {of}), the {reference} favours "
           f"{100 * ref.fp_rate:.0f}% of the wrong rollouts, and {100 * ref.pos_adv_wrong:.0f}% of all the positive "
           "advantage it gives lands on them."]
    groups: dict[str, list[str]] = {"less": [], "more": [], "same": [], "none": []}
    for name, r in rows.drop(index=reference).iterrows():
        if np.isnan(r.pos_adv_wrong):
            groups["none"].append(name)
            continue
        d = 100 * (r.pos_adv_wrong - ref.pos_adv_wrong)
        groups["same" if abs(d) < 1 else "less" if d < 0 else "more"].append(f"the {name} ({100 * r.pos_adv_wrong:.0f}%)")

    def some(xs: list[str]) -> str:
        return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]

    parts = [f"lower under {some(groups['less'])}" if groups["less"] else "",
             f"higher under {some(groups['more'])}" if groups["more"] else "",
             f"within a point under {some(groups['same'])}" if groups["same"] else ""]
    parts = [p for p in parts if p]
    if parts:
        out.append(f"Against the {reference}'s {100 * ref.pos_adv_wrong:.0f}%, that share is " + ", and ".join(parts) + ".")
    if groups["none"]:
        out.append(f"The {', '.join(groups['none'])} gives no positive advantage at all here.")
    return out


#: The time columns of a run's CSV (each run's one value, repeated on its rows): what a stage's budget counts.
TIME_COLUMNS = ("eval_seconds", "rl_seconds", "cor_seconds")


def run_hours(path: Path) -> float:
    """A committed run's worker-hours: the sum of its CSV's :data:`TIME_COLUMNS` (one run, one worker)."""
    first = pd.read_csv(path, nrows=1, usecols=list(TIME_COLUMNS))
    return float(first.iloc[0].sum()) / 3600


def stage_status(designs: Sequence, runs: Path = RESULTS / "runs") -> pd.DataFrame:
    """Per design of a registered stage: its regime, the runs it needs (its evaluated methods x seeds), how many of
    them are committed, the worker-hours those took (:func:`run_hours`), and whether its analysis is committed."""
    rows = []
    for d in designs:
        have = [p for m in d.evaluates for s in d.seeds if (p := csv_path(runs, d.regime, m, s)).is_file()]
        rows.append({"design": d.id, "regime": regime_words(d.regime), "runs needed": len(d.evaluates) * len(d.seeds),
                     "runs committed": len(have), "worker-hours": round(sum(map(run_hours, have)), 2),
                     "analysed": d.analysis.is_file()})
    return pd.DataFrame(rows)


#: What the marks beside a Stage 3 verdict mean
STAGE3_WORDS = ("Every entry of the stage is *confirmatory* (registered before its runs); the 39 form one family, "
                "each p-value read from the same bootstrap draws as its interval, adjusted by Holm's step-down method; "
                "*survives Holm* / *does not survive Holm* say whether a decided verdict holds after it. A *not "
                "resolved* entry carries its registered minimum detectable effect (MDE, 80% power at 10 seeds): a "
                "smaller true difference was expected to come out not resolved.")

REWARDS_ASKS = ("When there are no labels, what should the reward be? The registered Stage 3 (results/plan.md) "
                "trains TTRL with four label-free rewards (a random coin, the gated vote of SRT, the soft vote of EMPO, "
                "minus the token entropy of RENT) and pairs each with the committed TTRL, DDRL and untrained runs. "
                "Notebook 07 teaches it.")


def stage3_designs() -> list:
    """Stage 3's designs, in the plan's regime order."""
    return [d for d in DESIGNS.values() if d.amendment == "Stage 3"]


def stage3_analyses(results: Path = RESULTS) -> dict[str, dict]:
    """Stage 3's committed analyses under ``results`` (``rewards/<design>.json``), design id -> analysis."""
    out = {}
    for d in stage3_designs():
        path = Path(results) / d.analysis.relative_to(RESULTS)
        if path.is_file():
            out[d.id] = json.loads(path.read_text())
    return out


def mde(e: dict) -> float:
    """The registered minimum detectable effect of a Stage 3 entry (plan Stage 3 item 3), in points."""
    return STAGE3_MDE[e["regime"]][e["id"].startswith("L3")]


def reward_cell(e: dict, rows: dict) -> str:
    """A Stage 3 entry as :func:`cell` prints an entry, Holm's correction for its registration: ``+3.7 [+1.5, +6.0]
    reproduced (10 x 128; confirmatory, survives Holm)``; a *not resolved* one with its registered MDE."""
    also = f"; MDE {mde(e):.2f}" if e["verdict"] == "not resolved" else ""
    return f"{interval(e)} {verdict_words(e)} ({size_words(e)}; {ST.stage_registration(e, rows)}{also})"


def reward_table(analyses: dict[str, dict], rows: dict) -> pd.DataFrame:
    """One row per Stage 3 entry (its claim), one column per analysed regime: :func:`reward_cell`."""
    cols = {regime_words(a["regime"]): {e["id"]: reward_cell(e, rows) for e in a["entries"]} for a in analyses.values()}
    return pd.DataFrame([{"entry": f"{cid} {REWARD_CLAIMS[cid][3]}", **{c: v.get(cid, "-") for c, v in cols.items()}}
                         for cid in REWARD_CLAIMS])


#: A Stage 3 entry's other arm, by the letters of its id
ARMS = {"L1": "TTRL", "L2": "DDRL", "L3": "no adaptation"}


def _reward(e: dict) -> str:
    """``soft vote``: an entry's reward in lower case, without its paper."""
    return REWARD_CLAIMS[e["id"]][2].split(" - ")[0].split(" (")[0].lower()


def _which(es: Sequence[dict]) -> str:
    """``AMC-like: soft vote vs DDRL (+3.1); MATH-500-like, lr/10: ...``: the entries named, regime by regime."""
    by: dict[str, list[str]] = {}
    for e in es:
        said = f"{_reward(e)} vs {ARMS[e['id'][:2]]} ({e['estimate']:+.1f})"
        by.setdefault(regime_words(e["regime"]), []).append(said)
    return "; ".join(f"{g}: {', '.join(xs)}" for g, xs in by.items())


def reward_answer(analyses: dict[str, dict], rows: dict) -> list[str]:
    """Stage 3's answer in sentences written from its entries: L0 regime by regime, then the rewards against the
    vote's methods (L1, L2) and against no adaptation (L3), counted by verdict with the decided ones named, then
    Holm's count (where every regime is analysed)."""
    entries = [e for a in analyses.values() for e in a["entries"]]
    l0 = [f"{SAID[e['verdict']]} in {regime_words(e['regime'])} ({interval(e)}"
          + (f", MDE {mde(e):.2f}" if e["verdict"] == "not resolved" else "") + ")"
          for e in entries if e["id"] == "L0"]
    out = [f"Does TTRL's gain need the vote? TTRL beats a random reward (L0): {'; '.join(l0)}."]
    for ids, against, other in ((("L1", "L2"), "TTRL (L1) or DDRL (L2)", "the vote's method"),
                                (("L3",), "no adaptation (L3)", "no adaptation")):
        es = [e for e in entries if e["id"][:2] in ids]
        n = {v: [e for e in es if e["verdict"] == v] for v in VERDICTS}
        mdes = sorted({mde(e) for e in n["not resolved"]})
        span = "" if not mdes else f"{mdes[0]:.2f}" + (f"-{mdes[-1]:.2f}" if len(mdes) > 1 else "")

        def named(v: str) -> str:
            return f" ({_which(n[v])})" if n[v] else ""

        def count(v: str, one: str, many: str) -> str:  # "1 shows", "2 show"
            return f"{len(n[v])} {one if len(n[v]) == 1 else many}"

        parts = [f"{count('reproduced', 'favours', 'favour')} the reward{named('reproduced')}",
                 f"{count('contradicted', 'favours', 'favour')} {other}{named('contradicted')}",
                 f"{count('no effect', 'shows', 'show')} no effect (inside +-1 point)",
                 count("not resolved", "is", "are") + " not resolved" + (f" (registered MDE {span} points)" if mdes else "")]
        out.append(f"Each reward against {against}, {len(es)} entries: " + "; ".join(parts) + ".")
    if rows:
        decided = [r for r in rows.values() if r["survives"] is not None]
        out.append(f"Holm's correction over the stage's {len(rows)} entries: {sum(r['survives'] for r in decided)} of "
                   f"the {len(decided)} decided verdicts survive it.")
    else:
        out.append("Holm's correction over the stage's 39 entries waits for all three regimes' analyses.")
    return out


def rewards_lines(results: Path) -> list[str]:
    """Stage 3's section, answer first: its verdicts where analysed, else how far its runs are; then what the untrained
    model's committed rollouts say of each reward in the middle band (no training: how each reward would mislead)."""
    stage = stage3_designs()
    status = stage_status(stage, results / "runs")
    analyses = stage3_analyses(results)
    runs, need = int(status["runs committed"].sum()), int(status["runs needed"].sum())
    hours = f"{status['worker-hours'].sum():.1f} of its {STAGE3_BUDGET_H} worker-hours spent"
    table: list[str] = []
    if analyses:
        rows = ST.stage_correction(analyses.values()) if len(analyses) == len(stage) else {}
        first, *rest = reward_answer(analyses, rows)
        head = (f"**{first}** {' '.join(rest)} ({len(analyses)} of {len(stage)} regimes analysed; {runs} of the {need} "
                f"runs, {hours}.)")
        table = [""] + _md(reward_table(analyses, rows)) + [""] + _wrap(
            "A reward's entry is pass@1 of its method minus the other arm's, in points: *reproduced* says the "
            "reward is better, *contradicted* that the other arm is. " + STAGE3_WORDS)
    else:
        head = (f"**Not decided yet: {runs} of the {need} registered runs ({len(REWARD_RUNS)} rewards x 10 seeds x "
                f"{len(stage)} regimes) are committed ({hours}), and no verdict exists.**")
    groups = pd.concat(pd.read_csv(p) for p in sorted((results / "runs" / "base" / "amc_like").glob("seed*-groups.csv")))
    problems = [p for _, g in groups.groupby("seed") for p in problems_from_groups(g)]
    sig = reward_signal(problems, ["vote", "random", "gated_vote", "soft_vote"], 32, BANDS_64)
    sig["reward"] = sig["reward"].str.replace("_", " ")
    said = " ".join(reward_signal_sentences(sig, "6-44"))
    return (["## Which reward without labels?", ""] + _wrap(head) + table + [""] + _wrap(REWARDS_ASKS) + [""]
            + _wrap(f"Before any run, on the AMC-like untrained model's committed rollouts: {said} (TTRL's random K = 32, "
                    "GRPO advantages; a graded reward favours what is above its question's mean.)"))


def render(results: str | Path = RESULTS) -> str:
    """The whole page from the committed analyses under ``results``."""
    results = Path(results)
    by = gather(results)
    if not by:
        raise ValueError(f"{results}: no committed analysis (results/claims.json and the amendments' files); "
                         "nothing to render")
    lines = ["# Results: the paper's claims on the testbed", "",
             "<!-- Written by `make docs` (python -m ddrl.study render-page) from the committed analyses under "
             "results/; do not edit by hand. -->", ""]
    lines += _wrap(INTRO) + [""] + answer(by) + [""] + rewards_lines(results) + [""]
    lines += _wrap(f"How this was decided, run by run, and every plan amendment: [the study's journal]({JOURNAL}); "
                   "the registered plan and its amendments: [results/plan.md](../results/plan.md).")
    lines += [""] + standing_lines(by, ST.load(results)) + [""] + glance(by)
    for fam in FAMILIES:
        lines += [""] + family_lines(by, fam)
    lines += [""] + builds_lines(results, by)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study render-page", description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="the committed analyses (default results/)")
    ap.add_argument("--out", type=Path, default=PAGE, help="the page (default docs/results.md)")
    args = ap.parse_args(argv)
    text = render(args.results)
    args.out.write_text(text)
    print(f"ddrl.study: the results page ({text.count(chr(10))} lines) -> {args.out}")
    return 0
