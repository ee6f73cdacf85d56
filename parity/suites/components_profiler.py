"""Profiler component vs the legacy ``ProfilerCallback``.

Tier A pairs drive both sides through one run of ``steps`` train steps, the legacy callback with
``on_train_begin`` / ``on_step_end`` / ``on_train_end`` on a bare trainer whose args carry
``train.profile``, the component as ``with Profiler.Config(...).build() as prof: ... prof.step()``
(what ``HyperTrainer.train`` does). No real profiler starts: ``torch.profiler.profile``,
``torch.profiler.schedule`` and ``torch.profiler.tensorboard_trace_handler`` are replaced, for the
run only, by recording fakes (the legacy callback calls them directly, the component through
``platform.profiler``). The artifact (kind ``profiler``) is, per profiler constructed:

- every argument handed to ``torch.profiler.profile`` (bound to its signature, defaults filled
  in): the activities by name, the schedule's arguments, the trace handler's arguments (folder,
  worker name, gzip...);
- the schedule's action at every step ``0 .. steps + 1``;
- the calls the run made on the profiler (``start`` / ``step`` / ``stop``; ``__enter__`` and
  ``__exit__`` count as ``start`` and ``stop``, as in torch), each with the step number and the
  schedule's action at that point.

Covered: several (wait, warmup, active) settings, the schedule defaults left to each side, a run
shorter than wait + warmup, disabled (explicitly, by default, and with a schedule that would be
invalid: neither side looks at it), another rank (the trace folder and worker name), a CUDA
device (the activity list), a custom output folder, and a hypothesis-drawn schedule. A pair on
the defaults compares the legacy schema's and the legacy callback's code fallbacks with the
component's Config defaults. Both sides run in the same fresh working folder, so relative output
folders are the same strings on both and on every machine. The tier B golden pins the new side's
record on the default schedule. The real profiler's trace files are compared by a ``slow`` test
(tests/torch/ut/components/test_profiler_cases.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

from parity import canonical
from parity.cases import REGISTRY
from parity.legacy_driver import bare_trainer, legacy_args, simulated_rank

__all__ = ["ProfilerRecorder", "recording_profiler"]

KIND = "profiler"


# ----------------------------------------------------------------------------- recording fakes


def _plain(value: Any) -> Any:
    """An argument as a canonicalisable value: enums by name, callables by type, rest as is."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    name = getattr(value, "name", None)
    if isinstance(name, str) and type(value).__module__.startswith("torch"):
        return name  # ProfilerActivity / ProfilerAction
    return f"<{type(value).__qualname__}>"


class ProfilerRecorder:
    """What the fakes saw: one record per ``torch.profiler.profile(...)`` call."""

    def __init__(self, horizon: int) -> None:
        self.horizon = horizon
        self.profilers: list[dict[str, Any]] = []

    def tree(self) -> dict[str, Any]:
        return {"profilers": self.profilers}


class _FakeSchedule:
    """Wraps the real ``torch.profiler.schedule`` function and keeps its (bound) arguments."""

    def __init__(self, fn: Any, arguments: dict[str, Any]) -> None:
        self.fn = fn
        self.arguments = arguments

    def __call__(self, step: int) -> Any:
        return self.fn(step)


class _FakeTraceHandler:
    def __init__(self, arguments: dict[str, Any]) -> None:
        self.arguments = arguments

    def __call__(self, prof: Any) -> None:  # the fake profiler never calls it
        raise AssertionError("the recording profiler does not produce traces")


class _FakeProfile:
    """Stands for ``torch.profiler.profile``: records the calls, starts nothing.

    Like torch's: the step number starts at 0; ``start`` takes the schedule's action at it;
    ``step`` advances it; ``__enter__``/``__exit__`` are ``start``/``stop``.
    """

    def __init__(self, recorder: ProfilerRecorder, arguments: dict[str, Any]) -> None:
        self.schedule = arguments.get("schedule")
        self.step_num = 0
        args: dict[str, Any] = {}
        for name, value in arguments.items():
            if isinstance(value, _FakeSchedule):
                args[name] = {"schedule": _plain(value.arguments)}
            elif isinstance(value, _FakeTraceHandler):
                args[name] = {"tensorboard_trace_handler": _plain(value.arguments)}
            else:
                args[name] = _plain(value)
        actions = None
        if isinstance(self.schedule, _FakeSchedule):
            actions = [_plain(self.schedule(step)) for step in range(recorder.horizon)]
        self.events: list[dict[str, Any]] = []
        recorder.profilers.append({"arguments": args, "schedule_actions": actions, "events": self.events})

    def _event(self, name: str) -> None:
        action = self.schedule(self.step_num) if callable(self.schedule) else None
        self.events.append({"call": name, "step_num": self.step_num, "action": _plain(action)})

    def start(self) -> None:
        self._event("start")

    def step(self) -> None:
        self.step_num += 1
        self._event("step")

    def stop(self) -> None:
        self._event("stop")

    def __enter__(self) -> _FakeProfile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _bind(fn: Any, args: tuple, kwargs: dict[str, Any], *, method: bool = False) -> dict[str, Any]:
    signature = inspect.signature(fn)
    bound = signature.bind(None, *args, **kwargs) if method else signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return {k: v for k, v in bound.arguments.items() if not (method and k == "self")}


@contextlib.contextmanager
def recording_profiler(horizon: int) -> Iterator[ProfilerRecorder]:
    """Replace ``torch.profiler.{profile, schedule, tensorboard_trace_handler}`` by recording fakes."""
    import torch.profiler as tp

    real = {name: getattr(tp, name) for name in ("profile", "schedule", "tensorboard_trace_handler")}
    recorder = ProfilerRecorder(horizon)

    def profile(*args: Any, **kwargs: Any) -> _FakeProfile:
        return _FakeProfile(recorder, _bind(real["profile"].__init__, args, kwargs, method=True))

    def schedule(*args: Any, **kwargs: Any) -> _FakeSchedule:
        with warnings.catch_warnings():  # torch warns about warmup=0 on both sides alike
            warnings.filterwarnings("ignore", message="Profiler won't be using warmup")
            fn = real["schedule"](*args, **kwargs)
        return _FakeSchedule(fn, _bind(real["schedule"], args, kwargs))

    def tensorboard_trace_handler(*args: Any, **kwargs: Any) -> _FakeTraceHandler:
        return _FakeTraceHandler(_bind(real["tensorboard_trace_handler"], args, kwargs))

    fakes = {"profile": profile, "schedule": schedule, "tensorboard_trace_handler": tensorboard_trace_handler}
    for name, fake in fakes.items():
        setattr(tp, name, fake)
    try:
        yield recorder
    finally:
        for name, fn in real.items():
            setattr(tp, name, fn)


@contextlib.contextmanager
def fresh_cwd() -> Iterator[str]:
    """Run in an empty temporary working folder (relative output folders resolve inside it)."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="parity-profiler-") as tmp:
        os.chdir(tmp)
        try:
            yield tmp
        finally:
            os.chdir(old)


@contextlib.contextmanager
def simulated_device(device: str) -> Iterator[None]:
    """Make the platform report ``device`` as its device type ('' leaves it alone)."""
    if not device:
        yield
        return
    from hyper_parallel.platform import get_platform

    platform = get_platform()
    had_own = "device_type" in vars(platform)
    original = vars(platform).get("device_type")
    setattr(platform, "device_type", lambda: device)  # noqa: B010 (an instance attribute)
    try:
        yield
    finally:
        # Leave no instance attribute behind (it would shadow later class-level patches).
        if had_own:
            setattr(platform, "device_type", original)  # noqa: B010
        else:
            delattr(platform, "device_type")


@contextlib.contextmanager
def _environment(rank: int, device: str) -> Iterator[None]:
    with fresh_cwd(), simulated_device(device):
        if rank >= 0:
            with simulated_rank(rank):
                yield
        else:
            yield


def _files_written(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files)


# ----------------------------------------------------------------------------- the two sides

# Producer params -> train.profile field (None: not set, each side keeps its own default).
_FIELDS = {
    "enabled": "enabled",
    "output_dir": "output_dir",
    "wait": "wait_steps",
    "warmup": "warmup_steps",
    "active": "active_steps",
}


def _set_fields(**params: Any) -> dict[str, Any]:
    return {_FIELDS[k]: v for k, v in params.items() if v is not None}


def legacy_profile(
    *,
    steps: int,
    enabled: bool | None = None,
    wait: int | None = None,
    warmup: int | None = None,
    active: int | None = None,
    output_dir: str | None = None,
    rank: int = -1,
    device: str = "",
):
    """The legacy callback over ``steps`` steps; ``train.profile`` from the debug recipe plus overrides."""
    from hyper_parallel.trainer.callbacks import ProfilerCallback

    fields = _set_fields(enabled=enabled, wait=wait, warmup=warmup, active=active, output_dir=output_dir)
    overrides = [
        f"--train.profile.{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in fields.items()
    ]
    with _environment(rank, device), recording_profiler(steps + 2) as recorder:
        trainer = bare_trainer(legacy_args(*overrides))
        state = trainer.state
        callback = ProfilerCallback(trainer)
        callback.on_train_begin(state)
        for _step in range(steps):
            state.global_step += 1
            callback.on_step_end(state, loss=1.0, grad_norm=1.0)
        callback.on_train_end(state)
        written = _files_written(os.getcwd())
    return canonical.canonicalise({**recorder.tree(), "files_written": written}, KIND)


def new_profile(
    *,
    steps: int,
    enabled: bool | None = None,
    wait: int | None = None,
    warmup: int | None = None,
    active: int | None = None,
    output_dir: str | None = None,
    rank: int = -1,
    device: str = "",
):
    """The component over ``steps`` steps, as ``HyperTrainer.train`` runs it."""
    from hyper_parallel.components.profiler import Profiler

    fields = _set_fields(enabled=enabled, wait=wait, warmup=warmup, active=active, output_dir=output_dir)
    with _environment(rank, device), recording_profiler(steps + 2) as recorder:
        with Profiler.Config(**fields).build() as prof:
            for _step in range(steps):
                if prof is not None:
                    prof.step()
        written = _files_written(os.getcwd())
    return canonical.canonicalise({**recorder.tree(), "files_written": written}, KIND)


SUITE = REGISTRY.suite(tags=("profiler",))

SCHEDULES: tuple[dict[str, Any], ...] = (
    {"enabled": True, "wait": 1, "warmup": 1, "active": 3, "steps": 7},  # the defaults, spelled out
    {"enabled": True, "steps": 7},  # the schedule defaults left to each side
    {"enabled": True, "wait": 0, "warmup": 0, "active": 1, "steps": 4},
    {"enabled": True, "wait": 2, "warmup": 1, "active": 2, "steps": 8},
    {"enabled": True, "wait": 0, "warmup": 3, "active": 1, "steps": 2},  # stops before the active step
    {"enabled": True, "wait": 4, "warmup": 0, "active": 5, "steps": 12},
    {"steps": 5},  # train.profile untouched: disabled by default
    {"enabled": False, "wait": 2, "warmup": 2, "active": 2, "steps": 5},
    {"enabled": False, "wait": -1, "warmup": 0, "active": 0, "steps": 3},  # never validated when off
    {"enabled": True, "wait": 1, "warmup": 1, "active": 2, "steps": 5, "rank": 3, "output_dir": "my_traces"},
    {"enabled": True, "wait": 0, "warmup": 1, "active": 2, "steps": 4, "device": "cuda"},
)
SUITE.grid(
    "profiler_run",
    params=SCHEDULES,
    kind=KIND,
    legacy=legacy_profile,
    new=new_profile,
)


def _profile_strategies() -> dict[str, Any]:
    from hypothesis import strategies as st

    return {
        "enabled": st.booleans(),
        "wait": st.integers(0, 4),
        "warmup": st.integers(0, 4),
        "active": st.integers(1, 5),
        "steps": st.integers(0, 12),
    }


SUITE.pair(
    "profiler_run_hypothesis",
    kind=KIND,
    legacy=legacy_profile,
    new=new_profile,
    strategies=_profile_strategies(),
)


# ----------------------------------------------------------------------------- defaults


def legacy_defaults():
    """The legacy defaults from each source: the ``train.profile`` schema (``LegacyProfileArgs``), an
    empty YAML parsed, and the callback's code fallbacks when no section exists at all."""
    from types import SimpleNamespace

    from hyper_parallel.trainer.callbacks import ProfilerCallback
    from hyper_parallel.trainer.config import LegacyProfileArgs

    callback = ProfilerCallback(SimpleNamespace(args=SimpleNamespace(train=SimpleNamespace())))
    tree = {
        "schema": dataclasses.asdict(LegacyProfileArgs()),
        "parsed": dataclasses.asdict(legacy_args(config=None).train.profile),
        "code_fallback": {field: getattr(callback, field) for field in _FIELDS.values()},
    }
    return canonical.canonicalise(tree, KIND)


def new_defaults():
    """The component's one set of defaults: ``Profiler.Config()``."""
    from hyper_parallel.components.profiler import Profiler

    values = Profiler.Config().to_dict()
    return canonical.canonicalise({"schema": values, "parsed": values, "code_fallback": values}, KIND)


SUITE.pair("profiler_defaults", kind=KIND, legacy=legacy_defaults, new=new_defaults)


# ----------------------------------------------------------------------------- tier B golden

SUITE.golden("profiler_new_run", kind=KIND, params=SCHEDULES[1], producer=new_profile)
