"""Every bad input we know of, one row each, with the error it must give.

Each row names where the input enters (``kind``), the input, the exception type and a regex the
message must match: the field (or file), the value and what was expected. Kinds:

- ``parse``: legacy ``parse_args(debug.yaml + overrides)`` (YAML schema validation);
- ``build``: ``LLMTrainer(args)`` from the debug recipe plus overrides (build-time checks);
- ``train``: ``LLMTrainer(args).train()`` (resume-time checks);
- ``new``: a new-path ``Config`` or component built directly;
- ``cli``: a subprocess of an entry point: one ``<prog>: error: ...`` line, exit status 2.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hyper_parallel.checkpointing import (
    CheckpointCorruptError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    UnwritableDirError,
)
from tests._subprocess import child_env
from tests.torch.legacy_trainer._recipes import DEBUG_YAML, REPO_ROOT

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
)


@dataclass(frozen=True)
class Row:
    id: str
    kind: str
    make: Callable[[Path], Any]  # tmp_path -> overrides (parse/build/train/cli) or a callable (new)
    exc: type[BaseException]
    match: str


def _ov(*overrides: str) -> Callable[[Path], tuple[str, ...]]:
    return lambda tmp: overrides


def _file(name: str, content: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.write_text(content)
        return path

    return make


def _blocker(tmp: Path) -> Path:
    path = tmp / "blocker"
    path.write_text("a file where a folder should be")
    return path


def _json_data(content: str, suffix: str = ".jsonl", data_type: str = "json_file"):
    from parity import assets

    def make(tmp: Path) -> tuple[str, ...]:
        path = _file(f"data{suffix}", content)(tmp)
        return (
            f"--data.type={data_type}",
            f"--data.train_path={path}",
            f"--model.tokenizer_path={assets.tokenizer_dir()}",
        )

    return make


def _saved_step(tmp: Path) -> Path:
    """A complete 1-step checkpoint of the debug model (legacy callbacks)."""
    from parity.suites import components_checkpoint as suite

    return suite.legacy_save(suite.trained_state(steps=1), str(tmp / "saved"))


def _new(fn: Callable[[Path], Any]) -> Callable[[Path], Callable[[], Any]]:
    return lambda tmp: lambda: fn(tmp)


def _training(**fields):
    from hyper_parallel.config import TrainingConfig

    return _new(lambda tmp: TrainingConfig(**fields))


def _optimizer(**fields):
    from hyper_parallel.components.optimizer import OptimizersContainer

    return _new(lambda tmp: OptimizersContainer.Config(**fields))


def _dummy_loader(dp_world_size: int = 1, **sizes):
    """The dummy loader with TrainingConfig's sizes (build kwargs) overridden by ``sizes``."""
    from hyper_parallel.components.dataloader import DummyDataLoader

    kwargs = {"seq_len": 8, "local_batch_size": 1, "global_batch_size": 8, "seed": 42, **sizes}
    return _new(
        lambda tmp: DummyDataLoader.Config().build(
            **kwargs, training_steps=1, dp_world_size=dp_world_size, dp_rank=0, vocab_size=64
        )
    )


def _manager(output_dir: Callable[[Path], Any], **fields):
    import torch

    from hyper_parallel.components.checkpoint import CheckpointManager

    return _new(
        lambda tmp: CheckpointManager.Config(output_dir=str(output_dir(tmp)), **fields).build(
            model_parts=[torch.nn.Linear(2, 2)], optimizers=None, lr_schedulers=None, dataloader=None
        )
    )


def _legacy_dataloader(world_size: int, *overrides: str):
    def run(tmp: Path) -> None:
        from parity.legacy_driver import bare_trainer, legacy_args

        trainer = bare_trainer(legacy_args(*overrides), world_size=world_size)
        trainer._build_dataset()
        trainer._build_collate_fn()
        trainer._build_dataloader()

    return _new(run)


def _load_into_other_model(tmp: Path) -> None:
    from hyper_parallel.models.qwen3_5 import build_qwen3_5
    from parity.legacy_driver import legacy_args
    from parity.suites import components_checkpoint as suite

    folder = _saved_step(tmp)
    model = build_qwen3_5(legacy_args("--model.intermediate_size=96"))
    target = suite.TrainedState(model, None, None, None, None, 0, 0)
    suite._manager_resumer(target, str(folder), str(tmp))


def _metrics_tb(tmp: Path) -> None:
    from hyper_parallel.components.metrics import MetricsProcessor

    cfg = MetricsProcessor.Config()
    cfg.tensorboard.enabled = True
    cfg.tensorboard.output_dir = str(_blocker(tmp))
    cfg.build(world_size=1, rank=0, global_batch_size=8, seq_len=8)


def _profiler(tmp: Path) -> None:
    from hyper_parallel.components.profiler import Profiler

    Profiler.Config(enabled=True, output_dir=str(_blocker(tmp) / "sub")).build()


FIELD = r"Invalid value for '{}': expected {}, got {}"
ROWS: list[Row] = [
    # ------------------------------------------------------------------ legacy YAML schema
    Row(
        "gbs-zero",
        "parse",
        _ov("--train.global_batch_size=0"),
        ValueError,
        FIELD.format(r"train\.global_batch_size", "an int >= 1", "0"),
    ),
    Row(
        "gbs-negative",
        "parse",
        _ov("--train.global_batch_size=-8"),
        ValueError,
        FIELD.format(r"train\.global_batch_size", "an int >= 1", "-8"),
    ),
    Row(
        "mbs-zero",
        "parse",
        _ov("--train.micro_batch_size=0"),
        ValueError,
        FIELD.format(r"train\.micro_batch_size", "an int >= 1", "0"),
    ),
    Row(
        "mbs-larger-than-gbs",
        "parse",
        _ov("--train.micro_batch_size=16"),
        ValueError,
        r"'train\.global_batch_size': 8 is not a multiple of train\.micro_batch_size=16",
    ),
    Row(
        "mbs-does-not-divide",
        "parse",
        _ov("--train.micro_batch_size=3"),
        ValueError,
        r"'train\.global_batch_size': 8 is not a multiple of train\.micro_batch_size=3",
    ),
    Row(
        "mbs-float",
        "parse",
        _ov("--train.micro_batch_size=1.5"),
        ValueError,
        r"'train\.micro_batch_size': expected int, got 1\.5",
    ),
    Row(
        "seq-len-zero",
        "parse",
        _ov("--data.max_seq_len=0"),
        ValueError,
        FIELD.format(r"data\.max_seq_len", "an int >= 1", "0"),
    ),
    Row(
        "seq-len-negative",
        "parse",
        _ov("--data.max_seq_len=-1"),
        ValueError,
        FIELD.format(r"data\.max_seq_len", "an int >= 1", "-1"),
    ),
    Row(
        "seq-len-one",
        "parse",
        _ov("--data.max_seq_len=1"),
        ValueError,
        FIELD.format(r"data\.max_seq_len", "an int >= 2", "1"),
    ),
    Row(
        "loss-aggregation-unknown",
        "parse",
        _ov("--train.optimizer.loss_aggregation=bogus"),
        ValueError,
        FIELD.format(
            r"train\.optimizer\.loss_aggregation", "one of 'token_weighted', 'rank_average'", "'bogus'"
        ),
    ),
    # Closed sets that used to be taken whatever they said (a user probe): an unknown init device
    # built the model with its constructors' init, the others ran the default.
    Row(
        "init-device-unknown",
        "parse",
        _ov("--train.init_device=banana"),
        ValueError,
        FIELD.format(r"train\.init_device", "one of 'meta', 'cpu', 'cuda', 'npu'", "'banana'"),
    ),
    Row(
        "comm-backend-unknown",
        "parse",
        _ov("--train.comm_backend=mpi"),
        ValueError,
        FIELD.format(
            r"train\.comm_backend", r"one of 'gloo', 'nccl', 'hccl' or null \(the device's own\)", "'mpi'"
        ),
    ),
    Row(
        "train-backend-unknown",
        "parse",
        _ov("--train.backend=jax"),
        ValueError,
        FIELD.format(r"train\.backend", "one of 'torch', 'mindspore'", "'jax'"),
    ),
    Row(
        "resume-config-changes-unknown",
        "parse",
        _ov("--train.checkpoint.resume_config_changes=merge"),
        ValueError,
        FIELD.format(r"train\.checkpoint\.resume_config_changes", "one of 'refuse', 'apply'", "'merge'"),
    ),
    Row(
        "lr-min-above-lr",
        "parse",
        _ov("--train.optimizer.lr_min=0.01"),
        ValueError,
        r"'train\.optimizer\.lr_min': expected a number <= train\.optimizer\.lr=0\.001 .*got 0\.01",
    ),
    Row(
        "warmup-ratio-above-one",
        "parse",
        _ov("--train.optimizer.lr_warmup_ratio=5"),
        ValueError,
        r"'train\.optimizer\.lr_warmup_ratio': expected a fraction of train\.max_steps in \[0, 1\], got 5\.0",
    ),
    Row(
        "override-typo",
        "parse",
        _ov("--train.max_step=5"),
        ValueError,
        r"Unknown config key 'train\.max_step' .*did you mean 'train\.max_steps'\?",
    ),
    Row(
        "new-seq-len-one",
        "new",
        _training(seq_len=1),
        ValueError,
        r"TrainingConfig\.seq_len: expected an int >= 2, got 1",
    ),
    Row(
        "max-steps-negative",
        "parse",
        _ov("--train.max_steps=-5"),
        ValueError,
        r"'train\.max_steps': expected an int >= 1 \(or 0: a preset_pt dataset then sets the number of steps\), got -5",
    ),
    Row(
        "max-steps-word",
        "parse",
        _ov("--train.max_steps=twenty"),
        ValueError,
        r"'train\.max_steps': expected int, got 'twenty'",
    ),
    Row(
        "epochs-zero",
        "parse",
        _ov("--train.num_train_epochs=0"),
        ValueError,
        FIELD.format(r"train\.num_train_epochs", "an int >= 1", "0"),
    ),
    Row(
        "betas-one",
        "parse",
        _ov("--train.optimizer.betas=[0.9]"),
        ValueError,
        r"'train\.optimizer\.betas': expected two numbers in \[0, 1\), such as \[0\.9, 0\.999\], got \[0\.9\]",
    ),
    Row(
        "betas-three",
        "parse",
        _ov("--train.optimizer.betas=[0.9, 0.99, 0.5]"),
        ValueError,
        r"'train\.optimizer\.betas': expected two numbers in \[0, 1\)",
    ),
    Row(
        "betas-one-is-one",
        "parse",
        _ov("--train.optimizer.betas=[0.9, 1.0]"),
        ValueError,
        r"'train\.optimizer\.betas': expected two numbers in \[0, 1\).*got \[0\.9, 1\.0\]",
    ),
    Row(
        "betas-negative",
        "parse",
        _ov("--train.optimizer.betas=[-0.1, 0.9]"),
        ValueError,
        r"'train\.optimizer\.betas': expected two numbers in \[0, 1\)",
    ),
    Row(
        "betas-strings",
        "parse",
        _ov("--train.optimizer.betas=[a, b]"),
        ValueError,
        r"'train\.optimizer\.betas': expected two numbers in \[0, 1\).*got \['a', 'b'\]",
    ),
    Row(
        "betas-scalar",
        "parse",
        _ov("--train.optimizer.betas=0.9"),
        ValueError,
        r"'train\.optimizer\.betas': expected a list, got 0\.9",
    ),
    Row(
        "lr-negative",
        "parse",
        _ov("--train.optimizer.lr=-0.001"),
        ValueError,
        FIELD.format(r"train\.optimizer\.lr", "a finite number >= 0", "-0.001"),
    ),
    Row(
        "lr-nan",
        "parse",
        _ov("--train.optimizer.lr=nan"),
        ValueError,
        FIELD.format(r"train\.optimizer\.lr", "a finite number >= 0", "nan"),
    ),
    Row(
        "lr-inf",
        "parse",
        _ov("--train.optimizer.lr=inf"),
        ValueError,
        FIELD.format(r"train\.optimizer\.lr", "a finite number >= 0", "inf"),
    ),
    Row(
        "lr-min-negative",
        "parse",
        _ov("--train.optimizer.lr_min=-1"),
        ValueError,
        FIELD.format(r"train\.optimizer\.lr_min", "a finite number >= 0", r"-1\.0"),
    ),
    Row(
        "weight-decay-negative",
        "parse",
        _ov("--train.optimizer.weight_decay=-0.1"),
        ValueError,
        FIELD.format(r"train\.optimizer\.weight_decay", "a finite number >= 0", r"-0\.1"),
    ),
    Row(
        "eps-negative",
        "parse",
        _ov("--train.optimizer.eps=-1e-8"),
        ValueError,
        FIELD.format(r"train\.optimizer\.eps", "a finite number >= 0", r"-1e-08"),
    ),
    Row(
        "max-grad-norm-zero",
        "parse",
        _ov("--train.optimizer.max_grad_norm=0"),
        ValueError,
        FIELD.format(r"train\.optimizer\.max_grad_norm", "a finite number > 0", r"0\.0"),
    ),
    Row(
        "warmup-ratio-negative",
        "parse",
        _ov("--train.optimizer.lr_warmup_ratio=-0.5"),
        ValueError,
        FIELD.format(r"train\.optimizer\.lr_warmup_ratio", "a finite number >= 0", r"-0\.5"),
    ),
    Row(
        "num-workers-negative",
        "parse",
        _ov("--data.num_workers=-1"),
        ValueError,
        FIELD.format(r"data\.num_workers", "an int >= 0", "-1"),
    ),
    Row(
        "train-size-zero",
        "parse",
        _ov("--data.train_size=0"),
        ValueError,
        FIELD.format(r"data\.train_size", r"an int >= 1 or null \(all rows\)", "0"),
    ),
    Row(
        "bad-bool",
        "parse",
        _ov("--train.checkpoint.save_hf_weights=maybe"),
        ValueError,
        r"Invalid bool for 'train\.checkpoint\.save_hf_weights': 'maybe'",
    ),
    Row(
        "moved-top-level-key",
        "parse",
        _ov("--optim.lr=1"),
        ValueError,
        r"'optim': moved to 'train\.optimizer'",
    ),
    Row(
        "malformed-override",
        "parse",
        _ov("--train.max_steps"),
        ValueError,
        r"Malformed command-line override '--train\.max_steps'",
    ),
    # ------------------------------------------------------------------ legacy build
    Row(
        "gbs-not-split-over-dp-ranks",
        "new",
        _legacy_dataloader(3),
        ValueError,
        r"'train\.global_batch_size': 8 is not a multiple of train\.micro_batch_size \* dp size = 2 \* 3",
    ),
    Row(
        "jsonl-row-without-text-key",
        "build",
        _json_data('{"text": "a b c"}\n{"body": "no text"}\n'),
        ValueError,
        r"data\.train_path='.*data\.jsonl' row 2: key 'text' holds no value; expected a string in every row",
    ),
    Row("empty-jsonl", "build", _json_data(""), ValueError, r"data\.train_path='.*data\.jsonl' is empty"),
    Row(
        "blank-jsonl", "build", _json_data("\n  \n"), ValueError, r"data\.train_path='.*data\.jsonl' is empty"
    ),
    Row(
        "empty-jsonl-hf",
        "build",
        _json_data("", data_type="hf_datasets"),
        ValueError,
        r"data\.train_path='.*data\.jsonl' is empty",
    ),
    Row(
        "missing-data-file",
        "build",
        lambda tmp: (
            *_json_data("{}")(tmp)[:1],
            f"--data.train_path={tmp / 'nope.jsonl'}",
            *_json_data("{}")(tmp)[2:],
        ),
        FileNotFoundError,
        r"data\.train_path='.*nope\.jsonl' does not exist",
    ),
    Row(
        "output-dir-is-a-file",
        "build",
        lambda tmp: ("--train.checkpoint.save_steps=1", f"--train.checkpoint.output_dir={_blocker(tmp)}"),
        UnwritableDirError,
        r"train\.checkpoint\.output_dir='.*blocker' cannot be created: it is a file",
    ),
    Row(
        "output-dir-under-a-file",
        "build",
        lambda tmp: (
            "--train.checkpoint.save_steps=1",
            f"--train.checkpoint.output_dir={_blocker(tmp) / 'ckpt'}",
        ),
        UnwritableDirError,
        r"train\.checkpoint\.output_dir='.*blocker/ckpt' cannot be created: it has a file in",
    ),
    Row(
        "tensorboard-dir-is-a-file",
        "build",
        lambda tmp: ("--train.tensorboard.enabled=true", f"--train.tensorboard.output_dir={_blocker(tmp)}"),
        UnwritableDirError,
        r"train\.tensorboard\.output_dir='.*blocker' cannot be created",
    ),
    Row(
        "profiler-dir-is-a-file",
        "build",
        lambda tmp: ("--train.profile.enabled=true", f"--train.profile.output_dir={_blocker(tmp)}"),
        UnwritableDirError,
        r"train\.profile\.output_dir='.*blocker' cannot be created",
    ),
    # ------------------------------------------------------------------ legacy resume
    Row(
        "load-path-missing",
        "train",
        lambda tmp: (f"--train.checkpoint.load_path={tmp / 'nope'}",),
        ValueError,
        r"train\.checkpoint\.load_path='.*nope' is not an existing directory",
    ),
    Row(
        "load-path-a-file",
        "train",
        lambda tmp: (f"--train.checkpoint.load_path={_blocker(tmp)}",),
        ValueError,
        r"train\.checkpoint\.load_path='.*blocker' is not an existing directory",
    ),
    Row(
        "load-path-empty-folder",
        "train",
        lambda tmp: (f"--train.checkpoint.load_path={(tmp / 'empty').mkdir() or tmp / 'empty'}",),
        CheckpointCorruptError,
        r"empty/manifest\.json is missing: checkpoint folder .*empty cannot be verified",
    ),
    Row(
        "load-path-run-folder-without-complete-step",
        "train",
        lambda tmp: (
            f"--train.checkpoint.load_path={(tmp / 'run' / '.partial.step_2').mkdir(parents=True) or tmp / 'run'}",
        ),
        CheckpointNotFoundError,
        r"checkpoint folder .*run holds no complete step_<N> checkpoint",
    ),
    Row(
        "load-path-truncated-shard",
        "train",
        lambda tmp: (f"--train.checkpoint.load_path={_damaged(tmp, '__0_0.distcp')}",),
        CheckpointCorruptError,
        r"__0_0\.distcp is truncated or corrupt: \d+ bytes, manifest\.json .* records",
    ),
    Row(
        "load-path-truncated-rng",
        "train",
        lambda tmp: (f"--train.checkpoint.load_path={_damaged(tmp, 'rng_rank0.pt')}",),
        CheckpointCorruptError,
        r"rng_rank0\.pt is truncated or corrupt",
    ),
    Row(
        "checkpoint-of-another-model",
        "new",
        _new(_load_into_other_model),
        CheckpointMismatchError,
        r"does not fit the model: tensor 'model\.layers\.0\.mlp\.gate_proj\.weight' has shape \[\d+, \d+\] "
        r"in the checkpoint and \[96, \d+\] in the model",
    ),
    # ------------------------------------------------------------------ new path Configs
    Row(
        "new-gbs-zero",
        "new",
        _training(global_batch_size=0),
        ValueError,
        r"TrainingConfig\.global_batch_size: expected an int >= 1, got 0",
    ),
    Row(
        "new-local-batch-zero",
        "new",
        _training(local_batch_size=0),
        ValueError,
        r"TrainingConfig\.local_batch_size: expected an int >= 1, got 0",
    ),
    Row(
        "new-local-batch-does-not-divide",
        "new",
        _training(global_batch_size=8, local_batch_size=3),
        ValueError,
        r"TrainingConfig\.global_batch_size: expected a multiple of local_batch_size=3 .*got 8",
    ),
    Row(
        "new-init-device-unknown",
        "new",
        _training(init_device="banana"),
        ValueError,
        r"TrainingConfig\.init_device: expected one of 'meta', 'cpu', 'cuda', 'npu', got 'banana'",
    ),
    Row(
        "new-seq-len-zero",
        "new",
        _training(seq_len=0),
        ValueError,
        r"TrainingConfig\.seq_len: expected an int >= 2, got 0",
    ),
    Row(
        "new-steps-negative",
        "new",
        _training(steps=-5),
        ValueError,
        r"TrainingConfig\.steps: expected an int >= 0, got -5",
    ),
    Row(
        "new-betas-one",
        "new",
        _optimizer(betas=(0.9,)),
        ValueError,
        r"betas: expected a pair of numbers in \[0, 1\)",
    ),
    Row("new-lr-negative", "new", _optimizer(lr=-1.0), ValueError, r"lr: expected a finite number >= 0"),
    Row(
        "new-loader-not-split-over-dp",
        "new",
        _dummy_loader(dp_world_size=3, local_batch_size=2),
        ValueError,
        r"global_batch_size=8 is not a multiple of local_batch_size \* dp_world_size = 2 \* 3",
    ),
    Row(
        "new-loader-gbs-zero",
        "new",
        _dummy_loader(global_batch_size=0),
        ValueError,
        r"global_batch_size must be an integer >= 1, got 0",
    ),
    Row(
        "new-loader-seq-len-zero",
        "new",
        _dummy_loader(seq_len=0),
        ValueError,
        r"seq_len must be an integer >= 1, got 0",
    ),
    Row(
        "new-output-dir-is-a-file",
        "new",
        _manager(_blocker, save_steps=1),
        UnwritableDirError,
        r"checkpoint\.output_dir='.*blocker' cannot be created: it is a file",
    ),
    Row(
        "new-output-dir-empty",
        "new",
        _manager(lambda tmp: "", save_steps=1),
        ValueError,
        r"checkpoint\.output_dir must be a non-empty folder path",
    ),
    Row(
        "new-tensorboard-dir-is-a-file",
        "new",
        _new(_metrics_tb),
        UnwritableDirError,
        r"metrics\.tensorboard\.output_dir='.*blocker' cannot be created",
    ),
    Row(
        "new-profiler-dir-under-a-file",
        "new",
        _new(_profiler),
        UnwritableDirError,
        r"profiler\.output_dir='.*blocker/sub' cannot be created: it has a file in its path",
    ),
    # ------------------------------------------------------------------ entry points
    Row(
        "cli-legacy-gbs-zero",
        "cli",
        _ov("scripts/train_lm.py", "--train.global_batch_size=0"),
        SystemExit,
        r"^train_lm\.py: error: Invalid value for 'train\.global_batch_size': expected an int >= 1, got 0",
    ),
    Row(
        "cli-legacy-init-device-unknown",
        "cli",
        _ov("scripts/train_lm.py", "--train.init_device=cuda:0"),
        SystemExit,
        r"^train_lm\.py: error: Invalid value for 'train\.init_device': expected one of 'meta', 'cpu', 'cuda', "
        r"'npu', got 'cuda:0'",
    ),
    Row(
        "cli-new-yaml-init-device-unknown",
        "cli",
        _ov("-m", "hyper_parallel.train", "--train.init_device=banana"),
        SystemExit,
        r"^hyper_parallel\.train: error: Invalid value for 'train\.init_device': expected one of 'meta', 'cpu', "
        r"'cuda', 'npu', got 'banana'",
    ),
    Row(
        "cli-legacy-output-dir-is-a-file",
        "cli",
        lambda tmp: (
            "scripts/train_lm.py",
            "--train.checkpoint.save_steps=1",
            f"--train.checkpoint.output_dir={_blocker(tmp)}",
        ),
        SystemExit,
        r"^train_lm\.py: error: train\.checkpoint\.output_dir='.*blocker' cannot be created",
    ),
    Row(
        "cli-new-empty-load-folder",
        "cli",
        lambda tmp: (
            "-m",
            "hyper_parallel.train",
            "--train.checkpoint.save_steps=0",
            f"--train.checkpoint.load_path={(tmp / 'empty').mkdir() or tmp / 'empty'}",
        ),
        SystemExit,
        r"^hyper_parallel\.train: error: .*checkpoint file .*empty/manifest\.json is missing",
    ),
]


def _damaged(tmp: Path, name: str) -> Path:
    folder = Path(shutil.copytree(_saved_step(tmp), tmp / "step_1"))
    with open(folder / name, "r+b") as fh:
        fh.truncate(os.path.getsize(folder / name) // 2)
    return folder


def test_the_table_has_at_least_40_rows_with_unique_ids():
    assert len(ROWS) >= 40
    assert len({row.id for row in ROWS}) == len(ROWS)


def _debug_args(tmp: Path, overrides: tuple[str, ...]):
    from tests.torch.legacy_trainer._recipes import debug_args

    return debug_args(tmp, "--train.checkpoint.save_steps=0", "--train.max_steps=2", *overrides)


def _run_cli(tmp: Path, tokens: tuple[str, ...]) -> subprocess.CompletedProcess:
    head, *rest = tokens
    argv = [head, rest.pop(0)] if head == "-m" else [str(REPO_ROOT / head)]
    env = child_env()
    env.pop("HYPER_PARALLEL_DEBUG", None)
    return subprocess.run(
        [sys.executable, *argv, str(DEBUG_YAML), *rest],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp,
    )


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_bad_input_gives_its_error(row, tmp_path):
    made = row.make(tmp_path)
    if row.kind == "cli":
        proc = _run_cli(tmp_path, made)
        errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert re.search(row.match, errors[0]), errors[0]
        return
    with pytest.raises(row.exc) as info:
        if row.kind == "new":
            made()
        elif row.kind == "parse":
            _debug_args(tmp_path, made)
        else:
            from hyper_parallel.trainer import LLMTrainer

            trainer = LLMTrainer(_debug_args(tmp_path, made))
            if row.kind == "train":
                trainer.train()
    assert re.search(row.match, str(info.value)), str(info.value)


def test_debug_env_shows_the_traceback(tmp_path):
    env = {**child_env(), "HYPER_PARALLEL_DEBUG": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "scripts" / "train_lm.py"),
            str(DEBUG_YAML),
            "--train.global_batch_size=0",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert "ValueError: Invalid value for 'train.global_batch_size'" in proc.stderr


def test_a_failed_save_is_one_line_with_status_1(capsys):
    from hyper_parallel.checkpointing import CheckpointSaveError
    from hyper_parallel.entry import run_main

    def failing() -> int:
        raise CheckpointSaveError("/out/step_4", 4, OSError(28, "No space left on device"))

    assert run_main("train_lm.py", failing) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "train_lm.py: error: checkpoint save to /out/step_4 failed at step 4: no space left on device "
        "(OSError: [Errno 28] No space left on device); the run stops so that no later step trains without "
        "a checkpoint"
    ]


def test_a_bug_keeps_its_traceback_and_init_step_errors_are_unwrapped(capsys):
    from hyper_parallel.entry import run_main
    from hyper_parallel.trainer.hyper_trainer import InitStepError

    def bug() -> int:
        raise KeyError("not a usage error")

    with pytest.raises(KeyError):
        run_main("prog", bug)

    def wrapped() -> int:
        cause = ValueError("data.max_seq_len: expected an int >= 1\n  got 0")
        raise InitStepError(3, "dataloader", cause) from cause

    assert run_main("prog", wrapped) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("prog: error: HyperTrainer init step 3/11 'dataloader' failed: ValueError: ")
    assert "expected an int >= 1; got 0" in line
