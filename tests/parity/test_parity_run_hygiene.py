"""A green ``python -m parity run`` shows only its own lines and leaves nothing behind.

One run of a few cases that wake the noisy libraries (the ``preset`` recipe: the profiler, so
kineto, and a shuffle warning on both trainers; ``hf_text``: datasets' map and filter bars; a
tokenizer variant and a data loader case: the temp folders of forked workers), in two workers,
with ``TMPDIR`` pointing at an empty folder of the test's own:

- every line of stdout and stderr is the harness's (its counts) or a warning of ours
  (``WARNING hyper_parallel...``), each warning once;
- that folder is empty afterwards, and nothing was written under ``parity/assets``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests._subprocess import REPO, child_env

SELECTION = (
    "(hyper_trainer_curve and (preset or hf_text))"
    " or (dataloader_pad- and ragged_preset and tok=eos1)"
    " or component_tokenizer_vs_legacy-special=true-variant=pad"
)
# The harness's own lines: blank, table rules and rows, its title, a green run's counts per tier
# and backend, skip notes and counts, the short summary of a run, and warnings logged by our own
# packages.
OURS = re.compile(
    r"""^(\s*
    | \s*[┏┃┡│└┗╇┳┻━─╭╰╮╯├┤].*
    | \s*parity\ run\s*
    | parity\ run:\ \d+\ case\ run\(s\),\ none\ failing.*
    | \ \ tier\ [A-Z]:\ .*
    | skipped\ .*
    | \d+\ passed,.*
    | golden\ lint.*
    | (WARNING|ERROR)\ (hyper_parallel|parity)[.\w]*:\ .*
    )$""",
    re.VERBOSE,
)


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def green_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hygiene")
    tmp = root / "tmp"
    tmp.mkdir()
    assets = REPO / "parity" / "assets"
    before = _files(assets)
    cmd = [sys.executable, "-m", "parity", "run", "-k", SELECTION, "--jobs", "2"]
    cmd += ["--report-dir", str(root / "reports")]
    proc = subprocess.run(
        cmd,
        cwd=REPO,
        env=child_env(TMPDIR=str(tmp), COLUMNS="200"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    return proc, tmp, before, _files(assets)


def test_a_green_run_prints_only_our_lines_and_each_warning_once(green_run):
    proc, *_ = green_run
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    lines = [line for chunk in output.splitlines() for line in chunk.split("\r")]
    foreign = [line for line in lines if not OURS.match(line)]
    assert foreign == [], "\n".join(foreign[:20])
    warnings = Counter(line for line in lines if line.startswith(("WARNING ", "ERROR ")))
    assert [w for w, n in warnings.items() if n > 1] == []
    # The preset recipe's warning is about the case's own set-up: kept in the case's log, which a
    # green case drops (tests/parity/test_parity_fixture_warnings.py: a red one prints it).
    assert not any("preset_pt with" in w for w in warnings), output[-2000:]


def test_a_green_run_leaves_no_temp_files_and_writes_nothing_in_the_source_tree(green_run):
    proc, tmp, before, after = green_run
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert sorted(p.name for p in tmp.iterdir()) == []
    assert sorted(after - before) == []
