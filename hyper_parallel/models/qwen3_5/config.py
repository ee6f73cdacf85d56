"""``Qwen3_5Config``, its flavours, and the legacy-args merge that builds one."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from hyper_parallel.models.qwen3_5.constants import LAYER_TYPES, LINEAR_ATTENTION_NOT_IMPLEMENTED

__all__ = [
    "FLAVORS",
    "LAYER_TYPES",
    "LINEAR_ATTENTION_NOT_IMPLEMENTED",
    "MAX_HIDDEN_LAYERS",
    "UNIVERSAL_MODEL_FIELDS",
    "Qwen3_5Config",
    "config_from_args",
    "on_mindspore",
]


# The fields that size the model: each must be a positive int.
_SIZE_FIELDS = (
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "max_position_embeddings",
    "full_attention_interval",
    "linear_num_value_heads",
    "linear_num_key_heads",
    "linear_value_head_dim",
    "linear_key_head_dim",
    "linear_conv_kernel_dim",
)
# Far above the layer counts of released decoders (about a hundred at most); below it the per-layer
# list that __post_init__ builds is small, above it a typo (an extra digit or ten) would fill memory.
MAX_HIDDEN_LAYERS = 4096


@dataclass
class Qwen3_5Config:
    """Text-model hyperparameters; the defaults are Qwen3.5-0.8B-Base."""

    vocab_size: int = 248320
    hidden_size: int = 1024
    intermediate_size: int = 3584
    num_hidden_layers: int = 24
    num_attention_heads: int = 8
    num_key_value_heads: int = 2
    head_dim: int = 256
    max_position_embeddings: int = 262144
    rms_norm_eps: float = 1e-6
    attention_bias: bool = False
    tie_word_embeddings: bool = True
    attn_output_gate: bool = True
    rope_theta: float = 1e7
    partial_rotary_factor: float = 0.25
    mrope_section: list[int] = field(default_factory=lambda: [11, 11, 10])
    full_attention_interval: int = 4
    linear_num_value_heads: int = 16
    linear_num_key_heads: int = 16
    linear_value_head_dim: int = 128
    linear_key_head_dim: int = 128
    linear_conv_kernel_dim: int = 4
    hidden_act: str = "silu"
    layer_types: list[str] | None = None

    def update_from_config(self, *, trainer_config: Any) -> None:
        """Check this model config against the trainer's runtime settings (new path, step 4).

        Nothing numeric changes here: the legacy path never resizes the model from the data, so
        neither does the new one. Degrees that the heads cannot be split by are rejected early.
        """
        parallelism = getattr(trainer_config, "parallelism", None)
        tp = getattr(parallelism, "tensor_parallel_degree", 1) or 1
        for name in ("num_attention_heads", "num_key_value_heads"):
            if tp > 1 and getattr(self, name) % tp != 0:
                raise ValueError(
                    f"model.{name}={getattr(self, name)} is not divisible by tensor_parallel_degree={tp}"
                )

    def build(self) -> Any:
        """The model for this config, for the process platform (torch ``nn.Module`` or MindSpore ``Cell``).

        Built on the current default device; use the platform's meta device context. The MindSpore
        model is imported only on MindSpore, so a torch-only environment never imports mindspore.
        """
        if on_mindspore():
            from hyper_parallel.models.qwen3_5.model_mindspore import build_from_config as build_ms

            return build_ms(self)
        from hyper_parallel.models.qwen3_5.model import build_from_config

        return build_from_config(self)

    def __post_init__(self) -> None:
        self._check_sizes()  # before anything is built per layer: 10**12 layers would fill memory
        if self.layer_types is None:
            self.layer_types = [
                "full_attention" if (i + 1) % self.full_attention_interval == 0 else "linear_attention"
                for i in range(self.num_hidden_layers)
            ]
        self.layer_types = list(self.layer_types)
        self.mrope_section = list(self.mrope_section)
        self._validate()

    def _check_sizes(self) -> None:
        """Every size is a positive int, and the layer count is one a model can have."""
        for name in _SIZE_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"model.{name}={value!r}; expected a positive integer")
        if self.num_hidden_layers > MAX_HIDDEN_LAYERS:
            raise ValueError(
                f"model.num_hidden_layers={self.num_hidden_layers}; expected at most {MAX_HIDDEN_LAYERS}"
            )

    def _validate(self) -> None:
        layer_types = cast(list[str], self.layer_types)  # a list once __post_init__ has run
        if len(layer_types) != self.num_hidden_layers:
            raise ValueError(
                f"layer_types has {len(layer_types)} entries; expected num_hidden_layers="
                f"{self.num_hidden_layers}"
            )
        for i, kind in enumerate(layer_types):
            if kind not in LAYER_TYPES:
                raise ValueError(f"layer_types[{i}]={kind!r}; expected one of {list(LAYER_TYPES)}")
        if self.num_key_value_heads < 1 or self.num_attention_heads % self.num_key_value_heads != 0:
            raise ValueError(
                f"num_attention_heads={self.num_attention_heads} must be a multiple of "
                f"num_key_value_heads={self.num_key_value_heads}"
            )
        rotary = self.rotary_dim
        if rotary % 2 != 0:
            raise ValueError(
                f"rotary dim int(head_dim * partial_rotary_factor) = int({self.head_dim} * "
                f"{self.partial_rotary_factor}) = {rotary} must be even"
            )
        if 2 * sum(self.mrope_section) != rotary:
            raise ValueError(
                f"mrope_section={self.mrope_section}: 2 * sum = {2 * sum(self.mrope_section)}; expected the "
                f"rotary dim int(head_dim * partial_rotary_factor) = {rotary}"
            )

    @property
    def rotary_dim(self) -> int:
        """R: channels of each head that RoPE rotates."""
        return int(self.head_dim * self.partial_rotary_factor)


def on_mindspore() -> bool:
    """Whether the process platform is MindSpore: the one switch of the new path's build and plan.

    ``Qwen3_5Config.build`` and the recipe's ``parallelize_fn`` both ask this, so a MindSpore run
    gets the MindSpore model and its plan together.
    """
    from hyper_parallel.platform import get_platform

    return get_platform().name == "mindspore"


FLAVORS: dict[str, dict[str, Any]] = {
    # Tiny CPU preset: every layer is full attention (GatedDeltaNet is not implemented).
    "debug": {
        "vocab_size": 2048,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "max_position_embeddings": 2048,
        "mrope_section": [2, 1, 1],
        "full_attention_interval": 1,
    },
}

# ModelConfig fields that override the preset when not None (legacy "universal" overrides).
UNIVERSAL_MODEL_FIELDS = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
    "max_position_embeddings",
)


def config_from_args(args: Any) -> Qwen3_5Config:
    """Merge, later wins: flavour preset -> non-None universal ``args.model`` fields -> config_overrides."""
    model_args = getattr(args, "model", None)
    if model_args is None:
        raise ValueError("args.model is missing; expected the legacy model config section")

    values: dict[str, Any] = {}
    flavor = getattr(model_args, "flavor", None)
    if flavor is not None:
        if flavor not in FLAVORS:
            raise ValueError(f"model.flavor={flavor!r} is unknown; expected one of {sorted(FLAVORS)}")
        values.update(FLAVORS[flavor])

    for name in UNIVERSAL_MODEL_FIELDS:
        value = getattr(model_args, name, None)
        if value is not None:
            values[name] = value

    overrides = getattr(model_args, "config_overrides", None)
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise ValueError(
                f"model.config_overrides must be a mapping of Qwen3_5Config fields, got {type(overrides).__name__}"
            )
        valid = [f.name for f in dataclasses.fields(Qwen3_5Config)]
        for key in overrides:
            if key not in valid:
                raise ValueError(
                    f"model.config_overrides.{key} is not a Qwen3_5Config field; valid fields: {valid}"
                )
        values.update(overrides)

    return Qwen3_5Config(**values)
