"""Fixtures for the legacy trainer tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_leaked_process_group():
    """A trainer that fails mid-build leaves its process group behind; tear it down after each test."""
    yield
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
