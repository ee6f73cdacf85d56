"""Field checks shared by the value configs; every error names ``Class.field`` and what was expected."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

# How a command line or a YAML string spells a bool and a null (case-insensitive), on both CLIs.
TRUE_SPELLINGS = ("true", "yes", "y", "on", "1", "t")
FALSE_SPELLINGS = ("false", "no", "n", "off", "0", "f")
NULL_SPELLINGS = ("null", "none", "~")


def parse_bool(raw: str) -> bool:
    """A bool from one of its spellings; ``ValueError`` naming them for anything else."""
    lowered = raw.strip().lower()
    if lowered in TRUE_SPELLINGS:
        return True
    if lowered in FALSE_SPELLINGS:
        return False
    raise ValueError(
        f"expected a boolean ({'/'.join(TRUE_SPELLINGS)} or {'/'.join(FALSE_SPELLINGS)}), got {raw!r}"
    )


def _where(cfg: Any, name: str) -> str:
    return f"{type(cfg).__name__}.{name}"


def _got(value: Any) -> str:
    return f"got {value!r} ({type(value).__name__})"


def check_int(
    cfg: Any, name: str, *, minimum: int | None = None, allowed: Iterable[int] = (), optional: bool = False
) -> None:
    """An int (not a bool) that is ``>= minimum`` or one of ``allowed``; None too when ``optional``."""
    value = getattr(cfg, name)
    if optional and value is None:
        return
    allowed = tuple(allowed)
    if isinstance(value, int) and not isinstance(value, bool):
        if value in allowed or minimum is None or value >= minimum:
            return
    expected = "an int"
    if minimum is not None:
        expected += f" >= {minimum}"
    if allowed:
        expected += f" or one of {', '.join(map(str, allowed))}"
    if optional:
        expected += " or None"
    raise ValueError(f"{_where(cfg, name)}: expected {expected}, {_got(value)}")


def check_positive_float(cfg: Any, name: str) -> None:
    """A real number > 0 (``inf`` allowed, NaN and bools not)."""
    value = getattr(cfg, name)
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not math.isnan(value)
        and value > 0
    )
    if not ok:
        raise ValueError(f"{_where(cfg, name)}: expected a number > 0, {_got(value)}")


def check_bool(cfg: Any, name: str) -> None:
    value = getattr(cfg, name)
    if not isinstance(value, bool):
        raise ValueError(f"{_where(cfg, name)}: expected True or False, {_got(value)}")


def check_choice(cfg: Any, name: str, choices: Iterable[Any], *, optional: bool = False) -> None:
    """One of ``choices`` (compared as str/None); None too when ``optional``."""
    value = getattr(cfg, name)
    choices = tuple(choices)
    if (optional and value is None) or (isinstance(value, str) and value in choices):
        return
    expected = ", ".join(repr(c) for c in choices) + (" or None" if optional else "")
    raise ValueError(f"{_where(cfg, name)}: expected one of {expected}, {_got(value)}")
