"""Build time of the dataloader component vs the legacy data steps, in the same run.

Legacy: steps 5-8 (``LLMTrainer`` transform, dataset, collate, then ``BaseTrainer._build_dataloader``)
on a bare trainer. New: ``BaseDataLoader.Config(...).build(...)``. Both sides get the same,
already loaded tokenizer (loading it is the tokenizer component's cost, not this one's).

Run: ``python -m pytest benchmarks/bench_component_dataloader.py -n 0 --benchmark-only -q``.
Target: the component builds no slower than 1.1x the legacy builder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from parity import assets

_TMP = tempfile.TemporaryDirectory()
_PRESET = assets.preset_pt(Path(_TMP.name) / "p.pt", num_stacked=64, batch_size=4, seq_len=64)
_PATHS = {"dummy": None, "json_file": str(assets.alpaca_json()), "preset_pt": str(_PRESET)}
_ROUNDS = {"dummy": 300, "json_file": 15, "preset_pt": 40}


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(assets.tokenizer_dir()), local_files_only=True)
    tok.pad_token = tok.eos_token
    return tok


def _argv(data_type: str) -> list[str]:
    argv = [
        f"--data.type={data_type}",
        "--data.max_seq_len=64",
        "--train.micro_batch_size=2",
        "--data.shuffle=true",
    ]
    if _PATHS[data_type] is not None:
        argv.append(f"--data.train_path={_PATHS[data_type]}")
    return argv


def _legacy_setup(data_type: str, tokenizer):
    from hyper_parallel.trainer.base import BaseTrainer, TrainerState
    from hyper_parallel.trainer.config import LegacyTrainerArgs, parse_args
    from hyper_parallel.trainer.llm_trainer import LLMTrainer
    from hyper_parallel.trainer.parallel_dims import ParallelDims

    args = parse_args(LegacyTrainerArgs, _argv(data_type))

    def setup():
        trainer = BaseTrainer.__new__(BaseTrainer)
        trainer.args = args
        trainer.state = TrainerState(max_steps=args.train.max_steps)
        trainer.parallel_dims = ParallelDims.from_config(args.train.accelerator, world_size=1)
        trainer.model = SimpleNamespace(config=SimpleNamespace(vocab_size=512))
        trainer.tokenizer = None if data_type == "dummy" else tokenizer
        wrapper = LLMTrainer.__new__(LLMTrainer)
        wrapper.args, wrapper.base = args, trainer
        return (wrapper,), {}

    return setup


def _legacy_build(wrapper) -> None:
    wrapper._build_data_transform()
    wrapper._build_dataset()
    wrapper._build_collate_fn()
    wrapper.base._build_dataloader()


def _new_setup(data_type: str, tokenizer):
    from hyper_parallel.components.dataloader import BaseDataLoader

    config = BaseDataLoader.Config(type=data_type, train_path=_PATHS[data_type], shuffle=True)
    kwargs = dict(
        seq_len=64,
        local_batch_size=2,
        global_batch_size=8,
        seed=42,
        tokenizer=None if data_type == "dummy" else tokenizer,
        training_steps=100,
        vocab_size=512,
    )

    def setup():
        return (config,), kwargs

    return setup


def _new_build(config, **kwargs) -> None:
    config.build(**kwargs)


@pytest.mark.parametrize("data_type", ["dummy", "json_file", "preset_pt"])
@pytest.mark.parametrize("side", ["legacy", "component"])
def test_build(benchmark, tokenizer, side, data_type):
    benchmark.group = f"dataloader-{data_type}"
    if side == "legacy":
        setup, target = _legacy_setup(data_type, tokenizer), _legacy_build
    else:
        setup, target = _new_setup(data_type, tokenizer), _new_build
    target(*setup()[0], **setup()[1])  # warm-up: imports and the datasets cache
    benchmark.pedantic(target, setup=setup, rounds=_ROUNDS[data_type], iterations=1, warmup_rounds=2)
