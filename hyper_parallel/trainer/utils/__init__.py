"""Trainer utilities. Importing this package installs the rank-aware logger helpers."""

from hyper_parallel.trainer.utils.logging import init_logger  # noqa: F401  (installs helpers)
