"""Run directories: config/env files, metric truncation, atomic checkpoints, config mismatch errors."""

from __future__ import annotations

import json

import pytest
import torch

from ddrl.run.rundir import RunDir, config_diff, fingerprint


def test_prepare_writes_config_and_env_and_rejects_changes(tmp_path):
    rd = RunDir(tmp_path / "r")
    rd.prepare({"lr": 1.0, "seed": 0})
    assert json.loads((rd.path / "config.json").read_text()) == {"lr": 1.0, "seed": 0}
    env = json.loads((rd.path / "env.json").read_text())
    assert {"python", "torch", "transformers", "git_sha", "device", "OMP_NUM_THREADS"} <= set(env)
    rd.prepare({"lr": 1.0, "seed": 0})  # same config: fine (resume)
    with pytest.raises(ValueError, match=r"seed: 0 -> 1"):
        rd.prepare({"lr": 1.0, "seed": 1})
    assert config_diff({"a": 1, "b": 2}, {"a": 1, "c": 3}) == ["b", "c"]


def test_metrics_truncation_drops_unfinished_steps(tmp_path):
    rd = RunDir(tmp_path)
    for s in range(4):
        rd.log({"step": s, "x": float(s)})
    with open(rd.metrics_path, "a") as f:
        f.write('{"step": 4, "x"')  # a line cut off by a kill
    assert [r["step"] for r in rd.read_metrics()] == [0, 1, 2, 3]
    assert [r["step"] for r in rd.truncate_metrics(2)] == [0, 1]
    assert [r["step"] for r in rd.read_metrics()] == [0, 1]


def test_checkpoints_round_trip_and_keep_only_the_latest(tmp_path, tiny_lm):
    import copy

    model = copy.deepcopy(tiny_lm[0])
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5)
    model(input_ids=torch.tensor([[3, 4, 5]])).logits.sum().backward()
    opt.step(), sched.step()
    rd = RunDir(tmp_path)
    rd.save_checkpoint(1, model, opt, sched, {"steps_done": 1})
    rd.save_checkpoint(2, model, opt, sched, {"steps_done": 2})
    assert [p.name for p in rd.ckpt_dir.iterdir()] == ["step_000002"]
    fresh = copy.deepcopy(tiny_lm[0])
    opt2 = torch.optim.AdamW(fresh.parameters(), lr=0.1)
    sched2 = torch.optim.lr_scheduler.LambdaLR(opt2, lambda s: 0.5)
    state = RunDir.load_checkpoint(rd.latest_checkpoint(), fresh, opt2, sched2)
    assert state == {"steps_done": 2}
    for (n, a), (_, b) in zip(model.named_parameters(), fresh.named_parameters()):
        assert torch.equal(a, b), n
    assert sched2.last_epoch == 1 and opt2.state_dict()["state"][0]["step"] == opt.state_dict()["state"][0]["step"]


def test_fingerprint_ignores_ground_truth():
    a = [{"id": "1", "prompt": "2+2", "answer": "4"}]
    b = [{"id": "1", "prompt": "2+2", "answer": "5"}]
    c = [{"id": "1", "prompt": "2+3", "answer": "5"}]
    assert fingerprint(a) == fingerprint(b) != fingerprint(c)
