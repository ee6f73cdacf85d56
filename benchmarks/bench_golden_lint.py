"""Time of the golden lint over the repository's store, which every ``parity run`` pays first.

Run: ``python -m pytest benchmarks/bench_golden_lint.py -n 0 --benchmark-only -q`` (or ``nox -s bench``).
Target: under a second on 2 cores (85 ms mean on the 2-core x86-64 CI machine, 2026-12-06).
"""

from __future__ import annotations

from parity import golden
from parity.cases import load_registry
from parity.golden_lint import lint


def test_golden_lint_of_the_store(benchmark):
    registry = load_registry("parity.suites:REGISTRY")
    problems = benchmark(lint, golden.DEFAULT_ROOT, registry)
    assert problems == []
