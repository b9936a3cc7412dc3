"""The designs' named measures (:data:`MEASURES`), each reading a :class:`Reading`; some are a design's whole
analysis (:attr:`~ddrl.study.designs.Design.whole`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

import numpy as np
import pandas as pd
import scipy.stats as sps
from scipy.optimize import least_squares

from ddrl.report.stats import advantage_quarters, advantage_statistic, decided, mean_ci, verdict
from ddrl.seeds import derive_seed
from ddrl.study.analysis import (analyse_claims, bootstrap_entry, claim_matrix, complete_seeds, level_table,
                                 load_questions, missing_seeds, paired_matrix, read_csvs, reproduced_counts, rl_divergence,
                                 run_levels, same_as_registered)
from ddrl.study.claims import amendment_entry, entry, get as get_claim, validate, with_half_width
from ddrl.study.plan import (COR_4X, COR_4X_LR10, COR_LR10, COR_ONLY, HELDOUT_X, HELDOUT_X_METHODS, KNOWN_DIVERGENCES,
                             NO_RL, RESULTS, SAME_BASE, SHARES_DDRL_RL, SMALL_LR, WIDE_OUT,
                             adapted_x_path, csv_path, heldout_x_path, load_regimes, regimes_path, seeds_to_analyse)
from ddrl.study.drift import (ARMS, HINGE_B, HINGE_K0, LINE, LR_METHODS, PREDICTED_FROM_SLOPE,
                              analyse as drift_analysis, analyse_arms, drift_path, heldout_rows, kl_fit, paired_t,
                              reading, seed_table, x3h_slope)
from ddrl.study import designs
from ddrl.study.strength import entry_p
from ddrl.study.designs import (COR_TRADE_RUNS, DESIGNS, MARGIN, T1F_DIR, Design, _panels, _reads, _split_dir,
                                _unwritten, analysed_seeds, regime_designs)
from ddrl.study.figures import vote_by_quarter


class Reading(NamedTuple):
    """What a named measure reads: the CSV rows, their folder, the seeds, the bootstrap's draws, the analysis so far."""

    df: pd.DataFrame
    out: Path
    seeds: list[int]
    n_boot: int
    analysis: dict


def _evaluated(d: Design, df: pd.DataFrame) -> pd.DataFrame:
    runs = df if d.reproduced_of is None else df[df.method.isin(d.reproduced_of)]
    return runs.drop_duplicates(["method", "seed"])


def _reproduced(d: Design, r: Reading) -> dict:
    """How many computed runs' adapted rows equal their committed CSV's."""
    return reproduced_counts(_evaluated(d, r.df))


def _reproduced_by_method(d: Design, r: Reading) -> dict:
    ev = _evaluated(d, r.df)
    return {"reproduced_by_method": {m: reproduced_counts(ev[ev.method == m]) for m in d.reproduced_of}}


def _heldout_check(d: Design, r: Reading) -> dict:
    return {"check": check_rows(r.out, designs.CHECK, r.seeds, d.regime, HELDOUT_X)}


def _cor_kept(d: Design, r: Reading) -> dict:
    """COR's mean kept rollouts per run of :attr:`Design.cor_runs`."""
    own = r.df[(r.df.split == "adapted") & (r.df.regime == d.regime)]
    kept = own.drop_duplicates(["method", "seed"]).groupby("method", sort=False)["cor_kept"]
    return {"cor_kept": {m: float(kept.mean()[m]) for m in d.cor_runs}}


AGAIN = "ddrl_again"  # the retrain check's name for a retrained DDRL run


def retrain_check(out: str | Path, check: str | Path, seeds: Sequence[int], regime: str) -> dict | None:
    """:func:`check_rows` of retrained DDRL runs with each one's first RL step off the committed one (-1: none)."""
    rows = check_rows(out, check, seeds, regime)
    if rows is None:
        return None
    steps = pd.concat([read_csvs(csv_path(out, regime, "ddrl", s, steps=True) for s in seeds),
                       read_csvs(csv_path(check, regime, "ddrl", s, steps=True) for s in seeds).assign(method=AGAIN)])
    div = rl_divergence(steps, (AGAIN,))
    diverged = {int(r.seed): int(r.diverged_at) for r in div.itertuples()}
    r1 = rows.pop("r1_against_reevaluated")
    return {**rows, "diverged_at": diverged, "r1_against_reevaluated": r1}  # the committed key order


def _retrain_check(d: Design, r: Reading) -> dict:
    return {"check": retrain_check(r.out, designs.CHECK, r.seeds, d.regime)}


def _reeval_check(d: Design, r: Reading) -> dict:
    return {"check": check_rows(r.out, designs.CHECK, r.seeds, d.regime)}


def _levels(d: Design, r: Reading) -> dict:
    """Each run's mean pass@1 (SD) and seeds below :attr:`Design.reference`, per regime of ``level_regimes``."""
    per = run_levels(r.df[r.df.seed.isin(r.seeds)], d.split)
    if not d.level_regimes:
        return {"levels": level_table(per, ("method",), d.reference, sort=False).to_dict(orient="records")}
    parts = [per] if d.reference in NO_RL else [per[per.regime == g] for g in d.level_regimes]  # untrained: every lr's
    return {"levels": pd.concat([level_table(p, ("regime", "method"), d.reference, sort=False) for p in parts],
                                ignore_index=True).to_dict(orient="records")}


#: What the ``split`` measure calls DDRL - TTRL and its parts
PARTS = {"A1": "BCS - TTRL", "A2": "BCS+DAE - BCS", "A3": "DDRL - BCS+DAE", "M1": "DDRL - TTRL"}


def _split(d: Design, r: Reading) -> dict:
    """M1 (DDRL - TTRL) and its parts, the design's claims, on the first claim's seeds."""
    few = r.df[r.df.seed.isin(r.seeds)]
    return {"split": [{"part": PARTS[c], "claim": c, "points": float(claim_matrix(few, c, d.regime).to_numpy().mean())}
                      for c in (*d.registered, "M1")]}


def c2_values(questions: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Amendment 52's C2 per seed: 100 x (extra-step s / its RL phase s - COR s / DDRL's RL phase s), ``c2``.
    Each time is over its own run (timed on different nights); ``registered``: 100 x (extra - COR) / DDRL's."""
    t = steps.groupby(["method", "seed", "phase"])["time/step_s"].sum()
    cor = questions[questions.method == "ddrl"].groupby("seed")["cor_seconds"].first()
    rows = []
    for s in sorted(cor.index):
        extra, rl_add, rl_ddrl = t.get(("additional_rl", s, "extra")), t.get(("additional_rl", s, "rl")), t.get(
            ("ddrl", s, "rl"))
        if None in (extra, rl_add, rl_ddrl):
            continue
        rows.append({"seed": int(s), "extra_s": extra, "rl_additional_s": rl_add, "cor_s": cor[s], "rl_ddrl_s": rl_ddrl,
                     "c2": 100 * (extra / rl_add - cor[s] / rl_ddrl), "registered": 100 * (extra - cor[s]) / rl_ddrl})
    return pd.DataFrame(rows)


def _c2(d: Design, r: Reading) -> dict:
    """C2's entry (t interval over seeds of :func:`c2_values`) appended, and the per-seed times."""
    steps = read_csvs(csv_path(r.out, d.regime, m, s, steps=True) for s in r.seeds for m in ("ddrl", "additional_rl"))
    c2 = c2_values(r.df, steps)
    if sorted(c2.seed) != sorted(r.seeds):
        raise ValueError(f"{r.out}: C2 needs every seed's step times and COR seconds; have seeds {sorted(c2.seed)}")
    est, lo, hi = mean_ci(c2.c2)
    e = {**entry("C2", SAME_BASE[d.regime], est, lo, hi, len(c2), r.analysis["entries"][0]["n_questions"]),
         "regime": d.regime}
    return {"entries": [*r.analysis["entries"], *with_half_width(validate([e], d.regime))],
            "c2": c2.to_dict(orient="records")}


def _divergence(d: Design, r: Reading) -> dict:
    """Each run repeating DDRL's RL phase: first RL step off DDRL's (-1: none); unlisted ones raise (Amendment 9)."""
    runs = [m for m in d.evaluates if m in SHARES_DDRL_RL]
    steps = read_csvs(csv_path(r.out, d.regime, m, s, steps=True) for s in r.seeds for m in (*runs, "ddrl"))
    div = rl_divergence(steps, runs)
    new = [(d.regime, x.method, int(x.seed)) for x in div.itertuples() if x.diverged_at >= 0
           and KNOWN_DIVERGENCES.get((d.regime, x.method, int(x.seed))) != x.diverged_at]
    if new:
        raise ValueError(f"{', '.join(runs)} runs off their DDRL run's trajectory, not in "
                         f"study_plan.KNOWN_DIVERGENCES: {new} (plan Amendment 9: list them there and name them in the "
                         "results)")
    return {"divergence": div.to_dict(orient="records")}


def _agreeing(d: Design, r: Reading) -> dict:
    """The first claim again, no verdict, on the seeds whose runs never left DDRL's trajectory (None below 2)."""
    same = sorted(x["seed"] for x in r.analysis["divergence"] if x["diverged_at"] < 0)
    if len(same) < 2:
        return {"agreeing": None}
    first = r.analysis["entries"][0]
    if same != sorted(r.seeds):
        first = bootstrap_entry(first["id"], d.regime, claim_matrix(r.df[r.df.seed.isin(same)], first["id"], d.regime),
                                r.n_boot, SAME_BASE[d.regime])
    return {"agreeing": {k: v for k, v in first.items() if k not in ("verdict", "half_width")} | {"seeds": same}}


# The learning rate (Amendments 39-42, 54)

#: Amendment 39: held-out pass@1 of the method's lr/10 run minus its default-lr run, paired by seed and question;
#: sign +1, margin 1 point
LR_HELDOUT = {"LxT": ("ttrl", "TTRL at lr/10 - TTRL at the default lr, held-out"),
              "LxD": ("ddrl", "DDRL at lr/10 - DDRL at the default lr, held-out")}

#: Amendment 40: id -> (what, kind, method or None, expected sign, margin). Kinds: "dist" the held-out KL at lr/10 minus
#: the default lr, paired by seed (1e-3 nats/token); "slope" held-out pass@1 per 1e-3 of held-out KL within learning
#: rates (the three methods' runs, one intercept per learning rate); "adjusted" a group minus the default-lr runs at
#: equal held-out KL; "residual" the method's lr/10 held-out gain minus x3h_slope() x its distance difference (points)
LR_DRIFT = {
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

#: Amendment 41: id -> (what, slope: "registered" = Amendment 21's X3h, "w4" = this build's W4); sign 0, margin 1
COR_DRIFT = {"Y1": ("held-out pass@1, COR alone - (untrained + registered slope x COR alone's held-out KL) [points]",
                    "registered"),
             "Y2": ("held-out pass@1, COR alone - (untrained + this build's slope W4 x COR alone's held-out KL) "
                    "[points]", "w4")}

#: Amendment 42: id -> (what, kind, line, expected sign, margin). "mid": the run's gain above the midpoint of H and the
#: named line (L, or R = Amendment 21's registered X3h); "resid": the run's gain minus the named reading; per seed the
#: three runs' mean
LR_CURVE = {
    "Z1": ("held-out gain minus the midpoint of H (free start) and L (line through the base) at the run's KL [points]",
           "mid", "L", +1, 0.0),
    "Z2": ("held-out gain minus the midpoint of H and R (the registered slope X3h through the base) [points]", "mid",
           "R", +1, 0.0),
    "Z3": ("held-out gain minus H (free start, then a line) at the run's KL [points]", "resid", "H", 0, 1.0),
    "Z4": ("held-out gain minus L (straight line through the base) at the run's KL [points]", "resid", "L", 0, 1.0),
}

LR_GROUPS = {"amc_like": "default", "amc_like_lr3": "lr3", SMALL_LR: "lr10"}  # regime -> its learning rate's group

#: Amendment 54: the descriptive runs beside the decided ones, each (regime, seeds)
DYNAMICS_DESCRIBED = (("math500_like", tuple(range(46))), (SMALL_LR, tuple(range(19))), ("amc_like", tuple(range(19))))


def _written(d: Design, r: Reading, written: Callable[[int], bool], least: int) -> list[int]:
    seeds = [s for s in r.seeds if written(s)]
    if len(seeds) < least:
        raise ValueError(f"{r.out}: {d.tag} reads seeds with every file written (at least {least}); seeds {r.seeds}, "
                         f"complete {seeds}")
    return seeds


def _t_entry(cid: str, regime: str, metric: str, sign: int, margin: float, r: dict, n_seeds: int) -> dict:
    return {"id": cid, "regime": regime, "metric": metric, "expected_sign": sign, "estimate": r["estimate"],
            "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n_seeds": n_seeds,
            "verdict": verdict(r["ci_low"], r["ci_high"], sign, margin)}


def across_lr(df: pd.DataFrame, method: str, default: str) -> pd.DataFrame:
    """Seeds x questions (points): ``method``'s lr/10 run minus its run in ``default``, same seed and question."""
    a = df[df.split == HELDOUT_X]

    def pivot(regime: str) -> pd.DataFrame:
        return a[(a.regime == regime) & (a.method == method)].pivot(index="seed", columns="question", values="pass@1")

    small, base = pivot(SMALL_LR), pivot(default)
    if not (small.index.equals(base.index) and small.columns.equals(base.columns)):
        raise ValueError(f"{method}: the lr/10 and default-lr runs cover other seeds or questions")
    return 100 * (small - base)


def _lr_heldout(d: Design, r: Reading) -> dict:
    """Amendment 39: :data:`LR_HELDOUT`; descriptive, held-out levels at both learning rates, runs reproduced."""
    reads = ((d.regime, HELDOUT_X_METHODS), (SMALL_LR, tuple(m for m, _ in LR_HELDOUT.values())))
    paths = lambda s: [heldout_x_path(r.out, g, m, s) for g, ms in reads for m in ms]
    seeds = _written(d, r, lambda s: all(p.is_file() for p in paths(s)), 2)
    df = read_csvs(heldout_x_path(r.out, g, m, s) for g, ms in reads for m in ms for s in seeds)
    entries = [amendment_entry(cid, d.regime, what, f"held-out pass@1, {what} [points]", f"{m} ({SMALL_LR})",
                               f"{m} ({d.regime})", across_lr(df, m, d.regime).to_numpy(), MARGIN, r.n_boot)
               for cid, (m, what) in LR_HELDOUT.items()]
    per = run_levels(df, HELDOUT_X)
    lv = level_table(per, ("regime", "method"), d.reference, sort=False)  # every row against the untrained run
    trained = df[df.regime == d.regime].drop_duplicates(["method", "seed"])
    return {"seeds": seeds, "entries": with_half_width(entries), "levels": lv.to_dict(orient="records"),
            "seed_pass1": per.to_dict(orient="records"), **reproduced_counts(trained)}


def untrained_rows(out: str | Path, regime: str) -> pd.DataFrame:
    """The untrained model's drift-table rows in ``regime``: held-out pass@1 (points) per seed, KL 0."""
    base = heldout_rows(out, regime, ("no_adaptation",)).groupby("seed")["accuracy"].mean()
    return pd.DataFrame({"method": "no_adaptation", "seed": base.index, "heldout": base.to_numpy(), "kl_heldout": 0.0,
                         "lr": "none"})


def heldout_gains(runs: pd.DataFrame) -> pd.DataFrame:
    """A drift table's trained runs with ``gain``: held-out pass@1 minus the seed's untrained model's."""
    base = runs[runs["lr"] == "none"].set_index("seed")["heldout"]
    rl = runs[runs["lr"] != "none"]
    return rl.assign(gain=rl["heldout"] - base.loc[rl["seed"]].to_numpy()).reset_index(drop=True)


def _kl_dir(r: Reading) -> Path:
    return Path(r.out).parent / "lr_drift"


def _lr_drift(d: Design, r: Reading) -> dict:
    """Amendment 40: :data:`LR_DRIFT`; descriptive, each group's held-out pass@1 and KL, predicted and actual gains."""
    groups = {g: lr for g, lr in LR_GROUPS.items() if g in (d.regime, SMALL_LR)}
    dest = _kl_dir(r)
    seeds = _written(d, r, lambda s: all(drift_path(dest, g, m, s, "kl").is_file() for g in groups
                                          for m in LR_METHODS), 3)
    t = pd.concat([*(seed_table(r.out, g, LR_METHODS, dest).assign(lr=lr) for g, lr in groups.items()),
                   untrained_rows(r.out, d.regime)], ignore_index=True)
    t = t[t["seed"].isin(seeds)].reset_index(drop=True)
    slope = x3h_slope()
    wide = t[t["lr"] != "none"].pivot_table(index=["method", "seed"], columns="lr", values=["heldout", "kl_heldout"])
    by_lr = t.assign(method=t["lr"])  # kl_fit's groups: the learning rates, methods pooled
    fit = kl_fit(by_lr[by_lr["lr"] != "none"], "lr10", "default", x="kl_heldout")
    entries, gains = [], []
    for cid, (what, kind, m, sign, margin) in LR_DRIFT.items():
        if kind in ("dist", "residual"):
            w = wide.loc[m]
            dk = w[("kl_heldout", "lr10")] - w[("kl_heldout", "default")]
            dh = w[("heldout", "lr10")] - w[("heldout", "default")]
            x = paired_t(dk if kind == "dist" else dh - slope * dk)
            if kind == "residual":
                gains.append({"method": m, "measured_gain": float(dh.mean()), "predicted_gain": float(slope * dk.mean()),
                              "kl_difference": float(dk.mean())})
        elif kind == "slope":
            x = fit["slope"]
        else:
            x = fit["adjusted"] if m == "lr10" else kl_fit(by_lr[by_lr["lr"] != "lr10"], "none", "default",
                                                           x="kl_heldout")["adjusted"]
        entries.append(_t_entry(cid, d.regime, what, sign, margin, x, len(seeds)))
    levels = t.groupby(["lr", "method"], sort=False)[["heldout", "kl_heldout"]].agg(["mean", "std"])
    levels.columns = [f"{a}_{b}" for a, b in levels.columns]
    return {"seeds": seeds, "registered_slope": slope, "entries": with_half_width(entries), "gains": gains,
            "levels": levels.reset_index().to_dict(orient="records"), "runs": t.to_dict(orient="records")}


def _cor_drift(d: Design, r: Reading) -> dict:
    """Amendment 41: :data:`COR_DRIFT`, paired t over seeds; descriptive, means and Amendment 40's RL runs beside."""
    kl_json = lambda s: drift_path(_kl_dir(r), "amc_like", COR_ONLY, s, "kl")
    seeds = _written(d, r, lambda s: kl_json(s).is_file(), 3)
    recs = {s: json.loads(kl_json(s).read_text()) for s in seeds}
    if not all(x["adapted_reproduced"] for x in recs.values()):
        raise ValueError(f"{r.out}: {d.tag} reads seeds each reproducing its committed adapted rows; seeds {seeds}")
    held = heldout_rows(r.out, d.regime, (COR_ONLY, "no_adaptation")).groupby(["method", "seed"])["accuracy"].mean()
    kl = pd.Series({s: x["kl"] for s, x in recs.items()})
    gain = pd.Series({s: held[COR_ONLY, s] - held["no_adaptation", s] for s in seeds})
    a40 = json.loads((Path(r.out).parent / "lr_drift.json").read_text())
    slopes = {"registered": x3h_slope(), "w4": next(e for e in a40["entries"] if e["id"] == "W4")["estimate"]}
    rl = heldout_gains(pd.DataFrame(a40["runs"]))
    rl = rl.assign(resid=rl["gain"] - slopes["registered"] * rl["kl_heldout"])
    beside = rl.groupby(["lr", "method"], sort=False).agg(kl=("kl_heldout", "mean"), residual=("resid", "mean"),
                                                          residual_sd=("resid", "std")).reset_index()
    entries = [_t_entry(cid, d.regime, what, 0, 1.0, paired_t(gain - slopes[which] * kl), len(seeds))
               for cid, (what, which) in COR_DRIFT.items()]
    return {"seeds": seeds, "slopes": slopes, "entries": with_half_width(entries), "kl_mean": float(kl.mean()),
            "kl_sd": float(kl.std()), "heldout_gain_mean": float(gain.mean()),
            "rl_beside": beside.to_dict(orient="records"),
            "runs": [{"seed": s, "kl_heldout": float(kl[s]), "heldout": float(held[COR_ONLY, s]),
                      "heldout_gain": float(gain[s])} for s in seeds]}


def fit_readings(runs: pd.DataFrame) -> dict:
    """Least-squares L (slope through 0) and H ((k0, b) of g = -b max(0, k - k0)) on gains, with their RSS.
    On Amendment 40's runs they give :data:`ddrl.study.drift.LINE`, ``HINGE_K0`` and ``HINGE_B``."""
    k, g = runs["kl_heldout"].to_numpy(float), runs["gain"].to_numpy(float)
    line = float(k @ g / (k @ k))
    fit = least_squares(lambda p: g + p[1] * np.maximum(0.0, k - p[0]), [3.0, 0.4])
    return {"line": line, "hinge_k0": float(fit.x[0]), "hinge_b": float(fit.x[1]),
            "rss_line": float(((g - line * k) ** 2).sum()), "rss_hinge": float((fit.fun ** 2).sum())}


def amendment40_runs(xeon: str | Path = RESULTS / "replication_xeon") -> pd.DataFrame:
    """Amendment 40's committed runs with their held-out gains."""
    return heldout_gains(pd.DataFrame(json.loads((Path(xeon) / "lr_drift.json").read_text())["runs"]))


def _lr_curve(d: Design, r: Reading) -> dict:
    """Amendment 42: :data:`LR_CURVE`, paired t over seeds; descriptive, the readings refit, RMSE, KL and gains."""
    dest = _kl_dir(r)
    seeds = _written(d, r, lambda s: all(drift_path(dest, d.regime, m, s, "kl").is_file() and
                                          heldout_x_path(r.out, d.regime, m, s).is_file() for m in LR_METHODS), 5)
    new = pd.concat([seed_table(r.out, d.regime, d.methods, dest).assign(lr=LR_GROUPS[d.regime]),
                     untrained_rows(r.out, SMALL_LR)], ignore_index=True)  # Amendment 38's untrained model
    new = heldout_gains(new[new["seed"].isin(seeds)])
    k = new["kl_heldout"].to_numpy(float)
    per_run = new.assign(**{f"pred_{x}": reading(x, k) for x in "LRH"})
    entries = []
    for cid, (what, kind, line, sign, margin) in LR_CURVE.items():
        x = per_run["gain"] - (per_run[f"pred_{line}"] + per_run["pred_H"]) / 2 if kind == "mid" else \
            per_run["gain"] - per_run[f"pred_{line}"]
        entries.append(_t_entry(cid, d.regime, what, sign, margin, paired_t(x.groupby(per_run["seed"]).mean()
                                                                             .to_numpy()), len(seeds)))
    old = amendment40_runs(Path(r.out).parent)
    both = pd.concat([old, new], ignore_index=True)
    levels = both.groupby(["lr", "method"], sort=False).agg(
        kl_mean=("kl_heldout", "mean"), kl_sd=("kl_heldout", "std"), gain_mean=("gain", "mean"),
        gain_sd=("gain", "std"), n=("seed", "nunique")).reset_index()
    rows = []  # adapted pass@1 (points) of every run at the three learning rates and of the untrained model
    for g, lr, methods in (("amc_like", "none", ("no_adaptation",)), *((g, lr, d.methods) for g, lr in LR_GROUPS.items())):
        for m in methods:
            for s in sorted(set(seeds) | set(old["seed"])):
                p = adapted_x_path(r.out, g, m, s)  # the H1x run's kept adapted rows, else its study CSV
                p = p if p.is_file() else csv_path(r.out, g, m, s)
                if p.is_file():
                    x = pd.read_csv(p)
                    rows.append({"lr": lr, "method": m, "seed": s,
                                 "adapted": 100 * x.loc[x["split"] == "adapted", "pass@1"].mean()})
    ad = pd.DataFrame(rows, columns=["lr", "method", "seed", "adapted"])
    base = ad[ad["lr"] == "none"].set_index("seed")["adapted"]
    ad = ad[ad["lr"] != "none"]
    ad = ad.assign(adapted_gain=ad["adapted"] - base.loc[ad["seed"]].to_numpy())
    ad = ad.merge(both[["lr", "method", "seed", "gain"]], on=["lr", "method", "seed"])
    trade = ad.groupby(["lr", "method"], sort=False).agg(
        adapted_gain=("adapted_gain", "mean"), adapted_gain_sd=("adapted_gain", "std"),
        heldout_gain=("gain", "mean"), n=("seed", "nunique")).reset_index()
    rmse = {x: float(np.sqrt(((per_run["gain"] - per_run[f"pred_{x}"]) ** 2).mean())) for x in "LRH"}
    return {"seeds": seeds, "readings": {"L": LINE, "R": x3h_slope(), "H": [HINGE_K0, HINGE_B]},
            "refit": fit_readings(old), "entries": with_half_width(entries), "rmse": rmse,
            "levels": levels.to_dict(orient="records"), "tradeoff": trade.to_dict(orient="records"),
            "runs": per_run.to_dict(orient="records")}


def advantage_runs(out: str | Path, regime: str, seeds: Sequence[int]) -> pd.DataFrame:
    """Per DDRL run of ``regime``: ``d2``, the first and last quarter's mean advantage (x 100), the RL steps."""
    rows = []
    for s in seeds:
        p = csv_path(out, regime, "ddrl", s, steps=True)
        if not p.is_file():
            raise FileNotFoundError(f"{p}: the committed DDRL step log of seed {s} in {regime} is missing")
        st = pd.read_csv(p)
        adv = st[st.phase == "rl"].sort_values("step")["adv/mean"].to_numpy(dtype=float)
        first, last = advantage_quarters(adv)
        rows.append({"regime": regime, "seed": int(s), "steps": len(adv), "d2": advantage_statistic("D2", adv),
                     "first": first, "last": last})
    return pd.DataFrame(rows)


def advantage_summary(per: pd.DataFrame) -> dict:
    """One regime's runs: D2's mean and t interval, the quarters' means, runs starting below / ending above 0."""
    est, lo, hi = mean_ci(per.d2)
    return {"regime": per.regime.iloc[0], "n_seeds": len(per), "steps": int(per.steps.iloc[0]), "estimate": est,
            "ci_low": lo, "ci_high": hi, "first": float(per["first"].mean()), "last": float(per["last"].mean()),
            "first_below_0": int((per["first"] < 0).sum()), "last_above_0": int((per["last"] > 0).sum())}


def _dynamics(d: Design, r: Reading) -> dict:
    """Amendment 54: D2 from the DDRL runs' step logs, a ``summary`` per regime and the ``runs``."""
    per = [advantage_runs(r.out, g, s) for g, s in ((d.regime, r.seeds), *DYNAMICS_DESCRIBED)]
    n_q = pd.read_csv(csv_path(r.out, d.regime, "ddrl", r.seeds[0]), dtype={"question": str}).query(
        "split == 'adapted'").question.nunique()
    head = advantage_summary(per[0])
    d2 = {**entry("D2", SAME_BASE[d.regime], head["estimate"], head["ci_low"], head["ci_high"], len(r.seeds), n_q),
          "regime": d.regime}
    return {"entries": with_half_width(validate([d2], d.regime)), "summary": [advantage_summary(p) for p in per],
            "runs": pd.concat(per, ignore_index=True).to_dict(orient="records")}


# 768 MATH-500-like questions (Amendments 26, 27)

DEVICES_FILE = "devices.json"  # {seed: device name} of the seeds computed on a GPU


def gpu_seeds(out: str | Path = WIDE_OUT) -> dict[int, str]:
    """The seeds imported from a GPU, with the device's name."""
    path = Path(out) / DEVICES_FILE
    return {int(k): v for k, v in json.loads(path.read_text()).items()} if path.is_file() else {}


def device_check(d: pd.DataFrame, devices: dict[int, str], confidence: float = 0.95) -> dict | None:
    """The GPU seeds' mean effect (row means of ``d``) minus the CPU seeds', Welch's t interval; ``shifted``: it
    excludes 0. None below 2 seeds on either device."""
    eff = d.mean(axis=1)
    gpu = eff[[s in devices for s in eff.index]]
    cpu = eff[[s not in devices for s in eff.index]]
    if len(gpu) < 2 or len(cpu) < 2:
        return None
    ci = sps.ttest_ind(gpu, cpu, equal_var=False).confidence_interval(confidence)
    return {"gpu_minus_cpu": float(gpu.mean() - cpu.mean()), "ci_low": float(ci.low), "ci_high": float(ci.high),
            "n_gpu": int(len(gpu)), "n_cpu": int(len(cpu)), "shifted": bool(ci.low > 0 or ci.high < 0)}


def _device_check(d: Design, r: Reading) -> dict:
    """Amendment 26: the claims, on the CPU seeds alone where the :func:`device_check` shifted."""
    done = analysed_seeds(d, r.out, r.seeds)
    df = load_questions(r.out)
    df = df[df.seed.isin(done)]
    devices = {s: v for s, v in gpu_seeds(r.out).items() if s in done}
    res: dict = {"regime": d.regime, "seeds": done, "gpu_seeds": devices, "entries": [], "all_seeds": [],
                 "cpu_seeds": [], "device_check": {}}
    for cid in d.registered:
        m = claim_matrix(df, cid, d.regime)
        if m is None:
            continue
        every = bootstrap_entry(cid, d.regime, m, r.n_boot, "math500_like")  # the paper's MATH-500 number and sign
        cpu_rows = [s for s in m.index if s not in devices]
        cpu = bootstrap_entry(cid, d.regime, m.loc[cpu_rows], r.n_boot, "math500_like") \
            if devices and len(cpu_rows) >= 2 else every
        check = device_check(m, devices)
        use = cpu if check and check["shifted"] else every
        note = "GPU seeds shifted the effect (device check): CPU seeds only" if use is not every else ""
        res["entries"].append({**use, **({"note": note} if note else {})})
        res["all_seeds"].append(every)
        res["cpu_seeds"].append(cpu)
        res["device_check"][cid] = check
    for k in ("entries", "all_seeds", "cpu_seeds"):
        with_half_width(validate(res[k], f"{d.regime} {k}"))
    return res


def _wide_arms(d: Design, r: Reading) -> list[dict]:
    """Amendment 27 (CPU only): its claims, each on the seeds with both runs."""
    seeds = analysed_seeds(d, r.out, r.seeds)
    gpu = set(gpu_seeds(r.out))
    if gpu & set(seeds):
        raise ValueError(f"Amendment 27 is CPU-only; seeds {sorted(gpu & set(seeds))} were computed on a GPU")
    df = load_questions(r.out)
    df = df[df.seed.isin(set(seeds))]
    entries = []
    for cid, (a, b, what) in d.claims.items():
        m = paired_matrix(df, d.regime, a, b, "adapted")
        if m is not None:
            rng = np.random.default_rng(derive_seed(0, "wide-arms", cid))
            entries.append({"id": cid, "metric": f"adapted pass@1, {what} [points]", "regime": d.regime, "a": a,
                            "b": b, "sign": +1, **decided(m.to_numpy(), rng, +1, MARGIN, r.n_boot)})
    return entries


# COR alone (Amendments 34-38): designs spanning regimes, claims keyed (id, regime)


def _cor_alone_seeds(d: Design, r: Reading, what: str) -> dict[str, tuple[int, ...]]:
    """Seeds per regime (to a clock: those with every CSV); a ValueError naming ``what`` while any is missing."""
    seeds, need = {}, _reads(d)
    for p in regime_designs(d):
        ss = tuple(s for s in p.seeds if s in r.seeds)
        if p.cutoff:
            made = need[p.regime] + [(p.regime, m) for m in p.evaluates]
            ss = tuple(s for s in ss if all(csv_path(r.out, f, m, s).is_file() for f, m in made))
            if len(ss) < 2:
                raise ValueError(f"{r.out}: {d.tag}'s {p.regime} has {len(ss)} complete seeds; its analysis needs at "
                                 "least 2")
        seeds[p.regime] = ss
    left = {g: s for g, s in _unwritten(d, r.out, seeds).items() if s}
    if left:
        raise ValueError(f"{r.out}: {d.tag} incomplete, {what} missing for seeds {left}; the plan reads no estimate "
                         "before every seed is complete")
    return seeds


def _keyed_entries(d: Design, df: pd.DataFrame, n_boot: int) -> list[dict]:
    metric = "held-out pass@1" if d.split == HELDOUT_X else "adapted pass@1"
    return [amendment_entry(cid, g, what, f"{metric}, {what} [points]", a, b,
                            paired_matrix(df, g, a, b, d.split).to_numpy(), MARGIN, n_boot)
            for (cid, g), (a, b, what) in d.claims.items()]


def _cor_alone(d: Design, r: Reading) -> dict:
    """Amendments 34-37: the adapted claims; descriptive, levels with maj@16 and COR alone's kept rollouts."""
    seeds, need = _cor_alone_seeds(d, r, "a CSV the adapted claims read"), _reads(d)
    df = read_csvs(csv_path(r.out, f, m, s) for own in (True, False) for g in seeds for s in seeds[g]
                   for f, m in need[g] if (f == g) == own)
    per = run_levels(df).merge(run_levels(df, value="maj@n", name="maj"), on=["regime", "method", "seed"])
    lv = []
    for regimes in _panels(d, seeds).values():
        sub = per[per.regime.isin(regimes)]
        t = level_table(sub, ("regime", "method"), d.reference, sort=False)
        t["maj"] = sub.groupby(["regime", "method"], sort=False)["maj"].mean().to_numpy()
        lv += t.to_dict(orient="records")
    a = df[(df.split == "adapted") & (df.method == COR_ONLY)]
    kept = a.drop_duplicates(["regime", "seed"]).groupby("regime", sort=False)["cor_kept"].mean()
    return {"seeds": {g: list(s) for g, s in seeds.items()}, "entries": _keyed_entries(d, df, r.n_boot), "levels": lv,
            "cor_kept": {g: float(k) for g, k in kept.items()}, "seed_pass1": per.to_dict(orient="records")}


def _cor_alone_heldout(d: Design, r: Reading) -> dict:
    """Amendments 34 and 38: the held-out claims; descriptive, levels, runs reproduced and ``same_as_base``."""
    seeds, need = _cor_alone_seeds(d, r, "a held-out evaluation"), _reads(d)
    df = read_csvs(heldout_x_path(r.out, g, m, s) for g in seeds for _, m in need[g] for s in seeds[g])
    per = run_levels(df, HELDOUT_X)
    lv = pd.concat([level_table(per[per.regime == g], ("method",), d.reference, sort=False).assign(regime=g)
                    for g in seeds])
    res = {"seeds": {g: list(s) for g, s in seeds.items()}, "entries": _keyed_entries(d, df, r.n_boot),
           "levels": lv.to_dict(orient="records"), "seed_pass1": per.to_dict(orient="records"),
           **reproduced_counts(df[df.method.isin(d.evaluates)].drop_duplicates(["regime", "method", "seed"]))}
    sides = [(adapted_x_path(r.out, g, m, s), csv_path(r.out, g, m, s), csv_path(r.out, SAME_BASE[g], m, s))
             for g in seeds if g in SAME_BASE for _, m in need[g] if m in NO_RL for s in seeds[g]]
    same = [same_as_registered(pd.read_csv(x if x.is_file() else own, dtype={"question": str}).query(
        "split == 'adapted'"), base) for x, own, base in sides]
    if same:
        res |= {"same_as_base": sum(x is True for x in same), "same_as_base_checked": sum(x is not None for x in same)}
    return res


# Policy drift (Amendments 21-25) and the registered analyses

def _drift(d: Design, r: Reading) -> list[dict]:
    """Amendments 21-25: :attr:`Design.drift`'s KL measure, or each arm of that set against its method."""
    rng = np.random.default_rng(0)
    if d.drift in ARMS:
        return analyse_arms(r.out, d.regime, rng, d.drift, x3h_slope() if d.drift in PREDICTED_FROM_SLOPE else None)
    return drift_analysis(r.out, d.regime, rng, d.drift_dir, exploratory=d.exploratory, measure=d.drift)


def _claims(d: Design, r: Reading) -> list[dict]:
    return analyse_claims(r.out, load_regimes(regimes_path(d.results)), r.n_boot)[0]


def _seed_pass1(d: Design, r: Reading) -> dict:
    per = run_levels(r.df, d.split)
    per = per.sort_values("seed", kind="stable") if d.level_regimes else per.drop(columns="regime")
    return {"seed_pass1": per.to_dict(orient="records")}


def _p_values(d: Design, r: Reading) -> dict:
    """Each claim entry's p-value from the draws of its interval (:func:`ddrl.study.strength.entry_p`): what Stage
    3's correction over its regimes reads (plan Stage 3 item 4; :func:`ddrl.study.strength.stage_correction`)."""
    return {"p": {e["id"]: entry_p(e, paired_matrix(r.df, e["regime"], e["a"], e["b"], d.split).to_numpy(), r.n_boot)
                  for e in r.analysis["entries"]}}


def _vote(d: Design, r: Reading) -> dict:
    """The vote by quarter of the RL steps, per regime of ``level_regimes``."""
    steps = read_csvs(csv_path(r.out, g, m, s, steps=True) for s in r.seeds for g in d.level_regimes for m in d.methods)
    vote = pd.concat([vote_by_quarter(seeds=r.seeds, regime=g, steps=steps) for g in d.level_regimes],
                     ignore_index=True)
    return {"vote": vote.to_dict(orient="records")}


def _rl_minutes(d: Design, r: Reading) -> dict:
    """Each run's mean RL wall time in the design's regime (minutes)."""
    rl = r.df[(r.df.regime == d.regime) & (r.df.split == "adapted")].groupby(["method", "seed"]).rl_seconds.first()
    return {"rl_minutes": (rl.groupby("method").mean() / 60).round(2).to_dict()}


# Table 1, COR 4x at 1e-6 (Amendments 49-51, 62), and the repeat check

def t1f_missing(out: str | Path, seeds: Sequence[int], regimes: Sequence[str]) -> dict[str, list[int]]:
    """Per regime, the seeds whose ``dae`` (under ``table1_fixed``) or TTRL CSV is missing."""
    return {r: sorted(set(seeds) - (set(complete_seeds(Path(out, T1F_DIR), r, ("dae",)))
                                    & set(complete_seeds(out, r, ("ttrl",))))) for r in regimes}


def t1f_entry(df: pd.DataFrame, regime: str, n_boot: int = 4000, stream: str | None = None) -> dict:
    """T1f (``dae`` - TTRL) with T1's Table 1 number, sign and margin (Amendments 50, 51)."""
    t1 = get_claim("T1")
    return {**amendment_entry("T1f", regime, "fixed +1/-1 advantages instead of GRPO's help TTRL (Table 1, the paper's "
                              "text)", "pass@1 dae - GRPO [points]", "dae", "ttrl",
                              paired_matrix(df, regime, "dae", "ttrl", "adapted"), t1.margin, n_boot, stream=stream),
            "paper": t1.paper["math500_like"]}


def _t1f(d: Design, r: Reading) -> dict:
    """Amendments 50, 51: T1f per regime; on fresh seeds (51) decided on them alone, ``pooled`` with 50's beside."""
    missing = {g: m for g, m in t1f_missing(r.out, r.seeds, d.level_regimes).items() if m}
    if missing:
        raise ValueError(f"{r.out}: {d.tag} incomplete, seeds missing per regime {missing}; the plan reads no estimate "
                         "before all are complete")
    seen = [s for s in DESIGNS["table1_fixed"].seeds if s not in d.seeds]
    both = sorted({*seen, *r.seeds})
    df = read_csvs([*(csv_path(r.out, g, m, s) for g in d.level_regimes for s in both for m in ("ttrl", "grpo_no_std")),
                    *(csv_path(Path(r.out, T1F_DIR), g, "dae", s) for g in d.level_regimes for s in both)])
    levels = _levels(d, r._replace(df=df))["levels"]
    if not seen:
        return {"seeds": list(r.seeds), "entries": validate([t1f_entry(df, g, r.n_boot) for g in d.level_regimes],
                                                            "table1_fixed"), "levels": levels}
    fresh = df[df.seed.isin(set(r.seeds))]
    pooled = {k: v for k, v in t1f_entry(df, d.regime, r.n_boot, f"{d.regime}/pooled").items() if k != "verdict"}
    return {"seeds": list(r.seeds), "seen": seen,
            "entries": validate([t1f_entry(fresh, d.regime, r.n_boot, f"{d.regime}/fresh")], "table1_fixed_more"),
            "pooled": pooled, "levels": levels}


#: Amendment 62's claims (id -> a, b, split, what: pass@1 a - b on the split, sign +1) and COR's four settings
#: (method -> kept multiple, learning rate)
COR_TRADE_CLAIMS = {
    "K1g": (COR_4X_LR10, "bcs_dae", "adapted", "COR 4x at 1e-6 - BCS+DAE (the RL-only weights)"),
    "R1g": (COR_4X_LR10, COR_LR10, "adapted", "COR 4x at 1e-6 - COR 1x at 1e-6"),
    "K1gx": (COR_4X_LR10, "bcs_dae", HELDOUT_X, "COR 4x at 1e-6 - BCS+DAE (its cost on fresh questions)"),
    "R1gx": (COR_4X_LR10, COR_LR10, HELDOUT_X, "COR 4x at 1e-6 - COR 1x at 1e-6")}

COR_SETTINGS = {COR_LR10: (1, "1e-6"), COR_4X_LR10: (4, "1e-6"), "ddrl": (1, "1e-5"), COR_4X: (4, "1e-5")}


def trade(levels: dict[str, Sequence[dict]]) -> list[dict]:
    """Per COR setting: mean adapted gain and held-out change over BCS+DAE (points), the seeds below it per split."""
    by = {sp: {r["method"]: r for r in rows} for sp, rows in levels.items()}
    return [{"method": m, "keep": k, "cor_lr": lr,
             **{sp: by[sp][m]["pass1"] - by[sp]["bcs_dae"]["pass1"] for sp in by},
             **{f"{sp}_below": by[sp][m]["below_reference"] for sp in by}} for m, (k, lr) in COR_SETTINGS.items()]


def _cor_trade(d: Design, r: Reading) -> dict:
    """Amendment 62: :data:`COR_TRADE_CLAIMS` on seeds complete on both splits; levels, :func:`trade`, reproduced."""
    gone = set().union(*(missing_seeds(_split_dir(r.out, sp), d.regime, ms, r.seeds)
                         for sp, ms in COR_TRADE_RUNS.items()))
    done = seeds_to_analyse(r.seeds, set(r.seeds) - gone, f"{r.out}: {d.tag}", d.cutoff)
    df = {sp: read_csvs(csv_path(_split_dir(r.out, sp), d.regime, m, s) for m in ms for s in done)
          for sp, ms in COR_TRADE_RUNS.items()}
    entries = [amendment_entry(cid, d.regime, what, f"{'adapted' if sp == 'adapted' else 'held-out'} pass@1, {what} "
                               "[points]", a, b, paired_matrix(df[sp], d.regime, a, b, sp).to_numpy(), MARGIN, r.n_boot)
               for cid, (a, b, sp, what) in COR_TRADE_CLAIMS.items()]
    levels = {sp: level_table(run_levels(x, sp), ("method",), d.reference, sort=False).to_dict(orient="records")
              for sp, x in df.items()}
    held = df[HELDOUT_X]
    return {"regime": d.regime, "seeds": list(done), "entries": with_half_width(validate(entries, d.regime)),
            "levels": levels, "trade": trade(levels),
            **reproduced_counts(held[held.method == COR_4X_LR10].drop_duplicates("seed"))}


def check_rows(out: str | Path, check: str | Path, seeds: Sequence[int], regime: str = SMALL_LR,
               split: str = "adapted") -> dict | None:
    """The repeat check (Amendments 56, 59, 60): questions and seeds whose re-evaluated DDRL pass@1 equals the committed
    one, and R1 against the re-evaluated runs; None before every re-evaluation is written."""
    out, check = _split_dir(out, split), _split_dir(check, split)
    if missing_seeds(check, regime, ("ddrl",), seeds):
        return None
    again = read_csvs(csv_path(check, regime, "ddrl", s) for s in seeds)
    again = again[again.split == split].set_index(["seed", "question"])["pass@1"]
    df = read_csvs(csv_path(out, regime, m, s) for s in seeds for m in ("ddrl", COR_4X))
    a = df[df.split == split].set_index(["method", "seed", "question"])["pass@1"]
    committed, cor4x = a.loc["ddrl"], a.loc[COR_4X]
    equal = (committed - again.reindex(committed.index)).abs() < 1e-12
    return {"questions_equal": int(equal.sum()), "questions": int(len(equal)),
            "seeds_equal": int(equal.groupby(level="seed").all().sum()),
            "r1_against_reevaluated": float(100 * (cor4x - again.reindex(cor4x.index)).mean())}


#: The named measures, by name (:attr:`Design.measures`, :attr:`Design.whole`)
MEASURES: dict[str, Callable[[Design, Reading], dict]] = {
    "reproduced": _reproduced, "reproduced_by_method": _reproduced_by_method, "heldout_check": _heldout_check,
    "cor_kept": _cor_kept, "retrain_check": _retrain_check, "reeval_check": _reeval_check, "levels": _levels,
    "split": _split, "c2": _c2, "divergence": _divergence, "agreeing": _agreeing, "seed_pass1": _seed_pass1,
    "vote": _vote, "rl_minutes": _rl_minutes,
    "lr_heldout": _lr_heldout, "lr_drift": _lr_drift, "cor_alone_drift": _cor_drift, "lr_curve": _lr_curve,
    "dynamics": _dynamics, "device_check": _device_check, "wide_arms": _wide_arms, "cor_alone": _cor_alone,
    "cor_alone_heldout": _cor_alone_heldout, "drift": _drift, "claims": _claims, "t1f": _t1f, "cor_trade": _cor_trade,
    "p": _p_values}
