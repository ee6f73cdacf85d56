"""Every flag of ``python -m hyper_parallel.train`` is live: setting it changes what the trainer does.

For each flag of the frozen CLI surface (``cli_surface.txt``) the table below gives a valid
non-default value. The trainer is built from the debug recipe with and without it, trains a few
steps in a fresh folder, and a snapshot of what it did is compared: the built components' state,
the first batch, the param groups, the LR factors, the losses and grad norms, the determinism and
process-group settings, what the TensorBoard/W&B sinks were asked to write, the metric records and
the files written. A flag whose snapshot does not change is dead and fails. A flag for a feature
that is not implemented must instead be refused with an error that names it (``REFUSED``). Two
flags matter only where one CPU process cannot look (``ELSEWHERE``, each with its own check), one
is a label kept for the legacy YAML (``INFORMATIONAL``), and the selectors are parsed, not settings.

A new flag without an entry here fails ``test_every_flag_has_an_entry``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from hyper_parallel.platform import get_platform
from parity import assets

SURFACE = Path(__file__).with_name("cli_surface.txt")
RECIPE = ("--module", "qwen3_5", "--config", "debug")
# Three steps (the first runs at lr 0, so the third is the first to see an update), no checkpoint
# unless a case asks for one, every output inside the test's folder.
BASE = ("--training.steps", "3", "--checkpoint.save_steps", "0", "--checkpoint.output_dir", "ckpt")
# The loader is a subcommand (its Config class); its flags follow it.
TEXT = ("dataloader:hf_text", "--tokenizer.path", str(assets.tokenizer_dir()))
TEXT_DATA = (*TEXT, "--dataloader.train_path", str(assets.text_jsonl()))
ALPACA = (*TEXT, "--dataloader.format", "json_file", "--dataloader.train_path", str(assets.alpaca_json()))
SAVE = ("--checkpoint.save_steps", "1")
TB = ("--metrics.tensorboard.enabled", "true")
WANDB = ("--metrics.wandb.enabled", "true")
PROFILE = ("--profiler.enabled", "true", "--training.steps", "6")
LONG = ("--training.steps", "8")  # LR schedules differ past the first steps
MP = ("--training.enable_mixed_precision", "true")
# Preset batches keep the step horizon: 4 steps over 2 batches need a second epoch.
# The --training flags come before the subcommand, beside BASE's: tyro refuses one flag at two levels.
PRESET = (
    "--training.steps", "6", "--training.global_batch_size", "2", "--training.local_batch_size", "2",
    "--training.seq_len", "8",
    "dataloader:preset_pt", "--dataloader.train_path", "@preset", "--dataloader.shuffle", "false",
)  # fmt: skip

# flag -> (value tokens, context flags applied on both sides). The context makes the flag matter
# (a text key needs text data); both sides share it, so only the flag itself differs.
LIVE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "--activation_checkpoint.mode": (("full",), ()),
    "--checkpoint.load_path": (("@saved",), ()),  # a checkpoint written by the baseline setup
    "--checkpoint.output_dir": (("ckpt2",), SAVE),
    "--checkpoint.save_async": (("true",), SAVE),
    "--checkpoint.save_hf_weights": (("false",), SAVE),
    "--checkpoint.save_steps": (("1",), ()),
    "--comm.init_timeout_seconds": (("77",), ()),  # the process group's timeout
    # Alpaca rows: read as plain text from one column, or (json_file) as instruction records.
    "--dataloader.format": (("json_file",), (*TEXT, "--dataloader.train_path", str(assets.alpaca_json()), "--dataloader.text_key", "instruction")),
    "--dataloader.num_workers": (("1",), ()),
    "--dataloader.prefetch_factor": (("3",), ("--dataloader.num_workers", "1")),
    "--dataloader.shuffle": (("false",), ()),
    "--dataloader.template": (("alpaca",), ALPACA),
    "--dataloader.text_key": (("content",), (*TEXT, "--dataloader.train_path", "@text3")),
    "--dataloader.train_path": (("@text2",), TEXT_DATA),
    "--dataloader.train_size": (("20",), TEXT_DATA),
    "--debug.check_nan_inf": (("true",), ("--optimizer.lr", "1e20")),  # the third step's grad norm is not finite
    "--debug.deterministic": (("false",), ()),
    "--debug.deterministic_warn_only": (("true",), ()),
    "--debug.gc_steps": (("1",), ()),
    "--debug.seed": (("7",), ()),
    "--loss.ignore_index": (("5",), ()),
    "--loss.reduction": (("sum",), ()),
    # "cosine" or "constant"; any other name is cosine with a warning, as in the legacy trainer.
    "--lr_scheduler.decay_style": (("constant",), LONG),
    "--lr_scheduler.lr_max": (("0.002",), ()),
    "--lr_scheduler.lr_min": (("0.0005",), ()),
    "--lr_scheduler.lr_warmup_ratio": (("0.5",), LONG),
    "--lr_scheduler.warmup_steps": (("1",), ("--lr_scheduler.lr_warmup_ratio", "0")),
    "--metrics.log_steps": (("2",), ()),
    "--metrics.model_flops_per_token": (("1000",), ("--metrics.peak_tflops", "2.0")),
    "--metrics.peak_tflops": (("2.0",), ("--metrics.model_flops_per_token", "1000")),
    "--metrics.report_throughput": (("false",), ()),
    "--metrics.tensorboard.enabled": (("true",), ()),
    "--metrics.tensorboard.log_steps": (("2",), TB),
    "--metrics.tensorboard.output_dir": (("tb2",), TB),
    "--metrics.wandb.enabled": (("true",), ()),
    "--metrics.wandb.log_steps": (("2",), WANDB),
    "--metrics.wandb.project": (("other-project",), WANDB),
    "--metrics.wandb.run_name": (("other-run",), WANDB),
    "--optimizer.betas": (("0.8", "0.9"), ()),
    "--optimizer.decay_keywords": (("bias",), ()),
    "--optimizer.eps": (("1e-6",), ()),
    "--optimizer.foreach": (("false",), ()),
    "--optimizer.fused": (("false",), ()),
    # Padded text rows: micro batches with different token counts, where the two means differ.
    "--optimizer.loss_aggregation": (("rank_average",), (*TEXT_DATA, "--training.local_batch_size", "1")),
    "--optimizer.lr": (("0.01",), ()),
    "--optimizer.weight_decay": (("0.5",), ()),
    "--parallelism.reshard_after_forward": (("false",), ()),
    "--profiler.active_steps": (("2",), PROFILE),
    "--profiler.enabled": (("true",), ()),
    "--profiler.output_dir": (("prof2",), PROFILE),
    "--profiler.wait_steps": (("2",), PROFILE),
    "--profiler.warmup_steps": (("2",), PROFILE),
    "--tokenizer.pad_token": (("!",), TEXT_DATA),  # the default pad is the eos token
    "--tokenizer.path": (("@tokenizer2",), TEXT_DATA),
    "--training.enable_mixed_precision": (("true",), ()),
    "--training.freeze_modules": (("embed",), ()),
    "--training.global_batch_size": (("4",), ()),
    "--training.local_batch_size": (("1",), ()),
    "--training.max_norm": (("0.1",), ()),
    "--training.mixed_precision_output": (("float32",), MP),  # the logits' dtype
    "--training.mixed_precision_param": (("float32",), MP),
    "--training.mixed_precision_reduce": (("bfloat16",), MP),
    "--training.num_train_epochs": (("2",), PRESET),
    "--training.seed": (("7",), ()),
    "--training.seq_len": (("32",), ()),
    "--training.steps": (("4",), ()),
    "--training.weights_path": (("@weights",), ()),
}  # fmt: skip

# Features that are not implemented here (or not on one CPU process): the flag must be refused with
# an error that names it. flag -> (value tokens, context flags, pattern the error must match).
REFUSED: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "--comm.backend": (("nccl",), (), r"comm\.backend|nccl"),
    "--compile.enable": (("true",), (), r"compile"),
    "--compile.components": (("model",), ("--compile.enable", "true"), r"compile"),
    "--dataloader.streaming": (("true",), TEXT_DATA, r"streaming"),
    "--dataloader.subset": (("no_such_subset",), TEXT_DATA, r"data\.subset='no_such_subset'"),
    "--dump_folder": (("dump2",), (), r"dump_folder='dump2' is not used"),
    "--hf_assets_path": (("assets2",), (), r"hf_assets_path='assets2' is not used"),
    "--parallelism.context_parallel_degree": (("2",), (), r"cp|context"),
    "--parallelism.data_parallel_replicate_degree": (("2",), (), r"dp_replicate|replicate|world"),
    "--parallelism.expert_parallel_degree": (("2",), (), r"ep|expert"),
    "--parallelism.expert_tensor_parallel_degree": (("2",), (), r"expert_tensor_parallel_degree"),
    "--parallelism.pipeline_parallel_degree": (("2",), (), r"pp|pipeline"),
    "--parallelism.tensor_parallel_degree": (("2",), (), r"tp|tensor"),
    "--parallelism.ulysses_degree": (("2",), (), r"ulysses_degree=2 must divide"),
}
# Live only where this single CPU process cannot look; each has its own check below.
ELSEWHERE = {
    "--dataloader.pin_memory": "pins host memory for a host-to-device copy: there is none on CPU",
    # Where the model is first built: the initial weights are the same bits on every init device
    # (tests/torch/ut/trainer/test_init_device.py checks the weights, the build device and the refusals).
    "--training.init_device": "the weights are the same bits on meta and cpu; only the build device differs",
    "--parallelism.data_parallel_shard_degree": "-1 and 1 are the same on one rank",
    "--tokenizer.trust_remote_code": "applies to tokenizers that ship their own code; the shipped one does not",
    # Resume and run-folder guards: each needs a second run or a prepared folder, and each has its own
    # tests in tests/torch/ut/components/test_checkpoint_one_writer.py (both trainers).
    "--checkpoint.allow_partial_weights": "initial weights that miss a parameter load only with it",
    "--checkpoint.allow_unverified": "a folder without a manifest resumes only with it",
    "--checkpoint.overwrite": "a run into a folder with finished checkpoints starts only with it",
    "--checkpoint.resume_config_changes": "a resume whose settings differ runs only with 'apply'",
}
# A label, not a switch: the legacy train.logging.report_to is informational (the sinks are switched
# by metrics.tensorboard.enabled / metrics.wandb.enabled), and the YAML path must keep it so.
INFORMATIONAL = {"--metrics.report_to": "legacy train.logging.report_to is informational"}
# Selectors and help: what is parsed, not a setting (tests in test_trainer_config.py).
NOT_SETTINGS = {"--module", "--config", "--help", "-h"}
# Attributes that differ between two identical runs (wall clock): never part of the snapshot.
WALL_CLOCK = {"_step_start"}


def _surface() -> list[str]:
    return [line for line in SURFACE.read_text().splitlines() if line and not line.startswith("#")]


def test_every_flag_has_an_entry():
    flags = set(_surface())
    tables = (set(LIVE), set(REFUSED), set(ELSEWHERE), set(INFORMATIONAL), NOT_SETTINGS)
    decided = set().union(*tables)
    assert sorted(flags - decided) == [], "a flag without a liveness entry: add it to LIVE or REFUSED"
    assert sorted(decided - flags) == [], "an entry for a flag that no longer exists"
    assert sum(len(t) for t in tables) == len(decided), "a flag in two tables"


# ----------------------------------------------------------------------------- the snapshot
def _sha(tensor: Any) -> str:
    return hashlib.sha256(get_platform().raw_bytes(tensor)).hexdigest()[:16]


def _simple(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)) and all(
        v is None or isinstance(v, (bool, int, float, str)) for v in value
    ):
        return list(value)
    return None


def _state(obj: Any) -> dict[str, Any]:
    """The simple attributes of a built component (not its Config: that is what is being tested)."""
    if obj is None:
        return {"none": True}
    names = list(getattr(obj, "__dict__", {})) + [
        s for s in getattr(type(obj), "__slots__", ()) if hasattr(obj, s)
    ]
    out: dict[str, Any] = {"type": type(obj).__qualname__}
    for name in names:
        if name == "config" or name in WALL_CLOCK:
            continue
        value = _simple(getattr(obj, name, None))
        if value is not None:
            out[name] = value
    return out


def _files(root: Path) -> list[str]:
    """What the run wrote (W&B aside: its sink calls are watched), with time stamps taken out."""
    out = set()
    for path in root.rglob("*"):
        if path.is_file() and "wandb" not in path.parts:
            rel = re.sub(r"\d{6,}", "#", str(path.relative_to(root)))
            out.add(re.sub(r"tfevents\..*", "tfevents", rel))
    return sorted(out)


def _watch_sinks(metrics: Any, calls: dict[str, Any]) -> None:
    """Record what the TensorBoard and W&B sinks are asked to write (tags, steps, run names)."""
    writer = getattr(metrics, "_writer", None)
    if writer is not None:
        calls["tensorboard_dir"] = str(writer.log_dir)
        add_scalar, tb = writer.add_scalar, calls.setdefault("tensorboard", [])

        def scalar(tag, value, step=None, *args, **kwargs):
            tb.append((tag, step))
            return add_scalar(tag, value, step, *args, **kwargs)

        writer.add_scalar = scalar
    run = getattr(metrics, "_wandb_run", None)
    if run is not None:
        calls["wandb_run"] = (run.project, run.name)
        log, wb = run.log, calls.setdefault("wandb", [])

        def logged(data, step=None, **kwargs):
            wb.append((sorted(data), step))
            return log(data, step=step, **kwargs)

        run.log = logged


def _fsdp_reshard(model: Any) -> list[Any]:
    """Per FSDP2 module: whether it frees its unsharded parameters after forward."""
    out = []
    for module in model.modules():
        state = getattr(module, "_get_fsdp_state", None)
        group = getattr(state(), "_fsdp_param_group", None) if state is not None else None
        if group is not None:
            out.append(group.post_forward_mesh_info is not None)
    return out


def _snapshot(trainer: Any, root: Path) -> dict[str, Any]:
    import gc

    import torch
    import torch.distributed as dist

    from parity import canonical

    platform = get_platform()
    batches = [mb for group, _ in zip(trainer.dataloader.micro_batch_iterator(), range(1)) for mb in group]
    lr_factors = [float(trainer.lr_scheduler.schedulers[0].lr_lambdas[0](k)).hex() for k in range(12)]
    timeout = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu")).options._timeout
    sinks: dict[str, Any] = {}
    _watch_sinks(trainer.metrics, sinks)
    losses, grad_norms, lrs, gc_enabled, profiler_actions = [], [], [], [], []
    step = trainer.train_step

    def recording(it):
        out = step(it)
        losses.append(float(out["loss"]).hex())
        grad_norms.append(float(out["grad_norm"]).hex())
        lrs.append([float(g["lr"]).hex() for g in trainer.optimizer.param_groups])
        gc_enabled.append(gc.isenabled())
        prof = getattr(trainer.profiler, "_prof", None)  # the framework profiler's schedule, per step
        profiler_actions.append(str(getattr(prof, "current_action", None)))
        return out

    trainer.train_step = recording
    error = None
    try:
        trainer.train()
    except Exception as exc:  # what a flag makes the run do is the observable
        error = f"{type(exc).__name__}: {exc}"
    model = trainer.model
    # Before any forward below: with reshard_after_forward off, a forward leaves unsharded params.
    param_groups = canonical.to_json(
        canonical.param_groups(trainer.optimizer.param_groups, model.named_parameters())
    )
    logits = None
    if batches:
        with platform.no_grad():
            logits = platform.dtype_name(
                model.forward_logits(platform.move_to_device(batches[0], trainer.device)["input_ids"])
            )
    return {
        "components": {
            name: _state(getattr(trainer, name, None))
            for name in ("tokenizer", "dataloader", "optimizer", "lr_scheduler", "loss_fn", "checkpointer", "metrics", "profiler")
        },
        # The checkpointer's save lifecycle (async group, pending saves) lives in its writer.
        "checkpoint_writer": _state(getattr(getattr(trainer, "checkpointer", None), "writer", None)),
        "loader": {
            **_state(trainer.dataloader.loader),
            "sampler": _state(trainer.dataloader.sampler),
            "dataset": len(trainer.dataloader.dataset),
        },
        "first_batch": {k: _sha(v) for k, v in batches[0].items()} if batches else None,
        "param_groups": param_groups,
        "model": [(n, platform.dtype_name(p), bool(p.requires_grad)) for n, p in model.named_parameters()],
        "modules": sorted({type(m).__qualname__ for m in model.modules()}),
        "fsdp_reshard": _fsdp_reshard(model),
        "logits_dtype": logits,
        "state": _state(trainer.state),
        "determinism": (platform.is_deterministic(), torch.is_deterministic_algorithms_warn_only_enabled()),
        "timeout": str(timeout),
        "lr_factors": lr_factors,
        "sinks": sinks,
        "gc_enabled": gc_enabled,
        "profiler_actions": profiler_actions,
        "error": error,
        "losses": losses,
        "grad_norms": grad_norms,
        "lrs": lrs,
        "records": json.dumps(canonical.to_json(canonical.metrics(trainer.metrics.history, ("step", "loss", "grad_norm", "lr"))), sort_keys=True),
        "files": _files(root),
    }  # fmt: skip


def _resolve(tokens: tuple[str, ...], shared: Path) -> list[str]:
    special = {
        "@saved": str(shared / "saved" / "ckpt" / "step_3"),
        "@weights": str(shared / "saved" / "ckpt" / "step_3" / "hf_ckpt"),
        "@text2": str(shared / "text2.jsonl"),
        "@text3": str(shared / "text3.jsonl"),
        "@tokenizer2": str(shared / "tokenizer2"),
        "@preset": str(shared / "preset.pt"),
    }
    return [special.get(t, t) for t in tokens]


def _run(flags: list[str], workdir: Path) -> dict[str, Any]:
    from hyper_parallel.trainer.legacy_mapping import config_manager

    workdir.mkdir(parents=True, exist_ok=True)
    cwd = os.getcwd()
    os.chdir(workdir)
    platform = get_platform()
    platform.set_deterministic(False)  # as a fresh process starts, so that the debug switches show
    try:
        trainer = config_manager().parse_args([*RECIPE, *BASE, *flags]).build()
        return _snapshot(trainer, workdir)
    finally:
        if platform.is_distributed():
            platform.destroy_process_group()
        platform.set_deterministic(True)
        os.chdir(cwd)


@pytest.fixture(autouse=True)
def _offline_wandb(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    """Inputs some flags point at: a checkpoint and HF export after one step, other text data, a
    tokenizer with a pad token, a preset batches file."""
    import shutil

    root = tmp_path_factory.mktemp("flags")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")
        _run(["--checkpoint.save_steps", "3"], root / "saved")  # trained weights: step 3 saw an update
    lines = assets.text_jsonl().read_text().splitlines()
    (root / "text2.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    rows = [json.loads(line) for line in lines]  # a second text column: each text backwards
    (root / "text3.jsonl").write_text(
        "".join(json.dumps({**r, "content": r["text"][::-1]}) + "\n" for r in rows)
    )
    shutil.copytree(assets.tokenizer_dir(), root / "tokenizer2")
    config = root / "tokenizer2" / "tokenizer_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "pad_token": "<|pad|>"}))
    assets.preset_pt(root / "preset.pt")
    return root


@functools.cache
def _baseline(context: tuple[str, ...], root: str) -> str:
    folder = Path(root) / "base" / hashlib.sha256(repr(context).encode()).hexdigest()[:16]
    return json.dumps(_run(_resolve(context, Path(root)), folder), sort_keys=True)


def test_the_snapshot_of_one_setup_is_deterministic(tmp_path):
    """Two runs of the same flags give the same snapshot, so a difference is the flag's doing."""
    assert _run([], tmp_path / "a") == _run([], tmp_path / "b")


def test_a_flag_that_the_trainer_ignores_is_reported_dead(monkeypatch, tmp_path):
    """The check can fail: with a loader that ignores local_batch_size, the flag changes nothing."""
    from hyper_parallel.components import dataloader as dl

    original = dl.BaseDataLoader.__init__

    def ignoring(self, config, *, local_batch_size, **kwargs):
        original(self, config, local_batch_size=2, **kwargs)  # the recipe's value, whatever is asked

    monkeypatch.setattr(dl.BaseDataLoader, "__init__", ignoring)
    before = _run([], tmp_path / "a")
    after = _run(["--training.local_batch_size", "1"], tmp_path / "b")
    assert after == before


@pytest.mark.parametrize("flag", sorted(LIVE))
def test_flag_changes_what_the_trainer_does(flag, shared, tmp_path):
    values, context = LIVE[flag]
    before = _baseline(context, str(shared))
    after = json.dumps(_run([*_resolve(context, shared), flag, *_resolve(values, shared)], tmp_path / "run"), sort_keys=True)  # fmt: skip
    assert after != before, f"{flag} {' '.join(values)} changed nothing observable: a dead flag"


@pytest.mark.parametrize("flag", sorted(REFUSED))
def test_unimplemented_feature_is_refused_with_a_clear_error(flag, shared, tmp_path, capsys):
    values, context, pattern = REFUSED[flag]
    with pytest.raises((ValueError, NotImplementedError, RuntimeError, SystemExit)) as info:
        _run([*_resolve(context, shared), flag, *values], tmp_path / "run")
    # A Config that refuses the value while tyro builds it exits 2 with the message on stderr.
    message = capsys.readouterr().err if info.type is SystemExit else str(info.value)
    assert info.type is not SystemExit or info.value.code == 2
    assert re.search(pattern, message, flags=re.IGNORECASE), message


def test_pin_memory_is_live_where_there_is_a_device_copy(monkeypatch):
    """On CPU the loader never pins (no host-to-device copy); on a device the flag decides."""
    from hyper_parallel.components.dataloader import DummyDataLoader

    platform = get_platform()
    monkeypatch.setattr(type(platform), "device_type", lambda self: "cuda")
    sizes = dict(seq_len=8, local_batch_size=1, global_batch_size=8, seed=42, training_steps=1)
    pinned = DummyDataLoader.Config(pin_memory=True).build(**sizes)
    unpinned = DummyDataLoader.Config(pin_memory=False).build(**sizes)
    assert (pinned.loader.pin_memory, unpinned.loader.pin_memory) == (True, False)


def test_data_parallel_shard_degree_is_live_on_more_ranks():
    from hyper_parallel.trainer.parallel_dims import ParallelDims

    assert ParallelDims(dp_shard=-1, world_size=2).dp_shard == 2
    with pytest.raises(ValueError):
        ParallelDims(dp_shard=1, world_size=2)


def test_report_to_stays_informational_as_in_the_legacy_trainer(tmp_path):
    """The label switches no sink, as ``train.logging.report_to`` does not in the legacy trainer."""
    snapshot = _run(["--metrics.report_to", "tensorboard"], tmp_path / "run")
    assert snapshot["sinks"] == {} and not any("tfevents" in f for f in snapshot["files"])


def test_trust_remote_code_reaches_the_tokenizer_loader(monkeypatch, tmp_path):
    """The shipped tokenizer has no code of its own; the switch is handed to the HF loader."""
    import transformers

    seen = []
    original = transformers.AutoTokenizer.from_pretrained

    def spy(*args, **kwargs):
        seen.append(kwargs.get("trust_remote_code"))
        return original(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", spy)
    _run([*TEXT_DATA, "--tokenizer.trust_remote_code", "true"], tmp_path / "on")
    _run(list(TEXT_DATA), tmp_path / "off")
    assert True in seen and False in seen
