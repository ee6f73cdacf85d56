"""Where did an end-to-end pair first diverge? Step, phase, artifact and the component that owns it.

``localise_recipe(name)`` replays one recipe of ``parity.e2e`` on both trainers
(``LLMTrainer`` and ``HyperTrainer``, the recipe's overrides, each side reseeded as the engine
reseeds it) and captures, per optimizer step and in pipeline order (``PHASES``):

==================  =========================================================  ======================
phase               what (captured at)                                         owner (``COMPONENTS``)
==================  =========================================================  ======================
batch               the step's micro-batches (the batch iterator)              dataloader
lr                  the lr of every param group the step uses (pre optimizer)  lr_scheduler
loss                per micro-batch raw loss and loss tokens, the step's        loss
                    global tokens, the reported loss (forward_backward_step,
                    on_step_end)
grads_before_clip   per parameter, after the last backward (on_substep_end of   loss/train_step
                    the last micro-batch)
grad_norm           the clipping norm (on_pre_optimizer_step)                  train_step/clipping
grads_after_clip    per parameter (on_pre_optimizer_step)                      train_step/clipping
weights             per parameter, after the optimizer step (on_step_end)      optimizer
optimizer_state     AdamW state per parameter and the group hyperparameters    optimizer
                    other than the scheduler's lr (on_step_end)
scheduler_state     the LambdaLR state: it already holds the next step's lr    lr_scheduler
rng                 the framework generators (host and device; on_step_end)    trainer_seeding
==================  =========================================================  ======================

Both trainers run in one process, **in lockstep**: each side trains in a thread of its own and
waits inside ``on_step_end`` after capturing, while the other side runs its step; only one side
runs at any time. Each side keeps its own global RNG state across the pauses, so the interleaving
changes no bit (``tests/parity/test_parity_localise.py`` checks that a healthy recipe compares
equal in every phase). Steps are compared as soon as both sides captured them, tensors bit for
bit (sha256 first, then integer views; floats by ``float.hex``), and the first differing step
stops both trainers there: ``max_steps`` is never changed (the LR horizon depends on it), the
loop is left from the callback. The cost is therefore that of ``k`` steps of each side plus the
capture (``benchmarks/bench_localise.py`` measures it against ``k`` plain steps).

The result's first line is greppable::

    first divergence: step <k>, <phase>, <artifact path> -> component <name>

followed by evidence lines (what was equal before it, the first differing element, what else
differs in that step). Multi-rank recipes are not replayed (one process holds one world).
"""

from __future__ import annotations

import gc
import math
import queue
import random
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from parity import canonical
from parity.compare import VALUES, Difference, compare, format_path
from parity.ulp import FLOAT_WIDTH, float_values, is_float_dtype, ulp_distance_bits

__all__ = [
    "COMPONENTS",
    "PHASES",
    "Localisation",
    "StepCapture",
    "localise_recipe",
    "compare_steps",
]

PHASES = (
    "batch",
    "lr",
    "loss",
    "grads_before_clip",
    "grad_norm",
    "grads_after_clip",
    "weights",
    "optimizer_state",
    "scheduler_state",
    "rng",
)

# Phase -> (component that owns it, what in it to look at).
COMPONENTS: dict[str, tuple[str, str]] = {
    "batch": ("dataloader", "the micro-batches it yields"),
    "lr": ("lr_scheduler", "the lr factor of this step"),
    "loss": ("loss", "the loss value or its loss-token count"),
    "grads_before_clip": ("loss/train_step", "accumulation scaling, token weighting"),
    "grad_norm": ("train_step/clipping", "the clipping norm"),
    "grads_after_clip": ("train_step/clipping", "the clip coefficient"),
    "weights": ("optimizer", "the parameter update"),
    "optimizer_state": ("optimizer", "moments, step count or group hyperparameters"),
    "scheduler_state": ("lr_scheduler", "its state holds the lr of the next step"),
    "rng": ("trainer_seeding", "what draws from the global generators"),
}

Status = Literal["diverged", "equal", "skipped", "error"]

# The heat map of the first diverging tensor is at most this many cells a side (block maxima).
HEATMAP_MAX = 96
_WAIT_SECONDS = 900.0  # one side's step; far above any recipe's


# ----------------------------------------------------------------------------- results
@dataclass
class StepCapture:
    """One side's artifacts of one optimizer step, as canonical trees per phase."""

    step: int
    phases: dict[str, Any]
    loss: float
    grad_norm: float
    lrs: list[float]  # the lr of each group during the step
    lr_after: float  # the scheduler's last lr after the step (what the e2e ``lr_curve`` records)
    seconds: float = 0.0  # this side's wall time for the step, capture included
    capture_seconds: float = 0.0  # of which spent capturing


@dataclass
class Localisation:
    """What ``localise_recipe`` found; ``to_dict()`` is what a JSON report stores."""

    recipe: str
    status: Status
    message: str = ""
    step: int | None = None
    phase: str | None = None
    artifact: str | None = None
    component: str | None = None
    evidence: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    steps_compared: int = 0
    max_steps: dict[str, int] = field(default_factory=dict)
    curves: dict[str, Any] = field(default_factory=dict)
    tensor: dict[str, Any] | None = None  # the first diverging tensor's ULP map (see ``_heatmap``)
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def line(self) -> str:
        """The one greppable line."""
        if self.status == "diverged":
            return f"first divergence: step {self.step}, {self.phase}, {self.artifact} -> component {self.component}"
        if self.status == "equal":
            return f"first divergence: none in steps 1..{self.steps_compared} (every phase equal bit for bit)"
        return f"first divergence: not localised ({self.status}): {self.message}"

    def text_lines(self) -> list[str]:
        return [self.line, *(f"  {line}" for line in self.evidence)]

    def to_text(self) -> str:
        return "\n".join(self.text_lines())

    def to_dict(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "status": self.status,
            "message": self.message,
            "line": self.line,
            "step": self.step,
            "phase": self.phase,
            "artifact": self.artifact,
            "component": self.component,
            "evidence": list(self.evidence),
            "differences": [d.to_dict() for d in self.differences[:50]],
            "differences_total": len(self.differences),
            "steps_compared": self.steps_compared,
            "max_steps": dict(self.max_steps),
            "curves": self.curves,
            "tensor": self.tensor,
            "timing": {k: round(v, 6) for k, v in self.timing.items()},
        }


# ----------------------------------------------------------------------------- comparing
def _under(prefix: str, differences: list[Difference]) -> list[Difference]:
    """Differences computed under the placeholder root ``_``, re-rooted at ``prefix``."""
    for d in differences:
        d.path = prefix + d.path[1:]
    return differences


def _key_path(phase: str, key: str) -> str:
    return format_path((phase, key))


def compare_phase(phase: str, expected: Any, actual: Any) -> list[Difference]:
    """Differences of one phase; a mapping of named entries (parameters) is walked in its own
    order (the model's), so the first difference is the first parameter, not the first name."""
    if isinstance(expected, dict) and isinstance(actual, dict) and phase in _NAMED_PHASES:
        out: list[Difference] = []
        for key in [k for k in expected if k not in actual]:
            out.append(
                Difference(0, "missing", _key_path(phase, key), "missing key (legacy has it, new not)")
            )
        for key in [k for k in actual if k not in expected]:
            out.append(Difference(0, "extra", _key_path(phase, key), "extra key (new has it, legacy not)"))
        for key in expected:
            if key in actual:
                out += _under(_key_path(phase, key), compare(expected[key], actual[key], root="_"))
        return sorted(out, key=lambda d: d.phase)
    return compare(expected, actual, root=phase)


_NAMED_PHASES = {"grads_before_clip", "grads_after_clip", "weights"}


def compare_steps(legacy: StepCapture, new: StepCapture) -> dict[str, list[Difference]]:
    """Per phase (pipeline order), the differences of one step; phases that agree map to ``[]``.

    Phases up to the first differing one are compared element by element; the ones after it
    (downstream of the divergence) only by hash and value, one ``Difference`` per differing
    leaf: they are evidence, and scanning every tensor of a diverged step would cost more than
    the step."""
    out: dict[str, list[Difference]] = {}
    diverged = False
    for phase in PHASES:
        expected, actual = legacy.phases.get(phase), new.phases.get(phase)
        if diverged:
            out[phase] = []
            _quick(expected, actual, (phase,), out[phase])
        else:
            out[phase] = compare_phase(phase, expected, actual)
            diverged = bool(out[phase])
    return out


def _quick(e: Any, a: Any, parts: tuple[str | int, ...], out: list[Difference]) -> None:
    """Differing leaves by sha256 (tensors) or exact value (the rest), in ``e``'s order."""
    if isinstance(e, dict) and isinstance(a, dict):
        for key in e:
            if key in a:
                _quick(e[key], a[key], (*parts, key), out)
            else:
                out.append(Difference(0, "missing", format_path((*parts, key)), "missing key"))
        out.extend(Difference(0, "extra", format_path((*parts, k)), "extra key") for k in a if k not in e)
    elif isinstance(e, list) and isinstance(a, list) and len(e) == len(a):
        for i, (x, y) in enumerate(zip(e, a, strict=True)):
            _quick(x, y, (*parts, i), out)
    elif isinstance(e, canonical.TensorLeaf) and isinstance(a, canonical.TensorLeaf):
        if (e.dtype, tuple(e.shape)) != (a.dtype, tuple(a.shape)):
            out += _under(format_path(parts), compare(e, a, root="_"))
        elif e.sha256 != a.sha256:
            message = f"sha256 differs ({e.sha256[:12]}... vs {a.sha256[:12]}...)"
            out.append(Difference(VALUES, "bits", format_path(parts), message, count=0, hash_only=True))
    else:
        out += _under(format_path(parts), compare(e, a, root="_"))


# ----------------------------------------------------------------------------- capture
def _snapshot(tensor: Any) -> Any:
    """A detached CPU copy of this rank's data (a DTensor's local shard) that nothing else writes."""
    local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
    local = local.detach()
    cpu = local.to("cpu")
    if cpu.data_ptr() == local.data_ptr():
        cpu = cpu.clone()
    return cpu.contiguous()


def _leaf(tensor: Any) -> canonical.TensorLeaf:
    return canonical.tensor_leaf(_snapshot(tensor))


def _float(value: float, dtype: str) -> canonical.FloatLeaf:
    try:
        return canonical.float_leaf(float(value), dtype)
    except ValueError:
        return canonical.float_leaf(float(value))


def _plain(obj: Any, path: str) -> Any:
    """``canonical.canonicalise`` with tensors copied first and unknown leaves kept by ``repr``."""
    import torch

    if isinstance(obj, torch.Tensor):
        return _leaf(obj)
    if isinstance(obj, Mapping):
        return {str(k): _plain(v, f"{path}.{k}") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if obj is None or isinstance(obj, (bool, int, float, str, np.integer, np.floating)):
        return canonical.canonicalise(obj, path)
    return f"<{type(obj).__qualname__}>"


def _rng_state() -> dict[str, Any]:
    """The generators a training step may draw from: the framework's host and device ones."""
    import torch

    out: dict[str, Any] = {"host": canonical.tensor_leaf(torch.get_rng_state())}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda"] = [canonical.tensor_leaf(s) for s in torch.cuda.get_rng_state_all()]
    return out


def _save_global_rng() -> tuple[Any, ...]:
    """Every global generator a side may touch (python and numpy too): kept across a pause."""
    import torch

    cuda = None
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        cuda = torch.cuda.get_rng_state_all()
    return torch.get_rng_state(), cuda, random.getstate(), np.random.get_state()


def _restore_global_rng(saved: tuple[Any, ...]) -> None:
    import torch

    host, cuda, py, npy = saved
    torch.set_rng_state(host)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
    random.setstate(py)
    np.random.set_state(npy)


class _Stop(BaseException):  # not an error: unwinds a paused side (no except Exception catches it)
    """Raised inside a paused side's callback to leave its training loop there."""


class _Worker:
    """A long-lived daemon thread that runs one side at a time.

    Reused across localisations: a fresh thread refills the framework's per-thread caches in its
    first step (DTensor's sharding propagation, measured: about 0.15 s of CPU per thread on the
    debug model), which would more than double the cost of localising a divergence in step 1.
    """

    def __init__(self, name: str) -> None:
        self.jobs: queue.Queue[Callable[[], None]] = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name=f"parity-localise-{name}", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            self.jobs.get()()


_WORKERS: dict[str, _Worker] = {}
_WORKERS_LOCK = threading.Lock()


def _worker(name: str) -> _Worker:
    with _WORKERS_LOCK:
        worker = _WORKERS.get(name)
        if worker is None or not worker.thread.is_alive():
            worker = _WORKERS[name] = _Worker(name)
        return worker


class _Side:
    """One trainer running on a worker thread, pausing after each captured step.

    Messages to the coordinator: ``("step", StepCapture, None)``, ``("done", steps, max_steps)``
    (its training loop ended), ``("error", text, traceback)``.
    """

    def __init__(self, name: str, run: Callable[[_Side], None], seed: int) -> None:
        self.name, self._run, self.seed = name, run, seed
        self._to_side: queue.Queue[str] = queue.Queue()
        self._to_main: queue.Queue[tuple] = queue.Queue()
        self._finished = threading.Event()
        self._started = False
        self.build_seconds = 0.0
        self.max_steps = 0  # set by the side once its trainer is built

    # on the side's thread
    def _main(self) -> None:
        from parity.env import get_platform, seed_all

        try:
            seed_all(self.seed, get_platform())
            self._run(self)
            self._to_main.put(("done", None, None))
        except _Stop:
            pass
        except BaseException as exc:  # reported to the coordinator
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-8))
            self._to_main.put(("error", f"{type(exc).__name__}: {exc}", text))
        finally:
            self._finished.set()

    def pause(self, message: tuple) -> None:
        """Hand ``message`` to the coordinator and wait; the global RNG is this side's again after."""
        saved = _save_global_rng()
        self._to_main.put(message)
        command = self._to_side.get()
        if command == "stop":
            raise _Stop
        _restore_global_rng(saved)

    # on the coordinator's thread
    def start(self) -> tuple:
        self._started = True
        _worker(self.name).jobs.put(self._main)
        return self.receive()

    def receive(self) -> tuple:
        try:
            return self._to_main.get(timeout=_WAIT_SECONDS)
        except queue.Empty:
            return ("error", f"the {self.name} side sent nothing for {_WAIT_SECONDS:.0f} s", "")

    def resume(self) -> tuple:
        self._to_side.put("go")
        return self.receive()

    def stop(self) -> None:
        if self._started and not self._finished.is_set():
            self._to_side.put("stop")
            if not self._finished.wait(timeout=60):
                with _WORKERS_LOCK:  # still busy (a hung step): the next localisation gets a fresh thread
                    _WORKERS.pop(self.name, None)


class _Recorder:
    """The capture callback (one per side) plus the wrappers of ``train_step`` and
    ``forward_backward_step``. Hooks not defined here are no-ops."""

    def __init__(self, side: _Side, trainer: Any, model: Any, optimizer: Any, scheduler: Any) -> None:
        self.side, self.trainer = side, trainer
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.names = {id(p): n for n, p in model.named_parameters()}
        self._reset()

    def __getattr__(self, name: str):
        if name.startswith("on_"):
            return lambda state, **kwargs: None
        raise AttributeError(name)

    def _reset(self) -> None:
        self.phases: dict[str, Any] = {}
        self.micro_batches = 0
        self.substeps = 0
        self.raw_losses: list[Any] = []
        self.tokens: list[int] = []
        self.global_tokens: int | None = None
        self.capture_seconds = 0.0
        self.step_start = time.perf_counter()

    # --- wrappers installed on the trainer instance
    def install(self) -> None:
        trainer = self.trainer
        step_fn, fb_fn = trainer.train_step, trainer.forward_backward_step
        recorder = self

        def train_step(it):
            return step_fn(_BatchTap(it, recorder))

        def forward_backward_step(micro_batch, mb_tokens, global_tokens, num_micro=1):
            raw, tok = fb_fn(micro_batch, mb_tokens, global_tokens, num_micro=num_micro)
            recorder.raw_losses.append(raw.detach())
            recorder.tokens.append(int(mb_tokens))
            recorder.global_tokens = int(global_tokens)
            return raw, tok

        trainer.train_step = train_step
        trainer.forward_backward_step = forward_backward_step

    def begin_step(self, group: Sequence[Mapping[str, Any]]) -> None:
        self._reset()
        start = time.perf_counter()
        self.micro_batches = len(group)
        self.phases["batch"] = [
            {k: _leaf(v) if hasattr(v, "dtype") else _plain(v, k) for k, v in mb.items()} for mb in group
        ]
        self.capture_seconds += time.perf_counter() - start

    def _grads(self) -> dict[str, Any]:
        return {
            self.names.get(id(p), f"<unnamed {i}>"): None if p.grad is None else _leaf(p.grad)
            for i, p in enumerate(self.model.parameters())
        }

    # --- callback hooks
    def on_substep_end(self, state: Any, **kwargs: Any) -> None:
        self.substeps += 1
        if self.substeps == self.micro_batches:
            start = time.perf_counter()
            self.phases["grads_before_clip"] = self._grads()
            self.capture_seconds += time.perf_counter() - start

    def on_pre_optimizer_step(self, state: Any, *, grad_norm: float | None = None, **kwargs: Any) -> None:
        start = time.perf_counter()
        self.phases["lr"] = [canonical.float_leaf(float(g["lr"])) for g in self.optimizer.param_groups]
        norm = float("nan") if grad_norm is None else float(grad_norm)
        self.phases["grad_norm"] = _float(norm, "float32")
        self.grad_norm = norm
        self.phases["grads_after_clip"] = self._grads()
        self.capture_seconds += time.perf_counter() - start

    def on_step_end(self, state: Any, *, loss: float | None = None, **kwargs: Any) -> None:
        start = time.perf_counter()
        reported = float("nan") if loss is None else float(loss)
        raw = [_float(float(r.item()), _dtype_name(r)) for r in self.raw_losses]
        self.phases["loss"] = {
            "micro_batch_losses": raw,
            "micro_batch_tokens": list(self.tokens),
            "global_tokens": self.global_tokens,
            "reported": _float(reported, "float64"),
        }
        self.phases["weights"] = {n: _leaf(p) for n, p in self.model.named_parameters()}
        self.phases["optimizer_state"] = self._optimizer_state()
        self.phases["scheduler_state"] = _plain(self.scheduler.state_dict(), "scheduler_state")
        self.phases["rng"] = _rng_state()
        self.capture_seconds += time.perf_counter() - start
        capture = StepCapture(
            step=int(state.global_step),
            phases=self.phases,
            loss=reported,
            grad_norm=self.grad_norm,
            lrs=[float(v.value) for v in self.phases["lr"]],
            lr_after=float(self.scheduler.get_last_lr()[0]),
            seconds=time.perf_counter() - self.step_start,
            capture_seconds=self.capture_seconds,
        )
        self.side.pause(("step", capture, None))

    def on_train_end(self, state: Any, **kwargs: Any) -> None:
        # Before the trainer takes its process group down: the other side may still use it.
        self.side.pause(("done", int(state.global_step), int(state.max_steps)))

    def _optimizer_state(self) -> dict[str, Any]:
        """The AdamW state by parameter FQN, and each group's hyperparameters except the lr (the
        scheduler writes it: it belongs to the lr and scheduler phases)."""
        sd = self.optimizer.state_dict()
        order = [
            self.names.get(id(p), f"<unnamed {i}>")
            for g in self.optimizer.param_groups
            for i, p in enumerate(g["params"])
        ]
        state = {}
        for index, value in sd["state"].items():
            name = order[index] if isinstance(index, int) and index < len(order) else str(index)
            state[name] = _plain(value, f"optimizer_state.state.{name}")
        groups = []
        for g in sd["param_groups"]:
            hyper = {k: v for k, v in g.items() if k not in ("params", "lr", "initial_lr")}
            hyper["params"] = [
                order[i] if isinstance(i, int) and i < len(order) else str(i) for i in g["params"]
            ]
            groups.append(_plain(hyper, "optimizer_state.param_groups"))
        return {"param_groups": groups, "state": state}


def _dtype_name(tensor: Any) -> str:
    name = str(tensor.dtype).removeprefix("torch.")
    return name if name in FLOAT_WIDTH else "float64"


class _BatchTap:
    """The step's micro-batch iterator; hands each group to the recorder before the trainer sees it."""

    def __init__(self, it: Any, recorder: _Recorder) -> None:
        self._it, self._recorder = it, recorder

    def __iter__(self) -> _BatchTap:
        return self

    def __next__(self) -> Any:
        group = next(self._it)
        self._recorder.begin_step(group)
        return group


# ----------------------------------------------------------------------------- the two sides
def _legacy_side(overrides: Sequence[str], workdir: str) -> Callable[[_Side], None]:
    def run(side: _Side) -> None:
        from hyper_parallel.trainer import LLMTrainer
        from parity.legacy_driver import legacy_args

        start = time.perf_counter()
        args = legacy_args(f"--train.checkpoint.output_dir={workdir}/legacy", *overrides)
        trainer = LLMTrainer(args)
        base = trainer.base
        recorder = _Recorder(side, base, base.model, base.optimizer, base.lr_scheduler)
        recorder.install()
        trainer.add_callback(recorder)
        side.build_seconds = time.perf_counter() - start
        side.max_steps = int(base.state.max_steps)
        trainer.train()

    return run


def _new_side(overrides: Sequence[str], workdir: str) -> Callable[[_Side], None]:
    def run(side: _Side) -> None:
        from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config
        from parity.legacy_driver import legacy_args

        start = time.perf_counter()
        args = legacy_args(f"--train.checkpoint.output_dir={workdir}/new", *overrides)
        trainer = legacy_to_trainer_config(args).build()
        recorder = _Recorder(side, trainer, trainer.model, trainer.optimizer, trainer.lr_scheduler)
        recorder.install()
        trainer.add_callback(recorder)
        side.build_seconds = time.perf_counter() - start
        side.max_steps = int(trainer.state.max_steps)
        trainer.train()

    return run


# ----------------------------------------------------------------------------- public entry
def localise_recipe(recipe: str, *, seed: int = 42) -> Localisation:
    """Replay ``recipe`` on both trainers in lockstep and name the first divergence (see module doc)."""
    from parity.e2e import RECIPES

    spec = RECIPES.get(recipe)
    if spec is None:
        return Localisation(recipe, "error", message=f"unknown recipe {recipe!r}; known: {sorted(RECIPES)}")
    if spec.nproc > 1:
        return Localisation(
            recipe,
            "skipped",
            message=f"recipe {recipe!r} runs {spec.nproc} ranks; localisation replays single-process "
            "recipes only (one process holds one world)",
        )
    tmp = tempfile.mkdtemp(prefix=f"parity-localise-{recipe}-")
    try:
        # The profiler records nothing numeric, and kineto refuses to start off the main thread
        # (each side replays on a worker thread): the replay runs without it.
        overrides = (*spec.overrides(Path(tmp)), "--train.profile.enabled=false")
        return replay(recipe, _legacy_side(overrides, tmp), _new_side(overrides, tmp), seed=seed)
    finally:
        remove_tree(tmp)


_LOCALISED: dict[str, tuple[int, dict[str, Any]]] = {}


def localise_pair(*, recipe: str, artifact: str) -> dict[str, Any]:
    """The localiser of the e2e pairs (``parity.e2e.LOCALISER``): where the
    recipe's two trainers first diverge.

    One replay per recipe (the eight artifact cases of a failing recipe share it) until the run
    cache is cleared. ``curves`` are those of the case's own runs (every step) when they are
    cached, else the replay's (up to the divergent step). ``artifact`` names the failing case only.
    """
    from parity.e2e import SEED, cached_curves, recipe_run

    cached = _LOCALISED.get(recipe)
    if cached is None or cached[0] != recipe_run.generation:
        cached = (recipe_run.generation, localise_recipe(recipe, seed=SEED).to_dict())
        _LOCALISED[recipe] = cached
    data = {**cached[1], "case_artifact": artifact}
    curves = cached_curves(recipe)
    if curves is not None:
        data["curves"] = curves
    return data


def remove_tree(path: str, attempts: int = 50) -> None:
    """``shutil.rmtree``, retried while something still writes there: a side stopped right after a
    checkpoint save may leave the trainer's background commit finishing that folder."""
    for _ in range(attempts):
        try:
            shutil.rmtree(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    shutil.rmtree(path, ignore_errors=True)


def replay(
    name: str, legacy_run: Callable[[_Side], None], new_run: Callable[[_Side], None], *, seed: int
) -> Localisation:
    """Run two sides in lockstep (each ``run(side)`` builds its trainer, installs a ``_Recorder``
    and trains) and compare them step by step, stopping both at the first differing step."""
    from hyper_parallel.platform.quiet import progress_bars_off
    from parity.env import get_platform

    platform = get_platform()
    had_group = platform.is_distributed()
    gc_was_enabled = gc.isenabled()
    started = time.perf_counter()
    legacy, new = _Side("legacy", legacy_run, seed), _Side("new", new_run, seed)
    sides = (legacy, new)
    history: dict[str, list[StepCapture]] = {"legacy": [], "new": []}
    result: Localisation | None = None
    compare_seconds = 0.0
    try:
        with progress_bars_off():
            msg = {"legacy": legacy.start()}
            msg["new"] = new.start()
            while True:
                kinds = (msg["legacy"][0], msg["new"][0])
                if "error" in kinds:
                    side = "legacy" if kinds[0] == "error" else "new"
                    _, text, tb = msg[side]
                    result = Localisation(
                        name,
                        "error",
                        message=f"the {side} side raised after {len(history[side])} compared step(s): {text}",
                        evidence=[line for line in tb.rstrip().splitlines()[-6:]],
                    )
                    break
                if kinds == ("done", "done"):
                    result = Localisation(name, "equal")
                    break
                if "done" in kinds:
                    result = _ended_early(name, msg, history)
                    break
                pair = (msg["legacy"][1], msg["new"][1])
                history["legacy"].append(pair[0])
                history["new"].append(pair[1])
                start = time.perf_counter()
                diffs = compare_steps(*pair)
                compare_seconds += time.perf_counter() - start
                if any(diffs.values()):
                    result = _diverged(name, pair, diffs, history)
                    break
                msg = {"legacy": legacy.resume()}
                msg["new"] = new.resume()
    finally:
        teardown = time.perf_counter()
        for each in sides:
            each.stop()
        if not had_group and platform.is_distributed():
            platform.destroy_process_group()  # the paused sides never reached their own
        if gc_was_enabled and not gc.isenabled():
            gc.enable()  # the legacy GC callback turns it back on at train end, which never came
    assert result is not None
    result.steps_compared = len(history["new"])
    result.max_steps = {s.name: s.max_steps for s in sides}
    result.curves = {
        "source": f"localiser capture, steps 1..{result.steps_compared}",
        **{side: _curves(history[side]) for side in ("legacy", "new")},
    }
    total = time.perf_counter() - started
    result.timing = {
        "total_seconds": total,
        "compare_seconds": compare_seconds,
        "teardown_seconds": time.perf_counter() - teardown,
        **{f"{s.name}_build_seconds": s.build_seconds for s in sides},
        **{f"{side}_step_seconds": sum(c.seconds for c in history[side]) for side in history},
        **{f"{side}_capture_seconds": sum(c.capture_seconds for c in history[side]) for side in history},
    }
    if result.status != "error":
        result.evidence.append(
            f"replayed {result.steps_compared} of {max(result.max_steps.values(), default=0)} steps in lockstep "
            f"in {total:.2f} s (capture {sum(result.timing[f'{s}_capture_seconds'] for s in history):.2f} s)"
        )
    return result


def _curves(captures: list[StepCapture]) -> dict[str, list]:
    return {
        "step": [c.step for c in captures],
        "loss": [_finite(c.loss) for c in captures],
        "grad_norm": [_finite(c.grad_norm) for c in captures],
        "lr": [_finite(c.lr_after) for c in captures],
    }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _ended_early(name: str, msg: dict[str, tuple], history: dict[str, list[StepCapture]]) -> Localisation:
    ended = "legacy" if msg["legacy"][0] == "done" else "new"
    other = "new" if ended == "legacy" else "legacy"
    _, steps, max_steps = msg[ended]
    step = len(history[ended]) + 1
    other_max = msg[other][1].step if msg[other][0] == "step" else None
    result = Localisation(
        name,
        "diverged",
        step=step,
        phase="batch",
        artifact=f"batch (the {ended} side ended training after {steps} steps, the {other} side ran step {other_max})",
        component="dataloader",
    )
    result.evidence = [
        f"{ended} side: training loop ended at step {steps} of max_steps={max_steps}",
        f"equal before it: steps 1..{step - 1} in every phase ({', '.join(PHASES)})",
    ]
    return result


def _diverged(
    name: str,
    pair: tuple[StepCapture, StepCapture],
    diffs: dict[str, list[Difference]],
    history: dict[str, list[StepCapture]],
) -> Localisation:
    step = pair[0].step
    differing = [p for p in PHASES if diffs[p]]
    phase = differing[0]
    first = diffs[phase][0]
    component, hint = COMPONENTS[phase]
    result = Localisation(
        name,
        "diverged",
        step=step,
        phase=phase,
        artifact=first.path,
        component=component,
        differences=[d for p in differing for d in diffs[p]],
    )
    earlier = PHASES[: PHASES.index(phase)]
    evidence = []
    if step > 1:
        evidence.append(f"equal before it: steps 1..{step - 1} in every phase ({', '.join(PHASES)})")
    else:
        evidence.append("equal before it: no earlier step (this is step 1)")
    evidence.append(
        f"equal before it in step {step}: {', '.join(earlier)}"
        if earlier
        else f"equal before it in step {step}: nothing ({phase} is the first phase)"
    )
    evidence.append(f"first difference: {first.path}{_where(first, pair, phase)}: {first.message}")
    if first.expected is not None or first.actual is not None:
        evidence.append(f"  legacy: {first.expected}")
        evidence.append(f"  new:    {first.actual}")
    tensor_note = _tensor_note(first, pair, phase)
    if tensor_note:
        evidence.append(tensor_note)
    n_phase = len(diffs[phase])
    if n_phase > 1:
        evidence.append(
            f"{n_phase} difference(s) in {phase} at step {step}; the next: "
            + ", ".join(d.path for d in diffs[phase][1:4])
        )
    later = [f"{p} ({len(diffs[p])})" for p in differing[1:]]
    evidence.append(
        f"also different in step {step} (downstream): {', '.join(later)}"
        if later
        else f"nothing else differs in step {step}"
    )
    evidence.append(f"owner of {phase}: {component} ({hint})")
    result.evidence = evidence
    result.tensor = _first_tensor_heatmap(pair, diffs, differing)
    return result


def _leaf_at(capture: StepCapture, phase: str, path: str) -> Any:
    """The canonical leaf at ``path`` (a ``Difference`` path) of one phase, or None."""
    node = capture.phases.get(phase)
    rest = path[len(phase) :]
    for token in _path_tokens(rest):
        if isinstance(node, dict) and isinstance(token, str) and token in node:
            node = node[token]
        elif isinstance(node, list) and isinstance(token, int) and 0 <= token < len(node):
            node = node[token]
        else:
            return None
    return node


def _path_tokens(rest: str) -> list[str | int]:
    """``[0].input_ids`` / ``["a.b"].exp_avg`` -> ``[0, "input_ids"]`` / ``["a.b", "exp_avg"]``."""
    out: list[str | int] = []
    i = 0
    while i < len(rest):
        c = rest[i]
        if c == ".":
            j = i + 1
            while j < len(rest) and rest[j] not in ".[":
                j += 1
            out.append(rest[i + 1 : j])
            i = j
        elif c == "[":
            if rest[i + 1] == '"':
                j = rest.index('"]', i + 2)
                out.append(rest[i + 2 : j])
                i = j + 2
            else:
                j = rest.index("]", i)
                token = rest[i + 1 : j]
                out.append(int(token) if token.lstrip("-").isdigit() else token)
                i = j + 1
        else:
            return out
    return out


def _where(first: Difference, pair: tuple[StepCapture, StepCapture], phase: str) -> str:
    """`` @ (i, j)``: the first differing element's multi-dimensional index, when a tensor."""
    if first.index is None or first.kind != "bits":
        return ""
    leaf = _leaf_at(pair[0], phase, first.path)
    if not isinstance(leaf, canonical.TensorLeaf) or not leaf.shape:
        return f" @ {first.index}"
    return f" @ {tuple(int(i) for i in np.unravel_index(first.index, leaf.shape))}"


def _tensor_note(first: Difference, pair: tuple[StepCapture, StepCapture], phase: str) -> str | None:
    legacy, new = (_leaf_at(c, phase, first.path) for c in pair)
    if not isinstance(legacy, canonical.TensorLeaf) or not isinstance(new, canonical.TensorLeaf):
        return None
    return (
        f"  sha256 legacy {legacy.sha256[:16]}, new {new.sha256[:16]}; "
        f"norm legacy {_norm(legacy)!r}, new {_norm(new)!r}"
    )


def _norm(leaf: canonical.TensorLeaf) -> float | None:
    bits = leaf.int_bits()
    if bits is None:
        return None
    if is_float_dtype(leaf.dtype):
        values = float_values(bits.reshape(-1), leaf.dtype)
    else:
        values = bits.reshape(-1).astype(np.float64)
    return float(np.sqrt(np.sum(values * values)))


def _first_tensor_heatmap(
    pair: tuple[StepCapture, StepCapture], diffs: dict[str, list[Difference]], differing: list[str]
) -> dict[str, Any] | None:
    """Where the first differing tensor of the step differs: a grid of per-element distances
    (ULP for floats, |difference| for integers), block maxima when larger than ``HEATMAP_MAX``."""
    for phase in differing:
        for d in diffs[phase]:
            if d.kind != "bits" or d.phase != VALUES:
                continue
            legacy, new = (_leaf_at(c, phase, d.path) for c in pair)
            if not isinstance(legacy, canonical.TensorLeaf) or not isinstance(new, canonical.TensorLeaf):
                continue
            eb, ab = legacy.int_bits(), new.int_bits()
            if eb is None or ab is None:
                continue
            return _heatmap(pair[0].step, phase, d.path, legacy, eb, ab)
    return None


def _heatmap(
    step: int, phase: str, path: str, leaf: canonical.TensorLeaf, eb: np.ndarray, ab: np.ndarray
) -> dict[str, Any]:
    shape = tuple(leaf.shape)
    if is_float_dtype(leaf.dtype):
        metric = "ULP distance"
        dist = ulp_distance_bits(eb.reshape(-1), ab.reshape(-1), leaf.dtype).astype(np.float64)
    else:
        metric = "|difference|"
        dist = np.abs(eb.reshape(-1).astype(np.float64) - ab.reshape(-1).astype(np.float64))
    wrapped = None
    if len(shape) >= 2:
        rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
    else:
        n = int(dist.size)
        cols = min(max(n, 1), HEATMAP_MAX)
        rows = max(1, math.ceil(n / cols))
        wrapped = cols
    flat = np.zeros(rows * cols, dtype=np.float64)
    flat[: dist.size] = dist
    grid = flat.reshape(rows, cols)
    br, bc = math.ceil(rows / HEATMAP_MAX), math.ceil(cols / HEATMAP_MAX)
    if br > 1 or bc > 1:
        pr, pc = math.ceil(rows / br) * br, math.ceil(cols / bc) * bc
        padded = np.zeros((pr, pc), dtype=np.float64)
        padded[:rows, :cols] = grid
        grid = padded.reshape(pr // br, br, pc // bc, bc).max(axis=(1, 3))
    return {
        "step": step,
        "phase": phase,
        "path": path,
        "dtype": leaf.dtype,
        "shape": list(shape),
        "metric": metric,
        "rows": rows,
        "cols": cols,
        "wrapped_width": wrapped,
        "block": [br, bc],
        "grid": [
            [int(v) if v < 2**53 else float(v) for v in row] for row in grid.astype(np.float64).tolist()
        ],
        "differing": int(np.count_nonzero(dist)),
        "numel": int(dist.size),
        "max": float(dist.max()) if dist.size else 0.0,
        "sha256_legacy": leaf.sha256,
    }
