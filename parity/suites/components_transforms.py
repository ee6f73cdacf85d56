"""Transform grids: the alpaca/json prompt-response transform over prompt x response x window lengths.

The masked alpaca transform (``json_file`` rows with ``instruction``, template ``empty``) splits the window between the prompt and the response
with ``infer_seqlen`` (ratio first), truncates both, masks the prompt with -100 and drops a row only
when nothing is left. It is a shared leaf (``hyper_parallel.data.transforms``); what each path owns
is its wiring: the legacy ``LLMTrainer._build_data_transform`` passes ``data.max_seq_len``,
``text_key``, ``type`` and ``template``, the component passes ``seq_len`` and its Config fields.

The data is a committed JSON file of alpaca records whose prompt and response tokenise to exact
lengths (one record per cell of ``build_assets.ALPACA_GRIDS``, checked on first use): prompt
lengths 0-30 (some split into instruction + "\\n" + input), response lengths 0-30, so the grid
holds empty responses (all labels masked), prompts longer than the window, exact fits and all
three ``infer_seqlen`` branches, including the cells (prompt 14, response 30, window 22) where the
ratio-first ``int(c * (t / (s + t)))`` and the multiply-first ``int(c * t / (s + t))`` differ. The
empty prompt-and-response record is last, so every kept row names its cell (read as plain text,
the records without a response are dropped instead: ``_kept_cells``).

- tier A: the legacy data steps against the dataloader component on the grid for six windows, plus
  the Human/Assistant template and the same file read as hf_datasets text (``text_key=output``);
- tier B: the component on a small grid at windows 8 and 22, the Human/Assistant template on it at
  16, and the plain text of ``output`` at 8: it catches a change of the shared transform, which
  moves both sides of a tier A pair at once.

- tier B, ``transform_rows_golden``: the three transforms (plain text, masked and Human/Assistant
  alpaca) at a window of 8 on batches no data file holds: one row, none, a bare string, an empty
  text, a missing column, and None, a number or a list in each column of a second batch (the error
  names the file and the row counted across batches, as both trainers wrap the transform).

Artifact: ``{cell: {input_ids, labels}}`` (``p<prompt>[i]_r<response>``, ``i`` for a split
prompt), the kept row count and the training steps.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from parity import assets, canonical
from parity.assets import build_assets
from parity.builders import register_source, short_legacy_trainer, short_new_loader
from parity.cases import REGISTRY

__all__ = ["checked_grid_json", "legacy_grid", "new_grid"]


def _cell_name(cell: tuple[int, int, bool]) -> str:
    p, r, split = cell
    return f"p{p:02d}{'i' if split else ''}_r{r:02d}"


@functools.cache
def checked_grid_json(grid: str) -> Path:
    """The committed grid file, once its records are checked to tokenise to their cells' lengths
    (the cell names of the artifact depend on it)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(assets.tokenizer_dir()), local_files_only=True)
    path = assets.alpaca_grid_json(grid)
    records = json.loads(path.read_text(encoding="utf-8"))
    cells = build_assets.alpaca_grid_cells(grid)
    if len(records) != len(cells):
        raise AssertionError(f"{path} has {len(records)} records, expected {len(cells)} (rebuild the assets)")
    for rec, cell in zip(records, cells):
        prompt = rec["instruction"] + ("\n" + rec["input"] if rec["input"] else "")
        got = (
            len(tok(prompt, add_special_tokens=False)["input_ids"]),
            len(tok(rec["output"], add_special_tokens=False)["input_ids"]),
        )
        if got != cell[:2]:
            raise AssertionError(f"{path}: cell {_cell_name(cell)} tokenises to {got}, expected {cell[:2]}")
    return path


register_source("alpaca_grid", lambda: ("json_file", checked_grid_json("full")))
register_source("alpaca_grid_small", lambda: ("json_file", checked_grid_json("small")))
# The same records read as plain text of their ``output`` column (no masking, special tokens added).
register_source("alpaca_grid_as_text", lambda: ("hf_datasets", checked_grid_json("full")))

_GRID_OF = {"alpaca_grid": "full", "alpaca_grid_small": "small", "alpaca_grid_as_text": "full"}


def _loader_kwargs(data: str, seq: int, template: str, text_key: str) -> dict[str, Any]:
    # One row per batch, in file order, one rank: every row is seen, none padded.
    return dict(
        data=data,
        tok="asset",
        seq=seq,
        mbs=1,
        gbs=1,
        world=1,
        tp=1,
        rank=0,
        seed=0,
        shuffle=False,
        steps=10_000,
        template=template,
        text_key=text_key,
    )


def _kept_cells(data: str) -> list[tuple[int, int, bool]]:
    """The cells whose rows survive, in order: as masked alpaca every cell but the all-empty last
    one; as plain text of ``output`` (no special tokens in the asset) the cells with a response."""
    cells = build_assets.alpaca_grid_cells(_GRID_OF[data])
    if data == "alpaca_grid_as_text":
        return [c for c in cells if c[1] > 0]
    return [c for c in cells if c[:2] != (0, 0)]


def _grid_tree(batches: list[Any], training_steps: int, data: str) -> dict[str, Any]:
    rows = {}
    for cell, batch in zip(_kept_cells(data), batches):
        rows[_cell_name(cell)] = {
            "input_ids": canonical.token_ids(batch["input_ids"][0].tolist()),
            "labels": canonical.token_ids(batch["labels"][0].tolist()),
        }
    return {"rows": rows, "kept": len(batches), "training_steps": training_steps}


def legacy_grid(*, data: str, seq: int, template: str = "empty", text_key: str = "text") -> dict[str, Any]:
    trainer = short_legacy_trainer(**_loader_kwargs(data, seq, template, text_key))
    return _grid_tree(list(trainer.train_dataloader), trainer.state.max_steps, data)


def new_grid(*, data: str, seq: int, template: str = "empty", text_key: str = "text") -> dict[str, Any]:
    loader = short_new_loader(**_loader_kwargs(data, seq, template, text_key))
    return _grid_tree(list(loader), loader.training_steps, data)


_TAGS = ("dataloader", "transforms")

TRANSFORM_PAIRS: tuple[dict[str, Any], ...] = (
    *({"data": "alpaca_grid", "seq": seq} for seq in (1, 2, 8, 16, 22, 31)),
    {"data": "alpaca_grid", "seq": 16, "template": "alpaca"},  # Human/Assistant text, unmasked
    {"data": "alpaca_grid_as_text", "seq": 8, "text_key": "output"},  # hf_datasets: plain text
)
REGISTRY.grid(
    "transform_grid",
    params=TRANSFORM_PAIRS,
    kind="token_ids",
    tags=_TAGS,
    legacy=legacy_grid,
    new=new_grid,
)

TRANSFORM_GOLDENS: tuple[dict[str, Any], ...] = (
    *({"data": "alpaca_grid_small", "seq": seq} for seq in (8, 22)),
    # The other two transforms, which the masked grid never reaches: the Human/Assistant text and
    # plain text truncated to the window (responses up to 30 tokens at a window of 8).
    {"data": "alpaca_grid_small", "seq": 16, "template": "alpaca"},
    {"data": "alpaca_grid_as_text", "seq": 8, "text_key": "output"},
)
REGISTRY.grid(
    "transform_grid_golden",
    params=TRANSFORM_GOLDENS,
    kind="token_ids",
    tags=_TAGS,
    producer=new_grid,
    backends=("torch", "mindspore"),
)


# ----------------------------------------------------------------------------- batches the data never holds
# What the transform makes of batches no committed data file holds, as ``datasets.map`` hands them
# over one after another (rows counted across batches): a batch of one row, an empty batch, a bare
# string, an empty text, a value that is not a string (None, a number, a list) in the second batch,
# a missing column. Each mode's transform is wrapped by ``name_data_rows`` as both trainers wrap it.
_SOURCE = "data/train.jsonl"
_GOOD = {
    "text": {"text": ["The first row.", "A second, longer row of plain text for the window."]},
    "alpaca": {
        "instruction": ["Say hi.", "Add two numbers."],
        "input": ["", "2 and 3"],
        "output": ["Hi.", "Five."],
    },
}
_BAD_VALUES: tuple[tuple[str, Any], ...] = (("None", None), ("a number", 5), ("a list", ["a", "b"]))


def _batches_of(mode: str) -> dict[str, list[dict[str, Any]]]:
    good = _GOOD["text" if mode == "text" else "alpaca"]
    key = "text" if mode == "text" else "output"
    out: dict[str, list[dict[str, Any]]] = {
        "two rows": [good],
        "one row": [{k: v[:1] for k, v in good.items()}],
        "an empty batch": [{k: [] for k in good}],
        "a bare string": [{k: v[0] for k, v in good.items()}],
        "an empty text": [{**good, key: ["", good[key][1]]}],
        "no such column": [{k: v for k, v in good.items() if k != key}],
    }
    columns = ["text"] if mode == "text" else ["instruction", "input", "output"]
    for column in columns:
        for label, value in _BAD_VALUES:
            bad = {**good, column: [good[column][0], value]}
            out[f"{label} in {column}, second batch"] = [good, bad]
    return out


def transform_rows() -> dict[str, Any]:
    """``{mode: {batches: ids and labels of each batch, or the error line}}`` for plain text,
    masked alpaca and Human/Assistant alpaca at a window of 8 (module section above)."""
    from transformers import AutoTokenizer

    from hyper_parallel.data.transforms import build_text_transform, name_data_rows

    # The HF tokenizer both trainers hand the transform (the asset: no special tokens added).
    encoder = AutoTokenizer.from_pretrained(str(assets.tokenizer_dir()), local_files_only=True)
    modes = {
        "text": dict(text_key="text", data_type="hf_datasets", template="empty"),
        "alpaca_masked": dict(text_key="text", data_type="json_file", template="empty"),
        "alpaca_human_assistant": dict(text_key="text", data_type="json_file", template="alpaca"),
    }
    out: dict[str, Any] = {}
    for mode, settings in modes.items():
        rows: dict[str, Any] = {}
        for label, batches in _batches_of("text" if mode == "text" else "alpaca").items():
            transform = name_data_rows(build_text_transform(encoder, cutoff=8, **settings), _SOURCE)
            try:
                rows[label] = [{k: canonical.token_ids(v) for k, v in transform(b).items()} for b in batches]
            except Exception as exc:  # the error line is the compared value
                rows[label] = canonical.error_line(exc)
        out[mode] = rows
    return out


REGISTRY.golden("transform_rows_golden", kind="token_ids", tags=_TAGS, producer=transform_rows)
