"""The ``Configurable`` protocol's contract (``parity/config_protocol.py``): new-path code with no
legacy counterpart and no run that reaches its refusals, so a golden."""

from __future__ import annotations

from parity.cases import REGISTRY
from parity.config_protocol import contract_rows

REGISTRY.golden("configurable_contract", kind="protocols", producer=contract_rows, tags=("protocols",))
