"""What more than one suite builds: the debug recipe's optimizer and LR settings, the component
optimizer and schedulers built from them, the LR curves of both sides, tokenizer variants, the
short-row data sets and the dataloader of each side over them, and the pinned metrics clock.

Suites import these from here (the harness core), never from each other, so a suite module holds
its producers and registrations and nothing another suite needs.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import yaml

from parity import assets, canonical
from parity.legacy_driver import DEBUG_YAML, bare_trainer, legacy_args, simulated_rank

# The debug recipe's optimizer section, read from the YAML the legacy side parses (one source).
DEBUG_OPTIMIZER = yaml.safe_load(DEBUG_YAML.read_text(encoding="utf-8"))["train"]["optimizer"]
DEBUG_LR = float(DEBUG_OPTIMIZER["lr"])
DEBUG_LR_MIN = float(DEBUG_OPTIMIZER["lr_min"])
DEBUG_WARMUP_RATIO = float(DEBUG_OPTIMIZER["lr_warmup_ratio"])
DEBUG_WEIGHT_DECAY = float(DEBUG_OPTIMIZER["weight_decay"])
MAX_GRAD_NORM = float(DEBUG_OPTIMIZER["max_grad_norm"])


# Steps past T in each LR curve: the legacy cosine is not clamped there.
PAST_END = 5


def lr_curve_of(scheduler, optimizer, steps: int) -> list:
    """``get_last_lr()`` at build, then after each of ``steps + PAST_END`` steps."""
    curve = [scheduler.get_last_lr()]
    for _ in range(steps + PAST_END):
        optimizer.step()
        scheduler.step()
        curve.append(scheduler.get_last_lr())
    return canonical.lr_curve(curve)


def zeros_parameter(numel: int) -> Any:
    """A float32 zero Parameter of ``numel`` elements, of the process platform's framework
    (``torch.nn.Parameter`` / ``mindspore.Parameter``)."""
    from hyper_parallel.platform import get_platform

    platform = get_platform()
    if platform.name == "torch":
        import torch

        return torch.nn.Parameter(torch.zeros(numel))
    import mindspore as ms

    return ms.Parameter(platform.full((numel,), 0.0, dtype=platform.dtype_from_name("float32")), name="zeros")


def one_param_optimizer(lr: float):
    """An AdamW over one zero parameter (the schedule does not depend on the parameters); the
    platform's AdamW (torch: ``torch.optim.AdamW`` itself)."""
    from hyper_parallel.platform import get_platform

    return get_platform().adamw([zeros_parameter(1)], lr=lr)


def new_optimizers(model_parts, *, in_backward: bool = False, **fields: Any):
    from hyper_parallel.components.optimizer import OptimizersContainer, OptimizersInBackwardContainer

    cls = OptimizersInBackwardContainer if in_backward else OptimizersContainer
    return cls.Config(**fields).build(model_parts=list(model_parts))


def new_schedulers(optimizers, *, training_steps: int, **fields: Any):
    from hyper_parallel.components.lr_scheduler import LRSchedulersContainer

    return LRSchedulersContainer.Config(**fields).build(optimizers=optimizers, training_steps=training_steps)


def debug_optimizer_fields(**changes: Any) -> dict[str, Any]:
    return {"lr": DEBUG_LR, "weight_decay": DEBUG_WEIGHT_DECAY, **changes}


def debug_scheduler_fields(**changes: Any) -> dict[str, Any]:
    return {"lr_warmup_ratio": DEBUG_WARMUP_RATIO, "decay_style": "cosine", "lr_min": DEBUG_LR_MIN, **changes}


def legacy_lr_curve(
    *, steps: int, warmup_ratio: float, decay_style: str, lr_min: float, data_steps: int = -1
):
    """Legacy schedule; ``data_steps >= 0`` stands for a dataset that changed ``state.max_steps``."""
    args = legacy_args(
        f"--train.max_steps={steps}",
        f"--train.optimizer.lr_warmup_ratio={warmup_ratio!r}",
        f"--train.optimizer.lr_decay_style={decay_style}",
        f"--train.optimizer.lr_min={lr_min!r}",
    )
    trainer = bare_trainer(args, max_steps=None if data_steps < 0 else data_steps)
    trainer.optimizer = one_param_optimizer(args.train.optimizer.lr)
    trainer._build_lr_scheduler()
    return lr_curve_of(trainer.lr_scheduler, trainer.optimizer, trainer.state.max_steps)


def new_lr_curve(*, steps: int, warmup_ratio: float, decay_style: str, lr_min: float, data_steps: int = -1):
    """The component built with training_steps = max_steps after the dataset step."""
    training_steps = steps if data_steps < 0 else data_steps
    optimizer = one_param_optimizer(DEBUG_LR)
    schedulers = new_schedulers(
        optimizer,
        training_steps=training_steps,
        lr_warmup_ratio=warmup_ratio,
        decay_style=decay_style,
        lr_min=lr_min,
    )
    return lr_curve_of(schedulers, optimizer, training_steps)


# model_flops_per_token / peak_tflops used when a setup asks for tflops and MFU.
FLOPS_PER_TOKEN = 6 * 1_234_567
PEAK_TFLOPS = 312.5


class FixedClock:
    """Pins the step clock of both sides to ``now`` while active (not ``time.time`` globally)."""

    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        return self.now

    @contextlib.contextmanager
    def pinned(self) -> Iterator[FixedClock]:
        from hyper_parallel.platform import get_platform
        from hyper_parallel.trainer.callbacks import logging as legacy_logging

        # The legacy callback calls time.time(); the new path reads the platform's wall_time
        # (an instance attribute that shadows the class's, deleted on exit).
        with (
            mock.patch.object(legacy_logging, "time", self),
            mock.patch.object(get_platform(), "wall_time", self.time),
        ):
            yield self


TOKENIZER_VARIANTS = ("asset", "bos_eos", "pad", "no_eos")


@functools.cache
def variant_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="parity-tokenizers-"))


@functools.cache
def tokenizer_variant(name: str) -> Path:
    """A tokenizer folder: the shipped asset or a deterministic variant written to a temp folder.

    ``bos_eos``: a post-processor adds ``<|im_start|>`` before and ``<|endoftext|>`` after (so
    ``add_special_tokens`` matters); ``pad``: ``pad_token`` ``<|im_end|>`` in the config;
    ``no_eos``: no eos token (so there is no pad id at all).
    """
    src = assets.tokenizer_dir()
    if name == "asset":
        return src
    if name not in TOKENIZER_VARIANTS:
        raise ValueError(f"tokenizer variant {name!r}: expected one of {', '.join(TOKENIZER_VARIANTS)}")
    from tokenizers import Tokenizer, processors

    out = variant_root() / name
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    config = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    if name == "bos_eos":
        tok.post_processor = processors.TemplateProcessing(
            single="<|im_start|> $A <|endoftext|>",
            pair="<|im_start|> $A <|endoftext|> $B:1 <|endoftext|>:1",
            special_tokens=[("<|im_start|>", 1), ("<|endoftext|>", 0)],
        )
    elif name == "pad":
        config["pad_token"] = "<|im_end|>"
    else:
        config.pop("eos_token", None)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return out


def loader_summary(loader: Any, training_steps: int, grad_accum: int, n: int) -> dict[str, Any]:
    return {
        "batches": canonical.batches(list(islice(iter(loader), n))),
        "batches_per_epoch": len(loader),
        "grad_accum": grad_accum,
        "training_steps": training_steps,
    }


DATA_MODEL_VOCAB = 512  # the asset tokenizer's size: the legacy vocab check passes


# The short-row data sets (see data_source).
SHORT_DATA = ("short_text", "short_alpaca", "ragged_preset")


# Tokenizer folders (legacy model.tokenizer_path / tokenizer component path), see data_tokenizer.
DATA_TOKENIZERS = ("asset", "pad", "eos1", "no_eos", "none")


@functools.cache
def _scratch() -> Path:
    root = Path(tempfile.mkdtemp(prefix="parity-dataloader-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


@functools.cache
def ragged_preset() -> Path:
    """A preset_pt file of 13 single-row batches of lengths 8, 8, 3, 7, 5, 2, 6, 4, 8, 1, 5, 7, 3."""
    return assets.preset_pt(
        _scratch() / "ragged.pt",
        num_stacked=2,
        batch_size=1,
        seq_len=8,
        rank_seq_lens=(3, 7, 5, 2, 6, 4, 8, 1, 5, 7, 3),
        seed=4,
    )


# Extra data sets other suites add (components_transforms: the alpaca length grid).
_SOURCES: dict[str, Callable[[], tuple[str, Path]]] = {}


def register_source(name: str, factory: Callable[[], tuple[str, Path]]) -> None:
    """Make ``data=name`` read ``factory()``'s ``(data.type, train_path)``."""
    if name in SHORT_DATA or name in _SOURCES:
        raise ValueError(f"data source {name!r} is already registered")
    _SOURCES[name] = factory


def data_source(data: str) -> tuple[str, Path]:
    """``(data.type, train_path)`` of a short-row data set (or a registered one)."""
    if data == "short_text":
        return "hf_datasets", assets.short_text_jsonl()
    if data == "short_alpaca":
        return "json_file", assets.short_alpaca_json()
    if data == "ragged_preset":
        return "preset_pt", ragged_preset()
    if data in _SOURCES:
        return _SOURCES[data]()
    raise ValueError(f"data {data!r}: expected one of {', '.join((*SHORT_DATA, *_SOURCES))}")


@functools.cache
def data_tokenizer(variant: str) -> Path | None:
    """A tokenizer folder derived from the shipped asset (deterministic, written once per process).

    ``asset``: no pad token, eos ``<|endoftext|>`` = id 0, so pad = eos = 0 (the legacy rule);
    ``pad``: ``pad_token`` ``<|im_end|>`` (id 2), different from eos;
    ``eos1``: eos ``<|im_start|>`` (id 1) and no pad: pad = eos = 1, which differs from the 0 of the
    no-pad fallback; ``no_eos``: neither pad nor eos: the collate pads with 0 (with a warning);
    ``none``: no tokenizer at all (only preset_pt allows that).
    """
    if variant == "none":
        return None
    if variant in ("asset", "pad", "no_eos"):
        return tokenizer_variant(variant)
    if variant != "eos1":
        raise ValueError(f"tokenizer {variant!r}: expected one of {', '.join(DATA_TOKENIZERS)}")
    import json

    src, out = assets.tokenizer_dir(), _scratch() / "tokenizer-eos1"
    out.mkdir(parents=True, exist_ok=True)
    config = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["eos_token"] = "<|im_start|>"
    shutil.copyfile(src / "tokenizer.json", out / "tokenizer.json")
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return out


def short_legacy_trainer(
    *,
    data: str,
    tok: str,
    seq: int,
    mbs: int,
    gbs: int,
    world: int,
    tp: int,
    rank: int,
    seed: int,
    shuffle: bool,
    steps: int,
    vocab: int = DATA_MODEL_VOCAB,
    template: str = "empty",
    text_key: str = "text",
    train_size: int | None = None,
    subset: str | None = None,
    prefetch_factor: int | None = None,
) -> Any:
    """Legacy steps 4-8 (``LLMTrainer`` data steps, then ``BaseTrainer._build_dataloader``)."""

    from parity.legacy_driver import bare_trainer, legacy_args, llm_steps

    data_type, path = data_source(data)
    argv = [
        f"--data.type={data_type}",
        f"--data.train_path={path}",
        f"--data.max_seq_len={seq}",
        f"--data.shuffle={str(shuffle).lower()}",
        f"--data.template={template}",
        f"--data.text_key={text_key}",
        f"--train.micro_batch_size={mbs}",
        f"--train.global_batch_size={gbs}",
        f"--train.seed={seed}",
        f"--train.max_steps={steps}",
        "--train.accelerator.dp_shard=-1",
        f"--train.accelerator.tp={tp}",
    ]
    for name, value in (("train_size", train_size), ("subset", subset), ("prefetch_factor", prefetch_factor)):
        if value is not None:
            argv.append(f"--data.{name}={value}")
    folder = data_tokenizer(tok)
    if folder is not None:
        argv.append(f"--model.tokenizer_path={folder}")
    args = legacy_args(*argv, config=None)
    model = SimpleNamespace(config=SimpleNamespace(vocab_size=vocab))
    trainer = bare_trainer(args, model=model, world_size=world)
    llm_steps(trainer)
    with simulated_rank(rank):  # the legacy loader reads the global rank; there is no process group
        trainer._build_dataloader()
    return trainer


def short_new_loader(
    *,
    data: str,
    tok: str,
    seq: int,
    mbs: int,
    gbs: int,
    world: int,
    tp: int,
    rank: int,
    seed: int,
    shuffle: bool,
    steps: int,
    vocab: int = DATA_MODEL_VOCAB,
    template: str = "empty",
    text_key: str = "text",
    train_size: int | None = None,
    subset: str | None = None,
    prefetch_factor: int | None = None,
) -> Any:
    """The component wired as ``HyperTrainer`` wires it: tokenizer component, dp rank = rank // tp."""
    from hyper_parallel.components.dataloader import data_parallel_rank
    from hyper_parallel.components.tokenizer import HuggingFaceTokenizer
    from hyper_parallel.trainer.legacy_mapping import dataloader_config

    data_type, path = data_source(data)
    folder = data_tokenizer(tok)
    tokenizer = None
    if not (data_type == "preset_pt" and folder is None):  # HyperTrainer._init_tokenizer's rule
        path_field = None if folder is None else str(folder)
        tokenizer = HuggingFaceTokenizer.Config(path=path_field).build(vocab_size=vocab)
    config = dataloader_config(
        data_type,
        train_path=str(path),
        shuffle=shuffle,
        template=template,
        text_key=text_key,
        train_size=train_size,
        subset=subset,
        prefetch_factor=prefetch_factor,
    )
    return config.build(
        seq_len=seq,
        local_batch_size=mbs,
        global_batch_size=gbs,
        seed=seed,
        dp_world_size=world // tp,
        dp_rank=data_parallel_rank(rank, tp),
        tokenizer=tokenizer,
        training_steps=steps,
        vocab_size=vocab,
    )
