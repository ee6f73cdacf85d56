"""Batched ``datasets.map`` text transforms of the legacy trainer.

The transform returns unshifted labels (the model shifts) and drops rows that tokenise to
nothing; there is no packing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "IGNORE_INDEX",
    "DataRowError",
    "TextTransform",
    "build_text_transform",
    "infer_seqlen",
    "name_data_rows",
]

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


class DataRowError(ValueError):
    """A row of a batch whose field the transform cannot tokenize; ``row`` counts from 0 in the batch.

    ``name_data_rows`` turns it into an error naming the file and the row in the file.
    """

    def __init__(self, row: int, problem: str) -> None:
        super().__init__(f"row {row + 1} of the batch: {problem}")
        self.row = row
        self.problem = problem


def _check_strings(values: Sequence[Any], key: str, setting: str, *, optional: bool = False) -> None:
    """Every value is a string (or None/absent when ``optional``), else a ``DataRowError``."""
    for row, value in enumerate(values):
        if isinstance(value, str) or (optional and value is None):
            continue
        found = "no value" if value is None else f"{type(value).__name__} {value!r}"[:80]
        raise DataRowError(row, f"key {key!r} holds {found}; expected a string in every row ({setting})")


def name_data_rows(transform: TextTransform, source: Any) -> TextTransform:
    """``transform`` whose row errors name ``source`` (the data file) and the row number in it.

    Rows are counted over the batches in the order ``datasets.map`` passes them (first to last,
    one process), so row N is the N-th record of the dataset, 1-based.
    """
    seen = [0]

    def named(batch: Mapping[str, Any]) -> dict[str, list[list[int]]]:
        first = seen[0]
        seen[0] += _batch_len(batch)
        try:
            return transform(batch)
        except DataRowError as exc:
            raise ValueError(
                f"data.train_path={str(source)!r} row {first + exc.row + 1}: {exc.problem}"
            ) from None

    return named


def _batch_len(batch: Mapping[str, Any]) -> int:
    for values in batch.values():
        return 1 if isinstance(values, str) else len(values)
    return 0


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
    inputs, outputs = _column(batch, "input", n), _column(batch, "output", n)
    _check_strings(instructions, "instruction", "the alpaca format")
    _check_strings(inputs, "input", "the alpaca format; it may be absent", optional=True)
    _check_strings(outputs, "output", "the alpaca format")
    return instructions, inputs, outputs


def build_text_transform(
    tokenizer: Any,
    *,
    cutoff: int,
    text_key: str = "text",
    data_type: str = "hf_datasets",
    template: str = "empty",
) -> TextTransform:
    """Return the batched map function; the branch is chosen per batch.

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
        texts = _column(batch, text_key, 0)
        _check_strings(texts, text_key, f"data.text_key={text_key!r}")
        return tokenize_texts(texts)

    def transform(batch: Mapping[str, Any]) -> dict[str, list[list[int]]]:
        if "instruction" in batch and data_type == "json_file":
            return masked_alpaca(batch) if template == "empty" else human_assistant(batch)
        return plain_text(batch)

    return transform
