"""The MindSpore platform: every framework operation that new code needs, on MindSpore 2.10 (CPU).

Importing this module raises ``ImportError`` when MindSpore is missing: ``get_platform()`` relies
on that to fall back to torch. Where MindSpore has no torch-shaped piece, the adaptation lives
here (and in ``mindspore_optim`` / ``mindspore_io``), never in the components; where it cannot be
exact, :data:`LIMITATIONS` says how and by how much (the README prints it).

Measured on MindSpore 2.10 (CPU), the facts this is built on: most ``mint`` kernels are missing
(``ops`` / ``nn`` have them), a failed kernel raises late and later ops of the same process
re-raise it, and restoring the RNG state does not replay ``ops.rand`` and friends.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import mindspore  # noqa: F401  (ImportError here is the signal get_platform() relies on)
import mindspore as ms
import numpy as np
from mindspore import ops

from hyper_parallel.platform import mindspore_io as msio
from hyper_parallel.platform.group import GroupInfo
from hyper_parallel.platform.mindspore_optim import AdamW, GradStore, LambdaLR

__all__ = ["ASYNC_LAUNCH_ENV", "LIMITATIONS", "Limitation", "MindSporePlatform"]

# Set to 1 to keep MindSpore's asynchronous kernel launch (the platform launches synchronously).
ASYNC_LAUNCH_ENV = "HYPER_PARALLEL_MS_ASYNC_LAUNCH"


@dataclass(frozen=True)
class Limitation:
    """One place where the MindSpore platform is not exactly the torch platform."""

    member: str
    differs: str
    why: str
    measured: str = ""


LIMITATIONS: tuple[Limitation, ...] = (
    Limitation(
        "adamw",
        "the update is MindSpore's AdamW kernel: float32 step_size/bias corrections instead of torch's "
        "Python-double scalars; per-parameter steps are kept by the adapter",
        "mindspore.experimental.optim.AdamW computes prepare_func in float32 tensors and has one "
        "state_step for all parameters",
        "3 steps, lr 1e-3, betas (0.9, 0.95), wd 0.1 on 64x32 / 0.0 on 2x32 fp32: max |param diff| vs "
        "torch AdamW 4.7e-10 / 3.0e-8 / 3.0e-8 per step (check_adamw_step_matches_torch)",
    ),
    Limitation(
        "adamw",
        "amsgrad, capturable and differentiable raise NotImplementedError; foreach/fused are recorded in "
        "param_groups but not passed on",
        "MindSpore's AdamW has none of them (foreach/fused: TypeError)",
    ),
    Limitation(
        "adamw",
        "a step where parameters have different step counts (some got no gradient earlier) runs the "
        "MindSpore optimizer once per step count and restores the others: exact, but slower",
        "MindSpore's AdamW updates every parameter it holds with one shared state_step",
    ),
    Limitation(
        "backward",
        "a trainable parameter the loss does not use gets a zero gradient (torch: grad stays None)",
        "ms.value_and_grad returns a gradient for every weight it is given",
    ),
    Limitation(
        "cross_entropy / log_softmax / nll_loss / backward",
        "MindSpore's CPU kernels (ops.cross_entropy, ops.log_softmax, ops.nll_loss, value_and_grad): "
        "not bit-equal to torch's",
        "different kernels and reduction orders",
        "6x11 fp32 logits: CE mean 7.2e-7, sum 3.8e-6, none 9.5e-7 abs; tiny-net grads 3.0e-8 abs "
        "(check_tensor_helpers_and_losses, check_backward_accumulates)",
    ),
    Limitation(
        "clip_grad_norm",
        "norms from ops.norm in float32 (torch: vector_norm in the grad dtype)",
        "mint.linalg.vector_norm has no CPU kernel",
        "3 fp32 grads (12/4/4 values): norm and clipped grads bit-equal to torch here (check bound: 1e-6 "
        "relative / 1e-6 absolute, check_clip_grad_norm_matches_torch)",
    ),
    Limitation(
        "get_rng_state / set_rng_state",
        "the state is a uint8 tensor holding MindSpore's Python-side seed state (global seed, per-kernel "
        "op seeds, numpy's MT19937) plus torch's CPU generator; the default ms.Generator is included but "
        "no CPU op draws from it",
        "ms.get_rng_state/set_rng_state do not replay ops.rand/randn/randint, but these ops (and "
        "initializers) derive their seeds from that Python state, so restoring it replays them exactly",
        "replay of ops.rand/randn/randint/standard_normal and nn.Dense init: bit-identical (check_rng_replay)",
    ),
    Limitation(
        "manual_seed",
        "also seeds torch's CPU generator (and numpy's, as ms.set_seed does)",
        "the data pipeline is torch's (DataLoader base seed); seeding both keeps it identical to the torch platform",
    ),
    Limitation(
        "generator",
        "returns numpy.random.Generator(PCG64(seed)), not a framework generator",
        "no MindSpore CPU random op accepts a generator (ops.rand: TypeError on generator=)",
    ),
    Limitation(
        "distributed_sampler / stateful_dataloader",
        "torch's DistributedSampler and torchdata's StatefulDataLoader (pure index logic: the same "
        "indices and batches as the torch platform); batches are converted to MindSpore tensors at "
        "the edge: collate builds MindSpore tensors with num_workers=0 and torch tensors inside "
        "worker processes, which move_to_device converts",
        "mindspore.dataset has no seed/drop_last sampler and no resumable state_dict; MindSpore "
        "kernels hang in a forked DataLoader worker (measured)",
    ),
    Limitation(
        "save / load",
        "one safetensors file with the structure as typed JSON metadata, not a torch pickle: torch-written "
        ".pt files are refused (ValueError naming the file)",
        "nothing read from disk may run code; MindSpore has no general object serializer",
    ),
    Limitation(
        "dcp_save",
        "async_op=True writes synchronously and returns a finished Future (dcp_wait accepts it)",
        "the bridge converts to torch tensors first; a background write of the converted copies adds nothing on CPU",
    ),
    Limitation(
        "dcp_* / full_model_state_dict",
        "torch DCP via numpy copies of the MindSpore tensors; single process only (no sharded tensors)",
        "MindSpore has no DCP; its sharded layouts are not bridged",
    ),
    Limitation(
        "summary_writer_class",
        "torch.utils.tensorboard.SummaryWriter (scalars are Python floats)",
        "mindspore.SummaryRecord has another API",
    ),
    Limitation(
        "init_device_mesh / collectives",
        "a world of 1 gets a light mesh object; bigger meshes raise NotImplementedError; collectives "
        "only under msrun (mindspore.communication.init)",
        "no DeviceMesh in MindSpore 2.10; mint.distributed without init segfaults",
    ),
    Limitation(
        "profiler",
        "mindspore.profiler.profile writes <dir>/rank_<r>/<worker>_<pid>_<ts>_ascend_ms/..., not torch's trace files",
        "MindSpore's own trace format",
    ),
    Limitation(
        "is_fsdp_module / full_tensor / local_shape",
        "always False / identity / the shape",
        "no FSDP2 on MindSpore 2.10 CPU",
    ),
)

_MS_DTYPE_NAMES = {
    ms.float64: "float64",
    ms.float32: "float32",
    ms.float16: "float16",
    ms.bfloat16: "bfloat16",
    ms.int64: "int64",
    ms.int32: "int32",
    ms.int16: "int16",
    ms.int8: "int8",
    ms.uint8: "uint8",
    ms.uint16: "uint16",
    ms.uint32: "uint32",
    ms.uint64: "uint64",
    ms.bool_: "bool",
    ms.complex64: "complex64",
    ms.complex128: "complex128",
}
# The torch platform's TRAINING_DTYPES / DTYPE_NAMES spellings.
TRAINING_DTYPES = {
    "bfloat16": ms.bfloat16,
    "bf16": ms.bfloat16,
    "float16": ms.float16,
    "fp16": ms.float16,
    "float32": ms.float32,
    "fp32": ms.float32,
}
DTYPE_NAMES = {**TRAINING_DTYPES, "float64": ms.float64, "fp64": ms.float64}
_INT_VIEW = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}

_RNG_MAGIC = b"HPMSRNG1"
_MSRUN_ROLE = "MS_ROLE"  # msrun sets MS_ROLE=MS_WORKER in every worker it starts
# ... and MS_ROLE=MS_SCHED in the one scheduler process it starts with the same script.
_MSRUN_ROLES = ("MS_WORKER", "MS_SCHED")


class IncompatibleKeys(NamedTuple):
    """What ``set_full_model_state_dict`` returns (torch's ``_IncompatibleKeys`` fields)."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class _CpuHandle:
    """``get_device_handle("cpu")``: like ``torch.cpu``, no RNG and no ``set_device`` of its own."""

    name = "cpu"

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def synchronize(device: Any = None) -> None:
        ms.runtime.synchronize()


class SingleRankMesh:
    """A 1-rank device mesh with what ``ParallelDims.build_mesh`` and the trainer use of DeviceMesh.

    ``mesh[names]`` and ``_flatten(alias)`` register names on the root; every group is ``None``
    (a 1-rank world needs no communication).
    """

    def __init__(self, device_type: str, names: tuple[str, ...], root: SingleRankMesh | None = None) -> None:
        self.device_type = device_type
        self.mesh_dim_names = names
        self._root = root or self
        if root is None:
            self._flatten_mapping: dict[str, SingleRankMesh] = {}

    @property
    def ndim(self) -> int:
        return len(self.mesh_dim_names)

    @property
    def shape(self) -> tuple[int, ...]:
        return (1,) * self.ndim

    def size(self, mesh_dim: int | None = None) -> int:
        return 1

    def _get_root_mesh(self) -> SingleRankMesh:
        return self._root

    def _known(self) -> set[str]:
        return set(self._root.mesh_dim_names) | set(self._root._flatten_mapping)

    def __getitem__(self, names: str | tuple[str, ...]) -> SingleRankMesh:
        names = (names,) if isinstance(names, str) else tuple(names)
        unknown = [n for n in names if n not in self._known()]
        if unknown:
            raise KeyError(f"mesh has no dimension {unknown[0]!r}; known: {sorted(self._known())}")
        return SingleRankMesh(self.device_type, names, self._root)

    def _flatten(self, mesh_dim_name: str) -> SingleRankMesh:
        flat = SingleRankMesh(self.device_type, (mesh_dim_name,), self._root)
        self._root._flatten_mapping[mesh_dim_name] = flat
        return flat

    def get_group(self, mesh_dim: str | int | None = None) -> None:
        if isinstance(mesh_dim, str) and mesh_dim not in self._known():
            raise KeyError(f"mesh has no dimension {mesh_dim!r}")
        if mesh_dim is None and self.ndim != 1:
            raise RuntimeError("get_group() without a dimension needs a 1-D mesh")
        return None

    def get_local_rank(self, mesh_dim: str | int | None = None) -> int:
        return 0

    def get_rank(self) -> int:
        return 0


def _in_loader_worker() -> bool:
    """Whether this is a DataLoader worker process (forked from a process that ran MindSpore).

    MindSpore kernels hang in a forked child (measured: a 2-worker loader whose collate stacked
    MindSpore tensors never returned), so there the tensor factories use torch and the batch is
    converted at the edge, by :meth:`MindSporePlatform.move_to_device`.
    """
    data = sys.modules.get("torch.utils.data")
    return data is not None and data.get_worker_info() is not None


def _seed_module() -> Any:
    """``mindspore.common.seed`` the module (the package re-exports a function of that name)."""
    import mindspore.common.seed  # noqa: F401

    return sys.modules["mindspore.common.seed"]


class MindSporePlatform:
    """Device, RNG, tensor, collective and optimizer access backed by MindSpore (CPU)."""

    name = "mindspore"

    def __init__(self) -> None:
        self._grads = GradStore()
        self._distributed = False
        if os.environ.get(ASYNC_LAUNCH_ENV, "") != "1":
            # Launch each kernel synchronously. PyNative's asynchronous launch pipeline runs its own
            # threads beside the kernels' pool; on a 2-core CPU they compete and a debug-recipe step
            # took 6.1 s instead of 0.45 s (measured; the same kernels, so the same bits). A failing
            # kernel also raises at its own op, not at a later unrelated one (the notes' pitfall 3).
            ms.runtime.launch_blocking()
        from hyper_parallel.platform.torch_platform import TorchPlatform

        self._torch = TorchPlatform()  # DCP bridge and its restricted reader

    # ------------------------------------------------------------------ device
    def device_type(self) -> str:
        return "cpu"

    def device(self, idx: int | None = None) -> str:
        return "cpu"

    def get_device_handle(self, device_type: str | None = None) -> Any:
        dtype = device_type or self.device_type()
        if dtype != "cpu":
            raise RuntimeError(f"the MindSpore platform has no device module for device type {dtype!r}")
        return _CpuHandle

    def meta_device(self) -> contextlib.AbstractContextManager[Any]:
        """Parameters built inside get no memory and draw nothing (``has_init`` until materialised)."""
        from mindspore.nn.utils import no_init_parameters

        return no_init_parameters()

    def move_to_device(self, obj: Any, device: Any) -> Any:
        """Identity on CPU for MindSpore tensors; torch tensors (a DataLoader's) become MindSpore ones."""
        if isinstance(obj, ms.Tensor):
            return obj
        if msio.is_torch_tensor(obj):
            return msio.to_mindspore(obj)
        if isinstance(obj, dict):
            return {k: self.move_to_device(v, device) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.move_to_device(v, device) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.move_to_device(v, device) for v in obj)
        return obj

    # --------------------------------------------------------------------- RNG
    def manual_seed(self, seed: int) -> None:
        """``ms.set_seed`` (ops.rand/randn/randint and initializers repeat, numpy is seeded) and torch's."""
        import torch

        ms.set_seed(int(seed))
        torch.manual_seed(int(seed))

    def seed_everything(self, seed: int, device_type: str | None = None) -> None:
        self.manual_seed(seed)

    def get_rng_state(self, device_handle: Any = None) -> ms.Tensor:
        """A uint8 tensor: MindSpore's seed state, numpy's generator, ms.Generator's and torch's states."""
        import json

        import torch

        seeds = _seed_module()
        np_state = cast(tuple[Any, ...], np.random.get_state(legacy=True))
        header = {
            "global_seed": seeds._GLOBAL_SEED,
            "kernel_seeds": [[k[0], k[1], v] for k, v in seeds._KERNEL_SEED.items()],
            "numpy": [np_state[0], int(np_state[2]), int(np_state[3]), float(np_state[4]).hex()],
        }
        blobs = [
            np.asarray(np_state[1], dtype=np.uint32).tobytes(),
            ms.get_rng_state().asnumpy().astype(np.uint8).tobytes(),
            torch.get_rng_state().numpy().tobytes(),
        ]
        header["sizes"] = [len(b) for b in blobs]
        head = json.dumps(header).encode()
        data = _RNG_MAGIC + len(head).to_bytes(8, "little") + head + b"".join(blobs)
        return ms.Tensor(np.frombuffer(data, dtype=np.uint8).copy())

    def set_rng_state(self, state: Any, device_handle: Any = None) -> None:
        """Restore :meth:`get_rng_state`'s tensor; the next ops.rand/randn/randint draws repeat."""
        import json

        import torch

        data = bytes(np.asarray(msio.to_mindspore(state).asnumpy(), dtype=np.uint8).tobytes())
        if not data.startswith(_RNG_MAGIC):
            raise ValueError(
                "not a MindSpore platform RNG state (expected the tensor get_rng_state returned)"
            )
        size = int.from_bytes(data[8:16], "little")
        header = json.loads(data[16 : 16 + size])
        offset, blobs = 16 + size, []
        for n in header["sizes"]:
            blobs.append(data[offset : offset + n])
            offset += n
        seeds = _seed_module()
        seeds._GLOBAL_SEED = header["global_seed"]
        seeds._KERNEL_SEED.clear()
        seeds._KERNEL_SEED.update({(k, s): v for k, s, v in header["kernel_seeds"]})
        kind, pos, has_gauss, gauss = header["numpy"]
        np.random.set_state(
            (kind, np.frombuffer(blobs[0], dtype=np.uint32).copy(), pos, has_gauss, float.fromhex(gauss))
        )
        ms.set_rng_state(ms.Tensor(np.frombuffer(blobs[1], dtype=np.uint8).copy()))
        torch.set_rng_state(torch.frombuffer(bytearray(blobs[2]), dtype=torch.uint8))

    def generator(self, seed: int) -> np.random.Generator:
        """A fresh ``numpy.random.Generator`` (no MindSpore CPU op takes a generator)."""
        return np.random.Generator(np.random.PCG64(seed))

    # ------------------------------------------------- determinism and CPU numerics
    def set_deterministic(self, enabled: bool, warn_only: bool = False) -> None:
        """Idempotent, as torch's: ``mindspore.set_deterministic`` refuses any second call in a
        process ("can not be set repeatedly"), so asking for the state in force changes nothing."""
        if bool(enabled) == self.is_deterministic():
            return
        try:
            ms.set_deterministic(bool(enabled))
        except RuntimeError as exc:
            raise RuntimeError(
                f"MindSpore's deterministic mode is set once per process and is already "
                f"{'on' if self.is_deterministic() else 'off'}; cannot turn it {'on' if enabled else 'off'}: {exc}"
            ) from exc

    def is_deterministic(self) -> bool:
        return ms.get_context("deterministic") == "ON"

    def determinism_settings(self) -> dict[str, Any]:
        return {"deterministic_algorithms": self.is_deterministic()}

    def cpu_capability(self) -> str:
        """MindSpore does not report its kernel set: a stable name for its CPU kernels."""
        return "MINDSPORE_CPU"

    def num_threads(self) -> int:
        return int(ms.get_context("runtime_num_threads"))

    def cpu_libraries(self) -> dict[str, str]:
        """MindSpore links its own oneDNN (``lib/libdnnl.so.<major>``) and no external BLAS."""
        lib = os.path.join(os.path.dirname(ms.__file__), "lib")
        dnnl = sorted(n for n in os.listdir(lib) if n.startswith("libdnnl.so")) if os.path.isdir(lib) else []
        return {"blas": f"mindspore {ms.__version__} bundled", "onednn": dnnl[0] if dnnl else "none"}

    # ----------------------------------------------------------------- tensors
    def is_tensor(self, obj: Any) -> bool:
        return isinstance(obj, ms.Tensor)

    def is_dtype(self, obj: Any) -> bool:
        return isinstance(obj, ms.dtype.Type)

    def is_floating(self, tensor: Any) -> bool:
        return bool(tensor.is_floating_point())

    def is_finite(self, value: float) -> bool:
        return math.isfinite(value)

    def tensor(self, data: Any, dtype: Any = None, device: Any = None) -> ms.Tensor:
        if _in_loader_worker():
            return self._torch.tensor(data)
        return ms.Tensor(data, dtype=dtype)

    def full(self, size: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> ms.Tensor:
        if _in_loader_worker():
            return self._torch.full(size, fill_value)
        return ops.full(tuple(size), fill_value, dtype=dtype)

    def as_int64(self, data: Any) -> ms.Tensor:
        """An int64 tensor (a torch one inside a DataLoader worker: converted at the edge)."""
        if _in_loader_worker():
            return self._torch.as_int64(data)
        if isinstance(data, ms.Tensor):
            return data if data.dtype == ms.int64 else data.astype(ms.int64)
        if msio.is_torch_tensor(data):
            return msio.to_mindspore(data).astype(ms.int64)
        return ms.Tensor(np.asarray(data, dtype=np.int64))

    def stack(self, tensors: Iterable[Any], dim: int = 0) -> ms.Tensor:
        if _in_loader_worker():
            return self._torch.stack(tensors, dim)
        return ops.stack(list(tensors), axis=dim)

    def cat(self, tensors: Iterable[Any], dim: int = 0) -> ms.Tensor:
        if _in_loader_worker():
            return self._torch.cat(tensors, dim)
        return ops.cat(list(tensors), axis=dim)

    def pad_last_dim(self, tensor: Any, right: int, value: Any) -> ms.Tensor:
        if _in_loader_worker():
            return self._torch.pad_last_dim(tensor, right, value)
        if right == 0:
            return tensor
        return ops.pad(tensor, (0, right), value=value)

    def dtype_from_name(self, name: str) -> Any:
        try:
            return DTYPE_NAMES[name.lower()]
        except KeyError:
            raise ValueError(f"unknown dtype {name!r}; expected one of {sorted(DTYPE_NAMES)}") from None

    def dtype_name(self, tensor: Any) -> str:
        return _MS_DTYPE_NAMES.get(tensor.dtype, str(tensor.dtype).lower())

    def shape(self, tensor: Any) -> list[int]:
        return [int(n) for n in tensor.shape]

    def local_shape(self, tensor: Any) -> list[int]:
        return self.shape(tensor)

    def full_tensor(self, tensor: Any) -> Any:
        return tensor

    def detached_copy(self, tensor: Any) -> ms.Tensor:
        """``ops.stop_gradient(x).copy()``: ``Tensor.clone`` has no CPU kernel."""
        return ops.stop_gradient(tensor).copy()

    def raw_bytes(self, tensor: Any) -> memoryview:
        array = msio.to_numpy(tensor).reshape(-1)
        return array.view(np.uint8).data.cast("B")

    def int_view_numpy(self, tensor: Any) -> np.ndarray:
        array = msio.to_numpy(tensor).reshape(-1)
        if array.dtype == np.bool_:
            return array.view(np.uint8)
        if tensor.is_floating_point() or tensor.is_complex():
            return array.view(_INT_VIEW[array.dtype.itemsize])
        return array

    # ---------------------------------------------------- losses, optimizers, autograd
    def cross_entropy(
        self, logits: Any, labels: Any, ignore_index: int = -100, reduction: str = "mean"
    ) -> Any:
        return ops.cross_entropy(logits, labels, ignore_index=ignore_index, reduction=reduction)

    def log_softmax(self, tensor: Any, dim: int = -1) -> Any:
        return ops.log_softmax(tensor, axis=dim)

    def nll_loss(self, log_probs: Any, labels: Any, ignore_index: int = -100, reduction: str = "mean") -> Any:
        return ops.nll_loss(log_probs, labels, ignore_index=ignore_index, reduction=reduction)

    def recompute(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``ms.recompute`` non-reentrant (the reentrant default only takes Cells)."""
        return ms.recompute(fn, *args, use_reentrant=False)

    def adamw(self, param_groups: Any, **kwargs: Any) -> AdamW:
        """A torch-shaped AdamW (see ``mindspore_optim.AdamW``) reading this platform's gradients."""
        return AdamW(param_groups, grads=self._grads, **kwargs)

    def lambda_lr(self, optimizer: Any, lr_lambda: Callable[[int], float]) -> LambdaLR:
        return LambdaLR(optimizer, lr_lambda)

    def backward(self, loss_fn: Callable[[], tuple[Any, Any]], model: Any) -> Any:
        """Differentiate ``loss_fn`` w.r.t. the trainable parameters and add into their gradients.

        Parameters are taken in ``named_parameters()`` order (each once); after all gradients are
        added, the post-accumulate hooks run in that order.
        """
        params, seen = [], set()
        for _, param in model.named_parameters():
            if param.requires_grad and id(param) not in seen:
                seen.add(id(param))
                params.append(param)
        if not params:
            _, aux = loss_fn()
        else:
            grad_fn = ms.value_and_grad(loss_fn, grad_position=None, weights=params, has_aux=True)
            (_, aux), grads = grad_fn()
            self._grads.accumulate(params, grads)
            self._grads.run_hooks(params)
        return ops.stop_gradient(aux) if isinstance(aux, ms.Tensor) else aux

    def grad_of(self, param: Any) -> Any:
        """The accumulated gradient of ``param`` (torch's ``param.grad``), or ``None``."""
        return self._grads.get(param)

    def set_grad(self, param: Any, grad: Any) -> None:
        """Set (``None``: clear) the stored gradient of ``param``."""
        self._grads.set(param, grad)

    def clip_grad_norm(self, parameters: Iterable[Any], max_norm: float) -> ms.Tensor:
        """torch's ``clip_grad_norm_``: 2-norm of per-tensor 2-norms; grads scaled by min(1, c)."""
        with_grad = [(p, self._grads.get(p)) for p in parameters]
        with_grad = [(p, g) for p, g in with_grad if g is not None]
        if not with_grad:
            return ms.Tensor(0.0, ms.float32)
        norms = [ops.norm(g.astype(ms.float32)) for _, g in with_grad]
        total = ops.norm(ops.stack(norms))
        coef = ops.clamp(float(max_norm) / (total + 1e-6), max=1.0)
        for param, grad in with_grad:
            self._grads.set(param, grad * coef.astype(grad.dtype))
        return total

    def register_post_accumulate_grad_hook(self, param: Any, hook: Callable[[Any], None]) -> Any:
        """Called by :meth:`backward` after it added this parameter's gradient; ``.remove()`` detaches."""
        return self._grads.add_hook(param, hook)

    def is_fsdp_module(self, module: Any) -> bool:
        return False

    # ------------------------------------------------------------------- data
    def distributed_sampler(
        self, dataset: Any, *, num_replicas: int, rank: int, shuffle: bool, seed: int, drop_last: bool
    ) -> Any:
        """torch's ``DistributedSampler``: pure index logic, the same indices as the torch platform."""
        from torch.utils.data.distributed import DistributedSampler

        return DistributedSampler(
            dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last
        )

    def stateful_dataloader(self, dataset: Any, **kwargs: Any) -> Any:
        """torchdata's ``StatefulDataLoader``. With workers, collate builds torch tensors in the workers
        (see ``_in_loader_worker``) and ``move_to_device`` converts them; without, MindSpore ones."""
        from torchdata.stateful_dataloader import StatefulDataLoader

        return StatefulDataLoader(dataset, **kwargs)

    # ------------------------------------------------------ profiler and metrics
    def profiler(self, *, output_dir: str, rank: int, wait: int, warmup: int, active: int) -> Any:
        from mindspore.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

        return profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
            on_trace_ready=tensorboard_trace_handler(f"{output_dir}/rank_{rank}", worker_name=f"rank{rank}"),
        )

    def null_context(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def wall_time(self) -> float:
        return time.time()

    def summary_writer_class(self) -> type[Any]:
        """torch's TensorBoard ``SummaryWriter`` (the metrics component logs Python floats)."""
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter

    # ------------------------------------------------------------ checkpoint I/O
    def save(self, obj: Any, path: str | os.PathLike[str]) -> None:
        """One safetensors file: tensors plus the nest as typed JSON (nothing pickled)."""
        msio.save_state(obj, path)

    def load(
        self, path: str | os.PathLike[str], *, weights_only: bool = True, map_location: Any = "cpu"
    ) -> Any:
        """Read a :meth:`save` file (always data only; ``map_location`` is moot on CPU)."""
        return msio.load_state(path)

    def save_safetensors(
        self, tensors: Mapping[str, Any], path: str | os.PathLike[str], metadata: Any = None
    ) -> None:
        msio.save_safetensors(tensors, path, metadata)

    def load_safetensors(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        return msio.load_safetensors(path)

    def check_safetensors(self, path: str | os.PathLike[str]) -> list[str]:
        """The keys of a safetensors file; ``ValueError`` naming it when its header or length is damaged."""
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="np") as f:
                return list(f.keys())
        except Exception as exc:  # SafetensorError is a bare Exception
            raise ValueError(f"{path}: unreadable safetensors file ({type(exc).__name__}: {exc})") from exc

    def dcp_save(
        self, state_dict: Any, checkpoint_id: str, *, async_op: bool = False, process_group: Any = None
    ) -> Any:
        """torch DCP of the state dict as torch tensors; ``async_op`` writes now and returns a done Future."""
        msio.dcp_save(state_dict, checkpoint_id)
        if not async_op:
            return None
        done: Future[None] = Future()
        done.set_result(None)
        return done

    def dcp_wait(self, handle: Any) -> None:
        getattr(handle, "upload_completion", handle).result()

    def dcp_load(self, state_dict: Any, checkpoint_id: str) -> None:
        """Through the torch platform's restricted reader, then copied into the caller's tensors in place."""
        msio.dcp_load(state_dict, checkpoint_id, self._torch)

    def dcp_tensor_shapes(self, checkpoint_id: str) -> dict[str, tuple[int, ...]]:
        return self._torch.dcp_tensor_shapes(checkpoint_id)

    def dcp_entries(self, checkpoint_id: str) -> dict[str, tuple[tuple[int, ...], bool] | None]:
        return self._torch.dcp_entries(checkpoint_id)

    def dcp_full_state_dict(self, checkpoint_id: str) -> dict[str, Any]:
        return msio.dcp_full_state_dict(checkpoint_id, self._torch)

    def dcp_damaged_file(self, checkpoint_id: str) -> tuple[str, str] | None:
        return self._torch.dcp_damaged_file(checkpoint_id)

    def dcp_errors(self) -> tuple[type[BaseException], ...]:
        return self._torch.dcp_errors()

    def unsafe_pickle_error(self) -> type[Exception]:
        return self._torch.unsafe_pickle_error()

    def full_model_state_dict(self, model: Any) -> dict[str, Any]:
        """Every state-dict entry, a tied weight under each of its names (as torch's state dict)."""
        return {name: self.detached_copy(param) for name, param in _model_state(model).items()}

    def set_full_model_state_dict(
        self, model: Any, state_dict: Any, *, strict: bool = False
    ) -> IncompatibleKeys:
        """Copy values into the parameters by name (in place); torch's missing/unexpected keys and strict."""
        params = _model_state(model)
        missing = [name for name in params if name not in state_dict]
        unexpected = [key for key in state_dict if key not in params]
        if strict and (missing or unexpected):
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(model).__name__}: missing keys {missing}, "
                f"unexpected keys {unexpected}"
            )
        for name, param in params.items():
            if name in state_dict:
                try:
                    msio.copy_into(param, state_dict[name])
                except ValueError as exc:
                    raise RuntimeError(f"Error(s) in loading state_dict: {name}: {exc}") from exc
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------- collectives
    def is_distributed(self) -> bool:
        return self._distributed

    def get_rank(self, group: Any = None) -> int:
        if not self._distributed:
            return 0
        from mindspore import mint

        return int(mint.distributed.get_rank(group))

    def get_world_size(self, group: Any = None) -> int:
        if not self._distributed:
            return 1
        from mindspore import mint

        return int(mint.distributed.get_world_size(group))

    def init_process_group(self, backend: str | None = None, timeout_seconds: float | None = None) -> None:
        """Under msrun: ``mindspore.communication.init()``; plain ``python``: a world of 1, nothing started.

        msrun runs the script in its scheduler process too (``MS_ROLE=MS_SCHED``), and the workers'
        ``init()`` waits for that process's meta server, which only its own ``init()`` starts: skipping
        it there left both workers retrying "Failed to connect to the meta server" until msrun's
        timeout (measured, 2-rank msrun on CPU). The scheduler's ``init()`` serves the cluster and
        ends the process when the workers are done; it does not return into the script.
        """
        role = os.environ.get(_MSRUN_ROLE)
        if self._distributed or role not in _MSRUN_ROLES:
            return
        from mindspore.communication import init

        init()
        # Only a worker is a rank; were a scheduler's init() to return, it stays a world of 1.
        self._distributed = role == "MS_WORKER"

    def destroy_process_group(self) -> None:
        if self._distributed:
            from mindspore.communication import release

            release()
            self._distributed = False

    def new_group(self, backend: str | None = None) -> Any:
        """All ranks (``backend`` is ignored: MindSpore CPU has one backend); ``None`` in a world of 1."""
        if not self._distributed:
            return None
        from mindspore import mint

        return mint.distributed.new_group(ranks=list(range(self.get_world_size())))

    def barrier(self) -> None:
        if self._distributed:
            from mindspore import mint

            mint.distributed.barrier()

    def all_reduce(self, tensor: Any, group_info: GroupInfo | None, async_op: bool = False) -> Any:
        if not self._distributed:
            return tensor, None
        from mindspore import mint

        group = group_info.group if group_info is not None else None
        kwargs = {} if group is None else {"group": group}
        # ReduceOp lives in mindspore.ops (mint.distributed imports it from there but does not
        # export it: mint.distributed.ReduceOp was an AttributeError on the first 2-rank msrun run).
        work = mint.distributed.all_reduce(tensor, op=ops.ReduceOp.SUM, async_op=async_op, **kwargs)
        return tensor, work

    def init_device_mesh(self, device_type: str, shape: Any, mesh_dim_names: Any) -> SingleRankMesh:
        size = math.prod(int(n) for n in shape)
        if size != 1 or self.get_world_size() != 1:
            raise NotImplementedError(
                f"the MindSpore platform builds device meshes for a world of 1 only (asked for {tuple(shape)} "
                f"over {self.get_world_size()} ranks): MindSpore 2.10 has no DeviceMesh"
            )
        return SingleRankMesh(device_type, tuple(mesh_dim_names))


def _model_state(model: Any) -> dict[str, Any]:
    """The model's state by name, as torch's state dict: every ``named_parameters()`` entry, plus the
    aliases of tied Parameters (the HF export needs ``lm_head.weight`` too). ``Cell.state_dict()``
    lists those, but names a Parameter by attribute path: it is used only when it agrees with
    ``named_parameters()`` (a Cell whose names differ keeps ``named_parameters()``)."""
    named = dict(model.named_parameters())
    state = getattr(model, "state_dict", None)
    full = dict(state()) if callable(state) else {}
    return full if named and set(named) <= set(full) else named
