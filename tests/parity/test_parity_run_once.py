"""Each registered case (and backend) is collected exactly once across the test tree.

The component tests select their cases by tag; ``test_parity_suite.py`` runs the rest. This
collects every test module that runs registered cases (``run_case``) and counts each
``<backend>-<case id>`` parameter: a case run twice wastes minutes, one run nowhere loses its check.
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

from parity.pytest_plugin import case_params
from parity.suites import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
_RUNS_SUITE_CASES = re.compile(r"run_case\(request, (suite\.)?REGISTRY\b")
_PARAM = re.compile(r"::[^\s\[]+\[(?P<param>[^\]]+)\]$")


def _modules_running_cases() -> list[str]:
    """Test modules that call ``run_case`` with the suite registry (not a synthetic one in a string)."""
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.resolve() != Path(__file__).resolve() and _RUNS_SUITE_CASES.search(path.read_text("utf-8")):
            found.append(str(path.relative_to(ROOT)))
    return found


def count_collected(node_ids: list[str], expected: set[str]) -> collections.Counter[str]:
    """How many node ids carry each expected ``<backend>-<case id>`` parameter."""
    counts: collections.Counter[str] = collections.Counter({p: 0 for p in expected})
    for node_id in node_ids:
        match = _PARAM.search(node_id.strip())
        if match and match["param"] in expected:
            counts[match["param"]] += 1
    return counts


def problems(counts: collections.Counter[str]) -> list[str]:
    return [f"{param}: collected {n} times (expected once)" for param, n in sorted(counts.items()) if n != 1]


def test_count_collected_sees_a_case_run_twice_and_one_run_nowhere():
    ids = ["a.py::test_case[torch-x.one]", "b.py::test_case[torch-x.one]", "a.py::test_other[3]"]
    counts = count_collected(ids, {"torch-x.one", "torch-x.two"})
    assert problems(counts) == [
        "torch-x.one: collected 2 times (expected once)",
        "torch-x.two: collected 0 times (expected once)",
    ]


def test_every_registered_case_is_collected_exactly_once():
    modules = _modules_running_cases()
    assert "tests/parity/test_parity_suite.py" in modules and len(modules) >= 8, modules
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:randomly", *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    expected = {p.id for p in case_params(REGISTRY)}
    bad = problems(count_collected(out.stdout.splitlines(), expected))
    assert not bad, f"{len(bad)} case(s) not collected exactly once:\n" + "\n".join(bad[:30])
