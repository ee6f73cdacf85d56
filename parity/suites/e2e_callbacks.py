"""User callbacks: ``LLMTrainer`` and ``HyperTrainer`` dispatch the same events, arguments and order (tier A).

A migrating user hands a legacy callback (``hyper_parallel.trainer.callbacks.base.Callback``) to
``trainer.add_callback``. Both trainers train the debug recipe from the same YAML with a recording
callback; the record is the whole event sequence of the user's view: each hook's name (the key of its
entry), the trainer state it sees (``global_step``, ``epoch``, ``max_steps``) and its keyword arguments in
canonical form (floats as float leaves, tensors by canonical hash, the ``on_log`` metrics with the
values of the deterministic keys and the types of the others, checkpoint folders relative to the
run's folder). Each run trains, saves, and then resumes from its run folder, so ``on_save`` and
``on_load`` are in the sequence as well as the step, micro-batch and log events; after training,
each run dispatches ``on_evaluate`` (with metrics and without), ``on_save`` and ``on_load`` as
user code would.
"""

from __future__ import annotations

import functools
import gc
from pathlib import Path
from typing import Any

from parity.callback_events import DETERMINISTIC_METRICS, EventRecorder
from parity.cases import REGISTRY
from parity.e2e import WorkDir
from parity.legacy_driver import legacy_args

__all__ = [
    "DETERMINISTIC_METRICS",
    "EventRecorder",
    "GcRecorder",
    "legacy_events",
    "legacy_gc",
    "new_events",
    "new_gc",
    "run_events",
]


def _trainer(kind: str, args: Any) -> Any:
    """The trainer a user builds from legacy ``args``: ``LLMTrainer``, or the new path's Config."""
    if kind == "legacy":
        from hyper_parallel.trainer import LLMTrainer

        return LLMTrainer(args)
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    return legacy_to_trainer_config(args).build()


def _train(kind: str, root: str, *overrides: str) -> list[dict[str, Any]]:
    args = legacy_args(f"--train.checkpoint.output_dir={root}/ckpt", *overrides)
    recorder = EventRecorder(root)
    trainer = _trainer(kind, args)
    trainer.add_callback(recorder)
    trainer.train()
    # Neither trainer evaluates (legacy evaluation is a stub); user code that does hands its
    # metrics to the callbacks through the trainer's dispatch, with and without metrics.
    trainer.dispatch_evaluate_event({"eval_loss": 0.5})
    trainer.dispatch_evaluate_event()
    # ... and a save or load of its own to announce (the folders are the user's, not the run's).
    trainer.dispatch_save_event(f"{root}/user/saved")
    trainer.dispatch_load_event(f"{root}/user/loaded")
    return recorder.events


def run_events(
    kind: str, *, steps: int, save_steps: int, log_steps: int, global_batch_size: int
) -> dict[str, Any]:
    """``kind`` ("legacy" or "new") trains ``steps`` steps, then resumes from its run folder for one more."""
    common = (
        f"--train.checkpoint.save_steps={save_steps}",
        f"--train.logging.log_steps={log_steps}",
        f"--train.global_batch_size={global_batch_size}",
    )
    with WorkDir(None) as root:
        fresh = _train(kind, root, f"--train.max_steps={steps}", *common)
        resumed = _train(
            kind,
            root,
            f"--train.max_steps={steps + 1}",
            f"--train.checkpoint.load_path={Path(root, 'ckpt')}",
            # The resume trains one step past the saved horizon: a settings change it must accept.
            "--train.checkpoint.resume_config_changes=apply",
            *common,
        )
    return {"events": {"fresh": fresh, "resumed": resumed}}


@functools.cache
def _cached(kind: str, **params: Any) -> dict[str, Any]:
    return run_events(kind, **params)


def legacy_events(**params: Any) -> dict[str, Any]:
    return _cached("legacy", **params)


def new_events(**params: Any) -> dict[str, Any]:
    return _cached("new", **params)


# 3 steps of 2 micro-batches (global batch 4, micro batch 2), a checkpoint at step 2 and the final
# one at 3, a log line every 2 steps; the resume reads step_3 from the run folder and trains step 4.
PARAMS = {"steps": 3, "save_steps": 2, "log_steps": 2, "global_batch_size": 4}
REGISTRY.pair(
    "user_callbacks", kind="e2e", tags=("e2e",), seed=42, params=PARAMS, legacy=legacy_events, new=new_events
)


# ----------------------------------------------------------------------------- train.debug.gc_steps
#
# ``gc_steps: N`` turns the interpreter's automatic collection off for the run and collects every N
# steps instead (legacy ``GCCallback``, HyperTrainer's loop), before the user's ``on_step_end``. A
# user sees it as the full collections (``gc.get_stats()``, generation 2) made during each step and
# whether automatic collection is on; with automatic collection off, a collection is the trainer's.


class GcRecorder:
    """A user callback: per step, the full collections between its ``on_step_begin`` and
    ``on_step_end`` and whether automatic collection was on; at train end whether it is on again."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._begin = 0

    @staticmethod
    def _full() -> int:
        return int(gc.get_stats()[2]["collections"])

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda state, **kwargs: None  # every other hook

    def on_step_begin(self, state: Any, **kwargs: Any) -> None:
        self._begin = self._full()

    def on_step_end(self, state: Any, **kwargs: Any) -> None:
        self.rows.append(
            {
                "step": state.global_step,
                "full_collections": self._full() - self._begin,
                "automatic": gc.isenabled(),
            }
        )

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        self.rows.append({"train_end_automatic": gc.isenabled()})


def _gc_run(kind: str, *, steps: int, gc_steps: int) -> dict[str, Any]:
    recorder = GcRecorder()
    was_on = gc.isenabled()
    try:
        with WorkDir(None) as root:
            args = legacy_args(
                f"--train.checkpoint.output_dir={root}/ckpt",
                f"--train.max_steps={steps}",
                f"--train.debug.gc_steps={gc_steps}",
                "--train.checkpoint.save_steps=0",
            )
            trainer = _trainer(kind, args)
            trainer.add_callback(recorder)
            trainer.train()
    finally:
        (gc.enable if was_on else gc.disable)()  # the harness's process goes on as it was
    return {"gc": recorder.rows}


def legacy_gc(**params: Any) -> dict[str, Any]:
    return _gc_run("legacy", **params)


def new_gc(**params: Any) -> dict[str, Any]:
    return _gc_run("new", **params)


# Every step (the N = 1 edge) and every second step of 3.
REGISTRY.grid(
    "gc_steps_collections",
    params=[{"steps": 3, "gc_steps": _gc_steps} for _gc_steps in (1, 2)],
    kind="e2e",
    tags=("e2e",),
    seed=42,
    legacy=legacy_gc,
    new=new_gc,
)
