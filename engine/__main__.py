"""``python -m engine``: the command line."""

import sys

from engine.cli.main import main

sys.exit(main())
