"""Legacy entry point: ``python scripts/train_lm.py CONFIG.yaml [--a.b.c=value ...]`` (also under torchrun).

A configuration or input error is one line ``train_lm.py: error: ...`` and exit status 2 (a failed
checkpoint save: status 1); ``HYPER_PARALLEL_DEBUG=1`` shows the traceback (``hyper_parallel.entry``).
``--verbose`` shows the third-party notices that are otherwise filtered (``hyper_parallel.platform.quiet``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

from hyper_parallel.trainer.utils import init_logger


def main(argv: list[str] | None = None) -> int:
    from hyper_parallel.entry import run_main
    from hyper_parallel.platform.quiet import quiet_third_party, split_verbose

    args, verbose = split_verbose(sys.argv[1:] if argv is None else argv)
    quiet_third_party(verbose)
    return run_main("train_lm.py", lambda: _train(args))


def parse_config(argv: list[str] | None) -> Any:
    """``CONFIG.yaml --a.b=v ...`` -> the validated ``LegacyTrainerArgs`` that ``main`` trains.

    Every refused key or value is a ``ValueError`` naming the field; ``run_main`` prints it as one line.
    """
    from hyper_parallel.trainer.config import LegacyTrainerArgs, parse_args
    from hyper_parallel.trainer.utils.discovery import discover_model_spec

    args = parse_args(LegacyTrainerArgs, argv)
    discover_model_spec(args.model.name)
    return args


def _train(argv: list[str] | None) -> int:
    init_logger()
    from hyper_parallel.trainer import LLMTrainer

    LLMTrainer(parse_config(argv)).train()
    return 0


if __name__ == "__main__":
    sys.exit(main())
