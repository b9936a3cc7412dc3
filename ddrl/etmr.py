"""ETMR: entropy-fork tree majority rollouts (Liu et al. 2025, "ETTRL", arXiv:2508.11356), the ``etmr`` and

Paper: Sec. 4.1's baselines (ETMR, Liu et al. 2025).
``etmr_ear`` baselines' rollout. :func:`tree_sample` grows one tree per prompt from any
:class:`ddrl.sampling.Sampler`; :func:`fork_points` picks where a root response forks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ddrl.sampling import Rollout
from ddrl.seeds import derive_seed


@dataclass
class TreeRollouts:
    """The leaves of one entropy-fork tree per prompt, and what they cost.

    ``leaves[i]`` lists prompt i's complete responses: the ``m`` root responses first, then the fork
    continuations (each stored whole: the root's prefix followed by its new tokens). ``generated_tokens[i]``
    counts only tokens actually decoded (a shared prefix is decoded once), the cost to compare with
    ``n`` independent samples. ``parent[i][j]`` is the root index leaf j forked from (None for a root) and
    ``fork_position[i][j]`` the response position where its new tokens start.
    """

    leaves: list[list[Rollout]]
    generated_tokens: list[int]
    parent: list[list[int | None]]
    fork_position: list[list[int | None]]


def fork_points(entropies: Sequence[float], forks: int, exclude_final: bool = True) -> list[int]:
    """ETMR's fork points: the ``forks`` positions with the highest next-token entropy, in ascending order.

    Position t means "re-sample token t from the prefix before it". Ties go to the earlier position.
    ``exclude_final`` leaves out the last token (the end-of-sequence token of a finished response, where a
    fork would only re-decide whether to stop). Returns fewer points when the response is shorter.
    """
    if forks < 0:
        raise ValueError(f"forks must be >= 0, got {forks}")
    cands = range(len(entropies) - 1 if exclude_final else len(entropies))
    ranked = sorted(cands, key=lambda t: (-entropies[t], t))
    return sorted(ranked[:forks])


def tree_sample(
    sampler,
    prompts: Sequence[str],
    m: int = 12,
    forks: int = 2,
    branches: int = 2,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 256,
    seed: int = 0,
    progress: bool = False,
) -> TreeRollouts:
    """Entropy-fork tree rollouts: ``m`` root responses per prompt; at each root's top-``forks``
    highest-entropy positions, ``branches`` new continuations are sampled from the prefix before the fork
    to the end. Leaves per tree: ``m * (1 + branches * forks)`` (60 for the reported M=12, F=2, B=2).

    Choices where the ETTRL paper is silent (parameters or documented here): forks are taken on the root
    responses only (no recursive forking); the fork token itself is re-sampled; a finished root's final
    end-of-sequence token is never a fork point; a continuation may use the tokens its prefix left of
    ``max_new_tokens``. All leaves vote; training then takes K of them as TTRL does.
    """
    if m < 1 or branches < 0:
        raise ValueError(f"m must be >= 1 and branches >= 0, got m={m}, branches={branches}")
    prompt_ids = sampler.encode(prompts)
    roots = sampler.sample_ids(prompt_ids, m, temperature, top_p, max_new_tokens,
                               seed=derive_seed(seed, "etmr-root"), progress=progress)
    jobs = []  # (prompt, root, position)
    for i, rs in enumerate(roots):
        for j, r in enumerate(rs):
            if r.entropies is None:
                raise ValueError("ETMR needs per-token entropies; this sampling backend does not report them")
            jobs += [(i, j, t) for t in fork_points(r.entropies, forks, exclude_final=r.finish_reason == "stop")]
    leaves = [list(rs) for rs in roots]
    parent: list[list[int | None]] = [[None] * m for _ in roots]
    position: list[list[int | None]] = [[None] * m for _ in roots]
    generated = [sum(r.num_tokens for r in rs) for rs in roots]
    if jobs and branches:
        conts = sampler.sample_ids(
            [prompt_ids[i] + roots[i][j].token_ids[:t] for i, j, t in jobs], branches, temperature, top_p,
            [max_new_tokens - t for _, _, t in jobs], seed=derive_seed(seed, "etmr-fork"), progress=progress,
        )
        for (i, j, t), cs in zip(jobs, conts):
            root = roots[i][j]
            for c in cs:
                ids = root.token_ids[:t] + c.token_ids
                ents = None if root.entropies is None or c.entropies is None else root.entropies[:t] + c.entropies
                leaves[i].append(Rollout(i, ids, sampler.tokenizer.decode(ids, skip_special_tokens=True),
                                         root.logprobs[:t] + c.logprobs, c.finish_reason, ents))
                parent[i].append(j)
                position[i].append(t)
                generated[i] += c.num_tokens
    return TreeRollouts(leaves, generated, parent, position)
