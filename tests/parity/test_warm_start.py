"""Warm-started self-check children (``parity.tools.warm_start``): a run forked from the zygote
gives what a fresh interpreter gives, the import probe still guards it, a timeout kills the
child's whole group, and the zygote itself never holds ``parity`` or ``hyper_parallel``.

The fake copies below hold a two-line ``parity`` and ``hyper_parallel``: the bootstrap imports
them from the copy, so a test controls what the "run" does without the suite's cost.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from parity.tools.plants import PLANTS
from parity.tools.selfcheck_runner import copy_project, run_suite
from parity.tools.warm_start import WarmStarter, WarmStartError, enabled

REPO = Path(__file__).resolve().parents[2]
CASE = "checkpoint.adamw_tiny-dim=4-steps=2"


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmStarter]:
    with WarmStarter() as starter:
        yield starter


def _fake_copy(root: Path, main: str, *, with_parity: bool = True) -> Path:
    (root / "hyper_parallel").mkdir(parents=True)
    (root / "hyper_parallel" / "__init__.py").write_text("", encoding="utf-8")
    if with_parity:
        (root / "parity").mkdir()
        (root / "parity" / "__init__.py").write_text("", encoding="utf-8")
        (root / "parity" / "__main__.py").write_text(main, encoding="utf-8")
    return root


def _gone(pid: int, within: float = 10.0) -> bool:
    """The process is dead (absent, or a zombie waiting for its reaper)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


def test_a_planted_copy_fails_the_same_cases_warm_as_fresh_and_an_unplanted_one_stays_green(warm, tmp_path):
    plant = next(p for p in PLANTS if p.name == "platform_adamw_is_adam")
    args = ["--backend", "torch", "--id", CASE]
    planted = copy_project(REPO, tmp_path / "planted" / "project")
    plant.apply(planted)
    clean = copy_project(REPO, tmp_path / "clean" / "project")

    warm_run = run_suite(planted, args, timeout=120, work=tmp_path / "planted", warm=warm)
    fresh_run = run_suite(planted, args, timeout=120, work=tmp_path / "planted")
    assert warm_run.error is None and fresh_run.error is None, (warm_run.tail, fresh_run.tail)
    assert warm_run.failed == fresh_run.failed == [CASE]
    assert warm_run.rc == fresh_run.rc == 1 and warm_run.summary == fresh_run.summary

    green = run_suite(clean, args, timeout=120, work=tmp_path / "clean", warm=warm)
    assert green.green and green.failed == [], green.tail
    assert green.summary.startswith("1 passed, 0 failed"), green.tail


def test_the_probe_still_refuses_a_child_that_imports_parity_from_outside_its_copy(warm, tmp_path):
    """No ``parity/`` in the copy: the child finds the installed tree, and the probe says so."""
    copy = _fake_copy(tmp_path / "project", "", with_parity=False)
    result = run_suite(copy, [], timeout=60, work=tmp_path, warm=warm)
    assert result.rc == 97 and result.error is not None and result.error.startswith("probe:"), result.tail
    assert "parity" in result.error and not result.green


def test_a_timeout_kills_the_forked_child_and_what_it_started(warm, tmp_path):
    main = (
        "import subprocess, time\n"
        "p = subprocess.Popen(['sleep', '300'])\n"
        "open('grandchild.pid', 'w').write(str(p.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n"
    )
    copy = _fake_copy(tmp_path / "project", main)
    start = time.monotonic()
    result = run_suite(copy, [], timeout=4, work=tmp_path, warm=warm)
    assert result.rc is None and result.error == "timed out after 4s", result.tail
    assert time.monotonic() - start < 30
    assert "started" in result.tail
    assert _gone(int((copy / "grandchild.pid").read_text()))


def test_exit_codes_and_output_come_back_like_a_fresh_interpreter(warm, tmp_path):
    main = "import sys\nprint('PARITY FAIL  case=fake.case')\nraise SystemExit(3)\n"
    copy = _fake_copy(tmp_path / "project", main)
    warm_run = run_suite(copy, [], timeout=60, work=tmp_path, warm=warm)
    fresh_run = run_suite(copy, [], timeout=60, work=tmp_path)
    assert warm_run.rc == fresh_run.rc == 3
    assert warm_run.failed == fresh_run.failed == ["fake.case"]
    crash = _fake_copy(tmp_path / "crash", "raise RuntimeError('boom')\n")
    result = run_suite(crash, [], timeout=60, work=tmp_path, warm=warm)
    assert result.rc == 1 and "RuntimeError: boom" in result.tail


def test_the_zygote_never_holds_parity_or_hyper_parallel_and_runs_no_torch_op(warm):
    """Ready means its own check passed (no ``parity``/``hyper_parallel`` module); one thread
    means ATen's intra-op pool never started (forking after that hangs)."""
    assert warm._ready.wait(120) and warm.dead is None, warm.dead
    assert "torch" in warm.info["loaded"] and "torch._dynamo" in warm.info["loaded"]
    assert warm.info["threads"] == 1


def test_a_zygote_that_imported_parity_refuses_to_serve_and_runs_fall_back_fresh(tmp_path, capsys):
    copy = _fake_copy(tmp_path / "project", "print('ran fresh')\n")
    with WarmStarter(modules=("json", "parity")) as bad:
        with pytest.raises(WarmStartError, match="the zygote imported .*it must come from each copy"):
            bad.launch(copy, dict(os.environ), [], tmp_path / "out.txt")
        for _ in range(2):
            result = run_suite(copy, [], timeout=60, work=tmp_path, warm=bad)
            assert result.rc == 0 and "ran fresh" in result.tail
    err = capsys.readouterr().err
    assert err.count("warm start unavailable") == 1, err


def test_runs_after_the_zygote_died_fall_back_to_a_fresh_interpreter(tmp_path):
    main = "print('done')\n"
    copy = _fake_copy(tmp_path / "project", main)
    with WarmStarter(modules=("json",)) as starter:
        assert run_suite(copy, [], timeout=60, work=tmp_path, warm=starter).rc == 0
        assert starter.proc is not None
        starter.proc.kill()
        starter.proc.wait()
        result = run_suite(copy, [], timeout=60, work=tmp_path, warm=starter)
        assert result.rc == 0 and "done" in result.tail


def test_the_switch():
    assert enabled({}) and enabled({"PARITY_SELFCHECK_WARM": "1"})
    assert not enabled({"PARITY_SELFCHECK_WARM": "0"}) and not enabled({"PARITY_SELFCHECK_WARM": "off"})
