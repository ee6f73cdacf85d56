"""Tokenizer components: a local Hugging Face tokenizer folder with the legacy pad rule.

``HuggingFaceTokenizer`` is the component form of the legacy ``LLMTrainer._build_model_assets``:

1. ``tokenizer.path`` empty -> ``ValueError``; not an existing directory -> ``FileNotFoundError``
   naming the field and the expected files (``tokenizer.json``, ``tokenizer_config.json``).
2. ``AutoTokenizer.from_pretrained(path, trust_remote_code=..., local_files_only=True)``: nothing
   is downloaded.
3. Pad rule: ``pad_token`` from the Config when given (it must be a token of the tokenizer), else
   the tokenizer's own pad token, else its eos token; with none of them ``pad_token_id`` is
   ``None`` and the collate pads with 0 (a warning says so).
4. Optional vocabulary check (``vocab_size`` build kwarg or ``check_vocab``): more tokenizer ids
   than ``model.vocab_size`` -> ``ValueError``.

Deviation from the RFC, on purpose: the RFC builds with ``config.tokenizer.build(path=...)``, but
the Configurable protocol forbids a build kwarg that repeats a Config field (a value has exactly
one source). ``path`` is therefore only a Config field: ``HuggingFaceTokenizer.Config(path=p).build()``.
Which data types need a tokenizer (none for ``dummy``, optional for ``preset_pt``) is the
trainer's choice of whether to build one, not this component's.

The object is usable wherever the legacy code takes an HF tokenizer (for example the data
transforms, which call ``tokenizer(texts, truncation=..., ...)``): calling it passes through to the
wrapped tokenizer, ``.hf`` is that tokenizer, and other attributes are read from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, cast

from hyper_parallel.platform.logging import get_logger
from hyper_parallel.protocols.configurable import Configurable

__all__ = ["BaseTokenizer", "HuggingFaceTokenizer"]

logger = get_logger(__name__)

_EXPECTED_FILES = "tokenizer.json and tokenizer_config.json"


class BaseTokenizer(Configurable):
    """Abstract text <-> ids tokenizer; building ``BaseTokenizer.Config()`` raises ``TypeError``."""

    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        path: str | None = None
        """Local Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json); never downloaded."""
        trust_remote_code: bool = False
        """Passed to ``AutoTokenizer.from_pretrained``: allow the folder's own tokenizer code to run."""
        pad_token: str | None = None
        """Pad token to use (a token of the tokenizer); None: the tokenizer's pad token, else its eos."""

    def __init__(self, config: BaseTokenizer.Config) -> None:
        if type(self) is BaseTokenizer:
            raise TypeError(
                "BaseTokenizer is abstract and cannot be built; build HuggingFaceTokenizer.Config(path=...)"
            )
        self.config = config

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        raise NotImplementedError

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        raise NotImplementedError

    @property
    def pad_token_id(self) -> int | None:
        raise NotImplementedError

    @property
    def eos_token_id(self) -> int | None:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def check_vocab(self, vocab_size: int | None) -> None:
        """``ValueError`` naming ``model.vocab_size`` when the tokenizer has more ids than the model."""
        if vocab_size is not None and len(self) > vocab_size:
            raise ValueError(
                f"the tokenizer at {self.config.path} has {len(self)} tokens but model.vocab_size is "
                f"{vocab_size}; set model.vocab_size to at least the tokenizer size"
            )


class HuggingFaceTokenizer(BaseTokenizer):
    """A local HF tokenizer folder loaded with ``AutoTokenizer`` plus the pad rule (see module doc)."""

    @dataclass(kw_only=True, slots=True)
    class Config(BaseTokenizer.Config):
        pass

    def __init__(self, config: HuggingFaceTokenizer.Config, *, vocab_size: int | None = None) -> None:
        BaseTokenizer.__init__(self, config)
        path = os.fspath(config.path) if config.path else ""
        if not path:
            raise ValueError(
                "tokenizer.path is not set: expected a local HF tokenizer folder with "
                f"{_EXPECTED_FILES} (legacy YAML: model.tokenizer_path or model.weights_path)"
            )
        if not os.path.isdir(path):
            raise FileNotFoundError(
                f"tokenizer.path {path!r} is not an existing directory; expected a local HF tokenizer "
                f"folder with {_EXPECTED_FILES}"
            )
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(
            path, trust_remote_code=bool(config.trust_remote_code), local_files_only=True
        )
        self.hf = hf
        self._apply_pad_rule(path)
        self.check_vocab(vocab_size)
        logger.info_rank0("tokenizer loaded from %s (%d tokens)", path, len(hf))

    def _apply_pad_rule(self, path: str) -> None:
        hf, wanted = self.hf, self.config.pad_token
        if wanted is not None:
            if wanted not in hf.get_vocab():
                raise ValueError(
                    f"tokenizer.pad_token {wanted!r} is not a token of the tokenizer at {path}; expected "
                    "one of its tokens (or leave it unset: the tokenizer's pad, else eos, is used)"
                )
            hf.pad_token = wanted
        elif hf.pad_token is None:
            if hf.eos_token is not None:
                hf.pad_token = hf.eos_token
            else:
                logger.warning("tokenizer at %s has neither pad nor eos token; the collate pads with 0", path)

    # ------------------------------------------------------------------ API
    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self.hf.encode(text, add_special_tokens=add_special_tokens))

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        # A list of ids decodes to one string (the ``list[str]`` of the stub is for batches).
        return cast(str, self.hf.decode(ids, skip_special_tokens=skip_special_tokens))

    @property
    def pad_token_id(self) -> int | None:
        return self.hf.pad_token_id

    @property
    def eos_token_id(self) -> int | None:
        return self.hf.eos_token_id

    def __len__(self) -> int:
        return len(self.hf)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Pass through to the HF tokenizer (the legacy data transforms call it this way)."""
        return self.hf(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names this class lacks; dunder lookups (pickle, copy) and a missing
        # ``hf`` (object not initialised) must not recurse.
        if name.startswith("__") or name == "hf":
            raise AttributeError(name)
        return getattr(self.hf, name)
