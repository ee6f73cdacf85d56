"""The end-to-end driver: both trainers on one recipe, every artifact each run leaves.

``run_legacy`` trains ``LLMTrainer(args)`` on ``examples/debug/train.yaml`` plus overrides;
``run_new`` trains ``HyperTrainer`` built from the same YAML through ``legacy_to_trainer_config``
(or another route to its Config). Each run trains in its own folder and returns every artifact a
user can see, read one by one (``RUN_ARTIFACTS``): param groups, LR curve, losses, grad norms, the
micro-batches of each step, metric records, the final checkpoint of every rank, the HF export, the
files on disk, the user-callback events and what ``train()`` returned. An artifact that cannot be
read becomes an ``ArtifactError`` of that artifact alone.

``RECIPES`` are the settings the end-to-end suites run; a multi-rank recipe forks its ranks
(``parity.ranks``) and each rank dumps its artifacts (``parity.e2e_worker``). ``recipe_run`` keeps
one run per recipe and side per process, so every case of a recipe reads the same run.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from parity import assets, canonical, run_log
from parity.callback_events import EventRecorder
from parity.legacy_driver import REPO_ROOT, legacy_args
from parity.ranks import fork_ranks

if TYPE_CHECKING:
    from hyper_parallel.trainer.base import BaseTrainer

_DETERMINISTIC_METRICS = ("step", "loss", "grad_norm", "lr", "aux_loss")
# Grad norms are read with .item() from a float32 tensor: their ULPs count in float32 (the
# logged loss is a float64 token mean of per-micro-batch sums).
_FLOAT32_METRICS = {"grad_norm": "float32"}

ARTIFACTS = (
    "param_groups",
    "lr_curve",
    "losses",
    "grad_norms",
    "batches",
    "metrics",
    "checkpoint",
    "hf_export",
    "layout",
)
CURVES = ("losses", "grad_norms", "lr_curve")
# Every run also records the user-callback event sequence (``parity.callback_events``) and what
# ``train()`` returned: the explore cases compare them with the artifacts above; the recipe grid has
# no case for them.
RUN_ARTIFACTS = (*ARTIFACTS, "events", "returned")
# And the run's log lines (``parity.run_log``): legacy and new log different lines by design, so a
# golden per recipe holds both sides' (``trainer_log``); explore does not compare them pairwise.
DUMPED = (*RUN_ARTIFACTS, "log")


# ----------------------------------------------------------------------------- recipes
@dataclass(frozen=True)
class Recipe:
    """One training setting both trainers run: YAML overrides (some built from a scratch folder)."""

    name: str
    why: str
    overrides: Callable[[Path], tuple[str, ...]]
    nproc: int = 1


def _tokenizer() -> str:
    return f"--model.tokenizer_path={assets.tokenizer_dir()}"


def _dummy(_: Path) -> tuple[str, ...]:
    return ("--train.max_steps=20", "--train.checkpoint.save_steps=10")


def _hf_text(_: Path) -> tuple[str, ...]:
    # 48 rows (one empty, dropped) at 64 tokens: about half the rows pad, so micro-batches carry
    # different token counts; 47 // 8 = 5 steps, far below max_steps=50, so the dataset shrinks the
    # horizon that the warmup ratio and the cosine decay are computed from. No checkpoints: neither
    # side may write one (compared by the layout).
    return (
        "--data.type=hf_datasets",
        f"--data.train_path={assets.text_jsonl()}",
        _tokenizer(),
        "--data.train_size=48",
        "--data.max_seq_len=64",
        "--train.max_steps=50",
        "--train.seed=7",
        "--train.optimizer.lr_warmup_ratio=0.4",
        "--train.checkpoint.save_steps=0",
    )


def initial_weights(folder: Path, seed: int = 17) -> Path:
    """An HF folder (``model.safetensors``, ``config.json`` and the tokenizer files) of the debug
    model initialised after ``manual_seed(seed)``: both trainers start from it and take their
    tokenizer from it (``model.weights_path`` with no ``tokenizer_path``)."""
    import shutil

    from safetensors.torch import save_file

    from hyper_parallel.models.qwen3_5.state_dict import Qwen3_5StateDictAdapter
    from parity.legacy_driver import debug_model

    folder.mkdir(parents=True, exist_ok=True)
    model = debug_model(seed)
    adapter = Qwen3_5StateDictAdapter()
    tensors = adapter.save_hf_state_dict(model.state_dict(), model.config)
    save_file(
        {k: v.detach().clone().contiguous() for k, v in tensors.items()}, str(folder / "model.safetensors")
    )
    (folder / "config.json").write_text(
        json.dumps(adapter.export_hf_config(model.config, "float32"), indent=1)
    )
    for item in assets.tokenizer_dir().iterdir():
        shutil.copy(item, folder / item.name)
    return folder


def _alpaca(scratch: Path) -> tuple[str, ...]:
    # Masked alpaca SFT (template "empty": prompt labels are -100), one row per micro-batch (grad
    # accumulation 8), rank_average aggregation, constant LR after warmup, no shuffling; the model
    # starts from saved initial weights, whose folder also provides the tokenizer.
    return (
        "--data.type=json_file",
        f"--data.train_path={assets.alpaca_json()}",
        f"--model.weights_path={initial_weights(scratch / 'weights')}",
        "--data.max_seq_len=48",
        "--data.shuffle=false",
        "--train.micro_batch_size=1",
        "--train.max_steps=4",
        "--train.seed=3",
        "--train.optimizer.loss_aggregation=rank_average",
        "--train.optimizer.lr_decay_style=constant",
        "--model.freeze_modules=[layers.1.mlp]",
        "--train.checkpoint.save_steps=4",
    )


def preset_batches(
    path: Path, *, steps: int = 5, rows: int = 8, seq_len: int = 24, vocab: int = 2048
) -> Path:
    """A preset_pt file whose rows mask prompts of different lengths (some none): the micro-batches of
    a step carry different numbers of loss tokens (so token weighting and accumulation scaling matter)."""
    import torch

    g = torch.Generator().manual_seed(11)
    entries = []
    for _ in range(steps):
        ids = torch.randint(0, vocab, (rows, seq_len), generator=g)
        labels = ids.clone()
        # A masked prefix of 0 to seq_len - 7 tokens: about a third of the rows are not masked at
        # all, so counting loss tokens on shifted labels changes some micro-batches' weights.
        masked = (torch.randint(0, seq_len, (rows,), generator=g) - 6).clamp(min=0)
        for row, k in enumerate(masked.tolist()):
            labels[row, :k] = -100
        entries.append({"input_ids": ids, "labels": labels})
    torch.save(entries, path)
    return path


def _preset(scratch: Path) -> tuple[str, ...]:
    # 5 steps of data but max_steps=7: preset_pt resets (not shrinks) the horizon, so the LR
    # schedule runs on 7 steps; a second epoch, in another shuffled order (the sampler is reseeded
    # per epoch), gives the last 2 steps. The profiler records step 3 (its trace files are counted).
    return (
        "--data.type=preset_pt",
        f"--data.train_path={preset_batches(scratch / 'preset.pt')}",
        "--data.shuffle=true",
        "--train.profile.enabled=true",
        "--train.profile.wait_steps=1",
        "--train.profile.warmup_steps=1",
        "--train.profile.active_steps=1",
        "--data.max_seq_len=24",
        "--train.max_steps=7",
        "--train.num_train_epochs=2",
        "--train.seed=5",
        "--train.checkpoint.save_steps=5",
    )


def _dp2_padded(_: Path) -> tuple[str, ...]:
    # Two data-parallel ranks on padded rows of the save_to_disk dataset (64 rows, one empty):
    # each rank counts its own tokens, the global count is all-reduced. FSDP2 mixed precision
    # (bf16 params) with a frozen MLP, which parallelize keeps in bf16 outside the FSDP groups.
    return (
        "--data.type=hf_datasets",
        f"--data.train_path={assets.text_disk_copy()}",  # datasets writes its cache next to it
        _tokenizer(),
        "--data.max_seq_len=64",
        "--train.max_steps=3",
        "--train.seed=9",
        "--train.checkpoint.save_steps=3",
        "--model.freeze_modules=[layers.0.mlp]",
        "--train.mixed_precision.enabled=true",
        "--train.accelerator.dp_shard=-1",
    )


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe("dummy", "the debug recipe: dummy data, 20 steps, checkpoints at 10 and 20", _dummy),
        Recipe("hf_text", "padded text rows, seed 7, dataset shrinks max_steps 50 -> 5", _hf_text),
        Recipe(
            "alpaca", "masked alpaca, grad accumulation 8, rank_average, constant LR after warmup", _alpaca
        ),
        Recipe(
            "preset",
            "preset_pt, uneven loss tokens, max_steps reset to 7, two shuffled epochs, profiler on",
            _preset,
        ),
        Recipe(
            "dp2_padded",
            "2 ranks, padded rows, per-rank token counts, bf16 FSDP, a frozen MLP",
            _dp2_padded,
            nproc=2,
        ),
    )
}


# ----------------------------------------------------------------------------- artifacts
class StepRecorder:
    """A user callback keeping each step's loss and grad norm."""

    def __init__(self) -> None:
        self.losses: list[float] = []
        self.grad_norms: list[float] = []

    def __getattr__(self, name: str):
        if name.startswith("on_"):
            return lambda state, **kwargs: None
        raise AttributeError(name)

    def on_step_end(self, state, *, loss=None, grad_norm=None) -> None:
        self.losses.append(float(loss))
        self.grad_norms.append(float(grad_norm))


def read_checkpoint(root: Path) -> dict[str, Any]:
    """Every artifact of the newest ``step_<N>/`` folder, as plain state.

    The folder's manifest is verified first; the DCP shards are read through the platform's
    restricted reader (no code runs from a checkpoint, not even in the harness).
    """
    from hyper_parallel.checkpointing import verify_manifest
    from hyper_parallel.platform import get_platform

    step_dir = max(root.glob("step_*"), key=lambda p: int(p.name.split("_")[1]))
    verify_manifest(str(step_dir))
    out: dict[str, Any] = {"dir": step_dir.name}
    out["model"] = get_platform().dcp_full_state_dict(str(step_dir))
    for name in ("optimizer_rank0", "scheduler", "rng_rank0", "dataloader_rank0"):
        out[name] = get_platform().load(step_dir / f"{name}.pt", weights_only=True)
    out["extra_state"] = json.loads((step_dir / "extra_state.json").read_text())
    return out


class ArtifactError(RuntimeError):
    """An artifact of a run that could not be read; raised by that artifact's case only."""


def _hf_export(root: Path) -> dict[str, Any] | None:
    """Tensors and config of the newest step's HF export."""
    from safetensors.torch import load_file

    steps = sorted(root.glob("step_*/hf_ckpt"), key=lambda p: int(p.parent.name.split("_")[1]))
    if not steps:
        return None  # a run without checkpoints (save_steps 0): compared as absent
    folder = steps[-1]
    return {
        "tensors": load_file(folder / "model.safetensors"),
        "config": json.loads((folder / "config.json").read_text()),
    }


# The time in a profiler trace's name (``<worker>.<time_ns>.pt.trace.json``, torch's
# ``tensorboard_trace_handler``; both trainers name the worker ``rank<r>``).
_TRACE_TIME = re.compile(r"\.\d+(\.pt\.trace\.json(?:\.gz)?)$")


def _layout(workdir: Path) -> dict[str, Any]:
    """What a run left on disk: every checkpoint file by path (all ``step_<N>/`` folders, their HF
    exports and manifests' file lists), and the profiler trace files: how many, and their paths
    with the time in each name masked (``rank_0/rank0.<time_ns>.pt.trace.json``)."""
    ckpt = workdir / "ckpt"
    files = sorted(str(p.relative_to(ckpt)) for p in ckpt.rglob("*") if p.is_file()) if ckpt.is_dir() else []
    manifests = {
        str(m.parent.relative_to(ckpt)): sorted(json.loads(m.read_text())["files"])
        for m in sorted(ckpt.glob("step_*/manifest.json"))
    }
    profile = workdir / "profile"
    traces = (
        [str(p.relative_to(profile)) for p in profile.rglob("*") if p.is_file()] if profile.is_dir() else []
    )
    return {
        "checkpoint_files": files,
        "manifests": manifests,
        "profiler_trace_files": len(traces),
        "profiler_trace_names": sorted(_TRACE_TIME.sub(r".<time_ns>\1", t) for t in traces),
    }


def _checkpoint(root: Path) -> dict[str, Any] | None:
    if not any(root.glob("step_*")):
        return None  # a run without checkpoints (save_steps 0): compared as absent
    out = read_checkpoint(root)
    step_dir = root / out["dir"]
    # The other ranks' optimizer, RNG and dataloader states of a multi-rank run (``read_checkpoint``
    # reads rank 0's): the folder is committed, so every rank's files are there.
    for kind in ("optimizer", "rng", "dataloader"):
        for path in sorted(
            step_dir.glob(f"{kind}_rank*.pt"), key=lambda p: int(p.stem.rpartition("rank")[2])
        ):
            if path.stem not in out:
                out[path.stem] = _load_state(path)
    # The run settings a resume checks (schedule, batch, max_steps the run really has): compared
    # too; the manifest's file hashes, format and step are not (the state above holds the data).
    manifest = json.loads((step_dir / "manifest.json").read_text())
    out["manifest_settings"] = manifest.get("settings")
    return out


def _load_state(path: Path) -> Any:
    from hyper_parallel.platform import get_platform

    return get_platform().load(path, weights_only=True)


def _artifacts(
    trainer_model,
    optimizer_groups,
    losses,
    grad_norms,
    lrs,
    batches,
    records,
    ckpt_root: Path,
    events=None,
    returned=None,
    log=None,
) -> dict:
    """Every artifact of one run, each read on its own; a failure becomes that artifact's ``ArtifactError``."""
    readers: dict[str, Callable[[], Any]] = {
        "param_groups": lambda: canonical.param_groups(optimizer_groups, trainer_model.named_parameters()),
        "lr_curve": lambda: canonical.lr_curve(lrs),
        "losses": lambda: canonical.losses(losses),
        "grad_norms": lambda: canonical.losses(grad_norms, dtype="float32"),
        "batches": lambda: [canonical.batches(step) for step in batches],
        "metrics": lambda: canonical.metrics(
            records, deterministic=_DETERMINISTIC_METRICS, float_dtypes=_FLOAT32_METRICS
        ),
        "checkpoint": lambda: _maybe(canonical.checkpoint, _checkpoint(ckpt_root)),
        "hf_export": lambda: _maybe(canonical.checkpoint, _hf_export(ckpt_root)),
        "layout": lambda: _layout(ckpt_root.parent),
        "events": lambda: events,
        "returned": lambda: canonical.canonicalise(returned, "returned"),
        "log": lambda: log,
    }
    # The raw curves and records too, for the legacy goldens that read the same run.
    out: dict[str, Any] = {"raw": {"losses": losses, "grad_norms": grad_norms, "log_history": list(records)}}
    for name, read in readers.items():
        try:
            out[name] = read()
        except Exception as exc:  # reported by the artifact's own case
            out[name] = ArtifactError(f"{name}: {type(exc).__name__}: {exc}")
    return out


def _maybe(fn: Callable[[Any], Any], value: Any) -> Any:
    return None if value is None else fn(value)


def _param_groups_snapshot(groups) -> list[dict]:
    """Param groups as they are before training (lists are copied, params kept by identity)."""
    return [{**g, "params": list(g["params"])} for g in groups]


class _Tap:
    """The step's batch iterator, keeping a copy of each group of micro-batches it hands out."""

    def __init__(self, it, sink: list) -> None:
        self._it, self._sink = it, sink

    def __iter__(self):
        return self

    def __next__(self):
        from hyper_parallel.platform import get_platform

        group = next(self._it)
        copy = get_platform().detached_copy
        self._sink.append([{k: copy(v) for k, v in mb.items()} for mb in group])
        return group


def side_dirs(tmp: str) -> tuple[str, ...]:
    """Each side writes its checkpoints and profiler traces into its own folder."""
    return (f"--train.checkpoint.output_dir={tmp}/ckpt", f"--train.profile.output_dir={tmp}/profile")


def run_legacy(*overrides: str, workdir: Path | None = None) -> dict[str, Any]:
    """Train ``LLMTrainer`` on the debug recipe (+ overrides); canonical artifacts of the run."""
    from hyper_parallel.trainer import LLMTrainer

    with WorkDir(workdir) as tmp, run_log.capture(tmp) as log:
        args = legacy_args(*side_dirs(tmp), *overrides)
        trainer = LLMTrainer(args)
        base = trainer.base
        groups = _param_groups_snapshot(base.optimizer.param_groups)
        recorder = _LrRecorder(base)
        batches: list[list] = []
        trainer.add_callback(recorder)
        events = EventRecorder(tmp)
        trainer.add_callback(events)
        step_fn = base.train_step
        with mock.patch.object(base, "train_step", lambda it: step_fn(_Tap(it, batches))):
            # What train() returns is an output too (None today, on both trainers).
            returned = trainer.train()  # type: ignore[func-returns-value]  # compared as "returned"
        return _artifacts(
            base.model,
            groups,
            recorder.losses,
            recorder.grad_norms,
            recorder.lrs,
            batches,
            base.state.log_history,
            Path(tmp, "ckpt"),
            events.events,
            returned,
            log,
        )


def run_new(
    *overrides: str, workdir: Path | None = None, config_of: Callable[[tuple[str, ...]], Any] | None = None
) -> dict[str, Any]:
    """Train ``HyperTrainer`` built from the same YAML through ``legacy_to_trainer_config``, or
    through ``config_of(overrides)`` (another route to its Config, e.g. the recipe command line)."""
    from hyper_parallel.trainer.hyper_trainer import HyperTrainer
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    with WorkDir(workdir) as tmp, run_log.capture(tmp) as log:
        if config_of is None:
            config = legacy_to_trainer_config(legacy_args(*side_dirs(tmp), *overrides))
        else:
            config = config_of((*side_dirs(tmp), *overrides))
        trainer: HyperTrainer = config.build()
        events = EventRecorder(tmp)
        trainer.add_callback(events)
        groups = _param_groups_snapshot(trainer.optimizer.param_groups)
        losses: list[float] = []
        grad_norms: list[float] = []
        lrs: list[float] = []
        batches: list[list] = []
        step_fn = trainer.train_step

        def recording_step(it):
            out = step_fn(_Tap(it, batches))
            losses.append(out["loss"])
            grad_norms.append(out["grad_norm"])
            lrs.append(trainer.lr_scheduler.get_last_lr()[0])
            return out

        with mock.patch.object(trainer, "train_step", recording_step):
            returned = trainer.train()  # type: ignore[func-returns-value]  # compared as "returned"
        return _artifacts(
            trainer.model,
            groups,
            losses,
            grad_norms,
            lrs,
            batches,
            trainer.state.log_history,
            Path(tmp, "ckpt"),
            events.events,
            returned,
            log,
        )


class _LrRecorder(StepRecorder):
    """A ``StepRecorder`` that also keeps the legacy trainer's learning rate after each step."""

    def __init__(self, base: BaseTrainer) -> None:
        super().__init__()
        self.base = base
        self.lrs: list[float] = []

    def on_step_end(self, state, *, loss=None, grad_norm=None) -> None:
        super().on_step_end(state, loss=loss, grad_norm=grad_norm)
        scheduler = self.base.lr_scheduler
        assert scheduler is not None, "the legacy trainer builds a scheduler"
        self.lrs.append(float(scheduler.get_last_lr()[0]))


class WorkDir:
    """A temporary folder, or the given one (kept, for tests that inspect or resume from it)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> str:
        if self.path is not None:
            Path(self.path).mkdir(parents=True, exist_ok=True)
            return str(self.path)
        self._tmp = tempfile.TemporaryDirectory(prefix="parity-e2e-")
        return self._tmp.name

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


# ----------------------------------------------------------------------------- running a recipe
SIDES = {"legacy": run_legacy, "new": run_new}


def run_recipe(recipe: str, sides: tuple[str, ...] = ("legacy", "new")) -> dict[str, dict[str, Any]]:
    """``{side: artifacts}`` of one recipe: in this process, or in one torchrun launch for a
    multi-rank recipe (both sides in the same workers, one after the other).

    A multi-rank recipe's artifacts are ``{artifact: {"rank0": ..., "rank1": ...}}``, so every rank's
    curves and batches are compared (checkpoint and export are the coordinator's: rank 0 only).
    """
    spec = RECIPES[recipe]
    with tempfile.TemporaryDirectory(prefix=f"parity-{recipe}-") as tmp:
        overrides = spec.overrides(Path(tmp))
        if spec.nproc == 1:
            return {side: SIDES[side](*overrides) for side in sides}
        return run_multirank(sides, spec, Path(tmp), overrides)


def run_multirank(
    sides: tuple[str, ...], spec: Recipe, scratch: Path, overrides: tuple[str, ...]
) -> dict[str, dict[str, Any]]:
    """Each side in its own ``spec.nproc``-rank world; ``{side: {artifact: {"rank<r>": ...}}}``.

    Ranks are forked from this process (its imports are done: a world starts in well under a
    second, where a torchrun launch spends seconds importing) with a fresh rendezvous port per
    side, so no two worlds share a store. ``PARITY_MULTIRANK_LAUNCH=torchrun`` (or a platform
    without ``fork``) launches ``torch.distributed.run`` instead.
    """
    for side in sides:
        if os.environ.get("PARITY_MULTIRANK_LAUNCH", "fork") == "fork" and hasattr(os, "fork"):
            _launch_forked(side, spec, scratch, overrides)
        else:
            _launch_torchrun(side, spec, scratch, overrides)
    runs: dict[str, dict[str, Any]] = {}
    for side in sides:
        out: dict[str, Any] = {}
        for rank in range(spec.nproc):
            dumped = json.loads((scratch / f"{side}_rank{rank}.json").read_text())
            for name in DUMPED:
                if rank > 0 and name in ("checkpoint", "hf_export"):
                    continue
                entry = dumped[name]
                value = (
                    ArtifactError(entry["error"]) if "error" in entry else canonical.from_json(entry["value"])
                )
                out.setdefault(name, {})[f"rank{rank}"] = value
        for name, ranks in out.items():
            errors = [v for v in ranks.values() if isinstance(v, ArtifactError)]
            if errors:
                out[name] = errors[0]
        runs[side] = out
    return runs


_RENDEZVOUS_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _launch_forked(
    side: str, spec: Recipe, scratch: Path, overrides: tuple[str, ...], timeout: float = 300
) -> None:
    fork_ranks(
        f"recipe {spec.name!r} ({side})",
        spec.nproc,
        lambda: run_rank(side, scratch, overrides),
        logs=scratch / side,
        timeout=timeout,
    )


def run_rank(side: str, out: Path, overrides: Sequence[str]) -> Path:
    """Train ``side`` in this rank (``out/<side>``); dump every artifact to ``out/<side>_rank<r>.json``:
    per artifact ``{"value": <canonical JSON>}`` or ``{"error": "<why it could not be read>"}``."""
    rank = int(os.environ.get("RANK", "0"))
    run = SIDES[side]  # "legacy", "new", or a side another suite registered (a forked rank inherits it)
    artifacts = run(*overrides, workdir=out / side)
    dumped = {}
    for name in DUMPED:
        value = artifacts[name]
        dumped[name] = (
            {"error": str(value)} if isinstance(value, ArtifactError) else {"value": canonical.to_json(value)}
        )
    path = out / f"{side}_rank{rank}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dumped, sort_keys=True))
    tmp.replace(path)
    return path


def _launch_torchrun(side: str, spec: Recipe, scratch: Path, overrides: tuple[str, ...]) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": _pythonpath()}
    for name in (*_RENDEZVOUS_VARS, "HYPER_PARALLEL_SELF_WORLD"):
        env.pop(name, None)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={spec.nproc}",
        "-m", "parity.e2e_worker", side, str(scratch), *overrides,
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"torchrun of recipe {spec.name!r} ({side}) exited {proc.returncode}:\n{tail}")


def _pythonpath() -> str:
    """The project root first, so a torchrun worker imports the same tree as this process."""
    root = str(REPO_ROOT)
    rest = os.environ.get("PYTHONPATH", "")
    return root + (os.pathsep + rest if rest else "")


# ----------------------------------------------------------------------------- case producers
class RunCache:
    """``functools.cache`` for the recipe runs, plus ``peek`` (a cached result or None, never a
    run) and a ``generation`` that ``cache_clear`` moves on (so results derived from the runs,
    such as localisations, are dropped with them).

    A run that raised is cached too: every case that shares it fails with the same error, and the
    run (a 2-rank launch that timed out, say) is not repeated once per case.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn
        self._results: dict[tuple[Any, ...], Any] = {}
        self._failures: dict[tuple[Any, ...], BaseException] = {}
        self.generation = 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any) -> Any:
        if args in self._failures:
            raise self._failures[args]
        if args not in self._results:
            try:
                self._results[args] = self._fn(*args)
            except Exception as exc:
                self._failures[args] = exc
                raise
        return self._results[args]

    def peek(self, *args: Any) -> Any:
        return self._results.get(args)

    def cache_clear(self) -> None:
        self._results.clear()
        self._failures.clear()
        self.generation += 1


@RunCache
def recipe_run(recipe: str, sides: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    return run_recipe(recipe, sides)


def cached_side(side: str, recipe: str) -> dict[str, Any]:
    """One side of a recipe, run once per process: a multi-rank recipe runs both sides in one launch."""
    if RECIPES[recipe].nproc > 1:
        return recipe_run(recipe, ("legacy", "new"))[side]
    return recipe_run(recipe, (side,))[side]


def legacy_debug_run() -> dict[str, Any]:
    """The legacy side of the ``dummy`` recipe (the debug YAML as it is): raw losses, grad norms
    and log history, for ``parity.suites.legacy_trainer``'s goldens (one run serves both)."""
    return cached_side("legacy", "dummy")["raw"]


def pick(run: dict[str, Any], artifact: str) -> Any:
    value = run[artifact]
    if isinstance(value, ArtifactError):
        raise value
    return {artifact: value}


def legacy_side(*, recipe: str, artifact: str) -> dict[str, Any]:
    return pick(cached_side("legacy", recipe), artifact)


def new_side(*, recipe: str, artifact: str) -> dict[str, Any]:
    return pick(cached_side("new", recipe), artifact)


def new_curve(*, recipe: str) -> dict[str, Any]:
    """Tier B: the new side's curves (and the batches it trained on) for one recipe."""
    run = cached_side("new", recipe)
    return {name: pick(run, name)[name] for name in (*CURVES, "batches")}


def both_logs(*, recipe: str) -> dict[str, Any]:
    """Tier B: the log lines of both sides of one recipe (``parity.run_log``)."""
    return {side: pick(cached_side(side, recipe), "log")["log"] for side in ("legacy", "new")}


SEED = 42
# Resolved only when a pair fails: the localiser is a tool (``parity.tools``), not part of the core.
LOCALISER = "parity.tools.localise:localise_pair"


def cached_curves(recipe: str) -> dict[str, Any] | None:
    """Per step loss, grad norm and lr of both sides of a single-process recipe, if both runs are cached."""
    runs = {side: recipe_run.peek(recipe, (side,)) for side in ("legacy", "new")}
    if RECIPES[recipe].nproc > 1 or any(run is None for run in runs.values()):
        return None
    out: dict[str, Any] = {"source": "the case's runs, every step"}
    for side, run in runs.items():
        run = run[side]
        lrs = run["lr_curve"]
        lr_values = [] if isinstance(lrs, ArtifactError) else [_value(v) for v in lrs]
        losses, norms = run["raw"]["losses"], run["raw"]["grad_norms"]
        out[side] = {
            "step": list(range(1, len(losses) + 1)),
            "loss": [_value(v) for v in losses],
            "grad_norm": [_value(v) for v in norms],
            "lr": lr_values,
        }
    return out


def _value(value: Any) -> float | None:
    """A finite float (a ``FloatLeaf``'s value or a number), else None (JSON has no NaN)."""
    value = value.value if isinstance(value, canonical.FloatLeaf) else value
    if isinstance(value, list):  # an lr curve entry per param group: the first group's
        value = value[0] if value else None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if value == value and abs(value) != float("inf") else None
