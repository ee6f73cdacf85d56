"""What localising an end-to-end divergence costs, against k plain steps of both trainers.

Run: ``python benchmarks/bench_localise.py [--recipe preset] [--steps 1,2,5] [--repeats 3]``.

For each ``k`` a divergence is planted on the new side at step ``k`` (the new dataloader hands
out one changed token in the k-th step's first micro-batch), and, side by side in one process,
alternating which goes first:

- **plain**: each trainer (legacy, then new) built from the recipe's YAML and run for ``k``
  steps (a callback leaves the loop after step ``k``; ``max_steps`` is unchanged), no capture;
- **localise**: ``parity.tools.localise.localise_recipe(recipe)``: both trainers in lockstep with the
  per-step capture, stopping at the first divergent step (which must be ``k``).

Plain runs are warmed up first, and so is the localiser (its two worker threads pay the
framework's per-thread warm-up in their first steps, once per process); that first, cold
localisation is printed on its own.

Both include building the trainers. The wall-time ratio localise / plain is the median over the
repeats; the target is <= 3. Also shown: the same ratio over the steps alone (build excluded),
over process CPU time (robust to other load on the machine: only one side runs at a time), and
the capture's share of the localiser's step time.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")


class _Halt(BaseException):  # leaves the training loop, not an error
    pass


class _StopAt:
    """A user callback: clocks the steps and leaves the loop after step ``k``."""

    def __init__(self, k: int) -> None:
        self.k, self.first = k, None

    def __getattr__(self, name: str):
        if name.startswith("on_"):
            return lambda state, **kwargs: None
        raise AttributeError(name)

    def on_step_begin(self, state, **kwargs) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    def on_step_end(self, state, **kwargs) -> None:
        if state.global_step >= self.k:
            raise _Halt


def _plain(side: str, overrides: tuple[str, ...], k: int) -> tuple[float, float, float]:
    """(build + k steps, k steps, CPU time of build + k steps) seconds of one trainer, no capture."""
    from hyper_parallel.trainer import LLMTrainer
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config
    from parity.env import get_platform, seed_all
    from parity.legacy_driver import legacy_args
    from parity.tools.localise import remove_tree

    platform = get_platform()
    tmp = tempfile.mkdtemp(prefix="bench-localise-")
    try:
        seed_all(42, platform)
        start, cpu = time.perf_counter(), time.process_time()
        args = legacy_args(f"--train.checkpoint.output_dir={tmp}/ckpt", *overrides)
        trainer = LLMTrainer(args) if side == "legacy" else legacy_to_trainer_config(args).build()
        clock = _StopAt(k)
        trainer.add_callback(clock)
        try:
            trainer.train()
        except _Halt:
            pass
        end, cpu = time.perf_counter(), time.process_time() - cpu
        if platform.is_distributed():
            platform.destroy_process_group()
        gc.enable()
    finally:
        remove_tree(tmp)
    del trainer
    gc.collect()
    return end - start, end - (clock.first or end), cpu


def _plant(k: int):
    """The new dataloader changes one token of step ``k``'s first micro-batch; returns the undo."""
    from hyper_parallel.components import dataloader as dl

    original = dl.BaseDataLoader.micro_batch_iterator

    def micro_batch_iterator(self):
        for group in original(self):
            self._bench_steps = getattr(self, "_bench_steps", 0) + 1  # over every epoch
            if self._bench_steps == k:
                group = [dict(mb) for mb in group]
                ids = group[0]["input_ids"].clone()
                ids.view(-1)[3] += 1
                group[0]["input_ids"] = ids
            yield group

    dl.BaseDataLoader.micro_batch_iterator = micro_batch_iterator
    return lambda: setattr(dl.BaseDataLoader, "micro_batch_iterator", original)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="preset")
    parser.add_argument("--steps", default="1,2,5", help="divergent steps k to plant, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from hyper_parallel.platform.quiet import progress_bars_off, quiet_third_party
    from parity import numerics

    quiet_third_party(False)
    numerics.apply()
    from parity.e2e import RECIPES
    from parity.env import ensure_deterministic, get_platform
    from parity.tools.localise import localise_recipe

    ensure_deterministic(get_platform())
    spec = RECIPES[args.recipe]
    rows = []
    with progress_bars_off(), tempfile.TemporaryDirectory(prefix="bench-localise-") as scratch:
        overrides = spec.overrides(Path(scratch))
        _plain("legacy", overrides, 1), _plain("new", overrides, 1)  # warm-up: imports, caches
        undo = _plant(1)
        try:  # the localiser's worker threads warm up in their first steps (once per process)
            start = time.perf_counter()
            localise_recipe(args.recipe)
            cold = time.perf_counter() - start
            warm = _plain("legacy", overrides, 1)[0] + _plain("new", overrides, 1)[0]
        finally:
            undo()
        print(
            f"cold start: the first localisation in this process (k=1) took {cold:.2f} s, k=1 plain {warm:.2f} s"
        )
        for k in [int(s) for s in args.steps.split(",")]:
            undo = _plant(k)
            try:
                ratios, step_ratios, cpu_ratios, shares, found = [], [], [], [], set()
                for repeat in range(args.repeats):
                    order = ("plain", "localise") if repeat % 2 == 0 else ("localise", "plain")
                    plain = localised = None
                    for what in order:
                        if what == "plain":
                            legacy, new = _plain("legacy", overrides, k), _plain("new", overrides, k)
                            plain = (legacy[0] + new[0], legacy[1] + new[1], legacy[2] + new[2])
                        else:
                            start, cpu = time.perf_counter(), time.process_time()
                            result = localise_recipe(args.recipe)
                            total, cpu = time.perf_counter() - start, time.process_time() - cpu
                            t = result.timing
                            steps = t["legacy_step_seconds"] + t["new_step_seconds"]
                            capture = t["legacy_capture_seconds"] + t["new_capture_seconds"]
                            localised = (total, steps, capture, cpu)
                            found.add((result.step, result.phase, result.component))
                            gc.collect()
                    assert plain is not None and localised is not None
                    ratios.append(localised[0] / plain[0])
                    step_ratios.append(localised[1] / plain[1])
                    cpu_ratios.append(localised[3] / plain[2])
                    shares.append(localised[2] / localised[1])
                    print(
                        f"k={k} repeat {repeat}: plain {plain[0]:.2f} s (steps {plain[1]:.2f} s), "
                        f"localise {localised[0]:.2f} s (steps {localised[1]:.2f} s, capture {localised[2]:.2f} s); "
                        f"CPU time plain {plain[2]:.2f} s, localise {localised[3]:.2f} s",
                        flush=True,
                    )
                rows.append(
                    (
                        k,
                        statistics.median(ratios),
                        statistics.median(step_ratios),
                        statistics.median(cpu_ratios),
                        statistics.median(shares),
                        found,
                    )
                )
            finally:
                undo()
    print()
    print(
        f"recipe {args.recipe}: localisation cost vs k plain steps of both trainers (median of {args.repeats})"
    )
    print(
        f"{'k':>3}  {'wall ratio':>10}  {'steps ratio':>11}  {'CPU ratio':>9}  {'capture share':>13}  localised at"
    )
    worst = 0.0
    for k, ratio, step_ratio, cpu_ratio, share, found in rows:
        worst = max(worst, ratio)
        where = "; ".join(f"step {s}, {p} -> {c}" for s, p, c in sorted(found, key=str))
        print(f"{k:>3}  {ratio:>10.2f}  {step_ratio:>11.2f}  {cpu_ratio:>9.2f}  {share:>12.0%}  {where}")
    print(f"worst total ratio {worst:.2f} (target <= 3)")
    return 0 if worst <= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
