"""MindSporePlatform: the protocol's signatures, and its behaviour against torch's reference.

Every behavioural check runs in a fresh interpreter (``tests/mindspore/_checks.py``): MindSpore
reports a failed kernel late and re-raises it from later ops of the same process, so one broken
check must not fail the others. Measured values (printed as JSON by the checks) are what
``LIMITATIONS`` in ``hyper_parallel/platform/mindspore_platform.py`` quotes.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from tests._subprocess import REPO, child_env

pytest.importorskip("mindspore")

CHECKS = [
    "adamw_param_groups",
    "adamw_step_matches_torch",
    "adamw_state_round_trip_and_skip",
    "lambda_lr_bitwise",
    "backward_accumulates",
    "clip_grad_norm_matches_torch",
    "save_load_round_trip",
    "damaged_files_named",
    "safetensors_interop",
    "dcp_round_trip_in_place",
    "model_state_dict",
    "rng_replay",
    "tensor_helpers_and_losses",
    "dataloader_workers",
    "profiler_mesh_misc",
]


@pytest.mark.parametrize("check", CHECKS)
def test_check(check: str, tmp_path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.mindspore._checks", check],
        cwd=REPO,
        env=child_env(HYPER_PARALLEL_PLATFORM="mindspore", TMPDIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, f"check {check} failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    print(check, report)


def test_signatures_match_protocol() -> None:
    """Every Platform member exists with the protocol's parameter names and kinds (no kernel runs)."""
    from hyper_parallel.platform.base import Platform
    from hyper_parallel.platform.mindspore_platform import MindSporePlatform

    members = {n for n, v in vars(Platform).items() if not n.startswith("_") and inspect.isfunction(v)}
    assert len(members) > 40
    for member in sorted(members):
        want = list(inspect.signature(getattr(Platform, member)).parameters.values())
        have = list(inspect.signature(getattr(MindSporePlatform, member)).parameters.values())
        assert [(p.name, p.kind) for p in want] == [(p.name, p.kind) for p in have[: len(want)]], member
        assert all(
            p.default is not inspect.Parameter.empty or p.kind.name.startswith("VAR")
            for p in have[len(want) :]
        )
    assert MindSporePlatform.name == "mindspore"


def test_limitations_table() -> None:
    from hyper_parallel.platform.mindspore_platform import LIMITATIONS, Limitation

    assert LIMITATIONS and all(
        isinstance(row, Limitation) and row.member and row.differs and row.why for row in LIMITATIONS
    )
