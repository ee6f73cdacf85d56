"""Recipes for the Qwen3.5-style model: ``--module qwen3_5 --config <name>``."""

from __future__ import annotations

from collections.abc import Callable

from hyper_parallel.components.checkpoint import CheckpointManager
from hyper_parallel.components.dataloader import DummyDataLoader
from hyper_parallel.components.loss import CrossEntropyLoss
from hyper_parallel.components.lr_scheduler import LRSchedulersContainer
from hyper_parallel.components.metrics import MetricsProcessor
from hyper_parallel.components.optimizer import OptimizersContainer
from hyper_parallel.components.tokenizer import HuggingFaceTokenizer
from hyper_parallel.config import DebugConfig, ParallelismConfig, TrainingConfig
from hyper_parallel.models.qwen3_5 import FLAVORS, Qwen3_5Config, new_path_spec
from hyper_parallel.models.spec import ModelSpec
from hyper_parallel.trainer.hyper_trainer import HyperTrainer, TrainerConfig

__all__ = ["RECIPES", "debug", "model_spec"]


def model_spec(flavor: str) -> ModelSpec:
    """The registered qwen3_5 spec with the flavour's model Config and the new-path parallelize_fn.

    The plan follows the process platform, as ``Qwen3_5Config.build`` does (``new_path_parallelize_fn``).
    """
    if flavor not in FLAVORS:
        raise ValueError(f"qwen3_5 flavor {flavor!r} is unknown; expected one of {sorted(FLAVORS)}")
    return new_path_spec(flavor, Qwen3_5Config(**FLAVORS[flavor]))


def debug() -> TrainerConfig:  # HyperTrainer.Config is TrainerConfig
    """The CPU debug run, value for value ``examples/debug/train.yaml`` (a test keeps them equal).

    Dummy data, the tiny ``debug`` flavour, 20 steps of 8 samples (micro-batches of 2) at 64 tokens.
    """
    seq_len, global_batch, micro_batch, seed = 64, 8, 2, 42
    return HyperTrainer.Config(
        model_spec=model_spec("debug"),
        tokenizer=HuggingFaceTokenizer.Config(),  # unused: dummy data needs no tokenizer
        dataloader=DummyDataLoader.Config(),
        optimizer=OptimizersContainer.Config(lr=1e-3, weight_decay=0.01),
        lr_scheduler=LRSchedulersContainer.Config(lr_warmup_ratio=0.1, decay_style="cosine", lr_min=1e-4),
        loss=CrossEntropyLoss.Config(),
        checkpoint=CheckpointManager.Config(output_dir="outputs/debug", save_steps=10, save_hf_weights=True),
        metrics=MetricsProcessor.Config(log_steps=1),
        training=TrainingConfig(
            steps=20,
            seq_len=seq_len,
            global_batch_size=global_batch,
            local_batch_size=micro_batch,
            seed=seed,
            max_norm=1.0,
            init_device="meta",
        ),
        parallelism=ParallelismConfig(data_parallel_shard_degree=-1),
        debug=DebugConfig(deterministic=True),
    )


RECIPES: dict[str, Callable[[], TrainerConfig]] = {"debug": debug}
