"""TensorBoard and W&B sinks (decision D2: real, rank 0 only).

Both write ``logging_callback.last_record`` at ``on_step_end`` on their own cadence, with
``train/<key>`` tags; they ignore ``on_log`` so that nothing is written twice.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from numbers import Number
from typing import TYPE_CHECKING, Any, cast

from hyper_parallel.checkpointing import check_writable_dir
from hyper_parallel.trainer.callbacks.base import Callback, _positive_int, _rank, _sub_cfg

if TYPE_CHECKING:
    from types import ModuleType

    from torch.utils.tensorboard import SummaryWriter

logger = logging.getLogger(__name__)


def scalar_metrics(record: dict[str, Any] | None) -> dict[str, float]:
    """``train/<key>`` -> value for every non-None numeric value of the record except ``step``."""
    if not record:
        return {}
    out: dict[str, float] = {}
    for key, value in record.items():
        if key == "step" or value is None or isinstance(value, bool) or not isinstance(value, Number):
            continue
        out[f"train/{key}"] = cast(float, value)  # an int or a float, logged as it is
    return out


def args_to_dict(args: Any) -> Any:
    """The config as plain nested dicts/lists for ``wandb.init(config=...)``."""
    if dataclasses.is_dataclass(args) and not isinstance(args, type):
        return dataclasses.asdict(args)
    if isinstance(args, dict):
        return {str(k): args_to_dict(v) for k, v in args.items()}
    if isinstance(args, (list, tuple)):
        return [args_to_dict(v) for v in args]
    if isinstance(args, (str, int, float, bool)) or args is None:
        return args
    if hasattr(args, "__dict__"):
        return {k: args_to_dict(v) for k, v in vars(args).items() if not k.startswith("_")}
    return repr(args)


class _MetricSink(Callback):
    """Shared config reading and cadence for the rank-0 metric sinks."""

    section = ""

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        self.cfg = _sub_cfg(trainer.args, self.section)
        self.enabled = bool(getattr(self.cfg, "enabled", False))
        self.log_steps = getattr(self.cfg, "log_steps", 1)
        if self.enabled:
            _positive_int(self.log_steps, f"train.{self.section}.log_steps")

    def _due(self, state: Any) -> bool:
        return self.enabled and _rank() == 0 and state.global_step % self.log_steps == 0

    def _metrics(self) -> dict[str, float]:
        logging_cb = getattr(self.trainer, "logging_callback", None)
        return scalar_metrics(getattr(logging_cb, "last_record", None))


class TensorBoardCallback(_MetricSink):
    """Writes scalars with ``SummaryWriter.add_scalar(train/<key>, value, global_step)``."""

    section = "tensorboard"

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        self.output_dir = getattr(self.cfg, "output_dir", "tb_traces")
        self.writer: SummaryWriter | None = None
        self._summary_writer_cls: type[SummaryWriter] | None = None  # imported only when enabled
        if self.enabled:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:
                raise ImportError(
                    "train.tensorboard.enabled is true but torch.utils.tensorboard cannot be imported; "
                    "install the 'tensorboard' package or set train.tensorboard.enabled: false"
                ) from exc
            self._summary_writer_cls = SummaryWriter
            check_writable_dir(self.output_dir, "train.tensorboard.output_dir")

    def on_train_begin(self, state: Any, **kwargs: Any) -> None:
        if self.enabled and _rank() == 0 and self.writer is None:
            assert self._summary_writer_cls is not None, "imported in __init__ when enabled"
            self.writer = self._summary_writer_cls(log_dir=self.output_dir)

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        if self.writer is None or not self._due(state):
            return
        for tag, value in self._metrics().items():
            self.writer.add_scalar(tag, value, state.global_step)

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        if self.writer is not None:
            self.writer.flush()
            self.writer.close()
            self.writer = None


class WandbCallback(_MetricSink):
    """Logs scalars with ``wandb.log({...}, step=global_step)``; honours ``WANDB_MODE=offline``."""

    section = "wandb"

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        self.project = getattr(self.cfg, "project", "hyper-parallel")
        self.run_name = getattr(self.cfg, "run_name", None)
        self.run: Any = None
        self._wandb: ModuleType | None = None  # imported only when enabled
        self.wandb_dir: str | None = None  # where the run files go, read when enabled
        if self.enabled:
            try:
                import wandb
            except ImportError as exc:
                raise ImportError(
                    "train.wandb.enabled is true but the 'wandb' package cannot be imported; "
                    "install wandb or set train.wandb.enabled: false"
                ) from exc
            self._wandb = wandb
            # W&B writes its run files under WANDB_DIR (default: the working folder), as read now: it
            # is given to wandb.init, whose own settings keep the first run's folder in a process.
            self.wandb_dir = os.environ.get("WANDB_DIR") or os.getcwd()
            check_writable_dir(self.wandb_dir, "WANDB_DIR (train.wandb.enabled)")

    def on_train_begin(self, state: Any, **kwargs: Any) -> None:
        if self.enabled and _rank() == 0 and self.run is None:
            assert self._wandb is not None, "imported in __init__ when enabled"
            self.run = self._wandb.init(
                project=self.project,
                name=self.run_name,
                config=args_to_dict(self.trainer.args),
                dir=self.wandb_dir,
            )

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        if self.run is None or self._wandb is None or not self._due(state):
            return
        metrics = self._metrics()
        if metrics:
            self._wandb.log(metrics, step=state.global_step)

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        if self.run is not None and self._wandb is not None:
            self._wandb.finish()
            self.run = None
