"""``scripts/train_lm.py CONFIG.yaml [--a.b.c=v]`` as plain python and under torchrun."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests._subprocess import child_env

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "train_lm.py"
DEBUG_YAML = REPO / "examples" / "debug" / "train.yaml"


def _env() -> dict[str, str]:
    env = child_env()
    env.pop("HYPER_PARALLEL_PLATFORM", None)  # the script pins torch itself
    return env


def _overrides(tmp_path: Path) -> list[str]:
    return [
        "--train.max_steps=3",
        "--train.checkpoint.save_steps=3",
        f"--train.checkpoint.output_dir={tmp_path}/ckpt",
    ]


def test_plain_python_run_trains_and_checkpoints(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(DEBUG_YAML), *_overrides(tmp_path)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "step=3 | loss=" in proc.stderr and "Training completed" in proc.stderr
    assert (tmp_path / "ckpt" / "step_3" / "hf_ckpt" / "model.safetensors").is_file()


def test_bad_override_exits_non_zero_naming_the_field(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(DEBUG_YAML), "--train.max_steps=many"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "train.max_steps" in proc.stderr


@pytest.mark.distributed
def test_torchrun_two_ranks(tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(SCRIPT)]
    proc = subprocess.run(
        [*cmd, str(DEBUG_YAML), "--train.accelerator.dp_shard=-1", *_overrides(tmp_path)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    step_dir = tmp_path / "ckpt" / "step_3"
    assert {"optimizer_rank0.pt", "optimizer_rank1.pt", "__0_0.distcp", "__1_0.distcp"} <= {
        p.name for p in step_dir.iterdir()
    }
