"""Debug and monitoring callbacks: gradient health, GC, eval stub, memory and MoE monitors."""

from __future__ import annotations

import gc
import math
from typing import Any

from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.trainer.callbacks.base import Callback, _positive_int, _sub_cfg
from hyper_parallel.trainer.init_helpers import NonFiniteError

logger = get_logger(__name__)

_GIB = 1024**3


class GradientHealthCallback(Callback):
    """Stops training on a NaN/Inf gradient norm when ``train.debug.check_nan_inf`` is set.

    Every rank raises (ours; upstream raised on rank 0 only, leaving the others hanging in
    the next collective).
    """

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg = _sub_cfg(trainer.args, "debug")
        self.enabled = bool(getattr(cfg, "check_nan_inf", False))

    def on_pre_optimizer_step(self, state: Any, *, grad_norm: float | None = None, **kwargs: Any) -> None:
        if not self.enabled or grad_norm is None:
            return
        value = float(grad_norm)
        if math.isfinite(value):
            return
        msg = (
            f"non-finite gradient norm {value} at step {state.global_step} "
            "(detected because train.debug.check_nan_inf is enabled)"
        )
        logger.error(msg)
        raise NonFiniteError(msg)


class GCCallback(Callback):
    """Replaces automatic GC with a collection every ``train.debug.gc_steps`` steps.

    Automatic collection pauses at random points and makes step times uneven across ranks.
    """

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg = _sub_cfg(trainer.args, "debug")
        self.gc_steps = int(getattr(cfg, "gc_steps", 0) or 0)
        if self.gc_steps > 0:
            gc.disable()

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        if self.gc_steps > 0 and state.global_step % self.gc_steps == 0:
            gc.collect()

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        # Not in the spec's on_train_end dispatch order; restores automatic GC when called directly.
        if self.gc_steps > 0:
            gc.enable()


class EvalCallback(Callback):
    """Evaluation stub: warns at each ``train.eval.eval_steps`` boundary."""

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg = _sub_cfg(trainer.args, "eval")
        self.eval_steps = int(getattr(cfg, "eval_steps", 0) or 0)
        self.eval_dataset = getattr(cfg, "eval_dataset", None)

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        if self.eval_steps > 0 and state.global_step % self.eval_steps == 0:
            logger.warning_rank0(f"evaluation not implemented (step={state.global_step})")


class MemoryMonitorCallback(Callback):
    """Logs allocated and peak device memory every ``log_steps``; a no-op (one warning) on CPU."""

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg = _sub_cfg(trainer.args, "memory_monitor")
        self.enabled = bool(getattr(cfg, "enabled", False))
        self.log_steps = getattr(cfg, "log_steps", 50)
        self.reset_peak_each_step = bool(getattr(cfg, "reset_peak_each_step", False))
        self.handle = None
        if not self.enabled:
            return
        _positive_int(self.log_steps, "train.memory_monitor.log_steps")
        device = getattr(trainer, "device", None)
        device_type = getattr(device, "type", None) or get_platform().device_type()
        try:
            handle = get_platform().get_device_handle(device_type)
        except RuntimeError:
            handle = None
        if handle is None or not hasattr(handle, "memory_allocated"):
            logger.warning_rank0(
                f"train.memory_monitor.enabled is true but device type {device_type!r} reports no "
                "memory statistics; the memory monitor is inactive"
            )
            return
        self.handle = handle

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        if self.handle is None or state.global_step % self.log_steps != 0:
            return
        allocated = self.handle.memory_allocated() / _GIB
        peak = self.handle.max_memory_allocated() / _GIB
        logger.info_rank0(
            f"step={state.global_step} | memory_allocated_gb={allocated:.3f} | memory_peak_allocated_gb={peak:.3f}"
        )
        if self.reset_peak_each_step and hasattr(self.handle, "reset_peak_memory_stats"):
            self.handle.reset_peak_memory_stats()


class MoEMonitorCallback(Callback):
    """MoE load monitor; the dense model has no MoE layers, so it stays inactive."""

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg = _sub_cfg(trainer.args, "moe_monitor")
        self.enabled = bool(getattr(cfg, "enabled", False))
        self.last_mean_aux_loss: float | None = None
        if self.enabled:
            logger.warning_rank0(
                "train.moe_monitor.enabled is true but the model has no MoE layers; monitor inactive"
            )
