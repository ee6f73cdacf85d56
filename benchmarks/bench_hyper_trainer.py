"""HyperTrainer vs LLMTrainer on the debug recipe, side by side in one process: init time and step time.

Run: ``python benchmarks/bench_hyper_trainer.py [--repeats 5] [--steps 30]``. Each repeat builds
and trains both trainers from the same YAML (the new one through ``legacy_to_trainer_config``),
alternating which goes first (ABBA: neither always inherits the other's heap), with the previous
trainer torn down and collected before the next one is built (so its garbage is never collected
inside the other's timed steps). Each trainer runs ``train()`` for ``steps`` + 2 steps with a user
callback (the legacy callback API, on both trainers) that reads the clocks at every
``on_step_begin``:

- **loop step**: the time between two ``on_step_begin`` events, i.e. one whole iteration of the
  training loop (the step, metrics, logging, checkpoint cadence, callbacks);
- **train_step**: the time inside ``train_step`` alone (the previous version of this benchmark);
- both in wall time and in this thread's CPU time (``time.thread_time``: robust to other load).

A repeat's figure is the median over its steady-state steps (the first two are dropped); the
reported ratio is the median over the repeats of new/legacy (the issue's measure: median of 5
alternating repeats, same process).

**interleaved**: on a loaded machine whole runs drift against each other, so the last section
keeps one trainer of each kind alive and alternates single ``train_step`` calls between them
(legacy-new, new-legacy, ...): both see the same load at the same moment. ``repeats`` blocks of
``steps`` pairs; the ratio is the median over blocks.

Targets (issue): step-time ratio <= 1.02, init-time ratio <= 1.10.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

WARMUP_STEPS = 2
KINDS = ("legacy", "new")
LABELS = {"legacy": "LLMTrainer", "new": "HyperTrainer"}
MEASURES = ("loop_wall", "loop_cpu", "step_wall", "step_cpu")


def _args(tmp: str, steps: int):
    from parity.legacy_driver import legacy_args

    return legacy_args(
        f"--train.max_steps={steps}",
        "--train.checkpoint.save_steps=0",
        f"--train.checkpoint.output_dir={tmp}/ckpt",
    )


class _Clock:
    """A user callback: clock readings at every ``on_step_begin``, and around every ``train_step``."""

    def __init__(self) -> None:
        self.begins: list[tuple[float, float]] = []
        self.steps: list[tuple[float, float]] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda state, **kwargs: None
        raise AttributeError(name)

    def on_step_begin(self, state: Any, **kwargs: Any) -> None:
        self.begins.append((time.perf_counter(), time.thread_time()))

    def timed(self, step_fn):
        def train_step(it):
            wall, cpu = time.perf_counter(), time.thread_time()
            out = step_fn(it)
            self.steps.append((time.perf_counter() - wall, time.thread_time() - cpu))
            return out

        return train_step

    def medians(self) -> dict[str, float]:
        loops = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(self.begins, self.begins[1:])][WARMUP_STEPS:]
        steps = self.steps[WARMUP_STEPS : WARMUP_STEPS + len(loops)]
        return {
            "loop_wall": statistics.median(w for w, _ in loops),
            "loop_cpu": statistics.median(c for _, c in loops),
            "step_wall": statistics.median(w for w, _ in steps),
            "step_cpu": statistics.median(c for _, c in steps),
        }


def _run(kind: str, tmp: str, steps: int) -> tuple[float, dict[str, float]]:
    """Build ``kind`` (timed), train it with the clock callback; init seconds and the step medians."""
    from hyper_parallel.trainer import LLMTrainer
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    args = _args(tmp, steps + WARMUP_STEPS + 1)
    gc.collect()
    t0 = time.perf_counter()
    if kind == "legacy":
        trainer = LLMTrainer(args)
        base = trainer.base
    else:
        trainer = base = legacy_to_trainer_config(args).build()  # the mapping is part of the YAML entry
    init = time.perf_counter() - t0
    clock = _Clock()
    trainer.add_callback(clock)
    base.train_step = clock.timed(base.train_step)
    trainer.train()  # tears its process group down at the end
    return init, clock.medians()


def _interleaved(tmp: str, repeats: int, steps: int) -> dict[str, list[dict[str, float]]]:
    """Both trainers alive at once, single steps alternated; per block: wall and CPU medians per kind."""
    from hyper_parallel.trainer import LLMTrainer
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    total = repeats * steps + WARMUP_STEPS + 1
    legacy = LLMTrainer(_args(tmp, total)).base
    new = legacy_to_trainer_config(_args(tmp, total)).build()  # joins the process group legacy made
    runs = {
        "legacy": (legacy, legacy._make_micro_batch_iterator()),
        "new": (new, new.dataloader.micro_batch_iterator()),
    }
    for trainer, it in runs.values():
        for _ in range(WARMUP_STEPS):
            trainer.train_step(it)
    blocks: dict[str, list[dict[str, float]]] = {k: [] for k in KINDS}
    for _block in range(repeats):
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in KINDS}
        for i in range(steps):
            for kind in KINDS if i % 2 == 0 else KINDS[::-1]:
                trainer, it = runs[kind]
                wall, cpu = time.perf_counter(), time.thread_time()
                trainer.train_step(it)
                times[kind].append((time.perf_counter() - wall, time.thread_time() - cpu))
        for kind in KINDS:
            blocks[kind].append(
                {
                    "step_wall": statistics.median(w for w, _ in times[kind]),
                    "step_cpu": statistics.median(c for _, c in times[kind]),
                }
            )
    _destroy_process_group()
    return blocks


def _destroy_process_group() -> None:
    from hyper_parallel.platform import get_platform

    get_platform().destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--steps", type=int, default=30, help="steady-state steps timed per trainer and repeat"
    )
    opts = parser.parse_args()

    import logging

    import torch

    from hyper_parallel.platform.quiet import quiet_third_party

    quiet_third_party()
    logging.getLogger("hyper_parallel").setLevel(logging.WARNING)  # log lines are formatted, not printed
    os.environ.setdefault("HYPER_PARALLEL_PROGRESS", "0")  # no legacy tqdm bar in the timings
    torch.set_num_threads(1)
    init: dict[str, list[float]] = {k: [] for k in KINDS}
    per_repeat: dict[str, list[dict[str, float]]] = {k: [] for k in KINDS}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(opts.repeats):
            for kind in KINDS if repeat % 2 == 0 else KINDS[::-1]:
                seconds, medians = _run(kind, tmp, opts.steps)
                init[kind].append(seconds)
                per_repeat[kind].append(medians)
                gc.collect()
        blocks = _interleaved(tmp, opts.repeats, opts.steps)

    def ratio(measure: str, rows: dict[str, list[dict[str, float]]] = per_repeat) -> float:
        return statistics.median(n[measure] / lg[measure] for n, lg in zip(rows["new"], rows["legacy"]))

    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {opts.repeats} repeats x {opts.steps} steps"
    )
    print(f"{'trainer':<13} {'init (s)':>9} " + " ".join(f"{m + ' (ms)':>15}" for m in MEASURES))
    for kind in KINDS:
        cells = " ".join(
            f"{statistics.median(r[m] for r in per_repeat[kind]) * 1e3:>15.2f}" for m in MEASURES
        )
        print(f"{LABELS[kind]:<13} {statistics.median(init[kind]):>9.3f} {cells}")
    print(
        "per-repeat loop-step ratios (wall):",
        " ".join(
            f"{n['loop_wall'] / lg['loop_wall']:.3f}"
            for n, lg in zip(per_repeat["new"], per_repeat["legacy"])
        ),
    )
    print(
        f"init-time ratio (new/legacy): {statistics.median(init['new']) / statistics.median(init['legacy']):.3f}  (target <= 1.10)"
    )
    for measure in MEASURES:
        print(
            f"step-time ratio {measure:<10} (new/legacy, median of repeats): {ratio(measure):.3f}  (target <= 1.02)"
        )

    print(f"interleaved single steps, {opts.repeats} blocks x {opts.steps} pairs:")
    for kind in KINDS:
        cells = " ".join(
            f"{m}={statistics.median(b[m] for b in blocks[kind]) * 1e3:.2f}ms"
            for m in ("step_wall", "step_cpu")
        )
        print(f"  {LABELS[kind]:<13} {cells}")
    for measure in ("step_wall", "step_cpu"):
        print(
            f"step-time ratio interleaved {measure:<10} (median of blocks): {ratio(measure, blocks):.3f}  (target <= 1.02)"
        )


if __name__ == "__main__":
    main()
