"""Distance from the base at both learning rates on one build (plan Amendment 40), and COR alone's (Amendment 41).

Amendment 39 found, on the Xeon build ``abcbf433...`` in AMC-like, that lr/10 keeps 6-7 points of held-out accuracy
the default learning rate loses (LxT, LxD). Amendments 21-23 had found, on the registered build at the default lr,
one line: held-out pass@1 falls ~0.4 points per 1e-3 nats/token of held-out KL from the base, whatever the method.
Does the learning rate act through that distance? Each run's held-out KL (:func:`ddrl.study.drift_kl.heldout_kl`, the
policy's own 8 samples of the first 256 fresh questions) is measured for TTRL, BCS+DAE (DDRL's RL-only weights) and
DDRL at both learning rates, seeds 0-9, and set against the run's held-out pass@1 on all 1,536 fresh questions
(Amendments 38-39's CSVs; nothing is trained or evaluated anew). The claims (:data:`CLAIMS`): each method's distance
at lr/10 minus at the default lr (W1-W3, paired t); the held-out slope within learning rates on this build (W4);
lr/10's runs against the default-lr runs' line at equal distance (W5) and the untrained model against it at zero
distance (W6, :func:`ddrl.study.drift.kl_fit`); each method's lr/10 held-out gain minus what the registered build's
confirmed slope (Amendment 21's X3h, :func:`ddrl.study.drift.x3h_slope`) predicts from its distance (W7-W9, paired t).
Amendment 41 asks where COR alone (no RL; it keeps held-out accuracy, Amendment 38's K3x) lies: its weights were not
kept, so :func:`cor_alone_kl` recomputes it (checked against its committed evaluation) and measures its distance;
Y1, Y2: its held-out gain over the untrained model minus slope x distance, inside +-1 point (on the line) or not.

    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.study.amendments.lr_drift kl --regime amc_like   # and amc_like_small_lr
    python -m ddrl.study.amendments.lr_drift status
    python -m ddrl.study.amendments.lr_drift analyse --json results/replication_xeon/lr_drift.json
    python -m ddrl.study.amendments.lr_drift figure      # docs/results/lr_drift.{png,pdf}
    DDRL_CACHE_DIR=<the Xeon build's cache> python -m ddrl.study.amendments.lr_drift kl --cor-alone      # Amendment 41
    python -m ddrl.study.amendments.lr_drift analyse --cor-alone --json results/replication_xeon/cor_alone_drift.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from tqdm.auto import tqdm

from ddrl.study.claims import with_half_width
from ddrl.run.pool import minutes_to
from ddrl.study.drift import kl_fit, paired_t, x3h_slope
from ddrl.study.drift_data import KL_UNIT, drift_path, export_steps, heldout_rows, seed_table
from ddrl.accel.logprob_backends import pinned_backend
from ddrl.study.amendments.lr_heldout import DEFAULT, OUT, XEON
from ddrl.report.plotting import color, label, save_docs_figure
from ddrl.run.storage import cache_root, write_json
from ddrl.seeds import derive_seed, seed_range
from ddrl.report.stats import verdict
from ddrl.study.plan import (COR_ONLY, SCALES, SMALL_LR, check_weights, csv_path, experiment, load_regimes,
                             regimes_path)
from ddrl.study.amendments.wide import claim_row

#: The held-out KLs and step CSVs this amendment writes (``drift/<regime>/<method>-seedNN-{kl.json,steps.csv}``)
DEST = XEON / "lr_drift"
REGIMES = {DEFAULT: "default", SMALL_LR: "lr10"}
LR_LABELS = {"none": "no RL", "default": "default lr (3e-5)", "lr10": "lr/10 (3e-6)"}
COR_ALONE_LABEL = "COR alone (no RL)"
METHODS = ("ttrl", "bcs_dae", "ddrl")
SEEDS = tuple(range(10))  # the seeds both learning rates' runs have (Amendment 39: 0-9)
#: The plan's clock: no held-out KL is started after it
CUTOFF = "2026-11-29T01:00:00+00:00"
#: id -> (what, kind, method or None, expected sign, margin). Kinds: "dist" the held-out KL at lr/10 minus the default
#: lr, paired by seed (1e-3 nats/token); "slope" held-out pass@1 per 1e-3 of held-out KL within learning rates (the
#: three methods' runs, one intercept per learning rate); "adjusted" a group minus the default-lr runs at equal held-out
#: KL; "residual" the method's lr/10 held-out gain minus x3h_slope() x its distance difference, paired by seed (points)
CLAIMS = {
    "W1": ("held-out KL, TTRL at lr/10 - TTRL at the default lr [1e-3 nats/token]", "dist", "ttrl", -1, 0.0),
    "W2": ("held-out KL, BCS+DAE at lr/10 - BCS+DAE at the default lr [1e-3 nats/token]", "dist", "bcs_dae", -1, 0.0),
    "W3": ("held-out KL, DDRL at lr/10 - DDRL at the default lr [1e-3 nats/token]", "dist", "ddrl", -1, 0.0),
    "W4": ("held-out pass@1 per 1e-3 of held-out KL, within learning rates [points]", "slope", None, -1, 0.0),
    "W5": ("held-out pass@1 at equal held-out KL, lr/10 runs - default-lr runs [points]", "adjusted", "lr10", 0, 1.0),
    "W6": ("held-out pass@1 at zero held-out KL, untrained model - default-lr runs' line [points]", "adjusted", "none",
           0, 1.0),
    "W7": ("held-out gain of TTRL at lr/10 minus the registered slope x its KL difference [points]", "residual", "ttrl",
           0, 1.0),
    "W8": ("held-out gain of BCS+DAE at lr/10 minus the registered slope x its KL difference [points]", "residual",
           "bcs_dae", 0, 1.0),
    "W9": ("held-out gain of DDRL at lr/10 minus the registered slope x its KL difference [points]", "residual", "ddrl",
           0, 1.0),
}
#: The plan's predicted half-widths (stand-ins: Amendment 23's registered-build runs; see the plan)
PREDICTED = {"W5": "1.0-1.4", "W6": "1.5", "W7": "~0.6", "W8": "~0.6", "W9": "~0.6"}


def t_entry(cid: str, regime: str, metric: str, sign: int, margin: float, r: dict, n_seeds: int) -> dict:
    """A claim's entry from its estimate and interval ``r`` (t interval over seeds), with the registered verdict."""
    return {"id": cid, "regime": regime, "metric": metric, "expected_sign": sign, "estimate": r["estimate"],
            "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n_seeds": n_seeds,
            "verdict": verdict(r["ci_low"], r["ci_high"], sign, margin)}


def minutes_left(now: float | None = None) -> float:
    """Minutes from ``now`` (epoch seconds, default the clock) to :data:`CUTOFF` (negative once it has passed)."""
    return minutes_to(CUTOFF, now)


def measure(regime: str, runs_root: str | Path, seeds: Sequence[int] = SEEDS, progress: bool = True) -> tuple[int, list]:
    """The step CSVs and held-out KLs of :data:`METHODS`' runs of ``regime`` on ``seeds`` (the runs the H1x CSVs
    under :data:`OUT` name, weights under ``runs_root``), written under :data:`DEST`; refused after the clock.
    Returns (KLs measured now, runs whose weights are missing)."""
    from ddrl.study.drift_kl import measure_kl  # torch: the policies are sampled (notebook 06 imports this module)

    if minutes_left() <= 0:
        raise SystemExit(f"Amendment 40's clock ({CUTOFF}) has passed: no held-out KL starts after it")
    export_steps(OUT, runs_root, regime, METHODS, dest=DEST)
    return measure_kl(OUT, runs_root, regime, METHODS, dest=DEST, progress=progress, regimes=regimes_path(XEON),
                      seeds=seeds)


def complete(dest: str | Path = DEST, seeds: Sequence[int] = SEEDS) -> list[int]:
    """The seeds whose runs have a held-out KL at both learning rates for every method."""
    return [s for s in seeds if all(drift_path(dest, r, m, s, "kl").is_file() for r in REGIMES for m in METHODS)]


def table(seeds: Sequence[int], out: str | Path = OUT, dest: str | Path = DEST) -> pd.DataFrame:
    """One row per run (method, ``lr`` group, seed): held-out pass@1 (points), held-out and late KL; the untrained
    model's rows with ``lr`` "none" and held-out KL 0 (its distance from itself)."""
    rows = [seed_table(out, r, METHODS, dest).assign(lr=lr) for r, lr in REGIMES.items()]
    t = pd.concat([*rows, untrained_rows(out, DEFAULT)], ignore_index=True)
    return t[t["seed"].isin(seeds)].reset_index(drop=True)


def untrained_rows(out: str | Path, regime: str) -> pd.DataFrame:
    """The untrained model's rows of a :func:`table`: per seed of its H1x CSVs in ``regime``, its held-out pass@1
    (points), ``lr`` "none" and held-out KL 0 (its distance from itself)."""
    base = heldout_rows(out, regime, ("no_adaptation",)).groupby("seed")["accuracy"].mean()
    return pd.DataFrame({"method": "no_adaptation", "seed": base.index, "heldout": base.to_numpy(), "kl_heldout": 0.0,
                         "lr": "none"})


def heldout_gains(runs: pd.DataFrame) -> pd.DataFrame:
    """The trained runs of a :func:`table` (``lr`` not "none"), each with ``gain``: its held-out pass@1 minus its
    seed's untrained model's (points)."""
    base = runs[runs["lr"] == "none"].set_index("seed")["heldout"]
    rl = runs[runs["lr"] != "none"]
    return rl.assign(gain=rl["heldout"] - base.loc[rl["seed"]].to_numpy()).reset_index(drop=True)


def analyse(seeds: Sequence[int] | None = None, out: str | Path = OUT, dest: str | Path = DEST) -> dict:
    """:data:`CLAIMS` on ``seeds`` (default :func:`complete`'s, at least 3), each with its verdict (Sec. 4's rule,
    its sign and margin) and ``half_width``; descriptive: each group's mean held-out pass@1 and KL, and per method
    the slope-predicted gain beside the measured one."""
    seeds = list(complete(dest) if seeds is None else seeds)
    if len(seeds) < 3 or set(seeds) - set(complete(dest, seeds)):
        raise ValueError(f"{dest}: Amendment 40 reads seeds with every held-out KL written (at least 3); seeds {seeds}")
    t = table(seeds, out, dest)
    slope = x3h_slope()
    wide = t[t["lr"] != "none"].pivot_table(index=["method", "seed"], columns="lr", values=["heldout", "kl_heldout"])
    groups = t.assign(method=t["lr"])  # kl_fit's groups: the learning rate (the three methods' runs pooled)
    fit = kl_fit(groups[groups["lr"] != "none"], "lr10", "default", x="kl_heldout")
    entries, gains = [], []
    for cid, (what, kind, m, sign, margin) in CLAIMS.items():
        if kind in ("dist", "residual"):
            w = wide.loc[m]
            dk = w[("kl_heldout", "lr10")] - w[("kl_heldout", "default")]
            dh = w[("heldout", "lr10")] - w[("heldout", "default")]
            r = paired_t(dk if kind == "dist" else dh - slope * dk)
            if kind == "residual":
                gains.append({"method": m, "measured_gain": float(dh.mean()), "predicted_gain": float(slope * dk.mean()),
                              "kl_difference": float(dk.mean())})
        elif kind == "slope":
            r = fit["slope"]
        else:
            r = fit["adjusted"] if m == "lr10" else kl_fit(groups[groups["lr"] != "lr10"], "none", "default",
                                                           x="kl_heldout")["adjusted"]
        entries.append(t_entry(cid, DEFAULT, what, sign, margin, r, len(seeds)))
    levels = t.groupby(["lr", "method"], sort=False)[["heldout", "kl_heldout"]].agg(["mean", "std"])
    levels.columns = [f"{a}_{b}" for a, b in levels.columns]
    return {"seeds": seeds, "registered_slope": slope, "entries": with_half_width(entries), "gains": gains,
            "levels": levels.reset_index().to_dict(orient="records"), "runs": t.to_dict(orient="records")}


def markdown(res: dict) -> str:
    """The claims, and each group's held-out pass@1 and distance, as docs/results.md quotes them."""
    rows = ["| claim (Xeon build, AMC-like) | seeds | estimate [95% CI] | half-width (predicted) | verdict |",
            "|---|---|---|---|---|"]
    rows += [claim_row(e, e["metric"], PREDICTED.get(e["id"], "-")) for e in res["entries"]]
    rows += ["", "| learning rate | method | held-out pass@1, mean (SD) | held-out KL [1e-3 nats/token], mean (SD) |",
             "|---|---|---|---|"]
    rows += [f"| {r['lr']} | {r['method']} | {r['heldout_mean']:.1f} ({r['heldout_std']:.1f}) | "
             f"{r['kl_heldout_mean']:.1f} ({r['kl_heldout_std']:.1f}) |" for r in res["levels"]]
    return "\n".join(rows) + "\n"


#: Amendment 41: COR alone (one COR call from the untrained model; its weights were never kept) recomputed per seed,
#: its held-out KL measured, its held-out pass@1 Amendment 38's; until the plan's clock
COR_SEEDS = tuple(range(12))
COR_CUTOFF = "2026-11-29T02:00:00+00:00"
#: id -> (what, slope: "registered" = Amendment 21's X3h, "w4" = this build's W4); null claims (sign 0, margin 1):
#: COR alone lies on the RL runs' line through the untrained model
COR_CLAIMS = {"Y1": ("held-out pass@1, COR alone - (untrained + registered slope x COR alone's held-out KL) [points]",
                     "registered"),
              "Y2": ("held-out pass@1, COR alone - (untrained + this build's slope W4 x COR alone's held-out KL) "
                     "[points]", "w4")}


def cor_alone_kl(seed: int, scale: str = "default", regimes: str | Path | None = None, out: str | Path = OUT) -> dict:
    """COR alone of ``seed`` in :data:`DEFAULT` recomputed as the study computes it (:func:`ddrl.study.jobs.refined_rows`:
    the seed's DDRL config, :meth:`~ddrl.run.experiments.Experiment.refine` from the untrained model, one thread,
    log-probs pinned to "hf"), then its held-out
    KL to the untrained model (:func:`ddrl.study.drift_kl.heldout_kl`, Amendment 21's questions, samples and stream) and
    whether its adapted evaluation equals the committed CSV under ``out`` on every question (``adapted_reproduced``).
    ``scale``, ``regimes`` (default the Xeon build's) and ``out``: for the tests' tiny testbed."""
    from ddrl.study.drift_kl import KL_SAMPLES, heldout_kl, kl_prompts  # torch, as measure's
    from ddrl.run.experiments import weights_sha256
    from ddrl.models import load_model

    sc = SCALES[scale]
    reg = load_regimes(regimes or regimes_path(XEON), sc, names=[DEFAULT])[DEFAULT]
    exp = experiment(reg, sc, False)
    c = exp.config("ddrl", seed)
    with pinned_backend("hf"), exp.threads({"device": c.device}):
        model, tok, _, _ = exp.refine(c)  # Experiment.refined's own COR call, start="base"
        ev = exp.evaluate(model, tok, c, seed)["adapted"]["per_question"]
        base, _ = load_model(c.model, c.dtype, c.device)
        prompts = kl_prompts(reg, sc, tok, c.cue, c.model)
        s = derive_seed(seed, "drift", "kl")
        kl, n_tok = heldout_kl(model, base, tok, prompts, KL_SAMPLES, c.max_new_tokens, s)
    committed = pd.read_csv(csv_path(out, DEFAULT, COR_ONLY, seed), dtype={"question": str})
    return {"kl": kl / KL_UNIT, "n_tokens": n_tok, "n_questions": len(prompts), "n_samples": KL_SAMPLES, "seed": s,
            "weights_sha256": weights_sha256(model), "adapted_reproduced": bool(
                committed["question"].tolist() == ev["id"] and committed["pass@1"].tolist() == ev["pass@1"])}


def measure_cor_alone(seeds: Sequence[int] = COR_SEEDS, progress: bool = True) -> int:
    """:func:`cor_alone_kl` of every seed without its JSON (``drift/<DEFAULT>/cor_only-seedNN-kl.json`` under
    :data:`DEST`), none started after :data:`COR_CUTOFF`. Returns how many were measured."""
    check_weights(regimes_path(XEON), SCALES["default"])  # the Xeon build, never a new one
    n = 0
    for s in tqdm(seeds, desc="COR alone: held-out KL", unit="seed", disable=not progress):
        path = drift_path(DEST, DEFAULT, COR_ONLY, s, "kl")
        if path.is_file():
            continue
        if minutes_to(COR_CUTOFF) <= 0:
            raise SystemExit(f"Amendment 41's clock ({COR_CUTOFF}) has passed: no COR alone starts after it")
        write_json(path, cor_alone_kl(s))
        n += 1
    return n


def analyse_cor(seeds: Sequence[int] | None = None, out: str | Path = OUT, dest: str | Path = DEST) -> dict:
    """:data:`COR_CLAIMS` over ``seeds`` (default: those with a JSON, at least 3; each must reproduce its committed
    adapted rows): per seed, COR alone's held-out pass@1 minus the untrained model's minus slope x its KL (paired t),
    with the slopes (W4 from Amendment 40's committed analysis); descriptive, the mean KL and held-out difference."""
    have = [s for s in COR_SEEDS if drift_path(dest, DEFAULT, COR_ONLY, s, "kl").is_file()]
    seeds = list(have if seeds is None else seeds)
    recs = {s: json.loads(drift_path(dest, DEFAULT, COR_ONLY, s, "kl").read_text()) for s in seeds if s in have}
    if len(recs) < 3 or len(recs) < len(seeds) or not all(r["adapted_reproduced"] for r in recs.values()):
        raise ValueError(f"{dest}: Amendment 41 reads at least 3 seeds, each measured and reproducing its committed "
                         f"adapted rows; seeds {seeds}, measured {sorted(recs)}")
    held = heldout_rows(out, SMALL_LR, (COR_ONLY, "no_adaptation")).groupby(["method", "seed"])["accuracy"].mean()
    kl = pd.Series({s: r["kl"] for s, r in recs.items()})
    gain = pd.Series({s: held[COR_ONLY, s] - held["no_adaptation", s] for s in seeds})
    a40 = json.loads((XEON / "lr_drift.json").read_text())
    w4 = next(e for e in a40["entries"] if e["id"] == "W4")["estimate"]
    slopes = {"registered": x3h_slope(), "w4": w4}
    # descriptive (added after Y1/Y2 were read): Amendment 40's RL runs measured the same way, each against its
    # seed's untrained run and the registered slope -- where the RL runs lie beside COR alone
    rl = heldout_gains(pd.DataFrame(a40["runs"]))
    rl = rl.assign(resid=rl["gain"] - slopes["registered"] * rl["kl_heldout"])
    beside = rl.groupby(["lr", "method"], sort=False).agg(kl=("kl_heldout", "mean"), residual=("resid", "mean"),
                                                          residual_sd=("resid", "std")).reset_index()
    entries = []
    for cid, (what, which) in COR_CLAIMS.items():
        r = paired_t(gain - slopes[which] * kl)
        entries.append(t_entry(cid, SMALL_LR, what, 0, 1.0, r, len(seeds)))
    return {"seeds": seeds, "slopes": slopes, "entries": with_half_width(entries), "kl_mean": float(kl.mean()),
            "kl_sd": float(kl.std()), "heldout_gain_mean": float(gain.mean()),
            "rl_beside": beside.to_dict(orient="records"),
            "runs": [{"seed": s, "kl_heldout": float(kl[s]), "heldout": float(held[COR_ONLY, s]),
                      "heldout_gain": float(gain[s])} for s in seeds]}


def cor_markdown(cor: dict) -> str:
    """Amendment 41's claims and COR alone's distance and held-out gain, as docs/results.md quotes them."""
    rows = ["| claim (Xeon build, AMC-like, COR alone) | seeds | estimate [95% CI] | half-width (predicted) | verdict |",
            "|---|---|---|---|---|"]
    rows += [claim_row(e, e["metric"], "0.17-0.24") for e in cor["entries"]]
    rows += ["", f"COR alone's held-out KL: {cor['kl_mean']:.2f} (SD {cor['kl_sd']:.2f}) x 1e-3 nats/token; its held-out "
             f"gain over the untrained model: {cor['heldout_gain_mean']:+.2f} points (mean over {len(cor['seeds'])} seeds).",
             "", "| runs (descriptive, Y1's measure) | held-out KL, mean | held-out pass@1 - (untrained + X3h x KL), mean (SD) |",
             "|---|---|---|", f"| COR alone | {cor['kl_mean']:.2f} | {cor['entries'][0]['estimate']:+.2f} |"]
    rows += [f"| {r['method']} at {LR_LABELS[r['lr']]} | {r['kl']:.2f} | {r['residual']:+.2f} ({r['residual_sd']:.2f}) |"
             for r in cor["rl_beside"]]
    return "\n".join(rows) + "\n"


def figure(res: dict, cor: dict | None = None):
    """Held-out pass@1 against held-out KL, one point per run (colour: method; marker: learning rate; the untrained
    model at 0; with ``cor``, Amendment 41's analysis, COR alone's runs), with the default-lr runs' line at W4's slope
    and the registered build's slope (X3h) drawn through the default-lr runs' mean, both extended to zero distance:
    where the lr/10 runs, the untrained model and COR alone would lie."""
    t = pd.DataFrame(res["runs"])
    methods = ["no_adaptation", *METHODS]
    if cor is not None:
        t = pd.concat([t, pd.DataFrame(cor["runs"]).assign(method=COR_ONLY, lr="none")], ignore_index=True)
        methods.append(COR_ONLY)
    name = {m: COR_ALONE_LABEL if m == COR_ONLY else label(m) for m in methods}
    t = t.assign(**{"method ": t["method"].map(name), "learning rate": t["lr"].map(LR_LABELS)})
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sns.scatterplot(t, x="kl_heldout", y="heldout", hue="method ", style="learning rate", s=34, ax=ax,
                    hue_order=[name[m] for m in methods], palette={name[m]: color(m) for m in methods},
                    style_order=list(LR_LABELS.values()))
    d = t[t["lr"] == "default"]
    xs = np.array([0.0, d["kl_heldout"].max()])
    w4 = next(e for e in res["entries"] if e["id"] == "W4")["estimate"]
    for b, style, name in ((w4, "-", f"default-lr runs' line, W4 slope {w4:+.2f}"),
                           (res["registered_slope"], "--", f"registered slope {res['registered_slope']:+.2f} (X3h)")):
        ax.plot(xs, d["heldout"].mean() + b * (xs - d["kl_heldout"].mean()), color="0.3", ls=style, lw=1.1, label=name)
    ax.set_xlabel("held-out KL to the untrained model [1e-3 nats/token]")
    ax.set_ylabel("held-out pass@1 (1,536 fresh questions) [points]")
    ax.set_title("Xeon build, AMC-like: TTRL, BCS+DAE, DDRL at two learning rates (Amendment 40)"
                 + (", COR alone (41)" if cor is not None else ""), fontsize=9)
    ax.legend(fontsize=7, title=None, loc="lower left")
    fig.tight_layout()
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.study.amendments.lr_drift", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("kl", "status", "analyse", "figure"))
    ap.add_argument("--regime", choices=sorted(REGIMES), default=None, help="kl: one learning rate's runs (default both)")
    ap.add_argument("--seeds", type=seed_range, default=None, help="kl: seeds N-M (default 0-9)")
    ap.add_argument("--runs-root", type=Path, default=None, help="run directories (default: <cache>/runs)")
    ap.add_argument("--json", type=Path, default=None, help="analyse: write the result here")
    ap.add_argument("--cor-alone", action="store_true", help="kl, analyse: Amendment 41's COR alone (seeds 0-11)")
    args = ap.parse_args(argv)
    seeds = args.seeds or SEEDS
    if args.what == "kl" and args.cor_alone:
        print(f"COR alone: {measure_cor_alone(args.seeds or COR_SEEDS)} held-out KLs measured")
    elif args.what == "kl":
        for r in [args.regime] if args.regime else list(REGIMES):
            n, missing = measure(r, args.runs_root or cache_root() / "runs", seeds)
            print(f"{r}: {n} held-out KLs measured; weights missing: {missing or 'none'}")
    elif args.what == "status":
        done = complete(DEST, seeds)
        print(f"Amendment 40: {len(done)} of {len(seeds)} seeds with every held-out KL; incomplete "
              f"{sorted(set(seeds) - set(done)) or 'none'}")
    elif args.what == "figure":  # docs/results/lr_drift.{png,pdf}, from the committed analyses
        cor = XEON / "cor_alone_drift.json"
        print(save_docs_figure(figure(json.loads((XEON / "lr_drift.json").read_text()),
                                      json.loads(cor.read_text()) if cor.is_file() else None), "lr_drift"))
    else:
        sys.stdout.write(write_json(args.json, analyse_cor() if args.cor_alone else analyse()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
