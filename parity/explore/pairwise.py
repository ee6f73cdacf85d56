"""A deterministic pairwise covering set of the explore space.

Every pair of values of two features that ``space.pair_allowed`` permits appears in at least one
point. Greedy, in the AETG manner: each new point starts from the first uncovered pair, then fills
the remaining features (in a seeded order) with the value that covers the most still-uncovered
pairs among the features already set, among the values allowed with everything chosen so far.
Ties go to the earlier value (the default first), so points stay close to the debug recipe where
coverage does not care. Because every constraint relates two features, a point whose pairs are all
allowed is valid.

The covering set the suite runs is data, ``covering.json`` beside this module: building it takes
seconds of search, and every process that registers the cases (each ``parity run``, each pytest
worker, each self-check plant) would pay them. ``load_covering`` reads it and refuses a file that
no longer fits the space; ``python -m parity.explore.pairwise`` rewrites it after a change to
``space`` (a test keeps file and search equal), and the diff shows a reviewer which points moved.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from parity.explore import space

__all__ = [
    "COVERING_FILE",
    "CoveringFileError",
    "all_pairs",
    "covered_pairs",
    "covering_set",
    "load_covering",
]

COVERING_FILE = Path(__file__).with_name("covering.json")
COVER_SEED = 9  # 40 points (seeds 0-9 give 40-46)
_REGENERATE = "python -m parity.explore.pairwise"

Pair = tuple[str, Any, str, Any]


def all_pairs(features: Mapping[str, Sequence[Any]] | None = None) -> set[Pair]:
    """Every allowed pair ``(feature_a, value_a, feature_b, value_b)``, features in declaration order."""
    features = features or space.FEATURES
    names = list(features)
    out: set[Pair] = set()
    for i, fa in enumerate(names):
        for fb in names[i + 1 :]:
            for va, vb in itertools.product(features[fa], features[fb]):
                if space.pair_allowed(fa, va, fb, vb):
                    out.add((fa, va, fb, vb))
    return out


def covered_pairs(points: Sequence[Mapping[str, Any]]) -> set[Pair]:
    names = list(space.FEATURES)
    out: set[Pair] = set()
    for p in points:
        for i, fa in enumerate(names):
            for fb in names[i + 1 :]:
                out.add((fa, p[fa], fb, p[fb]))
    return out


def covering_set(
    seed: int = 0, features: Mapping[str, Sequence[Any]] | None = None, candidates: int = 1
) -> list[dict[str, Any]]:
    """Points that together contain every allowed pair; the same list for the same seed."""
    features = features or space.FEATURES
    names = list(features)
    order = {name: i for i, name in enumerate(names)}
    uncovered = all_pairs(features)
    rng = random.Random(seed)
    points: list[dict[str, Any]] = []
    infeasible: set[Pair] = set()
    while uncovered:
        fa, va, fb, vb = min(uncovered, key=lambda p: (order[p[0]], order[p[2]], _rank(features, p)))
        point, best_gain = None, -1
        for _ in range(candidates):  # AETG: the best of a few greedy completions
            candidate = _complete({fa: va, fb: vb}, names, features, order, uncovered, rng)
            if candidate is None:
                break
            gain = len(covered_pairs([candidate]) & uncovered)
            if gain > best_gain:
                point, best_gain = candidate, gain
        if point is None:  # allowed as a pair, impossible with any third value: not required
            infeasible.add((fa, va, fb, vb))
            uncovered.discard((fa, va, fb, vb))
            continue
        full = {n: point[n] for n in names}
        if not space.valid(full):
            raise ValueError(f"covering_set: built an invalid point: {space.violations(full)}")
        uncovered -= covered_pairs([full])
        points.append(full)
    return points


def _complete(
    point: dict[str, Any],
    names: list[str],
    features: Mapping[str, Sequence[Any]],
    order: Mapping[str, int],
    uncovered: set[Pair],
    rng: random.Random,
) -> dict[str, Any] | None:
    """Fill every other feature: the constrained ones by a depth-first search (values tried in
    order of gain), the free ones greedily; None when no valid point extends ``point``."""
    # Only features that share a rule can forbid each other's values: check just those partners.
    partners: dict[str, set[str]] = {}
    for rule in space.CONSTRAINTS:
        partners.setdefault(rule.a, set()).add(rule.b)
        partners.setdefault(rule.b, set()).add(rule.a)
    constrained = set(partners)
    rest = [n for n in names if n not in point]
    rng.shuffle(rest)
    todo = [n for n in rest if n in constrained] + [n for n in rest if n not in constrained]

    def gain(name: str, value: Any, current: Mapping[str, Any]) -> int:
        return sum(1 for other, v in current.items() if _key(order, name, value, other, v) in uncovered)

    def solve(current: dict[str, Any], i: int) -> dict[str, Any] | None:
        if i == len(todo):
            return current
        name = todo[i]
        checks = [(o, ov) for o, ov in current.items() if o in partners.get(name, ())]
        fits = [v for v in features[name] if all(space.pair_allowed(name, v, o, ov) for o, ov in checks)]
        # Stable sort: among equal gains the earlier (default-first) value wins.
        for value in sorted(fits, key=lambda v: -gain(name, v, current)):
            found = solve({**current, name: value}, i + 1)
            if found is not None:
                return found
            if name not in constrained:
                return None  # a free feature never causes a dead end further down
        return None

    return solve(dict(point), 0)


def _key(order: Mapping[str, int], fa: str, va: Any, fb: str, vb: Any) -> Pair:
    return (fa, va, fb, vb) if order[fa] < order[fb] else (fb, vb, fa, va)


def _rank(features: Mapping[str, Sequence[Any]], pair: Pair) -> tuple[int, int]:
    fa, va, fb, vb = pair
    return features[fa].index(va), features[fb].index(vb)


# ----------------------------------------------------------------------------- the committed set
class CoveringFileError(ValueError):
    """``covering.json`` is missing, malformed, or does not fit ``space`` (rebuild it)."""


def covering_text(seed: int = COVER_SEED) -> str:
    """``covering.json``'s bytes: the seed, then one point per line (features in declaration order)."""
    rows = ",\n".join("    " + json.dumps(point) for point in covering_set(seed))
    return f'{{\n  "seed": {seed},\n  "points": [\n{rows}\n  ]\n}}\n'


def load_covering(path: Path = COVERING_FILE) -> list[dict[str, Any]]:
    """The committed covering set; every point must be a valid point of today's ``space``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        points = data["points"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CoveringFileError(
            f"{path}: unreadable covering set ({exc}); rebuild it with {_REGENERATE}"
        ) from None
    out = []
    for i, point in enumerate(points):
        problems = space.violations(point) if isinstance(point, dict) else ["not a mapping"]
        if problems:
            raise CoveringFileError(
                f"{path}: point {i} does not fit parity/explore/space.py ({problems[0]}); "
                f"rebuild it with {_REGENERATE}"
            )
        out.append({name: point[name] for name in space.FEATURES})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=_REGENERATE, description="Rebuild parity/explore/covering.json from parity/explore/space.py."
    )
    parser.add_argument("--seed", type=int, default=COVER_SEED, help=f"search seed (default {COVER_SEED})")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs, write nothing")
    args = parser.parse_args(argv)
    text = covering_text(args.seed)
    current = COVERING_FILE.read_text(encoding="utf-8") if COVERING_FILE.is_file() else None
    n = len(json.loads(text)["points"])
    if args.check:
        print(
            f"{COVERING_FILE}: {'up to date' if current == text else 'stale'} ({n} points, seed {args.seed})"
        )
        return 0 if current == text else 1
    from parity.fileio import write_text_atomic

    write_text_atomic(COVERING_FILE, text)
    print(f"wrote {COVERING_FILE}: {n} points, seed {args.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
