"""A framework error logged while a case runs fails the case; a green case's prints stay out of the run.

The MindSpore profiler, started in a forked (then daemonic) worker, logged "Call to step failed.
Exception: daemonic processes are not allowed to have children" and wrote no trace, and every case
passed. ``parity.case_log`` collects the ERROR records of the frameworks' loggers (MindSpore's is
``ME.mindspore.log.<pid>``, which does not propagate) and the case's stdout; the engine turns the
errors into a case error. These tests plant such errors, without MindSpore, in the serial run and
in forked workers, and in a process the case itself starts.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os

import pytest

from parity import parallel
from parity.cases import Registry
from parity.engine import Engine
from tests.parity import parity_synthetic as synth

# Stands for MindSpore's logger (made when MindSpore is imported, before any case runs).
FRAMEWORK = logging.getLogger("ME.mindspore.log.4242")
FRAMEWORK.propagate = False
PROFILER_ERROR = "Call to step failed. Exception: daemonic processes are not allowed to have children"
PARSING = "[4242] Start parsing profiling data: /tmp/profile/rank_0/rank0_4242_ascend_ms"


def _same(**_):
    return synth.losses()


def _logs_an_error(**_):
    FRAMEWORK.error(PROFILER_ERROR)
    return synth.losses()


def _logs_a_warning_and_other_errors(**_):
    FRAMEWORK.warning("Profiler won't be using warmup")
    logging.getLogger("not.a.framework").error("an application's own error is not the framework's")
    return synth.losses()


def _child_logs_an_error() -> None:
    FRAMEWORK.error("Call to analyse failed. Exception: parser crashed")


def _starts_a_process(target=None):
    def producer(**_):
        child = mp.get_context("fork").Process(target=target or (lambda: None))
        child.start()  # a daemonic worker may not: "daemonic processes are not allowed to have children"
        child.join()
        assert child.exitcode == 0
        return synth.losses()

    return producer


def _prints(**_):
    print(PARSING, flush=True)
    return synth.losses()


def _prints_and_differs(**_):
    print(PARSING, flush=True)
    return synth.losses(zero=1.0)


def _registry(**sides) -> Registry:
    registry = Registry(source="tests.parity.test_parity_framework_errors")
    for name, (legacy, new) in sides.items():
        registry.pair(name, kind="losses", legacy=legacy, new=new)
    return registry


def _engine(registry: Registry, tmp_path) -> Engine:
    return Engine(registry, golden_root=tmp_path / "golden", report_dir=None)


def _check(tmp_path, legacy, new):
    registry = _registry(case=(legacy, new))
    return _engine(registry, tmp_path).check(next(iter(registry)), "torch")


def test_an_error_the_framework_logs_during_a_case_fails_it(tmp_path):
    outcome = _check(tmp_path, _same, _logs_an_error)
    assert outcome.status == "error", outcome.message
    assert outcome.message.startswith(
        f"PARITY ERROR  case={outcome.case.id}  backend=torch: MindSpore logged 1"
    )
    assert f"ERROR {PROFILER_ERROR} (" in outcome.message  # the record, with where it was logged
    assert "test_parity_framework_errors.py:" in outcome.message


def test_framework_warnings_and_other_loggers_leave_a_case_green(tmp_path):
    assert _check(tmp_path, _same, _logs_a_warning_and_other_errors).status == "pass"
    assert _check(tmp_path, _same, _same).status == "pass"


def test_an_error_logged_in_a_process_the_case_starts_is_caught(tmp_path):
    outcome = _check(tmp_path, _same, _starts_a_process(_child_logs_an_error))
    assert (
        outcome.status == "error" and "Call to analyse failed. Exception: parser crashed" in outcome.message
    )


def test_a_failing_case_names_the_errors_too(tmp_path):
    outcome = _check(tmp_path, _logs_an_error, _prints_and_differs)
    assert outcome.status == "fail"
    assert outcome.report is not None and outcome.message.startswith(outcome.report.to_text().rstrip())
    assert "MindSpore logged 1 error(s)" in outcome.message and PROFILER_ERROR in outcome.message


def test_a_green_case_prints_nothing_and_a_red_one_shows_its_output(tmp_path, capfd):
    assert _check(tmp_path, _prints, _prints).status == "pass"
    assert PARSING not in capfd.readouterr().out
    assert _check(tmp_path, _prints, _prints_and_differs).status == "fail"
    out = capfd.readouterr().out
    assert "output of " in out and PARSING in out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers need os.fork")
def test_forked_workers_run_cases_that_start_processes_and_catch_their_errors(tmp_path, capfd):
    registry = _registry(
        starts_a_process=(_same, _starts_a_process()),
        logs_an_error=(_same, _logs_an_error),
        prints=(_prints, _prints),
        child_logs_an_error=(_same, _starts_a_process(_child_logs_an_error)),
    )
    outcomes = parallel.run_cases(_engine(registry, tmp_path), [(c, "torch") for c in registry], 2)
    statuses = {o.case.id.split(".")[1].split("-")[0]: o.status for o in outcomes}
    assert statuses == {
        "starts_a_process": "pass",
        "logs_an_error": "error",
        "prints": "pass",
        "child_logs_an_error": "error",
    }, [o.message for o in outcomes]
    assert PROFILER_ERROR in outcomes[1].message
    assert PARSING not in capfd.readouterr().out
