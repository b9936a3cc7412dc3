"""The verl COR path (Algorithm 1) and the launcher's paper settings, from the main venv (no verl import)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ddrl.integrations.verl import cor
from ddrl.cor import consensus_indices

Q = [[{"role": "user", "content": "q0"}], [{"role": "user", "content": "q1"}], [{"role": "user", "content": "q2"}]]
# q0: majority 7 (3 of 5), q1: majority 2 (4 of 5; only 2 kept), q2: no answer at all
R = [["\\boxed{7}", "\\boxed{3}", "x \\boxed{7}", "\\boxed{7}", "\\boxed{5}"],
     ["\\boxed{2}", "\\boxed{2}", "\\boxed{9}", "\\boxed{2}", "\\boxed{2}"],
     ["no box", "none"]]


def test_consensus_indices_caps_and_keeps_sampling_order():
    assert consensus_indices(R[0], keep=16) == ([0, 2, 3], "7", 3)
    assert consensus_indices(R[1], keep=2) == ([0, 1], "2", 4)
    assert consensus_indices(R[2], keep=4) == ([], None, 0)
    with pytest.raises(ValueError, match="keep"):
        consensus_indices(R[0], keep=0)


def test_algorithm1_rows_vote_over_all_m_and_cap_per_prompt():
    rows, stats = cor.algorithm1_rows(Q, R, keep=2)
    assert [s["kept"] for s in stats] == [2, 2, 0] and [s["m"] for s in stats] == [5, 5, 2]
    assert [s["label"] for s in stats] == ["7", "2", None]
    assert rows[0] == {"messages": [{"role": "user", "content": "q0"}, {"role": "assistant", "content": "\\boxed{7}"}]}
    assert rows[1]["messages"][-1]["content"] == "x \\boxed{7}"
    assert all(r["messages"][0]["content"] in ("q0", "q1") for r in rows)
    with pytest.raises(ValueError, match="3 prompts but responses for 2"):
        cor.algorithm1_rows(Q, R[:2], keep=2)


def test_keep_for_is_the_papers_per_benchmark_value():
    assert [cor.keep_for(b) for b in ("math500", "amc", "aime2024")] == [4, 16, 16]
    assert cor.SOURCES == ("algorithm1", "readme")


def test_samples_by_question_orders_and_checks():
    df = pd.DataFrame({"index": [2, 0, 1], "responses": [R[2], R[0], R[1]]})
    assert cor.samples_by_question(df, 3) == [R[0], R[1], R[2]]
    with pytest.raises(ValueError, match="one row per question 0..3"):
        cor.samples_by_question(df, 4, "s.parquet")
    with pytest.raises(KeyError, match="responses"):
        cor.samples_by_question(df.drop(columns=["responses"]), 3)


def test_select_cli_and_readme_variant(tmp_path):
    pytest.importorskip("pyarrow", reason="parquet I/O needs pyarrow (installed with verl; not in the main venv)")
    pd.DataFrame({"prompt": Q}).to_parquet(tmp_path / "train.parquet")
    pd.DataFrame({"index": [2, 0, 1], "responses": [R[2], R[0], R[1]]}).to_parquet(tmp_path / "samples.parquet")
    cor.main(["select", "--samples", str(tmp_path / "samples.parquet"), "--prompts", str(tmp_path / "train.parquet"),
              "--out", str(tmp_path / "cor.parquet"), "--keep", "1"])
    out = pd.read_parquet(tmp_path / "cor.parquet")
    assert [list(m)[-1]["content"] for m in out["messages"]] == ["\\boxed{7}", "\\boxed{2}"]
    cor.main(["select", "--samples", str(tmp_path / "samples.parquet"), "--prompts", str(tmp_path / "train.parquet"),
              "--out", str(tmp_path / "cor4.parquet"), "--benchmark", "math500"])
    assert len(pd.read_parquet(tmp_path / "cor4.parquet")) == 3 + 4
    # the README variant: every RL-time rollout with pseudo-reward 1, uncapped
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    recs = [{"output": "a", "ddrl_pseudo_reward": 1.0, "index": 1}, {"output": "b", "ddrl_pseudo_reward": 0.0, "index": 1},
            {"output": "c", "ddrl_pseudo_reward": 1.0, "index": 1}]
    (dumps / "1.jsonl").write_text("\n".join(json.dumps(r) for r in recs))
    cor.main(["readme", "--rollouts", str(dumps), "--prompts", str(tmp_path / "train.parquet"),
              "--out", str(tmp_path / "readme.parquet")])
    assert [list(m)[-1]["content"] for m in pd.read_parquet(tmp_path / "readme.parquet")["messages"]] == ["a", "c"]
    pd.DataFrame({"index": [0, 1], "responses": [R[0], R[1]]}).to_parquet(tmp_path / "short.parquet")
    with pytest.raises(ValueError, match="one row per question"):
        cor.main(["select", "--samples", str(tmp_path / "short.parquet"), "--prompts", str(tmp_path / "train.parquet"),
                  "--out", str(tmp_path / "x.parquet"), "--keep", "1"])


@pytest.mark.parametrize("model, paper_t", [("qwen2.5-math-1.5b", 1.0), ("qwen2.5-3b", 0.6), ("llama-3.1-8b-instruct", 0.6)])
def test_verl_launch_rollout_temperature_scripts_or_paper(model, paper_t):
    """The verl launcher's overrides (pure; no verl import): the scripts' 1.0 by default, the text's on request."""
    from ddrl.integrations.verl import launch

    def temp(**kw):
        ov = launch.overrides(model, "amc", "data", "out", **kw)
        return [o for o in ov if o.startswith("actor_rollout_ref.rollout.temperature=")]

    assert temp() == ["actor_rollout_ref.rollout.temperature=1.0"]
    assert temp(temperature="paper") == [f"actor_rollout_ref.rollout.temperature={paper_t}"]
    with pytest.raises(ValueError, match="temperature"):
        temp(temperature="0.6")


def test_readme_variant_keeps_every_rl_time_agreeing_rollout_uncapped(tmp_path):
    recs = [{"output": f"r{i}", "ddrl_pseudo_reward": float(i % 2 == 0), "index": 0} for i in range(6)]
    (tmp_path / "1.jsonl").write_text("\n".join(json.dumps(r) for r in recs))
    rows = cor.consensus_rows(tmp_path, Q)
    assert [r["messages"][-1]["content"] for r in rows] == ["r0", "r2", "r4"]  # no cap, no fresh samples
    with pytest.raises(FileNotFoundError, match="rollout_data_dir"):
        cor.consensus_rows(tmp_path / "none", Q)
