"""``python -m hyper_parallel.train``: parse a recipe or a legacy YAML into ``HyperTrainer.Config`` and train.

    python -m hyper_parallel.train --module qwen3_5 --config debug --training.steps 10
    python -m hyper_parallel.train examples/debug/train.yaml --train.max_steps=10
    torchrun --nproc_per_node 2 -m hyper_parallel.train --module qwen3_5 --config debug

``--help`` prints the whole tree with defaults (those of the recipe when one is selected) and the
available recipes. Every rank parses the same command line; the trainer sets up the process group.
A configuration or input error is one line ``hyper_parallel.train: error: ...`` and exit status 2
(a failed checkpoint save: status 1); ``HYPER_PARALLEL_DEBUG=1`` shows the traceback.
``--verbose`` (anywhere on the line, taken out before tyro parses) shows the third-party notices
that are otherwise filtered (``hyper_parallel.platform.quiet``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

__all__ = ["main", "parse_config"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, build and train; configuration and input errors are reported as usage errors."""
    from hyper_parallel.entry import run_main
    from hyper_parallel.platform.quiet import quiet_third_party, split_verbose

    args, verbose = split_verbose(sys.argv[1:] if argv is None else argv)
    quiet_third_party(verbose)
    return run_main("hyper_parallel.train", lambda: _train(args))


def parse_config(argv: Sequence[str] | None) -> Any:
    """The command line -> the validated ``HyperTrainer.Config`` that ``main`` builds and trains.

    A refused flag or value raises ``CommandLineError`` (one line ``<flag>: <what was expected>``),
    a refused Config or YAML file a ``ValueError`` naming the field; ``run_main`` prints either.
    """
    from hyper_parallel.trainer.legacy_mapping import config_manager

    return config_manager().parse_args(argv)


def _train(argv: Sequence[str] | None) -> int:
    from hyper_parallel.platform.logging import init_logger

    init_logger()
    config = parse_config(argv)
    config.build().train()
    return 0


if __name__ == "__main__":
    sys.exit(main())
