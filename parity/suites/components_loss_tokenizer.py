"""Parity cases of the loss and tokenizer components.

Loss, tier A: the legacy in-forward loss ``model(input_ids, labels)["loss"]`` against
``loss(model.forward_logits(input_ids), labels)`` on the same seeded debug model and batch, loss
value and every parameter gradient bit for bit (``chunks=0`` means ``CrossEntropyLoss``, else
``ChunkedCELoss(chunks)``). The model is the shared leaf; only the loss code differs. The
ignore_index and drawn pairs also compare the micro-batch token weight (``tokens``): the legacy
train step's ``count_loss_token`` against ``loss.count_tokens`` as ``HyperTrainer.train_step``
calls it, so a count that ignores the configured ``ignore_index`` turns them red.

Tokenizer, tier A: token ids, decoded text, pad/eos ids and size from the legacy
``LLMTrainer._build_model_assets`` tokenizer against ``HuggingFaceTokenizer``, on a fixed
multilingual text set and on hypothesis-drawn text, for four tokenizer folders (the shipped asset,
a BOS/EOS post-processor variant, an explicit pad token, no eos at all); and the legacy data
transform + collate fed with either tokenizer.

Tier B: the new components' outputs on the same fixed inputs (loss and logits gradient; ids).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import strategies as st

from parity import assets, canonical
from parity.builders import TOKENIZER_VARIANTS, tokenizer_variant, variant_root
from parity.cases import REGISTRY
from parity.legacy_driver import debug_model, legacy_args

__all__ = [
    "TEXTS",
    "TOKENIZER_VARIANTS",
    "model_batch",
    "cached_debug_model",
    "legacy_tokenizer",
    "new_tokenizer",
    "tokenizer_variant",
]

_VOCAB = 2048  # the debug flavour's vocab_size (checked against the model config below)

# Edge cases added to the multilingual corpus of the shipped tokenizer.
_EDGE_TEXTS = (
    "",
    " ",
    "   leading and trailing spaces   ",
    "tabs\tand\nnewlines\r\n",
    "<|endoftext|> literal special token <|im_start|>",
    "zero\u200bwidth and combining e\u0301 and ZWJ 👩\u200d💻",
    "\u0000 control \u001f chars \u007f",
    "מימין לשמאל עם عربي mixed",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 astral plane 𠜎𠜱",
    "a" * 300,
)


def _corpus() -> tuple[str, ...]:
    from parity.assets.build_assets import CORPUS

    return tuple(CORPUS)


TEXTS: tuple[str, ...] = _corpus() + _EDGE_TEXTS


# ----------------------------------------------------------------------------- legacy drivers


@functools.cache
def cached_debug_model(seed: int, dtype: str = "float32") -> Any:
    """``debug_model`` kept per seed and dtype: the cases here change only its gradients."""
    model = debug_model(seed, dtype=dtype)
    if model.config.vocab_size != _VOCAB:
        raise AssertionError(f"debug flavour vocab_size changed to {model.config.vocab_size}; update _VOCAB")
    return model


def model_batch(*, batch: int, seq: int, data_seed: int, ignore: str):
    """Seeded ``(input_ids, labels)``; ``ignore``: none | prompt | random | firstcol | all."""
    import torch

    g = torch.Generator().manual_seed(data_seed)
    input_ids = torch.randint(0, _VOCAB, (batch, seq), generator=g)
    labels = input_ids.clone()
    if ignore == "prompt":
        labels[0, : max(1, seq // 4)] = -100
    elif ignore == "random":
        labels[torch.rand(batch, seq, generator=g) < 0.3] = -100
    elif ignore == "firstcol":
        labels[:, 0] = -100
    elif ignore == "all":
        labels.fill_(-100)
    elif ignore != "none":
        raise ValueError(f"ignore={ignore!r}: expected none, prompt, random, firstcol or all")
    return input_ids, labels


def _pct_batch(*, batch: int, seq: int, data_seed: int, ignore_pct: int):
    import torch

    input_ids, labels = model_batch(batch=batch, seq=seq, data_seed=data_seed, ignore="none")
    g = torch.Generator().manual_seed(data_seed + 1)
    labels[torch.rand(batch, seq, generator=g) * 100 < ignore_pct] = -100
    return input_ids, labels


def _loss_and_grads(model, loss) -> dict[str, Any]:
    loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = None
    return {"loss": loss.detach(), "grads": grads}


def _clear_grads(model) -> None:
    for p in model.parameters():
        p.grad = None


def _legacy_forward_loss(model, input_ids, labels) -> dict[str, Any]:
    _clear_grads(model)
    return _loss_and_grads(model, model(input_ids=input_ids, labels=labels)["loss"])


def _new_loss(chunks: int):
    from hyper_parallel.components.loss import ChunkedCELoss, CrossEntropyLoss

    config = CrossEntropyLoss.Config() if chunks == 0 else ChunkedCELoss.Config(chunks=chunks)
    return config.build()


def _component_loss(model, input_ids, labels, chunks: int) -> dict[str, Any]:
    _clear_grads(model)
    return _loss_and_grads(model, _new_loss(chunks)(model.forward_logits(input_ids), labels))


def legacy_loss(*, seed: int, dtype: str, batch: int, seq: int, data_seed: int, ignore: str, chunks: int):
    del chunks  # the legacy model has one loss
    ids, labels = model_batch(batch=batch, seq=seq, data_seed=data_seed, ignore=ignore)
    return _legacy_forward_loss(cached_debug_model(seed, dtype), ids, labels)


def new_loss(*, seed: int, dtype: str, batch: int, seq: int, data_seed: int, ignore: str, chunks: int):
    ids, labels = model_batch(batch=batch, seq=seq, data_seed=data_seed, ignore=ignore)
    return _component_loss(cached_debug_model(seed, dtype), ids, labels, chunks)


def legacy_loss_drawn(*, chunks: int, batch: int, seq: int, data_seed: int, ignore_pct: int):
    del chunks
    ids, labels = _pct_batch(batch=batch, seq=seq, data_seed=data_seed, ignore_pct=ignore_pct)
    return {**_legacy_forward_loss(cached_debug_model(0), ids, labels), "tokens": _legacy_tokens(labels)}


def new_loss_drawn(*, chunks: int, batch: int, seq: int, data_seed: int, ignore_pct: int):
    ids, labels = _pct_batch(batch=batch, seq=seq, data_seed=data_seed, ignore_pct=ignore_pct)
    tokens = _new_tokens(_new_loss(chunks), labels)
    return {**_component_loss(cached_debug_model(0), ids, labels, chunks), "tokens": tokens}


def _legacy_tokens(labels) -> list[int]:
    """The legacy train step's micro-batch token weight: ``count_loss_token`` on the batch mapping."""
    from hyper_parallel.trainer.utils.loss import count_loss_token

    return [count_loss_token({"labels": labels}), count_loss_token({"labels": labels[:1]})]


def _new_tokens(loss, labels) -> list[int]:
    """``loss.count_tokens`` as ``HyperTrainer.train_step`` calls it (the micro-batch mapping), on the
    whole batch and on its first row (a second micro-batch with its own count)."""
    return [loss.count_tokens({"labels": labels}), loss.count_tokens({"labels": labels[:1]})]


class _Leaf:
    """One Parameter under ``named_parameters()``: what ``platform.backward`` differentiates."""

    def __init__(self, param: Any) -> None:
        self.param = param

    def named_parameters(self):
        yield "leaf", self.param


def _component_loss_golden_mindspore(*, seed: int, ids: Any, labels: Any, chunks: int) -> dict[str, Any]:
    """The MindSpore side of ``component_loss_golden``: the same integer batch, the platform's debug
    model (``parity.legacy_driver.debug_model``), the gradient w.r.t. the logits from ``platform.backward``."""
    import mindspore as ms

    from hyper_parallel.platform import get_platform

    platform = get_platform()
    ids, labels = platform.as_int64(ids.tolist()), platform.as_int64(labels.tolist())
    logits = platform.detached_copy(debug_model(seed).forward_logits(ids))
    leaf = _Leaf(ms.Parameter(logits, name="logits"))
    loss_fn = _new_loss(chunks)

    def loss_and_value() -> tuple[Any, Any]:
        value = loss_fn(leaf.param, labels)
        return value, value

    loss = platform.backward(loss_and_value, leaf)
    return {"loss": platform.detached_copy(loss), "logits_grad": platform.grad_of(leaf.param)}


def component_loss_golden(*, seed: int, batch: int, seq: int, data_seed: int, ignore: str, chunks: int):
    """Tier B: the new loss on the debug model's logits (detached): value and logits gradient."""
    import torch

    from hyper_parallel.platform import get_platform

    ids, labels = model_batch(batch=batch, seq=seq, data_seed=data_seed, ignore=ignore)
    if get_platform().name != "torch":
        return _component_loss_golden_mindspore(seed=seed, ids=ids, labels=labels, chunks=chunks)
    with torch.no_grad():
        logits = cached_debug_model(seed).forward_logits(ids)
    logits.requires_grad_(True)
    loss = _new_loss(chunks)(logits, labels)
    loss.backward()
    return {"loss": loss.detach(), "logits_grad": logits.grad}


def _relabelled_batch(*, ignore_index: int, batch: int, seq: int, data_seed: int, ignore: str):
    """``(ids, legacy_labels, new_labels)``: the legacy labels ignore with -100 (its only value),
    the new ones with ``ignore_index`` at the same positions; a kept label equal to
    ``ignore_index`` is moved to the next id on both sides so that it stays kept."""
    ids, labels = model_batch(batch=batch, seq=seq, data_seed=data_seed, ignore=ignore)
    ignored = labels == -100
    labels = labels.masked_fill(~ignored & (labels == ignore_index), (ignore_index + 1) % _VOCAB)
    return ids, labels, labels.masked_fill(ignored, ignore_index)


def legacy_loss_ignore_index(
    *, ignore_index: int, chunks: int, batch: int, seq: int, data_seed: int, ignore: str
):
    del chunks
    ids, labels, _ = _relabelled_batch(
        ignore_index=ignore_index, batch=batch, seq=seq, data_seed=data_seed, ignore=ignore
    )
    return {**_legacy_forward_loss(cached_debug_model(0), ids, labels), "tokens": _legacy_tokens(labels)}


def new_loss_ignore_index(
    *, ignore_index: int, chunks: int, batch: int, seq: int, data_seed: int, ignore: str
):
    from hyper_parallel.components.loss import ChunkedCELoss, CrossEntropyLoss

    ids, _, labels = _relabelled_batch(
        ignore_index=ignore_index, batch=batch, seq=seq, data_seed=data_seed, ignore=ignore
    )
    if chunks == 0:
        loss = CrossEntropyLoss.Config(ignore_index=ignore_index).build()
    else:
        loss = ChunkedCELoss.Config(chunks=chunks, ignore_index=ignore_index).build()
    model = cached_debug_model(0)
    _clear_grads(model)
    return {
        **_loss_and_grads(model, loss(model.forward_logits(ids), labels)),
        "tokens": _new_tokens(loss, labels),
    }


def _loss_and_grads_any(model, loss) -> dict[str, Any]:
    """``_loss_and_grads`` for any reduction: a per-token loss is backpropagated through its sum."""
    (loss if loss.dim() == 0 else loss.sum()).backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
    _clear_grads(model)
    return {"loss": loss.detach(), "grads": grads}


def legacy_loss_reduction(*, reduction: str, chunks: int, batch: int, seq: int, data_seed: int, ignore: str):
    """The legacy in-forward loss formula (qwen3_5 ``forward``) with ``reduction`` in place of mean."""
    import torch.nn.functional as F

    del chunks
    ids, labels = model_batch(batch=batch, seq=seq, data_seed=data_seed, ignore=ignore)
    model = cached_debug_model(0)
    _clear_grads(model)
    logits = model.forward_logits(ids)
    shift = F.pad(labels, (0, 1), value=-100)[..., 1:]
    loss = F.cross_entropy(
        logits.float().view(-1, logits.shape[-1]), shift.reshape(-1), ignore_index=-100, reduction=reduction
    )
    return _loss_and_grads_any(model, loss)


def new_loss_reduction(*, reduction: str, chunks: int, batch: int, seq: int, data_seed: int, ignore: str):
    from hyper_parallel.components.loss import ChunkedCELoss, CrossEntropyLoss

    ids, labels = model_batch(batch=batch, seq=seq, data_seed=data_seed, ignore=ignore)
    if chunks == 0:
        loss = CrossEntropyLoss.Config(reduction=reduction).build()
    else:
        loss = ChunkedCELoss.Config(chunks=chunks, reduction=reduction).build()
    model = cached_debug_model(0)
    _clear_grads(model)
    return _loss_and_grads_any(model, loss(model.forward_logits(ids), labels))


# ----------------------------------------------------------------------------- tokenizers


def legacy_tokenizer(path: str | os.PathLike, vocab_size: int | None = _VOCAB, *overrides: str):
    """The tokenizer ``LLMTrainer._build_model_assets`` builds (model stub with ``config.vocab_size``)."""
    from hyper_parallel.trainer.base import BaseTrainer
    from hyper_parallel.trainer.llm_trainer import LLMTrainer

    args = legacy_args("--data.type=hf_datasets", f"--model.tokenizer_path={path}", *overrides)
    base = BaseTrainer.__new__(BaseTrainer)
    base.args = args
    stub = SimpleNamespace(config=SimpleNamespace(vocab_size=vocab_size)) if vocab_size else None
    base.model = stub  # type: ignore[assignment]  # a stand-in: the tokenizer step reads model.config only
    base.tokenizer = base.processor = None
    wrapper = LLMTrainer.__new__(LLMTrainer)
    wrapper.args, wrapper.base = args, base
    wrapper._build_model_assets()
    return base.tokenizer


def new_tokenizer(path: str | os.PathLike, vocab_size: int | None = _VOCAB, **config: Any):
    from hyper_parallel.components.tokenizer import HuggingFaceTokenizer

    return HuggingFaceTokenizer.Config(path=str(path), **config).build(vocab_size=vocab_size)


def _token_tree(texts, encode, decode, tok, pad_token_id) -> dict[str, Any]:
    ids = [encode(t) for t in texts]
    return {
        "ids": canonical.token_ids(ids),
        "decoded": [decode(i) for i in ids],
        "pad_token_id": pad_token_id,
        "eos_token_id": tok.eos_token_id,
        "size": len(tok),
    }


def legacy_token_ids(*, variant: str, special: bool, texts: tuple[str, ...] | list[str] = TEXTS):
    tok = legacy_tokenizer(tokenizer_variant(variant))
    return _token_tree(
        texts,
        lambda t: tok(t, add_special_tokens=special)["input_ids"],
        tok.decode,
        tok,
        tok.pad_token_id,
    )


def new_token_ids(*, variant: str, special: bool, texts: tuple[str, ...] | list[str] = TEXTS):
    tok = new_tokenizer(tokenizer_variant(variant))
    return _token_tree(
        texts, lambda t: tok.encode(t, add_special_tokens=special), tok.decode, tok, tok.pad_token_id
    )


_PAD_TEXTS = TEXTS[:4] + ("<|im_end|> and <|endoftext|>",)


@functools.cache
def _pad_override_folder(variant: str, pad_token: str) -> Path:
    """``variant``'s folder with ``pad_token`` written into its tokenizer_config (the legacy way to
    get the pad token that ``HuggingFaceTokenizer.Config.pad_token`` asks for)."""
    src = tokenizer_variant(variant)
    out = variant_root() / f"{variant}-pad-{pad_token.strip('<|>')}"
    out.mkdir(parents=True, exist_ok=True)
    config = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["pad_token"] = pad_token
    (out / "tokenizer.json").write_bytes((src / "tokenizer.json").read_bytes())
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return out


def legacy_config_pad(*, variant: str, pad: str):
    """``pad``: the special token's name, ``<|{pad}|>`` (case params allow no ``<|``)."""
    tok = legacy_tokenizer(_pad_override_folder(variant, f"<|{pad}|>"))
    tree = _token_tree(_PAD_TEXTS, lambda t: tok(t)["input_ids"], tok.decode, tok, tok.pad_token_id)
    return {**tree, "pad_token": tok.pad_token}


def new_config_pad(*, variant: str, pad: str):
    tok = new_tokenizer(tokenizer_variant(variant), pad_token=f"<|{pad}|>")
    tree = _token_tree(_PAD_TEXTS, tok.encode, tok.decode, tok, tok.pad_token_id)
    return {**tree, "pad_token": tok.pad_token}


@contextlib.contextmanager
def _record_from_pretrained():
    """``AutoTokenizer.from_pretrained`` wrapped: each call's ``trust_remote_code`` is recorded."""
    from unittest import mock

    from transformers import AutoTokenizer

    seen: list[Any] = []
    original = AutoTokenizer.from_pretrained

    def recorder(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("trust_remote_code", "<not passed>"))
        return original(*args, **kwargs)

    with mock.patch.object(AutoTokenizer, "from_pretrained", recorder):
        yield seen


def legacy_trust_remote_code(*, trust_remote_code: bool):
    with _record_from_pretrained() as seen:
        legacy_tokenizer(
            tokenizer_variant("asset"), _VOCAB, f"--model.trust_remote_code={str(trust_remote_code).lower()}"
        )
    return {"trust_remote_code": seen}


def new_trust_remote_code(*, trust_remote_code: bool):
    with _record_from_pretrained() as seen:
        new_tokenizer(tokenizer_variant("asset"), trust_remote_code=trust_remote_code)
    return {"trust_remote_code": seen}


def _refusal(build) -> dict[str, Any]:
    """The error ``build()`` raises: type, whether it names ``model.vocab_size``, and its numbers."""
    import re

    try:
        build()
    except Exception as exc:  # the error itself is the compared value
        text = str(exc)
        return {
            "error": type(exc).__name__,
            "names_field": "model.vocab_size" in text,
            "numbers": re.findall(r"\b\d+\b", text.split(" has ", 1)[-1]),
        }
    return {"error": None}


def legacy_vocab_refusal(*, vocab_size: int):
    return _refusal(lambda: legacy_tokenizer(tokenizer_variant("asset"), vocab_size))


def new_vocab_refusal(*, vocab_size: int):
    """``HyperTrainer._init_tokenizer`` (init step 2) on a Config mapped from the same legacy YAML."""
    from hyper_parallel.trainer.hyper_trainer import HyperTrainer
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    args = legacy_args(
        "--data.type=hf_datasets",
        f"--model.tokenizer_path={tokenizer_variant('asset')}",
        f"--model.vocab_size={vocab_size}",
    )
    trainer = HyperTrainer.__new__(HyperTrainer)
    trainer.config = legacy_to_trainer_config(args)
    spec = trainer.config.model_spec
    assert spec is not None, "legacy_to_trainer_config sets the model spec"
    trainer.spec = spec
    return _refusal(trainer._init_tokenizer)


def _transform_and_collate(tok, pad_token_id, *, cutoff: int, rows: int) -> dict[str, Any]:
    from hyper_parallel.data.collate import make_pad_collate
    from hyper_parallel.data.transforms import build_text_transform

    with open(assets.text_jsonl(), encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f][:rows]
    out = build_text_transform(tok, cutoff=cutoff, text_key="text", data_type="hf_datasets")({"text": texts})
    collate = make_pad_collate(pad_token_id)
    items = [{"input_ids": i, "labels": lab} for i, lab in zip(out["input_ids"], out["labels"], strict=True)]
    return {
        "input_ids": canonical.token_ids(out["input_ids"]),
        "labels": canonical.token_ids(out["labels"]),
        "batches": canonical.batches([collate(items[i : i + 4]) for i in range(0, len(items), 4)]),
    }


def legacy_transform(*, variant: str, cutoff: int, rows: int):
    tok = legacy_tokenizer(tokenizer_variant(variant))
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0  # legacy _build_collate_fn
    return _transform_and_collate(tok, pad, cutoff=cutoff, rows=rows)


def new_transform(*, variant: str, cutoff: int, rows: int):
    tok = new_tokenizer(tokenizer_variant(variant))
    return _transform_and_collate(tok, tok.pad_token_id, cutoff=cutoff, rows=rows)


# ----------------------------------------------------------------------------- registration

_LOSS_BASE = {"seed": 0, "dtype": "float32", "batch": 2, "seq": 32, "data_seed": 7}
_LOSS_PAIRS = (
    {"ignore": "none", "chunks": 0},
    {"ignore": "prompt", "chunks": 0},
    {"ignore": "random", "chunks": 0},
    {"ignore": "firstcol", "chunks": 0},
    {"ignore": "all", "chunks": 0},
    {"ignore": "random", "chunks": 0, "dtype": "bfloat16"},
    {"ignore": "prompt", "chunks": 1},
    {"ignore": "random", "chunks": 3},
    {"ignore": "random", "chunks": 7},
    {"ignore": "all", "chunks": 3},
    {"ignore": "random", "chunks": 5, "dtype": "bfloat16"},
    {"ignore": "prompt", "chunks": 64, "batch": 1, "seq": 20},  # more chunks than rows
)

LOSS = REGISTRY.suite(tags=("loss",))
TOKENIZER = REGISTRY.suite(tags=("tokenizer",))

LOSS.grid(
    "component_loss_vs_legacy",
    params=[{**_LOSS_BASE, **_extra} for _extra in _LOSS_PAIRS],
    kind="losses",
    seed=0,
    legacy=legacy_loss,
    new=new_loss,
)

# ignore_index other than -100 (legacy: always -100, so its labels use -100 at the same places).
LOSS.grid(
    "component_loss_ignore_index_vs_legacy",
    params=[
        {"batch": 2, "seq": 16, "data_seed": 7, "ignore": "random", **_extra}
        for _extra in (
            {"ignore_index": -1, "chunks": 0},
            {"ignore_index": 0, "chunks": 0},
            {"ignore_index": 0, "chunks": 3},
            {"ignore_index": 5, "chunks": 4},
        )
    ],
    kind="losses",
    seed=0,
    legacy=legacy_loss_ignore_index,
    new=new_loss_ignore_index,
)

# reduction sum / none against the legacy formula with that reduction.
LOSS.grid(
    "component_loss_reduction_vs_legacy",
    params=[
        {"batch": 2, "seq": 16, "data_seed": 7, "ignore": "random", **_extra}
        for _extra in (
            {"reduction": "sum", "chunks": 0},
            {"reduction": "none", "chunks": 0},
            {"reduction": "sum", "chunks": 3},
            {"reduction": "none", "chunks": 3},
        )
    ],
    kind="losses",
    seed=0,
    legacy=legacy_loss_reduction,
    new=new_loss_reduction,
)

_LOSS_STRATEGIES = {
    "batch": st.integers(1, 2),
    "seq": st.integers(1, 16),
    "data_seed": st.integers(0, 2**16),
    "ignore_pct": st.sampled_from([0, 10, 50, 90, 100]),
}
LOSS.grid(
    "component_loss_drawn_vs_legacy",
    params=[{"chunks": _chunks} for _chunks in (0, 4)],
    kind="losses",
    seed=0,
    legacy=legacy_loss_drawn,
    new=new_loss_drawn,
    strategies=_LOSS_STRATEGIES,
)

for _extra in (
    {"ignore": "prompt", "chunks": 0},
    {"ignore": "prompt", "chunks": 3},
    {"ignore": "all", "chunks": 0},
):
    REGISTRY.golden(
        "component_loss",
        kind="losses",
        tags=("loss", "nonfinite") if _extra["ignore"] == "all" else ("loss",),  # no token: a NaN loss
        seed=0,
        params={"seed": 0, "batch": 2, "seq": 32, "data_seed": 7, **_extra},
        producer=component_loss_golden,
        backends=("torch", "mindspore"),
    )

TOKENIZER.grid(
    "component_tokenizer_vs_legacy",
    params=[
        {"variant": _variant, "special": _special}
        for _variant, _special in (
            ("asset", True),
            ("asset", False),
            ("bos_eos", True),
            ("bos_eos", False),
            ("pad", True),
            ("no_eos", True),
        )
    ],
    kind="token_ids",
    legacy=legacy_token_ids,
    new=new_token_ids,
)

# Config.pad_token on a tokenizer with a pad token of its own (variant "pad": <|im_end|>) and on
# one without (asset): the Config wins in both (legacy: the same token in tokenizer_config.json).
TOKENIZER.grid(
    "component_tokenizer_config_pad_vs_legacy",
    params=[
        {"variant": _variant, "pad": _pad} for _variant, _pad in (("pad", "endoftext"), ("asset", "im_end"))
    ],
    kind="token_ids",
    legacy=legacy_config_pad,
    new=new_config_pad,
)

TOKENIZER.pair(
    "component_tokenizer_trust_remote_code_vs_legacy",
    kind="token_ids",
    params={"trust_remote_code": False},
    legacy=legacy_trust_remote_code,
    new=new_trust_remote_code,
)

# A tokenizer (512 ids) larger than model.vocab_size: both sides refuse with the same error.
TOKENIZER.pair(
    "trainer_tokenizer_vocab_refusal_vs_legacy",
    kind="token_ids",
    params={"vocab_size": 64},
    legacy=legacy_vocab_refusal,
    new=new_vocab_refusal,
)

TOKENIZER.grid(
    "component_tokenizer_drawn_vs_legacy",
    params=[{"variant": _variant} for _variant in ("asset", "bos_eos")],
    kind="token_ids",
    legacy=legacy_token_ids,
    new=new_token_ids,
    strategies={"special": st.booleans(), "texts": st.lists(st.text(max_size=48), max_size=4)},
)

TOKENIZER.grid(
    "component_tokenizer_transform_vs_legacy",
    params=[{"variant": _variant, "cutoff": 64, "rows": 24} for _variant in ("asset", "pad", "no_eos")],
    kind="token_ids",
    legacy=legacy_transform,
    new=new_transform,
)

# The pair above runs one collate on both sides; this golden pins what it pads with (the "pad"
# variant's pad id is not 0, so padding with 0 or with -100 shows in the batches).
TOKENIZER.grid(
    "component_tokenizer_transform",
    params=[{"variant": "pad", "cutoff": 64, "rows": 24}],
    kind="token_ids",
    producer=new_transform,
)

TOKENIZER.grid(
    "component_tokenizer",
    params=[
        {"variant": _variant, "special": _special}
        for _variant, _special in (("asset", True), ("bos_eos", True), ("bos_eos", False))
    ],
    kind="token_ids",
    producer=new_token_ids,
    backends=("torch", "mindspore"),
)
