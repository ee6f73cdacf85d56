"""Overlapping ``parity run``s on one tree never hide a failure from ``update --failed``.

A user probe started two ``parity run -k ...`` selections at the same time on the same tree: the
one that finished later (green) replaced ``last_run.json``, and ``update --failed`` said "nothing to
update" although the other run had a red golden. The run state is now kept per backend
(``<report dir>/run_state-<backend>.json``, ``parity.run_state``): each run registers itself before
its first case and merges its results when it finishes, under a lock, written atomically; ``update
--failed`` takes every golden whose latest result on this tree is a failure, and refuses in one line
(exit 2) while a run of the backend is still going or when the last one did not finish.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from parity import run_state
from parity.cli import main
from parity.env import platform_key
from tests._subprocess import REPO, child_env
from tests.parity.parity_overlap_cases import STATE_ENV

CASES = "tests.parity.parity_overlap_cases:REGISTRY"
TREE = "tree-overlap"
# A separate ``parity`` process with the test's tree fingerprint (the shared working tree moves
# under other engineers' edits; the in-process runs patch the same function).
BOOT = (
    "import sys\n"
    "from parity import run_state\n"
    f"run_state.tree_fingerprint = lambda root=None: {TREE!r}\n"
    "from parity.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.fixture
def overlap(tmp_path, monkeypatch):
    state = tmp_path / "state.json"
    monkeypatch.setenv(STATE_ENV, str(state))
    monkeypatch.setattr(run_state, "tree_fingerprint", lambda root=None: TREE)
    common = ("--cases", CASES, "--golden-dir", str(tmp_path / "golden"), "--report-dir", str(tmp_path / "r"))

    def cli(command: str, *argv: str) -> tuple[int, str]:
        out = io.StringIO()
        code = main([command, *common, *argv], console=Console(file=out, width=250, color_system=None))
        return code, out.getvalue()

    def start(command: str, *argv: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-c", BOOT, command, *common, *argv],
            cwd=REPO,
            env=child_env(**{STATE_ENV: str(state)}),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def set_state(**values) -> None:
        state.write_text(json.dumps(values))

    cli.start, cli.set_state = start, set_state
    cli.golden = tmp_path / "golden" / "torch" / platform_key()
    cli.hold, cli.started = tmp_path / "hold", tmp_path / "started"
    cli.reports = tmp_path / "r"
    set_state(a=1.0, b=1.0)
    return cli


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not path.exists():
        out = proc.communicate(timeout=5)[0] if proc.poll() is not None else ""
        raise AssertionError(f"the held run never reached its case (exit {proc.poll()}):\n{out[-3000:]}")


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_a_green_run_that_ends_later_does_not_hide_the_failures_of_an_overlapping_run(overlap):
    """Run B (``-k beta``, green) starts first and ends last; run A (``-k alpha``, red) runs meanwhile."""
    assert overlap("update")[0] == 0  # both goldens
    overlap.set_state(a=1.5, b=1.0, hold=str(overlap.hold), started=str(overlap.started))
    run_b = overlap.start("run", "-k", "beta", "-j", "1")
    try:
        _wait_for(overlap.started, run_b)
        code, out = overlap("run", "-k", "alpha", "-j", "1")
        assert code == 1 and "1 failed" in out, out
        # B is still going: its results are not known yet, so --failed waits for it (one line).
        code, out = overlap("update", "--failed")
        assert code == 2 and len(out.strip().splitlines()) == 1, out
        assert "still running" in out and str(run_b.pid) in out, out
        overlap.hold.write_text("")
        text = run_b.communicate(timeout=120)[0]
        assert run_b.returncode == 0, text[-3000:]
    finally:
        _end(run_b)
    code, out = overlap("update", "--failed")
    assert code == 0, out
    assert (
        "nothing to update" not in out and "updated torch losses.alpha" in out and "losses.beta" not in out
    ), out
    assert overlap("run", "-j", "1")[0] == 0
    # Refreshed: a second --failed has nothing left to do.
    code, out = overlap("update", "--failed")
    assert code == 0 and "nothing to update" in out, out


def test_a_later_selection_keeps_the_failures_of_an_earlier_one(overlap):
    """The same without overlap: ``-k alpha`` (red), then ``-k beta`` (green), then ``--failed``."""
    assert overlap("update")[0] == 0
    overlap.set_state(a=1.5, b=1.0)
    assert overlap("run", "-k", "alpha", "-j", "1")[0] == 1
    assert overlap("run", "-k", "beta", "-j", "1")[0] == 0
    code, out = overlap("update", "--failed")
    assert code == 0 and "updated torch losses.alpha" in out and "1 golden(s) written" in out, out
    # A later run of the same case decides: green again (the product moved back), nothing to take.
    overlap.set_state(a=1.0, b=1.0)
    assert overlap("update", "--id", "losses.alpha")[0] == 0
    overlap.set_state(a=1.5, b=1.0)
    assert overlap("run", "-k", "alpha", "-j", "1")[0] == 1
    overlap.set_state(a=1.0, b=1.0)
    assert overlap("run", "-j", "1")[0] == 0
    code, out = overlap("update", "--failed")
    assert code == 0 and "nothing to update" in out, out


# --------------------------------------------------------------------------- the state itself
def _rows(
    *failing: str, passing: tuple[str, ...] = (), backend: str = "torch", tier: str = "B"
) -> list[dict]:
    return [
        {"case_id": case_id, "tier": tier, "backend": backend, "status": status}
        for status, ids in (("fail", failing), ("pass", passing))
        for case_id in ids
    ]


def test_each_backend_keeps_its_failures_and_the_union_is_taken(tmp_path):
    reports = tmp_path / "r"
    torch_run = run_state.mark_started(reports, ["run", "--backend", "torch"], TREE, ["torch"])
    ms_run = run_state.mark_started(reports, ["run", "--backend", "mindspore"], TREE, ["mindspore"])
    run_state.mark_finished(
        reports, torch_run, TREE, ["torch"], _rows("losses.alpha", passing=("losses.beta",))
    )
    # The MindSpore run ends later, green: the torch failure stays.
    run_state.mark_finished(
        reports, ms_run, TREE, ["mindspore"], _rows(passing=("losses.alpha",), backend="mindspore")
    )
    assert run_state.failed_goldens(reports, TREE) == [("losses.alpha", "torch")]
    assert run_state.failed_goldens(reports, TREE, ["mindspore"]) == []
    # Tier A failures and skips are no golden to take; a skip never hides an earlier failure.
    again = run_state.mark_started(reports, [], TREE, ["torch"])
    rows = _rows("lr_curve.pair", tier="A") + [
        {"case_id": "losses.alpha", "tier": "B", "backend": "torch", "status": "skip"}
    ]
    run_state.mark_finished(reports, again, TREE, ["torch"], rows)
    assert run_state.failed_goldens(reports, TREE) == [("losses.alpha", "torch")]
    assert sorted(p.name for p in reports.glob("*.json")) == [
        "last_run.json",
        "run_state-mindspore.json",
        "run_state-torch.json",
    ]


def test_an_unfinished_last_run_of_a_backend_is_refused_in_one_line(tmp_path):
    reports = tmp_path / "r"
    done = run_state.mark_started(reports, [], TREE, ["torch", "mindspore"])
    run_state.mark_finished(reports, done, TREE, ["torch", "mindspore"], _rows("losses.alpha"))
    run_state.mark_interrupted(
        reports, ["run", "--backend", "mindspore"], TREE, signal_name="SIGTERM", backends=["mindspore"]
    )
    with pytest.raises(run_state.FailedRunError) as err:
        run_state.failed_goldens(reports, TREE)
    message = str(err.value)
    assert "\n" not in message and "backend mindspore" in message and "was interrupted (SIGTERM)" in message
    assert run_state.failed_goldens(reports, TREE, ["torch"]) == [("losses.alpha", "torch")]
    # A run whose process is gone without a word (SIGKILL) is no finished run either.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    late = run_state.mark_started(reports, [], TREE, ["torch"])
    run_state._change(reports, "torch", TREE, lambda e: run_state._set_run(e, late, {"pid": gone.pid}))
    with pytest.raises(
        run_state.FailedRunError, match=rf"did not finish \(its process {gone.pid} .* is gone\)"
    ):
        run_state.failed_goldens(reports, TREE, ["torch"])
    # A newer finished run of the backend is its last run again.
    newer = run_state.mark_started(reports, [], TREE, ["torch"])
    run_state.mark_finished(reports, newer, TREE, ["torch"], _rows(passing=("losses.beta",)))
    assert run_state.failed_goldens(reports, TREE, ["torch"]) == [("losses.alpha", "torch")]


def test_another_tree_or_no_run_is_refused(tmp_path):
    reports = tmp_path / "r"
    with pytest.raises(run_state.FailedRunError, match="no last run to take failures from"):
        run_state.failed_goldens(reports, TREE)
    run = run_state.mark_started(reports, [], "tree-old", ["torch"])
    run_state.mark_finished(reports, run, "tree-old", ["torch"], _rows("losses.alpha"))
    with pytest.raises(run_state.FailedRunError, match="another tree"):
        run_state.failed_goldens(reports, TREE)
    with pytest.raises(
        run_state.FailedRunError,
        match="no last run to take failures from for backend mindspore .*take torch's now",
    ):
        run_state.failed_goldens(reports, "tree-old", ["torch", "mindspore"])


def _finish_many(reports: Path, worker: int, count: int) -> None:
    for i in range(count):
        run = run_state.mark_started(reports, [], TREE, ["torch"])
        run_state.mark_finished(reports, run, TREE, ["torch"], _rows(f"losses.w{worker}_{i}"))


def test_concurrent_runs_merge_every_result(tmp_path):
    """Runs ending at the same moment in several processes: no result is lost (lock + atomic write)."""
    import multiprocessing

    reports = tmp_path / "r"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_finish_many, args=(reports, w, 15)) for w in range(3)]
    for proc in workers:
        proc.start()
    for proc in workers:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    failed = run_state.failed_goldens(reports, TREE)
    assert sorted(failed) == sorted((f"losses.w{w}_{i}", "torch") for w in range(3) for i in range(15))
    state = json.loads(run_state.state_path(reports, "torch").read_text())
    assert len(state["trees"][TREE]["runs"]) == run_state.MAX_RUNS  # only the newest are kept
