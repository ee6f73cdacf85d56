"""Loss aggregation helpers for the legacy train step."""

from __future__ import annotations

IGNORE_INDEX = -100


def count_loss_token(micro_batch) -> int:
    """Tokens that contribute to the loss, counted on the *unshifted* labels (0 without labels)."""
    labels = micro_batch.get("labels") if isinstance(micro_batch, dict) else None
    if labels is None:
        return 0
    return int((labels != IGNORE_INDEX).sum())


def mean_global_loss(loss, mb_tokens: int, global_tokens: int, dp_size: int):
    """Scale a micro-batch mean loss so that the DP-averaged gradient is the global token mean.

    The ratio is a Python float computed first; the ``dp_size`` factor cancels FSDP's AVG reduce.
    """
    if dp_size <= 0:
        raise ValueError(f"dp_size must be positive, got {dp_size}")
    if global_tokens <= 0:
        return loss
    return loss * (mb_tokens / global_tokens) * dp_size
