"""Find a model's ``ModelSpec`` by importing the package that registers it."""

from __future__ import annotations

import importlib
import pkgutil

from hyper_parallel.models.spec import ModelSpec, get_spec, list_specs

__all__ = ["builtin_model_packages", "discover_model_spec"]

_MODELS_PACKAGE = "hyper_parallel.models"
_NOT_MODELS = ("spec", "modules")


def builtin_model_packages() -> list[str]:
    """Sub-packages of ``hyper_parallel.models`` that hold models (``spec``/``modules`` excluded)."""
    package = importlib.import_module(_MODELS_PACKAGE)
    return sorted(
        info.name
        for info in pkgutil.iter_modules(package.__path__)
        if info.ispkg and info.name not in _NOT_MODELS
    )


def discover_model_spec(name: str) -> ModelSpec:
    """Import the module for ``model.name`` (registering its spec) and return that spec.

    A dotted ``name`` is imported as a module path; a bare one as ``hyper_parallel.models.<name>``.
    The imported module must register a spec under exactly ``name``.
    """
    module_path = name if "." in name else f"{_MODELS_PACKAGE}.{name}"
    try:
        importlib.import_module(module_path)
    except ImportError as exc:
        raise ImportError(
            f"model.name={name!r}: cannot import {module_path!r} ({exc}); "
            f"built-in models: {builtin_model_packages()}"
        ) from exc
    if name not in list_specs():
        raise KeyError(
            f"model.name={name!r}: importing {module_path!r} did not register a ModelSpec named {name!r}; "
            f"registered names: {list_specs()}"
        )
    return get_spec(name)
