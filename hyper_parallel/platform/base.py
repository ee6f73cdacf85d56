"""The ``Platform`` protocol: the framework contract that new code relies on.

New code (``protocols``, ``config``, ``components``, ``HyperTrainer`` and the ``BaseTrainer``
``_helper_*`` methods it shares, ``ParallelDims``, the parity harness) reaches the framework only
through the object :func:`hyper_parallel.platform.get_platform` returns. This protocol lists every
member that code reads, with the signature the torch platform implements; a MindSpore platform
implements the same members with the same signatures.

The list is derived from the code, not the other way round: ``tests/torch/platform/test_platform_protocol.py``
scans the new-code modules and fails when they use a platform member missing here, and checks that
``TorchPlatform`` has every member with the same parameter names and kinds. A new platform call
in new code therefore means a new entry here (and in every platform).

Tensors, dtypes, devices, modules, optimizers and process groups are framework objects, so they
are typed ``Any`` (aliases below name what is meant). ``TorchPlatform`` also has members that no
new code uses (``tensor``, ``zeros``, ``numel``, ``no_grad``, ``to_local_cpu``,
``float64_numpy``, ``set_num_threads``, ``dcp_read_metadata``); they are not part of the contract.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeAlias, runtime_checkable

from hyper_parallel.platform.group import GroupInfo

__all__ = [
    "DEFAULT_RENDEZVOUS_TIMEOUT_S",
    "RENDEZVOUS_TIMEOUT_ENV",
    "Device",
    "DType",
    "Platform",
    "RendezvousTimeoutError",
    "Tensor",
    "rendezvous_timeout_seconds",
]

Tensor: TypeAlias = Any  # the framework's tensor type (torch.Tensor, mindspore.Tensor)
DType: TypeAlias = Any  # the framework's dtype object
Device: TypeAlias = Any  # the framework's device object (or a device string)
PathLike: TypeAlias = str | os.PathLike[str]

# How long the process group's rendezvous may take before the run stops (seconds; see README).
RENDEZVOUS_TIMEOUT_ENV = "HYPER_PARALLEL_RENDEZVOUS_TIMEOUT"
DEFAULT_RENDEZVOUS_TIMEOUT_S = 60.0


class RendezvousTimeoutError(RuntimeError):
    """The process group's rendezvous did not complete in time: the message names the variables it
    read (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and what to do. A configuration error of the
    environment (a stale ``WORLD_SIZE``, a rank that never started): the entry points print it as
    one line with exit status 2."""


def rendezvous_timeout_seconds() -> float:
    """``HYPER_PARALLEL_RENDEZVOUS_TIMEOUT`` as seconds (default 60); ``ValueError`` naming it when it is not > 0."""
    raw = os.environ.get(RENDEZVOUS_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_RENDEZVOUS_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise ValueError(
            f"{RENDEZVOUS_TIMEOUT_ENV}={raw!r}: expected a number of seconds > 0 "
            f"(default {DEFAULT_RENDEZVOUS_TIMEOUT_S:g})"
        )
    return value


@runtime_checkable
class Platform(Protocol):
    """Device, RNG, numerics, tensor, loss/optimizer, checkpoint I/O and collective access."""

    name: str
    """The backend name (``"torch"``, ``"mindspore"``); it keys parity goldens and reports."""

    # ------------------------------------------------------------------ device
    def device_type(self) -> str:
        """``"npu"``, ``"cuda"`` or ``"cpu"``: the accelerator this process runs on."""
        ...

    def device(self, idx: int | None = None) -> Device:
        """The device object for local index ``idx`` (the bare device type when ``None``; CPU ignores it)."""
        ...

    def get_device_handle(self, device_type: str | None = None) -> Any:
        """The framework's module for a device type (``torch.cuda``...); ``RuntimeError`` if it has none."""
        ...

    def meta_device(self) -> AbstractContextManager[Any]:
        """A context in which modules are built without memory or RNG draws (the meta device)."""
        ...

    def move_to_device(self, obj: Any, device: Device) -> Any:
        """``obj`` with every tensor (recursively through dict/list/tuple) moved to ``device``."""
        ...

    # --------------------------------------------------------------------- RNG
    def manual_seed(self, seed: int) -> None:
        """Seed the global CPU generator."""
        ...

    def seed_everything(self, seed: int, device_type: str | None = None) -> None:
        """Seed the CPU generator and the device generators (best effort on the device)."""
        ...

    def get_rng_state(self, device_handle: Any = None) -> Tensor:
        """The CPU generator state, or a device generator's state when ``device_handle`` is given."""
        ...

    def set_rng_state(self, state: Tensor, device_handle: Any = None) -> None:
        """Restore a state returned by :meth:`get_rng_state`."""
        ...

    def generator(self, seed: int) -> Any:
        """A fresh CPU generator seeded with ``seed`` (independent of the global one)."""
        ...

    # ------------------------------------------------- determinism and CPU numerics
    def set_deterministic(self, enabled: bool, warn_only: bool = False) -> None:
        """Turn deterministic algorithms (and the matching device library settings) on or off."""
        ...

    def is_deterministic(self) -> bool:
        """Whether deterministic algorithms are on."""
        ...

    def determinism_settings(self) -> dict[str, Any]:
        """The settings that decide run-to-run reproducibility on this device (recorded in goldens)."""
        ...

    def cpu_capability(self) -> str:
        """The vectorised CPU kernel set in use (``AVX2``, ``AVX512``, ``DEFAULT``...)."""
        ...

    def num_threads(self) -> int:
        """The number of intra-op CPU threads."""
        ...

    def cpu_libraries(self) -> dict[str, str]:
        """The BLAS and oneDNN builds the framework links (``{"blas": ..., "onednn": ...}``)."""
        ...

    # ----------------------------------------------------------------- tensors
    def is_tensor(self, obj: Any) -> bool:
        """Whether ``obj`` is a framework tensor."""
        ...

    def is_dtype(self, obj: Any) -> bool:
        """Whether ``obj`` is a framework dtype object."""
        ...

    def is_floating(self, tensor: Tensor) -> bool:
        """Whether the tensor has a floating-point dtype."""
        ...

    def is_finite(self, value: float) -> bool:
        """Whether a Python float is finite (neither inf nor NaN)."""
        ...

    def full(self, size: Any, fill_value: Any, dtype: DType = None, device: Device = None) -> Tensor:
        """A tensor of shape ``size`` filled with ``fill_value``."""
        ...

    def as_int64(self, data: Any) -> Tensor:
        """``data`` (an int list or a tensor) as an int64 tensor, without a copy when it already is one."""
        ...

    def stack(self, tensors: Iterable[Tensor], dim: int = 0) -> Tensor:
        """Stack same-shape tensors along a new dimension ``dim``."""
        ...

    def cat(self, tensors: Iterable[Tensor], dim: int = 0) -> Tensor:
        """Concatenate tensors along the existing dimension ``dim``."""
        ...

    def pad_last_dim(self, tensor: Tensor, right: int, value: Any) -> Tensor:
        """Pad the last dimension with ``right`` copies of ``value`` on the right."""
        ...

    def dtype_from_name(self, name: str) -> DType:
        """The dtype for a name such as ``"bf16"`` or ``"float32"``; ``ValueError`` listing the known names."""
        ...

    def dtype_name(self, tensor: Tensor) -> str:
        """The tensor's dtype as a framework-neutral name (``"float32"``, ``"bfloat16"``...)."""
        ...

    def shape(self, tensor: Tensor) -> list[int]:
        """The tensor's shape as a list of ints (a sharded tensor's global shape)."""
        ...

    def local_shape(self, tensor: Tensor) -> list[int]:
        """This rank's part of the tensor, as a list of ints: what ``raw_bytes`` holds."""
        ...

    def full_tensor(self, tensor: Tensor) -> Tensor:
        """The global value of a sharded tensor (a collective); a plain tensor is returned as is."""
        ...

    def detached_copy(self, tensor: Tensor) -> Tensor:
        """A detached, contiguous copy that owns its storage."""
        ...

    def raw_bytes(self, tensor: Tensor) -> memoryview:
        """This rank's tensor data as raw bytes (what parity hashes)."""
        ...

    def int_view_numpy(self, tensor: Tensor) -> Any:
        """A flat numpy array of same-width integers (keeps -0.0/+0.0 and NaN payloads distinct)."""
        ...

    # ---------------------------------------------------- losses, optimizers, autograd
    def cross_entropy(
        self, logits: Tensor, labels: Tensor, ignore_index: int = -100, reduction: str = "mean"
    ) -> Tensor:
        """Cross-entropy of ``logits`` against class ids ``labels`` (the framework's fused kernel)."""
        ...

    def log_softmax(self, tensor: Tensor, dim: int = -1) -> Tensor:
        """``log(softmax(tensor))`` along ``dim``."""
        ...

    def nll_loss(
        self, log_probs: Tensor, labels: Tensor, ignore_index: int = -100, reduction: str = "mean"
    ) -> Tensor:
        """Negative log-likelihood of class ids ``labels`` under ``log_probs``."""
        ...

    def recompute(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` keeping no activations; backward runs ``fn`` again (activation checkpointing)."""
        ...

    def adamw(self, param_groups: Any, **kwargs: Any) -> Any:
        """An AdamW optimizer over params or param groups (``lr``, ``betas``, ``eps``, ``weight_decay``...)."""
        ...

    def lambda_lr(self, optimizer: Any, lr_lambda: Callable[[int], float]) -> Any:
        """A LambdaLR scheduler (it evaluates ``lr_lambda(0)`` at construction)."""
        ...

    def backward(self, loss_fn: Callable[[], tuple[Tensor, Any]], model: Any) -> Any:
        """Run ``loss_fn() -> (loss, aux)`` and add d(loss)/d(param) to every trainable parameter of
        ``model``'s gradient; returns ``aux`` detached.

        The one autograd seam of the new path: torch records a tape and calls ``loss.backward()``;
        a functional framework (MindSpore) differentiates ``loss_fn`` itself and keeps the sums.
        """
        ...

    def grad_of(self, param: Any) -> Tensor | None:
        """The gradient :meth:`backward` accumulated for ``param`` (torch: ``param.grad``), or ``None``."""
        ...

    def clip_grad_norm(self, parameters: Iterable[Any], max_norm: float) -> Tensor:
        """Clip gradients in place to total norm ``max_norm``; returns the norm before clipping."""
        ...

    def register_post_accumulate_grad_hook(self, param: Any, hook: Callable[[Any], None]) -> Any:
        """Call ``hook(param)`` after each backward accumulates its gradient; returns a removable handle."""
        ...

    def is_fsdp_module(self, module: Any) -> bool:
        """Whether ``module`` is wrapped by fully-sharded data parallel (FSDP2)."""
        ...

    # ------------------------------------------------------------------- data
    def distributed_sampler(
        self, dataset: Any, *, num_replicas: int, rank: int, shuffle: bool, seed: int, drop_last: bool
    ) -> Any:
        """A sampler giving rank ``rank`` of ``num_replicas`` its share of ``dataset``'s indices."""
        ...

    def stateful_dataloader(self, dataset: Any, **kwargs: Any) -> Any:
        """A data loader that can save and resume its position through ``state_dict()``."""
        ...

    # ------------------------------------------------------ profiler and metrics
    def profiler(self, *, output_dir: str, rank: int, wait: int, warmup: int, active: int) -> Any:
        """A profiler context with a one-cycle ``wait/warmup/active`` schedule writing traces under ``output_dir``."""
        ...

    def null_context(self) -> AbstractContextManager[Any]:
        """A context manager that does nothing (the disabled profiler)."""
        ...

    def wall_time(self) -> float:
        """Seconds since the epoch (the step timer's clock)."""
        ...

    def summary_writer_class(self) -> type[Any]:
        """The TensorBoard ``SummaryWriter`` class for this framework; ``ImportError`` if unavailable."""
        ...

    # ------------------------------------------------------------ checkpoint I/O
    def save(self, obj: Any, path: PathLike) -> None:
        """Serialise ``obj`` (tensors, dicts, Python values) to ``path``."""
        ...

    def load(self, path: PathLike, *, weights_only: bool = True, map_location: Any = "cpu") -> Any:
        """Read an object written by :meth:`save`; ``map_location=None`` keeps the saved devices."""
        ...

    def save_safetensors(self, tensors: Mapping[str, Tensor], path: PathLike, metadata: Any = None) -> None:
        """Write ``tensors`` as a safetensors file (storage must not be shared between tensors)."""
        ...

    def load_safetensors(self, path: PathLike) -> dict[str, Tensor]:
        """Read every tensor of a safetensors file onto the CPU."""
        ...

    def check_safetensors(self, path: PathLike) -> list[str]:
        """The keys of a safetensors file; ``ValueError`` naming it when its header or length is damaged."""
        ...

    def dcp_save(
        self, state_dict: Any, checkpoint_id: str, *, async_op: bool = False, process_group: Any = None
    ) -> Any:
        """Write a distributed checkpoint folder; with ``async_op`` returns a handle for :meth:`dcp_wait`."""
        ...

    def dcp_wait(self, handle: Any) -> None:
        """Block until an asynchronous :meth:`dcp_save` has finished; its failure is re-raised."""
        ...

    def dcp_load(self, state_dict: Any, checkpoint_id: str) -> None:
        """Load a distributed checkpoint into ``state_dict`` in place, through a restricted reader."""
        ...

    def dcp_tensor_shapes(self, checkpoint_id: str) -> dict[str, tuple[int, ...]]:
        """The global shape of every tensor in a distributed checkpoint, by key (metadata only)."""
        ...

    def dcp_entries(self, checkpoint_id: str) -> dict[str, tuple[tuple[int, ...], bool] | None]:
        """Every entry of a distributed checkpoint by key (metadata only): ``(shape, is_floating)``
        of a tensor as stored, None for a non-tensor entry."""
        ...

    def dcp_full_state_dict(self, checkpoint_id: str) -> dict[str, Any]:
        """Every entry of a distributed checkpoint as full CPU values, read without a target state dict."""
        ...

    def dcp_damaged_file(self, checkpoint_id: str) -> tuple[str, str] | None:
        """``(file, reason)`` for the first missing or truncated file of a checkpoint folder, else ``None``."""
        ...

    def dcp_errors(self) -> tuple[type[BaseException], ...]:
        """Checkpoint failure types beyond ``OSError``/``RuntimeError``/``ValueError``."""
        ...

    def unsafe_pickle_error(self) -> type[Exception]:
        """The error the restricted checkpoint readers raise for a crafted pickle."""
        ...

    def full_model_state_dict(self, model: Any) -> dict[str, Tensor]:
        """The unsharded, CPU-offloaded model state dict (a collective: every rank calls it)."""
        ...

    def set_full_model_state_dict(self, model: Any, state_dict: Any, *, strict: bool = False) -> Any:
        """Load a full (unsharded) state dict into a possibly sharded model."""
        ...

    # ------------------------------------------------------------- collectives
    def is_distributed(self) -> bool:
        """Whether a default process group is initialised."""
        ...

    def get_rank(self, group: Any = None) -> int:
        """This process's rank in ``group`` (the world when ``None``); 0 without a process group."""
        ...

    def get_world_size(self, group: Any = None) -> int:
        """The number of ranks in ``group`` (the world when ``None``); 1 without a process group."""
        ...

    def init_process_group(self, backend: str | None = None, timeout_seconds: float | None = None) -> None:
        """Initialise the default process group once (plain ``python`` becomes a 1-rank world);
        ``timeout_seconds`` bounds the rendezvous and collectives (``None``: the framework default)."""
        ...

    def destroy_process_group(self) -> None:
        """Tear down the default process group, if any, and what :meth:`init_process_group` set up."""
        ...

    def new_group(self, backend: str | None = None) -> Any:
        """A new process group over all ranks (for example a gloo group for asynchronous saves)."""
        ...

    def barrier(self) -> None:
        """Wait for every rank (a no-op without a process group)."""
        ...

    def all_reduce(self, tensor: Tensor, group_info: GroupInfo | None, async_op: bool = False) -> Any:
        """SUM all-reduce over ``group_info.group``; returns ``(tensor, work_or_None)``."""
        ...

    def init_device_mesh(self, device_type: str, shape: Any, mesh_dim_names: Any) -> Any:
        """A device mesh of ``shape`` with named dimensions over all ranks."""
        ...
