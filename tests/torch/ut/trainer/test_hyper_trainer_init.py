"""HyperTrainer.__init__: the 11 steps in order, each attribute from its Config, meta then materialised."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

from hyper_parallel.components.checkpoint import CheckpointManager
from hyper_parallel.components.dataloader import DummyDataLoader
from hyper_parallel.components.loss import CrossEntropyLoss
from hyper_parallel.components.lr_scheduler import LRSchedulersContainer
from hyper_parallel.components.metrics import MetricsProcessor
from hyper_parallel.components.optimizer import OptimizersContainer
from hyper_parallel.trainer.hyper_trainer import INIT_STEPS, HyperTrainer, InitStepError
from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config
from parity.legacy_driver import legacy_args


def _config(tmp_path, *overrides: str):
    args = legacy_args(f"--train.checkpoint.output_dir={tmp_path}/ckpt", *overrides)
    return legacy_to_trainer_config(args)


def test_steps_run_in_the_rfc_order(tmp_path, monkeypatch):
    seen: list[str] = []
    for step in INIT_STEPS:
        original = getattr(HyperTrainer, f"_init_{step}")

        def spy(self, _original=original, _step=step):
            seen.append(_step)
            _original(self)

        monkeypatch.setattr(HyperTrainer, f"_init_{step}", spy)
    trainer = _config(tmp_path).build()
    assert seen == list(INIT_STEPS) == trainer.init_steps
    assert len(INIT_STEPS) == 11


def test_each_attribute_is_built_from_its_config(tmp_path):
    config = _config(tmp_path)
    trainer = config.build()
    assert isinstance(trainer, HyperTrainer)
    # A shallow copy of the root: the sub-configs are the very objects of the tree that was built.
    assert trainer.config is not config and trainer.config.optimizer is config.optimizer
    assert trainer.tokenizer is None  # dummy data: no tokenizer, as legacy
    built = {
        "dataloader": (trainer.dataloader, DummyDataLoader),
        "optimizer": (trainer.optimizer, OptimizersContainer),
        "lr_scheduler": (trainer.lr_scheduler, LRSchedulersContainer),
        "loss": (trainer.loss_fn, CrossEntropyLoss),
        "checkpoint": (trainer.checkpointer, CheckpointManager),
        "metrics": (trainer.metrics, MetricsProcessor),
    }
    for field, (component, cls) in built.items():
        assert isinstance(component, cls), field
        sub = getattr(config, field)
        # build() hands the component a shallow copy: equal values, not the same object.
        assert component.config is not sub and component.config.to_dict() == sub.to_dict(), field
    assert isinstance(trainer.profiler, contextlib.nullcontext)  # profiling off
    assert trainer.state.max_steps == config.training.steps == 20
    assert trainer.lr_scheduler.get_last_lr()[0] == 0.0  # warmup starts at 0


def test_model_is_built_on_meta_then_materialised(tmp_path, monkeypatch):
    observed = {}
    verify = HyperTrainer._init_verify_protocol

    def spy(self):
        observed["meta_at_verify"] = all(p.is_meta for p in self.model.parameters())
        verify(self)

    monkeypatch.setattr(HyperTrainer, "_init_verify_protocol", spy)
    trainer = _config(tmp_path).build()
    assert observed["meta_at_verify"] is True
    params = list(trainer.model.parameters())
    assert params and not any(p.is_meta for p in params)
    assert all(hasattr(p, "to_local") for p in params)  # FSDP2 DTensor shards
    assert trainer.model.training


@pytest.mark.parametrize(
    ("overrides", "step", "cause"),
    [
        (("--data.type=hf_datasets",), "tokenizer", ValueError),
        (
            ("--data.type=preset_pt", "--data.train_path=/nonexistent/batches.pt"),
            "dataloader",
            FileNotFoundError,
        ),
        (("--train.accelerator.dp_shard=2",), "setup_distributed", ValueError),
    ],
)
def test_an_error_names_its_step(tmp_path, overrides, step, cause):
    with pytest.raises(InitStepError, match=f"'{step}' failed") as info:
        _config(tmp_path, *overrides).build()
    assert info.value.step == step
    assert info.value.index == INIT_STEPS.index(step) + 1
    assert isinstance(info.value.__cause__, cause)


def test_missing_parallelize_fn_names_the_parallelize_step(tmp_path):
    config = _config(tmp_path)
    config.model_spec = dataclasses.replace(config.model_spec, parallelize_fn=None)
    with pytest.raises(InitStepError, match="'parallelize' failed"):
        config.build()


def test_missing_model_spec_is_a_clear_error():
    with pytest.raises(ValueError, match="model_spec is not set"):
        HyperTrainer.Config().build()


def test_config_tree_from_the_mapping_alone_can_build():
    """The root Config is nested in HyperTrainer: it has its owner as soon as it can be imported."""
    import subprocess
    import sys

    from tests._subprocess import child_env

    for first in ("hyper_parallel.trainer.legacy_mapping", "hyper_parallel.recipes.qwen3_5"):
        probe = (
            f"import {first}\n"
            "from hyper_parallel.trainer.hyper_trainer import HyperTrainer, TrainerConfig\n"
            "assert TrainerConfig is HyperTrainer.Config and HyperTrainer.Config._owner is HyperTrainer\n"
        )
        proc = subprocess.run([sys.executable, "-c", probe], env=child_env(), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]


def test_init_steps_read_top_to_bottom_in_init():
    """A reader (or a tool) follows the 11 steps in ``__init__`` itself, in the RFC's order."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(HyperTrainer.__init__)))
    named = [
        item.context_expr.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.With)
        for item in node.items
        if isinstance(item.context_expr, ast.Call)
        and getattr(item.context_expr.func, "attr", None) == "_init_step"
    ]
    assert named == list(INIT_STEPS)
    assert "getattr" not in inspect.getsource(HyperTrainer.__init__)
