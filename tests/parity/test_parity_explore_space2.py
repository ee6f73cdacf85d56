"""The explore space reaches recipe defaults, value spellings, the legacy ``dp`` alias, preset data
with a tokenizer, and checkpoints of runs whose data lowered ``max_steps``; each reach can fail:

- the recipe command line passes only what differs from ``examples/debug/train.yaml`` (so the
  recipe's own defaults are compared) and spells bools/floats as the point says; a bool parser
  that stops accepting ``True`` makes the point's config refuse;
- ``dp_shard`` values ``dp`` and ``both``: the legacy mapping and the command line give the
  documented degree (dp_shard, else dp); one that prefers ``dp`` differs;
- preset_pt points may carry a tokenizer; their rows are ragged, so the pad id is in the batches;
- the compared checkpoint holds the manifest's run settings, and ``short`` points save a run
  whose data lowered ``max_steps`` (both trainers record the lowered value).
"""

from __future__ import annotations

import pytest

from parity.explore import cli_route, runner, space
from parity.suites import e2e_explore as ex


def _values(argv: list[str]) -> dict[str, str]:
    return {argv[i]: argv[i + 1] for i in range(4, len(argv) - 1) if argv[i].startswith("--")}


def test_cli_route_passes_only_what_differs_from_the_debug_yaml():
    argv = cli_route.cli_argv(
        ["--train.max_steps=3", "--train.optimizer.lr_warmup_ratio=0.1", "--train.optimizer.lr=1e-3"]
    )
    flags = _values(argv)
    assert flags == {"--training.steps": "3"}  # the warmup ratio and lr come from the recipe


@pytest.mark.parametrize(
    ("spelling", "true", "lr"), [("lower", "true", "0.004"), ("title", "True", "4e-03"), ("digit", "1", None)]
)
def test_cli_route_spells_bools_and_floats_that_parse_to_the_same_config(spelling, true, lr):
    overrides = ["--train.mixed_precision.enabled=true", "--train.optimizer.lr=0.004"]
    flags = _values(cli_route.cli_argv(overrides, spelling=spelling))
    assert flags["--training.enable_mixed_precision"] == true
    if lr is not None:
        assert flags["--optimizer.lr"] == lr
    else:
        assert float(flags["--optimizer.lr"]) == 0.004 and "e" in flags["--optimizer.lr"]
    config = cli_route.cli_config(overrides, spelling=spelling)
    assert config.training.enable_mixed_precision is True and config.optimizer.lr == 0.004


def test_a_case_sensitive_bool_parser_refuses_the_title_spelling(monkeypatch):
    from hyper_parallel.config import manager

    original = manager.parse_bool
    monkeypatch.setattr(manager, "parse_bool", lambda raw: original(raw) if raw == raw.lower() else 1 / 0)
    with pytest.raises((ValueError, ZeroDivisionError)):
        cli_route.cli_config(["--train.mixed_precision.enabled=true"], spelling="title")
    assert cli_route.cli_config(["--train.mixed_precision.enabled=true"]).training.enable_mixed_precision


def test_the_covering_set_spells_bools_on_the_command_line():
    assert any(p["route"] == "cli" and p["spelling"] == "title" and p["save_steps"] for p in ex.COVERING)
    assert any(p["route"] == "cli" and p["warmup"] == 0.1 and p["save_steps"] for p in ex.COVERING)


@pytest.mark.parametrize("form", ["dp", "both", "explicit"])
def test_dp_forms_give_dp_shard_on_every_route(form, tmp_path):
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config
    from parity.legacy_driver import legacy_args

    point = {**space.default_point(), "world": 2, "dp_shard": form}
    overrides = space.render(point, tmp_path)
    assert _values(cli_route.cli_argv(overrides))["--parallelism.data_parallel_shard_degree"] == "2"
    config = legacy_to_trainer_config(legacy_args(*overrides))
    assert config.parallelism.data_parallel_shard_degree == 2
    assert cli_route.yaml_config(overrides).parallelism.data_parallel_shard_degree == 2
    if form == "both":
        assert "--train.accelerator.dp=1" in overrides  # dp differs: preferring it would give 1


def test_a_mapping_that_prefers_dp_differs_on_a_both_point(tmp_path):
    from parity.legacy_driver import legacy_args

    point = {**space.default_point(), "world": 2, "dp_shard": "both"}
    acc = legacy_args(*space.render(point, tmp_path)).train.accelerator
    assert (acc.dp_shard if acc.dp_shard is not None else acc.dp) == 2
    assert (acc.dp if acc.dp is not None else acc.dp_shard) == 1


def test_preset_points_may_carry_a_tokenizer_and_their_rows_are_ragged(tmp_path):
    import torch

    assert space.pair_allowed("data", "preset", "tokenizer", "own_pad")
    assert not space.pair_allowed("data", "text_jsonl", "tokenizer", "none")
    assert any(p["data"] == "preset" and p["tokenizer"] == "own_pad" for p in ex.COVERING)
    point = {**space.default_point(), "data": "preset", "tokenizer": "own_pad"}
    overrides = space.render(point, tmp_path)
    path = next(t.partition("=")[2] for t in overrides if t.startswith("--data.train_path="))
    entries = torch.load(path, weights_only=True)
    lengths = {row["input_ids"].shape[1] for entry in entries for row in entry}
    assert len(lengths) > 1


def test_short_train_size_lowers_max_steps_and_the_checkpoint_records_it(tmp_path):
    """Both trainers save a run the data cut to fewer than ``steps`` steps; the compared checkpoint
    holds the manifest's max_steps (the lowered one), so one recording the configured 4 differs."""
    point = {
        **space.default_point(),
        "data": "text_key",
        "tokenizer": "eos_pad",
        "train_size": "short",
        "steps": 2,
        "micro": 1,
        "save_steps": 1,
    }
    assert space.valid(point), space.violations(point)
    assert any(p["train_size"] == "short" and p["save_steps"] for p in ex.COVERING)
    runs = runner.run_point(point)
    for side in runs.values():
        settings = side["checkpoint"]["state"]["manifest_settings"]
        assert settings["max_steps"] == 1 and len(side["losses"]) == 1
