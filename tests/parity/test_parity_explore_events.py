"""Explore runs compare the user-callback event sequence, reach epoch boundaries, and resume on ranks.

- the covering set holds points where ``max_steps`` lands inside the first of two epochs and
  exactly at its end (where a trainer that starts the next epoch anyway diverges);
- a planted extra epoch in ``HyperTrainer``'s events turns a covering case red naming ``events``;
- ``resume_runs`` resumes a 2-rank point from each trainer's per-rank DCP shards, both ways.
"""

from __future__ import annotations

import pytest

from parity import golden
from parity.engine import Engine
from parity.explore import runner, space, strategies
from parity.suites import REGISTRY
from parity.suites import e2e_explore as ex


@pytest.fixture
def fresh_runs(fresh_explore_runs):
    """The explore caches cleared around the test (``fresh_explore_runs`` in conftest.py)."""
    yield


def _check(case_id: str):
    case = REGISTRY.get(case_id)
    assert case is not None, case_id
    return Engine(REGISTRY, golden_root=golden.DEFAULT_ROOT).check(case, "torch")


def test_covering_set_stops_inside_and_at_the_end_of_a_first_epoch():
    stops = {space.first_epoch_stop(p) for p in ex.COVERING}
    assert {"inside", "at_end"} <= stops, stops


def test_first_epoch_stop_reads_the_data_length():
    base = {**space.default_point(), "epochs": 2}
    assert space.first_epoch_stop({**base, "epochs": 1}) is None
    assert space.first_epoch_stop(base) == "at_end"  # dummy data: max_steps global batches
    assert space.first_epoch_stop({**base, "data": "preset"}) == "later"
    text = {**base, "data": "text_jsonl", "tokenizer": "eos_pad"}
    assert space.first_epoch_stop(text) == "inside"  # 198 rows, 4 per step, 3 steps


@pytest.mark.parametrize(("budget", "expected"), [("0", {1}), ("60", {1, 2, 3})])
def test_drawn_resume_points_reach_every_world_size_with_a_budget(monkeypatch, budget, expected):
    from hypothesis import given, settings

    monkeypatch.setenv(strategies.BUDGET_ENV, budget)
    worlds: set[int] = set()

    @settings(max_examples=200, database=None, derandomize=True)
    @given(strategies.resume_points())
    def draw(point_k):
        point, k = point_k
        assert space.valid(point), space.violations(point)
        assert 1 <= k < point["steps"] and point["save_steps"]
        worlds.add(point["world"])

    draw()
    assert worlds == expected


def test_a_planted_extra_epoch_is_named_as_the_events(fresh_runs, monkeypatch):
    """HyperTrainer opens and closes one more epoch before ``on_train_end`` (what a finished run
    that enters the next epoch does): the covering case fails naming the events artifact."""
    from hyper_parallel.trainer.hyper_trainer import HyperTrainer

    original = HyperTrainer._dispatch

    def extra_epoch(self, hook, **kwargs):
        if hook == "on_train_end":
            original(self, "on_epoch_begin")
            original(self, "on_epoch_end")
        original(self, hook, **kwargs)

    i = next(i for i, p in enumerate(ex.COVERING) if p["world"] == 1 and space.first_epoch_stop(p))
    monkeypatch.setattr(HyperTrainer, "_dispatch", extra_epoch)
    outcome = _check(f"e2e_explore.explore_cover-point={i}")
    assert not outcome.ok
    paths = [d.path for d in outcome.report.differences]
    assert paths and all(p.startswith("e2e_explore.events") for p in paths), paths


@pytest.mark.slow
def test_resume_runs_on_two_ranks_reproduce_the_uninterrupted_tail():
    """Each trainer resumes from each trainer's step-1 shards of a 2-rank run, every rank's tail equal."""
    point = {**space.default_point(), "world": 2, "steps": 3, "save_steps": 1}
    runs = runner.resume_runs(point, 1)
    assert set(runs["expected"]) == set(runner.RESUME_ROUTES)
    for route, tail in runs["expected"].items():
        assert set(tail["losses"]) == {"rank0", "rank1"}
        assert len(tail["losses"]["rank0"]) == 2
        assert not ex._differ(tail, runs["actual"][route]), route


def test_a_resumed_hypertrainer_that_skips_on_load_is_named_as_the_events(fresh_runs, monkeypatch):
    """HyperTrainer resumed from a checkpoint does not tell user callbacks ``on_load``: the fixed
    resume case fails, naming the events of the routes that resume HyperTrainer only."""
    from hyper_parallel.trainer.hyper_trainer import HyperTrainer

    original = HyperTrainer._dispatch

    def no_load(self, hook, **kwargs):
        if hook != "on_load":
            original(self, hook, **kwargs)

    assert _check("e2e_explore.explore_resume_fixed").ok
    ex._RESUME_CACHE.clear()
    monkeypatch.setattr(HyperTrainer, "_dispatch", no_load)
    outcome = _check("e2e_explore.explore_resume_fixed")
    assert not outcome.ok
    paths = [d.path for d in outcome.report.differences]
    assert paths and all(".events" in p and "_to_new" in p for p in paths), paths
