"""CheckpointManager vs the legacy checkpoint callbacks, in the same run.

Groups on the debug model after two optimizer steps (an 11.1 MiB checkpoint):

- ``checkpoint-build``: constructing ``CheckpointCallback`` + ``SafetensorsExportCallback`` (legacy,
  from already parsed ``args``) vs ``CheckpointManager.Config(...).build(...)``, plus the bare
  constructor (``component_init``) to separate the component from the Configurable build step;
- ``checkpoint-save``: one ``step_<N>/`` folder with the HF export, each round into a fresh folder,
  timed until it is committed (the save call and its background commit);
- ``checkpoint-load``: resuming model, extra state, optimizer, scheduler, RNG and dataloader;
- ``checkpoint-save-manifest-<side>``: the time the save call blocks the training thread, for the
  staged save with its manifest, the same save with the manifest step off, and the save as it was
  before manifests (files straight into ``step_<N>/``, a folder fsync per file, nothing in the
  background), side by side for each path.

How a save is timed. A synchronous save writes its files into ``.partial.step_<N>/`` on the training
thread and returns; rank 0's background thread then commits it (sha256 of every file,
``manifest.json`` written last, fsyncs, rename to ``step_<N>/``), and ``wait()`` joins that commit
(the trainers call it before the next save, before a load and at train end). So two figures:

- **blocking**: the save call alone, what a training step waits for (the ``with``/``without``
  ratio is the target below);
- **committed**: from the start of the save call until ``wait()`` returned, i.e. until
  ``step_<N>/`` exists with its manifest (the latency of the commit; with the manifest it includes
  hashing every file, about 5 ms for 11 MiB on one core). In a training run this time overlaps the
  next steps; in the benchmark nothing else runs, and each round's commit is joined before the next
  round starts, so no commit overlaps another round's timing.

Run: ``python -m pytest benchmarks/bench_component_checkpoint.py -n 0 --benchmark-only -q``,
or ``python benchmarks/bench_component_checkpoint.py`` for the manifest figures alone (both sides,
1 and 2 intra-op threads, interleaved rounds, medians; the load average is printed because the
machine is shared). Targets: the component is no slower than 1.1x the legacy path, and a save with
its manifest blocks no longer than 1.1x the same save without.
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

from parity.suites import components_checkpoint as suite

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
            ckpt, export = _legacy_build(state, out)()
            ckpt.trainer.hf_export_callback = export  # as in BaseTrainer: the export is in the checkpoint
            return ((ckpt, export),), {}
        return (_manager_build(state, out)(),), {}

    def legacy_save(callbacks):
        ckpt, export = callbacks
        ckpt.on_step_end(progress)
        export.on_step_end(progress)
        ckpt.wait_for_pending()

    def manager_save(mgr):
        mgr.maybe_save(_STEPS, 0)
        mgr.wait()

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
    from hyper_parallel.checkpointing import staging

    monkeypatch.setattr(staging, "write_manifest", lambda folder, step, precomputed=None: None)
    monkeypatch.setattr(staging, "_new_hasher", lambda folder: None)


@pytest.mark.parametrize("manifest", ["with_manifest", "without_manifest", "pre_change"])
@pytest.mark.parametrize("side", ["legacy", "component"])
def test_save_manifest(benchmark, state, workdir, side, manifest, monkeypatch):
    """The blocking time of a healthy save with its manifest, of the same save without it, and of
    the save as it was before manifests (no staging, a folder fsync per file): target at most 1.1x.
    Each round's background commit is joined in the next round's setup, outside the timing."""
    benchmark.group = f"checkpoint-save-manifest-{side}"
    if manifest == "without_manifest":
        _without_manifest(monkeypatch)
    counter = itertools.count()
    make = _pre_change_saver if manifest == "pre_change" else _saver
    in_flight: list = []

    def setup():
        while in_flight:
            in_flight.pop()()
        save, finish = make(state, side, str(workdir / f"m-{side}-{manifest}-{next(counter)}"))
        in_flight.append(finish)
        return (save,), {}

    benchmark.pedantic(
        lambda save: save(), setup=setup, rounds=_ROUNDS["save"], iterations=1, warmup_rounds=1
    )
    while in_flight:
        in_flight.pop()()


def _saver(state, side: str, out: str):
    """``(save, finish)``: ``save()`` writes one ``step_<N>/`` (with the HF export) into ``out`` the
    way the trainer's step hook does and returns when training may go on; ``finish()`` joins its
    background commit (``wait``)."""
    if side == "legacy":
        ckpt, export = _legacy_build(state, out)()
        ckpt.trainer.hf_export_callback = export
        save = functools.partial(ckpt.on_step_end, SimpleNamespace(global_step=_STEPS, epoch=0))
        return save, ckpt.wait_for_pending
    mgr = _manager_build(state, out)()
    return functools.partial(mgr.maybe_save, _STEPS, 0), mgr.wait


def _pre_change_saver(state, side: str, out: str):
    """``(save, finish)`` for the save as it was before checkpoints had manifests, from the same
    writers: every file straight into ``step_<N>/`` (each fsynced with its folder), no staging, no
    manifest, nothing left in the background (``finish`` does nothing)."""
    folder = os.path.join(out, f"step_{_STEPS}")
    progress = SimpleNamespace(global_step=_STEPS, epoch=0)
    if side == "legacy":
        ckpt, export = _legacy_build(state, out)()

        def run() -> None:
            os.makedirs(folder, exist_ok=True)
            ckpt._save_model(folder, async_save=False, step=_STEPS)
            ckpt._save_artifacts(folder, progress)
            export.export(progress)

        return run, _nothing
    mgr = _manager_build(state, out)()

    def run() -> None:
        os.makedirs(folder, exist_ok=True)
        mgr._write_model(folder, _STEPS, async_save=False)
        mgr._write_states(folder, _STEPS, 0)
        mgr.export_hf(os.path.join(folder, "hf_ckpt"))

    return run, _nothing


def _nothing() -> None:
    pass


def main(rounds: int = 30) -> None:
    """``python benchmarks/bench_component_checkpoint.py``: blocking time of the save call with the
    manifest, without it (the same staged save with the manifest step off) and as before manifests
    (``_pre_change_saver``), and the time until each is committed; interleaved round by round so
    that all three see the same machine load."""
    import statistics
    import time

    import torch

    from hyper_parallel.checkpointing import staging

    state = suite.trained_state(steps=_STEPS)
    real = staging.write_manifest, staging._new_hasher
    modes = ("with", "without", "pre_change")
    threads_before = torch.get_num_threads()
    # One intra-op thread is the harness's and torchrun's setting (the hashing thread then has a
    # core of its own on 2 cores); two is a plain single-process run on this machine.
    for threads, side in itertools.product((1, 2), ("legacy", "component")):
        torch.set_num_threads(threads)
        with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
            blocking: dict[str, list[float]] = {mode: [] for mode in modes}
            committed: dict[str, list[float]] = {mode: [] for mode in modes}
            for i in range(rounds + 2):
                for mode in modes:
                    out = str(Path(tmp) / f"{side}-{mode}-{i}")
                    save, finish = (_pre_change_saver if mode == "pre_change" else _saver)(state, side, out)
                    if mode == "without":
                        staging.write_manifest = lambda folder, step, precomputed=None: None
                        staging._new_hasher = lambda folder: None
                    else:
                        staging.write_manifest, staging._new_hasher = real
                    start = time.perf_counter()
                    save()
                    returned = time.perf_counter()
                    finish()
                    done = time.perf_counter()
                    if i >= 2:  # warm-up rounds
                        blocking[mode].append(returned - start)
                        committed[mode].append(done - start)
            staging.write_manifest, staging._new_hasher = real
            block = {mode: statistics.median(t) * 1e3 for mode, t in blocking.items()}
            commit = {mode: statistics.median(t) * 1e3 for mode, t in committed.items()}
            size = sum(
                f.stat().st_size for f in (Path(tmp) / f"{side}-with-2" / "step_2").rglob("*") if f.is_file()
            )
            print(
                f"{side:9s} save {size / 2**20:4.1f} MiB, {threads} thread(s), medians: blocking with manifest "
                f"{block['with']:5.1f} ms, without {block['without']:5.1f} ms ({block['with'] / block['without']:.3f}x), "
                f"before manifests {block['pre_change']:5.1f} ms ({block['with'] / block['pre_change']:.3f}x); "
                f"committed after {commit['with']:5.1f} ms with manifest, {commit['without']:5.1f} ms without; "
                f"{rounds} interleaved rounds, load average {os.getloadavg()[0]:.1f}"
            )
    torch.set_num_threads(threads_before)


if __name__ == "__main__":
    main()
