"""The platform layer's settings read from the environment, its log filters and helpers, as a
library user or an entry point reaches them outside a trainer run (``parity/platform_sweep.py``)."""

from __future__ import annotations

from parity.cases import REGISTRY
from parity.platform_sweep import platform_rows

SUITE = REGISTRY.suite(tags=("selfcheck",))
SUITE.golden("platform_settings", kind="platform", producer=platform_rows)
