"""``get_logger`` is ``logging.getLogger`` with the rank-aware helpers visible to the type checker."""

from __future__ import annotations

import logging

from hyper_parallel.platform.logging import RankLogger, get_logger


def test_get_logger_is_the_stdlib_logger_with_the_helpers() -> None:
    logger = get_logger("hyper_parallel.tests.platform")
    assert logger is logging.getLogger("hyper_parallel.tests.platform")
    assert RankLogger is logging.Logger  # a typing-only subclass: nothing changes at run time
    for helper in ("info_rank0", "warning_rank0", "info_once", "warning_once"):
        assert callable(getattr(logger, helper))
