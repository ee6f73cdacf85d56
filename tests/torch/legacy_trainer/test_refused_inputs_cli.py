"""Values that wreck a run stop both command lines before the first step: one line, exit status 2.

``scripts/train_lm.py CONFIG.yaml``, ``python -m hyper_parallel.train CONFIG.yaml`` and
``python -m hyper_parallel.train --module qwen3_5 --config debug``. Each of these inputs used to
train (a typo'd override warned and trained the default number of steps, a second ``train:``
key silently replaced the first, ``seq_len 1`` gave NaN losses) or failed with an unrelated error.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._subprocess import child_env
from tests.torch.legacy_trainer._recipes import DEBUG_YAML, REPO_ROOT

LEGACY = (str(REPO_ROOT / "scripts" / "train_lm.py"),)
NEW = ("-m", "hyper_parallel.train")
RECIPE = ("-m", "hyper_parallel.train", "--module", "qwen3_5", "--config", "debug")
DUP = "train: {max_steps: 3}\nmodel: {name: qwen3_5, flavor: debug}\ntrain: {seed: 1}\n"

# (id, command, YAML content or None for the debug recipe, extra tokens, regex of the error line)
CASES = [
    (
        "legacy-typo",
        LEGACY,
        None,
        ["--train.max_step=5"],
        r"Unknown config key 'train\.max_step'.*did you mean 'train\.max_steps'\?",
    ),
    (
        "legacy-loss-aggregation",
        LEGACY,
        None,
        ["--train.optimizer.loss_aggregation=bogus"],
        r"'train\.optimizer\.loss_aggregation': expected one of 'token_weighted', 'rank_average', got 'bogus'",
    ),
    (
        "legacy-lr-min",
        LEGACY,
        None,
        ["--train.optimizer.lr_min=0.01"],
        r"'train\.optimizer\.lr_min': expected a number <= train\.optimizer\.lr=0\.001",
    ),
    (
        "legacy-warmup",
        LEGACY,
        None,
        ["--train.optimizer.lr_warmup_ratio=5"],
        r"'train\.optimizer\.lr_warmup_ratio': expected a fraction of train\.max_steps in \[0, 1\], got 5\.0",
    ),
    (
        "legacy-seq-len",
        LEGACY,
        None,
        ["--data.max_seq_len=1"],
        r"'data\.max_seq_len': expected an int >= 2, got 1",
    ),
    (
        "legacy-duplicate-key",
        LEGACY,
        DUP,
        [],
        r"Config file '.*cfg\.yaml': key 'train' is given twice in one mapping \(line 1 and line 3\)",
    ),
    ("legacy-empty", LEGACY, "# nothing yet\n", [], r"Config file '.*cfg\.yaml' is empty"),
    (
        "new-yaml-typo",
        NEW,
        None,
        ["--train.max_step=5"],
        r"Unknown config key 'train\.max_step'.*did you mean 'train\.max_steps'\?",
    ),
    (
        "new-yaml-duplicate-key",
        NEW,
        DUP,
        [],
        r"key 'train' is given twice in one mapping \(line 1 and line 3\)",
    ),
    ("new-yaml-empty", NEW, "", [], r"Config file '.*cfg\.yaml' is empty"),
    (
        "new-yaml-decay-style",
        NEW,
        None,
        ["--train.optimizer.lr_decay_style=linear"],
        r"'train\.optimizer\.lr_decay_style': expected one of 'cosine', 'constant'",
    ),
    (
        "recipe-lr-min",
        RECIPE,
        None,
        ["--lr_scheduler.lr_min", "1"],
        r"'lr_scheduler\.lr_min': expected a number <= optimizer\.lr=0\.001",
    ),
    (
        "recipe-warmup-ratio",
        RECIPE,
        None,
        ["--lr_scheduler.lr_warmup_ratio", "5"],
        r"'lr_scheduler\.lr_warmup_ratio': expected a fraction",
    ),
    (
        "recipe-warmup-steps",
        RECIPE,
        None,
        ["--lr_scheduler.lr_warmup_ratio", "0", "--lr_scheduler.warmup_steps", "500"],
        r"'lr_scheduler\.warmup_steps': expected at most training\.steps=20, got 500",
    ),
]


def _argv(tmp_path: Path, command: tuple[str, ...], content: str | None, extra: list[str]) -> list[str]:
    """The tokens after the program: the YAML file (the debug recipe's, or ``content``) and ``extra``."""
    head = list(command[command.index("hyper_parallel.train") + 1 :]) if "-m" in command else []
    if command == RECIPE:
        return [*head, *extra]
    path = DEBUG_YAML
    if content is not None:
        path = tmp_path / "cfg.yaml"
        path.write_text(content)
    return [*head, str(path), *extra]


def _main(command: tuple[str, ...]):
    """The ``main(argv)`` of the command's entry point, in this process (a subprocess costs ~15 s)."""
    if command == LEGACY:
        spec = importlib.util.spec_from_file_location("train_lm_under_test", command[0])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.main
    from hyper_parallel.train import main

    return main


@pytest.mark.parametrize(
    ("command", "content", "extra", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refused_with_one_line_and_status_2(tmp_path, monkeypatch, capsys, command, content, extra, match):
    monkeypatch.delenv("HYPER_PARALLEL_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert _main(command)(_argv(tmp_path, command, content, extra)) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and re.search(match, errors[0]), errors
    assert not (tmp_path / "outputs").exists()  # stopped before anything was built


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--training.max_step", "5"], "--training.max_step: unknown flag; did you mean --training.steps?"),
        (["--training.seq_len", "1"], "--training.seq_len: expected an int >= 2, got 1 (int)"),
    ],
    ids=["recipe-typo", "recipe-seq-len"],
)
def test_recipe_flag_errors_exit_2_before_training(tmp_path, monkeypatch, capsys, extra, expected):
    """tyro's refusals too: one line ``<flag>: <what was expected>``, no box."""
    monkeypatch.delenv("HYPER_PARALLEL_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert _main(RECIPE)(_argv(tmp_path, RECIPE, None, extra)) == 2
    assert capsys.readouterr().err.splitlines() == [f"hyper_parallel.train: error: {expected}"]
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("case", ["legacy-typo", "recipe-lr-min"])
def test_as_a_subprocess_the_line_and_status_are_the_same(tmp_path, case):
    _, command, content, extra, match = next(c for c in CASES if c[0] == case)
    env = child_env()
    env.pop("HYPER_PARALLEL_DEBUG", None)
    program = list(command[:2]) if "-m" in command else list(command)
    proc = subprocess.run(
        [sys.executable, *program, *_argv(tmp_path, command, content, extra)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert re.search(match, errors[0]), errors[0]
