"""``python -m ddrl.study``: the claims study's command line (:func:`ddrl.study.runner.main`)."""

import sys

from ddrl.study.runner import main

if __name__ == "__main__":  # `python -m ddrl.study` runs it; an import (a crafted pickle, a tool) does nothing
    sys.exit(main())
