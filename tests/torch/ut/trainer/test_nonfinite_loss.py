"""A step whose loss is NaN or infinite: stopped with ``check_nan_inf``, warned about once without it.

A user probe trained rows of one token and rows whose labels are all ignored (no token to predict:
the mean cross entropy is 0/0) on ``loss=nan`` to exit status 0, even with ``check_nan_inf`` on
(only the gradient norm was checked, and it is 0 there). Now, on both trainers, a non-finite loss
with ``check_nan_inf`` on stops the run at that step, and the command lines print one line naming
the step (exit status 1); with it off, one warning names the first such step and training goes on.
"""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import torch

from hyper_parallel.platform import get_platform
from hyper_parallel.trainer.init_helpers import NonFiniteError
from tests._subprocess import child_env
from tests.torch.legacy_trainer._recipes import DEBUG_YAML, REPO_ROOT, debug_args

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
)


@pytest.fixture(autouse=True)
def _no_leaked_process_group():
    yield
    platform = get_platform()
    if platform.is_distributed():
        platform.destroy_process_group()


def _preset(tmp_path, kind: str) -> str:
    """Two preset batches of two rows with no token to predict."""
    g = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(2):
        if kind == "all-ignored":
            ids = torch.randint(0, 64, (2, 8), generator=g)
            labels = torch.full_like(ids, -100)
        else:  # one token per row: the shifted labels leave nothing to predict
            ids = torch.randint(0, 64, (2, 1), generator=g)
            labels = ids.clone()
        batches.append({"input_ids": ids, "labels": labels})
    path = tmp_path / f"{kind}.pt"
    torch.save(batches, path)
    return str(path)


def _overrides(tmp_path, kind: str, check: bool) -> list[str]:
    return [
        "--data.type=preset_pt",
        f"--data.train_path={_preset(tmp_path, kind)}",
        "--data.max_seq_len=8",
        "--data.shuffle=false",
        "--train.global_batch_size=2",
        "--train.micro_batch_size=2",
        "--train.max_steps=2",
        "--train.checkpoint.save_steps=0",
        "--train.checkpoint.save_hf_weights=false",
        f"--train.debug.check_nan_inf={str(check).lower()}",
    ]


def _trainer(tmp_path, trainer: str, kind: str, check: bool):
    args = debug_args(tmp_path, *_overrides(tmp_path, kind, check))
    if trainer == "legacy":
        from hyper_parallel.trainer import LLMTrainer

        return LLMTrainer(args)
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    return legacy_to_trainer_config(args).build()


class _Steps:
    def __init__(self) -> None:
        self.losses: list[float] = []

    def __getattr__(self, name):
        if name.startswith("on_"):
            return lambda state, **kwargs: None
        raise AttributeError(name)

    def on_step_end(self, state, *, loss=None, grad_norm=None) -> None:
        self.losses.append(loss)


@pytest.mark.parametrize("kind", ["all-ignored", "one-token"])
@pytest.mark.parametrize("trainer", ["legacy", "new"])
def test_check_nan_inf_stops_the_run_at_the_step(tmp_path, trainer, kind):
    run = _trainer(tmp_path, trainer, kind, check=True)
    steps = _Steps()
    run.add_callback(steps)
    with pytest.raises(NonFiniteError, match=r"^loss is nan at step 1\b.*check_nan_inf is on"):
        run.train()
    assert steps.losses == []  # stopped before the step's end (no log, no save of that step)


@pytest.mark.parametrize("trainer", ["legacy", "new"])
def test_without_check_nan_inf_one_warning_names_the_step_and_training_goes_on(tmp_path, trainer, caplog):
    run = _trainer(tmp_path, trainer, "all-ignored", check=False)
    steps = _Steps()
    run.add_callback(steps)
    with caplog.at_level(logging.WARNING):
        run.train()
    assert len(steps.losses) == 2 and all(loss != loss for loss in steps.losses)  # both NaN
    warnings = [r.getMessage() for r in caplog.records if "not finite" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "loss is nan at step 1" in warnings[0] and "check_nan_inf" in warnings[0], warnings[0]


@pytest.mark.parametrize(
    ("head", "prog"),
    [([str(REPO_ROOT / "scripts" / "train_lm.py")], "train_lm.py"), (["-m", "hyper_parallel.train"], "hyper_parallel.train")],
    ids=["legacy", "new"],
)  # fmt: skip
def test_the_command_lines_stop_with_one_line_naming_the_step(tmp_path, head, prog):
    env = child_env()
    env.pop("HYPER_PARALLEL_DEBUG", None)
    argv = [*head, str(DEBUG_YAML), f"--train.checkpoint.output_dir={tmp_path / 'ckpt'}"]
    proc = subprocess.run(
        [sys.executable, *argv, *_overrides(tmp_path, "all-ignored", check=True)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert errors[0].startswith(f"{prog}: error: loss is nan at step 1"), errors[0]
