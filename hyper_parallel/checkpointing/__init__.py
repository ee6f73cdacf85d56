"""Checkpoints for both trainers: the legacy callbacks and ``CheckpointManager`` share all of it.

What a checkpoint holds (which state files, from which objects) and when a save is due is each
trainer's own code (``trainer/callbacks/checkpoint.py`` and ``components/checkpoint.py``). The
lifecycle is one: :class:`.lifecycle.StepWriter` saves and :class:`.reader.StepReader` resumes
for both, so a folder written by one is committed, trusted and restored by the other the same way:

- **Staging.** A save writes into ``<output_dir>/.partial.step_<N>/`` and, once every file is on
  disk and fsynced, :func:`commit_step_dir` writes ``manifest.json`` (every file's relative path,
  size and sha256) as the last file and renames the folder to ``step_<N>/``. A killed save leaves
  only a ``.partial.*`` folder, which is reported and never loaded.
- **Background commit.** :class:`StepCommitter` runs that commit on one background thread of
  rank 0 (``ckpt-commit``), so a synchronous save returns once its files are written, and the
  hashing, manifest, fsyncs and rename overlap with training. The trainers join it (``wait``)
  before the next save, before a load and at train end; a failed commit raises
  :class:`CheckpointSaveError` there, naming the folder.
- **Verification.** :func:`resolve_checkpoint` accepts a ``step_<N>/`` folder whose manifest
  matches its files, or a run folder (the ``output_dir``), where it takes the newest complete
  ``step_<N>/``. Anything else is a :class:`CheckpointCorruptError` naming the folder and the
  first missing or mismatched file.
- **Nothing unverified.** A manifest must list every file a resume reads (an empty or partial
  list is refused). A folder without a manifest (written before manifests, or not a checkpoint)
  and a ``.partial.*`` folder are refused unless ``allow_unverified``, which loads them with one
  warning naming what was not verified. A file read as initial weights from inside a checkpoint
  folder (a ``step_<N>/hf_ckpt/`` export given as ``weights_path``) is checked against that
  folder's manifest first (:func:`verify_files_in_checkpoint`).
- **Replacement.** A new save of an existing step renames the old folder to
  ``.replaced.step_<N>/`` (complete, found by resume) before the new one takes its name, and
  deletes it after (a failure to delete it is a warning: the new folder is committed). Which
  existing checkpoints a run may replace at all is decided before its first step
  (:func:`.run_lock.check_fresh_output_dir`, :func:`.run_lock.check_resume_output_dir`).
- **Modules**, one job each: :mod:`.errors`, :mod:`.layout` (names on disk), :mod:`.staging`
  (write, hash, manifest, commit), :mod:`.verify` (manifest checks, ``resolve_checkpoint``),
  :mod:`.run_lock` (one writer per run folder), :mod:`.resume_settings` and :mod:`.weights_fit`
  (checkpoints and initial weights against the model), :mod:`.lifecycle` (the save side) and
  :mod:`.reader` (the resume side). This package only re-exports the leaf modules.
- **Errors**: :class:`CheckpointCorruptError` (and :class:`UnsafeCheckpointError` for a crafted
  pickle), :class:`CheckpointSaveError`, :class:`CheckpointMismatchError`,
  :class:`UnwritableDirError`.

Pure Python (``os``, ``hashlib``, ``json``): the framework is reached through the callables the
trainers pass in (``dcp_check``) and the platform.
"""

from __future__ import annotations

from hyper_parallel.checkpointing.errors import (
    CheckpointCorruptError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CheckpointSaveError,
    UnsafeCheckpointError,
    UnwritableDirError,
    WeightsLoadError,
    load_error,
)
from hyper_parallel.checkpointing.layout import (
    DCP_METADATA_FILE,
    EXTRA_STATE_FILE,
    HF_CONFIG_FILE,
    HF_INDEX_FILE,
    HF_SUBDIR,
    HF_WEIGHTS_FILE,
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    PARTIAL_PREFIX,
    REPLACED_PREFIX,
    SCHEDULER_FILE,
    dataloader_file,
    find_partials,
    find_replaced_dirs,
    find_step_dirs,
    optimizer_file,
    partial_step_dir,
    replaced_step_dir,
    rng_file,
    step_dir,
)
from hyper_parallel.checkpointing.resume_settings import ResumeConfigError, ResumePastEndError
from hyper_parallel.checkpointing.run_lock import (
    ExistingCheckpointsError,
    LockFileRefusedError,
    RunFolderLockedError,
    acquire_run_folder,
    check_fresh_output_dir,
    check_resume_output_dir,
    release_run_folder,
)
from hyper_parallel.checkpointing.staging import (
    StepCommitter,
    atomic_write,
    atomic_write_json,
    check_writable_dir,
    commit_step_dir,
    dcp_files_written,
    discard_partial,
    fault_point,
    file_written,
    fsync_path,
    in_staged_folder,
    prepare_partial_dir,
    set_fault_hook,
    write_manifest,
)
from hyper_parallel.checkpointing.verify import (
    ALLOW_UNVERIFIED_HINT,
    resolve_checkpoint,
    verify_files_in_checkpoint,
    verify_manifest,
)
from hyper_parallel.checkpointing.weights_fit import WeightsMismatchError, check_weights_fit

__all__ = [
    "EXTRA_STATE_FILE",
    "SCHEDULER_FILE",
    "HF_WEIGHTS_FILE",
    "HF_INDEX_FILE",
    "HF_CONFIG_FILE",
    "DCP_METADATA_FILE",
    "optimizer_file",
    "rng_file",
    "dataloader_file",
    "HF_SUBDIR",
    "ALLOW_UNVERIFIED_HINT",
    "CheckpointCorruptError",
    "CheckpointMismatchError",
    "CheckpointNotFoundError",
    "CheckpointSaveError",
    "ExistingCheckpointsError",
    "LockFileRefusedError",
    "MANIFEST_FILE",
    "MANIFEST_FORMAT",
    "PARTIAL_PREFIX",
    "REPLACED_PREFIX",
    "ResumeConfigError",
    "ResumePastEndError",
    "RunFolderLockedError",
    "StepCommitter",
    "UnsafeCheckpointError",
    "UnwritableDirError",
    "WeightsLoadError",
    "WeightsMismatchError",
    "acquire_run_folder",
    "atomic_write",
    "atomic_write_json",
    "check_fresh_output_dir",
    "check_resume_output_dir",
    "check_weights_fit",
    "check_writable_dir",
    "commit_step_dir",
    "dcp_files_written",
    "discard_partial",
    "fault_point",
    "file_written",
    "find_partials",
    "find_replaced_dirs",
    "find_step_dirs",
    "fsync_path",
    "in_staged_folder",
    "load_error",
    "partial_step_dir",
    "prepare_partial_dir",
    "release_run_folder",
    "replaced_step_dir",
    "resolve_checkpoint",
    "set_fault_hook",
    "step_dir",
    "verify_files_in_checkpoint",
    "verify_manifest",
    "write_manifest",
]
