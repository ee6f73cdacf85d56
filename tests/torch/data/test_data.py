"""Tests for hyper_parallel.data (legacy-trainer spec sections 6.2, 7, 8.1) and parity.assets."""

from __future__ import annotations

import ast
import collections
import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest
import torch

import hyper_parallel.data as data_pkg
from hyper_parallel.data import (
    IGNORE_INDEX,
    SUPPORTED_DATA_TYPES,
    DummyDataset,
    PresetDataset,
    TokenizedDataset,
    build_dummy_dataset,
    build_hf_dataset,
    build_preset_dataset,
    build_text_transform,
    flatten_preset_batches,
    get_dataset_builder,
    infer_seqlen,
    load_preset_batches,
    load_raw_dataset,
    make_pad_collate,
    pad_collate,
    register_dataset,
)
from parity import assets
from parity.assets import build_assets

# --------------------------------------------------------------------------- helpers


def make_trainer(*, data=None, train=None, model=None, max_steps=0, data_transform=None):
    """A duck-typed legacy trainer: args.data / args.train / args.model, model, state, data_transform."""
    args = SimpleNamespace(
        data=SimpleNamespace(**(data or {})),
        train=SimpleNamespace(**(train or {})),
        model=SimpleNamespace(),
    )
    return SimpleNamespace(
        args=args, model=model, state=SimpleNamespace(max_steps=max_steps), data_transform=data_transform
    )


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(assets.tokenizer_dir()), local_files_only=True)
    return tok


@pytest.fixture(scope="module", autouse=True)
def _quiet_datasets():
    import datasets

    datasets.disable_progress_bars()
    yield


def ids_of(ds) -> list[list[int]]:
    return [ds[i]["input_ids"].tolist() for i in range(len(ds))]


# -------------------------------------------------------------------------- registry


def test_registry_builtins_and_unknown_type_message():
    assert SUPPORTED_DATA_TYPES == ("dummy", "hf_datasets", "json_file", "preset_pt")
    assert get_dataset_builder("dummy") is build_dummy_dataset
    assert get_dataset_builder("hf_datasets") is build_hf_dataset
    assert get_dataset_builder("json_file") is build_hf_dataset
    assert get_dataset_builder("preset_pt") is build_preset_dataset
    with pytest.raises(ValueError) as excinfo:
        get_dataset_builder("parquet_magic")
    assert str(excinfo.value) == (
        "Unknown data.type 'parquet_magic'. Supported: dummy, hf_datasets, json_file, preset_pt"
    )


def test_registry_duplicate_registration_is_an_error():
    with pytest.raises(ValueError, match="dummy"):
        register_dataset("dummy", lambda trainer: None)
    assert get_dataset_builder("dummy") is build_dummy_dataset


def test_data_package_imports_only_platform_and_itself():
    """Layering: data -> platform only (never trainer, components, models, parity)."""
    root = Path(data_pkg.__file__).parent
    for source in sorted(root.glob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.startswith("hyper_parallel") or name.startswith("parity"):
                    assert name.startswith(("hyper_parallel.data", "hyper_parallel.platform")), (
                        f"{source.name} imports {name}"
                    )


# ----------------------------------------------------------------------------- dummy


def test_dummy_item_equals_randint_with_generator_seeded_42_plus_idx():
    ds = DummyDataset(10, 16, 97)
    for idx in (0, 1, 9):
        g = torch.Generator().manual_seed(42 + idx)
        expected = torch.randint(0, 97, (16,), generator=g)
        item = ds[idx]
        assert set(item) == {"input_ids", "labels"}
        assert item["input_ids"].dtype == torch.int64
        assert torch.equal(item["input_ids"], expected)
        assert torch.equal(item["labels"], expected)
        assert item["labels"].data_ptr() != item["input_ids"].data_ptr()


def test_dummy_content_depends_only_on_index():
    torch.manual_seed(0)
    a = DummyDataset(4, 8, 50)[3]["input_ids"]
    torch.manual_seed(123)
    _ = torch.rand(5)
    b = DummyDataset(1000, 8, 50)[3]["input_ids"]
    # Reading other indices first does not change index 3 either.
    ds = DummyDataset(10, 8, 50)
    _ = [ds[i] for i in (9, 0, 5)]
    assert torch.equal(a, b)
    assert torch.equal(ds[3]["input_ids"], a)
    with pytest.raises(IndexError):
        ds[10]


def test_dummy_builder_sizes_from_max_steps_and_global_batch_and_model_vocab():
    model = SimpleNamespace(config=SimpleNamespace(vocab_size=97))
    trainer = make_trainer(
        data={"type": "dummy", "max_seq_len": 12},
        train={"global_batch_size": 4, "seed": 7},
        model=model,
        max_steps=5,
    )
    ds = get_dataset_builder("dummy")(trainer)
    assert isinstance(ds, DummyDataset)
    assert len(ds) == 20
    assert (ds.seq_len, ds.vocab_size, ds.base_seed) == (12, 97, 42)  # train.seed is not used
    assert trainer.state.max_steps == 5
    expected = torch.randint(0, 97, (12,), generator=torch.Generator().manual_seed(42 + 19))
    assert torch.equal(ds[19]["input_ids"], expected)


def test_dummy_builder_fallbacks_without_config_or_fields():
    trainer = make_trainer(model=torch.nn.Linear(2, 2), max_steps=3)
    ds = build_dummy_dataset(trainer)
    assert len(ds) == 3 * 8  # global_batch_size falls back to 8
    assert ds.seq_len == 2048
    assert ds.vocab_size == 32000


# ------------------------------------------------------------------------ transforms


@pytest.mark.parametrize(
    ("s", "t", "cutoff", "expected"),
    [
        (10, 10, 16, (8, 8)),  # both halves long: int(16 * 0.5) = 8
        (3, 100, 16, (3, 13)),  # short source: target gets cutoff - s
        (100, 3, 16, (13, 3)),  # short target: target kept, source gets the rest
        (5, 5, 100, (5, 5)),  # everything fits
        (0, 0, 8, (0, 0)),
        # Ratio first: 22 * (30 / 44) = 14.999999999999998 -> 14 (multiply first would give 15).
        (14, 30, 22, (8, 14)),
    ],
)
def test_infer_seqlen_known_values(s, t, cutoff, expected):
    assert infer_seqlen(s, t, cutoff) == expected


def test_masked_alpaca_branch(tokenizer):
    transform = build_text_transform(tokenizer, cutoff=64, data_type="json_file", template="empty")
    batch = {
        "instruction": ["Translate the sentence into French.", "Name three programming languages.", ""],
        "input": ["The quick brown fox.", "", ""],
        "output": ["Le renard brun rapide.", "Python, C and Rust.", ""],
    }
    out = transform(batch)
    assert len(out["input_ids"]) == 2  # the all-empty row is dropped

    def enc(text):
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    p0 = enc("Translate the sentence into French.\nThe quick brown fox.")
    r0 = enc("Le renard brun rapide.")
    p1 = enc("Name three programming languages.")  # empty input: no "\n"
    r1 = enc("Python, C and Rust.")
    assert out["input_ids"][0] == p0 + r0
    assert out["labels"][0] == [IGNORE_INDEX] * len(p0) + r0
    assert out["input_ids"][1] == p1 + r1
    assert out["labels"][1] == [IGNORE_INDEX] * len(p1) + r1
    assert tokenizer.eos_token_id not in out["input_ids"][0]  # no BOS/EOS added


def test_masked_alpaca_truncates_with_infer_seqlen_and_missing_input_column(tokenizer):
    cutoff = 10
    transform = build_text_transform(tokenizer, cutoff=cutoff, data_type="json_file")
    inst = "Summarize the text in one sentence, please, with many words in the prompt."
    out_text = "Machine learning helps to solve hard problems in many different languages."
    out = transform({"instruction": [inst], "output": [out_text]})  # no "input" column -> ""
    p = tokenizer(inst, add_special_tokens=False)["input_ids"]
    r = tokenizer(out_text, add_special_tokens=False)["input_ids"]
    s_len, t_len = infer_seqlen(len(p), len(r), cutoff)
    assert s_len + t_len == cutoff
    assert out["input_ids"] == [p[:s_len] + r[:t_len]]
    assert out["labels"] == [[IGNORE_INDEX] * s_len + r[:t_len]]


def test_unmasked_alpaca_human_assistant_template(tokenizer):
    transform = build_text_transform(tokenizer, cutoff=256, data_type="json_file", template="alpaca")
    batch = {
        "instruction": ["Give the opposite.", "Explain."],
        "input": ["quick", ""],
        "output": ["slow", "ok"],
    }
    out = transform(batch)
    texts = ["Human: Give the opposite.\nquick\n\nAssistant: slow", "Human: Explain.\n\nAssistant: ok"]
    expected = [tokenizer(t, truncation=True, max_length=256)["input_ids"] for t in texts]
    assert out["input_ids"] == expected
    assert out["labels"] == expected  # unmasked, unshifted


def test_instruction_column_outside_json_file_uses_plain_text(tokenizer):
    transform = build_text_transform(tokenizer, cutoff=16, data_type="hf_datasets")
    with pytest.raises(ValueError, match=r"data\.text_key='text'.*instruction"):
        transform({"instruction": ["x"], "output": ["y"]})
    out = transform({"instruction": ["x"], "text": ["hello world"]})
    assert out["input_ids"] == [tokenizer("hello world")["input_ids"]]


def test_plain_text_truncation_labels_and_empty_rows(tokenizer):
    cutoff = 8
    transform = build_text_transform(tokenizer, cutoff=cutoff, text_key="body")
    long_text = "Parallel training splits the model and the data across many devices."
    out = transform({"body": [long_text, "", "Hi"], "other": [1, 2, 3]})
    assert out["input_ids"] == [tokenizer(long_text)["input_ids"][:cutoff], tokenizer("Hi")["input_ids"]]
    assert len(out["input_ids"][0]) == cutoff
    assert out["labels"] == out["input_ids"]
    assert out["labels"][0] is not out["input_ids"][0]
    # A bare string is one row.
    assert transform({"body": "Hi"})["input_ids"] == [tokenizer("Hi")["input_ids"]]


def test_plain_text_truncation_counts_special_tokens(tokenizer):
    """Default special tokens are added and truncation makes room for them (tokenizer with an EOS post-processor)."""
    import copy

    from tokenizers import processors

    tok = copy.deepcopy(tokenizer)
    eos = tok.eos_token_id
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="$A <|endoftext|>", special_tokens=[("<|endoftext|>", eos)]
    )
    transform = build_text_transform(tok, cutoff=6)
    out = transform({"text": ["the quick brown fox jumps over the lazy dog", "", "a"]})
    plain = tok("the quick brown fox jumps over the lazy dog", add_special_tokens=False)["input_ids"]
    assert out["input_ids"][0] == plain[:5] + [eos]
    assert out["input_ids"][1] == [eos]  # "" is not empty once EOS is added
    assert out["input_ids"][2][-1] == eos
    # The masked alpaca branch never adds special tokens.
    masked = build_text_transform(tok, cutoff=6, data_type="json_file")(
        {"instruction": ["a"], "output": ["b"]}
    )
    assert eos not in masked["input_ids"][0]


def test_missing_text_column_names_field_and_columns(tokenizer):
    transform = build_text_transform(tokenizer, cutoff=8, text_key="content")
    with pytest.raises(ValueError) as excinfo:
        transform({"text": ["a"], "meta": ["b"]})
    message = str(excinfo.value)
    assert "data.text_key" in message and "content" in message
    assert "'meta'" in message and "'text'" in message


# ------------------------------------------------------------------- hf / json_file


def hf_trainer(tokenizer, path, *, data_type="hf_datasets", cutoff=32, max_steps=1000, gbs=8, **data):
    transform = build_text_transform(
        tokenizer,
        cutoff=cutoff,
        text_key=data.get("text_key", "text"),
        data_type=data_type,
        template=data.get("template", "empty"),
    )
    return make_trainer(
        data={"type": data_type, "train_path": str(path), "max_seq_len": cutoff, **data},
        train={"max_steps": max_steps, "global_batch_size": gbs},
        max_steps=max_steps,
        data_transform=transform,
    )


def jsonl_texts() -> list[str]:
    with open(assets.text_jsonl(), encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def test_hf_datasets_from_jsonl_file_shrinks_max_steps(tokenizer):
    texts = jsonl_texts()
    trainer = hf_trainer(tokenizer, assets.text_jsonl())
    ds = get_dataset_builder("hf_datasets")(trainer)
    assert isinstance(ds, TokenizedDataset)
    non_empty = [t for t in texts if t]
    assert len(texts) == 200 and len(non_empty) == 198
    assert len(ds) == 198
    assert trainer.state.max_steps == 198 // 8
    item = ds[5]
    assert set(item) == {"input_ids", "labels"}
    assert item["input_ids"].dtype == torch.int64 and item["labels"].dtype == torch.int64
    expected = [tokenizer(t, truncation=True, max_length=32)["input_ids"] for t in non_empty]
    assert ids_of(ds) == expected
    assert all(torch.equal(ds[i]["input_ids"], ds[i]["labels"]) for i in range(0, 198, 17))


def test_hf_datasets_train_size_and_small_max_steps(tokenizer):
    trainer = hf_trainer(tokenizer, assets.text_jsonl(), train_size=50, max_steps=1000)
    ds = build_hf_dataset(trainer)
    assert len(ds) == 49  # row 7 of the first 50 is empty
    assert trainer.state.max_steps == 49 // 8
    trainer = hf_trainer(tokenizer, assets.text_jsonl(), train_size=50, max_steps=2)
    build_hf_dataset(trainer)
    assert trainer.state.max_steps == 2


def test_hf_datasets_max_steps_zero_is_an_error(tokenizer):
    trainer = hf_trainer(tokenizer, assets.text_jsonl(), train_size=5, gbs=8)
    with pytest.raises(ValueError) as excinfo:
        build_hf_dataset(trainer)
    message = str(excinfo.value)
    assert str(assets.text_jsonl()) in message
    assert "5 samples" in message and "global_batch_size=8" in message


def test_hf_datasets_from_save_to_disk_dir(tokenizer, tmp_path):
    path = tmp_path / "text_disk"
    shutil.copytree(assets.text_disk_dir(), path)  # map() writes cache files next to the data
    trainer = hf_trainer(tokenizer, path, gbs=4)
    ds = build_hf_dataset(trainer)
    texts = [t for t in jsonl_texts()[:64] if t]
    assert len(ds) == len(texts) == 63
    assert trainer.state.max_steps == 63 // 4
    assert ids_of(ds) == [tokenizer(t, truncation=True, max_length=32)["input_ids"] for t in texts]


def test_hf_datasets_from_saved_dataset_dict_uses_train_split(tokenizer, tmp_path):
    import datasets

    dd = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": [f"train row {i}" for i in range(8)]}),
            "test": datasets.Dataset.from_dict({"text": ["test row"]}),
        }
    )
    dd.save_to_disk(str(tmp_path / "dd"))
    raw = load_raw_dataset("hf_datasets", tmp_path / "dd")
    assert raw["text"] == [f"train row {i}" for i in range(8)]
    datasets.DatasetDict({"validation": dd["test"]}).save_to_disk(str(tmp_path / "no_train"))
    with pytest.raises(ValueError, match="'train' split"):
        load_raw_dataset("hf_datasets", tmp_path / "no_train")


def test_hf_datasets_plain_directory_and_txt_file(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "train.jsonl").write_text('{"text": "a"}\n{"text": "b"}\n', encoding="utf-8")
    assert load_raw_dataset("hf_datasets", folder)["text"] == ["a", "b"]
    txt = tmp_path / "lines.txt"
    txt.write_text("first line\nsecond line\n", encoding="utf-8")
    assert load_raw_dataset("hf_datasets", txt)["text"] == ["first line", "second line"]
    csv = tmp_path / "rows.csv"
    csv.write_text("text,n\nx,1\ny,2\n", encoding="utf-8")
    assert load_raw_dataset("hf_datasets", csv)["text"] == ["x", "y"]


def test_hf_path_errors(tmp_path):
    with pytest.raises(ValueError, match="data.train_path"):
        load_raw_dataset("hf_datasets", None)
    with pytest.raises(FileNotFoundError, match="data.train_path"):
        load_raw_dataset("hf_datasets", tmp_path / "missing.jsonl")
    with pytest.raises(NotImplementedError, match="streaming"):
        load_raw_dataset("hf_datasets", assets.text_jsonl(), streaming=True)
    odd = tmp_path / "data.xyz"
    odd.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match=r"data\.train_path.*\.xyz"):
        load_raw_dataset("hf_datasets", odd)


def test_hf_builder_reads_streaming_and_requires_path(tokenizer, tmp_path):
    trainer = hf_trainer(tokenizer, assets.text_jsonl(), streaming=True)
    with pytest.raises(NotImplementedError):
        build_hf_dataset(trainer)
    trainer = hf_trainer(tokenizer, tmp_path / "nope.jsonl")
    with pytest.raises(FileNotFoundError, match="data.train_path"):
        build_hf_dataset(trainer)


def test_json_file_alpaca_masked(tokenizer):
    with open(assets.alpaca_json(), encoding="utf-8") as f:
        rows = json.load(f)
    trainer = hf_trainer(tokenizer, assets.alpaca_json(), data_type="json_file", cutoff=64, gbs=8)
    ds = get_dataset_builder("json_file")(trainer)
    assert len(ds) == len(rows) == 64
    assert trainer.state.max_steps == 8
    for i in (0, 1, 13):
        row = rows[i]
        prompt = row["instruction"] + ("\n" + row["input"] if row["input"] else "")
        p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        r = tokenizer(row["output"], add_special_tokens=False)["input_ids"]
        s_len, t_len = infer_seqlen(len(p), len(r), 64)
        assert ds[i]["input_ids"].tolist() == p[:s_len] + r[:t_len]
        assert ds[i]["labels"].tolist() == [IGNORE_INDEX] * s_len + r[:t_len]
    assert any(not row["input"] for row in rows) and any(row["input"] for row in rows)


def test_json_file_alpaca_other_template_is_human_assistant(tokenizer):
    with open(assets.alpaca_json(), encoding="utf-8") as f:
        rows = json.load(f)
    trainer = hf_trainer(tokenizer, assets.alpaca_json(), data_type="json_file", cutoff=48, template="alpaca")
    ds = build_hf_dataset(trainer)
    row = rows[1]
    text = f"Human: {row['instruction']}\n{row['input']}\n\nAssistant: {row['output']}"
    assert ds[1]["input_ids"].tolist() == tokenizer(text, truncation=True, max_length=48)["input_ids"]
    assert torch.equal(ds[1]["input_ids"], ds[1]["labels"])


# ------------------------------------------------------------------------- preset_pt


class _PickledDict(collections.OrderedDict):
    """An OrderedDict subclass: loading it needs an arbitrary global, which weights_only refuses."""


def test_preset_flatten_order_masks_and_clones(tmp_path):
    path = assets.preset_pt(
        tmp_path / "preset.pt", num_stacked=2, batch_size=2, seq_len=8, rank_seq_lens=(8, 6)
    )
    batches = torch.load(path, weights_only=True)
    samples = flatten_preset_batches(load_preset_batches(path))
    expected = []
    for entry in batches:
        for batch in entry if isinstance(entry, list) else [entry]:
            for i in range(batch["input_ids"].shape[0]):
                expected.append((batch["input_ids"][i], batch["labels"][i], "attention_mask" in batch))
    assert len(samples) == len(expected) == 2 * 2 + 2 * 2
    for sample, (ids, labels, has_mask) in zip(samples, expected):
        assert torch.equal(sample["input_ids"], ids) and torch.equal(sample["labels"], labels)
        assert ("attention_mask" in sample) == has_mask
    assert [s["input_ids"].shape[0] for s in samples] == [8, 8, 8, 8, 8, 8, 6, 6]
    assert "attention_mask" in samples[0] and "attention_mask" not in samples[2]
    # Cloned rows do not share storage with the stacked batch.
    src = load_preset_batches(path)
    flat = flatten_preset_batches(src)
    flat[0]["input_ids"][0] = -1
    assert src[0]["input_ids"][0, 0] != -1
    assert flat[0]["input_ids"].untyped_storage().nbytes() == 8 * 8


def test_preset_one_dimensional_mask_is_dropped(tmp_path):
    path = tmp_path / "p.pt"
    ids = torch.arange(6).reshape(2, 3)
    torch.save([{"input_ids": ids, "labels": ids, "attention_mask": torch.ones(3)}], path)
    samples = flatten_preset_batches(load_preset_batches(path))
    assert [set(s) for s in samples] == [{"input_ids", "labels"}] * 2


def test_preset_builder_resets_max_steps_and_dataset(tmp_path):
    path = assets.preset_pt(tmp_path / "preset.pt")
    trainer = make_trainer(
        data={"type": "preset_pt", "train_path": str(path), "shuffle": False},
        train={"max_steps": 50, "global_batch_size": 8},
        max_steps=3,
    )
    ds = get_dataset_builder("preset_pt")(trainer)
    assert isinstance(ds, PresetDataset)
    assert len(ds) == 8
    assert trainer.state.max_steps == 50  # reset, not a shrink
    trainer = make_trainer(data={"train_path": str(path)}, train={"max_steps": 0}, max_steps=3)
    build_preset_dataset(trainer)
    assert trainer.state.max_steps == 3  # falsy train.max_steps leaves the state alone


def test_preset_errors(tmp_path):
    with pytest.raises(ValueError, match="data.train_path"):
        build_preset_dataset(make_trainer(data={"type": "preset_pt"}))
    missing = tmp_path / "missing.pt"
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        build_preset_dataset(make_trainer(data={"train_path": str(missing)}))

    not_list = tmp_path / "dict.pt"
    torch.save({"input_ids": torch.zeros(1, 2)}, not_list)
    with pytest.raises(ValueError, match="non-empty list of batches, got dict"):
        load_preset_batches(not_list)

    empty = tmp_path / "empty.pt"
    torch.save([], empty)
    with pytest.raises(ValueError, match="non-empty list of batches"):
        load_preset_batches(empty)

    no_labels = tmp_path / "no_labels.pt"
    ok = {"input_ids": torch.zeros(1, 2, dtype=torch.long), "labels": torch.zeros(1, 2, dtype=torch.long)}
    torch.save([ok, {"input_ids": torch.zeros(1, 2, dtype=torch.long)}], no_labels)
    with pytest.raises(ValueError, match=r"entry 1 .*labels"):
        load_preset_batches(no_labels)

    rank_no_ids = tmp_path / "rank_no_ids.pt"
    torch.save([ok, ok, [ok, {"labels": torch.zeros(1, 2)}]], rank_no_ids)
    with pytest.raises(ValueError, match=r"entry 2 \(rank dict 1\).*input_ids"):
        load_preset_batches(rank_no_ids)

    bad_entry = tmp_path / "bad_entry.pt"
    torch.save([ok, torch.zeros(2)], bad_entry)
    with pytest.raises(ValueError, match="entry 1"):
        load_preset_batches(bad_entry)


@pytest.mark.parametrize("kind", ["ordered_dict_subclass", "custom_object"])
def test_preset_refuses_pickles_that_need_arbitrary_objects(tmp_path, kind):
    path = tmp_path / f"{kind}.pt"
    if kind == "ordered_dict_subclass":
        entry = _PickledDict(input_ids=torch.zeros(1, 2), labels=torch.zeros(1, 2))
    else:
        entry = SimpleNamespace(input_ids=torch.zeros(1, 2))
    torch.save([entry], path)
    with pytest.raises((ValueError, RuntimeError)) as excinfo:
        load_preset_batches(path)
    message = str(excinfo.value)
    assert str(path) in message and "weights_only" in message


# --------------------------------------------------------------------------- collate


def test_pad_collate_pads_ids_with_pad_id_and_labels_with_ignore():
    items = [
        {
            "input_ids": torch.tensor([1, 2, 3]),
            "labels": torch.tensor([1, 2, 3]),
            "attention_mask": torch.ones(3),
        },
        {"input_ids": torch.tensor([4, 5, 6, 7, 8]), "labels": torch.tensor([-100, 5, 6, 7, 8])},
        {"input_ids": torch.tensor([9]), "labels": torch.tensor([9])},
    ]
    out = pad_collate(items, pad_id=7)
    assert set(out) == {"input_ids", "labels"}  # attention_mask dropped
    assert out["input_ids"].dtype == torch.int64 and out["labels"].dtype == torch.int64
    assert out["input_ids"].tolist() == [[1, 2, 3, 7, 7], [4, 5, 6, 7, 8], [9, 7, 7, 7, 7]]
    assert out["labels"].tolist() == [
        [1, 2, 3, -100, -100],
        [-100, 5, 6, 7, 8],
        [9, -100, -100, -100, -100],
    ]
    assert pad_collate(items)["input_ids"][2].tolist() == [9, 0, 0, 0, 0]  # BaseTrainer default pad 0
    assert make_pad_collate(None)(items)["input_ids"][0, -1].item() == 0
    assert make_pad_collate(3)(items)["input_ids"][0, -1].item() == 3
    with pytest.raises(ValueError):
        pad_collate([])


def test_pad_collate_on_preset_and_tokenized_items(tokenizer, tmp_path):
    ds = build_preset_dataset(
        make_trainer(data={"train_path": str(assets.preset_pt(tmp_path / "p.pt"))}, train={"max_steps": 1})
    )
    out = pad_collate([ds[5], ds[6]], pad_id=tokenizer.eos_token_id)
    assert out["input_ids"].shape == (2, 8)
    assert out["input_ids"][1, 6:].tolist() == [tokenizer.eos_token_id] * 2
    assert out["labels"][1, 6:].tolist() == [-100, -100]


# ---------------------------------------------------------------------------- assets


def test_asset_tokenizer_contract(tokenizer):
    assert len(tokenizer) == 512
    assert tokenizer.pad_token is None
    assert tokenizer.eos_token == "<|endoftext|>"
    ids = tokenizer.convert_tokens_to_ids(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    assert len(set(ids)) == 3 and all(i < 512 for i in ids)
    for text in ("The quick brown fox.", "机器学习正在改变", "Быстрая лиса 🚀 naïve"):
        assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    assert tokenizer("")["input_ids"] == []


def test_asset_files_exist_and_are_small():
    paths = [assets.tokenizer_dir(), assets.text_jsonl(), assets.alpaca_json(), assets.text_disk_dir()]
    assert all(p.exists() for p in paths)
    assert (assets.tokenizer_dir() / "tokenizer.json").is_file()
    assert (assets.tokenizer_dir() / "tokenizer_config.json").is_file()
    assert (assets.text_disk_dir() / "state.json").is_file()
    committed = [p for p in assets.ASSETS_DIR.rglob("*") if p.is_file() and "cache-" not in p.name]
    assert sum(p.stat().st_size for p in committed) < 1_000_000
    texts = jsonl_texts()
    assert len(texts) == 200 and texts.count("") == 2
    assert any(any(ord(c) > 0x3000 for c in t) for t in texts)  # CJK present


def test_build_assets_is_deterministic(tmp_path):
    a = build_assets.build_tokenizer(tmp_path / "a")
    b = build_assets.build_tokenizer(tmp_path / "b")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    ja = build_assets.write_text_jsonl(tmp_path / "a.jsonl")
    jb = build_assets.write_text_jsonl(tmp_path / "b.jsonl")
    assert ja.read_bytes() == jb.read_bytes() == assets.text_jsonl().read_bytes()
    al = build_assets.write_alpaca_json(tmp_path / "alpaca.json")
    assert al.read_bytes() == assets.alpaca_json().read_bytes()


def test_build_assets_main_writes_everything(tmp_path):
    assert build_assets.main(["--output-dir", str(tmp_path)]) == 0
    for rel in (
        "tokenizer/tokenizer.json",
        "data/text.jsonl",
        "data/alpaca.json",
        "data/text_disk/state.json",
    ):
        assert (tmp_path / rel).is_file()
    arrow = "data/text_disk/data-00000-of-00001.arrow"
    assert (tmp_path / arrow).read_bytes() == (assets.ASSETS_DIR / arrow).read_bytes()
