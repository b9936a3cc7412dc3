"""Running experiments: notebook parameters (:mod:`~ddrl.run.params`), the papermill runner (:mod:`~ddrl.run.reproduce`)
and the publisher, model fingerprints, the methods x seeds loop of notebooks 03-05 (:mod:`~ddrl.run.experiments`) and
the package lock. The low-level machinery they use (durable files, the cache, run directories, the worker pool,
progress bars, data files) is :mod:`ddrl.infra`."""
