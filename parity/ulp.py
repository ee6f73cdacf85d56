"""Bit patterns to ordered keys: ULP distance and float values recovered from integer views.

Floats are compared as integer views (same width, signed, as the platform returns them). To say
*how far apart* two differing floats are, each bit pattern is mapped to an ordered key: the
magnitude bits for positive numbers and their negation for negative ones. The ULP distance is the
absolute difference of the keys, i.e. the number of representable steps between the two values.

Convention (documented and tested): ``+0.0`` and ``-0.0`` both map to key 0, so their ULP distance
is **0**, although the comparator still counts them as a *bit mismatch*. A distance of 0 next to a
mismatch therefore means "numerically equal, bitwise different" (signed zero). NaN has no
distance: elements where either side is NaN are excluded from ULP and ``|diff|`` statistics and
counted separately as NaN mismatches.

A ULP count means something only between two finite values of the same sign: across zero it
counts every float in between (1.0 to -1.0 is about 2**63 steps in float64) and to an infinity
every float up to the largest. Such pairs get a relative difference instead
(:func:`ulp_meaningful`, :func:`relative_difference`), so that a report never prints a ULP figure
that is noise.
"""

from __future__ import annotations

import struct

import numpy as np

# Width in bytes of each float dtype name the platform reports, and the numpy float dtype that
# reads the same bits (bfloat16 has none: it is widened to float32 by a 16-bit shift).
FLOAT_WIDTH = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
_NUMPY_FLOAT: dict[str, type[np.floating]] = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
}
_INT_OF = {"float16": np.int16, "float32": np.int32}


def is_float_dtype(dtype: str) -> bool:
    """Whether ``dtype`` (a platform dtype name) has float semantics this module understands."""
    return dtype in FLOAT_WIDTH


def ordered_keys(bits: np.ndarray, width: int) -> np.ndarray:
    """Map signed integer views of IEEE floats to int64 keys ordered like the real numbers."""
    magnitude_mask = (1 << (8 * width - 1)) - 1
    b = bits.astype(np.int64, copy=False)
    magnitude = b & np.int64(magnitude_mask)
    return np.where(b < 0, -magnitude, magnitude)


def ulp_distance_keys(a_keys: np.ndarray, b_keys: np.ndarray) -> np.ndarray:
    """``|a - b|`` of int64 keys as uint64, exact even where the int64 difference would overflow."""
    au = a_keys.view(np.uint64)
    bu = b_keys.view(np.uint64)
    with np.errstate(over="ignore"):
        return np.where(a_keys >= b_keys, au - bu, bu - au)


def ulp_distance_bits(a_bits: np.ndarray, b_bits: np.ndarray, dtype: str) -> np.ndarray:
    """Element-wise ULP distance between two integer views of the float dtype ``dtype``."""
    width = FLOAT_WIDTH[dtype]
    return ulp_distance_keys(ordered_keys(a_bits, width), ordered_keys(b_bits, width))


def float_values(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Float64 values of integer views of ``dtype`` (exact: every narrower float widens exactly)."""
    if dtype == "bfloat16":
        widened = bits.astype(np.int32) << 16
        return widened.view(np.float32).astype(np.float64)
    return bits.view(_NUMPY_FLOAT[dtype]).astype(np.float64)


def float_bits(x: float) -> int:
    """The 64 bits of a Python float as a signed integer."""
    return struct.unpack("<q", struct.pack("<d", x))[0]


def ulp_distance_floats(a: float, b: float, dtype: str = "float64") -> int | None:
    """ULP distance between two Python floats, counted in ``dtype`` (the dtype they were produced in).

    A float32 loss that moved by one float32 step is 1 ULP, not the 2**29 float64 steps between the
    same two values. ``None`` when either is NaN.
    """
    if a != a or b != b:
        return None
    if dtype in _NUMPY_FLOAT and dtype != "float64":
        bits = np.array([a, b], dtype=np.float64).astype(_NUMPY_FLOAT[dtype]).view(_INT_OF[dtype])
        return int(ulp_distance_bits(bits[:1], bits[1:], dtype)[0])
    if dtype == "bfloat16":
        bits = (np.array([a, b], dtype=np.float32).view(np.int32) >> 16).astype(np.int16)
        return int(ulp_distance_bits(bits[:1], bits[1:], dtype)[0])
    keys = ordered_keys(np.array([float_bits(a), float_bits(b)], dtype=np.int64), 8)
    return int(ulp_distance_keys(keys[:1], keys[1:])[0])


def ulp_meaningful(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where a ULP distance says something: both values finite and of the same sign (a zero, of
    either sign, goes with both: a few steps from it are a few ULP)."""
    same_side = (np.signbit(a) == np.signbit(b)) | (a == 0) | (b == 0)
    return np.isfinite(a) & np.isfinite(b) & same_side


def relative_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|a - b| / max(|a|, |b|)`` element-wise (2.0 for ``x`` against ``-x``); ``inf`` where a side
    is infinite and the two differ; NaN where either is NaN."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        scale = np.maximum(np.abs(a), np.abs(b))
        rel = np.abs(a - b) / scale
    infinite = (np.isinf(a) | np.isinf(b)) & (a != b) & ~(np.isnan(a) | np.isnan(b))
    rel = np.where(infinite, np.inf, rel)
    return np.where(scale == 0, 0.0, rel)


def meaningful_ulp_floats(a: float, b: float, dtype: str = "float64") -> int | None:
    """:func:`ulp_distance_floats` where it means something (same sign, finite), else ``None``."""
    if not bool(ulp_meaningful(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))):
        return None
    return ulp_distance_floats(a, b, dtype)


def spread(a_bits: np.ndarray, b_bits: np.ndarray, dtype: str) -> tuple[int | None, float | None]:
    """(max ULP over the same-sign finite pairs, max relative difference over the other non-NaN
    pairs) of two integer views of ``dtype``; ``None`` where no pair falls in that class."""
    a, b = float_values(a_bits, dtype), float_values(b_bits, dtype)
    known = ~(np.isnan(a) | np.isnan(b))
    steps = known & ulp_meaningful(a, b)
    jumps = known & ~steps
    ulp = int(ulp_distance_bits(a_bits[steps], b_bits[steps], dtype).max()) if steps.any() else None
    rel = float(relative_difference(a[jumps], b[jumps]).max()) if jumps.any() else None
    return ulp, rel


def spread_floats(a: float, b: float, dtype: str = "float64") -> tuple[int | None, float | None]:
    """:func:`spread` of two Python floats produced in ``dtype``: (ULP, None) for a same-sign finite
    pair, (None, relative difference) for a sign change or an infinity, (None, None) with a NaN."""
    if a != a or b != b:
        return None, None
    ulp = meaningful_ulp_floats(a, b, dtype)
    return (ulp, None) if ulp is not None else (None, relative_difference_floats(a, b))


def relative_difference_floats(a: float, b: float) -> float:
    """:func:`relative_difference` of two Python floats."""
    return float(relative_difference(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)))


def representable(value: float, dtype: str) -> bool:
    """Whether the Python float ``value`` is exactly a ``dtype`` value (NaN and inf are)."""
    if value != value or dtype == "float64":
        return True
    if dtype == "bfloat16":
        return (int(np.array([value], dtype=np.float32).view(np.int32)[0]) & 0xFFFF) == 0 and float(
            np.float32(value)
        ) == value
    with np.errstate(over="ignore"):
        return float(_NUMPY_FLOAT[dtype](value)) == value


def bits_hex(value: int, width: int) -> str:
    """Two's-complement hex of a signed integer view element, zero-padded to its width."""
    return f"0x{value & ((1 << (8 * width)) - 1):0{2 * width}x}"


def float_hex(value: float) -> str:
    """``float.hex()``, except NaN, which keeps its sign and payload via the float64 bits."""
    if value != value:
        return f"nan(0x{float_bits(value) & 0xFFFFFFFFFFFFFFFF:016x})"
    return value.hex()
