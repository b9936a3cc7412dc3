"""The plan's amendments (``results/plan.md``), one module each: their jobs, analyses and renderings."""
