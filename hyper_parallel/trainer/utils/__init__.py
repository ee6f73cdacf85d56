"""Trainer utilities: logging entry points, loss reductions, model discovery.

``init_logger`` is re-exported for ``scripts/train_lm.py``.
"""

from hyper_parallel.trainer.utils.logging import init_logger

__all__ = ["init_logger"]
