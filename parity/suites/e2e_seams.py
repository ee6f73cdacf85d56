"""Trainer seams no end-to-end recipe reaches: the dp rank under tp, ``debug.seed``, throughput (tier A).

The recipes of ``parity.e2e`` run on one rank (or two data-parallel ranks, where dp rank == global
rank), through the legacy YAML (which has no ``debug.seed``), and compare metric records without
their timing fields. Three small pairs cover what that leaves out, each well under a second:

- ``trainer_dp_rank``: ``HyperTrainer`` init steps 1-3 (``setup_distributed``, ``tokenizer``,
  ``dataloader``) against the legacy ``ParallelDims`` + ``LLMTrainer`` steps 4-8, on every rank of
  a faked world where tp (and cp) > 1, so the dataloader's dp rank is ``rank // (tp*cp*pp*ep)``
  and not the global rank. No process group: the platform reports the
  simulated rank (``simulated_rank``), and step 1's process-group/mesh helper is replaced by one
  that only builds ``ParallelDims`` from the trainer's own ``make_parallel_dims`` for that world.
- ``trainer_debug_seed``: a ``HyperTrainer`` built from a native Config (the ``debug`` recipe) with
  ``debug.seed`` set, against ``LLMTrainer`` on the debug YAML with ``train.seed`` at that value:
  the materialised initial weights and the first step's micro-batches (``debug.seed`` is the run's
  seed: it overrides ``training.seed`` for the generators and for the dataloader's sampler).
- ``trainer_throughput``: two steps on padded text rows (the counted tokens are fewer than
  ``global_batch_size * seq_len``) with the step clock pinned to a ticking clock on both sides
  (the legacy logging module's ``time`` and the platform's ``wall_time``, as
  ``components_metrics`` pins them), comparing every record value, throughput, tflops and MFU
  included.
"""

from __future__ import annotations

import contextlib
import dataclasses
import unittest.mock
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from parity import assets, canonical
from parity.builders import FLOPS_PER_TOKEN, PEAK_TFLOPS, FixedClock, loader_summary
from parity.cases import REGISTRY
from parity.e2e import WorkDir, side_dirs
from parity.legacy_driver import bare_trainer, legacy_args, llm_steps, simulated_rank

__all__ = ["legacy_dp_ranks", "new_dp_ranks", "legacy_seeded_init", "new_seeded_init"]

_TOKENS = 3  # micro-batches read per rank


# ----------------------------------------------------------------------------- dp rank under tp/cp
def _dp_argv(*, tp: int, cp: int) -> tuple[str, ...]:
    return (
        "--data.type=dummy",
        "--data.max_seq_len=16",
        "--train.micro_batch_size=2",
        "--train.global_batch_size=8",
        "--train.max_steps=50",
        "--train.seed=5",
        "--train.accelerator.dp_shard=-1",
        f"--train.accelerator.tp={tp}",
        f"--train.accelerator.cp={cp}",
    )


def _debug_vocab() -> int:
    from hyper_parallel.models.qwen3_5 import FLAVORS

    return int(FLAVORS["debug"]["vocab_size"])


def _dims(parallel_dims: Any) -> dict[str, int]:
    return {
        "world_size": parallel_dims.world_size,
        "dp_size": parallel_dims.dp_size,
        "non_dp_size": parallel_dims.non_dp_size,
    }


def legacy_dp_ranks(*, world: int, tp: int, cp: int) -> dict[str, Any]:
    """Every rank's legacy loader: ``ParallelDims`` of the world, steps 4-8 with the rank simulated."""
    out: dict[str, Any] = {}
    for rank in range(world):
        args = legacy_args(*_dp_argv(tp=tp, cp=cp))
        # No model is built: the dummy dataset reads only its vocabulary size (the debug flavour's).
        model = SimpleNamespace(config=SimpleNamespace(vocab_size=_debug_vocab()))
        trainer = bare_trainer(args, model=model, world_size=world)
        llm_steps(trainer)
        with simulated_rank(rank):
            trainer._build_dataloader()
        out[f"rank{rank}"] = {
            **loader_summary(trainer.train_dataloader, trainer.state.max_steps, trainer._grad_accum, _TOKENS),
            "parallel_dims": _dims(trainer.parallel_dims),
        }
    return out


def new_dp_ranks(*, world: int, tp: int, cp: int) -> dict[str, Any]:
    """Every rank's ``HyperTrainer`` after init steps 1-3 (its own ParallelDims rule and dp-rank rule)."""
    import torch

    from hyper_parallel.platform import GroupInfo
    from hyper_parallel.trainer import init_helpers
    from hyper_parallel.trainer.hyper_trainer import INIT_STEPS, HyperTrainer
    from hyper_parallel.trainer.init_helpers import DistributedSetup, TrainerState
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    out: dict[str, Any] = {}
    for rank in range(world):
        config = legacy_to_trainer_config(legacy_args(*_dp_argv(tp=tp, cp=cp)))
        trainer = HyperTrainer.__new__(HyperTrainer)
        assert config.model_spec is not None
        trainer.config, trainer.spec = config, config.model_spec
        trainer.state = TrainerState(max_steps=config.training.steps)
        trainer.last_step_metrics, trainer._last_global_tokens, trainer.init_steps = None, None, []

        def faked_world(*, make_parallel_dims: Any, **_: Any) -> DistributedSetup:
            # Step 1 without a process group or mesh: the world is ``world`` ranks.
            dims = make_parallel_dims(world)
            group = GroupInfo(group_name="trainer_dp", group=None, rank_size=dims.dp_size)
            return DistributedSetup(
                device=torch.device("cpu"), parallel_dims=dims, mesh=None, dp_group_info=group
            )

        with simulated_rank(rank), unittest.mock.patch.object(init_helpers, "setup_distributed", faked_world):
            for name in INIT_STEPS[:3]:
                with trainer._init_step(name):
                    getattr(trainer, f"_init_{name}")()
        loader = trainer.dataloader
        out[f"rank{rank}"] = {
            **loader_summary(loader, trainer.state.max_steps, loader.grad_accum, _TOKENS),
            "parallel_dims": _dims(trainer.parallel_dims),
        }
    return out


SUITE = REGISTRY.suite(tags=("e2e",))
SUITE.grid(
    "trainer_dp_rank",
    params=(dict(world=4, tp=2, cp=1), dict(world=8, tp=2, cp=2)),
    kind="e2e",
    seed=5,
    legacy=legacy_dp_ranks,
    new=new_dp_ranks,
)


# ----------------------------------------------------------------------------- debug.seed
def _weights(model: Any) -> dict[str, Any]:
    """The model's state as plain tensors (FSDP2 DTensors gathered), by FQN."""
    state = {}
    for name, value in model.state_dict().items():
        full = value.full_tensor() if hasattr(value, "full_tensor") else value
        state[name] = full.detach().clone()
    return {"initial_weights": canonical.canonicalise(state, "initial_weights")}


def legacy_seeded_init(*, seed: int) -> dict[str, Any]:
    """``LLMTrainer`` on the debug YAML with ``train.seed=seed``: its weights after init."""
    from hyper_parallel.trainer import LLMTrainer

    with WorkDir(None) as tmp:
        args = legacy_args(*side_dirs(tmp), f"--train.seed={seed}", "--train.checkpoint.save_steps=0")
        base = LLMTrainer(args).base
        set_epoch = getattr(base.sampler, "set_epoch", None)
        if set_epoch is not None:
            set_epoch(0)
        return {
            **_weights(base.model),
            "first_step": canonical.batches(next(base._make_micro_batch_iterator())),
        }


def new_seeded_init(*, seed: int) -> dict[str, Any]:
    """``HyperTrainer`` from the native ``debug`` recipe (``training.seed`` 42) with ``debug.seed=seed``."""
    from hyper_parallel.recipes.qwen3_5 import debug

    with WorkDir(None) as tmp:
        config = debug()
        config = dataclasses.replace(
            config,
            debug=dataclasses.replace(config.debug, seed=seed),
            checkpoint=dataclasses.replace(config.checkpoint, output_dir=f"{tmp}/ckpt", save_steps=0),
        )
        assert config.training.seed != seed, "the case needs debug.seed to differ from training.seed"
        trainer = config.build()
        trainer.dataloader.set_epoch(0)
        first = next(trainer.dataloader.micro_batch_iterator())
        return {**_weights(trainer.model), "first_step": canonical.batches(first)}


SUITE.pair(
    "trainer_debug_seed",
    kind="e2e",
    seed=13,
    params={"seed": 13},
    legacy=legacy_seeded_init,
    new=new_seeded_init,
)


# ----------------------------------------------------------------------------- throughput
class TickingClock(FixedClock):
    """A step clock that moves on by ``tick`` seconds at every reading: each step (one reading at
    its start, one when its record is built) lasts exactly ``tick`` on both sides."""

    def __init__(self, start: float = 1_700_000_000.0, tick: float = 0.25) -> None:
        super().__init__()
        self.now, self.tick = start, tick

    def time(self) -> float:
        now = self.now
        self.now += self.tick
        return now


def _throughput_argv(tmp: str) -> tuple[str, ...]:
    # Padded text rows at 64 tokens: the counted loss tokens are fewer than 8 * 64.
    return (
        *side_dirs(tmp),
        "--data.type=hf_datasets",
        f"--data.train_path={assets.text_jsonl()}",
        f"--model.tokenizer_path={assets.tokenizer_dir()}",
        "--data.max_seq_len=64",
        "--train.max_steps=2",
        "--train.checkpoint.save_steps=0",
        "--train.logging.log_steps=1",
        f"--train.logging.model_flops_per_token={FLOPS_PER_TOKEN}",
        f"--train.logging.peak_tflops={PEAK_TFLOPS}",
    )


@contextlib.contextmanager
def _pinned_clock() -> Iterator[None]:
    with TickingClock().pinned():
        yield


def _records(history: list[dict[str, Any]]) -> dict[str, Any]:
    if not history:
        raise AssertionError("no metric records were logged")
    keys = sorted({k for row in history for k in row})
    return {"metrics": canonical.metrics(history, deterministic=keys, float_dtypes={"grad_norm": "float32"})}


def legacy_throughput() -> dict[str, Any]:
    from hyper_parallel.trainer import LLMTrainer

    with WorkDir(None) as tmp, _pinned_clock():
        trainer = LLMTrainer(legacy_args(*_throughput_argv(tmp)))
        trainer.train()
        return _records(list(trainer.base.state.log_history))


def new_throughput() -> dict[str, Any]:
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    with WorkDir(None) as tmp, _pinned_clock():
        trainer = legacy_to_trainer_config(legacy_args(*_throughput_argv(tmp))).build()
        trainer.train()
        return _records(list(trainer.state.log_history))


SUITE.pair(
    "trainer_throughput",
    kind="e2e",
    seed=0,
    legacy=legacy_throughput,
    new=new_throughput,
)
