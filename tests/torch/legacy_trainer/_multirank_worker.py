"""torchrun worker: train the debug recipe on this rank and dump what the test needs as JSON.

Usage: torchrun --standalone --nproc_per_node=N _multirank_worker.py OUT_DIR [--a.b=v ...]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.torch.legacy_trainer._recipes import debug_args, run_curve


def main() -> None:
    out = Path(sys.argv[1])
    args = debug_args(out, "--train.accelerator.dp_shard=-1", *sys.argv[2:])
    from hyper_parallel.trainer import LLMTrainer
    from tests.torch.legacy_trainer._recipes import CurveRecorder

    trainer = LLMTrainer(args)
    trainer.base.sampler.set_epoch(0)
    indices = list(iter(trainer.base.sampler))
    recorder = CurveRecorder()
    trainer.add_callback(recorder)
    trainer.train()
    rank = int(os.environ.get("RANK", "0"))
    record = {
        "rank": rank,
        "world_size": int(os.environ.get("WORLD_SIZE", "1")),
        "dp_size": trainer.base.parallel_dims.dp_size,
        "grad_accum": trainer.base._grad_accum,
        "sample_indices": indices,
        "losses": recorder.losses,
        "grad_norms": recorder.grad_norms,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    del run_curve
    main()
