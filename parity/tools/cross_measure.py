"""Tier C bounds from data: the largest difference per recipe and artifact over measured runs.

``python -m parity.tools.cross_measure SOURCE`` reads either a ``cross.json`` report of
``python -m parity cross --seed 1 ... --seed 5`` (its ``largest_by_recipe``) or a ``--keep``
folder of such a run (``<recipe>/seed_<n>/{legacy,new}``, compared again here, so runs kept from
separate invocations combine), prints ``parity.cross.MEASURED`` and ``MEASURED_WITH`` (the goldens the bounds describe, read from
GOLDEN_ROOT, default the repository's) as Python to paste, and names each recipe/artifact whose
measured difference exceeds the bound the table sets now (exit 1).
"""

from __future__ import annotations

import json
import pprint
import sys
from pathlib import Path
from typing import Any

from parity import cross, golden


def measure_kept(root: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Compare every complete ``<recipe>/seed_<n>`` run under a ``--keep`` folder again."""
    runs = []
    order = list(cross.CROSS_RECIPES)
    kept = [(p.parent.name, p.name.removeprefix("seed_"), p) for p in root.glob("*/seed_*")]
    kept = [(recipe, seed, p) for recipe, seed, p in kept if recipe in order and seed.isdigit()]
    for recipe, seed, where in sorted(kept, key=lambda k: (order.index(k[0]), int(k[1]))):
        if not all((where / side / "arrays.safetensors").is_file() for side in ("legacy", "new")):
            continue
        results = cross.compare_sides(where / "legacy", where / "new", recipe)
        runs.append({"recipe": recipe, "seed": int(seed), "results": results})
    return cross.largest_by_recipe(runs)


def beyond_the_table(found: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Each recipe/artifact whose measured difference the current table would not pass."""
    out = []
    for recipe, artifacts in found.items():
        for artifact, value in artifacts.items():
            rows = [t for t in cross.TOLERANCES if t.artifact == artifact and t.recipe in (recipe, "*")]
            bound = rows[0].bound if rows else None
            if bound is None:
                out.append(f"{recipe}/{artifact}: {value['max_abs']:.3e}, and the table has no bound for it")
            elif value["max_abs"] > bound:
                out.append(f"{recipe}/{artifact}: {value['max_abs']:.3e} > bound {bound:.3e}")
    return out


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(
            "usage: python -m parity.tools.cross_measure CROSS_JSON_OR_KEEP_DIR [GOLDEN_ROOT]",
            file=sys.stderr,
        )
        return 2
    source = Path(argv[0])
    golden_root = Path(argv[1]) if len(argv) == 2 else golden.DEFAULT_ROOT
    if source.is_dir():
        found = measure_kept(source)
    elif source.is_file():
        found = json.loads(source.read_text()).get("largest_by_recipe", {})
    else:
        print(f"cross_measure: {source} is neither a cross.json report nor a --keep folder", file=sys.stderr)
        return 2
    if not found:
        print(f"cross_measure: {source} holds no seeded tier C run", file=sys.stderr)
        return 2
    for recipe, artifacts in found.items():
        seeds = next(iter(artifacts.values()))["seeds"]
        print(f"# {recipe}: seeds {', '.join(map(str, seeds))}")
    measured = {
        r: {a: {"max_abs": v["max_abs"], "seed": v["seed"]} for a, v in arts.items()}
        for r, arts in found.items()
    }
    print("MEASURED = " + pprint.pformat(measured, sort_dicts=False, width=100))
    # The goldens these bounds describe, as they are now (the golden lint compares against them).
    print("MEASURED_WITH = " + pprint.pformat(cross.measured_with(golden_root), sort_dicts=False, width=100))
    beyond = beyond_the_table(found)
    for line in beyond:
        print(f"beyond the table: {line}")
    return 1 if beyond else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
