"""``parity run -j N``: forked workers give the serial outcomes, in registry order; shared runs stay together."""

from __future__ import annotations

import os

import pytest

from parity import parallel
from parity.cases import Registry
from parity.engine import Engine
from tests.parity import parity_synthetic as synth

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers need os.fork")

_CALLS: dict[str, int] = {}


def _shared_run(*, n: int) -> list:
    """A stand-in for a cached trainer run: counts how often it is produced in this process."""
    _CALLS["run"] = _CALLS.get("run", 0) + 1
    return synth.losses()


def _pid_and_runs(*, n: int) -> dict:
    return {"pid": os.getpid(), "runs": _CALLS.get("run", 0)}


def _registry() -> Registry:
    registry = Registry(source="tests.parity.test_parity_parallel")
    for case in synth.REGISTRY:
        if case.tier == "A":
            registry.add(case)
    for n in range(3):
        registry.pair(
            "shared", kind="losses", params={"n": n}, legacy=_shared_run, new=_shared_run, share="run"
        )
    return registry


def _outcomes(engine, registry, workers):
    jobs = [(case, "torch") for case in registry]
    return parallel.run_cases(engine, jobs, workers)


def test_parallel_outcomes_equal_serial_ones_in_registry_order(tmp_path):
    registry = _registry()
    engine = Engine(registry, golden_root=tmp_path / "golden", report_dir=tmp_path / "reports")
    serial = _outcomes(engine, registry, 1)
    forked = _outcomes(engine, registry, 2)
    assert [o.case.id for o in forked] == [c.id for c in registry]
    assert [(o.case.id, o.status) for o in forked] == [(o.case.id, o.status) for o in serial]
    assert {o.status for o in forked} == {"pass", "fail"}  # the synthetic registry has planted failures
    failing = next(o for o in forked if o.status == "fail")
    assert failing.report is not None and failing.message == next(
        o.message for o in serial if o.case.id == failing.case.id
    )


def test_cases_of_one_share_run_in_one_unit():
    registry = _registry()
    jobs = [(case, "torch") for case in registry]
    units = parallel.schedule(jobs)
    shared = [i for i, (case, _) in enumerate(jobs) if case.share == "run"]
    assert units[0] == shared  # shared groups first: they are the long ones
    assert sorted(i for unit in units for i in unit) == list(range(len(jobs)))


def test_a_worker_that_dies_becomes_an_error_of_its_cases(tmp_path):
    def dies(**_):
        os._exit(9)

    registry = Registry(source="tests.parity.test_parity_parallel")
    registry.pair("dies", kind="losses", legacy=dies, new=dies)
    for case in list(synth.REGISTRY)[:2]:
        registry.add(case)
    engine = Engine(registry, golden_root=tmp_path / "golden", report_dir=None)
    outcomes = _outcomes(engine, registry, 2)
    dead = outcomes[0]
    assert dead.status == "error" and "worker process died" in dead.message and "--id" in dead.message


def test_bad_worker_count_names_the_variable(monkeypatch):
    monkeypatch.setenv("PARITY_JOBS", "many")
    with pytest.raises(ValueError, match="PARITY_JOBS='many'"):
        parallel.default_workers()
    monkeypatch.setenv("PARITY_JOBS", "3")
    assert parallel.default_workers() == 3
