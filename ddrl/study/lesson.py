"""What notebooks 03-05 show of the claims study: its decided comparisons re-analysed from the committed per-run CSVs
beside the paper's numbers and the committed entries, and where a rerun run sits among the seeds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ddrl.run.study_params import parse_rerun  # noqa: F401  (the notebooks' reading of a rerun line)
from ddrl.study.analysis import bootstrap_entry, method_csvs, paired_matrix, read_csvs
from ddrl.study.claims import VERDICT_COLORS, claim_name, forest, get, interval, legend
from ddrl.study.plan import NO_RL, PAIRED, RESULTS, SAME_BASE, csv_method_seed, csv_path, same_base
from ddrl.study.page import (REGIME_WORDS, mde, regime_words, reward_answer, reward_signal_sentences,  # noqa: F401
                             stage3_analyses, stage_status)
from ddrl.study.strength import stage_correction, stage_marks
from ddrl.study.rerun import check, design_dir
from ddrl.study.runner import analyse

#: The amendments' entries of the lr/10 regimes
AMENDMENT_ENTRIES = RESULTS / "small_lr"


def claim_words(cid: str) -> str:
    """A claim's one name (:func:`ddrl.study.claims.claim_name`), as README.md and the results page print it."""
    return claim_name(cid)


@cache
def _amendment_files(folder: str) -> tuple[tuple[str, str], ...]:
    return tuple((str(p), p.read_text()) for p in sorted(Path(folder).glob("*.json")))


def committed_entry(cid: str, regime: str, results: Path = RESULTS) -> tuple[dict | None, list[int] | None, str]:
    """The entry committed for ``cid`` in ``regime`` (``results/claims.json``, else :data:`AMENDMENT_ENTRIES`), the
    seeds its analysis used (None: all) and its file; (None, None, "") where none is."""
    main = results / "claims.json"
    for e in json.loads(main.read_text()):
        if e["id"] == cid and e["regime"] == regime:
            return e, None, str(main.relative_to(results.parent))
    for path, text in _amendment_files(str(results / AMENDMENT_ENTRIES.name)):
        data = json.loads(text)
        for e in data.get("entries", []) if isinstance(data, dict) else []:
            if e.get("id") == cid and e.get("regime") == regime and "a" not in e:  # a registered claim
                seeds = data.get("seeds")
                seeds = seeds.get(cid) if isinstance(seeds, dict) else seeds
                return e, seeds, str(Path(path).relative_to(results.parent))
    return None, None, ""


def _same(live: dict, committed: dict) -> bool:
    """Whether an entry re-analysed live has the committed entry's verdict, estimate and interval."""
    keys = ("estimate", "ci_low", "ci_high")
    return live["verdict"] == committed["verdict"] and np.allclose([live[k] for k in keys],
                                                                    [committed[k] for k in keys], rtol=0, atol=1e-9)


def committed_cells(claims: Sequence[str], regimes: Sequence[str], results: Path = RESULTS) -> list[tuple[str, str]]:
    """The cells of ``claims`` x ``regimes`` with a committed entry, in order (claims not in ``PAIRED`` raise)."""
    unknown = [c for c in claims if c not in PAIRED]
    if unknown:
        raise ValueError(f"claims {unknown} are not paired pass@1 claims of the study (one of {sorted(PAIRED)})")
    return [(c, r) for c in claims for r in regimes if committed_entry(c, r, results)[0] is not None]


def claim_rows(runs: Path, regime: str, a: str, b: str) -> pd.DataFrame:
    """The per-question rows of ``a`` and ``b`` in ``regime``, a no-RL method's also in the regimes on its base (where
    :func:`~ddrl.study.analysis.paired_matrix` reads them when ``regime`` has none)."""
    paths = [p for m in (a, b) for r in (regime, *(same_base(regime) if m in NO_RL else ())) for p in
             method_csvs(runs / r, m)]
    if not paths:
        raise ValueError(f"{runs}: no committed runs of {a} or {b} in {regime}")
    return read_csvs(paths)


def decide(cid: str, regime: str, seeds: Sequence[int] | None = None, runs: Path = RESULTS / "runs",
           n_boot: int = 4000) -> dict:
    """Claim ``cid`` in ``regime`` re-analysed from the committed CSVs as the study decided it, over ``seeds``
    (default: all with both runs); an lr/10 regime takes its base regime's paper sign and margin."""
    if cid not in PAIRED:
        raise ValueError(f"decide: {cid!r} is not a paired pass@1 claim (one of {sorted(PAIRED)})")
    a, b, split = PAIRED[cid]
    df = claim_rows(Path(runs), regime, a, b)
    if seeds is not None:
        df = df[df.seed.isin(set(seeds))]
    d = paired_matrix(df, regime, a, b, split)
    if d is None:
        raise ValueError(f"decide: {cid} in {regime} has fewer than 2 seeds with both {a} and {b}")
    return bootstrap_entry(cid, regime, d, n_boot, regime if regime in get(cid).regimes else SAME_BASE.get(regime))


def decided_table(cells: Sequence[tuple[str, str]], runs: Path = RESULTS / "runs", n_boot: int = 4000) -> pd.DataFrame:
    """One row per (claim, regime) of ``cells`` re-analysed (:func:`decide`, on its committed entry's seeds): the
    paper's difference, the testbed's estimate and interval, seeds, verdict, whether it is as committed."""
    rows = []
    for cid, regime in cells:
        committed, seeds, source = committed_entry(cid, regime, Path(runs).parent)
        if committed is None:
            raise ValueError(f"no committed entry of claim {cid} in {regime} (results/claims.json, "
                             f"{AMENDMENT_ENTRIES.name}/*.json)")
        e = decide(cid, regime, seeds, runs, n_boot)
        same = _same(e, committed)
        rows.append({"claim": cid, "what": claim_words(cid), "regime": regime_words(regime), "paper": e["paper"],
                     "testbed": e["estimate"], "ci_low": e["ci_low"], "ci_high": e["ci_high"], "seeds": e["n_seeds"],
                     "verdict": e["verdict"], "as committed": f"yes ({source})" if same else f"NO ({source})"})
    return pd.DataFrame(rows)


def show_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`decided_table` for reading: signed points, the interval in brackets."""
    out = table[["what", "regime"]].copy()
    out["paper (points)"] = [f"{v:+.1f}" if v is not None and not pd.isna(v) else "-" for v in table["paper"]]
    out["testbed (points, 95%)"] = [interval({"estimate": e, "ci_low": lo, "ci_high": hi})
                                    for e, lo, hi in zip(table["testbed"], table["ci_low"], table["ci_high"])]
    return out.join(table[["seeds", "verdict", "as committed"]])


def verdict_sentences(table: pd.DataFrame) -> list[str]:
    """One sentence per verdict in a :func:`decided_table`, listing its claims."""
    kinds = (("reproduced", "Holds on the testbed"),
             ("contradicted", "Contradicted (the interval excludes zero on the other side)"),
             ("no effect", "No effect (the interval inside the ±1 point margin)"),
             ("not resolved", "Still open (the interval crosses zero but not inside the margin)"))
    out = []
    for verdict, lead in kinds:
        mask = table["verdict"] == verdict
        if mask.any():
            cells = "; ".join(f"{w} ({r}, {e:+.1f} points)" for w, r, e in
                              zip(table["what"][mask], table["regime"][mask], table["testbed"][mask]))
            out.append(f"{lead}: {cells}.")
    return out


def summary_sentences(table: pd.DataFrame, reruns: pd.DataFrame) -> list[str]:
    """A notebook's "What we measured": the comparisons by verdict, and how many equal the committed ones."""
    n = table["verdict"].value_counts()
    same = table["as committed"].str.startswith("yes").sum()
    out = [(f"Of {len(table)} comparisons re-analysed live from the committed runs, {n.get('reproduced', 0)} hold, "
            f"{n.get('contradicted', 0)} are contradicted, {n.get('no effect', 0)} show no effect and "
            f"{n.get('not resolved', 0)} stay open; {same} of {len(table)} equal the study's committed entries.")]
    if len(reruns):
        exact = (reruns["result"] == "identical").sum()
        out.append(f"Your rerun reproduced {exact} of {len(reruns)} committed run slices exactly on this CPU.")
    return out


def decided_figure(table: pd.DataFrame, title: str):
    """:func:`~ddrl.study.claims.forest` of a :func:`decided_table`, coloured by verdict."""
    t = table.assign(y=np.arange(len(table))[::-1], estimate=table.testbed, color=table.verdict.map(VERDICT_COLORS))
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(table) + 1.4))
    forest(ax, t)
    ax.set_yticks(t.y, [f"{w} ({g})" for w, g in zip(t["what"], t["regime"])])
    ax.set_xlabel("difference in pass@1, points (dot and bar: testbed and 95% interval; diamond: the paper)")
    legend(ax, {v: c for v, c in VERDICT_COLORS.items() if v in set(t.verdict)}, ncol=1, loc="center left",
           bbox_to_anchor=(1.0, 0.5))  # beside the rows: a row's interval can reach any x
    ax.set_title(title)
    fig.tight_layout()
    return fig


def seed_position(regime: str, method: str, seed: int, value: float, runs: Path = RESULTS / "runs",
                  split: str = "adapted") -> dict:
    """Where ``value`` (a run's mean pass@1 on ``split``) sits among the committed seeds of its regime and method:
    ``rank`` (1 = lowest), ``n``, ``min``, ``median``, ``max``."""
    paths = method_csvs(Path(runs) / regime, method)
    if not paths:
        raise ValueError(f"{runs}/{regime}: no committed runs of {method}")
    frames = {csv_method_seed(p)[1]: pd.read_csv(p, usecols=["split", "pass@1"]) for p in paths}
    means = pd.Series({s: f.loc[f["split"] == split, "pass@1"].mean() for s, f in frames.items()})
    return {"seed": seed, "value": float(value), "rank": int((means < value).sum() + 1), "n": len(means),
            "min": float(means.min()), "median": float(means.median()), "max": float(means.max())}


def seeds_needed(regime: str, results: Path = RESULTS) -> int:
    """The seeds the power analysis chose for ``regime`` (``results/stage1.json``; an lr/10 regime: its base's)."""
    seeds = json.loads((results / "stage1.json").read_text())["seeds"]
    base = SAME_BASE.get(regime, regime)
    if base not in seeds:
        raise ValueError(f"results/stage1.json has no seed count for {base!r} (it has {sorted(seeds)})")
    return int(seeds[base])


def rerun_table(specs: Sequence[str], results: Path = RESULTS) -> tuple[pd.DataFrame, list[str]]:
    """Each rerun of ``specs`` (all parsed first) by :func:`ddrl.study.rerun.check`: a row per rerun (its result; a
    whole run's adapted pass@1 and rank among the seeds) and the reports' texts."""
    rows, texts = [], []
    for design, regime, method, seed, steps in [parse_rerun(s) for s in specs]:
        row = {"run": f"{design} {regime} {method} seed {seed}",
               "what": f"first {steps} RL steps" if steps else "whole run"}
        try:
            diff, text = check(design, regime, method, int(seed), int(steps) if steps else None)
        except ValueError as e:  # not rerunnable here: said, not raised
            rows.append({**row, "result": f"not rerun: {e}"})
            texts.append(f"rerun {row['run']}: {e}")
            continue
        texts.append(text)
        row["result"] = "identical" if diff.empty else f"{len(diff)} values differ"
        if not steps:
            committed = pd.read_csv(csv_path(design_dir(design, results), regime, method, int(seed)))
            v = committed.query("split == 'adapted'")["pass@1"].mean()
            pos = seed_position(regime, method, int(seed), v, design_dir(design, results))
            row["adapted pass@1"] = f"{100 * v:.1f}"  # points, as the paper prints pass@1
            row["among committed seeds"] = f"{pos['rank']} of {pos['n']} (range {100 * pos['min']:.1f}-{100 * pos['max']:.1f})"
        rows.append(row)
    cols = ["run", "what", "result", "adapted pass@1", "among committed seeds"]
    return pd.DataFrame(rows, columns=cols).astype(object).fillna(""), texts


# --- Stage 3 (notebook 07): the registered comparison of label-free rewards, re-analysed live ---

def fresh_run_sentence(means: dict[str, float], reference: str, n: int) -> str:
    """A fresh run's one-seed differences against ``reference`` (method -> pass@1 in points) in words that follow
    them: the *floor* where every method scores 0, *below 1 point* where a difference is."""
    if all(v == 0 for v in means.values()):
        return (f"Every method scores pass@1 0 on these {n} questions: the floor, where this run cannot tell the "
                "rewards apart (one seed: a demonstration, not a comparison).")
    parts = [f"{m}: {v - means[reference]:+.1f} points against {reference.lower()}"
             + (" (below 1 point)" if abs(v - means[reference]) < 1 else "") for m, v in means.items() if m != reference]
    return "; ".join(parts) + f" (one seed, {n} questions: a demonstration, not a comparison)."


def stage3_decided(designs: Sequence, results: Path = RESULTS, n_boot: int = 4000) -> tuple[pd.DataFrame, dict, dict]:
    """Each analysed regime of Stage 3 (``designs``) re-analysed from the committed CSVs under ``results/runs`` on its
    committed analysis's seeds (:func:`ddrl.study.runner.analyse`, the registered rule): a row per entry (estimate,
    interval, verdict, its marks, whether it equals the committed entry and p-value), the live analyses (design id ->
    analysis) and Holm's rows over them (empty until every regime is analysed)."""
    committed = stage3_analyses(results)
    live = {d.id: analyse(d, Path(results) / "runs", n_boot, seeds=committed[d.id]["seeds"])
            for d in designs if d.id in committed}
    rows = stage_correction(live.values()) if live and len(live) == len(designs) else {}
    out = []
    for did, res in live.items():
        was = {e["id"]: e for e in committed[did]["entries"]}
        for e in res["entries"]:
            same = e["id"] in was and _same(e, was[e["id"]]) and \
                np.isclose(res["p"][e["id"]], committed[did].get("p", {}).get(e["id"], np.nan), rtol=0, atol=1e-12)
            out.append({"id": e["id"], "what": e["claim"], "regime": regime_words(e["regime"]), "testbed": e["estimate"],
                        "ci_low": e["ci_low"], "ci_high": e["ci_high"], "metric": e["metric"], "seeds": e["n_seeds"],
                        "verdict": e["verdict"], "marks": ", ".join(stage_marks(e, rows)),
                        "MDE": mde(e) if e["verdict"] == "not resolved" else None,
                        "as committed": f"yes ({did})" if same else f"NO ({did})"})
    return pd.DataFrame(out), live, rows


def show_stage3(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`stage3_decided` for reading: the interval in brackets, the marks and the MDE of a not resolved entry."""
    out = table[["what", "regime"]].copy()
    out["testbed (points, 95%)"] = [interval(r) for r in table.rename(columns={"testbed": "estimate"}).to_dict("records")]
    out = out.join(table[["seeds", "verdict", "marks"]])
    out["MDE"] = [f"{v:.2f}" if v is not None and not pd.isna(v) else "" for v in table["MDE"]]
    return out.join(table[["as committed"]])


def stage3_figure(table: pd.DataFrame):
    """:func:`~ddrl.study.claims.forest` of :func:`stage3_decided`'s rows, a panel per regime, coloured by verdict."""
    regimes = list(dict.fromkeys(table["regime"]))
    fig, axes = plt.subplots(1, len(regimes), figsize=(5.2 * len(regimes) + 2.6, 0.42 * table["id"].nunique() + 2),
                             sharey=True, squeeze=False)
    for ax, g in zip(axes[0], regimes):
        t = table[table["regime"] == g]
        t = t.assign(y=np.arange(len(t))[::-1], estimate=t.testbed, paper=None, color=t.verdict.map(VERDICT_COLORS))
        forest(ax, t)
        ax.set_yticks(t.y, t["what"])
        ax.set(title=g, xlabel="difference in pass@1, points")
    legend(fig, {v: c for v, c in VERDICT_COLORS.items() if v in set(table.verdict)}, paper=False,
           loc="lower center", ncol=4)
    fig.suptitle("Which reward without labels? Each entry's estimate and 95% interval (grey: +-1 point)")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig
