"""The MindSpore profiler, run by a case in a forked ``parity run`` worker, writes its trace.

Once the workers were daemonic, the profiler's ``step`` (which starts its parsing processes)
logged "Call to step failed. Exception: daemonic processes are not allowed to have children",
wrote nothing, and every case passed. Here two cases (so two forked workers) each run the
profiler component for a few steps of MindSpore ops and record what it wrote: every case passes,
each trace folder the cases asked for holds non-empty files, no framework error was logged, and
the profiler's "Start parsing profiling data" / "Parsing:" lines are in neither of the run's streams.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests._subprocess import REPO, child_env

pytest.importorskip("mindspore")

_RUN = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path

    from parity import canonical, parallel
    from parity.cases import Registry
    from parity.engine import Engine

    root = Path(sys.argv[1])

    def profiled(*, name):
        import mindspore as ms
        from mindspore import ops

        from hyper_parallel.components.profiler import Profiler

        out = root / name
        config = Profiler.Config(enabled=True, output_dir=str(out), wait_steps=1, warmup_steps=1, active_steps=1)
        x = ms.Tensor([[1.0, 2.0], [3.0, 4.0]])
        with config.build() as prof:
            for _ in range(4):
                x = ops.matmul(x, x) / 10.0
                prof.step()
        files = {str(p.relative_to(out)): p.stat().st_size for p in out.rglob("*") if p.is_file()}
        (root / f"{name}.{os.getpid()}.json").write_text(json.dumps(files))
        return canonical.losses([1.0])

    registry = Registry(source="profiler-in-worker")
    for name in ("first", "second"):
        registry.pair("profiled", kind="losses", params={"name": name}, legacy=lambda **_: canonical.losses([1.0]), new=profiled)
    engine = Engine(registry, golden_root=root / "golden", report_dir=None)
    outcomes = parallel.run_cases(engine, [(c, "mindspore") for c in registry], 2)
    print("RESULT", json.dumps([[o.status, o.message] for o in outcomes]))
    """
)


def test_the_profiler_writes_its_trace_in_a_forked_worker(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, str(tmp_path)],
        capture_output=True,
        text=True,
        env=child_env(HYPER_PARALLEL_PLATFORM="mindspore", PARITY_JOBS="2"),
        cwd=REPO,
        timeout=600,
    )
    result = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert result, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert json.loads(result[0][len("RESULT ") :]) == [["pass", ""], ["pass", ""]], proc.stderr[-3000:]
    records = {
        p.name.split(".")[0]: (int(p.name.split(".")[1]), json.loads(p.read_text()))
        for p in tmp_path.glob("*.json")
    }
    assert sorted(records) == ["first", "second"]
    assert records["first"][0] != records["second"][0]  # each case in a worker of its own
    for name, (_pid, files) in records.items():
        traces = {f: size for f, size in files.items() if f.startswith("rank_0/")}
        assert traces and all(size > 0 for size in traces.values()), (name, files)
        # The parsed timeline: the profiler's step started its parsing processes and they finished.
        assert any(f.endswith("/ASCEND_PROFILER_OUTPUT/trace_view.json") for f in traces), (name, files)
    # Neither stream carries the profiler's prints or its progress bar (a bar goes to stderr).
    for stream in (proc.stdout, proc.stderr):
        assert "Start parsing profiling data" not in stream and "Parsing:" not in stream, stream[-3000:]
    assert "Call to step failed" not in proc.stderr and "[ERROR]" not in proc.stderr, proc.stderr[-3000:]
