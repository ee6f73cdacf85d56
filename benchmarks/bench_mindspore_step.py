"""HyperTrainer step time on MindSpore vs torch: the debug recipe, side by side in one run.

Run: ``python benchmarks/bench_mindspore_step.py [--rounds 2] [--steps 6]`` from a Python that has
MindSpore and torch (the MindSpore venv: ``pip install -e '.[dev,mindspore]'``). Each round trains
the debug recipe (``--module qwen3_5 --config debug``, no checkpoints) once on each platform, each
in a fresh process (the platform is chosen once per process), alternating which goes first. Inside
the process ``train_step`` is timed on the wall clock and on the process CPU clock
(``time.process_time``: less sensitive to other load than the wall clock, but it counts every
thread). A run's figure is the median over its steps after the first two (MindSpore compiles its
optimizer update at the first step); the ratio is MindSpore/torch per round, and the report gives
the median over rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, sys, time
from hyper_parallel.recipes.qwen3_5 import debug
cfg = debug()
cfg.training.steps = int(sys.argv[1])
cfg.checkpoint.save_steps = 0
cfg.checkpoint.save_hf_weights = False
trainer = cfg.build()
wall, cpu = [], []
step = trainer.train_step
def timed(it):
    w, c = time.perf_counter(), time.process_time()
    out = step(it)
    wall.append(time.perf_counter() - w)
    cpu.append(time.process_time() - c)
    return out
trainer.train_step = timed
trainer.train()
print("BENCH " + json.dumps({"wall": wall, "cpu": cpu}))
"""


def run_one(platform: str, steps: int) -> dict[str, float]:
    env = {**os.environ, "HYPER_PARALLEL_PLATFORM": platform, "PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(steps)], cwd=REPO, env=env, capture_output=True, text=True
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("BENCH ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{platform} run failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    data = json.loads(lines[-1][len("BENCH ") :])
    return {key: statistics.median(values[2:]) for key, values in data.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6, help="steps per run (the first two are dropped)")
    args = parser.parse_args()
    if args.steps < 3:
        parser.error("--steps must be at least 3 (the first two steps are dropped)")
    ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
    for r in range(args.rounds):
        order = ("torch", "mindspore") if r % 2 == 0 else ("mindspore", "torch")
        figures = {platform: run_one(platform, args.steps) for platform in order}
        load = os.getloadavg()[0]
        for key in ratios:
            ratios[key].append(figures["mindspore"][key] / figures["torch"][key])
        print(
            f"round {r + 1} ({' then '.join(order)}, load {load:.1f}): "
            f"torch {figures['torch']['wall'] * 1e3:.1f} ms wall / {figures['torch']['cpu'] * 1e3:.1f} ms cpu, "
            f"mindspore {figures['mindspore']['wall'] * 1e3:.1f} ms wall / {figures['mindspore']['cpu'] * 1e3:.1f} ms cpu"
        )
    print(
        f"MindSpore/torch step time (median of {args.rounds} rounds): "
        f"wall {statistics.median(ratios['wall']):.1f}x, cpu {statistics.median(ratios['cpu']):.1f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
