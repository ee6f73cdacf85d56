"""Build time of the optimizer and LR scheduler components vs their legacy builders, same run.

- ``optimizer``: ``BaseTrainer._build_optimizer()`` on the debug model vs
  ``OptimizersContainer.Config(...).build(model_parts=[model])`` (the Config made once, as a
  parsed YAML is made once); the in-backward container (one AdamW and one hook per parameter)
  is shown in the same group for reference, not held to the target;
- ``lr_scheduler``: ``BaseTrainer._build_lr_scheduler()`` vs
  ``LRSchedulersContainer.Config(...).build(optimizers=..., training_steps=20)`` on the same
  optimizer.

Each group also times the component constructor alone (no ``Config.build`` copy/kwarg check).

Run: ``python -m pytest benchmarks/bench_component_optim.py -n 0 --benchmark-only -q``.
Target: the component no slower than 1.1x the legacy builder.
"""

from __future__ import annotations

import logging
import os

import pytest

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

# Both sides log one line per build; keep the handlers out of the timing.
logging.getLogger("hyper_parallel").setLevel(logging.WARNING)


@pytest.fixture(scope="module")
def setup():
    from parity.suites import components_optim as suite

    model = suite.debug_model(0)
    trainer = suite.bare_trainer(suite.legacy_args(), model=model)
    trainer._build_optimizer()
    return suite, model, trainer


@pytest.mark.benchmark(group="optimizer")
def test_optimizer_legacy(benchmark, setup):
    _, _, trainer = setup
    benchmark(trainer._build_optimizer)


@pytest.mark.benchmark(group="optimizer")
def test_optimizer_component(benchmark, setup):
    from hyper_parallel.components.optimizer import OptimizersContainer

    suite, model, _ = setup
    config = OptimizersContainer.Config(**suite.debug_optimizer_fields())
    benchmark(config.build, model_parts=[model])


@pytest.mark.benchmark(group="optimizer")
def test_optimizer_component_constructor(benchmark, setup):
    """Without the protocol's ``Config.build`` (shallow copy and kwarg check)."""
    from hyper_parallel.components.optimizer import OptimizersContainer

    suite, model, _ = setup
    config = OptimizersContainer.Config(**suite.debug_optimizer_fields())
    benchmark(OptimizersContainer, config, model_parts=[model])


@pytest.mark.benchmark(group="optimizer")
def test_optimizer_in_backward_component_reference(benchmark, setup):
    from hyper_parallel.components.optimizer import OptimizersInBackwardContainer

    suite, _, _ = setup
    model = suite.debug_model(0)
    config = OptimizersInBackwardContainer.Config(**suite.debug_optimizer_fields())

    def build():
        config.build(model_parts=[model]).remove_hooks()

    benchmark(build)


@pytest.mark.benchmark(group="lr_scheduler")
def test_lr_scheduler_legacy(benchmark, setup):
    _, _, trainer = setup
    benchmark(trainer._build_lr_scheduler)


@pytest.mark.benchmark(group="lr_scheduler")
def test_lr_scheduler_component(benchmark, setup):
    from hyper_parallel.components.lr_scheduler import LRSchedulersContainer

    suite, _, trainer = setup
    config = LRSchedulersContainer.Config(**suite.debug_scheduler_fields())
    benchmark(config.build, optimizers=trainer.optimizer, training_steps=trainer.state.max_steps)


@pytest.mark.benchmark(group="lr_scheduler")
def test_lr_scheduler_component_constructor(benchmark, setup):
    """Without the protocol's ``Config.build`` (shallow copy and kwarg check)."""
    from hyper_parallel.components.lr_scheduler import LRSchedulersContainer

    suite, _, trainer = setup
    config = LRSchedulersContainer.Config(**suite.debug_scheduler_fields())
    benchmark(
        LRSchedulersContainer, config, optimizers=trainer.optimizer, training_steps=trainer.state.max_steps
    )
