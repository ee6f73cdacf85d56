"""Hypothesis strategies over the explore space, and the time budget of the drawn cases.

``points()`` draws one value per feature, in declaration order, each among the values allowed
with everything drawn before (``space.pair_allowed``), so nearly every draw is valid without
filtering; the rare dead end is rejected. Each feature is an index into its values, whose first
is the default, so shrinking moves every feature towards the debug recipe: the shrunk point
differs from the defaults only where the divergence needs it.

Budget: ``PARITY_EXPLORE_BUDGET`` (seconds; ``python -m parity run --explore-budget S`` sets it)
bounds the time a drawn case spends running examples; the first example always runs, and
without a budget only that one does (later draws are not run: the case returns a marker for
both sides). Once an example has failed, shrinking runs to its end. The
number of examples is the hypothesis profile's ``max_examples`` (``explore``: effectively
unbounded, so the budget decides).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from parity.explore import space

__all__ = ["BUDGET_ENV", "Budget", "points", "resume_points"]

BUDGET_ENV = "PARITY_EXPLORE_BUDGET"


def points(**fixed: Any):
    """Valid explore points; ``fixed`` pins features (``world=1``)."""
    from hypothesis import assume
    from hypothesis import strategies as st

    @st.composite
    def draw_point(draw) -> dict[str, Any]:
        point: dict[str, Any] = {}
        for name, values in space.FEATURES.items():
            # One index per feature, always over all its values, so that a shrink of one feature
            # does not shift the draws of the features after it; a value the earlier draws rule
            # out passes the turn to the next allowed one.
            index = draw(st.integers(0, len(values) - 1))
            choices = [fixed[name]] if name in fixed else [*values[index:], *values[:index]]
            allowed = [
                v for v in choices if all(space.pair_allowed(name, v, o, ov) for o, ov in point.items())
            ]
            assume(bool(allowed))
            point[name] = allowed[0]
        return point

    return draw_point()


def resume_points():
    """``(point, k)``: a point (its save settings drawn: sync or async, HF export on or off) and a
    step ``k`` to resume at (``1 <= k < steps``).

    The point runs on 1, 2 or 3 ranks when a budget is set, on 1 rank otherwise: a multi-rank
    resume launches six forked worlds (about a minute on 2 cores), too much for the one example a
    run without a budget draws.
    """
    from hypothesis import strategies as st

    @st.composite
    def draw(draw_) -> tuple[dict[str, Any], int]:
        worlds = space.FEATURES["world"] if Budget().seconds() > 0 else (1,)
        world = draw_(st.sampled_from(worlds))
        point = draw_(points(world=world, save_steps=1, profiler=False))
        k = draw_(st.integers(1, point["steps"] - 1))
        return point, k

    return draw()


class Budget:
    """Wall-clock budget of one drawn case in this process: ``admit()`` says whether another
    example may start; ``failed()`` lifts the limit (shrinking must finish)."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.examples = 0
        self.failing = False

    def seconds(self) -> float:
        raw = os.environ.get(BUDGET_ENV, "0") or "0"
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{BUDGET_ENV}={raw!r}: expected a number of seconds") from None
        if value < 0:
            raise ValueError(f"{BUDGET_ENV}={raw!r}: expected a number of seconds >= 0")
        return value

    def admit(self) -> bool:
        now = time.monotonic()
        if self.started is None:
            self.started = now
        if self.failing or self.examples == 0 or now - self.started < self.seconds():
            self.examples += 1
            return True
        return False

    def failed(self) -> None:
        self.failing = True

    def reset(self) -> None:
        self.started, self.examples, self.failing = None, 0, False


def describe(point: Mapping[str, Any]) -> str:
    """The features of ``point`` that differ from the defaults, ``a=b`` comma-joined."""
    defaults = space.default_point()
    changed = [f"{k}={v}" for k, v in point.items() if defaults.get(k) != v]
    return ", ".join(changed) or "(the defaults)"
