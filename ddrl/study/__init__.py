"""The claims study: the paper's claims registered, tested on the testbed, and scored (``results/plan.md``).

- :mod:`ddrl.study.claims`    the claims, ``results/claims.json``'s schema, the scorecard, the forest plot they share
- :mod:`ddrl.study.plan`      what the study runs: regimes, methods, comparisons, scales, job lists, where each CSV goes
- :mod:`ddrl.study.designs`   every committed analysis as a row of one table, and where each design's files are
- :mod:`ddrl.study.measures`  the designs' named measures, some of them a design's whole analysis
- :mod:`ddrl.study.jobs`      one job (regime x seed x methods): train, evaluate, write the per-run CSVs; the pool
- :mod:`ddrl.study.analysis`  the CSVs read back, paired differences, verdicts; the base answer groups' measures
- :mod:`ddrl.study.figures`   the study's figures, and one figure of any design's runs (``Design.figure``)
- :mod:`ddrl.study.page`      ``docs/results.md``: what it answers, its at-a-glance table (``make docs``)
- :mod:`ddrl.study.strength`  each verdict's strength beside it: floor / below 1 point, confirmatory or exploratory,
  the confirmatory family's correction (``correct``)
- :mod:`ddrl.study.runner`    the command line, and the designs' one generic job list, analysis and table
  (``run|status|analyse|render DESIGN``)
- :mod:`ddrl.study.rerun`     one committed run recomputed and compared question by question (``rerun``)
- :mod:`ddrl.study.lesson`    what notebooks 03-05 show of the study: its decided comparisons beside the paper's
- :mod:`ddrl.study.drift`     the drift measure: step data, held-out KL, fits, figures (plan Amendments 21-25, 42)

Nothing outside this package imports it (``tests/test_structure.py``); notebooks and tests read the committed
runs through it.
"""
