"""nox sessions: ``tests``, ``parity(backend)`` (the main job), ``parity_update``, ``bench``, ``lint``, ``typecheck``, ``slow``, ``selfcheck``.

Each session installs the project with its ``dev`` extra into its own venv (torch comes pinned by
pyproject as ``torch==2.13.0``); venvs are reused between runs, so only the first run installs.
Every run gets ``PYTHONHASHSEED=0``.

    nox -s parity            # every registered parity case, torch backend (mindspore: skipped unless installed)
    nox -s tests             # pytest -n auto (slow tests excluded; see `nox -s slow`)
    nox -s parity_update     # regenerate goldens, serially, printing their diffs
    nox -s typecheck         # mypy over hyper_parallel/ and parity/ ([tool.mypy] in pyproject.toml)
    nox -s selfcheck         # plant the divergences of parity/plants.py; how many does the suite catch?
"""

from __future__ import annotations

import os

import nox

nox.needs_version = ">=2024.3.2"
nox.options.sessions = ["lint", "typecheck", "tests", "parity"]
nox.options.error_on_external_run = True

DEV = ("-e", ".[dev]")
ENV = {"PYTHONHASHSEED": "0"}
BACKENDS = ["torch", "mindspore"]


def _install_project(session: nox.Session) -> None:
    if session.venv_backend == "none":  # `nox --no-venv`: use the current environment as it is
        session.log("no venv: using the current environment's packages")
        return
    session.install(*DEV)


def _has_module(session: nox.Session, module: str) -> bool:
    code = f"import importlib.util as u; print(u.find_spec({module!r}) is not None)"
    out = session.run("python", "-c", code, silent=True, log=False)
    return isinstance(out, str) and out.strip().endswith("True")


@nox.session(reuse_venv=True)
def tests(session: nox.Session) -> None:
    """The test suite under pytest-xdist (``-n auto``); extra pytest arguments after ``--``."""
    _install_project(session)
    session.run("pytest", "-n", "auto", "-m", "not slow", *session.posargs, env=ENV)


@nox.session(reuse_venv=True)
@nox.parametrize("backend", [nox.param(b, id=b) for b in BACKENDS])
def parity(session: nox.Session, backend: str) -> None:
    """Every registered parity case on one backend (``python -m parity run``); summary table, exit 1 on failure."""
    if backend == "mindspore" and not _has_module(session, "mindspore"):
        if not os.environ.get("PARITY_INSTALL_MINDSPORE"):
            session.skip(
                "mindspore is not installed in this session's venv; set PARITY_INSTALL_MINDSPORE=1 to install "
                "the CPU wheel (it needs numpy<2) and run the mindspore backend"
            )
        session.install("mindspore", "numpy<2")  # a --no-venv run stops here: install it yourself
    _install_project(session)
    session.run(
        "python", "-m", "parity", "run", "--backend", backend, *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": backend},
    )  # fmt: skip


@nox.session(reuse_venv=True)
def parity_update(session: nox.Session) -> None:
    """Regenerate the torch goldens serially and print a unified diff of each one that changes."""
    _install_project(session)
    session.run(
        "python", "-m", "parity", "update", "--backend", "torch", *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": "torch"},
    )  # fmt: skip


@nox.session(reuse_venv=True)
def selfcheck(session: nox.Session) -> None:
    """``python -m parity selfcheck``: plant each divergence, run the suite, report the catch rate.

    Not a default session (tens of minutes on 2 cores). ``nox -s selfcheck -- --plant NAME`` runs
    one plant; arguments after a second ``--`` go to every ``parity run``.
    """
    _install_project(session)
    session.run(
        "python", "-m", "parity", "selfcheck", *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": "torch"},
    )  # fmt: skip


@nox.session(reuse_venv=True)
def bench(session: nox.Session) -> None:
    """pytest-benchmark over benchmarks/ in its own single-process run (it disables itself under xdist)."""
    _install_project(session)
    session.run(
        "pytest",
        "benchmarks",
        "-n",
        "0",
        "-o",
        "python_files=bench_*.py test_*.py",
        *session.posargs,
        env=ENV,
    )


@nox.session(reuse_venv=True)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the repository."""
    if session.venv_backend != "none":
        session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(reuse_venv=True)
def typecheck(session: nox.Session) -> None:
    """mypy over hyper_parallel/ and parity/ with the [tool.mypy] config of pyproject.toml (not strict)."""
    _install_project(session)  # the project and its dependencies: mypy reads torch's inline types
    session.run("mypy", *session.posargs)


@nox.session(reuse_venv=True)
def slow(session: nox.Session) -> None:
    """The long-running tests (``-m slow``: multi-rank torchrun, full recipes)."""
    _install_project(session)
    session.run("pytest", "-m", "slow", *session.posargs, env=ENV)
