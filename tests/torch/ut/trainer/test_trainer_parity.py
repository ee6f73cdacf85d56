"""LLMTrainer(args) and HyperTrainer from the same YAML are bit-identical end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from parity import assert_bitwise_equal
from parity.compare import compare
from parity.e2e import run_legacy, run_new
from parity.legacy_driver import legacy_args
from tests._subprocess import child_env

ARTIFACTS = ("param_groups", "losses", "grad_norms", "lr_curve", "metrics", "checkpoint", "hf_export")


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory):
    """20 steps on each side, checkpoints at steps 10 and 20 kept on disk."""
    root = tmp_path_factory.mktemp("e2e")
    legacy = run_legacy("--train.checkpoint.save_steps=10", workdir=root / "legacy")
    new = run_new("--train.checkpoint.save_steps=10", workdir=root / "new")
    return root, legacy, new


@pytest.mark.parametrize("artifact", ARTIFACTS)
def test_artifact_is_bit_identical(both_runs, artifact):
    _, legacy, new = both_runs
    assert artifact in legacy and artifact in new
    assert_bitwise_equal(legacy[artifact], new[artifact], artifact)


def test_the_run_is_not_trivial(both_runs):
    """Guard against comparing two empty runs: 20 finite steps, two checkpoints, a falling loss."""
    root, legacy, _ = both_runs
    losses = [leaf.value for leaf in legacy["losses"]]
    assert len(losses) == 20 and losses[-1] < losses[0]
    assert sorted(p.name for p in (root / "legacy" / "ckpt").glob("step_*")) == ["step_10", "step_20"]


def test_same_first_batches():
    from hyper_parallel.trainer import LLMTrainer
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    args = legacy_args("--train.checkpoint.save_steps=0")
    legacy = LLMTrainer(args)
    legacy_batches = [
        mb for group, _ in zip(legacy.base._make_micro_batch_iterator(), range(3)) for mb in group
    ]
    import torch.distributed as dist

    dist.destroy_process_group()
    new = legacy_to_trainer_config(args).build()
    new_batches = [mb for group, _ in zip(new.dataloader.micro_batch_iterator(), range(3)) for mb in group]
    assert len(legacy_batches) == 12
    assert_bitwise_equal(legacy_batches, new_batches, "batches", kind="batches")


@pytest.mark.parametrize(("writer", "reader"), [("legacy", "new"), ("new", "legacy")])
def test_checkpoint_resumes_in_the_other_path(both_runs, tmp_path, writer, reader):
    root, legacy, new = both_runs
    uninterrupted = {"legacy": legacy, "new": new}[writer]
    load = f"--train.checkpoint.load_path={root / writer / 'ckpt' / 'step_10'}"
    run = {"legacy": run_legacy, "new": run_new}[reader]
    resumed = run(load, "--train.checkpoint.save_steps=10", workdir=tmp_path)
    assert_bitwise_equal(uninterrupted["losses"][10:], resumed["losses"], "losses")
    assert_bitwise_equal(uninterrupted["grad_norms"][10:], resumed["grad_norms"], "grad_norms")
    assert_bitwise_equal(uninterrupted["checkpoint"], resumed["checkpoint"], "checkpoint")


def test_planted_divergence_is_caught(both_runs, tmp_path):
    """A different eps on the new side only must show up in the curves, at the right index."""
    _, legacy, _ = both_runs
    diverged = run_new("--train.optimizer.eps=1e-6", "--train.checkpoint.save_steps=0", workdir=tmp_path)
    differences = compare(legacy["losses"], diverged["losses"], "losses")
    assert differences, "a changed eps went unnoticed"
    # Step 1 runs at lr 0, so the first loss that can differ is step 3 (index 2).
    assert differences[0].path == "losses[2]"


WORKER = Path(__file__).with_name("_e2e_worker.py")


def _torchrun(side: str, out: Path) -> list[dict]:
    env = child_env(HYPER_PARALLEL_PLATFORM="torch")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(WORKER)]
    proc = subprocess.run([*cmd, side, str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"torchrun {side} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return [json.loads((out / f"{side}_rank{r}.json").read_text()) for r in range(2)]


@pytest.mark.distributed
def test_two_rank_runs_are_bit_identical(tmp_path):
    legacy = _torchrun("legacy", tmp_path)
    new = _torchrun("new", tmp_path)
    for rank in range(2):
        assert legacy[rank] == new[rank], f"rank {rank}: the 2-rank curves differ"
    assert len(legacy[0]["losses"]) == 20


@pytest.mark.parametrize("source", ["hf", "dcp"])
def test_initial_weights_load_identically(both_runs, tmp_path, source):
    """``model.weights_path``: LLMTrainer's ``_load_weights`` and HyperTrainer's checkpoint component
    load the same weights (HF export, DCP folder) and train on bit for bit."""
    root, _, _ = both_runs
    step = root / "legacy" / "ckpt" / "step_10"
    path = step / "hf_ckpt" if source == "hf" else step
    assert path.is_dir()
    overrides = (f"--model.weights_path={path}", "--train.max_steps=3", "--train.checkpoint.save_steps=0")
    legacy = run_legacy(*overrides, workdir=tmp_path / "legacy")
    new = run_new(*overrides, workdir=tmp_path / "new")
    for artifact in ("losses", "grad_norms"):
        assert_bitwise_equal(legacy[artifact], new[artifact], artifact)
    # The weights were really loaded: the first loss is the trained model's, not the random init's.
    fresh = [leaf.value for leaf in both_runs[1]["losses"]]
    assert legacy["losses"][0].value < fresh[0] - 0.01


def test_hyper_trainer_loads_weights_through_the_checkpoint_component(monkeypatch, tmp_path):
    """One weight-loading path on the new side: HyperTrainer never calls the legacy loader."""
    from hyper_parallel.components.checkpoint import CheckpointManager
    from hyper_parallel.trainer.base import BaseTrainer

    calls = []
    monkeypatch.setattr(
        CheckpointManager, "load_weights", lambda self, path: calls.append(("component", path))
    )
    monkeypatch.setattr(BaseTrainer, "_load_weights", lambda self, path: calls.append(("legacy", path)))
    run_new(
        "--model.weights_path=/some/weights",
        "--train.max_steps=1",
        "--train.checkpoint.save_steps=0",
        workdir=tmp_path,
    )
    assert calls == [("component", "/some/weights")]


def test_planted_skipped_weight_load_is_caught(both_runs, tmp_path, monkeypatch):
    """The weights pair can fail: a checkpoint component that loads nothing trains from the init."""
    from hyper_parallel.components.checkpoint import CheckpointManager

    root, _, _ = both_runs
    path = root / "legacy" / "ckpt" / "step_10" / "hf_ckpt"
    overrides = (f"--model.weights_path={path}", "--train.max_steps=3", "--train.checkpoint.save_steps=0")
    legacy = run_legacy(*overrides, workdir=tmp_path / "legacy")
    monkeypatch.setattr(CheckpointManager, "load_weights", lambda self, path: None)
    skipped = run_new(*overrides, workdir=tmp_path / "new")
    differences = compare(legacy["losses"], skipped["losses"], "losses")
    assert differences and differences[0].path == "losses[0]"
