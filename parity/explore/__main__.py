"""``python -m parity.explore POINT.yaml``: rerun one explore point on both trainers."""

import sys

from parity.explore.shrunk import main

sys.exit(main())
