"""Checks of the root Config that span components, run by ``ConfigManager`` on every command line.

Each component's Config checks its own fields; a rule that compares fields of two components
(``lr_scheduler.lr_min`` against ``optimizer.lr``, ``lr_scheduler.warmup_steps`` against
``training.steps``) lives here. So do the schedule values that the LR component computes a curve
for (the parity harness pins it on them) but that no run means: a warmup longer than the run, a
decay style the scheduler does not know. The root is read by attribute names only, so this module
names no class above ``config``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

__all__ = ["DECAY_STYLES", "DecayStyle", "validate_cross_fields"]

# The LR decay styles the scheduler implements. The legacy builder runs cosine for any other value:
# the legacy schema and a root Config refuse them; the scheduler component built on its own warns
# and runs cosine, as the legacy builder does.
DecayStyle = Literal["cosine", "constant"]
DECAY_STYLES: tuple[str, ...] = get_args(DecayStyle)


def _bad(path: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"Invalid value for '{path}': expected {expected}, got {value!r}")


def validate_cross_fields(config: Any) -> None:
    """Refuse a root Config whose components disagree; one ``ValueError`` naming the first field."""
    schedule = getattr(config, "lr_scheduler", None)
    if schedule is None:
        return
    if schedule.decay_style not in DECAY_STYLES:
        raise _bad(
            "lr_scheduler.decay_style",
            schedule.decay_style,
            "one of " + ", ".join(map(repr, DECAY_STYLES)),
        )
    if schedule.lr_warmup_ratio > 1:
        raise _bad(
            "lr_scheduler.lr_warmup_ratio", schedule.lr_warmup_ratio, "a fraction of training.steps in [0, 1]"
        )
    training = getattr(config, "training", None)
    steps = getattr(training, "steps", 0)
    # steps 0: a preset_pt dataloader sets the horizon, unknown here.
    if schedule.warmup_steps is not None and steps and schedule.warmup_steps > steps:
        raise _bad("lr_scheduler.warmup_steps", schedule.warmup_steps, f"at most training.steps={steps}")
    optimizer = getattr(config, "optimizer", None)
    peak_name, peak = (
        ("lr_scheduler.lr_max", schedule.lr_max)
        if schedule.lr_max is not None
        else ("optimizer.lr", getattr(optimizer, "lr", None))
    )
    # The cosine decays from the peak to lr_min; a larger lr_min raises the LR instead (with a
    # peak of 0 the schedule stays at 0, whatever lr_min says).
    if peak is not None and peak > 0 and schedule.lr_min > peak:
        raise _bad(
            "lr_scheduler.lr_min",
            schedule.lr_min,
            f"a number <= {peak_name}={peak!r} (the floor of the decay)",
        )
