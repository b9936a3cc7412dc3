"""Acceptance benchmark of the trainer on the testbed: no adaptation vs TTRL vs DDRL (RL only) vs DDRL + COR.

For each seed: adapt on the ``--adapted`` first test questions, evaluate pass@1 (16 samples, T = 0.6,
top-p 0.95) and maj@16 on those questions and on ``--heldout`` further questions of the same test
distribution that the model never adapted on. Questions are fixed across seeds (test split, data seed 0);
seeds change rollouts, selection, mini-batch order and evaluation samples. All conditions of one seed are
evaluated with the same evaluation seed (common random numbers).

Writes ``bench/results/train.json`` (per-seed numbers, means and 95% t-intervals, wall times) and prints a
table. Rerunning resumes: finished runs are loaded from their run directories, finished evaluations from
the results file. Run it under the shared CPU lock::

    OMP_NUM_THREADS=2 flock /tmp/ddrl-cpu.lock .venv/bin/python bench/train.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ddrl.evaluate import evaluate, mean_ci  # noqa: E402
from ddrl.seeds import derive_seed  # noqa: E402
from ddrl.train import load_model, make_config, resolve_cue, train  # noqa: E402

CONDITIONS = ("no_adaptation", "ttrl", "ddrl_rl", "ddrl_cor")
LABELS = {"no_adaptation": "No adaptation", "ttrl": "TTRL", "ddrl_rl": "DDRL (RL only)", "ddrl_cor": "DDRL + COR"}


def parse_overrides(items: list[str]) -> dict:
    """``["lr=1e-4", "episodes=4"]`` -> typed overrides (JSON values, else strings)."""
    out = {}
    for it in items:
        k, _, v = it.partition("=")
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--adapted", type=int, default=64, help="test questions adapted on")
    ap.add_argument("--heldout", type=int, default=128, help="further test questions, never adapted on")
    ap.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=CONDITIONS)
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="TrainConfig overrides for all runs")
    ap.add_argument("--runs-dir", default=str(ROOT / "outputs" / "bench-train"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "train.json"))
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args()

    from ddrl.testbed import generate_split

    overrides = parse_overrides(args.set)
    base_cfg = make_config("ttrl", **overrides)
    records = generate_split("test", args.adapted + args.heldout, seed=0)
    adapted, heldout = records[: args.adapted], records[args.adapted :]
    out_path = Path(args.out)
    results = json.loads(out_path.read_text()) if out_path.exists() else {}
    setup = {"adapted": args.adapted, "heldout": args.heldout, "overrides": overrides}
    if results.get("setup") != setup:
        results = {"setup": setup, "runs": {}}
    runs_dir = Path(args.runs_dir) / "_".join(f"{k}={v}" for k, v in sorted(overrides.items())) if overrides else Path(args.runs_dir) / "defaults"

    def save() -> None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        summarize(results)
        out_path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")

    def eval_both(model, tok, seed: int, cfg) -> dict:
        cue = resolve_cue(cfg.cue, cfg.model)
        t0 = time.perf_counter()
        out = {}
        for name, recs in (("adapted", adapted), ("heldout", heldout)):
            if not recs:
                continue
            e = evaluate(model, tok, recs, n=cfg.eval_n, temperature=cfg.eval_temperature, top_p=cfg.eval_top_p,
                         max_new_tokens=cfg.max_new_tokens, seed=derive_seed(seed, "bench-eval", name), cue=cue,
                         batch_size=cfg.sample_batch_size)
            out[name] = {"pass@1": e["pass@1"], "maj@n": e["maj@n"], "n": e["n"], "mean_tokens": e["mean_tokens"]}
        out["eval_seconds"] = time.perf_counter() - t0
        return out

    for seed in args.seeds:
        runs = results["runs"].setdefault(str(seed), {})
        for cond in args.conditions:
            if cond in runs:
                continue
            t0 = time.perf_counter()
            if cond == "no_adaptation":
                cfg = make_config("no_adaptation", **{**overrides, "seed": seed})
                model, tok = load_model(cfg.model, cfg.dtype, cfg.device)
                runs[cond] = eval_both(model, tok, seed, cfg)
            elif cond == "ttrl":
                cfg = make_config("ttrl", **{**overrides, "seed": seed})
                res = train(cfg, adapted, runs_dir / f"ttrl-s{seed}", progress=args.progress)
                runs[cond] = {**eval_both(res.model, res.tokenizer, seed, cfg), "rl_seconds": res.rl_seconds,
                              "final_label_acc": _tail_mean(res.metrics, "gt/label_acc")}
            else:  # one DDRL run gives both the RL-only model and the COR model
                cfg = make_config("ddrl", **{**overrides, "seed": seed})
                res = train(cfg, adapted, runs_dir / f"ddrl-s{seed}", progress=args.progress)
                if "ddrl_cor" in args.conditions and "ddrl_cor" not in runs:
                    runs["ddrl_cor"] = {**eval_both(res.model, res.tokenizer, seed, cfg), "rl_seconds": res.rl_seconds,
                                        "cor_seconds": res.cor_seconds, "total_seconds": res.rl_seconds + res.cor_seconds,
                                        "cor_kept": (res.cor or {}).get("num_kept")}
                if "ddrl_rl" in args.conditions and "ddrl_rl" not in runs:
                    from ddrl.runs import RunDir

                    RunDir(res.run_dir).load_weights("rl", res.model)
                    runs["ddrl_rl"] = {**eval_both(res.model, res.tokenizer, seed, cfg), "rl_seconds": res.rl_seconds,
                                       "final_label_acc": _tail_mean(res.metrics, "gt/label_acc")}
            runs.get(cond, {}).setdefault("wall_seconds", time.perf_counter() - t0)
            save()
            print(f"seed {seed} {cond}: " + json.dumps({k: v for k, v in runs.get(cond, {}).items()}), flush=True)
    save()
    print_table(results)


def _tail_mean(rows: list[dict], key: str, frac: float = 0.125) -> float | None:
    vals = [r[key] for r in rows if key in r]
    if not vals:
        return None
    tail = vals[-max(1, int(len(vals) * frac)) :]
    return sum(tail) / len(tail)


def summarize(results: dict) -> None:
    """Means and 95% t-intervals over seeds, per condition and question set."""
    summary = {}
    for cond in CONDITIONS:
        per = [r[cond] for r in results["runs"].values() if cond in r]
        if not per:
            continue
        s = {"seeds": len(per)}
        for qs in ("adapted", "heldout"):
            for metric in ("pass@1", "maj@n"):
                vals = [p[qs][metric] for p in per if qs in p and metric in p[qs]]
                if vals:
                    m, lo, hi = mean_ci(vals)
                    s[f"{qs}/{metric}"] = {"mean": m, "ci95": [lo, hi], "values": vals}
        for t in ("rl_seconds", "cor_seconds", "total_seconds", "eval_seconds"):
            vals = [p[t] for p in per if p.get(t) is not None]
            if vals:
                s[t] = {"mean": sum(vals) / len(vals), "max": max(vals)}
        summary[cond] = s
    results["summary"] = summary


def print_table(results: dict) -> None:
    s = results.get("summary", {})
    fmt = lambda d: "n/a" if d is None else (f"{100 * d['mean']:.1f} [{100 * d['ci95'][0]:.1f}, {100 * d['ci95'][1]:.1f}]"
                                             if d["ci95"][0] == d["ci95"][0] else f"{100 * d['mean']:.1f}")
    print(f"\n{'condition':<16} {'seeds':>5}  {'pass@1 adapted (95% CI)':<26} {'pass@1 held-out (95% CI)':<26} "
          f"{'maj@n adapted (n=eval_n)':<22} {'RL s':>6} {'COR s':>6}")
    for cond in CONDITIONS:
        if cond not in s:
            continue
        c = s[cond]
        t = lambda k: f"{c[k]['mean']:.0f}" if k in c else "-"
        print(f"{LABELS[cond]:<16} {c['seeds']:>5}  {fmt(c.get('adapted/pass@1')):<26} {fmt(c.get('heldout/pass@1')):<26} "
              f"{fmt(c.get('adapted/maj@n')):<22} {t('rl_seconds'):>6} {t('cor_seconds'):>6}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
