"""``python -m engine``: the command line."""

import sys

from engine.ui.cli import main

sys.exit(main())
