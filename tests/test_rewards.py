"""The label-free rewards (ddrl/rewards.py) against values computed by hand, the method table (ddrl/methods.yaml) they are
picked from, and the reward diagnostics for rewards that are not 0/1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddrl import methods, rewards
from ddrl.config import make_config
from ddrl.evaluate import reward_counts
from ddrl.voting import count_votes

# Six rollouts: answers 7, 7, 7, 3, 3, none. c(7) = 3, c(3) = 2; the label is 7, its majority share 3/6 = 0.5.
KEYS = ["7", "7", "7", "3", "3", None]
ENTROPIES = [0.5, 0.25, 1.0, 2.0, 0.0, 1.5]


def group(keys=KEYS, ents=ENTROPIES, seed=0):
    return rewards.Group(count_votes(keys), ents, np.random.default_rng(seed))


def test_vote_rewards_agreement_with_the_majority():
    assert rewards.vote(group()).tolist() == [1, 1, 1, 0, 0, 0]


def test_random_reward_is_a_fair_coin_blind_to_the_answers():
    g = group()
    r = rewards.random_coin(g)
    assert set(r.tolist()) <= {0.0, 1.0} and len(r) == 6
    # the same generator state gives the same coins; other answers with the same generator give them too
    assert r.tolist() == rewards.random_coin(group(keys=["1"] * 6)).tolist()
    big = rewards.random_coin(rewards.Group(count_votes(["1"] * 20000), None, np.random.default_rng(1)))
    assert abs(big.mean() - 0.5) < 0.02  # Bernoulli(1/2): 4 standard errors of 0.0035 is 0.014


def test_gated_vote_rewards_only_confident_questions():
    cfg = make_config("gated_vote")
    assert cfg.reward_gate == 0.5
    assert rewards.gated_vote(group(), cfg).tolist() == [1, 1, 1, 0, 0, 0]  # share 3/6 = 0.5 >= 0.5
    assert rewards.gated_vote(group(), cfg, threshold=0.51).tolist() == [0] * 6
    assert rewards.gated_vote(group(keys=[None] * 4), cfg, threshold=0.0).tolist() == [0] * 4  # no answer: no label


def test_soft_vote_is_the_share_of_the_rollouts_cluster():
    assert rewards.soft_vote(group()).tolist() == [3 / 6, 3 / 6, 3 / 6, 2 / 6, 2 / 6, 0.0]


def test_negative_entropy_rewards_confident_rollouts():
    assert rewards.neg_entropy(group()).tolist() == [-0.5, -0.25, -1.0, -2.0, -0.0, -1.5]
    with pytest.raises(ValueError, match="reported no token entropies"):
        rewards.neg_entropy(group(ents=None))


def test_a_reward_is_picked_by_name_and_an_unknown_one_is_named():
    assert rewards.get_reward("soft_vote") is rewards.soft_vote
    with pytest.raises(KeyError, match="unknown reward 'nope'"):
        rewards.get_reward("nope")
    with pytest.raises(ValueError, match="TrainConfig.reward must be one of"):
        make_config("ttrl", reward="nope")


def test_dae_refuses_a_reward_that_is_not_0_or_1():
    make_config("ttrl", reward="random", advantage="fixed")  # a coin is 0/1: DAE's +1/-1 applies
    with pytest.raises(ValueError, match="needs a 0/1 reward"):
        make_config("ttrl", reward="soft_vote", advantage="fixed")


def test_each_label_free_method_is_one_row_naming_its_reward():
    for name, reward in (("random_reward", "random"), ("gated_vote", "gated_vote"), ("soft_vote", "soft_vote"),
                         ("neg_entropy", "neg_entropy")):
        cfg = make_config(name)
        assert (cfg.reward, cfg.selection, cfg.advantage, cfg.cor) == (reward, "random", "grpo", False), name
        assert methods.trains(name) and methods.words(name) != name


def test_reward_counts_of_a_graded_reward_count_what_it_favours():
    """A 0/1 reward counts rollouts with reward 1 as rewarded; any other reward those above the question's mean."""
    answers = ["7", "7", "7", "3", "3", None]
    binary = reward_counts(answers, "7", "3", [1, 1, 1, 0, 0, 0])
    assert (binary["tp"], binary["fp"], binary["tn"], binary["fn"]) == (0, 3, 1, 2)
    soft = reward_counts(answers, "7", "3", [3 / 6, 3 / 6, 3 / 6, 2 / 6, 2 / 6, 0.0])  # mean 13/36: 7s above it
    assert (soft["tp"], soft["fp"], soft["tn"], soft["fn"]) == (0, 3, 1, 2)
    ent = reward_counts(answers, "7", "3", [-0.5, -0.25, -1.0, -2.0, -0.0, -1.5])  # mean -0.875
    assert (ent["tp"], ent["fp"], ent["tn"], ent["fn"]) == (1, 2, 2, 1)


def test_a_bad_method_row_is_named(tmp_path):
    bad = tmp_path / "methods.yaml"
    bad.write_text('x: {words: X, color: "#123456", trainer: {}, colour: red}\n')
    with pytest.raises(ValueError, match=r"method 'x' has unknown field\(s\) \['colour'\]"):
        methods.load_table(bad)
    bad.write_text('x: {words: X, color: red, trainer: {}}\n')
    with pytest.raises(ValueError, match="color must be '#rrggbb'"):
        methods.load_table(bad)
    bad.write_text('x: {words: X, color: "#123456", run: y}\n')
    with pytest.raises(ValueError, match="run 'y' must name a method with a trainer row"):
        methods.load_table(bad)


def test_reward_signal_counts_what_each_reward_favours_by_band():
    """Hand-computed: answers a, a, a (wrong), b, b (right), none; K = N = 6 so TTRL's K is every rollout."""
    from ddrl.analysis import problems_from_groups, reward_signal

    groups = pd.DataFrame({"question": ["q", "q"], "count": [3, 2], "n": [6, 6], "correct": [False, True]})
    (p,) = problems_from_groups(groups)
    assert p["keys"] == [0, 0, 0, 1, 1, None] and p["correct"] == [False, False, False, True, True, False]
    out = reward_signal([p], ["vote", "soft_vote", "gated_vote"], k=6, bands=((1, 2), (3, 6)), gate=0.6)
    row = {(r.reward, r.band): r for r in out.itertuples()}
    vote = row["vote", "3-6"]  # the wrong answer is the label: all three copies rewarded, all GRPO's positive mass
    assert (vote.rollouts, vote.wrong, vote.favoured, vote.favoured_wrong) == (3, 3, 3, 3)
    assert vote.fp_rate == 1.0 and vote.wrong_share == 1.0 and vote.pos_adv_wrong == pytest.approx(1.0)
    assert row["vote", "1-2"].favoured == 0 and row["vote", "none"].wrong == 1
    soft = row["soft_vote", "3-6"]  # rewards 1/2 (a), 1/3 (b), 0: above the mean 13/36 only a's copies
    assert (soft.favoured, soft.favoured_wrong) == (3, 3) and soft.pos_adv_wrong == pytest.approx(1.0)
    gated = row["gated_vote", "3-6"]  # share 3/6 < 0.6: no reward, no advantage
    assert gated.favoured == 0 and np.isnan(gated.pos_adv_wrong)


def test_notebook_07s_sentences_follow_the_numbers():
    """The middle band's sentences name each reward on the side of the vote its share lies (a number moved past the
    vote's moves the reward's word), and the stage's status counts the committed runs."""
    from ddrl.study import designs as D
    from ddrl.study import lesson as L

    sig = pd.DataFrame({"reward": ["vote", "random", "gated vote", "soft vote"], "band": ["6-44"] * 4,
                        "fp_rate": [0.36, 0.5, 0.11, 0.56], "pos_adv_wrong": [0.39, 0.385, 0.21, 0.41]})
    text = " ".join(L.reward_signal_sentences(sig, "6-44"))
    assert "the vote favours 36% of the wrong rollouts, and 39%" in text
    assert "lower under the gated vote (21%), and higher under the soft vote (41%), and within a point under the " \
           "random (38%)" in text
    flipped = " ".join(L.reward_signal_sentences(sig.assign(pos_adv_wrong=[0.39, 0.385, 0.5, 0.41]), "6-44"))
    assert "higher under the gated vote (50%) and the soft vote (41%)" in flipped and "lower" not in flipped
    status = L.stage_status([D.DESIGNS["rewards_amc"]])
    assert status.loc[0, "runs needed"] == 40 and status.loc[0, "regime"] == "AMC-like"


def test_the_results_pages_reward_section_counts_the_committed_runs(tmp_path):
    """Answer first, from the files: with no Stage 3 run it says so; a committed run moves the count."""
    from ddrl.study import page
    from ddrl.study.plan import RESULTS

    (tmp_path / "runs" / "base").mkdir(parents=True)
    (tmp_path / "runs" / "base" / "amc_like").symlink_to(RESULTS / "runs" / "base" / "amc_like")
    text = " ".join(" ".join(page.rewards_lines(tmp_path)).split())
    assert "**Not decided yet: 0 of the 120 registered runs" in text and "the vote favours" in text
    assert "(0.0 of its 20 worker-hours spent)" in text
    (tmp_path / "runs" / "amc_like").mkdir()
    pd.DataFrame({"question": ["q1", "q2"], "eval_seconds": [360.0] * 2, "rl_seconds": [3240.0] * 2,
                  "cor_seconds": [0.0] * 2}).to_csv(tmp_path / "runs" / "amc_like" / "random_reward-seed00.csv.gz")
    text = " ".join(" ".join(page.rewards_lines(tmp_path)).split())
    assert "**Not decided yet: 1 of the 120 registered runs" in text and "(1.0 of its 20 worker-hours spent)" in text


def _synthetic_stage3(root, regime="amc_like", seeds=range(10), n_q=64, shift=None):
    """SYNTHETIC runs of Stage 3's seven arms in ``regime``: pass@1 = a question's level + the method's shift + noise."""
    from ddrl.study.designs import REWARD_RUNS
    from ddrl.study.plan import csv_path

    rng = np.random.default_rng(0)
    level = rng.uniform(0, 1, n_q)
    for m in ("no_adaptation", "ttrl", "ddrl", *REWARD_RUNS):
        for s in seeds:
            p = np.clip(level + (shift or {}).get(m, 0) + rng.normal(0, 0.1, n_q), 0, 1)
            path = csv_path(root / "runs", regime, m, s)
            path.parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame({"regime": regime, "method": m, "seed": s, "split": "adapted", "question": range(n_q),
                          "pass@1": p, "eval_seconds": 1.0, "rl_seconds": 2.0, "cor_seconds": 0.0}).to_csv(path, index=False)


def test_stage3s_analysis_page_and_live_recomputation_follow_the_entries(tmp_path):
    """On SYNTHETIC runs (TTRL and DDRL 5 points above the others): the registered analysis decides the 13 entries
    with their p-values; the results page states each verdict from the committed analysis, in its words (a verdict
    edited in the file changes the sentence); notebook 07's live recomputation equals the committed analysis, and
    names an entry whose committed number was moved."""
    import json

    from ddrl.study import designs as D
    from ddrl.study import lesson as L
    from ddrl.study import page, runner
    from ddrl.study.claims import interval
    from ddrl.study.plan import RESULTS

    _synthetic_stage3(tmp_path, shift={"ttrl": 0.05, "ddrl": 0.05})
    (tmp_path / "runs" / "base").mkdir()
    (tmp_path / "runs" / "base" / "amc_like").symlink_to(RESULTS / "runs" / "base" / "amc_like")
    d = D.DESIGNS["rewards_amc"]
    res = runner.analyse(d, tmp_path / "runs", n_boot=1000)
    assert [e["id"] for e in res["entries"]] == list(D.REWARD_CLAIMS) and set(res["p"]) == set(D.REWARD_CLAIMS)
    by = {e["id"]: e for e in res["entries"]}
    assert by["L0"]["verdict"] == "reproduced" and by["L1g"]["verdict"] == "contradicted"
    out = tmp_path / "rewards" / "rewards_amc.json"
    out.parent.mkdir()
    out.write_text(json.dumps(res))

    text = " ".join(" ".join(page.rewards_lines(tmp_path)).split())
    assert f"TTRL beats a random reward (L0): it holds in AMC-like ({interval(by['L0'])})" in text
    assert "(1 of 3 regimes analysed; 40 of the 120 runs" in text and "waits for all three regimes" in text
    assert "Each reward against TTRL (L1) or DDRL (L2), 8 entries: 0 favour the reward; 8 favour the vote's method" in text
    res["entries"][0]["verdict"] = "contradicted"
    out.write_text(json.dumps(res))
    assert "TTRL beats a random reward (L0): the opposite holds in AMC-like" in " ".join(page.rewards_lines(tmp_path))

    res["entries"][0]["verdict"] = "reproduced"
    res["entries"][1]["estimate"] += 0.01
    out.write_text(json.dumps(res))
    table, live, rows = L.stage3_decided([d], tmp_path, n_boot=1000)
    assert table["as committed"].tolist() == ["yes (rewards_amc)"] + ["NO (rewards_amc)"] + ["yes (rewards_amc)"] * 11
    assert table.loc[0, "marks"] == "confirmatory, survives Holm" and len(rows) == 13
    assert L.reward_answer(live, rows)[-1].startswith("Holm's correction over the stage's 13 entries:")
    shown = L.show_stage3(table)
    assert shown.loc[0, "testbed (points, 95%)"] == interval(by["L0"]) and shown.loc[0, "MDE"] == ""
    assert (shown["MDE"] != "").sum() == (table["verdict"] == "not resolved").sum()
    fig = L.stage3_figure(table)
    from ddrl.report.legibility import findings
    assert not any(findings(fig).values()), findings(fig)


def test_stage3s_minimum_detectable_effects_are_the_plans():
    """STAGE3_MDE is the last column of results/plan.md's Stage 3 power table (item 3), regime by regime."""
    import re

    from ddrl.study.designs import STAGE3_MDE
    from ddrl.study.plan import RESULTS

    plan = (RESULTS / "plan.md").read_text()
    stage = plan[plan.index("## Stage 3, registered"):]
    rows = re.findall(r"^ *\| (\w+) \| (L0-L2|L3) \(as \w+\) \|.*\| ([\d.]+) \|$", stage, flags=re.M)
    assert len(rows) == 6
    assert {(g, w): float(v) for g, w, v in rows} == {(g, w): v for g, (a, b) in STAGE3_MDE.items()
                                                        for w, v in (("L0-L2", a), ("L3", b))}


def test_a_fresh_runs_sentence_says_floor_and_below_1_point_where_they_apply():
    from ddrl.study.lesson import fresh_run_sentence

    assert "the floor" in fresh_run_sentence({"No adaptation": 0.0, "TTRL": 0.0}, "No adaptation", 4)
    text = fresh_run_sentence({"No adaptation": 37.1, "TTRL": 35.9, "Random reward": 36.7}, "No adaptation", 16)
    assert text.startswith("TTRL: -1.2 points against no adaptation; Random reward: -0.4 points against no adaptation "
                           "(below 1 point)") and "floor" not in text
