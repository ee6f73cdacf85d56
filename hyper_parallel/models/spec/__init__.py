"""Model registry: ``ModelSpec`` records keyed by name, plus the HF state-dict adapter protocol.

``ModelSpec`` itself lives in :mod:`hyper_parallel.protocols.model_spec`; it is re-exported here so
that model packages and the legacy trainer share one class. Registration happens as a side effect of
importing a model package (see :func:`hyper_parallel.trainer.utils.discovery.discover_model_spec`);
:func:`get_spec` never imports anything.
"""

from __future__ import annotations

import os
from typing import Any, Protocol, runtime_checkable

from hyper_parallel.protocols.model_spec import ModelSpec

__all__ = ["ModelSpec", "StateDictAdapter", "get_spec", "list_specs", "register_spec"]

_REGISTRY: dict[str, ModelSpec] = {}


def register_spec(name: str, spec: ModelSpec) -> None:
    """Register ``spec`` under ``name``; a second registration of the same name is a ``ValueError``."""
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"register_spec({name!r}, ...): expected a ModelSpec, got {type(spec).__name__}")
    if name in _REGISTRY:
        raise ValueError(f"ModelSpec {name!r} is already registered; registered names: {list_specs()}")
    _REGISTRY[name] = spec


def get_spec(name: str) -> ModelSpec:
    """Return the spec registered under ``name``; ``KeyError`` lists the registered names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"No ModelSpec registered under {name!r}; registered names: {list_specs()}") from None


def list_specs() -> list[str]:
    """Registered names, sorted."""
    return sorted(_REGISTRY)


@runtime_checkable
class StateDictAdapter(Protocol):
    """Converts between our parameter names and a HuggingFace checkpoint folder.

    ``export_hf_config`` and ``map_hf_entries`` are ours: the first writes a ``config.json`` that
    transformers can load, the second keys an HF folder's header entries (shape, dtype) as ours,
    for the fit check that runs before any tensor is read.
    """

    def load_hf_state_dict(
        self, weights_path: str | os.PathLike[str], model_config: Any, dtype: Any = None
    ) -> dict[str, Any]: ...

    def map_hf_entries(self, entries: Any) -> dict[str, Any]:
        """HF key -> value (any) in our key space, keeping every layer: what the trainers check
        against the model before :meth:`load_hf_state_dict` reads (and casts) anything."""
        ...

    def save_hf_state_dict(self, state_dict: dict[str, Any], model_config: Any) -> dict[str, Any]: ...

    def export_hf_config(self, model_config: Any, dtype: Any) -> dict[str, Any]: ...
