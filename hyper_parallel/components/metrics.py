"""MetricsProcessor: the per-step metric record, console line, TensorBoard and W&B sinks.

It replaces three legacy callbacks with one component:

- the ``LoggingCallback`` record, built on every step (``last_record``), printed on rank 0 and
  kept in ``history`` every ``log_steps`` steps;
- the ``TensorBoardCallback`` and ``WandbCallback`` sinks, rank 0 only, each on its own
  ``log_steps`` cadence, writing every non-None numeric value except ``step`` as ``train/<key>``.

The loop calls ``start_step()`` before a step and ``log(step, loss=..., grad_norm=..., lr=...)``
after it, then ``close()`` at the end. The step clock is ``platform.wall_time()``; TensorBoard's
writer comes from the platform too. W&B is framework-independent and is imported directly.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Number
from typing import Any

from hyper_parallel.checkpointing import check_writable_dir
from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.protocols import ConfigMixin, Configurable

__all__ = ["MetricsProcessor", "TensorBoardConfig", "WandbConfig", "format_log_line", "scalar_metrics"]

logger = get_logger(__name__)

# Code defaults of the legacy throughput fallback (train.global_batch_size, data.max_seq_len).
DEFAULT_GLOBAL_BATCH_SIZE = 8
DEFAULT_SEQ_LEN = 2048
_MIN_STEP_TIME = 1e-9


@dataclass(kw_only=True, slots=True)
class TensorBoardConfig(ConfigMixin):
    """``train.tensorboard``: a real SummaryWriter on rank 0."""

    enabled: bool = False
    """Write TensorBoard events (legacy ``train.tensorboard.enabled``)."""
    output_dir: str = "tb_traces"
    """Folder of the event files."""
    log_steps: int = 1
    """Write the scalars every N steps."""


@dataclass(kw_only=True, slots=True)
class WandbConfig(ConfigMixin):
    """``train.wandb``: a real W&B run on rank 0 (``WANDB_MODE=offline`` writes local files only)."""

    enabled: bool = False
    """Log to a W&B run (legacy ``train.wandb.enabled``)."""
    project: str = "hyper-parallel"
    """W&B project name."""
    run_name: str | None = None
    """W&B run name; None lets W&B pick one."""
    log_steps: int = 1
    """Log the scalars every N steps."""


def _positive_int(value: Any, field_path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"MetricsProcessor.Config.{field_path} must be a positive int, got {value!r}")
    return value


def _fmt_fixed8(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.8f}"


def format_log_line(record: Mapping[str, Any]) -> str:
    """The rank-0 console line: ``step=10 | loss=7.62345678 | ... | tokens_per_sec=10,240``.

    Fixed fields first; throughput, flops/MFU and the MoE aux loss only when the record has them.
    """
    fields = [
        ("step", str(int(record["step"]))),
        ("loss", _fmt_fixed8(record["loss"])),
        ("grad_norm", _fmt_fixed8(record["grad_norm"])),
        ("lr", format(record["lr"], ".2e")),
        ("step_time", format(record["step_time"], ".2f") + "s"),
    ]
    if record.get("tokens_per_sec") is not None:
        fields.append(("tokens_per_sec", format(record["tokens_per_sec"], ",.0f")))
    if record.get("tflops") is not None:
        fields.append(("tflops", format(record["tflops"], ".1f")))
        fields.append(("mfu", format(record["mfu"] * 100, ".1f") + "%"))
    if record.get("aux_loss") is not None:
        fields.append(("aux_loss", format(record["aux_loss"], ".6f")))
    return " | ".join(f"{name}={text}" for name, text in fields)


def scalar_metrics(record: Mapping[str, Any] | None) -> dict[str, Any]:
    """``train/<key>`` -> value for the numeric, non-None, non-bool values of ``record`` but ``step``."""
    if not record:
        return {}
    return {
        f"train/{key}": value
        for key, value in record.items()
        if key != "step" and isinstance(value, Number) and not isinstance(value, bool)
    }


def _as_plain(obj: Any) -> Any:
    """A config object as nested dicts/lists of plain values, for ``wandb.init(config=...)``."""
    if isinstance(obj, ConfigMixin):
        return obj.to_dict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _as_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): _as_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_as_plain(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return repr(obj)


class MetricsProcessor(Configurable):
    """Builds, prints and exports the training metric record.

    Runtime kwargs (explicit values win; otherwise read duck-typed from ``trainer``):

    - ``world_size``: for MFU; else ``trainer.parallel_dims.world_size``, else the platform's;
    - ``rank``: sinks and the console write on rank 0 only; else the platform's rank;
    - ``global_batch_size`` / ``seq_len``: the token count used when ``log`` gets no
      ``global_tokens``; else ``trainer.config.training.*``, else 8 / 2048 (legacy code defaults);
    - ``run_config``: the nested dict given to ``wandb.init(config=...)``; else
      ``trainer.config`` as a dict, else this processor's own Config.

    Sinks open at construction (the legacy callbacks opened them at ``on_train_begin``).
    """

    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        report_to: str = "none"
        """Legacy ``train.logging.report_to``, informational: tensorboard/wandb.enabled switch the sinks."""
        log_steps: int = 10
        """Print the console line and keep the record in ``history`` every N steps."""
        report_throughput: bool = True
        """Add tokens_per_sec (and tflops/mfu when both FLOP fields are set) to the record."""
        model_flops_per_token: int | None = None
        """Model FLOPs per token; tflops and mfu need it and ``peak_tflops``."""
        peak_tflops: float | None = None
        """Peak TFLOPS of one device, the denominator of mfu."""
        tensorboard: TensorBoardConfig = field(default_factory=TensorBoardConfig)
        """TensorBoard sink (legacy ``train.tensorboard``)."""
        wandb: WandbConfig = field(default_factory=WandbConfig)
        """W&B sink (legacy ``train.wandb``)."""

    def __init__(
        self,
        config: MetricsProcessor.Config,
        *,
        trainer: Any = None,
        world_size: int | None = None,
        rank: int | None = None,
        global_batch_size: int | None = None,
        seq_len: int | None = None,
        run_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self._platform = get_platform()
        self.log_steps = _positive_int(config.log_steps, "log_steps")
        self._wandb_dir: str | None = None  # where the W&B run files go, read when enabled
        if config.tensorboard.enabled:
            _positive_int(config.tensorboard.log_steps, "tensorboard.log_steps")
            check_writable_dir(config.tensorboard.output_dir, "metrics.tensorboard.output_dir")
        if config.wandb.enabled:
            _positive_int(config.wandb.log_steps, "wandb.log_steps")
            # W&B writes its run files under WANDB_DIR (default: the working folder), as read now: it
            # is given to wandb.init, whose own settings keep the first run's folder in a process.
            self._wandb_dir = os.environ.get("WANDB_DIR") or os.getcwd()
            check_writable_dir(self._wandb_dir, "WANDB_DIR (metrics.wandb.enabled)")

        training = getattr(getattr(trainer, "config", None), "training", None)
        self.world_size = world_size or self._trainer_world_size(trainer) or self._platform.get_world_size()
        self.rank = self._platform.get_rank() if rank is None else rank
        self.global_batch_size = (
            global_batch_size or getattr(training, "global_batch_size", None) or DEFAULT_GLOBAL_BATCH_SIZE
        )
        self.seq_len = seq_len or getattr(training, "seq_len", None) or DEFAULT_SEQ_LEN

        self.last_record: dict[str, Any] | None = None
        self.history: list[dict[str, Any]] = []
        # Fallback start time for a first step logged without start_step().
        self._step_start = self._platform.wall_time()
        self._writer: Any = None
        self._wandb: Any = None
        self._wandb_run: Any = None
        self._open_tensorboard()
        self._open_wandb(trainer, run_config)

    # ------------------------------------------------------------------ sinks
    @staticmethod
    def _trainer_world_size(trainer: Any) -> int | None:
        value = getattr(getattr(trainer, "parallel_dims", None), "world_size", None)
        return int(value) if value else None

    def _open_tensorboard(self) -> None:
        tb = self.config.tensorboard
        if not tb.enabled:
            return
        try:
            writer_cls = self._platform.summary_writer_class()
        except ImportError as exc:
            raise ImportError(
                "MetricsProcessor.Config.tensorboard.enabled is true but TensorBoard's SummaryWriter "
                "cannot be imported; install the 'tensorboard' package or set tensorboard.enabled=False"
            ) from exc
        if self.rank == 0:
            self._writer = writer_cls(log_dir=tb.output_dir)

    def _open_wandb(self, trainer: Any, run_config: Mapping[str, Any] | None) -> None:
        wb = self.config.wandb
        if not wb.enabled:
            return
        try:
            import wandb
        except ImportError as exc:
            raise ImportError(
                "MetricsProcessor.Config.wandb.enabled is true but the 'wandb' package cannot be "
                "imported; install wandb or set wandb.enabled=False"
            ) from exc
        self._wandb = wandb
        if self.rank != 0:
            return
        if run_config is None:
            trainer_config = getattr(trainer, "config", None)
            run_config = _as_plain(trainer_config if trainer_config is not None else self.config)
        self._wandb_run = wandb.init(
            project=wb.project, name=wb.run_name, config=_as_plain(run_config), dir=self._wandb_dir
        )

    def _sink_due(self, step: int, sink: TensorBoardConfig | WandbConfig) -> bool:
        return sink.enabled and self.rank == 0 and step % sink.log_steps == 0

    # ----------------------------------------------------------------- record
    def start_step(self) -> None:
        """Start the step timer (the legacy ``on_step_begin``)."""
        self._step_start = self._platform.wall_time()

    def _scalar(self, value: Any) -> Any:
        """A 0-d tensor becomes a Python float (sinks and the console expect Python numbers)."""
        return float(value) if self._platform.is_tensor(value) else value

    def build_record(
        self,
        step: int,
        *,
        loss: float | None,
        grad_norm: float | None,
        lr: float,
        global_tokens: int | None = None,
        aux_loss: float | None = None,
    ) -> dict[str, Any]:
        """The raw-valued record (keys in the legacy record's order); reads the step clock once."""
        cfg = self.config
        step_time = max(self._platform.wall_time() - self._step_start, _MIN_STEP_TIME)
        tokens_per_sec = tflops = mfu = None
        if cfg.report_throughput:
            tokens = self._scalar(global_tokens)
            if tokens is None:
                tokens = self.global_batch_size * self.seq_len
            tokens_per_sec = tokens / step_time
            if cfg.model_flops_per_token is not None and cfg.peak_tflops is not None:
                tflops = tokens_per_sec * cfg.model_flops_per_token / 1e12
                mfu = tflops / (cfg.peak_tflops * self.world_size)
        record: dict[str, Any] = {
            "step": step,
            "loss": self._scalar(loss),
            "grad_norm": self._scalar(grad_norm),
            "lr": float(self._scalar(lr)),
            "step_time": step_time,
            "tokens_per_sec": tokens_per_sec,
            "aux_loss": self._scalar(aux_loss),
        }
        if tflops is not None:
            record["tflops"] = tflops
            record["mfu"] = mfu
        return record

    def log(
        self,
        step: int,
        *,
        loss: float | None,
        grad_norm: float | None,
        lr: float,
        global_tokens: int | None = None,
        aux_loss: float | None = None,
    ) -> dict[str, Any]:
        """Record one finished step; print/keep it and feed the sinks on their cadences."""
        if isinstance(step, bool) or not isinstance(step, int):
            raise TypeError(f"MetricsProcessor.log(): step must be an int, got {step!r}")
        record = self.build_record(
            step, loss=loss, grad_norm=grad_norm, lr=lr, global_tokens=global_tokens, aux_loss=aux_loss
        )
        self.last_record = record
        if step % self.log_steps == 0:
            if logger.isEnabledFor(logging.INFO):  # the line is formatted only for a listener
                logger.info_rank0(format_log_line(record))
            self.history.append(record)
        # Sink order follows the legacy on_step_end dispatch: W&B, then TensorBoard.
        if self._wandb_run is not None and self._sink_due(step, self.config.wandb):
            scalars = scalar_metrics(record)
            if scalars:
                self._wandb_run.log(scalars, step=step)
        if self._writer is not None and self._sink_due(step, self.config.tensorboard):
            for tag, value in scalar_metrics(record).items():
                self._writer.add_scalar(tag, value, step)
        return record

    def close(self) -> None:
        """Flush and close the sinks (TensorBoard before W&B, as the legacy train-end order)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.flush()
            writer.close()
        run, self._wandb_run = self._wandb_run, None
        if run is not None:
            run.finish()
