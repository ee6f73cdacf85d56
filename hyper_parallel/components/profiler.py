"""Profiler: the legacy ``train.profile`` schedule as a context manager.

One ``wait -> warmup -> active`` cycle per run, on every rank; chrome traces land in
``<output_dir>/rank_<r>/rank<r>.<ns>.pt.trace.json``. The framework profiler comes from the
platform (``platform.profiler``), so a MindSpore platform can provide its own.

Disabled means "nothing at all": ``Profiler.Config(enabled=False).build()`` returns the platform's
``contextlib.nullcontext()`` (RFC: enabled=False -> nullcontext). In both cases the value bound by
``with`` tells the loop whether to step::

    with profiler_config.build() as prof:
        for batch in loader:
            train_step(batch)
            if prof is not None:
                prof.step()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hyper_parallel.checkpointing import check_writable_dir
from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.protocols import Configurable

__all__ = ["Profiler"]

logger = get_logger(__name__)

# Runtime kwargs Profiler accepts; checked on the disabled path too, so a typo fails either way.
_BUILD_KWARGS = frozenset({"rank"})


def _check_int(value: Any, field: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"Profiler.Config.{field} must be an int >= {minimum}, got {value!r}")


class Profiler(Configurable):
    """A started-on-enter framework profiler; ``step()`` advances its schedule by one train step.

    ``__enter__`` returns ``self`` when enabled. A ``Profiler`` constructed directly from a
    disabled Config (bypassing ``Config.build``) is inert: ``__enter__`` returns None and
    ``step()`` does nothing, i.e. it behaves exactly like the nullcontext that ``build`` returns.
    A run shorter than ``wait_steps + warmup_steps`` steps records nothing.
    """

    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        enabled: bool = False
        """Record a profiler trace (legacy ``train.profile.enabled``)."""
        output_dir: str = "profiler_traces"
        """Trace folder; each rank writes to ``<output_dir>/rank_<r>/`` (``train.profile.output_dir``)."""
        wait_steps: int = 1
        """Steps skipped before the profiler starts (``train.profile.wait_steps``)."""
        warmup_steps: int = 1
        """Steps profiled but discarded before recording (``train.profile.warmup_steps``)."""
        active_steps: int = 3
        """Steps recorded into the trace (``train.profile.active_steps``)."""

        def __post_init__(self) -> None:
            # Like the legacy callback, a disabled profiler's schedule is never looked at.
            if self.enabled:
                _check_int(self.wait_steps, "wait_steps", 0)
                _check_int(self.warmup_steps, "warmup_steps", 0)
                _check_int(self.active_steps, "active_steps", 1)

        def build(self, **kwargs: Any) -> Any:
            """``contextlib.nullcontext()`` when disabled, else a ``Profiler`` (kwargs: ``rank``)."""
            unknown = sorted(set(kwargs) - _BUILD_KWARGS)
            if unknown:
                raise TypeError(
                    f"Profiler.Config.build(): unexpected kwarg(s) {', '.join(unknown)}; "
                    f"expected only {', '.join(sorted(_BUILD_KWARGS))}"
                )
            if not self.enabled:
                return get_platform().null_context()
            return Configurable.Config.build(self, **kwargs)

    def __init__(self, config: Profiler.Config, *, rank: int | None = None) -> None:
        self.config = config
        # Traces are per rank: the legacy callback names the folder after the global rank.
        self.rank = get_platform().get_rank() if rank is None else rank
        self._prof: Any = None
        if config.enabled:
            check_writable_dir(config.output_dir, "profiler.output_dir")

    @property
    def trace_dir(self) -> str:
        return f"{self.config.output_dir}/rank_{self.rank}"

    @property
    def active(self) -> bool:
        """True between ``__enter__`` and ``__exit__`` of an enabled profiler."""
        return self._prof is not None

    def __enter__(self) -> Profiler | None:
        if not self.config.enabled:
            return None
        if self._prof is None:
            cfg = self.config
            prof = get_platform().profiler(
                output_dir=cfg.output_dir,
                rank=self.rank,
                wait=cfg.wait_steps,
                warmup=cfg.warmup_steps,
                active=cfg.active_steps,
            )
            prof.__enter__()
            self._prof = prof
            logger.info_rank0(f"Profiler started; traces go to {cfg.output_dir}/rank_<r>/")
        return self

    def step(self) -> None:
        """Call once per optimizer step, after it (the legacy ``on_step_end``)."""
        if self._prof is not None:
            self._prof.step()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        prof, self._prof = self._prof, None
        if prof is not None:
            prof.__exit__(exc_type, exc, tb)
