"""What a notebook shows and saves: the artifact writer (:mod:`~ddrl.report.reporter`), one plotting style
(:mod:`~ddrl.report.plotting`), paper-vs-measured tables (:mod:`~ddrl.report.tables`), paired intervals and power
(:mod:`~ddrl.report.stats`), and the figure store (:mod:`~ddrl.report.figure_keys`, :mod:`~ddrl.report.figure_store`)."""
