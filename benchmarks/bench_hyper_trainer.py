"""HyperTrainer vs LLMTrainer on the debug recipe, side by side in one process: init time and step time.

Run: ``python benchmarks/bench_hyper_trainer.py [--repeats 5] [--steps 30]``. The two trainers are
built alternately (so machine noise hits both alike), each from the same YAML (the new one through
``legacy_to_trainer_config``); step time is the median over ``steps`` steady-state steps after one
warm-up step. Targets (issue): step-time ratio <= 1.02, init-time ratio <= 1.10.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")


def _args(tmp: str, steps: int):
    from parity.suites.legacy_trainer import legacy_args

    return legacy_args(
        f"--train.max_steps={steps + 1}",
        "--train.checkpoint.save_steps=0",
        "--train.logging.log_steps=1000000",
        f"--train.checkpoint.output_dir={tmp}/ckpt",
    )


def _build(kind: str, args):
    from hyper_parallel.trainer import LLMTrainer
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    t0 = time.perf_counter()
    if kind == "legacy":
        trainer = LLMTrainer(args).base
        it = trainer._make_micro_batch_iterator()
    else:
        config = legacy_to_trainer_config(args)  # mapping counted: it is part of the YAML entry
        trainer = config.build()
        it = trainer.dataloader.micro_batch_iterator()
    return time.perf_counter() - t0, trainer, it


def _steps(trainer, it, steps: int) -> list[float]:
    trainer.train_step(it)  # warm-up
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        trainer.train_step(it)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    opts = parser.parse_args()

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    init = {"legacy": [], "new": []}
    step = {"legacy": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(opts.repeats):
            for kind in ("legacy", "new"):
                seconds, trainer, it = _build(kind, _args(tmp, opts.steps))
                init[kind].append(seconds)
                step[kind].extend(_steps(trainer, it, opts.steps))
                dist.destroy_process_group()
    rows = {k: (statistics.median(init[k]), statistics.median(step[k])) for k in init}
    print(f"{'trainer':<13} {'init (s)':>9} {'step (ms)':>10}")
    for kind, label in (("legacy", "LLMTrainer"), ("new", "HyperTrainer")):
        print(f"{label:<13} {rows[kind][0]:>9.3f} {rows[kind][1] * 1e3:>10.2f}")
    print(f"init-time ratio (new/legacy): {rows['new'][0] / rows['legacy'][0]:.3f}  (target <= 1.10)")
    print(f"step-time ratio (new/legacy): {rows['new'][1] / rows['legacy'][1]:.3f}  (target <= 1.02)")


if __name__ == "__main__":
    main()
