"""Fixtures for the component tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="module")
def _one_intra_op_thread():
    """The debug model is tiny: on a shared 2-core box a second intra-op thread only spins, and one
    gives the same bits (the portable CPU profile pins it too; this also holds under ``native``)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
