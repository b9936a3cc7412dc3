"""``python -m ddrl.study``: the claims study's command line (:func:`ddrl.study.runner.main`)."""

import sys

from ddrl.study.runner import main

sys.exit(main())
