"""ProfilerCallback: a real ``torch.profiler`` run on every rank."""

from __future__ import annotations

from typing import Any

import torch

from hyper_parallel.checkpointing import check_writable_dir
from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.trainer.callbacks.base import Callback, _rank, _sub_cfg

logger = get_logger(__name__)


class ProfilerCallback(Callback):
    """One ``wait -> warmup -> active`` cycle; chrome traces land in ``<output_dir>/rank_<r>/``.

    A run shorter than ``wait_steps + warmup_steps`` steps records nothing.
    """

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        cfg = _sub_cfg(trainer.args, "profile")
        self.enabled = bool(getattr(cfg, "enabled", False))
        self.output_dir = getattr(cfg, "output_dir", "profiler_traces")
        self.wait_steps = int(getattr(cfg, "wait_steps", 1))
        self.warmup_steps = int(getattr(cfg, "warmup_steps", 1))
        self.active_steps = int(getattr(cfg, "active_steps", 3))
        if self.enabled:
            for field in ("wait_steps", "warmup_steps"):
                if getattr(self, field) < 0:
                    raise ValueError(f"train.profile.{field} must be >= 0, got {getattr(self, field)}")
            if self.active_steps <= 0:
                raise ValueError(f"train.profile.active_steps must be > 0, got {self.active_steps}")
            check_writable_dir(self.output_dir, "train.profile.output_dir")
        self.prof: torch.profiler.profile | None = None

    def on_train_begin(self, state: Any, **kwargs: Any) -> None:
        if not self.enabled or self.prof is not None:
            return
        rank = _rank()
        activities = [torch.profiler.ProfilerActivity.CPU]
        if get_platform().device_type() == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        trace_dir = f"{self.output_dir}/rank_{rank}"
        self.prof = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(
                wait=self.wait_steps, warmup=self.warmup_steps, active=self.active_steps, repeat=1
            ),
            on_trace_ready=torch.profiler.tensorboard_trace_handler(trace_dir, worker_name=f"rank{rank}"),
        )
        self.prof.start()
        logger.info_rank0(f"Profiler started; traces go to {self.output_dir}/rank_<r>/")

    def on_step_end(
        self, state: Any, *, loss: float | None = None, grad_norm: float | None = None, **kwargs: Any
    ) -> None:
        if self.prof is not None:
            self.prof.step()

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        if self.prof is not None:
            self.prof.stop()
            self.prof = None
