"""The registered parity cases (``parity/suites``) through pytest: what ``pytest -n auto`` runs.

Same engine as ``python -m parity run``; ``--snapshot-update -n 0`` regenerates their goldens.
"""

from __future__ import annotations

import pytest

from parity.pytest_plugin import assert_no_unused_goldens, case_params, run_case
from parity.suites import REGISTRY


@pytest.mark.parametrize(("case", "backend"), case_params(REGISTRY))
def test_case(case, backend, request):
    run_case(request, REGISTRY, case, backend)


def test_no_unused_goldens():
    assert_no_unused_goldens(REGISTRY)
