"""What the legacy trainer makes of its args where the e2e runs never look: the callbacks' sections
(absent, at the schema's defaults, each field moved) and the builders' code fallbacks.

The legacy callbacks read ``train.<section>`` (else ``<section>``) with ``getattr(cfg, name,
default)`` (``spec/legacy-trainer.md`` D1 and 13.1), so each setting has two sources: the schema's
default and the callback's own fallback when the field or the section is absent. The e2e runs
reach neither a field at a value no recipe sets nor an args object without sections (what tests
and user code pass as ``SimpleNamespace``). Here every callback ``_init_callbacks`` builds is made
from a bare trainer whose ``args`` is:

- ``absent``: no section at all (the callback's fallbacks);
- ``defaults``: the schema's defaults (``LegacyTrainerArgs()``);
- ``<section>.<field>=<value>``: the defaults with one field of a section the callbacks read moved
  off its default (a bool flipped, a number moved, another ``Literal`` member, a string changed),
  and each number field at 0 as well (where ``x or fallback`` and ``x > 0`` turn).

A row holds the callback's plain public attributes (numbers, strings, bools, None and lists of
them) or the one error line its constructor raised, paths under the row's folder as ``<tmp>``, and
``(automatic gc)`` where the constructor turned the interpreter's automatic collection off or on
(switched back after each callback, so the process running the harness goes on as it was).
The builders read ``args`` the same way (``spec/legacy-trainer.md`` 1.6 lists their fallbacks,
some unlike the schema: ``lr`` 1e-4, the sampler's seed 0). ``builder_rows`` runs the optimizer,
LR scheduler and dataloader steps on a bare trainer whose sections hold no field, and beside it
the settings a recipe never combines (a ``prefetch_factor`` with no workers): the AdamW
hyperparameters, the LR curve, and the loader's batch size, workers, prefetch, pinning, sampler
and gradient accumulation; then (``model_api_rows``) the qwen3_5 package's fallbacks that only its
public API reaches: ``args`` without ``model``, a list ``config_overrides``, a package reload,
tp/ep/cp=2, mixed precision without dtypes (what FSDP2 would be handed), compile on, a torch dtype
for the HF config and the tied head's storage in ``save_hf_state_dict``'s result.

Used by the ``legacy_callback_settings`` and ``legacy_builder_fallbacks`` goldens
(``parity/suites/legacy_trainer.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import os
import tempfile
import typing
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, Literal
from unittest import mock

from hyper_parallel.trainer.callbacks.base import SECTION_NAMES
from parity.canonical import error_line

__all__ = [
    "CALLBACKS",
    "SECTIONS",
    "builder_rows",
    "callback_rows",
    "model_api_rows",
    "moved",
    "values_off_default",
]

# The callbacks ``BaseTrainer._init_callbacks`` builds, by their ``hyper_parallel.trainer.callbacks`` name.
CALLBACKS = (
    "LoggingCallback",
    "CheckpointCallback",
    "SafetensorsExportCallback",
    "EvalCallback",
    "ProfilerCallback",
    "WandbCallback",
    "TensorBoardCallback",
    "ProgressCallback",
    "MoEMonitorCallback",
    "GradientHealthCallback",
    "MemoryMonitorCallback",
    "GCCallback",
)
# The sections of ``train:`` the callbacks read (``_sub_cfg`` names): the product's own list.
SECTIONS = SECTION_NAMES
_PLAIN = (str, int, float, bool, type(None))


def moved(annotation: Any, default: Any, folder: str) -> Any:
    """One value off ``default`` of the field's type: bool flipped, number moved, another Literal
    member, a changed string (a folder under ``folder`` for paths); None -> a value of the type."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is Literal:
        return next(v for v in args if v != default)
    if default is None and args:
        return moved(args[0], args[0](), folder) if args[0] in (int, float, str, bool) else None
    if isinstance(default, bool) or annotation is bool:
        return not default
    if isinstance(default, int) or annotation is int:
        return (default or 0) + 3
    if isinstance(default, float) or annotation is float:
        return (default or 0.0) * 2 + 0.5
    if isinstance(default, str) or annotation is str:
        return os.path.join(folder, f"moved_{default or 'value'}")
    return None


def values_off_default(annotation: Any, default: Any, folder: str) -> list[Any]:
    """``moved``'s value, and for a number field 0 where it is not the default: the value where
    ``x or fallback`` and ``x > 0`` switch (a save interval of 0 turns saving off)."""
    values = [v for v in (moved(annotation, default, folder),) if v is not None]
    kinds = {a for a in (annotation, *typing.get_args(annotation)) if a in (int, float)}
    if kinds and not isinstance(default, bool) and default != 0 and 0 not in values:
        values.append(0)
    return values


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, _PLAIN) for v in value)
    return isinstance(value, _PLAIN)


def _state(callback: Any, folder: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in sorted(vars(callback).items()):
        if name.startswith("_") or not _plain(value):
            continue
        if isinstance(value, str):
            value = value.replace(folder, "<tmp>")
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _section_fields(train_args: Any) -> Iterator[tuple[str, dataclasses.Field, Any]]:
    hints_of: dict[type, dict[str, Any]] = {}
    for section in SECTIONS:
        cfg = getattr(train_args, section)
        cls = type(cfg)
        hints = hints_of.setdefault(cls, typing.get_type_hints(cls))
        for spec in dataclasses.fields(cfg):
            yield section, spec, hints[spec.name]


@contextlib.contextmanager
def _row_folder() -> Iterator[str]:
    """A fresh working folder per row (W&B and relative output folders land there)."""
    with tempfile.TemporaryDirectory(prefix="parity-callbacks-") as folder:
        real = os.path.realpath(folder)
        with mock.patch.dict(os.environ, {"WANDB_DIR": real}), contextlib.chdir(real):
            yield real


def _built(args: Any, folder: str) -> dict[str, Any]:
    from hyper_parallel.trainer import callbacks

    trainer = SimpleNamespace(args=args, state=SimpleNamespace(global_step=0, max_steps=0))
    row: dict[str, Any] = {}
    for name in CALLBACKS:
        gc_was_on = gc.isenabled()
        try:
            row[name] = _state(getattr(callbacks, name)(trainer), folder)
            if gc.isenabled() != gc_was_on:  # a process-wide switch the constructor threw
                row[name]["(automatic gc)"] = gc.isenabled()
        except Exception as exc:
            row[name] = f"{type(exc).__name__}: {' '.join(str(exc).replace(folder, '<tmp>').split())}"
        finally:
            (gc.enable if gc_was_on else gc.disable)()  # the harness's process goes on as it was
    return row


def callback_rows() -> dict[str, Any]:
    """``{row label: {callback: state or error line}}`` (module docstring)."""
    from hyper_parallel.trainer.config import LegacyTrainerArgs

    rows: dict[str, Any] = {}
    with _row_folder() as folder:
        rows["absent"] = _built(SimpleNamespace(train=SimpleNamespace()), folder)
    with _row_folder() as folder:
        rows["defaults"] = _built(LegacyTrainerArgs(), folder)
    for section, spec, annotation in _section_fields(LegacyTrainerArgs().train):
        default = getattr(getattr(LegacyTrainerArgs().train, section), spec.name)
        for index in itertools.count():  # each value in a fresh folder, as each row is built
            with _row_folder() as folder:
                values = values_off_default(annotation, default, folder)
                if index >= len(values):
                    break
                args = LegacyTrainerArgs()
                setattr(getattr(args.train, section), spec.name, values[index])
                shown = (
                    values[index].replace(folder, "<tmp>")
                    if isinstance(values[index], str)
                    else values[index]
                )
                rows[f"{section}.{spec.name}={shown!r}"] = _built(args, folder)
    return rows


# ----------------------------------------------------------------------------- builder fallbacks
def _bare(train: Any, data: Any, max_steps: int) -> Any:
    from hyper_parallel.trainer.base import BaseTrainer, TrainerState
    from hyper_parallel.trainer.parallel_dims import ParallelDims

    trainer = BaseTrainer.__new__(BaseTrainer)
    trainer.args = SimpleNamespace(train=train, data=data)
    trainer.state = TrainerState(max_steps=max_steps)
    trainer.parallel_dims = ParallelDims(world_size=1)
    return trainer


def _optimizer_row(optimizer: Any) -> dict[str, Any]:
    from torch import nn

    trainer = _bare(SimpleNamespace(optimizer=optimizer), SimpleNamespace(), max_steps=10)
    trainer.model = nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2))
    trainer._build_optimizer()
    groups = [{k: v for k, v in g.items() if k != "params"} for g in trainer.optimizer.param_groups]
    trainer._build_lr_scheduler()
    curve = []
    for _ in range(12):
        curve.append(trainer.lr_scheduler.get_last_lr()[0])
        trainer.optimizer.step()
        trainer.lr_scheduler.step()
    plain = [
        {k: (list(v) if isinstance(v, tuple) else v) for k, v in sorted(g.items()) if _plain(v)}
        for g in groups
    ]
    return {"param_groups": plain, "lr_curve": curve}


def _loader_row(train: Any, data: Any) -> dict[str, Any] | str:
    trainer = _bare(train, data, max_steps=4)
    trainer.train_dataset = [{"input_ids": i} for i in range(16)]
    trainer.collate_fn = list
    try:
        trainer._build_dataloader()
    except Exception as exc:
        return error_line(exc)
    loader, sampler = trainer.train_dataloader, trainer.sampler
    return {
        "batch_size": loader.batch_size,
        "num_workers": loader.num_workers,
        "prefetch_factor": loader.prefetch_factor,
        "pin_memory": loader.pin_memory,
        "drop_last": loader.drop_last,
        "sampler": {"shuffle": sampler.shuffle, "seed": sampler.seed, "num_replicas": sampler.num_replicas},
        "grad_accum": trainer._grad_accum,
        "first_indices": list(iter(sampler))[:8],
    }


def _base_dataset_row(train: Any, data: Any) -> dict[str, Any] | str:
    """``BaseTrainer._build_dataset`` (the base builders a subclass of its own keeps: LLMTrainer
    replaces it): the dataset's length and first row, or the error line."""
    trainer = _bare(train, data, max_steps=3)
    trainer.data_transform = None
    try:
        trainer._build_dataset()
    except Exception as exc:
        return error_line(exc)
    dataset = trainer.train_dataset
    try:
        first = dataset[0]
        return {"length": len(dataset), "first": {k: list(map(int, v)) for k, v in first.items()}}
    except (TypeError, IndexError, KeyError, AttributeError) as exc:  # what the step left is the value
        return f"not a dataset ({type(dataset).__name__}): {error_line(exc)}"


def _context_row(mixed_precision: Any) -> list[str]:
    """``BaseTrainer._build_training_context``: the lines it logs (the contexts are null on CPU)."""
    from parity import run_log

    trainer = _bare(SimpleNamespace(mixed_precision=mixed_precision), SimpleNamespace(), max_steps=1)
    with _row_folder() as folder, run_log.capture(folder) as lines:
        trainer._build_training_context()
    return lines


def builder_rows() -> dict[str, Any]:
    """``{row label: what the step built}``: the optimizer and LR scheduler steps on an empty
    ``train.optimizer``, then the dataloader step on empty sections and on settings no recipe combines."""
    ns = SimpleNamespace
    return {
        "optimizer: no field": _optimizer_row(ns()),
        "optimizer: lr only": _optimizer_row(ns(lr=2e-3)),
        "optimizer: warmup and lr_min only": _optimizer_row(ns(lr_warmup_ratio=0.2, lr_min=1e-5)),
        "dataloader: no field": _loader_row(ns(), ns()),
        "dataloader: micro batch 2, no global batch": _loader_row(ns(micro_batch_size=2), ns()),
        "dataloader: prefetch_factor 2 without workers": _loader_row(
            ns(), ns(prefetch_factor=2, num_workers=0)
        ),
        "dataloader: seed 5, shuffle off": _loader_row(ns(seed=5), ns(shuffle=False)),
        "dataloader: seed 5": _loader_row(ns(seed=5), ns()),
        "optimizer: eps only": _optimizer_row(ns(eps=1e-6)),
        "optimizer: every field None": _optimizer_row(
            ns(
                lr=None,
                weight_decay=None,
                eps=None,
                betas=None,
                lr_warmup_ratio=None,
                lr_decay_style=None,
                lr_min=None,
            )
        ),
        "dataset (base builder): dummy, no sizes": _base_dataset_row(ns(), ns(type="dummy", max_seq_len=8)),
        "dataset (base builder): dummy, global batch 2": _base_dataset_row(
            ns(global_batch_size=2), ns(type="dummy", max_seq_len=8)
        ),
        "dataset (base builder): no type": _base_dataset_row(ns(global_batch_size=2), ns(max_seq_len=8)),
        "dataset (base builder): an unknown type": _base_dataset_row(ns(), ns(type="parquet")),
        "training context: mixed precision on": _context_row(ns(enabled=True)),
        "training context: mixed precision off": _context_row(ns(enabled=False)),
        **model_api_rows(),
    }


# ----------------------------------------------------------------------------- model API fallbacks
def _outcome(fn: Any) -> Any:
    """What ``fn()`` returned, or the one error line it raised."""
    try:
        return fn()
    except Exception as exc:
        return error_line(exc)


def _plain_model(**overrides: Any) -> Any:
    """The debug Qwen3.5 model built from a bare legacy ``args`` namespace, seeded."""
    import torch

    from hyper_parallel.models.qwen3_5 import build_qwen3_5

    torch.manual_seed(0)
    return build_qwen3_5(
        SimpleNamespace(model=SimpleNamespace(flavor="debug", config_overrides=overrides or None))
    )


def _planned(args: Any) -> dict[str, Any]:
    """What ``parallelize_qwen3_5`` hands FSDP2 (``fully_shard`` recorded, not run: no process group):
    per call the module's class and its keyword arguments, a policy as its dtypes."""
    from hyper_parallel.models.qwen3_5 import parallelize as plan

    calls: list[dict[str, Any]] = []

    def record(module: Any, **kwargs: Any) -> Any:
        policy = kwargs.pop("mp_policy", None)
        row = {"module": type(module).__name__, **{k: _plain_value(v) for k, v in sorted(kwargs.items())}}
        if policy is not None:
            row["mp_policy"] = {f.name: str(getattr(policy, f.name)) for f in dataclasses.fields(policy)}
        calls.append(row)
        return module

    with (
        mock.patch.object(plan, "fully_shard", record),
        mock.patch.object(plan, "register_fsdp_forward_method", lambda *a, **k: None),
    ):
        plan.parallelize_qwen3_5(_plain_model(), None, args)
    return {"calls": len(calls), "root": calls[-1], "first_layer": calls[0]}


def _plain_value(value: Any) -> Any:
    return value if isinstance(value, _PLAIN) else type(value).__name__


def _reload_row() -> dict[str, Any]:
    """``importlib.reload`` of the package: the registry after it (the package's own entry is kept,
    not refused); the package's earlier names are put back afterwards, so later cases see the same objects."""
    import importlib

    import hyper_parallel.models.qwen3_5 as pkg
    from hyper_parallel.models.spec import get_spec, list_specs

    saved, spec = dict(vars(pkg)), get_spec("qwen3_5")
    try:
        outcome = _outcome(lambda: importlib.reload(pkg).__name__)
        return {
            "outcome": outcome,
            "registered": list_specs().count("qwen3_5"),
            "spec_kept": get_spec("qwen3_5") is spec,
        }
    finally:
        vars(pkg).update(saved)


def _shared_storage(state: dict[str, Any]) -> list[list[str]]:
    """The groups of keys whose tensors share one storage."""
    groups: dict[int, list[str]] = {}
    for key, value in state.items():
        groups.setdefault(value.untyped_storage().data_ptr(), []).append(key)
    return sorted(keys for keys in groups.values() if len(keys) > 1)


def model_api_rows() -> dict[str, Any]:
    """The qwen3_5 model package's own fallbacks, reached through its public API only (the CLI
    entries refuse or fill these earlier): a bare ``args`` without ``model``, a non-mapping
    ``config_overrides``, a registry re-import, unsupported parallel degrees, mixed precision
    without dtypes, compile on, a torch dtype for the HF config, the tied head in the HF state dict."""
    import torch

    from hyper_parallel.models.qwen3_5 import Qwen3_5StateDictAdapter, build_qwen3_5, config_from_args
    from hyper_parallel.models.qwen3_5.parallelize import parallelize_qwen3_5_from_configs

    ns = SimpleNamespace
    rows: dict[str, Any] = {
        "model api: config_from_args without model": _outcome(lambda: repr(config_from_args(ns()))),
        "model api: build_qwen3_5 with a list config_overrides": _outcome(
            lambda: type(build_qwen3_5(ns(model=ns(flavor="debug", config_overrides=[1])))).__name__
        ),
        "model api: package reloaded": _reload_row(),
    }
    for degree in ("tp", "ep", "cp"):
        accelerator = ns(**{degree: 2})
        rows[f"model api: parallelize with {degree}=2"] = _outcome(
            lambda a=accelerator: _planned(ns(train=ns(accelerator=a)))
        )
    rows["model api: parallelize, mixed precision without dtypes"] = _outcome(
        lambda: _planned(ns(train=ns(mixed_precision=ns(enabled=True))))
    )
    rows["model api: parallelize from configs with compile on"] = _outcome(
        lambda: parallelize_qwen3_5_from_configs(
            _plain_model(),
            None,
            training=None,
            parallelism=None,
            activation_checkpoint=None,
            compile=ns(enable=True),
        )
    )
    model = _plain_model()
    adapter = Qwen3_5StateDictAdapter()
    rows["model api: export_hf_config dtype torch.bfloat16"] = _outcome(
        lambda: adapter.export_hf_config(model.config, torch.bfloat16)["dtype"]
    )
    rows["model api: save_hf_state_dict storage shared, in and out"] = {
        "model state_dict": _shared_storage(model.state_dict()),
        "save_hf_state_dict": _shared_storage(adapter.save_hf_state_dict(model.state_dict(), model.config)),
    }
    return rows
