"""The legacy -> new mapping table decides about every legacy field, and maps them faithfully."""

from __future__ import annotations

import pytest

from hyper_parallel.trainer.config import legacy_field_paths
from hyper_parallel.trainer.legacy_mapping import (
    DERIVED,
    FIELD_MAP,
    UNMAPPED,
    legacy_to_trainer_config,
    mapped_legacy_paths,
)
from parity.legacy_driver import legacy_args


def test_every_legacy_field_has_a_decision():
    """Adding a legacy field without a mapping decision fails here, naming the field."""
    undecided = sorted(set(legacy_field_paths()) - mapped_legacy_paths())
    assert not undecided, (
        f"legacy fields with no mapping decision (add to FIELD_MAP, DERIVED or UNMAPPED): {undecided}"
    )
    stale = sorted(mapped_legacy_paths() - set(legacy_field_paths()))
    assert not stale, f"the mapping names fields the legacy schema no longer has: {stale}"


def test_each_field_is_decided_once():
    sources = [rule.source for rule in FIELD_MAP]
    assert len(sources) == len(set(sources))
    assert not (set(sources) & set(UNMAPPED)) and not (set(sources) & set(DERIVED))
    assert not (set(UNMAPPED) & set(DERIVED))


def test_a_new_legacy_field_would_fail(monkeypatch):
    """The guard itself can fail: pretend the schema grew a field."""
    import hyper_parallel.trainer.config as legacy_config

    grown = [*legacy_field_paths(), "train.optimizer.shiny_new_knob"]
    monkeypatch.setattr(legacy_config, "legacy_field_paths", lambda *a, **k: grown)
    undecided = sorted(set(legacy_config.legacy_field_paths()) - mapped_legacy_paths())
    assert undecided == ["train.optimizer.shiny_new_knob"]


@pytest.mark.parametrize(
    ("override", "path", "expected"),
    [
        ("--train.optimizer.lr=0.5", "optimizer.lr", 0.5),
        ("--train.optimizer.betas=[0.8,0.9]", "optimizer.betas", (0.8, 0.9)),
        ("--train.optimizer.lr_warmup_ratio=0.25", "lr_scheduler.lr_warmup_ratio", 0.25),
        ("--train.optimizer.max_grad_norm=2.0", "training.max_norm", 2.0),
        ("--train.micro_batch_size=4", "training.local_batch_size", 4),
        ("--data.max_seq_len=32", "training.seq_len", 32),
        ("--train.gradient_checkpointing.activation_checkpoint=full", "activation_checkpoint.mode", "full"),
        ("--train.gradient_checkpointing.activation_checkpoint=off", "activation_checkpoint.mode", "none"),
        ("--train.accelerator.dp_shard=-1", "parallelism.data_parallel_shard_degree", -1),
        ("--train.tensorboard.log_steps=5", "metrics.tensorboard.log_steps", 5),
        ("--model.weights_path=/w", "tokenizer.path", "/w"),
        ("--model.freeze_modules=[embed]", "training.freeze_modules", ["embed"]),
    ],
)
def test_fields_land_where_the_table_says(override, path, expected):
    config = legacy_to_trainer_config(legacy_args(override))
    node = config
    for name in path.split("."):
        node = getattr(node, name)
    assert node == expected


def test_shard_degree_defaults_to_one_like_legacy():
    """Legacy dp_shard None and dp None mean 1 (not the new default -1); dp is the legacy dp_shard."""
    config = legacy_to_trainer_config(legacy_args(config=None))
    assert config.parallelism.data_parallel_shard_degree == 1
    config = legacy_to_trainer_config(
        legacy_args("--train.accelerator.dp_shard=null", "--train.accelerator.dp=2")
    )
    assert config.parallelism.data_parallel_shard_degree == 2


def test_model_spec_carries_the_merged_model_config():
    config = legacy_to_trainer_config(
        legacy_args(
            "--model.num_hidden_layers=3", "--model.config_overrides={head_dim: 16, mrope_section: [1, 1, 0]}"
        )
    )
    model = config.model_spec.model
    assert (model.num_hidden_layers, model.head_dim, model.vocab_size) == (3, 16, 2048)
    assert config.model_spec.flavor == "debug"


def test_each_legacy_field_lands_in_one_place_and_no_place_has_two_sources():
    """One setting, one place: a rule has one target, and no two rules write the same target."""
    targets = [rule.target for rule in FIELD_MAP]
    assert len(targets) == len(set(targets)), sorted({t for t in targets if targets.count(t) > 1})
    for moved in ("dataloader.max_seq_len", "dataloader.micro_batch_size", "dataloader.global_batch_size"):
        assert moved not in targets
