"""Run directories: config/env files, metric truncation, atomic checkpoints, config mismatch errors."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import torch

from ddrl.infra.rundir import DamagedRunError, RunDir, config_diff, fingerprint


def test_prepare_writes_config_and_env_and_rejects_changes(tmp_path):
    rd = RunDir(tmp_path / "r")
    rd.prepare({"lr": 1.0, "seed": 0})
    assert rd.config() == {"lr": 1.0, "seed": 0}
    assert set(json.loads((rd.path / "config.json").read_text())) == {"lr", "seed", "_sha256"}  # its own digest
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


# --- damaged run directories are named (issue 85) ----------------------------------------------------------------


class _Tok:
    def save_pretrained(self, path):
        (Path(path) / "tokenizer.json").write_text("{}")


def _finished_run(path: Path, model, opt=None) -> tuple[RunDir, Path]:
    """A finished run directory as the trainer leaves it: config, three metrics rows, an ``rl`` weights snapshot,
    a checkpoint and ``final/`` (weights, tokenizer, result.json)."""
    rd = RunDir(path)
    rd.prepare({"lr": 0.5, "seed": 0})
    for s in range(3):
        rd.log({"step": s, "reward": s / 3, "loss": float("nan") if s == 1 else 0.25})
    opt = opt or torch.optim.AdamW(model.parameters(), lr=0.1)
    rd.save_weights("rl", model)
    rd.save_checkpoint(3, model, opt, None, {"steps_done": 3, "rl_seconds": 1.5})
    ckpt = rd.latest_checkpoint()
    keep = path.parent / "ckpt-copy"
    import shutil

    shutil.copytree(ckpt, keep)
    rd.save_final(model, _Tok(), {"steps": 3, "rl_seconds": 1.5, "pass@1": 0.375})
    return rd, keep


def _params(model) -> str:
    """The sha256 of a model's parameters (what a load put into it)."""
    import hashlib

    h = hashlib.sha256()
    for _, p in model.named_parameters():
        h.update(p.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _readers(rd: RunDir, ckpt: Path, model) -> dict:
    """What a later step reads of a run directory, one reader per file: each returns what it read (loaded
    weights as their sha256)."""

    def loaded(load):
        m = copy.deepcopy(model)
        with torch.no_grad():
            for p in m.parameters():
                p.zero_()
        out = load(m)
        return [out, _params(m)]

    def checkpoint(m):
        opt = torch.optim.AdamW(m.parameters(), lr=0.1)
        return [RunDir.load_checkpoint(ckpt, m, opt), repr(opt.state_dict())]

    return {
        "config.json": lambda: rd.prepare({"lr": 0.5, "seed": 0}) or rd.config(),
        "final/result.json": lambda: loaded(rd.load_final),
        "final/trainable.pt": lambda: loaded(rd.load_final),
        "metrics.jsonl": lambda: rd.check_finished_metrics(3),
        "rl/trainable.pt": lambda: loaded(lambda m: rd.load_weights("rl", m)),
        "ckpt-copy/trainer.pt": lambda: loaded(checkpoint),
        "ckpt-copy/trainable.pt": lambda: loaded(checkpoint),
    }


def _flips(n_bytes: int, most: int = 150):
    """Bit positions to flip: one bit of every byte (its place cycling 0..7), or ``most`` spread evenly."""
    step = max(1, n_bytes // most)
    return [8 * i + i % 8 for i in range(0, n_bytes, step)]


def test_a_run_file_altered_by_one_bit_is_refused_by_name_or_read_as_written(tmp_path, tiny_lm):
    """Issue 85's acceptance at the scale of one run directory: every file a later step reads (config, metrics,
    result, finished weights, the rl snapshot, a checkpoint), each altered by one bit in turn, gives exactly what
    the unaltered file gave, or a DamagedRunError naming the file; never other values."""
    model = copy.deepcopy(tiny_lm[0])
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(input_ids=torch.tensor([[3, 4, 5]])).logits.sum().backward()
    opt.step()  # weights and an optimizer state that are not the initial ones
    rd, ckpt = _finished_run(tmp_path / "run", model, opt)
    readers = _readers(rd, ckpt, model)
    unaltered = {name: read() for name, read in readers.items()}
    base = tmp_path
    for name, read in readers.items():
        path = (base / name) if name.startswith("ckpt-copy") else rd.path / name
        good = path.read_bytes()
        refused = 0
        for bit in _flips(len(good)):
            bad = bytearray(good)
            bad[bit // 8] ^= 1 << (bit % 8)
            path.write_bytes(bytes(bad))
            try:
                got = read()
            except DamagedRunError as e:
                assert str(path) in str(e), (name, bit, e)
                refused += 1
            except ValueError as e:  # a config that parses with another value differs from the run's: named too
                assert name == "config.json" and str(rd.path) in str(e), (name, bit, e)
                refused += 1
            else:
                assert json.dumps(got, default=str) == json.dumps(unaltered[name], default=str), (name, bit)
            finally:
                path.write_bytes(good)
        assert refused > 0, name


@pytest.mark.parametrize("name", ["final/result.json", "config.json"])
def test_a_truncated_json_of_a_run_is_named_with_what_to_do(tmp_path, tiny_lm, name):
    """Issue 85: a truncated result.json or config.json killed a notebook with a bare JSONDecodeError."""
    rd, _ = _finished_run(tmp_path / "run", tiny_lm[0])
    path = rd.path / name
    path.write_bytes(path.read_bytes()[:40])
    read = rd.config if name == "config.json" else lambda: rd.load_final(copy.deepcopy(tiny_lm[0]))
    with pytest.raises(DamagedRunError, match=rf"{re.escape(str(path))} is damaged\b.*delete the run directory "
                                              rf"{re.escape(str(rd.path))} and run the same command again"):
        read()
