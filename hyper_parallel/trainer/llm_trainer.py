"""LLMTrainer: the legacy text trainer, a composition wrapper that fixes the 13-step build order."""

from __future__ import annotations

import functools
import os

from hyper_parallel.platform.logging import get_logger
from hyper_parallel.trainer.base import BaseTrainer

logger = get_logger(__name__)


class LLMTrainer:
    """Runs the 13 build steps in order on a ``BaseTrainer``; steps 4-7 are text-specific."""

    def __init__(self, args) -> None:
        self.args = args
        self.base = BaseTrainer(args)
        base = self.base
        base._setup()  # 1
        base._build_model()  # 2
        base._freeze_model()  # 3
        self._build_model_assets()  # 4
        self._build_data_transform()  # 5
        self._build_dataset()  # 6
        self._build_collate_fn()  # 7
        base._build_dataloader()  # 8
        base._build_parallelized_model()  # 9
        base._build_optimizer()  # 10
        base._build_lr_scheduler()  # 11
        base._build_training_context()  # 12
        base._init_callbacks()  # 13
        base.on_init_end()

    # ---------------------------------------------------------------- delegation
    def train(self) -> None:
        self.base.train()

    def train_step(self, it):
        return self.base.train_step(it)

    def add_callback(self, callback) -> None:
        self.base.add_callback(callback)

    # ------------------------------------------------------------------ step 4
    def _build_model_assets(self) -> None:
        """Load the local HF tokenizer (none for dummy data); pad falls back to eos."""
        base, args = self.base, self.args
        base.processor = None
        base.tokenizer = None
        data_type = getattr(args.data, "type", None) or "dummy"
        if data_type == "dummy":
            return
        path = getattr(args.model, "tokenizer_path", None) or getattr(args.model, "weights_path", None)
        if not path:
            if data_type == "preset_pt":
                return
            raise ValueError(
                f"data.type={data_type} needs a tokenizer: set model.tokenizer_path (or model.weights_path)"
            )
        if not os.path.isdir(path):
            raise FileNotFoundError(
                f"model.tokenizer_path (or model.weights_path) {path!r} is not an existing directory; expected a "
                "local HF tokenizer folder with tokenizer.json and tokenizer_config.json"
            )
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(
            path,
            trust_remote_code=bool(getattr(args.model, "trust_remote_code", False)),
            local_files_only=True,
        )
        if tokenizer.pad_token is None:
            if tokenizer.eos_token is not None:
                tokenizer.pad_token = tokenizer.eos_token
            else:
                logger.warning("tokenizer at %s has neither pad nor eos token; the collate pads with 0", path)
        vocab_size = getattr(getattr(base.model, "config", None), "vocab_size", None)
        if vocab_size is not None and len(tokenizer) > vocab_size:
            raise ValueError(
                f"the tokenizer at {path} has {len(tokenizer)} tokens but model.vocab_size is {vocab_size}; "
                "set model.vocab_size to at least the tokenizer size"
            )
        logger.info_rank0("tokenizer loaded from %s (%d tokens)", path, len(tokenizer))
        base.tokenizer = tokenizer

    # ------------------------------------------------------------------ step 5
    def _build_data_transform(self) -> None:
        base, data = self.base, self.args.data
        if base.tokenizer is None:
            base.data_transform = None
            return
        from hyper_parallel.data.transforms import build_text_transform

        base.data_transform = build_text_transform(
            base.tokenizer,
            cutoff=data.max_seq_len,
            text_key=data.text_key,
            data_type=data.type,
            template=data.template,
        )

    # ------------------------------------------------------------------ step 6
    def _build_dataset(self) -> None:
        from hyper_parallel.data.registry import get_dataset_builder

        data_type = getattr(self.args.data, "type", None) or "dummy"
        self.base.train_dataset = get_dataset_builder(data_type)(self.base)

    # ------------------------------------------------------------------ step 7
    def _build_collate_fn(self) -> None:
        from hyper_parallel.data.collate import pad_collate

        tokenizer = self.base.tokenizer
        pad_id = 0
        if tokenizer is not None and tokenizer.pad_token_id is not None:
            pad_id = tokenizer.pad_token_id

        self.base.collate_fn = functools.partial(pad_collate, pad_id=pad_id)

    def __getattr__(self, name: str):
        # Attributes built on the base (model, optimizer, state, ...) read through the wrapper.
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)
