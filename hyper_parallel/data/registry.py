"""``data.type`` -> dataset builder registry used by the legacy trainer.

A builder takes the legacy trainer duck-typed (``trainer.args``, ``trainer.model``,
``trainer.state``, ``trainer.data_transform``) and returns a map-style ``Dataset``; it may update
``trainer.state.max_steps``. This module never imports the trainer package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.utils.data import Dataset

__all__ = ["SUPPORTED_DATA_TYPES", "DatasetBuilder", "register_dataset", "get_dataset_builder"]

DatasetBuilder = Callable[[Any], Dataset]

# The built-in types, in the order the error message lists them.
SUPPORTED_DATA_TYPES: tuple[str, ...] = ("dummy", "hf_datasets", "json_file", "preset_pt")

_BUILDERS: dict[str, DatasetBuilder] = {}


def register_dataset(data_type: str, builder: DatasetBuilder) -> None:
    """Register ``builder`` for ``data_type``; registering a type twice is a ``ValueError``."""
    if data_type in _BUILDERS:
        raise ValueError(f"data.type '{data_type}' is already registered")
    _BUILDERS[data_type] = builder


def get_dataset_builder(data_type: str) -> DatasetBuilder:
    """Return the builder for ``data_type``; an unknown type is a ``ValueError``."""
    try:
        return _BUILDERS[data_type]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown data.type '{data_type}'. Supported: {', '.join(SUPPORTED_DATA_TYPES)}"
        ) from None


def _register_builtins() -> None:
    # Imported here, not at the top, so the builder modules never need to import the registry.
    from hyper_parallel.data.dummy import build_dummy_dataset
    from hyper_parallel.data.hf import build_hf_dataset
    from hyper_parallel.data.preset_pt import build_preset_dataset

    register_dataset("dummy", build_dummy_dataset)
    register_dataset("hf_datasets", build_hf_dataset)
    register_dataset("json_file", build_hf_dataset)
    register_dataset("preset_pt", build_preset_dataset)


_register_builtins()
