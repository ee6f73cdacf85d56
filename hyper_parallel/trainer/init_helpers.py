"""What ``BaseTrainer`` and ``HyperTrainer`` share: setup, post-parallelize, train-step arithmetic, callbacks.

Both trainers call these functions with their own config values and assign what comes back, so
the two set up processes, meshes and seeds, count tokens, drive FSDP2 and report the loss with one
piece of code. Nothing here sets an attribute on a trainer; each function returns what it builds.
Only the platform layer is used, as in the rest of the new path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hyper_parallel.platform import GroupInfo, get_platform
from hyper_parallel.platform.base import Device
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.trainer.parallel_dims import ParallelDims

__all__ = [
    "DistributedSetup",
    "LossWatch",
    "NonFiniteError",
    "TrainerState",
    "build_model",
    "dispatch_callbacks",
    "fsdp_micro_batch_flags",
    "global_tokens",
    "post_parallelize",
    "reported_loss",
    "setup_distributed",
]

logger = get_logger(__name__)

# The mesh dimensions tried, in order, for the group that loss tokens and the loss are reduced over.
_DP_GROUP_DIMS = ("loss", "dp", "dp_shard", "dp_replicate")


@dataclass
class TrainerState:
    """Progress counters; ``max_steps`` may be changed by the dataset step."""

    max_steps: int = 0
    global_step: int = 0
    epoch: int = 0
    log_history: list = field(default_factory=list)


@dataclass(frozen=True)
class DistributedSetup:
    """What ``setup_distributed`` builds: the device, the parallel layout, its mesh and the DP group."""

    device: Device
    parallel_dims: ParallelDims
    mesh: Any
    dp_group_info: GroupInfo


def setup_distributed(
    *,
    comm_backend: str | None,
    local_rank: int,
    make_parallel_dims: Callable[[int], ParallelDims],
    seed: int,
    deterministic: bool,
    deterministic_warn_only: bool = False,
    comm_timeout_seconds: float | None = None,
) -> DistributedSetup:
    """Process group, device, ``ParallelDims`` (``make_parallel_dims(world_size)``), mesh, DP group, seeds.

    Each trainer passes its own config values in; determinism is turned on when asked.
    """
    platform = get_platform()
    platform.init_process_group(backend=comm_backend, timeout_seconds=comm_timeout_seconds)

    device_type = platform.device_type()
    device = platform.device(local_rank)
    handle = platform.get_device_handle(device_type)
    if hasattr(handle, "set_device"):
        handle.set_device(local_rank)

    parallel_dims = make_parallel_dims(platform.get_world_size())
    logger.info_rank0("ParallelDims: %s", parallel_dims.summary())
    mesh = parallel_dims.build_mesh(device_type)

    group = None
    for name in _DP_GROUP_DIMS:
        try:
            group = mesh.get_group(name)
            break
        except (KeyError, RuntimeError, ValueError):
            continue
    if group is None and mesh.ndim == 1:
        group = mesh.get_group()
    dp_group_info = GroupInfo(group_name="trainer_dp", group=group, rank_size=parallel_dims.dp_size)

    try:
        platform.manual_seed(seed)
        if hasattr(handle, "manual_seed_all"):
            handle.manual_seed_all(seed)
        elif hasattr(handle, "manual_seed"):
            handle.manual_seed(seed)
    except Exception as exc:  # seeding problems are only warned about
        logger.warning("seeding failed: %s", exc)

    if deterministic:  # torch: deterministic algorithms, cuDNN settings, the cuBLAS workspace
        platform.set_deterministic(True, warn_only=deterministic_warn_only)
    return DistributedSetup(
        device=device, parallel_dims=parallel_dims, mesh=mesh, dp_group_info=dp_group_info
    )


def build_model(build: Callable[[], Any], *, init_device: str, field: str) -> Any:
    """``build()`` on ``init_device``: the meta device, or a device type this machine has.

    On a real device the constructors initialise the parameters themselves (``nn.Linear``'s own
    ``kaiming_uniform_``, ``nn.Embedding``'s normal), drawing from the generators. Those values are
    not the model's initialisation: ``post_parallelize`` initialises every model as it does a meta
    one, so the draws are undone here (the CPU generator and, when the build runs there, the
    device's), and the model's weights are the same bits whichever ``init_device`` built it.
    ``field`` names the setting in errors (legacy ``train.init_device``, new ``training.init_device``).
    """
    platform = get_platform()
    if init_device == "meta":
        with platform.meta_device():
            return build()
    device_type = platform.device_type()
    if init_device not in ("cpu", device_type):
        have = ", ".join(repr(d) for d in dict.fromkeys(("meta", "cpu", device_type)))
        raise ValueError(
            f"{field}={init_device!r}: this machine has no {init_device} device (the {platform.name} "
            f"platform runs on {device_type}); expected one of {have}"
        )
    handle = None if init_device == "cpu" else platform.get_device_handle(init_device)
    cpu_state = platform.get_rng_state()
    device_state = platform.get_rng_state(handle) if handle is not None else None
    context: Any = contextlib.nullcontext()
    if init_device != "cpu":  # the local device (set_device ran in setup_distributed)
        device = platform.device()
        context = device if hasattr(device, "__enter__") else contextlib.nullcontext()
    try:
        with context:
            return build()
    finally:
        platform.set_rng_state(cpu_state)
        if handle is not None:
            platform.set_rng_state(device_state, handle)


def post_parallelize(model: Any, *, mixed_precision: bool, materialize: Callable[[], None]) -> None:
    """Materialise and initialise the model, check trainable parameters are fp32 under mixed precision, train mode.

    ``materialize()`` is the trainer's own initialisation (legacy: ``_materialize_and_init_shards``;
    HyperTrainer: ``to_empty`` + ``model.init_weights``); the harness compares the two. It runs
    whatever ``init_device`` built the model (``build_model``), so a model built on a real device
    gets the weights a meta one gets, bit for bit, not its constructors' init. Initial weights are
    each trainer's own job after this (legacy: ``_load_weights``; HyperTrainer: the checkpoint
    component's ``load_weights``), so the harness compares two loaders, not one.
    """
    materialize()
    if mixed_precision:
        for name, param in model.named_parameters():
            dtype = get_platform().dtype_name(param)
            if param.requires_grad and dtype != "float32":
                raise RuntimeError(
                    f"trainable parameter {name} is {dtype}; with mixed precision every trainable "
                    "parameter must be float32 (FSDP2 casts for compute)"
                )
    model.train()


# ------------------------------------------------------------------ train-step arithmetic
def global_tokens(counts: list[int], dp_group_info: GroupInfo | None, device: Device) -> int:
    """Loss tokens of this step summed over the DP ("loss") group, forced >= 1."""
    platform = get_platform()
    local = sum(counts) or 1
    info = dp_group_info
    if platform.get_world_size() > 1 and info is not None and info.group is not None:
        t, _ = platform.all_reduce(platform.full((1,), local, device=device), info)
        return max(int(t.item()), 1)
    return local


def fsdp_micro_batch_flags(model: Any, index: int, num_micro: int) -> None:
    """FSDP2 gradient sync and reshard only around the last micro-batch of a step."""
    if not get_platform().is_fsdp_module(model):
        return
    is_last = index == num_micro - 1
    model.set_requires_gradient_sync(is_last)
    model.set_is_last_backward(is_last)
    if num_micro > 1 and index == 0:
        model.set_reshard_after_backward(False)
    if num_micro > 1 and is_last:
        model.set_reshard_after_backward(True)


def reported_loss(
    aggregation: str,
    *,
    loss_sum: float,
    arith_sum: float,
    num_micro: int,
    tok_local: int,
    global_tokens: int,
    dp_group_info: GroupInfo | None,
    device: Device,
) -> float:
    """The logged loss: the global token mean, or the DP mean of per-rank means (``rank_average``)."""
    platform = get_platform()
    info = dp_group_info
    if aggregation == "rank_average":
        local_mean = arith_sum / max(num_micro, 1)
        if info is not None and info.rank_size > 1:
            t, _ = platform.all_reduce(platform.full((1,), local_mean, device=device), info)
            return t.item() / info.rank_size
        return local_mean
    if platform.get_world_size() > 1 and info is not None and info.group is not None:
        t, _ = platform.all_reduce(platform.full((1,), loss_sum, device=device), info)
        return t.item() / max(global_tokens, 1)
    return loss_sum / max(tok_local, 1)


# --------------------------------------------------------------------- non-finite values
class NonFiniteError(RuntimeError):
    """A step's loss or gradient norm is NaN or infinite while ``check_nan_inf`` is on: the run stops.

    Raised on every rank (the values checked are reduced over the ranks, so all see the same);
    the command lines print its message as one line with exit status 1.
    """


@dataclass
class LossWatch:
    """Each step's reported loss: a non-finite one stops the run (``check_nan_inf``) or is warned about once.

    A step with no token to predict (every label ignored, or rows of one token: the shifted labels
    leave nothing) has a mean loss of 0/0. ``field`` names the switch in messages (legacy
    ``train.debug.check_nan_inf``, new ``debug.check_nan_inf``).
    """

    check_nan_inf: bool
    field: str
    warned_step: int | None = None

    def check(self, loss: float, step: int) -> None:
        if get_platform().is_finite(loss):
            return
        cause = "a step with no token to predict (every label ignored, or rows of one token) gives nan"
        if self.check_nan_inf:
            raise NonFiniteError(
                f"loss is {loss} at step {step}; the run stops there ({self.field} is on; {cause})"
            )
        if self.warned_step is None:
            self.warned_step = step
            logger.warning_rank0(
                "loss is %s at step %d: not finite; training goes on (%s is off: set it to stop instead; %s); "
                "later non-finite losses are not reported",
                loss,
                step,
                self.field,
                cause,
            )


# ------------------------------------------------------------------------- user callbacks
def dispatch_callbacks(callbacks: Iterable[Any], hook: str, state: TrainerState, **kwargs: Any) -> None:
    """``callback.<hook>(state, **kwargs)`` on each callback, in order (the legacy callback API)."""
    for callback in callbacks:
        getattr(callback, hook)(state, **kwargs)
