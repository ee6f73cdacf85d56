"""HyperTrainer.Config and its command line: the tree, tyro parsing, recipes, the legacy path, the CLI surface.

The CLI surface (every flag tyro accepts for the root tree) is frozen in ``cli_surface.txt``
next to this file. A new or removed flag fails ``test_cli_surface_is_frozen``; when the change
is intended, regenerate the file with ``UPDATE_CLI_SURFACE=1 pytest <this file> -k cli_surface``.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import torch
import tyro

from hyper_parallel.components.checkpoint import CheckpointManager
from hyper_parallel.components.dataloader import (
    DummyDataLoader,
    HuggingFaceTextDataLoader,
    PresetPtDataLoader,
)
from hyper_parallel.components.loss import BaseLoss, ChunkedCELoss, CrossEntropyLoss
from hyper_parallel.components.lr_scheduler import LRSchedulersContainer
from hyper_parallel.components.metrics import MetricsProcessor
from hyper_parallel.components.optimizer import OptimizersContainer
from hyper_parallel.components.profiler import Profiler
from hyper_parallel.components.tokenizer import BaseTokenizer, HuggingFaceTokenizer
from hyper_parallel.config import (
    ActivationCheckpointConfig,
    CommandLineError,
    CommConfig,
    CompileConfig,
    ConfigManager,
    DebugConfig,
    ParallelismConfig,
    TrainingConfig,
)
from hyper_parallel.models.qwen3_5 import FLAVORS, Qwen3_5Config
from hyper_parallel.models.qwen3_5.parallelize import parallelize_qwen3_5_from_configs
from hyper_parallel.protocols import ModelSpec
from hyper_parallel.protocols.configurable import ConfigMixin
from hyper_parallel.recipes import qwen3_5 as qwen3_5_recipes
from hyper_parallel.trainer.config import LegacyTrainerArgs
from hyper_parallel.trainer.config import parse_args as legacy_parse_args
from hyper_parallel.trainer.hyper_trainer import HyperTrainer, TrainerConfig
from hyper_parallel.trainer.legacy_mapping import config_manager, legacy_to_trainer_config
from tests._subprocess import child_env

REPO = Path(__file__).resolve().parents[4]
DEBUG_YAML = REPO / "examples" / "debug" / "train.yaml"
SURFACE_FILE = Path(__file__).with_name("cli_surface.txt")
DEBUG = ["--module", "qwen3_5", "--config", "debug"]

# The RFC's field list (Part 5, section 3), in order: (name, annotation, type of the default).
RFC_FIELDS: list[tuple[str, Any, type | None]] = [
    ("model_spec", ModelSpec | None, type(None)),
    ("hf_assets_path", str, str),
    ("dump_folder", str, str),
    ("tokenizer", BaseTokenizer.Config, HuggingFaceTokenizer.Config),
    (
        "dataloader",  # each BaseDataLoader.Config subclass is a CLI subcommand
        DummyDataLoader.Config | HuggingFaceTextDataLoader.Config | PresetPtDataLoader.Config,
        DummyDataLoader.Config,
    ),
    ("optimizer", OptimizersContainer.Config, OptimizersContainer.Config),
    ("lr_scheduler", LRSchedulersContainer.Config, LRSchedulersContainer.Config),
    ("loss", BaseLoss.Config, CrossEntropyLoss.Config),
    ("checkpoint", CheckpointManager.Config, CheckpointManager.Config),
    ("metrics", MetricsProcessor.Config, MetricsProcessor.Config),
    ("profiler", Profiler.Config, Profiler.Config),
    ("training", TrainingConfig, TrainingConfig),
    ("parallelism", ParallelismConfig, ParallelismConfig),
    ("activation_checkpoint", ActivationCheckpointConfig, ActivationCheckpointConfig),
    ("compile", CompileConfig, CompileConfig),
    ("comm", CommConfig, CommConfig),
    ("debug", DebugConfig, DebugConfig),
]


def parse(*argv: str) -> TrainerConfig:
    return config_manager().parse_args(list(argv))


def config_types(config: ConfigMixin) -> list[str]:
    """The concrete class of every config in the tree (``to_dict`` does not show classes)."""
    return [type(c).__qualname__ for c in config.traverse(ConfigMixin)]


def flags_from_dict(tree: dict[str, Any], prefix: str = "") -> list[str]:
    """``{"training": {"steps": 3}}`` -> ``["--training.steps", "3"]`` in this CLI's flag style."""
    flags: list[str] = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            flags += flags_from_dict(value, f"{path}.")
        elif isinstance(value, list):
            flags += [f"--{path}", *(_flag_value(item) for item in value)]
        else:
            flags += [f"--{path}", _flag_value(value)]
    return flags


def _flag_value(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def exit_code_and_stderr(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """A refused command line: its exit status at the entry point (2) and its one line."""
    with pytest.raises(CommandLineError) as info:
        parse(*argv)
    assert capsys.readouterr().err == "" and "\n" not in str(info.value)  # no box of tyro's
    return 2, str(info.value)


def subprocess_env(**extra: str) -> dict[str, str]:
    env = child_env(**extra)
    env.pop("HYPER_PARALLEL_PLATFORM", None)  # the entry point must default it
    return env


# ----------------------------------------------------------------------------- the tree


def test_hyper_trainer_config_is_the_root_tree():
    assert HyperTrainer.Config is TrainerConfig
    assert TrainerConfig._owner is HyperTrainer


def test_every_rfc_field_is_present_in_order_with_its_default_type():
    fields = dataclasses.fields(TrainerConfig)
    assert [f.name for f in fields] == [name for name, _, _ in RFC_FIELDS]
    hints = typing.get_type_hints(TrainerConfig)
    defaults = TrainerConfig()
    for name, annotation, default_type in RFC_FIELDS:
        assert hints[name] == annotation, name
        assert type(getattr(defaults, name)) is default_type, name
    assert defaults.hf_assets_path == "outputs/hf_assets"
    assert defaults.dump_folder == "outputs"


def test_model_spec_is_annotated_as_hidden_from_tyro():
    hint = typing.get_type_hints(TrainerConfig, include_extras=True)["model_spec"]
    assert typing.get_origin(hint) is typing.Annotated
    assert tyro.conf.Suppress in typing.get_args(hint)[1:]


def test_defaults_are_fresh_per_instance():
    a, b = TrainerConfig(), TrainerConfig()
    for name, _, default_type in RFC_FIELDS:
        if dataclasses.is_dataclass(default_type):
            assert getattr(a, name) is not getattr(b, name), name


# ----------------------------------------------------------------------------- tyro: precedence


def test_no_arguments_give_the_root_defaults():
    config = parse()
    assert config.to_dict() == TrainerConfig().to_dict()
    assert config_types(config) == config_types(TrainerConfig())


def test_recipe_beats_defaults():
    config = parse(*DEBUG)
    assert config.to_dict() == qwen3_5_recipes.debug().to_dict()
    assert config.training.steps == 20 != TrainerConfig().training.steps


def test_command_line_beats_recipe_and_keeps_the_rest():
    config = parse(
        *DEBUG, "--training.steps", "10", "--optimizer.lr", "0.01", "--dataloader.shuffle", "false"
    )
    assert (config.training.steps, config.optimizer.lr, config.dataloader.shuffle) == (10, 0.01, False)
    expected = qwen3_5_recipes.debug()
    expected = expected.replace(
        training=expected.training.replace(steps=10),
        optimizer=expected.optimizer.replace(lr=0.01),
        dataloader=expected.dataloader.replace(shuffle=False),
    )
    assert config.to_dict() == expected.to_dict()


def test_selectors_and_flags_take_either_separator_and_either_order():
    a = parse(*DEBUG, "--training.steps", "10", "--optimizer.weight_decay", "0.5")
    b = parse("--training.steps=10", "--config=debug", "--optimizer.weight-decay=0.5", "--module=qwen3_5")
    assert a.to_dict() == b.to_dict()
    assert (a.training.steps, a.optimizer.weight_decay) == (10, 0.5)


def test_value_kinds_bool_none_tuple_list_literal():
    config = parse(
        *DEBUG,
        "--debug.deterministic", "false",
        "--checkpoint.save_hf_weights=No",
        "--profiler.enabled", "ON",
        "--optimizer.foreach", "true",
        "--optimizer.betas", "0.8", "0.95",
        "--training.freeze_modules", "embed", "norm",
        "--training.mixed_precision_output", "bf16",
        "--parallelism.ulysses_degree", "None",
        "--activation_checkpoint.mode", "full",
        "--compile.components", "model",
    )  # fmt: skip
    assert config.debug.deterministic is False  # the recipe's True is overridden
    assert config.checkpoint.save_hf_weights is False
    assert config.profiler.enabled is True
    assert config.optimizer.foreach is True
    assert config.optimizer.betas == (0.8, 0.95)
    assert config.training.freeze_modules == ["embed", "norm"]
    assert config.training.mixed_precision_output == "bf16"
    assert config.parallelism.ulysses_degree is None
    assert config.activation_checkpoint.mode == "full"
    assert config.compile.components == ["model"]


def test_nested_value_config_under_a_component():
    config = parse("--metrics.tensorboard.enabled", "true", "--metrics.wandb.run_name", "r1")
    assert config.metrics.tensorboard.enabled is True
    assert config.metrics.wandb.run_name == "r1"


# ----------------------------------------------------------------------------- tyro: polymorphism


@pytest.fixture
def poly_module(monkeypatch: pytest.MonkeyPatch) -> str:
    """A recipe module (dotted ``--module`` path) whose defaults are concrete subclass Configs."""

    def chunked() -> TrainerConfig:
        return TrainerConfig(
            loss=ChunkedCELoss.Config(chunks=4),
            dataloader=DummyDataLoader.Config(shuffle=False),
        )

    name = "hp_test_recipes.poly"
    module = types.ModuleType(name)
    module.RECIPES = {"chunked": chunked}
    monkeypatch.setitem(sys.modules, name, module)
    return name


def test_polymorphic_defaults_keep_their_concrete_class():
    config = parse("--tokenizer.path", "/tok", "--loss.ignore_index", "-1")
    assert type(config.tokenizer) is HuggingFaceTokenizer.Config  # field typed BaseTokenizer.Config
    assert type(config.loss) is CrossEntropyLoss.Config  # field typed BaseLoss.Config
    assert (config.tokenizer.path, config.loss.ignore_index) == ("/tok", -1)


def test_polymorphic_recipe_default_exposes_the_subclass_fields(poly_module, capsys):
    config = parse("--module", poly_module, "--config", "chunked", "--loss.chunks", "3")
    assert type(config.loss) is ChunkedCELoss.Config and config.loss.chunks == 3
    assert type(config.dataloader) is DummyDataLoader.Config and config.dataloader.shuffle is False
    # The root tree's loss is CrossEntropyLoss: it has no chunks.
    code, err = exit_code_and_stderr(capsys, "--loss.chunks", "3")
    assert code == 2 and "--loss.chunks" in err


def test_the_dataloader_subcommand_picks_the_config_class():
    assert type(parse().dataloader) is DummyDataLoader.Config  # the default subcommand
    config = parse("dataloader:preset_pt", "--dataloader.train_path", "p.pt", "--training.steps", "3")
    assert type(config.dataloader) is PresetPtDataLoader.Config
    assert (config.dataloader.train_path, config.training.steps) == ("p.pt", 3)
    config = parse("--training.steps", "3", "dataloader:hf_text", "--dataloader.format", "json_file")
    assert (
        type(config.dataloader) is HuggingFaceTextDataLoader.Config
        and config.dataloader.format == "json_file"
    )
    assert not hasattr(config.dataloader, "type")


# ----------------------------------------------------------------------------- to_dict round trip


def test_to_dict_round_trips_through_generated_flags():
    parsed = parse(
        *DEBUG, "--training.steps", "7", "--optimizer.betas", "0.8", "0.95", "--compile.components"
    )
    tree = parsed.to_dict()
    tree.pop("model_spec")  # not a CLI value: it comes from the recipe
    rebuilt = parse(*flags_from_dict(tree))  # from the root defaults, not the recipe
    assert rebuilt.to_dict() == {**tree, "model_spec": None}
    assert config_types(rebuilt) == config_types(parsed)
    again = parse(*DEBUG, *flags_from_dict(tree))
    assert again.to_dict() == parsed.to_dict()


def test_to_dict_round_trips_through_replace():
    parsed = parse(*DEBUG, "--lr_scheduler.lr_min", "0.0002")
    assert parsed.replace().to_dict() == parsed.to_dict()
    assert parsed.replace(debug=DebugConfig(seed=3)).to_dict() == {
        **parsed.to_dict(),
        "debug": DebugConfig(seed=3).to_dict(),
    }


# ----------------------------------------------------------------------------- errors


def test_unknown_flag_is_named_with_a_suggestion(capsys):
    code, err = exit_code_and_stderr(capsys, *DEBUG, "--training.stepz", "3")
    assert code == 2
    assert "--training.stepz" in err and "--training.steps" in err


def test_wrong_type_names_the_flag(capsys):
    code, err = exit_code_and_stderr(capsys, "--training.steps", "abc")
    assert code == 2 and "--training.steps" in err and "INT" in err


def test_bad_bool_names_the_flag_and_the_spellings(capsys):
    code, err = exit_code_and_stderr(capsys, "--debug.deterministic", "maybe")
    assert code == 2 and "--debug.deterministic" in err and "'maybe'" in err


def test_value_rejected_by_the_config_check_names_the_field(capsys):
    code, err = exit_code_and_stderr(capsys, "--training.steps", "-1")
    assert code == 2 and err.startswith("--training.steps: expected an int >= 0, got -1")


def test_bad_choice_names_the_choices(capsys):
    code, err = exit_code_and_stderr(capsys, "--activation_checkpoint.mode", "most")
    assert code == 2 and "--activation_checkpoint.mode" in err and "selective" in err


def test_build_kwarg_overlapping_a_field_is_refused():
    with pytest.raises(ValueError, match=r"OptimizersContainer\.Config\.build\(\).*\blr\b"):
        OptimizersContainer.Config().build(lr=1.0, model_parts=[torch.nn.Linear(2, 2)])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--module", "nope"], r"^--module: expected one of qwen3_5 .*got 'nope'"),
        (["--module", "qwen3_5"], r"^--config: expected one of: debug .*missing$"),
        (["--module", "qwen3_5", "--config", "nope"], r"^--config: expected one of: debug .*got 'nope'$"),
        (["--config", "debug"], r"^--config: 'debug' needs --module"),
        (["--module"], r"^--module: expected a value"),
        (["--module", "qwen3_5", "--module", "x"], r"^--module: expected once, given twice"),
        ([str(DEBUG_YAML), "--module", "qwen3_5"], r"^--module: cannot be combined with the legacy YAML"),
    ],
)
def test_bad_recipe_selection_is_a_value_error(argv, message):
    with pytest.raises(ValueError, match=message):
        parse(*argv)


def test_a_recipe_module_whose_own_import_fails_is_not_reported_as_unknown(tmp_path, monkeypatch):
    package = tmp_path / "hp_broken_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "recipes.py").write_text("import hp_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ImportError,
        match=r"'hp_broken_pkg\.recipes' failed to import \(ModuleNotFoundError: .*hp_no_such_dependency",
    ):
        parse("--module", "hp_broken_pkg.recipes", "--config", "x")


def test_tyro_missing_is_a_clear_import_error_and_the_yaml_path_still_works(monkeypatch):
    monkeypatch.setitem(sys.modules, "tyro", None)
    with pytest.raises(ImportError, match=r"needs tyro"):
        parse(*DEBUG)
    assert parse(str(DEBUG_YAML)).training.steps == 20


# ----------------------------------------------------------------------------- model_spec


def test_model_spec_is_hidden_from_the_cli_but_kept_from_the_recipe(capsys):
    flags = config_manager().cli_flags()
    assert not [f for f in flags if "model_spec" in f or "model-spec" in f]
    spec = parse(*DEBUG).model_spec
    assert spec.name == "qwen3_5" and spec.flavor == "debug"
    assert spec.parallelize_fn is parallelize_qwen3_5_from_configs
    code, err = exit_code_and_stderr(capsys, *DEBUG, "--model_spec", "x")
    assert code == 2 and "--model_spec" in err


# ----------------------------------------------------------------------------- recipes and the legacy path


def test_debug_recipe_equals_the_debug_yaml():
    legacy = legacy_to_trainer_config(legacy_parse_args(LegacyTrainerArgs, [str(DEBUG_YAML)]))
    recipe = qwen3_5_recipes.debug()
    assert recipe.to_dict() == legacy.to_dict()
    assert config_types(recipe) == config_types(legacy)
    assert recipe.model_spec.model == Qwen3_5Config(**FLAVORS["debug"])
    assert dataclasses.replace(recipe.model_spec, model=None) == dataclasses.replace(
        legacy.model_spec, model=None
    )


def test_recipes_return_a_fresh_tree_per_call():
    a, b = qwen3_5_recipes.debug(), qwen3_5_recipes.debug()
    assert a is not b and a.training is not b.training and a.model_spec.model is not b.model_spec.model


def test_recipe_registry_lists_the_debug_recipe():
    manager = config_manager()
    assert manager.available_recipes() == {"qwen3_5": ["debug"]}
    assert "qwen3_5: debug" in manager.describe()
    by_path = parse("--module", "hyper_parallel.recipes.qwen3_5", "--config", "debug")
    assert by_path.to_dict() == parse(*DEBUG).to_dict()


@pytest.mark.parametrize(
    "overrides",
    [[], ["--train.max_steps=5", "--train.optimizer.lr=0.02", "--data.max_seq_len=32"]],
    ids=["plain", "overrides"],
)
def test_legacy_yaml_through_the_manager_equals_legacy_to_trainer_config(overrides):
    argv = [str(DEBUG_YAML), *overrides]
    expected = legacy_to_trainer_config(legacy_parse_args(LegacyTrainerArgs, argv))
    got = parse(*argv)
    assert isinstance(got, TrainerConfig)
    assert got.to_dict() == expected.to_dict()
    assert config_types(got) == config_types(expected)
    # The overrides may also come before the file.
    assert parse(*overrides, str(DEBUG_YAML)).to_dict() == expected.to_dict()


def test_a_yaml_named_flag_value_is_not_taken_for_a_legacy_file():
    config = parse(*DEBUG, "--checkpoint.output_dir", "runs/a.yaml")
    assert config.checkpoint.output_dir == "runs/a.yaml"


def test_legacy_yaml_errors_name_the_field():
    with pytest.raises(ValueError, match=r"train\.max_steps"):
        parse(str(DEBUG_YAML), "--train.max_steps=abc")


# ----------------------------------------------------------------------------- CLI surface freeze


def _surface_text(flags: list[str]) -> str:
    header = [
        "# Every flag `python -m hyper_parallel.train` accepts for the root HyperTrainer.Config tree.",
        "# Checked by test_trainer_config.py::test_cli_surface_is_frozen. To change it on purpose:",
        "#   UPDATE_CLI_SURFACE=1 pytest tests/torch/ut/trainer/test_trainer_config.py -k cli_surface",
    ]
    return "\n".join([*header, *flags]) + "\n"


def test_cli_surface_is_frozen():
    flags = config_manager().cli_flags()
    if os.environ.get("UPDATE_CLI_SURFACE") == "1":
        SURFACE_FILE.write_text(_surface_text(flags))
    lines = SURFACE_FILE.read_text().splitlines() if SURFACE_FILE.exists() else []
    frozen = [line for line in lines if line and not line.startswith("#")]
    added, removed = sorted(set(flags) - set(frozen)), sorted(set(frozen) - set(flags))
    assert not added and not removed and frozen == flags, (
        f"the CLI surface changed: added {added or 'nothing'}, removed {removed or 'nothing'}"
        f"{'' if added or removed else ' (order/duplicates differ)'}. If intended, regenerate "
        f"{SURFACE_FILE.name} with: UPDATE_CLI_SURFACE=1 pytest {Path(__file__).relative_to(REPO)} -k cli_surface"
    )


def test_cli_surface_covers_every_leaf_field():
    tree = TrainerConfig().to_dict()
    tree.pop("model_spec")
    leaves = {flag for flag in flags_from_dict(tree) if flag.startswith("--")}
    assert leaves <= set(config_manager().cli_flags())


# ----------------------------------------------------------------------------- the entry point


def test_entry_point_help_lists_the_tree_and_the_recipes():
    result = subprocess.run(
        [sys.executable, "-m", "hyper_parallel.train", "--help"],
        cwd=REPO,
        env=subprocess_env(COLUMNS="120"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for expected in ("--training.steps", "--optimizer.lr", "dataloader:hf_text", "qwen3_5: debug"):
        assert expected in result.stdout, expected


def test_entry_point_reports_a_bad_selection_as_a_usage_error(capsys):
    from hyper_parallel.train import main

    assert main(["--module", "qwen3_5", "--config", "nope"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "hyper_parallel.train: error: --config: expected one of: debug (the recipes of --module 'qwen3_5'), got 'nope'"
    ]


def test_entry_point_trains_the_debug_recipe(tmp_path):
    out = tmp_path / "ckpt"
    argv = [
        *DEBUG,
        "--training.steps",
        "2",
        "--checkpoint.save_steps",
        "0",
        "--checkpoint.output_dir",
        str(out),
    ]
    result = subprocess.run(
        [sys.executable, "-m", "hyper_parallel.train", *argv],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "step=2 |" in result.stderr and "step=3 |" not in result.stderr
    assert "Training completed" in result.stderr
    assert not out.exists()  # save_steps 0 turns saving off, also at train end


def test_config_package_names_no_trainer_class():
    """Downward flow: config/ gets the root class and the YAML path as objects, never by name."""
    import ast

    import hyper_parallel.config.manager as manager_module

    tree = ast.parse(Path(manager_module.__file__).read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    names = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]
    assert not [n for n in names if "hyper_parallel.trainer" in n]  # no "module:Class" targets
    manager = config_manager()
    assert manager.root_class() is HyperTrainer.Config
    recipes_only = ConfigManager(root=HyperTrainer.Config)
    with pytest.raises(ValueError, match="takes no legacy YAML file"):
        recipes_only.parse_args([str(DEBUG_YAML)])
    assert type(recipes_only.parse_args(["--training.steps", "3"])) is HyperTrainer.Config
