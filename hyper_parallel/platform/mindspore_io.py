"""Checkpoint I/O for the MindSpore platform: tensors at the edge, state files, safetensors, DCP.

- :func:`to_numpy` / :func:`to_mindspore` / :func:`to_torch` move tensors between MindSpore, numpy
  and torch (bf16 travels as its 16-bit pattern: numpy has no bf16 of its own, MindSpore registers
  one for ``asnumpy``, torch cannot read that one).
- :func:`save_state` / :func:`load_state` store any nest of dicts/lists/tuples, tensors and Python
  scalars as ONE safetensors file: the tensors as tensors, the structure as typed JSON in the
  header metadata. Loading never unpickles, so a file cannot run code; a damaged or foreign file is
  a ``ValueError`` naming it.
- :func:`save_safetensors` / :func:`load_safetensors` use safetensors' own serializer (BF16
  included), so the files are what ``safetensors.torch.load_file`` and transformers read.
- A write that the OS refuses (full disk, file-size limit) is an ``OSError`` with its errno and
  the file's path, as ``open``/``write`` raise it: safetensors reports it as a bare
  ``SafetensorError`` whose text ends in "(os error N)", which the checkpoint code cannot name.
- The DCP functions bridge to torch DCP (torch is installed beside MindSpore) through the torch
  platform's restricted reader, copying loaded values back into the caller's MindSpore tensors.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import ops

__all__ = [
    "dcp_full_state_dict",
    "dcp_load",
    "dcp_save",
    "load_safetensors",
    "load_state",
    "save_safetensors",
    "save_state",
    "to_mindspore",
    "to_numpy",
    "to_torch",
]

# MindSpore dtype -> (safetensors dtype name, numpy storage dtype of the raw bytes).
_ST_DTYPES = {
    ms.float64: ("float64", np.float64),
    ms.float32: ("float32", np.float32),
    ms.float16: ("float16", np.float16),
    ms.bfloat16: ("bfloat16", np.uint16),
    ms.int64: ("int64", np.int64),
    ms.int32: ("int32", np.int32),
    ms.int16: ("int16", np.int16),
    ms.int8: ("int8", np.int8),
    ms.uint8: ("uint8", np.uint8),
    ms.uint16: ("uint16", np.uint16),
    ms.uint32: ("uint32", np.uint32),
    ms.uint64: ("uint64", np.uint64),
    ms.bool_: ("bool", np.bool_),
}
# safetensors' header codes (what ``deserialize`` reports) -> numpy storage dtype, bf16 flag.
_ST_CODES = {
    "F64": (np.float64, False),
    "F32": (np.float32, False),
    "F16": (np.float16, False),
    "BF16": (np.uint16, True),
    "I64": (np.int64, False),
    "I32": (np.int32, False),
    "I16": (np.int16, False),
    "I8": (np.int8, False),
    "U8": (np.uint8, False),
    "U16": (np.uint16, False),
    "U32": (np.uint32, False),
    "U64": (np.uint64, False),
    "BOOL": (np.bool_, False),
}
# safetensors' (Rust) text for an I/O failure: "... I/O error: File too large (os error 27)".
_OS_ERROR = re.compile(r"\(os error (\d+)\)")
_STRUCTURE_KEY = "hyper_parallel.structure"
_FORMAT = "hyper_parallel.mindspore.state/1"

_bf16_numpy: Any = None


def _bf16_np() -> Any:
    """The numpy dtype MindSpore's ``asnumpy`` uses for bfloat16 (registered by MindSpore)."""
    global _bf16_numpy
    if _bf16_numpy is None:
        _bf16_numpy = ms.Tensor(np.zeros(1, np.float32)).astype(ms.bfloat16).asnumpy().dtype
    return _bf16_numpy


# --------------------------------------------------------------------------- conversions
def is_torch_tensor(obj: Any) -> bool:
    torch = _torch_if_loaded()
    return torch is not None and isinstance(obj, torch.Tensor)


def _torch_if_loaded() -> Any:
    import sys

    return sys.modules.get("torch")


def to_numpy(tensor: ms.Tensor) -> np.ndarray:
    """A contiguous numpy array of the tensor's values (bf16 as MindSpore's numpy bfloat16)."""
    return np.ascontiguousarray(tensor.asnumpy())


def _from_bits(bits: np.ndarray, bf16: bool) -> ms.Tensor:
    if bf16:
        return ms.Tensor(bits.view(np.uint16).view(_bf16_np()))
    return ms.Tensor(bits)


def to_mindspore(value: Any) -> ms.Tensor:
    """A MindSpore tensor (a copy) from a MindSpore tensor, a torch tensor or an array-like."""
    if isinstance(value, ms.Tensor):
        return value
    if is_torch_tensor(value):
        import torch

        t = value.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            return _from_bits(t.view(torch.int16).numpy().copy(), bf16=True)
        return ms.Tensor(t.numpy().copy())
    return ms.Tensor(np.asarray(value))


def to_torch(tensor: ms.Tensor) -> Any:
    """A torch CPU tensor sharing the numpy copy of ``tensor`` (bf16 reinterpreted bit for bit)."""
    import torch

    array = to_numpy(tensor)
    if tensor.dtype == ms.bfloat16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _tensor_spec(tensor: ms.Tensor, keep_alive: list[np.ndarray]) -> Any:
    """safetensors' ``TensorSpec`` for a MindSpore tensor; its buffer is kept in ``keep_alive``."""
    from safetensors import TensorSpec

    try:
        name, storage = _ST_DTYPES[tensor.dtype]
    except KeyError:
        raise TypeError(f"cannot store a {tensor.dtype} tensor in safetensors") from None
    array = to_numpy(tensor)
    if tensor.dtype == ms.bfloat16:
        array = array.view(storage)
    keep_alive.append(array)
    return TensorSpec(dtype=name, shape=list(tensor.shape), data_ptr=array.ctypes.data, data_len=array.nbytes)


def _read_safetensors(path: str, what: str) -> tuple[dict[str, ms.Tensor], dict[str, str]]:
    """Every tensor of a safetensors file and its metadata; ``ValueError`` naming the file if damaged."""
    from safetensors import deserialize, safe_open

    try:
        with safe_open(path, framework="np") as f:
            metadata = f.metadata() or {}
        with open(path, "rb") as fh:
            records = deserialize(fh.read())
        tensors = {}
        for name, record in records:
            storage, bf16 = _ST_CODES[record["dtype"]] if record["dtype"] in _ST_CODES else (None, False)
            if storage is None:
                raise ValueError(f"tensor {name!r} has unsupported dtype {record['dtype']}")
            bits = np.frombuffer(record["data"], dtype=storage).reshape(record["shape"])
            tensors[name] = _from_bits(bits.copy(), bf16)
    except Exception as exc:  # SafetensorError is a bare Exception
        raise ValueError(f"{path}: unreadable {what} ({type(exc).__name__}: {exc})") from exc
    return tensors, metadata


def _serialize(specs: dict[str, Any], path: str, metadata: dict[str, str] | None) -> None:
    """safetensors' ``serialize_file``; a refused write is an ``OSError`` (errno, path)."""
    from safetensors import serialize_file

    try:
        serialize_file(specs, path, metadata=metadata)
    except OSError:
        raise
    except Exception as exc:  # SafetensorError is a bare Exception
        match = _OS_ERROR.search(str(exc))
        if match is None:
            raise
        code = int(match.group(1))
        raise OSError(code, os.strerror(code), path) from exc


# --------------------------------------------------------------------------- state files
def _encode(obj: Any, tensors: dict[str, ms.Tensor], where: str) -> Any:
    """Typed JSON for ``obj``; tensors go to ``tensors`` under ``t<n>`` and are referenced by name."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return {"int": str(obj)}
    if isinstance(obj, float):
        return {"float": obj.hex()}
    if isinstance(obj, (ms.Tensor, np.ndarray)) or is_torch_tensor(obj):
        kind = "torch" if is_torch_tensor(obj) else "numpy" if isinstance(obj, np.ndarray) else "mindspore"
        name = f"t{len(tensors)}"
        tensors[name] = to_mindspore(obj)
        return {"tensor": name, "kind": kind}
    if isinstance(obj, list):
        return [_encode(v, tensors, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, tuple):
        return {"tuple": [_encode(v, tensors, f"{where}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, Mapping):
        return {
            "dict": [
                [_encode(k, tensors, f"{where} key"), _encode(v, tensors, f"{where}[{k!r}]")]
                for k, v in obj.items()
            ]
        }
    raise TypeError(
        f"cannot save {type(obj).__name__} at {where or 'top level'}: only tensors, dicts, lists, tuples "
        "and Python scalars are stored (nothing is pickled)"
    )


def _decode(node: Any, tensors: dict[str, ms.Tensor]) -> Any:
    if node is None or isinstance(node, (bool, str)):
        return node
    if isinstance(node, list):
        return [_decode(v, tensors) for v in node]
    if not isinstance(node, dict) or len(node) not in (1, 2):
        raise ValueError(f"unexpected structure node {node!r}")
    if "int" in node:
        return int(node["int"])
    if "float" in node:
        return float.fromhex(node["float"])
    if "tuple" in node:
        return tuple(_decode(v, tensors) for v in node["tuple"])
    if "dict" in node:
        return {_decode(k, tensors): _decode(v, tensors) for k, v in node["dict"]}
    if "tensor" in node:
        tensor = tensors[node["tensor"]]
        if node.get("kind") == "torch":
            return to_torch(tensor).clone()
        if node.get("kind") == "numpy":
            return to_numpy(tensor)
        return tensor
    raise ValueError(f"unexpected structure node {node!r}")


def save_state(obj: Any, path: str | os.PathLike[str]) -> None:
    """Write ``obj`` as one safetensors file: tensors as tensors, the nest as typed JSON metadata."""
    tensors: dict[str, ms.Tensor] = {}
    structure = json.dumps(_encode(obj, tensors, ""), separators=(",", ":"))
    keep_alive: list[np.ndarray] = []
    specs = {name: _tensor_spec(t, keep_alive) for name, t in tensors.items()}
    _serialize(specs, str(path), {"format": _FORMAT, _STRUCTURE_KEY: structure})


def load_state(path: str | os.PathLike[str]) -> Any:
    """Read a :func:`save_state` file; a damaged or foreign file is a ``ValueError`` naming it."""
    path = str(path)
    tensors, metadata = _read_safetensors(path, "MindSpore platform state file")
    if metadata.get("format") != _FORMAT or _STRUCTURE_KEY not in metadata:
        raise ValueError(
            f"{path}: not a MindSpore platform state file (format {metadata.get('format')!r}); "
            "pickled files are refused"
        )
    try:
        return _decode(json.loads(metadata[_STRUCTURE_KEY]), tensors)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{path}: damaged MindSpore platform state file ({type(exc).__name__}: {exc})"
        ) from exc


# --------------------------------------------------------------------------- safetensors
def save_safetensors(tensors: Mapping[str, Any], path: str | os.PathLike[str], metadata: Any = None) -> None:
    keep_alive: list[np.ndarray] = []
    specs = {key: _tensor_spec(to_mindspore(value), keep_alive) for key, value in tensors.items()}
    _serialize(specs, str(path), metadata)


def load_safetensors(path: str | os.PathLike[str]) -> dict[str, ms.Tensor]:
    return _read_safetensors(str(path), "safetensors file")[0]


# --------------------------------------------------------------------------- torch DCP bridge
def _map_tree(obj: Any, is_leaf: Callable[[Any], bool], convert: Callable[[Any], Any]) -> Any:
    """``obj`` with every leaf that ``is_leaf`` accepts converted, through dicts, lists and tuples."""
    if is_leaf(obj):
        return convert(obj)
    if isinstance(obj, Mapping):
        return {k: _map_tree(v, is_leaf, convert) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map_tree(v, is_leaf, convert) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_map_tree(v, is_leaf, convert) for v in obj)
    return obj


def _to_torch_tree(obj: Any) -> Any:
    return _map_tree(obj, lambda x: isinstance(x, ms.Tensor), to_torch)


def _to_ms_tree(obj: Any) -> Any:
    return _map_tree(obj, is_torch_tensor, to_mindspore)


def copy_into(target: ms.Tensor, value: Any) -> None:
    """Write ``value`` into ``target`` in place (same object afterwards), cast to its dtype."""
    source = to_mindspore(value)
    if tuple(source.shape) != tuple(target.shape):
        raise ValueError(f"shape {tuple(source.shape)} does not fit a tensor of shape {tuple(target.shape)}")
    if source.dtype != target.dtype:
        source = source.astype(target.dtype)
    if isinstance(target, ms.Parameter):
        # ops.assign keeps the Parameter bound to graphs compiled over it (an optimizer's);
        # set_data only for a parameter that has no data yet (built under no_init_parameters).
        if getattr(target, "has_init", False):
            target.set_data(ops.stop_gradient(source).copy())
        else:
            ops.assign(target, source)
    else:
        target.assign_value(ops.stop_gradient(source).copy())


def _copy_back(target: Any, loaded: Any) -> Any:
    """Loaded torch values into the caller's nest: tensors in place, other leaves replaced."""
    if isinstance(target, ms.Tensor):
        copy_into(target, loaded)
        return target
    if isinstance(target, dict):
        for key in target:
            target[key] = _copy_back(target[key], loaded[key])
        return target
    if isinstance(target, list):
        target[:] = [_copy_back(t, v) for t, v in zip(target, loaded, strict=True)]
        return target
    return loaded


def dcp_save(state_dict: Any, checkpoint_id: str) -> None:
    """torch ``dcp.save`` of the state dict with every MindSpore tensor as a torch CPU tensor."""
    import torch.distributed.checkpoint as dcp

    dcp.save(_to_torch_tree(state_dict), checkpoint_id=checkpoint_id)


def dcp_load(state_dict: Any, checkpoint_id: str, torch_platform: Any) -> None:
    """torch platform ``dcp_load`` (restricted reader) into torch buffers, then copied back in place."""
    staged = _to_torch_tree(state_dict)  # fresh buffers: DCP writes into these
    torch_platform.dcp_load(staged, checkpoint_id)
    _copy_back(state_dict, staged)


def dcp_full_state_dict(checkpoint_id: str, torch_platform: Any) -> dict[str, Any]:
    return _to_ms_tree(torch_platform.dcp_full_state_dict(checkpoint_id))
