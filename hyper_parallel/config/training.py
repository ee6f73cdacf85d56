"""TrainingConfig: the training loop's sizes, seed, clipping, init device and mixed precision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from hyper_parallel.config._checks import (
    check_bool,
    check_choice,
    check_int,
    check_positive_float,
)
from hyper_parallel.protocols.configurable import ConfigMixin

__all__ = ["DTYPE_NAMES", "INIT_DEVICES", "DTypeName", "TrainingConfig"]

# The dtype spellings the legacy trainer accepts for mixed precision (a string, not a framework
# dtype, so that the CLI can parse it and both backends can map it).
DTypeName = Literal["bfloat16", "bf16", "float16", "fp16", "float32", "fp32"]
DTYPE_NAMES: tuple[str, ...] = get_args(DTypeName)

# Where a model may be built: the meta device (then materialised), or one of the device types a
# platform runs on (``Platform.device_type()``). A device index is not a choice: each rank builds on
# its own local device (``LOCAL_RANK``). The legacy ``train.init_device`` takes the same values.
INIT_DEVICES: tuple[str, ...] = ("meta", "cpu", "cuda", "npu")


@dataclass(kw_only=True, slots=True)
class TrainingConfig(ConfigMixin):
    """Loop sizes and numerics. Each field's docstring names the legacy YAML field it maps from.

    Determinism lives in ``DebugConfig`` only (legacy ``train.debug.deterministic``), so that it
    has one source.
    """

    steps: int = 100
    """Optimizer steps (``train.max_steps``); 0 lets the preset_pt dataset keep its own length."""
    seq_len: int = 2048
    """Tokens per sample (``data.max_seq_len``)."""
    global_batch_size: int = 8
    """Samples per optimizer step over all DP ranks (``train.global_batch_size``)."""
    local_batch_size: int = 1
    """Samples per forward on one rank (``train.micro_batch_size``); the rest is gradient accumulation."""
    num_train_epochs: int = 1
    """Passes over the data (``train.num_train_epochs``)."""
    seed: int = 42
    """Run seed (``train.seed``); ``debug.seed``, when set, overrides it."""
    max_norm: float = 1.0
    """L2 gradient-clipping threshold (``train.optimizer.max_grad_norm``); inf: norm only."""
    init_device: str = "meta"
    """Where the model is built: "meta", "cpu", "cuda" or "npu" (``train.init_device``); the initial
    weights are the same bits on each (initialised after parallelize, as a meta model is)."""
    enable_mixed_precision: bool = False
    """Mixed precision with the three dtypes below (``train.mixed_precision.enabled``)."""
    mixed_precision_param: DTypeName = "bfloat16"
    """Compute dtype of the parameters (``train.mixed_precision.param_dtype``)."""
    mixed_precision_reduce: DTypeName = "float32"
    """Dtype of the gradient reduction (``train.mixed_precision.reduce_dtype``)."""
    mixed_precision_output: DTypeName | None = None
    """Dtype of the outputs; None: the parameter dtype (``train.mixed_precision.output_dtype``)."""
    weights_path: str | None = None
    """Initial weights: HF folder, DCP folder or file (``model.weights_path``); None: random init."""
    freeze_modules: list[str] | None = None
    """Parameters whose name contains any of these substrings are frozen (``model.freeze_modules``)."""

    def __post_init__(self) -> None:
        check_int(self, "steps", minimum=0)
        # One token is no training sample: the shifted labels leave nothing to predict (loss NaN).
        check_int(self, "seq_len", minimum=2)
        check_int(self, "global_batch_size", minimum=1)
        check_int(self, "local_batch_size", minimum=1)
        if self.global_batch_size % self.local_batch_size:
            raise ValueError(
                f"TrainingConfig.global_batch_size: expected a multiple of local_batch_size="
                f"{self.local_batch_size} (whole micro batches), got {self.global_batch_size}"
            )
        check_int(self, "num_train_epochs", minimum=1)
        check_int(self, "seed")
        check_positive_float(self, "max_norm")
        check_choice(self, "init_device", INIT_DEVICES)
        check_bool(self, "enable_mixed_precision")
        check_choice(self, "mixed_precision_param", DTYPE_NAMES)
        check_choice(self, "mixed_precision_reduce", DTYPE_NAMES)
        check_choice(self, "mixed_precision_output", DTYPE_NAMES, optional=True)
