"""Names the config and both model implementations share; a leaf, so none imports another for them."""

from __future__ import annotations

__all__ = ["LAYER_TYPES", "LINEAR_ATTENTION_NOT_IMPLEMENTED"]

LAYER_TYPES = ("full_attention", "linear_attention")

LINEAR_ATTENTION_NOT_IMPLEMENTED = (
    "GatedDeltaNet linear attention is not implemented; "
    "use flavor debug or config_overrides.full_attention_interval: 1"
)
