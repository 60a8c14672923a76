"""``python -m derivgraph.cli``."""

import sys

from derivgraph.cli.app import main

sys.exit(main())
