"""Checkpoint integrity in both trainers: manifest, run-folder resume, the pre-manifest policy,
one error for one damage, shape mismatches, and no code run from a crafted checkpoint.

Each folder is written once per module (legacy callbacks and ``CheckpointManager``, the same
trained state) and copied before it is damaged. "legacy" reads go through ``CheckpointCallback``,
"manager" reads through ``CheckpointManager.load``; both must refuse the same way.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from hyper_parallel import checkpointing
from hyper_parallel.checkpointing import (
    MANIFEST_FILE,
    CheckpointCorruptError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CheckpointSaveError,
    UnsafeCheckpointError,
    write_manifest,
)
from parity.suites import components_checkpoint as suite

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
    "ignore:Detected an existing checkpoint:UserWarning",
)

STEPS = 2
READERS = ("legacy", "manager")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("integrity")
    state = suite.trained_state(steps=STEPS, epoch=1)
    return SimpleNamespace(
        state=state,
        legacy=suite.legacy_save(state, str(root / "legacy")),
        manager=suite.manager_save(state, str(root / "manager")),
    )


def _load(reader: str, path: str, tmp: Path, target=None, **flags):
    target = target if target is not None else suite.trained_state(steps=0, seed=3)
    if not flags:
        if reader == "legacy":
            return suite._legacy_resumer(target, path, str(tmp))
        return suite._manager_resumer(target, path, str(tmp))
    if reader == "legacy":
        ckpt, _export = suite.legacy_callbacks(
            target, str(tmp / "out"), save_steps=0, load_path=path, **flags
        )
        progress = SimpleNamespace(global_step=0, epoch=0)
        ckpt.on_train_begin(progress)
        return progress.global_step, progress.epoch
    return suite.manager(target, str(tmp / "out"), save_steps=0, load_path=path, **flags).load()


def _copy(src: Path, dest: Path) -> Path:
    return Path(shutil.copytree(src, dest))


def _rewrite_manifest(folder: Path, step: int, settings_from: Path | None = None) -> None:
    """A new manifest for an edited folder, keeping the run settings of ``settings_from``'s (by
    default the folder's own): a manifest without settings is refused on resume."""
    source = (settings_from or folder) / MANIFEST_FILE
    write_manifest(str(folder), step, settings=json.loads(source.read_text())["settings"])


# --------------------------------------------------------------------------- the manifest
@pytest.mark.parametrize("writer", ["legacy", "manager"])
def test_a_save_writes_a_manifest_of_every_file_last(saved, writer):
    folder = Path(getattr(saved, writer))
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    on_disk = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert sorted(manifest["files"]) == [n for n in on_disk if n != MANIFEST_FILE]
    assert manifest["step"] == STEPS and manifest["format"] == "hyper_parallel.checkpoint/1"
    newest = max(os.path.getmtime(folder / n) for n in manifest["files"])
    assert os.path.getmtime(folder / MANIFEST_FILE) >= newest
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".partial.")]


@pytest.mark.parametrize("writer", ["legacy", "manager"])
def test_a_failed_background_commit_stops_the_run_at_train_end(saved, tmp_path, writer):
    """The step's save returns before its commit; the commit's failure is a CheckpointSaveError
    naming the folder at the next wait (here the train-end one), and nothing is renamed."""

    def hook(event: str) -> None:
        if event == "commit:rename":
            raise OSError(5, "Input/output error")

    progress = SimpleNamespace(global_step=STEPS, epoch=1)
    checkpointing.set_fault_hook(hook)
    try:
        if writer == "legacy":
            ckpt, export = suite.legacy_callbacks(saved.state, str(tmp_path), save_steps=STEPS)
            ckpt.on_step_end(progress)
            export.on_step_end(progress)

            def train_end() -> None:
                ckpt.on_train_end(progress)
        else:
            mgr = suite.manager(saved.state, str(tmp_path), save_steps=STEPS)
            mgr.maybe_save(STEPS, 1)

            def train_end() -> None:
                mgr.save_final(STEPS, 1)

        folder = re.escape(str(tmp_path / f"step_{STEPS}"))
        with pytest.raises(CheckpointSaveError, match=rf"{folder} failed at step {STEPS}: OSError"):
            train_end()
    finally:
        checkpointing.set_fault_hook(None)
    assert not (tmp_path / f"step_{STEPS}").exists()
    assert (tmp_path / f".partial.step_{STEPS}" / MANIFEST_FILE).is_file()


def _truncate(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(max(os.path.getsize(path) // 2, 1))


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE = [
    (name, damage)
    for name in (
        ".metadata",
        "__0_0.distcp",
        "optimizer_rank0.pt",
        "scheduler.pt",
        "extra_state.json",
        "rng_rank0.pt",
        "dataloader_rank0.pt",
        "hf_ckpt/model.safetensors",
    )
    for damage in (_truncate, _flip_last_byte, os.remove)
]


@pytest.mark.parametrize(("name", "damage"), DAMAGE, ids=[f"{n}-{d.__name__.strip('_')}" for n, d in DAMAGE])
def test_both_trainers_refuse_the_same_damage_with_the_same_error(saved, tmp_path, name, damage):
    messages = {}
    for reader in READERS:
        copy = _copy(saved.manager, tmp_path / f"step_{reader}")
        damage(copy / name)
        with pytest.raises(CheckpointCorruptError) as info:
            _load(reader, str(copy), tmp_path / reader)
        assert info.value.path == str(copy / name) and info.value.folder == str(copy)
        messages[reader] = str(info.value).replace(str(copy), "<folder>")
    assert messages["legacy"] == messages["manager"]
    assert name in messages["legacy"]


def test_a_tampered_manifest_is_refused(saved, tmp_path):
    for reader in READERS:
        copy = _copy(saved.legacy, tmp_path / f"m_{reader}")
        (copy / MANIFEST_FILE).write_text('{"format": "something else"}')
        with pytest.raises(CheckpointCorruptError, match=r"manifest\.json is truncated or corrupt: not a"):
            _load(reader, str(copy), tmp_path / reader)


# --------------------------------------------------------------------------- run folders
def _run_folder(saved, tmp_path: Path, writer: str, steps=(2, 4)) -> Path:
    """A run folder of ``writer``'s ``step_<N>/`` copies (its settings are what its reader records)."""
    root = tmp_path / "run"
    root.mkdir()
    for step in steps:
        folder = _copy(getattr(saved, writer), root / f"step_{step}")
        extra = json.loads((folder / "extra_state.json").read_text())
        extra["global_step"] = step
        (folder / "extra_state.json").write_text(json.dumps(extra))
        _rewrite_manifest(folder, step)
    return root


@pytest.mark.parametrize("reader", READERS)
def test_run_folder_resumes_its_newest_complete_step_and_reports_leftovers(saved, tmp_path, reader, caplog):
    root = _run_folder(saved, tmp_path, reader)
    partial = _copy(saved.manager, root / ".partial.step_6")
    os.remove(partial / MANIFEST_FILE)
    with caplog.at_level(logging.INFO):
        step, _epoch = _load(reader, str(root), tmp_path / "out")
    assert step == 4
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert f"newest complete checkpoint {root / 'step_4'}" in messages
    assert f"Ignoring {partial}" in messages


@pytest.mark.parametrize("reader", READERS)
def test_run_folder_skips_a_damaged_newest_step(saved, tmp_path, reader, caplog):
    root = _run_folder(saved, tmp_path, reader)
    _truncate(root / "step_4" / "optimizer_rank0.pt")
    with caplog.at_level(logging.WARNING):
        step, _epoch = _load(reader, str(root), tmp_path / "out")
    assert step == 2
    assert any("Skipping" in r.getMessage() and "step_4" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("reader", READERS)
def test_run_folder_without_a_complete_step_is_refused(saved, tmp_path, reader):
    root = tmp_path / "run"
    root.mkdir()
    _copy(saved.manager, root / ".partial.step_2")
    with pytest.raises(CheckpointNotFoundError, match=r"holds no complete step_<N> checkpoint"):
        _load(reader, str(root), tmp_path / "out")
    empty_step = root / "step_4"
    empty_step.mkdir()
    with pytest.raises(CheckpointNotFoundError, match=r"step_4: checkpoint file .*manifest\.json is missing"):
        _load(reader, str(root), tmp_path / "out")


# --------------------------------------------------------------------------- the pre-manifest policy
@pytest.mark.parametrize("reader", READERS)
def test_a_folder_without_manifest_loads_only_with_allow_unverified(saved, tmp_path, reader, caplog):
    copy = _copy(saved.legacy, tmp_path / "old")
    os.remove(copy / MANIFEST_FILE)
    with pytest.raises(CheckpointCorruptError, match=r"cannot be verified .*allow_unverified=true"):
        _load(reader, str(copy), tmp_path / "r")
    with caplog.at_level(logging.WARNING):
        assert _load(reader, str(copy), tmp_path / "a", allow_unverified=True) == (STEPS, 1)
        assert _load(reader, str(copy), tmp_path / "b", allow_unverified=True) == (STEPS, 1)
    warnings = [r.getMessage() for r in caplog.records if "is loaded UNVERIFIED" in r.getMessage()]
    assert len(warnings) == 1 and str(copy) in warnings[0]


INCOMPLETE = {
    "empty folder": ((), ".metadata"),
    "shard without .metadata": (("__0_0.distcp",), ".metadata"),
    "weights only": ((".metadata", "__0_0.distcp"), "extra_state.json"),
    "no rng or dataloader": (
        (".metadata", "__0_0.distcp", "extra_state.json", "optimizer_rank0.pt", "scheduler.pt"),
        "rng_rank0.pt",
    ),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", sorted(INCOMPLETE))
def test_an_incomplete_folder_without_manifest_is_refused(saved, tmp_path, reader, case):
    keep, first_missing = INCOMPLETE[case]
    folder = tmp_path / "step_2"
    folder.mkdir()
    for name in keep:
        shutil.copy(Path(saved.legacy) / name, folder / name)
    with pytest.raises(CheckpointCorruptError) as info:
        _load(reader, str(folder), tmp_path / "out", allow_unverified=True)
    assert info.value.folder == str(folder)
    assert f"is incomplete ({first_missing} is missing too)" in str(info.value)


# --------------------------------------------------------------------------- another model
def _other_model_target():
    from hyper_parallel.models.qwen3_5 import build_qwen3_5
    from parity.legacy_driver import legacy_args

    model = build_qwen3_5(legacy_args("--model.hidden_size=48"))
    return SimpleNamespace(model=model, optimizer=None, lr_scheduler=None, dataloader=None, adapter=None)


@pytest.mark.parametrize("reader", READERS)
def test_a_checkpoint_of_another_model_size_names_the_first_tensor_and_both_shapes(saved, tmp_path, reader):
    target = _other_model_target()
    with pytest.raises(CheckpointMismatchError) as info:
        _load(reader, str(saved.legacy), tmp_path, target=target)
    message = str(info.value)
    assert "does not fit the model: tensor 'model.embed_tokens.weight' has shape" in message
    saved_shape = list(saved.state.model.model.embed_tokens.weight.shape)
    assert (
        f"{saved_shape} in the checkpoint and {list(target.model.model.embed_tokens.weight.shape)}" in message
    )


# --------------------------------------------------------------------------- no code from a checkpoint
class _Payload:
    """Unpickling this runs ``os.system("touch <marker>")``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _PathPayload:
    """Reaches ``Path.touch`` through ``getattr`` on an allowed type."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (getattr, (self.marker, "touch"))


def _crafted(saved, tmp_path: Path, payload_cls) -> tuple[Path, Path]:
    marker = tmp_path / "PWNED"
    folder = _copy(saved.legacy, tmp_path / "crafted")
    (folder / ".metadata").write_bytes(pickle.dumps(payload_cls(marker)))
    _rewrite_manifest(folder, STEPS)  # an attacker can rewrite the manifest too
    return folder, marker


@pytest.mark.parametrize("payload_cls", [_Payload, _PathPayload], ids=["os.system", "getattr"])
@pytest.mark.parametrize("reader", READERS)
def test_a_crafted_metadata_is_refused_and_runs_nothing(saved, tmp_path, reader, payload_cls):
    folder, marker = _crafted(saved, tmp_path, payload_cls)
    with pytest.raises(UnsafeCheckpointError, match=r"\.metadata is refused: .*refused to unpickle global"):
        _load(reader, str(folder), tmp_path / "out")
    assert not marker.exists()


def test_a_crafted_metadata_is_refused_as_initial_weights_in_both_trainers(saved, tmp_path):
    from parity.legacy_driver import bare_trainer, legacy_args

    folder, marker = _crafted(saved, tmp_path, _Payload)
    legacy = bare_trainer(legacy_args(), model=suite.trained_state(steps=0).model)
    with pytest.raises(RuntimeError, match=f"Failed to load weights from {folder}: .*refused to unpickle"):
        legacy._load_weights(str(folder))
    manager = suite.manager(suite.trained_state(steps=0), str(tmp_path / "out"), save_steps=0)
    with pytest.raises(RuntimeError, match=f"Failed to load weights from {folder}: .*refused"):
        manager.load_weights(str(folder))
    assert not marker.exists()


def test_the_harness_reader_refuses_a_crafted_metadata(saved, tmp_path):
    folder, marker = _crafted(saved, tmp_path, _Payload)
    os.remove(folder / MANIFEST_FILE)
    with pytest.raises(pickle.UnpicklingError, match="refused to unpickle global"):
        suite.read_step_dir(folder)
    assert not marker.exists()


def test_a_crafted_non_tensor_entry_in_a_shard_is_refused(saved, tmp_path):
    """A ``.metadata`` of allowed types that declares a model key as bytes: the shard payload
    would reach ``torch.load(weights_only=False)`` in DCP's planner; it is refused first."""
    import torch.distributed.checkpoint as dcp

    marker = tmp_path / "PWNED"
    folder = tmp_path / "crafted"
    state = {k: v.clone() for k, v in saved.state.model.state_dict().items()}
    state["model.norm.weight"] = _Payload(marker)
    dcp.save(state, checkpoint_id=str(folder))
    for name in (
        "extra_state.json",
        "optimizer_rank0.pt",
        "scheduler.pt",
        "rng_rank0.pt",
        "dataloader_rank0.pt",
    ):
        shutil.copy(Path(saved.legacy) / name, folder / name)
    _rewrite_manifest(folder, STEPS, settings_from=Path(saved.legacy))
    for reader in READERS:
        with pytest.raises(UnsafeCheckpointError, match="non-tensor entry 'model.norm.weight'"):
            _load(reader, str(folder), tmp_path / reader)
    assert not marker.exists()
    assert torch.is_tensor(saved.state.model.state_dict()["model.norm.weight"])


def test_a_damaged_step_folder_as_initial_weights_is_refused_in_both_trainers(saved, tmp_path):
    from parity.legacy_driver import bare_trainer, legacy_args

    folder = _copy(saved.legacy, tmp_path / "step_2")
    _flip_last_byte(folder / "__0_0.distcp")
    legacy = bare_trainer(legacy_args(), model=suite.trained_state(steps=0).model)
    expected = f"Failed to load weights from {folder}: checkpoint file {folder / '__0_0.distcp'} is truncated"
    with pytest.raises(RuntimeError, match=expected):
        legacy._load_weights(str(folder))
    manager = suite.manager(suite.trained_state(steps=0), str(tmp_path / "out"), save_steps=0)
    with pytest.raises(RuntimeError, match=expected):
        manager.load_weights(str(folder))
