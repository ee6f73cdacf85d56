"""The torch platform: every framework operation that new code needs, in one place."""

from __future__ import annotations

import contextlib
import datetime
import logging
import math
import os
import re
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import torch
import torch.distributed as dist

from hyper_parallel.platform.base import (
    DEFAULT_RENDEZVOUS_TIMEOUT_S,
    RENDEZVOUS_TIMEOUT_ENV,
    RendezvousTimeoutError,
    rendezvous_timeout_seconds,
)
from hyper_parallel.platform.group import GroupInfo

logger = logging.getLogger(__name__)

_DEFAULT_BACKENDS = {"cpu": "gloo", "cuda": "nccl", "npu": "hccl"}

# Integer dtype with the same width, used to compare and hash tensors bit for bit.
_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

# The training dtype spellings of the legacy schema (mixed precision, HF load dtype): the one map
# that the legacy trainer, the model's parallelize plan and the platform all read.
TRAINING_DTYPES = {
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
    "float32": torch.float32,
    "fp32": torch.float32,
}
DTYPE_NAMES = {**TRAINING_DTYPES, "float64": torch.float64, "fp64": torch.float64}


# Set when init_process_group made the 1-rank env:// world itself (plain ``python``, no launcher).
_SELF_WORLD_MARK = "HYPER_PARALLEL_SELF_WORLD"
_SELF_WORLD_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
# What the env:// rendezvous reads (named when it does not complete).
_RENDEZVOUS_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _default_pg_timeout(backend: str) -> datetime.timedelta:
    """The timeout ``init_process_group`` gives a group (and its store) when none is asked for."""
    default = getattr(dist.distributed_c10d, "_get_default_timeout", None)
    if default is not None:
        return default(backend)
    from torch.distributed import constants

    return constants.default_pg_timeout


def _self_world_env() -> dict[str, str]:
    return {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        _SELF_WORLD_MARK: "1",
    }


def _cpu_libraries() -> dict[str, str]:
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    mkl = re.search(r"Math Kernel Library Version ([^\n]+?) for", config)
    onednn = re.search(r"MKL-DNN (v[\d.]+)", config)
    vendor = blas.group(1) if blas else "none"
    version = mkl.group(1).strip() if mkl and vendor == "mkl" else "unknown"
    return {"blas": f"{vendor} {version}", "onednn": onednn.group(1) if onednn else "none"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _refuse_crafted_metadata(checkpoint_id: str) -> None:
    """Read ``.metadata`` once up front, so that a crafted one is reported as itself rather than
    inside DCP's per-rank ``CheckpointException`` text; any other read failure is left to DCP."""
    from hyper_parallel.platform.safe_dcp import UnsafePickleError, read_metadata

    try:
        read_metadata(checkpoint_id)
    except UnsafePickleError:
        raise
    except Exception:  # DCP raises its own error for a missing or damaged file
        pass


class TorchPlatform:
    """Device, RNG, tensor, collective and optimizer access backed by torch."""

    name = "torch"

    # ------------------------------------------------------------------ device
    def device_type(self) -> str:
        """``"npu"`` when torch_npu imports and reports a device, else ``"cuda"``, else ``"cpu"``.

        Probed once per platform object: a failed ``import torch_npu`` searches the whole path again
        on every call, and builders ask often.
        """
        cached = self.__dict__.get("_device_type")
        if cached is None:
            cached = self.__dict__["_device_type"] = self._probe_device_type()
        return cached

    def _probe_device_type(self) -> str:
        try:
            import torch_npu  # noqa: F401

            if torch.npu.is_available():  # type: ignore[attr-defined]
                return "npu"
        except Exception:  # any failure means no NPU
            pass
        if torch.cuda.is_available():
            return "cuda"
        return "cpu"

    def device(self, idx: int | None = None) -> torch.device:
        dtype = self.device_type()
        if dtype == "cpu":
            return torch.device("cpu")
        return torch.device(f"{dtype}:{idx}") if idx is not None else torch.device(dtype)

    def get_device_handle(self, device_type: str | None = None):
        dtype = device_type or self.device_type()
        handle = getattr(torch, dtype, None)
        if handle is None:
            raise RuntimeError(f"torch has no device module for device type {dtype!r}")
        return handle

    # --------------------------------------------------------------------- RNG
    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def seed_everything(self, seed: int, device_type: str | None = None) -> None:
        """Seed the CPU generator, then the device generators where the handle has a seeder."""
        self.manual_seed(seed)
        try:
            handle = self.get_device_handle(device_type)
            if hasattr(handle, "manual_seed_all"):
                handle.manual_seed_all(seed)
            elif hasattr(handle, "manual_seed"):
                handle.manual_seed(seed)
        except Exception as exc:  # seeding a device is best effort
            logger.warning("could not seed device generator: %s", exc)

    def get_rng_state(self, device_handle=None) -> torch.Tensor:
        if (
            device_handle is not None
            and hasattr(device_handle, "get_rng_state")
            and device_handle is not torch.cpu
        ):
            return device_handle.get_rng_state()
        return torch.get_rng_state()

    def set_rng_state(self, state: torch.Tensor, device_handle=None) -> None:
        if (
            device_handle is not None
            and hasattr(device_handle, "set_rng_state")
            and device_handle is not torch.cpu
        ):
            device_handle.set_rng_state(state)
            return
        torch.set_rng_state(state)

    def generator(self, seed: int) -> torch.Generator:
        return torch.Generator().manual_seed(seed)

    def set_deterministic(self, enabled: bool, warn_only: bool = False) -> None:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
        torch.backends.cudnn.deterministic = enabled
        torch.backends.cudnn.benchmark = not enabled
        if enabled and self.device_type() == "cuda":
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

    def is_deterministic(self) -> bool:
        return torch.are_deterministic_algorithms_enabled()

    def determinism_settings(self) -> dict[str, Any]:
        """What decides run-to-run reproducibility on this device (recorded in parity goldens)."""
        settings: dict[str, Any] = {"deterministic_algorithms": self.is_deterministic()}
        if self.device_type() == "cuda":
            settings["cudnn_deterministic"] = bool(torch.backends.cudnn.deterministic)
            settings["cublas_workspace_config"] = os.environ.get("CUBLAS_WORKSPACE_CONFIG", "unset")
        elif self.device_type() == "npu":
            settings["hccl_deterministic"] = os.environ.get("HCCL_DETERMINISTIC", "unset")
        return settings

    # ------------------------------------------------------------ CPU numerics
    def cpu_capability(self) -> str:
        """The vectorised kernel set ATen runs (``AVX2``, ``AVX512``, ``DEFAULT``), read back from torch."""
        return str(torch.backends.cpu.get_cpu_capability()).upper()

    def num_threads(self) -> int:
        return torch.get_num_threads()

    def set_num_threads(self, threads: int) -> None:
        torch.set_num_threads(threads)

    def cpu_libraries(self) -> dict[str, str]:
        """BLAS and oneDNN builds torch links (vendor and version, from ``torch.__config__``)."""
        return _cpu_libraries()

    # ----------------------------------------------------------------- tensors
    def is_tensor(self, obj: Any) -> bool:
        return isinstance(obj, torch.Tensor)

    def tensor(self, data, dtype=None, device=None) -> torch.Tensor:
        return torch.tensor(data, dtype=dtype, device=device)

    def full(self, size, fill_value, dtype=None, device=None) -> torch.Tensor:
        return torch.full(size, fill_value, dtype=dtype, device=device)

    def zeros(self, size, dtype=None, device=None) -> torch.Tensor:
        return torch.zeros(size, dtype=dtype, device=device)

    def stack(self, tensors, dim: int = 0) -> torch.Tensor:
        return torch.stack(list(tensors), dim=dim)

    def dtype_from_name(self, name: str):
        try:
            return DTYPE_NAMES[name.lower()]
        except KeyError:
            raise ValueError(f"unknown dtype {name!r}; expected one of {sorted(DTYPE_NAMES)}") from None

    def dtype_name(self, tensor: torch.Tensor) -> str:
        return str(tensor.dtype).removeprefix("torch.")

    def shape(self, tensor: torch.Tensor) -> list[int]:
        return list(tensor.shape)

    def local_shape(self, tensor: torch.Tensor) -> list[int]:
        """This rank's shape: a DTensor's local shard, matching ``raw_bytes``."""
        return list(tensor.to_local().shape if hasattr(tensor, "to_local") else tensor.shape)

    def to_local_cpu(self, tensor: torch.Tensor) -> torch.Tensor:
        """A detached, contiguous CPU tensor holding this rank's data (DTensor -> local shard)."""
        if hasattr(tensor, "to_local"):
            tensor = tensor.to_local()
        return tensor.detach().to("cpu").contiguous()

    def raw_bytes(self, tensor: torch.Tensor) -> memoryview:
        """The tensor's bytes, without a copy when it is already a contiguous CPU tensor."""
        t = self.to_local_cpu(tensor).reshape(-1)
        if t.dtype == torch.bool:
            t = t.view(torch.uint8)
        return t.view(torch.uint8).numpy().data.cast("B")

    def int_view_numpy(self, tensor: torch.Tensor):
        """A numpy array of same-width integers: -0.0/+0.0 and NaN payloads stay distinct."""
        t = self.to_local_cpu(tensor).reshape(-1)
        if t.dtype == torch.bool:
            return t.view(torch.uint8).numpy()
        if t.is_floating_point() or t.is_complex():
            return t.view(_INT_VIEW[t.element_size()]).numpy()
        return t.numpy()

    def float64_numpy(self, tensor: torch.Tensor):
        t = self.to_local_cpu(tensor).reshape(-1)
        if t.is_complex():
            t = t.abs()
        return t.to(torch.float64).numpy()

    def numel(self, tensor: torch.Tensor) -> int:
        return tensor.numel()

    def is_floating(self, tensor: torch.Tensor) -> bool:
        return tensor.is_floating_point()

    def no_grad(self):
        return torch.no_grad()

    def meta_device(self):
        """A context in which modules are built on the meta device (no memory, no RNG draws)."""
        return torch.device("meta")

    def move_to_device(self, obj: Any, device) -> Any:
        """Tensors (recursively through dict/list/tuple) moved with ``non_blocking=True``."""
        if isinstance(obj, torch.Tensor):
            return obj.to(device, non_blocking=True)
        if isinstance(obj, dict):
            return {k: self.move_to_device(v, device) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.move_to_device(v, device) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.move_to_device(v, device) for v in obj)
        return obj

    def full_tensor(self, tensor):
        """The global value of a DTensor (a collective); a plain tensor is returned as is."""
        return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor

    def is_finite(self, value: float) -> bool:
        return math.isfinite(value)

    # ------------------------------------------------------------ nn / optim
    def cross_entropy(self, logits, labels, ignore_index: int = -100, reduction: str = "mean"):
        return torch.nn.functional.cross_entropy(
            logits, labels, ignore_index=ignore_index, reduction=reduction
        )

    def pad_last_dim(self, tensor, right: int, value):
        return torch.nn.functional.pad(tensor, (0, right), value=value)

    def log_softmax(self, tensor, dim: int = -1):
        return torch.log_softmax(tensor, dim=dim)

    def nll_loss(self, log_probs, labels, ignore_index: int = -100, reduction: str = "mean"):
        return torch.nn.functional.nll_loss(log_probs, labels, ignore_index=ignore_index, reduction=reduction)

    def cat(self, tensors, dim: int = 0):
        return torch.cat(list(tensors), dim=dim)

    def recompute(self, fn: Callable[..., Any], *args):
        """``fn(*args)`` keeping no activations: backward runs ``fn`` again (non-reentrant checkpoint)."""
        from torch.utils.checkpoint import checkpoint

        return checkpoint(fn, *args, use_reentrant=False)

    def adamw(self, param_groups, **kwargs):
        return torch.optim.AdamW(param_groups, **kwargs)

    def lambda_lr(self, optimizer, lr_lambda: Callable[[int], float]):
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)

    def backward(self, loss_fn: Callable[[], tuple[Any, Any]], model) -> Any:
        """``loss.backward()`` on the tape ``loss_fn`` recorded; gradients accumulate in ``param.grad``."""
        loss, aux = loss_fn()
        loss.backward()
        return aux.detach() if isinstance(aux, torch.Tensor) else aux

    def grad_of(self, param) -> torch.Tensor | None:
        return param.grad

    def clip_grad_norm(self, parameters: Iterable, max_norm: float):
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm)

    def register_post_accumulate_grad_hook(self, param, hook: Callable[[Any], None]):
        """Call ``hook(param)`` once per backward, after the gradient is accumulated; returns a handle."""
        return param.register_post_accumulate_grad_hook(hook)

    def is_fsdp_module(self, module) -> bool:
        from torch.distributed.fsdp import FSDPModule

        return isinstance(module, FSDPModule)

    def profiler(self, *, output_dir: str, rank: int, wait: int, warmup: int, active: int):
        """A started-on-enter torch profiler with a one-cycle schedule writing chrome traces."""
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device_type() == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        return torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=1),
            on_trace_ready=torch.profiler.tensorboard_trace_handler(
                f"{output_dir}/rank_{rank}", worker_name=f"rank{rank}"
            ),
        )

    def null_context(self):
        return contextlib.nullcontext()

    # ---------------------------------------------------------------- metrics
    def wall_time(self) -> float:
        """Seconds since the epoch (``time.time()``, as the legacy step timer reads it)."""
        return time.time()

    def summary_writer_class(self):
        """TensorBoard's ``SummaryWriter`` for this framework; ``ImportError`` when unavailable."""
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter

    # ------------------------------------------------------------------- data
    def as_int64(self, data) -> torch.Tensor:
        """``data`` (int list or tensor) as an int64 tensor; no copy when it already is one."""
        return torch.as_tensor(data, dtype=torch.int64)

    def distributed_sampler(
        self, dataset, *, num_replicas: int, rank: int, shuffle: bool, seed: int, drop_last: bool
    ):
        from torch.utils.data.distributed import DistributedSampler

        return DistributedSampler(
            dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last
        )

    def stateful_dataloader(self, dataset, **kwargs):
        """A ``torchdata`` ``StatefulDataLoader`` (resumable mid-epoch through its state_dict)."""
        from torchdata.stateful_dataloader import StatefulDataLoader

        return StatefulDataLoader(dataset, **kwargs)

    # ------------------------------------------------------------ save / load
    def save(self, obj: Any, path: str | os.PathLike) -> None:
        torch.save(obj, path)

    def load(self, path: str | os.PathLike, *, weights_only: bool = True, map_location: Any = "cpu") -> Any:
        """``torch.load``; ``map_location=None`` keeps tensors on the device they were saved from."""
        return torch.load(path, map_location=map_location, weights_only=weights_only)

    def save_safetensors(
        self, tensors: Mapping[str, torch.Tensor], path: str | os.PathLike, metadata=None
    ) -> None:
        from safetensors.torch import save_file

        save_file(dict(tensors), str(path), metadata=metadata)

    def load_safetensors(self, path: str | os.PathLike) -> dict[str, torch.Tensor]:
        from safetensors.torch import load_file

        return load_file(str(path))

    def dcp_save(self, state_dict, checkpoint_id: str, *, async_op: bool = False, process_group=None):
        import torch.distributed.checkpoint as dcp

        if async_op:
            return dcp.async_save(state_dict, checkpoint_id=checkpoint_id, process_group=process_group)
        dcp.save(state_dict, checkpoint_id=checkpoint_id)
        return None

    def dcp_load(self, state_dict, checkpoint_id: str) -> None:
        """``dcp.load`` in place, through the restricted reader (no code runs from the folder)."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.api import CheckpointException

        from hyper_parallel.platform.safe_dcp import SafeFileSystemReader, UnsafePickleError

        _refuse_crafted_metadata(checkpoint_id)
        try:
            dcp.load(
                state_dict, checkpoint_id=checkpoint_id, storage_reader=SafeFileSystemReader(checkpoint_id)
            )
        except CheckpointException as exc:
            for failure in exc.failures.values():
                inner = failure[0] if isinstance(failure, tuple) else failure
                if isinstance(inner, UnsafePickleError):
                    raise inner from None
            raise

    def dcp_read_metadata(self, checkpoint_id: str):
        """A DCP folder's ``Metadata`` through the restricted unpickler (``UnsafePickleError`` if crafted)."""
        from hyper_parallel.platform.safe_dcp import read_metadata

        return read_metadata(checkpoint_id)

    def dcp_tensor_shapes(self, checkpoint_id: str) -> dict[str, tuple[int, ...]]:
        """Global shape of every tensor a DCP folder holds, by state-dict key (metadata only)."""
        from torch.distributed.checkpoint.metadata import TensorStorageMetadata

        metadata = self.dcp_read_metadata(checkpoint_id)
        return {
            key: tuple(int(n) for n in md.size)
            for key, md in metadata.state_dict_metadata.items()
            if isinstance(md, TensorStorageMetadata)
        }

    def dcp_entries(self, checkpoint_id: str) -> dict[str, tuple[tuple[int, ...], bool] | None]:
        """Every entry a DCP folder holds, by state-dict key (metadata only): ``(global shape,
        is_floating)`` of a tensor as stored (what a load would cast is known before it is read),
        None for a non-tensor entry."""
        from torch.distributed.checkpoint.metadata import TensorStorageMetadata

        metadata = self.dcp_read_metadata(checkpoint_id)
        return {
            key: (tuple(int(n) for n in md.size), bool(md.properties.dtype.is_floating_point))
            if isinstance(md, TensorStorageMetadata)
            else None
            for key, md in metadata.state_dict_metadata.items()
        }

    def dcp_full_state_dict(self, checkpoint_id: str) -> dict[str, Any]:
        """Every entry of a DCP folder as full CPU tensors (no target state dict needed), read safely."""
        from torch.distributed.checkpoint.default_planner import _EmptyStateDictLoadPlanner
        from torch.distributed.checkpoint.state_dict_loader import _load_state_dict

        from hyper_parallel.platform.safe_dcp import SafeFileSystemReader

        _refuse_crafted_metadata(checkpoint_id)
        state: dict[str, Any] = {}
        _load_state_dict(
            state,
            storage_reader=SafeFileSystemReader(checkpoint_id),
            planner=_EmptyStateDictLoadPlanner(),
            no_dist=True,
        )
        return state

    def unsafe_pickle_error(self) -> type[Exception]:
        """The error the restricted checkpoint readers raise for a crafted pickle."""
        from hyper_parallel.platform.safe_dcp import UnsafePickleError

        return UnsafePickleError

    def dcp_wait(self, handle) -> None:
        """Block until an ``async_save`` handle has finished writing; its failure is re-raised."""
        getattr(handle, "upload_completion", handle).result()

    def dcp_errors(self) -> tuple[type[BaseException], ...]:
        """DCP failure types beyond OSError/RuntimeError/ValueError (CheckpointException is a BaseException)."""
        from torch.distributed.checkpoint.api import CheckpointException

        return (CheckpointException,)

    def dcp_damaged_file(self, checkpoint_id: str) -> tuple[str, str] | None:
        """``(file, reason)`` for the first damaged file of a DCP folder, or None when none is found.

        Checks that ``.metadata`` unpickles and that every shard it lists exists and is long enough
        for the byte ranges it records. DCP keeps no checksums: same-size corruption is not found.
        """
        from hyper_parallel.platform.safe_dcp import UnsafePickleError, read_metadata

        meta_path = os.path.join(checkpoint_id, ".metadata")
        try:
            metadata = read_metadata(checkpoint_id)
        except UnsafePickleError:
            raise
        except Exception as exc:  # any failure means an unreadable file
            return meta_path, f"unreadable DCP metadata ({type(exc).__name__}: {exc})"
        needed: dict[str, int] = {}
        for info in (getattr(metadata, "storage_data", None) or {}).values():
            end = int(info.offset) + int(info.length)
            needed[info.relative_path] = max(needed.get(info.relative_path, 0), end)
        for name, end in sorted(needed.items()):
            shard = os.path.join(checkpoint_id, name)
            if not os.path.isfile(shard):
                return shard, f"DCP shard listed in {meta_path} is missing"
            size = os.path.getsize(shard)
            if size < end:
                return shard, f"DCP shard is truncated ({size} bytes, {meta_path} expects {end})"
        return None

    def check_safetensors(self, path: str | os.PathLike) -> list[str]:
        """The keys of a safetensors file; ``ValueError`` naming it when its header or length is damaged."""
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="pt", device="cpu") as f:
                return list(f.keys())
        except Exception as exc:  # SafetensorError is a bare Exception
            raise ValueError(f"{path}: unreadable safetensors file ({type(exc).__name__}: {exc})") from exc

    def detached_copy(self, tensor: torch.Tensor) -> torch.Tensor:
        """A detached, contiguous copy owning its storage (safetensors rejects shared storage)."""
        return tensor.detach().contiguous().clone()

    def is_dtype(self, obj: Any) -> bool:
        return isinstance(obj, torch.dtype)

    def full_model_state_dict(self, model) -> dict[str, torch.Tensor]:
        """Unsharded, CPU-offloaded state dict (collective: every rank must call it)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        state_dict = get_model_state_dict(
            model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
        )
        return cast(dict[str, torch.Tensor], state_dict)  # a model's state dict holds tensors only

    def set_full_model_state_dict(self, model, state_dict, *, strict: bool = False):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        return set_model_state_dict(
            model, state_dict, options=StateDictOptions(full_state_dict=True, strict=strict)
        )

    # ----------------------------------------------------------- distributed
    def is_distributed(self) -> bool:
        return dist.is_available() and dist.is_initialized()

    def get_rank(self, group=None) -> int:
        return dist.get_rank(group) if self.is_distributed() else 0

    def get_world_size(self, group=None) -> int:
        return dist.get_world_size(group) if self.is_distributed() else 1

    def init_process_group(self, backend: str | None = None, timeout_seconds: float | None = None) -> None:
        """Initialise the default group once; plain ``python`` becomes a 1-rank world.

        The env:// rendezvous is torch's own, run here with a bound of its own
        (``HYPER_PARALLEL_RENDEZVOUS_TIMEOUT`` seconds, 60 by default, and never more than
        ``timeout_seconds``): a stale ``WORLD_SIZE`` with no other rank used to wait out the store's
        timeout in silence and end in a raw traceback; now it is a ``RendezvousTimeoutError`` naming
        the variables read. Then, as ``init_process_group(init_method="env://")`` does, the store
        takes the group's timeout and is prefixed ``default_pg``; collectives keep ``timeout_seconds``.
        """
        if self.is_distributed():
            return
        backend = backend or _DEFAULT_BACKENDS[self.device_type()]
        if "WORLD_SIZE" not in os.environ or os.environ.get(_SELF_WORLD_MARK) == "1":
            # A 1-rank world of our own: a fresh port every time, and the variables are taken back
            # at destroy, so that a later group or a child process never inherits a port in use.
            os.environ.update(_self_world_env())
        timeout = None if timeout_seconds is None else datetime.timedelta(seconds=timeout_seconds)
        bound = rendezvous_timeout_seconds()
        if timeout_seconds is not None:
            bound = min(bound, float(timeout_seconds))
        read = ", ".join(f"{name}={os.environ.get(name, '(unset)')}" for name in _RENDEZVOUS_VARS)
        try:
            store, rank, world_size = next(
                dist.rendezvous("env://", timeout=datetime.timedelta(seconds=bound))
            )
        except dist.DistError as exc:
            reason = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
            raise RendezvousTimeoutError(
                f"the process group's rendezvous did not complete within {bound:g} s ({read}, read from the "
                f"environment; {type(exc).__name__}: {reason}): start every rank with a launcher (torchrun "
                f"--nproc_per_node=N ...), or unset WORLD_SIZE, RANK, MASTER_ADDR and MASTER_PORT to train as "
                f"one process; {RENDEZVOUS_TIMEOUT_ENV} sets the wait in seconds "
                f"(default {DEFAULT_RENDEZVOUS_TIMEOUT_S:g})"
            ) from exc
        store.set_timeout(timeout if timeout is not None else _default_pg_timeout(backend))
        dist.init_process_group(
            backend=backend,
            store=dist.PrefixStore("default_pg", store),
            rank=rank,
            world_size=world_size,
            timeout=timeout,
        )

    def destroy_process_group(self) -> None:
        if self.is_distributed():
            dist.destroy_process_group()
        if os.environ.get(_SELF_WORLD_MARK) == "1":
            for name in (*_SELF_WORLD_VARS, _SELF_WORLD_MARK):
                os.environ.pop(name, None)

    def new_group(self, backend: str | None = None):
        return dist.new_group(backend=backend)

    def barrier(self) -> None:
        if self.is_distributed():
            dist.barrier()

    def all_reduce(self, tensor: torch.Tensor, group_info: GroupInfo | None, async_op: bool = False):
        """SUM all-reduce over ``group_info.group``; returns ``(tensor, work_or_None)``."""
        tensor = tensor.contiguous()
        group = group_info.group if group_info is not None else None
        work = dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=group, async_op=async_op)
        return tensor, work

    def init_device_mesh(self, device_type: str, shape, mesh_dim_names):
        from torch.distributed.device_mesh import init_device_mesh

        return init_device_mesh(device_type, tuple(shape), mesh_dim_names=tuple(mesh_dim_names))
