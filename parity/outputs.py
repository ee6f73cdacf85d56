"""Everything a user can see of a training run, and which parity case compares it.

``OUTPUTS`` lists what ``LLMTrainer`` (``scripts/train_lm.py``) and ``HyperTrainer`` (``python -m
hyper_parallel.train``) hand to a user: the files and folders they write, the values they log or
record, the events they dispatch to user callbacks, what ``train()`` returns, and the exit status
and error lines of the two entry points. Each row says where each trainer produces it (``path:Symbol``
in this repository; an empty tuple: that trainer does not produce it) and either

- ``compared_by``: paths in the trees the parity cases compare (``<tree>.<key>.<key>...``; ``TREES``
  names the recorder that builds each tree and the cases that compare it), ``comparison`` (the
  strongest way any of them compares it: ``BITS`` or ``EXACT``) and ``cases`` (the registered case
  names); ``reason`` then says what the comparison leaves out (a value compared by key and type
  only in some cases, say), or how legacy and new differ by design; or
- ``compared_by = None`` and a ``reason``: why no parity case compares it (and which test, if any,
  checks it instead).

File rows carry ``files``: name patterns under a root folder (``ROOTS``; ``<x>`` is one path
component part, ``**`` anything below). ``tests/parity/test_outputs_inventory.py`` keeps the table
honest: every ``compared_by`` path exists in the trees the recorders build for a tiny run of each
trainer (and of the component cases), every file those runs write matches a pattern here, every
callback hook, metric record key and e2e artifact has a row, and every ``path:Symbol`` exists.
A new output therefore fails that test until it is compared or listed here with its reason.

Data only: no import of the trainers or of the suites.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BITS",
    "COMPARISONS",
    "EXACT",
    "KINDS",
    "OUTPUTS",
    "ROOTS",
    "TREES",
    "Output",
    "Tree",
]

# What an output is.
KINDS = ("file", "value", "log", "event", "return", "exit")

# How exactly a compared output is compared.
BITS = "bits"  # floats by their bits (float.hex) and tensors by the sha256 of their raw bytes
EXACT = "exact"  # discrete values (names, counts, ints, strings, key sets) compared for equality
COMPARISONS = (BITS, EXACT)


@dataclass(frozen=True)
class Tree:
    """A tree the parity cases compare: the function that records it and the cases that compare it."""

    recorder: str
    cases: tuple[str, ...]


# The first component of a ``compared_by`` path names one of these trees.
TREES: dict[str, Tree] = {
    "e2e": Tree(
        "parity.e2e.run_legacy / run_new (_artifacts): one run's RUN_ARTIFACTS; "
        "user_callbacks records its events with the same parity.callback_events.EventRecorder "
        "(parity.suites.e2e_callbacks.run_events)",
        (
            "trainer_e2e",
            "explore_cover",
            "explore_drawn",
            "explore_resume",
            "explore_resume_fixed",
            "user_callbacks",
        ),
    ),
    "throughput": Tree(
        "parity.suites.e2e_seams._records of legacy_throughput / new_throughput (step clock pinned)",
        ("trainer_throughput",),
    ),
    "metrics": Tree(
        "parity.suites.components_metrics.artifacts of run_legacy / run_new (legacy_case / new_case)",
        ("metrics_processor_vs_callbacks",),
    ),
    "wandb": Tree(
        "parity.suites.components_metrics.legacy_wandb_init / new_wandb_init (a fake wandb module)",
        ("metrics_wandb_init",),
    ),
    "wandb_mapped": Tree(
        "parity.suites.components_metrics.legacy_wandb_mapped / new_wandb_mapped (a fake wandb module)",
        ("metrics_wandb_mapped",),
    ),
    "checkpoint": Tree(
        "parity.suites.components_checkpoint.read_step_dir of one step_<N>/ folder "
        "(legacy_layout / manager_layout; _async_run reads two)",
        ("component_checkpoint_layout", "component_checkpoint_async"),
    ),
    "log": Tree(
        "parity.run_log.capture around parity.e2e.run_legacy / run_new: each side's INFO-or-worse "
        "lines of the hyper_parallel loggers (paths and timed fields replaced), per recipe both "
        "sides in one golden",
        ("trainer_log",),
    ),
    "progress": Tree(
        "parity.suites.legacy_trainer.progress_bar: what a terminal receives from LLMTrainer's tqdm bar "
        "(tqdm's clock pinned, width fixed, timed fields of the routed step line replaced)",
        ("legacy_progress_bar",),
    ),
    "gc": Tree(
        "parity.suites.e2e_callbacks.legacy_gc / new_gc: a user callback's per-step count of full "
        "collections and whether automatic collection is on (train.debug.gc_steps)",
        ("gc_steps_collections",),
    ),
    "profiler": Tree(
        "parity.suites.components_profiler.legacy_profile / new_profile (recording fakes of torch.profiler)",
        ("profiler_run", "profiler_run_hypothesis"),
    ),
}

# Root folders of the file patterns: legacy YAML field / new Config field (or environment).
ROOTS: dict[str, str] = {
    "checkpoint.output_dir": "train.checkpoint.output_dir / checkpoint.output_dir",
    "profiler.output_dir": "train.profile.output_dir / profiler.output_dir",
    "tensorboard.output_dir": "train.tensorboard.output_dir / metrics.tensorboard.output_dir",
    "WANDB_DIR": "the WANDB_DIR environment variable (default: the working folder), read by wandb",
    "HF_DATASETS_CACHE": "datasets.config.HF_DATASETS_CACHE (the datasets library's cache folder)",
    "data.train_path": "train path of a datasets save_to_disk folder (data.train_path on both)",
}


@dataclass(frozen=True)
class Output:
    """One output a user can see, where each trainer produces it, and how parity compares it."""

    name: str
    kind: str
    legacy: tuple[str, ...]
    new: tuple[str, ...]
    compared_by: tuple[str, ...] | None
    reason: str = ""
    comparison: str | None = None
    cases: tuple[str, ...] = ()
    files: tuple[str, ...] = ()


# Cases of the e2e tree by artifact: the recipe grid compares ARTIFACTS; explore_cover and
# explore_drawn every RUN_ARTIFACTS entry; the resume cases the tail of a run (curves, batches,
# metrics, checkpoint, export) and the events of the resumed runs.
_RECIPE_EXPLORE = ("trainer_e2e", "explore_cover", "explore_drawn")
_WITH_RESUME = (*_RECIPE_EXPLORE, "explore_resume", "explore_resume_fixed")
_EVENTS = ("explore_cover", "explore_drawn", "explore_resume", "explore_resume_fixed", "user_callbacks")

_CB = "hyper_parallel/trainer/callbacks/checkpoint.py"
_CM = "hyper_parallel/components/checkpoint.py"
_CK = "hyper_parallel/checkpointing/staging.py"
_LAYOUT = "hyper_parallel/checkpointing/layout.py"
_LIFE = "hyper_parallel/checkpointing/lifecycle.py"
_READ = "hyper_parallel/checkpointing/reader.py"
_BASE = "hyper_parallel/trainer/base.py"
_HT = "hyper_parallel/trainer/hyper_trainer.py"
_LOG = "hyper_parallel/trainer/callbacks/logging.py"
_MET = "hyper_parallel/components/metrics.py"
_SINKS = "hyper_parallel/trainer/callbacks/metrics_sinks.py"
_HEALTH = "hyper_parallel/trainer/callbacks/health.py"
_STEP = "step_<N>"
_NOT_BYTES = (
    "the file's bytes are not compared: torch.save archives embed their temporary file name "
    "(checkpointing.atomic_write; parity.suites.components_checkpoint.read_step_dir)"
)
_RANK0 = (
    "every rank's file by content (as <name>_rank<r>: rank 0 reads them all from the committed "
    "folder, e2e._checkpoint; the other ranks' files were compared by name only before this "
    "table)"
)
_BOTH_LOGS = ("log.legacy", "log.new")
_LOG_GOLDEN = (
    "each side's lines, in order, are held by the trainer_log golden of every recipe (both sides "
    "in one file), so a change of either side's text, arguments or order fails until the golden is "
    "regenerated"
)

OUTPUTS: tuple[Output, ...] = (
    # ------------------------------------------------------------------ checkpoint folder
    Output(
        "step_<N>/ checkpoint folders (which steps are saved)",
        "file",
        (f"{_CB}:CheckpointCallback.save", f"{_CK}:commit_step_dir"),
        (f"{_CM}:CheckpointManager._save_checkpoint", f"{_CK}:commit_step_dir"),
        ("e2e.layout.checkpoint_files", "e2e.checkpoint.state.dir"),
        comparison=EXACT,
        cases=_WITH_RESUME,
    ),
    Output(
        "DCP model shards __<r>_0.distcp",
        "file",
        (f"{_CB}:CheckpointCallback._save_model",),
        (f"{_CM}:CheckpointManager._write_model",),
        ("e2e.checkpoint.state.model", "e2e.layout.checkpoint_files"),
        "read back whole (platform.dcp_full_state_dict, every rank's shard) and compared tensor by "
        "tensor; the shard bytes themselves are not compared",
        BITS,
        _WITH_RESUME,
        (f"{{checkpoint.output_dir}}/{_STEP}/__<r>_0.distcp",),
    ),
    Output(
        "DCP metadata .metadata",
        "file",
        (f"{_CB}:CheckpointCallback._save_model",),
        (f"{_CM}:CheckpointManager._write_model",),
        ("e2e.layout.checkpoint_files", "e2e.checkpoint.keys"),
        "a pickle: the model state is read through it, so its tensor names, shapes and dtypes are "
        "compared (e2e.checkpoint.keys, e2e.checkpoint.state.model); its bytes are not",
        EXACT,
        _WITH_RESUME,
        (f"{{checkpoint.output_dir}}/{_STEP}/.metadata",),
    ),
    Output(
        "optimizer state optimizer_rank<r>.pt",
        "file",
        (f"{_CB}:CheckpointCallback._save_artifacts",),
        (f"{_CM}:CheckpointManager._write_states",),
        ("e2e.checkpoint.state.optimizer_rank0", "e2e.layout.checkpoint_files"),
        f"{_RANK0}; {_NOT_BYTES}",
        BITS,
        _WITH_RESUME,
        (f"{{checkpoint.output_dir}}/{_STEP}/optimizer_rank<r>.pt",),
    ),
    Output(
        "LR scheduler state scheduler.pt",
        "file",
        (f"{_CB}:CheckpointCallback._save_artifacts",),
        (f"{_CM}:CheckpointManager._write_states",),
        ("e2e.checkpoint.state.scheduler", "e2e.layout.checkpoint_files"),
        _NOT_BYTES,
        BITS,
        _WITH_RESUME,
        (f"{{checkpoint.output_dir}}/{_STEP}/scheduler.pt",),
    ),
    Output(
        "RNG state rng_rank<r>.pt",
        "file",
        (f"{_CB}:CheckpointCallback._save_artifacts",),
        (f"{_CM}:CheckpointManager._write_states",),
        ("e2e.checkpoint.state.rng_rank0", "e2e.layout.checkpoint_files"),
        f"{_RANK0}; {_NOT_BYTES}",
        BITS,
        _WITH_RESUME,
        (f"{{checkpoint.output_dir}}/{_STEP}/rng_rank<r>.pt",),
    ),
    Output(
        "dataloader state dataloader_rank<r>.pt",
        "file",
        (f"{_CB}:CheckpointCallback._save_artifacts",),
        (f"{_CM}:CheckpointManager._write_states",),
        ("e2e.checkpoint.state.dataloader_rank0", "e2e.layout.checkpoint_files"),
        f"{_RANK0}; {_NOT_BYTES}",
        BITS,
        _WITH_RESUME,
        (f"{{checkpoint.output_dir}}/{_STEP}/dataloader_rank<r>.pt",),
    ),
    Output(
        "extra_state.json (global_step, epoch)",
        "file",
        (f"{_CB}:CheckpointCallback._save_artifacts",),
        (f"{_CM}:CheckpointManager._write_states",),
        ("e2e.checkpoint.state.extra_state", "e2e.layout.checkpoint_files"),
        comparison=EXACT,
        cases=_WITH_RESUME,
        files=(f"{{checkpoint.output_dir}}/{_STEP}/extra_state.json",),
    ),
    Output(
        "manifest.json (file list, sizes, sha256, run settings)",
        "file",
        (f"{_CB}:CheckpointCallback.save", f"{_LIFE}:StepWriter._start_commit", f"{_CK}:write_manifest"),
        (
            f"{_CM}:CheckpointManager._save_checkpoint",
            f"{_LIFE}:StepWriter._start_commit",
            f"{_CK}:write_manifest",
        ),
        ("e2e.checkpoint.state.manifest_settings", "e2e.layout.manifests"),
        "the run settings and each step's file list are compared; format, step and each file's size "
        "and sha256 are not: the hashes cover torch.save archives that embed their temporary file "
        "name, the files they cover are compared by content, and format and step come from the one "
        "shared write_manifest",
        BITS,
        _WITH_RESUME,
        (f"{{checkpoint.output_dir}}/{_STEP}/manifest.json",),
    ),
    Output(
        "HF export hf_ckpt/model.safetensors",
        "file",
        (f"{_CB}:SafetensorsExportCallback.export", f"{_CB}:export_hf_checkpoint"),
        (f"{_CM}:CheckpointManager._export_step", f"{_CM}:CheckpointManager.export_hf"),
        ("e2e.hf_export.state.tensors", "e2e.layout.checkpoint_files", "checkpoint.hf.metadata"),
        "the newest step's export in e2e (older steps' exports by name in the layout); the "
        "safetensors metadata ({'format': 'pt'}) only at component level (read_step_dir)",
        BITS,
        (*_WITH_RESUME, "component_checkpoint_layout"),
        (f"{{checkpoint.output_dir}}/{_STEP}/hf_ckpt/model.safetensors",),
    ),
    Output(
        "HF export hf_ckpt/config.json",
        "file",
        (f"{_CB}:export_hf_checkpoint",),
        (f"{_CM}:CheckpointManager.export_hf",),
        ("e2e.hf_export.state.config", "e2e.layout.checkpoint_files"),
        comparison=BITS,
        cases=_WITH_RESUME,
        files=(f"{{checkpoint.output_dir}}/{_STEP}/hf_ckpt/config.json",),
    ),
    Output(
        "run folder lock .hyper_parallel.lock",
        "file",
        (
            f"{_CB}:CheckpointCallback.__init__",
            f"{_LIFE}:StepWriter.lock",
            "hyper_parallel/checkpointing/run_lock.py:acquire_run_folder",
        ),
        (
            f"{_CM}:CheckpointManager.__init__",
            f"{_LIFE}:StepWriter.lock",
            "hyper_parallel/checkpointing/run_lock.py:acquire_run_folder",
        ),
        ("e2e.layout.checkpoint_files",),
        "held while the run may save and removed at its end (run_lock.release_run_folder), so a "
        "finished run has none: one left behind would be listed in the layout (rglob lists hidden "
        "files); its content (host, pid, start time) differs per run and is not compared",
        EXACT,
        _RECIPE_EXPLORE,
        ("{checkpoint.output_dir}/.hyper_parallel.lock",),
    ),
    Output(
        "staging folder .partial.step_<N>/ (and its .<name>.<pid>.<hex>.tmp files)",
        "file",
        (f"{_CB}:CheckpointCallback.save", f"{_CK}:prepare_partial_dir", f"{_CK}:atomic_write"),
        (f"{_CM}:CheckpointManager._save_checkpoint", f"{_CK}:prepare_partial_dir", f"{_CK}:atomic_write"),
        ("e2e.layout.checkpoint_files",),
        "transient: renamed to step_<N>/ by the commit (commit_step_dir); a folder left behind would "
        "be listed in the layout; its files are those of step_<N>/",
        EXACT,
        _RECIPE_EXPLORE,
        ("{checkpoint.output_dir}/.partial.step_<N>/**",),
    ),
    Output(
        "replaced folder .replaced.step_<N>/",
        "file",
        (f"{_CK}:commit_step_dir", f"{_LAYOUT}:replaced_step_dir"),
        (f"{_CK}:commit_step_dir", f"{_LAYOUT}:replaced_step_dir"),
        ("e2e.layout.checkpoint_files",),
        "only while a save replaces an existing step (checkpoint.overwrite), removed once the new "
        "folder is in place; one left behind would be listed in the layout (no recipe or explore "
        "point overwrites)",
        EXACT,
        _RECIPE_EXPLORE,
        ("{checkpoint.output_dir}/.replaced.step_<N>/**",),
    ),
    # ------------------------------------------------------------------ other files
    Output(
        "profiler traces rank_<r>/rank<r>.<time_ns>.pt.trace.json",
        "file",
        ("hyper_parallel/trainer/callbacks/profiler.py:ProfilerCallback.on_train_begin",),
        (
            "hyper_parallel/components/profiler.py:Profiler.__enter__",
            "hyper_parallel/platform/torch_platform.py:TorchPlatform.profiler",
        ),
        (
            "e2e.layout.profiler_trace_files",
            "e2e.layout.profiler_trace_names",
            "profiler.profilers.arguments.on_trace_ready",
        ),
        "the trace contents are timings of this run: the e2e layout compares how many traces and "
        "their paths with the time masked (profiler_trace_names, added with this table); the "
        "profiler cases compare what both sides hand to torch.profiler (folder, worker name, "
        "schedule) through fakes; the real trace files are compared by the slow test "
        "tests/torch/ut/components/test_profiler_cases.py::test_real_profiler_writes_the_same_trace_files",
        EXACT,
        (*_RECIPE_EXPLORE, "profiler_run", "profiler_run_hypothesis"),
        ("{profiler.output_dir}/rank_<r>/rank<r>.<time_ns>.pt.trace.json",),
    ),
    Output(
        "TensorBoard event file (scalars train/<key>)",
        "file",
        (f"{_SINKS}:TensorBoardCallback.on_train_begin", f"{_SINKS}:TensorBoardCallback.on_step_end"),
        (f"{_MET}:MetricsProcessor._open_tensorboard", f"{_MET}:MetricsProcessor.log"),
        ("metrics.tensorboard",),
        "compared at component level (the legacy Logging and TensorBoard callbacks on a fake "
        "trainer against MetricsProcessor, same inputs, pinned clock): every scalar read back "
        "from the event files, by tag, step and value; wall times and the file name (time, host, "
        "pid) are not; no e2e recipe enables TensorBoard, and the explore points that do write "
        "both sides' event files into one folder of the point's assets, which no case reads",
        BITS,
        ("metrics_processor_vs_callbacks",),
        ("{tensorboard.output_dir}/events.out.tfevents.<time>.<host>.<pid>.<n>",),
    ),
    Output(
        "W&B run (offline folder with run-<id>.wandb; online: the run on the server)",
        "file",
        (f"{_SINKS}:WandbCallback.on_train_begin", f"{_SINKS}:WandbCallback.on_step_end"),
        (f"{_MET}:MetricsProcessor._open_wandb", f"{_MET}:MetricsProcessor.log"),
        ("wandb.init", "wandb.logs"),
        "compared through a fake wandb module (no files): the run's project and name, its folder "
        "(WANDB_DIR set to a folder other than the working one, compared as <WANDB_DIR> or <cwd>) and every "
        "log call (scalars and step) and finish; the offline run file itself is compared by "
        "tests/torch/ut/components/test_metrics.py::test_wandb_offline_run_files_match_legacy, "
        "not by a parity case; W&B's own files (logs, requirements, console capture) are W&B's",
        BITS,
        ("metrics_wandb_init",),
        ("{WANDB_DIR}/wandb/offline-run-<time>-<id>/run-<id>.wandb", "{WANDB_DIR}/wandb/**"),
    ),
    Output(
        "W&B run config",
        "value",
        (f"{_SINKS}:WandbCallback.on_train_begin", f"{_SINKS}:args_to_dict"),
        (f"{_MET}:MetricsProcessor._open_wandb", f"{_MET}:_as_plain"),
        ("wandb_mapped.report_to", "wandb.init.config"),
        "differs by design: legacy logs its YAML tree (args_to_dict(trainer.args)), new its "
        "HyperTrainer.Config tree (_as_plain(trainer.config)); from the mapped configs only the "
        "report_to value inside each is compared; given the same tree (a legacy args namespace that "
        "also carries _-prefixed attributes, the new side's dict), the whole run config is",
        EXACT,
        ("metrics_wandb_mapped", "metrics_wandb_init"),
    ),
    Output(
        "datasets cache of hf_datasets / json_file data",
        "file",
        ("hyper_parallel/data/hf.py:build_hf_dataset", "hyper_parallel/data/hf.py:load_raw_dataset"),
        (
            "hyper_parallel/components/dataloader.py:HuggingFaceTextDataLoader._build_dataset",
            "hyper_parallel/data/hf.py:load_raw_dataset",
        ),
        None,
        "the datasets library's own cache, written for both trainers by the one shared "
        "load_raw_dataset (content_cache_dir) and by datasets' map/filter (next to a save_to_disk "
        "folder: parity.assets.text_disk_copy); what the trainers read from it is compared as "
        "e2e.batches",
        files=(
            "{HF_DATASETS_CACHE}/hyper_parallel_by_content/<sha256>/**",
            "{data.train_path}/cache-<fingerprint>.arrow",
        ),
    ),
    Output(
        "log file",
        "file",
        (),
        (),
        None,
        "neither trainer writes one: both entry points call hyper_parallel.platform.logging."
        "init_logger (scripts/train_lm.py through its re-export in hyper_parallel.trainer.utils), "
        "one stream handler on stderr",
    ),
    # ------------------------------------------------------------------ per-step values
    Output(
        "loss per step",
        "value",
        (f"{_BASE}:BaseTrainer.train_step", f"{_LOG}:LoggingCallback.build_record"),
        (f"{_HT}:HyperTrainer.train_step", f"{_MET}:MetricsProcessor.build_record"),
        ("e2e.losses", "e2e.metrics.values.loss"),
        comparison=BITS,
        cases=_WITH_RESUME,
    ),
    Output(
        "gradient norm per step",
        "value",
        (f"{_BASE}:BaseTrainer.train_step", f"{_LOG}:LoggingCallback.build_record"),
        (f"{_HT}:HyperTrainer.train_step", f"{_MET}:MetricsProcessor.build_record"),
        ("e2e.grad_norms", "e2e.metrics.values.grad_norm"),
        comparison=BITS,
        cases=_WITH_RESUME,
    ),
    Output(
        "learning rate per step",
        "value",
        (f"{_BASE}:BaseTrainer._build_lr_scheduler", f"{_LOG}:LoggingCallback.build_record"),
        ("hyper_parallel/components/lr_scheduler.py:LRSchedulersContainer", f"{_HT}:HyperTrainer.train"),
        ("e2e.lr_curve", "e2e.metrics.values.lr", "e2e.checkpoint.state.scheduler"),
        "the curve and the record hold the first param group's LR (get_last_lr()[0]); every "
        "group's is in the scheduler state",
        BITS,
        _WITH_RESUME,
    ),
    Output(
        "optimizer param groups (parameters and hyperparameters)",
        "value",
        (f"{_BASE}:BaseTrainer._build_optimizer",),
        ("hyper_parallel/components/optimizer.py:OptimizersContainer",),
        ("e2e.param_groups",),
        comparison=BITS,
        cases=_RECIPE_EXPLORE,
    ),
    Output(
        "metric record key set (and each value's type)",
        "value",
        (f"{_LOG}:LoggingCallback.build_record",),
        (f"{_MET}:MetricsProcessor.build_record",),
        ("e2e.metrics.keys",),
        "the key order of a record is not compared (canonical.metrics sorts the keys)",
        EXACT,
        _WITH_RESUME,
    ),
    Output(
        "metric record key step",
        "value",
        (f"{_LOG}:LoggingCallback.build_record",),
        (f"{_MET}:MetricsProcessor.build_record",),
        ("e2e.metrics.values.step",),
        comparison=EXACT,
        cases=_WITH_RESUME,
    ),
    Output(
        "metric record key step_time (seconds)",
        "value",
        (f"{_LOG}:LoggingCallback.build_record",),
        (f"{_MET}:MetricsProcessor.build_record",),
        ("e2e.metrics.keys.step_time", "throughput.metrics.values.step_time"),
        "wall clock: the recipes compare the key and its type only; trainer_throughput pins the step "
        "clock of both sides (the legacy logging module's time, platform.wall_time) and compares "
        "the value",
        BITS,
        (*_WITH_RESUME, "trainer_throughput"),
    ),
    Output(
        "metric record key tokens_per_sec",
        "value",
        (f"{_LOG}:LoggingCallback.build_record",),
        (f"{_MET}:MetricsProcessor.build_record",),
        ("e2e.metrics.keys.tokens_per_sec", "throughput.metrics.values.tokens_per_sec"),
        "global loss tokens over the step time: key and type in the recipes, the value with the "
        "pinned clock in trainer_throughput (padded rows, so the counted tokens are fewer than "
        "global_batch_size * seq_len)",
        BITS,
        (*_WITH_RESUME, "trainer_throughput"),
    ),
    Output(
        "metric record keys tflops and mfu",
        "value",
        (f"{_LOG}:LoggingCallback.build_record",),
        (f"{_MET}:MetricsProcessor.build_record",),
        ("throughput.metrics.values.tflops", "throughput.metrics.values.mfu"),
        "only with logging.model_flops_per_token and peak_tflops set (no recipe sets them; "
        "trainer_throughput does)",
        BITS,
        ("trainer_throughput",),
    ),
    Output(
        "metric record key aux_loss",
        "value",
        (f"{_LOG}:LoggingCallback.build_record", f"{_HEALTH}:MoEMonitorCallback"),
        (f"{_MET}:MetricsProcessor.build_record",),
        ("e2e.metrics.values.aux_loss",),
        "None on both: the dense model has no MoE layers",
        EXACT,
        _WITH_RESUME,
    ),
    Output(
        "tokens of a step (global loss-token count)",
        "value",
        (f"{_BASE}:BaseTrainer.train_step",),
        (f"{_HT}:HyperTrainer.train_step",),
        ("throughput.metrics.values.tokens_per_sec", "e2e.batches"),
        "not logged on its own (_last_global_tokens is private): it is the numerator of "
        "tokens_per_sec, and the labels it is counted from are compared micro-batch by micro-batch",
        BITS,
        (*_WITH_RESUME, "trainer_throughput"),
    ),
    Output(
        "trainer.state.log_history (the records of logged steps)",
        "value",
        (f"{_LOG}:LoggingCallback.on_step_end",),
        (f"{_MET}:MetricsProcessor.log", f"{_HT}:HyperTrainer._init_metrics_profiler"),
        ("e2e.metrics.values", "e2e.metrics.keys"),
        "values of step, loss, grad_norm, lr and aux_loss; the timing keys by key and type (see their rows)",
        BITS,
        _WITH_RESUME,
    ),
    Output(
        "trainer.state (global_step, epoch, max_steps)",
        "value",
        (f"{_BASE}:BaseTrainer.train",),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.events.on_step_end.step", "e2e.events.on_train_end.epoch", "e2e.events.on_train_end.max_steps"),
        "as every user-callback event sees it (EventRecorder records the three counters per event)",
        EXACT,
        _EVENTS,
    ),
    Output(
        "per-step console line (step | loss | grad_norm | lr | step_time | tokens_per_sec ...)",
        "log",
        (f"{_LOG}:LoggingCallback.on_step_end", f"{_LOG}:format_log_line"),
        (f"{_MET}:MetricsProcessor.log", f"{_MET}:format_log_line"),
        ("metrics.console",),
        "compared at component level on fixed inputs with a pinned clock (each side has its own "
        "format_log_line); in the e2e runs each side's lines are held by the trainer_log golden "
        "with the timed fields (step_time, tokens_per_sec, tflops, mfu) replaced",
        EXACT,
        ("metrics_processor_vs_callbacks",),
    ),
    Output(
        "progress bar (tqdm 'Training', postfix loss and gnorm)",
        "log",
        ("hyper_parallel/trainer/callbacks/progress.py:ProgressCallback",),
        (),
        ("progress.stream", "progress.handler_restored"),
        "legacy only: HyperTrainer shows no progress bar (no tqdm in hyper_trainer.py or "
        "hyper_parallel/components/); the legacy bar's drawings (description, percentage, n/total, "
        "postfix) and the log lines routed through it are a golden, elapsed time and rate pinned",
        EXACT,
        ("legacy_progress_bar",),
    ),
    Output(
        "garbage collection under train.debug.gc_steps (automatic collection off, a full "
        "collection every N steps before on_step_end)",
        "value",
        ("hyper_parallel/trainer/callbacks/health.py:GCCallback",),
        (f"{_HT}:HyperTrainer.train",),
        ("gc.gc",),
        "what a user callback sees of it: the full collections (gc.get_stats) made during each "
        "step and gc.isenabled() per step and at train end",
        EXACT,
        ("gc_steps_collections",),
    ),
    Output(
        "device memory line (memory_allocated_gb, memory_peak_allocated_gb)",
        "log",
        (f"{_HEALTH}:MemoryMonitorCallback.on_step_end",),
        (),
        None,
        "legacy only, and only on a device with memory statistics (a warning on CPU): "
        "legacy_mapping.UNMAPPED lists train.memory_monitor.* (no memory-monitor component yet)",
    ),
    Output(
        "legacy-only warnings: evaluation stub, MoE monitor, tqdm missing",
        "log",
        (
            f"{_HEALTH}:EvalCallback.on_step_end",
            f"{_HEALTH}:MoEMonitorCallback",
            "hyper_parallel/trainer/callbacks/progress.py:ProgressCallback",
        ),
        (),
        None,
        "legacy only: legacy_mapping.UNMAPPED lists train.eval.* (evaluation is a stub) and "
        "train.moe_monitor.* (no MoE layers); HyperTrainer has no progress bar",
    ),
    # ------------------------------------------------------------------ other log lines
    Output(
        "setup lines (rank / world size / mesh; data.type, model, max_steps; ParallelDims)",
        "log",
        (f"{_BASE}:BaseTrainer._setup", "hyper_parallel/trainer/init_helpers.py:setup_distributed"),
        ("hyper_parallel/trainer/init_helpers.py:setup_distributed",),
        _BOTH_LOGS,
        "differ by design: both log 'ParallelDims: ...' (the shared setup_distributed); only the "
        f"legacy trainer logs the rank/mesh and the data/model summary lines; {_LOG_GOLDEN}",
        EXACT,
        ("trainer_log",),
    ),
    Output(
        "data lines (dataset size, micro batch size, grad_accum)",
        "log",
        (
            f"{_BASE}:BaseTrainer._build_dataloader",
            "hyper_parallel/data/dummy.py:build_dummy_dataset",
            "hyper_parallel/data/hf.py:build_hf_dataset",
            "hyper_parallel/data/preset_pt.py:build_preset_dataset",
        ),
        ("hyper_parallel/components/dataloader.py:BaseDataLoader",),
        _BOTH_LOGS,
        "differ by design: the new loader lines name the loader and the dp rank ('%s: micro batch "
        "size %d, grad_accum %d, dataset length %d, dp rank %d of %d', 'dummy dataloader: ...', "
        "'... training_steps=%d'), the legacy ones the dataset and max_steps; what they print "
        "(sizes, grad_accum, the step horizon) shapes what is compared as e2e.batches and the "
        f"curves' length; {_LOG_GOLDEN}",
        EXACT,
        ("trainer_log",),
    ),
    Output(
        "model lines (froze N parameters; mixed precision policy)",
        "log",
        (f"{_BASE}:BaseTrainer._freeze_model", f"{_BASE}:BaseTrainer._build_training_context"),
        (),
        ("log.legacy",),
        "legacy only; what they describe is compared (e2e.param_groups lists the trainable "
        f"parameters); {_LOG_GOLDEN}",
        EXACT,
        ("trainer_log",),
    ),
    Output(
        "build lines with the same text (AdamW ... decay / no-decay params; tokenizer loaded; "
        "loaded N weights)",
        "log",
        (
            f"{_BASE}:BaseTrainer._build_optimizer",
            "hyper_parallel/trainer/llm_trainer.py:LLMTrainer._build_model_assets",
            f"{_BASE}:BaseTrainer._load_hf_safetensors",
        ),
        (
            "hyper_parallel/components/optimizer.py:OptimizersContainer",
            "hyper_parallel/components/tokenizer.py:HuggingFaceTokenizer",
            f"{_CM}:CheckpointManager._load_hf_weights",
        ),
        _BOTH_LOGS,
        f"the same format strings on both sides; {_LOG_GOLDEN}",
        EXACT,
        ("trainer_log",),
    ),
    Output(
        "loop lines (training for max_steps; Resuming training from step; Epoch N: dataloader "
        "exhausted; Training completed)",
        "log",
        (f"{_BASE}:BaseTrainer.train",),
        (f"{_HT}:HyperTrainer.train",),
        _BOTH_LOGS,
        "the same format strings on both sides; no recipe resumes, so 'Resuming training from "
        f"step' is not among them (the resume is compared as e2e.events on_load); {_LOG_GOLDEN}",
        EXACT,
        ("trainer_log",),
    ),
    Output(
        "checkpoint lines (saved / async issued; exported HF weights; resumed; artifact missing)",
        "log",
        (
            f"{_CB}:CheckpointCallback.save",
            f"{_CB}:SafetensorsExportCallback.export",
            f"{_READ}:StepReader.resume",
        ),
        (
            f"{_CM}:CheckpointManager._save_checkpoint",
            f"{_CM}:CheckpointManager._export_step",
            f"{_READ}:StepReader.resume",
        ),
        _BOTH_LOGS,
        "the same texts, but the async save line: legacy 'async checkpoint issued at step N to DIR', "
        "new 'Async checkpoint issued at step N to DIR'; no recipe saves asynchronously or resumes, "
        "so the saved and exported lines are the ones held; what they report is compared as "
        f"e2e.events (on_save, on_load) and the layout; {_LOG_GOLDEN}",
        EXACT,
        ("trainer_log",),
    ),
    Output(
        "profiler line (Profiler started; traces go to DIR/rank_<r>/)",
        "log",
        ("hyper_parallel/trainer/callbacks/profiler.py:ProfilerCallback.on_train_begin",),
        ("hyper_parallel/components/profiler.py:Profiler.__enter__",),
        _BOTH_LOGS,
        f"the same text on both sides; {_LOG_GOLDEN}",
        EXACT,
        ("trainer_log",),
    ),
    Output(
        "non-finite loss or gradient norm (warning, or the error that stops the run)",
        "log",
        ("hyper_parallel/trainer/init_helpers.py:LossWatch", f"{_HEALTH}:GradientHealthCallback"),
        ("hyper_parallel/trainer/init_helpers.py:LossWatch", f"{_HT}:HyperTrainer.train_step"),
        None,
        "the loss message is the shared LossWatch's (each names its own config field); the grad "
        "norm messages differ by design (legacy 'non-finite gradient norm ... (detected because "
        "train.debug.check_nan_inf is enabled)', new 'grad norm is ... (debug.check_nan_inf is "
        "on)'); tested by tests/torch/ut/trainer/test_nonfinite_loss.py, not by a parity case",
    ),
    # ------------------------------------------------------------------ user-callback events
    Output(
        "event on_init_end",
        "event",
        ("hyper_parallel/trainer/llm_trainer.py:LLMTrainer",),
        (),
        None,
        "reaches no user callback on either trainer: LLMTrainer dispatches it at the end of its "
        "__init__, before add_callback can be called, and HyperTrainer never calls on_init_end; "
        "one dispatched later would appear in e2e.events (EventRecorder records every on_* hook)",
    ),
    Output(
        "event on_train_begin",
        "event",
        (f"{_BASE}:BaseTrainer.train",),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.events.on_train_begin",),
        comparison=EXACT,
        cases=_EVENTS,
    ),
    Output(
        "event on_epoch_begin",
        "event",
        (f"{_BASE}:BaseTrainer.train",),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.events.on_epoch_begin",),
        comparison=EXACT,
        cases=_EVENTS,
    ),
    Output(
        "event on_step_begin",
        "event",
        (f"{_BASE}:BaseTrainer.train",),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.events.on_step_begin",),
        comparison=EXACT,
        cases=_EVENTS,
    ),
    Output(
        "event on_substep_end (after each micro-batch)",
        "event",
        (f"{_BASE}:BaseTrainer.train_step",),
        (f"{_HT}:HyperTrainer.train_step",),
        ("e2e.events.on_substep_end",),
        comparison=EXACT,
        cases=_EVENTS,
    ),
    Output(
        "event on_pre_optimizer_step (grad_norm)",
        "event",
        (f"{_BASE}:BaseTrainer.train_step",),
        (f"{_HT}:HyperTrainer.train_step",),
        ("e2e.events.on_pre_optimizer_step.args.grad_norm",),
        comparison=BITS,
        cases=_EVENTS,
    ),
    Output(
        "event on_step_end (loss, grad_norm)",
        "event",
        (f"{_BASE}:BaseTrainer.train",),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.events.on_step_end.args.loss", "e2e.events.on_step_end.args.grad_norm"),
        comparison=BITS,
        cases=_EVENTS,
    ),
    Output(
        "event on_log (metrics)",
        "event",
        (f"{_LOG}:LoggingCallback.on_step_end", f"{_BASE}:BaseTrainer.dispatch_log_event"),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.events.on_log.args.metrics.values", "e2e.events.on_log.args.metrics.keys"),
        "the values of step, loss, grad_norm, lr and aux_loss; step_time and tokens_per_sec by key "
        "and type (parity.callback_events.DETERMINISTIC_METRICS)",
        BITS,
        _EVENTS,
    ),
    Output(
        "event on_save (checkpoint_dir)",
        "event",
        (f"{_CB}:CheckpointCallback.save", f"{_BASE}:BaseTrainer.dispatch_save_event"),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.events.on_save.args.checkpoint_dir",),
        "the folder relative to the run's folder (EventRecorder); dispatched when the files are "
        "written, before step_<N>/ is committed, on both",
        EXACT,
        _EVENTS,
    ),
    Output(
        "event on_load (checkpoint_dir)",
        "event",
        (f"{_CB}:CheckpointCallback.resume", f"{_BASE}:BaseTrainer.dispatch_load_event"),
        (f"{_HT}:HyperTrainer.train", f"{_HT}:HyperTrainer._resolved_load_path"),
        ("e2e.events.on_load.args.checkpoint_dir",),
        "only in runs that resume (load_path set): the resume cases and user_callbacks",
        EXACT,
        ("explore_resume", "explore_resume_fixed", "user_callbacks"),
    ),
    Output(
        "event on_epoch_end",
        "event",
        (f"{_BASE}:BaseTrainer.train",),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.events.on_epoch_end",),
        comparison=EXACT,
        cases=_EVENTS,
    ),
    Output(
        "event on_train_end",
        "event",
        (f"{_BASE}:BaseTrainer.train",),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.events.on_train_end",),
        comparison=EXACT,
        cases=_EVENTS,
    ),
    Output(
        "event on_evaluate (metrics)",
        "event",
        (f"{_BASE}:BaseTrainer.dispatch_evaluate_event",),
        (f"{_HT}:HyperTrainer.dispatch_evaluate_event",),
        ("e2e.events.on_evaluate",),
        "neither trainer evaluates (evaluation is a stub): user_callbacks dispatches it as user "
        "code would, with metrics and without, after training",
        EXACT,
        ("user_callbacks",),
    ),
    # ------------------------------------------------------------------ return values
    Output(
        "train() return value",
        "return",
        ("hyper_parallel/trainer/llm_trainer.py:LLMTrainer.train", f"{_BASE}:BaseTrainer.train"),
        (f"{_HT}:HyperTrainer.train",),
        ("e2e.returned",),
        "None on both; added to the e2e recorder with this table (RUN_ARTIFACTS 'returned', so the "
        "explore cases compare it; the recipe grid compares ARTIFACTS only)",
        EXACT,
        ("explore_cover", "explore_drawn"),
    ),
    Output(
        "train_step() return value {loss, grad_norm}",
        "return",
        (f"{_BASE}:BaseTrainer.train_step", "hyper_parallel/trainer/llm_trainer.py:LLMTrainer.train_step"),
        (f"{_HT}:HyperTrainer.train_step",),
        ("e2e.losses", "e2e.grad_norms"),
        "the new side's curves are read from train_step's return (run_new's recording_step), the "
        "legacy side's from on_step_end, whose arguments BaseTrainer.train takes from train_step's "
        "return",
        BITS,
        _WITH_RESUME,
    ),
    Output(
        "new-only trainer attributes init_steps and last_step_metrics",
        "value",
        (),
        (f"{_HT}:HyperTrainer._init_step", f"{_HT}:HyperTrainer.train"),
        None,
        "no legacy counterpart: the RFC's 11 init steps run, and the last train_step return "
        "(compared as the curves)",
    ),
    # ------------------------------------------------------------------ entry points
    Output(
        "exit status (0; 2 for a configuration or input error; 1 for a failed save or a check_nan_inf stop)",
        "exit",
        ("scripts/train_lm.py:main", "hyper_parallel/entry.py:run_main"),
        ("hyper_parallel/train.py:main", "hyper_parallel/entry.py:run_main"),
        None,
        "both entry points return the shared run_main's status; no parity case runs an entry "
        "point: tests/torch/legacy_trainer/test_refused_inputs_cli.py and "
        "tests/torch/ut/trainer/test_nonfinite_loss.py run both",
    ),
    Output(
        "error line '<prog>: error: <message>' (and the traceback of any other error)",
        "exit",
        ("scripts/train_lm.py:main", "hyper_parallel/entry.py:run_main"),
        ("hyper_parallel/train.py:main", "hyper_parallel/entry.py:run_main"),
        None,
        "differ by design in <prog> only (train_lm.py / hyper_parallel.train), formatted by the "
        "shared run_main; the messages come from each side's checks and name each side's fields, "
        "so they are compared against goldens, not legacy against new: the parse step's status and "
        "line for every config field, once per refusing value class, on each entry point "
        "(cli_refusals, three routes: parity.config_sweep), every YAML field set to null, a list "
        "or a mapping and unknown keys with their warnings, on both entry points, and every "
        "Python recipe field through HyperTrainer.check_config (config_values, three routes: "
        "parity.value_sweep), what each side's resume says of a damaged checkpoint folder "
        "(component_checkpoint_damaged, legacy against new with the field prefix made equal, and "
        "component_checkpoint_damaged_rows), of changed run settings "
        "(component_checkpoint_changed_run_settings and _rows) and of each state of the run "
        "folder (component_run_folder_states and _rows), of initial weights in 16 states of the "
        "file x allow_partial_weights (component_weights_states and _rows, with the warning of a "
        "partial load), the shape of each command (cli_misuse) and number fields where checks "
        "turn (cli_boundaries); "
        "tests/torch/legacy_trainer/test_refused_inputs_cli.py and test_bad_input_table.py check the rest",
    ),
    Output(
        "--help",
        "exit",
        ("hyper_parallel/trainer/config.py:parse_args",),
        ("hyper_parallel/trainer/legacy_mapping.py:config_manager",),
        None,
        "differ by design: the legacy YAML command line (argparse) against tyro's whole "
        "HyperTrainer.Config tree",
    ),
)
