"""Two tier B cases for the overlapping-runs tests, driven by a JSON file a test writes.

``PARITY_TEST_OVERLAP`` names that file: ``{"a": scale, "b": scale, "hold": path or null,
"started": path or null}``. ``losses.alpha`` and ``losses.beta`` produce a loss curve scaled by their entry
(a test changes a scale as a user changes a default, and the golden goes red). ``losses.beta`` first
writes ``started`` (its run has begun) and then waits until ``hold`` exists, so a test can keep one
run going while another runs to its end.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from parity import canonical
from parity.cases import Registry

REGISTRY = Registry(source="tests.parity.parity_overlap_cases:REGISTRY")
STATE_ENV = "PARITY_TEST_OVERLAP"


def _state() -> dict:
    path = os.environ.get(STATE_ENV)
    return json.loads(Path(path).read_text()) if path else {}


def a_curve() -> list:
    return canonical.losses([2.0 * _state().get("a", 1.0), 1.5])


def b_curve() -> list:
    state = _state()
    if state.get("started"):
        Path(state["started"]).write_text(str(os.getpid()))
    hold = state.get("hold")
    deadline = time.monotonic() + 300
    while hold and not Path(hold).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return canonical.losses([3.0 * state.get("b", 1.0), 2.5])


REGISTRY.golden("alpha", kind="losses", seed=0, producer=a_curve, tags=("loss",))
REGISTRY.golden("beta", kind="losses", seed=0, producer=b_curve, tags=("loss",))
