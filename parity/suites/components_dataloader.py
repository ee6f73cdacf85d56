"""Dataloader parity: the legacy steps 4-8 (``LLMTrainer`` data steps + ``BaseTrainer._build_dataloader``)
against the ``BaseDataLoader`` component, on the same data, layout and seed.

Each producer returns the first ``n`` micro-batches plus the loader's bookkeeping (training steps
after the dataset's change of ``max_steps``, grad accumulation, batches per epoch). The legacy side
reads the global rank from the platform, so ``parity.legacy_driver.simulated_rank`` makes the
platform report it while its loader is built; the new side gets ``dp_rank = rank // (tp*cp*pp*ep)`` passed in.

Tier A compares the two sides; tier B pins the component's output on small explicit layouts.
"""

from __future__ import annotations

import tempfile
from itertools import islice
from pathlib import Path
from typing import Any

from parity import assets, canonical
from parity.cases import REGISTRY
from parity.legacy_driver import simulated_rank

# Small shapes keep every case well under a second and the goldens inlined.
_SEQ = 16
_MBS = 2
_GBS = 8
_VOCAB = 97


def _data_argv(data_type: str, train_path: str | None) -> list[str]:
    argv = [f"--data.type={data_type}"]
    if train_path is not None:
        argv.append(f"--data.train_path={train_path}")
    if data_type in ("hf_datasets", "json_file"):
        argv.append(f"--model.tokenizer_path={assets.tokenizer_dir()}")
    return argv


def _legacy_side(
    data_type: str,
    train_path: str | None,
    *,
    world_size: int,
    tp: int,
    rank: int,
    seed: int,
    shuffle: bool,
    max_steps: int,
    n: int,
) -> dict[str, Any]:
    from types import SimpleNamespace

    from hyper_parallel.trainer.base import BaseTrainer, TrainerState
    from hyper_parallel.trainer.config import HyperTrainerConfig, parse_args
    from hyper_parallel.trainer.llm_trainer import LLMTrainer
    from hyper_parallel.trainer.parallel_dims import ParallelDims

    argv = [
        *_data_argv(data_type, train_path),
        f"--data.max_seq_len={_SEQ}",
        f"--data.shuffle={str(shuffle).lower()}",
        f"--train.micro_batch_size={_MBS}",
        f"--train.global_batch_size={_GBS}",
        f"--train.seed={seed}",
        f"--train.max_steps={max_steps}",
        "--train.accelerator.dp_shard=-1",
        f"--train.accelerator.tp={tp}",
    ]
    args = parse_args(HyperTrainerConfig, argv)
    trainer = BaseTrainer.__new__(BaseTrainer)
    trainer.args = args
    trainer.state = TrainerState(max_steps=args.train.max_steps)
    trainer.parallel_dims = ParallelDims.from_config(args.train.accelerator, world_size=world_size)
    trainer.model = SimpleNamespace(
        config=SimpleNamespace(vocab_size=_VOCAB if data_type == "dummy" else 512)
    )
    wrapper = LLMTrainer.__new__(LLMTrainer)
    wrapper.args, wrapper.base = args, trainer
    wrapper._build_model_assets()
    wrapper._build_data_transform()
    wrapper._build_dataset()
    wrapper._build_collate_fn()
    with simulated_rank(rank):  # the legacy loader reads the global rank; there is no process group
        trainer._build_dataloader()
    return _summary(trainer.train_dataloader, trainer.state.max_steps, trainer._grad_accum, n)


def _new_side(
    data_type: str,
    train_path: str | None,
    *,
    world_size: int,
    tp: int,
    rank: int,
    seed: int,
    shuffle: bool,
    max_steps: int,
    n: int,
) -> dict[str, Any]:
    from hyper_parallel.components.dataloader import BaseDataLoader, data_parallel_rank

    tokenizer = None
    if data_type in ("hf_datasets", "json_file"):
        tokenizer = local_tokenizer()
    config = BaseDataLoader.Config(type=data_type, train_path=train_path, shuffle=shuffle)
    loader = config.build(
        seq_len=_SEQ,
        local_batch_size=_MBS,
        global_batch_size=_GBS,
        seed=seed,
        dp_world_size=world_size // tp,
        dp_rank=data_parallel_rank(rank, tp),
        tokenizer=tokenizer,
        training_steps=max_steps,
        vocab_size=_VOCAB,
    )
    return _summary(loader, loader.training_steps, loader.grad_accum, n)


def local_tokenizer():
    """The assets tokenizer as the tokenizer component prepares it: pad falls back to eos."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(assets.tokenizer_dir()), local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _summary(loader: Any, training_steps: int, grad_accum: int, n: int) -> dict[str, Any]:
    return {
        "batches": canonical.batches(list(islice(iter(loader), n))),
        "batches_per_epoch": len(loader),
        "grad_accum": grad_accum,
        "training_steps": training_steps,
    }


def _with_data(side, data_type: str, **kw: Any) -> dict[str, Any]:
    """Run ``side`` on the asset for ``data_type`` (preset files are written to a temp dir per side)."""
    if data_type == "preset_pt":
        with tempfile.TemporaryDirectory() as tmp:
            return side(data_type, str(assets.preset_pt(Path(tmp) / "p.pt")), **kw)
    path = {"dummy": None, "hf_datasets": assets.text_jsonl(), "json_file": assets.alpaca_json()}[data_type]
    return side(data_type, None if path is None else str(path), **kw)


def legacy_batches(*, data_type: str, **kw: Any) -> dict[str, Any]:
    return _with_data(_legacy_side, data_type, **kw)


def new_batches(*, data_type: str, **kw: Any) -> dict[str, Any]:
    return _with_data(_new_side, data_type, **kw)


# ----------------------------------------------------------------------------- tier A

_PAIRS = [
    (
        "dataloader_dummy",
        dict(data_type="dummy", world_size=1, tp=1, rank=0, seed=0, shuffle=True, max_steps=3),
    ),
    (
        "dataloader_dummy",
        dict(data_type="dummy", world_size=4, tp=2, rank=3, seed=7, shuffle=True, max_steps=3),
    ),
    (
        "dataloader_hf_text",
        dict(data_type="hf_datasets", world_size=2, tp=1, rank=1, seed=3, shuffle=True, max_steps=100),
    ),
    (
        "dataloader_json_alpaca",
        dict(data_type="json_file", world_size=1, tp=1, rank=0, seed=0, shuffle=True, max_steps=5),
    ),
    (
        "dataloader_preset",
        dict(data_type="preset_pt", world_size=1, tp=1, rank=0, seed=0, shuffle=False, max_steps=4),
    ),
]

for _name, _params in _PAIRS:
    REGISTRY.pair(
        _name,
        kind="batches",
        tags=("dataloader",),
        seed=0,
        params={**_params, "n": 6},
        legacy=legacy_batches,
        new=new_batches,
    )

# ----------------------------------------------------------------------------- tier B

_GOLDENS = [
    (
        "dataloader_dummy_golden",
        dict(data_type="dummy", world_size=1, tp=1, rank=0, seed=0, shuffle=True, max_steps=2),
    ),
    (
        "dataloader_dummy_golden",
        dict(data_type="dummy", world_size=2, tp=1, rank=1, seed=5, shuffle=True, max_steps=2),
    ),
    (
        "dataloader_dummy_golden",
        dict(data_type="dummy", world_size=4, tp=2, rank=2, seed=1, shuffle=False, max_steps=2),
    ),
    (
        "dataloader_preset_golden",
        dict(data_type="preset_pt", world_size=1, tp=1, rank=0, seed=0, shuffle=False, max_steps=4),
    ),
    (
        "dataloader_hf_text_golden",
        dict(data_type="hf_datasets", world_size=1, tp=1, rank=0, seed=2, shuffle=True, max_steps=100),
    ),
]

for _name, _params in _GOLDENS:
    REGISTRY.golden(
        _name, kind="batches", tags=("dataloader",), seed=0, params={**_params, "n": 4}, producer=new_batches
    )
