"""Dataloader component vs the legacy data steps 4-8.

The legacy side runs ``LLMTrainer`` steps 4-7 and ``BaseTrainer._build_dataloader`` on a bare trainer;
the new side builds ``BaseDataLoader.Config`` mapped field by field from the same legacy ``args``.
Batches are compared through the parity harness (canonical trees, bit-exact comparator).
"""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
from itertools import islice
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import hyper_parallel.components.dataloader as dl
from hyper_parallel.components.dataloader import (
    BaseDataLoader,
    DummyDataLoader,
    HuggingFaceTextDataLoader,
    PresetPtDataLoader,
    data_parallel_rank,
)
from hyper_parallel.platform import get_platform
from hyper_parallel.platform.torch_platform import TorchPlatform
from hyper_parallel.trainer.parallel_dims import ParallelDims
from parity import assert_bitwise_equal, assets, canonical
from parity.cases import Registry
from parity.compare import VALUES, compare
from parity.engine import Engine
from parity.pytest_plugin import case_params, run_case
from parity.suites import components_dataloader as suite
from tests.torch.ut.components._legacy import bare_trainer, legacy_args, llm_wrapper

MODEL_VOCAB = 512  # >= the assets tokenizer size, so the legacy vocab check passes
DATA_FIELDS = (
    "train_path",
    "subset",
    "train_size",
    "streaming",
    "text_key",
    "template",
    "num_workers",
    "prefetch_factor",
    "pin_memory",
    "shuffle",
)
# The loop's sizes and seed: TrainingConfig's fields, handed to build() as kwargs.
SIZES = dict(seq_len=8, local_batch_size=1, global_batch_size=8, seed=42)
TEXT_ARGS = {
    "hf_datasets": (f"--data.train_path={assets.text_jsonl()}", "--data.type=hf_datasets"),
    "json_file": (f"--data.train_path={assets.alpaca_json()}", "--data.type=json_file"),
}
TOKENIZER_ARG = f"--model.tokenizer_path={assets.tokenizer_dir()}"


# --------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def global_rank(rank: int):
    """The legacy loader reads the global rank from the platform; there is no process group here."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TorchPlatform, "get_rank", lambda self, group=None: rank)
        yield


def legacy_trainer(*overrides: str, world_size: int = 1, rank: int = 0, max_steps: int | None = None):
    """Legacy steps 4-7 (LLMTrainer) then 8 (BaseTrainer._build_dataloader) on a bare trainer."""
    args = legacy_args(*overrides)
    model = SimpleNamespace(config=SimpleNamespace(vocab_size=MODEL_VOCAB))
    trainer = bare_trainer(args, model=model, world_size=world_size, max_steps=max_steps)
    wrapper = llm_wrapper(trainer)
    wrapper._build_model_assets()
    wrapper._build_data_transform()
    wrapper._build_dataset()
    wrapper._build_collate_fn()
    with global_rank(rank):
        trainer._build_dataloader()
    return trainer


def config_from_legacy(args) -> BaseDataLoader.Config:
    """The legacy -> new mapping of the loader's own fields: ``data.type`` picks the Config class,
    the other ``data.<f>`` keep their names."""
    from hyper_parallel.trainer.legacy_mapping import dataloader_config

    return dataloader_config(args.data.type, **{name: getattr(args.data, name) for name in DATA_FIELDS})


def sizes_from_legacy(args) -> dict:
    """The build kwargs that are the training loop's (TrainingConfig): sizes and seed."""
    return dict(
        seq_len=args.data.max_seq_len,
        local_batch_size=args.train.micro_batch_size,
        global_batch_size=args.train.global_batch_size,
        seed=args.train.seed,
    )


def new_loader(*overrides: str, world_size: int = 1, rank: int = 0, tokenizer=None, **build_kwargs):
    """The component built from the same args; dp coordinates come from the same ParallelDims."""
    args = legacy_args(*overrides)
    dims = ParallelDims.from_config(args.train.accelerator, world_size=world_size)
    kwargs = dict(
        **sizes_from_legacy(args),
        dp_world_size=dims.dp_size,
        dp_rank=data_parallel_rank(rank, dims.non_dp_size),
        tokenizer=tokenizer,
        training_steps=args.train.max_steps,
        vocab_size=MODEL_VOCAB,
    )
    kwargs.update(build_kwargs)
    return config_from_legacy(args).build(**kwargs)


def take(iterable, n: int | None = None) -> list:
    return list(iterable if n is None else islice(iter(iterable), n))


def first_diff(expected: list, actual: list):
    diffs = compare(canonical.batches(expected), canonical.batches(actual), "batches")
    assert diffs, "the planted divergence was not detected"
    return diffs[0]


@pytest.fixture(scope="module")
def tokenizer():
    return suite.local_tokenizer()


# --------------------------------------------------------------------------- dummy


DUMMY_LAYOUTS = [
    (1, (), 0),
    (2, (), 1),
    (4, ("--train.accelerator.tp=2",), 2),  # dp rank 1 = 2 // 2
    (4, ("--train.accelerator.tp=2",), 3),
    (4, ("--train.accelerator.dp_shard=2", "--train.accelerator.tp=2"), 1),  # dp rank 0
]


@pytest.mark.parametrize(("world_size", "accel", "rank"), DUMMY_LAYOUTS)
@pytest.mark.parametrize(("seed", "shuffle"), [(42, True), (7, False), (1234, True)])
def test_dummy_epochs_equal_legacy(world_size, accel, rank, seed, shuffle):
    overrides = (
        *accel,
        f"--train.seed={seed}",
        f"--data.shuffle={str(shuffle).lower()}",
        "--data.max_seq_len=16",
    )
    legacy = legacy_trainer(*overrides, world_size=world_size, rank=rank)
    new = new_loader(*overrides, world_size=world_size, rank=rank)
    assert isinstance(new, DummyDataLoader)
    for epoch in (0, 1):
        legacy.sampler.set_epoch(epoch)
        new.set_epoch(epoch)
        assert_bitwise_equal(take(legacy.train_dataloader), take(new), "batches", kind="batches")
    assert (len(new), new.grad_accum, new.training_steps) == (
        len(legacy.train_dataloader),
        legacy._grad_accum,
        legacy.state.max_steps,
    )


@settings(deadline=None)
@given(
    tp=st.sampled_from([1, 2]),
    dp=st.integers(1, 3),
    rank_pick=st.integers(0, 63),
    seed=st.integers(0, 2**31 - 1),
    mbs=st.integers(1, 3),
    accum=st.integers(1, 4),
    steps=st.integers(1, 4),
    shuffle=st.booleans(),
)
def test_dummy_first_batches_equal_legacy_hypothesis(tp, dp, rank_pick, seed, mbs, accum, steps, shuffle):
    # Both loaders refuse a global batch that does not split into whole micro batches per dp rank.
    gbs = mbs * dp * accum
    world_size = tp * dp
    rank = rank_pick % world_size
    overrides = (
        f"--train.accelerator.tp={tp}",
        f"--train.seed={seed}",
        f"--train.micro_batch_size={mbs}",
        f"--train.global_batch_size={gbs}",
        f"--train.max_steps={steps}",
        f"--data.shuffle={str(shuffle).lower()}",
        "--data.max_seq_len=8",
    )
    legacy = legacy_trainer(*overrides, world_size=world_size, rank=rank)
    new = new_loader(*overrides, world_size=world_size, rank=rank)
    assert_bitwise_equal(take(legacy.train_dataloader, 4), take(new, 4), "batches", kind="batches")
    assert (new.grad_accum, len(new)) == (legacy._grad_accum, len(legacy.train_dataloader))


def test_seq_len_and_vocab_kwargs_match_the_legacy_sources():
    legacy = legacy_trainer("--data.max_seq_len=12")
    new = new_loader(seq_len=12)  # the debug recipe says 64: the kwarg wins
    assert new.seq_len == 12 and new.dataset.vocab_size == MODEL_VOCAB
    assert_bitwise_equal(take(legacy.train_dataloader, 3), take(new, 3), "batches", kind="batches")
    fallback = new_loader("--data.max_seq_len=4", vocab_size=None)
    assert fallback.dataset.vocab_size == 32000


# --------------------------------------------------------------------------- text


TEXT_CASES = [
    ("hf_datasets", (), 1, 0, 42),
    ("hf_datasets", ("--data.max_seq_len=8",), 2, 1, 3),
    ("hf_datasets", ("--train.accelerator.tp=2", "--data.shuffle=false"), 4, 3, 0),
    ("json_file", (), 1, 0, 42),
    ("json_file", ("--data.max_seq_len=12",), 2, 0, 9),
    (
        "json_file",
        ("--data.template=alpaca", "--train.micro_batch_size=3", "--train.global_batch_size=6"),
        2,
        1,
        5,
    ),
]


@pytest.mark.parametrize(("data_type", "extra", "world_size", "rank", "seed"), TEXT_CASES)
def test_text_first_batches_equal_legacy(tokenizer, data_type, extra, world_size, rank, seed):
    overrides = (*TEXT_ARGS[data_type], TOKENIZER_ARG, *extra, f"--train.seed={seed}")
    legacy = legacy_trainer(*overrides, world_size=world_size, rank=rank)
    new = new_loader(*overrides, world_size=world_size, rank=rank, tokenizer=tokenizer)
    assert isinstance(new, HuggingFaceTextDataLoader)
    assert new.pad_id == legacy.tokenizer.pad_token_id
    assert_bitwise_equal(take(legacy.train_dataloader, 8), take(new, 8), "batches", kind="batches")
    assert (len(new), new.grad_accum, new.training_steps) == (
        len(legacy.train_dataloader),
        legacy._grad_accum,
        legacy.state.max_steps,
    )


def test_saved_dataset_dir_with_subset_size_equals_legacy(tokenizer, tmp_path):
    # datasets.map writes cache files next to a loaded-from-disk dataset: work on copies.
    legacy_dir, new_dir = tmp_path / "legacy", tmp_path / "new"
    shutil.copytree(assets.text_disk_dir(), legacy_dir)
    shutil.copytree(assets.text_disk_dir(), new_dir)
    common = ("--data.type=hf_datasets", TOKENIZER_ARG, "--data.train_size=40", "--train.global_batch_size=4")
    legacy = legacy_trainer(*common, f"--data.train_path={legacy_dir}")
    new = new_loader(*common, f"--data.train_path={new_dir}", tokenizer=tokenizer)
    assert len(new.dataset) == len(legacy.train_dataset) <= 40
    assert_bitwise_equal(take(legacy.train_dataloader), take(new), "batches", kind="batches")
    assert new.training_steps == legacy.state.max_steps


def test_tokenizer_component_and_wrappers_give_the_same_batches(tokenizer):
    tok_mod = pytest.importorskip("hyper_parallel.components.tokenizer")
    component = tok_mod.HuggingFaceTokenizer.Config(path=str(assets.tokenizer_dir())).build()
    overrides = (*TEXT_ARGS["hf_datasets"], TOKENIZER_ARG)
    raw = take(new_loader(*overrides, tokenizer=tokenizer), 6)
    assert_bitwise_equal(raw, take(new_loader(*overrides, tokenizer=component), 6), "batches", kind="batches")
    duck = SimpleNamespace(hf=tokenizer, pad_token_id=tokenizer.pad_token_id)
    assert_bitwise_equal(raw, take(new_loader(*overrides, tokenizer=duck), 6), "batches", kind="batches")


def test_tokenizer_without_pad_pads_with_zero(tokenizer):
    class NoPad:
        hf = tokenizer
        pad_token_id = None

    loader = new_loader(*TEXT_ARGS["hf_datasets"], TOKENIZER_ARG, tokenizer=NoPad())
    assert loader.pad_id == 0


# --------------------------------------------------------------------------- preset_pt


@pytest.mark.parametrize(
    ("extra", "world_size", "rank", "with_tokenizer"),
    [
        (("--data.shuffle=false",), 1, 0, False),
        (("--data.shuffle=false", "--train.micro_batch_size=3", "--train.global_batch_size=6"), 1, 0, True),
        (("--train.seed=5",), 2, 1, True),
        (("--train.accelerator.tp=2", "--train.micro_batch_size=1"), 4, 2, False),
    ],
)
def test_preset_batches_equal_legacy(tokenizer, tmp_path, extra, world_size, rank, with_tokenizer):
    path = assets.preset_pt(tmp_path / "p.pt")
    overrides = ("--data.type=preset_pt", f"--data.train_path={path}", *extra)
    if with_tokenizer:
        overrides = (*overrides, TOKENIZER_ARG)
    legacy = legacy_trainer(*overrides, world_size=world_size, rank=rank)
    new = new_loader(
        *overrides, world_size=world_size, rank=rank, tokenizer=tokenizer if with_tokenizer else None
    )
    assert isinstance(new, PresetPtDataLoader)
    assert new.pad_id == (tokenizer.pad_token_id if with_tokenizer else 0)
    assert_bitwise_equal(take(legacy.train_dataloader), take(new), "batches", kind="batches")
    assert "attention_mask" not in take(new, 1)[0]
    assert (len(new), new.grad_accum) == (len(legacy.train_dataloader), legacy._grad_accum)


# --------------------------------------------------------------------------- grouping and RNG


def test_micro_batch_grouping_equals_legacy_with_trailing_partial_group(tmp_path):
    # 8 preset rows, one per micro batch, grad_accum 3: groups of 3, 3 and a trailing 2.
    path = assets.preset_pt(tmp_path / "p.pt")
    overrides = (
        "--data.type=preset_pt",
        f"--data.train_path={path}",
        "--data.shuffle=false",
        "--train.micro_batch_size=1",
        "--train.global_batch_size=3",
    )
    legacy = legacy_trainer(*overrides)
    new = new_loader(*overrides)
    legacy_groups = list(legacy._make_micro_batch_iterator())
    new_groups = list(new.micro_batch_iterator())
    assert [len(g) for g in new_groups] == [len(g) for g in legacy_groups] == [3, 3, 2]
    assert_bitwise_equal(
        [b for g in legacy_groups for b in g], [b for g in new_groups for b in g], "batches", kind="batches"
    )


def test_micro_batch_iterator_leaves_the_global_rng_alone():
    loader = new_loader("--data.max_seq_len=4")
    platform = get_platform()
    before = platform.get_rng_state().clone()
    loader.micro_batch_iterator()
    assert torch.equal(platform.get_rng_state(), before)
    iter(loader)  # a plain iterator draws the worker base seed from the global RNG
    assert not torch.equal(platform.get_rng_state(), before)


# --------------------------------------------------------------------------- resume


def _dummy_overrides():
    return ("--data.max_seq_len=8", "--train.seed=11")


def _hf_overrides():
    return (*TEXT_ARGS["hf_datasets"], TOKENIZER_ARG, "--data.max_seq_len=16", "--train.seed=11")


def _make(side: str, kind: str, tokenizer):
    """A fresh loader of ``side`` (legacy StatefulDataLoader or component), dp rank 1 of 2."""
    overrides = _dummy_overrides() if kind == "dummy" else _hf_overrides()
    if side == "legacy":
        return legacy_trainer(*overrides, world_size=2, rank=1).train_dataloader
    return new_loader(*overrides, world_size=2, rank=1, tokenizer=None if kind == "dummy" else tokenizer)


@pytest.mark.parametrize("kind", ["dummy", "hf_datasets"])
@pytest.mark.parametrize(
    ("saver", "loader"), [("new", "new"), ("legacy", "legacy"), ("legacy", "new"), ("new", "legacy")]
)
def test_resume_mid_epoch_equals_uninterrupted(tokenizer, kind, saver, loader):
    uninterrupted = take(_make("legacy", kind, tokenizer), 8)
    source = _make(saver, kind, tokenizer)
    it = iter(source)
    first = take(it, 3)
    state = source.state_dict()
    resumed = _make(loader, kind, tokenizer)
    resumed.load_state_dict(state)
    assert_bitwise_equal(uninterrupted, first + take(resumed, 5), "batches", kind="batches")


def test_state_dicts_equal_legacy_after_the_same_batches():
    legacy = legacy_trainer(*_dummy_overrides()).train_dataloader
    new = new_loader(*_dummy_overrides())
    legacy_it, new_it = iter(legacy), iter(new)
    take(legacy_it, 3)
    take(new_it, 3)
    assert_bitwise_equal(
        canonical.checkpoint(legacy.state_dict()), canonical.checkpoint(new.state_dict()), "checkpoint"
    )


def test_resume_then_micro_batch_iterator_continues_the_groups():
    whole = new_loader(*_dummy_overrides())
    expected = [b for g in whole.micro_batch_iterator() for b in g]
    first = new_loader(*_dummy_overrides())
    it = iter(first)
    head = take(it, 5)
    second = new_loader(*_dummy_overrides())
    second.load_state_dict(first.state_dict())
    tail = [b for g in second.micro_batch_iterator() for b in g]
    assert_bitwise_equal(expected, head + tail, "batches", kind="batches")


# --------------------------------------------------------------------------- max_steps / training_steps


@pytest.mark.parametrize(
    ("data_type", "max_steps"), [("hf_datasets", 100), ("hf_datasets", 10), ("json_file", 100)]
)
def test_text_training_steps_shrink_like_legacy(tokenizer, data_type, max_steps):
    overrides = (*TEXT_ARGS[data_type], TOKENIZER_ARG, f"--train.max_steps={max_steps}")
    legacy = legacy_trainer(*overrides)
    new = new_loader(*overrides, tokenizer=tokenizer)
    expected = min(max_steps, len(legacy.train_dataset) // 8)
    assert new.training_steps == legacy.state.max_steps == expected


def test_text_training_steps_none_means_every_full_global_batch(tokenizer):
    new = new_loader(*TEXT_ARGS["json_file"], TOKENIZER_ARG, tokenizer=tokenizer, training_steps=None)
    assert new.training_steps == len(new.dataset) // 8


def test_text_zero_training_steps_is_an_error_on_both_paths(tokenizer):
    overrides = (*TEXT_ARGS["json_file"], TOKENIZER_ARG, "--train.global_batch_size=1000")
    with pytest.raises(ValueError, match="data.train_path"):
        legacy_trainer(*overrides)
    with pytest.raises(ValueError, match=r"train_path=.*global_batch_size=1000"):
        new_loader(*overrides, tokenizer=tokenizer)


@pytest.mark.parametrize(("requested", "initial"), [(7, 999), (0, 0), (3, 3)])
def test_preset_training_steps_reset_like_legacy(tmp_path, requested, initial):
    path = assets.preset_pt(tmp_path / "p.pt")
    overrides = ("--data.type=preset_pt", f"--data.train_path={path}", f"--train.max_steps={requested}")
    legacy = legacy_trainer(*overrides, max_steps=initial)
    new = new_loader(*overrides, training_steps=requested)
    assert new.training_steps == legacy.state.max_steps == requested


def test_dummy_training_steps_unchanged_and_size_the_dataset():
    legacy = legacy_trainer("--train.max_steps=5")
    new = new_loader("--train.max_steps=5")
    assert new.training_steps == legacy.state.max_steps == 5
    assert len(new.dataset) == len(legacy.train_dataset) == 5 * 8


# --------------------------------------------------------------------------- config and dispatch


def test_config_fields_and_defaults_mirror_the_legacy_schema():
    schema = legacy_args(config=None)
    defaults = DummyDataLoader.Config()  # the legacy default data.type is dummy
    assert schema.data.type == "dummy"
    for name in DATA_FIELDS:
        assert getattr(defaults, name) == getattr(schema.data, name), name


def test_sizes_and_seed_are_not_dataloader_settings():
    """They live in TrainingConfig only and arrive as build kwargs (one setting, one place)."""
    from hyper_parallel.config import TrainingConfig

    fields = set(BaseDataLoader.Config.__dataclass_fields__)
    assert not fields & {
        "max_seq_len",
        "seq_len",
        "micro_batch_size",
        "local_batch_size",
        "global_batch_size",
        "seed",
    }
    training = TrainingConfig()
    schema = legacy_args(config=None)
    assert training.seed == schema.train.seed == 42  # the schema default, not the sampler's code fallback 0
    with pytest.raises(TypeError, match="seed"):
        DummyDataLoader.Config().build(training_steps=1, seq_len=4, local_batch_size=1, global_batch_size=8)


@pytest.mark.parametrize(
    ("data_type", "cls", "format"),
    [
        ("dummy", DummyDataLoader, None),
        ("hf_datasets", HuggingFaceTextDataLoader, "hf_datasets"),
        ("json_file", HuggingFaceTextDataLoader, "json_file"),
        ("preset_pt", PresetPtDataLoader, None),
    ],
)
def test_the_config_class_picks_the_loader(tokenizer, tmp_path, data_type, cls, format):
    """Each Config builds its own class; the legacy ``data.type`` picks the Config once, in the mapping."""
    from hyper_parallel.trainer.legacy_mapping import dataloader_config

    path = {
        "dummy": None,
        "hf_datasets": str(assets.text_jsonl()),
        "json_file": str(assets.alpaca_json()),
        "preset_pt": str(assets.preset_pt(tmp_path / "p.pt")),
    }[data_type]
    config = dataloader_config(data_type, train_path=path)
    assert type(config) is cls.Config and getattr(config, "format", None) == format
    loader = config.build(**SIZES, tokenizer=tokenizer, training_steps=2)
    assert type(loader) is cls


def test_no_type_string_registry():
    assert not hasattr(dl, "loader_class") and not hasattr(dl, "supported_types")
    assert "type" not in BaseDataLoader.Config.__dataclass_fields__
    assert "__new__" not in vars(BaseDataLoader)
    with pytest.raises(TypeError, match=r"BaseDataLoader reads no dataset; build DummyDataLoader.Config"):
        BaseDataLoader.Config().build(**SIZES, training_steps=1)


def test_unknown_legacy_type_and_format_are_named():
    from hyper_parallel.trainer.legacy_mapping import dataloader_config

    with pytest.raises(ValueError, match=r"Unknown data.type 'parquet'; expected one of dummy, hf_datasets"):
        dataloader_config("parquet")
    with pytest.raises(ValueError, match=r"HuggingFaceTextDataLoader.Config.format \(data.type\) is 'csv'"):
        HuggingFaceTextDataLoader.Config(format="csv", train_path=str(assets.text_jsonl())).build(  # type: ignore[arg-type]
            **SIZES, tokenizer=object()
        )


def test_errors_name_the_field():
    with pytest.raises(ValueError, match="needs training_steps"):
        DummyDataLoader.Config().build(**SIZES)
    with pytest.raises(ValueError, match="data.type=hf_datasets needs a tokenizer"):
        HuggingFaceTextDataLoader.Config(train_path=str(assets.text_jsonl())).build(**SIZES)
    with pytest.raises(ValueError, match="data.type=preset_pt needs train_path"):
        PresetPtDataLoader.Config().build(**SIZES)
    with pytest.raises(FileNotFoundError, match="data.train_path"):
        PresetPtDataLoader.Config(train_path="/nonexistent/p.pt").build(**SIZES)
    with pytest.raises(ValueError, match=r"dp_rank must be in \[0, dp_world_size=2\)"):
        DummyDataLoader.Config().build(**SIZES, training_steps=1, dp_world_size=2, dp_rank=2)
    with pytest.raises(ValueError, match="local_batch_size must be an integer >= 1"):
        DummyDataLoader.Config().build(**{**SIZES, "local_batch_size": 0}, training_steps=1)
    with pytest.raises(ValueError, match="repeat config field"):
        DummyDataLoader.Config().build(**SIZES, training_steps=1, shuffle=False)
    with pytest.raises(NotImplementedError, match="streaming"):
        HuggingFaceTextDataLoader.Config(train_path=str(assets.text_jsonl()), streaming=True).build(
            **SIZES, tokenizer=object()
        )


def test_pin_memory_guard_and_prefetch_only_with_workers():
    loader = DummyDataLoader.Config(pin_memory=True, prefetch_factor=4).build(**SIZES, training_steps=1)
    assert loader.loader.pin_memory is (get_platform().device_type() != "cpu")
    assert loader.loader.prefetch_factor is None  # no workers: not passed


def test_worker_loader_with_prefetch_equals_legacy():
    overrides = ("--data.num_workers=1", "--data.prefetch_factor=3", "--data.max_seq_len=8")
    legacy = legacy_trainer(*overrides)
    new = new_loader(*overrides)
    assert new.loader.prefetch_factor == legacy.train_dataloader.prefetch_factor == 3
    assert_bitwise_equal(take(legacy.train_dataloader, 4), take(new, 4), "batches", kind="batches")


def test_collate_equals_legacy_on_mixed_inputs():
    from hyper_parallel.data.collate import pad_collate

    items = [
        {"input_ids": [5, 6, 7], "labels": [-100, 6, 7]},
        {"input_ids": torch.tensor([1], dtype=torch.int32), "labels": torch.tensor([1], dtype=torch.int32)},
        {"input_ids": torch.arange(5), "labels": torch.arange(5), "attention_mask": torch.ones(5)},
    ]
    legacy, new = pad_collate(items, pad_id=9), dl._pad_collate(items, pad_id=9)
    assert set(new) == {"input_ids", "labels"}
    assert_bitwise_equal(legacy, new, "collate")
    with pytest.raises(ValueError, match="more than input_ids"):
        dl._pad_collate([{"input_ids": [1], "labels": [1, 2]}], pad_id=0)


def test_data_parallel_rank():
    assert [data_parallel_rank(r, 2) for r in range(6)] == [0, 0, 1, 1, 2, 2]
    assert data_parallel_rank(5, 1) == 5
    with pytest.raises(ValueError, match="non_dp_size"):
        data_parallel_rank(0, 0)


def test_component_module_reaches_torch_only_through_the_platform():
    tree = ast.parse(Path(dl.__file__).read_text())
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            guarded.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in guarded:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                assert not name.startswith(("torch", "torchdata", "hyper_parallel.trainer")), name


# --------------------------------------------------------------------------- harness cases


@pytest.mark.parametrize(("case", "backend"), case_params(suite.REGISTRY, tag="dataloader"))
def test_parity_case(case, backend, request):
    run_case(request, suite.REGISTRY, case, backend)


# --------------------------------------------------------------------------- planted divergences


def test_planted_different_pad_id_is_caught(tokenizer):
    overrides = (*TEXT_ARGS["hf_datasets"], TOKENIZER_ARG, "--data.shuffle=false")
    legacy = take(legacy_trainer(*overrides).train_dataloader, 8)
    wrong_pad = SimpleNamespace(hf=tokenizer, pad_token_id=tokenizer.pad_token_id + 1)
    new = take(new_loader(*overrides, tokenizer=wrong_pad), 8)
    # Plain text: labels are -100 exactly at the padding, so the first pad is the first -100.
    first_padded = next(i for i, b in enumerate(legacy) if (b["labels"] == -100).any())
    first_index = int((legacy[first_padded]["labels"].reshape(-1) == -100).nonzero()[0])
    diff = first_diff(legacy, new)
    assert (diff.path, diff.kind, diff.phase, diff.index) == (
        f"batches[{first_padded}].input_ids",
        "bits",
        VALUES,
        first_index,
    )
    assert diff.max_abs_diff == 1.0


_ORIGINAL_COLLATE = dl._pad_collate


def _shifted_collate(items, *, pad_id):
    """The component's collate with every label row moved one position left (a planted shift)."""
    batch = _ORIGINAL_COLLATE(items, pad_id=pad_id)
    labels = batch["labels"]
    batch["labels"] = torch.cat([labels[:, 1:], torch.full_like(labels[:, :1], -100)], dim=1)
    return batch


def test_planted_shifted_label_is_caught(monkeypatch):
    legacy = take(legacy_trainer("--data.max_seq_len=8").train_dataloader, 3)
    monkeypatch.setattr(dl, "_pad_collate", _shifted_collate)
    new = take(new_loader("--data.max_seq_len=8"), 3)
    diff = first_diff(legacy, new)
    expected_index = int((legacy[0]["labels"].reshape(-1) != new[0]["labels"].reshape(-1)).nonzero()[0])
    assert (diff.path, diff.kind, diff.index) == ("batches[0].labels", "bits", expected_index)
    assert diff.expected.split()[0] == str(int(legacy[0]["labels"].reshape(-1)[expected_index]))


def test_planted_rank_without_non_dp_division_is_caught():
    # tp=2 on 4 ranks: global rank 1 is dp rank 0; using the global rank reads dp rank 1's data.
    overrides = ("--train.accelerator.tp=2", "--data.max_seq_len=8")

    def legacy_side():
        return canonical.batches(take(legacy_trainer(*overrides, world_size=4, rank=1).train_dataloader, 4))

    def new_side(divide: bool):
        dp_rank = data_parallel_rank(1, 2) if divide else 1
        return canonical.batches(take(new_loader(*overrides, world_size=4, dp_rank=dp_rank), 4))

    registry = Registry(source="test_dataloader")
    good = registry.pair("rank_ok", kind="batches", legacy=legacy_side, new=lambda: new_side(True))
    bad = registry.pair("rank_planted", kind="batches", legacy=legacy_side, new=lambda: new_side(False))
    engine = Engine(registry, report_dir=None)
    assert engine.check(good, "torch").status == "pass"
    outcome = engine.check(bad, "torch")
    assert outcome.status == "fail"
    first = outcome.report.differences[0]
    legacy_ids = legacy_trainer(*overrides, world_size=4, rank=1).train_dataloader
    wrong_ids = new_loader(*overrides, world_size=4, dp_rank=1)
    a, b = take(legacy_ids, 1)[0]["input_ids"], take(wrong_ids, 1)[0]["input_ids"]
    expected_index = int((a.reshape(-1) != b.reshape(-1)).nonzero()[0])
    assert (first.path, first.kind, first.index) == ("batches[0].input_ids", "bits", expected_index)
    assert "batches[0].input_ids" in outcome.message
