"""One rank of a multi-rank end-to-end recipe: train one side, dump every artifact as JSON.

The torchrun entry point of ``parity.e2e.run_rank`` (forked ranks call it directly):
``python -m torch.distributed.run --standalone --nproc_per_node=N -m parity.e2e_worker SIDE OUT_DIR
[--a.b=v ...]``.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> None:
    from parity import numerics
    from parity.e2e import run_rank

    numerics.apply(None)  # the parent's profile arrives through the environment
    run_rank(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])


if __name__ == "__main__":
    main()
