"""Synthetic producers for the harness tests: small torch/pure-Python artifacts, one per kind.

Each producer has a correct form (what a legacy builder would produce) and a ``planted`` form with
one realistic divergence, so the tests can prove the comparator catches it and names the right
path and first index. Nothing here touches the real trainer.
"""

from __future__ import annotations

import math

import torch
from hypothesis import strategies as st

from parity import canonical
from parity.cases import Registry

REGISTRY = Registry(source="tests.parity.parity_synthetic:REGISTRY")
FLIP_INDEX = 5
LARGE_FLIP_INDEX = 77_777


# ----------------------------------------------------------------------------- param groups
def _model() -> torch.nn.Module:
    gen = torch.Generator().manual_seed(0)
    model = torch.nn.ModuleDict(
        {"embed": torch.nn.Embedding(8, 4), "proj": torch.nn.Linear(4, 4), "norm": torch.nn.LayerNorm(4)}
    )
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    return model


def param_groups(*, eps: float = 1e-8, decay_keywords: tuple[str, ...] = ("bias", "norm")) -> list:
    model = _model()
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if any(k in name for k in decay_keywords) else decay).append(param)
    groups = [
        {"params": decay, "lr": 1e-3, "betas": (0.9, 0.95), "eps": eps, "weight_decay": 0.1},
        {"params": no_decay, "lr": 1e-3, "betas": (0.9, 0.95), "eps": eps, "weight_decay": 0.0},
    ]
    return canonical.param_groups(groups, model.named_parameters())


# ----------------------------------------------------------------------------- LR curve
def lr_curve(*, warmup_ratio: float = 0.25, steps: int = 10, rounding: str = "ceil", lr: float = 0.1) -> list:
    """Linear warmup from lr 0 at step 0, then constant; warmup steps from a ratio (ceil is right)."""
    warmup = (math.ceil if rounding == "ceil" else math.floor)(warmup_ratio * steps)
    return canonical.lr_curve([lr * min(1.0, step / warmup) for step in range(steps)])


# ----------------------------------------------------------------------------- batches
def batches(*, seq_len: int = 6, shift: str = "right") -> list:
    """Labels are the next token, -100 at the end; the planted form rolls (last label wraps around)."""
    gen = torch.Generator().manual_seed(1)
    out = []
    for _ in range(2):
        ids = torch.randint(3, 50, (2, seq_len), generator=gen)
        if shift == "right":
            labels = torch.full_like(ids, -100)
            labels[:, :-1] = ids[:, 1:]
        else:
            labels = torch.roll(ids, -1, dims=1)
        out.append({"input_ids": ids, "labels": labels})
    return canonical.batches(out)


# ----------------------------------------------------------------------------- token ids
def token_ids(*, pad_id: int = 0, length: int = 6) -> canonical.TensorLeaf:
    rows = [[5, 6, 7], [8, 9, 10, 11]]
    padded = [row + [pad_id] * (length - len(row)) for row in rows]
    return canonical.token_ids(torch.tensor(padded, dtype=torch.int64))


# ----------------------------------------------------------------------------- checkpoints
def checkpoint(*, flip: bool = False, large: bool = False) -> dict:
    model = _model()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    if large:
        state["big"] = torch.arange(200_000, dtype=torch.float32) / 7.0
    if flip:
        name, index = ("big", LARGE_FLIP_INDEX) if large else ("proj.weight", FLIP_INDEX)
        flat = state[name].view(-1).view(torch.int32)
        flat[index] ^= 1 << 3  # one mantissa bit: 8 ULP
    return canonical.checkpoint({"model": state, "step": 3, "rng_seed": 1234, "lr": 0.1})


# ----------------------------------------------------------------------------- metrics
def metrics(*, tokens_key: str = "tokens") -> dict:
    rows = [
        {"loss": 2.5 - 0.1 * s, "lr": 0.1, tokens_key: 128 * (s + 1), "time_s": 0.01 * s} for s in range(3)
    ]
    return canonical.metrics(rows, deterministic=("loss", "lr", tokens_key))


# ----------------------------------------------------------------------------- losses
def losses(*, zero: float = 0.0) -> list:
    return canonical.losses([2.0, zero, torch.tensor([zero, 1.0])])


# ----------------------------------------------------------------------------- registry
def _legacy_lr(*, warmup_steps: int, steps: int) -> list:
    return canonical.lr_curve([0.1 * min(1.0, s / warmup_steps) for s in range(steps)])


def _new_lr_diverges_above_5(*, warmup_steps: int, steps: int) -> list:
    # Planted: for long warmups the "new" side divides by one step less.
    w = warmup_steps - 1 if warmup_steps > 5 else warmup_steps
    return canonical.lr_curve([0.1 * min(1.0, s / w) for s in range(steps)])


REGISTRY.pair(
    "warmup_ceil",
    kind="lr_curve",
    seed=0,
    params={"steps": 10},
    legacy=lambda steps: lr_curve(steps=steps),
    new=lambda steps: lr_curve(steps=steps),
)
REGISTRY.pair(
    "warmup_floor",
    kind="lr_curve",
    seed=0,
    params={"steps": 10},
    legacy=lambda steps: lr_curve(steps=steps),
    new=lambda steps: lr_curve(steps=steps, rounding="floor"),
)
REGISTRY.pair(
    "long_warmup",
    kind="lr_curve",
    seed=3,
    params={"steps": 12},
    legacy=_legacy_lr,
    new=_new_lr_diverges_above_5,
    strategies={"warmup_steps": st.integers(1, 10)},
)
REGISTRY.golden("tiny", kind="checkpoint", seed=7, params={"large": True}, producer=checkpoint)
REGISTRY.golden("groups", kind="param_groups", seed=0, producer=param_groups)
