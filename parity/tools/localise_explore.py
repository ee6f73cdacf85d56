"""Localisers of the explore cases (``parity.suites.e2e_explore``), resolved only when one fails.

Each writes the diverging point's files (``parity.explore.shrunk.write_point``: ``point.yaml``,
the legacy ``train.yaml`` with its assets, ``reproduce.txt``) and, for a single-rank point,
replays it on both trainers in lockstep (``parity.tools.localise.replay``) to name the first
step, phase and component that differ. A drawn case reports its shrunk point: hypothesis replays
the smallest failing example last, and the suite keeps it in ``LAST_FAILING``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from parity.explore import shrunk, space
from parity.explore.strategies import describe
from parity.tools import localise

__all__ = ["localise_cover", "localise_drawn", "localise_point", "localise_resume"]

_SEED = 42


def localise_point(point: Mapping[str, Any], *, seed: int = _SEED) -> dict[str, Any]:
    """The localiser's result for ``point`` (``line`` first); a skip line for multi-rank points.

    The replay builds ``HyperTrainer`` through the legacy mapping whatever the point's route: when
    only a command-line route diverges, the replay finds no difference and says so.
    """
    if point["world"] != 1:
        return {
            "line": f"not localised: the point runs {point['world']} ranks (the replay is single-process)"
        }
    with tempfile.TemporaryDirectory(prefix="parity-explore-localise-") as tmp:
        # kineto refuses to start off the main thread (each side replays on a worker thread).
        overrides = (*space.render(point, Path(tmp) / "assets"), "--train.profile.enabled=false")
        result = localise.replay(
            f"explore:{shrunk.point_id(point)}",
            localise._legacy_side(overrides, tmp),
            localise._new_side(overrides, tmp),
            seed=seed,
        )
    return result.to_dict()


def report(point: Mapping[str, Any], *, note: str, replay: bool = True) -> dict[str, Any]:
    """Write the point's YAML files and reproduce line; add the localiser's first divergence."""
    path = shrunk.write_point(point, note=note)
    reproduce = shrunk.reproduce_line(path)
    data: dict[str, Any] = {
        "line": f"{note}: {describe(point)}; YAML {path.parent / 'train.yaml'}; reproduce: {reproduce}",
        "evidence": [f"point: {path}", f"reproduce: {reproduce}"],
    }
    if replay:
        try:
            found = localise_point(point)
        except Exception as exc:  # the divergence stays the news
            found = {"line": f"not localised: {type(exc).__name__}: {exc}"}
        data["line"] += "\n" + str(found.get("line"))
        data["evidence"] += list(found.get("evidence") or [])
        data["localisation"] = found
    return data


def localise_cover(*, point: int) -> dict[str, Any]:
    from parity.suites.e2e_explore import COVERING

    return report(COVERING[point], note=f"covering point {point}")


def localise_drawn() -> dict[str, Any]:
    from parity.suites.e2e_explore import LAST_FAILING

    point = LAST_FAILING.get("drawn")
    if point is None:
        return {"line": "not localised: no drawn point failed in this process"}
    return report(point, note="shrunk drawn point")


def localise_resume() -> dict[str, Any]:
    from parity.suites.e2e_explore import LAST_FAILING

    point_k = LAST_FAILING.get("resume")
    if point_k is None:
        return {"line": "not localised: no drawn resume point failed in this process"}
    point, k = point_k
    return report(point, note=f"shrunk resume point, resumed at step {k}", replay=False)
