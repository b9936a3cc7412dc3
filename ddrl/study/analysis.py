"""The claims study's analysis (plan Sec. 4, 6): the per-run CSVs read back, stage 1's variance components and seeds
per regime (never a mean), and every claim's estimate, interval and verdict for ``results/claims.json``."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ddrl.analysis import in_band, scale_bands, select_and_reward
from ddrl.study.claims import CLAIMS, FLOOR_NOTE, entry, get, validate, with_half_width
from ddrl.seeds import derive_seed
from ddrl.report.stats import (TARGET_HALF_WIDTH, advantage_statistic, choose_design, eval_noise_variance,
                        hierarchical_bootstrap, mean_ci, paired_differences, power_table, predicted_half_width,
                        question_bootstrap, variance_components)
from ddrl.study.plan import (BANDS_64, BASE, CSV, HELDOUT_X, NO_RL, PAIRED, QUESTION_COLUMNS, REAL, SELECTION_K,
                             SELECTION_ORDERS, SHARES_DDRL_RL, STAGE1_COMPARISONS, STEP_COLUMNS, THREE, WEAK_REGIME,
                             Regime, Scale, csv_method_seed, same_base, selection_k)

# --- Reading the results ----------------------------------------------------------------------------------


def _kept(path: Path, skip: Sequence[str]) -> bool:
    """Whether a run's CSV is not one of ``skip``'s methods (its name is read only when there is something to skip)."""
    return not skip or csv_method_seed(path)[0] not in skip


def method_csvs(out_dir: str | Path, names: str = "*/*", skip: Sequence[str] = ()) -> list[Path]:
    """Every method CSV under ``out_dir`` (or those named ``<names>-seed*``), sorted; not step, base or H1x ones, nor
    those of the methods in ``skip``."""
    return sorted(p for p in Path(out_dir).glob(f"{names}-seed*{CSV}")
                  if not p.name.endswith(f"-steps{CSV}") and _kept(p, skip))


def same_as_registered(adapted: pd.DataFrame, registered: Path) -> bool | None:
    """Whether ``adapted``'s pass@1 equals the committed CSV ``registered``'s on every question; None without it."""
    if not registered.is_file():
        return None
    reg = pd.read_csv(registered, dtype={"question": str}).query("split == 'adapted'").set_index("question")["pass@1"]
    ours = adapted.set_index("question")["pass@1"]
    return bool(len(ours) == len(reg) and ours.index.equals(reg.index) and (ours.to_numpy() == reg.to_numpy()).all())


def heldout_x_csvs(out_dir: str | Path) -> list[Path]:
    return sorted(Path(out_dir, HELDOUT_X).glob(f"*/*-seed*{CSV}"))


def load_questions(out_dir: str | Path, skip: Sequence[str] = ()) -> pd.DataFrame:
    """Every method CSV under ``out_dir`` (but those of the methods in ``skip``) as one long table, H1x's (split
    ``heldout_x``) included."""
    files = method_csvs(out_dir, skip=skip) + heldout_x_csvs(out_dir)
    if not files:
        return pd.DataFrame(columns=list(QUESTION_COLUMNS))
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in files], ignore_index=True)


def step_csvs(out_dir: str | Path, skip: Sequence[str] = ()) -> list[Path]:
    return sorted(p for p in Path(out_dir).glob(f"*/*-steps{CSV}") if _kept(p, skip))


def base_csvs(out_dir: str | Path, folder: str = BASE) -> dict[str, list[Path]]:
    """The base rollouts' CSVs under ``<out_dir>/<folder>/``: ``groups`` (answer groups) and ``g1``, each sorted."""
    return {kind: sorted((Path(out_dir) / folder).glob(f"*/seed*-{kind}.csv")) for kind in ("groups", "g1")}


def study_inputs(out_dir: str | Path, skip: Sequence[str] = ()) -> list[Path]:
    """Every file under ``out_dir`` the study's derived tables read (the runs of the methods in ``skip`` left out)."""
    base = base_csvs(out_dir)
    return (method_csvs(out_dir, skip=skip) + heldout_x_csvs(out_dir) + step_csvs(out_dir, skip) + base["groups"]
            + base["g1"] + base_csvs(out_dir, REAL)["groups"])


def load_steps(out_dir: str | Path, skip: Sequence[str] = ()) -> pd.DataFrame:
    files = step_csvs(out_dir, skip)
    if not files:
        return pd.DataFrame(columns=["regime", "method", "seed", *STEP_COLUMNS, "phase"])
    return pd.concat([pd.read_csv(p) for p in files], ignore_index=True)


def progress(out_dir: str | Path) -> pd.DataFrame:
    """How far the study has got, from the file names alone: per regime x method the seeds whose CSV is written."""
    rows = []
    for p in method_csvs(out_dir):
        method, seed = csv_method_seed(p)
        rows.append({"regime": p.parent.name, "method": method, "seed": seed})
    for p in base_csvs(out_dir)["groups"]:  # seedNN-groups.csv
        rows.append({"regime": p.parent.name, "method": BASE, "seed": int(p.name.removeprefix("seed").split("-")[0])})
    if not rows:
        return pd.DataFrame(columns=["regime", "method", "n_seeds", "seeds"])
    df = pd.DataFrame(rows).sort_values(["regime", "method", "seed"])
    return (df.groupby(["regime", "method"], sort=False)["seed"]
            .agg(n_seeds="count", seeds=lambda s: ",".join(map(str, s))).reset_index())


def paired_matrix(df: pd.DataFrame, regime: str, a: str, b: str, split: str) -> pd.DataFrame | None:
    """Seeds x questions of (a - b) pass@1 in points over the seeds both have; None below 2 such seeds."""
    sub = _shared_seeds(df, regime, a, b, split)
    if sub.seed.nunique() < 2:
        return None
    return 100 * paired_differences(sub, a, b, value="pass@1")


def _shared_seeds(df: pd.DataFrame, regime: str, a: str, b: str, split: str) -> pd.DataFrame:
    """``a``'s and ``b``'s rows over their shared seeds; a missing NO_RL method's from a same-base regime."""
    sub = df[(df.regime == regime) & (df.split == split) & df.method.isin([a, b])]
    for m in [m for m in (a, b) if m in NO_RL and not (sub.method == m).any()]:
        rows = df[(df.split == split) & (df.method == m)]
        first = next((r for r in same_base(regime) if (rows.regime == r).any()), None)
        sub = pd.concat([sub, rows[rows.regime == first].assign(regime=regime)], ignore_index=True)
    return sub[sub.seed.isin(set(sub[sub.method == a].seed) & set(sub[sub.method == b].seed))]


def bootstrap_entry(cid: str, regime: str, d: pd.DataFrame, n_boot: int = 4000, stands_for: str | None = None) -> dict:
    """A ``claims.json`` entry from a seeds x questions matrix by the hierarchical bootstrap (plan Sec. 4)."""
    rng = np.random.default_rng(derive_seed(0, "claims", cid, regime))
    iv = (question_bootstrap(d.to_numpy()[0], rng, n_boot) if d.shape[0] == 1
          else hierarchical_bootstrap(d.to_numpy(), rng, n_boot))
    return {**entry(cid, stands_for or regime, iv.estimate, iv.ci_low, iv.ci_high, iv.n_seeds, iv.n_questions),
            "regime": regime}


def complete_seeds(out: str | Path, regime: str, methods: Sequence[str]) -> list[int]:
    have = [{csv_method_seed(p)[1] for p in method_csvs(Path(out, regime), m)} for m in methods]
    return sorted(set.intersection(*have)) if have else []


def missing_seeds(out: str | Path, regime: str, methods: Sequence[str], seeds: Iterable[int]) -> list[int]:
    """The seeds of ``seeds`` without a written CSV of every method."""
    return sorted(set(seeds) - set(complete_seeds(out, regime, methods)))


def read_csvs(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The written files among ``paths``, each once, as one table (``question`` as text, so "07" stays "07")."""
    files = [Path(p) for p in dict.fromkeys(map(str, paths)) if Path(p).is_file()]
    if not files:
        raise FileNotFoundError("none of the CSVs asked for is written")
    return pd.concat([pd.read_csv(p, dtype={"question": str}) for p in files], ignore_index=True)


def run_levels(df: pd.DataFrame, split: str = "adapted", value: str = "pass@1", name: str = "pass1") -> pd.DataFrame:
    """Each run's mean pass@1 (or ``value``, as column ``name``) on ``split`` in points, per regime x method x seed."""
    a = df[df.split == split]
    return (100 * a.groupby(["regime", "method", "seed"], sort=False)[value].mean()).rename(name).reset_index()


def reproduced_counts(runs: pd.DataFrame) -> dict[str, int]:
    """How many of ``runs`` reproduce their committed adapted rows, of how many could be checked."""
    checked = runs["registered_reproduced"].dropna()
    return {"registered_reproduced": int(checked.astype(bool).sum()), "registered_checked": int(len(checked))}


def level_table(per: pd.DataFrame, by: Sequence[str] = ("method",), reference: str = "no_adaptation",
                sort: bool = True) -> pd.DataFrame:
    """Per ``by`` group of :func:`run_levels` rows: mean, SD, seeds, and how many end below ``reference``'s."""
    ref = per[per.method == reference].set_index("seed")["pass1"]
    rows = []
    for keys, g in per.groupby(list(by), sort=sort):
        keys = keys if isinstance(keys, tuple) else (keys,)
        rows.append({**dict(zip(by, keys)), "pass1": g.pass1.mean(), "sd": g.pass1.std(ddof=1),
                     "n_seeds": int(g.seed.nunique()),
                     "below_reference": int((g.set_index("seed")["pass1"] < ref.reindex(g.seed)).sum())})
    return pd.DataFrame(rows)


#: What a run's RL trajectory is compared on (plan Amendment 9).
TRAJECTORY = ("step", "episode", "lr", "adv/mean", "label/majority_ratio", "gt/label_acc")


def rl_divergence(steps: pd.DataFrame, methods: Sequence[str] = SHARES_DDRL_RL) -> pd.DataFrame:
    """Per run of ``methods``, the first RL step whose :data:`TRAJECTORY` differs from its seed's DDRL run's
    (``diverged_at``; a shorter run diverges at its end), -1 where none."""
    rl = steps[steps.phase == "rl"]
    cols = [c for c in TRAJECTORY if c in rl.columns]
    ref = {k: g.sort_values("step")[cols].reset_index(drop=True)
           for k, g in rl[rl.method == "ddrl"].groupby(["regime", "seed"])}
    rows = []
    for (regime, method, seed), g in rl[rl.method.isin(methods)].groupby(["regime", "method", "seed"]):
        if (regime, seed) not in ref:
            continue
        a, b = g.sort_values("step")[cols].reset_index(drop=True), ref[regime, seed]
        n = min(len(a), len(b))
        x, y = a.iloc[:n], b.iloc[:n]
        diff = ((x != y) & ~(x.isna() & y.isna())).any(axis=1)
        at = int(x.step[diff].iloc[0]) if diff.any() else (n if len(a) != len(b) else -1)
        rows.append({"regime": regime, "method": method, "seed": int(seed), "rl_steps": len(a), "diverged_at": at})
    return pd.DataFrame(rows, columns=["regime", "method", "seed", "rl_steps", "diverged_at"])


def claim_on_seeds(df: pd.DataFrame, cid: str, regime: str, seeds: Sequence[int], n_boot: int = 4000) -> dict | None:
    """A pass@1 claim on some of its seeds (descriptive); None below 2 seeds."""
    d = claim_matrix(df[df.seed.isin(set(seeds))], cid, regime)
    return None if d is None else bootstrap_entry(cid, regime, d, n_boot)


def at_floor(df: pd.DataFrame, regime: str, a: str, b: str, split: str) -> bool:
    """Whether ``a`` and ``b`` both score 0 everywhere: a zero-width interval that cannot tell them apart."""
    vals = _shared_seeds(df, regime, a, b, split)["pass@1"]
    return bool(len(vals)) and bool((vals == 0).all())


def seed_directions(df: pd.DataFrame, pairs: dict[str, tuple[str, str, str]] = PAIRED) -> pd.DataFrame:
    """Per pass@1 claim and regime: mean pass@1 (points) and in how many seeds ``a`` is ahead, behind or level."""
    rows, present, by_split = [], set(df.regime), dict(tuple(df.groupby("split", sort=False)))
    for cid, (a, b, split) in pairs.items():
        part = by_split.get(split, df.iloc[:0])
        for r in (r for r in get(cid).regimes if r in present):
            sub = _shared_seeds(part, r, a, b, split)
            d = paired_matrix(sub, r, a, b, split)
            if d is None:
                continue
            per_seed = d.mean(axis=1)
            means = 100 * sub.groupby("method")["pass@1"].mean()
            rows.append({"id": cid, "regime": r, "a": a, "b": b, "n_seeds": len(per_seed),
                         "mean_a": means[a], "mean_b": means[b], "ahead": int((per_seed > 0).sum()),
                         "behind": int((per_seed < 0).sum()), "level": int((per_seed == 0).sum()),
                         "min": per_seed.min(), "max": per_seed.max()})
    cols = ["id", "regime", "a", "b", "n_seeds", "mean_a", "mean_b", "ahead", "behind", "level", "min", "max"]
    return pd.DataFrame(rows, columns=cols)


def s1_matrix(df: pd.DataFrame, regime: str) -> pd.DataFrame | None:
    """S1: seeds x questions of (DDRL - TTRL) on the default base minus the same on the weak one, in points."""
    strong, weak = (paired_matrix(df, r, "ddrl", "ttrl", "adapted") for r in (regime, WEAK_REGIME))
    if strong is None or weak is None:
        return None
    seeds = [s for s in strong.index if s in set(weak.index)]
    qs = [q for q in strong.columns if q in set(weak.columns)]
    if len(seeds) < 2 or not qs:
        return None
    return strong.loc[seeds, qs] - weak.loc[seeds, qs]


def claim_matrix(df: pd.DataFrame, cid: str, regime: str) -> pd.DataFrame | None:
    """The seeds x questions matrix (points) a pass@1 claim is bootstrapped from; None otherwise or below 2 seeds."""
    if cid in PAIRED:
        return paired_matrix(df, regime, *PAIRED[cid])
    return s1_matrix(df, regime) if cid == "S1" else None


#: How far :func:`power_shortfall` searches for the seeds or questions that would reach the target.
SHORTFALL_MAX_SEEDS, SHORTFALL_MAX_QUESTIONS = 1000, 100_000


def power_shortfall(df: pd.DataFrame, entries: Sequence[dict], target: float = TARGET_HALF_WIDTH,
                    max_seeds: int = SHORTFALL_MAX_SEEDS, max_questions: int = SHORTFALL_MAX_QUESTIONS) -> pd.DataFrame:
    """Per entry whose half-width exceeds ``target``: its variance components (SDs, points), the half-width they
    predict, the floor more seeds cannot pass, and the seeds or questions the target needed (None: none up to max)."""

    def smallest(f, lo: int, hi: int) -> int | None:  # the smallest n in [lo, hi] with f(n) <= target
        if f(hi) > target:
            return None
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (mid + 1, hi) if f(mid) > target else (lo, mid)
        return lo

    rows = []
    for e in entries:
        hw = (e["ci_high"] - e["ci_low"]) / 2
        if hw <= target:
            continue
        d = claim_matrix(df, e["id"], e["regime"])
        if d is None:
            continue
        S, Q = d.shape
        vc = variance_components(d.to_numpy())
        rows.append({
            "id": e["id"], "regime": e["regime"], "n_seeds": S, "n_questions": Q, "half_width": hw,
            "predicted_half_width": predicted_half_width(vc, S, Q),
            "sd_seed": float(np.sqrt(vc.seed)), "sd_question": float(np.sqrt(vc.question)), "sd_cell": float(np.sqrt(vc.cell)),
            "half_width_unlimited_seeds": predicted_half_width(replace(vc, seed=0.0, cell=0.0), 2, Q),
            "seeds_needed": smallest(lambda n: predicted_half_width(vc, n, Q), 2, max_seeds),
            "questions_needed": smallest(lambda n: predicted_half_width(vc, S, n), 2, max_questions),
        })
    cols = ["id", "regime", "n_seeds", "n_questions", "half_width", "predicted_half_width", "sd_seed", "sd_question",
            "sd_cell", "half_width_unlimited_seeds", "seeds_needed", "questions_needed"]
    return pd.DataFrame(rows, columns=cols).astype({"seeds_needed": "Int64", "questions_needed": "Int64"})


# --- Stage 1 (plan Sec. 6) ------------------------------------------------------------------------------------


def analyse_stage1(out_dir: str | Path, regimes: dict[str, Regime], scale: Scale, seeds_range=range(2, 65)) -> dict:
    """Variance components (points^2) of the stage-1 comparisons and the seeds per regime (from DDRL - TTRL)."""
    df = load_questions(out_dir)
    n_eval = int(scale.knobs.get("eval_n", 16))
    out: dict[str, Any] = {"what": "stage-1 variance components (plan Sec. 6); no means by design",
                           "units": "pass@1 points^2", "regimes": {}, "seeds": {}}
    for name in THREE:
        if name not in regimes:
            continue
        reg, comps = regimes[name], {}
        for label, (a, b) in STAGE1_COMPARISONS.items():
            d = paired_matrix(df, name, a, b, "adapted")
            if d is None:
                continue
            sub = df[(df.regime == name) & (df.split == "adapted")]
            pa = sub[sub.method == a].groupby("question")["pass@1"].mean().reindex(d.columns)
            pb = sub[sub.method == b].groupby("question")["pass@1"].mean().reindex(d.columns)
            vc = variance_components(d.to_numpy(), eval_var=1e4 * eval_noise_variance(pa, pb, n_eval),
                                     source=f"stage 1: {d.shape[0]} seeds x {d.shape[1]} questions")
            comps[label] = {"components": asdict(vc), "n_seeds": int(d.shape[0]),
                            "n_questions": int(d.shape[1])}
            if label == "ddrl-ttrl":
                design = choose_design(power_table(vc, seeds_range, [reg.n_adapted]))
                n = int(design["seeds"]) if design else max(seeds_range)
                out["seeds"][name] = min(n, scale.max_seeds)
                comps[label].update({"design": None if design is None else
                                     {"seeds": int(design["seeds"]), "questions": int(design["questions"]),
                                      "half_width": float(design["half_width"])},
                                     "half_width_at_seeds": predicted_half_width(vc, max(2, out["seeds"][name]),
                                                                                 reg.n_adapted)})
        if comps:
            out["regimes"][name] = comps
    return out


# --- Every claim -> claims.json (plan Sec. 4) ---------------------------------------------------------------


def load_base(out_dir: str | Path, folder: str = BASE) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The base rollouts' answer groups and G1 rows under ``<out_dir>/<folder>/``."""
    files = base_csvs(out_dir, folder)
    read = lambda ps: pd.concat([pd.read_csv(p, dtype={"question": str}) for p in ps],  # noqa: E731
                                ignore_index=True) if ps else pd.DataFrame()
    return read(files["groups"]), read(files["g1"])


def band_matrix(groups: pd.DataFrame, band: tuple[int, int], n: int) -> pd.DataFrame:
    """Seeds x questions: the share correct of the distinct answers whose count lies in ``band`` (at N = 64)."""
    lo, hi = scale_bands(BANDS_64, 64, n)[BANDS_64.index(band)]
    g = in_band(groups, lo, hi)
    m = g.assign(q=g.regime + "/" + g.question.astype(str)).pivot_table(index="seed", columns="q", values="correct",
                                                                        aggfunc="mean")
    return m.dropna(axis=1)


def selection_errors(groups: pd.DataFrame, k64: int = SELECTION_K, orders: int = SELECTION_ORDERS) -> pd.DataFrame:
    """E1, E2 (plan Amendment 8): what TTRL's random K and DDRL's BCS keep of each question's N base rollouts, summed
    over ``orders`` random orders: ``neg`` kept reward-0, ``fn`` correct among them, ``fp`` kept reward-1 wrong."""
    rules = ("random", "bcs")
    rows = []
    for regime, seed, q, g, keys, correct, n, rng, perms in question_orders(groups, "selection", orders,
                                                                             "selection_errors"):
        k = selection_k(n, k64)
        tot = {r: np.zeros(4, dtype=int) for r in rules}
        for perm in perms:
            ks, cs = [keys[i] for i in perm], correct[perm]
            for r in rules:
                _, idx, rew = select_and_reward(ks, k, r, rng)
                truth, neg = cs[idx], rew == 0
                tot[r] += (neg.sum(), (neg & truth).sum(), (~neg & ~truth).sum(), len(idx))
        for r in rules:
            rows.append({"regime": regime, "seed": seed, "question": q, "rule": r, "n": n,
                         "label_count": int(g["count"].max()), "orders": orders,
                         **dict(zip(("neg", "fn", "fp", "kept"), tot[r].tolist()))})
    return pd.DataFrame(rows, columns=["regime", "seed", "question", "rule", "n", "label_count", "orders", "neg", "fn",
                                       "fp", "kept"])


def selection_matrix(sel: pd.DataFrame, cid: str) -> pd.DataFrame:
    """Seeds x questions of E1's or E2's effect (points; random - BCS); E1 drops questions without kept negatives."""
    s = sel.assign(q=sel.regime + "/" + sel.question.astype(str))
    if cid == "E1":
        s = s.assign(v=100 * s.fn / s.neg.where(s.neg > 0))  # share of the kept negatives that are correct
    elif cid == "E2":
        s = s.assign(v=100 * s.fp / s.kept)  # share of the kept rollouts that are false positives
    else:
        raise ValueError(f"selection_matrix: claim must be 'E1' or 'E2', got {cid!r}")
    m = s.pivot_table(index="seed", columns=["q", "rule"], values="v", aggfunc="first", dropna=False)
    d = m.xs("random", axis=1, level="rule") - m.xs("bcs", axis=1, level="rule")
    return d.dropna(axis=1)


# --- TTRL's wrong rewards by the band of each rollout's answer (N1, N2; plan Amendment 63) ---------------------
# N1 and N2 are ratios of sums over questions: each matrix cell carries its linearised value (delta method), so the
# matrix's mean is the pooled ratio and its bootstrap the ratio's first-order bootstrap.


BAND_NAMES = ("low", "middle", "high")  # BANDS_64 in order: <= 5, 6-44, >= 45 of 64
COLUMNS = ["regime", "seed", "question", "band", "n", "orders", "answered", "fp", "fn"]


def rebuild_rollouts(g: pd.DataFrame, where: str = "") -> tuple[list, np.ndarray, int]:
    n, counts = int(g["n"].iloc[0]), g["count"].to_numpy()
    keys = np.repeat(np.arange(len(g)), counts).tolist()
    if len(keys) > n:
        raise ValueError(f"{where}: answer counts sum to {len(keys)}, more than N = {n}")
    correct = np.repeat(g["correct"].to_numpy(dtype=bool), counts)
    missing = n - len(keys)
    return keys + [None] * missing, np.concatenate([correct, np.zeros(missing, dtype=bool)]), n


def question_orders(groups: pd.DataFrame, stream: str, orders: int, where: str):
    """Each answered question's rebuilt rollouts and ``orders`` lazy random orders, one generator per (regime, seed)."""
    for (regime, seed), part in groups.groupby(["regime", "seed"], sort=True):
        rng = np.random.default_rng(derive_seed(0, "claims", stream, regime, int(seed)))
        for q, g in part.groupby("question", sort=True):
            keys, correct, n = rebuild_rollouts(g, f"{where}: {regime} seed {seed} question {q!r}")
            if keys[0] is None:
                continue  # no answer at all: no label
            yield regime, int(seed), q, g, keys, correct, n, rng, (rng.permutation(n) for _ in range(orders))


def band_of(counts: np.ndarray, n: int) -> np.ndarray:
    """The band index (0 low, 1 middle, 2 high) of each answer count of N = ``n``."""
    edges = [hi for _, hi in scale_bands(BANDS_64, 64, n)]
    return np.searchsorted(edges, counts)


def wrong_rewards(groups: pd.DataFrame, orders: int = SELECTION_ORDERS) -> pd.DataFrame:
    """N1, N2's counts per (regime, seed, question, band) of TTRL's rewards on all N rollouts: ``answered``, ``fp``
    (reward 1, wrong) and ``fn`` (reward 0, right), means over ``orders`` random orders."""
    rows = []
    for regime, seed, q, g, keys, correct, n, rng, perms in question_orders(groups, "reward_noise", orders,
                                                                             "wrong_rewards"):
        group_band = band_of(g["count"].to_numpy(), n)
        band = np.array([group_band[k] if k is not None else -1 for k in keys])  # -1: no answer
        fp, fn = np.zeros(3), np.zeros(3)
        for perm in perms:
            _, idx, rew = select_and_reward([keys[i] for i in perm], n, "random", rng)
            b, truth, pos = band[perm][idx], correct[perm][idx], rew == 1
            fp += np.bincount(b[pos & ~truth], minlength=3)[:3]
            fn += np.bincount(b[~pos & truth], minlength=3)[:3]
        counted = np.bincount(band[band >= 0], minlength=3)
        for i, name in enumerate(BAND_NAMES):
            rows.append({"regime": regime, "seed": seed, "question": q, "band": name, "n": n, "orders": orders,
                         "answered": int(counted[i]), "fp": fp[i] / orders, "fn": fn[i] / orders})
    return pd.DataFrame(rows, columns=COLUMNS)


def _cells(table: pd.DataFrame, value: str, bands: tuple[str, ...]) -> pd.DataFrame:
    t = table[table.band.isin(bands)]
    return t.assign(q=t.regime + "/" + t.question.astype(str)).pivot_table(
        index="seed", columns="q", values=value, aggfunc="sum", fill_value=0)


def _linearised(num: pd.DataFrame, den: pd.DataFrame) -> pd.DataFrame | None:
    if den.to_numpy().sum() <= 0:
        return None
    ratio = num.to_numpy().sum() / den.to_numpy().sum()
    return ratio + (num - ratio * den) / den.to_numpy().mean()


def noise_matrix(table: pd.DataFrame, cid: str) -> pd.DataFrame:
    """Seeds x questions of N1's or N2's linearised effect (points). N1: the middle band's % of wrong rewards - 50; N2:
    its wrong-reward rate - the outer bands' (%). Empty where a ratio has no denominator."""
    if cid not in ("N1", "N2"):
        raise ValueError(f"noise_matrix: claim must be 'N1' or 'N2', got {cid!r}")
    t = table.assign(wrong=table.fp + table.fn)
    every = _cells(t, "answered", BAND_NAMES)
    cells = lambda value, bands: _cells(t, value, bands).reindex_like(every).fillna(0.0)  # noqa: E731
    if cid == "N1":
        parts = (_linearised(cells("wrong", ("middle",)), cells("wrong", BAND_NAMES)),)
    else:
        outer = ("low", "high")
        parts = (_linearised(cells("wrong", ("middle",)), cells("answered", ("middle",))),
                 _linearised(cells("wrong", outer), cells("answered", outer)))
    if any(p is None for p in parts):
        return pd.DataFrame()
    return 100 * parts[0] - 50 if cid == "N1" else 100 * (parts[0] - parts[1])


def noise_description(groups: pd.DataFrame, real: pd.DataFrame | None = None, pooled: str = "base") -> pd.DataFrame:
    """:func:`by_band` of the testbed's regimes pooled, each apart, then a real LLM's (never pooled)."""
    testbed, llm = (wrong_rewards(g) if g is not None and not g.empty else None for g in (groups, real))
    parts = ([by_band(testbed.assign(regime=pooled)), by_band(testbed)] if testbed is not None else []) + (
        [by_band(llm)] if llm is not None else [])
    return pd.concat(parts, ignore_index=True) if parts else by_band(pd.DataFrame(columns=COLUMNS))


def by_band(table: pd.DataFrame) -> pd.DataFrame:
    """Per regime and band: answered rollouts, false positives, negatives, wrong-reward rate and share (%)."""
    s = table.groupby(["regime", "band"], sort=False)[["answered", "fp", "fn"]].sum().reset_index()
    s["wrong"] = s.fp + s.fn
    s["rate_%"] = 100 * s.wrong / s.answered.where(s.answered > 0)
    s["share_%"] = 100 * s.wrong / s.groupby("regime").wrong.transform("sum")
    return s


def noise_summary(desc: pd.DataFrame, entries, regimes=("base", "svamp_codex")) -> str:
    """A sentence per regime: the middle band's share of TTRL's wrong rewards and the ``entries``' N1 and N2 there."""
    mid = desc[desc.band == "middle"].set_index("regime")["share_%"]
    found = {(e["id"], e["regime"]): e for e in entries if e["id"] in ("N1", "N2")}

    def said(cid: str, r: str) -> str:
        e = found.get((cid, r))
        return f"{cid} {e['estimate']:+.1f} points, {e['verdict']}" if e else f"{cid} not computed: no ratio to take"

    return " ".join(f"**{r}**: the middle band carries {mid[r]:.0f}% of TTRL's wrong rewards ({said('N1', r)}; "
                    f"{said('N2', r)})." for r in regimes if r in mid.index)


def _band_effect(groups: pd.DataFrame, cid: str) -> pd.DataFrame:
    n = int(groups["n"].iloc[0])
    low, mid, high = (band_matrix(groups, b, n) for b in BANDS_64)
    if cid == "F1":
        return 50 - 100 * low
    if cid == "F2":
        return 100 * high - 50
    cols = sorted(set(high.columns) & set(mid.columns))
    return 100 * (high[cols] - mid[cols])


def _g1_bootstrap(g: pd.DataFrame, qs: np.ndarray, rng: np.random.Generator, n_boot: int) -> tuple[float, np.ndarray]:
    """G1's effect (points) and its ``n_boot`` question-bootstrap replicates."""
    wrong = ~g.label_correct.astype(bool)
    per = pd.DataFrame({"q": g.q, "sw": g.pos_adv_grpo.where(wrong, 0.0), "nw": wrong.astype(float),
                        "sr": g.pos_adv_grpo.where(~wrong, 0.0), "nr": (~wrong).astype(float)})
    per = per.groupby("q").sum().reindex(qs).to_numpy()

    def effect(t: np.ndarray) -> np.ndarray:
        sw, nw, sr, nr = t.T if t.ndim == 2 else t
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where((nw > 0) & (nr > 0), 100 * (sw / nw - sr / nr), np.nan)

    counts = np.stack([np.bincount(rng.choice(len(qs), len(qs)), minlength=len(qs)) for _ in range(n_boot)])
    return float(effect(per.sum(axis=0))), effect(counts @ per)


def base_claim(cid: str, groups: pd.DataFrame, g1: pd.DataFrame, n_boot: int = 4000,
               sel: pd.DataFrame | None = None, regime: str = BASE, noise: pd.DataFrame | None = None) -> dict | None:
    """F1-F3, E1-E2, N1-N2 and G1 of ``regime`` (``base`` pools the testbed's); None below 2 questions."""
    if cid in ("E1", "E2", "F1", "F2", "F3", "N1", "N2"):
        if groups.empty:
            return None
        if cid in ("E1", "E2"):
            d = selection_matrix(selection_errors(groups) if sel is None else sel, cid)
        elif cid in ("N1", "N2"):
            d = noise_matrix(wrong_rewards(groups) if noise is None else noise, cid)
        else:
            d = _band_effect(groups, cid)
        if d.shape[0] < 1 or d.shape[1] < 2:
            return None
        return bootstrap_entry(cid, regime, d, n_boot)
    if g1.empty:
        return None
    rng = np.random.default_rng(derive_seed(0, "claims", cid, regime))
    g = g1.dropna(subset=["pos_adv_grpo"]).assign(q=lambda x: x.regime + "/" + x.question.astype(str))
    if g.empty or g.label_correct.nunique() < 2:
        return None
    qs = np.array(sorted(g.q.unique()))
    est, reps = _g1_bootstrap(g, qs, rng, n_boot)
    lo, hi = np.nanquantile(reps, [0.025, 0.975])
    return entry(cid, regime, est, min(lo, est), max(hi, est), g.seed.nunique(), len(qs))


def analyse_claims(out_dir: str | Path, regimes: dict[str, Regime], n_boot: int = 4000) -> tuple[list[dict], list[str]]:
    """Every claim's entry from the runs under ``out_dir``, and the claim x regime cells that lack runs."""
    df, steps = load_questions(out_dir), load_steps(out_dir)
    dd = df[(df.method == "ddrl") & (df.split == "adapted")]
    cor = {(r, int(seed)): float(g["cor_seconds"].iloc[0]) for (r, seed), g in dd.groupby(["regime", "seed"])}
    groups, g1 = load_base(out_dir)
    rg, rg1 = load_base(out_dir, REAL)
    frames = {BASE: (groups, g1), **{r: (rg[rg.regime == r], rg1[rg1.regime == r])
                                     for r in sorted(set(rg.get("regime", ())))}}
    sels = {r: selection_errors(g) if not g.empty else None for r, (g, _) in frames.items()}  # E1, E2
    noises = {r: wrong_rewards(g) if not g.empty else None for r, (g, _) in frames.items()}  # N1, N2
    entries, missing = [], []
    for c in CLAIMS:
        for r in c.regimes:
            if r in frames:
                e = base_claim(c.id, *frames[r], n_boot, sels[r], regime=r, noise=noises[r])
                if e is None:
                    missing.append(f"{c.id} {r}: no rollouts (or fewer than 2 questions in its band)")
                else:
                    entries.append(e)
                continue
            if r not in regimes:
                missing.append(f"{c.id} {r}: regime not in this study")
                continue
            e, d = None, None
            if c.id == "S1" and WEAK_REGIME not in regimes:
                missing.append(f"S1 {r}: the weaker base is not built and measured (bench/regimes.py --weak)")
                continue
            if c.id in PAIRED or c.id == "S1":
                d = claim_matrix(df, c.id, r)
            elif c.id in ("D1", "D2", "C2"):
                e = _run_level_claim(c.id, r, steps, cor, regimes[r])
            if d is not None:
                e = bootstrap_entry(c.id, r, d, n_boot)
                if c.id in PAIRED and at_floor(df, r, *PAIRED[c.id]):
                    e["note"] = FLOOR_NOTE
            if e is None:
                missing.append(f"{c.id} {r}: fewer than 2 seeds with the runs it needs")
                continue
            entries.append(e)
    return with_half_width(validate(entries)), missing


def _run_level_claim(cid: str, regime: str, steps: pd.DataFrame, cor: dict[tuple[str, int], float],
                      reg: Regime) -> dict | None:
    """D1, D2 (DDRL's mean advantage x 100) and C2 (% of the RL phase), a t-interval over seeds."""
    s = steps[steps.regime == regime]
    dd = s[(s.method == "ddrl") & (s.phase == "rl")]
    vals = []
    if cid in ("D1", "D2"):
        vals = [advantage_statistic(cid, g.sort_values("step")["adv/mean"].to_numpy(dtype=float))
                for _, g in dd.groupby("seed")]
    else:  # C2
        ex = s[(s.method == "additional_rl") & (s.phase == "extra")].groupby("seed")["time/step_s"].sum()
        rl = dd.groupby("seed")["time/step_s"].sum()
        for seed in sorted(set(ex.index) & set(rl.index)):
            if (regime, int(seed)) in cor:
                vals.append(100 * (ex[seed] - cor[regime, int(seed)]) / rl[seed])
    ci = mean_ci(vals) if len(vals) >= 2 else None
    if ci is None:
        return None
    return entry(cid, regime, ci[0], ci[1], ci[2], len(vals), reg.n_adapted)
