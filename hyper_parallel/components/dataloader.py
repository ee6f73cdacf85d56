"""Dataloader components: dataset, collate, DP sampler and a resumable loader in one object (RFC Part 3).

``BaseDataLoader.Config`` carries what is the dataloader's own (the legacy ``data:`` fields, under
their YAML names). The sizes and the seed are the training loop's (``TrainingConfig``) and reach
the loader as ``build(...)`` kwargs, as in torchtitan: ``seq_len``, ``local_batch_size``,
``global_batch_size``, ``seed``, so each lives in one place. The Config's class picks the loader,
as for every component: ``DummyDataLoader.Config(...)``, ``HuggingFaceTextDataLoader.Config(...)``
or ``PresetPtDataLoader.Config(...)`` builds its own class. The legacy ``data.type`` string is
turned into one of these Configs once, in ``hyper_parallel.trainer.legacy_mapping``.

Why a wrapper and not a ``StatefulDataLoader`` subclass: components reach torch only through the
platform, so the loader is created by ``platform.stateful_dataloader`` and held as ``.loader``.
The component forwards what a training loop and a checkpoint need (``__iter__``, ``__len__``,
``state_dict``, ``load_state_dict``) and adds what the legacy trainer kept beside the loader
(``sampler``, ``grad_accum``, the micro-batch grouping, the effective ``training_steps``).

Leaf pieces are shared with the legacy path (dataset classes and the text transform in
``hyper_parallel.data``); the wiring (dataset selection, the ``max_steps`` change, collate, dp rank,
sampler, loader, grad accumulation, grouping) is this module's own code.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hyper_parallel.platform import get_platform
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.protocols.configurable import Configurable

if TYPE_CHECKING:
    import torch

__all__ = [
    "BaseDataLoader",
    "DummyDataLoader",
    "HuggingFaceTextDataLoader",
    "PresetPtDataLoader",
    "LABEL_PAD_ID",
    "DEFAULT_VOCAB_SIZE",
    "data_parallel_rank",
]

logger = get_logger(__name__)

# Labels are right-padded with the loss's ignore index, so padding never counts as a target.
LABEL_PAD_ID = -100
# Dummy vocabulary when the caller has no model config to take it from.
DEFAULT_VOCAB_SIZE = 32000
# The row formats ``HuggingFaceTextDataLoader`` reads (``hyper_parallel.data.hf.load_raw_dataset``).
_TEXT_FORMATS = ("hf_datasets", "json_file")
# Dummy sample ``idx`` is drawn from a generator seeded ``42 + idx``: fixed, not ``seed``.
_DUMMY_BASE_SEED = 42


def data_parallel_rank(global_rank: int, non_dp_size: int) -> int:
    """The dp rank of ``global_rank`` when the DP axes are outermost: ``rank // (tp*cp*pp*ep)``.

    Ranks that share a dp rank (a tensor/context/pipeline/expert group) must read the same data.
    """
    if non_dp_size < 1:
        raise ValueError(f"non_dp_size (tp*cp*pp*ep) must be >= 1, got {non_dp_size}")
    return global_rank // non_dp_size


class BaseDataLoader(Configurable):
    """A map-style dataset read through ``DistributedSampler`` + ``StatefulDataLoader`` for one dp rank.

    Subclasses provide ``_build_dataset``; their Config picks them. After construction: ``dataset``, ``collate_fn``, ``sampler``, ``loader``, ``grad_accum``, ``pad_id``,
    ``seq_len`` and ``training_steps`` (the horizon after the dataset's change of ``max_steps``,
    which the LR scheduler must use).
    """

    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        """The legacy ``data:`` fields that are the loader's own (YAML names); sizes come as kwargs."""

        train_path: str | None = None
        """Local dataset folder or file (``preset_pt``: the ``torch.save``'d batches); unused by dummy."""
        subset: str | None = None
        """Configuration name inside a dataset folder; None for a single file."""
        train_size: int | None = None
        """Keep only the first N raw rows; None keeps them all."""
        streaming: bool = False
        """Must stay false: the distributed sampler needs a dataset with a length."""
        text_key: str = "text"
        """Column with the plain text (rows without an ``instruction`` column)."""
        template: str = "empty"
        """Alpaca ``json_file`` rows: "empty" masks the prompt in the labels, else train on all the text."""
        num_workers: int = 0
        """Loader worker processes (0: load in the training process)."""
        prefetch_factor: int | None = None
        """Batches each worker loads ahead; used only with ``num_workers > 0``."""
        pin_memory: bool = True
        """Pin host memory for faster copies to the device (ignored on CPU)."""
        shuffle: bool = True
        """Shuffle the samples; the permutation is seeded ``seed + epoch``."""

    def __init__(
        self,
        config: BaseDataLoader.Config,
        *,
        seq_len: int,
        local_batch_size: int,
        global_batch_size: int,
        seed: int,
        dp_world_size: int = 1,
        dp_rank: int = 0,
        tokenizer: Any = None,
        training_steps: int | None = None,
        vocab_size: int | None = None,
    ) -> None:
        """``seq_len``, ``local_batch_size`` (samples per forward on one rank), ``global_batch_size``
        (samples per optimizer step over all dp ranks) and ``seed`` (the sampler's shuffle seed) are
        ``TrainingConfig``'s values (legacy ``data.max_seq_len``, ``train.micro_batch_size``,
        ``train.global_batch_size``, ``train.seed``)."""
        name = type(self).__qualname__
        if type(self)._build_dataset is BaseDataLoader._build_dataset:
            raise TypeError(
                f"{name} reads no dataset; build DummyDataLoader.Config, HuggingFaceTextDataLoader.Config "
                "or PresetPtDataLoader.Config"
            )
        _check_positive("local_batch_size", local_batch_size)
        _check_positive("global_batch_size", global_batch_size)
        _check_positive("dp_world_size", dp_world_size)
        _check_positive("seq_len", seq_len)
        if global_batch_size % (local_batch_size * dp_world_size):
            raise ValueError(
                f"global_batch_size={global_batch_size} is not a multiple of local_batch_size * "
                f"dp_world_size = {local_batch_size} * {dp_world_size}; expected the global batch to "
                "split into whole micro batches on every data-parallel rank"
            )
        if not 0 <= dp_rank < dp_world_size:
            raise ValueError(f"dp_rank must be in [0, dp_world_size={dp_world_size}), got {dp_rank}")
        if config.num_workers < 0:
            raise ValueError(f"num_workers (data.num_workers) must be >= 0, got {config.num_workers}")
        self.config = config
        self.dp_world_size = int(dp_world_size)
        self.dp_rank = int(dp_rank)
        self.seq_len = int(seq_len)
        self.local_batch_size = int(local_batch_size)
        self.global_batch_size = int(global_batch_size)
        self.seed = int(seed)
        self.tokenizer = tokenizer
        self.training_steps = training_steps
        self.dataset = self._build_dataset(
            tokenizer=tokenizer, training_steps=training_steps, vocab_size=vocab_size
        )
        self.pad_id = self._pad_id(tokenizer)
        self.collate_fn = functools.partial(_pad_collate, pad_id=self.pad_id)

        platform = get_platform()
        self.sampler = platform.distributed_sampler(
            self.dataset,
            num_replicas=self.dp_world_size,
            rank=self.dp_rank,
            shuffle=config.shuffle,
            seed=self.seed,
            drop_last=True,
        )
        extra: dict[str, Any] = {}
        if config.num_workers > 0 and config.prefetch_factor is not None:
            extra["prefetch_factor"] = config.prefetch_factor
        self.loader = platform.stateful_dataloader(
            self.dataset,
            batch_size=self.local_batch_size,
            sampler=self.sampler,
            collate_fn=self.collate_fn,
            num_workers=config.num_workers,
            # Pinning only helps a host-to-device copy; there is none on CPU.
            pin_memory=bool(config.pin_memory) and platform.device_type() != "cpu",
            drop_last=True,
            **extra,
        )
        # The global batch divides (checked above), so this is the exact number of micro batches.
        self.grad_accum = max(self.global_batch_size // (self.local_batch_size * self.dp_world_size), 1)
        logger.info_rank0(
            "%s: micro batch size %d, grad_accum %d, dataset length %d, dp rank %d of %d",
            name,
            self.local_batch_size,
            self.grad_accum,
            len(self.dataset),
            self.dp_rank,
            self.dp_world_size,
        )

    # ------------------------------------------------------------------ hooks
    def _build_dataset(self, *, tokenizer: Any, training_steps: int | None, vocab_size: int | None) -> Any:
        """Return the map-style dataset; may set ``self.training_steps``."""
        raise NotImplementedError(f"{type(self).__qualname__} must implement _build_dataset")

    def _pad_id(self, tokenizer: Any) -> int:
        """The tokenizer's pad id, or 0 without a tokenizer or without a pad token."""
        pad = getattr(tokenizer, "pad_token_id", None) if tokenizer is not None else None
        if pad is None and tokenizer is not None:
            pad = getattr(getattr(tokenizer, "hf", None), "pad_token_id", None)
        return 0 if pad is None else int(pad)

    # --------------------------------------------------------------- iteration
    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        """Micro-batches of this dp rank (creating the iterator draws from the global RNG)."""
        return iter(self.loader)

    def __len__(self) -> int:
        """Micro-batches per epoch on this dp rank."""
        return len(self.loader)

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle for ``epoch`` (the sampler's permutation is seeded ``seed + epoch``)."""
        self.sampler.set_epoch(epoch)

    def micro_batch_iterator(self) -> Iterator[list[dict[str, torch.Tensor]]]:
        """Lists of ``grad_accum`` micro-batches, then the trailing partial list, if any.

        The loader iterator is created now, with the global RNG state put back afterwards:
        creating it draws a worker base seed, and a resumed run must see the same RNG stream as an
        uninterrupted one.
        """
        platform = get_platform()
        saved = platform.get_rng_state()
        batches = iter(self.loader)
        platform.set_rng_state(saved)
        return _grouped(batches, self.grad_accum)

    # ------------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """The ``StatefulDataLoader`` state (position in the epoch), for mid-epoch resume."""
        return self.loader.state_dict()

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        self.loader.load_state_dict(state_dict)


class DummyDataLoader(BaseDataLoader):
    """``type: dummy``: ``training_steps * global_batch_size`` random sequences, content fixed per index."""

    @dataclass(kw_only=True, slots=True)
    class Config(BaseDataLoader.Config):
        """Random sequences: only the loader settings of the base Config apply."""

    def _build_dataset(self, *, tokenizer: Any, training_steps: int | None, vocab_size: int | None) -> Any:
        from hyper_parallel.data.dummy import DummyDataset

        if training_steps is None:
            raise ValueError(
                "DummyDataLoader needs training_steps (the run's max_steps): the dataset holds "
                "training_steps * global_batch_size samples"
            )
        vocab = DEFAULT_VOCAB_SIZE if vocab_size is None else int(vocab_size)
        num_samples = int(training_steps) * self.global_batch_size
        logger.info_rank0(
            "dummy dataloader: %d samples, seq_len=%d, vocab=%d", num_samples, self.seq_len, vocab
        )
        return DummyDataset(num_samples, self.seq_len, vocab, base_seed=_DUMMY_BASE_SEED)

    def _pad_id(self, tokenizer: Any) -> int:
        """Always 0: the dummy path has no tokenizer (its rows are equal-length anyway)."""
        return 0


class HuggingFaceTextDataLoader(BaseDataLoader):
    """``type: hf_datasets`` / ``json_file``: a local dataset tokenised by the text transform.

    ``training_steps`` shrinks to the number of full global batches the data holds; ``None`` means
    no requested cap.
    """

    @dataclass(kw_only=True, slots=True)
    class Config(BaseDataLoader.Config):
        """A local dataset folder or file; ``format`` is how its rows are read (legacy ``data.type``)."""

        format: Literal["hf_datasets", "json_file"] = "hf_datasets"
        """How the rows are read: "hf_datasets" (a ``datasets`` folder or data file) or "json_file"."""

    config: Config

    def _build_dataset(self, *, tokenizer: Any, training_steps: int | None, vocab_size: int | None) -> Any:
        from hyper_parallel.data.hf import TokenizedDataset, load_raw_dataset
        from hyper_parallel.data.transforms import build_text_transform, name_data_rows

        cfg = self.config
        if cfg.format not in _TEXT_FORMATS:
            raise ValueError(
                f"HuggingFaceTextDataLoader.Config.format (data.type) is {cfg.format!r}; expected one of "
                f"{', '.join(_TEXT_FORMATS)}"
            )
        if tokenizer is None:
            raise ValueError(
                f"data.type={cfg.format} needs a tokenizer: pass tokenizer= (the HuggingFaceTokenizer "
                "component or a HF tokenizer) to build()"
            )
        # The tokenizer component delegates to the HF tokenizer it holds as ``.hf``.
        encoder = getattr(tokenizer, "hf", None)
        encoder = tokenizer if encoder is None else encoder
        if cfg.subset and cfg.train_path and os.path.isfile(cfg.train_path):
            raise ValueError(
                f"data.subset={cfg.subset!r} names a configuration of a dataset folder, but "
                f"data.train_path={cfg.train_path!r} is a file, which has none; unset data.subset"
            )
        raw = load_raw_dataset(cfg.format, cfg.train_path, cfg.subset, streaming=cfg.streaming)
        if cfg.train_size is not None and cfg.train_size < len(raw):
            raw = raw.select(range(cfg.train_size))
        transform = build_text_transform(
            encoder, cutoff=self.seq_len, text_key=cfg.text_key, data_type=cfg.format, template=cfg.template
        )
        transform = name_data_rows(transform, cfg.train_path)  # row errors name the file and row
        tokenized = raw.map(transform, batched=True, remove_columns=raw.column_names, desc="Tokenizing")
        tokenized = tokenized.filter(_has_tokens)
        dataset = TokenizedDataset(tokenized)

        full_batches = len(dataset) // self.global_batch_size
        steps = full_batches if training_steps is None else min(int(training_steps), full_batches)
        if steps == 0:
            raise ValueError(
                f"train_path={cfg.train_path!r} gives {len(dataset)} samples after tokenisation with "
                f"global_batch_size={self.global_batch_size} and training_steps={training_steps}: the "
                "training steps would be 0; expected at least one full global batch"
            )
        self.training_steps = steps
        logger.info_rank0(
            "%s dataloader %s: %d samples, training_steps=%d", cfg.format, cfg.train_path, len(dataset), steps
        )
        return dataset


class PresetPtDataLoader(BaseDataLoader):
    """``type: preset_pt``: replay of pre-tokenised batches; exact replay needs ``shuffle=False``.

    A truthy ``training_steps`` is kept as the horizon (a reset, never a shrink to the data).
    """

    @dataclass(kw_only=True, slots=True)
    class Config(BaseDataLoader.Config):
        """A ``torch.save``'d list of batches at ``train_path``."""

    def _build_dataset(self, *, tokenizer: Any, training_steps: int | None, vocab_size: int | None) -> Any:
        from hyper_parallel.data.preset_pt import PresetDataset, flatten_preset_batches, load_preset_batches

        cfg = self.config
        if not cfg.train_path:
            raise ValueError(
                "data.type=preset_pt needs train_path (data.train_path: a torch.save'd list of batches); "
                "it is not set"
            )
        dataset = PresetDataset(flatten_preset_batches(load_preset_batches(cfg.train_path)))
        if training_steps:
            self.training_steps = int(training_steps)
        if cfg.shuffle:
            logger.warning_rank0(
                "preset_pt with shuffle=True does not replay the batches in order; set shuffle=False"
            )
        logger.info_rank0("preset_pt dataloader %s: %d samples", cfg.train_path, len(dataset))
        return dataset


# ---------------------------------------------------------------------------- helpers


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _has_tokens(row: Mapping[str, Any]) -> bool:
    return len(row["input_ids"]) > 0


def _pad_collate(items: Sequence[Mapping[str, Any]], *, pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad to the longest item: ids with ``pad_id``, labels with -100; int64; only these two keys.

    Any other field (a preset ``attention_mask``) is dropped: the model never receives one.
    """
    if not items:
        raise ValueError("collate received no items")
    platform = get_platform()
    longest = max(len(item["input_ids"]) for item in items)

    def padded(values: Any, fill: int) -> torch.Tensor:
        row = platform.as_int64(values)
        if len(platform.shape(row)) != 1:
            raise ValueError(f"collate expects 1-D sequences, got shape {tuple(platform.shape(row))}")
        missing = longest - platform.shape(row)[0]
        if missing < 0:  # a negative pad would silently crop
            raise ValueError(
                f"collate: a labels row has {platform.shape(row)[0]} ids, more than input_ids ({longest})"
            )
        return platform.pad_last_dim(row, missing, fill)

    return {
        "input_ids": platform.stack([padded(item["input_ids"], pad_id) for item in items]),
        "labels": platform.stack([padded(item["labels"], LABEL_PAD_ID) for item in items]),
    }


def _grouped(batches: Iterator[Any], size: int) -> Iterator[list[Any]]:
    group: list[Any] = []
    for batch in batches:
        group.append(batch)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group
