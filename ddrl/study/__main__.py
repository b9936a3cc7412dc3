"""``python -m ddrl.study``: the claims study's command line (:func:`ddrl.study.runner.main`)."""

import os
import sys

from ddrl.study.runner import main

if __name__ == "__main__":  # `python -m ddrl.study` runs it; an import (a crafted pickle, a tool) does nothing
    # no third-party bars in a study's log: transformers reads this when first imported (in the pool's workers too,
    # which inherit it), as in the notebooks' kernels (ddrl.run.reproduce.KERNEL_ENV)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    sys.exit(main())
