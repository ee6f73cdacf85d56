"""``get_logger`` gives the rank-aware helpers without patching ``logging.Logger``."""

from __future__ import annotations

import logging

import pytest

from hyper_parallel.platform.logging import RankLogger, get_logger


def test_get_logger_wraps_the_stdlib_logger_of_that_name() -> None:
    logger = get_logger("hyper_parallel.tests.platform")
    assert isinstance(logger, RankLogger) and isinstance(logger, logging.LoggerAdapter)
    assert logger.logger is logging.getLogger("hyper_parallel.tests.platform")
    assert get_logger("hyper_parallel.tests.platform") is logger
    # transformers installs its own warning_once/info_once on logging.Logger; the rank-0 helpers are ours.
    for helper in ("info_rank0", "warning_rank0"):
        assert not hasattr(logging.Logger, helper), f"logging.Logger was patched with {helper}"


def test_rank0_helpers_log_on_rank0_only(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    logger = get_logger("hyper_parallel.tests.rank0")
    with caplog.at_level(logging.INFO, logger="hyper_parallel.tests.rank0"):
        monkeypatch.setenv("RANK", "1")
        logger.info_rank0("from rank %d", 1)
        monkeypatch.setenv("RANK", "0")
        logger.info_rank0("from rank %d", 0)
    assert [r.getMessage() for r in caplog.records] == ["from rank 0"]


def test_once_helpers_log_a_message_once(caplog: pytest.LogCaptureFixture) -> None:
    logger = get_logger("hyper_parallel.tests.once")
    with caplog.at_level(logging.WARNING, logger="hyper_parallel.tests.once"):
        for _ in range(3):
            logger.warning_once("setting %s is odd", "x")
        logger.warning_once("setting %s is odd", "y")
    assert [r.getMessage() for r in caplog.records] == ["setting x is odd", "setting y is odd"]
