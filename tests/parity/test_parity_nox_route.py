"""The everyday loop through nox: ``nox -s "parity(torch)"`` red, the printed way out, then green.

Under a parity nox session the harness prints its ways out as nox commands (``parity.commands``):
``python -m parity update --failed`` would fail in the user's shell, where the packages are not
installed. Here nox itself runs the sessions of ``noxfile.py`` (``--no-venv``: with this
interpreter, no venv built): a golden goes red after a change, the run prints
``nox -s "parity_update(torch)" -- --failed ...``, that very command refreshes exactly the failed
golden, and the same run is then green.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests._subprocess import REPO, child_env
from tests.parity.parity_overlap_cases import STATE_ENV

CASES = "tests.parity.parity_overlap_cases:REGISTRY"

pytest.importorskip("nox")


def _nox(tmp_path: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``nox ARGV`` as a user types it, run without venvs (this interpreter) and outside the repo's ``.nox``."""
    assert argv[0] == "nox", argv
    env = child_env(**{STATE_ENV: str(tmp_path / "state.json")})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # the sessions' `python`
    command = [sys.executable, "-m", "nox", "--no-venv", "--envdir", str(tmp_path / "nox"), *argv[1:]]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_the_printed_nox_command_accepts_the_change_and_the_run_goes_green(tmp_path):
    state = tmp_path / "state.json"
    run = ["nox", "-s", "parity(torch)", "--", "--cases", CASES, "--golden-dir", str(tmp_path / "golden")]
    run += ["--report-dir", str(tmp_path / "r")]
    state.write_text(json.dumps({"a": 1.0, "b": 1.0}))
    made = _nox(tmp_path, ["nox", "-s", "parity_update(torch)", "--", *run[4:]])
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    beta = (tmp_path / "golden" / "torch").glob("*/losses.beta.json")
    beta_before = next(beta).read_bytes()

    state.write_text(json.dumps({"a": 3.0, "b": 1.0}))  # a user changes a default: alpha's golden goes red
    red = _nox(tmp_path, run)
    assert red.returncode != 0, red.stdout[-3000:]
    ways = [line for line in red.stdout.splitlines() if "accept exactly these 1 golden(s): " in line]
    assert len(ways) == 1, red.stdout[-3000:]
    printed = ways[0].split("accept exactly these 1 golden(s): ", 1)[1].split("  (it prints", 1)[0]
    assert printed.startswith('nox -s "parity_update(torch)" -- --failed '), printed

    accepted = _nox(tmp_path, shlex.split(printed))
    assert accepted.returncode == 0, accepted.stdout[-3000:] + accepted.stderr[-3000:]
    assert "updated torch losses.alpha" in accepted.stdout, accepted.stdout[-3000:]
    assert "1 golden(s) written, 0 unchanged" in accepted.stdout, accepted.stdout[-3000:]
    beta_after = next((tmp_path / "golden" / "torch").glob("*/losses.beta.json")).read_bytes()
    assert beta_after == beta_before  # exactly the failed golden: the green one is not rewritten

    green = _nox(tmp_path, run)
    assert green.returncode == 0, green.stdout[-3000:]
    assert "2 passed, 0 failed" in green.stdout, green.stdout[-3000:]
