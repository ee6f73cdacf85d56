"""No test writes into the repository's ``parity/reports``: the suite's reports go to a folder of its own."""

from __future__ import annotations

import subprocess
import sys

from parity import engine
from tests._subprocess import REPO, child_env


def test_the_suite_reports_outside_the_repository():
    assert engine.REPORT_DIR_ENV == "PARITY_REPORT_DIR"
    assert not engine.DEFAULT_REPORT_DIR.resolve().is_relative_to(REPO.resolve())


def test_a_harness_child_process_inherits_the_suite_folder():
    code = "from parity.engine import DEFAULT_REPORT_DIR; print(DEFAULT_REPORT_DIR)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=child_env(), capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(engine.DEFAULT_REPORT_DIR)


def test_without_the_variable_reports_go_to_the_repository():
    env = child_env()
    env.pop("PARITY_REPORT_DIR", None)
    code = "from parity.engine import DEFAULT_REPORT_DIR; print(DEFAULT_REPORT_DIR)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(REPO.resolve() / "parity" / "reports")
