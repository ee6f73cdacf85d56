"""Checkpoint parity: legacy ``CheckpointCallback`` + ``SafetensorsExportCallback`` vs ``CheckpointManager``.

Both sides start from the same trained state (the debug model after ``steps`` optimizer steps with
the legacy AdamW groups and LR lambda, a ``StatefulDataLoader`` part-way through its data) and
write one ``step_<N>/`` folder each, through their own code. What is compared is what a resume
reads back: every file name, the DCP model state, the optimizer / scheduler / RNG / dataloader
``.pt`` files, ``extra_state.json`` and the HF export (tensors, ``config.json``, safetensors
metadata). The resume pair restores each side's own folder into a differently seeded state and
compares the live state plus the loss of the next step.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from parity import canonical, run_log
from parity.case_log import warnings_of
from parity.cases import REGISTRY
from parity.legacy_driver import debug_model, legacy_args

_SEQ = 16
_BATCH = 2
# Rows in the toy dataset: enough for any step count used here plus a partial epoch.
_ROWS = 32
_DATA_SEED = 1234


@dataclass
class TrainedState:
    """What a checkpoint holds, built the legacy way; both save paths read the same objects."""

    model: Any
    optimizer: Any
    lr_scheduler: Any
    dataloader: Any
    adapter: Any
    step: int
    epoch: int
    batches: Any = None  # the loader's iterator, made on the first step


def _platform_name() -> str:
    from hyper_parallel.platform import get_platform

    return get_platform().name


def _platform_loader(ids: Any) -> Any:
    """The toy rows through the platform's ``stateful_dataloader``, shuffled by its
    ``distributed_sampler`` (one replica) as the dataloader component does: the loader state holds
    counters only, no torch generator state."""
    import torch

    from hyper_parallel.platform import get_platform

    platform = get_platform()
    dataset = torch.utils.data.TensorDataset(ids)
    sampler = platform.distributed_sampler(
        dataset, num_replicas=1, rank=0, shuffle=True, seed=_DATA_SEED + 1, drop_last=False
    )
    return platform.stateful_dataloader(dataset, batch_size=_BATCH, sampler=sampler)


def _toy_ids(vocab_size: int) -> Any:
    import torch

    # The data does not depend on the model's seed: a resumed state must read the same rows.
    return torch.randint(0, vocab_size, (_ROWS, _SEQ), generator=torch.Generator().manual_seed(_DATA_SEED))


def _components_trained_state(*, steps: int, seed: int, epoch: int) -> TrainedState:
    """On MindSpore: the platform's debug model (``parity.legacy_driver.debug_model``) with the
    component optimizer and LR schedulers at the debug YAML's settings, on the same rows."""
    from hyper_parallel.models.spec import get_spec
    from parity import builders as optim

    args = legacy_args()
    model = debug_model(seed)
    optimizer = optim.new_optimizers([model], **optim.debug_optimizer_fields())
    scheduler = optim.new_schedulers(
        optimizer, training_steps=args.train.max_steps, **optim.debug_scheduler_fields()
    )
    state = TrainedState(
        model=model,
        optimizer=optimizer,
        lr_scheduler=scheduler,
        dataloader=_platform_loader(_toy_ids(model.config.vocab_size)),
        adapter=get_spec(args.model.name).state_dict_adapter,
        step=0,
        epoch=epoch,
    )
    for _ in range(steps):
        train_step(state)
    return state


def trained_state(*, steps: int, seed: int = 0, fsdp: bool = False, epoch: int = 0) -> TrainedState:
    """The debug model after ``steps`` optimizer steps (legacy optimizer + LR schedule; on MindSpore
    the components', see ``_components_trained_state``)."""
    import torch
    from torchdata.stateful_dataloader import StatefulDataLoader

    from hyper_parallel.models.qwen3_5 import build_qwen3_5
    from hyper_parallel.models.spec import get_spec
    from hyper_parallel.trainer.base import BaseTrainer, TrainerState

    if _platform_name() != "torch":
        if fsdp:
            raise ValueError("fsdp=True needs torch (FSDP2)")
        return _components_trained_state(steps=steps, seed=seed, epoch=epoch)
    args = legacy_args()
    torch.manual_seed(seed)
    model = build_qwen3_5(args)
    if fsdp:  # needs a process group (a 1-rank gloo world in the tests)
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
    trainer = BaseTrainer.__new__(BaseTrainer)
    trainer.args, trainer.model = args, model
    trainer.state = TrainerState(max_steps=args.train.max_steps)
    trainer._build_optimizer()
    trainer._build_lr_scheduler()
    # The data does not depend on ``seed``: a resumed state must read the same rows.
    ids = torch.randint(
        0, model.config.vocab_size, (_ROWS, _SEQ), generator=torch.Generator().manual_seed(_DATA_SEED)
    )
    loader = StatefulDataLoader(
        torch.utils.data.TensorDataset(ids),
        batch_size=_BATCH,
        shuffle=True,
        generator=torch.Generator().manual_seed(_DATA_SEED + 1),
    )
    state = TrainedState(
        model=model,
        optimizer=trainer.optimizer,
        lr_scheduler=trainer.lr_scheduler,
        dataloader=loader,
        adapter=get_spec(args.model.name).state_dict_adapter,
        step=0,
        epoch=epoch,
    )
    for _ in range(steps):
        train_step(state)
    return state


@contextlib.contextmanager
def _single_thread() -> Iterator[None]:
    """Train on one intra-op thread: the model is tiny and extra threads only spin on a busy host.

    The bits do not depend on it (checked: 1, 2 and 4 threads give the same 5-step checkpoint).
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _loss_twice(loss: Any) -> tuple[Any, Any]:
    return loss, loss  # ``platform.backward`` wants ``(loss, aux)``; MindSpore's aux must be a tensor


def train_step(state: TrainedState) -> Any:
    """One optimizer step (legacy order: step, scheduler step, zero_grad); returns the loss."""
    if state.batches is None:
        state.batches = iter(state.dataloader)
    (batch,) = next(state.batches)
    if _platform_name() != "torch":
        from hyper_parallel.platform import get_platform

        platform = get_platform()
        ids = platform.as_int64(batch.tolist())
        loss = platform.backward(
            lambda: _loss_twice(state.model(input_ids=ids, labels=ids)["loss"]), state.model
        )
        state.optimizer.step()
        state.lr_scheduler.step()
        state.optimizer.zero_grad()
        state.step += 1
        return loss
    with _single_thread():
        loss = state.model(input_ids=batch, labels=batch)["loss"]
        loss.backward()
        state.optimizer.step()
        state.lr_scheduler.step()
        state.optimizer.zero_grad()
    state.step += 1
    return loss.detach()


# ----------------------------------------------------------------------------- the two writers


def _fake_trainer(state: TrainedState, args: Any) -> SimpleNamespace:
    """The slice of ``BaseTrainer`` the legacy checkpoint callbacks read."""
    return SimpleNamespace(
        args=args,
        model=state.model,
        optimizer=state.optimizer,
        lr_scheduler=state.lr_scheduler,
        train_dataloader=state.dataloader,
        spec=SimpleNamespace(state_dict_adapter=state.adapter),
        dispatch_save_event=lambda checkpoint_dir: None,
        dispatch_load_event=lambda checkpoint_dir: None,
    )


def _checkpoint_overrides(output_dir: str, save_steps: int, load_path: str | None = None, **flags: bool):
    argv = [f"--train.checkpoint.output_dir={output_dir}", f"--train.checkpoint.save_steps={save_steps}"]
    argv += [f"--train.checkpoint.{name}={str(value).lower()}" for name, value in flags.items()]
    if load_path is not None:
        argv.append(f"--train.checkpoint.load_path={load_path}")
    return argv


def legacy_callbacks(
    state: TrainedState,
    output_dir: str,
    *,
    save_steps: int,
    load_path: str | None = None,
    overrides: tuple[str, ...] = (),
    **flags,
):
    """``(CheckpointCallback, SafetensorsExportCallback)`` wired to ``state`` (``overrides``: more
    ``--a.b=v`` on the debug config)."""
    from hyper_parallel.trainer.callbacks import CheckpointCallback, SafetensorsExportCallback

    trainer = _fake_trainer(
        state, legacy_args(*overrides, *_checkpoint_overrides(output_dir, save_steps, load_path, **flags))
    )
    # As in BaseTrainer._init_callbacks: the checkpoint callback finds the exporter on the trainer
    # and exports into the staged folder, so the export is part of the checkpoint's manifest.
    trainer.hf_export_callback = SafetensorsExportCallback(trainer)
    return CheckpointCallback(trainer), trainer.hf_export_callback


def legacy_save(state: TrainedState, output_dir: str, *, save_hf_weights: bool = True) -> Path:
    """Save the current step the way ``LLMTrainer`` does: step-end hooks, then train-end hooks."""
    ckpt, export = legacy_callbacks(state, output_dir, save_steps=state.step, save_hf_weights=save_hf_weights)
    progress = SimpleNamespace(global_step=state.step, epoch=state.epoch)
    for callback in (ckpt, export):
        callback.on_step_end(progress)
    for callback in (ckpt, export):
        callback.on_train_end(progress)
    return Path(output_dir) / f"step_{state.step}"


def manager(
    state: TrainedState,
    output_dir: str,
    *,
    save_steps: int,
    run_settings: dict[str, Any] | None = None,
    **fields: Any,
):
    from hyper_parallel.components.checkpoint import CheckpointManager

    config = CheckpointManager.Config(output_dir=output_dir, save_steps=save_steps, **fields)
    return config.build(
        model_parts=[state.model],
        optimizers=state.optimizer,
        lr_schedulers=state.lr_scheduler,
        dataloader=state.dataloader,
        sd_adapter=state.adapter,
        run_settings=run_settings,
    )


def legacy_run_settings(*overrides: str) -> dict[str, Any]:
    """What HyperTrainer hands its manager as ``run_settings``, read from the legacy debug config
    (plus ``overrides``) as the legacy callback reads it (no ``max_steps``: the callbacks' fake
    trainer has no state)."""
    args = legacy_args(*overrides)
    opt = args.train.optimizer
    return {
        "global_batch_size": args.train.global_batch_size,
        "seq_len": args.data.max_seq_len,
        "lr_scheduler": {
            "lr_warmup_ratio": opt.lr_warmup_ratio,
            "decay_style": opt.lr_decay_style,
            "lr_min": opt.lr_min,
        },
    }


def manager_save(state: TrainedState, output_dir: str, *, save_hf_weights: bool = True) -> Path:
    """Save the current step through the manager: per-step hook, then the train-end save."""
    mgr = manager(state, output_dir, save_steps=state.step, save_hf_weights=save_hf_weights)
    mgr.maybe_save(state.step, state.epoch)
    mgr.save_final(state.step, state.epoch)
    return Path(output_dir) / f"step_{state.step}"


def _row_text(text: str, path: str, placeholder: str) -> str:
    """A row's text with ``path`` written ``placeholder``, and the legacy field prefix written as the
    new one (``train.checkpoint.`` as ``checkpoint.``: the one difference by design)."""
    return text.replace(path, placeholder).replace("train.checkpoint.", "checkpoint.")


# ----------------------------------------------------------------------------- read back


def read_step_dir(step_dir: Path) -> dict[str, Any]:
    """Everything a resume reads from ``step_dir``, as a canonical tree (file bytes are not compared:
    ``torch.save`` archives embed the temporary file name).

    The folder's ``manifest.json`` is verified (a mismatch raises ``CheckpointCorruptError``) but
    left out of ``files``: it holds sha256 digests of those same nondeterministic archive bytes.
    The DCP shards are read through the platform's restricted reader (no code runs from them).
    """
    import torch
    from safetensors import safe_open

    from hyper_parallel.checkpointing import MANIFEST_FILE, verify_manifest
    from hyper_parallel.platform import get_platform

    step_dir = Path(step_dir)
    files = sorted(str(p.relative_to(step_dir)) for p in step_dir.rglob("*") if p.is_file())
    if MANIFEST_FILE in files:
        verify_manifest(str(step_dir))
        files.remove(MANIFEST_FILE)
    out: dict[str, Any] = {"files": files}
    out["model"] = canonical.checkpoint(get_platform().dcp_full_state_dict(str(step_dir)))
    platform = get_platform()
    on_torch = platform.name == "torch"

    def load(path: Path) -> Any:  # on MindSpore the platform's own format (safetensors + typed JSON)
        return torch.load(path, weights_only=True) if on_torch else platform.load(path)

    for key, name in (
        ("optimizer", "optimizer_rank0.pt"),
        ("scheduler", "scheduler.pt"),
        ("dataloader", "dataloader_rank0.pt"),
    ):
        if (step_dir / name).is_file():
            out[key] = canonical.checkpoint(load(step_dir / name))
    if (step_dir / "rng_rank0.pt").is_file():
        rng = load(step_dir / "rng_rank0.pt")
        out["rng"] = canonical.canonicalise(rng if on_torch else _draws_after_restoring(platform, rng))
    out["extra_state"] = json.loads((step_dir / "extra_state.json").read_text())
    hf_dir = step_dir / "hf_ckpt"
    if (hf_dir / "model.safetensors").is_file():
        with safe_open(str(hf_dir / "model.safetensors"), framework="pt" if on_torch else "np") as f:
            tensors = {key: f.get_tensor(key) for key in f.keys()}  # safe_open is not a mapping
            metadata = f.metadata()
        if not on_torch:
            tensors = platform.load_safetensors(str(hf_dir / "model.safetensors"))
        out["hf"] = {"tensors": canonical.checkpoint(tensors), "metadata": metadata}
        config = hf_dir / "config.json"
        out["hf"]["config"] = (
            canonical.canonicalise(json.loads(config.read_text())) if config.is_file() else None
        )
    return out


def _draws_after_restoring(platform: Any, rng_state: Any) -> dict[str, Any]:
    """What a MindSpore RNG state restores, as draws of each generator it holds (MindSpore's ops,
    numpy's global, torch's); the process RNG is put back afterwards.

    Not the state's bytes: the platform's state lists MindSpore's per-op kernel seeds, one entry
    per random op the process has created so far, so its size depends on which cases ran before
    in the same worker; the draws do not.
    """
    import mindspore as ms
    import numpy as np
    import torch

    before = platform.get_rng_state()
    platform.set_rng_state(rng_state)
    try:
        return {
            "mindspore": ms.ops.rand(8, dtype=ms.float32),
            "numpy": platform.as_int64(np.random.randint(0, 1 << 30, size=4).tolist()),
            "torch": platform.as_int64(torch.randint(0, 1 << 30, (4,)).tolist()),
        }
    finally:
        platform.set_rng_state(before)


def live_state(state: TrainedState) -> dict[str, Any]:
    """The in-memory state a checkpoint restores, canonical."""
    from hyper_parallel.platform import get_platform

    loader_state = state.dataloader.state_dict()
    return {
        "model": canonical.checkpoint(state.model.state_dict()),
        "optimizer": canonical.checkpoint(state.optimizer.state_dict()),
        "scheduler": canonical.checkpoint(state.lr_scheduler.state_dict()),
        "rng": canonical.canonicalise(get_platform().get_rng_state()),
        "dataloader": canonical.checkpoint(loader_state),
    }


# ----------------------------------------------------------------------------- producers


def _layout(writer, *, steps: int) -> dict[str, Any]:
    state = trained_state(steps=steps)
    with tempfile.TemporaryDirectory(prefix="parity-ckpt-") as tmp:
        return read_step_dir(writer(state, tmp))


def legacy_layout(*, steps: int) -> dict[str, Any]:
    return _layout(legacy_save, steps=steps)


def manager_layout(*, steps: int) -> dict[str, Any]:
    return _layout(manager_save, steps=steps)


def _resume(writer, resumer, *, steps: int) -> dict[str, Any]:
    """Write after ``steps``, restore into a differently seeded fresh state, then train one step."""
    import torch

    source = trained_state(steps=steps, epoch=1)
    with tempfile.TemporaryDirectory(prefix="parity-ckpt-") as tmp:
        step_dir = writer(source, tmp)
        target = trained_state(steps=0, seed=99)
        torch.manual_seed(12345)  # the restored RNG must win over whatever the process holds
        step, epoch = resumer(target, str(step_dir), tmp)
    restored = live_state(target)
    return {"step": step, "epoch": epoch, "restored": restored, "next_loss": train_step(target)}


def _legacy_resumer(target: TrainedState, load_path: str, tmp: str) -> tuple[int, int]:
    ckpt, export = legacy_callbacks(target, os.path.join(tmp, "out"), save_steps=0, load_path=load_path)
    progress = SimpleNamespace(global_step=0, epoch=0)
    ckpt.on_train_begin(progress)
    return progress.global_step, progress.epoch


def _manager_resumer(target: TrainedState, load_path: str, tmp: str) -> tuple[int, int]:
    return manager(target, os.path.join(tmp, "out"), save_steps=0, load_path=load_path).load()


def legacy_resume(*, steps: int) -> dict[str, Any]:
    return _resume(legacy_save, _legacy_resumer, steps=steps)


def manager_resume(*, steps: int) -> dict[str, Any]:
    return _resume(manager_save, _manager_resumer, steps=steps)


# ----------------------------------------------------------------------------- registration

SUITE = REGISTRY.suite(tags=("checkpoint",))
SUITE.pair(
    "component_checkpoint_layout",
    kind="checkpoint",
    seed=0,
    params={"steps": 2},
    legacy=legacy_layout,
    new=manager_layout,
)
SUITE.pair(
    "component_checkpoint_resume",
    kind="checkpoint",
    seed=0,
    params={"steps": 2},
    legacy=legacy_resume,
    new=manager_resume,
)
SUITE.golden(
    "component_checkpoint_manager",
    kind="checkpoint",
    seed=0,
    params={"steps": 5},
    producer=manager_layout,
    backends=("torch", "mindspore"),
)


def manager_json_texts(*, steps: int) -> dict[str, Any]:
    """Every JSON file of a manager save as the text a user opens (indentation, key order, the
    final newline): the parsed values are compared above; here the bytes. Digests and sizes of the
    archive files (nondeterministic bytes) are masked."""
    import re

    state = trained_state(steps=steps)
    with tempfile.TemporaryDirectory(prefix="parity-ckpt-") as tmp:
        step_dir = manager_save(state, tmp)
        texts = {
            p.relative_to(step_dir).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(step_dir.rglob("*.json"))
        }
    masked = {
        name: re.sub(r'("size": )\d+', r"\1<n>", re.sub(r"\b[0-9a-f]{64}\b", "<sha256>", text))
        for name, text in texts.items()
    }
    return {name: text.splitlines(keepends=True) for name, text in masked.items()}


SUITE.golden(
    "component_checkpoint_json_texts",
    kind="checkpoint",
    seed=0,
    params={"steps": 2},
    producer=manager_json_texts,
)


# ----------------------------------------------------------------------------- save_async


@contextlib.contextmanager
def _dcp_calls() -> Iterator[list[str]]:
    """Record each DCP model write as ``"sync"`` or ``"async"`` (both sides call these attributes)."""
    import torch.distributed.checkpoint as dcp

    calls: list[str] = []
    save, async_save = dcp.save, dcp.async_save

    def _save(*args: Any, **kwargs: Any) -> Any:
        calls.append("sync")
        return save(*args, **kwargs)

    def _async_save(*args: Any, **kwargs: Any) -> Any:
        calls.append("async")
        return async_save(*args, **kwargs)

    dcp.save, dcp.async_save = _save, _async_save
    try:
        yield calls
    finally:
        dcp.save, dcp.async_save = save, async_save


def _async_run(saver, *, steps: int) -> dict[str, Any]:
    """Save on the cadence at ``steps`` with save_async on, train one more step, then the final
    (forced, synchronous) save; the DCP call kinds and both folders as a resume reads them."""
    state = trained_state(steps=steps)
    with tempfile.TemporaryDirectory(prefix="parity-ckpt-") as tmp, _dcp_calls() as calls:
        saver(state, tmp)
        return {
            "dcp_calls": list(calls),
            "folders": sorted(os.listdir(tmp)),
            "periodic": read_step_dir(Path(tmp) / f"step_{steps}"),
            "final": read_step_dir(Path(tmp) / f"step_{steps + 1}"),
        }


def _legacy_async_saver(state: TrainedState, output_dir: str) -> None:
    ckpt, export = legacy_callbacks(
        state, output_dir, save_steps=state.step, save_async=True, save_hf_weights=False
    )
    progress = SimpleNamespace(global_step=state.step, epoch=state.epoch)
    ckpt.on_step_end(progress)
    train_step(state)
    progress.global_step = state.step
    ckpt.on_train_end(progress)


def _manager_async_saver(state: TrainedState, output_dir: str) -> None:
    mgr = manager(state, output_dir, save_steps=state.step, save_async=True, save_hf_weights=False)
    mgr.maybe_save(state.step, state.epoch)
    train_step(state)
    mgr.save(state.step, state.epoch, force=True)  # forced: synchronous, committed on return
    mgr.close()


def legacy_async(*, steps: int) -> dict[str, Any]:
    return _async_run(_legacy_async_saver, steps=steps)


def manager_async(*, steps: int) -> dict[str, Any]:
    return _async_run(_manager_async_saver, steps=steps)


SUITE.pair(
    "component_checkpoint_async",
    kind="checkpoint",
    seed=0,
    params={"steps": 2},
    legacy=legacy_async,
    new=manager_async,
)


# ----------------------------------------------------------------------------- damaged folders
#
# One folder saved by the legacy callbacks, then every file in it damaged in each way, with the
# manifest kept (the verification names the damage) or rewritten over the damaged files (the
# damage reaches the readers: DCP metadata, torch.load, JSON). Each copy is resumed by one side's
# reader; a row is what a user sees: "ok step=N epoch=E", or the error type and message, and the
# warnings the resume logged. Paths are relative to the copy; the field prefix is the same on both
# sides ("train.checkpoint." is written "checkpoint."), which is the one difference by design.

DAMAGES = ("missing", "empty", "truncated", "flipped")
# kept: the manifest names the damage; rewritten over the damaged files: the readers meet it;
# unverified: no manifest, resumed with allow_unverified (the lenient paths: skipped files warn).
MANIFESTS = ("kept", "rewritten", "unverified")
# extra_state.json values a damaged or hand-edited file may hold (written with a new manifest).
FORGED_EXTRA_STATE: dict[str, Any] = {
    "a float step": {"global_step": 2.5, "epoch": 1},
    "a negative step": {"global_step": -1, "epoch": 1},
    "a string step": {"global_step": "2", "epoch": 1},
    "a bool epoch": {"global_step": 2, "epoch": True},
    "a list": [2, 1],
    "no keys": {},
}
# manifest.json edited by hand (the JSON stays valid): each edit turns the manifest's vouching for
# the folder's files into something the verification must refuse.
FORGED_MANIFEST: dict[str, Callable[[dict[str, Any]], None]] = {
    "a name above the folder": lambda m: m["files"].update({"../outside": next(iter(m["files"].values()))}),
    "a name through ..": lambda m: m["files"].update({"a/../b": next(iter(m["files"].values()))}),
    "an absolute name": lambda m: m["files"].update({"/etc/hostname": next(iter(m["files"].values()))}),
    "no files": lambda m: m.update(files={}),
    "another format": lambda m: m.update(format="something-else/1"),
    "a size as text": lambda m: next(iter(m["files"].values())).update(size="1"),
}


def _damage(file: Path, how: str) -> None:
    data = file.read_bytes()
    if how == "missing":
        file.unlink()
    elif how == "empty":
        file.write_bytes(b"")
    elif how == "truncated":
        file.write_bytes(data[: len(data) // 2])
    else:  # flipped: one byte in the middle, every bit
        mid = len(data) // 2
        file.write_bytes(data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1 :])


def _resume_side(
    side: str,
    target: TrainedState,
    path: str,
    out: str,
    *,
    overrides: tuple[str, ...] = (),
    run_settings: dict[str, Any] | None = None,
    **flags: Any,
) -> tuple[int, int]:
    """Resume ``path`` into ``target`` through one side's reader: ``(step, epoch)`` or its error.

    ``overrides`` change the debug config both sides resume under; ``run_settings`` replaces the
    manager's (what HyperTrainer would hand it) where the legacy config cannot say it."""
    if side == "legacy":
        ckpt, _export = legacy_callbacks(
            target, out, save_steps=0, load_path=path, overrides=overrides, **flags
        )
        progress = SimpleNamespace(global_step=0, epoch=0)
        ckpt.on_train_begin(progress)
        return progress.global_step, progress.epoch
    if run_settings is None:
        run_settings = legacy_run_settings(*overrides)
    return manager(target, out, save_steps=0, load_path=path, run_settings=run_settings, **flags).load()


def _resume_outcome(
    side: str, target: TrainedState, path: str, out: str, **how: Any
) -> tuple[str, list[str]]:
    """A row's resume through ``_resume_side``: ``"ok step=N epoch=E"`` or the refusal, and the
    warnings it logged."""
    with warnings_of() as warned:
        try:
            step, epoch = _resume_side(side, target, path, out, **how)
            outcome = f"ok step={step} epoch={epoch}"
        except Exception as exc:  # a refusal is the row's outcome
            outcome = f"{type(exc).__name__}: {exc}"
    return outcome, warned


def _damage_sweep(side: str, *, steps: int) -> dict[str, Any]:
    import shutil

    from hyper_parallel.checkpointing import MANIFEST_FILE, write_manifest
    from hyper_parallel.checkpointing.layout import EXTRA_STATE_FILE

    source = trained_state(steps=steps, epoch=1)
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="parity-ckpt-") as tmp:
        saved = legacy_save(source, os.path.join(tmp, "saved"))
        settings = json.loads((saved / MANIFEST_FILE).read_text(encoding="utf-8"))["settings"]
        files = sorted(p.relative_to(saved).as_posix() for p in saved.rglob("*") if p.is_file())
        target = trained_state(steps=0, seed=99)
        damages = [
            (f"{rel} {how}, manifest {m}", rel, how, m) for rel in files for how in DAMAGES for m in MANIFESTS
        ]
        damages += [
            (f"{EXTRA_STATE_FILE} holds {what}", EXTRA_STATE_FILE, what, "rewritten")
            for what in FORGED_EXTRA_STATE
        ]
        damages += [
            (f"{MANIFEST_FILE} lists {what}", MANIFEST_FILE, what, "edited") for what in FORGED_MANIFEST
        ]
        for n, (row, rel, how, manifest) in enumerate(damages):
            if manifest in ("rewritten", "unverified") and rel == MANIFEST_FILE:
                continue
            copy = Path(shutil.copytree(saved, Path(tmp, f"copy{n}", f"step_{steps}")))
            if how in FORGED_EXTRA_STATE:
                (copy / rel).write_text(json.dumps(FORGED_EXTRA_STATE[how]), encoding="utf-8")
            elif how in FORGED_MANIFEST:
                edited = json.loads((copy / rel).read_text(encoding="utf-8"))
                FORGED_MANIFEST[how](edited)
                (copy / rel).write_text(json.dumps(edited), encoding="utf-8")
            else:
                _damage(copy / rel, how)
            if manifest == "rewritten":
                write_manifest(str(copy), steps, settings=settings)
            elif manifest == "unverified":
                (copy / MANIFEST_FILE).unlink()
            flags: dict[str, Any] = {"allow_unverified": True} if manifest == "unverified" else {}
            outcome, warned = _resume_outcome(side, target, str(copy), str(copy.parent / "out"), **flags)
            rows[row] = {
                "outcome": _relative(outcome, copy),
                "warnings": [_relative(w, copy) for w in warned],
            }
    return rows


def _relative(text: str, copy: Path) -> str:
    """Paths inside the damaged copy as ``<step>/...``, the field prefix without ``train.``."""
    return _row_text(text, str(copy.parent), "<copy>")


def legacy_damage(*, steps: int) -> dict[str, Any]:
    return _damage_sweep("legacy", steps=steps)


def manager_damage(*, steps: int) -> dict[str, Any]:
    return _damage_sweep("new", steps=steps)


SUITE.pair(
    "component_checkpoint_damaged",
    kind="checkpoint",
    params={"steps": 2},
    legacy=legacy_damage,
    new=manager_damage,
)


def _portable(text: str) -> str:
    """A row without what another torch or Python words differently: byte counts, and the text
    of a library's exception inside our message (its type stays)."""
    kind, sep, message = text.partition(": ")
    message = re.sub(r"\b(\d+ bytes|records \d+|expects \d+)", lambda m: re.sub(r"\d+", "<n>", m[0]), message)
    out, pos = "", 0
    for found in re.finditer(r"\b\w+(?:Error|Exception): ", message):
        if found.start() < pos:
            continue
        out += message[pos : found.end() - 2]
        depth, end = 0, len(message)
        if found.start() > 0 and message[found.start() - 1] == "(":  # to the closing parenthesis
            for i in range(found.end(), len(message)):
                depth += {"(": 1, ")": -1}.get(message[i], 0)
                if depth < 0:
                    end = i
                    break
        pos = end
    return kind + sep + out + message[pos:]


def manager_damage_rows(*, steps: int) -> dict[str, Any]:
    """``manager_damage`` in the portable form the golden keeps."""
    return {
        row: {"outcome": _portable(v["outcome"]), "warnings": [_portable(w) for w in v["warnings"]]}
        for row, v in manager_damage(steps=steps).items()
    }


# The reader both trainers share (``checkpointing.reader``) changes both sides alike: the golden
# holds what it says about each damage.
SUITE.golden(
    "component_checkpoint_damaged_rows",
    kind="checkpoint",
    params={"steps": 2},
    producer=manager_damage_rows,
)


# ----------------------------------------------------------------------------- changed settings
#
# One folder saved by the legacy callbacks, resumed into a run whose first param group was
# configured with one hyperparameter changed, under each ``resume_config_changes`` mode. A row is
# the outcome (refused: the line naming every differing field; resumed: the step and epoch), the
# warnings, and the first group's hyperparameters the resumed run trains with ("apply" puts the
# configured value back over the checkpoint's).

CHANGED_SETTINGS: tuple[tuple[str, Any], ...] = (
    ("lr", 0.5),
    ("weight_decay", 0.25),
    ("eps", 1e-6),
    ("betas", (0.8, 0.9)),
    ("amsgrad", True),
)


def _settings_sweep(side: str, *, steps: int) -> dict[str, Any]:
    from hyper_parallel.checkpointing.resume_settings import RESUME_MODES

    source = trained_state(steps=steps, epoch=1)
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="parity-ckpt-") as tmp:
        saved = str(legacy_save(source, os.path.join(tmp, "saved")))
        out = os.path.join(tmp, "out")
        for key, value in CHANGED_SETTINGS:
            for mode in RESUME_MODES:
                target = trained_state(steps=0, seed=99)
                group = target.optimizer.param_groups[0]
                group[key] = value
                if key == "lr":  # what the LR schedule was configured with
                    group["initial_lr"] = value
                outcome, warned = _resume_outcome(side, target, saved, out, resume_config_changes=mode)
                trains_with = target.optimizer.param_groups[0]
                rows[f"{key}={value!r}, {mode}"] = {
                    "outcome": _row_text(outcome, saved, "<saved>"),
                    "warnings": [_row_text(w, saved, "<saved>") for w in warned],
                    "group": {k: trains_with[k] for k in ("lr", "initial_lr", key) if k in trains_with},
                }
    return rows


def legacy_settings(*, steps: int) -> dict[str, Any]:
    return _settings_sweep("legacy", steps=steps)


def manager_settings(*, steps: int) -> dict[str, Any]:
    return _settings_sweep("new", steps=steps)


# Run settings a resume compares besides the param groups, each changed in the config the resume
# runs under (the callback reads it from args; the manager gets it as HyperTrainer hands it).
CHANGED_RUN_SETTINGS: tuple[tuple[str, Any], ...] = (
    ("train.optimizer.lr_min", 2e-5),
    ("train.optimizer.lr_decay_style", "constant"),
    ("train.optimizer.lr_warmup_ratio", 0.5),
    ("train.optimizer.lr_warmup_ratio", 0.0),
    ("train.global_batch_size", 16),
    ("data.max_seq_len", 32),
)
# The schedule fields only the new config has (``warmup_steps``, ``lr_max``) and ``max_steps``,
# which the manager records from HyperTrainer: (row, saved with, resumed with), as changes to
# ``legacy_run_settings()`` (a key under ``lr_scheduler`` or a top-level scalar).
NEW_RUN_SETTINGS: tuple[tuple[str, dict[str, Any], dict[str, Any]], ...] = (
    ("lr_max set at resume", {}, {"lr_max": 0.5}),
    ("lr_max set at save, none at resume", {"lr_max": 0.5}, {}),
    ("lr_max changed", {"lr_max": 0.5}, {"lr_max": 0.25}),
    ("lr_max kept", {"lr_max": 0.5}, {"lr_max": 0.5}),
    ("lr_max at save equal to the optimizer lr", {"lr_max": 1e-3}, {}),
    ("warmup_steps set at resume", {}, {"warmup_steps": 3}),
    ("warmup_steps changed", {"warmup_steps": 3}, {"warmup_steps": 4}),
    ("warmup_steps equal to the ratio's", {"max_steps": 20}, {"max_steps": 20, "warmup_steps": 2}),
    ("max_steps changed, the ratio's warmup moves", {"max_steps": 20}, {"max_steps": 40}),
    (
        "max_steps changed, warmup_steps fixed",
        {"max_steps": 20, "warmup_steps": 2},
        {"max_steps": 40, "warmup_steps": 2},
    ),
    ("max_steps set at resume", {}, {"max_steps": 20}),
    ("no schedule at resume", {}, {"lr_scheduler": None}),
)


def _with(settings: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = {**settings, "lr_scheduler": dict(settings["lr_scheduler"])}
    for key, value in changes.items():
        if key in ("lr_max", "warmup_steps"):
            out["lr_scheduler"][key] = value
        elif value is None:
            out.pop(key)
        else:
            out[key] = value
    return out


def _resume_row(side: str, target: TrainedState, saved: str, out: str, **how: Any) -> dict[str, Any]:
    outcome, warned = _resume_outcome(side, target, saved, out, **how)
    clean = [_row_text(w, saved, "<saved>") for w in warned]
    return {
        "outcome": _row_text(outcome, saved, "<saved>"),
        "warnings": clean,
        "lr": [group["lr"] for group in target.optimizer.param_groups],
    }


def _run_settings_sweep(side: str, *, steps: int) -> dict[str, Any]:
    """Each ``CHANGED_RUN_SETTINGS`` change in the config a legacy save resumes under, once per
    resume mode; on the new side also each ``NEW_RUN_SETTINGS`` pair (saved by the manager)."""
    from hyper_parallel.checkpointing.resume_settings import RESUME_MODES

    source = trained_state(steps=steps, epoch=1)
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="parity-ckpt-") as tmp:
        saved = str(legacy_save(source, os.path.join(tmp, "saved")))
        out = os.path.join(tmp, "out")
        for key, value in CHANGED_RUN_SETTINGS:
            for mode in RESUME_MODES:
                overrides = (f"--{key}={value}",)
                target = trained_state(steps=0, seed=99)
                rows[f"{key}={value!r}, {mode}"] = _resume_row(
                    side, target, saved, out, overrides=overrides, resume_config_changes=mode
                )
        if side == "legacy":
            return rows
        base = legacy_run_settings()
        saves: dict[str, str] = {}  # one manager save per distinct setting saved with
        for row, at_save, at_resume in NEW_RUN_SETTINGS:
            key = json.dumps(at_save, sort_keys=True)
            if key not in saves:
                folder = os.path.join(tmp, f"new{len(saves)}")
                saving = manager(
                    source,
                    folder,
                    save_steps=source.step,
                    run_settings=_with(base, at_save),
                    save_hf_weights=False,
                )
                saving.maybe_save(source.step, source.epoch)
                saving.save_final(source.step, source.epoch)
                saves[key] = os.path.join(folder, f"step_{source.step}")
            step_dir = saves[key]
            for mode in RESUME_MODES:
                target = trained_state(steps=0, seed=99)
                rows[f"{row}, {mode}"] = _resume_row(
                    side,
                    target,
                    step_dir,
                    out,
                    run_settings=_with(base, at_resume),
                    resume_config_changes=mode,
                )
    return rows


def legacy_run_settings_rows(*, steps: int) -> dict[str, Any]:
    return _run_settings_sweep("legacy", steps=steps)


def manager_run_settings_rows(*, steps: int) -> dict[str, Any]:
    return _run_settings_sweep("new", steps=steps)


def manager_run_settings_common(*, steps: int) -> dict[str, Any]:
    """The new side's rows that the legacy config can say too (the pair's half)."""
    rows = manager_run_settings_rows(steps=steps)
    return {k: v for k, v in rows.items() if k.split("=", 1)[0] in {key for key, _ in CHANGED_RUN_SETTINGS}}


SUITE.pair(
    "component_checkpoint_changed_run_settings",
    kind="checkpoint",
    params={"steps": 2},
    legacy=legacy_run_settings_rows,
    new=manager_run_settings_common,
)
SUITE.golden(
    "component_checkpoint_changed_run_settings_rows",
    kind="checkpoint",
    params={"steps": 2},
    producer=manager_run_settings_rows,
)
SUITE.pair(
    "component_checkpoint_changed_settings",
    kind="checkpoint",
    params={"steps": 2},
    legacy=legacy_settings,
    new=manager_settings,
)
SUITE.golden(
    "component_checkpoint_changed_settings_rows",
    kind="checkpoint",
    params={"steps": 2},
    producer=manager_settings,
)


# ----------------------------------------------------------------------------- the run folder
#
# A run that saves first checks its ``output_dir`` and takes the folder's lock (``run_lock``): it
# refuses checkpoints of an earlier run unless told to replace them, a folder another live run
# holds, and a lock path that is a link or a folder; it takes over the lock a dead run left, with a
# warning. Each row builds one side's writer (the legacy ``CheckpointCallback``, the manager) over
# one folder state, with ``overwrite`` off and on: the outcome, the warnings, the folder while the
# writer holds it and after it let go. The pair compares the sides row by row (field prefixes
# aside); the golden holds the manager's rows.

# What another run's lock file says about it (fixed, so that the lines it gets are too).
OTHER_RUN = {"host": "other-host", "pid": 4242, "started": "2026-01-01T00:00:00+0000"}
LOCK = ".hyper_parallel.lock"  # run_lock.LOCK_FILE, spelled out: the rows pin the name


def _step(folder: Path, name: str, *, manifest: bool = True, files: bool = True) -> None:
    path = folder / name
    path.mkdir(parents=True)
    if files:
        (path / "model.distcp").write_bytes(b"x")
    if manifest:
        (path / "manifest.json").write_text("{}", encoding="utf-8")


def _lock_file(folder: Path, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LOCK).write_text(text, encoding="utf-8")


def _make_states() -> dict[str, Callable[[Path], Any]]:
    """Folder state -> a function that makes it at ``path`` (and returns what must stay open)."""

    def absent(path: Path) -> None:
        return None

    def empty(path: Path) -> None:
        path.mkdir()

    def unrelated(path: Path) -> None:
        path.mkdir()
        (path / "notes.txt").write_text("mine", encoding="utf-8")

    def steps_with_manifest(path: Path) -> None:
        for n in (2, 4):
            _step(path, f"step_{n}")

    def step_without_manifest(path: Path) -> None:
        _step(path, "step_3", manifest=False)

    def empty_step_folder(path: Path) -> None:
        _step(path, "step_3", manifest=False, files=False)

    def many_steps(path: Path) -> None:
        for n in range(1, 8):
            _step(path, f"step_{n}", manifest=n % 2 == 0)

    def replaced_copy(path: Path) -> None:
        _step(path, ".replaced.step_5")

    def partial_save(path: Path) -> None:
        _step(path, ".partial.step_5", manifest=False)

    def dead_run_lock(path: Path) -> None:
        _lock_file(path, json.dumps(OTHER_RUN) + "\n")

    def unreadable_dead_lock(path: Path) -> None:
        _lock_file(path, "garbage")

    def empty_dead_lock(path: Path) -> None:
        _lock_file(path, "")

    def live_run_lock(path: Path) -> Any:
        _lock_file(path, json.dumps(OTHER_RUN) + "\n")
        handle = open(path / LOCK, "rb")
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return handle

    def lock_is_link(path: Path) -> None:
        path.mkdir()
        (path / "elsewhere.txt").write_text("not a lock", encoding="utf-8")
        os.symlink("elsewhere.txt", path / LOCK)

    def lock_is_dangling_link(path: Path) -> None:
        path.mkdir()
        os.symlink("missing.txt", path / LOCK)

    def lock_is_folder(path: Path) -> None:
        (path / LOCK).mkdir(parents=True)

    def lock_is_fifo(path: Path) -> None:
        path.mkdir()
        os.mkfifo(path / LOCK)

    def output_dir_is_a_file(path: Path) -> None:
        path.write_text("not a folder", encoding="utf-8")

    def output_dir_is_a_dangling_link(path: Path) -> None:
        path.symlink_to("missing_target")

    return {f.__name__: f for f in (
        absent, empty, unrelated, steps_with_manifest, step_without_manifest, empty_step_folder,
        many_steps, replaced_copy, partial_save, dead_run_lock, unreadable_dead_lock,
        empty_dead_lock, live_run_lock, lock_is_link, lock_is_dangling_link, lock_is_folder,
        lock_is_fifo, output_dir_is_a_file, output_dir_is_a_dangling_link,
    )}  # fmt: skip


RUN_FOLDER_STATES = _make_states()


def _folder_listing(path: Path) -> list[str]:
    if not path.exists():
        return ["(no folder)"]
    return sorted(
        p.relative_to(path).as_posix() + ("/" if p.is_dir() and not p.is_symlink() else "")
        for p in path.rglob("*")
    )


def _lock_fields(path: Path) -> dict[str, str] | list[str]:
    """What the writer's lock file tells another run about it, by value class: the values vary by
    run, so the host and pid are checked against this process and a time shows its shape only."""
    import re
    import socket

    try:
        text = (path / LOCK).read_text(encoding="utf-8")
        info = json.loads(text)
    except (OSError, ValueError) as exc:
        return [f"unreadable: {type(exc).__name__}"]
    known = {"host": socket.gethostname(), "pid": os.getpid()}
    shown = {
        key: ("this one" if known[key] == value else f"another ({type(value).__name__})")
        if key in known
        else re.sub(r"[+-](?=N{4}$)", "±", re.sub(r"\d", "N", str(value)))  # any time zone
        for key, value in info.items()
    }
    return {**shown, "(one line)": str(text.endswith("\n") and text.count("\n") == 1)}


def _start_writer(side: str, state: Any, out: str, overwrite: bool) -> Callable[[], None]:
    """Build ``side``'s writer over ``out``; returns how it lets the folder go."""
    if side == "legacy":
        ckpt, _export = legacy_callbacks(state, out, save_steps=1, overwrite=overwrite)
        return ckpt.writer.unlock
    return manager(state, out, save_steps=1, overwrite=overwrite).writer.unlock


def _run_folder_sweep(side: str) -> dict[str, Any]:
    state = trained_state(steps=0)
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="parity-run-folder-") as tmp:
        for n, (name, make) in enumerate(RUN_FOLDER_STATES.items()):
            for overwrite in (False, True):
                out = Path(tmp, f"{n}-{overwrite}", "run")
                out.parent.mkdir()
                held = make(out)
                shown = str(out)
                with warnings_of() as warned:
                    try:
                        release = _start_writer(side, state, shown, overwrite)
                        outcome = "ok"
                    except Exception as exc:  # a refusal is the row's outcome
                        release, outcome = (lambda: None), f"{type(exc).__name__}: {exc}"
                    holding = _folder_listing(out)
                    holder = _lock_fields(out) if outcome == "ok" else []
                    release()
                if held is not None:
                    held.close()

                def clean(text: str, _shown: str = shown) -> str:
                    return _row_text(text, _shown, "<run>")

                rows[f"{name}, overwrite={overwrite}"] = {
                    "outcome": clean(outcome),
                    "warnings": [clean(w) for w in warned],
                    "while_held": holding,
                    "lock_fields": holder,
                    "after": _folder_listing(out),
                }
    return rows


def legacy_run_folder() -> dict[str, Any]:
    return _run_folder_sweep("legacy")


def manager_run_folder() -> dict[str, Any]:
    return _run_folder_sweep("new")


SUITE.pair(
    "component_run_folder_states",
    kind="checkpoint",
    legacy=legacy_run_folder,
    new=manager_run_folder,
)
SUITE.golden(
    "component_run_folder_states_rows",
    kind="checkpoint",
    producer=manager_run_folder,
)


# ----------------------------------------------------------------------------- resuming into a folder
#
# A run resumed from a saved step that saves again must not replace checkpoints of later steps
# in its ``output_dir`` (nor leave a folder mixing two histories). Each row resumes one legacy
# save (step 2) through one side's reader, with saving on, into an ``output_dir`` in one state,
# with ``overwrite`` off and on: the outcome, the warnings and the folder afterwards.

RESUME_INTO_STATES: dict[str, tuple[str, ...]] = {
    "empty": (),
    "an earlier step": ("step_1",),
    "a later step": ("step_4",),
    "two later steps": ("step_3", "step_4"),
    "a later replaced copy": (".replaced.step_5",),
    "a later step and a replaced copy": ("step_4", ".replaced.step_5"),
}


def _resume_saving(side: str, target: TrainedState, saved: str, out: str, overwrite: bool) -> str:
    if side == "legacy":
        ckpt, _export = legacy_callbacks(target, out, save_steps=1, load_path=saved, overwrite=overwrite)
        try:
            progress = SimpleNamespace(global_step=0, epoch=0)
            ckpt.on_train_begin(progress)
            return f"ok step={progress.global_step} epoch={progress.epoch}"
        finally:
            ckpt.writer.unlock()
    writer = manager(
        target, out, save_steps=1, load_path=saved, run_settings=legacy_run_settings(), overwrite=overwrite
    )
    try:
        step, epoch = writer.load()
        return f"ok step={step} epoch={epoch}"
    finally:
        writer.writer.unlock()


def _resume_into_sweep(side: str) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="parity-resume-into-") as tmp:
        saved = str(legacy_save(trained_state(steps=2, epoch=1), os.path.join(tmp, "saved")))
        for n, (name, folders) in enumerate(RESUME_INTO_STATES.items()):
            for overwrite in (False, True):
                out = Path(tmp, f"{n}-{overwrite}", "run")
                out.mkdir(parents=True)
                for folder in folders:
                    _step(out, folder)
                with warnings_of() as warned:
                    try:
                        outcome = _resume_saving(
                            side, trained_state(steps=0, seed=99), saved, str(out), overwrite
                        )
                    except Exception as exc:  # a refusal is the row's outcome
                        outcome = f"{type(exc).__name__}: {exc}"

                def clean(text: str, _out: str = str(out)) -> str:
                    text = text.replace(_out, "<run>").replace(saved, "<saved>")
                    return text.replace("train.checkpoint.", "checkpoint.")

                rows[f"{name}, overwrite={overwrite}"] = {
                    "outcome": clean(outcome),
                    "warnings": [clean(w) for w in warned],
                    "after": _folder_listing(out),
                }
    return rows


def legacy_resume_into() -> dict[str, Any]:
    return _resume_into_sweep("legacy")


def manager_resume_into() -> dict[str, Any]:
    return _resume_into_sweep("new")


SUITE.pair(
    "component_resume_into_folder",
    kind="checkpoint",
    legacy=legacy_resume_into,
    new=manager_resume_into,
)
SUITE.golden(
    "component_resume_into_folder_rows",
    kind="checkpoint",
    producer=manager_resume_into,
)


# ----------------------------------------------------------------------------- what load_path names
#
# ``load_path`` names a ``step_<N>`` folder or a run folder that holds them. Each row points one
# side's reader at one such path built from a legacy save (step 2), with ``allow_unverified`` off
# and on: the outcome and the warnings (which folder a run folder resolves to, what it skips).


def _load_path_states(saved: Path, root: Path) -> dict[str, Path]:
    import shutil

    def copy(to: Path, *, damaged: bool = False) -> Path:
        shutil.copytree(saved, to)
        if damaged:
            _damage(to / EXTRA_STATE_NAME, "truncated")
        return to

    states: dict[str, Path] = {}
    states["a path that does not exist"] = root / "missing"
    (root / "file").write_text("not a folder", encoding="utf-8")
    states["a file"] = root / "file"
    states["a step folder"] = copy(root / "one" / "step_2")
    states["an unfinished save (.partial.step_2)"] = copy(root / "partial" / ".partial.step_2")
    copy(root / "only-partial" / ".partial.step_2")
    states["a run folder holding only an unfinished save"] = root / "only-partial"
    copy(root / "newest" / "step_2")
    copy(root / "newest" / "step_1")
    states["a run folder holding steps 1 and 2"] = root / "newest"
    copy(root / "later-partial" / "step_2")
    copy(root / "later-partial" / ".partial.step_4")
    states["a run folder holding step 2 and an unfinished step 4"] = root / "later-partial"
    copy(root / "later-damaged" / "step_2")
    copy(root / "later-damaged" / "step_4", damaged=True)
    states["a run folder holding step 2 and a damaged step 4"] = root / "later-damaged"
    copy(root / "all-damaged" / "step_2", damaged=True)
    copy(root / "all-damaged" / "step_3", damaged=True)
    states["a run folder whose every step is damaged"] = root / "all-damaged"
    (root / "empty").mkdir()
    states["an empty folder"] = root / "empty"
    return states


EXTRA_STATE_NAME = "extra_state.json"  # checkpointing.layout.EXTRA_STATE_FILE, spelled out


def _load_path_sweep(side: str) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="parity-load-path-") as tmp:
        saved = legacy_save(trained_state(steps=2, epoch=1), os.path.join(tmp, "saved"))
        root = Path(tmp, "paths")
        root.mkdir()
        for name, path in _load_path_states(saved, root).items():
            for allow in (False, True):
                outcome, warned = _resume_outcome(
                    side,
                    trained_state(steps=0, seed=99),
                    str(path),
                    os.path.join(tmp, "out"),
                    allow_unverified=allow,
                )

                def clean(text: str) -> str:
                    return _portable(_row_text(text, str(root), "<paths>"))

                rows[f"{name}, allow_unverified={allow}"] = {
                    "outcome": clean(outcome),
                    "warnings": [clean(w) for w in warned],
                }
    return rows


def legacy_load_path() -> dict[str, Any]:
    return _load_path_sweep("legacy")


def manager_load_path() -> dict[str, Any]:
    return _load_path_sweep("new")


SUITE.pair("component_load_path_states", kind="checkpoint", legacy=legacy_load_path, new=manager_load_path)
SUITE.golden("component_load_path_states_rows", kind="checkpoint", producer=manager_load_path)


# ----------------------------------------------------------------------------- failed saves
#
# A save that fails (a full disk, a quota, a file-size limit, an I/O error) must stop the run with
# one line naming the folder and the cause, leave no step folder a resume would take, and give
# the run folder back; a save that succeeds must leave the run folder with its step folders only.
# Each row saves step 2 through one side's hooks (step end, then train end), synchronous or async,
# with one fault raised at one point of the save (``checkpointing.set_fault_hook``: the points
# every save passes), and records the outcome, the warnings, and the run folder (hidden files
# included) after the side has let it go. Shared code (staging, lifecycle, errors) is the same on
# both sides, so the rows golden is what turns red for it; the pair checks the two hook paths.

SAVE_FAULTS: dict[str, Callable[[], BaseException]] = {
    "no space (ENOSPC)": lambda: OSError(28, "No space left on device"),
    "a quota (EDQUOT)": lambda: OSError(122, "Disk quota exceeded"),
    "a file-size limit (EFBIG)": lambda: OSError(27, "File too large"),
    "an I/O error (EIO)": lambda: OSError(5, "Input/output error"),
    "a writer's text: StorageFull": lambda: RuntimeError("IoError: StorageFull"),
    "a writer's text: File too large": lambda: RuntimeError("write failed: File too large"),
    "a writer's text: FileTooLarge": lambda: RuntimeError("IoError: FileTooLarge"),
    "a cause chained under another": lambda: _chained(
        RuntimeError("enforce fail"), OSError(28, "No space left")
    ),
}
# Where the fault is raised: before and after the model's shards, while a state file is written,
# as the manifest is written, and at the commit's rename (on the background commit thread).
SAVE_FAULT_POINTS = (
    "before:model",
    "after:model",
    "written:optimizer_rank0.pt",
    "written:manifest.json",
    "commit:rename",
)


def _chained(outer: BaseException, cause: BaseException) -> BaseException:
    outer.__cause__ = cause
    return outer


@contextlib.contextmanager
def _fault_at(point: str | None, fault: Callable[[], BaseException] | None) -> Iterator[None]:
    from hyper_parallel.checkpointing import set_fault_hook

    def hook(event: str) -> None:
        if event == point and fault is not None:
            raise fault()

    set_fault_hook(hook)
    try:
        yield
    finally:
        set_fault_hook(None)


def _save_with_fault(
    side: str, state: TrainedState, out: str, *, async_save: bool, point: str | None, fault: Any
) -> str:
    """Step 2 saved through ``side``'s hooks with ``fault`` raised at ``point``; the outcome line.
    A failure leaves the side's writer holding the run folder, as a crashed run's process would
    until it exits: the harness gives it back so the listing shows what stays on disk."""
    if side == "legacy":
        ckpt, _export = legacy_callbacks(
            state, out, save_steps=2, save_async=async_save, save_hf_weights=False
        )
        progress = SimpleNamespace(global_step=2, epoch=0)
        steps: list[Callable[[], Any]] = [
            lambda: ckpt.on_step_end(progress),
            lambda: ckpt.on_train_end(progress),
        ]
        writer = ckpt.writer
    else:
        mgr = manager(state, out, save_steps=2, save_async=async_save, save_hf_weights=False)
        steps = [lambda: mgr.maybe_save(2, 0), lambda: mgr.save_final(2, 0)]
        writer = mgr.writer
    try:
        with _fault_at(point, fault):
            for step in steps:
                step()
        return "ok"
    except Exception as exc:  # the failed save is the row's outcome
        return f"{type(exc).__name__}: {exc}"
    finally:
        writer.unlock()


def _save_fault_sweep(side: str, *, logs: bool) -> dict[str, Any]:
    """The rows; ``logs``: with the lines the save logged (only the new side logs its saves)."""
    cases: list[tuple[str, str | None, str | None]] = [("no fault", None, None)]
    cases += [(f"{name} at before:model", "before:model", name) for name in SAVE_FAULTS]
    cases += [
        (f"no space (ENOSPC) at {point}", point, "no space (ENOSPC)") for point in SAVE_FAULT_POINTS[1:]
    ]
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="parity-save-fault-") as tmp:
        for n, (label, point, fault) in enumerate(cases):
            for async_save in (False, True):
                out = os.path.join(tmp, f"{n}-{async_save}", "run")
                state = trained_state(steps=2)
                with run_log.capture(out) as logged:  # every INFO-or-worse line, warnings included
                    outcome = _save_with_fault(
                        side,
                        state,
                        out,
                        async_save=async_save,
                        point=point,
                        fault=SAVE_FAULTS.get(fault or ""),
                    )

                def clean(text: str, _out: str = out) -> str:  # the faults' texts are ours: kept whole
                    return _row_text(text, _out, "<run>")

                rows[f"{label}, async={async_save}"] = {
                    "outcome": clean(outcome),
                    **(
                        {"log": logged}
                        if logs
                        else {"warnings": [w for w in logged if w.startswith("WARNING")]}
                    ),
                    # An async save's shard write may still be landing in its staging folder
                    # after the failure (nothing waits for it): only the run folder's own entries.
                    "after": [
                        re.sub(r"\.\d+\.[0-9a-f]{8}\.tmp$", ".<pid>.<hex>.tmp", name)
                        for name in _folder_listing(Path(out))
                        if not async_save or "/" not in name.rstrip("/") or name.startswith("step_")
                    ],
                }
    return rows


def legacy_save_faults() -> dict[str, Any]:
    return _save_fault_sweep("legacy", logs=False)


def manager_save_faults() -> dict[str, Any]:
    return _save_fault_sweep("new", logs=False)


def manager_save_fault_rows() -> dict[str, Any]:
    return _save_fault_sweep("new", logs=True)


SUITE.pair("component_save_faults", kind="checkpoint", legacy=legacy_save_faults, new=manager_save_faults)
SUITE.golden("component_save_faults_rows", kind="checkpoint", producer=manager_save_fault_rows)


# ----------------------------------------------------------------------------- legacy save edges
#
# What the legacy callbacks do on a trainer ``LLMTrainer`` never builds but a user's trainer (or
# args object) can: no LR scheduler, an optimizer section without the schedule fields, the export
# callback without a checkpoint callback, and a save that fails on the disk (the output folder
# replaced by a file once the run started). Each row: the files the save left (names, or the
# manifest's run settings), or the one error line the user gets.


def _listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _error_row(exc: BaseException, tmp: str) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).replace(tmp, '<tmp>').split())}"


def _edge_no_scheduler(state: TrainedState, tmp: str) -> Any:
    ckpt, _ = legacy_callbacks(state, tmp, save_steps=state.step)
    ckpt.trainer.lr_scheduler = None
    ckpt.on_train_end(SimpleNamespace(global_step=state.step, epoch=state.epoch))
    return _listing(Path(tmp) / f"step_{state.step}")


def _edge_bare_optimizer_section(state: TrainedState, tmp: str) -> Any:
    ckpt, _ = legacy_callbacks(state, tmp, save_steps=state.step, save_hf_weights=False)
    # The section holds only what the optimizer builder needs: the schedule fields are absent.
    ckpt.trainer.args.train.optimizer = SimpleNamespace(lr=ckpt.trainer.args.train.optimizer.lr)
    ckpt.on_train_end(SimpleNamespace(global_step=state.step, epoch=state.epoch))
    manifest = json.loads((Path(tmp) / f"step_{state.step}" / "manifest.json").read_text(encoding="utf-8"))
    settings = manifest["settings"]
    return {"keys": sorted(settings), "lr_scheduler": settings.get("lr_scheduler")}


def _edge_export_alone(state: TrainedState, tmp: str) -> Any:
    from hyper_parallel.trainer.callbacks import SafetensorsExportCallback

    trainer = _fake_trainer(state, legacy_args(*_checkpoint_overrides(tmp, state.step)))
    export = SafetensorsExportCallback(trainer)  # no checkpoint_callback on the trainer
    export.on_step_end(SimpleNamespace(global_step=state.step, epoch=state.epoch))
    return _listing(Path(tmp))


def _edge_output_dir_gone(state: TrainedState, tmp: str) -> Any:
    out = Path(tmp) / "ckpt"
    ckpt, _ = legacy_callbacks(state, str(out), save_steps=state.step)
    shutil.rmtree(out)
    out.write_text("not a folder\n", encoding="utf-8")
    try:
        ckpt.on_step_end(SimpleNamespace(global_step=state.step, epoch=state.epoch))
    except Exception as exc:
        return _error_row(exc, tmp)
    finally:
        ckpt.writer.unlock()
    return "saved"


_SAVE_EDGES: dict[str, Callable[[TrainedState, str], Any]] = {
    "no_lr_scheduler": _edge_no_scheduler,
    "optimizer_section_without_schedule_fields": _edge_bare_optimizer_section,
    "export_without_checkpoint_callback": _edge_export_alone,
    "output_dir_replaced_by_a_file": _edge_output_dir_gone,
}


def legacy_save_edges(*, steps: int) -> dict[str, Any]:
    """``{row: files, settings or error line}`` (the block comment above)."""
    state = trained_state(steps=steps)
    rows: dict[str, Any] = {}
    for name, edge in _SAVE_EDGES.items():
        with tempfile.TemporaryDirectory(prefix="parity-ckpt-edge-") as tmp:
            rows[name] = edge(state, os.path.realpath(tmp))
    return rows


SUITE.golden(
    "component_legacy_save_edges",
    kind="checkpoint",
    seed=0,
    params={"steps": 2},
    producer=legacy_save_edges,
)
