"""Metamorphic relations for code both trainers share, where a legacy-vs-new pair cannot see a slip.

HF weight loading (``Qwen3_5StateDictAdapter.load_hf_state_dict``) is called by the legacy
``_load_hf_safetensors`` and by the new ``CheckpointManager``: a slip in it changes both sides the
same way and every tier A pair stays green. The relation: an HF folder written from a model with
MORE layers than the configured one (plus, optionally, keys the adapter drops: vision tower, MTP
head, an unrelated prefix) loads to exactly the state of the folder that holds only the model's
own layers. Both folders come from the seeded debug model; the extra layers are seeded tensors
of the same shapes. "legacy" is the load of the exact folder, "new" the load of the larger one.

Compared, bit for bit: the adapter's state dict (keys, dtype, shape, integer views) and the model
state after ``load_state_dict(strict=False)`` into a copy of the debug model, with the missing and
unexpected key lists.
"""

from __future__ import annotations

import copy
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from parity import canonical
from parity.cases import REGISTRY
from parity.parallel_layouts import layout_rows

__all__ = ["exact_folder_load", "larger_folder_load"]

_LAYER = re.compile(r"^model\.language_model\.layers\.(\d+)\.(.*)$")
# Keys outside the text model that the adapter must drop (vision tower, MTP head, another prefix).
_DROPPED_KEYS = ("model.visual.blocks.0.attn.qkv.weight", "mtp.fc.weight", "vision_tower.proj.weight")


def _model_and_hf_state() -> tuple[Any, dict[str, Any]]:
    from hyper_parallel.models.qwen3_5.state_dict import Qwen3_5StateDictAdapter
    from parity.legacy_driver import debug_model

    model = debug_model(0)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    hf = Qwen3_5StateDictAdapter().save_hf_state_dict(state, model.config)
    return model, {k: v.contiguous() for k, v in hf.items()}


def _larger(hf: dict[str, Any], num_layers: int, extra_layers: int, unknown_keys: bool) -> dict[str, Any]:
    """``hf`` plus layers ``num_layers .. num_layers + extra_layers - 1`` (seeded, shapes of layer
    ``i % num_layers``) and, with ``unknown_keys``, the keys the adapter drops."""
    import torch

    g = torch.Generator().manual_seed(1234)
    out = dict(hf)
    for extra in range(extra_layers):
        layer = num_layers + extra
        for key in sorted(hf):
            m = _LAYER.match(key)
            if m is not None and int(m.group(1)) == layer % num_layers:
                src = hf[key]
                noise = torch.randn(src.shape, generator=g).to(src.dtype)
                out[f"model.language_model.layers.{layer}.{m.group(2)}"] = noise
    if unknown_keys:
        for key in _DROPPED_KEYS:
            out[key] = torch.randn((4, 4), generator=g)
    return out


def _write(folder: Path, hf: dict[str, Any], sharded: bool) -> None:
    """One ``model.safetensors``, or two shards with a ``model.safetensors.index.json``."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    if not sharded:
        save_file(hf, str(folder / "model.safetensors"))
        return
    keys = sorted(hf)
    half = len(keys) // 2
    weight_map = {}
    for name, part in (
        ("model-00001-of-00002.safetensors", keys[:half]),
        ("model-00002-of-00002.safetensors", keys[half:]),
    ):
        save_file({k: hf[k] for k in part}, str(folder / name))
        weight_map.update(dict.fromkeys(part, name))
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map})
    )


def _load(model: Any, hf: dict[str, Any], sharded: bool) -> dict[str, Any]:
    from hyper_parallel.models.qwen3_5.state_dict import Qwen3_5StateDictAdapter

    with tempfile.TemporaryDirectory(prefix="parity-shared-hf-") as tmp:
        folder = Path(tmp) / "hf"
        _write(folder, hf, sharded)
        loaded = Qwen3_5StateDictAdapter().load_hf_state_dict(folder, model.config)
    target = copy.deepcopy(model)
    result = target.load_state_dict(loaded, strict=False)
    return {
        "adapter_state": canonical.checkpoint(loaded),
        "model_state": canonical.checkpoint(target.state_dict()),
        "missing": sorted(result.missing_keys),
        "unexpected": sorted(result.unexpected_keys),
    }


def exact_folder_load(*, extra_layers: int, unknown_keys: bool, sharded: bool) -> dict[str, Any]:
    """The load of a folder holding exactly the model's keys."""
    del extra_layers, unknown_keys
    model, hf = _model_and_hf_state()
    return _load(model, hf, sharded)


def larger_folder_load(*, extra_layers: int, unknown_keys: bool, sharded: bool) -> dict[str, Any]:
    """The load of a folder with ``extra_layers`` more layers (and dropped keys): must equal the exact load."""
    model, hf = _model_and_hf_state()
    return _load(model, _larger(hf, model.config.num_hidden_layers, extra_layers, unknown_keys), sharded)


REGISTRY.grid(
    "shared_hf_load_truncation_relation",
    params=[
        {"extra_layers": 1, "unknown_keys": False, "sharded": False},
        {"extra_layers": 2, "unknown_keys": True, "sharded": True},
    ],
    kind="checkpoint",
    tags=("checkpoint",),
    legacy=exact_folder_load,
    new=larger_folder_load,
)

# ParallelDims over every layout, world size and model shape, by both trainers' routes
# (``parity/parallel_layouts.py``): shared code, so a golden, not a pair.
REGISTRY.golden("parallel_layouts", kind="layouts", producer=layout_rows, tags=("parallel",))
