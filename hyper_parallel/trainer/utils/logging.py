"""The legacy trainer's logging entry points (the implementation is the platform layer's)."""

from hyper_parallel.platform.logging import DEFAULT_FORMAT, current_rank, get_logger, init_logger

__all__ = ["DEFAULT_FORMAT", "current_rank", "get_logger", "init_logger"]
