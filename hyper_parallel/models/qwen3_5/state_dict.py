"""HF Qwen3.5 checkpoint <-> our state dict.

Our keys are ``model.X`` / ``lm_head.weight``; HF nests the text model under
``model.language_model.X``. Norm weights use the same zero-centred convention on both sides.

The values may be torch tensors or another platform's (MindSpore) tensors: torch values take the
torch calls below unchanged; other values are read, copied and cast through ``get_platform()``
and the tensor's own ``.to(dtype)``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import torch
from safetensors import safe_open

from hyper_parallel.platform import get_platform

__all__ = ["HF_PREFIX", "Qwen3_5StateDictAdapter"]

T = TypeVar("T")

HF_PREFIX = "model.language_model."
_OUR_PREFIX = "model."
_DROPPED_PREFIXES = ("model.visual.", "model.mtp.", "mtp.")
_LAYER_KEY = re.compile(r"^model\.layers\.(\d+)\.")
_INDEX_FILE = "model.safetensors.index.json"
_SINGLE_FILE = "model.safetensors"

_DTYPE_NAMES = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "float32": "float32",
    "fp32": "float32",
}


def _our_key(hf_key: str) -> str | None:
    """Map an HF key to ours, or None when the key is not part of the text model."""
    if hf_key.startswith(_DROPPED_PREFIXES):
        return None
    if hf_key == "lm_head.weight":
        return hf_key
    if hf_key.startswith(HF_PREFIX):
        return _OUR_PREFIX + hf_key[len(HF_PREFIX) :]
    if hf_key.startswith(_OUR_PREFIX):  # (ours) plain text-model checkpoints
        return hf_key
    return None


def _keys_by_file(folder: Path) -> dict[Path, list[str]]:
    """Shard file -> its keys, from the index's weight_map or the single ``model.safetensors``."""
    index = folder / _INDEX_FILE
    if index.is_file():
        weight_map = json.loads(index.read_text())["weight_map"]
        by_file: dict[Path, list[str]] = {}
        for key, filename in weight_map.items():
            by_file.setdefault(folder / filename, []).append(key)
        return by_file
    single = folder / _SINGLE_FILE
    if single.is_file():
        with safe_open(str(single), framework="pt", device="cpu") as f:
            return {single: list(f.keys())}
    raise FileNotFoundError(f"{folder}: expected {_INDEX_FILE} or {_SINGLE_FILE}")


def _read_tensors(path: Path, wanted: dict[str, str], dtype: Any) -> dict[str, Any]:
    """Our key -> tensor (cast to ``dtype`` when given) for the ``wanted`` HF keys of one file.

    torch reads only those keys; another platform reads the file with its ``load_safetensors``.
    """
    platform = get_platform()
    out: dict[str, Any] = {}
    if platform.name == "torch":
        with safe_open(str(path), framework="pt", device="cpu") as f:
            for hf_key, key in wanted.items():
                tensor = f.get_tensor(hf_key)
                out[key] = tensor.to(dtype) if dtype is not None else tensor
        return out
    tensors = platform.load_safetensors(path)
    for hf_key, key in wanted.items():
        out[key] = tensors[hf_key].to(dtype) if dtype is not None else tensors[hf_key]
    return out


def _copy(tensor: Any) -> Any:
    """An independent copy: ``clone()`` for torch, the platform's ``detached_copy`` otherwise."""
    return tensor.clone() if isinstance(tensor, torch.Tensor) else get_platform().detached_copy(tensor)


def _dtype_name(dtype: torch.dtype | str) -> str:
    if isinstance(dtype, torch.dtype):
        return str(dtype).removeprefix("torch.")
    if dtype in _DTYPE_NAMES:
        return _DTYPE_NAMES[dtype]
    raise ValueError(
        f"dtype={dtype!r} is not supported for HF export; expected a torch dtype or {list(_DTYPE_NAMES)}"
    )


class Qwen3_5StateDictAdapter:
    """Implements the ``StateDictAdapter`` protocol of ``hyper_parallel.models.spec``."""

    def load_hf_state_dict(
        self, weights_path: str | os.PathLike[str], model_config: Any, dtype: torch.dtype | None = None
    ) -> dict[str, torch.Tensor]:
        """Read an HF folder into our key space (visual/MTP dropped, layers truncated, tied head cloned)."""
        folder = Path(weights_path)
        num_layers = model_config.num_hidden_layers
        state_dict: dict[str, torch.Tensor] = {}
        for path, keys in _keys_by_file(folder).items():
            wanted = {}
            for hf_key in keys:
                key = _our_key(hf_key)
                if key is None:
                    continue
                layer = _LAYER_KEY.match(key)
                if layer is not None and int(layer.group(1)) >= num_layers:
                    continue  # truncated model
                wanted[hf_key] = key
            if not wanted:
                continue
            state_dict.update(_read_tensors(path, wanted, dtype))
        if "lm_head.weight" not in state_dict and "model.embed_tokens.weight" in state_dict:
            state_dict["lm_head.weight"] = _copy(state_dict["model.embed_tokens.weight"])
        return state_dict

    def map_hf_entries(self, entries: Mapping[str, T]) -> dict[str, T]:
        """HF key -> value, in our key space, as :meth:`load_hf_state_dict` would key it but with no
        layer dropped: the trainers describe an HF folder with it (its safetensors headers) and
        check it against the model BEFORE loading, so that extra layers are named, not truncated
        silently. Visual/MTP keys are dropped (not the text model); an absent ``lm_head.weight``
        repeats the embedding's entry (the tied head is cloned from it)."""
        out: dict[str, T] = {}
        for hf_key, value in entries.items():
            key = _our_key(hf_key)
            if key is not None:
                out[key] = value
        if "lm_head.weight" not in out and "model.embed_tokens.weight" in out:
            out["lm_head.weight"] = out["model.embed_tokens.weight"]
        return out

    def save_hf_state_dict(self, state_dict: dict[str, Any], model_config: Any) -> dict[str, Any]:
        """Our keys -> HF keys; tensors that share storage (the tied head) become independent copies."""
        hf_state_dict: dict[str, Any] = {}
        seen_storage: set[tuple[str, int]] = set()
        seen_objects: set[int] = set()  # non-torch tensors: a tied weight is one object twice
        for key, value in state_dict.items():
            hf_key = HF_PREFIX + key[len(_OUR_PREFIX) :] if key.startswith(_OUR_PREFIX) else key
            if _is_plain_tensor(value):
                storage = (str(value.device), value.untyped_storage().data_ptr())
                if storage in seen_storage:
                    value = value.clone()
                seen_storage.add(storage)
            elif not isinstance(value, torch.Tensor):
                if id(value) in seen_objects:
                    value = get_platform().detached_copy(value)
                seen_objects.add(id(value))
            hf_state_dict[hf_key] = value
        return hf_state_dict

    def export_hf_config(self, model_config: Any, dtype: torch.dtype | str) -> dict[str, Any]:
        """A ``Qwen3_5TextConfig``-compatible ``config.json`` dict (HF Qwen3.5 always gates attention)."""
        c = model_config
        if not c.attn_output_gate:
            raise ValueError(
                "attn_output_gate=False cannot be exported: HF Qwen3.5 always gates attention; expected True"
            )
        return {
            "architectures": ["Qwen3_5ForCausalLM"],
            "model_type": "qwen3_5_text",
            "vocab_size": c.vocab_size,
            "hidden_size": c.hidden_size,
            "intermediate_size": c.intermediate_size,
            "num_hidden_layers": c.num_hidden_layers,
            "num_attention_heads": c.num_attention_heads,
            "num_key_value_heads": c.num_key_value_heads,
            "head_dim": c.head_dim,
            "max_position_embeddings": c.max_position_embeddings,
            "rms_norm_eps": c.rms_norm_eps,
            "attention_bias": c.attention_bias,
            "attention_dropout": 0.0,
            "hidden_act": c.hidden_act,
            "tie_word_embeddings": c.tie_word_embeddings,
            "layer_types": list(c.layer_types),
            "full_attention_interval": c.full_attention_interval,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": c.rope_theta,
                "partial_rotary_factor": c.partial_rotary_factor,
                "mrope_section": list(c.mrope_section),
            },
            "linear_num_value_heads": c.linear_num_value_heads,
            "linear_num_key_heads": c.linear_num_key_heads,
            "linear_value_head_dim": c.linear_value_head_dim,
            "linear_key_head_dim": c.linear_key_head_dim,
            "linear_conv_kernel_dim": c.linear_conv_kernel_dim,
            "dtype": _dtype_name(dtype),
            "bos_token_id": None,
            "eos_token_id": None,
            "pad_token_id": None,
            "use_cache": True,
            "initializer_range": 0.02,
        }


def _is_plain_tensor(value: Any) -> bool:
    """A materialised local tensor whose storage can be compared (not a DTensor, not meta)."""
    if not isinstance(value, torch.Tensor) or value.device.type == "meta":
        return False
    from torch.distributed.tensor import DTensor

    return not isinstance(value, DTensor)
