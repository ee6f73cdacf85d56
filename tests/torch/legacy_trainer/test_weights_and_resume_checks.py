"""Silent wrong results of initial weights and resume, in both trainers (probe findings 1-5).

"legacy" loads through ``BaseTrainer._load_weights`` and resumes through ``CheckpointCallback``;
"manager" through ``CheckpointManager.load_weights`` / ``CheckpointManager.load``. Each test first
reproduced the finding (it loaded or resumed without a word), then pinned the refusal:

1. An integer tensor for a floating parameter (HF folder, DCP folder) was cast and trained: the
   dtype class is now checked from the safetensors header / DCP metadata, before any cast.
2. The HF export of a model with more layers loaded with the extra layers dropped: it is an error
   naming the first extra tensors and the counts (``allow_partial_weights`` loads and says what
   was dropped).
3. A checkpoint of a smaller model resumed under ``resume_config_changes=apply`` as "N now
   frozen": a model-shape difference is a ``CheckpointMismatchError``.
4. ``weights_path`` into a checkpoint's ``hf_ckpt/`` was read without its manifest: a flipped
   byte trained to NaN. Every file read there is checked against the step's ``manifest.json``.
5. Resume compared only the schedule fields set when saving (``lr_max`` could change unseen) and
   skipped a manifest without settings with a warning: the resolved schedule is compared, and a
   setting the checkpoint does not record is refused unless ``apply`` / ``allow_unverified``.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from hyper_parallel.checkpointing import (
    MANIFEST_FILE,
    CheckpointCorruptError,
    CheckpointMismatchError,
    ResumeConfigError,
    write_manifest,
)
from parity.suites import components_checkpoint as suite
from tests._subprocess import child_env
from tests.torch.legacy_trainer._recipes import DEBUG_YAML, REPO_ROOT

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
    "ignore:Detected an existing checkpoint:UserWarning",
)

STEPS = 2
MAX_STEPS = 10
TRAINERS = ("legacy", "manager")


# --------------------------------------------------------------------------- both trainers, one API
def _load_weights(trainer: str, path: str, *, model=None, **flags):
    """Initial weights into a fresh debug model (or ``model``) through ``trainer``; its state dict."""
    state = suite.trained_state(steps=0, seed=11)
    if model is not None:
        state.model = model
    if trainer == "legacy":
        from hyper_parallel.trainer.base import BaseTrainer

        loader = BaseTrainer.__new__(BaseTrainer)
        loader.model = state.model
        loader.spec = SimpleNamespace(state_dict_adapter=state.adapter)
        loader.args = SimpleNamespace(train=SimpleNamespace(checkpoint=SimpleNamespace(**flags)))
        loader._load_weights(path)
    else:
        suite.manager(state, "unused", save_steps=0, **flags).load_weights(path)
    return state.model.state_dict()


def _save(trainer: str, state, output_dir: Path, *, scheduler_config=None) -> Path:
    """``step_<state.step>/`` written by ``trainer`` (HF export included), settings in the manifest."""
    if trainer == "legacy":
        ckpt, _export = suite.legacy_callbacks(state, str(output_dir), save_steps=state.step)
        ckpt.trainer.state = SimpleNamespace(max_steps=MAX_STEPS)
        ckpt.save(SimpleNamespace(global_step=state.step, epoch=state.epoch))
        ckpt.wait_for_pending()
        ckpt.writer.unlock()
    else:
        mgr = _manager(state, str(output_dir), save_steps=state.step, scheduler_config=scheduler_config)
        mgr.save(state.step, state.epoch, force=True)
        mgr.close()
    return output_dir / f"step_{state.step}"


def _manager(state, output_dir: str, *, scheduler_config=None, max_steps: int = MAX_STEPS, **fields):
    from hyper_parallel.components.checkpoint import CheckpointManager

    schedulers = state.lr_scheduler
    if scheduler_config is not None:  # the component schedule (its config is what the manifest records)
        schedulers = scheduler_config.build(optimizers=state.optimizer, training_steps=max_steps)
    return CheckpointManager.Config(output_dir=output_dir, **fields).build(
        model_parts=[state.model],
        optimizers=state.optimizer,
        lr_schedulers=schedulers,
        dataloader=state.dataloader,
        sd_adapter=state.adapter,
        run_settings={"max_steps": max_steps},
    )


def _resume(trainer: str, target, load_path: str, tmp: Path, *, scheduler_config=None, **flags) -> int:
    """Resume ``target`` from ``load_path`` through ``trainer``; the resumed global step."""
    if trainer == "legacy":
        ckpt, _export = suite.legacy_callbacks(
            target, str(tmp / "out"), save_steps=0, load_path=load_path, **flags
        )
        ckpt.trainer.state = SimpleNamespace(max_steps=MAX_STEPS)
        progress = SimpleNamespace(global_step=0, epoch=0)
        ckpt.on_train_begin(progress)
        return progress.global_step
    mgr = _manager(
        target,
        str(tmp / "out"),
        save_steps=0,
        load_path=load_path,
        scheduler_config=scheduler_config,
        **flags,
    )
    return mgr.load()[0]


def _copy(folder: Path, dest: Path) -> Path:
    return Path(shutil.copytree(folder, dest))


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x40
    path.write_bytes(bytes(data))


def _debug_model(*overrides: str, seed: int = 0):
    from hyper_parallel.models.qwen3_5 import build_qwen3_5
    from parity.legacy_driver import legacy_args

    torch.manual_seed(seed)
    return build_qwen3_5(legacy_args(*overrides))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """``step_2/`` written by each trainer, with its HF export and settings in the manifest."""
    root = tmp_path_factory.mktemp("checks")
    out = {}
    for trainer in TRAINERS:
        state = suite.trained_state(steps=STEPS)
        out[trainer] = _save(trainer, state, root / trainer)
    return SimpleNamespace(root=root, **out)


def _hf_folder(dest: Path, model) -> Path:
    """An HF export of ``model`` (``model.safetensors`` + ``config.json``), outside any checkpoint."""
    from hyper_parallel.models.qwen3_5.state_dict import Qwen3_5StateDictAdapter
    from hyper_parallel.trainer.callbacks.checkpoint import export_hf_checkpoint

    export_hf_checkpoint(model, Qwen3_5StateDictAdapter, str(dest))
    return dest


# --------------------------------------------------------------------------- 1. integer tensors
@pytest.mark.parametrize("trainer", TRAINERS)
def test_an_integer_tensor_in_an_hf_folder_is_refused_before_the_cast(trainer, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = _hf_folder(tmp_path / "hf", _debug_model(seed=5))
    tensors = load_file(str(folder / "model.safetensors"))
    name = "model.language_model.layers.0.mlp.up_proj.weight"
    tensors[name] = torch.ones_like(tensors[name], dtype=torch.int32)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(CheckpointCorruptError) as err:
        _load_weights(trainer, str(folder))
    message = str(err.value)
    assert (
        "1 tensors that do not fit (first: model.layers.0.mlp.up_proj.weight (integer in the file" in message
    )
    assert "nothing was loaded" in message and "\n" not in message


@pytest.mark.parametrize("trainer", TRAINERS)
def test_an_integer_tensor_in_a_dcp_folder_is_refused_before_the_cast(trainer, tmp_path):
    import torch.distributed.checkpoint as dcp

    state = {k: v.detach().clone() for k, v in _debug_model(seed=5).state_dict().items()}
    state["model.norm.weight"] = torch.ones_like(state["model.norm.weight"], dtype=torch.int64)
    dcp.save(state, checkpoint_id=str(tmp_path / "dcp"))
    with pytest.raises(CheckpointCorruptError, match=r"model\.norm\.weight \(integer in the file, floating"):
        _load_weights(trainer, str(tmp_path / "dcp"))


# --------------------------------------------------------------------------- 2. a larger model's export
@pytest.mark.parametrize("trainer", TRAINERS)
def test_the_hf_export_of_a_larger_model_is_refused_naming_the_extra_layers(trainer, tmp_path, caplog):
    folder = _hf_folder(tmp_path / "hf", _debug_model("--model.num_hidden_layers=4", seed=5))
    with pytest.raises(CheckpointCorruptError) as err:
        _load_weights(trainer, str(folder))
    message = str(err.value)
    assert "4 layers in the file, 2 in the model" in message
    assert re.search(r"(\d+) tensors the model does not have \(first: model\.layers\.2\.", message), message
    assert "allow_partial_weights=true" in message and "\n" not in message
    # With the flag the model's own layers load, and the warning names every dropped tensor.
    with caplog.at_level(logging.WARNING):
        loaded = _load_weights(trainer, str(folder), allow_partial_weights=True)
    warning = next(r.getMessage() for r in caplog.records if "PARTIALLY" in r.getMessage())
    assert "tensors of the file are dropped: model.layers.2." in warning
    assert "model.layers.3.mlp.up_proj.weight" in warning
    from safetensors.torch import load_file

    stored = load_file(str(folder / "model.safetensors"))
    assert torch.equal(
        loaded["model.layers.1.mlp.up_proj.weight"],
        stored["model.language_model.layers.1.mlp.up_proj.weight"],
    )


@pytest.mark.parametrize("trainer", TRAINERS)
def test_the_hf_export_of_the_same_model_still_loads_whole(trainer, tmp_path):
    model = _debug_model(seed=5)
    folder = _hf_folder(tmp_path / "hf", model)
    loaded = _load_weights(trainer, str(folder))
    for key, value in model.state_dict().items():
        assert torch.equal(loaded[key], value), key


# --------------------------------------------------------------------------- 3. another model size on resume
@pytest.mark.parametrize("mode", ["refuse", "apply"])
@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_checkpoint_of_a_larger_model_is_a_mismatch_even_with_apply(trainer, mode, saved, tmp_path):
    target = suite.trained_state(steps=0, seed=3)
    target.model = _debug_model("--model.num_hidden_layers=1", seed=3)
    target.optimizer = target.lr_scheduler = None
    with pytest.raises(CheckpointMismatchError) as err:
        _resume(trainer, target, str(saved.manager), tmp_path, resume_config_changes=mode)
    message = str(err.value)
    assert "does not fit the model: 2 layers in the checkpoint, 1 in the model" in message
    assert re.search(r"\d+ tensors the model does not have \(first: model\.layers\.1\.", message), message
    assert "now frozen" not in message and "\n" not in message


# --------------------------------------------------------------------------- 4. weights inside a checkpoint
@pytest.mark.parametrize("what", ["folder", "file"])
@pytest.mark.parametrize("trainer", TRAINERS)
def test_weights_from_a_damaged_checkpoint_export_are_refused_naming_the_file(trainer, what, saved, tmp_path):
    step = _copy(saved.manager, tmp_path / "run" / "step_2")
    damaged = step / "hf_ckpt" / "model.safetensors"
    _flip_last_byte(damaged)
    path = step / "hf_ckpt" if what == "folder" else damaged
    with pytest.raises(CheckpointCorruptError) as err:
        _load_weights(trainer, str(path))
    message = str(err.value)
    assert (
        f"checkpoint file {damaged} is truncated or corrupt: its sha256 differs from manifest.json" in message
    )
    assert "\n" not in message


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_file_the_manifest_does_not_list_is_refused_unless_allowed(trainer, saved, tmp_path, caplog):
    step = _copy(saved.manager, tmp_path / "run" / "step_2")
    hf = step / "hf_ckpt"
    (hf / "model.safetensors").rename(hf / "renamed.safetensors")
    (hf / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {}}))
    with pytest.raises(CheckpointCorruptError, match=r"model\.safetensors\.index\.json is not verified: "):
        _load_weights(trainer, str(hf))
    from safetensors.torch import save_file

    extra = hf / "extra.safetensors"  # our own key names: a single weights file
    save_file({k: v.clone().contiguous() for k, v in _debug_model(seed=5).state_dict().items()}, str(extra))
    with pytest.raises(CheckpointCorruptError, match=r"does not list it"):
        _load_weights(trainer, str(extra))
    with caplog.at_level(logging.WARNING):
        _load_weights(trainer, str(extra), allow_unverified=True)
    assert any("UNVERIFIED" in r.getMessage() and str(extra) in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_an_intact_checkpoint_export_loads(trainer, saved, tmp_path):
    loaded = _load_weights(trainer, str(saved.manager / "hf_ckpt"))
    trained = suite.trained_state(steps=STEPS).model.state_dict()
    for key, value in trained.items():
        assert torch.equal(loaded[key], value), key


# --------------------------------------------------------------------------- 5. resume settings
def _schedule(**fields):
    from hyper_parallel.components.lr_scheduler import LRSchedulersContainer

    return LRSchedulersContainer.Config(**fields)


def test_a_changed_lr_max_is_refused_when_the_checkpoint_left_it_at_its_default(tmp_path):
    """The checkpoint ran with lr_max unset (the optimizer lr, 1e-3); the config sets 2e-3."""
    state = suite.trained_state(steps=STEPS)
    folder = _save("manager", state, tmp_path / "run", scheduler_config=_schedule(lr_min=1e-4))
    target = suite.trained_state(steps=0, seed=3)
    with pytest.raises(ResumeConfigError, match=r"lr_schedule\.lr_max: 0\.001 -> 0\.002"):
        _resume(
            "manager", target, str(folder), tmp_path, scheduler_config=_schedule(lr_min=1e-4, lr_max=2e-3)
        )
    # The same schedule in another spelling is no change.
    assert (
        _resume(
            "manager", target, str(folder), tmp_path, scheduler_config=_schedule(lr_min=1e-4, lr_max=1e-3)
        )
        == STEPS
    )


@pytest.mark.parametrize("trainer", TRAINERS)
def test_the_resolved_warmup_is_compared_not_its_spelling(trainer, tmp_path):
    """The legacy checkpoint warmed up for ceil(10 * 0.1) = 1 step, as a ratio."""
    state = suite.trained_state(steps=STEPS)
    folder = _save("legacy", state, tmp_path / "run")
    target = suite.trained_state(steps=0, seed=3)
    if trainer == "legacy":
        target_args = ("--train.optimizer.lr_warmup_ratio=0.25",)  # ceil(2.5)
        with pytest.raises(ResumeConfigError, match=r"lr_schedule\.warmup_steps: 1 -> 3"):
            _resume_legacy_with(target, str(folder), tmp_path, *target_args)
        return
    same = _schedule(warmup_steps=1, lr_warmup_ratio=0.0, lr_min=1e-4)
    assert _resume("manager", target, str(folder), tmp_path, scheduler_config=same) == STEPS
    other = _schedule(warmup_steps=2, lr_warmup_ratio=0.0, lr_min=1e-4)
    with pytest.raises(ResumeConfigError, match=r"lr_schedule\.warmup_steps: 1 -> 2"):
        _resume("manager", target, str(folder), tmp_path / "b", scheduler_config=other)


def _resume_legacy_with(target, load_path: str, tmp: Path, *overrides: str) -> int:
    from hyper_parallel.trainer.callbacks import CheckpointCallback, SafetensorsExportCallback
    from parity.legacy_driver import legacy_args

    args = legacy_args(*suite._checkpoint_overrides(str(tmp / "out"), 0, load_path), *overrides)
    trainer = suite._fake_trainer(target, args)
    trainer.hf_export_callback = SafetensorsExportCallback(trainer)
    trainer.state = SimpleNamespace(max_steps=MAX_STEPS)
    progress = SimpleNamespace(global_step=0, epoch=0)
    CheckpointCallback(trainer).on_train_begin(progress)
    return progress.global_step


def _without_settings(folder: Path, dest: Path) -> Path:
    copy = _copy(folder, dest)
    write_manifest(str(copy), STEPS)  # a manifest written before settings were recorded
    assert "settings" not in json.loads((copy / MANIFEST_FILE).read_text())
    return copy


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_manifest_without_settings_is_refused_unless_apply_or_allowed(trainer, saved, tmp_path, caplog):
    old = _without_settings(getattr(saved, trainer), tmp_path / "old" / "step_2")
    target = suite.trained_state(steps=0, seed=3)
    with pytest.raises(ResumeConfigError) as err:
        _resume(trainer, target, str(old), tmp_path / "a")
    message = str(err.value)
    assert "records no run settings" in message and "cannot be compared" in message
    assert "optimizer" in message and "max_steps" in message
    assert "resume_config_changes=apply" in message and "allow_unverified=true" in message
    for flags in ({"resume_config_changes": "apply"}, {"allow_unverified": True}):
        with caplog.at_level(logging.WARNING):
            assert (
                _resume(trainer, suite.trained_state(steps=0, seed=3), str(old), tmp_path / "b", **flags)
                == STEPS
            )
        assert any("UNCHECKED" in r.getMessage() and str(old) in r.getMessage() for r in caplog.records)
        caplog.clear()


@pytest.mark.parametrize("trainer", TRAINERS)
def test_a_setting_the_checkpoint_does_not_record_is_named(trainer, saved, tmp_path):
    copy = _copy(getattr(saved, trainer), tmp_path / "old" / "step_2")
    manifest = json.loads((copy / MANIFEST_FILE).read_text())
    settings = manifest["settings"]
    del settings["max_steps"]
    write_manifest(str(copy), STEPS, settings=settings)
    with pytest.raises(
        ResumeConfigError, match=r"it does not record (.*, )?max_steps, so the config's values"
    ):
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(copy), tmp_path)


@pytest.mark.parametrize("trainer", TRAINERS)
def test_an_unchanged_config_resumes_its_own_checkpoint(trainer, saved, tmp_path):
    assert (
        _resume(trainer, suite.trained_state(steps=0, seed=3), str(getattr(saved, trainer)), tmp_path)
        == STEPS
    )


# --------------------------------------------------------------------------- the command lines
LEGACY = (str(REPO_ROOT / "scripts" / "train_lm.py"),)
NEW = ("-m", "hyper_parallel.train")


@pytest.mark.parametrize("command", [LEGACY, NEW], ids=["train_lm", "hyper_parallel.train"])
def test_a_damaged_checkpoint_export_as_weights_path_exits_2_with_one_line(command, saved, tmp_path):
    step = _copy(saved.manager, tmp_path / "run" / "step_2")
    damaged = step / "hf_ckpt" / "model.safetensors"
    _flip_last_byte(damaged)
    proc = subprocess.run(
        [
            sys.executable,
            *command,
            str(DEBUG_YAML),
            f"--model.weights_path={step / 'hf_ckpt'}",
            f"--train.checkpoint.output_dir={tmp_path / 'out'}",
            "--train.checkpoint.save_steps=0",
            "--train.max_steps=1",
        ],
        capture_output=True,
        text=True,
        env=child_env(HYPER_PARALLEL_PLATFORM="torch"),
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert f"checkpoint file {damaged} is truncated or corrupt: its sha256 differs" in errors[0]
