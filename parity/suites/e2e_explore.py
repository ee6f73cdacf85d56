"""Explored end to end (tier A, tag ``explore``): configurations the harness chooses, not a person.

Three families, all comparing ``LLMTrainer`` with ``HyperTrainer`` built from the same legacy YAML
(through the legacy mapping or through ``--module qwen3_5 --config debug`` plus flags, as the point's
``route`` says), every artifact of ``parity.e2e.RUN_ARTIFACTS`` bit for bit (the
recipe artifacts plus ``events``, the user-callback event sequence: with several epochs, a run
that stops inside or at the end of an earlier epoch must not start the next one):

- ``explore_cover``: a fixed pairwise covering set of ``parity.explore.space`` (every allowed
  pair of feature values in at least one point; seeded, so ids and points never move);
- ``explore_drawn``: hypothesis-drawn points, as many as the budget allows
  (``--explore-budget SECONDS``; one without it); a failure is shrunk to the smallest diverging
  point, written as YAML under ``parity/reports/explore/<id>/`` with a one-line reproduce
  command, and localised;
- ``explore_resume``: resume anywhere: a drawn point (1 rank; 1, 2 or 3 with a budget) and step
  ``k``; each trainer resumed from each trainer's ``step_k`` must reproduce the uninterrupted
  run's steps ``k+1..T`` bit for bit, and a resumed ``HyperTrainer`` must dispatch the events a
  resumed ``LLMTrainer`` does (plus one fixed single-rank point, so the default run checks it too).

Nightly: ``HYPOTHESIS_PROFILE=explore python -m parity run --tag explore --explore-budget 3600``
(the ``explore`` profile allows 2000 examples; the budget ends the run). A shrunk point reruns with
``python -m parity.explore parity/reports/explore/<id>/point.yaml``.
"""

from __future__ import annotations

from typing import Any

from parity.cases import REGISTRY
from parity.explore import pairwise, space
from parity.explore.strategies import Budget, points, resume_points

_SEED = 42
TAG = "explore"

# The fixed covering set (``parity/explore/covering.json``, built by ``python -m
# parity.explore.pairwise``); ``python -m parity list --tag explore`` shows its cases.
COVERING: list[dict[str, Any]] = pairwise.load_covering()

# A fixed resume point: async saves with the HF export, accumulation 2, resumed mid-run at step 2 of 4.
RESUME_FIXED: tuple[dict[str, Any], int] = (
    {**space.default_point(), "steps": 4, "accum": 2, "save_steps": 1, "save_async": True, "warmup": 0.5},
    2,
)


# ----------------------------------------------------------------------------- producers
def _side(point: dict[str, Any], which: str) -> dict[str, Any]:
    from parity.explore import runner

    runs = runner.cached_run(point)
    side = "legacy" if which == "legacy" else runner.new_side_of(point)
    out = runner.side_artifacts(runs[side])
    if point["warmup_form"] == "steps":  # the schedule itself is compared by lr_curve
        out = {**out, "checkpoint": _without_warmup_form(out["checkpoint"])}
    return out


_WARMUP_FORM = ("lr_warmup_ratio", "warmup_steps")


def _without_warmup_form(checkpoint: Any) -> Any:
    """The checkpoint artifact without the manifest's warmup fields: a run given its warmup as
    steps records ``warmup_steps`` and ratio 0, the legacy run the ratio (the form differs, not
    the schedule). Per rank when the artifact is (``{"rank0": ...}``); copies, never in place."""
    if not isinstance(checkpoint, dict):
        return checkpoint
    if "keys" not in checkpoint:
        return {rank: _without_warmup_form(value) for rank, value in checkpoint.items()}
    dropped = {f"manifest_settings/lr_scheduler/{name}" for name in _WARMUP_FORM}
    state = dict(checkpoint["state"])
    settings = state.get("manifest_settings")
    if isinstance(settings, dict) and isinstance(settings.get("lr_scheduler"), dict):
        schedule = {k: v for k, v in settings["lr_scheduler"].items() if k not in _WARMUP_FORM}
        state["manifest_settings"] = {**settings, "lr_scheduler": schedule}
    keys = {k: v for k, v in checkpoint["keys"].items() if k not in dropped}
    return {**checkpoint, "keys": keys, "state": state}


def cover_legacy(*, point: int) -> dict[str, Any]:
    return _side(COVERING[point], "legacy")


def cover_new(*, point: int) -> dict[str, Any]:
    return _side(COVERING[point], "new")


BUDGETS: dict[str, Budget] = {"drawn": Budget(), "resume": Budget()}
LAST_FAILING: dict[str, Any] = {}


# Once the budget is spent, a draw is not run: both producers return SKIPPED (equal, so the example
# passes; rejecting it instead would trip hypothesis's filtering health check). ``_ADMITTED`` holds
# the legacy producer's decision for the draw the new producer is about to get.
SKIPPED = {"skipped": "the explore budget is spent: this draw was not run"}
_ADMITTED: dict[str, tuple[Any, bool]] = {}


def _admit(case: str, key: Any) -> bool:
    admitted = BUDGETS[case].admit()
    _ADMITTED[case] = (key, admitted)
    return admitted


def _was_admitted(case: str, key: Any) -> bool:
    return _ADMITTED.get(case) != (key, False)


def drawn_legacy(*, point: dict[str, Any]) -> dict[str, Any]:
    from parity.explore.runner import point_key

    if not _admit("drawn", point_key(point)):
        return SKIPPED
    return _side(point, "legacy")


def _differ(legacy: Any, new: Any) -> bool:
    """Whether the engine will find a difference (the same canonical form, the same compare)."""
    from parity.canonical import canonicalise
    from parity.compare import compare

    kind = "e2e_explore"
    return bool(compare(canonicalise(legacy, kind), canonicalise(new, kind), root=kind))


def drawn_new(*, point: dict[str, Any]) -> dict[str, Any]:
    from parity.explore.runner import point_key

    if not _was_admitted("drawn", point_key(point)):
        return SKIPPED
    new = _side(point, "new")
    if _differ(_side(point, "legacy"), new):
        BUDGETS["drawn"].failed()
        LAST_FAILING["drawn"] = point  # hypothesis replays the shrunk example last
    return new


def resume_expected(*, point_k: tuple[dict[str, Any], int]) -> dict[str, Any]:
    if not _admit("resume", _resume_key(point_k)):
        return SKIPPED
    return _resume(point_k)["expected"]


def resume_actual(*, point_k: tuple[dict[str, Any], int]) -> dict[str, Any]:
    if not _was_admitted("resume", _resume_key(point_k)):
        return SKIPPED
    runs = _resume(point_k)
    if _differ(runs["expected"], runs["actual"]):
        BUDGETS["resume"].failed()
        LAST_FAILING["resume"] = point_k
    return runs["actual"]


def resume_fixed_expected() -> dict[str, Any]:
    return _resume(RESUME_FIXED)["expected"]


def resume_fixed_actual() -> dict[str, Any]:
    return _resume(RESUME_FIXED)["actual"]


_RESUME_CACHE: dict[Any, dict[str, Any]] = {}


def _resume_key(point_k: tuple[dict[str, Any], int]) -> Any:
    from parity.explore.runner import point_key

    return (point_key(point_k[0]), point_k[1])


def _resume(point_k: tuple[dict[str, Any], int]) -> dict[str, Any]:
    from parity.explore import runner

    point, k = point_k
    key = _resume_key(point_k)
    if key not in _RESUME_CACHE:
        _RESUME_CACHE.clear()
        _RESUME_CACHE[key] = runner.resume_runs(point, k)
    return _RESUME_CACHE[key]


# ----------------------------------------------------------------------------- registration
SUITE = REGISTRY.suite(tags=(TAG,), kind="e2e_explore", seed=_SEED)
for _i in range(len(COVERING)):
    SUITE.pair(
        "explore_cover",
        params={"point": _i},
        legacy=cover_legacy,
        new=cover_new,
        share=f"explore:{_i}",
        localise="parity.tools.localise_explore:localise_cover",
    )
SUITE.pair(
    "explore_drawn",
    legacy=drawn_legacy,
    new=drawn_new,
    strategies={"point": points()},
    localise="parity.tools.localise_explore:localise_drawn",
)
SUITE.pair(
    "explore_resume",
    legacy=resume_expected,
    new=resume_actual,
    strategies={"point_k": resume_points()},
    localise="parity.tools.localise_explore:localise_resume",
)
SUITE.pair(
    "explore_resume_fixed",
    legacy=resume_fixed_expected,
    new=resume_fixed_actual,
    share="explore:resume_fixed",
)
