"""``python -m simulations.cli ...``: the ``dmdidc`` command."""

import sys

from simulations.cli.root import main

sys.exit(main())
