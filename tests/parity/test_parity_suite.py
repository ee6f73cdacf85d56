"""The registered parity cases (``parity/suites``) that no component test runs: what ``pytest -n auto``
adds to the component tests.

A component's test module (``tests/torch/ut/components/test_<component>.py``) runs the cases that
carry its tag (``case_params(REGISTRY, tag="<component>")``); this module runs every other case
(end-to-end, legacy, self-check), so each case runs once under ``nox -s tests``
(``test_parity_run_once.py`` checks it). Same engine as ``python -m parity run``;
``--snapshot-update -n 0`` regenerates their goldens.
"""

from __future__ import annotations

import pytest

from parity.pytest_plugin import assert_no_unused_goldens, case_params, run_case
from parity.suites import COMPONENT_TAGS, REGISTRY


def not_in_a_component_test(params: list) -> list:
    """The ``case_params`` whose case carries no component tag (no component test selects it)."""
    return [p for p in params if not set(p.values[0].tags) & set(COMPONENT_TAGS)]


@pytest.mark.parametrize(("case", "backend"), not_in_a_component_test(case_params(REGISTRY)))
def test_case(case, backend, request):
    run_case(request, REGISTRY, case, backend)


def test_no_unused_goldens():
    assert_no_unused_goldens(REGISTRY)
