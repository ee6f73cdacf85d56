"""Legacy trainer callbacks against a hand-wired fake trainer."""

from __future__ import annotations

import glob
import json
import logging
import math
import os
import re
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import torch
from torch import nn
from torchdata.stateful_dataloader import StatefulDataLoader

from hyper_parallel.checkpointing import (
    CheckpointCorruptError,
    CheckpointSaveError,
    UnwritableDirError,
)
from hyper_parallel.platform import get_platform
from hyper_parallel.trainer.callbacks import (
    Callback,
    CheckpointCallback,
    EvalCallback,
    GCCallback,
    GradientHealthCallback,
    LoggingCallback,
    MemoryMonitorCallback,
    MoEMonitorCallback,
    ProfilerCallback,
    ProgressCallback,
    SafetensorsExportCallback,
    TensorBoardCallback,
    WandbCallback,
    _sub_cfg,
    export_hf_checkpoint,
    format_log_line,
)
from hyper_parallel.trainer.callbacks import checkpoint as ckpt_mod
from hyper_parallel.trainer.callbacks.metrics_sinks import args_to_dict

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
    "ignore:Detected an existing checkpoint:UserWarning",
)

LOG_LINE = re.compile(
    r"^step=(\d+) \| loss=(\d+\.\d{8}|N/A) \| grad_norm=(\d+\.\d{8}|N/A) \| lr=\d\.\d{2}e[+-]\d{2} "
    r"\| step_time=\d+\.\d{2}s( \| tokens_per_sec=[\d,]+)?( \| tflops=\d+\.\d \| mfu=\d+\.\d%)?( \| aux_loss=\d+\.\d{6})?$"
)


# --------------------------------------------------------------------------- fake trainer
def ns(**kwargs) -> SimpleNamespace:
    return SimpleNamespace(**kwargs)


def make_args(tmp_path, **sections) -> SimpleNamespace:
    """Legacy-shaped args; `sections` replace `args.train.<name>`."""
    train = ns(
        global_batch_size=4,
        max_steps=6,
        checkpoint=ns(
            output_dir=str(tmp_path / "ckpt"),
            save_steps=0,
            save_hf_weights=False,
            load_path=None,
            save_async=False,
        ),
        logging=ns(log_steps=1, report_throughput=True, model_flops_per_token=None, peak_tflops=None),
    )
    for name, section in sections.items():
        setattr(train, name, section)
    return ns(model=ns(name="tiny"), data=ns(max_seq_len=16), train=train)


class FakeTrainer:
    """The slice of BaseTrainer the callbacks use, with a tiny model and a stateful loader."""

    def __init__(self, args, *, seed: int = 0, max_steps: int = 6) -> None:
        torch.manual_seed(seed)
        self.args = args
        self.state = ns(global_step=0, epoch=0, max_steps=max_steps, log_history=[])
        self.model = nn.Linear(4, 2)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-2)
        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: 1.0 / (1 + s))
        data = torch.arange(80, dtype=torch.float32).view(20, 4) / 80
        self.train_dataloader = StatefulDataLoader(torch.utils.data.TensorDataset(data), batch_size=2)
        self.spec = ns(state_dict_adapter=None)
        self.parallel_dims = ns(world_size=1, dp_size=1)
        self.device = torch.device("cpu")
        self._last_global_tokens = None
        self.callbacks: list[Callback] = []
        self.events: list[tuple[str, object]] = []

    def add(self, callback: Callback, name: str | None = None) -> Callback:
        self.callbacks.append(callback)
        if name:
            setattr(self, name, callback)
        return callback

    def dispatch(self, hook: str, **kwargs) -> None:
        for callback in self.callbacks:
            getattr(callback, hook)(self.state, **kwargs)

    def dispatch_log_event(self, metrics) -> None:
        self.events.append(("log", metrics))
        self.dispatch("on_log", metrics=metrics)

    def dispatch_save_event(self, checkpoint_dir) -> None:
        self.events.append(("save", checkpoint_dir))
        self.dispatch("on_save", checkpoint_dir=checkpoint_dir)

    def dispatch_load_event(self, checkpoint_dir) -> None:
        self.events.append(("load", checkpoint_dir))
        self.dispatch("on_load", checkpoint_dir=checkpoint_dir)

    def dispatch_evaluate_event(self, metrics=None) -> None:
        self.events.append(("evaluate", metrics))
        self.dispatch("on_evaluate", metrics=metrics)

    def step(self, it) -> tuple[float, float]:
        """One optimizer step, its hooks in the legacy trainer's order."""
        self.dispatch("on_step_begin")
        (x,) = next(it)
        self.state.global_step += 1
        loss = self.model(x).pow(2).mean()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0).item()
        self.dispatch("on_pre_optimizer_step", grad_norm=grad_norm)
        self.optimizer.step()
        self.lr_scheduler.step()
        self.optimizer.zero_grad()
        self.dispatch("on_step_end", loss=loss.item(), grad_norm=grad_norm)
        return loss.item(), grad_norm

    def train(self, steps: int | None = None) -> list[tuple[float, float]]:
        """A minimal train(): begin hooks, steps until max_steps (or `steps`), end hooks."""
        self.dispatch("on_train_begin")
        it = iter(self.train_dataloader)
        out = []
        target = self.state.max_steps if steps is None else self.state.global_step + steps
        while self.state.global_step < target:
            out.append(self.step(it))
        self.dispatch("on_train_end")
        return out


def bits(t: torch.Tensor) -> list[int]:
    return t.detach().reshape(-1).view(torch.int32).tolist()


def no_tmp_files(root) -> bool:
    """True when no temporary file of an atomic write is left anywhere under `root`."""
    return not [name for _, _, files in os.walk(root) for name in files if name.endswith(".tmp")]


# --------------------------------------------------------------------------- base and config lookup
def test_sub_cfg_prefers_train_section_then_top_level():
    train_sec, top_sec = ns(log_steps=1), ns(log_steps=2)
    assert _sub_cfg(ns(train=ns(logging=train_sec), logging=top_sec), "logging") is train_sec
    assert _sub_cfg(ns(train=ns(logging=None), logging=top_sec), "logging") is top_sec
    assert _sub_cfg(ns(train=ns(), logging=top_sec), "logging") is top_sec
    assert _sub_cfg(ns(logging=top_sec), "logging") is top_sec
    assert _sub_cfg(ns(train=ns()), "logging") is None


def test_base_callback_hooks_are_noops():
    cb = Callback(trainer="t")
    state = ns(global_step=0)
    assert cb.trainer == "t"
    cb.on_init_end(state)
    cb.on_train_begin(state)
    cb.on_train_end(state)
    cb.on_epoch_begin(state)
    cb.on_epoch_end(state)
    cb.on_step_begin(state)
    cb.on_step_end(state, loss=1.0, grad_norm=2.0)
    cb.on_substep_end(state)
    cb.on_pre_optimizer_step(state, grad_norm=1.0)
    cb.on_log(state, metrics={})
    cb.on_save(state, checkpoint_dir="d")
    cb.on_load(state, checkpoint_dir="d")
    cb.on_evaluate(state, metrics=None)


def test_callbacks_use_code_defaults_without_any_section(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default output_dir is relative: its run-folder lock lands here
    trainer = FakeTrainer(ns(model=ns(name="tiny"), train=ns(), data=ns()))
    assert LoggingCallback(trainer).log_steps == 10
    ck = CheckpointCallback(trainer)
    assert (ck.output_dir, ck.save_steps, ck.load_path, ck.save_async) == ("outputs", 500, None, False)
    assert SafetensorsExportCallback(trainer).enabled is True
    assert not TensorBoardCallback(trainer).enabled and not WandbCallback(trainer).enabled
    prof = ProfilerCallback(trainer)
    assert (prof.enabled, prof.output_dir, prof.wait_steps, prof.warmup_steps, prof.active_steps) == (
        False,
        "profiler_traces",
        1,
        1,
        3,
    )


# --------------------------------------------------------------------------- logging
def test_format_log_line_matches_spec_example():
    record = {
        "step": 10,
        "loss": 7.62345678,
        "grad_norm": 0.31234567,
        "lr": 9.05e-4,
        "step_time": 0.05,
        "tokens_per_sec": 10240.0,
        "aux_loss": None,
    }
    assert format_log_line(record) == (
        "step=10 | loss=7.62345678 | grad_norm=0.31234567 | lr=9.05e-04 | step_time=0.05s | tokens_per_sec=10,240"
    )
    record.update(loss=None, grad_norm=None, tokens_per_sec=None, aux_loss=0.125)
    assert (
        format_log_line(record)
        == "step=10 | loss=N/A | grad_norm=N/A | lr=9.05e-04 | step_time=0.05s | aux_loss=0.125000"
    )
    record.update(tokens_per_sec=2e6, tflops=12.34, mfu=0.4567)
    assert format_log_line(record).endswith(
        "tokens_per_sec=2,000,000 | tflops=12.3 | mfu=45.7% | aux_loss=0.125000"
    )


def test_logging_gating_record_keys_and_history(tmp_path, caplog):
    args = make_args(tmp_path, logging=ns(log_steps=2, report_throughput=True))
    trainer = FakeTrainer(args)
    cb = trainer.add(LoggingCallback(trainer), "logging_callback")
    with caplog.at_level(logging.INFO, logger="hyper_parallel.trainer.callbacks.logging"):
        trainer.train(steps=5)
    lines = [r.getMessage() for r in caplog.records if r.name == "hyper_parallel.trainer.callbacks.logging"]
    assert len(lines) == 2
    for line, step in zip(lines, (2, 4)):
        match = LOG_LINE.match(line)
        assert match, line
        assert match.group(1) == str(step) and match.group(4)  # tokens_per_sec present
    # Stored and dispatched on log steps only; the record exists on every step.
    assert [r["step"] for r in trainer.state.log_history] == [2, 4]
    assert [m["step"] for kind, m in trainer.events if kind == "log"] == [2, 4]
    assert cb.last_record["step"] == 5
    assert list(cb.last_record) == [
        "step",
        "loss",
        "grad_norm",
        "lr",
        "step_time",
        "tokens_per_sec",
        "aux_loss",
    ]
    rec = trainer.state.log_history[-1]
    assert rec["lr"] == 1e-2 * (1.0 / (1 + 4))  # LambdaLR after 4 scheduler steps
    assert rec["aux_loss"] is None
    # Without `_last_global_tokens`, throughput counts global_batch_size * max_seq_len tokens.
    assert rec["tokens_per_sec"] * rec["step_time"] == pytest.approx(4 * 16)


def test_logging_throughput_flops_mfu_and_aux_loss(tmp_path, caplog):
    args = make_args(
        tmp_path,
        logging=ns(log_steps=1, report_throughput=True, model_flops_per_token=6_000_000, peak_tflops=2.0),
    )
    trainer = FakeTrainer(args)
    trainer.parallel_dims = ns(world_size=4, dp_size=4)
    trainer._last_global_tokens = 1000
    trainer.moe_monitor_callback = ns(last_mean_aux_loss=0.25)
    cb = trainer.add(LoggingCallback(trainer), "logging_callback")
    trainer.lr_scheduler = None
    with caplog.at_level(logging.INFO, logger="hyper_parallel.trainer.callbacks.logging"):
        cb.on_step_begin(trainer.state)
        trainer.state.global_step = 1
        cb.on_step_end(trainer.state, loss=1.5, grad_norm=0.5)
    rec = cb.last_record
    assert list(rec) == [
        "step",
        "loss",
        "grad_norm",
        "lr",
        "step_time",
        "tokens_per_sec",
        "aux_loss",
        "tflops",
        "mfu",
    ]
    assert rec["lr"] == 0.0  # no scheduler
    assert rec["tokens_per_sec"] * rec["step_time"] == pytest.approx(1000)
    assert rec["tflops"] == pytest.approx(rec["tokens_per_sec"] * 6_000_000 / 1e12)
    assert rec["mfu"] == pytest.approx(rec["tflops"] / (2.0 * 4))
    assert rec["aux_loss"] == 0.25
    (line,) = [r.getMessage() for r in caplog.records if r.name.endswith("callbacks.logging")]
    match = LOG_LINE.match(line)
    assert match and match.group(5) and match.group(6), line
    assert "loss=1.50000000 | grad_norm=0.50000000 | lr=0.00e+00" in line


def test_logging_without_throughput(tmp_path, caplog):
    args = make_args(
        tmp_path, logging=ns(log_steps=1, report_throughput=False, model_flops_per_token=1, peak_tflops=1.0)
    )
    trainer = FakeTrainer(args)
    cb = trainer.add(LoggingCallback(trainer), "logging_callback")
    with caplog.at_level(logging.INFO, logger="hyper_parallel.trainer.callbacks.logging"):
        trainer.train(steps=1)
    assert cb.last_record["tokens_per_sec"] is None
    assert "tflops" not in cb.last_record
    assert "tokens_per_sec" not in caplog.records[-1].getMessage()


def test_logging_rejects_non_positive_log_steps(tmp_path):
    with pytest.raises(ValueError, match=r"train\.logging\.log_steps"):
        LoggingCallback(FakeTrainer(make_args(tmp_path, logging=ns(log_steps=0))))


# --------------------------------------------------------------------------- TensorBoard / W&B
def test_tensorboard_writes_train_tags(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tb_dir = tmp_path / "tb"
    args = make_args(tmp_path, tensorboard=ns(enabled=True, output_dir=str(tb_dir), log_steps=2))
    trainer = FakeTrainer(args)
    trainer.add(LoggingCallback(trainer), "logging_callback")
    tb = trainer.add(TensorBoardCallback(trainer))
    trainer.train(steps=4)
    assert tb.writer is None  # closed at train end
    acc = EventAccumulator(str(tb_dir))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"train/loss", "train/grad_norm", "train/lr", "train/step_time", "train/tokens_per_sec"} <= tags
    assert "train/step" not in tags and "train/aux_loss" not in tags
    assert [e.step for e in acc.Scalars("train/loss")] == [2, 4]
    loss_at_4 = [r for r in trainer.state.log_history if r["step"] == 4][0]["loss"]
    assert acc.Scalars("train/loss")[-1].value == pytest.approx(loss_at_4)


def test_tensorboard_disabled_writes_nothing(tmp_path):
    args = make_args(tmp_path, tensorboard=ns(enabled=False, output_dir=str(tmp_path / "tb"), log_steps=1))
    trainer = FakeTrainer(args)
    trainer.add(LoggingCallback(trainer), "logging_callback")
    trainer.add(TensorBoardCallback(trainer))
    trainer.train(steps=2)
    assert not (tmp_path / "tb").exists()


def test_sink_import_errors_name_the_field(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    monkeypatch.setitem(sys.modules, "wandb", None)
    args = make_args(tmp_path, tensorboard=ns(enabled=True, log_steps=1), wandb=ns(enabled=True, log_steps=1))
    with pytest.raises(ImportError, match=r"train\.tensorboard\.enabled"):
        TensorBoardCallback(FakeTrainer(args))
    with pytest.raises(ImportError, match=r"train\.wandb\.enabled"):
        WandbCallback(FakeTrainer(args))


def test_args_to_dict_handles_dataclasses_and_namespaces():
    @dataclass
    class Inner:
        lr: float = 1e-3
        betas: tuple = (0.9, 0.95)

    @dataclass
    class Outer:
        optimizer: Inner = field(default_factory=Inner)

    assert args_to_dict(Outer()) == {"optimizer": {"lr": 1e-3, "betas": (0.9, 0.95)}}
    assert args_to_dict(ns(train=ns(lr=1.0, names=["a"]), _private=1)) == {
        "train": {"lr": 1.0, "names": ["a"]}
    }


def test_wandb_offline_run_files(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    args = make_args(tmp_path, wandb=ns(enabled=True, project="hp-test", run_name="cb-run", log_steps=1))
    trainer = FakeTrainer(args)
    trainer.add(LoggingCallback(trainer), "logging_callback")
    cb = trainer.add(WandbCallback(trainer))
    trainer.dispatch("on_train_begin")
    assert cb.run is not None
    assert cb.run.config["train"]["wandb"]["project"] == "hp-test"
    it = iter(trainer.train_dataloader)
    trainer.step(it)
    trainer.step(it)
    trainer.dispatch("on_train_end")
    assert cb.run is None
    import wandb

    wandb.teardown()  # joins wandb's writer service, so the offline run file is complete
    (run_file,) = glob.glob(str(tmp_path / "wandb" / "offline-run-*" / "run-*.wandb"))
    payload = open(run_file, "rb").read()
    assert b"train/loss" in payload and b"train/grad_norm" in payload and b"cb-run" in payload


# --------------------------------------------------------------------------- profiler, progress, health
def _profile_args(tmp_path, out):
    return make_args(
        tmp_path, profile=ns(enabled=True, output_dir=str(out), wait_steps=1, warmup_steps=1, active_steps=2)
    )


def test_profiler_records_only_after_wait_and_warmup(tmp_path):
    short = tmp_path / "short"
    trainer = FakeTrainer(_profile_args(tmp_path, short))
    trainer.add(ProfilerCallback(trainer))
    trainer.train(steps=1)  # shorter than wait + warmup
    assert not glob.glob(str(short / "**" / "*.pt.trace.json"), recursive=True)

    full = tmp_path / "full"
    trainer = FakeTrainer(_profile_args(tmp_path, full))
    cb = trainer.add(ProfilerCallback(trainer))
    trainer.dispatch("on_train_begin")
    it = iter(trainer.train_dataloader)
    for _ in range(4):  # wait 1 + warmup 1 + active 2: the cycle completes and the trace is written
        trainer.step(it)
    traces = glob.glob(str(full / "rank_0" / "*.pt.trace.json"))
    assert len(traces) == 1 and os.path.basename(traces[0]).startswith("rank0")
    trainer.dispatch("on_train_end")
    assert cb.prof is None


def test_progress_bar_counts_steps_and_postfix(tmp_path):
    trainer = FakeTrainer(make_args(tmp_path), max_steps=5)
    cb = trainer.add(ProgressCallback(trainer))
    trainer.dispatch("on_train_begin")
    bar = cb.bar
    assert bar.total == 5 and bar.n == 0 and bar.desc == "Training" and bar.unit == "step"
    it = iter(trainer.train_dataloader)
    trainer.step(it)
    trainer.step(it)
    assert bar.n == 2
    assert re.fullmatch(r"loss=\d+\.\d{4}, gnorm=\d+\.\d{4}", bar.postfix)
    trainer.dispatch("on_train_end")
    assert cb.bar is None


def test_progress_without_tqdm_warns_and_is_inert(tmp_path, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    trainer = FakeTrainer(make_args(tmp_path))
    with caplog.at_level(logging.WARNING):
        cb = ProgressCallback(trainer)
    assert any("tqdm" in r.getMessage() for r in caplog.records)
    cb.on_train_begin(trainer.state)
    cb.on_step_end(trainer.state, loss=1.0, grad_norm=1.0)
    cb.on_train_end(trainer.state)
    assert cb.bar is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_gradient_health_raises_on_non_finite(tmp_path, caplog, bad):
    trainer = FakeTrainer(make_args(tmp_path, debug=ns(check_nan_inf=True, gc_steps=0)))
    cb = GradientHealthCallback(trainer)
    trainer.state.global_step = 3
    cb.on_pre_optimizer_step(trainer.state, grad_norm=1.0)
    with (
        caplog.at_level(logging.ERROR),
        pytest.raises(RuntimeError, match=r"step 3.*train\.debug\.check_nan_inf"),
    ):
        cb.on_pre_optimizer_step(trainer.state, grad_norm=bad)
    assert any(r.levelno == logging.ERROR for r in caplog.records)


def test_gradient_health_in_the_loop_and_disabled(tmp_path):
    trainer = FakeTrainer(make_args(tmp_path, debug=ns(check_nan_inf=True)))
    trainer.add(GradientHealthCallback(trainer))
    with torch.no_grad():
        trainer.model.weight.fill_(float("nan"))
    with pytest.raises(RuntimeError, match="step 1"):
        trainer.train(steps=1)
    off = GradientHealthCallback(FakeTrainer(make_args(tmp_path, debug=ns(check_nan_inf=False))))
    off.on_pre_optimizer_step(ns(global_step=1), grad_norm=float("nan"))


def test_gc_callback_collects_on_cadence(tmp_path, monkeypatch):
    import gc

    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(1) or 0)
    try:
        cb = GCCallback(FakeTrainer(make_args(tmp_path, debug=ns(gc_steps=2))))
        assert not gc.isenabled()
        for step in range(1, 6):
            cb.on_step_end(ns(global_step=step))
        assert len(calls) == 2
        cb.on_train_end(ns(global_step=5))
        assert gc.isenabled()
    finally:
        gc.enable()
    GCCallback(FakeTrainer(make_args(tmp_path, debug=ns(gc_steps=0))))
    assert gc.isenabled()


def test_eval_stub_warns_on_cadence(tmp_path, caplog):
    cb = EvalCallback(FakeTrainer(make_args(tmp_path, eval=ns(eval_steps=2, eval_dataset=None))))
    with caplog.at_level(logging.WARNING):
        for step in range(1, 5):
            cb.on_step_end(ns(global_step=step))
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs == ["evaluation not implemented (step=2)", "evaluation not implemented (step=4)"]


def test_memory_monitor_cpu_warns_once_and_is_noop(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        cb = MemoryMonitorCallback(
            FakeTrainer(make_args(tmp_path, memory_monitor=ns(enabled=True, log_steps=1)))
        )
        for step in range(1, 4):
            cb.on_step_end(ns(global_step=step))
    assert cb.handle is None
    assert len([r for r in caplog.records if "memory_monitor" in r.getMessage()]) == 1


def test_memory_monitor_logs_with_a_device_handle(tmp_path, caplog, monkeypatch):
    class FakeHandle:
        resets = 0

        def memory_allocated(self):
            return 2 * 1024**3

        def max_memory_allocated(self):
            return 3 * 1024**3

        def reset_peak_memory_stats(self):
            FakeHandle.resets += 1

    monkeypatch.setattr(get_platform(), "get_device_handle", lambda device_type=None: FakeHandle())
    args = make_args(tmp_path, memory_monitor=ns(enabled=True, log_steps=2, reset_peak_each_step=True))
    cb = MemoryMonitorCallback(FakeTrainer(args))
    with caplog.at_level(logging.INFO):
        for step in range(1, 5):
            cb.on_step_end(ns(global_step=step))
    msgs = [r.getMessage() for r in caplog.records if "memory_allocated_gb" in r.getMessage()]
    assert (
        len(msgs) == 2
        and "memory_allocated_gb=2.000" in msgs[0]
        and "memory_peak_allocated_gb=3.000" in msgs[0]
    )
    assert FakeHandle.resets == 2


def test_moe_monitor_warns_and_stays_inactive(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        cb = MoEMonitorCallback(FakeTrainer(make_args(tmp_path, moe_monitor=ns(enabled=True))))
    assert cb.last_mean_aux_loss is None
    assert len([r for r in caplog.records if "moe_monitor" in r.getMessage()]) == 1
    with caplog.at_level(logging.WARNING):
        caplog.clear()
        MoEMonitorCallback(FakeTrainer(make_args(tmp_path, moe_monitor=ns(enabled=False))))
    assert not caplog.records


# --------------------------------------------------------------------------- checkpoint
def _ckpt_args(tmp_path, **checkpoint):
    cfg = dict(
        output_dir=str(tmp_path / "ckpt"),
        save_steps=3,
        save_hf_weights=False,
        load_path=None,
        save_async=False,
    )
    cfg.update(checkpoint)
    return make_args(tmp_path, checkpoint=ns(**cfg))


def _ckpt_trainer(args, *, seed=0, max_steps=6):
    trainer = FakeTrainer(args, seed=seed, max_steps=max_steps)
    trainer.add(CheckpointCallback(trainer), "checkpoint_callback")
    return trainer


def test_checkpoint_layout(tmp_path):
    trainer = _ckpt_trainer(_ckpt_args(tmp_path))
    trainer.state.epoch = 0
    trainer.train(steps=3)
    step_dir = tmp_path / "ckpt" / "step_3"
    names = set(os.listdir(step_dir))
    assert {
        ".metadata",
        "optimizer_rank0.pt",
        "scheduler.pt",
        "extra_state.json",
        "rng_rank0.pt",
        "dataloader_rank0.pt",
    } <= names
    assert any(re.fullmatch(r"__0_0\.distcp", n) for n in names)
    assert json.loads((step_dir / "extra_state.json").read_text()) == {"global_step": 3, "epoch": 0}
    assert trainer.events == [("save", str(step_dir))]
    assert trainer.checkpoint_callback.last_saved_step == 3
    assert no_tmp_files(tmp_path / "ckpt")
    # Every .pt artifact loads with weights_only=True.
    for name in ("optimizer_rank0.pt", "scheduler.pt", "rng_rank0.pt", "dataloader_rank0.pt"):
        torch.load(step_dir / name, weights_only=True)


def test_resume_restores_everything_exactly(tmp_path):
    class RngProbe(Callback):
        """Records the CPU RNG state at the moment each checkpoint is written."""

        saved: dict[str, torch.Tensor] = {}

        def on_save(self, state, *, checkpoint_dir, **kwargs):
            RngProbe.saved[checkpoint_dir] = torch.get_rng_state()

    # Reference run: 6 steps without interruption, saving at step 3.
    ref = _ckpt_trainer(_ckpt_args(tmp_path))
    ref.add(RngProbe(ref))
    ref_metrics = ref.train()
    ref_params = [p.detach().clone() for p in ref.model.parameters()]

    # Resumed run: different init seed, restore step 3, then run steps 4..6.
    args = _ckpt_args(
        tmp_path, load_path=str(tmp_path / "ckpt" / "step_3"), output_dir=str(tmp_path / "ckpt2")
    )
    res = _ckpt_trainer(args, seed=123)
    torch.manual_seed(4321)
    res.dispatch("on_train_begin")
    assert torch.equal(torch.get_rng_state(), RngProbe.saved[str(tmp_path / "ckpt" / "step_3")])
    assert res.state.global_step == 3 and res.state.epoch == 0
    assert ("load", str(tmp_path / "ckpt" / "step_3")) in res.events
    assert res.lr_scheduler.last_epoch == 3
    assert res.optimizer.state_dict()["state"][0]["step"].item() == 3
    it = iter(res.train_dataloader)
    res_metrics = [res.step(it) for _ in range(3)]
    res.dispatch("on_train_end")

    assert res_metrics == ref_metrics[3:]  # bit-identical Python floats
    for p, q in zip(res.model.parameters(), ref_params):
        assert bits(p) == bits(q)
    # step 6 was saved on cadence; train end adds nothing.
    assert sorted(os.listdir(tmp_path / "ckpt2")) == ["step_6"]


def test_resume_refuses_missing_artifacts_listed_in_the_manifest(tmp_path):
    ref = _ckpt_trainer(_ckpt_args(tmp_path))
    ref.train(steps=3)
    step_dir = tmp_path / "ckpt" / "step_3"
    os.remove(step_dir / "scheduler.pt")
    os.remove(step_dir / "rng_rank0.pt")
    res = _ckpt_trainer(_ckpt_args(tmp_path, load_path=str(step_dir), save_steps=0), seed=7)
    with pytest.raises(CheckpointCorruptError, match=r"rng_rank0\.pt is missing") as info:
        res.dispatch("on_train_begin")
    assert info.value.folder == str(step_dir)
    assert res.state.global_step == 0 and res.lr_scheduler.last_epoch == 0  # nothing restored


def test_resume_warns_on_readable_but_unfitting_artifact_and_continues(tmp_path, caplog):
    ref = _ckpt_trainer(_ckpt_args(tmp_path))
    ref.train(steps=3)
    step_dir = tmp_path / "ckpt" / "step_3"
    os.remove(step_dir / "manifest.json")  # the pre-manifest policy: the edited file is read
    # A readable file whose content does not fit the optimizer: load_state_dict raises ValueError.
    torch.save({"state": {}, "param_groups": []}, step_dir / "optimizer_rank0.pt")
    res = _ckpt_trainer(
        _ckpt_args(tmp_path, load_path=str(step_dir), save_steps=0, allow_unverified=True), seed=7
    )
    with caplog.at_level(logging.WARNING):
        res.dispatch("on_train_begin")
    assert any("optimizer_rank0.pt" in r.getMessage() for r in caplog.records)
    assert res.optimizer.state_dict()["state"] == {}  # left as built
    assert res.lr_scheduler.last_epoch == 3  # later artifacts still restored


def test_load_path_must_be_a_directory(tmp_path):
    trainer = _ckpt_trainer(_ckpt_args(tmp_path, load_path=str(tmp_path / "missing")))
    with pytest.raises(ValueError, match=r"train\.checkpoint\.load_path"):
        trainer.dispatch("on_train_begin")
    a_file = tmp_path / "file.pt"
    a_file.write_bytes(b"x")
    trainer = _ckpt_trainer(_ckpt_args(tmp_path, load_path=str(a_file)))
    with pytest.raises(ValueError, match=r"train\.checkpoint\.load_path"):
        trainer.dispatch("on_train_begin")


def test_final_save_only_if_unsaved(tmp_path):
    trainer = _ckpt_trainer(_ckpt_args(tmp_path, save_steps=2), max_steps=4)
    trainer.train()
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["step_2", "step_4"]
    assert [e for e in trainer.events if e[0] == "save"] == [
        ("save", str(tmp_path / "ckpt" / "step_2")),
        ("save", str(tmp_path / "ckpt" / "step_4")),
    ]

    out = tmp_path / "odd"
    trainer = _ckpt_trainer(_ckpt_args(tmp_path, save_steps=2, output_dir=str(out)), max_steps=5)
    trainer.train()
    assert sorted(os.listdir(out)) == ["step_2", "step_4", "step_5"]

    out = tmp_path / "off"
    trainer = _ckpt_trainer(_ckpt_args(tmp_path, save_steps=0, output_dir=str(out)), max_steps=3)
    trainer.train()
    assert not out.exists()

    out = tmp_path / "nothing_trained"
    trainer = _ckpt_trainer(_ckpt_args(tmp_path, save_steps=2, output_dir=str(out)), max_steps=0)
    trainer.train()
    assert not out.exists()


def test_async_save_layout_and_wait(tmp_path):
    trainer = _ckpt_trainer(_ckpt_args(tmp_path, save_steps=2, save_async=True), max_steps=3)
    trainer.train()
    for step in (2, 3):
        names = set(os.listdir(tmp_path / "ckpt" / f"step_{step}"))
        assert {".metadata", "optimizer_rank0.pt", "extra_state.json", "rng_rank0.pt"} <= names
    assert trainer.checkpoint_callback.writer._pending is None
    assert trainer.checkpoint_callback.last_saved_step == 3


def test_unwritable_output_dir_fails_before_the_first_step(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the output folder should be")
    with pytest.raises(UnwritableDirError, match=r"train\.checkpoint\.output_dir=.*blocker"):
        _ckpt_trainer(_ckpt_args(tmp_path, output_dir=str(blocker), save_steps=1), max_steps=1)


def test_crash_while_writing_an_artifact_leaves_no_partial_file(tmp_path, monkeypatch, caplog):
    real_save = torch.save

    def crashing_save(obj, f, *args, **kwargs):
        if "optimizer_rank0" in str(f):
            with open(f, "wb") as fh:
                fh.write(b"half a file")
            raise RuntimeError("disk full")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", crashing_save)
    trainer = _ckpt_trainer(_ckpt_args(tmp_path, save_steps=1), max_steps=1)
    with pytest.raises(CheckpointSaveError, match=r"step_1 failed at step 1: RuntimeError: disk full"):
        trainer.train()
    assert not (tmp_path / "ckpt" / "step_1").exists()
    assert no_tmp_files(tmp_path)
    assert not [e for e in trainer.events if e[0] == "save"]


def test_atomic_write_never_leaves_partial_files(tmp_path):
    target = tmp_path / "obj.pt"
    ckpt_mod.atomic_torch_save({"a": torch.ones(2)}, str(target))
    before = target.read_bytes()
    with pytest.raises(Exception):  # noqa: B017 - any pickling failure
        ckpt_mod.atomic_torch_save({"a": lambda: None}, str(target))
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["obj.pt"]

    def crash(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ckpt_mod.atomic_write(str(tmp_path / "new.json"), crash)
    assert os.listdir(tmp_path) == ["obj.pt"]
    ckpt_mod.atomic_write_json({"global_step": 1, "epoch": 0}, str(tmp_path / "extra_state.json"))
    assert json.loads((tmp_path / "extra_state.json").read_text()) == {"global_step": 1, "epoch": 0}


# --------------------------------------------------------------------------- HF export
class TiedLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = ns(vocab_size=8, hidden_size=4)
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(8, 4)
        self.lm_head = nn.Linear(4, 8, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight


class PrefixAdapter:
    """Stands in for the Qwen3.5 adapter: `model.X` -> `model.language_model.X`."""

    seen: dict = {}

    def save_hf_state_dict(self, state_dict, model_config):
        out = {}
        for key, value in state_dict.items():
            out[key.replace("model.", "model.language_model.", 1) if key.startswith("model.") else key] = (
                value
            )
        return out

    def export_hf_config(self, model_config, dtype):
        PrefixAdapter.seen = {"config": model_config, "dtype": dtype}
        return {"model_type": "qwen3_5_text", "vocab_size": model_config.vocab_size, "dtype": dtype}


def test_export_hf_checkpoint_with_adapter(tmp_path):
    from safetensors import safe_open

    model = TiedLM()
    out = export_hf_checkpoint(model, PrefixAdapter, str(tmp_path / "hf"))
    assert out == str(tmp_path / "hf")
    with safe_open(str(tmp_path / "hf" / "model.safetensors"), framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
        keys = set(f.keys())
        assert keys == {"model.language_model.embed_tokens.weight", "lm_head.weight"}
        assert torch.equal(f.get_tensor("lm_head.weight"), model.lm_head.weight.detach())
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config == {"model_type": "qwen3_5_text", "vocab_size": 8, "dtype": "float32"}
    assert PrefixAdapter.seen["config"] is model.config
    assert no_tmp_files(tmp_path)


def test_export_hf_checkpoint_without_adapter(tmp_path):
    from safetensors.torch import load_file

    model = nn.Linear(3, 2).to(torch.bfloat16)
    export_hf_checkpoint(model, None, str(tmp_path / "hf"))
    loaded = load_file(str(tmp_path / "hf" / "model.safetensors"))
    assert set(loaded) == {"weight", "bias"} and loaded["weight"].dtype == torch.bfloat16
    assert not (tmp_path / "hf" / "config.json").exists()


def test_export_callback_cadence(tmp_path):
    args = _ckpt_args(tmp_path, save_steps=2, save_hf_weights=True)
    trainer = FakeTrainer(args, max_steps=5)
    trainer.add(CheckpointCallback(trainer), "checkpoint_callback")
    export = trainer.add(SafetensorsExportCallback(trainer), "hf_export_callback")
    trainer.train()
    root = tmp_path / "ckpt"
    for step in (2, 4, 5):
        assert (root / f"step_{step}" / "hf_ckpt" / "model.safetensors").is_file()
    assert export.last_exported_step == 5

    off = tmp_path / "off"
    trainer = FakeTrainer(
        _ckpt_args(tmp_path, save_steps=2, save_hf_weights=False, output_dir=str(off)), max_steps=3
    )
    trainer.add(SafetensorsExportCallback(trainer))
    trainer.train()
    assert not off.exists()


def test_export_failure_stops_the_run_naming_the_folder(tmp_path):
    class BrokenAdapter(PrefixAdapter):
        def export_hf_config(self, model_config, dtype):
            raise ValueError("attn_output_gate=False cannot be exported")

    trainer = FakeTrainer(_ckpt_args(tmp_path, save_steps=1, save_hf_weights=True), max_steps=1)
    trainer.spec = ns(state_dict_adapter=BrokenAdapter)
    export = trainer.add(SafetensorsExportCallback(trainer))
    with pytest.raises(
        CheckpointSaveError, match=r"step_1/hf_ckpt failed at step 1: ValueError: attn_output"
    ):
        trainer.train()
    assert export.last_exported_step == 0


# --------------------------------------------------------------------------- FSDP2 on a 1-rank gloo group
# ``gloo_world`` (a 1-rank gloo group) comes from tests/conftest.py.


def test_fsdp2_async_checkpoint_resume_and_export(tmp_path, gloo_world):
    from safetensors.torch import load_file
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor

    def build(args, seed):
        trainer = FakeTrainer(args, seed=seed)
        torch.manual_seed(seed)
        trainer.model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
        trainer.model.config = ns(vocab_size=0)
        fully_shard(trainer.model)
        trainer.optimizer = torch.optim.AdamW(trainer.model.parameters(), lr=1e-2)
        trainer.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(trainer.optimizer, lambda s: 1.0 / (1 + s))
        trainer.add(CheckpointCallback(trainer), "checkpoint_callback")
        trainer.add(SafetensorsExportCallback(trainer), "hf_export_callback")
        return trainer

    ref = build(_ckpt_args(tmp_path, save_steps=2, save_async=True, save_hf_weights=True), seed=0)
    ref_metrics = ref.train(steps=4)
    assert ref.checkpoint_callback.writer._async_group is not None  # gloo group created once for async saves
    assert isinstance(ref.optimizer.state_dict()["state"][0]["exp_avg"], DTensor)
    hf = load_file(str(tmp_path / "ckpt" / "step_4" / "hf_ckpt" / "model.safetensors"))
    assert set(hf) == {"0.weight", "0.bias", "1.weight", "1.bias"}
    assert torch.equal(hf["0.weight"], ref.model[0].weight.full_tensor())

    args = _ckpt_args(tmp_path, save_steps=0, load_path=str(tmp_path / "ckpt" / "step_2"))
    res = build(args, seed=99)
    res.dispatch("on_train_begin")
    assert res.state.global_step == 2
    it = iter(res.train_dataloader)
    assert [res.step(it) for _ in range(2)] == ref_metrics[2:]
    for p, q in zip(res.model.parameters(), ref.model.parameters()):
        assert bits(p.full_tensor()) == bits(q.full_tensor())


def test_math_is_finite_guard_accepts_tensors(tmp_path):
    cb = GradientHealthCallback(FakeTrainer(make_args(tmp_path, debug=ns(check_nan_inf=True))))
    cb.on_pre_optimizer_step(ns(global_step=1), grad_norm=torch.tensor(1.0))
    with pytest.raises(RuntimeError):
        cb.on_pre_optimizer_step(ns(global_step=1), grad_norm=torch.tensor(math.nan))
