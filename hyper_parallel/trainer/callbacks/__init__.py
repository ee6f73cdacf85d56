"""Legacy trainer callbacks (spec sections 13 and 14): the base class and the 12 built-ins."""

from hyper_parallel.trainer.callbacks.base import Callback, _sub_cfg
from hyper_parallel.trainer.callbacks.checkpoint import (
    CheckpointCallback,
    SafetensorsExportCallback,
    export_hf_checkpoint,
)
from hyper_parallel.trainer.callbacks.health import (
    EvalCallback,
    GCCallback,
    GradientHealthCallback,
    MemoryMonitorCallback,
    MoEMonitorCallback,
)
from hyper_parallel.trainer.callbacks.logging import LoggingCallback, format_log_line
from hyper_parallel.trainer.callbacks.metrics_sinks import TensorBoardCallback, WandbCallback
from hyper_parallel.trainer.callbacks.profiler import ProfilerCallback
from hyper_parallel.trainer.callbacks.progress import ProgressCallback

__all__ = [
    "Callback",
    "CheckpointCallback",
    "EvalCallback",
    "GCCallback",
    "GradientHealthCallback",
    "LoggingCallback",
    "MemoryMonitorCallback",
    "MoEMonitorCallback",
    "ProfilerCallback",
    "ProgressCallback",
    "SafetensorsExportCallback",
    "TensorBoardCallback",
    "WandbCallback",
    "_sub_cfg",
    "export_hf_checkpoint",
    "format_log_line",
]
