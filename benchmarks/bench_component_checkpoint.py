"""CheckpointManager vs the legacy checkpoint callbacks, in the same run.

Three groups on the debug model after two optimizer steps:

- ``checkpoint-build``: constructing ``CheckpointCallback`` + ``SafetensorsExportCallback`` (legacy,
  from already parsed ``args``) vs ``CheckpointManager.Config(...).build(...)``, plus the bare
  constructor (``component_init``) to separate the component from the Configurable build step;
- ``checkpoint-save``: one ``step_<N>/`` folder with the HF export, each round into a fresh folder;
- ``checkpoint-load``: resuming model, extra state, optimizer, scheduler, RNG and dataloader.

Run: ``python -m pytest benchmarks/bench_component_checkpoint.py -p no:xdist --benchmark-only -q``.
Target: the component is no slower than 1.1x the legacy path.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

from parity.suites import components_checkpoint as suite  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
)

_STEPS = 2
_ROUNDS = {"build": 300, "save": 12, "load": 12}


@pytest.fixture(scope="module")
def state():
    return suite.trained_state(steps=_STEPS)


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
        yield Path(tmp)


@pytest.fixture(scope="module")
def saved_dir(state, workdir):
    return suite.manager_save(state, str(workdir / "saved"))


def _legacy_build(state, out: str, load_path: str | None = None):
    from hyper_parallel.trainer.callbacks import CheckpointCallback, SafetensorsExportCallback

    args = suite.legacy_args(*suite._checkpoint_overrides(out, _STEPS, load_path))

    def build():
        trainer = suite._fake_trainer(state, args)
        return CheckpointCallback(trainer), SafetensorsExportCallback(trainer)

    return build


def _manager_build(state, out: str, load_path: str | None = None):
    from hyper_parallel.components.checkpoint import CheckpointManager

    config = CheckpointManager.Config(output_dir=out, save_steps=_STEPS, load_path=load_path)

    def build():
        return config.build(
            model_parts=[state.model],
            optimizers=state.optimizer,
            lr_schedulers=state.lr_scheduler,
            dataloader=state.dataloader,
            sd_adapter=state.adapter,
        )

    return build


def _manager_init(state, out: str):
    """The component's own constructor, without ``Configurable.Config.build`` (copy + kwarg checks)."""
    from hyper_parallel.components.checkpoint import CheckpointManager

    config = CheckpointManager.Config(output_dir=out, save_steps=_STEPS)

    def build():
        return CheckpointManager(
            config,
            model_parts=[state.model],
            optimizers=state.optimizer,
            lr_schedulers=state.lr_scheduler,
            dataloader=state.dataloader,
            sd_adapter=state.adapter,
        )

    return build


@pytest.mark.parametrize("side", ["legacy", "component", "component_init"])
def test_build(benchmark, state, workdir, side):
    benchmark.group = "checkpoint-build"
    make = {"legacy": _legacy_build, "component": _manager_build, "component_init": _manager_init}[side]
    build = make(state, str(workdir / "unused"))
    benchmark.pedantic(build, rounds=_ROUNDS["build"], iterations=1, warmup_rounds=5)


@pytest.mark.parametrize("side", ["legacy", "component"])
def test_save(benchmark, state, workdir, side):
    benchmark.group = "checkpoint-save"
    counter = itertools.count()
    progress = SimpleNamespace(global_step=_STEPS, epoch=0)

    def setup():
        out = str(workdir / f"{side}-{next(counter)}")
        if side == "legacy":
            return (_legacy_build(state, out)(),), {}
        return (_manager_build(state, out)(),), {}

    def legacy_save(callbacks):
        ckpt, export = callbacks
        ckpt.on_step_end(progress)
        export.on_step_end(progress)

    def manager_save(mgr):
        mgr.maybe_save(_STEPS, 0)

    target = legacy_save if side == "legacy" else manager_save
    benchmark.pedantic(target, setup=setup, rounds=_ROUNDS["save"], iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("side", ["legacy", "component"])
def test_load(benchmark, state, workdir, saved_dir, side):
    benchmark.group = "checkpoint-load"
    out = str(workdir / "load-out")
    if side == "legacy":
        ckpt, _ = _legacy_build(state, out, str(saved_dir))()

        def load():
            ckpt.on_train_begin(SimpleNamespace(global_step=0, epoch=0))

    else:
        mgr = _manager_build(state, out, str(saved_dir))()

        def load():
            mgr.load()

    benchmark.pedantic(load, rounds=_ROUNDS["load"], iterations=1, warmup_rounds=1)
