"""Session end of the parity tests: one garbage collection instead of pytest's five.

At the end of a session pytest's unraisable-exception plugin runs ``gc.collect()`` five times
(``_pytest.unraisableexception.cleanup``) to surface exceptions raised in finalisers. Each full
collection walks every live object, and a parity session keeps large ones alive to the end: the
cached trainer runs (``parity.e2e``), tokenizers, datasets. On 2 cores that cost
about 2-3 s per process, paid by every pytest-xdist worker before it exits (the controller waits
for them), so it weighed most on ``-n 2``.

Here, at ``pytest_unconfigure`` (before pytest's cleanups), one collection still finalises the
garbage there is, and its unraisable exceptions are reported as before; ``gc.freeze()`` then
moves the survivors to the permanent generation, so the five collections that follow only look
at what is created after this point.
"""

from __future__ import annotations

import gc

import pytest


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    gc.collect()
    gc.freeze()


@pytest.fixture
def fresh_explore_runs(monkeypatch, tmp_path):
    """Explore's run caches cleared around a test; a failing case writes its point into tmp_path."""
    from parity.explore import runner, shrunk
    from parity.suites import e2e_explore as ex

    monkeypatch.setattr(shrunk, "DEFAULT_DIR", tmp_path / "explore")
    runner._CACHE.clear()
    ex._RESUME_CACHE.clear()
    yield
    runner._CACHE.clear()
    ex._RESUME_CACHE.clear()
