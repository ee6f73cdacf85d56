"""``data.type: dummy``: random token ids whose content depends only on the sample index."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset

from hyper_parallel.platform.logging import get_logger

__all__ = ["DUMMY_BASE_SEED", "DEFAULT_DUMMY_VOCAB", "DummyDataset", "build_dummy_dataset"]

logger = get_logger(__name__)

# Fixed on purpose: the dummy data does not follow train.seed.
DUMMY_BASE_SEED = 42
# Vocabulary used when the model exposes no config.
DEFAULT_DUMMY_VOCAB = 32000


class DummyDataset(Dataset):
    """``num_samples`` sequences of ``seq_len`` ids; item ``idx`` is drawn from a generator seeded ``base_seed + idx``.

    Seeding per index makes every sample reproducible regardless of sampler order, rank or worker.
    """

    def __init__(self, num_samples: int, seq_len: int, vocab_size: int, base_seed: int = DUMMY_BASE_SEED):
        self.num_samples = int(num_samples)
        self.seq_len = int(seq_len)
        self.vocab_size = int(vocab_size)
        self.base_seed = int(base_seed)

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, idx: int) -> dict[str, torch.Tensor]:
        idx = int(idx)
        if not 0 <= idx < self.num_samples:
            raise IndexError(f"DummyDataset index {idx} out of range [0, {self.num_samples})")
        g = torch.Generator().manual_seed(self.base_seed + idx)
        ids = torch.randint(0, self.vocab_size, (self.seq_len,), generator=g)
        return {"input_ids": ids, "labels": ids.clone()}


def build_dummy_dataset(trainer: Any) -> DummyDataset:
    """Legacy dispatch for ``dummy``: ``N = state.max_steps * train.global_batch_size``, vocab from the model."""
    args = trainer.args
    data = getattr(args, "data", None)
    train = getattr(args, "train", None)
    config = getattr(getattr(trainer, "model", None), "config", None)
    vocab = config.vocab_size if config is not None else DEFAULT_DUMMY_VOCAB
    max_steps = getattr(trainer.state, "max_steps", 0)
    global_batch_size = getattr(train, "global_batch_size", 8)
    seq_len = getattr(data, "max_seq_len", 2048)
    num_samples = int(max_steps) * int(global_batch_size)
    logger.info_rank0(
        "dummy dataset: %d samples (max_steps=%d x global_batch_size=%d), seq_len=%d, vocab=%d",
        num_samples,
        max_steps,
        global_batch_size,
        seq_len,
        vocab,
    )
    return DummyDataset(num_samples, seq_len, vocab, base_seed=DUMMY_BASE_SEED)
