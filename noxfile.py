"""nox sessions: ``tests``, ``parity`` (the main job), ``parity_update``, ``bench``, ``lint``, ``typecheck``, ``slow``, ``selfcheck``, ``selfcheck_quick``, ``explore``.

``tests``, ``slow`` and ``parity_update`` run once per backend (torch, mindspore), ``parity`` per run
(torch, mindspore, cross). Each session installs the project with its ``dev`` extra (plus the
``mindspore`` extra for MindSpore) into its own venv (torch comes pinned by
pyproject as ``torch==2.13.0``); venvs are reused between runs, so only the first run installs.
Every run gets ``PYTHONHASHSEED=0``.

    nox -s parity            # parity(torch), parity(mindspore), parity(cross): the main job
    nox -s tests             # tests(torch), tests(mindspore): pytest -n auto (slow excluded; see `nox -s slow`)
    nox -s parity_update     # regenerate every backend's goldens (torch, then MindSpore): one combined review
    nox -s "parity_update(torch)"   # one backend's goldens, serially, with a review of each change
    nox -s typecheck         # mypy over hyper_parallel/ and parity/ ([tool.mypy] in pyproject.toml)
    nox -s selfcheck         # plant the divergences of parity/tools/plants.py; how many does the suite catch?
    nox -s selfcheck_quick   # each case against the plants it claims (parity/tools/claims.py): CI, minutes
    nox -s explore           # nightly: drawn explore configurations for an hour (`-- --explore-budget S`)
    nox -s mutation          # mutmut's mutants against the cases that run them (`-- --changed`, `-- --sample N`)
"""

from __future__ import annotations

import nox

nox.needs_version = ">=2024.3.2"
nox.options.sessions = ["lint", "typecheck", "tests", "parity"]
nox.options.error_on_external_run = True

DEV = ("-e", ".[dev]")
# The MindSpore venvs: the project plus the `mindspore` extra (MindSpore 2.10 CPU and the NumPy 1.x
# pins it needs, declared once in pyproject.toml), resolved by pip in one go.
DEV_MINDSPORE = ("-e", ".[dev,mindspore]")
ENV = {"PYTHONHASHSEED": "0"}
BACKENDS = ["torch", "mindspore"]
# `parity(cross)`: the torch legacy trainer against the new path on MindSpore (tier C).
PARITY_RUNS = [*BACKENDS, "cross"]


def _install_project(session: nox.Session, backend: str = "torch") -> None:
    if session.venv_backend == "none":  # `nox --no-venv`: use the current environment as it is
        session.log("no venv: using the current environment's packages")
        return
    session.install(*(DEV if backend == "torch" else DEV_MINDSPORE))


@nox.session(reuse_venv=True)
@nox.parametrize("backend", [nox.param(b, id=b) for b in BACKENDS])
def tests(session: nox.Session, backend: str) -> None:
    """pytest -n auto, slow excluded: the suite (torch venv) or tests/mindspore (MindSpore venv).

    Extra pytest arguments go after ``--``.
    """
    _install_project(session, backend)
    paths = ["tests/mindspore"] if backend == "mindspore" else []
    session.run("pytest", "-n", "auto", "-m", "not slow", *paths, *session.posargs, env=ENV)


@nox.session(reuse_venv=True)
@nox.parametrize("run", [nox.param(r, id=r) for r in PARITY_RUNS])
def parity(session: nox.Session, run: str) -> None:
    """The main job: every parity case on torch, on MindSpore, and tier C (torch legacy vs MindSpore new).

    Each prints its summary table and exits 1 on a failure; tier C compares under the limitations
    table (``python -m parity cross``).
    """
    _install_project(session, "torch" if run == "torch" else "mindspore")
    if run == "cross":
        session.run("python", "-m", "parity", "cross", *session.posargs, env=ENV)
        return
    session.run(
        "python", "-m", "parity", "run", "--backend", run, *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": run},
    )  # fmt: skip


@nox.session(reuse_venv=True)
@nox.parametrize("backend", [nox.param(b, id=b) for b in BACKENDS])
def parity_update(session: nox.Session, backend: str) -> None:
    """Regenerate one backend's goldens serially and print a review of each one that changes.

    ``nox -s parity_update`` runs torch, then MindSpore (the order of ``BACKENDS``); the last one
    ends with the combined review of every backend updated on this tree.
    """
    _install_project(session, backend)
    last = ["--combined"] if backend == BACKENDS[-1] else []
    session.run(
        "python", "-m", "parity", "update", "--backend", backend, *last, *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": backend},
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
def selfcheck_quick(session: nox.Session) -> None:
    """``python -m parity selfcheck --quick``: each plant against only the cases that claim it; a
    claimed case left green fails with the case and plant named. In ``.ci/run`` after the tests."""
    _install_project(session)
    session.run(
        "python", "-m", "parity", "selfcheck", "--quick", *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": "torch"},
    )  # fmt: skip


@nox.session(reuse_venv=True)
def explore(session: nox.Session) -> None:
    """The nightly-sized exploration: the ``explore`` cases under the ``explore`` hypothesis profile
    (2000 examples at most) with a one-hour budget for the drawn ones; a failure is shrunk and
    written under ``parity/reports/explore/<case>/`` with its reproduce command. Arguments after
    ``--`` go to ``parity run`` (a later ``--explore-budget`` wins)."""
    _install_project(session)
    session.run(
        "python", "-m", "parity", "run", "--backend", "torch", "--tag", "explore",
        "--explore-budget", "3600", *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": "torch", "HYPOTHESIS_PROFILE": "explore"},
    )  # fmt: skip


@nox.session(reuse_venv=True)
def mutation(session: nox.Session) -> None:
    """``python -m parity mutation``: mutmut's mutants of the product, each against the case groups
    that run its function; the score per module and area, survivors, ``parity/reports/mutation.json``.

    ``-- --changed`` (functions changed against main's merge base), ``-- --sample 1000 --seed 0``
    (a uniform sample, score with a 95% interval), no argument: every mutant (the nightly job).
    """
    _install_project(session)
    session.run(
        "python", "-m", "parity", "mutation", *session.posargs,
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
@nox.parametrize("backend", [nox.param(b, id=b) for b in BACKENDS])
def slow(session: nox.Session, backend: str) -> None:
    """The long-running tests (``-m slow``: multi-rank torchrun, full recipes; msrun on MindSpore)."""
    _install_project(session, backend)
    paths = ["tests/mindspore"] if backend == "mindspore" else []
    session.run("pytest", "-m", "slow", *paths, *session.posargs, env=ENV)
