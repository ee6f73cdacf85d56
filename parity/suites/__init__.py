"""The default parity suite: every module in this package registers its cases into ``REGISTRY``.

Adding cases: create ``parity/suites/<name>.py`` that registers at import time, through
``SUITE = REGISTRY.suite(tags=..., ...)`` (the module's defaults, said once) and ``SUITE.pair`` /
``SUITE.golden`` / ``SUITE.grid``. A suite imports the harness core (``parity.e2e``,
``parity.builders``, ``parity.legacy_driver``), never another suite. Modules are imported in name
order, so case order (and with it pytest-xdist collection) is the same in every process.

Every case carries at least one of ``TAGS``: the component it covers (``COMPONENT_TAGS``; a
component's test module selects its cases with ``case_params(REGISTRY, tag="<component>")``), or
``e2e`` (whole trainers), ``legacy`` (goldens of the legacy trainer), ``cli`` (both command lines'
refusals, field by field), ``selfcheck`` (the harness);
``transforms`` marks the data-transform grids (beside their component tag, ``dataloader``);
``long`` the long-horizon goldens (``long_horizon.py``: a 100-step curve, a 10,000-step LR curve);
``nonfinite`` a golden that stores NaN or Inf on purpose (the golden lint refuses them elsewhere).
"""

from __future__ import annotations

import importlib
import pkgutil

from parity.cases import REGISTRY

__all__ = ["COMPONENT_TAGS", "REGISTRY", "TAGS"]

COMPONENT_TAGS = (
    "optimizer",
    "lr_scheduler",
    "loss",
    "tokenizer",
    "dataloader",
    "checkpoint",
    "metrics",
    "profiler",
)
TAGS = (
    *COMPONENT_TAGS,
    "transforms",
    "e2e",
    "explore",
    "legacy",
    "cli",
    "selfcheck",
    "long",
    "nonfinite",
    "parallel",
    "protocols",
)

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")
