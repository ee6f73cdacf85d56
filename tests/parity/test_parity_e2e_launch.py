"""The multi-rank launch of the end-to-end recipes: forked ranks survive a parent that ran
parallel kernels, and a shared run that raised is not repeated for every case that reads it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from parity import e2e
from parity.legacy_driver import REPO_ROOT
from parity.ranks import fork_ranks

# The parent runs a reduction on two intra-op threads (its OpenMP pool starts), then forks two
# ranks that run one too: before the fix, each rank waited forever for pool threads that a fork
# does not copy (``--cpu-profile native`` on two cores hung every 2-rank recipe).
_FORK_AFTER_POOL = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import torch

    from parity.ranks import fork_ranks

    torch.set_num_threads(2)
    torch.randn(4_000_000).sum()

    def rank_work():
        assert torch.get_num_threads() == 2
        torch.randn(4_000_000).sum()
        (torch.randn(300, 300) @ torch.randn(300, 300)).sum()

    fork_ranks("pool", 2, rank_work, logs=Path(sys.argv[1]) / "pool", timeout=60)
    print("ranks done")
    """
)


def test_forked_ranks_run_after_the_parent_started_its_thread_pool(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", _FORK_AFTER_POOL, str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ranks done" in proc.stdout


def test_a_failing_rank_names_itself_and_its_log(tmp_path):
    def boom():
        raise ValueError("rank exploded")

    with pytest.raises(RuntimeError, match=r"demo: rank \d failed:(.|\n)*rank exploded"):
        fork_ranks("demo", 2, boom, logs=tmp_path / "demo", timeout=60)


def test_a_shared_run_that_raised_fails_every_case_without_running_again():
    calls: list[str] = []

    @e2e.RunCache
    def launch(recipe: str) -> dict:
        calls.append(recipe)
        raise RuntimeError(f"recipe {recipe!r}: ranks still running after 300 s")

    for _ in range(3):
        with pytest.raises(RuntimeError, match="still running"):
            launch("dp2_padded")
    assert calls == ["dp2_padded"]
    launch.cache_clear()  # a new generation runs it again
    with pytest.raises(RuntimeError):
        launch("dp2_padded")
    assert calls == ["dp2_padded", "dp2_padded"]
