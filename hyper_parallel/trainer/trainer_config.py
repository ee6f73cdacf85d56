"""``HyperTrainer.Config``: the root Configurable tree of the new path (RFC Part 5, section 3).

The fields and their defaults are the RFC's, one per component plus the value configs. It is a
module of its own so that the CLI (``ConfigManager``) can describe the tree without building a
trainer; :class:`hyper_parallel.trainer.hyper_trainer.HyperTrainer` adopts it as its ``Config``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from hyper_parallel.components.checkpoint import CheckpointManager
from hyper_parallel.components.dataloader import BaseDataLoader
from hyper_parallel.components.loss import BaseLoss, CrossEntropyLoss
from hyper_parallel.components.lr_scheduler import LRSchedulersContainer
from hyper_parallel.components.metrics import MetricsProcessor
from hyper_parallel.components.optimizer import OptimizersContainer
from hyper_parallel.components.profiler import Profiler
from hyper_parallel.components.tokenizer import BaseTokenizer, HuggingFaceTokenizer
from hyper_parallel.config import (
    ActivationCheckpointConfig,
    CommConfig,
    CompileConfig,
    DebugConfig,
    ParallelismConfig,
    TrainingConfig,
)
from hyper_parallel.protocols import Configurable, ModelSpec

try:  # tyro is only needed by the CLI; the tree itself must import without it.
    import tyro

    _Hidden = tyro.conf.Suppress
except ImportError:  # pragma: no cover - exercised only where tyro is missing
    _Hidden = None

# ModelSpec holds callables and a model dataclass that a CLI cannot parse: hidden from tyro.
ModelSpecField = Annotated[ModelSpec | None, _Hidden] if _Hidden is not None else ModelSpec | None

__all__ = ["TrainerConfig"]


@dataclass(kw_only=True, slots=True)
class TrainerConfig(Configurable.Config):
    """Everything a HyperTrainer needs; build it with ``HyperTrainer.Config(...).build()``."""

    model_spec: ModelSpecField = None

    hf_assets_path: str = "outputs/hf_assets"
    dump_folder: str = "outputs"

    tokenizer: BaseTokenizer.Config = field(default_factory=HuggingFaceTokenizer.Config)
    dataloader: BaseDataLoader.Config = field(default_factory=BaseDataLoader.Config)
    optimizer: OptimizersContainer.Config = field(default_factory=OptimizersContainer.Config)
    lr_scheduler: LRSchedulersContainer.Config = field(default_factory=LRSchedulersContainer.Config)
    loss: BaseLoss.Config = field(default_factory=CrossEntropyLoss.Config)
    checkpoint: CheckpointManager.Config = field(default_factory=CheckpointManager.Config)
    metrics: MetricsProcessor.Config = field(default_factory=MetricsProcessor.Config)
    profiler: Profiler.Config = field(default_factory=Profiler.Config)

    training: TrainingConfig = field(default_factory=TrainingConfig)
    parallelism: ParallelismConfig = field(default_factory=ParallelismConfig)
    activation_checkpoint: ActivationCheckpointConfig = field(default_factory=ActivationCheckpointConfig)
    compile: CompileConfig = field(default_factory=CompileConfig)
    comm: CommConfig = field(default_factory=CommConfig)
    debug: DebugConfig = field(default_factory=DebugConfig)
