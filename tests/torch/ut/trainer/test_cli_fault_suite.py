"""Standing fault suite of both command lines: every numeric and closed-set field, drawn values.

The fields come from ``parity.config_sweep`` (the walk of the legacy schema ``LegacyTrainerArgs`` and
the new ``HyperTrainer.Config`` tree of the debug recipe, each dataloader subcommand included), so
a new field is covered as soon as it exists. A field is drawn when it is numeric (int, float, a
tuple of numbers), a closed set (``Literal``, bool) or a string (the legacy schema and several
Configs check their closed sets of strings in ``__post_init__``). Each drawn value is in range, at
an edge, out of range or of the wrong type, and the command line must do one of two things:

- parse and validate (exit 0, no error line), or
- refuse with exactly one line ``<prog>: error: ...`` that names a drawn field, exit status 2, no
  traceback and no multi-line box.

Three ways in: ``scripts/train_lm.py CONFIG.yaml --a.b=v``, ``python -m hyper_parallel.train
CONFIG.yaml --a.b=v`` and ``python -m hyper_parallel.train --module qwen3_5 --config debug --a.b v``.
The quick part runs the entry points' own parse step (``parse_config``) under their own error
reporting (``run_main``) in this process; the ``slow`` part trains two steps of a drawn valid
config in a subprocess of each entry point and checks that the losses are finite.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hyper_parallel.entry import DEBUG_ENV
from parity.config_sweep import (
    LEGACY_PROG,
    NEW_PROG,
    RECIPE,
    Field,
    Outcome,
    default_subcommand,
    legacy_fields,
    legacy_tokens,
    new_fields,
    parse_legacy,
    parse_new,
    recipe_default,
    recipe_subcommands,
    run_parse,
    sweep_values,
    walk,
)
from parity.legacy_driver import DEBUG_YAML, REPO_ROOT
from tests._subprocess import child_env

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
)

# Examples per drawn test: a multiple of the profile's (dev 25, ci 50, nightly 1000): 150 in dev.
EXAMPLES = settings.default.max_examples * 6

# ----------------------------------------------------------------------------- the fields


def test_the_walk_finds_every_numeric_and_closed_set_field():
    """The walk sees the fields the CLIs take: spot checks, and every walked new field is a flag."""
    from hyper_parallel.trainer.legacy_mapping import config_manager

    legacy = {f.path: f for f in legacy_fields()}
    new = {f.path: f for f in new_fields()}
    assert legacy["train.max_steps"].kind == "int" and legacy["train.optimizer.lr"].kind == "float"
    assert legacy["train.optimizer.betas"].kind == "numbers" and legacy["data.train_size"].optional
    assert new["training.steps"].kind == "int" and new["activation_checkpoint.mode"].kind == "choice"
    assert new["training.mixed_precision_output"].optional and new["optimizer.betas"].kind == "numbers"
    assert {f.subcommand for f in new_fields()} >= {None, "dataloader:hf_text", "dataloader:preset_pt"}
    assert len(legacy) >= 80 and len(new) >= 60, (len(legacy), len(new))
    # Every leaf of the walk that is a number, a closed set or a string is a flag of the CLI.
    walked = {f"--{f.path}" for f in walk(recipe_default())}
    assert walked <= set(config_manager().cli_flags(recipe_default()))


# ----------------------------------------------------------------------------- the values

# What a user may type for a value of each kind, by class: (in range, edge, out of range, wrong type).
_WRONG_NUMBER = ["abc", "", "1,5", "true", "[1]", "0x10", "one", "1e", "--", "1_0_"]
_BOOL_OK = ["true", "false", "True", "FALSE", "1", "0", "yes", "no", "on", "off"]
_BOOL_BAD = ["maybe", "2", "", "-1", "truee", "1.0", "[true]"]


def _number(value: float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _values(field: Field) -> st.SearchStrategy[list[str]]:
    """Drawn value tokens for ``field`` (one token; ``numbers`` fields: one per element)."""
    classes: list[st.SearchStrategy[str]]
    if field.kind == "int":
        classes = [
            st.integers(1, 64).map(str),
            st.sampled_from(["0", "1", "-1", "2", str(2**31 - 1), str(2**31), str(2**63), "+3", "007"]),
            st.integers(max_value=-1).map(str) | st.integers(min_value=10**12).map(str),
            st.sampled_from(["1.5", "1e3", "nan", "inf", "2.0", *_WRONG_NUMBER]),
        ]
    elif field.kind == "float":
        classes = [
            st.floats(0.0, 1.0, allow_nan=False).map(_number),
            st.sampled_from(["0", "0.0", "1", "-0.0", "1e-300", "5e-324", "1e308", "1e309", "inf", "nan"]),
            st.floats(max_value=-1e-12, allow_infinity=False).map(_number) | st.just("-inf"),
            st.sampled_from(_WRONG_NUMBER),
        ]
    elif field.kind == "bool":
        classes = [st.sampled_from(_BOOL_OK), st.sampled_from(_BOOL_BAD)]
    elif field.kind == "choice":
        choices = list(field.choices)
        classes = [
            st.sampled_from(choices),
            st.sampled_from(choices).map(str.upper),
            st.sampled_from(["bogus", "", "none ", "0", *[c + "x" for c in choices]]),
        ]
    elif field.kind == "str":
        classes = [st.sampled_from(["bogus", "", "UPPER", "0", "-", "a b", "ümlaut", "none"])]
    else:  # numbers: the tuple's length, one more or one fewer, numbers in or out of [0, 1)
        length = int(field.choices[0])
        element = st.floats(0.0, 0.999, allow_nan=False).map(_number) | st.sampled_from(
            ["0", "1", "1.0", "-0.5", "nan", "inf", "2", "abc", ""]
        )
        return st.lists(element, min_size=max(0, length - 1), max_size=length + 1) | st.lists(
            element, min_size=length, max_size=length
        )
    if field.optional:
        classes.append(st.sampled_from(["None", "null", "none", "~"]))
    return st.one_of(*classes).map(lambda token: [token])


@st.composite
def _assignments(draw: st.DrawFn, fields: tuple[Field, ...]) -> list[tuple[Field, list[str]]]:
    chosen = draw(st.lists(st.sampled_from(fields), min_size=1, max_size=3, unique_by=lambda f: f.path))
    return [(field, draw(_values(field))) for field in chosen]


def _recipe_tokens(assigned: list[tuple[Field, list[str]]], subcommand: str | None, data: Any) -> list[str]:
    """``--a.b v`` (or ``--a.b=v``); the subcommand first, the other flags may follow it."""
    tokens = [subcommand] if subcommand is not None else []
    for field, values in assigned:
        if len(values) == 1 and data.draw(st.booleans(), label=f"{field.path} as --flag=value"):
            tokens.append(f"--{field.path}={values[0]}")
        else:
            tokens += [f"--{field.path}", *values]
    return tokens


# ----------------------------------------------------------------------------- the entry points


@pytest.fixture(scope="module", autouse=True)
def _no_debug_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(DEBUG_ENV, raising=False)
        yield


def _names(line: str, field: Field) -> bool:
    """``line`` names ``field``: its flag, its dotted path or its own name as a word."""
    return re.search(rf"(?<!\w){re.escape(field.leaf)}(?!\w)", line) is not None


def check_outcome(prog: str, outcome: Outcome, argv: list[str], fields: list[Field]) -> None:
    """Parsed (0, no error line), or refused: one line naming a drawn field, status 2."""
    context = f"argv={argv!r}\nstderr={outcome.err[-3000:]}"
    assert "Traceback" not in outcome.err, context
    assert not any(box in outcome.err for box in "╭╰│"), f"a multi-line box: {context}"
    if outcome.code == 0:
        assert outcome.errors == [], context
        return
    assert outcome.code == 2, context
    assert len(outcome.errors) == 1, context
    (line,) = outcome.errors
    assert line.startswith(f"{prog}: error: "), context
    assert any(_names(line, field) for field in fields), f"names no drawn field: {context}"


# ----------------------------------------------------------------------------- drawn: in process


@pytest.mark.parametrize(
    ("prog", "parse"), [(LEGACY_PROG, parse_legacy), (NEW_PROG, parse_new)], ids=["legacy_cli", "new_cli"]
)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_legacy_yaml_parses_or_refuses_in_one_line(prog, parse, data):
    """Both entry points take the legacy YAML with drawn overrides."""
    pairs = data.draw(_assignments(legacy_fields()))
    argv = [str(DEBUG_YAML), *legacy_tokens(pairs)]
    outcome = run_parse(prog, parse, argv)
    event(f"exit status {outcome.code}")
    check_outcome(prog, outcome, argv, [f for f, _ in pairs])


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_new_cli_with_a_recipe_parses_or_refuses_in_one_line(data):
    subcommand = data.draw(st.sampled_from(recipe_subcommands()), label="subcommand")
    own = default_subcommand() if subcommand is None else subcommand
    fields = tuple(f for f in new_fields() if f.subcommand in (None, own))
    pairs = data.draw(_assignments(fields))
    argv = [*RECIPE, *_recipe_tokens(pairs, subcommand, data)]
    outcome = run_parse(NEW_PROG, parse_new, argv)
    event(f"exit status {outcome.code}")
    check_outcome(NEW_PROG, outcome, argv, [f for f, _ in pairs])
    if outcome.code == 2 and "Invalid value for '" not in outcome.errors[0]:
        # A refusal of the command line itself: "<flag>: <what was expected>", the flag one drawn.
        flag = outcome.errors[0].removeprefix(f"{NEW_PROG}: error: ").partition(": ")[0]
        assert flag in {f"--{f.path}" for f, _ in pairs} | {f.path.partition(".")[0] for f, _ in pairs}, (
            outcome
        )


# ----------------------------------------------------------------------------- every field once


@pytest.mark.parametrize("route", ["legacy", "new-yaml"])
def test_every_legacy_field_once(route):
    """Each legacy field, once per value class, so that none is left to the draw."""
    prog, parse = (LEGACY_PROG, parse_legacy) if route == "legacy" else (NEW_PROG, parse_new)
    for field in legacy_fields():
        for values in sweep_values(field):
            argv = [str(DEBUG_YAML), *legacy_tokens([(field, values)])]
            check_outcome(prog, run_parse(prog, parse, argv), argv, [field])


def test_every_recipe_field_once():
    for field in new_fields():
        head = [] if field.subcommand in (None, default_subcommand()) else [field.subcommand]
        for values in sweep_values(field):
            argv = [*RECIPE, *head, f"--{field.path}", *values]
            check_outcome(NEW_PROG, run_parse(NEW_PROG, parse_new, argv), argv, [field])


# ----------------------------------------------------------------------------- refusals by kind


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--training.stepz", "3"], "--training.stepz: unknown flag; did you mean --training.steps?"),
        (["--training.steps", "abc"], "--training.steps: expected INT, got 'abc'"),
        (["--training.steps"], "--training.steps: expected a value (INT)"),
        (["--training.steps", "-3"], "--training.steps: expected an int >= 0, got -3"),
        (
            ["--activation_checkpoint.mode", "bogus"],
            "--activation_checkpoint.mode: expected one of none, full, selective, got 'bogus'",
        ),
        (["--optimizer.betas", "0.9"], "--optimizer.betas: expected 2 values (FLOAT FLOAT)"),
        (["--debug.deterministic", "maybe"], "--debug.deterministic: expected a boolean"),
        (["--training.steps", "3", "4"], "--training.steps: takes one value; got the extra value '4'"),
        (["dataloader:bogus"], "dataloader:bogus: unknown subcommand; expected one of dataloader:dummy, "),
        (["--module", "x"], "--module: expected once, given twice ('qwen3_5' and 'x')"),
    ],
    ids=[
        "unknown-flag",
        "wrong-type",
        "missing-value",
        "post-init",
        "closed-set",
        "too-few",
        "bad-bool",
        "extra-value",
        "unknown-subcommand",
        "selector-twice",
    ],
)
def test_recipe_refusals_are_one_line_naming_the_flag(extra, line):
    argv = [*RECIPE, *extra]
    outcome = run_parse(NEW_PROG, parse_new, argv)
    assert outcome.code == 2 and outcome.errors == [t for t in outcome.err.splitlines() if t.strip()], outcome
    assert outcome.errors[0].startswith(f"{NEW_PROG}: error: {line}"), outcome.errors
    assert "HYPER_PARALLEL_DEBUG" not in outcome.errors[0]  # a flag refusal has no traceback to offer


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--train.max_step=5"], r"Unknown config key 'train\.max_step'.*did you mean 'train\.max_steps'\?"),
        (["--train.max_steps=abc"], r"'train\.max_steps': expected int, got 'abc'"),
        (["--train.optimizer.lr=-1"], r"'train\.optimizer\.lr': expected a finite number >= 0, got -1\.0"),
        (
            ["--train.mixed_precision.param_dtype=int8"],
            r"'train\.mixed_precision\.param_dtype': expected one of",
        ),
        (["--train.max_steps"], r"Malformed command-line override '--train\.max_steps'"),
        (["--foo.bar=1"], r"only 'model', 'data', 'train' are allowed: 'foo': not allowed"),
    ],
    ids=["unknown-key", "wrong-type", "out-of-range", "closed-set", "missing-value", "top-level-key"],
)
@pytest.mark.parametrize("route", ["legacy", "new-yaml"])
def test_legacy_refusals_are_one_line_naming_the_field(route, extra, match):
    prog, parse = (LEGACY_PROG, parse_legacy) if route == "legacy" else (NEW_PROG, parse_new)
    outcome = run_parse(prog, parse, [str(DEBUG_YAML), *extra])
    assert outcome.code == 2 and len(outcome.errors) == 1, outcome
    assert outcome.errors[0].startswith(f"{prog}: error: ") and re.search(match, outcome.errors[0]), outcome


@pytest.mark.parametrize(
    "extra", [["--training.stepz", "3"], ["--training.steps", "abc"], ["--training.steps", "-3"]]
)
def test_without_the_hook_tyros_report_is_flattened_to_one_line(extra, monkeypatch):
    """A tyro without the parse-error hook (or an event it does not describe): still one line."""
    from hyper_parallel.config import refusals

    monkeypatch.setattr(refusals, "_tyro_errors", lambda: None)
    outcome = run_parse(NEW_PROG, parse_new, [*RECIPE, *extra])
    assert outcome.code == 2 and outcome.err.count("\n") == 1, outcome
    assert outcome.errors[0].startswith(f"{NEW_PROG}: error: {extra[0]}"), outcome.errors
    assert not any(box in outcome.err for box in "╭╰│─")


def test_help_stays_tyros(capsys):
    from hyper_parallel.train import parse_config

    with pytest.raises(SystemExit) as info:
        parse_config([*RECIPE, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--training.steps" in out and "qwen3_5: debug" in out


# ----------------------------------------------------------------------------- drawn: real runs

_LOSS = re.compile(r"step=(\d+) \| loss=(\S+)")


def _valid_legacy() -> st.SearchStrategy[list[str]]:
    batches = st.sampled_from([(8, 1), (8, 2), (4, 4), (2, 1)])
    return st.tuples(
        st.floats(1e-4, 1e-2),
        st.floats(0.0, 0.5),
        st.sampled_from(["cosine", "constant"]),
        st.integers(0, 2**31 - 1),
        batches,
        st.sampled_from([16, 32, 64]),
        st.sampled_from(["off", "full"]),
    ).map(
        lambda v: [
            f"--train.optimizer.lr={v[0]!r}",
            f"--train.optimizer.lr_min={v[0] / 10!r}",
            f"--train.optimizer.lr_warmup_ratio={v[1]!r}",
            f"--train.optimizer.lr_decay_style={v[2]}",
            f"--train.seed={v[3]}",
            f"--train.global_batch_size={v[4][0]}",
            f"--train.micro_batch_size={v[4][1]}",
            f"--data.max_seq_len={v[5]}",
            f"--train.gradient_checkpointing.activation_checkpoint={v[6]}",
        ]
    )


def _valid_recipe() -> st.SearchStrategy[list[str]]:
    batches = st.sampled_from([(8, 1), (8, 2), (4, 4), (2, 1)])
    return st.tuples(
        st.floats(1e-4, 1e-2),
        st.floats(0.0, 0.5),
        st.sampled_from(["cosine", "constant"]),
        st.integers(0, 2**31 - 1),
        batches,
        st.sampled_from([16, 32, 64]),
        st.sampled_from(["none", "full"]),
    ).map(
        lambda v: _flags(
            {
                "--optimizer.lr": repr(v[0]),
                "--lr_scheduler.lr_min": repr(v[0] / 10),
                "--lr_scheduler.lr_warmup_ratio": repr(v[1]),
                "--lr_scheduler.decay_style": v[2],
                "--training.seed": str(v[3]),
                "--training.global_batch_size": str(v[4][0]),
                "--training.local_batch_size": str(v[4][1]),
                "--training.seq_len": str(v[5]),
                "--activation_checkpoint.mode": v[6],
            }
        )
    )


def _flags(values: dict[str, str]) -> list[str]:
    return [token for pair in values.items() for token in pair]


def _train_two_steps(program: list[str], argv: list[str], cwd: Path) -> None:
    env = child_env()
    env.pop(DEBUG_ENV, None)
    proc = subprocess.run(
        [sys.executable, *program, *argv], env=env, capture_output=True, text=True, timeout=600, cwd=cwd
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"argv={argv!r}\n{log[-4000:]}"
    losses = {int(step): float(loss) for step, loss in _LOSS.findall(log)}
    assert sorted(losses) == [1, 2], f"argv={argv!r}\n{log[-4000:]}"
    assert all(math.isfinite(loss) for loss in losses.values()), losses


@pytest.mark.slow
@settings(max_examples=2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(overrides=_valid_legacy())
def test_legacy_entry_point_trains_a_drawn_valid_config(overrides, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("legacy")
    argv = [
        str(DEBUG_YAML),
        "--train.max_steps=2",
        "--train.checkpoint.save_steps=0",
        "--train.checkpoint.save_hf_weights=false",
        f"--train.checkpoint.output_dir={tmp / 'ckpt'}",
        "--train.logging.log_steps=1",
        *overrides,
    ]
    _train_two_steps([str(REPO_ROOT / "scripts" / "train_lm.py")], argv, tmp)


@pytest.mark.slow
@settings(max_examples=2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(overrides=_valid_recipe())
def test_new_entry_point_trains_a_drawn_valid_config(overrides, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recipe")
    fixed = {
        "--training.steps": "2",
        "--checkpoint.save_steps": "0",
        "--checkpoint.output_dir": str(tmp / "ckpt"),
        "--metrics.log_steps": "1",
    }
    argv = [*RECIPE, *_flags(fixed), *overrides]
    _train_two_steps(["-m", "hyper_parallel.train"], argv, tmp)
