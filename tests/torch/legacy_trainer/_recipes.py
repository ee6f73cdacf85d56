"""Helpers shared by the legacy trainer tests: build ``args`` from the debug recipe, run, collect curves."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DEBUG_YAML = REPO_ROOT / "examples" / "debug" / "train.yaml"

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")


def debug_args(output_dir: Path, *overrides: str, config: Path = DEBUG_YAML):
    """The debug recipe with its outputs redirected under ``output_dir`` plus extra ``--a.b=v`` overrides."""
    from hyper_parallel.trainer.config import LegacyTrainerArgs, parse_args
    from hyper_parallel.trainer.utils.discovery import discover_model_spec

    argv = [str(config), f"--train.checkpoint.output_dir={output_dir / 'ckpt'}", *overrides]
    args = parse_args(LegacyTrainerArgs, argv)
    discover_model_spec(args.model.name)
    return args


def run_curve(args) -> tuple[list[str], list[str], object]:
    """Train and return the (loss, grad_norm) curves as ``float.hex`` strings, plus the trainer."""
    from hyper_parallel.trainer import LLMTrainer

    trainer = LLMTrainer(args)
    recorder = CurveRecorder()
    trainer.add_callback(recorder)
    trainer.train()
    return recorder.losses, recorder.grad_norms, trainer


class CurveRecorder:
    """A user callback that records every step's loss and grad norm as exact hex strings."""

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.losses: list[str] = []
        self.grad_norms: list[str] = []

    def __getattr__(self, name: str):
        if name.startswith("on_"):
            return lambda state, **kwargs: None
        raise AttributeError(name)

    def on_step_end(self, state, *, loss=None, grad_norm=None) -> None:
        self.steps.append(state.global_step)
        self.losses.append(float(loss).hex())
        self.grad_norms.append(float(grad_norm).hex())
