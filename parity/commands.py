"""The commands the harness prints, in the form that runs where the user stands.

Under nox the project's packages live in the backend's venv (``.nox/venv-torch/``), not in the shell
the user types in: ``python -m parity update --failed`` printed by ``nox -s parity`` fails there with
``ModuleNotFoundError``. nox sets ``NOX_CURRENT_SESSION`` to the session's name (``parity(torch)``)
in every command a session runs (``nox/sessions.py``, ``SessionRunner.execute``), so a command
printed from a session that runs the parity CLI is given as the nox session that runs it:

    update --backend B ARGS  ->  nox -s "parity_update(B)" -- ARGS
    update ARGS              ->  nox -s parity_update -- ARGS   (every backend, one combined review)
    run --backend B ARGS     ->  nox -s "parity(B)" -- ARGS
    cross ARGS               ->  nox -s "parity(cross)" -- ARGS

and a verb no session runs (``list``, ``bisect``, ``report``, ``env``) with the session's own
interpreter (``.nox/venv-torch/bin/python -m parity list``). Anywhere else (the development venv
of ``nox -s dev``, CI, a pytest session's fixtures) it is ``python -m parity ARGS``.

:func:`parity` is the one place that chooses; every command the harness prints goes through it.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence

__all__ = ["NOX_SESSION_ENV", "PARITY_SESSIONS", "nox_session", "parity"]

NOX_SESSION_ENV = "NOX_CURRENT_SESSION"
# The sessions of noxfile.py whose commands are ``python -m parity ...``. Under the others (tests,
# slow, bench) the parity CLI runs inside pytest's fixtures, whose output is checked as printed here.
PARITY_SESSIONS = ("parity", "parity_update", "explore", "selfcheck", "selfcheck_quick", "mutation")
# The verbs a nox session runs, and its name (``{}``: the backend).
_SESSION_OF_VERB = {"update": "parity_update", "run": "parity"}


def nox_session(environ: Mapping[str, str] | None = None) -> str | None:
    """The nox session this process runs under (``parity(torch)``), when it runs the parity CLI."""
    name = (os.environ if environ is None else environ).get(NOX_SESSION_ENV, "")
    return name if name.partition("(")[0] in PARITY_SESSIONS else None


def parity(
    *args: str,
    backend: str | None = None,
    environ: Mapping[str, str] | None = None,
    env_prefix: Sequence[str] = (),
) -> str:
    """``python -m parity ARGS`` as the user types it from where they stand (see the module doc).

    ``args`` are unquoted (each is quoted here). ``backend`` names the nox session when ``args``
    have no ``--backend`` (it is never added to the ``python -m parity`` form). ``env_prefix``
    (``PYTHONHASHSEED=0``) goes before ``python``; nox sessions set those themselves.
    """
    session = nox_session(environ)
    if session is None:
        return _join([*env_prefix, "python", "-m", "parity", *args])
    verb, rest = (args[0], list(args[1:])) if args else ("", [])
    named, rest = _take_backends(rest)
    backends = named or ([backend] if backend else [])
    if verb == "cross":
        return _nox("parity(cross)", rest)
    base = _SESSION_OF_VERB.get(verb)
    if base is not None and len(backends) == 1:
        return _nox(f"{base}({backends[0]})", rest)
    if verb == "update" and not backends:  # parity_update runs every backend
        return _nox(base or "", rest)
    if verb == "run" and not backends and not rest:
        return "nox -s parity"
    # No session runs it as asked: the interpreter of the session the user just ran.
    return _join([_interpreter(), "-m", "parity", *args])


def _take_backends(args: list[str]) -> tuple[list[str], list[str]]:
    """The ``--backend`` values of ``args`` and the other arguments."""
    backends: list[str] = []
    rest: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--backend":
            backends.append(next(it, ""))
        elif arg.startswith("--backend="):
            backends.append(arg.partition("=")[2])
        else:
            rest.append(arg)
    return backends, rest


def _nox(session: str, posargs: Sequence[str]) -> str:
    name = f'"{session}"' if "(" in session else session
    return f"nox -s {name}" + (" -- " + _join(posargs) if posargs else "")


def _interpreter() -> str:
    """This interpreter, relative to the current folder when it is under it (``.nox/x/bin/python``)."""
    path = os.path.abspath(sys.executable)
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def _join(parts: Sequence[str]) -> str:
    return " ".join(shlex.quote(p) for p in parts)  # ``PYTHONHASHSEED=0`` needs no quotes: it keeps none
