"""MetricsProcessor vs the legacy LoggingCallback + TensorBoardCallback + WandbCallback.

Both paths get the same step inputs and the same pinned step clock (``parity.suites.components_metrics``
drives them); records, history, console lines, TensorBoard event files and W&B offline run files are
canonicalised (``parity.canonical.metrics``) and compared with ``parity.compare.compare``.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hyper_parallel.components.metrics import (
    MetricsProcessor,
    TensorBoardConfig,
    WandbConfig,
)
from hyper_parallel.platform import get_platform
from hyper_parallel.protocols import validate_config_class
from parity import assert_bitwise_equal, canonical
from parity.cases import REGISTRY
from parity.compare import STRUCTURE, VALUES, compare
from parity.pytest_plugin import case_params, run_case
from parity.suites import components_metrics as cm

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore::DeprecationWarning",
)

_MY_CASES = case_params(REGISTRY, tag="metrics")


def _tb_pair(tmp_path, **setup_kwargs):
    legacy_dir, new_dir = str(tmp_path / "tb_legacy"), str(tmp_path / "tb_new")
    legacy = cm.artifacts(cm.run_legacy(cm.Setup(tb_dir=legacy_dir, **setup_kwargs)), tb_dir=legacy_dir)
    new = cm.artifacts(cm.run_new(cm.Setup(tb_dir=new_dir, **setup_kwargs)), tb_dir=new_dir)
    return legacy, new


# --------------------------------------------------------------------------- harness cases
def test_my_cases_are_registered():
    ids = sorted(p.id for p in _MY_CASES if p.values[1] == "torch")
    # A pair and a golden per CASE_PARAMS entry, plus the W&B pairs (init arguments; mapped report_to).
    assert sum("metrics_processor_vs_callbacks" in i for i in ids) == len(cm.CASE_PARAMS)
    assert sum("metrics.metrics_processor-" in i for i in ids) == len(cm.CASE_PARAMS)
    assert sum("wandb" in i for i in ids) == len(ids) - 2 * len(cm.CASE_PARAMS) == 3
    # The goldens also run on MindSpore (parity/golden/mindspore/), the pairs on torch only.
    on_mindspore = sorted(p.id for p in _MY_CASES if p.values[1] == "mindspore")
    assert len(on_mindspore) == len(cm.CASE_PARAMS)
    assert all(i.startswith("mindspore-metrics.metrics_processor-") for i in on_mindspore)


@pytest.mark.parametrize(("case", "backend"), _MY_CASES)
def test_registered_case(case, backend, request):
    run_case(request, REGISTRY, case, backend, report_dir=None)


# --------------------------------------------------------------------------- legacy vs new
@pytest.mark.parametrize(
    "setup_kwargs",
    [
        {"steps": 7, "log_steps": 3, "tb_log_steps": 2, "world_size": 1},
        {"steps": 4, "log_steps": 1, "tb_log_steps": 1, "flops": False, "aux": True, "world_size": 8},
    ],
    ids=["mfu-ws1", "aux-no-flops-ws8"],
)
def test_records_console_and_tensorboard_match_legacy(tmp_path, setup_kwargs):
    legacy, new = _tb_pair(tmp_path, **setup_kwargs)
    assert_bitwise_equal(legacy, new, "metrics")
    # The comparison is not vacuous: every step has a record, and the sinks and console wrote.
    steps, log_steps = setup_kwargs["steps"], setup_kwargs["log_steps"]
    assert len(new["records"]["values"]) == steps
    assert len(new["history"]["values"]) == len(new["console"]) == steps // log_steps
    assert {"train/loss", "train/lr", "train/step_time", "train/tokens_per_sec"} <= set(new["tensorboard"])
    assert "train/step" not in new["tensorboard"]
    assert new["console"][0].startswith(f"step={log_steps} | loss=")


def test_wandb_offline_run_files_match_legacy(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    setup = cm.Setup(steps=4, log_steps=2, wandb=True, wandb_log_steps=2, run_name="parity-run")
    runs = {}
    wandb = pytest.importorskip("wandb")
    for side, run in (("legacy", cm.run_legacy), ("new", cm.run_new)):
        # wandb reads WANDB_DIR once per process setup: tear it down so each side gets its own folder.
        wandb.teardown()
        monkeypatch.setenv("WANDB_DIR", str(tmp_path / side))
        run(setup)
        # Teardown joins wandb's writer service: only then is the offline run file complete
        # (reading right after finish() found an empty file once on a loaded machine).
        wandb.teardown()
        (run_file,) = glob.glob(str(tmp_path / side / "wandb" / "offline-run-*" / "run-*.wandb"))
        runs[side] = cm.read_wandb_offline_run(run_file)
    legacy, new = (canonical.canonicalise(runs[s], "wandb") for s in ("legacy", "new"))
    assert_bitwise_equal(legacy, new, "wandb")
    run = runs["new"]
    assert (run["project"], run["name"]) == ("hp-parity", "parity-run")
    assert run["config"]["train"]["wandb"]["log_steps"] == 2
    assert [row["step"] for row in run["history"]] == [2, 4]
    # Same key set as TensorBoard would get: every numeric record value but step, as train/<key>.
    assert set(run["history"][0]["values"]) == {
        "train/loss",
        "train/grad_norm",
        "train/lr",
        "train/step_time",
        "train/tokens_per_sec",
        "train/aux_loss",
        "train/tflops",
        "train/mfu",
    }


def test_each_run_writes_under_the_wandb_dir_it_was_built_with(tmp_path, monkeypatch):
    """wandb's own settings keep the folder of a process's first run; both trainers give each run
    the WANDB_DIR they checked, so a second run in the process (another case, another side) writes
    where its environment says, with no teardown between."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    wandb = pytest.importorskip("wandb")
    setup = cm.Setup(steps=2, log_steps=1, wandb=True, wandb_log_steps=1, run_name="dir-run")
    wandb.teardown()
    try:
        for side, run in (("legacy", cm.run_legacy), ("new", cm.run_new), ("legacy_again", cm.run_legacy)):
            monkeypatch.setenv("WANDB_DIR", str(tmp_path / side))
            run(setup)
            assert glob.glob(str(tmp_path / side / "wandb" / "offline-run-*")), (
                f"{side}: not under its WANDB_DIR"
            )
    finally:
        wandb.teardown()


# --------------------------------------------------------------------------- hypothesis: one step
def _one_step(side: str, cfg: dict, row: dict):
    """One step through one side with the clock pinned; returns (record, console lines)."""
    setup = cm.Setup(
        log_steps=1,
        throughput=cfg["throughput"],
        flops=False,
        world_size=cfg["world_size"],
        global_batch_size=cfg["gbs"],
        seq_len=cfg["seq_len"],
    )
    run_config = setup.run_config()
    run_config["train"]["logging"].update(model_flops_per_token=cfg["flops"], peak_tflops=cfg["peak"])
    clock = cm.FixedClock()
    if side == "legacy":
        from hyper_parallel.trainer.callbacks import LoggingCallback

        scheduler = SimpleNamespace(get_last_lr=lambda: [row["lr"]])
        trainer = SimpleNamespace(
            args=cm._namespace(run_config),
            lr_scheduler=scheduler,
            parallel_dims=SimpleNamespace(world_size=cfg["world_size"]),
            _last_global_tokens=row["tokens"],
            moe_monitor_callback=SimpleNamespace(last_mean_aux_loss=row["aux_loss"]),
            dispatch_log_event=lambda metrics: None,
        )
        state = SimpleNamespace(global_step=row["step"], log_history=[])
        with cm.console_lines(cm.LEGACY_LOGGER) as lines, clock.pinned():
            cb = LoggingCallback(trainer)
            clock.now = row["t0"]
            cb.on_step_begin(state)
            clock.now = row["t1"]
            cb.on_step_end(state, loss=row["loss"], grad_norm=row["grad_norm"])
        return cb.last_record, lines
    config = MetricsProcessor.Config(
        log_steps=1,
        report_throughput=cfg["throughput"],
        model_flops_per_token=cfg["flops"],
        peak_tflops=cfg["peak"],
    )
    with cm.console_lines(cm.NEW_LOGGER) as lines, clock.pinned():
        proc = config.build(
            world_size=cfg["world_size"], global_batch_size=cfg["gbs"], seq_len=cfg["seq_len"]
        )
        clock.now = row["t0"]
        proc.start_step()
        clock.now = row["t1"]
        record = proc.log(
            row["step"],
            loss=row["loss"],
            grad_norm=row["grad_norm"],
            lr=row["lr"],
            global_tokens=row["tokens"],
            aux_loss=row["aux_loss"],
        )
    return record, lines


_maybe_float = st.none() | st.floats(allow_nan=True, allow_infinity=True)
_finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


@settings(deadline=None)
@given(
    cfg=st.fixed_dictionaries(
        {
            "throughput": st.booleans(),
            "flops": st.none() | st.integers(1, 10**12),
            "peak": st.none() | st.floats(1e-3, 1e4),
            "world_size": st.integers(1, 1024),
            "gbs": st.integers(1, 4096),
            "seq_len": st.integers(1, 1 << 17),
        }
    ),
    row=st.fixed_dictionaries(
        {
            "step": st.integers(1, 10**7),
            "loss": _maybe_float,
            "grad_norm": _maybe_float,
            "lr": _finite,
            "tokens": st.none() | st.integers(1, 1 << 40),
            "aux_loss": st.none() | _finite,
            "t0": st.floats(0.0, 2e9),
            "t1": st.floats(0.0, 2e9),
        }
    ),
)
def test_one_step_record_and_console_line_match_legacy(cfg, row):
    legacy = [canonical.canonicalise(x, "step") for x in _one_step("legacy", cfg, row)]
    new = [canonical.canonicalise(x, "step") for x in _one_step("new", cfg, row)]
    assert_bitwise_equal(legacy, new, "step")


# --------------------------------------------------------------------------- planted divergences
class _RenamedKey(MetricsProcessor):
    """A copy that renames ``tokens_per_sec`` to ``tps`` (a typical refactoring slip)."""

    @dataclasses.dataclass(kw_only=True, slots=True)
    class Config(MetricsProcessor.Config):
        pass

    def build_record(self, step, **kwargs):
        record = MetricsProcessor.build_record(self, step, **kwargs)
        return {("tps" if k == "tokens_per_sec" else k): v for k, v in record.items()}


class _NoWorldSizeInMfu(MetricsProcessor):
    """A copy whose MFU forgets to divide by the world size."""

    @dataclasses.dataclass(kw_only=True, slots=True)
    class Config(MetricsProcessor.Config):
        pass

    def build_record(self, step, **kwargs):
        record = MetricsProcessor.build_record(self, step, **kwargs)
        if record.get("mfu") is not None:
            record["mfu"] = record["tflops"] / self.config.peak_tflops
        return record


def _planted(tmp_path, cls):
    setup = cm.Setup(steps=4, log_steps=2, tb_log_steps=1, tb_dir=str(tmp_path / "tb_legacy"))
    legacy = cm.artifacts(cm.run_legacy(setup), tb_dir=setup.tb_dir)
    new_setup = dataclasses.replace(setup, tb_dir=str(tmp_path / "tb_new"))
    config = cls.Config(
        **{f.name: getattr(cm.new_config(new_setup), f.name) for f in dataclasses.fields(cls.Config)}
    )
    new = cm.artifacts(cm.run_new(new_setup, config=config), tb_dir=new_setup.tb_dir)
    diffs = compare(legacy, new, "metrics")
    assert diffs, "the planted divergence was not detected"
    return diffs


def test_planted_renamed_metric_key_is_named(tmp_path):
    diffs = _planted(tmp_path, _RenamedKey)
    structure = {(d.kind, d.path) for d in diffs if d.phase == STRUCTURE}
    assert ("missing", "metrics.records.keys.tokens_per_sec") in structure
    assert ("extra", "metrics.records.keys.tps") in structure
    assert ("missing", "metrics.history.values[0].tokens_per_sec") in structure
    assert ("missing", 'metrics.tensorboard["train/tokens_per_sec"]') in structure
    assert ("extra", 'metrics.tensorboard["train/tps"]') in structure
    assert diffs[0].phase == STRUCTURE
    # The console line looks the key up by its old name, so it silently loses the throughput field.
    line = next(d for d in diffs if d.path == "metrics.console[0]")
    assert "tokens_per_sec=" in line.expected and "tokens_per_sec=" not in line.actual


def test_planted_mfu_without_world_size_names_the_first_step(tmp_path):
    diffs = _planted(tmp_path, _NoWorldSizeInMfu)
    first = diffs[0]
    assert (first.phase, first.kind, first.path) == (VALUES, "value", "metrics.console[0]")
    paths = [d.path for d in diffs]
    assert "metrics.records.values[0].mfu" in paths
    assert "metrics.records.values[0].tflops" not in paths
    mfu = next(d for d in diffs if d.path == "metrics.records.values[0].mfu")
    assert float.fromhex(mfu.actual) == pytest.approx(2 * float.fromhex(mfu.expected))


# --------------------------------------------------------------------------- config and API
def test_config_fields_and_defaults_mirror_the_legacy_sections():
    from hyper_parallel.trainer import config as legacy

    def defaults(cls, skip=()):
        return {f.name: f.default for f in dataclasses.fields(cls) if f.name not in skip}

    new = MetricsProcessor.Config()
    flat = {k: v for k, v in dataclasses.asdict(new).items() if k not in ("tensorboard", "wandb")}
    # report_global_loss is never read by the legacy trainer and has no field here.
    assert flat == defaults(legacy.LegacyLoggingArgs, skip=("report_global_loss",))
    assert dataclasses.asdict(new.tensorboard) == defaults(legacy.LegacyTensorBoardArgs)
    assert dataclasses.asdict(new.wandb) == defaults(legacy.LegacyWandbArgs)
    assert new.to_dict()["tensorboard"] == {"enabled": False, "output_dir": "tb_traces", "log_steps": 1}


def test_nested_configs_are_slotted_kw_only_dataclasses():
    for cls in (TensorBoardConfig, WandbConfig, MetricsProcessor.Config):
        validate_config_class(cls, cls.__qualname__)
    with pytest.raises(AttributeError):
        TensorBoardConfig().log_step = 3  # misspelt field: slots reject it
    with pytest.raises(TypeError):
        WandbConfig(True)  # keyword-only


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (MetricsProcessor.Config(log_steps=0), "MetricsProcessor.Config.log_steps"),
        (
            MetricsProcessor.Config(tensorboard=TensorBoardConfig(enabled=True, log_steps=-1)),
            "MetricsProcessor.Config.tensorboard.log_steps",
        ),
        (
            MetricsProcessor.Config(wandb=WandbConfig(enabled=True, log_steps=True)),
            "MetricsProcessor.Config.wandb.log_steps",
        ),
    ],
)
def test_bad_cadences_name_the_field(config, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        config.build()


def test_disabled_sink_cadence_is_not_checked(tmp_path):
    config = MetricsProcessor.Config(tensorboard=TensorBoardConfig(enabled=False, log_steps=0))
    config.build(world_size=1, rank=0).close()


def test_missing_sink_packages_name_the_field(monkeypatch, tmp_path):
    def no_tensorboard():
        raise ImportError("No module named 'tensorboard'")

    monkeypatch.setattr(get_platform(), "summary_writer_class", no_tensorboard)
    tb = MetricsProcessor.Config(tensorboard=TensorBoardConfig(enabled=True, output_dir=str(tmp_path)))
    with pytest.raises(ImportError, match=r"MetricsProcessor\.Config\.tensorboard\.enabled"):
        tb.build(rank=1)  # every rank fails, not only the one that writes
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(ImportError, match=r"MetricsProcessor\.Config\.wandb\.enabled"):
        MetricsProcessor.Config(wandb=WandbConfig(enabled=True)).build(rank=1)


def test_non_zero_rank_builds_records_but_writes_nothing(tmp_path):
    tb_dir = tmp_path / "tb"
    config = MetricsProcessor.Config(
        log_steps=1, tensorboard=TensorBoardConfig(enabled=True, output_dir=str(tb_dir))
    )
    with cm.console_lines(cm.NEW_LOGGER) as lines:
        proc = config.build(rank=1, world_size=2)
        proc.start_step()
        record = proc.log(1, loss=1.0, grad_norm=0.5, lr=1e-3)
        proc.close()
    assert record["loss"] == 1.0 and proc.last_record is record
    assert proc.history == [record]  # history is kept on every rank, like state.log_history
    assert not tb_dir.exists()
    assert len(lines) == 1  # the console line follows the process rank (info_rank0), not the kwarg


def test_disabled_sinks_write_nothing_and_close_is_idempotent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc = MetricsProcessor.Config(log_steps=2).build()
    for step in (1, 2, 3):
        proc.start_step()
        proc.log(step, loss=1.0, grad_norm=1.0, lr=0.1)
    proc.close()
    proc.close()
    assert [r["step"] for r in proc.history] == [2]
    assert os.listdir(tmp_path) == []


def test_runtime_values_come_from_kwargs_then_trainer_then_defaults(monkeypatch):
    trainer = SimpleNamespace(
        parallel_dims=SimpleNamespace(world_size=4),
        config=SimpleNamespace(training=SimpleNamespace(global_batch_size=32, seq_len=128)),
    )
    from_trainer = MetricsProcessor.Config().build(trainer=trainer)
    assert (from_trainer.world_size, from_trainer.global_batch_size, from_trainer.seq_len) == (4, 32, 128)
    explicit = MetricsProcessor.Config().build(trainer=trainer, world_size=2, global_batch_size=8, seq_len=64)
    assert (explicit.world_size, explicit.global_batch_size, explicit.seq_len) == (2, 8, 64)
    bare = MetricsProcessor.Config().build()
    assert (bare.world_size, bare.global_batch_size, bare.seq_len) == (
        get_platform().get_world_size(),
        8,
        2048,
    )
    assert bare.rank == get_platform().get_rank()


def test_tensor_inputs_become_python_floats():
    platform = get_platform()
    clock = cm.FixedClock()
    records = []
    for as_tensor in (False, True):
        wrap = (
            (lambda v: platform.tensor(v, dtype=platform.dtype_from_name("float64"))) if as_tensor else float
        )
        with clock.pinned():
            proc = MetricsProcessor.Config(log_steps=1).build(world_size=1)
            clock.now = 10.0
            proc.start_step()
            clock.now = 10.5
            records.append(
                proc.log(1, loss=wrap(2.5), grad_norm=wrap(0.25), lr=wrap(1e-4), global_tokens=4096)
            )
    assert_bitwise_equal(records[0], records[1], "record")
    assert type(records[1]["loss"]) is float


def test_log_rejects_a_non_int_step():
    proc = MetricsProcessor.Config().build()
    with pytest.raises(TypeError, match="step must be an int"):
        proc.log(1.0, loss=1.0, grad_norm=1.0, lr=0.1)
