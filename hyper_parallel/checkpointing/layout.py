"""Names on disk: the manifest file, the ``step_<N>/``, ``.partial.step_<N>/`` and
``.replaced.step_<N>/`` folders of a run folder, and how to find each."""

from __future__ import annotations

import contextlib
import os
import re

# IMPORTS


MANIFEST_FILE = "manifest.json"


MANIFEST_FORMAT = "hyper_parallel.checkpoint/1"


HF_SUBDIR = "hf_ckpt"  # the HF export inside a step folder
HF_WEIGHTS_FILE = "model.safetensors"
HF_INDEX_FILE = "model.safetensors.index.json"
HF_CONFIG_FILE = "config.json"
EXTRA_STATE_FILE = "extra_state.json"
SCHEDULER_FILE = "scheduler.pt"
DCP_METADATA_FILE = ".metadata"
PARTIAL_PREFIX = ".partial."


# An older step_<N>/ being replaced by a new save of the same step: complete and verifiable, and
# found by resume until the new folder is in place (commit_step_dir).
REPLACED_PREFIX = ".replaced."


STEP_RE = re.compile(r"^step_(\d+)$")


REPLACED_RE = re.compile(r"^\.replaced\.step_(\d+)$")


# --------------------------------------------------------------------------- staging
def optimizer_file(rank: int) -> str:
    return f"optimizer_rank{rank}.pt"


def rng_file(rank: int) -> str:
    return f"rng_rank{rank}.pt"


def dataloader_file(rank: int) -> str:
    return f"dataloader_rank{rank}.pt"


def step_dir(output_dir: str, step: int) -> str:
    """The committed folder of ``step``."""
    return os.path.join(output_dir, f"step_{step}")


def partial_step_dir(output_dir: str, step: int) -> str:
    return os.path.join(output_dir, f"{PARTIAL_PREFIX}step_{step}")


def replaced_step_dir(final: str) -> str:
    """Where an older ``step_<N>/`` waits while a new save of step N takes its name."""
    parent, name = os.path.split(os.path.abspath(final))
    return os.path.join(parent, f"{REPLACED_PREFIX}{name}")


def _numbered_dirs(root: str, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """``(N, path)`` of the folders directly under ``root`` whose name ``pattern`` matches, newest first."""
    found = []
    with contextlib.suppress(OSError):
        for name in os.listdir(root):
            match = pattern.match(name)
            if match and os.path.isdir(os.path.join(root, name)):
                found.append((int(match.group(1)), os.path.join(root, name)))
    return sorted(found, reverse=True)


def find_step_dirs(root: str) -> list[tuple[int, str]]:
    """``(step, path)`` of the ``step_<N>/`` folders directly under ``root``, newest first."""
    return _numbered_dirs(root, STEP_RE)


def find_replaced_dirs(root: str) -> list[tuple[int, str]]:
    """``(step, path)`` of the ``.replaced.step_<N>/`` folders under ``root`` (a replacement that
    was interrupted), newest first."""
    return _numbered_dirs(root, REPLACED_RE)


def find_partials(root: str) -> list[str]:
    with contextlib.suppress(OSError):
        return sorted(os.path.join(root, n) for n in os.listdir(root) if n.startswith(PARTIAL_PREFIX))
    return []
