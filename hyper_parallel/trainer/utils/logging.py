"""Rank-aware logging for the trainer (implemented in the platform layer, shared by all code)."""

from hyper_parallel.platform.logging import DEFAULT_FORMAT, current_rank, init_logger, install_rank_helpers

__all__ = ["DEFAULT_FORMAT", "current_rank", "init_logger", "install_rank_helpers"]
