"""Environment for tests that launch python or torchrun subprocesses."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# A process group of the test process itself must never leak its rendezvous into a child.
_RENDEZVOUS_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "HYPER_PARALLEL_SELF_WORLD",
)


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment minus its rendezvous, one intra-op thread, offline W&B, plus ``extra``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "PYTHONPATH": str(REPO)}
    for name in _RENDEZVOUS_VARS:
        env.pop(name, None)
    env.update(extra)
    return env
