"""Build (and per-step) time of the Profiler and MetricsProcessor vs their legacy callbacks, same run.

- ``profiler``: legacy ``ProfilerCallback(trainer)`` + ``on_train_begin`` + ``on_train_end`` vs
  ``Profiler.Config(enabled=True).build()`` entered and exited (a real torch profiler started and
  stopped inside its wait window, so no trace is written);
- ``profiler_disabled``: the disabled callback vs the disabled build (a nullcontext);
- ``metrics``: ``LoggingCallback`` + ``WandbCallback`` + ``TensorBoardCallback`` (sinks off) vs
  ``MetricsProcessor.Config().build(...)`` (and the constructor alone, without the protocol's
  ``Config.build`` copy and kwarg check);
- ``metrics_step``: one step's record and console line, ``on_step_begin`` + ``on_step_end`` vs
  ``start_step()`` + ``log(...)`` (log_steps=1, so the line is formatted every time).

Run: ``python -m pytest benchmarks/bench_component_metrics.py -n 0 --benchmark-only -q``.
Target: the component no slower than 1.1x the legacy callbacks.
"""

from __future__ import annotations

import os
import tempfile
from types import SimpleNamespace

import pytest

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

_TMP = tempfile.TemporaryDirectory()


def _profile_section(enabled: bool) -> SimpleNamespace:
    return SimpleNamespace(
        enabled=enabled, output_dir=_TMP.name, wait_steps=1, warmup_steps=1, active_steps=3
    )


def _legacy_trainer(**train_sections) -> SimpleNamespace:
    logging = SimpleNamespace(
        log_steps=1, report_throughput=True, model_flops_per_token=None, peak_tflops=None
    )
    train = SimpleNamespace(
        global_batch_size=8,
        logging=logging,
        tensorboard=SimpleNamespace(enabled=False, output_dir=_TMP.name, log_steps=1),
        wandb=SimpleNamespace(enabled=False, project="p", run_name=None, log_steps=1),
        **train_sections,
    )
    return SimpleNamespace(
        args=SimpleNamespace(train=train, data=SimpleNamespace(max_seq_len=2048)),
        lr_scheduler=SimpleNamespace(get_last_lr=lambda: [1e-4]),
        parallel_dims=SimpleNamespace(world_size=1),
        _last_global_tokens=4096,
        dispatch_log_event=lambda metrics: None,
    )


# --------------------------------------------------------------------------- profiler
def _legacy_profiler(enabled: bool) -> None:
    from hyper_parallel.trainer.callbacks import ProfilerCallback

    state = SimpleNamespace(global_step=0)
    cb = ProfilerCallback(_legacy_trainer(profile=_profile_section(enabled)))
    cb.on_train_begin(state)
    cb.on_train_end(state)


def _new_profiler(config) -> None:
    with config.build(rank=0):
        pass


@pytest.mark.benchmark(group="profiler")
def test_profiler_legacy(benchmark):
    benchmark(_legacy_profiler, True)


@pytest.mark.benchmark(group="profiler")
def test_profiler_component(benchmark):
    from hyper_parallel.components.profiler import Profiler

    benchmark(_new_profiler, Profiler.Config(enabled=True, output_dir=_TMP.name))


@pytest.mark.benchmark(group="profiler_disabled")
def test_profiler_disabled_legacy(benchmark):
    benchmark(_legacy_profiler, False)


@pytest.mark.benchmark(group="profiler_disabled")
def test_profiler_disabled_component(benchmark):
    from hyper_parallel.components.profiler import Profiler

    benchmark(_new_profiler, Profiler.Config())


# --------------------------------------------------------------------------- metrics
def _legacy_metrics(trainer):
    from hyper_parallel.trainer.callbacks import LoggingCallback, TensorBoardCallback, WandbCallback

    trainer.logging_callback = LoggingCallback(trainer)
    return trainer.logging_callback, WandbCallback(trainer), TensorBoardCallback(trainer)


@pytest.mark.benchmark(group="metrics")
def test_metrics_build_legacy(benchmark):
    benchmark(_legacy_metrics, _legacy_trainer())


@pytest.mark.benchmark(group="metrics")
def test_metrics_build_component(benchmark):
    from hyper_parallel.components.metrics import MetricsProcessor

    config = MetricsProcessor.Config(log_steps=1)
    benchmark(config.build, world_size=1, rank=0, global_batch_size=8, seq_len=2048)


@pytest.mark.benchmark(group="metrics")
def test_metrics_init_component(benchmark):
    """``MetricsProcessor(config, ...)`` without ``Config.build``'s shallow copy and kwarg check."""
    from hyper_parallel.components.metrics import MetricsProcessor

    config = MetricsProcessor.Config(log_steps=1)
    benchmark(MetricsProcessor, config, world_size=1, rank=0, global_batch_size=8, seq_len=2048)


@pytest.mark.benchmark(group="metrics_step")
def test_metrics_step_legacy(benchmark):
    logging_cb, _, _ = _legacy_metrics(_legacy_trainer())
    state = SimpleNamespace(global_step=1, log_history=[])

    def step():
        logging_cb.on_step_begin(state)
        logging_cb.on_step_end(state, loss=2.5, grad_norm=0.5)
        state.log_history.clear()

    benchmark(step)


@pytest.mark.benchmark(group="metrics_step")
def test_metrics_step_component(benchmark):
    from hyper_parallel.components.metrics import MetricsProcessor

    proc = MetricsProcessor.Config(log_steps=1).build(world_size=1, rank=0, global_batch_size=8, seq_len=2048)

    def step():
        proc.start_step()
        proc.log(1, loss=2.5, grad_norm=0.5, lr=1e-4, global_tokens=4096)
        proc.history.clear()

    benchmark(step)
