"""Which mutants each parity case killed in a recorded mutation run (``kills.json``, committed).

The quick self-check counts a case as measured when it claims a hand-written plant or killed a
mutant here: the mutation tool, not a list of ours, then vouches for the cases that no plant
claims. ``python -m parity mutation`` adds the kills of every run to the file (a case keeps the
keys of mutants it killed before, so a sampled run never forgets a case); commit it with the run.
A key names a mutant by file, function and change (``Mutant.key``): an edit elsewhere in the file
keeps it, and the nightly full run refreshes the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["KILLS_FILE", "load", "merge"]

KILLS_FILE = Path(__file__).with_name("kills.json")


def load(path: Path = KILLS_FILE) -> dict[str, list[str]]:
    """``{case id: [mutant key, ...]}``; empty when the file is absent. A damaged file is an error."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SystemExit(f"parity: error: {path}: not valid JSON ({exc})") from None
    kills = data.get("kills") if isinstance(data, dict) else None
    if not isinstance(kills, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
        for k, v in kills.items()
    ):
        raise SystemExit(f'parity: error: {path}: expected {{"kills": {{case id: [mutant key, ...]}}}}')
    return kills


def merge(verdicts: Iterable[Mapping[str, Any]], path: Path = KILLS_FILE) -> dict[str, list[str]]:
    """Add each killed verdict's (case, key) to ``path`` (written atomically); the merged table."""
    kills = {case: set(keys) for case, keys in load(path).items()}
    for v in verdicts:
        if v.get("status") == "killed" and v.get("case"):
            kills.setdefault(str(v["case"]), set()).add(str(v["key"]))
    out = {case: sorted(keys) for case, keys in sorted(kills.items())}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"kills": out}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return out
