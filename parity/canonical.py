"""Canonical artifacts: a JSON-able tree that two runs can be compared on bit for bit.

Trees are built from ``dict`` (string keys), ``list``, ``str``, ``int``, ``bool``, ``None`` and two
leaf types:

- ``FloatLeaf``: a Python float as ``float.hex()`` plus a readable ``repr`` (NaN keeps its bits),
  and the dtype it was produced in (``float64`` unless the producer says otherwise: a loss read
  with ``.item()`` from a float32 tensor is ``float32``), so that a report counts ULPs in it;
- ``TensorLeaf``: dtype, shape and the sha256 of the raw bytes, hashed through the platform's
  zero-copy byte view, so -0.0/+0.0 and NaN payloads count. Tensors of at most
  ``INLINE_MAX_NUMEL`` elements are also inlined as their integer-view values (signed, same
  width; bf16 as int16 since numpy has no bf16) plus hex floats. Larger tensors carry ``stats``
  in their JSON form (sum, absolute sum, min, max: exact, as hex floats for float dtypes), so a
  reviewer of a golden change can read which tensors moved and by how much; the comparator still
  decides by the hash and the bits, never by the stats. A leaf keeps a reference to the
  live tensor (never serialised), so a large tensor is hashed once and only re-read, one pair at a
  time, when two hashes differ and the comparator needs the first differing element.

Parameters are named by FQN, never by ``id()``. Each artifact kind has a function here; every one
returns such a tree, and ``canonicalise`` handles anything else made of the same pieces.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parity.ulp import FLOAT_WIDTH, float_hex, float_values, is_float_dtype, representable

__all__ = [
    "error_line",
    "INLINE_MAX_NUMEL",
    "MARK",
    "FloatLeaf",
    "TensorLeaf",
    "canonicalise",
    "float_leaf",
    "tensor_leaf",
    "tensor_stats",
    "param_groups",
    "lr_curve",
    "losses",
    "token_ids",
    "batches",
    "checkpoint",
    "metrics",
    "to_json",
    "from_json",
]

INLINE_MAX_NUMEL = 64
# Key that marks a leaf in the JSON form; user dicts may not use it.
MARK = "__parity__"

# Integer-view numpy dtype of each platform dtype name (for inline values read back from JSON).
_INT_VIEW_DTYPE = {
    "bool": np.uint8,
    "uint8": np.uint8,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.int16,
    "bfloat16": np.int16,
    "float32": np.int32,
    "float64": np.int64,
}


def error_line(exc: BaseException) -> str:
    """A refusal as a row holds it: ``Type: message`` with the message's whitespace on one line."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _platform():
    from hyper_parallel.platform import get_platform

    return get_platform()


@dataclass(frozen=True)
class FloatLeaf:
    """A Python float: compared by ``hex`` (exact), shown with ``repr``, produced in ``dtype``."""

    hex: str
    repr: str
    dtype: str = "float64"

    @property
    def value(self) -> float:
        if self.hex.startswith("nan("):
            return math.nan
        return float.fromhex(self.hex)

    def to_json(self) -> dict[str, Any]:
        out = {MARK: "float", "hex": self.hex, "repr": self.repr}
        if self.dtype != "float64":
            out["dtype"] = self.dtype
        return out


@dataclass(eq=False)
class TensorLeaf:
    """A tensor by dtype, shape and sha256 of its raw bytes (plus inline values when small)."""

    dtype: str
    shape: tuple[int, ...]
    sha256: str
    values: list[int] | None = None
    hex: list[str] | None = None
    source: Any = field(default=None, repr=False)
    stats: dict[str, Any] | None = None  # informational; computed from ``source`` when first written

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def int_bits(self) -> np.ndarray | None:
        """Flat integer view of the elements: from the live tensor, else from the inline values."""
        if self.source is not None:
            return _platform().int_view_numpy(self.source)
        if self.values is not None:
            return np.asarray(self.values, dtype=_INT_VIEW_DTYPE.get(self.dtype, np.int64))
        return None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            MARK: "tensor",
            "dtype": self.dtype,
            "shape": list(self.shape),
            "sha256": self.sha256,
        }
        if self.values is not None:
            out["values"] = list(self.values)
        if self.hex is not None:
            out["hex"] = list(self.hex)
        if self.values is None:
            if self.stats is None and self.source is not None:
                self.stats = tensor_stats(self.int_bits(), self.dtype)
            if self.stats is not None:
                out["stats"] = dict(self.stats)
        return out


def tensor_stats(bits: np.ndarray | None, dtype: str) -> dict[str, Any] | None:
    """Exact, order-independent statistics of a tensor's elements (``math.fsum``: correctly rounded).

    Floats: ``sum``, ``abs_sum``, ``min``, ``max`` as hex floats (NaN/inf counted in ``nonfinite``
    and left out of the others); integers: the same as ints. ``None`` when the bits are unknown.
    """
    if bits is None:
        return None
    flat = np.asarray(bits).reshape(-1)
    if is_float_dtype(dtype):
        values = float_values(flat, dtype)
        finite = values[np.isfinite(values)]
        out: dict[str, Any] = {"nonfinite": int(values.size - finite.size)}
        if finite.size == 0:
            return out
        out["sum"] = float_hex(math.fsum(finite.tolist()))
        out["abs_sum"] = float_hex(math.fsum(np.abs(finite).tolist()))
        out["min"] = float_hex(float(finite.min()))
        out["max"] = float_hex(float(finite.max()))
        return out
    ints = [int(v) for v in flat.tolist()]
    if dtype == "bool":
        ints = [1 if v else 0 for v in ints]
    if not ints:
        return {}
    return {"sum": sum(ints), "abs_sum": sum(abs(v) for v in ints), "min": min(ints), "max": max(ints)}


def float_leaf(value: float | np.floating, dtype: str = "float64") -> FloatLeaf:
    """A float leaf; ``dtype`` is the dtype the value was computed in (it must hold the value exactly)."""
    if isinstance(value, np.floating) and dtype == "float64":
        dtype = np.dtype(type(value)).name
    value = float(value)
    if dtype not in FLOAT_WIDTH:
        raise ValueError(f"float dtype {dtype!r} is not one of {sorted(FLOAT_WIDTH)}")
    if not representable(value, dtype):
        raise ValueError(f"{value!r} is not a {dtype} value; declare the dtype it was computed in")
    return FloatLeaf(hex=float_hex(value), repr=repr(value), dtype=dtype)


def tensor_leaf(tensor: Any) -> TensorLeaf:
    """Hash one tensor through the platform's byte view; inline it when it is small."""
    platform = _platform()
    dtype = platform.dtype_name(tensor)
    shape = tuple(int(d) for d in platform.local_shape(tensor))  # this rank's data, as hashed
    digest = hashlib.sha256(platform.raw_bytes(tensor)).hexdigest()
    values = hexes = None
    if math.prod(shape) <= INLINE_MAX_NUMEL:
        bits = platform.int_view_numpy(tensor)
        values = [int(v) for v in bits.tolist()]
        if is_float_dtype(dtype):
            hexes = [float_hex(float(v)) for v in float_values(bits, dtype).tolist()]
    return TensorLeaf(dtype=dtype, shape=shape, sha256=digest, values=values, hex=hexes, source=tensor)


def _key(key: Any, path: str) -> str:
    if isinstance(key, str):
        if key == MARK:
            raise ValueError(f"{path}: the key {MARK!r} is reserved for canonical leaves")
        return key
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return str(int(key))
    raise TypeError(f"{path}: dict key {key!r} has type {type(key).__name__}; expected str or int")


def canonicalise(obj: Any, path: str = "$", *, float_dtype: str = "float64") -> Any:
    """Turn a nested structure of scalars, floats, tensors, mappings and sequences into a tree.

    ``float_dtype``: the dtype the Python floats in ``obj`` were computed in (see ``FloatLeaf``).
    """
    if obj is None or isinstance(obj, (str, FloatLeaf, TensorLeaf)):
        return obj
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        try:
            return float_leaf(obj, float_dtype)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    if isinstance(obj, Mapping):
        if obj.get(MARK) is not None:
            return from_json(obj, path)
        out: dict[str, Any] = {}
        for key, value in obj.items():
            skey = _key(key, path)
            if skey in out:
                raise ValueError(f"{path}: keys {key!r} and {skey!r} collide once converted to strings")
            out[skey] = canonicalise(value, f"{path}.{skey}", float_dtype=float_dtype)
        return out
    if isinstance(obj, (list, tuple)):
        return [canonicalise(v, f"{path}[{i}]", float_dtype=float_dtype) for i, v in enumerate(obj)]
    if _platform().is_tensor(obj):
        return tensor_leaf(obj)
    raise TypeError(
        f"{path}: cannot canonicalise a {type(obj).__module__}.{type(obj).__qualname__}; expected "
        "None, bool, int, float, str, a tensor, a mapping or a list/tuple of those"
    )


# ----------------------------------------------------------------------------- artifact kinds


def param_groups(
    groups: Sequence[Mapping[str, Any]], named_parameters: Iterable[tuple[str, Any]]
) -> list[dict]:
    """Optimizer param groups: each group's params as FQNs (in order) plus its hyperparameters.

    ``named_parameters`` maps the parameter objects to FQNs (``model.named_parameters()``; a tied
    parameter keeps its first name). A group may also list FQN strings directly.
    """
    fqn_by_id: dict[int, str] = {}
    for name, param in named_parameters:
        fqn_by_id.setdefault(id(param), name)  # id() is only a lookup key here; FQNs are stored
    out = []
    for gi, group in enumerate(groups):
        if "params" not in group:
            raise ValueError(f"param_groups[{gi}]: expected a 'params' entry")
        names = []
        for pi, param in enumerate(group["params"]):
            if isinstance(param, str):
                names.append(param)
                continue
            fqn = fqn_by_id.get(id(param))
            if fqn is None:
                shape = list(_platform().shape(param)) if _platform().is_tensor(param) else "?"
                raise ValueError(
                    f"param_groups[{gi}].params[{pi}] (shape {shape}) is not in named_parameters; "
                    "pass the named parameters of every model part"
                )
            names.append(fqn)
        hyper = {k: v for k, v in group.items() if k != "params"}
        tree = canonicalise(hyper, f"param_groups[{gi}]")
        tree["params"] = names
        out.append(tree)
    return out


def lr_curve(lrs: Sequence[float] | Sequence[Sequence[float]]) -> list:
    """Learning rate per step (a float, or one float per param group, per step)."""
    return [canonicalise(step, f"lr_curve[{i}]") for i, step in enumerate(lrs)]


def losses(values: Sequence[Any], dtype: str = "float64") -> list:
    """Loss per step: Python floats computed in ``dtype``, or 0-d tensors (kept as tensors)."""
    return [canonicalise(v, f"losses[{i}]", float_dtype=dtype) for i, v in enumerate(values)]


def token_ids(ids: Any) -> Any:
    """Token ids: a tensor, or (nested) lists of ints."""
    tree = canonicalise(ids, "token_ids")

    def check(node: Any, path: str) -> None:
        if isinstance(node, list):
            for i, v in enumerate(node):
                check(v, f"{path}[{i}]")
        elif not isinstance(node, (int, TensorLeaf)) or isinstance(node, bool):
            raise TypeError(f"{path}: token ids must be ints or integer tensors, got {type(node).__name__}")

    check(tree, "token_ids")
    return tree


def batches(items: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Batches as yielded by a dataloader: one mapping (input_ids, labels, ...) per step."""
    out = []
    for i, batch in enumerate(items):
        if not isinstance(batch, Mapping):
            raise TypeError(
                f"batches[{i}]: expected a mapping of field name to tensor, got {type(batch).__name__}"
            )
        out.append(canonicalise(batch, f"batches[{i}]"))
    return out


def canonicalise_keys(row: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A mapping with its keys made canonical (strings) and its values untouched."""
    if not isinstance(row, Mapping):
        raise TypeError(f"{path}: expected a mapping, got {type(row).__name__}")
    out: dict[str, Any] = {}
    for key, value in row.items():
        skey = _key(key, path)
        if skey in out:
            raise ValueError(f"{path}: keys {key!r} and {skey!r} collide once converted to strings")
        out[skey] = value
    return out


def _leaf_type(node: Any) -> str:
    if isinstance(node, TensorLeaf):
        return "tensor"
    if isinstance(node, FloatLeaf):
        return "float"
    if node is None:
        return "none"
    return type(node).__name__


def _flat_keys(node: Any, prefix: str, out: dict[str, str]) -> None:
    if isinstance(node, dict):
        if not node and prefix:
            out[prefix] = "dict"
        for key, value in node.items():
            _flat_keys(value, f"{prefix}/{key}" if prefix else key, out)
    elif isinstance(node, list):
        if not node and prefix:
            out[prefix] = "list"
        for i, value in enumerate(node):
            _flat_keys(value, f"{prefix}/{i}" if prefix else str(i), out)
    else:
        out[prefix] = _leaf_type(node)


def checkpoint(state: Mapping[str, Any]) -> dict[str, Any]:
    """A state dict: per-tensor dtype/shape/sha256, the flat key set, and the non-tensor state.

    ``keys`` maps every leaf path (``/``-joined, FQNs kept whole) to its type, so a renamed or
    dropped entry shows as missing/extra keys; ``state`` is the canonical nested tree itself.
    Tensors are hashed one at a time, so the state dict is never copied as a whole.
    """
    tree = canonicalise(state, "checkpoint")
    if not isinstance(tree, dict):
        raise TypeError(f"checkpoint: expected a mapping, got {type(state).__name__}")
    keys: dict[str, str] = {}
    _flat_keys(tree, "", keys)
    return {"keys": dict(sorted(keys.items())), "state": tree}


def metrics(
    records: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    deterministic: Iterable[str] = (),
    float_dtypes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Metric records: the key set (with value types), plus values for the deterministic keys.

    Wall-clock, memory and throughput metrics differ between runs, so only the keys listed in
    ``deterministic`` (e.g. ``loss``, ``lr``, ``step``) keep their values. ``float_dtypes`` names
    the dtype a key's floats were computed in (``{"loss": "float32"}``); float64 otherwise.
    """
    rows = [records] if isinstance(records, Mapping) else list(records)
    keep = set(deterministic)
    dtypes = dict(float_dtypes or {})
    keys: dict[str, str] = {}
    values = []
    for i, row in enumerate(rows):
        tree = {
            key: canonicalise(value, f"metrics[{i}].{key}", float_dtype=dtypes.get(key, "float64"))
            for key, value in canonicalise_keys(row, f"metrics[{i}]").items()
        }
        for key, value in tree.items():
            keys.setdefault(key, _leaf_type(value))
        values.append({k: v for k, v in tree.items() if k in keep})
    return {"keys": dict(sorted(keys.items())), "values": values}


# ----------------------------------------------------------------------------- JSON form


def to_json(tree: Any) -> Any:
    """The JSON-able form of a canonical tree (leaves become marked dicts)."""
    if isinstance(tree, (FloatLeaf, TensorLeaf)):
        return tree.to_json()
    if isinstance(tree, dict):
        return {k: to_json(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [to_json(v) for v in tree]
    if tree is None or isinstance(tree, (str, int, bool)):
        return tree
    raise TypeError(f"not a canonical tree node: {type(tree).__name__} (canonicalise it first)")


def from_json(obj: Any, path: str = "$") -> Any:
    """Rebuild a canonical tree from its JSON form (e.g. a golden file)."""
    if isinstance(obj, Mapping):
        mark = obj.get(MARK)
        if mark == "float":
            _expect_fields(obj, ("hex", "repr"), path)
            dtype = obj.get("dtype", "float64")
            if dtype not in FLOAT_WIDTH:
                raise ValueError(
                    f"{path}: float leaf has dtype {dtype!r}; expected one of {sorted(FLOAT_WIDTH)}"
                )
            if not isinstance(obj["hex"], str) or not _valid_hex(obj["hex"]):
                raise ValueError(f"{path}: float leaf hex {obj['hex']!r} is not a float.hex() string")
            return FloatLeaf(hex=obj["hex"], repr=str(obj["repr"]), dtype=dtype)
        if mark == "tensor":
            _expect_fields(obj, ("dtype", "shape", "sha256"), path)
            _check_tensor_json(obj, path)
            return TensorLeaf(
                dtype=obj["dtype"],
                shape=tuple(obj["shape"]),
                sha256=obj["sha256"],
                values=obj.get("values"),
                hex=obj.get("hex"),
                stats=obj.get("stats"),
            )
        if mark is not None:
            raise ValueError(f"{path}: unknown leaf type {mark!r}; expected 'float' or 'tensor'")
        return {k: from_json(v, f"{path}.{k}") for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_json(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, float):
        raise ValueError(f"{path}: a bare JSON float {obj!r}; canonical floats are hex leaves")
    return obj


def _valid_hex(text: str) -> bool:
    if text.startswith("nan(0x") and text.endswith(")"):
        return all(c in "0123456789abcdef" for c in text[6:-1])
    try:
        float.fromhex(text)
    except (ValueError, OverflowError):
        return False
    return True


def _check_tensor_json(obj: Mapping[str, Any], path: str) -> None:
    """A tensor leaf read from disk must be well formed before the comparator trusts it."""
    if obj["dtype"] not in _INT_VIEW_DTYPE:
        raise ValueError(
            f"{path}: tensor leaf has dtype {obj['dtype']!r}; expected one of {sorted(_INT_VIEW_DTYPE)}"
        )
    shape = obj["shape"]
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise ValueError(f"{path}: tensor leaf shape {shape!r} is not a list of non-negative ints")
    digest = obj["sha256"]
    if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"{path}: tensor leaf sha256 {digest!r} is not 64 lower-case hex digits")
    values = obj.get("values")
    if values is not None and (
        not isinstance(values, list)
        or len(values) != math.prod(shape)
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    ):
        raise ValueError(f"{path}: tensor leaf values must be {math.prod(shape)} ints (its shape is {shape})")
    stats = obj.get("stats")
    if stats is not None and (
        not isinstance(stats, dict)
        or not all(
            isinstance(v, (str, int))
            and not isinstance(v, bool)
            and (not isinstance(v, str) or _valid_hex(v))
            for v in stats.values()
        )
    ):
        raise ValueError(f"{path}: tensor leaf stats must map names to ints or float.hex() strings")


def _expect_fields(obj: Mapping[str, Any], names: Sequence[str], path: str) -> None:
    missing = [n for n in names if n not in obj]
    if missing:
        raise ValueError(f"{path}: {obj.get(MARK)} leaf is missing {missing}")
