"""nox sessions: ``tests``, ``parity`` (the main job), ``parity_update``, ``bench``, ``lint``, ``typecheck``, ``slow``, ``selfcheck``, ``selfcheck_quick``, ``explore``.

``tests``, ``slow`` and ``parity_update`` run once per backend (torch, mindspore), ``parity`` per run
(torch, mindspore, cross). There is one venv per backend, shared by every session of that backend:
``.nox/venv-torch`` (the project with its ``dev`` extra; torch comes pinned by pyproject as
``torch==2.13.0``) and ``.nox/venv-mindspore`` (plus the ``mindspore`` extra; ``parity(cross)`` runs
there too). The first session that needs one creates it; later sessions and runs reuse it and
reinstall only when ``pyproject.toml`` changed (``nox --reuse-venv=never`` rebuilds it,
``nox -R`` / ``--no-install`` skips the install, ``nox --no-venv`` uses the current environment).
``lint`` keeps its own small venv (ruff only). Every run gets ``PYTHONHASHSEED=0``.

    nox -s parity            # parity(torch), parity(mindspore), parity(cross): the main job
    nox -s tests             # tests(torch), tests(mindspore): pytest -n auto (slow excluded; see `nox -s slow`)
    nox -s parity_update     # regenerate every backend's goldens (torch, then MindSpore): one combined review
    nox -s "parity_update(torch)"   # one backend's goldens, serially, with a review of each change
    nox -s typecheck         # mypy over hyper_parallel/ and parity/ ([tool.mypy] in pyproject.toml)
    nox -s selfcheck         # plant the divergences of parity/tools/plants.py; how many does the suite catch?
    nox -s selfcheck_quick   # each case against the plants it claims (parity/tools/claims.py): CI, minutes
    nox -s explore           # nightly: drawn explore configurations for an hour (`-- --explore-budget S`)
    nox -s mutation          # mutmut's mutants against the cases that run them (`-- --changed`, `-- --sample N`)
    nox -s dev               # .venv: the development venv (`-- mindspore` adds MindSpore); then source .venv/bin/activate
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

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


# One venv per backend instead of one per session (each MindSpore venv is 4.4 GB). nox names a
# session's venv after the session and has no per-session venv location (wntrblm/nox#785 was never
# merged), and `requires` cannot follow a `nox.parametrize` value; so the sessions below run with
# `python=False` and `_backend_venv` keeps the backend's venv in nox's envdir (`.nox/`) itself.
SHARED = {"python": False}


def _nox_option(session: nox.Session, name: str) -> object:
    # nox exposes no public accessor for its command-line options inside a session.
    return getattr(getattr(session._runner, "global_config", None), name, None)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Two nox processes (say `nox -s tests` and `nox -s parity` in two terminals) must not build
    the same venv at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _backend_venv(session: nox.Session, backend: str = "torch") -> Path | None:
    """The backend's shared venv (created, or brought up to date), or None under ``nox --no-venv``."""
    if _nox_option(session, "force_venv_backend") == "none":  # `--no-venv`: the current environment
        session.log("no venv: using the current environment's packages")
        return None
    venv = session.cache_dir.parent / f"venv-{backend}"  # cache_dir is <envdir>/.cache
    spec = DEV if backend == "torch" else DEV_MINDSPORE
    stamp = hashlib.sha256(Path("pyproject.toml").read_bytes() + " ".join(spec).encode()).hexdigest()
    stamp_file = venv / ".hyper-parallel-install"
    with _locked(session.cache_dir / f"venv-{backend}.lock"):
        python = venv / "bin" / "python"
        # As nox decides for a session declared with reuse_venv=True (as these were): only "never" rebuilds.
        if venv.exists() and _nox_option(session, "reuse_venv") == "never":
            session.log(f"removing {venv} (--reuse-venv=never)")
            shutil.rmtree(venv)
        if not python.exists():
            session.log(f"creating the {backend} venv shared by the {backend} sessions: {venv}")
            session.run_install(sys.executable, "-m", "venv", str(venv), external=True)
        elif stamp_file.exists() and stamp_file.read_text() == stamp:
            session.log(f"reusing {venv} (installed from this pyproject.toml)")
            return venv
        elif _nox_option(session, "no_install"):
            session.log(f"reusing {venv} as it is (--no-install)")
            return venv
        stamp_file.unlink(missing_ok=True)
        session.run_install(str(python), "-m", "pip", "install", *spec, external=True, silent=True)
        stamp_file.write_text(stamp)
    return venv


def _run(session: nox.Session, venv: Path | None, *args: str, env: dict[str, str]) -> None:
    """`session.run` inside the shared venv: its bin first on PATH (msrun and the tests' subprocesses
    start `python` from PATH) and VIRTUAL_ENV set, as nox does for a session's own venv."""
    if venv is None:
        session.run(*args, env=env, external=True)
        return
    bin_dir = venv / "bin"
    env = {**env, "VIRTUAL_ENV": str(venv), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    session.run(str(bin_dir / args[0]), *args[1:], env=env, external=True)


@nox.session(**SHARED)
@nox.parametrize("backend", [nox.param(b, id=b) for b in BACKENDS])
def tests(session: nox.Session, backend: str) -> None:
    """pytest -n auto, slow excluded: the suite (torch venv) or tests/mindspore (MindSpore venv).

    Extra pytest arguments go after ``--``.
    """
    venv = _backend_venv(session, backend)
    paths = ["tests/mindspore"] if backend == "mindspore" else []
    _run(session, venv, "pytest", "-n", "auto", "-m", "not slow", *paths, *session.posargs, env=ENV)


@nox.session(**SHARED)
@nox.parametrize("run", [nox.param(r, id=r) for r in PARITY_RUNS])
def parity(session: nox.Session, run: str) -> None:
    """The main job: every parity case on torch, on MindSpore, and tier C (torch legacy vs MindSpore new).

    Each prints its summary table and exits 1 on a failure; tier C compares under the limitations
    table (``python -m parity cross``).
    """
    venv = _backend_venv(session, "torch" if run == "torch" else "mindspore")
    if run == "cross":
        _run(session, venv, "python", "-m", "parity", "cross", *session.posargs, env=ENV)
        return
    _run(
        session, venv, "python", "-m", "parity", "run", "--backend", run, *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": run},
    )  # fmt: skip


@nox.session(**SHARED)
@nox.parametrize("backend", [nox.param(b, id=b) for b in BACKENDS])
def parity_update(session: nox.Session, backend: str) -> None:
    """Regenerate one backend's goldens serially and print a review of each one that changes.

    ``nox -s parity_update`` runs torch, then MindSpore (the order of ``BACKENDS``); the last one
    ends with the combined review of every backend updated on this tree.
    """
    venv = _backend_venv(session, backend)
    last = ["--combined"] if backend == BACKENDS[-1] else []
    _run(
        session, venv, "python", "-m", "parity", "update", "--backend", backend, *last, *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": backend},
    )  # fmt: skip


@nox.session(**SHARED)
def selfcheck(session: nox.Session) -> None:
    """``python -m parity selfcheck``: plant each divergence, run the suite, report the catch rate.

    Not a default session (tens of minutes on 2 cores). ``nox -s selfcheck -- --plant NAME`` runs
    one plant; arguments after a second ``--`` go to every ``parity run``.
    """
    venv = _backend_venv(session)
    _run(
        session, venv, "python", "-m", "parity", "selfcheck", *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": "torch"},
    )  # fmt: skip


@nox.session(**SHARED)
def selfcheck_quick(session: nox.Session) -> None:
    """``python -m parity selfcheck --quick``: each plant against only the cases that claim it; a
    claimed case left green fails with the case and plant named. In ``.ci/run`` after the tests."""
    venv = _backend_venv(session)
    _run(
        session, venv, "python", "-m", "parity", "selfcheck", "--quick", *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": "torch"},
    )  # fmt: skip


@nox.session(**SHARED)
def explore(session: nox.Session) -> None:
    """The nightly-sized exploration: the ``explore`` cases under the ``explore`` hypothesis profile
    (2000 examples at most) with a one-hour budget for the drawn ones; a failure is shrunk and
    written under ``parity/reports/explore/<case>/`` with its reproduce command. Arguments after
    ``--`` go to ``parity run`` (a later ``--explore-budget`` wins)."""
    venv = _backend_venv(session)
    _run(
        session, venv, "python", "-m", "parity", "run", "--backend", "torch", "--tag", "explore",
        "--explore-budget", "3600", *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": "torch", "HYPOTHESIS_PROFILE": "explore"},
    )  # fmt: skip


@nox.session(**SHARED)
def mutation(session: nox.Session) -> None:
    """``python -m parity mutation``: mutmut's mutants of the product, each against the case groups
    that run its function; the score per module and area, survivors, ``parity/reports/mutation.json``.

    ``-- --changed`` (functions changed against main's merge base), ``-- --sample 1000 --seed 0``
    (a uniform sample, score with a 95% interval), no argument: every mutant (the nightly job).
    """
    venv = _backend_venv(session)
    _run(
        session, venv, "python", "-m", "parity", "mutation", *session.posargs,
        env={**ENV, "HYPER_PARALLEL_PLATFORM": "torch"},
    )  # fmt: skip


@nox.session(**SHARED)
def bench(session: nox.Session) -> None:
    """pytest-benchmark over benchmarks/ in its own single-process run (it disables itself under xdist)."""
    venv = _backend_venv(session)
    _run(
        session,
        venv,
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


@nox.session(**SHARED)
def typecheck(session: nox.Session) -> None:
    """mypy over hyper_parallel/ and parity/ with the [tool.mypy] config of pyproject.toml (not strict)."""
    venv = _backend_venv(session)  # the project and its dependencies: mypy reads torch's inline types
    _run(session, venv, "mypy", *session.posargs, env={})


@nox.session(**SHARED)
@nox.parametrize("backend", [nox.param(b, id=b) for b in BACKENDS])
def slow(session: nox.Session, backend: str) -> None:
    """The long-running tests (``-m slow``: multi-rank torchrun, full recipes; msrun on MindSpore)."""
    venv = _backend_venv(session, backend)
    paths = ["tests/mindspore"] if backend == "mindspore" else []
    _run(session, venv, "pytest", "-m", "slow", *paths, *session.posargs, env=ENV)


# `nox -s dev`: where `python -m parity ...`, pytest and every command the harness prints outside nox run.
DEV_VENV = Path(".venv")


@nox.session(python=False)
def dev(session: nox.Session) -> None:
    """The development venv ``.venv`` in the repository: created, or refreshed (pip install -e '.[dev]').

    ``nox -s dev -- mindspore`` installs the ``mindspore`` extra too (optional: MindSpore 2.10 CPU and
    its ``numpy<2`` pins; torch and the harness run with them). Then ``source .venv/bin/activate``.
    """
    unknown = [arg for arg in session.posargs if arg not in ("torch", "mindspore")]
    if unknown:
        session.error(f"nox -s dev: expected no argument or `-- mindspore`, got {' '.join(unknown)}")
    spec = DEV_MINDSPORE if "mindspore" in session.posargs else DEV
    python = DEV_VENV / "bin" / "python"
    if not python.exists():
        session.log(f"creating {DEV_VENV}")
        session.run(sys.executable, "-m", "venv", str(DEV_VENV), external=True)
    session.run(str(python), "-m", "pip", "install", *spec, external=True)
    mindspore = "with" if spec == DEV_MINDSPORE else "without (nox -s dev -- mindspore adds it)"
    session.log(
        f"{DEV_VENV} is ready, {mindspore} MindSpore. Activate it: source {DEV_VENV}/bin/activate "
        "(then python -m parity ..., pytest ...; deactivate leaves it)"
    )
