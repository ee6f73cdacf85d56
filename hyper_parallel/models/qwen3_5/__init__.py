"""Qwen3.5-style debug LM; importing this package registers the ``"qwen3_5"`` ModelSpec."""

import dataclasses
from typing import Any

from hyper_parallel.models.qwen3_5.config import FLAVORS, Qwen3_5Config, config_from_args
from hyper_parallel.models.qwen3_5.model import Qwen3_5ForCausalLM, build_from_config
from hyper_parallel.models.qwen3_5.parallelize import parallelize_qwen3_5
from hyper_parallel.models.qwen3_5.state_dict import Qwen3_5StateDictAdapter
from hyper_parallel.models.spec import ModelSpec, get_spec, list_specs, register_spec

__all__ = [
    "FLAVORS",
    "MODEL_NAME",
    "Qwen3_5Config",
    "Qwen3_5ForCausalLM",
    "Qwen3_5StateDictAdapter",
    "build_qwen3_5",
    "config_from_args",
    "new_path_spec",
    "parallelize_qwen3_5",
]

MODEL_NAME = "qwen3_5"


def build_qwen3_5(args: Any) -> Qwen3_5ForCausalLM:
    """Build the model from legacy ``args`` (flavour -> universal fields -> config_overrides)."""
    return build_from_config(config_from_args(args))


def new_path_spec(flavor: str, config: Qwen3_5Config) -> ModelSpec:
    """The registered spec as ``HyperTrainer`` takes it: the flavour, its model Config and the
    new-path parallelize_fn (whose plan follows the process platform). The recipe and the legacy
    mapping both assemble their spec here."""
    from hyper_parallel.models.qwen3_5.parallelize import new_path_parallelize_fn

    return dataclasses.replace(
        get_spec(MODEL_NAME), flavor=flavor, model=config, parallelize_fn=new_path_parallelize_fn()
    )


def _register() -> None:
    """Register once; a re-executed module (importlib.reload) finds its own earlier entry and skips."""
    if MODEL_NAME in list_specs():
        existing = get_spec(MODEL_NAME).build_model_fn
        if getattr(existing, "__module__", None) == build_qwen3_5.__module__:
            return
    register_spec(
        MODEL_NAME,
        ModelSpec(
            name=MODEL_NAME,
            build_model_fn=build_qwen3_5,
            parallelize_fn=parallelize_qwen3_5,
            state_dict_adapter=Qwen3_5StateDictAdapter,
        ),
    )


_register()
