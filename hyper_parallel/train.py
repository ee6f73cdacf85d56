"""``python -m hyper_parallel.train``: parse a recipe or a legacy YAML into ``HyperTrainer.Config`` and train.

    python -m hyper_parallel.train --module qwen3_5 --config debug --training.steps 10
    python -m hyper_parallel.train examples/debug/train.yaml --train.max_steps=10
    torchrun --nproc_per_node 2 -m hyper_parallel.train --module qwen3_5 --config debug

``--help`` prints the whole tree with defaults (those of the recipe when one is selected) and the
available recipes. Every rank parses the same command line; the trainer sets up the process group.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, build and train; a bad recipe selection or legacy value is reported as a usage error."""
    from hyper_parallel.config import ConfigManager
    from hyper_parallel.platform.logging import init_logger

    init_logger()
    try:
        config = ConfigManager().parse_args(argv)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        # tyro reports flag errors itself (exit 2); these come from --module/--config and the YAML path.
        print(f"hyper_parallel.train: error: {exc}", file=sys.stderr)
        return 2
    config.build().train()
    return 0


if __name__ == "__main__":
    sys.exit(main())
