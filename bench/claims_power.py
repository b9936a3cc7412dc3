"""Power analysis of the claims study (issue 17) from the pilot data the repository already has.

Inputs (both committed): ``bench/results/train.json`` -- 3 seeds x {no adaptation, TTRL, ETMR, DDRL RL-only,
DDRL + COR} on 64 adapted + 128 held-out questions of the default testbed, run-level pass@1 only (per-question
results were not recorded) -- and ``results/regimes_base.json`` -- the base model's per-question pass@1
(16 samples) in each candidate regime.

Variance components of a paired difference, in pass@1 points^2 (``ddrl.report.stats.VarianceComponents``):

- ``eval``: measured: two evaluations' binomial noise, ``2 mean p(1-p) / 16`` over the regime's questions;
- ``cell`` = eval + seed x question interaction; the interaction is ASSUMED equal to ``eval`` (not measured);
- ``question``: ASSUMED 100 (a 10-point spread of the true per-question effect; not measured);
- ``seed``: from the pilot: the variance over 3 seeds of run-level differences on 64 questions, minus
  ``cell / 64``. Pooled over the between-run pairs of trained methods (TTRL, ETMR, DDRL RL-only, DDRL + COR);
  within-run pairs (COR vs its own RL weights) and held-out transfer (DDRL vs the fixed base) separately.

Writes ``results/power.json``: the components per comparison class, the seeds x questions -> half-width and
MDE (80% power) table, the cheapest design meeting the 2-point target, and the study's compute budget.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SEEDS = (3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
QUESTIONS = (32, 64, 128, 256, 512)
ASSUMED_QUESTION_VAR = 100.0
#: Measured: bench/results/train.json, DDRL RL phase on 64 questions x 8 episodes, OMP_NUM_THREADS=2.
MINUTES_PER_UNIT = 1.5  # one unit = 512 question-visits (64 questions x 8 episodes)
BUDGET_MINUTES = 240


def pilot_seed_variances(train: dict) -> dict[str, list[float]]:
    import pandas as pd

    # bench/results/train.json predates the method names: its "ddrl_rl"/"ddrl_cor" are bcs_dae/ddrl
    df = pd.DataFrame(train["runs"]).replace({"condition": {"ddrl_rl": "bcs_dae", "ddrl_cor": "ddrl"}})
    w = {s: df[df.split == s].pivot(index="seed", columns="condition", values="pass@1") * 100
         for s in ("adapted", "heldout")}
    trained = ["ttrl", "etmr", "bcs_dae", "ddrl"]
    between = [float((w["adapted"][a] - w["adapted"][b]).var(ddof=1))
               for a, b in itertools.combinations(trained, 2) if {a, b} != {"bcs_dae", "ddrl"}]
    return {"between_run": between,
            "within_run": [float((w["adapted"]["ddrl"] - w["adapted"]["bcs_dae"]).var(ddof=1))],
            "heldout_transfer": [float((w["heldout"]["ddrl"] - w["heldout"]["no_adaptation"]).var(ddof=1))]}


def budget(regimes: list[dict]) -> dict:
    """Minutes per seed of the whole study (every claim's runs), in 512-question-visit units."""
    units = {r["name"]: r["n_adapted"] * r["episodes"] / 512 for r in regimes}
    # runs per seed: TTRL, GRPO w/o norm (T1: AIME/MATH only), ETMR (x1.2: measured 106 vs 88 s), BCS, DDRL
    # (gives BCS+DAE, DDRL, the COR 4x variant ~0.15), additional RL (x1.1)
    per_regime = {"aime_like": 1 + 1 + 1.2 + 1 + 1.15 + 1.1, "amc_like": 1 + 1.2 + 1 + 1.15 + 1.1,
                  "math500_like": 1 + 1 + 1.2 + 1 + 1.15 + 1.1, "amc_like_small_lr": 2.0}
    minutes = {k: MINUTES_PER_UNIT * units[k] * per_regime[k] for k in per_regime if k in units}
    minutes["amc_like_weak_base (S1)"] = MINUTES_PER_UNIT * units["amc_like"] * 2.0
    return {"minutes_per_seed": minutes, "total_minutes_per_seed": sum(minutes.values()),
            "seeds_in_budget_today": int(BUDGET_MINUTES // sum(minutes.values())),
            "seeds_in_budget_2x_runner": int(2 * BUDGET_MINUTES // sum(minutes.values()))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default=str(ROOT / "bench" / "results" / "train.json"))
    ap.add_argument("--base", default=str(ROOT / "results" / "regimes_base.json"))
    ap.add_argument("--out", default=str(ROOT / "results" / "power.json"))
    args = ap.parse_args()

    import numpy as np

    from ddrl.report.stats import VarianceComponents, choose_design, eval_noise_variance, power_table

    train = json.loads(Path(args.train).read_text())
    base = json.loads(Path(args.base).read_text())
    pilot = pilot_seed_variances(train)
    q_pilot = train["setup"]["adapted"]
    out = {"pilot": {"source": args.train, "seeds": train["setup"]["seeds"], "questions": q_pilot,
                     "seed_level_variances": pilot},
           "assumptions": {"question_variance": ASSUMED_QUESTION_VAR,
                           "interaction_variance": "equal to the measured evaluation noise"},
           "regimes": {}}
    for r in base["regimes"]:
        cand = next(c for c in base["candidates"] if c["num_ops"] == r["num_ops"])
        p = np.array(cand["per_question"]["pass@1"][: r["n_adapted"]])
        ev = 1e4 * eval_noise_variance(p, n=16)
        cell = 2 * ev
        comps = {}
        for cls, vals in pilot.items():
            v = float(np.mean(vals))
            comps[cls] = VarianceComponents(seed=max(0.0, v - cell / q_pilot), question=ASSUMED_QUESTION_VAR,
                                            cell=cell, eval=ev, source=f"pilot mean of {len(vals)} x var over 3 seeds")
        # S1 is a difference of two between-run differences (independent runs): every component doubles
        b = comps["between_run"]
        comps["difference_of_differences"] = VarianceComponents(2 * b.seed, 2 * b.question, 2 * b.cell, 2 * ev,
                                                                "2 x between_run")
        out["regimes"][r["name"]] = {"n_adapted": r["n_adapted"], "episodes": r["episodes"], "classes": {}}
        for cls, vc in comps.items():
            t = power_table(vc, SEEDS, QUESTIONS)
            at = t[t.questions == r["n_adapted"]]
            out["regimes"][r["name"]]["classes"][cls] = {
                "components": {"seed": vc.seed, "question": vc.question, "cell": vc.cell, "eval": vc.eval},
                "table": t.round(3).to_dict(orient="records"),
                "cheapest_design": choose_design(t),
                "at_regime_questions": at[["seeds", "half_width", "mde", "meets"]].round(2).to_dict(orient="records"),
            }
        print(f"{r['name']}: " + "; ".join(
            f"{cls} seed {c['components']['seed']:.1f} cell {c['components']['cell']:.0f} -> "
            f"{(c['cheapest_design'] or {}).get('seeds')} seeds x {(c['cheapest_design'] or {}).get('questions')} q"
            for cls, c in out["regimes"][r["name"]]["classes"].items()))
    out["budget"] = budget(base["regimes"])
    print(json.dumps(out["budget"], indent=1))
    Path(args.out).write_text(json.dumps(out, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
