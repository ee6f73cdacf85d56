"""The legacy trainer (YAML ``args`` -> ``LLMTrainer``) and, beside it, the new HyperTrainer seam.

HyperTrainer is imported here on purpose: any import of the trainer package then defines it, so
``HyperTrainer.Config`` (``TrainerConfig``) always has its owner and a Config tree from the mapping
or a recipe can ``build()``.
"""

from hyper_parallel.trainer.base import BaseTrainer, TrainerState
from hyper_parallel.trainer.hyper_trainer import HyperTrainer
from hyper_parallel.trainer.llm_trainer import LLMTrainer
from hyper_parallel.trainer.parallel_dims import ParallelDims

__all__ = ["BaseTrainer", "HyperTrainer", "LLMTrainer", "ParallelDims", "TrainerState"]
