"""The commands the harness prints take the form that runs where the user stands (parity.commands)."""

from __future__ import annotations

import pytest

from parity.commands import nox_session, parity

UNDER_NOX = {"NOX_CURRENT_SESSION": "parity(torch)"}


@pytest.mark.parametrize(
    ("args", "backend", "expected"),
    [
        (("update", "--backend", "torch", "--failed"), None, 'nox -s "parity_update(torch)" -- --failed'),
        (("update", "--failed"), "mindspore", 'nox -s "parity_update(mindspore)" -- --failed'),
        (("update", "--failed"), None, "nox -s parity_update -- --failed"),
        (("run", "--backend=torch", "--id", "a b"), None, "nox -s \"parity(torch)\" -- --id 'a b'"),
        (("run",), None, "nox -s parity"),
        (("cross", "--seed", "3"), None, 'nox -s "parity(cross)" -- --seed 3'),
    ],
    ids=["update-backend", "update-backend-arg", "update-every-backend", "run-quoted", "run-all", "cross"],
)
def test_under_a_parity_session_a_command_is_the_session_that_runs_it(args, backend, expected):
    assert parity(*args, backend=backend, environ=UNDER_NOX) == expected


def test_a_verb_no_session_runs_uses_the_sessions_interpreter():
    printed = parity("report", "--verbose", environ=UNDER_NOX)
    assert printed.endswith(" -m parity report --verbose") and "python" in printed


@pytest.mark.parametrize(
    "environ", [{}, {"NOX_CURRENT_SESSION": "tests(torch)"}], ids=["no-nox", "tests-session"]
)
def test_elsewhere_it_is_python_dash_m_parity(environ):
    """Outside nox, and under sessions whose parity commands run inside pytest's fixtures."""
    assert nox_session(environ) is None
    printed = parity(
        "update", "--backend", "torch", "--failed", environ=environ, env_prefix=["PYTHONHASHSEED=0"]
    )
    assert printed == "PYTHONHASHSEED=0 python -m parity update --backend torch --failed"
