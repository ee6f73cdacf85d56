"""CheckpointManager vs the legacy checkpoint callbacks, in the same run.

Three groups on the debug model after two optimizer steps:

- ``checkpoint-build``: constructing ``CheckpointCallback`` + ``SafetensorsExportCallback`` (legacy,
  from already parsed ``args``) vs ``CheckpointManager.Config(...).build(...)``, plus the bare
  constructor (``component_init``) to separate the component from the Configurable build step;
- ``checkpoint-save``: one ``step_<N>/`` folder with the HF export, each round into a fresh folder;
- ``checkpoint-load``: resuming model, extra state, optimizer, scheduler, RNG and dataloader;
- ``checkpoint-save-manifest-<side>``: the staged save with its manifest (sha256 of every file in a
  background thread, ``manifest.json`` written last), the same save with the manifest step off, and
  the save as it was before manifests (files straight into ``step_<N>/``, a folder fsync per file),
  side by side for each path.

Run: ``python -m pytest benchmarks/bench_component_checkpoint.py -p no:xdist --benchmark-only -q``,
or ``python benchmarks/bench_component_checkpoint.py`` for the manifest ratio alone (interleaved
rounds, medians). Targets: the component is no slower than 1.1x the legacy path, and a save with
its manifest no slower than 1.1x the same save without.
"""

from __future__ import annotations

import functools
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


# --------------------------------------------------------------------------- manifest cost
def _without_manifest(monkeypatch) -> None:
    """The staged save with its manifest step (fsync + sha256 of every file + manifest.json) removed."""
    from hyper_parallel import checkpointing

    monkeypatch.setattr(checkpointing, "write_manifest", lambda folder, step, precomputed=None: None)
    monkeypatch.setattr(checkpointing, "_new_hasher", lambda folder: None)


@pytest.mark.parametrize("manifest", ["with_manifest", "without_manifest", "pre_change"])
@pytest.mark.parametrize("side", ["legacy", "component"])
def test_save_manifest(benchmark, state, workdir, side, manifest, monkeypatch):
    """A healthy save with its manifest, the same save without it, and the save as it was before
    manifests (no staging, a folder fsync per file): target at most 1.1x."""
    benchmark.group = f"checkpoint-save-manifest-{side}"
    if manifest == "without_manifest":
        _without_manifest(monkeypatch)
    counter = itertools.count()
    make = _pre_change_saver if manifest == "pre_change" else _saver

    def setup():
        return (make(state, side, str(workdir / f"m-{side}-{manifest}-{next(counter)}")),), {}

    benchmark.pedantic(lambda run: run(), setup=setup, rounds=_ROUNDS["save"], iterations=1, warmup_rounds=1)


def _saver(state, side: str, out: str):
    """A zero-argument callable writing one ``step_<N>/`` (with the HF export) into ``out``."""
    if side == "legacy":
        ckpt, export = _legacy_build(state, out)()
        ckpt.trainer.hf_export_callback = export
        return functools.partial(ckpt.on_step_end, SimpleNamespace(global_step=_STEPS, epoch=0))
    return functools.partial(_manager_build(state, out)().maybe_save, _STEPS, 0)


def _pre_change_saver(state, side: str, out: str):
    """The save as it was before checkpoints had manifests, from the same writers: every file
    straight into ``step_<N>/`` (each fsynced with its folder), no staging, no manifest."""
    folder = os.path.join(out, f"step_{_STEPS}")
    progress = SimpleNamespace(global_step=_STEPS, epoch=0)
    if side == "legacy":
        ckpt, export = _legacy_build(state, out)()

        def run() -> None:
            os.makedirs(folder, exist_ok=True)
            ckpt._save_model(folder, async_save=False, step=_STEPS)
            ckpt._save_artifacts(folder, progress)
            export.export(progress)

        return run
    mgr = _manager_build(state, out)()

    def run() -> None:
        os.makedirs(folder, exist_ok=True)
        mgr._write_model(folder, _STEPS, async_save=False)
        mgr._write_states(folder, _STEPS, 0)
        mgr.export_hf(os.path.join(folder, "hf_ckpt"))

    return run


def main(rounds: int = 30) -> None:
    """``python benchmarks/bench_component_checkpoint.py``: save time with the manifest, without it
    (the same staged save with the manifest step off) and as before manifests (``_pre_change_saver``),
    interleaved round by round so that all three see the same machine load."""
    import statistics
    import time

    import torch

    from hyper_parallel import checkpointing

    state = suite.trained_state(steps=_STEPS)
    real = checkpointing.write_manifest, checkpointing._new_hasher
    modes = ("with", "without", "pre_change")
    threads_before = torch.get_num_threads()
    # One intra-op thread is the harness's and torchrun's setting (the hashing thread then has a
    # core of its own on 2 cores); two is a plain single-process run on this machine.
    for threads, side in itertools.product((1, 2), ("legacy", "component")):
        torch.set_num_threads(threads)
        with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
            times: dict[str, list[float]] = {mode: [] for mode in modes}
            for i in range(rounds + 2):
                for mode in modes:
                    out = str(Path(tmp) / f"{side}-{mode}-{i}")
                    run = (_pre_change_saver if mode == "pre_change" else _saver)(state, side, out)
                    if mode == "without":
                        checkpointing.write_manifest = lambda folder, step, precomputed=None: None
                        checkpointing._new_hasher = lambda folder: None
                    else:
                        checkpointing.write_manifest, checkpointing._new_hasher = real
                    start = time.perf_counter()
                    run()
                    if i >= 2:  # warm-up rounds
                        times[mode].append(time.perf_counter() - start)
            checkpointing.write_manifest, checkpointing._new_hasher = real
            med = {mode: statistics.median(t) * 1e3 for mode, t in times.items()}
            size = sum(
                f.stat().st_size for f in (Path(tmp) / f"{side}-with-2" / "step_2").rglob("*") if f.is_file()
            )
            print(
                f"{side:9s} save {size / 2**20:5.1f} MiB, {threads} thread(s), medians: with manifest {med['with']:6.1f} ms, "
                f"without {med['without']:6.1f} ms ({med['with'] / med['without']:.3f}x), before "
                f"manifests {med['pre_change']:6.1f} ms ({med['with'] / med['pre_change']:.3f}x); "
                f"{rounds} interleaved rounds, load average {os.getloadavg()[0]:.1f}"
            )
    torch.set_num_threads(threads_before)


if __name__ == "__main__":
    main()
