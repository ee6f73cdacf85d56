"""The product's warnings about a case's own set-up stay in the case's log on a quiet command line."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

import hyper_parallel.platform.quiet as quiet
from parity import case_log


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def root_records():
    handler = _Collect()
    root = logging.getLogger()
    root.addHandler(handler)
    yield handler.records
    root.removeHandler(handler)


def _outcome(status: str) -> SimpleNamespace:
    case = SimpleNamespace(id="some.case")
    return SimpleNamespace(case=case, backend="torch", status=status, ok=status == "pass", message="")


def test_quiet_run_keeps_product_warnings_in_the_case_log(monkeypatch, root_records, capsys):
    monkeypatch.setattr(quiet, "_quiet", True)
    product = logging.getLogger("hyper_parallel.components.tokenizer")
    with case_log.capture() as log:
        product.warning("tokenizer at /tmp/parity-x/no_eos has neither pad nor eos token")
        product.error("a real error")
    messages = [r.getMessage() for r in root_records]
    assert messages == ["a real error"]  # errors still reach the terminal
    assert log.warnings == [
        "WARNING hyper_parallel.components.tokenizer: tokenizer at /tmp/parity-x/no_eos has neither pad "
        "nor eos token"
    ]
    assert logging.getLogger("hyper_parallel").propagate  # put back
    log.judge(_outcome("pass"))
    assert "neither pad" not in capsys.readouterr().out  # a green case says nothing
    log.judge(_outcome("fail"))
    assert "neither pad" in capsys.readouterr().out  # a red one shows what the product said


def test_verbose_or_outside_the_cli_leaves_warnings_alone(monkeypatch, root_records):
    monkeypatch.setattr(quiet, "_quiet", False)  # --verbose, or pytest: no entry point made it quiet
    with case_log.capture() as log:
        logging.getLogger("hyper_parallel.data.preset_pt").warning("preset_pt with data.shuffle=true")
    assert [r.getMessage() for r in root_records] == ["preset_pt with data.shuffle=true"]
    assert log.warnings == []


def test_quiet_third_party_sets_quiet_unless_verbose(monkeypatch):
    monkeypatch.setattr(quiet, "_verbose", quiet._verbose)
    monkeypatch.setattr(quiet, "_quiet", quiet._quiet)
    for name in quiet.QUIET_ENV:
        monkeypatch.setenv(name, "user-set")  # left alone by quiet_third_party
    quiet.quiet_third_party(verbose=False)
    try:
        assert quiet.quiet()
        quiet.quiet_third_party(verbose=True)
        assert not quiet.quiet()
    finally:
        quiet.quiet_third_party(verbose=True)
