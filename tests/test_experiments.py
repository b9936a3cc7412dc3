"""The setting notebooks 03-05 share (``ddrl.run.experiments.notebook_experiment``)."""

from __future__ import annotations

from ddrl.run.experiments import PAPER_KEEP, notebook_experiment

KNOBS = dict(episodes=2, prompts_per_step=4, n_votes=8, k_train=4, lr=1e-4, eval_n=2, cor_m=8, cor_keep=2,
             etmr_m=2, max_new_tokens=32, sample_batch_size=64, device="cpu")


def test_testbed_setting_splits_questions_and_names_the_model():
    exp = notebook_experiment(model="testbed", testbed_preset="tiny", dataset="testbed_test", data_dir=None,
                              n_adapted=3, n_heldout=2, seed=0, paper_settings=None, trainer=KNOBS, progress=False)
    assert len(exp.adapted) == 3 and len(exp.heldout) == 2
    ids = [r["id"] for r in [*exp.adapted, *exp.heldout]]
    assert len(set(ids)) == 5, "adapted and held-out questions must not overlap"
    assert exp.overrides == {"model": "testbed:tiny", **KNOBS}
    cfg = exp.config("ddrl", seed=1)
    assert (cfg.model, cfg.lr, cfg.n_votes, cfg.k_train, cfg.seed) == ("testbed:tiny", 1e-4, 8, 4, 1)


def test_paper_settings_replace_the_knobs_but_keep_the_machine_ones(shared_data):
    exp = notebook_experiment(model="testbed", testbed_preset="tiny", dataset="math500", data_dir=str(shared_data),
                              n_adapted=4, n_heldout=0, seed=0, paper_settings="qwen2.5-math-1.5b", trainer=KNOBS,
                              progress=False)
    assert len(exp.adapted) == 4 and not exp.heldout
    assert exp.overrides["model"] == "qwen2.5-math-1.5b"
    assert exp.overrides["lr"] == 5e-7 and exp.overrides["n_votes"] == 64 and exp.overrides["k_train"] == 32
    assert {k: exp.overrides[k] for k in PAPER_KEEP} == {k: KNOBS[k] for k in PAPER_KEEP}
    # the paper's COR keep for MATH-500 (4), not the notebook's knob (2); its rollout temperature and loader
    assert exp.overrides["cor_keep"] == 4 and exp.overrides["drop_last"] is True
    assert exp.overrides["rollout_temperature"] == 1.0
    exp = notebook_experiment(model="testbed", testbed_preset="tiny", dataset="math500", data_dir=str(shared_data),
                              n_adapted=4, n_heldout=0, seed=0, paper_settings="qwen2.5-3b", trainer=KNOBS,
                              progress=False)
    assert exp.overrides["rollout_temperature"] == 0.6
    exp = notebook_experiment(model="testbed", testbed_preset="tiny", dataset="math500", data_dir=str(shared_data),
                              n_adapted=4, n_heldout=0, seed=0, paper_settings="qwen2.5-3b", trainer=KNOBS,
                              progress=False, paper_temperature="scripts")
    assert exp.overrides["rollout_temperature"] == 1.0


def test_run_dir_follows_the_base_weights_not_just_the_name(tmp_path, monkeypatch):
    """A rebuilt testbed keeps the name ``testbed:tiny``; its runs must not be reused or resumed."""
    import ddrl.run.experiments

    exp = notebook_experiment(model="testbed", testbed_preset="tiny", dataset="testbed_test", data_dir=None,
                              n_adapted=3, n_heldout=0, seed=0, paper_settings=None, trainer=KNOBS, progress=False)
    cfg = exp.config("ttrl", seed=0)
    monkeypatch.setattr(ddrl.run.experiments, "model_fingerprint", lambda name: {"model": name, "w": "a"})
    a = exp.run_dir("ttrl", cfg)
    assert exp.run_dir("ttrl", cfg) == a
    monkeypatch.setattr(ddrl.run.experiments, "model_fingerprint", lambda name: {"model": name, "w": "b"})
    assert exp.run_dir("ttrl", cfg) != a


def test_no_cached_score_is_reused_when_seed_answers_or_grader_change(testbed_cache, monkeypatch):
    """Issue 19: evaluations were keyed by question ids only, so ``seed 1`` after ``seed 0`` (same testbed ids,
    other questions) and records whose answers all changed still got the cached score."""
    import ddrl.answers
    import ddrl.evaluate
    import ddrl.run.experiments
    from ddrl.data import load_questions
    from ddrl.run.experiments import Experiment
    from ddrl.models import load_model

    calls = []
    real = ddrl.evaluate.evaluate

    def counting(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out["pass@1"])
        return out

    monkeypatch.setattr(ddrl.run.experiments, "evaluate", counting)
    model, tok = load_model("testbed:tiny", device="cpu")
    q0 = load_questions("testbed_test", 4, seed=0)
    q1 = load_questions("testbed_test", 4, seed=1)
    assert [r["id"] for r in q0] == [r["id"] for r in q1] and [r["prompt"] for r in q0] != [r["prompt"] for r in q1]

    def score(records, seed=0):
        exp = Experiment(records, overrides={**KNOBS, "model": "testbed:tiny"}, progress=False)
        return exp.evaluate(model, tok, exp.config("no_adaptation", seed), seed, tag="base")["adapted"]["pass@1"]

    first = score(q0)
    assert score(q0) == first and len(calls) == 1  # same content: served from the cache
    score(q1)  # the notebook's question seed: same ids, other questions
    assert len(calls) == 2
    score(q0, seed=1)  # the evaluation seed
    assert len(calls) == 3
    zeros = [{**r, "answer": "0"} for r in q0]
    assert score(zeros) == calls[-1] and len(calls) == 4  # answers changed: graded again
    monkeypatch.setattr(ddrl.answers, "GRADER_VERSION", ddrl.answers.GRADER_VERSION + "-next")
    score(q0)
    assert len(calls) == 5  # grader changed: graded again
    model2, _ = load_model("testbed:tiny", device="cpu")
    with __import__("torch").no_grad():
        next(model2.parameters()).add_(1e-3)
    exp = Experiment(q0, overrides={**KNOBS, "model": "testbed:tiny"}, progress=False)
    exp.evaluate(model2, tok, exp.config("no_adaptation", 0), 0, tag="base")
    assert len(calls) == 6  # other weights under the same name and tag: evaluated again


def test_cached_rollouts_key_on_prompts_answers_and_grader(tmp_path, monkeypatch):
    import ddrl.run.experiments as an
    import ddrl.answers
    import ddrl.infra.cache

    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path))
    keys = []
    monkeypatch.setattr(an, "cached", lambda key, fn, namespace: keys.append(ddrl.infra.cache.content_key(key)))
    recs = [{"id": 0, "prompt": "1+1", "answer": "2"}]
    an.cached_rollouts("some/hub-model", recs, "x", 4)
    an.cached_rollouts("some/hub-model", [{**recs[0], "prompt": "1+2"}], "x", 4)
    an.cached_rollouts("some/hub-model", [{**recs[0], "answer": "3"}], "x", 4)
    monkeypatch.setattr(ddrl.answers, "GRADER_VERSION", ddrl.answers.GRADER_VERSION + "-next")
    an.cached_rollouts("some/hub-model", recs, "x", 4)
    assert len(set(keys)) == 4


SHARING = ("03_test_time_training", "04_ablations", "05_offpolicy_cost")


def test_notebooks_03_to_05_share_their_trainer_settings():
    """Same knob names and defaults in the three parameters cells, the same value in every preset file that sets
    one, and each notebook builds its experiment from all of them (so the three train the same runs)."""
    import ast
    import re

    import yaml

    from conftest import REPO
    from ddrl.run.experiments import SETTING_KNOBS, TRAINER_KNOBS
    from ddrl.run.reproduce import declared_parameters

    knobs = (*TRAINER_KNOBS, *SETTING_KNOBS)
    declared = {nb: declared_parameters(REPO / "notebooks" / f"{nb}.ipynb") for nb in SHARING}
    for k in knobs:
        assert len({declared[nb][k] for nb in SHARING}) == 1, (k, {nb: declared[nb][k] for nb in SHARING})
    for preset_dir in sorted((REPO / "params").iterdir()):
        files = {nb: preset_dir / f"{nb}.yaml" for nb in SHARING}  # a preset may run only other notebooks (study)
        values = {nb: (yaml.safe_load(f.read_text()) or {}) if f.is_file() else {} for nb, f in files.items()}
        for k in knobs:  # the value each notebook runs with: the preset's, else its declared default
            got = {nb: repr(values[nb][k] if k in values[nb] else ast.literal_eval(declared[nb][k])) for nb in SHARING}
            assert len(set(got.values())) == 1, (preset_dir.name, k, got)
    for nb in SHARING:  # each builds its runs from all its knobs through the one function
        src = (REPO / "notebooks" / f"{nb}.py").read_text()
        assert set(knobs) <= set(declared[nb]), (nb, sorted(set(knobs) - set(declared[nb])))
        assert re.search(r"^exp = shared_experiment\(S\)$", src, re.M), nb
        assert "notebook_experiment(" not in src, nb


def test_run_records_per_question_pass_at_1(testbed_cache, monkeypatch):
    """Per-question evaluation rows (claims study, plan Sec. 3): one pass@1 per question, in the records' order,
    whose mean is the run's pass@1; run-level rows stay as they were unless asked for them."""
    import numpy as np

    from ddrl.run.experiments import question_rows

    exp = notebook_experiment(model="testbed", testbed_preset="tiny", dataset="testbed_test", data_dir=None,
                              n_adapted=3, n_heldout=2, seed=0, paper_settings=None, trainer=KNOBS, progress=False)
    plain = exp.run("no_adaptation", 0)
    assert all("per_question" not in r for r in plain)
    rows = exp.run("no_adaptation", 0, per_question=True)  # served from the evaluation cache
    for r, split in zip(rows, (exp.adapted, exp.heldout)):
        pq = r["per_question"]
        assert pq["id"] == [q["id"] for q in split]
        assert all(x in (0.0, 0.5, 1.0) for x in pq["pass@1"])  # eval_n = 2 samples per question
        assert np.mean(pq["pass@1"]) == r["pass@1"]
    long = question_rows(rows)
    assert list(long.columns) == ["method", "seed", "split", "question", "pass@1"] and len(long) == 5
    import pytest

    with pytest.raises(ValueError, match="per_question=True"):
        question_rows(plain)


def test_keys_name_the_device_kind_off_the_cpu(tmp_path, monkeypatch):
    """A GPU draws and rounds differently: its runs, evaluations and rollouts get other keys than the CPU's for
    the same config, while CPU keys stay as they were (``device_key`` adds nothing there with torch's decode
    attention, the default, and names the C loop where the samplers use it, opted into: ``ddrl.accel.native_attention``,
    docs/benchmarks.md "The C decode attention: opt-in")."""
    import torch

    import ddrl.models
    import ddrl.accel.native_attention
    from ddrl.run import experiments as E
    from ddrl.models import device_key

    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "torch")
    assert device_key("cpu") == {} and device_key("cuda") == {"device": "cuda"}
    monkeypatch.setattr(ddrl.accel.native_attention, "unavailable_reason", lambda: None)
    monkeypatch.delenv("DDRL_DECODE_ATTENTION")  # the default is torch's even where the C loop could run (opt-in)
    assert device_key("cpu") == {}
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "native")
    assert device_key("cpu") == {"decode_attention": "native-v1"} and device_key("cuda") == {"device": "cuda"}
    monkeypatch.setenv("DDRL_DECODE_ATTENTION", "torch")
    monkeypatch.setattr(E, "model_fingerprint", lambda name: {"model": name, "weights": "w"})
    recs = [{"id": "q0", "prompt": "1+2", "answer": "3"}]
    exp = E.Experiment(adapted=recs, runs_root=tmp_path)
    cfg = exp.config("ttrl", 0)
    assert cfg.device == "auto"
    weights = {"model": cfg.model, "sha256": "s"}
    real = ddrl.models.resolve_device
    monkeypatch.setattr(ddrl.models, "resolve_device", lambda d: torch.device("cpu") if d == "auto" else real(d))
    on_cpu = exp.run_dir("ttrl", cfg), exp.evaluation_key(weights, cfg, 0, "adapted", recs)
    assert "device" not in on_cpu[1]
    monkeypatch.setattr(ddrl.models, "resolve_device", lambda d: torch.device("cuda") if d == "auto" else real(d))
    on_gpu = exp.run_dir("ttrl", cfg), exp.evaluation_key(weights, cfg, 0, "adapted", recs)
    assert on_gpu[0] != on_cpu[0] and on_gpu[1] == {**on_cpu[1], "device": "cuda"}


def test_refined_runs_cor_at_another_size_once_and_matches_the_run_at_its_own(testbed_cache, monkeypatch):
    """``Experiment.refined`` (Table 6, claim R1): COR from the DDRL run's RL-only weights with ``keep``
    rollouts per question, evaluated; at the run's own ``cor_keep`` it reproduces the DDRL run's final
    pass@1 (the same COR call and seed), a second call is served from the cache without refining again, and
    ``refined_grid`` gives the same rows from the pool's workers."""
    import pytest

    from ddrl.run import experiments as E

    knobs = {**KNOBS, "episodes": 1}
    exp = notebook_experiment(model="testbed", testbed_preset="tiny", dataset="testbed_test", data_dir=None,
                              n_adapted=4, n_heldout=2, seed=0, paper_settings=None, trainer=knobs, progress=False)
    keep = exp.config("ddrl", 0).cor_keep
    same = exp.refined(0, keep)
    ddrl = exp.run("ddrl", 0)
    assert [r["split"] for r in same] == ["adapted", "heldout"]
    assert [r["pass@1"] for r in same] == [r["pass@1"] for r in ddrl]
    assert [r["cor_kept"] for r in same] == [r["cor_kept"] for r in ddrl]
    bigger = exp.refined(0, 2 * keep)
    assert all(0 < r["cor_kept"] <= 2 * keep * len(exp.adapted) for r in bigger)
    exp.workers = 2  # refined_grid through the pool: the workers read the same cache entries
    assert exp.refined_grid([0], [keep, 2 * keep]) == {(0, keep): same, (0, 2 * keep): bigger}
    monkeypatch.setattr(E, "refine_with_config", lambda *a, **k: pytest.fail("refined again instead of cached"))
    assert exp.refined(0, 2 * keep) == bigger
