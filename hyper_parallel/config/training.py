"""TrainingConfig: the training loop's sizes, seed, clipping, init device and mixed precision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from hyper_parallel.config._checks import (
    check_bool,
    check_choice,
    check_int,
    check_nonempty_str,
    check_positive_float,
)
from hyper_parallel.protocols.configurable import ConfigMixin

__all__ = ["DTYPE_NAMES", "DTypeName", "TrainingConfig"]

# The dtype spellings the legacy trainer accepts for mixed precision (a string, not a framework
# dtype, so that the CLI can parse it and both backends can map it).
DTypeName = Literal["bfloat16", "bf16", "float16", "fp16", "float32", "fp32"]
DTYPE_NAMES: tuple[str, ...] = get_args(DTypeName)


@dataclass(kw_only=True, slots=True)
class TrainingConfig(ConfigMixin):
    """Loop sizes and numerics. Comments name the legacy YAML field each value maps from.

    Determinism lives in ``DebugConfig`` only (legacy ``train.debug.deterministic``), so that it
    has one source.
    """

    # train.max_steps. 0 is allowed: the preset_pt dataset then keeps its own length.
    steps: int = 100
    # data.max_seq_len
    seq_len: int = 2048
    # train.global_batch_size (samples per optimizer step over all DP ranks)
    global_batch_size: int = 8
    # train.micro_batch_size (samples per forward on one rank). global_batch_size must be a multiple
    # of it (checked here), and of local_batch_size * dp_size (checked when the dataloader is built,
    # where the dp size is known); gradient accumulation is global_batch_size // (local * dp).
    local_batch_size: int = 1
    # train.num_train_epochs
    num_train_epochs: int = 1
    # train.seed (DebugConfig.seed, when set, overrides it)
    seed: int = 42
    # train.optimizer.max_grad_norm (L2 clipping threshold; inf computes the norm without clipping)
    max_norm: float = 1.0
    # train.init_device: "meta" (build on meta, then materialise) or a device string
    init_device: str = "meta"
    # train.mixed_precision.enabled
    enable_mixed_precision: bool = False
    # train.mixed_precision.param_dtype
    mixed_precision_param: DTypeName = "bfloat16"
    # train.mixed_precision.reduce_dtype
    mixed_precision_reduce: DTypeName = "float32"
    # train.mixed_precision.output_dtype (None: outputs keep the parameter dtype)
    mixed_precision_output: DTypeName | None = None
    # model.weights_path: initial weights (HF folder, DCP folder or single file) loaded after
    # materialisation; None keeps the random initialisation
    weights_path: str | None = None
    # model.freeze_modules: parameters whose name contains any of these substrings are frozen
    freeze_modules: list[str] | None = None

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
        check_nonempty_str(self, "init_device")
        check_bool(self, "enable_mixed_precision")
        check_choice(self, "mixed_precision_param", DTYPE_NAMES)
        check_choice(self, "mixed_precision_reduce", DTYPE_NAMES)
        check_choice(self, "mixed_precision_output", DTYPE_NAMES, optional=True)
