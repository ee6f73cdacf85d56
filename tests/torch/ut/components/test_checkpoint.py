"""CheckpointManager against the legacy checkpoint callbacks and ``BaseTrainer._load_weights``.

The same trained state (debug model, legacy AdamW + LR lambda, a part-read StatefulDataLoader) is
saved through both paths; the folders are read back into canonical trees and compared bit for bit
with the harness comparator. Each folder is then resumed by the other path, damaged on purpose,
and checked for leftovers of the atomic writes.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from hyper_parallel.checkpointing import CheckpointSaveError, UnwritableDirError, write_manifest
from hyper_parallel.checkpointing.reader import part_state_dicts
from hyper_parallel.components.checkpoint import CheckpointCorruptError, CheckpointManager
from hyper_parallel.platform import get_platform
from parity import assert_bitwise_equal, canonical
from parity.cases import REGISTRY
from parity.compare import compare
from parity.pytest_plugin import case_params, run_case
from parity.suites import components_checkpoint as suite

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
    "ignore:Detected an existing checkpoint:UserWarning",
)

STEPS = 2


def tmp_leftovers(root: Path) -> list[str]:
    return [str(p) for p in Path(root).rglob("*") if p.name.endswith(".tmp")]


# --------------------------------------------------------------------------- harness cases
def test_cases_are_registered():
    assert {c.id for c in REGISTRY.select(tags=("checkpoint",))} == {
        "checkpoint.component_checkpoint_layout-steps=2",
        "checkpoint.component_checkpoint_resume-steps=2",
        "checkpoint.component_checkpoint_async-steps=2",
        "checkpoint.component_checkpoint_manager-steps=5",
        "checkpoint.component_checkpoint_damaged-steps=2",
        "checkpoint.component_checkpoint_damaged_rows-steps=2",
        "checkpoint.component_checkpoint_changed_settings-steps=2",
        "checkpoint.component_checkpoint_changed_settings_rows-steps=2",
        "checkpoint.component_checkpoint_changed_run_settings-steps=2",
        "checkpoint.component_checkpoint_changed_run_settings_rows-steps=2",
        "checkpoint.component_run_folder_states",
        "checkpoint.component_run_folder_states_rows",
        # every JSON file of a save as text; resuming into a folder; what load_path names
        "checkpoint.component_checkpoint_json_texts-steps=2",
        "checkpoint.component_resume_into_folder",
        "checkpoint.component_resume_into_folder_rows",
        "checkpoint.component_load_path_states",
        "checkpoint.component_load_path_states_rows",
        # a save failing at each of its points, sync and async (faults through set_fault_hook)
        "checkpoint.component_save_faults",
        "checkpoint.component_save_faults_rows",
        # legacy callbacks on trainers LLMTrainer never builds: no scheduler, a bare optimizer
        # section, the export alone, a save the disk refuses
        "checkpoint.component_legacy_save_edges-steps=2",
        # initial weights in 16 states x allow_partial_weights (components_weights)
        "checkpoint.component_weights_states",
        "checkpoint.component_weights_states_rows",
        # shared HF loading: a folder with extra layers loads like the exact one (shared_relations)
        "checkpoint.shared_hf_load_truncation_relation-extra_layers=1-sharded=false-unknown_keys=false",
        "checkpoint.shared_hf_load_truncation_relation-extra_layers=2-sharded=true-unknown_keys=true",
    }


@pytest.mark.parametrize(("case", "backend"), case_params(REGISTRY, tag="checkpoint"))
def test_parity_case(case, backend, request):
    run_case(request, REGISTRY, case, backend)


# --------------------------------------------------------------------------- shared saves
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One trained state saved by both paths; ``live`` is the state at save time."""
    root = tmp_path_factory.mktemp("ckpt")
    state = suite.trained_state(steps=STEPS, epoch=1)
    legacy_dir = suite.legacy_save(state, str(root / "legacy"))
    manager_dir = suite.manager_save(state, str(root / "manager"))
    return SimpleNamespace(
        root=root,
        state=state,
        legacy=legacy_dir,
        manager=manager_dir,
        live=suite.live_state(state),
        legacy_read=suite.read_step_dir(legacy_dir),
        manager_read=suite.read_step_dir(manager_dir),
    )


def test_both_paths_write_the_same_artifacts(saved):
    assert saved.manager_read["files"] == [
        ".metadata",
        "__0_0.distcp",
        "dataloader_rank0.pt",
        "extra_state.json",
        "hf_ckpt/config.json",
        "hf_ckpt/model.safetensors",
        "optimizer_rank0.pt",
        "rng_rank0.pt",
        "scheduler.pt",
    ]
    assert saved.manager_read["extra_state"] == {"global_step": STEPS, "epoch": 1}
    assert saved.manager_read["hf"]["metadata"] == {"format": "pt"}
    assert_bitwise_equal(saved.legacy_read, saved.manager_read, "checkpoint")
    # Every .pt artifact loads with weights_only=True.
    for name in ("optimizer_rank0.pt", "scheduler.pt", "rng_rank0.pt", "dataloader_rank0.pt"):
        torch.load(saved.manager / name, weights_only=True)
    assert not tmp_leftovers(saved.root)


def _legacy_load(target, load_path: str, tmp: Path, **flags):
    if not flags:
        return suite._legacy_resumer(target, load_path, str(tmp))
    ckpt, _export = suite.legacy_callbacks(
        target, str(tmp / "out"), save_steps=0, load_path=load_path, **flags
    )
    progress = SimpleNamespace(global_step=0, epoch=0)
    ckpt.on_train_begin(progress)
    return progress.global_step, progress.epoch


# The harness manager is built without run settings (``suite.manager``): its manifests record the
# optimizer groups and the trainable set, not the LR schedule, batch or sequence length that the
# legacy reader resolves from its config. The legacy reader refuses such a folder as unchecked
# unless allow_unverified (``resume_settings``); real runs of both trainers record the same fields.
UNCHECKED_CROSS_READ = {"allow_unverified": True}


def _manager_load(target, load_path: str, tmp: Path, **flags):
    if not flags:
        return suite._manager_resumer(target, load_path, str(tmp))
    return suite.manager(target, str(tmp / "out"), save_steps=0, load_path=load_path, **flags).load()


@pytest.mark.parametrize("writer", ["legacy", "manager"])
@pytest.mark.parametrize("reader", [_legacy_load, _manager_load], ids=["legacy_reads", "manager_reads"])
def test_either_folder_resumes_in_either_path(saved, writer, reader, tmp_path):
    flags = {}
    if (writer, reader) == ("manager", _legacy_load):
        with pytest.raises(ValueError, match=r"it does not record lr_schedule\..*global_batch_size, seq_len"):
            reader(suite.trained_state(steps=0, seed=99), str(saved.manager), tmp_path / "refused")
        flags = UNCHECKED_CROSS_READ
    target = suite.trained_state(steps=0, seed=99)
    torch.manual_seed(4321)
    step, epoch = reader(target, str(getattr(saved, writer)), tmp_path, **flags)
    assert (step, epoch) == (STEPS, 1)
    assert_bitwise_equal(saved.live, suite.live_state(target), "checkpoint")
    assert target.lr_scheduler.last_epoch == STEPS


def test_resume_sets_the_saved_steps_so_train_end_writes_nothing(saved, tmp_path):
    target = suite.trained_state(steps=0, seed=5)
    mgr = suite.manager(target, str(tmp_path / "out"), save_steps=1, load_path=str(saved.manager))
    assert mgr.load() == (STEPS, 1)
    assert mgr.state_dict() == {"last_saved_step": STEPS, "last_exported_step": STEPS}
    assert mgr.save_final(STEPS, 1) is None
    # Nothing written: the folder the run-folder lock made is removed with the lock.
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- planted divergences
def _flip_bit(tensor: torch.Tensor, index: int) -> None:
    flat = tensor.view(-1).view(torch.int32)
    flat[index] ^= 1


def _unverified_copy(folder: Path, dest: Path) -> Path:
    """A copy without its manifest, so that planted edits reach the comparator."""
    copy = Path(shutil.copytree(folder, dest))
    os.remove(copy / "manifest.json")
    return copy


def test_planted_bit_flip_in_optimizer_state_is_named(saved, tmp_path):
    copy = _unverified_copy(saved.manager, tmp_path / "step")
    opt = torch.load(copy / "optimizer_rank0.pt", weights_only=True)
    _flip_bit(opt["state"][3]["exp_avg"], 17)
    torch.save(opt, copy / "optimizer_rank0.pt")
    differences = compare(
        canonical.canonicalise(saved.legacy_read),
        canonical.canonicalise(suite.read_step_dir(copy)),
        "checkpoint",
    )
    assert len(differences) == 1
    diff = differences[0]
    assert diff.path == 'checkpoint.optimizer.state.state["3"].exp_avg'
    assert diff.kind == "bits" and diff.index == 17 and diff.count == 1


def test_planted_bit_flip_in_model_shard_is_named(saved, tmp_path):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    copy = _unverified_copy(saved.manager, tmp_path / "step")
    dcp_to_torch_save(copy, tmp_path / "model.pt")
    model_sd = torch.load(tmp_path / "model.pt", weights_only=True)
    name = "model.layers.1.mlp.up_proj.weight"
    _flip_bit(model_sd[name], 1000)
    for stale in (".metadata", "__0_0.distcp"):
        os.remove(copy / stale)
    dcp.save(model_sd, checkpoint_id=str(copy))
    differences = compare(
        canonical.canonicalise(saved.legacy_read),
        canonical.canonicalise(suite.read_step_dir(copy)),
        "checkpoint",
    )
    assert [(d.path, d.index) for d in differences] == [(f'checkpoint.model.state["{name}"]', 1000)]


def test_planted_epoch_change_is_named(saved, tmp_path):
    state = saved.state
    epoch, state.epoch = state.epoch, 7
    try:
        other = suite.read_step_dir(suite.manager_save(state, str(tmp_path)))
    finally:
        state.epoch = epoch
    differences = compare(
        canonical.canonicalise(saved.legacy_read), canonical.canonicalise(other), "checkpoint"
    )
    assert [(d.path, d.expected, d.actual) for d in differences] == [
        ("checkpoint.extra_state.epoch", "1", "7")
    ]


# --------------------------------------------------------------------------- corrupt / missing files
def _truncate(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(max(os.path.getsize(path) // 2, 1))


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00garbage, not what was written\xff" * 3)


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("optimizer_rank0.pt", _truncate),
        ("scheduler.pt", _garbage),
        ("rng_rank0.pt", _truncate),
        ("dataloader_rank0.pt", _garbage),
        ("extra_state.json", _truncate),
        (".metadata", _garbage),
        ("__0_0.distcp", _truncate),
    ],
)
def test_damaged_file_is_a_clear_error_naming_it(saved, tmp_path, name, damage):
    copy = Path(shutil.copytree(saved.manager, tmp_path / "step"))
    damage(copy / name)
    target = suite.trained_state(steps=0, seed=3)
    mgr = suite.manager(target, str(tmp_path / "out"), save_steps=0)
    with pytest.raises(CheckpointCorruptError) as info:
        mgr.load(str(copy))
    assert info.value.path == str(copy / name)
    assert str(copy / name) in str(info.value) and "truncated or corrupt" in str(info.value)


def test_corrupt_hf_export_fails_weight_loading_naming_the_file(saved, tmp_path):
    hf_dir = Path(shutil.copytree(saved.manager / "hf_ckpt", tmp_path / "hf"))
    _truncate(hf_dir / "model.safetensors")
    mgr = suite.manager(suite.trained_state(steps=0), str(tmp_path / "out"), save_steps=0)
    with pytest.raises(RuntimeError, match=f"Failed to load weights from {hf_dir}: .*model.safetensors"):
        mgr.load_weights(str(hf_dir))


def test_missing_artifacts_listed_in_the_manifest_are_refused(saved, tmp_path):
    copy = Path(shutil.copytree(saved.manager, tmp_path / "step"))
    os.remove(copy / "scheduler.pt")
    os.remove(copy / "rng_rank0.pt")
    target = suite.trained_state(steps=0, seed=3)
    mgr = suite.manager(target, str(tmp_path / "out"), save_steps=0)
    with pytest.raises(CheckpointCorruptError, match="rng_rank0.pt is missing") as info:
        mgr.load(str(copy))
    assert info.value.path == str(copy / "rng_rank0.pt") and info.value.folder == str(copy)
    assert target.lr_scheduler.last_epoch == 0  # nothing was restored


def test_readable_but_mismatched_state_only_warns_like_legacy(saved, tmp_path, caplog):
    # The legacy writer's folder: its settings hold everything either reader compares.
    copy = _unverified_copy(saved.legacy, tmp_path / "step")
    torch.save({"state": {}, "param_groups": []}, copy / "optimizer_rank0.pt")
    # Verified again (with the run settings), so that the edited file reaches the loaders.
    write_manifest(
        str(copy), STEPS, settings=json.loads((saved.legacy / "manifest.json").read_text())["settings"]
    )
    after = {}
    for name, reader in (("legacy", _legacy_load), ("manager", _manager_load)):
        target = suite.trained_state(steps=0, seed=3)
        with caplog.at_level(logging.WARNING):
            reader(target, str(copy), tmp_path / name)
        assert target.optimizer.state_dict()["state"] == {}  # left as built
        assert target.lr_scheduler.last_epoch == STEPS  # later artifacts still restored
        after[name] = suite.live_state(target)
    assert sum("optimizer_rank0.pt" in r.getMessage() for r in caplog.records) == 2
    assert_bitwise_equal(after["legacy"], after["manager"], "checkpoint")


def test_load_path_must_be_an_existing_directory(tmp_path):
    mgr = CheckpointManager.Config(
        output_dir=str(tmp_path / "out"), load_path=str(tmp_path / "missing")
    ).build(model_parts=[torch.nn.Linear(2, 2)], optimizers=None, lr_schedulers=None, dataloader=None)
    with pytest.raises(ValueError, match=r"checkpoint\.load_path"):
        mgr.load()
    a_file = tmp_path / "file.pt"
    a_file.write_bytes(b"x")
    with pytest.raises(ValueError, match=r"checkpoint\.load_path"):
        mgr.load(str(a_file))
    nothing = CheckpointManager.Config(output_dir=str(tmp_path / "out")).build(
        model_parts=[torch.nn.Linear(2, 2)], optimizers=None, lr_schedulers=None, dataloader=None
    )
    assert nothing.load() == (0, 0)


# --------------------------------------------------------------------------- atomic writes
def test_crash_while_writing_leaves_no_partial_file(tmp_path, monkeypatch, caplog):
    platform = get_platform()
    real_save = platform.save

    def crashing_save(obj, path):
        if "optimizer_rank0" in str(path):
            Path(path).write_bytes(b"half a file")
            raise RuntimeError("disk full")
        return real_save(obj, path)

    monkeypatch.setattr(platform, "save", crashing_save)
    model = torch.nn.Linear(3, 2)
    mgr = CheckpointManager.Config(output_dir=str(tmp_path), save_steps=1, save_hf_weights=False).build(
        model_parts=[model],
        optimizers=torch.optim.AdamW(model.parameters()),
        lr_schedulers=None,
        dataloader=None,
    )
    with pytest.raises(CheckpointSaveError, match=r"step_1 failed at step 1: RuntimeError: disk full"):
        mgr.save(1)
    assert not (tmp_path / "step_1").exists()  # only the staged folder holds the partial save
    assert not tmp_leftovers(tmp_path)
    assert mgr.last_saved_step == 0


def test_unwritable_output_dir_fails_at_build(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the output folder should be")
    with pytest.raises(UnwritableDirError, match=r"checkpoint\.output_dir=.*blocker.*is a file"):
        CheckpointManager.Config(output_dir=str(blocker), save_steps=1).build(
            model_parts=[torch.nn.Linear(2, 2)], optimizers=None, lr_schedulers=None, dataloader=None
        )
    # Saving off: nothing is checked (and nothing is created).
    CheckpointManager.Config(output_dir=str(blocker / "x"), save_steps=0).build(
        model_parts=[torch.nn.Linear(2, 2)], optimizers=None, lr_schedulers=None, dataloader=None
    )


# --------------------------------------------------------------------------- cadence
class _Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(3, 2)


def _tiny_state(tmp_path) -> suite.TrainedState:
    torch.manual_seed(0)
    model = _Tiny()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    return suite.TrainedState(
        model=model,
        optimizer=optimizer,
        lr_scheduler=torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0),
        dataloader=None,
        adapter=None,
        step=0,
        epoch=0,
    )


def _saved_layout(root: Path) -> list[str]:
    if not root.exists():
        return []
    return sorted(
        str(p.relative_to(root)) for p in root.glob("step_*/*") if p.name in ("hf_ckpt", ".metadata")
    )


@pytest.mark.parametrize(
    ("save_steps", "last_step", "hf"), [(2, 5, True), (2, 4, False), (0, 3, True), (3, 0, True)]
)
def test_cadence_matches_the_legacy_callbacks(tmp_path, save_steps, last_step, hf):
    state = _tiny_state(tmp_path)
    ckpt, export = suite.legacy_callbacks(
        state, str(tmp_path / "legacy"), save_steps=save_steps, save_hf_weights=hf
    )
    mgr = suite.manager(state, str(tmp_path / "manager"), save_steps=save_steps, save_hf_weights=hf)
    progress = SimpleNamespace(global_step=0, epoch=0)
    for step in range(1, last_step + 1):
        progress.global_step = step
        ckpt.on_step_end(progress)
        export.on_step_end(progress)
        mgr.maybe_save(step)
    ckpt.on_train_end(progress)
    export.on_train_end(progress)
    mgr.save_final(progress.global_step)
    assert _saved_layout(tmp_path / "manager") == _saved_layout(tmp_path / "legacy")
    assert mgr.last_saved_step == ckpt.last_saved_step
    assert mgr.last_exported_step == export.last_exported_step


@given(
    save_steps=st.integers(min_value=-1, max_value=4),
    last_step=st.integers(min_value=0, max_value=9),
    hf=st.booleans(),
)
def test_cadence_decisions_match_the_legacy_callbacks(save_steps, last_step, hf):
    """Which steps are saved/exported, with the writes stubbed out (no files)."""
    state = SimpleNamespace(model=None, optimizer=None, lr_scheduler=None, dataloader=None, adapter=None)
    ckpt, export = suite.legacy_callbacks(state, "unused", save_steps=save_steps, save_hf_weights=hf)
    mgr = suite.manager(state, "unused", save_steps=save_steps, save_hf_weights=hf)
    legacy_log, new_log = [], []

    def legacy_save(progress, *, async_save=False, final=False):
        legacy_log.append(("ckpt", progress.global_step))
        ckpt.last_saved_step = progress.global_step

    def legacy_export(progress):
        legacy_log.append(("hf", progress.global_step))
        export.last_exported_step = progress.global_step

    def new_save(step, epoch, *, async_save, export):
        new_log.append(("ckpt", step))
        mgr.last_saved_step = step
        if export:
            new_export(step)
        return "dir"

    def new_export(step):
        new_log.append(("hf", step))
        mgr.last_exported_step = step

    ckpt.save, export.export = legacy_save, legacy_export
    mgr._save_checkpoint, mgr._export_step = new_save, new_export
    progress = SimpleNamespace(global_step=0, epoch=0)
    for step in range(1, last_step + 1):
        progress.global_step = step
        ckpt.on_step_end(progress)
        export.on_step_end(progress)
        mgr.maybe_save(step)
    ckpt.on_train_end(progress)
    export.on_train_end(progress)
    mgr.save_final(progress.global_step)
    assert new_log == legacy_log


def test_force_saves_off_cadence_and_synchronously(tmp_path):
    state = _tiny_state(tmp_path)
    mgr = suite.manager(state, str(tmp_path), save_steps=0, save_async=True, save_hf_weights=True)
    assert mgr.maybe_save(3) is None
    assert mgr.save(3, force=True) == str(tmp_path / "step_3")
    assert mgr.writer._pending is None  # forced saves are synchronous
    assert (tmp_path / "step_3" / "hf_ckpt" / "model.safetensors").is_file()
    assert not (tmp_path / "step_3" / "hf_ckpt" / "config.json").exists()  # no adapter, no config


def test_async_save_then_final_save(tmp_path):
    state = _tiny_state(tmp_path)
    mgr = suite.manager(state, str(tmp_path), save_steps=2, save_async=True, save_hf_weights=False)
    mgr.maybe_save(2)
    assert mgr.writer._pending is not None and mgr.last_saved_step == 2
    mgr.save_final(3)
    assert mgr.writer._pending is None and mgr.last_saved_step == 3
    for step in (2, 3):
        names = set(os.listdir(tmp_path / f"step_{step}"))
        assert {
            ".metadata",
            "optimizer_rank0.pt",
            "scheduler.pt",
            "extra_state.json",
            "rng_rank0.pt",
        } <= names
    assert not tmp_leftovers(tmp_path)


# --------------------------------------------------------------------------- HF export and weights
def test_export_without_adapter_matches_legacy(saved, tmp_path):
    from safetensors.torch import load_file

    from hyper_parallel.trainer.callbacks import export_hf_checkpoint

    export_hf_checkpoint(saved.state.model, None, str(tmp_path / "legacy"))
    mgr = CheckpointManager.Config(output_dir=str(tmp_path / "out")).build(
        model_parts=[saved.state.model], optimizers=None, lr_schedulers=None, dataloader=None
    )
    assert mgr.export_hf(str(tmp_path / "manager")) == str(tmp_path / "manager")
    assert os.listdir(tmp_path / "manager") == ["model.safetensors"]
    assert_bitwise_equal(
        canonical.checkpoint(load_file(tmp_path / "legacy" / "model.safetensors")),
        canonical.checkpoint(load_file(tmp_path / "manager" / "model.safetensors")),
        "checkpoint",
    )


def _legacy_weights(path: str):
    from hyper_parallel.trainer.base import BaseTrainer

    state = suite.trained_state(steps=0, seed=11)
    trainer = BaseTrainer.__new__(BaseTrainer)
    trainer.model = state.model
    trainer.spec = SimpleNamespace(state_dict_adapter=state.adapter)
    trainer._load_weights(path)
    return canonical.checkpoint(state.model.state_dict())


def _manager_weights(path: str):
    state = suite.trained_state(steps=0, seed=11)
    suite.manager(state, "unused", save_steps=0).load_weights(path)
    return canonical.checkpoint(state.model.state_dict())


@pytest.mark.parametrize("source", ["hf_dir", "dcp_dir", "pt_file", "safetensors_file"])
def test_load_weights_matches_legacy_dispatch(saved, tmp_path, source):
    from safetensors.torch import save_file

    trained = {k: v.detach().clone() for k, v in saved.state.model.state_dict().items()}
    paths = {
        "hf_dir": saved.manager / "hf_ckpt",
        "dcp_dir": saved.manager,
        "pt_file": tmp_path / "weights.pt",
        "safetensors_file": tmp_path / "weights.safetensors",
    }
    if source == "pt_file":
        torch.save(trained, paths[source])
    if source == "safetensors_file":
        save_file({k: v for k, v in trained.items() if k != "lm_head.weight"}, paths[source])
    legacy, new = _legacy_weights(str(paths[source])), _manager_weights(str(paths[source]))
    assert_bitwise_equal(legacy, new, "checkpoint")
    assert_bitwise_equal(
        canonical.checkpoint(trained), new, "checkpoint"
    )  # really loaded, not left at the init


def test_load_weights_errors_match_legacy(tmp_path):
    mgr = CheckpointManager.Config(output_dir=str(tmp_path / "out")).build(
        model_parts=[torch.nn.Linear(2, 2)], optimizers=None, lr_schedulers=None, dataloader=None
    )
    missing = tmp_path / "nope"
    with pytest.raises(
        RuntimeError, match=f"Failed to load weights from {missing}: model.weights_path does not exist"
    ):
        mgr.load_weights(str(missing))
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        RuntimeError, match=r"must hold model\.safetensors\(\.index\.json\) with a state-dict adapter"
    ):
        mgr.load_weights(str(tmp_path / "empty"))
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a torch file")
    with pytest.raises(RuntimeError, match=f"Failed to load weights from {bad}"):
        mgr.load_weights(str(bad))
    (tmp_path / "dcp").mkdir()
    (tmp_path / "dcp" / ".metadata").write_bytes(b"garbage")
    with pytest.raises(
        RuntimeError, match=r"Failed to load weights from .*dcp: checkpoint file .*\.metadata"
    ):
        mgr.load_weights(str(tmp_path / "dcp"))


# --------------------------------------------------------------------------- config and parts
def test_config_fields_and_validation(tmp_path):
    assert CheckpointManager.Config().to_dict() == {
        "output_dir": "outputs",
        "save_steps": 500,
        "save_async": False,
        "save_hf_weights": True,
        "load_path": None,
        "overwrite": False,
        "allow_unverified": False,
        "resume_config_changes": "refuse",
        "allow_partial_weights": False,
    }
    with pytest.raises(ValueError, match=r"checkpoint\.resume_config_changes must be one of refuse, apply"):
        CheckpointManager.Config(resume_config_changes="keep")
    with pytest.raises(TypeError, match=r"checkpoint\.overwrite"):
        CheckpointManager.Config(overwrite="yes")
    with pytest.raises(TypeError, match=r"checkpoint\.save_steps"):
        CheckpointManager.Config(save_steps=True)
    with pytest.raises(TypeError, match=r"checkpoint\.save_async"):
        CheckpointManager.Config(save_async="yes")
    with pytest.raises(TypeError, match=r"checkpoint\.load_path"):
        CheckpointManager.Config(load_path=3)
    with pytest.raises(ValueError, match=r"checkpoint\.output_dir"):
        CheckpointManager.Config(output_dir="")
    with pytest.raises(TypeError, match="model_parts"):
        CheckpointManager.Config(output_dir=str(tmp_path / "out")).build(
            model_parts=torch.nn.Linear(2, 2), optimizers=None, lr_schedulers=None, dataloader=None
        )


def test_manager_state_dict_round_trip(tmp_path):
    mgr = CheckpointManager.Config(output_dir=str(tmp_path / "out")).build(
        model_parts=[torch.nn.Linear(2, 2)], optimizers=None, lr_schedulers=None, dataloader=None
    )
    mgr.load_state_dict({"last_saved_step": 40, "last_exported_step": 30})
    assert mgr.state_dict() == {"last_saved_step": 40, "last_exported_step": 30}


class _Head(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = torch.nn.Linear(2, 3)


def test_several_model_parts_save_and_resume(tmp_path):
    torch.manual_seed(0)
    parts = [_Tiny(), _Head()]
    mgr = CheckpointManager.Config(output_dir=str(tmp_path), save_steps=1, save_hf_weights=False).build(
        model_parts=parts, optimizers=None, lr_schedulers=None, dataloader=None
    )
    assert mgr.maybe_save(1) == str(tmp_path / "step_1")
    torch.manual_seed(1)
    fresh = [_Tiny(), _Head()]
    loader = CheckpointManager.Config(save_steps=0).build(
        model_parts=fresh, optimizers=None, lr_schedulers=None, dataloader=None
    )
    assert loader.load(str(tmp_path / "step_1")) == (1, 0)
    for old, new in zip(parts, fresh, strict=True):
        assert_bitwise_equal(
            canonical.checkpoint(old.state_dict()), canonical.checkpoint(new.state_dict()), "checkpoint"
        )
    with pytest.raises(ValueError, match=r"model_parts\[1\] repeats state-dict keys"):
        part_state_dicts([_Tiny(), _Tiny()])


# --------------------------------------------------------------------------- FSDP2 on a 1-rank gloo group
# ``gloo_world`` (a 1-rank gloo group) comes from tests/conftest.py.


def test_fsdp2_layout_async_save_and_cross_resume(tmp_path, gloo_world):
    from torch.distributed.tensor import DTensor

    state = suite.trained_state(steps=STEPS, fsdp=True)
    assert isinstance(state.optimizer.state_dict()["state"][0]["exp_avg"], DTensor)
    legacy_dir = suite.legacy_save(state, str(tmp_path / "legacy"))
    mgr = suite.manager(state, str(tmp_path / "manager"), save_steps=STEPS, save_async=True)
    mgr.maybe_save(STEPS, 0)
    assert mgr.writer._async_group is not None  # gloo group made once for the async shard writes
    mgr.save_final(STEPS, 0)
    manager_dir = tmp_path / "manager" / f"step_{STEPS}"
    assert_bitwise_equal(suite.read_step_dir(legacy_dir), suite.read_step_dir(manager_dir), "checkpoint")
    live = suite.live_state(state)
    next_loss = suite.train_step(state)

    for folder, reader, flags in (
        (legacy_dir, _manager_load, {}),
        (manager_dir, _legacy_load, UNCHECKED_CROSS_READ),
    ):
        target = suite.trained_state(steps=0, seed=42, fsdp=True)
        assert reader(target, str(folder), tmp_path / "out", **flags) == (STEPS, 0)
        assert_bitwise_equal(live, suite.live_state(target), "checkpoint")
        assert_bitwise_equal({"loss": next_loss}, {"loss": suite.train_step(target)}, "checkpoint")
