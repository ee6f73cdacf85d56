"""Torch-shaped gradients, AdamW and LambdaLR on MindSpore (used by :mod:`mindspore_platform`).

MindSpore is functional: ``value_and_grad`` hands gradients back as a tuple and nothing is kept on
the parameters, its experimental AdamW is a ``Cell`` called with that tuple (no ``step``,
``zero_grad`` or torch-layout ``state_dict``), and its LambdaLR evaluates the lambda on a float32
``Parameter``. The components are written against torch's shapes (``.grad`` that accumulates,
``optimizer.step()/zero_grad()/param_groups/state_dict()``, ``scheduler.step()/get_last_lr()``),
so this module provides exactly those shapes:

- :class:`GradStore` is the ``.grad`` of every parameter: ``Platform.backward`` adds into it and
  fires the post-accumulate hooks, clipping scales it, the optimizer reads and clears it.
- :class:`AdamW` keeps torch's ``param_groups``/``defaults``/``state_dict`` layout and per-parameter
  step counts and calls ``mindspore.experimental.optim.AdamW`` for the update itself.
- :class:`LambdaLR` is torch 2.13's LambdaLR written in Python floats (MindSpore's computes in
  float32, which is not bit-equal to torch's).
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import mindspore as ms
from mindspore import ops

__all__ = ["AdamW", "GradStore", "HookHandle", "LambdaLR"]


def _copy(tensor: Any) -> Any:
    """A detached copy owning its storage (``Tensor.clone`` has no CPU kernel)."""
    return ops.stop_gradient(tensor).copy()


def _as_ms(value: Any, dtype: Any = None) -> ms.Tensor:
    """A MindSpore tensor from a MindSpore/torch tensor or array-like, cast to ``dtype``."""
    from hyper_parallel.platform.mindspore_io import to_mindspore

    tensor = to_mindspore(value)
    return tensor.astype(dtype) if dtype is not None and tensor.dtype != dtype else tensor


# ----------------------------------------------------------------------------- gradients


class HookHandle:
    """What ``register_post_accumulate_grad_hook`` returns: ``remove()`` detaches the hook."""

    def __init__(self, hooks: dict[int, list[Callable[[Any], None]]], key: int, hook: Callable) -> None:
        self._hooks, self._key, self._hook = hooks, key, hook

    def remove(self) -> None:
        bucket = self._hooks.get(self._key, [])
        if self._hook in bucket:
            bucket.remove(self._hook)
        if not bucket:
            self._hooks.pop(self._key, None)


class GradStore:
    """The accumulated gradient of each parameter (torch's ``param.grad``), keyed by identity.

    An entry holds the parameter too, so the identity key stays valid while the gradient lives.
    """

    def __init__(self) -> None:
        self._grads: dict[int, tuple[Any, Any]] = {}
        self._hooks: dict[int, list[Callable[[Any], None]]] = {}

    def get(self, param: Any) -> Any:
        entry = self._grads.get(id(param))
        return None if entry is None else entry[1]

    def set(self, param: Any, grad: Any) -> None:
        if grad is None:
            self._grads.pop(id(param), None)
        else:
            self._grads[id(param)] = (param, grad)

    def accumulate(self, params: list[Any], grads: Iterable[Any]) -> None:
        """``grad += new`` per parameter (a fresh sum: stored tensors are never written into)."""
        for param, grad in zip(params, grads, strict=True):
            old = self.get(param)
            self.set(param, ops.stop_gradient(grad) if old is None else old + grad)

    def run_hooks(self, params: list[Any]) -> None:
        for param in params:
            for hook in list(self._hooks.get(id(param), ())):
                hook(param)

    def add_hook(self, param: Any, hook: Callable[[Any], None]) -> HookHandle:
        self._hooks.setdefault(id(param), []).append(hook)
        return HookHandle(self._hooks, id(param), hook)


# ----------------------------------------------------------------------------- AdamW

# torch 2.13 ``torch.optim.AdamW(...).defaults``, in its key order (param_groups follow it).
_TORCH_ADAMW_DEFAULTS: dict[str, Any] = {
    "lr": 1e-3,
    "betas": (0.9, 0.999),
    "eps": 1e-8,
    "weight_decay": 1e-2,
    "amsgrad": False,
    "maximize": False,
    "foreach": None,
    "capturable": False,
    "differentiable": False,
    "fused": None,
    "decoupled_weight_decay": True,
}
# What MindSpore's AdamW bakes into its compiled graph per group: a change rebuilds it.
_MS_HYPER_KEYS = ("betas", "eps", "weight_decay", "maximize")


class AdamW:
    """``torch.optim.AdamW``'s interface over ``mindspore.experimental.optim.AdamW``.

    torch keeps one step counter per parameter and leaves a parameter without a gradient
    untouched; MindSpore's AdamW has one ``state_step`` and updates every parameter it holds.
    So the counters live here: when every parameter has a gradient and the same step (every
    ordinary training step) MindSpore runs once; otherwise it runs once per group of parameters
    sharing a step count, and the parameters outside that group are restored afterwards.
    """

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        grads: GradStore,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if amsgrad or capturable or differentiable:
            raise NotImplementedError(
                "MindSpore AdamW adapter: amsgrad, capturable and differentiable are not supported"
            )
        if lr < 0.0 or eps < 0.0 or weight_decay < 0.0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(
                f"invalid AdamW hyperparameters lr={lr} betas={betas} eps={eps} wd={weight_decay}"
            )
        self._grads = grads
        self.defaults = {
            **_TORCH_ADAMW_DEFAULTS,
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "fused": fused,
        }
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups: list[dict[str, Any]] = []
        for group in groups:
            group = dict(group)
            params_ = group["params"]
            group["params"] = [params_] if isinstance(params_, ms.Parameter) else list(params_)
            for key, value in self.defaults.items():
                group.setdefault(key, value)
            self.param_groups.append(group)
        self._params = [p for g in self.param_groups for p in g["params"]]
        self._steps = [0] * len(self._params)  # torch's per-parameter "step"; 0: no state yet
        self._ms: Any = None
        self._ms_signature: Any = None
        self._opt_called = False

    # ------------------------------------------------------------ MindSpore optimizer
    def _signature(self) -> tuple:
        return tuple(tuple(g[k] for k in _MS_HYPER_KEYS) for g in self.param_groups if g["params"])

    def _ensure_ms(self) -> Any:
        """The MindSpore AdamW for the current hyperparameters (rebuilt, state kept, when they change)."""
        if not self._params:
            return None
        signature = self._signature()
        if self._ms is not None and signature == self._ms_signature:
            return self._ms
        from mindspore.experimental.optim import AdamW as MsAdamW

        old = self._ms
        ms_groups = [
            {
                "params": list(g["params"]),
                "lr": float(g["lr"]),
                "betas": tuple(float(b) for b in g["betas"]),
                "eps": float(g["eps"]),
                "weight_decay": float(g["weight_decay"]),
                "amsgrad": False,
                "maximize": bool(g["maximize"]),
            }
            for g in self.param_groups
            if g["params"]
        ]
        new = MsAdamW(ms_groups, lr=float(self.defaults["lr"]))
        if old is not None:
            for i in range(len(self._params)):
                ops.assign(new.exp_avg[i], _copy(old.exp_avg[i]))
                ops.assign(new.exp_avg_sq[i], _copy(old.exp_avg_sq[i]))
        self._ms, self._ms_signature = new, signature
        return new

    def _sync_lrs(self, opt: Any) -> None:
        """Each group's ``lr`` into MindSpore's lr Parameter.

        Always ``ops.assign`` into optimizer Parameters: ``set_data`` detaches a Parameter from the
        graph MindSpore already compiled (measured: the second group then used a stale step).
        """
        groups = [g for g in self.param_groups if g["params"]]
        for lr_param, group in zip(opt.lrs, groups, strict=True):
            ops.assign(lr_param, ms.Tensor(float(group["lr"]), ms.float32))

    @staticmethod
    def _call_ms(opt: Any, grads: tuple[Any, ...]) -> None:
        """``MsAdamW.construct`` with each group's gradient slice kept ``mutable``.

        The stock ``construct`` slices the gradient tuple per group, which makes the slices graph
        constants (a recompile, and a warning that prints every gradient, on each step); the update
        itself is MindSpore's ``implementation``, unchanged.
        """
        opt.assignadd(opt.state_step, opt.increase_tensor)
        for group_id, group in enumerate(opt.param_groups):
            beta1, beta2 = group["betas"]
            start, end = opt.group_start_id[group_id], opt.group_start_id[group_id + 1]
            part = tuple(ops.neg(g) if group.get("maximize") else g for g in grads[start:end])
            opt.implementation(
                opt.lrs[group_id],
                group.get("weight_decay"),
                beta1,
                beta2,
                group.get("amsgrad"),
                group.get("eps"),
                ms.mutable(part),
                start,
                end,
            )

    # ------------------------------------------------------------ torch API
    @property
    def state(self) -> dict[Any, dict[str, Any]]:
        """torch's ``optimizer.state`` (a fresh view): parameter -> ``{step, exp_avg, exp_avg_sq}``."""
        return {self._params[i]: s for i, s in self._index_state().items()}

    def _index_state(self) -> dict[int, dict[str, Any]]:
        if self._ms is None:
            return {}
        return {
            i: {
                "step": ms.Tensor(float(n), ms.float32),
                "exp_avg": _copy(self._ms.exp_avg[i]),
                "exp_avg_sq": _copy(self._ms.exp_avg_sq[i]),
            }
            for i, n in enumerate(self._steps)
            if n > 0
        }

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self._params:
            grad = self._grads.get(param)
            if grad is not None:
                self._grads.set(param, None if set_to_none else ops.zeros_like(grad))

    def step(self) -> None:
        """One AdamW update of every parameter that has a gradient (the others are left as they are)."""
        self._opt_called = True
        have = [i for i, p in enumerate(self._params) if self._grads.get(p) is not None]
        if not have:
            return
        opt = self._ensure_ms()
        self._sync_lrs(opt)
        cohorts: dict[int, list[int]] = {}
        for i in have:
            cohorts.setdefault(self._steps[i], []).append(i)
        for step, members in sorted(cohorts.items()):
            self._run(opt, step, set(members))

    def _run(self, opt: Any, step: int, members: set[int]) -> None:
        """MindSpore's AdamW at ``state_step = step`` for ``members``; the other parameters restored."""
        others = [i for i in range(len(self._params)) if i not in members]
        saved = [(i, _copy(self._params[i]), _copy(opt.exp_avg[i]), _copy(opt.exp_avg_sq[i])) for i in others]
        grads = tuple(
            self._grads.get(p).astype(p.dtype) if i in members else ops.zeros_like(p)
            for i, p in enumerate(self._params)
        )
        ops.assign(opt.state_step, ms.Tensor(step, ms.int32))
        self._call_ms(opt, grads)
        for i, param, exp_avg, exp_avg_sq in saved:
            ops.assign(self._params[i], param)
            ops.assign(opt.exp_avg[i], exp_avg)
            ops.assign(opt.exp_avg_sq[i], exp_avg_sq)
        for i in members:
            self._steps[i] += 1

    def state_dict(self) -> dict[str, Any]:
        """torch's layout: integer parameter indices over the groups in order, ``params`` last."""
        groups, start = [], 0
        for group in self.param_groups:
            n = len(group["params"])
            groups.append(
                {**{k: v for k, v in group.items() if k != "params"}, "params": list(range(start, start + n))}
            )
            start += n
        return {"state": self._index_state(), "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """torch's ``Optimizer.load_state_dict``: same checks, hyperparameters from the file, state copied in."""
        saved_groups = [dict(g) for g in state_dict["param_groups"]]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        index_of = {}
        for saved, group in zip(saved_groups, self.param_groups, strict=True):
            for saved_index, param in zip(saved["params"], group["params"], strict=True):
                index_of[saved_index] = param
        position = {id(p): i for i, p in enumerate(self._params)}
        new_groups = []
        for saved, group in zip(saved_groups, self.param_groups, strict=True):
            saved["params"] = group["params"]
            for key, value in self.defaults.items():
                saved.setdefault(key, value)
            new_groups.append(saved)
        self.param_groups = new_groups
        opt = self._ensure_ms()
        steps = [0] * len(self._params)
        for saved_index, entry in state_dict["state"].items():
            i = position[id(index_of[saved_index])]
            param = self._params[i]
            for key in ("exp_avg", "exp_avg_sq"):
                value = _as_ms(entry[key], param.dtype)
                if tuple(value.shape) != tuple(param.shape):
                    raise ValueError(
                        f"optimizer state {saved_index}.{key} has shape {tuple(value.shape)}, "
                        f"the parameter has {tuple(param.shape)}"
                    )
                ops.assign(getattr(opt, key)[i], value)
            steps[i] = int(float(_as_ms(entry["step"]).asnumpy()))
        for i, n in enumerate(steps):
            if n == 0 and opt is not None:  # torch: a parameter without saved state has no state
                ops.assign(opt.exp_avg[i], ops.zeros_like(self._params[i]))
                ops.assign(opt.exp_avg_sq[i], ops.zeros_like(self._params[i]))
        self._steps = steps


# ----------------------------------------------------------------------------- LambdaLR


class LambdaLR:
    """torch 2.13's ``LambdaLR`` for :class:`AdamW`, in Python floats (bit-equal lrs, same state_dict).

    Attributes are set in torch's order, so ``state_dict()`` has torch's keys in torch's order:
    ``base_lrs, last_epoch, _step_count, _is_initial, _get_lr_called_within_step, _last_lr,
    lr_lambdas`` (``None`` for a plain function, the ``__dict__`` of a callable object).
    """

    def __init__(self, optimizer: Any, lr_lambda: Any, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        groups = optimizer.param_groups
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(groups):
                raise ValueError(f"Expected {len(groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(groups)
        if last_epoch == -1:
            for group in groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming")
        self.base_lrs = [group["initial_lr"] for group in groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        return [
            base_lr * lmbda(self.last_epoch)
            for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)
        ]

    def step(self, epoch: int | None = None) -> None:
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`.", UserWarning, stacklevel=2
            )
        self._step_count += 1
        self._get_lr_called_within_step = True
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        values = self.get_lr()
        self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        return self._last_lr

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy() for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        state = dict(state_dict)
        lr_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for idx, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[idx].__dict__.update(fn)
