"""Drive the legacy trainer's ``_build_*`` steps one at a time, for parity producers and tests.

A tier A case compares one legacy builder with the component that replaces it; these helpers give
it a bare ``BaseTrainer`` holding just what that builder reads, so no process group, model
materialisation or dataloader is built that the case does not need. One module, used by every suite
and by the component tests, so that "the legacy side" means the same thing everywhere.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

REPO_ROOT = Path(__file__).resolve().parents[1]
DEBUG_YAML = REPO_ROOT / "examples" / "debug" / "train.yaml"

__all__ = [
    "DEBUG_YAML",
    "REPO_ROOT",
    "bare_trainer",
    "debug_model",
    "legacy_args",
    "llm_steps",
    "llm_wrapper",
    "simulated_rank",
]


def legacy_args(*overrides: str, config: Path | None = DEBUG_YAML) -> Any:
    """The legacy ``args``: the debug recipe (or, with ``config=None``, the schema defaults) plus
    ``--a.b=v`` overrides; the model spec of ``model.name`` is registered. The run checks of the
    CLI (``check_run_values``: seq_len >= 2, decay style, warmup ratio in [0, 1], lr_min <= lr)
    are off: the cases pin the builders on every value they accept."""
    os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")
    from hyper_parallel.trainer.config import LegacyTrainerArgs, parse_args
    from hyper_parallel.trainer.utils.discovery import discover_model_spec

    argv = ([str(config)] if config is not None else []) + list(overrides)
    args = parse_args(LegacyTrainerArgs, argv, run_checks=False)
    discover_model_spec(args.model.name)
    return args


def bare_trainer(args: Any, *, model: Any = None, max_steps: int | None = None, world_size: int = 1) -> Any:
    """A ``BaseTrainer`` with ``args``, ``spec``, ``state``, ``parallel_dims``, ``model``; nothing built.

    ``max_steps`` stands for a value the dataset step left in ``state.max_steps`` (default: the
    configured ``train.max_steps``); ``world_size`` sizes ``ParallelDims``.
    """
    import torch

    from hyper_parallel.models.spec import get_spec
    from hyper_parallel.trainer.base import BaseTrainer, TrainerState
    from hyper_parallel.trainer.parallel_dims import ParallelDims

    trainer = BaseTrainer.__new__(BaseTrainer)
    trainer.args = args
    trainer.spec = get_spec(args.model.name)
    trainer.state = TrainerState(max_steps=args.train.max_steps if max_steps is None else max_steps)
    trainer._last_global_tokens = None
    trainer.parallel_dims = ParallelDims.from_config(args.train.accelerator, world_size=world_size)
    trainer.model = model
    trainer.tokenizer = trainer.processor = trainer.data_transform = None
    trainer.user_callbacks = []
    trainer.device = torch.device("cpu")
    return trainer


def llm_wrapper(trainer: Any) -> Any:
    """An ``LLMTrainer`` around ``trainer`` that has run no step (for steps 4-7)."""
    from hyper_parallel.trainer.llm_trainer import LLMTrainer

    wrapper = LLMTrainer.__new__(LLMTrainer)
    wrapper.args = trainer.args
    wrapper.base = trainer
    return wrapper


def llm_steps(trainer: Any) -> Any:
    """Run ``LLMTrainer`` steps 4-7 (assets, transform, dataset, collate) on a bare trainer."""
    wrapper = llm_wrapper(trainer)
    wrapper._build_model_assets()
    wrapper._build_data_transform()
    wrapper._build_dataset()
    wrapper._build_collate_fn()
    return wrapper


@contextlib.contextmanager
def simulated_rank(rank: int) -> Iterator[None]:
    """Make the platform report global ``rank`` (the legacy dataloader step reads it)."""
    from hyper_parallel.platform import get_platform

    # mock.patch.object leaves no instance attribute behind (one would shadow later class-level
    # patches of get_rank): it restores an own attribute and deletes one it added.
    with mock.patch.object(get_platform(), "get_rank", lambda group=None: rank):
        yield


def debug_model(
    seed: int = 0, *, dtype: str = "float32", frozen: str = "none", **config_overrides: Any
) -> Any:
    """The debug Qwen3.5 model (tied embeddings), default-initialised after seeding.

    On torch, the legacy builder ``build_qwen3_5`` (the tier A pairs' model), in ``dtype``, with
    ``model.config_overrides`` applied; on MindSpore, the debug flavour's ``Qwen3_5Config.build()``
    (``model_mindspore.py``: same FQNs and tying, its own RNG draws), seeded through the platform.
    Parameters whose name contains ``frozen`` do not train.
    """
    from hyper_parallel.platform import get_platform

    platform = get_platform()
    if platform.name == "torch":
        import torch

        from hyper_parallel.models.qwen3_5 import build_qwen3_5

        args = legacy_args(*(f"--model.config_overrides.{k}={v}" for k, v in config_overrides.items()))
        torch.manual_seed(seed)
        model = build_qwen3_5(args).to(getattr(torch, dtype))
    else:
        if config_overrides or dtype != "float32":
            raise ValueError(
                f"debug_model on {platform.name}: config overrides and dtype {dtype!r} are torch-only"
            )
        from hyper_parallel.models.qwen3_5.config import FLAVORS, Qwen3_5Config

        platform.manual_seed(seed)
        model = Qwen3_5Config(**FLAVORS["debug"]).build()
    if frozen != "none":
        for name, param in model.named_parameters():
            if frozen in name:
                param.requires_grad = False
    return model
