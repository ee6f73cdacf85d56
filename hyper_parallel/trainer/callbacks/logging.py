"""LoggingCallback: the per-step metric record, the console line and ``state.log_history``."""

from __future__ import annotations

import time
from typing import Any

from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.trainer.callbacks.base import Callback, _positive_int, _sub_cfg

logger = get_logger(__name__)

# Code defaults when neither `train.logging` nor `logging` is configured.
DEFAULT_LOG_STEPS = 10


class LoggingCallback(Callback):
    """Builds the metric record on every step (``last_record``) so that TensorBoard/W&B can
    write at their own cadence; prints, stores and dispatches it every ``log_steps`` steps.
    """

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg = _sub_cfg(trainer.args, "logging")
        self.log_steps = _positive_int(
            getattr(cfg, "log_steps", DEFAULT_LOG_STEPS), "train.logging.log_steps"
        )
        self.report_throughput = bool(getattr(cfg, "report_throughput", True))
        self.model_flops_per_token = getattr(cfg, "model_flops_per_token", None)
        self.peak_tflops = getattr(cfg, "peak_tflops", None)
        self.last_record: dict[str, Any] | None = None
        # A fallback start time in case on_step_begin was not dispatched.
        self._step_start = time.time()

    def on_step_begin(self, state: Any, **kwargs: Any) -> None:
        self._step_start = time.time()

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        record = self.build_record(state, loss=loss, grad_norm=grad_norm)
        self.last_record = record
        if state.global_step % self.log_steps != 0:
            return
        logger.info_rank0(format_log_line(record))
        state.log_history.append(record)
        self.trainer.dispatch_log_event(dict(record))

    def build_record(self, state: Any, *, loss: float | None, grad_norm: float | None) -> dict[str, Any]:
        """The raw-valued record: step, loss, grad_norm, lr, step_time, then the optional keys."""
        elapsed = max(time.time() - self._step_start, 1e-9)
        trainer = self.trainer
        scheduler = getattr(trainer, "lr_scheduler", None)
        lr = float(scheduler.get_last_lr()[0]) if scheduler is not None else 0.0

        tokens_per_sec = None
        tflops = mfu = None
        if self.report_throughput:
            tokens = getattr(trainer, "_last_global_tokens", None)
            if tokens is None:
                train = getattr(trainer.args, "train", None)
                data = getattr(trainer.args, "data", None)
                tokens = getattr(train, "global_batch_size", 8) * getattr(data, "max_seq_len", 2048)
            tokens_per_sec = tokens / elapsed
            if self.model_flops_per_token is not None and self.peak_tflops is not None:
                tflops = tokens_per_sec * self.model_flops_per_token / 1e12
                mfu = tflops / (self.peak_tflops * self._world_size())

        moe = getattr(trainer, "moe_monitor_callback", None)
        aux_loss = getattr(moe, "last_mean_aux_loss", None)

        record: dict[str, Any] = {
            "step": state.global_step,
            "loss": loss,
            "grad_norm": grad_norm,
            "lr": lr,
            "step_time": elapsed,
            "tokens_per_sec": tokens_per_sec,
            "aux_loss": aux_loss,
        }
        if tflops is not None:
            record["tflops"] = tflops
            record["mfu"] = mfu
        return record

    def _world_size(self) -> int:
        parallel_dims = getattr(self.trainer, "parallel_dims", None)
        world_size = getattr(parallel_dims, "world_size", None)
        return int(world_size) if world_size else get_platform().get_world_size()


def format_log_line(record: dict[str, Any]) -> str:
    """The rank-0 console line: ``step=10 | loss=7.62345678 | ... | tokens_per_sec=10,240``."""

    def _fmt8(value: float | None) -> str:
        return "N/A" if value is None else f"{value:.8f}"

    parts = {
        "step": f"{int(record['step'])}",
        "loss": _fmt8(record["loss"]),
        "grad_norm": _fmt8(record["grad_norm"]),
        "lr": f"{record['lr']:.2e}",
        "step_time": f"{record['step_time']:.2f}s",
    }
    if record.get("tokens_per_sec") is not None:
        parts["tokens_per_sec"] = f"{record['tokens_per_sec']:,.0f}"
    if record.get("tflops") is not None:
        parts["tflops"] = f"{record['tflops']:.1f}"
        parts["mfu"] = f"{record['mfu'] * 100:.1f}%"
    if record.get("aux_loss") is not None:
        parts["aux_loss"] = f"{record['aux_loss']:.6f}"
    return " | ".join(f"{k}={v}" for k, v in parts.items())
