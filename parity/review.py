"""``parity update`` as a review: per changed golden, what moved and by how much, in a few lines.

``review(old_text, new_text)`` walks the artifacts of the old and the new golden together and
groups the changed leaves by their first two named path components (``losses``,
``state.optimizer``, ``[0].eps`` ...). Each group is one line:

- floats: how many of the group's values changed, max |diff| and max ULP in the dtype each was
  computed in (ULP only between finite values of the same sign; where a value changed sign or
  went infinite, the relative difference instead);
- inline tensors: elements changed of all, max |diff| and max ULP at the tensor's dtype (the
  same rule);
- hashed tensors (large: only the hash is exact): how many moved, and for the one whose ``stats``
  moved most its sum / min / max, old -> new;
- other values (ints, strings, config values): old -> new for the first ones;
- keys that appeared or disappeared.

The fingerprint's must-match fields that changed (a framework upgrade) come first. The unified
diff of the text stays available (``parity/reports/update-<backend>.diff``, or ``--diff``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parity.canonical import MARK
from parity.ulp import FLOAT_WIDTH, float_values, spread, spread_floats

__all__ = ["review", "MAX_GROUPS", "combined_summary", "write_update_summary"]

MAX_GROUPS = 3  # group lines per golden; the rest is counted
_INT_VIEW = {"float16": np.int16, "bfloat16": np.int16, "float32": np.int32, "float64": np.int64}


@dataclass
class _Group:
    total: int = 0
    # |diff|, ULP (same sign, finite) or None, relative difference (otherwise) or None, dtype
    floats: list[tuple[float, int | None, float | None, str]] = field(default_factory=list)
    # changed, all, max |diff|, max ULP, max relative difference, dtype
    elements: list[tuple[int, int, float, int | None, float | None, str]] = field(default_factory=list)
    hashed: list[tuple[str, dict, dict, float]] = field(default_factory=list)  # path, old, new, |dsum|
    values: list[tuple[str, Any, Any]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.floats or self.elements or self.hashed or self.values or self.added or self.removed)


def review(old_text: str, new_text: str) -> list[str]:
    """Lines describing how ``new_text`` differs from ``old_text`` (two golden documents)."""
    new = json.loads(new_text)
    if not old_text:
        return [f"  new golden: {_count(new.get('artifacts'))} leaves"]
    old = json.loads(old_text)
    lines = []
    fp_old, fp_new = old.get("fingerprint", {}), new.get("fingerprint", {})
    moved = [k for k in sorted(fp_old.keys() | fp_new.keys()) if fp_old.get(k) != fp_new.get(k)]
    if moved:
        lines.append(
            _clip(
                "  fingerprint: " + "; ".join(_field_change(k, fp_old.get(k), fp_new.get(k)) for k in moved)
            )
        )
    groups: dict[str, _Group] = {}
    for path, _leaf in _leaves(new.get("artifacts"), ()):
        groups.setdefault(_group_key(path), _Group()).total += 1
    _diff(old.get("artifacts"), new.get("artifacts"), (), groups)
    changed = [(k, g) for k, g in groups.items() if g.changed]
    for key, group in changed[:MAX_GROUPS]:
        lines.append(_clip(f"  {key or '(root)'}: {_describe(group)}"))
    if len(changed) > MAX_GROUPS:
        rest = ", ".join(k for k, _ in changed[MAX_GROUPS:][:6])
        lines.append(f"  and {len(changed) - MAX_GROUPS} more path group(s): {rest}")
    if old.get("made_with") != new.get("made_with") and not changed and not moved:
        lines.append("  made_with: now recorded against the current torch golden of this case")
    elif not changed and not moved:
        lines.append("  (layout only: the artifacts' values are unchanged)")
    return lines


def _field_change(name: str, old: Any, new: Any) -> str:
    if isinstance(old, dict) and isinstance(new, dict):  # only the entries that differ
        keys = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        return "; ".join(f"{name}.{k} {old.get(k)!r} -> {new.get(k)!r}" for k in keys)
    return f"{name} {old!r} -> {new!r}"


def _clip(line: str, width: int = 200) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


# ----------------------------------------------------------------------------- walking


def _is_leaf(node: Any) -> bool:
    return not isinstance(node, (dict, list)) or (isinstance(node, dict) and MARK in node)


def _leaves(node: Any, path: tuple) -> Iterator[tuple[tuple, Any]]:
    if _is_leaf(node):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    else:
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))


def _count(node: Any) -> int:
    return sum(1 for _ in _leaves(node, ()))


def _group_key(path: tuple) -> str:
    named = [p for p in path if isinstance(p, str)][:2]
    if not named and path:
        return "[*]"
    return ".".join(named)


def _text(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _diff(old: Any, new: Any, path: tuple, groups: dict[str, _Group]) -> None:
    group = groups.setdefault(_group_key(path), _Group())
    if _is_leaf(old) and _is_leaf(new):
        _leaf_diff(old, new, path, group)
        return
    if isinstance(old, dict) and isinstance(new, dict) and not _is_leaf(old) and not _is_leaf(new):
        for key in old.keys() - new.keys():
            groups.setdefault(_group_key((*path, key)), _Group()).removed.append(_text((*path, key)))
        for key in new.keys() - old.keys():
            groups.setdefault(_group_key((*path, key)), _Group()).added.append(_text((*path, key)))
        for key in old.keys() & new.keys():
            _diff(old[key], new[key], (*path, key), groups)
        return
    if isinstance(old, list) and isinstance(new, list):
        for i in range(min(len(old), len(new))):
            _diff(old[i], new[i], (*path, i), groups)
        for i in range(len(new), len(old)):
            group.removed.append(_text((*path, i)))
        for i in range(len(old), len(new)):
            group.added.append(_text((*path, i)))
        return
    group.values.append((_text(path), _short(old), _short(new)))


def _leaf_diff(old: Any, new: Any, path: tuple, group: _Group) -> None:
    kind_old = old.get(MARK) if isinstance(old, dict) else None
    kind_new = new.get(MARK) if isinstance(new, dict) else None
    if kind_old == kind_new == "float":
        if old["hex"] != new["hex"]:
            a, b = _float(old["hex"]), _float(new["hex"])
            dtype = new.get("dtype", "float64")
            diff = abs(a - b) if math.isfinite(a) and math.isfinite(b) else math.inf
            ulp, rel = spread_floats(a, b, dtype)
            group.floats.append((diff, ulp, rel, dtype))
            group.values.append((_text(path), repr(a), repr(b)))
        return
    if kind_old == kind_new == "tensor":
        if old.get("dtype") != new.get("dtype") or old.get("shape") != new.get("shape"):
            group.values.append(
                (
                    _text(path),
                    f"{old.get('dtype')}{old.get('shape')}",
                    f"{new.get('dtype')}{new.get('shape')}",
                )
            )
        elif old.get("sha256") != new.get("sha256"):
            _tensor_diff(old, new, path, group)
        return
    if old != new:
        group.values.append((_text(path), _short(old), _short(new)))


def _tensor_diff(old: dict, new: dict, path: tuple, group: _Group) -> None:
    dtype = new["dtype"]
    if old.get("values") is not None and new.get("values") is not None:
        a = np.asarray(old["values"], dtype=np.int64)
        b = np.asarray(new["values"], dtype=np.int64)
        differ = a != b
        count = int(differ.sum())
        if dtype in FLOAT_WIDTH:
            va = float_values(a.astype(_INT_VIEW[dtype]), dtype)[differ]
            vb = float_values(b.astype(_INT_VIEW[dtype]), dtype)[differ]
            with np.errstate(invalid="ignore"):
                diffs = np.abs(va - vb)
            max_diff = float(np.nanmax(diffs)) if diffs.size and not np.all(np.isnan(diffs)) else math.nan
            max_ulp, max_rel = spread(
                a[differ].astype(_INT_VIEW[dtype]), b[differ].astype(_INT_VIEW[dtype]), dtype
            )
        else:
            max_diff, max_ulp = float(np.abs(a[differ] - b[differ]).max()) if count else 0.0, None
            max_rel = None
        group.elements.append((count, int(a.size), max_diff, max_ulp, max_rel, dtype))
        return
    so, sn = old.get("stats") or {}, new.get("stats") or {}
    dsum = abs(_num(sn.get("sum")) - _num(so.get("sum"))) if "sum" in so and "sum" in sn else math.nan
    group.hashed.append((_text(path), so, sn, dsum))


def _float(text: str) -> float:
    return math.nan if text.startswith("nan") else float.fromhex(text)


def _num(value: Any) -> float:
    if isinstance(value, str):
        return _float(value)
    return float(value)


def _short(value: Any) -> str:
    if isinstance(value, dict) and value.get(MARK) == "float":
        return str(value.get("repr"))
    if isinstance(value, dict) and value.get(MARK) == "tensor":
        return f"tensor {value.get('dtype')}{value.get('shape')} {str(value.get('sha256'))[:8]}"
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 40 else text[:37] + "..."


# ----------------------------------------------------------------------------- one line per group


def _g(x: float) -> str:
    return f"{x:.3g}"


_SHORT_DTYPE = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}


def _ulp_text(ulps: list[int], rels: list[float], dtype: str) -> str:
    """``, N ULP f32`` over same-sign finite pairs; ``, rel diff R where the sign changed or a value
    is infinite`` for the others (a ULP count across zero is noise)."""
    text = f", {max(ulps)} ULP {_SHORT_DTYPE.get(dtype, dtype)}" if ulps else ""
    if rels:
        text += f", rel diff {_g(max(rels))} where the sign changed or a value is infinite"
    return text


def _describe(group: _Group) -> str:
    parts = []
    if group.floats:
        diffs = [f[0] for f in group.floats]
        ulps = [f[1] for f in group.floats if f[1] is not None]
        rels = [f[2] for f in group.floats if f[2] is not None]
        spread = _ulp_text(ulps, rels, group.floats[0][3])
        text = f"{len(group.floats)} float(s) changed, max |diff| {_g(max(diffs))}{spread}"
        if len(group.floats) <= 2:
            text += ": " + "; ".join(f"{_short_path(p)} {a} -> {b}" for p, a, b in group.values[:2])
        parts.append(text)
    if group.elements:
        count = sum(e[0] for e in group.elements)
        numel = sum(e[1] for e in group.elements)
        diffs = [e[2] for e in group.elements if not math.isnan(e[2])]
        ulps = [e[3] for e in group.elements if e[3] is not None]
        rels = [e[4] for e in group.elements if e[4] is not None]
        text = f"{len(group.elements)} small tensor(s): {count}/{numel} elements"
        if diffs:
            text += f", max |diff| {_g(max(diffs))}"
        parts.append(text + _ulp_text(ulps, rels, group.elements[0][5]))
    if group.hashed:
        worst = max(group.hashed, key=lambda h: -1.0 if math.isnan(h[3]) else h[3])
        text = f"{len(group.hashed)} large tensor(s) moved"
        so, sn = worst[1], worst[2]
        name = _short_path(worst[0])
        if so and sn:
            moved = [k for k in ("sum", "max", "min") if so.get(k) != sn.get(k)]
            shown = ", ".join(f"{k} {_stat(so.get(k))} -> {_stat(sn.get(k))}" for k in moved[:2])
            text += f", most {name}: {shown or 'stats unchanged'}"
        else:
            text += f" (e.g. {name}; no stats recorded before)"
        parts.append(text)
    plain = [v for v in group.values if not group.floats]
    if plain:
        shown = "; ".join(f"{_short_path(p)}: {a} -> {b}" for p, a, b in plain[:2])
        more = f" (+{len(plain) - 2} more)" if len(plain) > 2 else ""
        parts.append(f"{len(plain)} value(s) changed: {shown}{more}")
    if group.added:
        parts.append(f"{len(group.added)} added ({group.added[0]}{', ...' if len(group.added) > 1 else ''})")
    if group.removed:
        parts.append(
            f"{len(group.removed)} removed ({group.removed[0]}{', ...' if len(group.removed) > 1 else ''})"
        )
    return "; ".join(parts)


def _short_path(path: str) -> str:
    return path[len(_common_prefix(path)) :] or path


def _common_prefix(path: str) -> str:
    """The group part of a leaf path (its first two names), which the line already shows."""
    names = path.split(".")
    return ".".join(names[:2]) + "." if len(names) > 2 else ""


def _stat(value: Any) -> str:
    if isinstance(value, str):
        return f"{_float(value):.7g}"
    return str(value)


# ----------------------------------------------------------------------------- nox: every backend


def write_update_summary(path: Path, backend: str, tree: str, lines: list[str]) -> None:
    """What one backend's ``parity update`` printed as its review (``combined_summary`` reads it)."""
    from parity.report import write_json_atomic

    write_json_atomic(path, {"backend": backend, "tree": tree, "lines": list(lines)})


def combined_summary(paths: list[Path], tree: str) -> list[str]:
    """The reviews of every backend updated on this tree, one block per backend."""
    out = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("tree") != tree:
            continue
        out.append(f"== {data.get('backend')}")
        out.extend(str(line) for line in data.get("lines", []))
    return out
