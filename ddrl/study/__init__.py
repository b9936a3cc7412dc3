"""The claims study: the paper's claims registered, tested on the testbed, and scored (``results/plan.md``).

- :mod:`ddrl.study.claims`    the claims, ``results/claims.json``'s schema, the scorecard
- :mod:`ddrl.study.regimes`   testbed settings that stand for the paper's benchmarks
- :mod:`ddrl.study.plan`      the registered design: methods, comparisons, scales, where each CSV goes
- :mod:`ddrl.study.designs`   every committed analysis as a row of one table, and where each design's files are
- :mod:`ddrl.study.measures`  the designs' named measures and the tables of those that are a whole analysis
- :mod:`ddrl.study.jobs`      one job (regime x seed x methods): train, evaluate, write the per-run CSVs
- :mod:`ddrl.study.pool`      the jobs through the pool of single-thread workers
- :mod:`ddrl.study.analysis`  the CSVs read back, paired differences, verdicts; the base answer groups' measures
- :mod:`ddrl.study.figures`   the study's figures (the designs' too); :mod:`ddrl.study.digest` the at-a-glance table
- :mod:`ddrl.study.page`      ``docs/results.md`` rendered from the committed analyses (``make docs``)
- :mod:`ddrl.study.status`    where the study stands; :mod:`ddrl.study.runner` the command line, and the designs' one
  generic job list, analysis and table (``run|status|analyse|render DESIGN``)
- :mod:`ddrl.study.rerun`     one committed run recomputed and compared question by question (``rerun``)
- :mod:`ddrl.study.lesson`    what notebooks 03-05 show of the study: its decided comparisons beside the paper's
- :mod:`ddrl.study.drift`, :mod:`~ddrl.study.drift_data`, :mod:`~ddrl.study.drift_kl`: measures of the plan's amendments

Nothing outside this package imports it (``tests/test_structure.py``); notebooks and tests read the committed
runs through it.
"""
