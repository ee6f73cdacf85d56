"""Value configs of the new trainer path (no behaviour, only validated settings).

Layering: this package imports ``protocols`` and nothing above it; in particular it never
imports ``hyper_parallel.trainer`` (the legacy-to-new mapping lives with the trainer).
"""

from hyper_parallel.config.cross_checks import validate_cross_fields
from hyper_parallel.config.manager import ConfigManager, LegacyFormat
from hyper_parallel.config.parallelism import ParallelismConfig
from hyper_parallel.config.refusals import CommandLineError
from hyper_parallel.config.runtime import (
    ActivationCheckpointConfig,
    CommConfig,
    CompileConfig,
    DebugConfig,
    effective_seed,
)
from hyper_parallel.config.training import DTYPE_NAMES, DTypeName, TrainingConfig

__all__ = [
    "DTYPE_NAMES",
    "ActivationCheckpointConfig",
    "CommandLineError",
    "CommConfig",
    "CompileConfig",
    "ConfigManager",
    "LegacyFormat",
    "DTypeName",
    "DebugConfig",
    "ParallelismConfig",
    "TrainingConfig",
    "effective_seed",
    "validate_cross_fields",
]
