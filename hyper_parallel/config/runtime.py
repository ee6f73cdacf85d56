"""Runtime switches: activation checkpointing, compilation, communication and debugging."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

from hyper_parallel.config._checks import check_bool, check_choice, check_int
from hyper_parallel.protocols.configurable import ConfigMixin

if TYPE_CHECKING:
    from hyper_parallel.config.training import TrainingConfig

__all__ = [
    "COMM_BACKENDS",
    "ActivationCheckpointConfig",
    "CommConfig",
    "CompileConfig",
    "DebugConfig",
    "effective_seed",
]

ACMode = Literal["none", "full", "selective"]
CompileComponent = Literal["model", "loss"]
CommBackend = Literal["gloo", "nccl", "hccl"]
COMM_BACKENDS: tuple[str, ...] = get_args(CommBackend)


@dataclass(kw_only=True, slots=True)
class ActivationCheckpointConfig(ConfigMixin):
    """Activation checkpointing (recompute activations in backward to save memory)."""

    mode: ACMode = "none"
    """Legacy ``activation_checkpoint``: its off-values map to "none", any other value to "full"."""

    def __post_init__(self) -> None:
        check_choice(self, "mode", get_args(ACMode))


@dataclass(kw_only=True, slots=True)
class CompileConfig(ConfigMixin):
    """Compilation of the model and/or the loss (no legacy counterpart: always off there)."""

    enable: bool = False
    """Compile the parts named in ``components``."""
    components: list[CompileComponent] = field(default_factory=lambda: ["model", "loss"])
    """What to compile when enabled."""

    def __post_init__(self) -> None:
        check_bool(self, "enable")
        allowed = get_args(CompileComponent)
        bad = (
            [self.components]
            if not isinstance(self.components, (list, tuple))
            else [c for c in self.components if c not in allowed]
        )
        if bad:
            raise ValueError(
                f"CompileConfig.components: expected a list drawn from {', '.join(map(repr, allowed))}, "
                f"got {self.components!r}"
            )


@dataclass(kw_only=True, slots=True)
class CommConfig(ConfigMixin):
    """Process-group setup."""

    backend: CommBackend | None = None
    """Legacy ``train.comm_backend``; None: gloo on CPU, nccl on CUDA, hccl on NPU."""
    init_timeout_seconds: int = 300
    """Timeout for init_process_group and the first collectives (no legacy counterpart)."""

    def __post_init__(self) -> None:
        check_choice(self, "backend", COMM_BACKENDS, optional=True)
        check_int(self, "init_timeout_seconds", minimum=1)


@dataclass(kw_only=True, slots=True)
class DebugConfig(ConfigMixin):
    """Determinism and numerical debugging. Fields map from legacy ``train.debug``."""

    deterministic: bool = False
    """Deterministic algorithms, cudnn deterministic, no cudnn benchmark (``debug.deterministic``)."""
    deterministic_warn_only: bool = False
    """Warn instead of raising on a nondeterministic op (``debug.deterministic_warn_only``)."""
    check_nan_inf: bool = False
    """Fail the step when the loss or grad norm is not finite (``debug.check_nan_inf``)."""
    gc_steps: int = 0
    """Run the garbage collector every N steps, 0: never (``debug.gc_steps``)."""
    seed: int | None = None
    """When set, overrides ``training.seed`` (no legacy counterpart)."""

    def __post_init__(self) -> None:
        check_bool(self, "deterministic")
        check_bool(self, "deterministic_warn_only")
        check_bool(self, "check_nan_inf")
        check_int(self, "gc_steps", minimum=0)
        check_int(self, "seed", optional=True)


def effective_seed(training: TrainingConfig, debug: DebugConfig) -> int:
    """The run's seed: ``debug.seed`` when set, else ``training.seed``."""
    return training.seed if debug.seed is None else debug.seed
