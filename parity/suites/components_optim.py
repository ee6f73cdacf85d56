"""Optimizer and LR scheduler components vs the legacy ``_build_optimizer`` / ``_build_lr_scheduler``.

Tier A pairs run the legacy builder on a bare ``BaseTrainer`` and the component on the same
inputs: param groups (FQNs and hyperparameters) on the debug model, the LR curve over a grid of
(steps, warmup ratio, decay style, lr_min), warmup after the dataset changed ``max_steps``, and
the optimizer + scheduler state after 3 training steps (also for the in-backward container).
Tier B goldens pin what the new components produce on explicit params.

Toy modules (section "toy modules") cover what the debug model cannot: mixed-case names
(``LayerNorm.weight``, ``Dense.BIAS``, ``norm.Weight``) and keywords inside words, several model
parts, a parameter shared between parts and one tied within a part, frozen parameters, and
custom decay keywords; fixed toys and hypothesis-drawn ones (names from a small mixed-case
alphabet, shapes, frozen flags, which entries reuse an earlier parameter). Pairs compare the
param groups, and one optimizer step (state and parameters by FQN) on the fixed toys.

Several model parts: the legacy ``_build_optimizer`` takes ONE model (``self.model``), while the
component takes ``model_parts``. The parts are pipeline stages of one model that keep the whole
model's FQNs (torchtitan's split; ``HyperTrainer`` passes ``[model]``), so the legacy side runs on
the equivalent single module: a module holding every part's top-level children in part order
(``whole_module``). It has the same FQNs, the same ``named_parameters()`` order, and a parameter
shared by two parts appears once under its first name, which is what the component's
de-duplication across parts must reproduce (within one module torch's ``named_parameters``
already de-duplicates, so only several parts exercise it).

Custom keywords: the legacy builder has no setting for them (``base.NO_DECAY_KEYWORDS`` is
hard-coded); for a custom set the harness swaps that constant while the legacy builder runs
(``legacy_decay_keywords``), and the "minimal" set pairs the new side's ``("norm", "bias")`` with
the unchanged legacy constant (equivalent: "layernorm" and "rmsnorm" contain "norm").

The helpers below are the harness side (inputs, training loop, FQN mapping); they are shared by
both producers of a pair, never the logic under test.
"""

from __future__ import annotations

import contextlib
import functools
import math
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from parity import canonical
from parity.builders import (
    DEBUG_LR,
    DEBUG_LR_MIN,
    DEBUG_WEIGHT_DECAY,
    MAX_GRAD_NORM,
    debug_optimizer_fields,
    debug_scheduler_fields,
    legacy_lr_curve,
    lr_curve_of,
    new_lr_curve,
    new_optimizers,
    new_schedulers,
    one_param_optimizer,
)
from parity.cases import REGISTRY
from parity.legacy_driver import bare_trainer, debug_model, legacy_args

# ----------------------------------------------------------------------------- harness helpers


def yaml_float(value: float) -> str:
    """``repr`` that YAML 1.1 reads back as the same float: PyYAML takes ``5e-324`` for a string
    (its float syntax needs a dot in the mantissa), ``5.0e-324`` for the float."""
    text = repr(float(value))
    mantissa, sep, exponent = text.partition("e")
    if sep and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def optimizer_overrides(
    *, lr: float, eps: float, weight_decay: float, beta1: float, beta2: float
) -> list[str]:
    # Scalars are coerced to the schema's float type; list items are not, so they must be YAML floats.
    return [
        f"--train.optimizer.lr={lr!r}",
        f"--train.optimizer.eps={eps!r}",
        f"--train.optimizer.weight_decay={weight_decay!r}",
        f"--train.optimizer.betas=[{yaml_float(beta1)},{yaml_float(beta2)}]",
    ]


def batches(seed: int, steps: int, *, vocab: int = 2048, batch: int = 2, seq: int = 16) -> list[Any]:
    import torch

    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (batch, seq), generator=g) for _ in range(steps)]


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """One intra-op thread: the debug model is tiny, and on a busy host two threads mostly spin."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _loss_twice(loss: Any) -> tuple[Any, Any]:
    """``(loss, aux)`` for ``platform.backward``: MindSpore's ``value_and_grad(has_aux=True)`` wants a
    tensor aux, not None."""
    return loss, loss


def train(model, optimizer, scheduler, inputs: Iterable[Any], *, clip: float | None) -> None:
    """The legacy step order: backward, clip, optimizer step, scheduler step, zero_grad.

    On MindSpore the same order through the platform (``backward``, ``clip_grad_norm``), on the
    same integer batches.
    """
    import torch

    from hyper_parallel.platform import get_platform

    platform = get_platform()
    if platform.name != "torch":
        for ids in inputs:
            ids = platform.as_int64(ids.tolist())

            def loss_fn(ids: Any = ids) -> tuple[Any, Any]:
                return _loss_twice(model(input_ids=ids, labels=ids)["loss"])

            platform.backward(loss_fn, model)
            if clip is not None:
                platform.clip_grad_norm(model.parameters(), clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
        return
    with one_thread():
        for ids in inputs:
            model(input_ids=ids, labels=ids, use_cache=False)["loss"].backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()


def named_optimizer_state(
    state_dict: Mapping[str, Any],
    param_groups: Sequence[Mapping[str, Any]],
    model_parts: Sequence[Any],
    *,
    indices: bool = False,
) -> dict[str, Any]:
    """An optimizer state dict keyed by parameter FQN instead of integer index.

    ``param_groups`` (the optimizer's live groups) give each group's parameter objects in index
    order; ``canonical.param_groups`` names them through the model parts.
    """
    named = [(n, p) for part in model_parts for n, p in part.named_parameters()]
    groups = canonical.param_groups(param_groups, named)
    fqn_of: dict[int, str] = {}
    try:
        for saved, group in zip(state_dict["param_groups"], groups, strict=True):
            fqn_of.update(zip(saved["params"], group["params"], strict=True))
        named_state = {
            "state": {fqn_of[index]: value for index, value in state_dict["state"].items()},
            "param_groups": [
                {**{k: v for k, v in saved.items() if k != "params"}, "params": group["params"]}
                for saved, group in zip(state_dict["param_groups"], groups, strict=True)
            ],
        }
        if indices:  # the integer layout itself: a resume into the other container reads it
            named_state["indices"] = {
                "param_groups": [list(saved["params"]) for saved in state_dict["param_groups"]],
                "state": sorted(state_dict["state"]),
            }
        return named_state
    except (KeyError, TypeError, ValueError) as exc:  # not an optimizer state dict: that is the value
        return {"not an optimizer state dict": f"{type(exc).__name__}: {exc}"}


def trained_state(model, optimizer, scheduler, *, indices: bool = False) -> dict[str, Any]:
    return canonical.checkpoint(
        {
            "optimizer": named_optimizer_state(
                optimizer.state_dict(), optimizer.param_groups, [model], indices=indices
            ),
            "scheduler": scheduler.state_dict(),
            "model": model.state_dict(),
        }
    )


# ----------------------------------------------------------------------------- new-side builders


# ----------------------------------------------------------------------------- param groups


def legacy_param_groups(
    *, seed: int, frozen: str, lr: float, eps: float, weight_decay: float, beta1: float, beta2: float
):
    model = debug_model(seed, frozen=frozen)
    args = legacy_args(
        *optimizer_overrides(lr=lr, eps=eps, weight_decay=weight_decay, beta1=beta1, beta2=beta2)
    )
    trainer = bare_trainer(args, model=model)
    trainer._build_optimizer()
    return canonical.param_groups(trainer.optimizer.param_groups, model.named_parameters())


def new_param_groups(
    *,
    seed: int,
    frozen: str,
    lr: float,
    eps: float,
    weight_decay: float,
    beta1: float,
    beta2: float,
    in_backward=False,
):
    model = debug_model(seed, frozen=frozen)
    container = new_optimizers(
        [model], in_backward=in_backward, lr=lr, eps=eps, weight_decay=weight_decay, betas=(beta1, beta2)
    )
    return canonical.param_groups(container.param_groups, model.named_parameters())


def new_in_backward_param_groups(**params: Any):
    return new_param_groups(**params, in_backward=True)


OPTIMIZER = REGISTRY.suite(tags=("optimizer",))
LR_SCHEDULER = REGISTRY.suite(tags=("lr_scheduler",))

_GROUP_PARAMS = (
    {
        "seed": 0,
        "frozen": "none",
        "lr": DEBUG_LR,
        "eps": 1e-8,
        "weight_decay": DEBUG_WEIGHT_DECAY,
        "beta1": 0.9,
        "beta2": 0.999,
    },
    {
        "seed": 1,
        "frozen": "layers.1",
        "lr": 3e-4,
        "eps": 1e-6,
        "weight_decay": 0.1,
        "beta1": 0.8,
        "beta2": 0.95,
    },
    {"seed": 2, "frozen": "embed", "lr": 0.0, "eps": 0.0, "weight_decay": 0.0, "beta1": 0.0, "beta2": 0.5},
)
OPTIMIZER.grid(
    "optim_groups",
    params=_GROUP_PARAMS,
    kind="param_groups",
    legacy=legacy_param_groups,
    new=new_param_groups,
)
OPTIMIZER.pair(
    "optim_in_backward_groups",
    kind="param_groups",
    params=_GROUP_PARAMS[1],
    legacy=legacy_param_groups,
    new=new_in_backward_param_groups,
)


# ----------------------------------------------------------------------------- LR curves


LR_GRID = (
    {"steps": 100, "warmup_ratio": 0.1, "decay_style": "cosine", "lr_min": 1e-5},
    {"steps": 20, "warmup_ratio": 0.1, "decay_style": "cosine", "lr_min": DEBUG_LR_MIN},
    {"steps": 20, "warmup_ratio": 0.15, "decay_style": "cosine", "lr_min": 0.0},
    {"steps": 7, "warmup_ratio": 0.5, "decay_style": "constant", "lr_min": 1e-4},
    {"steps": 50, "warmup_ratio": 0.33, "decay_style": "linear", "lr_min": 1e-4},
    {"steps": 3, "warmup_ratio": 1.5, "decay_style": "cosine", "lr_min": 0.0},
    {"steps": 1, "warmup_ratio": 0.0, "decay_style": "cosine", "lr_min": 0.0},
    {"steps": 0, "warmup_ratio": 0.1, "decay_style": "cosine", "lr_min": 1e-5},
    # 100 * 0.07 == 7.000000000000001: ceil gives 8 warmup steps (a float hazard for any port).
    {"steps": 100, "warmup_ratio": 0.07, "decay_style": "cosine", "lr_min": 0.0},
)
LR_SCHEDULER.grid(
    "lrsched_grid",
    params=LR_GRID,
    kind="lr_curve",
    legacy=legacy_lr_curve,
    new=new_lr_curve,
)

# The YAML says 100 steps; the dataset leaves 24 (hf shrink: 198 rows // 8). ceil(24 * 0.1) = 3
# warmup steps, where a ratio resolved from the YAML would give 10.
LR_SCHEDULER.pair(
    "lrsched_dataset_shrunk",
    kind="lr_curve",
    params={"steps": 100, "data_steps": 24, "warmup_ratio": 0.1, "decay_style": "cosine", "lr_min": 1e-5},
    legacy=legacy_lr_curve,
    new=new_lr_curve,
)


def legacy_preset_pt_curve(*, steps: int, stale_steps: int, warmup_ratio: float):
    """preset_pt resets ``state.max_steps`` to ``train.max_steps`` (here from a stale value)."""
    from hyper_parallel.data.registry import get_dataset_builder
    from parity import assets

    with tempfile.TemporaryDirectory(prefix="parity-optim-") as tmp:
        path = assets.preset_pt(Path(tmp) / "batches.pt")
        args = legacy_args(
            "--data.type=preset_pt",
            f"--data.train_path={path}",
            f"--train.max_steps={steps}",
            f"--train.optimizer.lr_warmup_ratio={warmup_ratio!r}",
        )
        trainer = bare_trainer(args, max_steps=stale_steps)
        trainer.train_dataset = get_dataset_builder("preset_pt")(trainer)
    trainer.optimizer = one_param_optimizer(args.train.optimizer.lr)
    trainer._build_lr_scheduler()
    return lr_curve_of(trainer.lr_scheduler, trainer.optimizer, trainer.state.max_steps)


def new_preset_pt_curve(*, steps: int, stale_steps: int, warmup_ratio: float):
    # The preset_pt dataloader's step count is train.max_steps (the stale value is never seen).
    return new_lr_curve(steps=steps, warmup_ratio=warmup_ratio, decay_style="cosine", lr_min=DEBUG_LR_MIN)


LR_SCHEDULER.pair(
    "lrsched_preset_pt_reset",
    kind="lr_curve",
    params={"steps": 30, "stale_steps": 7, "warmup_ratio": 0.1},
    legacy=legacy_preset_pt_curve,
    new=new_preset_pt_curve,
)


def legacy_lr_max_curve(*, steps: int, warmup_ratio: float, lr_min: float, lr_max: float):
    """The legacy schedule ``lr_max`` implies: the legacy min ratio is ``lr_min / lr`` (no lr_max
    field), so the same ratio ``lr_min / lr_max`` is given as ``lr_min * (lr / lr_max)``; lr_max=0
    means ratio 0 (the component's ``lr > 0`` guard). The cases use lr_max = 2 * lr, where the
    scaling is exact."""
    legacy_min = 0.0 if lr_max == 0 else lr_min * (DEBUG_LR / lr_max)
    return legacy_lr_curve(steps=steps, warmup_ratio=warmup_ratio, decay_style="cosine", lr_min=legacy_min)


def new_lr_max_curve(*, steps: int, warmup_ratio: float, lr_min: float, lr_max: float):
    optimizer = one_param_optimizer(DEBUG_LR)
    schedulers = new_schedulers(
        optimizer, training_steps=steps, lr_warmup_ratio=warmup_ratio, lr_min=lr_min, lr_max=lr_max
    )
    return lr_curve_of(schedulers, optimizer, steps)


# lr_max=0.0 must not fall back to the optimizer's lr (0.0 is a value, not "unset").
LR_SCHEDULER.grid(
    "lrsched_lr_max",
    params=[
        {"steps": 12, "warmup_ratio": 0.25, "lr_min": 4 * DEBUG_LR_MIN, "lr_max": _lr_max}
        for _lr_max in (0.0, 2 * DEBUG_LR)
    ],
    kind="lr_curve",
    legacy=legacy_lr_max_curve,
    new=new_lr_max_curve,
)


def legacy_warmup_steps_curve(*, steps: int, warmup_steps: int):
    """Legacy has only the ratio: ``ceil(steps * (warmup_steps / steps))`` gives the same W (unclamped)."""
    ratio = warmup_steps / steps
    if math.ceil(steps * ratio) != warmup_steps:
        raise AssertionError(f"ratio {ratio!r} does not give {warmup_steps} warmup steps of {steps}")
    return legacy_lr_curve(steps=steps, warmup_ratio=ratio, decay_style="cosine", lr_min=DEBUG_LR_MIN)


def new_warmup_steps_curve(*, steps: int, warmup_steps: int):
    optimizer = one_param_optimizer(DEBUG_LR)
    schedulers = new_schedulers(
        optimizer, training_steps=steps, warmup_steps=warmup_steps, lr_min=DEBUG_LR_MIN
    )
    return lr_curve_of(schedulers, optimizer, steps)


# warmup_steps past the horizon: W is not clamped to T (the legacy ratio path is not either).
LR_SCHEDULER.grid(
    "lrsched_warmup_steps",
    params=[{"steps": 4, "warmup_steps": _w} for _w in (3, 6)],
    kind="lr_curve",
    legacy=legacy_warmup_steps_curve,
    new=new_warmup_steps_curve,
)


def _lr_strategies() -> dict[str, Any]:
    from hypothesis import strategies as st

    return {
        "steps": st.integers(0, 300),
        "warmup_ratio": st.floats(0.0, 1.2, allow_nan=False, allow_infinity=False),
        "decay_style": st.sampled_from(("cosine", "constant", "linear")),
        "lr_min": st.sampled_from((0.0, 1e-6, 1e-5, 1e-4, 5e-4, 1e-3)),
    }


LR_SCHEDULER.pair(
    "lrsched_hypothesis",
    kind="lr_curve",
    legacy=legacy_lr_curve,
    new=new_lr_curve,
    strategies=_lr_strategies(),
)


# ----------------------------------------------------------------------------- state after 3 steps


def legacy_trained(*, seed: int, steps: int, clip: bool, indices: bool = False):
    model = debug_model(seed)
    trainer = bare_trainer(legacy_args(), model=model)
    trainer._build_optimizer()
    trainer._build_lr_scheduler()
    train(
        model,
        trainer.optimizer,
        trainer.lr_scheduler,
        batches(seed, steps),
        clip=MAX_GRAD_NORM if clip else None,
    )
    return trained_state(model, trainer.optimizer, trainer.lr_scheduler, indices=indices)


def new_trained(*, seed: int, steps: int, clip: bool, in_backward: bool = False, indices: bool = False):
    model = debug_model(seed)
    optimizers = new_optimizers([model], in_backward=in_backward, **debug_optimizer_fields())
    schedulers = new_schedulers(
        optimizers, training_steps=legacy_args().train.max_steps, **debug_scheduler_fields()
    )
    train(model, optimizers, schedulers, batches(seed, steps), clip=MAX_GRAD_NORM if clip else None)
    return trained_state(model, optimizers, schedulers, indices=indices)


def new_in_backward_trained(*, seed: int, steps: int, clip: bool):
    if clip:
        raise ValueError("the in-backward container steps before the global grad norm exists: use clip=False")
    return new_trained(seed=seed, steps=steps, clip=False, in_backward=True, indices=True)


# The pairs also compare the state dicts' integer layout (a resume into the other container reads
# it); the golden keeps its recorded tree (its MindSpore golden holds no layout).
def legacy_trained_with_layout(**params: Any):
    return legacy_trained(**params, indices=True)


def new_trained_with_layout(**params: Any):
    return new_trained(**params, indices=True)


OPTIMIZER.pair(
    "optim_state",
    kind="checkpoint",
    seed=11,
    params={"seed": 0, "steps": 3, "clip": True},
    legacy=legacy_trained_with_layout,
    new=new_trained_with_layout,
)
OPTIMIZER.pair(
    "optim_in_backward_state",
    kind="checkpoint",
    seed=11,
    params={"seed": 0, "steps": 3, "clip": False},
    legacy=legacy_trained_with_layout,
    new=new_in_backward_trained,
)


# ----------------------------------------------------------------------------- toy modules
#
# Small torch modules that the debug model cannot give: mixed-case names around every keyword,
# several model parts, parameters shared between parts and tied within one, frozen parameters and
# custom decay keywords. A toy is a tuple of parts; a part is a tuple of entries
# ``(path, shape, frozen, alias)``: ``path`` is ``<module>[.<module>...].<param>``, ``alias`` is the
# index of an earlier entry (over all parts, in order) whose Parameter object this entry reuses
# (its shape and frozen flag are then the original's), or -1 for a fresh parameter.

ToyEntry = tuple[str, tuple[int, ...], bool, int]
ToySpec = tuple[tuple[ToyEntry, ...], ...]

TOY_LR = 1e-2
TOY_WEIGHT_DECAY = 0.1  # lr * wd != 0: a parameter in the wrong group steps to other bits

TOYS: dict[str, ToySpec] = {
    # One part: mixed-case names, keywords inside words and in module paths, a tied parameter.
    "mixed_case": (
        (
            ("Embed.weight", (4, 3), False, -1),  # 0
            ("LayerNorm.weight", (3,), False, -1),
            ("LayerNorm.Bias", (3,), False, -1),
            ("Dense.weight", (3, 3), False, -1),
            ("Dense.BIAS", (3,), False, -1),
            ("block.norm.Weight", (3,), False, -1),  # 5
            ("block.RMSNorm.scale", (3,), False, -1),
            ("block.q_proj.weight", (3, 3), False, -1),
            ("Unbiased.weight", (2,), False, -1),  # "bias" inside a word
            ("abNormal.w", (2,), False, -1),  # "norm" inside a word
            ("Head.Bias", (), False, 0),  # 10: tied to Embed.weight: counted once, as decay (first name)
            ("scalar.Gain", (), False, -1),  # 0-d
        ),
    ),
    # Three parts (pipeline stages of one model): a parameter shared by parts 0 and 2, one tied
    # within part 1, frozen parameters (one of them shared), mixed case throughout.
    "parts": (
        (
            ("embed.Weight", (4, 3), False, -1),  # 0
            ("Layer0.LayerNorm.weight", (3,), False, -1),
            ("Layer0.attn.Wq", (3, 3), False, -1),
            ("Layer0.attn.bias", (3,), False, -1),
            ("Layer0.Frozen_Norm.weight", (3,), True, -1),
        ),
        (
            ("Layer1.LayerNorm.weight", (3,), False, -1),  # 5
            ("Layer1.mlp.Up", (3, 3), False, -1),
            ("Layer1.mlp.Down", (3, 3), False, -1),
            ("Layer1.mlp.DownTied", (), False, 6),  # tied to Layer1.mlp.Up within the part
            ("Layer1.mlp.Bias", (3,), False, -1),
            ("Layer1.mlp.gate", (3,), True, -1),  # 10
        ),
        (
            ("final_NORM.weight", (3,), False, -1),
            ("lm_head.weight", (), False, 0),  # shared with part 0's embed.Weight
            ("lm_head.Bias", (4,), False, -1),
            ("Pooler.Norm.shared_w", (), False, 2),  # shared with Layer0.attn.Wq: decay (first name)
            ("Pooler.frozen_ref", (), False, 4),  # 15: shared and frozen
            ("Pooler.RmsNorm.g", (2,), False, -1),
        ),
    ),
    # Two parts, most parameters frozen (a tied one too); part 1's only trainable one is shared.
    "frozen": (
        (
            ("Norm.weight", (3,), True, -1),  # 0
            ("Norm.bias", (3,), False, -1),
            ("Proj.weight", (3, 3), True, -1),
            ("Proj.tied", (), False, 2),  # tied to the frozen Proj.weight
            ("Proj.Gain", (3,), False, -1),
        ),
        (
            ("Tail.LayerNorm.weight", (3,), True, -1),  # 5
            ("Tail.out", (2, 3), True, -1),
            ("Tail.shared", (), False, 4),  # shared with part 0's Proj.Gain
        ),
    ),
}

# Decay keyword sets. The legacy builder has one, hard-coded (``base.NO_DECAY_KEYWORDS``); for a
# set of its own the harness swaps that constant for the duration of the legacy build (the only
# knob the legacy path has). "minimal" is the legacy set written differently: "layernorm" and
# "rmsnorm" contain "norm", so the legacy side keeps its own constant there.
KEYWORD_SETS: dict[str, tuple[str, ...] | None] = {
    "default": None,  # the new side uses its Config default
    "minimal": ("norm", "bias"),
    "custom": ("gain", "embed", "proj", "head"),
}
_LEGACY_KEYWORDS: dict[str, tuple[str, ...] | None] = {
    "default": None,
    "minimal": None,
    "custom": KEYWORD_SETS["custom"],
}


class ToyModule:
    """A ``torch.nn.Module``-shaped tree of MindSpore Parameters (the toys on MindSpore, where a
    Cell would rename and re-register parameters): ``named_parameters()`` walks it as torch does,
    in pre-order, a module's own parameters before its children's, each Parameter once under its
    first name."""

    def __init__(self) -> None:
        self._parameters: dict[str, Any] = {}
        self._modules: dict[str, ToyModule] = {}

    def add_module(self, name: str, module: ToyModule) -> None:
        self._modules[name] = module

    def register_parameter(self, name: str, param: Any) -> None:
        self._parameters[name] = param

    def named_children(self) -> Iterator[tuple[str, ToyModule]]:
        yield from self._modules.items()

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()

        def walk(module: ToyModule, at: str) -> Iterator[tuple[str, Any]]:
            for name, param in module._parameters.items():
                if id(param) not in seen:
                    seen.add(id(param))
                    yield at + name, param
            for name, child in module._modules.items():
                yield from walk(child, f"{at}{name}.")

        yield from walk(self, f"{prefix}." if prefix else "")

    def parameters(self) -> list[Any]:
        return [p for _, p in self.named_parameters()]


def _toy_factories(seed: int) -> tuple[Callable[[], Any], Callable[[str, tuple[int, ...], bool], Any]]:
    """``(new module, new parameter)`` of the platform: torch Modules and ``torch.randn`` draws, or
    ``ToyModule`` and MindSpore Parameters drawn from the platform's numpy generator."""
    from hyper_parallel.platform import get_platform

    platform = get_platform()
    if platform.name == "torch":
        import torch

        generator = torch.Generator().manual_seed(seed)

        def torch_param(path: str, shape: tuple[int, ...], frozen: bool) -> Any:
            del path
            return torch.nn.Parameter(torch.randn(shape, generator=generator), requires_grad=not frozen)

        return torch.nn.Module, torch_param
    import mindspore as ms
    import numpy as np

    rng = platform.generator(seed)

    def ms_param(path: str, shape: tuple[int, ...], frozen: bool) -> Any:
        value = np.asarray(rng.standard_normal(shape), dtype=np.float32)
        return ms.Parameter(ms.Tensor(value), name=path, requires_grad=not frozen)

    return ToyModule, ms_param


def build_toy_parts(spec: ToySpec, *, seed: int = 0) -> tuple[list[Any], list[Any]]:
    """The parts of a toy (one ``torch.nn.Module`` each; ``ToyModule`` on MindSpore) and the
    Parameter of every entry."""
    new_module, new_param = _toy_factories(seed)
    parts: list[Any] = []
    flat: list[Any] = []
    for part_spec in spec:
        part = new_module()
        for path, shape, frozen, alias in part_spec:
            *module_path, leaf = path.split(".")
            if not module_path:
                raise ValueError(
                    f"toy entry {path!r}: expected <module>.<param> (no parameter on a part itself)"
                )
            owner = part
            for segment in module_path:
                child = owner._modules.get(segment)
                if child is None:
                    child = new_module()
                    owner.add_module(segment, child)
                owner = child
            if alias >= 0:
                param = flat[alias]
            else:
                param = new_param(path, shape, frozen)
            owner.register_parameter(leaf, param)
            flat.append(param)
        parts.append(part)
    return parts, flat


def whole_module(parts: Sequence[Any]) -> Any:
    """The single module the legacy builder sees: every part's top-level children, in part order.

    Parts are stages of one model and keep its FQNs (torchtitan's pipeline split), so the names,
    the ``named_parameters()`` order and the first name of a shared parameter are the same.
    """
    import torch

    whole = torch.nn.Module()
    for i, part in enumerate(parts):
        if part._parameters:
            raise ValueError(f"toy part {i}: parameters directly on a part have no place in the whole model")
        for name, child in part.named_children():
            if name in whole._modules:
                raise ValueError(f"toy part {i}: top-level module {name!r} is already in an earlier part")
            whole.add_module(name, child)
    return whole


def _toy_spec(toy: str, spec: ToySpec | None) -> ToySpec:
    if spec is not None:
        return spec
    if toy not in TOYS:
        raise KeyError(f"unknown toy {toy!r}; expected one of {', '.join(TOYS)}")
    return TOYS[toy]


def _parts_named(parts: Sequence[Any]) -> list[tuple[str, Any]]:
    return [(n, p) for part in parts for n, p in part.named_parameters()]


@contextlib.contextmanager
def legacy_decay_keywords(keywords: tuple[str, ...] | None) -> Iterator[None]:
    """Run the legacy builder with ``keywords`` in place of its hard-coded set (None: unchanged)."""
    from hyper_parallel.trainer import base

    original = base.NO_DECAY_KEYWORDS
    if keywords is not None:
        setattr(base, "NO_DECAY_KEYWORDS", keywords)  # noqa: B010 (a tuple of another length)
    try:
        yield
    finally:
        setattr(base, "NO_DECAY_KEYWORDS", original)  # noqa: B010


@functools.cache
def toy_legacy_args() -> Any:
    """The legacy args of every toy case, parsed once (the builder only reads them; the YAML parse
    would otherwise dominate a drawn example)."""
    # Only the values the new side is given too; eps and betas stay each side's own default.
    return legacy_args(
        f"--train.optimizer.lr={TOY_LR!r}", f"--train.optimizer.weight_decay={TOY_WEIGHT_DECAY!r}"
    )


def legacy_toy_optimizer(spec: ToySpec, keywords: str, *, seed: int = 0):
    """``(whole model, parts, entry params, legacy AdamW)`` on the single module holding the parts."""
    parts, flat = build_toy_parts(spec, seed=seed)
    whole = whole_module(parts)
    trainer = bare_trainer(toy_legacy_args(), model=whole)
    with legacy_decay_keywords(_LEGACY_KEYWORDS[keywords]):
        trainer._build_optimizer()
    return whole, flat, trainer.optimizer


def new_toy_optimizer(spec: ToySpec, keywords: str, *, in_backward: bool = False, seed: int = 0):
    """``(parts, entry params, container)``: the container built on the parts themselves."""
    parts, flat = build_toy_parts(spec, seed=seed)
    fields: dict[str, Any] = {"lr": TOY_LR, "weight_decay": TOY_WEIGHT_DECAY}
    if KEYWORD_SETS[keywords] is not None:
        fields["decay_keywords"] = KEYWORD_SETS[keywords]
    return parts, flat, new_optimizers(parts, in_backward=in_backward, **fields)


def legacy_toy_groups(*, keywords: str, toy: str = "drawn", spec: ToySpec | None = None):
    whole, _, optimizer = legacy_toy_optimizer(_toy_spec(toy, spec), keywords)
    return canonical.param_groups(optimizer.param_groups, whole.named_parameters())


def new_toy_groups(
    *, keywords: str, toy: str = "drawn", spec: ToySpec | None = None, in_backward: bool = False
):
    parts, _, container = new_toy_optimizer(_toy_spec(toy, spec), keywords, in_backward=in_backward)
    if in_backward:
        container.remove_hooks()
    return canonical.param_groups(container.param_groups, _parts_named(parts))


def new_in_backward_toy_groups(**params: Any):
    return new_toy_groups(**params, in_backward=True)


def toy_step(flat: Sequence[Any], optimizer, *, seed: int) -> None:
    """One backward of ``sum((p * g).sum())`` over every entry (a tied or shared parameter collects
    one gradient per use), then ``step`` and ``zero_grad``. ``g`` is drawn per entry, frozen ones too
    (on MindSpore from the platform's numpy generator, differentiated by ``platform.backward``)."""
    import torch

    from hyper_parallel.platform import get_platform

    platform = get_platform()
    if platform.name != "torch":
        _toy_step_platform(platform, flat, optimizer, seed=seed)
        return
    generator = torch.Generator().manual_seed(seed + 1)
    loss = None
    for param in flat:
        grad = torch.randn(param.shape, generator=generator)
        if param.requires_grad:
            term = (param * grad).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    optimizer.step()
    optimizer.zero_grad()


class _Trainable:
    """The trainable entries of a toy, each once, as ``platform.backward`` reads them."""

    def __init__(self, flat: Sequence[Any]) -> None:
        self._params = {id(p): p for p in flat if p.requires_grad}

    def named_parameters(self) -> Iterator[tuple[str, Any]]:
        for index, param in enumerate(self._params.values()):
            yield f"p{index}", param


def _toy_step_platform(platform: Any, flat: Sequence[Any], optimizer, *, seed: int) -> None:
    import mindspore as ms
    import numpy as np

    rng = platform.generator(seed + 1)
    grads = [ms.Tensor(np.asarray(rng.standard_normal(tuple(p.shape)), dtype=np.float32)) for p in flat]

    def loss_fn() -> tuple[Any, Any]:
        terms = [(param * grad).sum() for param, grad in zip(flat, grads, strict=True) if param.requires_grad]
        loss = terms[0]
        for term in terms[1:]:
            loss = loss + term
        return loss, loss

    if any(p.requires_grad for p in flat):
        platform.backward(loss_fn, _Trainable(flat))
    optimizer.step()
    optimizer.zero_grad()


def toy_state(optimizer, model_parts: Sequence[Any]) -> dict[str, Any]:
    """Optimizer state (keyed by FQN) and every parameter, each parameter under its first name."""
    params: dict[str, Any] = {}
    for name, param in _parts_named(model_parts):
        if all(param is not seen for seen in params.values()):
            params[name] = param
    return canonical.checkpoint(
        {
            "optimizer": named_optimizer_state(optimizer.state_dict(), optimizer.param_groups, model_parts),
            "params": params,
        }
    )


def legacy_toy_stepped(*, toy: str, keywords: str, seed: int):
    whole, flat, optimizer = legacy_toy_optimizer(TOYS[toy], keywords, seed=seed)
    with one_thread():
        toy_step(flat, optimizer, seed=seed)
    return toy_state(optimizer, [whole])


def new_toy_stepped(*, toy: str, keywords: str, seed: int, in_backward: bool = False):
    parts, flat, container = new_toy_optimizer(TOYS[toy], keywords, in_backward=in_backward, seed=seed)
    with one_thread():
        toy_step(flat, container, seed=seed)
    if in_backward:
        container.remove_hooks()
    return toy_state(container, parts)


def new_in_backward_toy_stepped(**params: Any):
    return new_toy_stepped(**params, in_backward=True)


TOY_GROUP_PARAMS: tuple[dict[str, Any], ...] = (
    {"toy": "mixed_case", "keywords": "default"},
    {"toy": "mixed_case", "keywords": "custom"},
    {"toy": "parts", "keywords": "default"},
    {"toy": "parts", "keywords": "minimal"},
    {"toy": "frozen", "keywords": "custom"},
)
OPTIMIZER.grid(
    "optim_toy_groups",
    params=TOY_GROUP_PARAMS,
    kind="param_groups",
    legacy=legacy_toy_groups,
    new=new_toy_groups,
)
OPTIMIZER.pair(
    "optim_toy_in_backward_groups",
    kind="param_groups",
    params=TOY_GROUP_PARAMS[2],
    legacy=legacy_toy_groups,
    new=new_in_backward_toy_groups,
)

TOY_STEP_PARAMS: tuple[dict[str, Any], ...] = (
    {"toy": "mixed_case", "keywords": "default", "seed": 0},
    {"toy": "parts", "keywords": "custom", "seed": 1},
    {"toy": "frozen", "keywords": "default", "seed": 2},
)
OPTIMIZER.grid(
    "optim_toy_step",
    params=TOY_STEP_PARAMS,
    kind="checkpoint",
    legacy=legacy_toy_stepped,
    new=new_toy_stepped,
)
OPTIMIZER.pair(
    "optim_toy_in_backward_step",
    kind="checkpoint",
    params={"toy": "parts", "keywords": "default", "seed": 1},
    legacy=legacy_toy_stepped,
    new=new_in_backward_toy_stepped,
)

# Drawn toys: names from a small alphabet (mixed case, keywords inside words), 1-3 parts, shapes,
# frozen flags and which entries reuse an earlier parameter (tied within a part or shared).
_TOY_MODULES = (
    "LayerNorm",
    "layernorm",
    "Norm",
    "RMSNorm",
    "q_norm",
    "Proj",
    "Dense",
    "enormous",
    "abNormal",
    "Unbiased",
    "Embed",
    "Gate",
    "mlp",
)
_TOY_LEAVES = ("weight", "Weight", "bias", "Bias", "BIAS", "scale", "w", "Gain", "norm_w", "headB")


def _toy_strategy() -> Any:
    from hypothesis import strategies as st

    leaves = st.lists(st.sampled_from(_TOY_LEAVES), min_size=1, max_size=3, unique=True)
    shapes = st.lists(st.integers(1, 3), max_size=2).map(tuple)

    @st.composite
    def toy_specs(draw: Any) -> ToySpec:
        n_parts = draw(st.integers(1, 3))
        tops = draw(st.lists(st.sampled_from(_TOY_MODULES), min_size=n_parts, max_size=6, unique=True))
        owners = sorted(draw(st.lists(st.integers(0, n_parts - 1), min_size=len(tops), max_size=len(tops))))
        owners[:n_parts] = range(n_parts)  # every part gets at least one top-level module
        owners.sort()
        count = 0
        parts: list[tuple[ToyEntry, ...]] = []
        for k in range(n_parts):
            entries: list[ToyEntry] = []
            for top, owner in zip(tops, owners):
                if owner != k:
                    continue
                child = draw(st.sampled_from(("", *(m for m in _TOY_MODULES if m != top))))
                prefix = f"{top}.{child}" if child else top
                for leaf in draw(leaves):
                    reuse = count > 0 and draw(st.integers(0, 3)) == 0
                    alias = draw(st.integers(0, count - 1)) if reuse else -1
                    entries.append((f"{prefix}.{leaf}", draw(shapes), draw(st.integers(0, 3)) == 0, alias))
                    count += 1
            parts.append(tuple(entries))
        return tuple(parts)

    return toy_specs()


def _toy_strategies() -> dict[str, Any]:
    from hypothesis import strategies as st

    return {"spec": _toy_strategy(), "keywords": st.sampled_from(tuple(KEYWORD_SETS))}


OPTIMIZER.pair(
    "optim_toy_hypothesis",
    kind="param_groups",
    legacy=legacy_toy_groups,
    new=new_toy_groups,
    strategies=_toy_strategies(),
)


# ----------------------------------------------------------------------------- tier B goldens

OPTIMIZER.golden(
    "optim_new_groups",
    kind="param_groups",
    params=_GROUP_PARAMS[0],
    producer=new_param_groups,
    backends=("torch", "mindspore"),
)
OPTIMIZER.golden(
    "optim_new_state",
    kind="checkpoint",
    seed=11,
    params={"seed": 0, "steps": 3, "clip": True},
    producer=new_trained,
    backends=("torch", "mindspore"),
)
LR_SCHEDULER.grid(
    "lrsched_new_curve",
    params=(LR_GRID[1], LR_GRID[3]),
    kind="lr_curve",
    producer=new_lr_curve,
    backends=("torch", "mindspore"),
)
OPTIMIZER.golden(
    "optim_toy_new_groups",
    kind="param_groups",
    params=TOY_GROUP_PARAMS[2],
    producer=new_toy_groups,
    backends=("torch", "mindspore"),
)
OPTIMIZER.golden(
    "optim_toy_new_step",
    kind="checkpoint",
    params=TOY_STEP_PARAMS[1],
    producer=new_toy_stepped,
    backends=("torch", "mindspore"),
)
