"""Dataloader parity: the legacy steps 4-8 (``LLMTrainer`` data steps + ``BaseTrainer._build_dataloader``)
against the ``BaseDataLoader`` component, on the same data, layout and seed.

Each producer returns the first ``n`` micro-batches plus the loader's bookkeeping (training steps
after the dataset's change of ``max_steps``, grad accumulation, batches per epoch). The legacy side
reads the global rank from the platform, so ``parity.legacy_driver.simulated_rank`` makes the
platform report it while its loader is built; the new side gets ``dp_rank = rank // (tp*cp*pp*ep)`` passed in.

Tier A compares the two sides; tier B pins the component's output on small explicit layouts.

The second half (``dataloader_pad``, ``_split``, ``_resume``, ``_error``) runs on short-row assets
that pad and leave remainders, with derived tokenizer folders whose pad id differs from eos or is
missing; see the comment above ``PAD_CASES``. ``components_transforms`` reuses its two sides.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections.abc import Callable
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
    from hyper_parallel.trainer.config import LegacyTrainerArgs, parse_args
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
    args = parse_args(LegacyTrainerArgs, argv)
    trainer = BaseTrainer.__new__(BaseTrainer)
    trainer.args = args
    trainer.state = TrainerState(max_steps=args.train.max_steps)
    trainer.parallel_dims = ParallelDims.from_config(args.train.accelerator, world_size=world_size)
    stub = SimpleNamespace(config=SimpleNamespace(vocab_size=_VOCAB if data_type == "dummy" else 512))
    trainer.model = stub  # type: ignore[assignment]  # a stand-in: the data steps read model.config only
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
    from hyper_parallel.components.dataloader import data_parallel_rank
    from hyper_parallel.trainer.legacy_mapping import dataloader_config

    tokenizer = None
    if data_type in ("hf_datasets", "json_file"):
        tokenizer = local_tokenizer()
    config = dataloader_config(data_type, train_path=train_path, shuffle=shuffle)
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

REGISTRY.grid(
    params=[(_name, {**_params, "n": 6}) for _name, _params in _PAIRS],
    kind="batches",
    tags=("dataloader",),
    seed=0,
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

REGISTRY.grid(
    params=[(_name, {**_params, "n": 4}) for _name, _params in _GOLDENS],
    kind="batches",
    tags=("dataloader",),
    seed=0,
    producer=new_batches,
    backends=("torch", "mindspore"),
)


# ============================================================================= padding and splits
#
# The cases above never pad (every row fills the 16-token window, the asset's pad id equals its eos
# id) and never leave a remainder across ranks. The cases below do, on short-row assets:
#
# - padding: rows shorter than the window for hf_datasets text, json_file alpaca (prompt masked)
#   and preset_pt, with tokenizer folders whose pad id differs from eos ("pad"), whose pad falls
#   back to an eos that is not id 0 ("eos1"), and that have neither ("no_eos": the collate pads
#   with 0, as the legacy collate does);
# - uneven splits: 35 / 31 / 13 rows on 2 and 3 dp ranks (every rank, and dp rank = rank // tp on
#   6 ranks with tp=2): the sampler's remainder (drop_last) and the loader's last partial batch;
# - resume mid-epoch: ``state_dict`` after ``k`` batches, loaded into a fresh loader of the same side;
# - errors: where legacy raises, the component must raise the same exception type.
#
# Each producer returns the epoch (or its first ``n`` batches), the rank's sampler indices and the
# loader's bookkeeping, so a report names the artifact that moved (``indices``, ``batches[i].labels``...).

_MODEL_VOCAB = 512  # the asset tokenizer's size: the legacy vocab check passes

# The short-row data sets (see data_source).
_SHORT_DATA = ("short_text", "short_alpaca", "ragged_preset")
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
    if name in _SHORT_DATA or name in _SOURCES:
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
    raise ValueError(f"data {data!r}: expected one of {', '.join((*_SHORT_DATA, *_SOURCES))}")


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
        from parity.suites.components_loss_tokenizer import tokenizer_variant

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


def _short_legacy_trainer(
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
    vocab: int = _MODEL_VOCAB,
    template: str = "empty",
    text_key: str = "text",
    train_size: int | None = None,
    subset: str | None = None,
    prefetch_factor: int | None = None,
) -> Any:
    """Legacy steps 4-8 (``LLMTrainer`` data steps, then ``BaseTrainer._build_dataloader``)."""
    from types import SimpleNamespace

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


def _short_new_loader(
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
    vocab: int = _MODEL_VOCAB,
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


def _epoch_tree(loader: Any, sampler: Any, training_steps: int, grad_accum: int, n: int | None):
    """The rank's epoch (or its first ``n`` batches), its sampler indices and the bookkeeping."""
    got = list(loader) if n is None else list(islice(iter(loader), n))
    return {
        "batches": canonical.batches(got),
        "batches_per_epoch": len(loader),
        "grad_accum": grad_accum,
        "indices": [int(i) for i in sampler],
        "training_steps": training_steps,
    }


def legacy_epoch(*, n: int | None = None, **kw: Any) -> dict[str, Any]:
    trainer = _short_legacy_trainer(**kw)
    return _epoch_tree(
        trainer.train_dataloader, trainer.sampler, trainer.state.max_steps, trainer._grad_accum, n
    )


def new_epoch(*, n: int | None = None, **kw: Any) -> dict[str, Any]:
    loader = _short_new_loader(**kw)
    return _epoch_tree(loader, loader.sampler, loader.training_steps, loader.grad_accum, n)


def _resume_tree(make: Any, k: int) -> dict[str, Any]:
    """``k`` batches, ``state_dict``, a fresh loader of the same side loads it and runs to the end."""
    first = make()
    head = list(islice(iter(first), k))
    state = first.state_dict()
    second = make()
    second.load_state_dict(state)
    return {
        "head": canonical.batches(head),
        "state": canonical.checkpoint(state),
        "tail": canonical.batches(list(second)),
    }


def legacy_resume(*, k: int, **kw: Any) -> dict[str, Any]:
    return _resume_tree(lambda: _short_legacy_trainer(**kw).train_dataloader, k)


def new_resume(*, k: int, **kw: Any) -> dict[str, Any]:
    return _resume_tree(lambda: _short_new_loader(**kw), k)


def _error_tree(build: Any) -> dict[str, Any]:
    """The exception type a build raises (messages name each side's own fields, so they differ)."""
    try:
        build()
    except Exception as exc:  # the type is the artifact
        return {"error": type(exc).__name__}
    return {"error": None}


def legacy_error(**kw: Any) -> dict[str, Any]:
    return _error_tree(lambda: _short_legacy_trainer(**kw))


def new_error(**kw: Any) -> dict[str, Any]:
    return _error_tree(lambda: _short_new_loader(**kw))


_BASE = dict(seq=16, mbs=4, gbs=8, world=1, tp=1, rank=0, seed=0, shuffle=True, steps=100)

# Padding: rows shorter than the window, per data path and tokenizer folder.
PAD_CASES: tuple[dict[str, Any], ...] = (
    *({**_BASE, "data": "short_text", "tok": tok} for tok in ("asset", "pad", "eos1", "no_eos")),
    *({**_BASE, "data": "short_alpaca", "tok": tok} for tok in ("asset", "pad", "eos1", "no_eos")),
    {**_BASE, "data": "short_alpaca", "tok": "pad", "seq": 8, "mbs": 3, "gbs": 6, "seed": 3},
    *(
        {**_BASE, "data": "ragged_preset", "tok": tok, "mbs": 3, "gbs": 3, "shuffle": False, "steps": 4}
        for tok in ("none", "pad", "eos1")
    ),
    {**_BASE, "data": "ragged_preset", "tok": "no_eos", "mbs": 3, "gbs": 3, "steps": 4, "seed": 5},
)

# Uneven splits: every rank of 2 and 3 dp ranks, and of dp 3 x tp 2 (dp rank = rank // 2).
_SPLIT_DATA = (
    ("short_text", "pad", True),
    ("short_alpaca", "eos1", False),
    ("ragged_preset", "none", False),
)
SPLIT_CASES: tuple[dict[str, Any], ...] = (
    *(
        {
            **_BASE,
            "data": data,
            "tok": tok,
            "shuffle": shuffle,
            "mbs": 2,
            "gbs": 2 * world,
            "world": world,
            "rank": rank,
            "seed": 5,
        }
        for data, tok, shuffle in _SPLIT_DATA
        for world in (2, 3)
        for rank in range(world)
    ),
    *(
        {**_BASE, "data": "short_text", "tok": "asset", "mbs": 2, "gbs": 6, "world": 6, "tp": 2, "rank": r}
        for r in (1, 2, 5)
    ),
)

RESUME_CASES: tuple[dict[str, Any], ...] = (
    {**_BASE, "data": "short_text", "tok": "pad", "mbs": 2, "gbs": 6, "world": 3, "rank": 1, "k": 2},
    {**_BASE, "data": "short_text", "tok": "eos1", "world": 1, "k": 5},
    {**_BASE, "data": "short_alpaca", "tok": "pad", "mbs": 2, "gbs": 4, "world": 2, "rank": 1, "k": 3},
    {
        **_BASE,
        "data": "ragged_preset",
        "tok": "none",
        "mbs": 2,
        "gbs": 4,
        "world": 2,
        "rank": 0,
        "shuffle": False,
        "k": 1,
    },
)

# Where legacy raises, the component must raise the same type (each row: why it raises).
ERROR_CASES: tuple[dict[str, Any], ...] = (
    {**_BASE, "data": "short_text", "tok": "asset", "mbs": 2, "gbs": 8, "world": 3},  # 8 % (2*3)
    {**_BASE, "data": "short_alpaca", "tok": "asset", "gbs": 64},  # 31 rows: 0 training steps
    {**_BASE, "data": "short_text", "tok": "asset", "vocab": 300},  # 512 tokenizer ids > vocab
    {**_BASE, "data": "short_text", "tok": "none"},  # text data without a tokenizer
    {**_BASE, "data": "short_text", "tok": "asset", "text_key": "body"},  # no such column
)

REGISTRY.grid(
    "dataloader_pad",
    params=PAD_CASES,
    kind="batches",
    tags=("dataloader",),
    legacy=legacy_epoch,
    new=new_epoch,
)
REGISTRY.grid(
    "dataloader_split",
    params=SPLIT_CASES,
    kind="batches",
    tags=("dataloader",),
    legacy=legacy_epoch,
    new=new_epoch,
)
REGISTRY.grid(
    "dataloader_resume",
    params=RESUME_CASES,
    kind="batches",
    tags=("dataloader",),
    legacy=legacy_resume,
    new=new_resume,
)
REGISTRY.grid(
    "dataloader_error",
    params=ERROR_CASES,
    kind="batches",
    tags=("dataloader",),
    legacy=legacy_error,
    new=new_error,
)

# Tier B: the component alone on a few of the layouts above (first 4 batches; resume in full).
REGISTRY.grid(
    "dataloader_pad_golden",
    params=(
        {**PAD_CASES[1], "n": 4},  # short_text, pad id 2
        {**PAD_CASES[5], "n": 4},  # short_alpaca, pad id 2
        {**PAD_CASES[10], "n": 4},  # ragged_preset, pad id 2, in order
        {**SPLIT_CASES[4], "n": 4},  # short_text, rank 2 of 3
    ),
    kind="batches",
    tags=("dataloader",),
    producer=new_epoch,
    backends=("torch", "mindspore"),
)
REGISTRY.golden(
    "dataloader_resume_golden",
    kind="batches",
    tags=("dataloader",),
    params=RESUME_CASES[0],
    producer=new_resume,
    backends=("torch", "mindspore"),
)


# ============================================================================= data fields and grouping
#
# ``data.train_size`` (a small value, and 0: legacy refuses 0, the component must not read it as
# "unset"), ``data.subset`` on a dataset folder with two configurations (README ``configs:``, read
# offline by ``load_dataset(path, subset)``), ``data.prefetch_factor`` without workers (both
# loaders must leave it out: torch refuses it with ``num_workers=0``), and the micro-batch groups
# of a whole epoch that is not a whole number of global batches (the trailing partial group).


@functools.cache
def configs_folder() -> Path:
    """A dataset folder with configurations ``first`` (default, the short_text rows in order) and
    ``second`` (the same rows reversed, every other one), as a README ``configs:`` block names them."""
    import json

    rows = [json.loads(line) for line in assets.short_text_jsonl().read_text(encoding="utf-8").splitlines()]
    root = _scratch() / "configs-text"
    for name, part in (("first", rows), ("second", rows[::-2])):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "train.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in part), encoding="utf-8"
        )
    (root / "README.md").write_text(
        "---\nconfigs:\n"
        "- config_name: first\n  default: true\n  data_files:\n  - split: train\n    path: first/train.jsonl\n"
        "- config_name: second\n  data_files:\n  - split: train\n    path: second/train.jsonl\n---\n",
        encoding="utf-8",
    )
    return root


register_source("configs_text", lambda: ("hf_datasets", configs_folder()))


def _groups_tree(groups: Any, grad_accum: int) -> dict[str, Any]:
    got = list(groups)
    return {
        "grad_accum": grad_accum,
        "group_sizes": [len(g) for g in got],
        "groups": [canonical.batches(g) for g in got],
    }


def legacy_groups(**kw: Any) -> dict[str, Any]:
    trainer = _short_legacy_trainer(**kw)
    return _groups_tree(trainer._make_micro_batch_iterator(), trainer._grad_accum)


def new_groups(**kw: Any) -> dict[str, Any]:
    loader = _short_new_loader(**kw)
    return _groups_tree(loader.micro_batch_iterator(), loader.grad_accum)


def legacy_groups_epoch(*, epoch: int, **kw: Any) -> dict[str, Any]:
    """The legacy train loop's epoch start: ``sampler.set_epoch(epoch)``, then the grouped iterator."""
    trainer = _short_legacy_trainer(**kw)
    trainer.sampler.set_epoch(epoch)
    return _groups_tree(trainer._make_micro_batch_iterator(), trainer._grad_accum)


def new_groups_epoch(*, epoch: int, **kw: Any) -> dict[str, Any]:
    """``HyperTrainer``'s epoch start: ``dataloader.set_epoch(epoch)``, then ``micro_batch_iterator()``."""
    loader = _short_new_loader(**kw)
    loader.set_epoch(epoch)
    return _groups_tree(loader.micro_batch_iterator(), loader.grad_accum)


_FIELD_BASE = {**_BASE, "data": "short_text", "tok": "pad", "mbs": 2, "gbs": 4}
FIELD_CASES: tuple[dict[str, Any], ...] = (
    {**_FIELD_BASE, "train_size": 13},  # 13 of 39 rows
    {**_FIELD_BASE, "data": "configs_text", "subset": "second", "seed": 2},  # not the default config
    {**_FIELD_BASE, "prefetch_factor": 2, "shuffle": False},  # no workers: not passed to the loader
)
FIELD_ERROR_CASES: tuple[dict[str, Any], ...] = (
    {**_FIELD_BASE, "train_size": 0},  # legacy refuses 0; the component must not load every row
)
# 39 rows, 2 per micro batch (19 batches, drop_last), 3 per group: 6 groups and a trailing one.
GROUP_CASES: tuple[dict[str, Any], ...] = (
    {**_BASE, "data": "short_text", "tok": "pad", "mbs": 2, "gbs": 6, "seed": 1},
    {**_BASE, "data": "short_alpaca", "tok": "eos1", "mbs": 2, "gbs": 8, "world": 2, "rank": 1, "seed": 4},
)

REGISTRY.grid(
    "dataloader_fields",
    params=[{**_params, "n": 4} for _params in FIELD_CASES],
    kind="batches",
    tags=("dataloader",),
    legacy=legacy_epoch,
    new=new_epoch,
)
REGISTRY.grid(
    "dataloader_fields_error",
    params=FIELD_ERROR_CASES,
    kind="batches",
    tags=("dataloader",),
    legacy=legacy_error,
    new=new_error,
)
REGISTRY.grid(
    "dataloader_micro_batch_groups",
    params=GROUP_CASES,
    kind="batches",
    tags=("dataloader",),
    legacy=legacy_groups,
    new=new_groups,
)
# A later epoch (the reshuffle ``set_epoch`` drives): epoch 2 of the first grouping case.
REGISTRY.pair(
    "dataloader_set_epoch_groups",
    params={**GROUP_CASES[0], "epoch": 2},
    kind="batches",
    tags=("dataloader",),
    legacy=legacy_groups_epoch,
    new=new_groups_epoch,
)
