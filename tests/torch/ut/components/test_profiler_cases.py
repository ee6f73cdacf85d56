"""The profiler pairs (parity/suites/components_profiler.py): run, can fail, and match on real traces.

``test_harness_case`` runs every ``profiler`` case (recording fakes stand for the framework
profiler, so nothing starts). The planted-divergence tests build the component with one plausible
mistake (the schedule shifted by one step, a changed default, the trace folder of the wrong rank)
and assert that the engine fails the registered cases at the artifact path the mistake moves. The
``slow`` test starts the real torch profiler on both sides and compares the trace files.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import settings

from hyper_parallel.components.profiler import Profiler
from hyper_parallel.platform import get_platform
from parity import assert_bitwise_equal, canonical
from parity.compare import VALUES
from parity.engine import Engine
from parity.pytest_plugin import case_params, run_case
from parity.suites import REGISTRY
from parity.suites import components_profiler as suite

FAST = settings(max_examples=40, derandomize=True, database=None, deadline=None)


@pytest.mark.parametrize(("case", "backend"), case_params(REGISTRY, tag="profiler"))
def test_harness_case(case, backend, request):
    run_case(request, REGISTRY, case, backend)


def _case(name: str, **params):
    matches = [c for c in REGISTRY if c.name == name and c.param_dict == params]
    assert len(matches) == 1, (name, params)
    return matches[0]


def _check(case):
    return Engine(REGISTRY, report_dir=None, hypothesis_settings=FAST).check(case, "torch")


def _fail(outcome):
    assert outcome.status == "fail", outcome.message
    return outcome.report.differences


DEFAULT_RUN = {"enabled": True, "wait": 1, "warmup": 1, "active": 3, "steps": 7}
ARGS = "profiler.profilers[0].arguments"


def test_the_fakes_are_removed_after_a_run():
    import torch.profiler as tp

    real = (tp.profile, tp.schedule, tp.tensorboard_trace_handler)
    suite.new_profile(**DEFAULT_RUN)
    assert (tp.profile, tp.schedule, tp.tensorboard_trace_handler) == real


def test_planted_schedule_shifted_by_one_step_is_caught(monkeypatch):
    """A platform factory that waits one step more than configured."""
    platform_cls = type(get_platform())
    real = platform_cls.profiler

    def shifted(self, *, output_dir, rank, wait, warmup, active):
        return real(self, output_dir=output_dir, rank=rank, wait=wait + 1, warmup=warmup, active=active)

    monkeypatch.setattr(platform_cls, "profiler", shifted)
    diffs = _fail(_check(_case("profiler_run", **DEFAULT_RUN)))
    first = diffs[0]
    assert (first.phase, first.kind, first.path) == (VALUES, "value", f"{ARGS}.schedule.schedule.wait")
    assert (first.expected, first.actual) == ("1", "2")
    paths = [d.path for d in diffs]
    # Every action from step 1 on moves by one step, in the schedule and in the calls made.
    assert "profiler.profilers[0].schedule_actions[1]" in paths
    assert "profiler.profilers[0].events[1].action" in paths
    # The drawn schedules find it too (any enabled example), with a blob to replay it.
    drawn = _check(_case("profiler_run_hypothesis"))
    assert drawn.status == "fail" and "--hypothesis-blob" in drawn.message
    # Disabled runs build no profiler: they still pass.
    assert _check(_case("profiler_run", steps=5)).status == "pass"


def test_planted_changed_default_is_caught(monkeypatch):
    """``Profiler.Config`` with ``active_steps`` defaulting to 2 instead of the legacy 3."""
    monkeypatch.setitem(Profiler.Config.__init__.__kwdefaults__, "active_steps", 2)
    first = _fail(_check(_case("profiler_defaults")))[0]
    assert (first.phase, first.path, first.expected, first.actual) == (
        VALUES,
        "profiler.code_fallback.active_steps",
        "3",
        "2",
    )
    run = _fail(_check(_case("profiler_run", enabled=True, steps=7)))
    assert run[0].path == f"{ARGS}.schedule.schedule.active"
    # An explicit schedule does not see the default.
    assert _check(_case("profiler_run", **DEFAULT_RUN)).status == "pass"


def test_planted_trace_folder_of_the_wrong_rank_is_caught(monkeypatch):
    """A component that names the trace folder after rank 0 whatever the platform says."""
    real_init = Profiler.__init__

    def rank_zero(self, config, *, rank=None):
        real_init(self, config, rank=0)

    monkeypatch.setattr(Profiler, "__init__", rank_zero)
    params = {"enabled": True, "wait": 1, "warmup": 1, "active": 2, "steps": 5, "rank": 3}
    diffs = _fail(_check(_case("profiler_run", **params, output_dir="my_traces")))
    handler = f"{ARGS}.on_trace_ready.tensorboard_trace_handler"
    assert [(d.path, d.expected, d.actual) for d in diffs] == [
        (f"{handler}.dir_name", "'my_traces/rank_3'", "'my_traces/rank_0'"),
        (f"{handler}.worker_name", "'rank3'", "'rank0'"),
    ]


# --------------------------------------------------------------------------- the real profiler

_TRACE_NAME = re.compile(r"^(rank\d+)\.\d+\.pt\.trace\.json$")


def _workload() -> None:
    import torch

    a = torch.ones(8, 8)
    (a @ a).sum()


def _real_legacy(out_dir: Path, *, wait: int, warmup: int, active: int, steps: int) -> None:
    from hyper_parallel.trainer.callbacks import ProfilerCallback

    profile = SimpleNamespace(
        enabled=True, output_dir=str(out_dir), wait_steps=wait, warmup_steps=warmup, active_steps=active
    )
    callback = ProfilerCallback(SimpleNamespace(args=SimpleNamespace(train=SimpleNamespace(profile=profile))))
    state = SimpleNamespace(global_step=0)
    callback.on_train_begin(state)
    for _ in range(steps):
        _workload()
        state.global_step += 1
        callback.on_step_end(state, loss=1.0, grad_norm=1.0)
    callback.on_train_end(state)


def _real_new(out_dir: Path, *, wait: int, warmup: int, active: int, steps: int) -> None:
    config = Profiler.Config(
        enabled=True, output_dir=str(out_dir), wait_steps=wait, warmup_steps=warmup, active_steps=active
    )
    with config.build() as prof:
        for _ in range(steps):
            _workload()
            prof.step()


def _trace_files(out_dir: Path) -> dict:
    """``{rank folder: [file name with its timestamp masked, ...]}``; each file must parse as a
    chrome trace (JSON with ``traceEvents``). Timings are not compared."""
    tree: dict = {}
    for folder, _, files in sorted(os.walk(out_dir)):
        names = []
        for name in sorted(files):
            match = _TRACE_NAME.match(name)
            assert match, f"unexpected file {folder}/{name}"
            trace = json.loads(Path(folder, name).read_text())
            assert isinstance(trace.get("traceEvents"), list) and trace["traceEvents"], name
            names.append(f"{match.group(1)}.<ns>.pt.trace.json")
        if names:
            tree[os.path.relpath(folder, out_dir)] = names
    return canonical.canonicalise(tree, "traces")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    ("wait", "warmup", "active", "steps"),
    [(0, 1, 2, 4), (1, 1, 1, 3)],
)
def test_real_profiler_writes_the_same_trace_files(tmp_path, wait, warmup, active, steps):
    sched = {"wait": wait, "warmup": warmup, "active": active, "steps": steps}
    _real_legacy(tmp_path / "legacy", **sched)
    _real_new(tmp_path / "new", **sched)
    legacy, new = _trace_files(tmp_path / "legacy"), _trace_files(tmp_path / "new")
    assert_bitwise_equal(legacy, new, "traces")
    rank = get_platform().get_rank()
    assert canonical.to_json(new) == {f"rank_{rank}": [f"rank{rank}.<ns>.pt.trace.json"]}
