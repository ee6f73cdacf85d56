"""The pytest path in subprocesses: syrupy --snapshot-update writes goldens, -n 2 == -n 0, serial updates.

A small synthetic project is written to a temp dir (its own conftest and cases module); pytest
runs there as a subprocess, like a user would run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from parity import numerics
from parity.env import platform_key

# This run's golden key (cpu-<arch>-<capability> on CPU) and CPU profile.
KEY = platform_key()
PROFILE = numerics.active_profile()

CONFTEST = """
from parity.pytest_plugin import pytest_addoption, pytest_configure  # noqa: F401
"""

CASES = """
import os
from pathlib import Path

import pytest
import torch

from parity import canonical
from parity.cases import Registry
from parity.pytest_plugin import assert_no_unused_goldens, case_params, run_case

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
REPORTS = HERE / "reports" / os.environ.get("RUN_TAG", "default")
REGISTRY = Registry()


def lrs(*, steps, warmup):
    return canonical.lr_curve([0.1 * min(1.0, s / warmup) for s in range(steps)])


def state(*, dim):
    return canonical.checkpoint({"w": torch.randn(dim, dim), "b": torch.randn(dim), "step": 1})


REGISTRY.pair("same", kind="lr_curve", params={"steps": 6}, legacy=lambda steps: lrs(steps=steps, warmup=3),
              new=lambda steps: lrs(steps=steps, warmup=3))
REGISTRY.pair("differs", kind="lr_curve", params={"steps": 6}, legacy=lambda steps: lrs(steps=steps, warmup=3),
              new=lambda steps: lrs(steps=steps, warmup=2))
REGISTRY.golden("ckpt", kind="checkpoint", seed=3, params={"dim": 4}, producer=state)
REGISTRY.golden("both", kind="checkpoint", seed=4, params={"dim": 2}, producer=state, backends=("torch", "mindspore"))
REGISTRY.golden("corrupt", kind="checkpoint", seed=5, params={"dim": 2}, producer=state)


@pytest.mark.parametrize(("case", "backend"), case_params(REGISTRY))
def test_case(case, backend, request):
    run_case(request, REGISTRY, case, backend, golden_root=GOLDEN, report_dir=REPORTS)


def test_no_unused_goldens():
    assert_no_unused_goldens(REGISTRY, GOLDEN)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic_project")
    (root / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (root / "test_synthetic_cases.py").write_text(CASES)
    return root


def _command(project: Path, *args: str, tag: str = "default", junit: str | None = None) -> tuple[list, dict]:
    env = {**os.environ, "PYTHONHASHSEED": "0", "HYPER_PARALLEL_PLATFORM": "torch", "RUN_TAG": tag}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    # The synthetic project needs neither hypothesis nor pytest-benchmark: skip loading them.
    plugins = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark"]
    cmd = [sys.executable, "-m", "pytest", *plugins, "--rootdir", str(project), "-q", *args]
    if junit:
        cmd.append(f"--junitxml={project / junit}")
    return cmd, env


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess:
    cmd, env = _command(project, *args)
    return subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=240)


def _pytest_concurrently(project: Path, runs: dict[str, tuple[str, ...]]) -> dict[str, tuple[int, str]]:
    """Start several pytest runs at once (they share nothing but the read-only goldens)."""
    procs = {}
    for tag, args in runs.items():
        cmd, env = _command(project, *args, tag=tag, junit=f"{tag}.xml")
        procs[tag] = subprocess.Popen(
            cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    outputs = {tag: proc.communicate(timeout=300)[0] for tag, proc in procs.items()}  # drains the pipes
    return {tag: (procs[tag].returncode, out) for tag, out in outputs.items()}


def _outcomes(xml_path: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        status = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                status = child.tag
        out[case.get("name")] = status
    return out


def _reports(project: Path, tag: str) -> dict[str, str]:
    root = project / "reports" / tag
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.json"))}


CORRUPT = "{oops"


@pytest.fixture(scope="module")
def updated(project):
    """``--snapshot-update -n 0``: syrupy writes the torch goldens and refuses the corrupt one."""
    corrupt = project / "golden" / "torch" / KEY / "checkpoint.corrupt-dim=2.json"
    corrupt.parent.mkdir(parents=True)
    corrupt.write_text(CORRUPT)
    result = _pytest(project, "--snapshot-update", "-n", "0", "-k", "ckpt or both or corrupt")
    assert result.returncode == 1, result.stdout + result.stderr
    return result


def test_snapshot_update_writes_the_goldens(project, updated):
    assert "2 snapshots generated" in updated.stdout
    # The engine's canonical text, produced in a process started like the pytest run above: the
    # golden records the libm variant of the process that writes it, and an in-process engine at
    # ``-n 0`` was started without the portable profile's GLIBC_TUNABLES (an xdist worker with it).
    code = (
        "import json, sys; from pathlib import Path; from parity.cases import load_registry; "
        "from parity.engine import Engine; r = load_registry(sys.argv[1]); "
        "e = Engine(r, golden_root=Path(sys.argv[2]), report_dir=None); "
        "print(json.dumps({i: [str(p), t] for i in sys.argv[3:] for p, t in "
        "[e.produce_golden(r.get(i), 'torch')]}))"
    )
    ids = ("checkpoint.ckpt-dim=4", "checkpoint.both-dim=2")
    _, env = _command(project)
    made = subprocess.run(
        [sys.executable, "-c", code, str(project / "test_synthetic_cases.py"), str(project / "golden"), *ids],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    for path, text in json.loads(made.stdout.splitlines()[-1]).values():
        assert Path(path).read_text() == text  # syrupy wrote exactly the engine's canonical text
    assert not (project / "golden" / "mindspore").exists()  # mindspore is not installed: skipped


def test_snapshot_update_never_replaces_a_corrupt_golden(project, updated):
    corrupt = project / "golden" / "torch" / KEY / "checkpoint.corrupt-dim=2.json"
    assert corrupt.read_text() == CORRUPT
    assert f"corrupt golden {corrupt}: not valid JSON" in updated.stdout
    assert "1 failed" in updated.stdout


def test_parallel_and_serial_runs_give_the_same_results(project, updated):
    results = _pytest_concurrently(project, {"serial": ("-n", "0"), "parallel": ("-n", "2")})
    (serial_code, serial_out), (parallel_code, parallel_out) = results["serial"], results["parallel"]
    assert serial_code == parallel_code == 1, serial_out + parallel_out
    outcomes = _outcomes(project / "serial.xml")
    assert outcomes == _outcomes(project / "parallel.xml")
    assert outcomes == {
        "test_case[torch-lr_curve.same-steps=6]": "passed",
        "test_case[torch-lr_curve.differs-steps=6]": "failure",
        "test_case[torch-checkpoint.ckpt-dim=4]": "passed",
        "test_case[torch-checkpoint.both-dim=2]": "passed",
        "test_case[mindspore-checkpoint.both-dim=2]": "skipped",
        "test_case[torch-checkpoint.corrupt-dim=2]": "failure",
        "test_no_unused_goldens": "passed",
    }
    serial_reports = _reports(project, "serial")
    assert serial_reports == _reports(project, "parallel")
    assert list(serial_reports) == [
        f"torch/{KEY}/checkpoint.corrupt-dim=2.json",
        f"torch/{KEY}/lr_curve.differs-steps=6.json",
    ]
    assert "first difference [bits/value]: lr_curve[1]" in parallel_out
    assert (
        f"reproduce: PYTHONHASHSEED=0 PARITY_CPU_PROFILE={PROFILE} python -m pytest 'test_synthetic_cases.py::test_case[torch-lr_curve.differs"
        in parallel_out
    )


def test_parallel_snapshot_update_is_refused(project):
    result = _pytest(project, "--snapshot-update", "-n", "2")
    assert result.returncode == 4
    assert "must run in a single process: add -n 0" in result.stderr
