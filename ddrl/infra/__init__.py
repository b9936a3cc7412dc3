"""Low-level machinery every level may use, importing nothing of ddrl above it: durable files (:mod:`~ddrl.infra.storage`),
content keys, the cache and its locks (:mod:`~ddrl.infra.cache`), run directories (:mod:`~ddrl.infra.rundir`), the worker
pool (:mod:`~ddrl.infra.pool`), progress bars (:mod:`~ddrl.infra.progress`) and data-file lookup and checks
(:mod:`~ddrl.infra.datafiles`). The orchestration that uses them (the papermill runner, notebook parameters, the
experiments loop) is :mod:`ddrl.run`."""
