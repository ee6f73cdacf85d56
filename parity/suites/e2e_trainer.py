"""End to end: ``LLMTrainer(args)`` vs ``HyperTrainer`` built from the same YAML (tier A), plus goldens.

Both trainers read ``examples/debug/train.yaml``; the new one through ``legacy_to_trainer_config``.
Each run trains in a temporary folder and returns every artifact the issue names: the loss and
grad-norm curves, the param groups, the LR curve, the metric records and the final checkpoint
(model, optimizer, scheduler, RNG, dataloader, extra state, HF export). The functions are also the
building blocks of ``tests/trainer/new/test_trainer_parity.py``.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

from parity import canonical
from parity.cases import REGISTRY
from parity.legacy_driver import legacy_args
from parity.suites.legacy_trainer import _read_checkpoint, _Recorder

_DETERMINISTIC_METRICS = ("step", "loss", "grad_norm", "lr", "aux_loss")
# Grad norms are read with .item() from a float32 tensor: their ULPs count in float32 (the
# logged loss is a float64 token mean of per-micro-batch sums).
_FLOAT32_METRICS = {"grad_norm": "float32"}


def _hf_export(root: Path) -> dict[str, Any] | None:
    """Tensors and config of the newest step's HF export, or None when there is none."""
    import json

    from safetensors.torch import load_file

    steps = sorted(root.glob("step_*/hf_ckpt"), key=lambda p: int(p.parent.name.split("_")[1]))
    if not steps:
        return None
    folder = steps[-1]
    return {
        "tensors": load_file(folder / "model.safetensors"),
        "config": json.loads((folder / "config.json").read_text()),
    }


def _artifacts(trainer_model, optimizer_groups, losses, grad_norms, lrs, records, ckpt_root: Path) -> dict:
    out: dict[str, Any] = {
        "param_groups": canonical.param_groups(optimizer_groups, trainer_model.named_parameters()),
        "losses": canonical.losses(losses),
        "grad_norms": canonical.losses(grad_norms, dtype="float32"),
        "lr_curve": canonical.lr_curve(lrs),
        "metrics": canonical.metrics(
            records, deterministic=_DETERMINISTIC_METRICS, float_dtypes=_FLOAT32_METRICS
        ),
    }
    if ckpt_root.exists() and any(ckpt_root.glob("step_*")):
        out["checkpoint"] = canonical.checkpoint(_read_checkpoint(ckpt_root))
        export = _hf_export(ckpt_root)
        if export is not None:
            out["hf_export"] = canonical.checkpoint(export)
    return out


def _param_groups_snapshot(groups) -> list[dict]:
    """Param groups as they are before training (lists are copied, params kept by identity)."""
    return [{**g, "params": list(g["params"])} for g in groups]


def run_legacy(*overrides: str, workdir: Path | None = None) -> dict[str, Any]:
    """Train ``LLMTrainer`` on the debug recipe (+ overrides); canonical artifacts of the run."""
    from hyper_parallel.trainer import LLMTrainer

    with _workdir(workdir) as tmp:
        args = legacy_args(f"--train.checkpoint.output_dir={tmp}/ckpt", *overrides)
        trainer = LLMTrainer(args)
        base = trainer.base
        groups = _param_groups_snapshot(base.optimizer.param_groups)
        recorder = _Recorder()
        lrs: list[float] = []
        recorder.on_step_end = _also(
            recorder.on_step_end, lambda: lrs.append(base.lr_scheduler.get_last_lr()[0])
        )
        trainer.add_callback(recorder)
        trainer.train()
        return _artifacts(
            base.model,
            groups,
            recorder.losses,
            recorder.grad_norms,
            lrs,
            base.state.log_history,
            Path(tmp, "ckpt"),
        )


def run_new(*overrides: str, workdir: Path | None = None) -> dict[str, Any]:
    """Train ``HyperTrainer`` built from the same YAML through ``legacy_to_trainer_config``."""
    from hyper_parallel.trainer.hyper_trainer import HyperTrainer
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    with _workdir(workdir) as tmp:
        args = legacy_args(f"--train.checkpoint.output_dir={tmp}/ckpt", *overrides)
        trainer: HyperTrainer = legacy_to_trainer_config(args).build()
        groups = _param_groups_snapshot(trainer.optimizer.param_groups)
        losses, grad_norms, lrs = [], [], []
        step_fn = trainer.train_step

        def recording_step(it):
            out = step_fn(it)
            losses.append(out["loss"])
            grad_norms.append(out["grad_norm"])
            lrs.append(trainer.lr_scheduler.get_last_lr()[0])
            return out

        trainer.train_step = recording_step
        trainer.train()
        return _artifacts(
            trainer.model, groups, losses, grad_norms, lrs, trainer.state.log_history, Path(tmp, "ckpt")
        )


def _also(first, second):
    def both(*args, **kwargs):
        first(*args, **kwargs)
        second()

    return both


class _workdir:
    """A temporary folder, or the given one (kept, for tests that inspect or resume from it)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> str:
        if self.path is not None:
            Path(self.path).mkdir(parents=True, exist_ok=True)
            return str(self.path)
        self._tmp = tempfile.TemporaryDirectory(prefix="parity-e2e-")
        return self._tmp.name

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


# The case producers: one cached run per side (both tier A cases of a side read the same run).
@functools.cache
def _legacy_recipe(steps: int, save_steps: int) -> dict[str, Any]:
    return run_legacy(f"--train.max_steps={steps}", f"--train.checkpoint.save_steps={save_steps}")


@functools.cache
def _new_recipe(steps: int, save_steps: int) -> dict[str, Any]:
    return run_new(f"--train.max_steps={steps}", f"--train.checkpoint.save_steps={save_steps}")


def _pick(run: dict[str, Any], artifact: str) -> Any:
    return {artifact: run[artifact]}


def legacy_side(*, steps: int, save_steps: int, artifact: str) -> dict[str, Any]:
    return _pick(_legacy_recipe(steps, save_steps), artifact)


def new_side(*, steps: int, save_steps: int, artifact: str) -> dict[str, Any]:
    return _pick(_new_recipe(steps, save_steps), artifact)


def new_curve(*, steps: int, save_steps: int) -> dict[str, Any]:
    run = _new_recipe(steps, save_steps)
    return {"losses": run["losses"], "grad_norms": run["grad_norms"], "lr_curve": run["lr_curve"]}


for _artifact in ("param_groups", "losses", "grad_norms", "lr_curve", "metrics", "checkpoint", "hf_export"):
    REGISTRY.pair(
        "trainer_e2e",
        kind="e2e",
        tags=("e2e",),
        seed=42,
        params={"steps": 20, "save_steps": 10, "artifact": _artifact},
        legacy=legacy_side,
        new=new_side,
    )
REGISTRY.golden(
    "hyper_trainer_debug_curve",
    kind="train_curve",
    tags=("e2e",),
    seed=42,
    params={"steps": 20, "save_steps": 10},
    producer=new_curve,
)
