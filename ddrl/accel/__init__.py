"""Accelerators of sampling and log-probs, behind the core's one interface (:func:`ddrl.sampling.make_sampler`,
:func:`ddrl.logprobs.logprob_backend`): a static-KV-cache decode loop, its decode attention in C, the choice of
log-prob backend, and what differs between transformers versions. None of it changes what is computed, only how
fast (``docs/benchmarks.md``)."""
