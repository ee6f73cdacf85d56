"""The legacy trainer (YAML ``args`` -> ``LLMTrainer``) and, beside it, the new HyperTrainer seam."""

from hyper_parallel.trainer import utils  # noqa: F401  (installs the rank-aware logging helpers first)
from hyper_parallel.trainer.base import BaseTrainer, TrainerState
from hyper_parallel.trainer.llm_trainer import LLMTrainer
from hyper_parallel.trainer.parallel_dims import ParallelDims

# Imported here so that HyperTrainer.Config (TrainerConfig) always has its owner: any import of the
# trainer package defines HyperTrainer, so a Config tree from the mapping or a recipe can build.
from hyper_parallel.trainer.hyper_trainer import HyperTrainer  # noqa: E402

__all__ = ["BaseTrainer", "HyperTrainer", "LLMTrainer", "ParallelDims", "TrainerState"]
