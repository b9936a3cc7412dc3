"""ETMR, TTRL and DDRL at lr/10 on fresh questions (plan Amendment 45: MATH-500-like, two builds; 46: AMC-like).

Amendments 43 and 44 set ETMR (the paper's stronger baseline) beside TTRL and DDRL at lr/10 in MATH-500-like on the
adapted questions; held-out transfer at lr/10 had been measured for TTRL and DDRL on the registered build only
(Amendments 31 and 33). Amendment 45 evaluates the finished lr/10 runs on H1x's 1,536 fresh MATH-500-like questions by
the study's H1x job (:func:`ddrl.study.jobs.run_heldout_x_job`: 16 samples each, nothing trained): on the registered build
ETMR's runs (the other evaluations are Amendment 31's), on the Xeon build every run of Amendment 44 and the untrained
model. Claims (:data:`CLAIMS`), held-out pass@1 a - b per seed and fresh question, sign +1, margin 1 point, Sec. 4's
bootstrap and rule: P3x ETMR - no adaptation, M2x DDRL - ETMR, M3x ETMR - TTRL; on the Xeon build the registered H1x
family too (:data:`ddrl.study.plan.HELDOUT_CLAIMS`), first measured there.

    DDRL_CACHE_DIR=<the registered build's cache> python -m ddrl.study.amendments.etmr_heldout run --workers 2
    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.study.amendments.etmr_heldout run --build xeon --workers 2
    python -m ddrl.study.amendments.etmr_heldout status [--build xeon]
    python -m ddrl.study.amendments.etmr_heldout analyse [--build xeon]      # -> the design's analysis file

Amendment 46 evaluates its ETMR runs in AMC-like at lr/10 (Xeon build, :mod:`ddrl.study.amendments.small_lr_etmr`'s ``xeon_amc``) the
same way, beside Amendment 38's evaluations of that build's lr/10 TTRL and DDRL runs: P3x, M2x, M3x on H1x's 1,536
fresh AMC-like questions, on the seeds its runs completed before their clock (``--build xeon_amc``). It was never run:
the runs' weights were lost with that machine's cache (:attr:`HeldoutDesign.not_run`). Amendment 48 evaluates
Amendment 47's ETMR runs (AMC-like, registered build) and the untrained model the same way (``--build registered_amc``):
P3x only, the registered build's TTRL and DDRL runs at lr/10 in AMC-like having no kept weights.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from ddrl.study.claims import amendment_entry, validate, with_half_width
from ddrl.study.amendments.cor_alone import HELDOUT_LR10
from ddrl.run.pool import minutes_to
from ddrl.run.storage import cache_root, write_json
from ddrl.study.amendments.small_lr import OUT, REGIME, RUNS, add_run_arguments, seeds_line
from ddrl.study.amendments.small_lr_etmr import DESIGNS as ETMR_DESIGNS, REGIME_NAME, done_seeds
from ddrl.study.analysis import claim_matrix, paired_matrix
from ddrl.study.plan import (HELDOUT_X, PAIRED, RESULTS, SAME_BASE, SCALES, SMALL_LR, Job, check_weights, heldout_x_path,
                             regimes_path, HELDOUT_CLAIMS, untrained)
from ddrl.study.pool import run_jobs, status_counts
from ddrl.study.amendments.wide import (MIN_SEEDS, claim_row, held_level_rows, level_table, missing_seeds, reproduced_counts,
                       run_levels, wide_entry)

#: id -> (a, b, comparison): held-out pass@1 a - b on the same seed and fresh question, sign +1, margin 1 point
CLAIMS = {"P3x": ("etmr", "no_adaptation", "ETMR at lr/10 - no adaptation, held-out"),
          "M2x": ("ddrl", "etmr", "DDRL - ETMR at lr/10, held-out"),
          "M3x": ("etmr", "ttrl", "ETMR - TTRL at lr/10, held-out")}
MARGIN = 1.0
#: The runs a design evaluates or reads, in the tables' order (bcs_dae: the DDRL runs' RL-only weights)
ORDER = ("no_adaptation", "ttrl", "bcs_dae", "etmr", "ddrl")
TRAINED = ("ttrl", "etmr", "ddrl")  # the runs whose weights the evaluations load; none may be trained anew


@dataclass(frozen=True)
class HeldoutDesign:
    """One build's evaluations: its results tree (``results``: ``runs/`` holds the CSVs, its regimes file names the
    build), the seeds (its lr/10 runs' complete seeds), what ``run`` evaluates (the other runs' held-out CSVs exist),
    the claims, the plan's predicted half-widths (as the table prints them) and the analysis file."""

    results: Path
    seeds: tuple[int, ...]
    evaluates: tuple[str, ...]
    claims: tuple[str, ...]
    predicted: dict[str, str]
    analysis: Path
    build: str
    regime: str = REGIME
    runs_of: str | None = None  # a ddrl.study.amendments.small_lr_etmr design: evaluate (and analyse) only its complete seeds
    amendment: int = 45
    not_run: str = ""  # why the plan's evaluations were never made (status and the notebook say it)

    @property
    def out(self) -> Path:
        return self.results / "runs"

    def complete(self, out: str | Path | None = None) -> list[int]:
        """The seeds the design evaluates and analyses: its own, or those of ``runs_of``'s analysis (the complete
        seeds from 0 that its runs reached, their CSVs under ``out``, default the design's ``runs/``)."""
        if self.runs_of is None:
            return list(self.seeds)
        return [s for s in done_seeds(ETMR_DESIGNS[self.runs_of], out) if s in self.seeds]


_XEON = RESULTS / "replication_xeon"
#: The plan's predicted half-widths (``ddrl.report.stats.predicted_half_width`` at the design's seeds x 1,536): from the
#: registered build's lr/10 MATH-500-like held-out matrices (Amendment 31; H1xT's for P3x, H1xD's for M2x, H1xR's for
#: M3x), on the Xeon build beside those of its lr/10 AMC-like held-out matrices (Amendment 38); the AMC-like designs from
#: the latter (Amendment 48's beside the registered build's default-lr AMC-like ones)
DESIGNS = {
    "registered": HeldoutDesign(RESULTS, tuple(range(18)), ("etmr",), tuple(CLAIMS),
                                {"P3x": "0.36", "M2x": "0.71", "M3x": "0.16"}, OUT / "etmr_heldout.json",
                                "registered build"),
    "xeon": HeldoutDesign(_XEON, tuple(range(10)), ORDER, (*HELDOUT_CLAIMS, *CLAIMS),
                          {"H1x": "0.97 / 1.12", "H1xT": "0.38 / 0.73", "H1xD": "0.72 / 0.64", "H1xC": "0.69 / 0.49",
                           "H1xR": "0.17 / 0.32", "P3x": "0.38 / 0.73", "M2x": "0.72 / 0.64", "M3x": "0.17 / 0.32"},
                          _XEON / "etmr_heldout.json", "Xeon build"),
    "xeon_amc": HeldoutDesign(_XEON, tuple(range(12)), ("etmr",), tuple(CLAIMS),
                              {"P3x": "0.73", "M2x": "0.63", "M3x": "0.31"}, _XEON / "etmr_heldout_amc.json",
                              "Xeon build", SMALL_LR, "xeon_amc", 46,
                              "not run: its ETMR runs' weights were lost with the Xeon machine's cache (plan note of "
                              "2026-12-01)"),
    "registered_amc": HeldoutDesign(RESULTS, tuple(range(12)), ("no_adaptation", "etmr"), ("P3x",),
                                    {"P3x": "0.73 / 1.47"}, OUT / "etmr_heldout_amc.json", "registered build",
                                    SMALL_LR, "registered_amc", 48),
}
REGISTERED = DESIGNS["registered"]


def pair(cid: str) -> tuple[str, str]:
    """The two runs claim ``cid`` compares (a, b): a new claim's, or a registered one's (:data:`PAIRED`)."""
    return CLAIMS[cid][:2] if cid in CLAIMS else PAIRED[cid][:2]


def comparison(cid: str) -> str:
    """Claim ``cid``'s comparison as the table names it (the H1x family's: Amendment 38's lr/10 texts)."""
    return CLAIMS[cid][2] if cid in CLAIMS else HELDOUT_LR10[(cid, SMALL_LR)][2]


def reads(design: HeldoutDesign) -> list[str]:
    """The runs the design's claims read, in :data:`ORDER`."""
    used = {m for cid in design.claims for m in pair(cid)}
    return [m for m in ORDER if m in used]


def jobs(design: HeldoutDesign = REGISTERED, seeds: Sequence[int] | None = None) -> list[Job]:
    """One study H1x job per seed (default :meth:`HeldoutDesign.complete`) in the design's regime, evaluating its
    ``evaluates``."""
    return [Job(design.regime, s, design.evaluates, "H1x") for s in (design.complete() if seeds is None else seeds)]


def missing(design: HeldoutDesign = REGISTERED, out: str | Path | None = None,
            seeds: Sequence[int] | None = None) -> list[int]:
    """The design's seeds (default :meth:`HeldoutDesign.complete`'s) without every held-out CSV its claims read
    (:func:`reads`)."""
    out = design.out if out is None else out
    return missing_seeds(Path(out) / HELDOUT_X, design.regime, reads(design),
                         design.complete(out) if seeds is None else seeds)


def analyse(design: HeldoutDesign = REGISTERED, out: str | Path | None = None, n_boot: int = 4000,
            now: float | None = None, min_seeds: int = MIN_SEEDS, seeds: Sequence[int] | None = None) -> dict:
    """The design's claims on its seeds (:meth:`HeldoutDesign.complete`; ``seeds``: a test's) once every seed's
    evaluations are written (the plan reads no estimate before): ``entries``
    (``claims.json``'s schema with ``half_width``; the H1x family by its registered matrices, sign and rule, with
    MATH-500's stand-in role as in Amendment 31; P3x, M2x, M3x as new claims); descriptive, each run's mean held-out
    pass@1 over the seeds (``levels``, with the seeds below the untrained run; each run's in ``seed_pass1``) and how
    many of the loaded runs' adapted rows equal their committed CSV (``registered_reproduced`` of
    ``registered_checked``)."""
    out = design.out if out is None else Path(out)
    reg, seeds = design.regime, list(design.complete(out) if seeds is None else seeds)
    runs = ETMR_DESIGNS.get(design.runs_of)
    early = runs is not None and len(seeds) < len(runs.seeds) and minutes_to(runs.cutoff, now) > 0
    if runs is not None and (early or len(seeds) < min_seeds):
        raise ValueError(f"Amendment {design.amendment}: {len(seeds)} complete seeds of its runs before their clock "
                         f"({runs.cutoff}), at least {min_seeds} after it; the plan reads no estimate before")
    miss = missing(design, out, seeds)
    if miss or len(seeds) < 2:
        raise ValueError(f"{out}: Amendment {design.amendment} ({design.build}) incomplete, seeds {miss} lack a "
                         f"held-out evaluation of {reads(design)} (of {seeds}); the plan reads no estimate before every "
                         "seed is complete")
    df = pd.concat([pd.read_csv(heldout_x_path(out, reg, m, s), dtype={"question": str})
                    for m in reads(design) for s in seeds], ignore_index=True)  # method by method: the order
    entries = validate([wide_entry(cid, claim_matrix(df, cid, reg), n_boot, reg, SAME_BASE[reg])
                        for cid in design.claims if cid not in CLAIMS], reg)
    for cid in (c for c in design.claims if c in CLAIMS):
        a, b, what = CLAIMS[cid]
        d = paired_matrix(df, reg, a, b, HELDOUT_X)
        entries.append(amendment_entry(cid, reg, what, f"held-out pass@1, {what} [points]", a, b, d.to_numpy(),
                                       MARGIN, n_boot))
    with_half_width(entries)
    per = run_levels(df, HELDOUT_X).drop(columns="regime")
    loaded = df[df.method.isin(TRAINED)].drop_duplicates(["method", "seed"])
    return {"regime": reg, "build": design.build, "seeds": seeds, "entries": entries,
            "levels": level_table(per, ("method",), sort=False).to_dict(orient="records"),
            "seed_pass1": per.to_dict(orient="records"), **reproduced_counts(loaded)}


def markdown(res: dict, design: HeldoutDesign = REGISTERED) -> str:
    """The design's table as docs/results.md quotes it, then each run's held-out level."""
    rows = [f"| claim (held-out pass@1 on 1,536 fresh {REGIME_NAME[design.regime]} questions, points; {design.build}, "
            "lr/10) | seeds | "
            "estimate [95% CI] | half-width (predicted) | verdict |", "|---|---|---|---|---|"]
    rows += [claim_row(e, comparison(e["id"]), design.predicted[e["id"]]) for e in res["entries"]]
    mean = f"held-out pass@1, mean over seeds 0-{len(res['seeds']) - 1} (SD)"
    return "\n".join(rows + held_level_rows(res["levels"], mean=mean)) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.etmr_heldout", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("run", "status", "analyse"))
    add_run_arguments(ap, "run: seeds N-M (default: the design's)")
    ap.add_argument("--build", choices=sorted(DESIGNS), default="registered")
    args = ap.parse_args(argv)
    design = DESIGNS[args.build]
    out = design.out if args.out == RUNS else args.out
    if args.what == "run":  # the design's build, never a new one; finished runs only, nothing trained
        if design.not_run:
            ap.error(f"--build {args.build}: Amendment {design.amendment}'s held-out part was {design.not_run}")
        regimes = regimes_path(design.results)
        check_weights(regimes, SCALES[args.scale])
        runs_root = args.runs_root or cache_root() / "runs"
        seeds = args.seeds or design.complete(out)
        trained = [m for m in design.evaluates if m in TRAINED]
        left = untrained(seeds, runs_root, args.scale, design.regime, trained, regimes) if trained else []
        if left:
            raise SystemExit(f"Amendment {design.amendment} evaluates finished runs; not finished under {runs_root}: {left}")
        status = run_jobs(jobs(design, seeds), SCALES[args.scale], out, runs_root, args.budget_min, args.workers,
                          desc=f"Amendment {design.amendment} ({design.build})", regimes=regimes)
        print(status_counts(status))
    elif args.what == "status":
        print(seeds_line(f"Amendment {design.amendment} ({design.regime}, {design.build}, held-out)",
                         len(design.complete(out)), missing(design, out))
              + (f"; {design.not_run}" if design.not_run else ""))
    else:
        sys.stdout.write(write_json(args.json or design.analysis, analyse(design, out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
