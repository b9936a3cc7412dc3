"""Test-time RL trainer: ground truth never reaches training, resume == uninterrupted, every preset runs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from conftest import make_tiny_lm, requires_peft
from ddrl.infra.rundir import RunDir
from ddrl.logprobs import collate, response_logprobs
from ddrl.config import PRESETS, TrainConfig, make_config
from ddrl.train import lr_factor, step_question_indices, strip_truth, train
from ddrl.voting import majority_vote, pseudo_rewards

RECORDS = [{"prompt": f"{i}+{i + 1}", "answer": str(2 * i + 1), "id": f"q{i}", "source": "toy"} for i in range(4)]

# Small enough for seconds on one CPU core; lr large so that the updates visibly move the weights.
TINY = dict(model="fixture", n_votes=16, k_train=8, prompts_per_step=2, episodes=1, max_new_tokens=12,
            warmup_steps=1, lr=1e-3, mini_batch_size=8, micro_batch_size=4, sample_batch_size=64,
            cor_m=8, cor_keep=2, cor_epochs=1, eval_n=4)


def run(tmp_path, name, records=RECORDS, preset="ttrl", **kw):
    model, tok = make_tiny_lm()
    cfg = make_config(preset, **{**TINY, **kw})
    return train(cfg, records, tmp_path / name, progress=False, model=model, tokenizer=tok)


def weights(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def non_gt(rows):
    return [{k: v for k, v in r.items() if not k.startswith(("gt/", "time/"))} for r in rows]


def same(a, b):
    """Equality of metric rows with NaN == NaN."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# --- config --------------------------------------------------------------------------------------------


def test_make_config_rejects_unknown_fields_and_lists_valid_ones():
    with pytest.raises(ValueError, match=r"unknown TrainConfig field\(s\) \['lrr'\].*valid fields: seed, model"):
        make_config("ttrl", lrr=1e-3)
    with pytest.raises(ValueError, match="unknown preset 'tttrl'"):
        make_config("tttrl")
    with pytest.raises(ValueError, match="selection must be one of"):
        make_config(selection="greedy")
    with pytest.raises(ValueError, match="k_train <= n_votes"):
        make_config(n_votes=8, k_train=16)


def test_presets_are_the_papers_rows():
    assert (make_config("ttrl").selection, make_config("ttrl").advantage, make_config("ttrl").cor) == ("random", "grpo", False)
    d = make_config("ddrl")
    assert (d.selection, d.advantage, d.cor) == ("bcs", "fixed", True)
    assert make_config("no_adaptation").episodes == 0
    assert make_config("grpo_no_std").advantage == "grpo_no_std"
    assert (make_config("bcs_dae").selection, make_config("bcs_dae").advantage) == ("bcs", "fixed")
    assert (make_config("bcs_random_neg").selection, make_config("bcs_random_neg").advantage) == ("bcs_random_neg", "grpo")
    # every preset names only real fields
    names = set(TrainConfig.__dataclass_fields__)
    assert all(set(o) <= names for o in PRESETS.values())


# --- pure pieces ---------------------------------------------------------------------------------------


def test_pseudo_rewards_follow_the_label_key():
    v = majority_vote(["3", "5", "05", None, "3", "5"])  # "5" and "05" share a key: 5 wins 3-2
    np.testing.assert_array_equal(pseudo_rewards(v), [0, 1, 1, 0, 0, 1])
    v = majority_vote(["7", "8"])  # tie -> first seen
    np.testing.assert_array_equal(pseudo_rewards(v), [1, 0])
    np.testing.assert_array_equal(pseudo_rewards(majority_vote([None, None])), [0, 0])


def test_episode_order_covers_every_question_once():
    for ep in range(3):
        seen = [i for s in range(ep * 3, ep * 3 + 3) for i in step_question_indices(5, s, 7, 3)]
        assert sorted(seen) == list(range(7))
    assert step_question_indices(5, 0, 7, 3) != step_question_indices(5, 3, 7, 3)  # reshuffled per episode


def test_lr_factor_warmup_then_cosine_then_extra():
    assert lr_factor(0, 4, 20) == pytest.approx(0.25)
    assert lr_factor(3, 4, 20) == pytest.approx(1.0)
    assert lr_factor(4, 4, 20) == pytest.approx(1.0)
    assert lr_factor(12, 4, 20) == pytest.approx(0.5)  # half-way through the cosine
    assert 0 < lr_factor(19, 4, 20) < 0.02
    assert lr_factor(20, 4, 20, extra_factor=0.3) == 0.3


def test_strip_truth_removes_only_the_answer():
    assert strip_truth(RECORDS[0]) == {"prompt": "0+1", "id": "q0", "source": "toy"}


def test_response_logprobs_match_the_sampler(tiny_lm):
    """Recomputed log-probs at T = 1 equal the sampler's, for mixed prompt and response lengths."""
    from ddrl.sampling import HFSampler

    model, tok = tiny_lm
    s = HFSampler(model, tok, batch_size=16)
    prompts = ["<|user|>12+3<|assistant|>", "<|user|>4<|assistant|>"]
    rolls = s.sample(prompts, n=3, temperature=1.0, max_new_tokens=10, seed=1)
    pids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    P = [pids[r.prompt_index] for rs in rolls for r in rs]
    R = [r.token_ids for rs in rolls for r in rs]
    lp, mask, ent = response_logprobs(model, P, R, 1.0, tok.pad_token_id, with_entropy=True)
    for b, r in enumerate(r for rs in rolls for r in rs):
        n = len(r.token_ids)
        assert mask[b].sum() == n
        torch.testing.assert_close(lp[b, :n], torch.tensor(r.logprobs), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(ent[b, :n], torch.tensor(r.entropies), atol=1e-4, rtol=1e-4)
        assert (lp[b, n:] == 0).all()


def test_collate_aligns_responses():
    ids, attn, pos, mask = collate([[5, 6, 7], [8]], [[1], [2, 3]], pad_id=0, device="cpu")
    assert ids.tolist() == [[5, 6, 7, 1, 0], [0, 0, 8, 2, 3]]
    assert attn.tolist() == [[1, 1, 1, 1, 0], [0, 0, 1, 1, 1]]
    assert pos[1].tolist()[2:] == [0, 1, 2]
    assert mask.tolist() == [[1, 0], [1, 1]]


# --- the acceptance tests of the issue ---------------------------------------------------------------------


def test_shuffled_ground_truth_gives_identical_training(tmp_path):
    rng = np.random.default_rng(0)
    shuffled = [dict(r, answer=a) for r, a in zip(RECORDS, rng.permutation([r["answer"] for r in RECORDS]))]
    wrong = [dict(r, answer="999") for r in RECORDS]
    kw = dict(preset="ddrl", lr=3e-3, max_new_tokens=20, n_votes=24)  # RL and COR
    a = run(tmp_path, "a", **kw)
    b = run(tmp_path, "b", records=shuffled, **kw)
    c = run(tmp_path, "c", records=wrong, **kw)
    assert any(r["adv/pos_frac"] > 0 for r in a.metrics), "no positive reward at all: the test would be vacuous"
    wa, wb, wc = weights(a.model), weights(b.model), weights(c.model)
    assert any(not torch.equal(wa[n], p) for n, p in weights(make_tiny_lm()[0]).items()), "training changed nothing"
    for n in wa:
        assert torch.equal(wa[n], wb[n]) and torch.equal(wa[n], wc[n]), n
    assert same(non_gt(a.metrics), non_gt(b.metrics)) and same(non_gt(a.metrics), non_gt(c.metrics))
    assert all("gt/label_acc" in r for r in a.metrics)
    assert a.cor["kept"] == b.cor["kept"] == c.cor["kept"] and a.cor["epoch_losses"] == c.cor["epoch_losses"]


def test_resume_after_a_kill_equals_an_uninterrupted_run(tmp_path, monkeypatch):
    kw = dict(episodes=2, seed=3)  # 4 steps
    full = run(tmp_path, "full", **kw)
    assert len(full.metrics) == 4

    calls = {"n": 0}
    original = RunDir.save_checkpoint

    def dying(self, steps_done, *a, **k):
        calls["n"] += 1
        if calls["n"] == 3:  # killed after step 2's metrics were logged, before its checkpoint
            raise KeyboardInterrupt
        return original(self, steps_done, *a, **k)

    monkeypatch.setattr(RunDir, "save_checkpoint", dying)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, "resumed", **kw)
    monkeypatch.setattr(RunDir, "save_checkpoint", original)
    rd = RunDir(tmp_path / "resumed")
    assert len(rd.read_metrics()) == 3 and rd.latest_checkpoint().name == "step_000002"

    resumed = run(tmp_path, "resumed", **kw)  # same command again
    wf, wr = weights(full.model), weights(resumed.model)
    for n in wf:
        torch.testing.assert_close(wr[n], wf[n], atol=1e-6, rtol=0)
    assert [r["step"] for r in resumed.metrics] == [0, 1, 2, 3]
    strip = lambda rows: [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]
    assert same(strip(resumed.metrics), strip(full.metrics))
    assert same(strip(rd.read_metrics()), strip(full.metrics))
    # and a finished run rerun is a no-op that returns the final weights
    again = run(tmp_path, "resumed", **kw)
    for n in wf:
        torch.testing.assert_close(weights(again.model)[n], wf[n], atol=1e-6, rtol=0)


def test_a_different_config_in_an_existing_run_dir_is_an_error(tmp_path):
    run(tmp_path, "x", episodes=0)
    with pytest.raises(ValueError, match=r"different config \(lr: 0.001 -> 0.002\)"):
        run(tmp_path, "x", episodes=0, lr=2e-3)


@pytest.fixture(scope="module")
def testbed_tiny():
    """The tiny testbed build (seconds; cached), and 4 test-split questions."""
    from ddrl.testbed import build, generate_split

    return build("tiny", progress=False), generate_split("test", 4, seed=0)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_one_rl_step_for_every_preset(tmp_path, preset, testbed_tiny):
    """One end-to-end RL step (and COR where the preset has it) on the tiny testbed model: the fast tier's check that
    every preset trains (~1-2 s each; it left the e2e tier when the notebooks' smoke run moved to the slow one)."""
    from ddrl.testbed import load

    path, records = testbed_tiny
    model, tok = load(path)
    cfg = make_config(preset, **{**TINY, "model": "testbed:tiny", "prompts_per_step": 4, "max_new_tokens": 48})
    res = train(cfg, records, tmp_path / preset, progress=False, model=model, tokenizer=tok)
    expected = 0 if cfg.episodes == 0 else 1 + math.ceil(cfg.extra_rl_fraction)
    assert len(res.metrics) == expected
    for row in res.metrics:
        for key in ("adv/mean", "gt/label_acc", "gt/reward_acc", "rollout/entropy", "actor/kl", "actor/clip_frac",
                    "tokens/trained", "time/step_s"):
            assert key in row, key
        assert row["tokens/trained"] > 0 and math.isfinite(row["actor/pg_loss"])
    assert (res.cor is not None) == cfg.cor
    assert RunDir(res.run_dir).finished()
    if cfg.cor:
        assert (res.run_dir / "rl" / "trainable.pt").exists() and res.cor_seconds > 0


def test_etmr_step_votes_on_tree_leaves_and_counts_decoded_tokens(tmp_path, testbed_tiny):
    """ETMR: each question votes on its tree's leaves (<= m * (1 + forks * branches)) and the step's decoded
    token count is below the total leaf length (shared prefixes are decoded once)."""
    from ddrl.testbed import load

    path, records = testbed_tiny
    model, tok = load(path)
    cfg = make_config("etmr", **{**TINY, "model": "testbed:tiny", "prompts_per_step": 4, "max_new_tokens": 48,
                                 "etmr_m": 4, "etmr_forks": 2, "etmr_branches": 2, "k_train": 8})
    row = train(cfg, records, tmp_path / "etmr", progress=False, model=model, tokenizer=tok).metrics[0]
    assert 4 < row["rollout/voters_mean"] <= 4 * (1 + 2 * 2)
    assert row["rollout/generated_tokens"] < row["rollout/voters_mean"] * 4 * row["rollout/len_mean"]
    assert row["tokens/trained"] > 0


@requires_peft
def test_lora_step_changes_only_the_adapter(tmp_path):
    res = run(tmp_path, "lora", preset="ddrl", lora_rank=4, prompts_per_step=4)
    trainable = [n for n, p in res.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert len(res.metrics) == 1


#: TrainConfig field -> the paper's stated setting (ddrl.paper, Sec. 4.1 / 3) its default is.
PAPER_DEFAULTS = {"n_votes": "n_votes", "k_train": "k_train", "eval_n": "eval_samples", "eval_temperature": "eval_temperature",
                  "eval_top_p": "eval_top_p", "cor_m": "cor_m", "cor_keep": "cor_keep_math500", "cor_epochs": "cor_epochs",
                  "cor_lr": "cor_lr"}


def test_trainconfig_defaults_are_the_papers_stated_settings():
    """The defaults that claim to be the paper's are the numbers ddrl.paper reads from its LaTeX (not literals)."""
    from ddrl import paper

    cfg = TrainConfig()
    assert {f: getattr(cfg, f) for f in PAPER_DEFAULTS} == {f: paper.value(("setting", k)) for f, k in PAPER_DEFAULTS.items()}


def test_paper_overrides_map_the_official_settings():
    from ddrl.models import paper_overrides

    cfg = make_config("ddrl", **paper_overrides("qwen2.5-math-1.5b", "aime2024"))
    assert (cfg.n_votes, cfg.k_train, cfg.cue, cfg.max_new_tokens, cfg.warmup_steps) == (64, 32, "system", 3072, -1)
    assert cfg.lr == 5e-7 and cfg.warmup_ratio == 0.03 and cfg.cor


@pytest.mark.parametrize("benchmark, keep", [("math500", 4), ("amc", 16), ("aime2024", 16)])
def test_paper_overrides_cor_keep_per_benchmark(benchmark, keep):
    """Sec. 4.1: COR keeps 4 samples per prompt on MATH-500 and 16 on AMC and AIME 2024 (M = 128, 5 epochs, 1e-5)."""
    from ddrl.models import paper_overrides

    cfg = make_config("ddrl", **paper_overrides("qwen2.5-math-1.5b", benchmark))
    assert (cfg.cor_keep, cfg.cor_m, cfg.cor_epochs, cfg.cor_lr) == (keep, 128, 5, 1e-5)


@pytest.mark.parametrize("model, paper_t", [("qwen2.5-math-1.5b", 1.0), ("qwen2.5-3b", 0.6),
                                            ("llama-3.1-8b-instruct", 0.6)])
def test_paper_overrides_rollout_temperature_paper_or_scripts(model, paper_t):
    """The text: 1.0 for math-specialised models, 0.6 for the others; the official scripts: 1.0 for all."""
    from ddrl.models import get_preset, paper_overrides

    assert paper_overrides(model, "amc")["rollout_temperature"] == paper_t
    assert paper_overrides(model, "amc", temperature="scripts")["rollout_temperature"] == 1.0
    assert get_preset(model).rollout_temperature == 1.0
    with pytest.raises(ValueError, match="temperature must be 'paper'"):
        paper_overrides(model, "amc", temperature="0.6")


def test_drop_last_follows_the_official_loader():
    from ddrl.models import paper_overrides
    from ddrl.train import steps_per_episode

    assert paper_overrides("qwen2.5-3b", "aime2024")["drop_last"] is True
    # official batch sizes: AIME 30 questions / 8 (Qwen2.5-Math) -> 3 steps, AMC 83 / 8 -> 10, MATH-500 500 / 32 -> 15
    assert [steps_per_episode(n, b, True) for n, b in ((30, 8), (83, 8), (500, 32))] == [3, 10, 15]
    assert [steps_per_episode(n, b) for n, b in ((30, 8), (83, 8), (500, 32))] == [4, 11, 16]
    for ep in range(3):
        steps = [step_question_indices(5, s, 30, 8, drop_last=True) for s in range(ep * 3, ep * 3 + 3)]
        assert all(len(x) == 8 for x in steps) and len(set(sum(steps, []))) == 24
    with pytest.raises(ValueError, match="leaves no RL step"):
        steps_per_episode(4, 8, drop_last=True)


def test_additional_rl_runs_at_the_peak_learning_rate_by_default(tmp_path):
    """additional_rl: the extra steps run at the run's own peak lr (not a constant 1e-5) unless extra_rl_lr is set."""
    from ddrl.train import extra_rl_factor

    cfg = make_config("additional_rl", lr=5e-7)
    assert cfg.extra_rl_lr is None and extra_rl_factor(cfg) == 1.0
    assert extra_rl_factor(make_config("additional_rl", lr=5e-7, extra_rl_lr=1e-5)) == pytest.approx(20.0)
    with pytest.raises(ValueError, match="extra_rl_lr"):
        make_config("additional_rl", extra_rl_lr=0.0)
    res = run(tmp_path, "extra", preset="additional_rl", prompts_per_step=2)  # 2 RL steps + ceil(0.2) = 1 extra
    assert len(res.metrics) == 3
    assert res.metrics[-1]["lr"] == pytest.approx(TINY["lr"])


def step_rollouts(testbed_tiny, **overrides):
    """The tiny testbed, a TTRL config (4 prompts per step, so several mini-batches) and its first step's rollouts."""
    from ddrl.config import resolve_cue
    from ddrl.sampling import HFSampler
    from ddrl.testbed import load
    from ddrl.train import collect_rollouts

    path, records = testbed_tiny
    model, tok = load(path)
    cfg = make_config("ttrl", **{**TINY, "model": "testbed:tiny", "prompts_per_step": 4, "max_new_tokens": 48,
                                 **overrides})
    ro = collect_rollouts(HFSampler(model, tok, 64), tok, [strip_truth(r) for r in records], cfg, 0,
                          resolve_cue(cfg.cue, cfg.model))
    return model, tok, cfg, ro


def counted_update(model, tok, cfg, ro, monkeypatch, lean=True):
    """One ``ppo_update`` of a fresh copy of ``model`` on ``ro``'s samples: its metrics, the updated weights and
    how many log-prob passes (one per micro-batch, whichever backend computes it) ran on the policy and on the
    reference."""
    import copy

    import ddrl.train as T

    policy, ref = T.prepare_policy(copy.deepcopy(model), cfg)
    calls = {"policy": 0, "ref": 0}

    def counted(m, *a, **k):
        calls["ref" if m is ref else "policy"] += 1
        return response_logprobs(m, *a, **k)

    monkeypatch.setattr(T, "response_logprobs", counted)
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=cfg.lr)
    out = T.ppo_update(policy, ref, ro.samples, cfg, opt, 0, tok.pad_token_id, lean=lean)
    return out, weights(policy), calls


def test_step_trains_on_the_named_selection(testbed_tiny):
    """``selection`` picks which K of N rollouts a step trains on, per question, from the vote's counts and the
    question's own generator: BCS's positives with random negatives (plan Amendment 19) too."""
    from ddrl.seeds import numpy_generator
    from ddrl.selection import bcs, bcs_random_negatives

    _, _, cfg, ro = step_rollouts(testbed_tiny, selection="bcs_random_neg")
    differs = 0
    for q, vote in enumerate(ro.votes):
        want = bcs_random_negatives(vote.counts, cfg.k_train, numpy_generator(cfg.seed, "select", 0, q))
        assert ro.selected[q] == want
        differs += want != bcs(vote.counts, cfg.k_train)
    assert differs, "no question where random negatives differ from BCS's: the test shows nothing"


@pytest.mark.parametrize("kl_coef", [0.001, 0.0])
def test_lean_update_skips_known_passes_and_keeps_the_loss(testbed_tiny, kl_coef, monkeypatch):
    """The lean PPO update (no reference pass when kl_coef = 0; the first mini-batch's old log-probs taken from
    its own gradient pass) runs fewer forward passes and gives the update that running every pass gives.

    Tolerance: the skipped old pass and the gradient pass compute the same log-probs from the same weights but
    pad their micro-batches to different widths, so they agree to float32 rounding, not bitwise; the
    updated weights must agree to 1e-6 (the update itself moves them by ~4e-3 here; measured difference ~2e-8)
    and the losses to 1e-6 relative."""
    model, tok, cfg, ro = step_rollouts(testbed_tiny, kl_coef=kl_coef)
    n_micro = math.ceil(len(ro.samples) / cfg.micro_batch_size)  # 32 samples / 4 = 8 micro-batches
    assert len(ro.samples) // cfg.mini_batch_size >= 2, "needs more than one mini-batch to test anything"
    monkeypatch.setenv("DDRL_LOGPROBS", "shared-prompt")  # old log-probs recomputed (the sampler's: next test)

    full, w_full, c_full = counted_update(model, tok, cfg, ro, monkeypatch, lean=False)
    lean, w_lean, c_lean = counted_update(model, tok, cfg, ro, monkeypatch, lean=True)
    first_mb = cfg.mini_batch_size // cfg.micro_batch_size
    assert c_full == {"policy": 2 * n_micro, "ref": n_micro}
    assert c_lean == {"policy": 2 * n_micro - first_mb, "ref": n_micro if kl_coef else 0}
    moved = max(float((w_full[n] - p).abs().max()) for n, p in weights(model).items())
    assert moved > 1e-4, "the update moved nothing"
    for n in w_full:
        torch.testing.assert_close(w_lean[n], w_full[n], atol=1e-6, rtol=0)
    for k in ("actor/pg_loss", "actor/clip_frac", "actor/grad_norm", "actor/entropy"):
        assert lean[k] == pytest.approx(full[k], rel=1e-6, abs=1e-9), k
    assert math.isnan(lean["actor/kl"]) if kl_coef == 0 else lean["actor/kl"] == pytest.approx(full["actor/kl"], rel=1e-6)


def test_old_logprobs_from_the_sampler_skip_the_no_grad_pass(testbed_tiny, monkeypatch):
    """Under DDRL_LOGPROBS=auto a float32 CPU policy sampled at top-p 1 takes every old log-prob from the sampler
    (ddrl.logprobs.old_logprobs_from_sampler): the no-grad policy pass disappears, and the update equals the one
    that recomputes them up to the ~1e-6 by which a KV-cached decode and a full forward differ. With a nucleus
    (top-p < 1) the sampler reports another distribution, so the pass is run.

    Tolerances: measured here, the updated weights differ by 4e-7 (the update moves them by 4e-3), pg_loss by
    1.4e-6 relative, the KL by 3e-7, and old log-probs and sampler's by 1.3e-7 per token; asserted 1e-6 absolute
    for the weights and 1e-5 relative for the metrics."""
    def update(cfg, ro, backend):
        monkeypatch.setenv("DDRL_LOGPROBS", backend)
        return counted_update(model, tok, cfg, ro, monkeypatch)

    model, tok, cfg, ro = step_rollouts(testbed_tiny, rollout_top_p=1.0)
    n_micro = math.ceil(len(ro.samples) / cfg.micro_batch_size)
    first_mb = cfg.mini_batch_size // cfg.micro_batch_size
    assert n_micro > first_mb, "needs more than one mini-batch to test anything"
    recomputed, w_rec, c_rec = update(cfg, ro, "shared-prompt")
    reused, w_reu, c_reu = update(cfg, ro, "auto")
    assert c_rec == {"policy": 2 * n_micro - first_mb, "ref": n_micro}
    assert c_reu == {"policy": n_micro, "ref": n_micro}  # the gradient passes only
    assert max(float((w_rec[n] - p).abs().max()) for n, p in weights(model).items()) > 1e-4, "the update moved nothing"
    for n in w_rec:
        torch.testing.assert_close(w_reu[n], w_rec[n], atol=1e-6, rtol=0)
    for k in ("actor/pg_loss", "actor/kl", "actor/grad_norm", "actor/entropy"):
        assert reused[k] == pytest.approx(recomputed[k], rel=1e-5, abs=1e-9), k
    assert 0 < reused["actor/old_logp_vs_sampler"] < 1e-5

    _, _, cfg, ro = step_rollouts(testbed_tiny, rollout_top_p=0.9)  # a nucleus: the renormalised distribution
    _, _, calls = update(cfg, ro, "auto")
    assert calls == {"policy": 2 * n_micro - first_mb, "ref": n_micro}


def test_old_logprobs_come_from_the_sampler_only_where_they_are_the_same_quantity(testbed_tiny, monkeypatch):
    from ddrl.logprobs import old_logprobs_from_sampler
    from ddrl.testbed import load

    model, _ = load(testbed_tiny[0])
    monkeypatch.delenv("DDRL_LOGPROBS", raising=False)
    assert old_logprobs_from_sampler(model, 1.0, 1.0) and old_logprobs_from_sampler(model, 0.6, 1.0)
    assert not old_logprobs_from_sampler(model, 1.0, 0.95)  # a nucleus
    assert not old_logprobs_from_sampler(model, 0.0, 1.0)  # greedy: no distribution sampled
    assert not old_logprobs_from_sampler(copy_to(model, dtype=torch.bfloat16), 1.0, 1.0)
    assert not old_logprobs_from_sampler(copy_to(model, device="meta"), 1.0, 1.0)  # off the CPU
    for pinned in ("hf", "shared-prompt"):
        monkeypatch.setenv("DDRL_LOGPROBS", pinned)
        assert not old_logprobs_from_sampler(model, 1.0, 1.0)


def copy_to(model, **kw):
    import copy

    return copy.deepcopy(model).to(**kw)
