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

import functools
import tempfile
from itertools import islice
from pathlib import Path
from typing import Any

from parity import assets, canonical
from parity.builders import (
    _scratch,
    loader_summary,
    register_source,
    short_legacy_trainer,
    short_new_loader,
)
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
    return loader_summary(trainer.train_dataloader, trainer.state.max_steps, trainer._grad_accum, n)


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
    return loader_summary(loader, loader.training_steps, loader.grad_accum, n)


def local_tokenizer():
    """The assets tokenizer as the tokenizer component prepares it: pad falls back to eos."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(assets.tokenizer_dir()), local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


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

SUITE = REGISTRY.suite(tags=("dataloader",))
SUITE.grid(
    params=[(_name, {**_params, "n": 6}) for _name, _params in _PAIRS],
    kind="batches",
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

SUITE.grid(
    params=[(_name, {**_params, "n": 4}) for _name, _params in _GOLDENS],
    kind="batches",
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
    trainer = short_legacy_trainer(**kw)
    return _epoch_tree(
        trainer.train_dataloader, trainer.sampler, trainer.state.max_steps, trainer._grad_accum, n
    )


def new_epoch(*, n: int | None = None, **kw: Any) -> dict[str, Any]:
    loader = short_new_loader(**kw)
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
    return _resume_tree(lambda: short_legacy_trainer(**kw).train_dataloader, k)


def new_resume(*, k: int, **kw: Any) -> dict[str, Any]:
    return _resume_tree(lambda: short_new_loader(**kw), k)


def _error_tree(build: Any) -> dict[str, Any]:
    """The exception type a build raises (messages name each side's own fields, so they differ)."""
    try:
        build()
    except Exception as exc:  # the type is the artifact
        return {"error": type(exc).__name__}
    return {"error": None}


def new_error_message(**kw: Any) -> dict[str, Any]:
    """The component's refusal as a user reads it: its type and message, with the scratch and
    asset folders named, and the text of the library error it quotes (its cause, worded by the
    library's version) replaced by the cause's type."""
    try:
        short_new_loader(**kw)
    except Exception as exc:  # the refusal is the artifact
        text = str(exc)
        cause = exc.__cause__
        if cause is not None and str(cause) and str(cause) in text:
            text = text.replace(str(cause), f"<{type(cause).__name__}>")
        text = text.replace(str(_scratch()), "<scratch>").replace(
            str(Path(assets.__file__).parent), "<assets>"
        )
        return {"error": type(exc).__name__, "message": text}
    return {"error": None, "message": None}


def legacy_error(**kw: Any) -> dict[str, Any]:
    return _error_tree(lambda: short_legacy_trainer(**kw))


def new_error(**kw: Any) -> dict[str, Any]:
    return _error_tree(lambda: short_new_loader(**kw))


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


def _bad_preset(name: str) -> Path:
    """A preset_pt path a user may hand over by mistake: ``name`` says what is wrong with it."""
    import datetime

    import torch

    ids = torch.arange(8).reshape(2, 4)
    contents: dict[str, Any] = {
        "preset_empty_list": [],
        "preset_a_dict": {"input_ids": ids, "labels": ids},
        "preset_an_int_entry": [5],
        "preset_no_labels": [{"input_ids": ids}],
        "preset_1d_ids": [{"input_ids": ids[0], "labels": ids[0]}],
        "preset_text_labels": [[{"input_ids": ids, "labels": "abc"}]],
        "preset_rows_differ": [{"input_ids": ids, "labels": ids[:1]}],
        "preset_rank_entry_not_dict": [[{"input_ids": ids, "labels": ids}, 3]],
        "preset_pickled_object": [datetime.date(2026, 1, 1)],
    }
    root = _scratch() / "bad-preset"
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{name}.pt"
    if name == "preset_missing":
        return path
    if name == "preset_folder":
        path.mkdir(exist_ok=True)
        return path
    torch.save(contents[name], path)
    return path


def _long_text_bad_row() -> Path:
    """2,500 text rows, row 2,345 (1-based) holding a number: past ``datasets.map``'s first two
    batches of 1,000, so the row number a refusal names counts over every batch before it."""
    import json

    path = _scratch() / "long-text-bad-row.jsonl"
    if not path.exists():
        rows = [{"text": f"row {n} text"} if n != 2345 else {"text": 5} for n in range(1, 2501)]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


register_source("long_text_bad_row", lambda: ("hf_datasets", _long_text_bad_row()))

BAD_PRESETS = (
    "preset_missing",
    "preset_folder",
    "preset_empty_list",
    "preset_a_dict",
    "preset_an_int_entry",
    "preset_no_labels",
    "preset_1d_ids",
    "preset_text_labels",
    "preset_rows_differ",
    "preset_rank_entry_not_dict",
    "preset_pickled_object",
)


def _bad_preset_source(name: str) -> tuple[str, Path]:
    return "preset_pt", _bad_preset(name)


for _name in BAD_PRESETS:
    register_source(_name, functools.partial(_bad_preset_source, _name))

# Where legacy raises, the component must raise the same type (each row: why it raises).
ERROR_CASES: tuple[dict[str, Any], ...] = (
    {**_BASE, "data": "short_text", "tok": "asset", "mbs": 2, "gbs": 8, "world": 3},  # 8 % (2*3)
    {**_BASE, "data": "short_alpaca", "tok": "asset", "gbs": 64},  # 31 rows: 0 training steps
    {**_BASE, "data": "short_text", "tok": "asset", "vocab": 300},  # 512 tokenizer ids > vocab
    {**_BASE, "data": "short_text", "tok": "none"},  # text data without a tokenizer
    {**_BASE, "data": "short_text", "tok": "asset", "text_key": "body"},  # no such column
)
# Refusals of the data files both sides read through the same leaves (data/preset_pt.py, the row
# naming of data/transforms.py): a pair cannot see a change there, the golden's words can.
DATA_FILE_ERROR_CASES: tuple[dict[str, Any], ...] = (
    {**_BASE, "data": "long_text_bad_row", "tok": "asset"},  # a number in row 2,345 of 2,500
    # preset_pt files that are not a list of batch dicts (each source's name says how)
    *({**_BASE, "data": name, "tok": "none", "mbs": 2, "gbs": 2} for name in BAD_PRESETS),
)

SUITE.grid(
    "dataloader_pad",
    params=PAD_CASES,
    kind="batches",
    legacy=legacy_epoch,
    new=new_epoch,
)
SUITE.grid(
    "dataloader_split",
    params=SPLIT_CASES,
    kind="batches",
    legacy=legacy_epoch,
    new=new_epoch,
)
SUITE.grid(
    "dataloader_resume",
    params=RESUME_CASES,
    kind="batches",
    legacy=legacy_resume,
    new=new_resume,
)
SUITE.grid(
    "dataloader_error",
    params=ERROR_CASES,
    kind="batches",
    legacy=legacy_error,
    new=new_error,
)

# Tier B: the component's refusals word for word (the pair compares the types: each side names
# its own fields).
SUITE.grid(
    "dataloader_error_golden",
    params=(*ERROR_CASES, *DATA_FILE_ERROR_CASES),
    kind="batches",
    producer=new_error_message,
)

# Tier B: the component alone on a few of the layouts above (first 4 batches; resume in full).
SUITE.grid(
    "dataloader_pad_golden",
    params=(
        {**PAD_CASES[1], "n": 4},  # short_text, pad id 2
        {**PAD_CASES[5], "n": 4},  # short_alpaca, pad id 2
        {**PAD_CASES[10], "n": 4},  # ragged_preset, pad id 2, in order
        {**SPLIT_CASES[4], "n": 4},  # short_text, rank 2 of 3
    ),
    kind="batches",
    producer=new_epoch,
    backends=("torch", "mindspore"),
)
SUITE.golden(
    "dataloader_resume_golden",
    kind="batches",
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
    trainer = short_legacy_trainer(**kw)
    return _groups_tree(trainer._make_micro_batch_iterator(), trainer._grad_accum)


def new_groups(**kw: Any) -> dict[str, Any]:
    loader = short_new_loader(**kw)
    return _groups_tree(loader.micro_batch_iterator(), loader.grad_accum)


def legacy_groups_epoch(*, epoch: int, **kw: Any) -> dict[str, Any]:
    """The legacy train loop's epoch start: ``sampler.set_epoch(epoch)``, then the grouped iterator."""
    trainer = short_legacy_trainer(**kw)
    trainer.sampler.set_epoch(epoch)
    return _groups_tree(trainer._make_micro_batch_iterator(), trainer._grad_accum)


def new_groups_epoch(*, epoch: int, **kw: Any) -> dict[str, Any]:
    """``HyperTrainer``'s epoch start: ``dataloader.set_epoch(epoch)``, then ``micro_batch_iterator()``."""
    loader = short_new_loader(**kw)
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

SUITE.grid(
    "dataloader_fields",
    params=[{**_params, "n": 4} for _params in FIELD_CASES],
    kind="batches",
    legacy=legacy_epoch,
    new=new_epoch,
)
SUITE.grid(
    "dataloader_fields_error",
    params=FIELD_ERROR_CASES,
    kind="batches",
    legacy=legacy_error,
    new=new_error,
)
SUITE.grid(
    "dataloader_micro_batch_groups",
    params=GROUP_CASES,
    kind="batches",
    legacy=legacy_groups,
    new=new_groups,
)
# A later epoch (the reshuffle ``set_epoch`` drives): epoch 2 of the first grouping case.
SUITE.pair(
    "dataloader_set_epoch_groups",
    params={**GROUP_CASES[0], "epoch": 2},
    kind="batches",
    legacy=legacy_groups_epoch,
    new=new_groups_epoch,
)


# ============================================================================= a data file replaced in place
#
# ``datasets`` keys a local file's cache by its path and modification time, so a file rewritten
# with other rows of the same size and given back its old mtime (``cp -p``, a restored backup) was
# served from the old rows' cache. ``load_raw_dataset`` keys its cache by content instead. Each row
# loads a file (or a folder holding it), rewrites it that way, and loads it again: the second load
# must hold the new rows.


def _rewrite_keeping_mtime(file: Path, rows: list[str]) -> None:
    import json
    import os

    stat = file.stat() if file.exists() else None
    file.write_text("".join(json.dumps({"text": r}) + "\n" for r in rows), encoding="utf-8")
    if stat is not None:
        os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def replaced_file_rows() -> dict[str, Any]:
    from hyper_parallel.data.hf import load_raw_dataset

    rows: dict[str, Any] = {}
    for label, folder in (("a .jsonl file", False), ("a folder holding it", True)):
        root = Path(tempfile.mkdtemp(dir=_scratch(), prefix="replaced-"))
        file = root / "data" / "train.jsonl" if folder else root / "train.jsonl"
        file.parent.mkdir(parents=True, exist_ok=True)
        _rewrite_keeping_mtime(file, ["first row", "second row"])
        path = file.parent if folder else file
        before = list(load_raw_dataset("hf_datasets", str(path))["text"])
        _rewrite_keeping_mtime(file, ["other row", "fresh rows"])  # the same byte count
        after = list(load_raw_dataset("hf_datasets", str(path))["text"])
        rows[label] = {"before": before, "after": after}
    return rows


def saved_dataset_rows() -> dict[str, Any]:
    """``data.train_path`` naming a ``save_to_disk`` folder (read in place, no load cache): a
    Dataset, a DatasetDict with a ``train`` split, and one without (the refusal)."""
    import datasets

    from hyper_parallel.data.hf import load_raw_dataset

    texts = {"text": ["saved row one", "saved row two", "saved row three"]}
    saved = {
        "a saved Dataset": datasets.Dataset.from_dict(texts),
        "a saved DatasetDict with a train split": datasets.DatasetDict(
            {"train": datasets.Dataset.from_dict(texts), "test": datasets.Dataset.from_dict({"text": ["t"]})}
        ),
        "a saved DatasetDict without one": datasets.DatasetDict(
            {"validation": datasets.Dataset.from_dict(texts)}
        ),
    }
    rows: dict[str, Any] = {}
    for label, data in saved.items():
        folder = Path(tempfile.mkdtemp(dir=_scratch(), prefix="saved-")) / "data"
        data.save_to_disk(str(folder))
        try:
            rows[label] = list(load_raw_dataset("hf_datasets", str(folder))["text"])
        except Exception as exc:  # a refusal is the row
            rows[label] = canonical.error_line(exc).replace(str(folder), "<folder>")
    return rows


SUITE.golden("dataloader_replaced_file", kind="batches", producer=replaced_file_rows)
SUITE.golden("dataloader_saved_dataset", kind="batches", producer=saved_dataset_rows)
