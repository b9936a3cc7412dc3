"""The results page's digest (docs/results.md, rendered by :mod:`ddrl.study.page`): each of the paper's claims
beside the testbed's estimates at both learning rates, gathered from every committed analysis of a pre-registered
design on the registered build of the base model.

The scorecard (``results/claims.json``) holds the registered study; the plan's later amendments wrote their own
analysis files (``results/small_lr/``, ``results/wide/``, ``results/cor_alone/``). A reader asking "does DDRL beat
TTRL?" needs them side by side: one row per claim and regime, the paper's number, the testbed at the paper's
small learning rate (lr/10) and at the default one. Nothing here is typed in: :func:`gather` reads the committed
files and :func:`table` lays them out; :mod:`ddrl.study.page` renders the page from them (``make docs``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ddrl.study.claims import FLOOR_NOTE, interval, load, replication_figure, validate
from ddrl.report.plotting import save_docs_figure
from ddrl.study.plan import RESULTS

#: The registered build's analyses, relative to ``results/``; a missing file is a design not yet analysed (its cells
#: stay empty), so the digest renders at any stage of the plan
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
#: The registered build's other analyses with verdicts, left to their own sections of the page (a test checks that
#: every committed analysis with verdicts is in :data:`SOURCES` or here): the companion's mechanism studies and arms,
#: which are no claims of the paper and reuse ids of their own
ELSEWHERE = {"drift/": "why adaptation costs held-out accuracy: policy drift (plan Amendments 21-25, 42)",
             "wide/arms.json": "TTRL and DDRL with a 100x KL penalty (plan Amendment 27), no method of the paper"}

#: The regimes that stand for the paper's benchmarks (AIME 2024, AMC, MATH-500; the paper's number is that benchmark's)
#: -> (the regime at lr/10 or None, the regimes at the default lr with the label a cell gives each)
STANDS_FOR = {"AIME-like": (None, {"aime_like": ""}),
              "AMC-like": ("amc_like_small_lr", {"amc_like": ""}),
              "MATH-500-like": ("math500_like_small_lr", {"math500_like": "", "math500_like_768": "768 questions: "})}

#: The digest's rows: (the claim in words, its id at lr/10, its id at the default lr). The paper's number is the
#: entry's own (Tables 1-4 on Qwen2.5-Math-1.5B); ours have none.
ROWS = (("TTRL improves on no adaptation", "P1", "P1"),
        ("DDRL improves on no adaptation", "P2", "P2"),
        ("ETMR improves on no adaptation", "P3", "P3"),
        ("DDRL beats TTRL", "M1", "M1"),
        ("DDRL is at least as good as ETMR", "M2", "M2"),
        ("ETMR beats TTRL", "M3", "M3"),
        ("GRPO without its std normalisation helps TTRL (Table 1)", "T1", "T1"),
        ("fixed +1/-1 advantages instead of GRPO's help TTRL (Table 1 as the paper's text describes it)", "T1f", "T1f"),
        ("BCS alone changes TTRL (paper: + on AIME/MATH, - on AMC)", "A1", "A1"),
        ("adding DAE to BCS helps", "A2", "A2"),
        ("adding COR to BCS+DAE helps", "A3", "A3"),
        ("COR beats additional RL", "C1", "C1"),
        ("COR costs a fraction of additional RL [wall time, % of the RL phase]", "C2", "C2"),
        ("refinement size barely matters (COR 4x - 1x kept rollouts)", "R1", "R1"),
        ("DDRL's gain over TTRL is larger with a stronger base model", "S1", "S1"),
        ("on AIME, DDRL's mean advantage stays negative (Fig. 4) [- mean advantage x 100]", "D1", "D1"),
        ("on MATH-500, DDRL's mean advantage rises from negative to positive (Fig. 4) [last - first quarter, x 100]",
         "D2", "D2"),
        ("(ours) COR alone (SFT on the untrained model's majority answers, no RL phase: the column is the design "
         "that measured it) improves on no adaptation", "K3", "K3"),
        ("(ours) DDRL beats COR alone", "K4", "K5"),
        ("(ours) TTRL's adaptation transfers: it gains on 1,536 fresh questions", "H1xT", "H1xT"),
        ("(ours) DDRL's adaptation transfers: it gains on 1,536 fresh questions", "H1x", "H1x"),
        ("(ours) DDRL beats TTRL on 1,536 fresh questions", "H1xD", "H1xD"),
        ("(ours) COR does not cost accuracy on 1,536 fresh questions (DDRL - BCS+DAE)", "H1xC", "H1xC"),
        ("(ours) COR 4x's extra gain holds on 1,536 fresh questions (COR 4x - COR 1x kept rollouts)", "R1x", "R1x"),
        ("(ours) COR at a tenth of its rate gains on 1,536 fresh questions (COR at 1e-6 - BCS+DAE)", "K1x", "K1x"),
        ("(ours) COR keeping 4x the rollouts at a tenth of its rate helps BCS+DAE (COR 4x at 1e-6 - BCS+DAE)", "K1g",
         "K1g"),
        ("(ours) COR keeping 4x the rollouts at a tenth of its rate gains on 1,536 fresh questions (COR 4x at 1e-6 - "
         "BCS+DAE)", "K1gx", "K1gx"),
        ("(ours) ETMR's adaptation transfers: it gains on 1,536 fresh questions", "P3x", "P3x"),
        ("(ours) DDRL is at least as good as ETMR on 1,536 fresh questions", "M2x", "M2x"))

#: The claims about a model's own samples (no learning rate): (claim, id), the testbed's base and a real LLM's
SAMPLE_ROWS = (("answers seen <= 5 of 64 times are mostly wrong [50 - their accuracy, points]", "F1"),
               ("answers seen >= 45 of 64 times are mostly right [their accuracy - 50, points]", "F2"),
               ("the middle band is less reliable than the top band [accuracy difference, points]", "F3"),
               ("GRPO gives larger positive advantages when the pseudo-label is wrong [advantage x 100]", "G1"),
               ("the middle band is the primary source of TTRL's wrong rewards [its share of them - 50, points]", "N1"),
               ("middle-band rollouts are rewarded wrongly more often [rate difference to the outer bands, points]",
                "N2"))
SAMPLE_COLUMNS = {"base": "testbed base model", "svamp_codex": "code-davinci-002 on SVAMP"}


def gather(results: str | Path = RESULTS, sources: Sequence[str] = SOURCES) -> dict[tuple[str, str], list[dict]]:
    """(claim id, regime) -> the entries of the committed analyses under ``results`` (validated, in ``sources``'
    order); files not written yet are skipped."""
    by: dict[tuple[str, str], list[dict]] = {}
    for name in sources:
        path = Path(results) / name
        if not path.is_file():
            continue
        entries = load(path) if name == "claims.json" else validate(_entries(path), str(path))
        for e in entries:
            by.setdefault((e["id"], e["regime"]), []).append(e)
    return by


def _entries(path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    return data["entries"] if isinstance(data, dict) else data


def cell(e: dict) -> str:
    """One entry as the digest prints it: estimate [95% CI], verdict (``floor`` when both methods sat at pass@1 0
    everywhere) and seeds x questions."""
    verdict = "floor" if e.get("note") == FLOOR_NOTE else e["verdict"]
    return f"{interval(e)} {verdict} ({e['n_seeds']} x {e['n_questions']})"


def _cells(by: dict, cid: str, regimes: dict[str, str]) -> list[str]:
    return [label + cell(e) for reg, label in regimes.items() for e in by.get((cid, reg), [])]


def _paper(by: dict, ids: Sequence[str], regimes: Sequence[str]) -> str:
    nums = {e["paper"] for cid in ids for r in regimes for e in by.get((cid, r), []) if e["paper"] is not None}
    return " / ".join(f"{p:+.1f}" for p in sorted(nums)) if nums else "n/a"


def _row_id(small_id: str, default_id: str) -> str:
    """A row's id as the table and the figure name it: ``M1``, or ``K4 / K5`` where the learning rates' ids differ."""
    return small_id if small_id == default_id else f"{small_id} / {default_id}"


def table(by: dict) -> list[dict]:
    """The digest's rows: per claim (:data:`ROWS`) and regime (:data:`STANDS_FOR`) with at least one entry, the
    paper's number and the testbed's cells at lr/10 and at the default lr ("-" where no design measured it)."""
    rows = []
    for claim, small_id, default_id in ROWS:
        for name, (small, default) in STANDS_FOR.items():
            at_small = _cells(by, small_id, {small: ""}) if small else []
            at_default = _cells(by, default_id, default)
            if not at_small and not at_default:
                continue
            regimes = [*([small] if small else []), *default]
            rows.append({"claim": claim, "id": _row_id(small_id, default_id),
                         "regime": name, "paper": _paper(by, (small_id, default_id), regimes),
                         "lr10": "; ".join(at_small) or "-", "default": "; ".join(at_default) or "-"})
    return rows


def markdown(results: str | Path = RESULTS) -> str:
    """The digest as one Markdown table: the claims of :data:`ROWS` at both learning rates, then the claims about a
    model's own samples (:data:`SAMPLE_ROWS`)."""
    by = gather(results)
    lines = ["| claim | id | regime | paper | testbed at lr/10 (the paper's small lr) | testbed at the default lr |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['claim']} | {r['id']} | {r['regime']} | {r['paper']} | {r['lr10']} | {r['default']} |"
              for r in table(by)]
    lines += ["", "| claim about a model's own samples | id | " + " | ".join(SAMPLE_COLUMNS.values()) + " |",
              "|---|---|" + "---|" * len(SAMPLE_COLUMNS)]
    for claim, cid in SAMPLE_ROWS:
        cells = [" ".join(cell(e) for e in by.get((cid, r), [])) or "-" for r in SAMPLE_COLUMNS]
        lines.append(f"| {claim} | {cid} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def learning_rates(by: dict) -> dict[str, list[dict]]:
    """The pass@1 comparisons measured at lr/10 (the rows of :data:`ROWS` whose unit is points), each beside the same
    claim at the default lr in the same regime (the design of the same questions: the 768-question one is left
    out), as :func:`ddrl.study.claims.replication_figure`'s studies: the default lr first, then lr/10, each entry's regime
    renamed to the regime's name (``AMC-like``) and its id to the row's. The paper's numbers are dropped: at 20-48 points they would
    squeeze the testbed's intervals, and the table beside the figure prints them."""
    studies: dict[str, list[dict]] = {"default lr": [], "lr/10": []}
    for _, small_id, default_id in ROWS:
        for name, (small, default) in STANDS_FOR.items():
            at_small = by.get((small_id, small), []) if small else []
            if not at_small or "[points]" not in at_small[0]["metric"]:
                continue
            row = _row_id(small_id, default_id)
            # one entry per learning rate: the first source's (T1f: Amendment 51's fresh seeds before 50's)
            for lr, entries in (("lr/10", at_small[:1]), ("default lr", by.get((default_id, next(iter(default))), [])[:1])):
                studies[lr] += [{**e, "id": row, "regime": name, "paper": None} for e in entries]
    return studies


def figure(results: str | Path = RESULTS):
    """The lr/10 comparisons beside the default lr's (:func:`learning_rates`) as a forest plot; returns the figure."""
    return replication_figure(learning_rates(gather(results)))


def main() -> int:
    """``python -m ddrl.study.digest``: write :func:`figure` of the committed analyses to ``docs/results/at_a_glance.*``
    and print :func:`markdown`."""
    print(save_docs_figure(figure(), "at_a_glance"))
    print(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
