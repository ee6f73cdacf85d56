"""Throughput of the legacy debug recipe on 1 and 2 CPU ranks, and the time to build the trainer.

Run: ``python benchmarks/bench_trainer.py [--steps 40]``. Each rank count runs under torchrun in a
fresh process group (gloo), so both rows are measured the same way in the same invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEBUG_YAML = REPO / "examples" / "debug" / "train.yaml"


def worker(out_dir: str, steps: int) -> None:
    """Inside torchrun: build, time ``steps`` steps after one warm-up step, write this rank's figures."""
    os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")
    from hyper_parallel.trainer import LLMTrainer
    from hyper_parallel.trainer.config import LegacyTrainerArgs, parse_args
    from hyper_parallel.trainer.utils.discovery import discover_model_spec

    args = parse_args(
        LegacyTrainerArgs,
        [
            str(DEBUG_YAML),
            f"--train.max_steps={steps + 1}",
            "--train.checkpoint.save_steps=0",
            "--train.logging.log_steps=1000000",
            f"--train.checkpoint.output_dir={out_dir}/ckpt",
        ],
    )
    discover_model_spec(args.model.name)
    t0 = time.perf_counter()
    trainer = LLMTrainer(args)
    build_s = time.perf_counter() - t0
    base = trainer.base
    base.progress_callback = None  # keep tqdm out of the timing
    it = base._make_micro_batch_iterator()
    base.train_step(it)  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        base.train_step(it)
    step_s = (time.perf_counter() - t0) / steps
    rank = int(os.environ.get("RANK", "0"))
    tokens = args.train.global_batch_size * args.data.max_seq_len
    Path(out_dir, f"rank{rank}.json").write_text(
        json.dumps({"build_s": build_s, "step_s": step_s, "tokens_per_step": tokens})
    )
    import torch.distributed as dist

    dist.destroy_process_group()


def run(nproc: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={nproc}",
            __file__,
            "--worker",
            out,
            "--steps",
            str(steps),
        ]
        env = {**os.environ, "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 2) // nproc))}
        subprocess.run(cmd, check=True, env=env, cwd=REPO, capture_output=True)
        ranks = [json.loads(Path(out, f"rank{r}.json").read_text()) for r in range(nproc)]
    step_s = max(r["step_s"] for r in ranks)
    return {
        "ranks": nproc,
        "build_s": max(r["build_s"] for r in ranks),
        "steps_per_s": 1.0 / step_s,
        "tokens_per_s": ranks[0]["tokens_per_step"] / step_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--worker", metavar="OUT_DIR")
    opts = parser.parse_args()
    if opts.worker:
        worker(opts.worker, opts.steps)
        return
    rows = [run(n, opts.steps) for n in (1, 2)]
    print(f"{'ranks':>5} {'build (s)':>10} {'steps/s':>9} {'tokens/s':>10}")
    for r in rows:
        print(f"{r['ranks']:>5} {r['build_s']:>10.3f} {r['steps_per_s']:>9.2f} {r['tokens_per_s']:>10.0f}")
    print(f"2-rank / 1-rank tokens/s ratio: {rows[1]['tokens_per_s'] / rows[0]['tokens_per_s']:.2f}")


if __name__ == "__main__":
    main()
