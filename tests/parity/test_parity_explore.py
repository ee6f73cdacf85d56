"""The explore machinery (``parity.explore``, ``parity.suites.e2e_explore``) can fail, and says where.

- the space: every covering point is valid, every feasible pair is covered, the set is fixed;
- the strategy draws valid points only;
- a planted divergence (one side's LR factor, the collate's pad id) turns a covering case red and
  the report names the artifact;
- a drawn case that diverges is shrunk to the smallest point, written as YAML with a one-line
  reproduce command (the runs are replaced by a cheap fake there: shrinking takes many examples);
- the command line's ``--explore-budget`` takes seconds only.
"""

from __future__ import annotations

import itertools
import json

import pytest
import yaml

from parity import golden
from parity.engine import Engine
from parity.explore import cli_route, pairwise, runner, shrunk, space, strategies
from parity.suites import REGISTRY
from parity.suites import e2e_explore as ex
from parity.tools import localise_explore


@pytest.fixture
def fresh_runs(fresh_explore_runs):
    """The explore caches cleared around the test (``fresh_explore_runs`` in conftest.py)."""
    yield


def _check(case_id: str, report_dir=None):
    case = REGISTRY.get(case_id)
    assert case is not None, case_id
    engine = Engine(REGISTRY, golden_root=golden.DEFAULT_ROOT, report_dir=report_dir)
    return engine.check(case, "torch")


def _cover_id(i: int) -> str:
    return f"e2e_explore.explore_cover-point={i}"


def _first(**want) -> int:
    """The first covering point with the given feature values."""
    for i, p in enumerate(ex.COVERING):
        if all(p[k] in (v if isinstance(v, tuple) else (v,)) for k, v in want.items()):
            return i
    raise AssertionError(f"no covering point with {want}")


# ----------------------------------------------------------------------------- the space
def test_covering_set_is_valid_fixed_and_covers_every_feasible_pair():
    points = ex.COVERING
    assert pairwise.COVERING_FILE.read_text(encoding="utf-8") == pairwise.covering_text(), (
        "parity/explore/covering.json is stale: rebuild it with python -m parity.explore.pairwise"
    )
    assert points == pairwise.covering_set(pairwise.COVER_SEED), (
        "the covering set must not depend on the process"
    )
    for p in points:
        assert space.valid(p), space.violations(p)
    required = pairwise.all_pairs()
    covered = pairwise.covered_pairs(points) & required
    # A pair the rules allow but no valid point holds (through a third feature) is not required;
    # whatever is left uncovered must be such a pair.
    names = list(space.FEATURES)
    order = {name: i for i, name in enumerate(names)}
    for fa, va, fb, vb in required - covered:
        assert pairwise._complete({fa: va, fb: vb}, names, space.FEATURES, order, set(), _rng()) is None
    assert len(covered) / len(required) > 0.99
    for i in range(len(points)):
        assert REGISTRY.get(_cover_id(i)) is not None
    # Every value of every feature appears; worlds 1, 2 and 3 all run.
    for name, values in space.FEATURES.items():
        assert {p[name] for p in points} == set(values), name


def _rng():
    import random

    return random.Random(0)


def test_a_rule_violation_is_one_line_naming_both_features():
    bad = {**space.default_point(), "data": "text_jsonl"}  # text data with no tokenizer
    lines = space.violations(bad)
    assert lines and "data='text_jsonl'" in lines[0] and "tokenizer='none'" in lines[0]
    with pytest.raises(ValueError, match="invalid explore point"):
        space.render(bad, __import__("pathlib").Path("/nonexistent"))


def test_drawn_points_are_valid():
    from hypothesis import HealthCheck, given, settings

    seen = set()

    @settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategies.points())
    def check(point):
        assert space.valid(point), space.violations(point)
        seen.add(point["data"])

    check()
    assert len(seen) > 3


def test_cli_route_translates_every_override_it_can_meet(tmp_path):
    """Every key a point renders has a recipe flag; the command line parses into a Config."""
    keys = set()
    for p in ex.COVERING:
        for token in space.render(p, tmp_path / "assets"):
            keys.add(token[2:].partition("=")[0])
    # data.type: a dataloader subcommand; train.accelerator.dp: folded into dp_shard; the model
    # shape overrides have no recipe flag (space rule route/model keeps them off the cli route)
    assert not space.pair_allowed("route", "cli", "model", "deep_mha")
    shape = {"model.num_hidden_layers", "model.num_key_value_heads"}
    assert keys - set(cli_route.FLAGS) - {"data.type", "train.accelerator.dp"} - shape == set()
    point = {**space.default_point(), "route": "cli", "warmup_form": "steps", "warmup": 0.5, "steps": 3}
    argv = cli_route.cli_argv(space.render(point, tmp_path / "assets"), warmup_as_steps=True)
    assert argv[:4] == ["--module", "qwen3_5", "--config", "debug"]
    assert argv[argv.index("--lr_scheduler.warmup_steps") + 1] == "2"  # ceil(3 * 0.5)
    config = cli_route.cli_config(space.render(point, tmp_path / "assets"), warmup_as_steps=True)
    assert config.lr_scheduler.warmup_steps == 2 and config.training.steps == 3


# ----------------------------------------------------------------------------- plants
def test_a_planted_lr_divergence_turns_a_covering_case_red(fresh_runs, monkeypatch):
    """HyperTrainer's LR factor off by one part in 1e9 after warmup: the case fails naming lr_curve."""
    from hyper_parallel.components import lr_scheduler

    original = lr_scheduler.lr_factor

    def drifting(**kwargs):
        factor = original(**kwargs)
        return lambda step: factor(step) * (1 + 1e-9) if step >= 1 else factor(step)

    i = _first(world=1, data="dummy")
    assert _check(_cover_id(i)).ok
    runner._CACHE.clear()
    monkeypatch.setattr(lr_scheduler, "lr_factor", drifting)
    outcome = _check(_cover_id(i))
    assert not outcome.ok
    paths = [d.path for d in outcome.report.differences]
    assert any(p.startswith("e2e_explore.lr_curve") for p in paths), paths


def test_a_planted_pad_id_divergence_is_named_as_the_batches(fresh_runs, monkeypatch):
    """The new collate pads ids with pad + 1 on a padded text point: the batches differ."""
    from hyper_parallel.components import dataloader

    i = _first(world=1, data=("text_key", "alpaca_plain"))  # short rows: every micro-batch pads
    original = dataloader.BaseDataLoader._pad_id
    monkeypatch.setattr(dataloader.BaseDataLoader, "_pad_id", lambda self, tok: original(self, tok) + 1)
    outcome = _check(_cover_id(i))
    assert not outcome.ok
    paths = [d.path for d in outcome.report.differences]
    assert any(p.startswith("e2e_explore.batches") for p in paths), paths


# ----------------------------------------------------------------------------- shrinking
def test_a_drawn_divergence_shrinks_to_the_smallest_point_with_yaml_and_reproduce_line(
    fresh_runs, monkeypatch, tmp_path
):
    """A fake run that diverges only with decay=constant and seed=3: hypothesis shrinks every other
    feature to its default, the report names the losses and points at point.yaml, train.yaml and
    a reproduce line."""
    from hypothesis import settings

    def fake(point):
        bump = 1.0 if point["decay"] == "constant" and point["seed"] == 3 else 0.0
        side = {name: [1.0] for name in runner.RUN_ARTIFACTS}
        return {"legacy": side, runner.new_side_of(point): {**side, "losses": [1.0 + bump]}}

    monkeypatch.setattr(runner, "cached_run", fake)
    monkeypatch.setattr(runner, "side_artifacts", lambda run: dict(run))
    monkeypatch.setattr(shrunk, "DEFAULT_DIR", tmp_path)
    monkeypatch.setattr(
        localise_explore, "localise_point", lambda point: {"line": "first divergence: step 1"}
    )
    monkeypatch.setenv(strategies.BUDGET_ENV, "60")
    ex.BUDGETS["drawn"].reset()
    ex.LAST_FAILING.clear()
    case = REGISTRY.get("e2e_explore.explore_drawn")
    engine = Engine(
        REGISTRY,
        golden_root=golden.DEFAULT_ROOT,
        report_dir=None,
        hypothesis_settings=settings(max_examples=300, database=None, deadline=None, derandomize=True),
    )
    outcome = engine.check(case, "torch")
    ex.BUDGETS["drawn"].reset()
    assert not outcome.ok and outcome.report is not None, outcome.message
    assert [d.path for d in outcome.report.differences][0].startswith("e2e_explore.losses")
    point = ex.LAST_FAILING["drawn"]
    assert strategies.describe(point) in ("decay=constant, seed=3", "seed=3, decay=constant")
    written = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert {"point.yaml", "train.yaml", "reproduce.txt"} <= set(written)
    point_yaml = next(tmp_path.rglob("point.yaml"))
    assert shrunk.load_point(point_yaml) == point
    line = outcome.report.localisation["line"]
    assert f"reproduce: python -m parity.explore {point_yaml}" in line and "first divergence: step 1" in line
    legacy_yaml = yaml.safe_load(next(tmp_path.rglob("train.yaml")).read_text())
    assert (
        legacy_yaml["train"]["optimizer"]["lr_decay_style"] == "constant"
        and legacy_yaml["train"]["seed"] == 3
    )


def test_the_budget_admits_one_example_without_a_flag_and_lifts_after_a_failure(monkeypatch):
    monkeypatch.delenv(strategies.BUDGET_ENV, raising=False)
    budget = strategies.Budget()
    assert budget.admit() and not budget.admit()
    budget.failed()
    assert budget.admit()
    monkeypatch.setenv(strategies.BUDGET_ENV, "-1")
    with pytest.raises(ValueError, match=strategies.BUDGET_ENV):
        strategies.Budget().seconds()


def test_explore_budget_flag_takes_seconds_only(capsys):
    from parity.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", "--tag", "explore", "--explore-budget", "soon"])
    assert exc.value.code == 2
    assert "--explore-budget" in capsys.readouterr().err


def test_point_yaml_errors_name_the_feature(tmp_path):
    path = tmp_path / "point.yaml"
    path.write_text("world: 4\n")
    with pytest.raises(ValueError, match="world=4"):
        shrunk.load_point(path)
    assert shrunk.main([str(path)]) == 2


@pytest.mark.parametrize("route", ["mapping", "cli", "yaml"])
def test_each_route_has_a_side(route):
    point = {**space.default_point(), "route": route}
    assert runner.new_side_of(point) in runner.e2e.SIDES


def test_pairs_are_symmetric():
    for (fa, va), (fb, vb) in itertools.product([("data", "dummy"), ("tokenizer", "eos_pad")], repeat=2):
        if fa != fb:
            assert space.pair_allowed(fa, va, fb, vb) == space.pair_allowed(fb, vb, fa, va)


def test_without_a_budget_a_drawn_case_runs_one_example_and_passes(fresh_runs, monkeypatch):
    """Later draws are skipped (both sides return the same marker), so hypothesis neither rejects
    them (its filtering health check) nor runs them."""
    from hypothesis import settings

    calls = []

    def fake(point):
        calls.append(point)
        side = {name: [1.0] for name in runner.RUN_ARTIFACTS}
        return {"legacy": side, runner.new_side_of(point): side}

    monkeypatch.setattr(runner, "cached_run", fake)
    monkeypatch.setattr(runner, "side_artifacts", lambda run: dict(run))
    monkeypatch.delenv(strategies.BUDGET_ENV, raising=False)
    ex.BUDGETS["drawn"].reset()
    engine = Engine(
        REGISTRY,
        golden_root=golden.DEFAULT_ROOT,
        report_dir=None,
        hypothesis_settings=settings(max_examples=25, database=None, deadline=None),
    )
    outcome = engine.check(REGISTRY.get("e2e_explore.explore_drawn"), "torch")
    ex.BUDGETS["drawn"].reset()
    assert outcome.ok, outcome.message
    assert len({runner.point_key(p) for p in calls}) == 1


def test_a_covering_file_that_no_longer_fits_the_space_is_one_line_naming_file_point_and_fix(tmp_path):
    point = {**space.default_point(), "micro": 7}
    bad = tmp_path / "covering.json"
    bad.write_text(json.dumps({"seed": 0, "points": [space.default_point(), point]}), encoding="utf-8")
    with pytest.raises(pairwise.CoveringFileError) as info:
        pairwise.load_covering(bad)
    message = str(info.value)
    assert "\n" not in message
    assert str(bad) in message and "point 1" in message and "micro=7" in message
    assert "python -m parity.explore.pairwise" in message
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(pairwise.CoveringFileError, match="unreadable covering set"):
        pairwise.load_covering(bad)


def test_preset_points_use_micro_batches_that_pad():
    # A one-row micro-batch of preset rows never pads: the pad id would go unseen.
    assert all(p["micro"] > 1 for p in ex.COVERING if p["data"] == "preset")
    assert any(p["data"] == "preset" and p["tokenizer"] == "own_pad" for p in ex.COVERING)
