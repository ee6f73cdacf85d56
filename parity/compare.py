"""Compare two canonical trees: structure first, then dtype and shape, then bits.

``compare(expected, actual, root)`` returns every difference, ordered by phase:

0. structure: missing / extra keys and list items, type changes (full paths);
1. tensor dtype and shape;
2. values: Python scalars and floats (by hex), tensor bits (by integer views).

Tensors whose sha256 match are equal without reading them again. When hashes differ, the two
integer views (zero-copy for contiguous CPU tensors) are scanned in chunks of ``CHUNK`` elements,
so the comparator holds at most one tensor pair plus one chunk of temporaries.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from parity.canonical import FloatLeaf, TensorLeaf
from parity.ulp import (
    FLOAT_WIDTH,
    bits_hex,
    float_hex,
    float_values,
    is_float_dtype,
    spread,
    spread_floats,
)

__all__ = ["Difference", "compare", "format_path", "STRUCTURE", "LAYOUT", "VALUES"]

STRUCTURE, LAYOUT, VALUES = 0, 1, 2
PHASE_NAMES = {STRUCTURE: "structure", LAYOUT: "dtype/shape", VALUES: "bits"}
CHUNK = 1 << 20

DifferenceKind = Literal["missing", "extra", "type", "dtype", "shape", "value", "bits"]

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Difference:
    """One difference between expected and actual at ``path``."""

    phase: int
    kind: DifferenceKind
    path: str
    message: str
    index: int | None = None  # first differing flat index (tensors) or list index
    position: tuple[int, ...] | None = None  # that flat index in the tensor's shape (row-major)
    count: int = 1  # differing elements under this path
    nan_count: int = 0  # of which NaN on at least one side (no |diff| / ULP for those)
    max_abs_diff: float | None = None
    max_ulp: int | None = None  # over finite same-sign pairs only (elsewhere a ULP count is noise)
    max_rel_diff: float | None = None  # over the other non-NaN pairs: a sign change or an infinity
    expected: str | None = None  # first differing expected value, hex for floats
    actual: str | None = None
    hash_only: bool = False  # a tensor known by its hash alone: ``count`` elements are unknown

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.max_abs_diff is not None:
            out["max_abs_diff"] = repr(self.max_abs_diff)  # inf/nan are not JSON
        if self.max_rel_diff is not None:
            out["max_rel_diff"] = repr(self.max_rel_diff)
        out["phase"] = PHASE_NAMES[self.phase]
        return out


def format_path(parts: tuple[str | int, ...]) -> str:
    """``lr_curve[3]``, ``param_groups[0].eps``, ``checkpoint.state.model["layers.0.weight"]``."""
    text = ""
    for i, part in enumerate(parts):
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENT_RE.fullmatch(part):
            text += part if i == 0 else f".{part}"
        else:
            text += f'["{part}"]'
    return text


def _type_name(node: Any) -> str:
    if isinstance(node, TensorLeaf):
        return "tensor"
    if isinstance(node, FloatLeaf):
        return "float"
    if node is None:
        return "null"
    if isinstance(node, bool):
        return "bool"
    if isinstance(node, int):
        return "int"
    if isinstance(node, str):
        return "str"
    if isinstance(node, list):
        return "list"
    if isinstance(node, dict):
        return "dict"
    raise TypeError(f"not a canonical tree node: {type(node).__name__}")


def compare(expected: Any, actual: Any, root: str) -> list[Difference]:
    """All differences between two canonical trees, structure first, then layout, then bits."""
    out: list[Difference] = []
    _walk(expected, actual, (root,), out)
    return sorted(out, key=lambda d: d.phase)  # stable: traversal order within a phase


def _walk(e: Any, a: Any, parts: tuple[str | int, ...], out: list[Difference]) -> None:
    te, ta = _type_name(e), _type_name(a)
    path = format_path(parts)
    if te != ta:
        out.append(
            Difference(
                STRUCTURE, "type", path, f"type changed: expected {te}, got {ta}", expected=te, actual=ta
            )
        )
        return
    if te == "dict":
        for key in sorted(e.keys() - a.keys()):
            out.append(
                Difference(
                    STRUCTURE, "missing", format_path((*parts, key)), "missing key (expected, not produced)"
                )
            )
        for key in sorted(a.keys() - e.keys()):
            out.append(
                Difference(
                    STRUCTURE, "extra", format_path((*parts, key)), "extra key (produced, not expected)"
                )
            )
        for key in sorted(e.keys() & a.keys()):
            _walk(e[key], a[key], (*parts, key), out)
    elif te == "list":
        common = min(len(e), len(a))
        for i in range(common):
            _walk(e[i], a[i], (*parts, i), out)
        if len(e) != len(a):
            kind: DifferenceKind = "missing" if len(e) > len(a) else "extra"
            out.append(
                Difference(
                    STRUCTURE,
                    kind,
                    f"{path}[{common}:{max(len(e), len(a))}]",
                    f"length changed: expected {len(e)} items, got {len(a)}",
                    index=common,
                    count=abs(len(e) - len(a)),
                    expected=str(len(e)),
                    actual=str(len(a)),
                )
            )
    elif te == "float":
        if e.hex != a.hex or e.dtype != a.dtype:
            out.append(_float_difference(e, a, path))
    elif te == "tensor":
        out.extend(_tensor_differences(e, a, path))
    elif e != a:
        diff = abs(e - a) if te == "int" else None
        out.append(
            Difference(
                VALUES,
                "value",
                path,
                f"value changed: expected {e!r}, got {a!r}",
                max_abs_diff=float(diff) if diff is not None else None,
                expected=repr(e),
                actual=repr(a),
            )
        )


def _float_difference(e: FloatLeaf, a: FloatLeaf, path: str) -> Difference:
    ev, av = e.value, a.value
    nan = ev != ev or av != av
    if e.dtype != a.dtype:
        return Difference(
            LAYOUT,
            "dtype",
            path,
            f"float dtype changed: expected {e.dtype} {e.repr}, got {a.dtype} {a.repr}",
            expected=e.dtype,
            actual=a.dtype,
        )
    dtype = f" ({e.dtype})" if e.dtype != "float64" else ""
    ulp, rel = spread_floats(ev, av, e.dtype)
    return Difference(
        VALUES,
        "value",
        path,
        f"float{dtype} changed: expected {e.repr} ({e.hex}), got {a.repr} ({a.hex})",
        nan_count=int(nan),
        max_abs_diff=None if nan else abs(ev - av),
        max_ulp=ulp,
        max_rel_diff=rel,
        expected=e.hex,
        actual=a.hex,
    )


def _tensor_differences(e: TensorLeaf, a: TensorLeaf, path: str) -> list[Difference]:
    layout = []
    if e.dtype != a.dtype:
        layout.append(
            Difference(
                LAYOUT,
                "dtype",
                path,
                f"dtype changed: expected {e.dtype}, got {a.dtype}",
                expected=e.dtype,
                actual=a.dtype,
            )
        )
    if tuple(e.shape) != tuple(a.shape):
        layout.append(
            Difference(
                LAYOUT,
                "shape",
                path,
                f"shape changed: expected {list(e.shape)}, got {list(a.shape)}",
                expected=str(list(e.shape)),
                actual=str(list(a.shape)),
            )
        )
    if layout or e.sha256 == a.sha256:
        return layout
    eb, ab = e.int_bits(), a.int_bits()
    if eb is None or ab is None:
        return [
            Difference(
                VALUES,
                "bits",
                path,
                f"sha256 differs ({e.sha256[:12]}... vs {a.sha256[:12]}...); the golden keeps only the hash of "
                f"tensors above the inline size, so which elements differ is not known",
                count=0,
                hash_only=True,
                expected=e.sha256,
                actual=a.sha256,
            )
        ]
    found = _scan_bits(eb.reshape(-1), ab.reshape(-1), e.dtype, path)
    if found.index is not None and len(e.shape) > 1:
        found.position = tuple(int(i) for i in np.unravel_index(found.index, tuple(e.shape)))
    return [found]


def _element_text(bits: int, dtype: str, width: int) -> str:
    if is_float_dtype(dtype):
        value = float(float_values(np.asarray([bits], dtype=_signed(width)), dtype)[0])
        return f"{float_hex(value)} ({value!r}, bits {bits_hex(bits, width)})"
    return f"{bits} ({bits_hex(bits, width)})"


def _signed(width: int) -> type:
    return {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[width]


def _scan_bits(eb: np.ndarray, ab: np.ndarray, dtype: str, path: str) -> Difference:
    """Chunked scan of two flat integer views: count, first index, max |diff|, max ULP."""
    is_float = is_float_dtype(dtype)
    width = FLOAT_WIDTH.get(dtype, eb.dtype.itemsize)
    count = nan_count = 0
    first: int | None = None
    max_abs: float | None = None
    max_ulp: int | None = None
    max_rel: float | None = None
    for start in range(0, eb.size, CHUNK):
        x, y = eb[start : start + CHUNK], ab[start : start + CHUNK]
        idx = np.flatnonzero(x != y)
        if idx.size == 0:
            continue
        count += int(idx.size)
        if first is None:
            first = start + int(idx[0])
        xb, yb = x[idx], y[idx]
        if is_float:
            xv, yv = float_values(xb, dtype), float_values(yb, dtype)
            nan = np.isnan(xv) | np.isnan(yv)
            nan_count += int(nan.sum())
            ok = ~nan
            if ok.any():
                with np.errstate(invalid="ignore", over="ignore"):
                    chunk_abs = float(np.max(np.abs(xv[ok] - yv[ok])))
                max_abs = chunk_abs if max_abs is None else max(max_abs, chunk_abs)
            chunk_ulp, chunk_rel = spread(xb, yb, dtype)
            if chunk_ulp is not None:
                max_ulp = chunk_ulp if max_ulp is None else max(max_ulp, chunk_ulp)
            if chunk_rel is not None:
                max_rel = chunk_rel if max_rel is None else max(max_rel, chunk_rel)
        else:
            chunk_abs = float(np.max(np.abs(xb.astype(np.float64) - yb.astype(np.float64))))
            max_abs = chunk_abs if max_abs is None else max(max_abs, chunk_abs)
    if first is None:
        return Difference(
            VALUES,
            "bits",
            path,
            "sha256 differs but every element is equal: a tensor was modified after it was canonicalised, "
            "or a golden's inline values disagree with its hash",
            count=0,
        )
    e_first, a_first = int(eb[first]), int(ab[first])
    return Difference(
        VALUES,
        "bits",
        path,
        f"{count} of {eb.size} elements differ bitwise; first at flat index {first}",
        index=first,
        count=count,
        nan_count=nan_count,
        max_abs_diff=max_abs,
        max_ulp=max_ulp,
        max_rel_diff=max_rel,
        expected=_element_text(e_first, dtype, width),
        actual=_element_text(a_first, dtype, width),
    )
