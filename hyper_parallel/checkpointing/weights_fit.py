"""Initial weights load whole or not at all: does a weights file fit the model?

Both loaders (the legacy ``BaseTrainer._load_*`` and ``CheckpointManager.load_weights``) describe
the model and the file as ``{name: (shape, is_floating)}`` and call :func:`check_weights_fit`
before copying anything. A parameter the file lacks, a tensor the model does not have, or a tensor
of another shape or dtype class (integer vs floating) is a :class:`WeightsMismatchError` naming
the first offenders and the counts; with ``allow_partial_weights`` the fitting tensors load, and
one warning lists what keeps its random init.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from hyper_parallel.checkpointing import CheckpointMismatchError

__all__ = ["ALLOW_PARTIAL_HINT", "WeightsMismatchError", "check_weights_fit"]

logger = logging.getLogger(__name__)

ALLOW_PARTIAL_HINT = "checkpoint.allow_partial_weights=true"

Entry = tuple[tuple[int, ...], bool | None]  # (shape, is_floating); is_floating None: not checked


class WeightsMismatchError(CheckpointMismatchError):
    """Initial weights do not fit the model (nothing was loaded)."""


def _first(names: Sequence[str], n: int = 3) -> str:
    return ", ".join(names[:n]) + (", ..." if len(names) > n else "")


def check_weights_fit(
    path: str,
    model: Mapping[str, Entry],
    loaded: Mapping[str, Entry],
    *,
    required: Sequence[str] | None = None,
    aliases: Mapping[str, str] | None = None,
    allow_partial: bool = False,
) -> set[str]:
    """The names of ``loaded`` that fit ``model``; an error unless everything fits.

    ``required`` are the model names that must be loaded (default: all of ``model``); ``aliases``
    maps a tied parameter's second name to the first, so loading either one counts.
    """
    aliases = aliases or {}
    unknown = sorted(name for name in loaded if name not in model)
    misfit = []
    for name in sorted(set(loaded) & set(model)):
        (src_shape, src_float), (dst_shape, dst_float) = loaded[name], model[name]
        if tuple(src_shape) != tuple(dst_shape):
            misfit.append(f"{name} (shape {list(src_shape)} in the file, {list(dst_shape)} in the model)")
        elif src_float is not None and dst_float is not None and src_float != dst_float:
            kinds = {True: "floating", False: "integer"}
            misfit.append(f"{name} ({kinds[src_float]} in the file, {kinds[dst_float]} in the model)")
    fits = {name for name in loaded if name in model} - {m.split(" ", 1)[0] for m in misfit}
    covered = fits | {alias for alias, target in aliases.items() if target in fits}
    covered |= {target for alias, target in aliases.items() if alias in fits}
    wanted = list(required if required is not None else model)
    stays_random = sorted(name for name in wanted if name not in covered)
    present = (
        set(loaded)
        | {a for a, t in aliases.items() if t in loaded}
        | {t for a, t in aliases.items() if a in loaded}
    )
    missing = sorted(name for name in wanted if name not in present)
    if not (unknown or misfit or stays_random):
        return fits
    parts = []
    if missing:
        parts.append(f"{len(missing)} model parameters missing from the file (first: {_first(missing)})")
    if unknown:
        parts.append(f"{len(unknown)} tensors the model does not have (first: {_first(unknown)})")
    if misfit:
        parts.append(f"{len(misfit)} tensors that do not fit (first: {_first(misfit, 2)})")
    summary = "; ".join(parts)
    if not allow_partial:
        raise WeightsMismatchError(
            f"weights {path} do not fit the model: {summary}; nothing was loaded (set "
            f"{ALLOW_PARTIAL_HINT} to load the tensors that fit and keep the rest at random init)"
        )
    logger.warning(
        f"Loading weights {path} PARTIALLY ({ALLOW_PARTIAL_HINT}): {summary}; "
        f"{len(stays_random)} parameters keep their random init"
        + (f": {', '.join(stays_random)}" if stays_random else "")
    )
    return fits
