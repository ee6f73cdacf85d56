"""One rank of a multi-rank end-to-end recipe: train one side, dump every artifact as JSON.

``run_side`` is called in each forked rank by ``parity.suites.e2e_trainer``; as a module it is the
torchrun entry point: ``python -m torch.distributed.run --standalone --nproc_per_node=N -m
parity.suites._e2e_worker SIDE OUT_DIR [--a.b=v ...]``. Each rank writes
``OUT_DIR/<side>_rank<r>.json``: per artifact either ``{"value": <canonical JSON>}`` or
``{"error": "<why it could not be read>"}``. Not a suite module (the leading underscore keeps
``parity.suites`` from importing it).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def run_side(side: str, out: Path, overrides: Sequence[str]) -> Path:
    from parity.canonical import to_json
    from parity.suites.e2e_trainer import _SIDES, RUN_ARTIFACTS, ArtifactError

    rank = int(os.environ.get("RANK", "0"))
    run = _SIDES[side]  # "legacy", "new", or a side another suite registered (a forked rank inherits it)
    artifacts = run(*overrides, workdir=out / side)
    dumped = {}
    for name in RUN_ARTIFACTS:
        value = artifacts[name]
        dumped[name] = (
            {"error": str(value)} if isinstance(value, ArtifactError) else {"value": to_json(value)}
        )
    path = out / f"{side}_rank{rank}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dumped, sort_keys=True))
    tmp.replace(path)
    return path


def main() -> None:
    from parity import numerics

    numerics.apply(None)  # the parent's profile arrives through the environment
    run_side(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])


if __name__ == "__main__":
    main()
