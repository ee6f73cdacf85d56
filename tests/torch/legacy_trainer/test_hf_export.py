"""HF Qwen3.5 export/import through ``Qwen3_5StateDictAdapter``, checked against transformers."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
import torch
from safetensors.torch import load_file, save_file

from hyper_parallel.models.qwen3_5 import (
    Qwen3_5Config,
    Qwen3_5ForCausalLM,
    Qwen3_5StateDictAdapter,
    build_qwen3_5,
)

ADAPTER = Qwen3_5StateDictAdapter()

VARIANTS = {
    "tied": {},
    "untied_bias": {"tie_word_embeddings": False, "attention_bias": True},
}


def _model(**overrides) -> Qwen3_5ForCausalLM:
    """Debug model with every parameter (norms included) drawn from N(0, 0.02), in eval mode."""
    torch.manual_seed(0)
    model = build_qwen3_5(NS(model=NS(name="qwen3_5", flavor="debug", config_overrides=overrides or None)))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    return model.eval()


def _export(model: Qwen3_5ForCausalLM, folder: Path) -> dict[str, torch.Tensor]:
    hf_sd = ADAPTER.save_hf_state_dict(model.state_dict(), model.config)
    hf_sd = {k: v.detach().clone().contiguous() for k, v in hf_sd.items()}
    folder.mkdir(parents=True, exist_ok=True)
    save_file(hf_sd, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with open(folder / "config.json", "w") as f:
        json.dump(ADAPTER.export_hf_config(model.config, torch.float32), f)
    return hf_sd


def _ids() -> torch.Tensor:
    return torch.randint(0, 2048, (2, 33), generator=torch.Generator().manual_seed(1))


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().reshape(-1).view(torch.int32)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_transformers_loads_the_export_and_gives_the_same_logits(tmp_path, variant):
    from transformers import Qwen3_5ForCausalLM as HFQwen3_5ForCausalLM

    ours = _model(**VARIANTS[variant])
    _export(ours, tmp_path)
    ids = _ids()
    with torch.no_grad():
        expected = ours(input_ids=ids, labels=ids)

    # sdpa (the transformers default) runs the same kernel on the same operands: bit for bit.
    hf, info = HFQwen3_5ForCausalLM.from_pretrained(
        tmp_path, output_loading_info=True, attn_implementation="sdpa", dtype=torch.float32
    )
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    hf.eval()
    with torch.no_grad():
        got = hf(input_ids=ids, labels=ids)
    diff = (got.logits - expected["logits"]).abs().max().item()
    print(f"[{variant}] HF sdpa logits max abs diff: {diff:.3e}")
    assert torch.equal(_bits(got.logits), _bits(expected["logits"]))
    assert torch.equal(_bits(got.loss), _bits(expected["loss"]))

    # eager attention uses matmul + softmax instead of SDPA: close, not bit-identical.
    hf_eager = HFQwen3_5ForCausalLM.from_pretrained(
        tmp_path, attn_implementation="eager", dtype=torch.float32
    )
    with torch.no_grad():
        eager_logits = hf_eager.eval()(input_ids=ids).logits
    eager_diff = (eager_logits - expected["logits"]).abs().max().item()
    print(f"[{variant}] HF eager logits max abs diff: {eager_diff:.3e}")
    assert eager_diff <= 1e-5


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_load_back_gives_identical_tensors(tmp_path, variant):
    ours = _model(**VARIANTS[variant])
    _export(ours, tmp_path)
    loaded = ADAPTER.load_hf_state_dict(str(tmp_path), ours.config)
    reference = ours.state_dict()
    assert set(loaded) == set(reference)
    for key, tensor in reference.items():
        assert loaded[key].dtype == tensor.dtype and torch.equal(_bits(loaded[key]), _bits(tensor)), key
    fresh = build_qwen3_5(NS(model=NS(flavor="debug", config_overrides=VARIANTS[variant] or None)))
    fresh.load_state_dict(loaded, strict=True)  # every key present, nothing extra


def test_save_maps_keys_and_unties_shared_storage():
    model = _model()
    hf_sd = ADAPTER.save_hf_state_dict(model.state_dict(), model.config)
    assert "model.language_model.embed_tokens.weight" in hf_sd and "lm_head.weight" in hf_sd
    assert "model.language_model.layers.1.self_attn.q_norm.weight" in hf_sd
    assert "model.language_model.norm.weight" in hf_sd
    assert not any(k.startswith("model.") and not k.startswith("model.language_model.") for k in hf_sd)
    embed, head = hf_sd["model.language_model.embed_tokens.weight"], hf_sd["lm_head.weight"]
    assert torch.equal(embed, head)
    assert embed.untyped_storage().data_ptr() != head.untyped_storage().data_ptr()


def _write(folder: Path, tensors: dict[str, torch.Tensor], name: str = "model.safetensors") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.clone().contiguous() for k, v in tensors.items()}, str(folder / name), metadata={"format": "pt"}
    )


def test_load_drops_visual_mtp_foreign_and_truncated_layers_and_clones_tied_head(tmp_path):
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    _write(
        tmp_path,
        {
            "model.language_model.embed_tokens.weight": t,
            "model.language_model.layers.0.mlp.up_proj.weight": t + 1,
            "model.language_model.layers.1.mlp.up_proj.weight": t + 2,  # truncated away
            "model.language_model.layers.10.mlp.up_proj.weight": t + 3,  # truncated away
            "model.layers.0.input_layernorm.weight": t[0],  # (ours) plain model.X kept
            "model.visual.blocks.0.attn.qkv.weight": t,
            "model.mtp.fc.weight": t,
            "mtp.layers.0.mlp.up_proj.weight": t,
            "something.else.weight": t,
        },
    )
    sd = ADAPTER.load_hf_state_dict(tmp_path, Qwen3_5Config(num_hidden_layers=1, full_attention_interval=1))
    assert sorted(sd) == [
        "lm_head.weight",
        "model.embed_tokens.weight",
        "model.layers.0.input_layernorm.weight",
        "model.layers.0.mlp.up_proj.weight",
    ]
    assert torch.equal(sd["lm_head.weight"], t)
    assert (
        sd["lm_head.weight"].untyped_storage().data_ptr()
        != sd["model.embed_tokens.weight"].untyped_storage().data_ptr()
    )


def test_load_sharded_index_and_dtype_cast(tmp_path):
    model = _model()
    hf_sd = {
        k: v.detach().clone() for k, v in ADAPTER.save_hf_state_dict(model.state_dict(), model.config).items()
    }
    keys = sorted(hf_sd)
    shards = {"model-00001-of-00002.safetensors": keys[::2], "model-00002-of-00002.safetensors": keys[1::2]}
    for filename, shard_keys in shards.items():
        _write(tmp_path, {k: hf_sd[k] for k in shard_keys}, filename)
    index = {"metadata": {}, "weight_map": {k: f for f, ks in shards.items() for k in ks}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))

    sd = ADAPTER.load_hf_state_dict(tmp_path, model.config, dtype=torch.bfloat16)
    assert set(sd) == set(model.state_dict())
    assert all(v.dtype == torch.bfloat16 for v in sd.values())
    reference = model.state_dict()
    assert all(torch.equal(sd[k], reference[k].to(torch.bfloat16)) for k in sd)


def test_load_without_checkpoint_names_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="model.safetensors.index.json or model.safetensors"):
        ADAPTER.load_hf_state_dict(tmp_path, Qwen3_5Config())


def test_export_hf_config_fields_and_transformers_accepts_it():
    from transformers import Qwen3_5TextConfig

    config = build_qwen3_5(NS(model=NS(flavor="debug"))).config
    exported = ADAPTER.export_hf_config(config, torch.bfloat16)
    assert list(exported) == [
        "architectures",
        "model_type",
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "max_position_embeddings",
        "rms_norm_eps",
        "attention_bias",
        "attention_dropout",
        "hidden_act",
        "tie_word_embeddings",
        "layer_types",
        "full_attention_interval",
        "rope_parameters",
        "linear_num_value_heads",
        "linear_num_key_heads",
        "linear_value_head_dim",
        "linear_key_head_dim",
        "linear_conv_kernel_dim",
        "dtype",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "use_cache",
        "initializer_range",
    ]
    assert exported["architectures"] == ["Qwen3_5ForCausalLM"] and exported["model_type"] == "qwen3_5_text"
    assert exported["dtype"] == "bfloat16" and exported["layer_types"] == ["full_attention"] * 2
    assert exported["rope_parameters"] == {
        "rope_type": "default",
        "rope_theta": 1e7,
        "partial_rotary_factor": 0.25,
        "mrope_section": [2, 1, 1],
    }
    assert json.loads(json.dumps(exported)) == exported
    hf_config = Qwen3_5TextConfig(
        **{k: v for k, v in exported.items() if k not in ("architectures", "model_type")}
    )
    assert hf_config.head_dim == 32 and hf_config.layer_types == ["full_attention"] * 2
    assert ADAPTER.export_hf_config(config, "bf16")["dtype"] == "bfloat16"


def test_ungated_model_cannot_be_exported():
    config = Qwen3_5Config(attn_output_gate=False)
    with pytest.raises(ValueError, match="attn_output_gate"):
        ADAPTER.export_hf_config(config, torch.float32)


def test_written_safetensors_are_readable(tmp_path):
    hf_sd = _export(_model(), tmp_path)
    assert set(load_file(tmp_path / "model.safetensors")) == set(hf_sd)
