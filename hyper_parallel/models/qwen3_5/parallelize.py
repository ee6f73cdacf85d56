"""``parallelize_qwen3_5``: frozen-param downcast, per-layer activation checkpointing, FSDP2."""

from __future__ import annotations

import warnings
from typing import Any, cast

import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard, register_fsdp_forward_method

from hyper_parallel.platform.torch_platform import TRAINING_DTYPES

__all__ = [
    "AC_OFF_VALUES",
    "MP_DTYPES",
    "new_path_parallelize_fn",
    "parallelize_qwen3_5",
    "parallelize_qwen3_5_from_configs",
    "resolve_mp_dtype",
]

# ``activation_checkpoint`` values that mean "off" (YAML bare ``off`` parses as False).
AC_OFF_VALUES = ("off", "none", None, False, "")

# Mixed-precision dtype strings: the platform's one map of training dtypes.
MP_DTYPES = TRAINING_DTYPES

_UNSUPPORTED_DEGREES = (
    ("tp", "tensor parallelism"),
    ("ep", "expert parallelism"),
    ("cp", "context parallelism"),
)


_MISSING = object()


def _get(obj: Any, path: str, default: Any) -> Any:
    """``getattr`` along a dotted path; ``default`` when a link is missing (SimpleNamespace args).

    An explicit None on the last link is returned as None.
    """
    *parents, leaf = path.split(".")
    for name in parents:
        obj = getattr(obj, name, None)
        if obj is None:
            return default
    value = getattr(obj, leaf, _MISSING)
    return default if value is _MISSING else value


def resolve_mp_dtype(value: Any, field: str) -> torch.dtype | None:
    """Map a ``train.mixed_precision`` dtype string to a torch dtype; None stays None."""
    if value is None or isinstance(value, torch.dtype):
        return value
    if isinstance(value, str) and value in MP_DTYPES:
        return MP_DTYPES[value]
    raise ValueError(
        f"train.mixed_precision.{field}={value!r} is not supported; expected one of {list(MP_DTYPES)}"
    )


def _submesh(mesh: DeviceMesh, names: str | tuple[str, ...]) -> DeviceMesh | None:
    """``mesh[names]`` or None when the mesh has no such (possibly flattened) dim."""
    with warnings.catch_warnings():
        # Slicing a flattened alias from the root mesh warns in recent torch; the trainer registers them there.
        warnings.filterwarnings("ignore", message="Slicing a flattened dim", category=UserWarning)
        try:
            return mesh[names]
        except (KeyError, RuntimeError):
            return None


def _fsdp_mesh(mesh: DeviceMesh | None) -> DeviceMesh | None:
    """HSDP 2-D ``(dp_replicate, dp_shard)`` when both exist, else ``fsdp``, else ``dp``, else the mesh."""
    if mesh is None:
        return None
    names = mesh.mesh_dim_names or ()
    if "dp_replicate" in names and "dp_shard" in names:
        return mesh["dp_replicate", "dp_shard"]
    for alias in ("fsdp", "dp"):
        sub = _submesh(mesh, alias)
        if sub is not None:
            return sub
    return mesh


def _downcast_frozen(model: nn.Module, patterns: list[str], dtype: torch.dtype) -> None:
    """Frozen params matching a freeze pattern take ``param_dtype`` before sharding (no grads, no MP cast)."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if not param.requires_grad and any(p in name for p in patterns):
                param.data = param.data.to(dtype)


def parallelize_qwen3_5(model: nn.Module, mesh: DeviceMesh | None, args: Any) -> nn.Module:
    """Apply AC and FSDP2 to ``model`` in place and return it, as the legacy trainer does.

    FSDP2 is applied even at dp size 1 so every layout takes the same reduction path.
    """
    for degree, what in _UNSUPPORTED_DEGREES:
        value = _get(args, f"train.accelerator.{degree}", 1)
        if value is not None and value > 1:
            raise NotImplementedError(
                f"train.accelerator.{degree}={value}: {what} is not implemented for qwen3_5; expected 1"
            )

    mp_policy = None
    if _get(args, "train.mixed_precision.enabled", False):
        dtypes: dict[str, Any] = {
            field: resolve_mp_dtype(_get(args, f"train.mixed_precision.{field}", default), field)
            for field, default in (
                ("param_dtype", "bfloat16"),
                ("reduce_dtype", "float32"),
                ("output_dtype", None),
            )
        }
        mp_policy = MixedPrecisionPolicy(**dtypes)
        freeze_modules = _get(args, "model.freeze_modules", None)
        if freeze_modules and mp_policy.param_dtype in (torch.bfloat16, torch.float16):
            _downcast_frozen(model, list(freeze_modules), mp_policy.param_dtype)

    layers = cast(nn.ModuleList, model.layers)  # the decoder blocks (nn.Module types attributes loosely)
    ac_mode = _get(args, "train.gradient_checkpointing.activation_checkpoint", "off")
    if ac_mode not in AC_OFF_VALUES:
        # The mode string is otherwise ignored: always full per-layer AC.
        for i in range(len(layers)):
            layers[i] = checkpoint_wrapper(layers[i], checkpoint_impl=CheckpointImpl.NO_REENTRANT)

    kwargs: dict[str, Any] = {
        "mesh": _fsdp_mesh(mesh),
        "reshard_after_forward": _get(args, "train.accelerator.reshard_after_forward", True),
    }
    # The output dtype applies to the root's output (the logits) only: cast at every block, it
    # would feed fp32 activations into the next block's bf16 weights (a dtype error in matmul).
    layer_kwargs = dict(kwargs)
    if mp_policy is not None:
        kwargs["mp_policy"] = mp_policy
        layer_kwargs["mp_policy"] = MixedPrecisionPolicy(
            param_dtype=mp_policy.param_dtype, reduce_dtype=mp_policy.reduce_dtype
        )
    for layer in layers:
        fully_shard(layer, **layer_kwargs)
    fully_shard(model, **kwargs)
    # Calling forward_logits directly must also gather the root parameters (embed, norm, lm_head).
    register_fsdp_forward_method(model, "forward_logits")
    return model


def parallelize_qwen3_5_from_configs(
    model: nn.Module,
    parallel_dims: Any,
    *,
    training: Any,
    parallelism: Any,
    activation_checkpoint: Any,
    compile: Any = None,  # the RFC's keyword name
    dump_folder: str | None = None,
    freeze_modules: list[str] | None = None,
) -> nn.Module:
    """The new-path entry (RFC Part 5, step 7): the same plan as :func:`parallelize_qwen3_5`.

    It only renames the new Config fields into the view the shared plan reads, so both paths
    shard, checkpoint and cast identically. ``compile`` is accepted and must be off (torch.compile
    is not part of the parity contract yet).
    """
    from types import SimpleNamespace

    if compile is not None and getattr(compile, "enable", False):
        raise NotImplementedError("compile.enable=True is not supported for qwen3_5 yet; expected False")
    mode = getattr(activation_checkpoint, "mode", "none")
    args = SimpleNamespace(
        model=SimpleNamespace(freeze_modules=freeze_modules),
        train=SimpleNamespace(
            accelerator=SimpleNamespace(
                tp=parallelism.tensor_parallel_degree,
                ep=parallelism.expert_parallel_degree,
                cp=parallelism.context_parallel_degree,
                reshard_after_forward=parallelism.reshard_after_forward,
            ),
            mixed_precision=SimpleNamespace(
                enabled=training.enable_mixed_precision,
                param_dtype=training.mixed_precision_param,
                reduce_dtype=training.mixed_precision_reduce,
                output_dtype=training.mixed_precision_output,
            ),
            gradient_checkpointing=SimpleNamespace(activation_checkpoint="off" if mode == "none" else mode),
        ),
    )
    return parallelize_qwen3_5(model, parallel_dims.mesh, args)


def new_path_parallelize_fn() -> Any:
    """The new path's plan for the process platform: FSDP2/AC here on torch, the world-size-1 plan on
    MindSpore; the recipes and the legacy-YAML mapping both take it from here (as ``Qwen3_5Config.build``
    follows the platform), so a run gets its framework's model and plan together."""
    from hyper_parallel.models.qwen3_5.config import on_mindspore

    if on_mindspore():
        from hyper_parallel.models.qwen3_5.parallelize_mindspore import (
            parallelize_qwen3_5_mindspore_from_configs,
        )

        return parallelize_qwen3_5_mindspore_from_configs
    return parallelize_qwen3_5_from_configs
