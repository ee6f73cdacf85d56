"""Batched ``datasets.map`` text transforms of the legacy trainer (spec 6.2).

The transform returns unshifted labels (the model shifts) and drops rows that tokenise to
nothing; there is no packing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["IGNORE_INDEX", "TextTransform", "infer_seqlen", "build_text_transform"]

IGNORE_INDEX = -100

TextTransform = Callable[[Mapping[str, Any]], dict[str, list[list[int]]]]


def infer_seqlen(source_len: int, target_len: int, cutoff: int) -> tuple[int, int]:
    """Split ``cutoff`` tokens between prompt (source) and response (target); returns ``(new_s, new_t)``.

    The ratio is computed before multiplying (``int(cutoff * (t / (s + t)))``), which is what the
    legacy trainer does; ``int((cutoff * t) / (s + t))`` can differ by one.
    """
    if target_len * 2 < cutoff:
        max_target_len = cutoff
    elif source_len * 2 < cutoff:
        max_target_len = cutoff - source_len
    else:
        max_target_len = int(cutoff * (target_len / (source_len + target_len)))
    new_target_len = min(max_target_len, target_len)
    new_source_len = min(max(cutoff - new_target_len, 0), source_len)
    return new_source_len, new_target_len


def _column(batch: Mapping[str, Any], name: str, n: int, default: Any = "") -> list:
    """A column as a list (a bare string is one row), or ``[default] * n`` when absent."""
    if name not in batch:
        return [default] * n
    values = batch[name]
    return [values] if isinstance(values, str) else list(values)


def _alpaca_columns(batch: Mapping[str, Any]) -> tuple[list, list, list]:
    """``(instruction, input, output)`` rows; ``input`` defaults to ``""`` per row, ``output`` is required."""
    if "output" not in batch:
        raise ValueError(
            "data.type=json_file with an 'instruction' column needs an 'output' column; "
            f"available columns: {sorted(batch.keys())}"
        )
    instructions = _column(batch, "instruction", 0)
    n = len(instructions)
    return instructions, _column(batch, "input", n), _column(batch, "output", n)


def build_text_transform(
    tokenizer: Any,
    *,
    cutoff: int,
    text_key: str = "text",
    data_type: str = "hf_datasets",
    template: str = "empty",
) -> TextTransform:
    """Return the batched map function of spec 6.2; the branch is chosen per batch.

    (a) masked alpaca SFT: ``instruction`` column, ``json_file`` and template ``empty``;
    (b) unmasked alpaca ("Human:/Assistant:" text): ``instruction`` column, ``json_file``, other template;
    (c) plain text from ``text_key`` otherwise, truncated to ``cutoff`` with the tokenizer's special tokens.
    """

    def tokenize_texts(texts: Sequence[str]) -> dict[str, list[list[int]]]:
        if len(texts) == 0:
            return {"input_ids": [], "labels": []}
        encoded = tokenizer(
            list(texts), truncation=True, max_length=cutoff, padding=False, return_attention_mask=False
        )
        input_ids: list[list[int]] = []
        labels: list[list[int]] = []
        for ids in encoded["input_ids"]:
            if len(ids) > 0:
                input_ids.append(list(ids))
                labels.append(list(ids))
        return {"input_ids": input_ids, "labels": labels}

    def masked_alpaca(batch: Mapping[str, Any]) -> dict[str, list[list[int]]]:
        instructions, inputs, outputs = _alpaca_columns(batch)
        input_ids: list[list[int]] = []
        labels: list[list[int]] = []
        for inst, inp, out in zip(instructions, inputs, outputs):
            prompt = inst + ("\n" + inp if inp else "")
            p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            r = tokenizer(out, add_special_tokens=False)["input_ids"]
            s_len, t_len = infer_seqlen(len(p), len(r), cutoff)
            source, target = list(p[:s_len]), list(r[:t_len])
            ids = source + target
            if len(ids) > 0:
                input_ids.append(ids)
                labels.append([IGNORE_INDEX] * len(source) + target)
        return {"input_ids": input_ids, "labels": labels}

    def human_assistant(batch: Mapping[str, Any]) -> dict[str, list[list[int]]]:
        instructions, inputs, outputs = _alpaca_columns(batch)
        texts = [
            f"Human: {inst}\n{inp}\n\nAssistant: {out}" if inp else f"Human: {inst}\n\nAssistant: {out}"
            for inst, inp, out in zip(instructions, inputs, outputs)
        ]
        return tokenize_texts(texts)

    def plain_text(batch: Mapping[str, Any]) -> dict[str, list[list[int]]]:
        if text_key not in batch:
            raise ValueError(
                f"data.text_key={text_key!r} is not a column of the dataset; "
                f"available columns: {sorted(batch.keys())}"
            )
        return tokenize_texts(_column(batch, text_key, 0))

    def transform(batch: Mapping[str, Any]) -> dict[str, list[list[int]]]:
        if "instruction" in batch and data_type == "json_file":
            return masked_alpaca(batch) if template == "empty" else human_assistant(batch)
        return plain_text(batch)

    return transform
