"""DDRL against ETMR, the paper's stronger baseline, at lr/10 (plan Amendments 43, 44: MATH-500-like; 46, 47: AMC-like).

The paper's Table 2 sets DDRL against TTRL and ETMR (entropy-fork tree rollouts, :mod:`ddrl.etmr`); the registered
study measured ETMR at the default learning rate only. Amendment 43 runs ETMR in Amendment 28's regime
(:data:`ddrl.study.amendments.small_lr.REGIME`: MATH-500-like at lr / 10 and twice the episodes) on the registered build, beside
Amendment 28's TTRL and DDRL runs of the same seeds; Amendment 44 repeats Amendments 28 and 43 on the Xeon build
(TTRL, DDRL and ETMR at lr/10; that build's untrained runs). Each design runs seed by seed until its plan's clock
(:attr:`EtmrDesign.cutoff`) and is analysed on the complete seeds from 0: the registered claims (P1, P2, M1, M2:
MATH-500's paper numbers) and two new ones, M3 (ETMR - TTRL: "the stronger baseline") and P3 (ETMR - no
adaptation), each by the registered bootstrap, margin and rule.

    python -m ddrl.study.amendments.small_lr_etmr run --workers 2                  # Amendment 43 (the registered build's cache)
    python -m ddrl.study.amendments.small_lr_etmr regime --build xeon              # results/replication_xeon/regimes_small_lr.json
    python -m ddrl.study.amendments.small_lr_etmr run --build xeon --workers 2     # Amendment 44 (the Xeon build's cache)
    python -m ddrl.study.amendments.small_lr_etmr status [--build xeon]
    python -m ddrl.study.amendments.small_lr_etmr analyse [--build xeon]           # -> the design's analysis file
    python -m ddrl.study.amendments.small_lr_etmr figure [--build xeon]            # -> docs/results/<design's figure>.{png,pdf}

Amendment 46 runs ETMR at lr/10 in AMC-like on the Xeon build (``amc_like_small_lr``, beside Amendments 36-37's TTRL
and DDRL runs of the same seeds and the build's untrained AMC-like runs; Table 2's AMC numbers):

    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.study.amendments.small_lr_etmr run --build xeon_amc --workers 2
    python -m ddrl.study.amendments.small_lr_etmr analyse --build xeon_amc

Amendment 47 repeats it on the registered build (beside Amendment 6's registered TTRL and DDRL runs at lr/10):

    DDRL_CACHE_DIR=<the registered build's cache> python -m ddrl.study.amendments.small_lr_etmr run --build registered_amc --workers 2

(The plans name these ``python -m ddrl.study.amendments.small_lr ... --etmr``; Amendment 43's runs were started so, at commit
595a91a, before the command line moved here: the same jobs.)
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.study.claims import BENCHMARK, amendment_entry, load as load_claims, table2_difference, with_half_width
from ddrl.run.pool import clock_budget, minutes_to
from ddrl.report.plotting import save_docs_figure
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import (BASE_REGIME, COMPARISON as AMENDMENT28, LR_CELL, OUT, REGIME, REGIME_FILE, RUNS,
                           add_run_arguments, figure, regime_file, seeds_line)
from ddrl.study.analysis import claim_matrix, paired_matrix
from ddrl.study.plan import (PAIRED, RESULTS, SAME_BASE, SCALES, SMALL_LR, Job, check_weights, csv_path,
                             regimes_path)
from ddrl.study.pool import run_jobs, status_counts
from ddrl.report.tables import entry_cell
from ddrl.study.amendments.wide import (MIN_SEEDS, amendment_cells, below_cell, complete_seeds, level_table, predicted_text, read_csvs,
                       run_levels, seeds_to_analyse, vote_by_quarter, wide_entry)

#: Every claim either design decides: method a - method b, adapted pass@1 per seed and question. P1, P2, M1 and M2 are
#: the registered claims (:data:`ddrl.study.plan.PAIRED`); M3 and P3 are Amendment 43's (:data:`NEW_CLAIMS`).
PAIRS = {**{cid: PAIRED[cid][:2] for cid in ("P1", "P2", "M1", "M2")}, "M3": ("etmr", "ttrl"),
         "P3": ("etmr", "no_adaptation")}
NEW_CLAIMS = {"M3": ("ETMR is the stronger baseline: it beats TTRL", "pass@1 ETMR - TTRL [points]"),
              "P3": ("ETMR improves on no adaptation", "pass@1 ETMR - no adaptation [points]")}
COMPARISON = {**AMENDMENT28, "M2": "DDRL - ETMR", "M3": "ETMR - TTRL", "P3": "ETMR - no adaptation"}
RL_METHODS = ("ttrl", "etmr", "ddrl")
REGIME_NAME = {REGIME: "MATH-500-like", SMALL_LR: "AMC-like"}


@dataclass(frozen=True)
class EtmrDesign:
    """One build's ETMR comparisons at lr/10: the results tree (``results``: its ``runs/`` hold the CSVs, its
    ``regimes_base.json`` names the build), the seeds and the plan's clock, what ``run`` computes per seed, the claims,
    the plan's predicted half-widths (two sets of components, at ``predicted_at`` seeds), the analysis file, the figure
    and the committed entries shown beside this design's (``beside``: a name and the files they are read from)."""

    amendment: int
    results: Path
    seeds: tuple[int, ...]
    cutoff: str
    methods: tuple[str, ...]
    claims: tuple[str, ...]
    predicted: dict[str, tuple[tuple[float, ...], tuple[float, ...]]]
    predicted_at: tuple[int, ...]
    analysis: Path
    figure: str
    beside: tuple[str, tuple[Path, ...], str]  # (column name, files, the regime their entries are in)
    build: str
    regime: str = REGIME  # the lr/10 regime; its untrained runs and default-lr runs are its base's (SAME_BASE)

    @property
    def out(self) -> Path:
        return self.results / "runs"

    @property
    def base(self) -> str:
        return SAME_BASE[self.regime]

    @property
    def stands_for(self) -> str:
        """The regime whose paper numbers and signs the claims take (AMC's for AMC-like, MATH-500's for MATH-500-like)."""
        return self.base

    @property
    def name(self) -> str:
        return REGIME_NAME[self.regime]


_XEON = RESULTS / "replication_xeon"
_AMC_DEFAULT = ("AMC-like, default lr (registered)", (RESULTS / "claims.json",), "amc_like")  # the AMC designs' beside
DESIGNS = {
    "registered": EtmrDesign(
        43, RESULTS, tuple(range(18)), "2026-11-29T08:00:00+00:00", ("etmr",), ("M2", "M3", "P3"),
        {"M2": ((2.32, 2.21, 2.05), (1.84, 1.83, 1.82)), "M3": ((2.17, 2.00, 1.76), (1.84, 1.83, 1.82)),
         "P3": ((2.53, 2.46, 2.36), (1.01, 1.00, 0.99))}, (12, 14, 18), OUT / "etmr.json", "small_lr_etmr",
        ("MATH-500-like, default lr (registered)", (RESULTS / "claims.json",), BASE_REGIME), "registered build"),
    "xeon": EtmrDesign(
        44, _XEON, tuple(range(12)), "2026-11-29T08:15:00+00:00", ("ttrl", "ddrl", "etmr"),
        ("P1", "P2", "M1", "M2", "M3", "P3"),
        {"P1": ((1.03, 1.02, 1.01), (2.49, 2.37, 2.29)), "P2": ((2.54, 2.52, 2.51), (2.70, 2.64, 2.60)),
         "M1": ((1.88, 1.86, 1.84), (1.99, 1.79, 1.66)), "M2": ((1.88, 1.86, 1.84), (2.70, 2.48, 2.32)),
         "M3": ((1.88, 1.86, 1.84), (2.73, 2.40, 2.17)), "P3": ((1.03, 1.02, 1.01), (2.77, 2.63, 2.53))},
        (8, 10, 12), _XEON / "small_lr_etmr.json", "small_lr_etmr_xeon",
        ("registered build at lr/10 (Amendments 28, 43)", (OUT / "claims.json", OUT / "etmr.json"), REGIME),
        "Xeon build"),
    "xeon_amc": EtmrDesign(
        46, _XEON, tuple(range(12)), "2026-11-29T11:40:00+00:00", ("etmr",), ("M2", "M3", "P3"),
        {"M2": ((2.51, 2.40, 2.33, 2.28), (4.81, 4.16, 3.75, 3.47)),
         "M3": ((2.51, 2.40, 2.33, 2.28), (4.53, 3.84, 3.41, 3.10)),
         "P3": ((3.11, 3.07, 3.05, 3.03), (3.67, 3.46, 3.33, 3.24))}, (6, 8, 10, 12), _XEON / "small_lr_etmr_amc.json",
        "small_lr_etmr_xeon_amc", _AMC_DEFAULT, "Xeon build", SMALL_LR),
    "registered_amc": EtmrDesign(
        47, RESULTS, tuple(range(19)), "2026-12-01T15:30:00+00:00", ("etmr",), ("M2", "M3", "P3"),
        {"M2": ((2.18, 2.10, 2.05), (4.16, 3.47, 3.09)), "M3": ((2.18, 2.10, 2.05), (3.84, 3.10, 2.68)),
         "P3": ((2.80, 2.74, 2.71), (3.46, 3.24, 3.12))}, (8, 12, 16), OUT / "etmr_amc.json", "small_lr_etmr_amc",
        _AMC_DEFAULT, "registered build", SMALL_LR),
}
REGISTERED = DESIGNS["registered"]


def jobs(design: EtmrDesign = REGISTERED, seeds: Sequence[int] | None = None, now: float | None = None) -> list[Job]:
    """The design's runs seed by seed (``seeds``: default the plan's); none once its clock has passed (``now``: epoch
    seconds, default the clock), so a rerun after it never adds seeds the analysis would read."""
    if minutes_to(design.cutoff, now) <= 0:
        return []
    return [Job(design.regime, s, (m,), f"A{design.amendment} lr/10") for s in (design.seeds if seeds is None else seeds)
            for m in design.methods]


def done_seeds(design: EtmrDesign = REGISTERED, out: str | Path | None = None) -> list[int]:
    """The design's seeds to analyse: the longest run from seed 0 with TTRL's, ETMR's and DDRL's CSVs in its lr/10
    regime and the untrained one in its base (``out``: default the design's ``runs/``)."""
    out = design.out if out is None else out
    done = (set(complete_seeds(out, design.regime, RL_METHODS))
            & set(complete_seeds(out, design.base, ("no_adaptation",))))
    n = 0
    while n in done and n in design.seeds:
        n += 1
    return list(range(n))


def analyse(design: EtmrDesign = REGISTERED, out: str | Path | None = None, n_boot: int = 4000,
            now: float | None = None, min_seeds: int = MIN_SEEDS) -> dict:
    """The design's claims in its lr/10 regime over :func:`done_seeds`, once its clock has passed or every seed is
    complete (``now``: epoch seconds), at least ``min_seeds``: ``entries`` (``claims.json``'s schema with
    ``half_width``; the registered claims with the paper's numbers of the benchmark the regime stands for, M3
    and P3 with Table 2's difference, all by
    the registered bootstrap, margin and rule); descriptive, ``levels`` (each method's mean adapted pass@1 at both
    learning rates on the same seeds, seeds below ETMR's run at the same lr where there is one), ``seed_pass1``,
    ``vote`` (by quarter of the RL steps) and ``rl_minutes`` (each lr/10 method's mean RL wall time)."""
    out = design.out if out is None else Path(out)
    reg, base = design.regime, design.base
    seeds = seeds_to_analyse(design.seeds, done_seeds(design, out), f"{out}: Amendment {design.amendment}",
                             design.cutoff, now, min_seeds)
    df = read_csvs(csv_path(out, r, m, s) for s in seeds
                   for r, ms in ((base, ("no_adaptation", *RL_METHODS)), (reg, RL_METHODS)) for m in ms)
    entries = []
    for cid in design.claims:
        if cid not in NEW_CLAIMS:  # a registered claim: its registered matrix
            entries.append(wide_entry(cid, claim_matrix(df, cid, reg), n_boot, reg, design.stands_for))
            continue
        a, b = PAIRS[cid]
        d = paired_matrix(df, reg, a, b, "adapted")
        entries.append({**amendment_entry(cid, reg, *NEW_CLAIMS[cid], a, b, d.to_numpy(), n_boot=n_boot),
                        "paper": table2_difference(a, b, design.stands_for)})
    with_half_width(entries)
    per = run_levels(df)
    lv = pd.concat([level_table(per[per.regime == r], ("regime", "method"), reference="etmr", sort=False)
                    for r in (base, reg)], ignore_index=True)  # seeds below ETMR at the same lr
    rl = df[(df.regime == reg) & (df.split == "adapted")].groupby(["method", "seed"]).rl_seconds.first()
    steps = read_csvs(csv_path(out, r, m, s, steps=True) for s in seeds for r in (base, reg) for m in RL_METHODS)
    vote = pd.concat([vote_by_quarter(seeds=seeds, regime=r, steps=steps) for r in (base, reg)],
                     ignore_index=True)
    return {"regime": reg, "build": design.build, "seeds": seeds, "cutoff": design.cutoff, "entries": entries,
            "levels": lv.to_dict(orient="records"), "seed_pass1": per.to_dict(orient="records"),
            "vote": vote.to_dict(orient="records"), "rl_minutes": (rl.groupby("method").mean() / 60).round(2).to_dict()}


def beside(design: EtmrDesign) -> dict[str, dict]:
    """The committed entries shown beside the design's, by claim id (those of the design's ``beside`` files in its
    regime; a file not written yet gives none)."""
    name, files, regime = design.beside
    got = {}
    for f in files:
        if f.is_file():
            data = json.loads(f.read_text())
            listed = data["entries"] if isinstance(data, dict) else load_claims(f)
            got.update({e["id"]: e for e in listed if e["regime"] == regime})
    return got


def markdown(res: dict, design: EtmrDesign = REGISTERED, shown: dict[str, dict] | None = None) -> str:
    """The design's table as docs/results.md quotes it: per claim the paper's difference (Table 2, on the benchmark the
    regime stands for), the
    entries shown beside (``shown``, default :func:`beside`), this design's entry, its half-width beside the plan's
    predictions and its verdict; then the levels at both learning rates and each lr/10 method's RL minutes."""
    shown = beside(design) if shown is None else shown
    n, at = len(res["seeds"]), " / ".join(str(s) for s in design.predicted_at)
    rows = [f"| claim (adapted pass@1, points) | paper ({BENCHMARK[design.stands_for]}) | {design.beside[0]} | "
            f"**{design.build}, {design.name} at lr/10 (Amendment {design.amendment}, seeds 0-{n - 1})** | half-width (predicted at {at} seeds) | "
            "verdict |", "|---|---|---|---|---|---|"]
    for e in res["entries"]:
        b = shown.get(e["id"])
        other = entry_cell(b) if b else "not measured"
        pred = "; ".join(predicted_text(p) for p in design.predicted[e["id"]])
        rows.append(f"| {e['id']} {COMPARISON[e['id']]} | {e['paper']:+.1f} | {other} | {amendment_cells(e, pred)}")
    with_etmr = {r["regime"] for r in res["levels"] if r["method"] == "etmr"}
    rows += ["", f"| method | learning rate | adapted pass@1, mean over seeds 0-{n - 1} (SD) | seeds below ETMR at its lr | "
             "RL phase, mean minutes |", "|---|---|---|---|---|"]
    for r in res["levels"]:
        untrained = r["method"] == "no_adaptation"
        below = "-" if untrained or r["regime"] not in with_etmr else below_cell(r, "etmr")
        minutes = f"{res['rl_minutes'][r['method']]:.1f}" if r["regime"] == design.regime else "-"
        rows.append(f"| {r['method']} | {'-' if untrained else LR_CELL[r['regime']]} | {r['pass1']:.1f} ({r['sd']:.1f}) | "
                    f"{below} | {minutes} |")
    return "\n".join(rows) + "\n"


def etmr_figure(res: dict, design: EtmrDesign = REGISTERED):
    """:func:`ddrl.study.amendments.small_lr.figure`'s panels (descriptive; the paired intervals are the entries'): each run's adapted
    pass@1 of the untrained model and of TTRL, ETMR and DDRL at both learning rates on the same seeds, and the vote by
    quarter of the RL steps."""
    return figure(res, f"{design.name}, {design.build}: ETMR beside TTRL and DDRL (plan Amendment {design.amendment}, "
                       f"seeds 0-{len(res['seeds']) - 1}; descriptive)")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.small_lr_etmr", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("regime", "run", "status", "analyse", "figure"))
    add_run_arguments(ap, "run: seeds N-M (default: the plan's)")
    ap.add_argument("--build", choices=sorted(DESIGNS), default="registered",
                    help="registered: Amendment 43; xeon: Amendment 44; xeon_amc: Amendment 46 (AMC-like); "
                         "registered_amc: Amendment 47 (AMC-like)")
    args = ap.parse_args(argv)
    design = DESIGNS[args.build]
    out = design.out if args.out == RUNS else args.out
    if args.what == "regime":
        if design.regime != REGIME:
            ap.error(f"--build {args.build}: its regime {design.regime} is in the build's regimes file already")
        sys.stdout.write(write_json(design.results / REGIME_FILE.name, regime_file(regimes_path(design.results))))
    elif args.what == "run":  # the design's build, never a new one; no job starts after the plan's clock
        check_weights(regimes_path(design.results), scale=SCALES[args.scale])
        todo = jobs(design, args.seeds)
        status = run_jobs(todo, SCALES[args.scale], out, args.runs_root or cache_root() / "runs",
                          clock_budget(design.cutoff, args.budget_min), args.workers,
                          desc=f"Amendment {design.amendment} runs",
                          regimes=regimes_path(design.results))
        print(status_counts(status))
    elif args.what == "status":
        done = done_seeds(design, out)
        print(seeds_line(f"ETMR ({design.regime}, {design.build})", len(design.seeds),
                         [x for x in design.seeds if x not in done], design.cutoff))
    elif args.what == "figure":  # -> docs/results/<design.figure>.{png,pdf}, from the committed analysis
        print(save_docs_figure(etmr_figure(json.loads(design.analysis.read_text()), design), design.figure))
    else:
        sys.stdout.write(write_json(args.json or design.analysis, analyse(design, out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
