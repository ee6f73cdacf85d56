"""Bad input gets a clear error naming the field or file, and nothing is written half."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
import torch

from hyper_parallel.trainer import LLMTrainer
from tests.torch.legacy_trainer._recipes import DEBUG_YAML, debug_args


def _build_fails(tmp_path, *overrides, exc=ValueError, match=None):
    args = debug_args(tmp_path, *overrides)
    with pytest.raises(exc, match=match):
        LLMTrainer(args)
    assert not (tmp_path / "ckpt").exists(), "a failed build must not write checkpoints"


def test_unknown_data_type(tmp_path):
    from parity import assets

    # A tokenizer is configured so that the build reaches the dataset step (step 6).
    _build_fails(
        tmp_path,
        "--data.type=parquet_stream",
        f"--model.tokenizer_path={assets.tokenizer_dir()}",
        match=r"Unknown data.type 'parquet_stream'. Supported: dummy",
    )


def test_missing_tokenizer_path(tmp_path):
    from parity import assets

    _build_fails(
        tmp_path,
        "--data.type=json_file",
        f"--data.train_path={assets.alpaca_json()}",
        match="model.tokenizer_path",
    )


def test_tokenizer_path_not_a_directory(tmp_path):
    _build_fails(
        tmp_path,
        "--data.type=hf_datasets",
        f"--model.tokenizer_path={tmp_path / 'nope'}",
        exc=FileNotFoundError,
        match="tokenizer.json",
    )


def test_preset_file_missing(tmp_path):
    _build_fails(
        tmp_path,
        "--data.type=preset_pt",
        f"--data.train_path={tmp_path / 'missing.pt'}",
        exc=FileNotFoundError,
    )


@pytest.mark.parametrize("payload", [{"input_ids": torch.zeros(2, 4)}, []], ids=["dict", "empty-list"])
def test_preset_file_not_a_non_empty_list(tmp_path, payload):
    path = tmp_path / "batches.pt"
    torch.save(payload, path)
    _build_fails(tmp_path, "--data.type=preset_pt", f"--data.train_path={path}", match="non-empty list")


def test_parallel_dims_product_mismatch(tmp_path):
    _build_fails(tmp_path, "--train.accelerator.dp_shard=2", match=r"dp_shard=-1 to auto-infer")


def test_malformed_yaml_names_the_file(tmp_path):
    from hyper_parallel.trainer.config import parse_args

    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {name: qwen3_5\ntrain: [unclosed\n")
    with pytest.raises(ValueError, match="bad.yaml"):
        parse_args(argv=[str(bad)])


def test_wrong_override_type_names_the_field():
    from hyper_parallel.trainer.config import parse_args

    with pytest.raises(ValueError, match="train.max_steps"):
        parse_args(argv=[str(DEBUG_YAML), "--train.max_steps=twenty"])


def _assets_trainer(model_cfg):
    trainer = LLMTrainer.__new__(LLMTrainer)
    trainer.args = NS(model=model_cfg, data=NS(type="hf_datasets"))
    trainer.base = NS(model=NS(config=NS(vocab_size=2048)), tokenizer=None, processor=None)
    return trainer


def test_tokenizer_pad_falls_back_to_eos_and_remote_code_off(monkeypatch):
    from transformers import AutoTokenizer

    from parity import assets

    seen = {}
    original = AutoTokenizer.from_pretrained

    def spy(path, **kwargs):
        seen.update(kwargs)
        return original(path, **kwargs)

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", spy)
    trainer = _assets_trainer(NS(tokenizer_path=str(assets.tokenizer_dir()), weights_path=None))
    trainer._build_model_assets()
    tok = trainer.base.tokenizer
    assert seen["trust_remote_code"] is False and seen["local_files_only"] is True
    assert tok.pad_token == tok.eos_token and tok.pad_token_id is not None

    trainer = _assets_trainer(
        NS(tokenizer_path=None, weights_path=str(assets.tokenizer_dir()), trust_remote_code=True)
    )
    trainer._build_model_assets()
    assert seen["trust_remote_code"] is True


def test_tokenizer_larger_than_vocab_is_rejected():
    from parity import assets

    trainer = _assets_trainer(NS(tokenizer_path=str(assets.tokenizer_dir()), weights_path=None))
    trainer.base.model.config.vocab_size = 16
    with pytest.raises(ValueError, match="model.vocab_size"):
        trainer._build_model_assets()
