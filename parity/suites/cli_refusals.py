"""Goldens of both command lines' refusals: every config field swept, the exact line it gets.

Tier B, one golden per route (``parity.config_sweep.ROUTES``): the legacy YAML with one
``--a.b=v`` override through ``scripts/train_lm.py`` and through ``python -m hyper_parallel.train``,
and the debug recipe with one ``--a.b v`` flag. Each field of the config trees gets one value per
class that refuses somewhere (out of range, of the wrong type, outside its closed set), and the
golden holds, per command line, ``ok`` or the exit status and the one error line. A check that
stops refusing, refuses another value, or words its refusal differently turns the golden red and
names the field; the fault suite (``tests/torch/ut/trainer/test_cli_fault_suite.py``) checks
that each line names its field, on drawn values.

The two entry points differ by design on the legacy YAML: the new one builds the model Config
while parsing and so refuses model sizes at parse time, while the legacy one refuses them when the
trainer builds the model; the two goldens record that difference line by line.
"""

from __future__ import annotations

from parity.cases import REGISTRY
from parity.config_sweep import ROUTES, sweep

SUITE = REGISTRY.suite(tags=("cli",), kind="cli")
SUITE.grid(params=[("cli_refusals", {"route": route}) for route in ROUTES], producer=sweep)
