"""The new command line refuses values that wreck a run, and one broken recipe module breaks only itself."""

from __future__ import annotations

import pytest

from hyper_parallel.components.lr_scheduler import LRSchedulersContainer
from hyper_parallel.components.optimizer import OptimizersContainer
from hyper_parallel.config import CommandLineError, ConfigManager, TrainingConfig
from hyper_parallel.config.cross_checks import validate_cross_fields
from hyper_parallel.trainer.hyper_trainer import HyperTrainer
from hyper_parallel.trainer.legacy_mapping import config_manager

DEBUG = ("--module", "qwen3_5", "--config", "debug")


def _root(steps: int = 20, lr: float = 1e-3, **schedule) -> HyperTrainer.Config:
    return HyperTrainer.Config(
        training=TrainingConfig(steps=steps),
        optimizer=OptimizersContainer.Config(lr=lr),
        lr_scheduler=LRSchedulersContainer.Config(**schedule),
    )


@pytest.mark.parametrize(
    ("root", "match"),
    [
        (
            _root(lr_min=1e-2),
            r"'lr_scheduler\.lr_min': expected a number <= optimizer\.lr=0\.001 .*got 0\.01",
        ),
        (
            _root(lr_min=3e-3, lr_max=2e-3),
            r"'lr_scheduler\.lr_min': expected a number <= lr_scheduler\.lr_max=0\.002",
        ),
        (
            _root(lr_warmup_ratio=5.0),
            r"'lr_scheduler\.lr_warmup_ratio': expected a fraction .* in \[0, 1\], got 5\.0",
        ),
        (
            _root(warmup_steps=21),
            r"'lr_scheduler\.warmup_steps': expected at most training\.steps=20, got 21",
        ),
        (
            _root(decay_style="linear"),
            r"'lr_scheduler\.decay_style': expected one of 'cosine', 'constant', got 'linear'",
        ),
    ],
)
def test_cross_field_values_that_wreck_a_run_are_refused(root, match):
    with pytest.raises(ValueError, match=match):
        validate_cross_fields(root)


@pytest.mark.parametrize(
    "root",
    [
        _root(lr_min=1e-3),  # == lr
        _root(lr=0.0, lr_min=1e-3),  # lr 0: the schedule stays at 0
        _root(lr_min=1e-2, lr_max=1e-2),  # the floor is relative to lr_max when set
        _root(lr_warmup_ratio=1.0),
        _root(warmup_steps=20),
        _root(steps=0, warmup_steps=50),  # steps 0: the preset_pt data sets the horizon
        _root(decay_style="constant"),
    ],
)
def test_the_edges_are_accepted(root):
    validate_cross_fields(root)


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (("--lr_scheduler.lr_min", "1"), r"'lr_scheduler\.lr_min'"),
        (("--lr_scheduler.lr_warmup_ratio", "5"), r"'lr_scheduler\.lr_warmup_ratio'"),
        (
            ("--lr_scheduler.lr_warmup_ratio", "0", "--lr_scheduler.warmup_steps", "500"),
            r"'lr_scheduler\.warmup_steps'",
        ),
        (("--lr_scheduler.decay_style", "linear"), r"'lr_scheduler\.decay_style'"),
    ],
)
def test_config_manager_runs_the_cross_checks(flags, match):
    with pytest.raises(ValueError, match=match):
        config_manager().parse_args([*DEBUG, *flags])


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (("--training.seq_len", "1"), "--training.seq_len: expected an int >= 2, got 1"),
        (
            ("--lr_scheduler.lr_warmup_ratio", "0", "--lr_scheduler.warmup_steps", "-1"),
            "--lr_scheduler.warmup_steps: expected an int >= 0 or None, got -1",
        ),
        (
            ("--optimizer.loss_aggregation", "bogus"),
            "--optimizer.loss_aggregation: expected one of 'token_weighted', 'rank_average', got 'bogus'",
        ),
        (("--training.stepz", "5"), "--training.stepz: unknown flag"),
    ],
)
def test_component_field_errors_are_one_line_naming_the_flag(flags, line, capsys):
    """A refusal while tyro builds the tree is a CommandLineError (the entry points: one line, exit 2)."""
    with pytest.raises(CommandLineError) as info:
        config_manager().parse_args([*DEBUG, *flags])
    assert str(info.value).startswith(line) and "\n" not in str(info.value)
    assert capsys.readouterr().err == ""  # no box of tyro's


def test_a_flag_typo_suggests_the_field():
    with pytest.raises(
        CommandLineError, match=r"^--training\.stepz: unknown flag; did you mean --training\.steps\?$"
    ):
        config_manager().parse_args([*DEBUG, "--training.stepz", "5"])


# ----------------------------------------------------------------------------- recipe modules


@pytest.fixture
def recipes_with_a_broken_module(tmp_path, monkeypatch):
    package = tmp_path / "hp_mixed_recipes"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "good.py").write_text(
        "from hyper_parallel.trainer.hyper_trainer import HyperTrainer\nRECIPES = {'tiny': HyperTrainer.Config}\n"
    )
    (package / "broken.py").write_text("raise RuntimeError('recipe module bug\\nsecond line')\n")
    (package / "syntax.py").write_text("def (:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return ConfigManager(root=HyperTrainer.Config, recipe_package="hp_mixed_recipes")


def test_a_broken_recipe_module_breaks_only_itself(recipes_with_a_broken_module):
    manager = recipes_with_a_broken_module
    assert isinstance(manager.parse_args(["--module", "good", "--config", "tiny"]), HyperTrainer.Config)
    assert manager.available_recipes() == {"good": ["tiny"]}
    with pytest.raises(
        ImportError,
        match=r"^--module 'broken': recipe module 'hp_mixed_recipes\.broken' failed to import "
        r"\(RuntimeError: recipe module bug second line\); the other recipe modules are not affected$",
    ):
        manager.parse_args(["--module", "broken", "--config", "x"])
    with pytest.raises(ImportError, match=r"'hp_mixed_recipes\.syntax' failed to import \(SyntaxError"):
        manager.parse_args(["--module", "syntax", "--config", "x"])


def test_help_lists_the_good_recipes_and_names_the_broken_modules(recipes_with_a_broken_module, capsys):
    with pytest.raises(SystemExit) as info:
        recipes_with_a_broken_module.parse_args(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "good: tiny" in out
    assert "broken: (unusable) --module 'broken'" in out and "RuntimeError" in out
