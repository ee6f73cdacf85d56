"""Framework-neutral description of a communication group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class GroupInfo:
    """A named process group and the number of ranks that reduce over it."""

    group_name: str
    group: Any
    rank_size: int
