"""``parallelize_qwen3_5_mindspore_from_configs``: the new-path plan on MindSpore (one process).

MindSpore has no FSDP2 counterpart wired into this project yet, so the MindSpore plan is "train
the model as built": world size 1, fp32, no tensor/context/pipeline/expert parallelism, no
compile. Activation checkpointing maps onto ``Cell.recompute()`` per decoder layer (torch's plan
too wraps whole layers whatever the mode; the gradients were measured bit-identical on the debug
flavour). Every setting it cannot honour is refused
with a one-line ``ValueError`` that names the field, instead of being silently ignored.

No torch and no mindspore import here: the function only reads the configs and flags Cells.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["parallelize_qwen3_5_mindspore_from_configs"]

_DEGREES = (
    ("tensor_parallel_degree", "tensor parallelism"),
    ("context_parallel_degree", "context parallelism"),
    ("pipeline_parallel_degree", "pipeline parallelism"),
    ("expert_parallel_degree", "expert parallelism"),
)


def _refuse(field: str, value: Any, expected: str, why: str) -> NoReturn:
    raise ValueError(
        f"{field}={value!r} is not supported for qwen3_5 on MindSpore ({why}); expected {expected}"
    )


def parallelize_qwen3_5_mindspore_from_configs(
    model: Any,
    parallel_dims: Any,
    *,
    training: Any,
    parallelism: Any,
    activation_checkpoint: Any,
    compile: Any = None,  # the RFC's keyword name
    dump_folder: str | None = None,
    freeze_modules: list[str] | None = None,
) -> Any:
    """Check the settings against what MindSpore runs, apply per-layer recompute if asked, return ``model``.

    Same signature as the torch ``parallelize_qwen3_5_from_configs``. ``freeze_modules`` needs no
    work here: the trainer has already set ``requires_grad = False`` and the platform's backward
    differentiates only the trainable parameters.
    """
    world_size = getattr(parallel_dims, "world_size", 1) or 1
    if world_size > 1:
        _refuse("world_size", world_size, "1", "no FSDP/data parallelism on MindSpore yet")
    for name, what in _DEGREES:
        value = getattr(parallelism, name, 1)
        if value is not None and value > 1:
            _refuse(f"parallelism.{name}", value, "1", f"{what} is not implemented")
    if getattr(training, "enable_mixed_precision", False):
        _refuse(
            "training.enable_mixed_precision",
            True,
            "False",
            "the MindSpore model trains in float32 only (no FSDP2 MixedPrecisionPolicy)",
        )
    if compile is not None and getattr(compile, "enable", False):
        _refuse("compile.enable", True, "False", "graph compilation is not wired")

    # As on torch, any mode but "none" is whole-layer checkpointing ("selective" included).
    if getattr(activation_checkpoint, "mode", "none") not in ("none", None):
        for layer in model.layers:
            layer.recompute()
    return model
