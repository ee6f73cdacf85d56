"""The legacy trainer (YAML ``args`` -> ``LLMTrainer``) and, beside it, the new HyperTrainer seam."""

from hyper_parallel.trainer import utils  # noqa: F401  (installs the rank-aware logging helpers first)
from hyper_parallel.trainer.base import BaseTrainer, TrainerState
from hyper_parallel.trainer.llm_trainer import LLMTrainer
from hyper_parallel.trainer.parallel_dims import ParallelDims

__all__ = ["BaseTrainer", "LLMTrainer", "ParallelDims", "TrainerState"]
