"""Parity cases for ``MetricsProcessor`` against the legacy Logging/TensorBoard/W&B callbacks.

Both sides get the same fixed list of step inputs (loss, grad norm, lr, token count, aux loss)
and the same step-clock readings, so every record value is deterministic and compared bit for
bit: records of every step, the ``log_steps`` history, the console lines and the TensorBoard
scalars read back from the event files. The clock is pinned at the one place each side reads
it (the legacy module's ``time`` and the platform's ``wall_time``), never globally, so the sinks'
own timestamps stay real.

The drivers (``run_legacy`` / ``run_new``) are also used by
``tests/torch/ut/components/test_metrics.py``, which adds the W&B offline run files.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

from parity import canonical
from parity.builders import FLOPS_PER_TOKEN, PEAK_TFLOPS, FixedClock
from parity.cases import REGISTRY

RECORD_KEYS = ("step", "loss", "grad_norm", "lr", "step_time", "tokens_per_sec", "aux_loss", "tflops", "mfu")
LEGACY_LOGGER = "hyper_parallel.trainer.callbacks.logging"
NEW_LOGGER = "hyper_parallel.components.metrics"


@dataclass(frozen=True)
class Setup:
    """One run: config values shared by both sides, plus where the sinks write."""

    steps: int = 6
    log_steps: int = 2
    throughput: bool = True
    flops: bool = True
    aux: bool = True
    world_size: int = 2
    global_batch_size: int = 4
    seq_len: int = 16
    tb_dir: str | None = None
    tb_log_steps: int = 1
    wandb: bool = False
    wandb_log_steps: int = 1
    project: str = "hp-parity"
    run_name: str = "metrics-parity"
    # The legacy args object also carries ``_``-prefixed attributes (a user's bookkeeping, not
    # config): W&B's run config must leave them out, as the new side's config never has them.
    private_args: bool = False

    def run_config(self) -> dict[str, Any]:
        """The legacy-shaped config tree (also what W&B receives as its run config)."""
        return {
            "model": {"name": "tiny"},
            "data": {"max_seq_len": self.seq_len},
            "train": {
                "global_batch_size": self.global_batch_size,
                "logging": {
                    "log_steps": self.log_steps,
                    "report_throughput": self.throughput,
                    "model_flops_per_token": FLOPS_PER_TOKEN if self.flops else None,
                    "peak_tflops": PEAK_TFLOPS if self.flops else None,
                },
                "tensorboard": {
                    "enabled": self.tb_dir is not None,
                    "output_dir": self.tb_dir or "tb_traces",
                    "log_steps": self.tb_log_steps,
                },
                "wandb": {
                    "enabled": self.wandb,
                    "project": self.project,
                    "run_name": self.run_name,
                    "log_steps": self.wandb_log_steps,
                },
            },
        }


def step_inputs(setup: Setup) -> list[dict[str, Any]]:
    """Deterministic per-step inputs and clock readings; edge cases at fixed steps.

    Step 2 takes no time (the 1e-9 floor), step 3 has no loss ("N/A"), every third step has no
    token count (the ``global_batch_size * seq_len`` fallback).
    """
    rows = []
    for s in range(1, setup.steps + 1):
        t0 = 1_700_000_000.0 + 10.0 * s
        rows.append(
            {
                "step": s,
                "loss": None if s == 3 else 11.0 / (s + 1.3),
                "grad_norm": 1.0 / (s + 0.7),
                "lr": 1e-3 * s / setup.steps,
                "tokens": None if s % 3 == 0 else 1000 + 37 * s,
                "aux_loss": 0.01 + 0.001 * s if setup.aux else None,
                "t0": t0,
                "t1": t0 if s == 2 else t0 + 0.05 * s + 0.003,
            }
        )
    return rows


@dataclass
class RunOutput:
    records: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


class _LineCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def console_lines(logger_name: str) -> Iterator[list[str]]:
    """Collect the INFO messages of one logger (level lowered to INFO while collecting)."""
    log = logging.getLogger(logger_name)
    collector = _LineCollector()
    saved_level = log.level
    log.setLevel(logging.INFO)
    log.addHandler(collector)
    try:
        yield collector.lines
    finally:
        log.removeHandler(collector)
        log.setLevel(saved_level)


def _namespace(tree: Any) -> Any:
    if isinstance(tree, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in tree.items()})
    return tree


def run_legacy(setup: Setup) -> RunOutput:
    """LoggingCallback + WandbCallback + TensorBoardCallback on a fake trainer, in the legacy callback order."""
    from hyper_parallel.trainer.callbacks import LoggingCallback, TensorBoardCallback, WandbCallback

    clock = FixedClock()
    scheduler = SimpleNamespace(lr=0.0)
    scheduler.get_last_lr = lambda: [scheduler.lr]
    args = _namespace(setup.run_config())
    if setup.private_args:
        args._source = "run.yaml"
        args.train._overrides = ["--train.max_steps=3"]
    trainer = SimpleNamespace(
        args=args,
        state=SimpleNamespace(global_step=0, epoch=0, max_steps=setup.steps, log_history=[]),
        lr_scheduler=scheduler,
        parallel_dims=SimpleNamespace(world_size=setup.world_size),
        _last_global_tokens=None,
        moe_monitor_callback=SimpleNamespace(last_mean_aux_loss=None),
        dispatch_log_event=lambda metrics: None,
    )
    out = RunOutput()
    state = trainer.state
    with console_lines(LEGACY_LOGGER) as lines:
        with clock.pinned():
            logging_cb = LoggingCallback(trainer)
        trainer.logging_callback = logging_cb
        wandb_cb = WandbCallback(trainer)
        tb_cb = TensorBoardCallback(trainer)
        for cb in (wandb_cb, tb_cb):  # on_train_begin order
            cb.on_train_begin(state)
        for row in step_inputs(setup):
            clock.now = row["t0"]
            with clock.pinned():
                logging_cb.on_step_begin(state)
            state.global_step = row["step"]
            trainer._last_global_tokens = row["tokens"]
            scheduler.lr = row["lr"]
            trainer.moe_monitor_callback.last_mean_aux_loss = row["aux_loss"]
            clock.now = row["t1"]
            with clock.pinned():
                logging_cb.on_step_end(state, loss=row["loss"], grad_norm=row["grad_norm"])
            for cb in (wandb_cb, tb_cb):  # generic on_step_end order after logging
                cb.on_step_end(state, loss=row["loss"], grad_norm=row["grad_norm"])
            assert logging_cb.last_record is not None, "on_step_end builds the record"
            out.records.append(dict(logging_cb.last_record))
        for cb in (tb_cb, wandb_cb):  # on_train_end order
            cb.on_train_end(state)
    out.history = [dict(r) for r in state.log_history]
    out.lines = list(lines)
    return out


def new_config(setup: Setup):
    from hyper_parallel.components.metrics import MetricsProcessor, TensorBoardConfig, WandbConfig

    train = setup.run_config()["train"]
    return MetricsProcessor.Config(
        log_steps=setup.log_steps,
        report_throughput=setup.throughput,
        model_flops_per_token=train["logging"]["model_flops_per_token"],
        peak_tflops=train["logging"]["peak_tflops"],
        tensorboard=TensorBoardConfig(**train["tensorboard"]),
        wandb=WandbConfig(**train["wandb"]),
    )


def run_new(setup: Setup, config: Any = None) -> RunOutput:
    """The MetricsProcessor on the same inputs; ``config`` overrides ``new_config(setup)``."""
    clock = FixedClock()
    config = new_config(setup) if config is None else config
    out = RunOutput()
    with console_lines(NEW_LOGGER) as lines:
        with clock.pinned():
            processor = config.build(
                world_size=setup.world_size,
                global_batch_size=setup.global_batch_size,
                seq_len=setup.seq_len,
                run_config=setup.run_config(),
            )
        for row in step_inputs(setup):
            clock.now = row["t0"]
            with clock.pinned():
                processor.start_step()
            clock.now = row["t1"]
            with clock.pinned():
                record = processor.log(
                    row["step"],
                    loss=row["loss"],
                    grad_norm=row["grad_norm"],
                    lr=row["lr"],
                    global_tokens=row["tokens"],
                    aux_loss=row["aux_loss"],
                )
            out.records.append(dict(record))
        processor.close()
    out.history = [dict(r) for r in processor.history]
    out.lines = list(lines)
    return out


def tensorboard_scalars(log_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """``tag -> [(step, value)]`` read back from the event files (wall times dropped)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in sorted(acc.Tags()["scalars"])}


def artifacts(out: RunOutput, tb_dir: str | Path | None = None) -> dict[str, Any]:
    """The canonical tree compared by the cases: records, history, console lines, TB scalars."""
    tree: dict[str, Any] = {
        "records": canonical.metrics(out.records, deterministic=RECORD_KEYS),
        "history": canonical.metrics(out.history, deterministic=RECORD_KEYS),
        "console": list(out.lines),
    }
    if tb_dir is not None:
        tree["tensorboard"] = {
            tag: [{"step": step, "value": canonical.float_leaf(value)} for step, value in points]
            for tag, points in tensorboard_scalars(tb_dir).items()
        }
    return tree


# ----------------------------------------------------------------------------- W&B offline files
_WANDB_BLOCK = 32 * 1024
_WANDB_HEADER = struct.Struct("<4sHB")  # b":W&B", magic 0xBEE1, version
_WANDB_RECORD = struct.Struct("<IHB")  # crc32, length, type (1 full, 2 first, 3 middle, 4 last)


def _wandb_records(path: str | Path) -> Iterator[bytes]:
    """The protobuf payloads of a ``run-*.wandb`` file (W&B's leveldb-style log, 32 KiB blocks)."""
    data = Path(path).read_bytes()
    ident, magic, _ = _WANDB_HEADER.unpack_from(data)
    if ident != b":W&B" or magic != 0xBEE1:
        raise ValueError(f"{path}: not a W&B run file (header {data[:7]!r})")
    pos, pending = _WANDB_HEADER.size, b""
    while pos + _WANDB_RECORD.size <= len(data):
        room = _WANDB_BLOCK - pos % _WANDB_BLOCK
        if room < _WANDB_RECORD.size:  # block trailer padding
            pos += room
            continue
        _, length, kind = _WANDB_RECORD.unpack_from(data, pos)
        if kind == 0 and length == 0:
            break
        pending += data[pos + _WANDB_RECORD.size : pos + _WANDB_RECORD.size + length]
        pos += _WANDB_RECORD.size + length
        if kind in (1, 4):
            yield pending
            pending = b""


def read_wandb_offline_run(path: str | Path) -> dict[str, Any]:
    """Project, run name, run config and logged history of an offline run file.

    W&B's own bookkeeping keys (``_wandb`` in the config; ``_timestamp``, ``_runtime``, ``_step``
    in history rows) are dropped; the step of each row is kept as ``step``.
    """
    import json

    from wandb.proto import wandb_internal_pb2 as pb

    run: dict[str, Any] = {}
    history: list[dict[str, Any]] = []
    for payload in _wandb_records(path):
        record = pb.Record()  # type: ignore[attr-defined]  # re-exported by a protobuf-version star import
        record.ParseFromString(payload)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            config = {u.key: json.loads(u.value_json) for u in record.run.config.update}
            config.pop("_wandb", None)
            run = {"project": record.run.project, "name": record.run.display_name, "config": config}
        elif kind == "history":
            row = {
                "/".join(item.nested_key) or item.key: json.loads(item.value_json)
                for item in record.history.item
            }
            row = {k: v for k, v in row.items() if not k.startswith("_")}
            history.append({"step": record.history.step.num, "values": row})
    return {**run, "history": history}


# ----------------------------------------------------------------------------- cases
def _params_setup(
    steps: int, log_steps: int, tb_log_steps: int, throughput: bool, flops: bool, aux: bool, tb_dir: str
) -> Setup:
    return Setup(
        steps=steps,
        log_steps=log_steps,
        tb_log_steps=tb_log_steps,
        throughput=throughput,
        flops=flops,
        aux=aux,
        tb_dir=tb_dir,
    )


def legacy_case(**params: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="parity-metrics-legacy-") as tmp:
        return artifacts(run_legacy(_params_setup(**params, tb_dir=tmp)), tb_dir=tmp)


def new_case(**params: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="parity-metrics-new-") as tmp:
        return artifacts(run_new(_params_setup(**params, tb_dir=tmp)), tb_dir=tmp)


CASE_PARAMS = (
    # throughput with tflops/MFU and an aux loss; console every 2 steps, TensorBoard every 3
    {"steps": 6, "log_steps": 2, "tb_log_steps": 3, "throughput": True, "flops": True, "aux": True},
    # no throughput (tokens_per_sec None, no tflops/mfu), no aux loss; every step everywhere
    {"steps": 5, "log_steps": 1, "tb_log_steps": 1, "throughput": False, "flops": False, "aux": False},
    # throughput without flops; the default console cadence (10) over 12 steps
    {"steps": 12, "log_steps": 10, "tb_log_steps": 4, "throughput": True, "flops": False, "aux": False},
)

SUITE = REGISTRY.suite(tags=("metrics",))
SUITE.grid(
    "metrics_processor_vs_callbacks",
    params=CASE_PARAMS,
    kind="metrics",
    legacy=legacy_case,
    new=new_case,
)
SUITE.grid(
    "metrics_processor",
    params=CASE_PARAMS,
    kind="metrics",
    producer=new_case,
    backends=("torch", "mindspore"),
)


# ----------------------------------------------------------------------------- W&B run identity
#
# What each side hands to ``wandb.init`` (project, run name, and the report_to value inside the
# run config) and its ``log`` calls, recorded by a fake ``wandb`` module: no files, no network.
# ``metrics_wandb_init`` drives both sides from the same Setup; ``metrics_wandb_mapped`` parses a
# legacy YAML command line, runs the legacy WandbCallback on those args and the MetricsProcessor
# built from ``legacy_to_trainer_config(args).metrics`` (run config: the mapped Config, as
# HyperTrainer passes it), and compares the identity plus the report_to value each run config holds.


class FakeWandb:
    """Stands in for the ``wandb`` module: records ``init`` / ``log`` / ``finish``."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def init(self, *, project: Any = None, name: Any = None, config: Any = None, **kw: Any) -> Any:
        self.calls.append({"init": {"project": project, "name": name, "config": config, **kw}})
        return self

    def log(self, data: dict[str, Any], step: Any = None) -> None:
        self.calls.append({"log": {"data": dict(data), "step": step}})

    def finish(self) -> None:
        self.calls.append({"finish": True})


@contextlib.contextmanager
def fake_wandb() -> Iterator[FakeWandb]:
    import sys

    fake = FakeWandb()
    with mock.patch.dict(sys.modules, {"wandb": fake}):
        yield fake


def _wandb_setup(run_name: str, project: str) -> Setup:
    return Setup(
        steps=3,
        log_steps=1,
        wandb=True,
        wandb_log_steps=2,
        project=project,
        run_name=run_name,
        private_args=True,
    )


def _init_identity(fake: FakeWandb) -> list[dict[str, Any]]:
    return [{k: v for k, v in c["init"].items() if k != "config"} for c in fake.calls if "init" in c]


def _wandb_init_run(run: Any, run_name: str, project: str) -> dict[str, Any]:
    """``run`` (``run_legacy`` / ``run_new``) with ``WANDB_DIR`` set to a folder other than the working
    one: each ``init`` call whole (the run config too), its ``dir`` as ``<WANDB_DIR>`` or ``<cwd>``."""
    with tempfile.TemporaryDirectory(prefix="parity-wandb-dir-") as wandb_dir:
        with mock.patch.dict(os.environ, {"WANDB_DIR": wandb_dir}), fake_wandb() as fake:
            run(_wandb_setup(run_name, project))
        places = {wandb_dir: "<WANDB_DIR>", os.getcwd(): "<cwd>"}
        inits = [
            {**c["init"], "dir": places.get(c["init"].get("dir"), c["init"].get("dir"))}
            for c in fake.calls
            if "init" in c
        ]
    return {"init": inits, "logs": [c for c in fake.calls if "init" not in c]}


def legacy_wandb_init(*, run_name: str, project: str) -> dict[str, Any]:
    return _wandb_init_run(run_legacy, run_name, project)


def new_wandb_init(*, run_name: str, project: str) -> dict[str, Any]:
    return _wandb_init_run(run_new, run_name, project)


def _mapped_args(report_to: str, run_name: str):
    from parity.legacy_driver import legacy_args

    return legacy_args(
        f"--train.logging.report_to={report_to}",
        "--train.wandb.enabled=true",
        "--train.wandb.project=hp-parity-map",
        f"--train.wandb.run_name={run_name}",
    )


def legacy_wandb_mapped(*, report_to: str, run_name: str) -> dict[str, Any]:
    from hyper_parallel.trainer.callbacks import WandbCallback

    args = _mapped_args(report_to, run_name)
    trainer = SimpleNamespace(args=args, state=SimpleNamespace(global_step=0))
    with fake_wandb() as fake:
        WandbCallback(trainer).on_train_begin(trainer.state)
    (call,) = [c["init"] for c in fake.calls if "init" in c]
    return {
        "init": _init_identity(fake),
        "report_to": _at(call["config"], "train", "logging", "report_to"),
        "config_report_to": args.train.logging.report_to,
    }


def _at(tree: Any, *path: str) -> Any:
    """The value at ``path`` of the run config W&B was given, or where the path stops (a config of
    another shape is a divergence to report, not a harness crash)."""
    for depth, key in enumerate(path):
        if not isinstance(tree, dict) or key not in tree:
            return f"<no {'.'.join(path[: depth + 1])} in the W&B run config>"
        tree = tree[key]
    return tree


def new_wandb_mapped(*, report_to: str, run_name: str) -> dict[str, Any]:
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    config = legacy_to_trainer_config(_mapped_args(report_to, run_name))
    with fake_wandb() as fake:
        config.metrics.build(trainer=SimpleNamespace(config=config), world_size=1, rank=0).close()
    (call,) = [c["init"] for c in fake.calls if "init" in c]
    return {
        "init": _init_identity(fake),
        "report_to": _at(call["config"], "metrics", "report_to"),
        "config_report_to": config.metrics.report_to,
    }


SUITE.pair(
    "metrics_wandb_init",
    kind="metrics",
    params={"run_name": "parity-run", "project": "hp-parity"},
    legacy=legacy_wandb_init,
    new=new_wandb_init,
)
SUITE.grid(
    "metrics_wandb_mapped",
    params=[{"report_to": _report_to, "run_name": "mapped-run"} for _report_to in ("wandb", "none")],
    kind="metrics",
    legacy=legacy_wandb_mapped,
    new=new_wandb_mapped,
)
