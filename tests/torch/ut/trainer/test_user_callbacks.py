"""The legacy callback API on HyperTrainer: ``add_callback`` works, and the event sequence is LLMTrainer's.

The tier A pair ``e2e.user_callbacks`` (``parity/suites/e2e_callbacks.py``) compares both
trainers' sequences; the planted divergences below prove that it fails, and that the failure names
the event, when HyperTrainer dispatches one event late or with another argument.
"""

from __future__ import annotations

import pytest

from hyper_parallel.trainer.hyper_trainer import HyperTrainer
from parity import assert_bitwise_equal
from parity.compare import compare
from parity.legacy_driver import legacy_args
from parity.suites.e2e_callbacks import PARAMS, legacy_events, new_events, run_events

# What the legacy trainer builds that HyperTrainer gets from its components instead.
LEGACY_ATTRIBUTES = (
    "args",
    "train_dataloader",
    "sampler",
    "checkpoint_callback",
    "grad_scaler",
    "_grad_accum",
)
LEGACY_METHODS = ("_setup", "_build_model", "_build_dataloader", "_load_weights", "_init_callbacks")


def _events(run):
    return run["events"]["fresh"] + run["events"]["resumed"]


def _names(events):
    return [next(iter(e)) for e in events]


def test_the_pair_is_equal_and_not_trivial():
    legacy, new = legacy_events(**PARAMS), new_events(**PARAMS)
    assert_bitwise_equal(legacy, new, "user_callbacks")
    names = _names(_events(legacy))
    for hook in (
        "on_train_begin",
        "on_epoch_begin",
        "on_step_begin",
        "on_substep_end",
        "on_pre_optimizer_step",
        "on_log",
        "on_save",
        "on_load",
        "on_step_end",
        "on_epoch_end",
        "on_train_end",
    ):
        assert hook in names, hook
    saves = [e["on_save"]["args"]["checkpoint_dir"] for e in _events(legacy) if "on_save" in e]
    # Each run's own saves, then the one user code announces after it trained (train, then resume).
    assert saves == ["ckpt/step_2", "ckpt/step_3", "user/saved", "ckpt/step_4", "user/saved"]


def _planted(monkeypatch, dispatch):
    """The new side's events with ``HyperTrainer._dispatch`` replaced by ``dispatch(original, self, hook, kw)``."""
    original = HyperTrainer._dispatch

    def planted(self, hook, **kwargs):
        dispatch(original, self, hook, kwargs)

    monkeypatch.setattr(HyperTrainer, "_dispatch", planted)
    return run_events("new", **PARAMS)


def test_an_event_dispatched_late_is_caught_and_named(monkeypatch):
    """on_save after on_step_end instead of before it: the first difference names both events."""
    held = []

    def late_save(original, self, hook, kwargs):
        if hook == "on_save" and self.state.global_step < self.state.max_steps:
            held.append(kwargs)
            return
        original(self, hook, **kwargs)
        if hook == "on_step_end":
            while held:
                original(self, "on_save", **held.pop())

    planted = _planted(monkeypatch, late_save)
    differences = compare(legacy_events(**PARAMS), planted, "user_callbacks")
    assert differences, "a late on_save went unnoticed"
    index = _names(legacy_events(**PARAMS)["events"]["fresh"]).index("on_save")
    paths = [(d.kind, d.path) for d in differences[:2]]
    assert paths == [
        ("missing", f"user_callbacks.events.fresh[{index}].on_save"),
        ("extra", f"user_callbacks.events.fresh[{index}].on_step_end"),
    ], paths


def test_a_different_argument_is_caught_and_named(monkeypatch):
    """on_pre_optimizer_step given the norm one ULP up: the difference is at that event's grad_norm."""
    import math

    def nudged(original, self, hook, kwargs):
        if hook == "on_pre_optimizer_step":
            kwargs = {**kwargs, "grad_norm": math.nextafter(kwargs["grad_norm"], math.inf)}
        original(self, hook, **kwargs)

    planted = _planted(monkeypatch, nudged)
    differences = compare(legacy_events(**PARAMS), planted, "user_callbacks")
    assert differences
    index = _names(legacy_events(**PARAMS)["events"]["fresh"]).index("on_pre_optimizer_step")
    expected_path = f"user_callbacks.events.fresh[{index}].on_pre_optimizer_step.args.grad_norm"
    assert differences[0].path == expected_path, differences[0]
    assert differences[0].max_ulp == 1
    # One per step (3 fresh, 1 resumed), and nothing else.
    assert len(differences) == 4
    assert all(d.path.endswith(".on_pre_optimizer_step.args.grad_norm") for d in differences)


@pytest.fixture(scope="module")
def hyper_trainer():
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    trainer = legacy_to_trainer_config(legacy_args("--train.checkpoint.save_steps=0")).build()
    yield trainer
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def test_add_callback_works_on_hyper_trainer(hyper_trainer):
    from hyper_parallel.trainer.callbacks.base import Callback

    callback = Callback(hyper_trainer)
    hyper_trainer.add_callback(callback)
    assert hyper_trainer.user_callbacks == [callback]
    hyper_trainer.dispatch_log_event({"loss": 1.0})  # the base class's no-op hooks accept every event


def test_hyper_trainer_inherits_nothing_legacy(hyper_trainer):
    from hyper_parallel.protocols import Configurable
    from hyper_parallel.trainer.base import BaseTrainer

    assert isinstance(hyper_trainer, Configurable)
    assert not isinstance(hyper_trainer, BaseTrainer)
    assert not issubclass(HyperTrainer, BaseTrainer)
    for name in LEGACY_ATTRIBUTES + LEGACY_METHODS:
        assert not hasattr(hyper_trainer, name), name
    assert "__getattr__" not in vars(HyperTrainer)


def test_every_attribute_is_declared_with_a_type(hyper_trainer):
    """Each attribute the 11 steps leave on the trainer is annotated in the class body."""
    declared = set(HyperTrainer.__annotations__)
    assert set(vars(hyper_trainer)) <= declared, sorted(set(vars(hyper_trainer)) - declared)
    # and nothing is declared that the init steps do not assign
    assert declared <= set(vars(hyper_trainer)), sorted(declared - set(vars(hyper_trainer)))


def test_both_trainers_dispatch_user_callbacks_through_one_function(monkeypatch, hyper_trainer):
    from hyper_parallel.trainer import init_helpers
    from hyper_parallel.trainer.base import BaseTrainer, TrainerState

    calls = []
    monkeypatch.setattr(init_helpers, "dispatch_callbacks", lambda cbs, hook, state, **kw: calls.append(hook))
    monkeypatch.setattr(hyper_trainer, "user_callbacks", [object()])
    hyper_trainer.dispatch_save_event("somewhere")
    legacy = BaseTrainer.__new__(BaseTrainer)
    legacy.state, legacy.user_callbacks = TrainerState(), []
    legacy.dispatch_save_event("somewhere")
    assert calls == ["on_save", "on_save"]
