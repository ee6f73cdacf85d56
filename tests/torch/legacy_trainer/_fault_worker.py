"""Child process for the checkpoint fault tests: train the debug recipe, optionally SIGKILL itself.

    python _fault_worker.py TRAINER OUT_DIR CURVE_JSON [--kill EVENT:N] [--load PATH] [overrides...]

``TRAINER`` is ``legacy`` (``LLMTrainer``) or ``new`` (``HyperTrainer`` from the same YAML). With
``--kill EVENT:N`` the process sends itself SIGKILL at the N-th time a save reaches ``EVENT`` (a
``hyper_parallel.checkpointing.fault_point`` name such as ``written:optimizer_rank0.pt``), so the
test knows exactly which file was being written, without timing guesses. At the end the per-step
losses are written to ``CURVE_JSON`` as ``{step: float.hex(loss)}``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

DEBUG_YAML = Path(__file__).resolve().parents[3] / "examples" / "debug" / "train.yaml"


def _install_kill(spec: str) -> None:
    from hyper_parallel import checkpointing

    event, _, nth = spec.rpartition(":")
    remaining = [int(nth)]

    def hook(name: str) -> None:
        if name == event:
            remaining[0] -= 1
            if remaining[0] == 0:
                os.kill(os.getpid(), signal.SIGKILL)

    checkpointing.set_fault_hook(hook)


def main(argv: list[str]) -> int:
    from hyper_parallel.platform.logging import init_logger

    init_logger()
    trainer_kind, out_dir, curve_path, *rest = argv
    overrides = [f"--train.checkpoint.output_dir={out_dir}"]
    while rest:
        flag = rest.pop(0)
        if flag == "--kill":
            _install_kill(rest.pop(0))
        elif flag == "--load":
            overrides.append(f"--train.checkpoint.load_path={rest.pop(0)}")
        else:
            overrides.append(flag)
    curve: dict[int, str] = {}
    if trainer_kind == "legacy":
        from hyper_parallel.trainer import LLMTrainer
        from hyper_parallel.trainer.config import LegacyTrainerArgs, parse_args
        from hyper_parallel.trainer.utils.discovery import discover_model_spec

        args = parse_args(LegacyTrainerArgs, [str(DEBUG_YAML), *overrides])
        discover_model_spec(args.model.name)
        trainer = LLMTrainer(args)

        class Recorder:
            def __getattr__(self, name):
                return lambda state, **kwargs: None

            def on_step_end(self, state, *, loss=None, grad_norm=None, **kwargs):
                curve[state.global_step] = float(loss).hex()

        trainer.add_callback(Recorder())
        trainer.train()
    else:
        from hyper_parallel.trainer.legacy_mapping import config_manager

        trainer = config_manager().parse_args([str(DEBUG_YAML), *overrides]).build()
        trainer.train()
        curve = {int(r["step"]): float(r["loss"]).hex() for r in trainer.metrics.history}
    Path(curve_path).write_text(json.dumps(curve))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
