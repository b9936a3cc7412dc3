"""Are the claims study's GPU runs exchangeable with its CPU runs? (docs/benchmarks.md, "GPU runs beside CPU runs")

The study's job keys name the device kind because a GPU's kernels round differently and its random streams
differ: a GPU run of a seed is another run than the CPU run of that seed, so the two cannot be paired run by
run. What a reader with a GPU needs to know is whether the *distribution* of runs is the same: if it is,
GPU seeds could extend the committed CPU seeds; if not, a GPU rerun of the study measures something else.

This script compares, on the MATH-500-like regime's adapted questions (the same 256 for both devices), the
seed-level mean pass@1 of each stage-1 method on the GPU with the committed CPU seeds 0-45, and the M1
difference (DDRL - TTRL, taken within each seed on its own device) between the devices. Intervals: Welch's
95% t interval on seed means (the questions are the same set on both sides, so their variance cancels in
the comparison of means; the seeds are independent runs on each side). Verdict per comparison, as the plan
in docs/benchmarks.md registers it: *shifted* (interval excludes 0), *same within 1 point* (interval inside
[-1, 1]), *not resolved* (otherwise). Also printed: the minimum detectable shift at 80% power.

    python bench/gpu_vs_cpu.py --gpu bench/results/gpu_vs_cpu/gpu_runs.tgz --out bench/results/gpu_vs_cpu/summary.json
    python bench/gpu_vs_cpu.py --predict 20     # the half-widths G complete GPU seeds would give (the plan's)
"""
from __future__ import annotations

import argparse
import json
import math
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from ddrl.report.stats import detectable_effect

ROOT = Path(__file__).resolve().parents[1]
CPU_RUNS = ROOT / "results" / "runs"
REGIME = "math500_like"
METHODS = ("no_adaptation", "ttrl", "ddrl")


def seed_means(runs_dir: Path, regime: str = REGIME) -> pd.DataFrame:
    """Seed x method table of mean adapted pass@1 (points), complete seeds only (every method of METHODS)."""
    frames = []
    for m in METHODS:
        for f in sorted((Path(runs_dir) / regime).glob(f"{m}-seed??.csv*")):  # .csv.gz; .csv in older tarballs
            d = pd.read_csv(f)
            d = d[d["split"] == "adapted"]
            frames.append(pd.DataFrame({"method": [m], "seed": [int(d["seed"].iloc[0])],
                                        "pass1": [100.0 * d["pass@1"].mean()], "n_questions": [len(d)]}))
    if not frames:
        raise FileNotFoundError(f"{runs_dir}/{regime}: no {'/'.join(METHODS)}-seedNN.csv files")
    t = pd.concat(frames).pivot(index="seed", columns="method", values="pass1")
    return t.dropna()[list(METHODS)]


def welch(a: np.ndarray, b: np.ndarray) -> dict:
    """mean(a) - mean(b) with Welch's 95% interval (``scipy.stats.ttest_ind``, unequal variances), the verdict of
    the plan's rule and the shift detectable at 80% power (:func:`ddrl.report.stats.detectable_effect`, as the scorecard's
    ``mde``)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    lo, hi = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    verdict = "shifted" if (lo > 0 or hi < 0) else "same within 1 point" if (lo >= -1 and hi <= 1) else "not resolved"
    return {"estimate": a.mean() - b.mean(), "ci_low": lo, "ci_high": hi, "half_width": (hi - lo) / 2,
            "mde_80": detectable_effect((hi - lo) / 2), "n_gpu": len(a), "n_cpu": len(b),
            "sd_gpu": a.std(ddof=1), "sd_cpu": b.std(ddof=1), "verdict": verdict}


def compare(gpu: pd.DataFrame, cpu: pd.DataFrame) -> dict:
    """Every comparison the plan names: each method's GPU - CPU, and (DDRL - TTRL) GPU - CPU."""
    out = {m: welch(gpu[m].to_numpy(), cpu[m].to_numpy()) for m in METHODS}
    out["ddrl_minus_ttrl"] = welch((gpu["ddrl"] - gpu["ttrl"]).to_numpy(), (cpu["ddrl"] - cpu["ttrl"]).to_numpy())
    return out


def predict(n_gpu: int, cpu: pd.DataFrame) -> dict:
    """Half-widths ``n_gpu`` GPU seeds would give if the GPU's seed SD equals the CPU's (the plan's power)."""
    cols = {m: cpu[m] for m in METHODS} | {"ddrl_minus_ttrl": cpu["ddrl"] - cpu["ttrl"]}
    out = {}
    for k, x in cols.items():
        sd = x.std(ddof=1)
        hw = 1.96 * sd * math.sqrt(1 / n_gpu + 1 / len(x))  # the plan's normal approximation
        out[k] = {"sd_cpu": sd, "half_width": hw, "mde_80": detectable_effect(hw)}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", type=Path, help="the GPU call's --out folder (holds math500_like/*.csv) or a .tgz of it")
    p.add_argument("--cpu", type=Path, default=CPU_RUNS)
    p.add_argument("--predict", type=int, help="print the half-widths this many GPU seeds would give, then stop")
    p.add_argument("--out", type=Path, help="write the summary JSON here")
    a = p.parse_args(argv)
    cpu = seed_means(a.cpu)
    if a.predict:
        print(pd.DataFrame(predict(a.predict, cpu)).T.round(2).to_markdown())
        return 0
    if a.gpu is None:
        p.error("--gpu or --predict is required")
    if a.gpu.is_file():  # the call's CSVs as they came back: a tarball of <regime>/*.csv
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(a.gpu) as tar:
            tar.extractall(tmp, filter="data")
            gpu = seed_means(Path(tmp))
    else:
        gpu = seed_means(a.gpu)
    if len(gpu) < 2:
        raise SystemExit(f"{a.gpu}: {len(gpu)} complete GPU seed(s); the comparison needs at least 2")
    res = compare(gpu, cpu)
    table = pd.DataFrame(res).T
    print(f"GPU seeds {list(gpu.index)}; CPU seeds {len(cpu)}")
    print(pd.concat([gpu.mean().rename("GPU mean"), cpu.mean().rename("CPU mean")], axis=1).round(2).to_markdown())
    print(table.to_markdown(floatfmt=".2f"))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"gpu_seeds": [int(s) for s in gpu.index], "cpu_seeds": len(cpu),
                                     "comparisons": res}, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
