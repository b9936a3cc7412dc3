"""Issue 19, "nothing wrong without an error": two processes on one cache, damaged run files, read-only
reads of finished results, a full disk. docs/reliability.md lists what each test proves."""

from __future__ import annotations

import builtins
import errno
import hashlib
import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import full_disk_open, make_tiny_lm
from ddrl.infra.cache import LockBusy, cached, owner_lock
from ddrl.infra.storage import atomic_write_bytes
from ddrl.infra.rundir import DamagedRunError, RunDir
from ddrl.config import make_config
from ddrl.train import train

REPO = Path(__file__).resolve().parents[1]
RECORDS = [{"prompt": f"{i}+{i + 1}", "answer": str(2 * i + 1), "id": f"q{i}"} for i in range(4)]
TINY = dict(model="fixture", n_votes=16, k_train=8, prompts_per_step=2, episodes=2, max_new_tokens=12,
            warmup_steps=1, lr=1e-3, mini_batch_size=8, micro_batch_size=4, sample_batch_size=64, seed=3)  # 4 steps


def run(run_dir, **kw):
    model, tok = make_tiny_lm()
    return train(make_config("ttrl", **{**TINY, **kw}), RECORDS, run_dir, progress=False, model=model, tokenizer=tok)


def strip(rows):
    """Metric rows without timings, as JSON (so NaN == NaN)."""
    return json.dumps([{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows], sort_keys=True)


def same_weights(a, b):
    for (n, x), (_, y) in zip(a.named_parameters(), b.named_parameters()):
        torch.testing.assert_close(x, y, atol=1e-6, rtol=0, msg=n)


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """An uninterrupted 4-step run: what every damaged-and-resumed run must end equal to."""
    return run(tmp_path_factory.mktemp("full") / "run")


def killed_after(run_dir, checkpoints: int, monkeypatch):
    """Start the run and kill it (KeyboardInterrupt) at its ``checkpoints + 1``-th checkpoint save."""
    calls = {"n": 0}
    original = RunDir.save_checkpoint

    def dying(self, *a, **k):
        calls["n"] += 1
        if calls["n"] > checkpoints:
            raise KeyboardInterrupt
        return original(self, *a, **k)

    monkeypatch.setattr(RunDir, "save_checkpoint", dying)
    with pytest.raises(KeyboardInterrupt):
        run(run_dir)
    monkeypatch.setattr(RunDir, "save_checkpoint", original)
    return RunDir(run_dir)


# --- two processes on one cache ----------------------------------------------------------------------------

CHILD = textwrap.dedent('''
    import json, os, sys, time
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from ddrl.run.experiments import Experiment
    from ddrl.data import load_questions
    go = Path({go!r})
    records = load_questions("testbed_test", 6, seed=0)
    knobs = dict(model="testbed:tiny", episodes=1, prompts_per_step=2, n_votes=8, k_train=4, eval_n=2,
                 max_new_tokens=48, sample_batch_size=64, device="cpu")
    exp = Experiment(records[:4], records[4:], overrides=knobs, progress=False)
    (go.parent / f"ready-{{os.getpid()}}").touch()
    while not go.exists():
        time.sleep(0.01)
    df = exp.grid(["ttrl", "no_adaptation"], [0, 1])
    print("RESULT " + json.dumps(df[["method", "seed", "split", "pass@1", "maj@n", "rl_seconds", "eval_seconds"]].to_dict("records")))
''')


def test_two_processes_on_one_cache_share_runs_and_log_one_row_per_step(tmp_path, monkeypatch):
    """Issue 19's trial: two runs of the same experiment at once on one ``DDRL_CACHE_DIR``. Before, one crashed
    renaming ``ckpt/tmp-step_*`` / ``metrics.jsonl.tmp`` and the other left finished runs with duplicate rows.
    Now the second waits for the owner of each run directory / cache entry and reads its result."""
    from ddrl.testbed import build

    env = {**os.environ, "DDRL_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    monkeypatch.setenv("DDRL_CACHE_DIR", env["DDRL_CACHE_DIR"])
    build("tiny", progress=False)  # built once up front: the test is about runs and evaluations
    go = tmp_path / "go"
    code = CHILD.format(tests=str(REPO / "tests"), go=str(go))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < 2 and time.monotonic() < deadline:  # both imported: start together
        time.sleep(0.05)
    go.touch()
    outs = [p.communicate(timeout=540) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    results = [json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:]) for out, _ in outs]
    # wall times included: equal only if the second process read the first one's runs and evaluations
    assert results[0] == results[1], "the second process must read the first one's runs and scores"
    assert all(r["eval_seconds"] > 0 for r in results[0])
    assert any("ddrl: waiting for pid" in err for _, err in outs), "the processes never contended for an entry"

    run_dirs = sorted((tmp_path / "cache" / "runs").iterdir())
    assert len(run_dirs) == 2  # ttrl x 2 seeds (no_adaptation trains nothing)
    for d in run_dirs:
        rd = RunDir(d)
        assert rd.finished(), d
        steps = json.loads((d / "final" / "result.json").read_text())["steps"]
        assert [r["step"] for r in rd.read_metrics()] == list(range(steps)), d
        assert len(rd.metrics_path.read_text().splitlines()) == steps
    leftovers = [p for p in (tmp_path / "cache").rglob("*") if p.name.endswith(".tmp") or "tmp-" in p.name]
    assert not leftovers, leftovers


def test_a_busy_owner_is_named_when_not_waiting(tmp_path):
    lock = tmp_path / "entry.lock"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f'''
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from ddrl.infra.cache import owner_lock
        with owner_lock({str(lock)!r}, "x"):
            print("held", flush=True)
            time.sleep(30)
    ''')], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockBusy, match=rf"cache entry E is in use by another process \(pid {holder.pid}, lock {lock}"):
            owner_lock(lock, "cache entry E", wait=False).__enter__()
        t0 = time.monotonic()
        with pytest.raises(LockBusy, match=str(holder.pid)):
            owner_lock(lock, "cache entry E", timeout=0.5).__enter__()
        assert time.monotonic() - t0 < 5
    finally:
        holder.kill()
        holder.wait()
    with owner_lock(lock, "cache entry E", wait=False):  # a dead owner's lock is free at once (kill -9 included)
        assert lock.read_text().strip() == str(os.getpid())


# --- damaged run files ---------------------------------------------------------------------------------------


def test_an_empty_checkpoint_is_named_and_the_run_falls_back(tmp_path, monkeypatch, full):
    """Issue 19: an empty checkpoint file (a power cut) made every rerun fail with a bare EOFError."""
    rd = killed_after(tmp_path / "r", 2, monkeypatch)
    ckpt = rd.latest_checkpoint()
    assert ckpt.name == "step_000002"
    (ckpt / "trainable.pt").write_bytes(b"")
    with pytest.warns(RuntimeWarning, match=rf"{ckpt / 'trainable.pt'} is damaged \(0 bytes"):
        resumed = run(tmp_path / "r")
    assert (rd.ckpt_dir.parent / "final").is_dir() and not rd.ckpt_dir.exists()
    assert [r["step"] for r in resumed.metrics] == [0, 1, 2, 3]
    assert strip(resumed.metrics) == strip(full.metrics) and strip(rd.read_metrics()) == strip(full.metrics)
    same_weights(resumed.model, full.model)


def test_damaged_checkpoint_loading_names_the_file(tmp_path):
    model, _ = make_tiny_lm()
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    rd = RunDir(tmp_path)
    rd.log({"step": 0})
    ckpt = rd.save_checkpoint(1, model, opt, None, {"steps_done": 1, "rl_seconds": 0.0})
    data = (ckpt / "trainer.pt").read_bytes()
    (ckpt / "trainer.pt").write_bytes(data[: len(data) // 2])  # truncated
    with pytest.raises(DamagedRunError, match=str(ckpt / "trainer.pt")):
        RunDir.load_checkpoint(ckpt, model, opt)
    with pytest.warns(RuntimeWarning, match="trainer.pt is damaged"):
        assert rd.resume(model, opt) is None
    assert (rd.ckpt_dir / "damaged-step_000001").is_dir()  # kept for inspection, not deleted


def test_a_corrupt_metrics_line_keeps_later_rows_and_is_named(tmp_path):
    rd = RunDir(tmp_path)
    for s in range(5):
        rd.log({"step": s})
    lines = rd.metrics_path.read_text().splitlines()
    lines[1] = '{"step": 1, "x": '  # damaged in the middle
    rd.metrics_path.write_text("\n".join(lines) + "\n")
    with pytest.warns(RuntimeWarning, match=rf"{rd.metrics_path}: damaged line\(s\) \[2\] skipped"):
        assert [r["step"] for r in rd.read_metrics()] == [0, 2, 3, 4]  # before: [0]
    with pytest.raises(DamagedRunError, match=r"damaged line\(s\) \[2\].*missing step\(s\) \[1\]"):
        rd.check_finished_metrics(5)


def test_a_corrupt_metrics_line_before_the_checkpoint_restarts_the_run_cleanly(tmp_path, monkeypatch, full):
    """Issue 19: a corrupt line in the middle of metrics.jsonl silently dropped every later row on resume."""
    rd = killed_after(tmp_path / "r", 3, monkeypatch)  # checkpoint at step 3, rows 0..3 logged
    lines = rd.metrics_path.read_text().splitlines()
    lines[1] = lines[1][:20]
    rd.metrics_path.write_text("\n".join(lines) + "\n")
    with pytest.warns(RuntimeWarning, match=r"step\(s\) \[1\] are damaged or missing.*restarting from step 0"):
        resumed = run(tmp_path / "r")
    assert [r["step"] for r in rd.read_metrics()] == [0, 1, 2, 3]
    assert strip(rd.read_metrics()) == strip(full.metrics)
    same_weights(resumed.model, full.model)
    assert list(rd.path.glob("metrics.jsonl.damaged-*")), "the damaged log is kept beside the new one"


def test_a_finished_run_with_duplicate_rows_is_an_error_not_a_curve(tmp_path, full):
    """What the old race left behind (29 rows for 15 steps) must not feed tables and figures."""
    d = tmp_path / "r"
    run(d)
    rd = RunDir(d)
    with open(rd.metrics_path, "a") as f:
        f.write(rd.metrics_path.read_text().splitlines()[2] + "\n")
    with pytest.raises(DamagedRunError, match=rf"{rd.metrics_path}: a finished run of 4 steps.*duplicated step\(s\) \[2\].*delete"):
        run(d)


# --- reading finished results writes nothing ------------------------------------------------------------------


def snapshot(root: Path) -> dict:
    return {str(p): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_reading_a_finished_run_and_cache_writes_nothing(tmp_path, monkeypatch, full):
    """Issue 19: finished runs rewrote env.json, so a filled read-only cache could not be used. We run as root
    here (chmod would not stop root), so every open for writing and every rename is made to fail instead."""
    d = tmp_path / "cache" / "runs" / "r"
    first = run(d)
    assert cached({"k": 1}, lambda: {"v": 42}, cache_dir=tmp_path / "cache") == {"v": 42}
    before = snapshot(tmp_path / "cache")
    real_open, real_os_open = builtins.open, os.open

    def read_only_open(file, mode="r", *a, **k):
        if any(c in mode for c in "wax+"):
            raise PermissionError(errno.EACCES, "read-only cache (test)", str(file))
        return real_open(file, mode, *a, **k)

    def read_only_os_open(path, flags, *a, **k):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError(errno.EACCES, "read-only cache (test)", str(path))
        return real_os_open(path, flags, *a, **k)

    monkeypatch.setattr(builtins, "open", read_only_open)
    monkeypatch.setattr(os, "open", read_only_os_open)
    monkeypatch.setattr(os, "replace", lambda *a: pytest.fail(f"os.replace{a} while reading"))
    again = run(d)
    assert cached({"k": 1}, lambda: pytest.fail("recomputed"), cache_dir=tmp_path / "cache") == {"v": 42}
    monkeypatch.undo()
    assert snapshot(tmp_path / "cache") == before
    assert strip(again.metrics) == strip(first.metrics)
    same_weights(again.model, first.model)


# --- a full disk ------------------------------------------------------------------------------------------


def test_a_full_disk_names_enospc_and_the_path(tmp_path, monkeypatch):
    """Issue 19: a full disk gave ``basic_ios::clear: iostream error``; now the error says ENOSPC and where."""
    model, _ = make_tiny_lm()
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    rd = RunDir(tmp_path / "run")
    rd.path.mkdir()
    monkeypatch.setattr(builtins, "open", full_disk_open(after_bytes=100))
    with pytest.raises(OSError, match=r"ENOSPC.*run/ckpt/\.tmp-step_000001.*trainable\.pt") as e:
        rd.save_checkpoint(1, model, opt, None, {"steps_done": 1, "rl_seconds": 0.0})
    assert e.value.errno == errno.ENOSPC
    with pytest.raises(OSError, match=rf"ENOSPC.*{rd.metrics_path}"):
        rd.log({"step": 0, "pad": "x" * 200})
    with pytest.raises(OSError, match=rf"ENOSPC.*{tmp_path / 'out' / 'manifest.json'}"):
        atomic_write_bytes(tmp_path / "out" / "manifest.json", b"x" * 1000)
    monkeypatch.undo()
    assert rd.latest_checkpoint() is None  # nothing half-written was published
    leftovers = [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".")]
    assert not leftovers, leftovers


def test_a_damaged_cache_entry_is_named_and_computed_again(tmp_path):
    from ddrl.infra.cache import content_key

    assert cached("k", lambda: [1, 2], cache_dir=tmp_path) == [1, 2]
    path = tmp_path / "results" / f"{content_key('k')}.json"
    path.write_bytes(path.read_bytes()[:5])
    with pytest.warns(RuntimeWarning, match=rf"cache entry {path} is damaged"):
        assert cached("k", lambda: [3], cache_dir=tmp_path) == [3]
    assert cached("k", lambda: pytest.fail("recomputed"), cache_dir=tmp_path) == [3]


# --- every cache entry verifies itself (issue 85) -------------------------------------------------------------


#: One value of each kind :func:`cached` stores: an evaluation (JSON, with a NaN and a numpy float), graded
#: rollouts (JSON), and a value JSON cannot hold exactly (a tuple and an array: a sealed, allow-listed pickle).
CACHE_VALUES = {
    "evaluation": {"pass@1": np.float64(0.25), "maj@n": 0.5, "mean_tokens": float("nan"),
                   "per_question": {"id": ["q0", 3], "pass@1": [0.0, 0.5]}},
    "rollouts": [{"id": 0, "truth": "4", "answers": ["4", None], "keys": ["4", None], "correct": [True, False],
                  "label": "4", "label_count": 1, "label_correct": np.bool_(True)}],
    "pickled": (1, np.arange(3)),
}


def _same(a, b) -> bool:
    """Equality that sees NaN as equal to NaN and compares arrays by value."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("kind", sorted(CACHE_VALUES))
def test_a_cache_entry_altered_by_any_one_bit_is_named_and_computed_again(tmp_path, kind, monkeypatch):
    """Issue 85: two bytes changed in an evaluation pickle turned pass@1 0.0 into 0.5 with exit 0. Every bit of
    each kind of entry is flipped in turn: each read gives the value first computed (recomputed, with a warning
    naming the file), never another one. One bit of every byte, the bit's place cycling through 0..7."""
    from ddrl.infra.cache import content_key

    monkeypatch.setattr(os, "fsync", lambda fd: None)  # thousands of rewrites: durability is not what is tested
    value = CACHE_VALUES[kind]
    first = cached(kind, lambda: value, cache_dir=tmp_path)
    assert _same(cached(kind, lambda: pytest.fail("recomputed"), cache_dir=tmp_path), first)
    (path,) = [p for p in (tmp_path / "results").glob(f"{content_key(kind)}.*") if p.suffix != ".lock"]
    assert path.suffix == (".pkl" if kind == "pickled" else ".json")
    good = path.read_bytes()
    for bit in (8 * i + i % 8 for i in range(len(good))):
        bad = bytearray(good)
        bad[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(bad))
        with pytest.warns(RuntimeWarning, match=rf"cache entry {re.escape(str(path))} is damaged") as told:
            again = cached(kind, lambda: value, cache_dir=tmp_path)
        assert _same(again, first), bit
        assert len([w for w in told if "is damaged" in str(w.message)]) == 1  # one line, not one per look-up
        assert path.read_bytes() == good  # computed again and stored whole


def test_a_fresh_and_a_cached_result_have_the_same_types(tmp_path):
    """A JSON entry is returned as JSON gives it back on the first call too: a rerun that reads the cache sees
    the very values (and types) of the run that computed it."""
    fresh = cached("e", lambda: CACHE_VALUES["evaluation"], cache_dir=tmp_path)
    assert _same(fresh, cached("e", lambda: pytest.fail("recomputed"), cache_dir=tmp_path))
    assert type(fresh["pass@1"]) is float and fresh["pass@1"] == 0.25


def test_a_planted_pickle_with_a_valid_digest_is_not_executed(tmp_path):
    """A digest stops corruption, not a writer of the cache folder, who can seal anything: a crafted pickle
    (here one that would create a marker file) is refused by the allow-list and computed again, never run."""
    from ddrl.infra.cache import content_key
    from ddrl.infra.storage import seal

    marker = tmp_path / "payload-ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "results" / f"{content_key('k')}.pkl"
    path.parent.mkdir(parents=True)
    path.write_bytes(seal(pickle.dumps(Payload())))
    with pytest.warns(RuntimeWarning, match=rf"cache entry {re.escape(str(path))} is damaged.*refusing to load"):
        assert cached("k", lambda: (1, 2), cache_dir=tmp_path) == (1, 2)
    assert not marker.exists()


#: Crafted pickles' globals: a module that does work at import, the study's runner, a dotted name past a permitted
#: class, another library's module, torch's loader, a builtin that reaches attributes.
CRAFTED = [("ddrl.study.__main__", "main"), ("ddrl.study.runner", "main"), ("ddrl.voting", "Vote.__init__"),
           ("numpy.f2py", "scalar"), ("torch.serialization", "load"), ("builtins", "getattr")]


def test_the_unpickler_decides_before_it_imports(tmp_path):
    """Issue 98: a sealed pickle naming a module that does work at import (ddrl.study.__main__ ran the study's command
    line and its SystemExit killed the notebook), a dotted name past a permitted class, or another library's name is
    refused before anything is imported: the warning names the cache file and what it named, and the entry is
    computed again. Run in a fresh interpreter, so "not imported" means what it says."""
    code = f"""
import json, sys, warnings
from pathlib import Path
from ddrl.infra.cache import cached, content_key
from ddrl.infra.storage import seal
out = []
for i, (module, name) in enumerate({CRAFTED!r}):
    root = Path({str(tmp_path)!r}) / str(i)
    path = root / "results" / f"{{content_key('k')}}.pkl"
    path.parent.mkdir(parents=True)
    path.write_bytes(seal(b"\\x80\\x02c" + module.encode() + b"\\n" + name.encode() + b"\\nq\\x00."))
    before = set(sys.modules)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = cached("k", lambda: [1, 2], cache_dir=root)
    new = sorted(m for m in set(sys.modules) - before if m.startswith((module.split(".")[0], "ddrl.study")))
    out.append([str(path), value, [str(w.message) for w in caught], new])
print(json.dumps(out))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr[-3000:]
    for (module, name), (path, value, said, imported) in zip(CRAFTED, json.loads(run.stdout.splitlines()[-1])):
        assert value == [1, 2], (module, name)  # computed again
        assert len(said) == 1 and f"cache entry {path} is damaged" in said[0], said
        assert f"refusing to load {module}.{name}" in said[0], said
        assert imported == [], (module, name, imported)  # nothing imported to decide


def test_what_the_companion_pickles_still_loads(tmp_path):
    """The allow-list holds what a cached result can be: containers, numpy arrays and scalars, ddrl's data classes."""
    import collections

    from ddrl.voting import Vote

    value = (collections.OrderedDict(a=np.arange(3.0)), np.float32(2), np.int64(3), {1, 2}, frozenset({"a"}), b"x",
             Vote(label="4", label_count=2, counts=[2, 2], keys=["4", "4"], label_key="4", tied=False), 1 + 2j)
    assert cached("k", lambda: value, cache_dir=tmp_path) is not None
    again = cached("k", lambda: pytest.fail("recomputed"), cache_dir=tmp_path)
    # repr compares the arrays too; a one-string frozenset, as a set of strings' order follows PYTHONHASHSEED
    assert repr(again) == repr(value)


def test_an_entry_of_the_old_layout_is_computed_again(tmp_path):
    """A bare pickle without a digest (the layout before issue 85) is never unpickled."""
    from ddrl.infra.cache import content_key

    path = tmp_path / "results" / f"{content_key('k')}.pkl"
    path.parent.mkdir(parents=True)
    path.write_bytes(pickle.dumps([0.5]))
    with pytest.warns(RuntimeWarning, match="no sha256 header"):
        assert cached("k", lambda: [0.0], cache_dir=tmp_path) == [0.0]


@pytest.mark.parametrize("legacy", [False, True], ids=["installed", "recorded-weights-only"])
def test_every_file_a_testbed_build_loads_is_verified(tmp_path, legacy):
    """Issue 98: not only the weights: an edited ``rope_theta`` in config.json (which changed results with exit 0),
    a changed byte of tokenizer.json, another chat template, an edited generation_config.json are each named in a
    warning and the build made again with the recorded bytes. ``legacy``: a build whose testbed.json recorded its
    weights only (pretrained before issue 98), whose other files are compared with what its configuration makes."""
    import warnings

    from ddrl.testbed.builds import file_sha256s, weight_sha256s
    from ddrl.testbed.pretrain import build

    path = build("default", cache_dir=tmp_path, progress=False)
    if legacy:  # as pretrained here before issue 98: its own record, weights only (no reference record is used)
        meta = json.loads((path / "testbed.json").read_text())
        meta["weights"] = weight_sha256s(path)
        (path / "testbed.json").write_text(json.dumps(meta))
    good = {**file_sha256s(path), "testbed.json": None}
    edits = {
        "config.json": lambda b: b.replace(b'"rope_theta": ', b'"rope_theta": 1') if b'"rope_theta": ' in b
        else b.replace(b'"rope_parameters": {', b'"rope_parameters": {"rope_theta": 1.0, '),
        "tokenizer.json": lambda b: b.replace(b'"<|end|>"', b'"<|End|>"', 1),
        "chat_template.jinja": lambda b: b + b"{{ 'x' }}",
        "generation_config.json": lambda b: b.replace(b'"temperature": 1.0', b'"temperature": 0.7'),
    }
    for name, edit in edits.items():
        before = (path / name).read_bytes()
        assert edit(before) != before, name
        (path / name).write_bytes(edit(before))
        if legacy:
            (path / "testbed.json").write_text(json.dumps(meta))  # a rebuild installs the reference's record
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            again = build("default", cache_dir=tmp_path, progress=False)
        assert again == path and {**file_sha256s(again), "testbed.json": None} == good, name
        said = [str(w.message) for w in caught if "is damaged" in str(w.message)]
        assert said and str(path) in said[0] and name in said[0], (name, said)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an intact build is used without a word
        build("default", cache_dir=tmp_path, progress=False)


def test_a_build_installed_from_another_committed_build_is_checked_against_it(tmp_path):
    """The study installs other CPUs' committed builds (results/base_models/, a replication's base): such a build is
    compared file by file with the committed one it carries the record of."""
    import shutil

    from ddrl.testbed.builds import COMMITTED, reference_build
    from ddrl.testbed.pretrain import _intact, get_config

    cfg = get_config("default")
    name = f"default-{cfg.config_hash()}"
    reference = reference_build("default", cfg)[0].resolve()
    pins = [p for p in sorted(COMMITTED.glob(f"{name}-*")) if p.resolve() != reference]
    assert pins, "no other committed build of the default configuration"
    build = tmp_path / name
    shutil.copytree(pins[0], build)
    assert _intact(build, "default", cfg, warn=False)
    config = build / "config.json"
    config.write_text(config.read_text().replace('"rope_theta": 10000.0', '"rope_theta": 20000.0'))
    assert not _intact(build, "default", cfg, warn=False)


def test_a_damaged_testbed_build_is_named_and_built_again(tmp_path):
    """The finished weights every later step loads (the testbed build in the cache) verify themselves: one flipped
    bit in model.safetensors is named in a warning and the build is installed again from the committed reference
    (the same bytes as before the damage), never used as it is (issue 85)."""
    import warnings

    from ddrl.testbed.builds import weight_sha256s
    from ddrl.testbed.pretrain import build

    path = build("default", cache_dir=tmp_path, progress=False)
    good = weight_sha256s(path)
    weights = path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = build("default", cache_dir=tmp_path, progress=False)
    assert again == path and weight_sha256s(again) == good
    assert any("is damaged" in str(w.message) and str(path) in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an intact build is used without a word
        build("default", cache_dir=tmp_path, progress=False)
