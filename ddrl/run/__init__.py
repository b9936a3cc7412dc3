"""Running experiments: content keys and the cache (:mod:`~ddrl.run.cache`), durable files
(:mod:`~ddrl.run.storage`), run directories (:mod:`~ddrl.run.rundir`), the worker pool (:mod:`~ddrl.run.pool`),
notebook parameters (:mod:`~ddrl.run.params`), the papermill runner (:mod:`~ddrl.run.reproduce`), progress bars,
data-file lookup, model fingerprints, the methods x seeds loop of notebooks 03-05 (:mod:`~ddrl.run.experiments`)
and the package lock."""
