"""Quiet command lines (``hyper_parallel.platform.quiet``): third-party notices only with ``--verbose``.

Each CLI runs 2 steps twice, side by side: without ``--verbose`` its stderr holds none of the
filtered notices, with it they are back. The legacy CLI's progress bar and log lines never share a
line.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import warnings

import pytest

from hyper_parallel.platform.quiet import (
    THIRD_PARTY_LOG_RECORDS,
    THIRD_PARTY_WARNINGS,
    quiet_third_party,
    split_verbose,
)
from tests._subprocess import REPO, child_env

DEBUG_YAML = str(REPO / "examples" / "debug" / "train.yaml")
# What the debug recipe prints on any run: torchdata's set_vital and the DeviceMesh slicing notice.
RECIPE_NOTICES = ("'set_vital' is deprecated", "Slicing a flattened dim from root mesh")


def _notices(stderr: str) -> list[str]:
    """The filtered notices (by their message pattern) that appear in ``stderr``."""
    patterns = [message for _, message, _ in THIRD_PARTY_WARNINGS] + [m for _, m in THIRD_PARTY_LOG_RECORDS]
    return [p for p in patterns if re.search(p, stderr)]


def _run_both(cmd: list[str], tmp_path) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """``cmd`` quiet and with ``--verbose``, concurrently (each in its own folder)."""
    procs = []
    for name, extra in (("quiet", []), ("verbose", ["--verbose"])):
        folder = tmp_path / name
        folder.mkdir()
        argv = [a.replace("{out}", str(folder)) for a in cmd] + extra
        procs.append(
            subprocess.Popen(
                argv,
                cwd=folder,
                env=child_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results[0], results[1]


def _check(quiet, verbose, expected=RECIPE_NOTICES) -> None:
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert verbose.returncode == 0, verbose.stderr[-3000:]
    assert _notices(quiet.stderr) == [], quiet.stderr[-3000:]
    for text in expected:
        assert text in verbose.stderr, f"{text!r} not shown with --verbose:\n{verbose.stderr[-3000:]}"


def test_train_lm_is_quiet_and_bars_do_not_cut_log_lines(tmp_path):
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "train_lm.py"),
        DEBUG_YAML,
        "--train.max_steps=2",
        "--train.checkpoint.save_steps=0",
        "--train.checkpoint.output_dir={out}/ckpt",
    ]
    quiet, verbose = _run_both(cmd, tmp_path)
    _check(quiet, verbose)
    # The bar is drawn with carriage returns; every log line starts a segment of its own.
    segments = re.split(r"[\r\n]", quiet.stderr)
    assert any(s.startswith("Training:") for s in segments), quiet.stderr[-2000:]
    logged = [s for s in segments if "][rank0][" in s]
    assert any("step=2 | loss=" in s for s in logged)
    assert all(s.startswith("[") for s in logged), [s for s in logged if not s.startswith("[")]


@pytest.mark.parametrize("parser", ["tyro", "yaml"])
def test_hyper_parallel_train_is_quiet(tmp_path, parser):
    if parser == "tyro":
        args = ["--module", "qwen3_5", "--config", "debug", "--training.steps", "2"]
        args += ["--checkpoint.save_steps", "0", "--checkpoint.output_dir", "{out}/ckpt"]
    else:
        args = [DEBUG_YAML, "--train.max_steps=2", "--train.checkpoint.save_steps=0"]
        args += ["--train.checkpoint.output_dir={out}/ckpt"]
    _check(*_run_both([sys.executable, "-m", "hyper_parallel.train", *args], tmp_path))


def test_parity_cli_is_quiet(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "parity",
        "run",
        "-k",
        "user_callbacks",
        "--report-dir",
        "{out}/reports",
    ]
    quiet, verbose = _run_both(cmd, tmp_path)
    _check(quiet, verbose)
    assert "1 passed, 0 failed" in quiet.stdout
    # The trainers' tqdm bars are off too (the harness draws its own progress).
    assert "Training:" not in quiet.stderr and "Training:" in verbose.stderr


# ----------------------------------------------------------------------- in-process units


@pytest.mark.parametrize(
    ("argv", "kept", "verbose"),
    [
        (["a.yaml", "--verbose", "--x=1"], ["a.yaml", "--x=1"], True),
        (["--verbose"], [], True),
        (["a.yaml"], ["a.yaml"], False),
        (["run", "--", "--verbose"], ["run", "--", "--verbose"], False),
        (["--verbose=1"], ["--verbose=1"], False),  # not the flag: left for the parser to reject
    ],
)
def test_split_verbose(argv, kept, verbose):
    assert split_verbose(argv) == (kept, verbose)


def test_filters_match_only_the_listed_notices():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_third_party()
        for category, message, module in THIRD_PARTY_WARNINGS:
            text = re.sub(r"\\(.)", r"\1", message).replace("(save|load)", "save")
            module_name = module.rstrip(".").replace("\\", "") + ".x"
            warnings.warn_explicit(text, category, "x.py", 1, module=module_name)
            warnings.warn_explicit(text, category, "x.py", 1, module="hyper_parallel.x")  # not theirs
        warnings.warn_explicit("something else", UserWarning, "x.py", 1, module="torchdata.x")
    shown = [(str(w.message), w.filename) for w in caught]
    assert len(shown) == len(THIRD_PARTY_WARNINGS) + 1, shown


def test_log_filter_drops_only_the_listed_records():
    name, message = THIRD_PARTY_LOG_RECORDS[0]
    quiet_third_party()
    quiet_third_party()  # a second call does not stack filters
    log = logging.getLogger(name)
    assert len(log.filters) == 1
    seen: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    log.addHandler(handler)
    try:
        log.warning(re.sub(r"\\(.)", r"\1", message) + " (test)")
        log.warning("another DeviceMesh warning")
    finally:
        log.removeHandler(handler)
    assert seen == ["another DeviceMesh warning"]
    quiet_third_party(verbose=True)
    assert log.filters == []


def test_progress_bars_off_is_scoped(monkeypatch):
    import os

    from hyper_parallel.platform.quiet import PROGRESS_ENV, progress_bars_off

    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    with progress_bars_off():
        assert os.environ[PROGRESS_ENV] == "0"
    assert PROGRESS_ENV not in os.environ
    with progress_bars_off(False):
        assert PROGRESS_ENV not in os.environ
    monkeypatch.setenv(PROGRESS_ENV, "1")  # the user's own setting wins and stays
    with progress_bars_off():
        assert os.environ[PROGRESS_ENV] == "1"
    assert os.environ[PROGRESS_ENV] == "1"


def test_progress_callback_shows_no_bar_when_asked(monkeypatch):
    from types import SimpleNamespace

    from hyper_parallel.platform.quiet import PROGRESS_ENV
    from hyper_parallel.trainer.callbacks.progress import ProgressCallback

    state = SimpleNamespace(max_steps=3, global_step=0)
    monkeypatch.setenv(PROGRESS_ENV, "0")
    callback = ProgressCallback(trainer=None)
    callback.on_train_begin(state)
    assert callback.bar is None
    monkeypatch.delenv(PROGRESS_ENV)
    callback.on_train_begin(state)
    assert callback.bar is not None
    callback.on_train_end(state)


def test_quiet_env_is_set_unless_the_user_set_it_and_verbose_undoes_it(monkeypatch):
    from hyper_parallel.platform import quiet

    for name in (*quiet.QUIET_ENV, quiet._SET_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GLOG_v", "1")  # the user's own setting stays
    try:
        quiet.quiet_third_party(False)
        assert os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] == "1"
        assert os.environ["KINETO_LOG_LEVEL"] == "6" and os.environ["GLOG_v"] == "1"
        # A child of a quiet process inherits the variables; --verbose there undoes them too.
        quiet._env_set.clear()
        quiet.quiet_third_party(True)
        assert "HF_DATASETS_DISABLE_PROGRESS_BARS" not in os.environ and "KINETO_LOG_LEVEL" not in os.environ
        assert os.environ["GLOG_v"] == "1"
    finally:
        quiet.quiet_third_party(False)  # as the test session runs (parity.pytest_plugin)


def test_a_kineto_trace_prints_no_line_when_quiet():
    code = (
        "from hyper_parallel.platform.quiet import quiet_third_party\n"
        "quiet_third_party({verbose})\n"
        "import torch\n"
        "from torch.profiler import profile\n"
        "with profile():\n"
        "    torch.ones(4).sum()\n"
    )
    outs = []
    for verbose in (False, True):
        proc = subprocess.run(
            [sys.executable, "-c", code.format(verbose=verbose)],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout + proc.stderr)
    assert "USDT" not in outs[0] and "USDT" in outs[1]


def test_each_warning_prints_once_per_run_across_forked_processes(tmp_path):
    code = (
        "import logging, os, sys\n"
        "from pathlib import Path\n"
        "from hyper_parallel.platform.quiet import quiet_third_party, say_once_per_run\n"
        "quiet_third_party(sys.argv[2] == 'verbose')\n"
        "say_once_per_run(Path(sys.argv[1]))\n"
        "log = logging.getLogger('hyper_parallel.components.dataloader')\n"
        "for _ in range(3):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        log.warning('preset_pt with shuffle=True does not replay the batches in order')\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "log.warning('another warning')\n"
    )
    counts = []
    for mode in ("quiet", "verbose"):
        proc = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / mode), mode],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        counts.append(proc.stderr.count("preset_pt with shuffle=True"))
        assert "another warning" in proc.stderr
    assert counts == [1, 3]
