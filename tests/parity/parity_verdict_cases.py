"""A tiny registry whose failures have three causes, for the verdict tests (``test_parity_verdict``).

``PARITY_TEST_PLANT=1`` in the environment plants one off-by-one in the "new" LR warmup, as a user
would in ``hyper_parallel/components/lr_scheduler.py``: three pairs with a localiser diverge at
step 1 in lr_scheduler (the localiser here is a stand-in that answers as
``parity.tools.localise`` does), two pairs without one differ in their curve, and the golden made
from the new side moves with them. Without it every case passes.
"""

from __future__ import annotations

import os

from parity import canonical
from parity.cases import Registry

REGISTRY = Registry(source="tests.parity.parity_verdict_cases:REGISTRY")
LINE = "first divergence: step 1, lr, lr[0] -> component lr_scheduler"


def _warmup(steps: int, planted: bool) -> list:
    warmup = 3 + (1 if planted else 0)
    return canonical.lr_curve([0.1 * min(1.0, s / warmup) for s in range(steps)])


def legacy(*, steps: int = 6) -> list:
    return _warmup(steps, False)


def new(*, steps: int = 6) -> list:
    return _warmup(steps, os.environ.get("PARITY_TEST_PLANT") == "1")


def localise(*, steps: int = 6, recipe: str = "") -> dict:
    """What ``parity.tools.localise.localise_pair`` returns for a divergence at step 1."""
    return {
        "recipe": recipe,
        "status": "diverged",
        "step": 1,
        "phase": "lr",
        "artifact": "lr[0]",
        "component": "lr_scheduler",
        "line": LINE,
        "evidence": ["steps before 1: equal"],
    }


for _recipe in ("dummy", "hf_text", "alpaca"):
    REGISTRY.pair(
        "e2e_lr",
        kind="lr_curve",
        params={"recipe": _recipe, "steps": 6},
        legacy=lambda recipe, steps: legacy(steps=steps),
        new=lambda recipe, steps: new(steps=steps),
        localise=localise,
        tags=("e2e",),
    )
REGISTRY.grid(
    "grid",
    kind="lr_curve",
    params=[{"steps": 5}, {"steps": 8}],
    legacy=legacy,
    new=new,
    tags=("lr_scheduler",),
)
REGISTRY.golden("new_curve", kind="lr_curve", producer=new, tags=("long", "lr_scheduler"))
REGISTRY.pair("constant", kind="lr_curve", legacy=lambda: [0.1], new=lambda: [0.1], tags=("optimizer",))
