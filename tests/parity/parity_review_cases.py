"""A small registry for the accept-a-change loop: run (short summary), update --failed (review),
golden lint, Ctrl-C. ``STATE`` stands for the product: a test changes a "default" there, as a user
changes one in the source, and sees which cases go red and how ``update`` accepts them."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import torch

from parity import canonical
from parity.cases import Registry

REGISTRY = Registry(source="tests.parity.parity_review_cases:REGISTRY")
DEFAULTS = {"eps": 1e-8, "scale": 1.0, "legacy_only": 0.0}
STATE = dict(DEFAULTS)
ON_PRODUCE: list = []  # callables a test runs when ``curve`` is produced


def curve() -> list:
    for hook in ON_PRODUCE:
        hook()
    return canonical.losses([2.0 * STATE["scale"], 1.5, 1.25])


def ckpt() -> dict:
    big = torch.arange(1000, dtype=torch.float32) / 7.0
    big[10] = big[10] * STATE["scale"]
    return canonical.checkpoint({"model": {"big": big, "small": torch.ones(3)}, "step": 2})


def config() -> list:
    return canonical.param_groups([{"params": ["w"], "eps": STATE["eps"]}], [])


def pair_legacy() -> list:
    return canonical.lr_curve([0.1, 0.2 + STATE["legacy_only"]])


def pair_new() -> list:
    return canonical.lr_curve([0.1, 0.2])


def slow() -> list:
    """Sleeps in a temp folder of its own (the Ctrl-C test interrupts it there)."""
    with tempfile.TemporaryDirectory(prefix="parity-slow-case-") as folder:
        marker = os.environ.get("PARITY_TEST_MARKER")
        if marker:
            Path(marker).write_text(folder)
        time.sleep(float(os.environ.get("PARITY_TEST_SLEEP", "0")))
    return canonical.lr_curve([0.1])


REGISTRY.golden("curve", kind="losses", seed=0, producer=curve, tags=("loss",))
REGISTRY.golden("ckpt", kind="checkpoint", seed=0, producer=ckpt, tags=("checkpoint",))
REGISTRY.golden("config", kind="param_groups", seed=0, producer=config, tags=("optimizer",))
REGISTRY.pair("pair", kind="lr_curve", seed=0, legacy=pair_legacy, new=pair_new, tags=("lr_scheduler",))
REGISTRY.pair("slow_a", kind="lr_curve", seed=0, legacy=slow, new=slow)
REGISTRY.pair("slow_b", kind="lr_curve", seed=0, legacy=slow, new=slow)
