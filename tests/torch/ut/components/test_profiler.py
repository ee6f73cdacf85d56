"""Profiler vs the legacy ProfilerCallback.

Disabled, ``Profiler.Config().build()`` is a ``contextlib.nullcontext``. Enabled, both paths run the
same ``wait/warmup/active`` schedule over the same tiny workload; the trace files of every rank
folder (names without their nanosecond stamp) and the ``ProfilerStep#N`` spans inside them are
canonicalised and compared with ``parity.compare.compare``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from hyper_parallel.components.profiler import Profiler
from hyper_parallel.platform import get_platform
from parity import assert_bitwise_equal, canonical
from parity.compare import VALUES, compare

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

_TRACE_NAME = re.compile(r"^(rank\d+)\.\d+\.pt\.trace\.json$")


def _workload() -> None:
    a = torch.ones(8, 8)
    (a @ a).sum()


def _run_legacy(out_dir: Path, *, wait: int, warmup: int, active: int, steps: int) -> None:
    from hyper_parallel.trainer.callbacks import ProfilerCallback

    profile = SimpleNamespace(
        enabled=True, output_dir=str(out_dir), wait_steps=wait, warmup_steps=warmup, active_steps=active
    )
    trainer = SimpleNamespace(args=SimpleNamespace(train=SimpleNamespace(profile=profile)))
    state = SimpleNamespace(global_step=0)
    cb = ProfilerCallback(trainer)
    cb.on_train_begin(state)
    for _ in range(steps):
        _workload()
        state.global_step += 1
        cb.on_step_end(state, loss=1.0, grad_norm=1.0)
    cb.on_train_end(state)


def _config(out_dir: Path, *, wait: int, warmup: int, active: int) -> Profiler.Config:
    return Profiler.Config(
        enabled=True, output_dir=str(out_dir), wait_steps=wait, warmup_steps=warmup, active_steps=active
    )


def _run_new(out_dir: Path, *, wait: int, warmup: int, active: int, steps: int, config=None) -> None:
    config = config or _config(out_dir, wait=wait, warmup=warmup, active=active)
    with config.build() as prof:
        for _ in range(steps):
            _workload()
            prof.step()


def _traces(out_dir: Path) -> dict:
    """``rank_<r>`` -> [{file (stamp masked), steps (ProfilerStep numbers in the trace)}]."""
    tree: dict = {}
    if not out_dir.exists():
        return tree
    for rank_dir in sorted(p for p in out_dir.iterdir() if p.is_dir()):
        rows = []
        for path in sorted(rank_dir.iterdir()):
            match = _TRACE_NAME.match(path.name)
            assert match, f"unexpected file {path}"
            events = json.loads(path.read_text())["traceEvents"]
            steps = sorted(
                {
                    int(e["name"].removeprefix("ProfilerStep#"))
                    for e in events
                    if e.get("name", "").startswith("ProfilerStep#")
                }
            )
            rows.append({"file": f"{match.group(1)}.<ns>.pt.trace.json", "steps": steps})
        tree[rank_dir.name] = rows
    return canonical.canonicalise(tree, "profiler")


def _expected_steps(wait: int, warmup: int, active: int, steps: int) -> list[list[int]]:
    """One cycle: nothing before wait+warmup steps; then the active steps reached (stop flushes)."""
    first = wait + warmup
    if steps < first:
        return []
    return [list(range(first, min(steps, first + active - 1) + 1))]


# --------------------------------------------------------------------------- disabled
def test_disabled_build_is_a_nullcontext(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    built = Profiler.Config().build()
    assert isinstance(built, contextlib.nullcontext)
    with built as prof:
        assert prof is None
    # Runtime kwargs are accepted (and checked) whether or not profiling is on.
    assert isinstance(Profiler.Config(enabled=False).build(rank=3), contextlib.nullcontext)
    with pytest.raises(TypeError, match="unexpected kwarg"):
        Profiler.Config().build(ranks=3)
    assert os.listdir(tmp_path) == []


def test_directly_constructed_disabled_profiler_is_inert(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    profiler = Profiler(Profiler.Config(), rank=0)
    with profiler as prof:
        assert prof is None
        profiler.step()
        assert not profiler.active
    assert os.listdir(tmp_path) == []


def test_disabled_schedule_is_not_validated_but_enabled_is():
    Profiler.Config(enabled=False, active_steps=0, wait_steps=-1)  # legacy: never looked at
    for field, value in (
        ("wait_steps", -1),
        ("warmup_steps", -2),
        ("active_steps", 0),
        ("active_steps", True),
    ):
        with pytest.raises(ValueError, match=rf"Profiler\.Config\.{field} must be an int >= "):
            Profiler.Config(enabled=True, **{field: value})


def test_config_fields_and_defaults_mirror_train_profile():
    from hyper_parallel.trainer.config import LegacyProfileArgs

    legacy = {f.name: f.default for f in dataclasses.fields(LegacyProfileArgs)}
    assert dataclasses.asdict(Profiler.Config()) == legacy
    assert Profiler.Config().to_dict() == legacy


# --------------------------------------------------------------------------- enabled: same schedule
@pytest.mark.parametrize(
    ("wait", "warmup", "active", "steps"),
    [
        (1, 1, 3, 1),  # shorter than wait + warmup: nothing
        (1, 1, 3, 2),  # stops on the first active step: that step alone
        (1, 1, 3, 4),  # stops inside the active window
        (1, 1, 2, 4),  # the cycle completes on the last step
        (0, 0, 1, 3),  # no wait, no warmup
        (2, 1, 2, 8),  # runs past the single cycle (repeat=1)
    ],
)
def test_trace_files_and_steps_match_legacy(tmp_path, wait, warmup, active, steps):
    sched = {"wait": wait, "warmup": warmup, "active": active, "steps": steps}
    _run_legacy(tmp_path / "legacy", **sched)
    _run_new(tmp_path / "new", **sched)
    legacy, new = _traces(tmp_path / "legacy"), _traces(tmp_path / "new")
    assert_bitwise_equal(legacy, new, "profiler")
    expected = _expected_steps(wait, warmup, active, steps)
    rank = get_platform().get_rank()
    got = [row["steps"] for row in canonical.to_json(new).get(f"rank_{rank}", [])]
    assert got == expected
    assert (
        not expected or canonical.to_json(new)[f"rank_{rank}"][0]["file"] == f"rank{rank}.<ns>.pt.trace.json"
    )


def test_rank_folder_follows_the_platform_rank_on_both_paths(tmp_path, monkeypatch):
    # On the class: monkeypatch would leave an instance attribute behind, which shadows later
    # class-level patches of get_rank (the dataloader suite's simulated ranks).
    monkeypatch.setattr(type(get_platform()), "get_rank", lambda self, group=None: 3)
    sched = {"wait": 0, "warmup": 1, "active": 1, "steps": 2}
    _run_legacy(tmp_path / "legacy", **sched)
    _run_new(tmp_path / "new", **sched)
    legacy, new = _traces(tmp_path / "legacy"), _traces(tmp_path / "new")
    assert_bitwise_equal(legacy, new, "profiler")
    assert list(canonical.to_json(new)) == ["rank_3"]
    # An explicit rank kwarg wins over the platform's.
    with _config(tmp_path / "explicit", wait=0, warmup=1, active=1).build(rank=5) as prof:
        assert prof.trace_dir == f"{tmp_path / 'explicit'}/rank_5"
        for _ in range(2):
            prof.step()
    assert [p.name for p in (tmp_path / "explicit").iterdir()] == ["rank_5"]


def test_exception_inside_the_block_stops_the_profiler(tmp_path):
    profiler = _config(tmp_path, wait=0, warmup=0, active=2).build()
    with pytest.raises(RuntimeError, match="boom"), profiler as prof:
        prof.step()
        assert profiler.active
        raise RuntimeError("boom")
    assert not profiler.active
    traces = canonical.to_json(_traces(tmp_path))[f"rank_{get_platform().get_rank()}"]
    assert [row["steps"] for row in traces] == [[0, 1]]


# --------------------------------------------------------------------------- planted divergence
def test_planted_warmup_off_by_one_is_named(tmp_path):
    sched = {"wait": 1, "warmup": 1, "active": 2, "steps": 5}
    _run_legacy(tmp_path / "legacy", **sched)
    wrong = _config(tmp_path / "new", wait=1, warmup=0, active=2)  # warmup dropped
    _run_new(tmp_path / "new", **sched, config=wrong)
    diffs = compare(_traces(tmp_path / "legacy"), _traces(tmp_path / "new"), "profiler")
    assert diffs, "the planted divergence was not detected"
    rank = get_platform().get_rank()
    first = diffs[0]
    assert (first.phase, first.kind, first.path) == (VALUES, "value", f"profiler.rank_{rank}[0].steps[0]")
    assert (first.expected, first.actual) == ("2", "1")
