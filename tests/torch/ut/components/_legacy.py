"""Drive the legacy ``_build_*`` steps directly, without a full ``LLMTrainer``.

Component tests compare a new component with the legacy builder that it replaces; these helpers
give them a bare ``BaseTrainer`` (or ``LLMTrainer`` wrapper) holding just what that builder reads.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

REPO_ROOT = Path(__file__).resolve().parents[4]
DEBUG_YAML = REPO_ROOT / "examples" / "debug" / "train.yaml"


def legacy_args(*overrides: str, config: Path | None = DEBUG_YAML):
    """The legacy ``args`` tree: the debug recipe (or schema defaults) plus ``--a.b=v`` overrides."""
    from hyper_parallel.trainer.config import HyperTrainerConfig, parse_args

    argv = ([str(config)] if config is not None else []) + list(overrides)
    return parse_args(HyperTrainerConfig, argv)


def bare_trainer(args, *, model=None, max_steps: int | None = None, world_size: int = 1):
    """A ``BaseTrainer`` with ``args``, ``state``, ``parallel_dims`` and ``model`` set, nothing built."""
    from hyper_parallel.models.spec import get_spec
    from hyper_parallel.trainer.base import BaseTrainer, TrainerState
    from hyper_parallel.trainer.parallel_dims import ParallelDims
    from hyper_parallel.trainer.utils.discovery import discover_model_spec

    discover_model_spec(args.model.name)
    trainer = BaseTrainer.__new__(BaseTrainer)
    trainer.args = args
    trainer.spec = get_spec(args.model.name)
    trainer.state = TrainerState(max_steps=args.train.max_steps if max_steps is None else max_steps)
    trainer._last_global_tokens = None
    trainer.parallel_dims = ParallelDims.from_config(args.train.accelerator, world_size=world_size)
    trainer.model = model
    trainer.tokenizer = None
    trainer.processor = None
    trainer.data_transform = None
    trainer.user_callbacks = []
    trainer.device = torch.device("cpu")
    return trainer


def llm_wrapper(trainer):
    """An ``LLMTrainer`` around ``trainer`` that has run no step (for steps 4-7)."""
    from hyper_parallel.trainer.llm_trainer import LLMTrainer

    wrapper = LLMTrainer.__new__(LLMTrainer)
    wrapper.args = trainer.args
    wrapper.base = trainer
    return wrapper


def debug_model(seed: int = 0, **config_overrides):
    """The debug Qwen3.5 model, materialised on CPU with seeded weights (no FSDP)."""
    from hyper_parallel.models.qwen3_5 import build_qwen3_5

    args = legacy_args(*(f"--model.config_overrides.{k}={v}" for k, v in config_overrides.items()))
    torch.manual_seed(seed)
    return build_qwen3_5(args)
