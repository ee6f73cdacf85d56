"""A data row the transform cannot tokenize names the file, the row and the key, on both trainers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hyper_parallel.data.transforms import DataRowError, build_text_transform, name_data_rows

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")

GOOD = {"text": "a sentence with a few words in it"}
# (rows, the regex of the error after "row N: ")
CASES = {
    "missing-key": (
        [GOOD, GOOD, {"body": "no text key"}, GOOD],
        3,
        r"key 'text' holds no value; expected a string in every row \(data\.text_key='text'\)",
    ),
    "null": ([GOOD, {"text": None}], 2, r"key 'text' holds no value"),
    "number": ([GOOD, GOOD, GOOD, {"text": 5}], 4, r"key 'text' holds int 5; expected a string"),
    "list": ([{"text": ["a", "b"]}, GOOD], 1, r"key 'text' holds list \['a', 'b'\]; expected a string"),
}


def _jsonl(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


class _Tokenizer:
    def __call__(self, texts, **kwargs):
        if isinstance(texts, str):
            return {"input_ids": [len(w) for w in texts.split()]}
        return {"input_ids": [[len(w) for w in t.split()] for t in texts]}


def test_rows_are_counted_over_batches():
    transform = name_data_rows(build_text_transform(_Tokenizer(), cutoff=8), "f.jsonl")
    transform({"text": ["a b", "c"]})
    with pytest.raises(ValueError, match=r"^data\.train_path='f\.jsonl' row 5: key 'text' holds int 3"):
        transform({"text": ["d", "e", 3]})


def test_alpaca_rows_are_checked_too():
    transform = build_text_transform(_Tokenizer(), cutoff=8, data_type="json_file")
    # input may be absent (None); instruction and output may not.
    transform({"instruction": ["x"], "input": [None], "output": ["y"]})
    with pytest.raises(DataRowError, match=r"key 'output' holds no value; expected a string .*alpaca"):
        transform({"instruction": ["x", "z"], "input": ["", ""], "output": ["y", None]})


@pytest.mark.parametrize("case", list(CASES))
def test_legacy_trainer_names_file_row_and_key(case, tmp_path):
    from hyper_parallel.trainer import LLMTrainer
    from parity import assets
    from tests.torch.legacy_trainer._recipes import debug_args

    rows, row, match = CASES[case]
    path = _jsonl(tmp_path, rows)
    args = debug_args(
        tmp_path,
        "--data.type=json_file",
        f"--data.train_path={path}",
        f"--model.tokenizer_path={assets.tokenizer_dir()}",
        "--train.checkpoint.save_steps=0",
    )
    with pytest.raises(ValueError, match=rf"data\.train_path='{path}' row {row}: {match}"):
        LLMTrainer(args)


@pytest.mark.parametrize("case", list(CASES))
def test_new_dataloader_names_file_row_and_key(case, tmp_path):
    from hyper_parallel.components.dataloader import HuggingFaceTextDataLoader
    from parity.suites.components_dataloader import local_tokenizer

    rows, row, match = CASES[case]
    path = _jsonl(tmp_path, rows)
    config = HuggingFaceTextDataLoader.Config(format="json_file", train_path=str(path))
    with pytest.raises(ValueError, match=rf"data\.train_path='{path}' row {row}: {match}"):
        config.build(
            seq_len=16,
            local_batch_size=1,
            global_batch_size=1,
            seed=0,
            dp_world_size=1,
            dp_rank=0,
            tokenizer=local_tokenizer(),
            training_steps=1,
            vocab_size=2048,
        )
