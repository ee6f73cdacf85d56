"""Run one explore point on both trainers and return every artifact of each, ready to compare.

The runs are those of ``parity.e2e`` (``run_legacy``, ``run_new`` and the forked
multi-rank launch), so an explore point compares the nine artifacts a recipe compares plus the
user-callback event sequence (``events``: hooks, step, epoch and arguments, every rank). The
new side is ``HyperTrainer`` built through the legacy mapping (side ``new``), through the recipe
command line (sides ``new_cli``, ``new_cli_wsteps`` and their ``_title``/``_digit`` spellings) or through the command line's YAML path
(``new_yaml``); the last three are registered here into the e2e side table, so forked ranks find
them too.

``resume_runs`` is the resume-anywhere property: an uninterrupted run of each trainer saves at step
``k``; a fresh trainer of each kind resumes from each checkpoint (same trainer and across trainers)
and must reproduce the uninterrupted run's steps ``k+1..T`` bit for bit, on 1, 2 or 3 ranks (each
rank loads its own DCP shards).
"""

from __future__ import annotations

import functools
import tempfile
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from parity import canonical, e2e
from parity.e2e import RUN_ARTIFACTS, ArtifactError, Recipe, run_new
from parity.env import seed_all
from parity.explore import cli_route, space

SEED = 42

__all__ = ["SEED", "new_side_of", "point_key", "resume_runs", "run_point", "side_artifacts"]

e2e.SIDES.setdefault("new_yaml", functools.partial(run_new, config_of=cli_route.yaml_config))


def _cli_side(warmup_as_steps: bool, spelling: str) -> str:
    """``new_cli``, ``new_cli_wsteps``, ``new_cli_title``, ...: one side per command-line form."""
    return (
        "new_cli" + ("_wsteps" if warmup_as_steps else "") + ("" if spelling == "lower" else f"_{spelling}")
    )


for _wsteps in (False, True):
    for _spelling in cli_route.SPELLINGS:
        e2e.SIDES.setdefault(
            _cli_side(_wsteps, _spelling),
            functools.partial(
                run_new,
                config_of=functools.partial(
                    cli_route.cli_config, warmup_as_steps=_wsteps, spelling=_spelling
                ),
            ),
        )


def new_side_of(point: Mapping[str, Any]) -> str:
    """The side that builds ``HyperTrainer`` the way the point's ``route`` (and ``spelling``) says."""
    if point["route"] in ("mapping", "yaml"):
        return {"mapping": "new", "yaml": "new_yaml"}[point["route"]]
    return _cli_side(point["warmup_form"] == "steps", point["spelling"])


def point_key(point: Mapping[str, Any]) -> tuple:
    return tuple(sorted(point.items()))


def run_point(
    point: Mapping[str, Any], sides: tuple[str, ...] | None = None, extra: tuple[str, ...] = ()
) -> dict[str, dict[str, Any]]:
    """``{side: artifacts}`` of ``point`` (default sides: ``legacy`` and the point's new side)."""
    sides = sides or ("legacy", new_side_of(point))
    with tempfile.TemporaryDirectory(prefix="parity-explore-") as tmp:
        scratch = Path(tmp)
        overrides = (*space.render(point, scratch / "assets"), *extra)
        return _run_sides(sides, point["world"], scratch, overrides)


def _run_sides(
    sides: tuple[str, ...], world: int, scratch: Path, overrides: tuple[str, ...], keep: Path | None = None
) -> dict[str, dict[str, Any]]:
    """``{side: artifacts}``; with ``keep``, each side trains in ``keep/<side>`` (kept, e.g. to
    resume from its checkpoints), else in a temporary folder (one rank) or ``scratch/<side>``."""
    if world == 1:
        out = {}
        for side in sides:  # each side from the same global RNG state, as the engine seeds a producer
            seed_all(SEED)
            out[side] = e2e.SIDES[side](*overrides, workdir=None if keep is None else keep / side)
        return out
    recipe = Recipe("explore", "a drawn explore point", lambda _: overrides, nproc=world)
    # Each rank of a side trains in ``<folder>/<side>`` (``parity.e2e.run_rank``).
    folder = scratch if keep is None else keep
    folder.mkdir(parents=True, exist_ok=True)
    return e2e.run_multirank(sides, recipe, folder, overrides)


_CACHE: OrderedDict[tuple, dict[str, dict[str, Any]]] = OrderedDict()


def cached_run(point: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``run_point`` of the last few points: the two producers of one case share one run."""
    key = point_key(point)
    if key not in _CACHE:
        _CACHE[key] = run_point(point)
        while len(_CACHE) > 2:
            _CACHE.popitem(last=False)
    _CACHE.move_to_end(key)
    return _CACHE[key]


def side_artifacts(run: Mapping[str, Any]) -> dict[str, Any]:
    """The artifacts of one side (``RUN_ARTIFACTS``) as one tree (``{artifact: value}``): a difference's path
    names its artifact. An artifact that could not be read raises its ``ArtifactError``."""
    out = {}
    for name in RUN_ARTIFACTS:
        value = run[name]
        if isinstance(value, ArtifactError):
            raise value
        out[name] = value
    return out


# ----------------------------------------------------------------------------- resume anywhere
RESUME_ROUTES = ("legacy_to_legacy", "new_to_new", "legacy_to_new", "new_to_legacy")
_TAIL = ("losses", "grad_norms", "lr_curve", "batches", "metrics", "checkpoint", "hf_export")


def resume_runs(point: Mapping[str, Any], k: int) -> dict[str, dict[str, Any]]:
    """``{"expected": {route: tail}, "actual": {route: tail}}`` for every resume route.

    Each trainer runs ``point`` uninterrupted, saving every ``k`` steps (the point's other save
    settings kept); for each route a fresh
    trainer of the second kind loads ``step_k`` of the first kind's run and trains to the end. Its
    ``tail`` (curves and batches of steps ``k+1..T``, metric records of those steps, final
    checkpoint and HF export) must equal the tail of the second kind's uninterrupted run. A
    ``HyperTrainer`` resumed from a checkpoint also dispatches the user-callback events
    (``events``: ``on_load``, the epoch and step hooks, the saves) that ``LLMTrainer`` resumed from
    the same checkpoint dispatches. On ``point["world"]`` ranks: every run is a forked world of that size (each rank writes and
    loads its own DCP shards); curves, batches and metrics are compared per rank.
    """
    if not point["save_steps"]:
        raise ValueError("resume_runs: expected a point that saves (save_steps > 0)")
    world = point["world"]
    new = new_side_of(point)
    with tempfile.TemporaryDirectory(prefix="parity-resume-") as tmp:
        scratch = Path(tmp)
        base = space.render(point, scratch / "assets")
        overrides = (*base, f"--train.checkpoint.save_steps={k}")
        full = _run_sides(("legacy", new), world, scratch, overrides, keep=scratch / "full")
        expected: dict[str, Any] = {}
        actual: dict[str, Any] = {}
        kinds = {"legacy": "legacy", "new": new}
        events: dict[str, Any] = {}
        for route in RESUME_ROUTES:
            source, target = route.split("_to_")
            load = scratch / "full" / kinds[source] / "ckpt" / f"step_{k}"
            load_override = f"--train.checkpoint.load_path={load}"
            resumed = _run_sides(
                (kinds[target],), world, scratch, (*overrides, load_override), keep=scratch / route
            )[kinds[target]]
            expected[route] = _tail(full[kinds[target]], k, world)
            actual[route] = _tail(resumed, 0, world)
            events[route] = _artifact(resumed, "events")
        for source in ("legacy", "new"):
            expected[f"{source}_to_new"]["events"] = events[f"{source}_to_legacy"]
            actual[f"{source}_to_new"]["events"] = events[f"{source}_to_new"]
        return {"expected": expected, "actual": actual}


def _artifact(run: Mapping[str, Any], name: str) -> Any:
    value = run[name]
    if isinstance(value, ArtifactError):
        raise value
    return value


def _tail(run: Mapping[str, Any], k: int, world: int = 1) -> dict[str, Any]:
    """Steps ``k+1..T`` of a run's curves, batches and metrics (of each rank of a multi-rank run:
    ``{"rank<r>": value}``), and its final checkpoint and export."""
    out: dict[str, Any] = {}
    for name in _TAIL:
        value = _artifact(run, name)
        if world == 1:
            out[name] = _tail_of(name, value, k)
        else:
            out[name] = {rank: _tail_of(name, v, k) for rank, v in value.items()}
    return out


def _tail_of(name: str, value: Any, k: int) -> Any:
    if name in ("losses", "grad_norms", "lr_curve", "batches"):
        return value[k:]
    if name == "metrics":
        return {"keys": value["keys"], "values": [r for r in value["values"] if _step(r) > k]}
    return value


def _step(record: Mapping[str, Any]) -> float:
    step = record.get("step", 0)
    return step.value if isinstance(step, canonical.FloatLeaf) else step
