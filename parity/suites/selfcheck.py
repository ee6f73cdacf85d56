"""Self-check cases of the harness on tiny synthetic torch workloads (no trainer involved).

They keep ``nox -s parity`` meaningful before the trainer cases land: one tier A pair proves that
both sides are reseeded identically, two tier B goldens pin torch behaviour the real cases rely on
(LambdaLR evaluating the lambda at construction; AdamW state in a checkpoint).
"""

from __future__ import annotations

import math

from parity import canonical
from parity.cases import REGISTRY


def _randn_global(*, numel: int):
    import torch

    return {"sample": torch.randn(numel)}


def _randn_generator(*, numel: int):
    import torch

    from hyper_parallel.platform import get_platform

    # Same seed as the engine's reseed: a dedicated generator must give the global stream.
    return {"sample": torch.randn(numel, generator=get_platform().generator(_SEED))}


_SEED = 1234

SUITE = REGISTRY.suite(tags=("selfcheck",))
SUITE.pair(
    "reseed",
    kind="rng",
    seed=_SEED,
    params={"numel": 96},
    legacy=_randn_global,
    new=_randn_generator,
)


def _warmup_cosine_lrs(*, warmup_steps: int, steps: int, lr: float):
    from hyper_parallel.platform import get_platform
    from parity.builders import zeros_parameter

    platform = get_platform()
    optimizer = platform.adamw([zeros_parameter(2)], lr=lr)

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, steps - warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    scheduler = platform.lambda_lr(optimizer, factor)
    lrs = []
    for _ in range(steps):
        lrs.append(scheduler.get_last_lr())
        optimizer.step()
        scheduler.step()
    return canonical.lr_curve(lrs)


SUITE.golden(
    "lambda_warmup_cosine",
    kind="lr_curve",
    seed=0,
    params={"warmup_steps": 3, "steps": 12, "lr": 0.001},
    producer=_warmup_cosine_lrs,
    backends=("torch", "mindspore"),
)


def _adamw_checkpoint(*, dim: int, steps: int):
    import torch

    from hyper_parallel.platform import get_platform

    platform = get_platform()
    model = torch.nn.Sequential(torch.nn.Linear(dim, dim), torch.nn.Linear(dim, 2, bias=False))
    optimizer = platform.adamw(model.parameters(), lr=0.01, weight_decay=0.1, foreach=False)
    data = torch.randn(4, dim)
    for _ in range(steps):
        optimizer.zero_grad()
        model(data).square().mean().backward()
        optimizer.step()
    return canonical.checkpoint({"model": model.state_dict(), "optimizer": optimizer.state_dict()})


SUITE.golden(
    "adamw_tiny",
    kind="checkpoint",
    seed=7,
    params={"dim": 4, "steps": 2},
    producer=_adamw_checkpoint,
)
