"""Optimizer and LR scheduler components vs the legacy ``_build_optimizer`` / ``_build_lr_scheduler``.

Tier A pairs run the legacy builder on a bare ``BaseTrainer`` and the component on the same
inputs: param groups (FQNs and hyperparameters) on the debug model, the LR curve over a grid of
(steps, warmup ratio, decay style, lr_min), warmup after the dataset changed ``max_steps``, and
the optimizer + scheduler state after 3 training steps (also for the in-backward container).
Tier B goldens pin what the new components produce on explicit params.

The helpers below are the harness side (inputs, training loop, FQN mapping); they are shared by
both producers of a pair, never the logic under test.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from parity import canonical
from parity.cases import REGISTRY
from parity.legacy_driver import bare_trainer, legacy_args

# The debug recipe's optimizer section (examples/debug/train.yaml).
DEBUG_LR = 1e-3
DEBUG_LR_MIN = 1e-4
DEBUG_WARMUP_RATIO = 0.1
DEBUG_WEIGHT_DECAY = 0.01
MAX_GRAD_NORM = 1.0
# Steps past T in each LR curve: the legacy cosine is not clamped there.
PAST_END = 5


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


def debug_model(seed: int, *, frozen: str = "none"):
    """The debug Qwen3.5 model (tied embeddings) with seeded weights; ``frozen``: name substring."""
    import torch

    from hyper_parallel.models.qwen3_5 import build_qwen3_5

    torch.manual_seed(seed)
    model = build_qwen3_5(legacy_args())
    if frozen != "none":
        for name, param in model.named_parameters():
            if frozen in name:
                param.requires_grad_(False)
    return model


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


def train(model, optimizer, scheduler, inputs: Iterable[Any], *, clip: float | None) -> None:
    """The legacy step order: backward, clip, optimizer step, scheduler step, zero_grad."""
    import torch

    with one_thread():
        for ids in inputs:
            model(input_ids=ids, labels=ids, use_cache=False)["loss"].backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()


def named_optimizer_state(
    state_dict: Mapping[str, Any], param_groups: Sequence[Mapping[str, Any]], model_parts: Sequence[Any]
) -> dict[str, Any]:
    """An optimizer state dict keyed by parameter FQN instead of integer index.

    ``param_groups`` (the optimizer's live groups) give each group's parameter objects in index
    order; ``canonical.param_groups`` names them through the model parts.
    """
    named = [(n, p) for part in model_parts for n, p in part.named_parameters()]
    groups = canonical.param_groups(param_groups, named)
    fqn_of: dict[int, str] = {}
    for saved, group in zip(state_dict["param_groups"], groups, strict=True):
        fqn_of.update(zip(saved["params"], group["params"], strict=True))
    return {
        "state": {fqn_of[index]: value for index, value in state_dict["state"].items()},
        "param_groups": [
            {**{k: v for k, v in saved.items() if k != "params"}, "params": group["params"]}
            for saved, group in zip(state_dict["param_groups"], groups, strict=True)
        ],
    }


def trained_state(model, optimizer, scheduler) -> dict[str, Any]:
    return canonical.checkpoint(
        {
            "optimizer": named_optimizer_state(optimizer.state_dict(), optimizer.param_groups, [model]),
            "scheduler": scheduler.state_dict(),
            "model": model.state_dict(),
        }
    )


def lr_curve_of(scheduler, optimizer, steps: int) -> list:
    """``get_last_lr()`` at build, then after each of ``steps + PAST_END`` steps."""
    curve = [scheduler.get_last_lr()]
    for _ in range(steps + PAST_END):
        optimizer.step()
        scheduler.step()
        curve.append(scheduler.get_last_lr())
    return canonical.lr_curve(curve)


def one_param_optimizer(lr: float):
    """An AdamW over one zero parameter (the schedule does not depend on the parameters)."""
    import torch

    return torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=lr)


# ----------------------------------------------------------------------------- new-side builders


def new_optimizers(model_parts, *, in_backward: bool = False, **fields: Any):
    from hyper_parallel.components.optimizer import OptimizersContainer, OptimizersInBackwardContainer

    cls = OptimizersInBackwardContainer if in_backward else OptimizersContainer
    return cls.Config(**fields).build(model_parts=list(model_parts))


def new_schedulers(optimizers, *, training_steps: int, **fields: Any):
    from hyper_parallel.components.lr_scheduler import LRSchedulersContainer

    return LRSchedulersContainer.Config(**fields).build(optimizers=optimizers, training_steps=training_steps)


def debug_optimizer_fields(**changes: Any) -> dict[str, Any]:
    return {"lr": DEBUG_LR, "weight_decay": DEBUG_WEIGHT_DECAY, **changes}


def debug_scheduler_fields(**changes: Any) -> dict[str, Any]:
    return {"lr_warmup_ratio": DEBUG_WARMUP_RATIO, "decay_style": "cosine", "lr_min": DEBUG_LR_MIN, **changes}


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
for _params in _GROUP_PARAMS:
    REGISTRY.pair(
        "optim_groups",
        kind="param_groups",
        tags=("optimizer",),
        params=_params,
        legacy=legacy_param_groups,
        new=new_param_groups,
    )
REGISTRY.pair(
    "optim_in_backward_groups",
    kind="param_groups",
    tags=("optimizer",),
    params=_GROUP_PARAMS[1],
    legacy=legacy_param_groups,
    new=new_in_backward_param_groups,
)


# ----------------------------------------------------------------------------- LR curves


def legacy_lr_curve(
    *, steps: int, warmup_ratio: float, decay_style: str, lr_min: float, data_steps: int = -1
):
    """Legacy schedule; ``data_steps >= 0`` stands for a dataset that changed ``state.max_steps``."""
    args = legacy_args(
        f"--train.max_steps={steps}",
        f"--train.optimizer.lr_warmup_ratio={warmup_ratio!r}",
        f"--train.optimizer.lr_decay_style={decay_style}",
        f"--train.optimizer.lr_min={lr_min!r}",
    )
    trainer = bare_trainer(args, max_steps=None if data_steps < 0 else data_steps)
    trainer.optimizer = one_param_optimizer(args.train.optimizer.lr)
    trainer._build_lr_scheduler()
    return lr_curve_of(trainer.lr_scheduler, trainer.optimizer, trainer.state.max_steps)


def new_lr_curve(*, steps: int, warmup_ratio: float, decay_style: str, lr_min: float, data_steps: int = -1):
    """The component built with training_steps = max_steps after the dataset step."""
    training_steps = steps if data_steps < 0 else data_steps
    optimizer = one_param_optimizer(DEBUG_LR)
    schedulers = new_schedulers(
        optimizer,
        training_steps=training_steps,
        lr_warmup_ratio=warmup_ratio,
        decay_style=decay_style,
        lr_min=lr_min,
    )
    return lr_curve_of(schedulers, optimizer, training_steps)


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
for _params in LR_GRID:
    REGISTRY.pair(
        "lrsched_grid",
        kind="lr_curve",
        tags=("lr_scheduler",),
        params=_params,
        legacy=legacy_lr_curve,
        new=new_lr_curve,
    )

# The YAML says 100 steps; the dataset leaves 24 (hf shrink: 198 rows // 8). ceil(24 * 0.1) = 3
# warmup steps, where a ratio resolved from the YAML would give 10.
REGISTRY.pair(
    "lrsched_dataset_shrunk",
    kind="lr_curve",
    tags=("lr_scheduler",),
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


REGISTRY.pair(
    "lrsched_preset_pt_reset",
    kind="lr_curve",
    tags=("lr_scheduler",),
    params={"steps": 30, "stale_steps": 7, "warmup_ratio": 0.1},
    legacy=legacy_preset_pt_curve,
    new=new_preset_pt_curve,
)


def _lr_strategies() -> dict[str, Any]:
    from hypothesis import strategies as st

    return {
        "steps": st.integers(0, 300),
        "warmup_ratio": st.floats(0.0, 1.2, allow_nan=False, allow_infinity=False),
        "decay_style": st.sampled_from(("cosine", "constant", "linear")),
        "lr_min": st.sampled_from((0.0, 1e-6, 1e-5, 1e-4, 5e-4, 1e-3)),
    }


REGISTRY.pair(
    "lrsched_hypothesis",
    kind="lr_curve",
    tags=("lr_scheduler",),
    legacy=legacy_lr_curve,
    new=new_lr_curve,
    strategies=_lr_strategies(),
)


# ----------------------------------------------------------------------------- state after 3 steps


def legacy_trained(*, seed: int, steps: int, clip: bool):
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
    return trained_state(model, trainer.optimizer, trainer.lr_scheduler)


def new_trained(*, seed: int, steps: int, clip: bool, in_backward: bool = False):
    model = debug_model(seed)
    optimizers = new_optimizers([model], in_backward=in_backward, **debug_optimizer_fields())
    schedulers = new_schedulers(
        optimizers, training_steps=legacy_args().train.max_steps, **debug_scheduler_fields()
    )
    train(model, optimizers, schedulers, batches(seed, steps), clip=MAX_GRAD_NORM if clip else None)
    return trained_state(model, optimizers, schedulers)


def new_in_backward_trained(*, seed: int, steps: int, clip: bool):
    if clip:
        raise ValueError("the in-backward container steps before the global grad norm exists: use clip=False")
    return new_trained(seed=seed, steps=steps, clip=False, in_backward=True)


REGISTRY.pair(
    "optim_state",
    kind="checkpoint",
    tags=("optimizer",),
    seed=11,
    params={"seed": 0, "steps": 3, "clip": True},
    legacy=legacy_trained,
    new=new_trained,
)
REGISTRY.pair(
    "optim_in_backward_state",
    kind="checkpoint",
    tags=("optimizer",),
    seed=11,
    params={"seed": 0, "steps": 3, "clip": False},
    legacy=legacy_trained,
    new=new_in_backward_trained,
)


# ----------------------------------------------------------------------------- tier B goldens

REGISTRY.golden(
    "optim_new_groups",
    kind="param_groups",
    tags=("optimizer",),
    params=_GROUP_PARAMS[0],
    producer=new_param_groups,
)
REGISTRY.golden(
    "optim_new_state",
    kind="checkpoint",
    tags=("optimizer",),
    seed=11,
    params={"seed": 0, "steps": 3, "clip": True},
    producer=new_trained,
)
for _params in (LR_GRID[1], LR_GRID[3]):
    REGISTRY.golden(
        "lrsched_new_curve", kind="lr_curve", tags=("lr_scheduler",), params=_params, producer=new_lr_curve
    )
