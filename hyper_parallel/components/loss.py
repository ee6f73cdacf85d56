"""Loss components: the causal-LM cross entropy that the legacy model computes inside ``forward``.

The new path calls ``model.forward_logits(input_ids)`` and then ``loss(logits, labels)``; this
module reproduces the legacy in-forward loss bit for bit:

- ``labels`` are the *unshifted* labels of the data pipeline. They are right-padded with
  ``ignore_index`` and shifted by one (``shift[..., t] = labels[..., t + 1]``, last position
  ignored); the logits are never sliced.
- The loss is ``cross_entropy(logits.float().view(-1, V), shift.reshape(-1), ignore_index,
  reduction)``, through the platform.

Token count hazard: the legacy train step weights micro-batches by tokens counted on the
*unshifted* labels (``count_loss_tokens``), while the mean above averages over the *shifted*
labels, which lack the first label of each row. The two counts differ by the number of rows whose
first label is not ignored; the train step must use ``count_loss_tokens`` to stay bit-exact.

``ChunkedCELoss`` bounds the float32 memory of the loss: the flattened tokens are split into
``chunks`` pieces; each piece computes ``log_softmax(chunk.float())`` and gathers the target
log-probabilities, under recompute (backward runs the piece again instead of keeping its
``[n, V]`` float32 activations). The gathered ``[N, 1]`` column then goes through the same NLL
kernel as the unchunked loss, with target 0 for kept rows and ``ignore_index`` for ignored rows
(``ignore_index=0`` duplicates the column and targets index 1).

Tolerance table (chunked vs ``CrossEntropyLoss``, value and gradient, any ``chunks``):

=========  ======  ==========================  ==========================================
backend    device  logits dtype                holds
=========  ======  ==========================  ==========================================
torch      cpu     float32, bfloat16           bit-exact (tested, incl. the NaN payload)
torch      cuda    float32, bfloat16           expected bit-exact, not verified (no GPU run)
mindspore  any     -                           not implemented on that platform yet
=========  ======  ==========================  ==========================================

Why it is exact rather than "within k ULP": cross entropy is ``nll(log_softmax(x))``. The
log-softmax is row-local, so chunking the rows changes no bit of it; the NLL reduction (CPU: a
cascade sum over rows; CUDA: strided per-thread sums) depends only on the sequence of picked
row values, the row count and the targets' ignore pattern, never on the class count, so the
``[N, 1]`` column reproduces the unchunked order exactly. The tempting alternative, a
``reduction="sum"`` per chunk divided by the global token count, re-associates the sum and was
measured up to 3 ULP away from the unchunked mean (random shapes, CPU): not used.

Mean over zero tokens (every label ignored) is NaN, as in the legacy forward (0/0 in the NLL
kernel; on x86 CPU the bits are 0xffc00000); the gradient is then all zeros.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hyper_parallel.platform import get_platform
from hyper_parallel.protocols.configurable import Configurable

if TYPE_CHECKING:
    import torch

__all__ = [
    "IGNORE_INDEX",
    "BaseLoss",
    "CrossEntropyLoss",
    "ChunkedCELoss",
    "count_loss_tokens",
    "shift_labels",
]

IGNORE_INDEX = -100
_REDUCTIONS = ("mean", "sum", "none")


def shift_labels(labels: torch.Tensor, ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """``[..., S]`` labels right-padded with ``ignore_index`` then shifted left by one (same shape)."""
    return get_platform().pad_last_dim(labels, 1, ignore_index)[..., 1:]


def count_loss_tokens(
    labels: torch.Tensor | Mapping[str, Any] | None, ignore_index: int = IGNORE_INDEX
) -> int:
    """Tokens that count for loss weighting: non-ignored *unshifted* labels (0 without labels).

    Accepts the labels tensor or a micro-batch mapping with a ``labels`` entry. This is the count
    the legacy train step uses (see the module docstring for why it is not the shifted count).
    """
    if isinstance(labels, Mapping):
        labels = labels.get("labels")
    if labels is None:
        return 0
    return int((labels != ignore_index).sum())


class BaseLoss(Configurable):
    """Abstract loss ``loss(logits, labels) -> tensor``; build a concrete subclass's Config.

    Building ``BaseLoss.Config()`` raises ``TypeError``: the base only carries the shared fields,
    so that a trainer field typed ``BaseLoss.Config`` can hold any concrete loss Config.
    """

    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        ignore_index: int = IGNORE_INDEX
        """Label value that takes no part in the loss or the token count (padding, prompt tokens)."""
        reduction: str = "mean"
        """How per-token losses combine: "mean" over the counted tokens, "sum", or "none"."""

        def __post_init__(self) -> None:
            if isinstance(self.ignore_index, bool) or not isinstance(self.ignore_index, int):
                raise TypeError(f"loss.ignore_index must be an int, got {self.ignore_index!r}")
            if self.reduction not in _REDUCTIONS:
                raise ValueError(
                    f"loss.reduction must be one of {', '.join(_REDUCTIONS)}; got {self.reduction!r}"
                )

    def __init__(self, config: BaseLoss.Config) -> None:
        if type(self) is BaseLoss:
            raise TypeError(
                "BaseLoss is abstract and cannot be built; build CrossEntropyLoss.Config() or ChunkedCELoss.Config()"
            )
        self.config = config

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__qualname__} does not implement __call__(logits, labels)")

    def count_tokens(self, labels: torch.Tensor | Mapping[str, Any] | None) -> int:
        """``count_loss_tokens`` with this loss's ``ignore_index``."""
        return count_loss_tokens(labels, self.config.ignore_index)


class CrossEntropyLoss(BaseLoss):
    """The legacy in-forward loss: shift the labels (pad, never slice logits), CE on float32 logits."""

    @dataclass(kw_only=True, slots=True)
    class Config(BaseLoss.Config):
        pass

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        shift = shift_labels(labels, cfg.ignore_index)
        return get_platform().cross_entropy(
            logits.float().view(-1, logits.shape[-1]),
            shift.reshape(-1),
            ignore_index=cfg.ignore_index,
            reduction=cfg.reduction,
        )


def _picked_log_probs(chunk: torch.Tensor, safe_targets: torch.Tensor) -> torch.Tensor:
    """``log_softmax(chunk.float())`` at each row's target, as an ``[n, 1]`` column."""
    return get_platform().log_softmax(chunk.float(), dim=-1).gather(1, safe_targets.unsqueeze(1))


class ChunkedCELoss(BaseLoss):
    """``CrossEntropyLoss`` computed ``chunks`` row-blocks at a time, with recompute in backward.

    Same value and gradient as ``CrossEntropyLoss`` (see the tolerance table in the module
    docstring); only one chunk's float32 ``[n, V]`` activations are alive at a time.
    """

    @dataclass(kw_only=True, slots=True)
    class Config(BaseLoss.Config):
        chunks: int = 8
        """Row blocks the logits are split into; one block's float32 activations are alive at a time."""

        def __post_init__(self) -> None:
            BaseLoss.Config.__post_init__(self)
            if isinstance(self.chunks, bool) or not isinstance(self.chunks, int) or self.chunks < 1:
                raise ValueError(f"loss.chunks must be an int >= 1, got {self.chunks!r}")

    config: Config

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        platform = get_platform()
        cfg = self.config
        ignore = cfg.ignore_index
        flat = logits.view(-1, logits.shape[-1])
        shift = shift_labels(labels, ignore).reshape(-1)
        kept = shift != ignore
        safe_targets = shift.masked_fill(~kept, 0)  # any in-range index: ignored rows are never read
        # Kept rows point at the picked column, ignored rows keep ignore_index. The column index
        # must differ from ignore_index, so ignore_index=0 uses a duplicated column and index 1.
        column = 1 if ignore == 0 else 0
        column_targets = shift.masked_fill(kept, column)
        rows = flat.shape[0]
        size = max(1, -(-rows // cfg.chunks))
        recompute = bool(getattr(flat, "requires_grad", False))
        pieces = []
        for chunk, targets in zip(flat.split(size, 0), safe_targets.split(size, 0), strict=True):
            if recompute:
                pieces.append(platform.recompute(_picked_log_probs, chunk, targets))
            else:
                pieces.append(_picked_log_probs(chunk, targets))
        picked = platform.cat(pieces, dim=0)
        if column:
            picked = platform.cat([picked, picked], dim=1)
        return platform.nll_loss(picked, column_targets, ignore_index=ignore, reduction=cfg.reduction)
