"""Golden lint: cheap checks of every golden file, run by ``parity run`` before any case.

Each problem is one line naming the file:

- the file parses and has the golden shape (``parity.golden.parse``: schema version included);
- its fingerprint carries every must-match field (``parity.env.REQUIRED_FINGERPRINT_FIELDS``);
- floats are stored exactly: no bare JSON float anywhere, each float leaf's ``hex`` is a
  ``float.hex()`` string whose ``repr`` reads back as the same value, each inline tensor's ``hex``
  matches its integer view;
- no NaN or infinity unless the case declares it (the case tag ``NONFINITE_TAG``);
- the file belongs to a registered tier B case of its backend (``parity.golden.find_unused``);
- a golden of another backend than torch, made alongside the torch golden of its case
  (``made_with``), still matches that torch golden: otherwise the torch golden changed and this
  one was not regenerated with it.

Nothing here runs a case; the whole store lints in well under a second.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from parity import golden
from parity.canonical import MARK
from parity.ulp import FLOAT_WIDTH, float_hex, float_values

if TYPE_CHECKING:
    from parity.cases import Registry

__all__ = ["NONFINITE_TAG", "lint"]

# A case whose artifacts may hold NaN or infinity declares it with this tag.
NONFINITE_TAG = "nonfinite"
_INT_VIEW = {"float16": np.int16, "bfloat16": np.int16, "float32": np.int32, "float64": np.int64}


def lint(
    root: Path,
    registry: Registry,
    *,
    include_unused: bool = True,
    stale_backends: Iterable[str] | None = None,
) -> list[str]:
    """Every problem of the golden store under ``root``, one line each (empty: clean).

    ``include_unused=False`` leaves unused goldens to the caller (``parity run`` names them after
    its table, with the command that prunes them); ``stale_backends`` limits the ``made_with``
    check to the goldens of those backends (the ones the run can refresh); None: every backend.
    """
    from parity.env import REQUIRED_FINGERPRINT_FIELDS

    root = Path(root)
    if not root.is_dir():
        return []
    found_unused = golden.find_unused(root, registry)
    problems = [f"{path}: unused golden: {why}" for path, why in found_unused] if include_unused else []
    stale_in = None if stale_backends is None else set(stale_backends)
    unused = {path for path, _ in found_unused}
    for path in sorted(root.glob("*/*/*.json")):
        if path in unused:
            continue
        try:
            doc = golden.parse(path.read_text(encoding="utf-8"), path)
        except golden.GoldenError as exc:
            problems.append(str(exc).splitlines()[0])  # names the file
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{path}: unreadable ({exc})")
            continue
        fp = doc["fingerprint"]
        missing = [f for f in (*REQUIRED_FINGERPRINT_FIELDS, fp.get("backend")) if f and f not in fp]
        if missing:
            problems.append(f"{path}: fingerprint lacks {', '.join(map(str, missing))}")
        case = registry.get(path.stem)
        allow_nonfinite = case is not None and NONFINITE_TAG in case.tags
        found: list[str] = []
        _walk(doc["artifacts"], "artifacts", allow_nonfinite, found)
        if found:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            problems.append(f"{path}: {found[0]}{more}")
        stale = None
        if stale_in is None or path.parent.parent.name in stale_in:
            stale = golden.stale_made_with(root, path, doc)
        if stale:
            problems.append(f"{path}: {stale}")
    if stale_in is None or "mindspore" in stale_in:  # tier C bounds matter where tier C runs
        from parity.cross import stale_bounds

        problems += stale_bounds(root)
    return problems


def _walk(node: Any, where: str, allow_nonfinite: bool, found: list[str]) -> None:
    if isinstance(node, float):
        found.append(f"{where}: a bare JSON float {node!r} (floats are stored as float.hex() leaves)")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk(value, f"{where}[{i}]", allow_nonfinite, found)
    elif isinstance(node, dict):
        mark = node.get(MARK)
        if mark == "float":
            _float_leaf(node, where, allow_nonfinite, found)
        elif mark == "tensor":
            _tensor_leaf(node, where, allow_nonfinite, found)
        else:
            for key, value in node.items():
                _walk(value, f"{where}.{key}", allow_nonfinite, found)


def _parse_hex(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    if text.startswith("nan(0x") and text.endswith(")"):
        return math.nan
    try:
        return float.fromhex(text)
    except (ValueError, OverflowError):
        return None


def _float_leaf(node: dict, where: str, allow_nonfinite: bool, found: list[str]) -> None:
    value = _parse_hex(node.get("hex"))
    if value is None:
        found.append(f"{where}: float hex {node.get('hex')!r} is not a float.hex() string")
        return
    if not math.isfinite(value):
        if not allow_nonfinite:
            found.append(f"{where}: {node.get('hex')} but the case does not declare non-finite values")
        return
    try:
        readback = float(node.get("repr", ""))
    except (TypeError, ValueError):
        readback = None
    if readback != value:
        found.append(f"{where}: repr {node.get('repr')!r} does not read back as hex {node['hex']}")
    dtype = node.get("dtype", "float64")
    if dtype not in FLOAT_WIDTH:
        found.append(f"{where}: float dtype {dtype!r} is not one of {sorted(FLOAT_WIDTH)}")


def _tensor_leaf(node: dict, where: str, allow_nonfinite: bool, found: list[str]) -> None:
    dtype, values, hexes = node.get("dtype"), node.get("values"), node.get("hex")
    if dtype not in FLOAT_WIDTH:
        return
    if hexes is not None and values is not None:
        try:
            bits = np.asarray(values, dtype=_INT_VIEW[dtype])
        except (OverflowError, TypeError, ValueError):
            found.append(f"{where}: inline values do not fit {dtype}")
            return
        expected = [float_hex(float(v)) for v in float_values(bits, dtype).tolist()]
        if expected != list(hexes):
            index = next((i for i, (a, b) in enumerate(zip(expected, hexes)) if a != b), len(expected))
            found.append(f"{where}: inline hex does not match the integer view at element {index}")
            return
        if not allow_nonfinite and not all(math.isfinite(float.fromhex(h)) for h in hexes if "nan" not in h):
            found.append(f"{where}: holds infinity but the case does not declare non-finite values")
        elif not allow_nonfinite and any(h.startswith("nan") for h in hexes):
            found.append(f"{where}: holds NaN but the case does not declare non-finite values")
    stats = node.get("stats")
    if isinstance(stats, dict) and stats.get("nonfinite") and not allow_nonfinite:
        found.append(
            f"{where}: {stats['nonfinite']} NaN/inf element(s) but the case does not declare non-finite values"
        )
