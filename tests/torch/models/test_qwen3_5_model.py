"""Qwen3.5 debug model: config merge and validation, registry, module tree, forward, parallelize."""

from __future__ import annotations

import importlib
from types import SimpleNamespace as NS

import pytest
import torch
import torch.nn.functional as F

from hyper_parallel.models.qwen3_5 import (
    FLAVORS,
    Qwen3_5Config,
    Qwen3_5ForCausalLM,
    Qwen3_5StateDictAdapter,
    build_qwen3_5,
    parallelize_qwen3_5,
)
from hyper_parallel.models.spec import ModelSpec, StateDictAdapter, get_spec, list_specs, register_spec
from hyper_parallel.trainer.utils.discovery import discover_model_spec

V = FLAVORS["debug"]["vocab_size"]


def _args(flavor: str | None = "debug", config_overrides=None, **model_fields) -> NS:
    return NS(model=NS(name="qwen3_5", flavor=flavor, config_overrides=config_overrides, **model_fields))


def _debug_model(seed: int = 0, **overrides) -> Qwen3_5ForCausalLM:
    """Debug model with every parameter (norms included) drawn from N(0, 0.02)."""
    torch.manual_seed(seed)
    model = build_qwen3_5(_args(config_overrides=overrides or None))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    return model


def _ids(batch: int = 2, seq: int = 17, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, V, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().reshape(-1).view(torch.int32)


# --------------------------------------------------------------------------- config


def test_defaults_are_qwen3_5_0_8b_with_every_fourth_layer_full():
    c = Qwen3_5Config()
    assert (c.vocab_size, c.hidden_size, c.num_hidden_layers, c.head_dim, c.rotary_dim) == (
        248320,
        1024,
        24,
        256,
        64,
    )
    assert c.layer_types[:4] == ["linear_attention"] * 3 + ["full_attention"]
    assert c.layer_types.count("full_attention") == 6


def test_debug_flavor_is_all_full_attention():
    c = build_qwen3_5(_args()).config
    assert c.layer_types == ["full_attention", "full_attention"]
    assert (c.vocab_size, c.hidden_size, c.intermediate_size, c.head_dim, c.rotary_dim) == (
        2048,
        128,
        256,
        32,
        8,
    )
    assert c.mrope_section == [2, 1, 1] and c.tie_word_embeddings and c.attn_output_gate


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_hidden_layers": 2, "layer_types": ["full_attention"]}, "layer_types"),
        ({"num_hidden_layers": 1, "layer_types": ["mamba"]}, "layer_types[0]"),
        ({"num_attention_heads": 6, "num_key_value_heads": 4}, "num_key_value_heads"),
        ({"num_key_value_heads": 0}, "num_key_value_heads"),
        ({"head_dim": 36, "partial_rotary_factor": 0.25}, "must be even"),  # R = 9
        ({"mrope_section": [11, 11, 11]}, "mrope_section"),
        # Sizes are checked before anything is built per layer: 10**14 layers once filled 23 GB.
        ({"num_hidden_layers": 189899027373166}, "num_hidden_layers=189899027373166; expected at most"),
        ({"num_hidden_layers": 0}, "num_hidden_layers=0; expected a positive integer"),
        ({"full_attention_interval": 0}, "full_attention_interval=0; expected a positive integer"),
        ({"hidden_size": -1}, "hidden_size=-1"),
        ({"vocab_size": 2.5}, "vocab_size=2.5"),
    ],
)
def test_config_validation_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        Qwen3_5Config(**kwargs)


def test_merge_order_flavor_then_universal_then_overrides():
    args = _args(
        hidden_size=64,
        num_attention_heads=8,
        vocab_size=512,
        num_hidden_layers=None,  # None universal fields do not override
        config_overrides={"hidden_size": 96, "rms_norm_eps": 1e-5},
    )
    c = build_qwen3_5(args).config
    assert c.hidden_size == 96  # override beats universal field
    assert c.num_attention_heads == 8 and c.vocab_size == 512  # universal beats flavour
    assert c.num_hidden_layers == 2 and c.intermediate_size == 256  # flavour beats defaults
    assert c.rms_norm_eps == 1e-5


def test_unknown_override_key_names_the_key_and_valid_fields():
    with pytest.raises(ValueError, match=r"model\.config_overrides\.hiden_size .*hidden_size"):
        build_qwen3_5(_args(config_overrides={"hiden_size": 3}))


def test_unknown_flavor_lists_flavors():
    with pytest.raises(ValueError, match=r"model\.flavor='huge'.*\['debug'\]"):
        build_qwen3_5(_args(flavor="huge"))


def test_linear_attention_is_not_implemented():
    with pytest.raises(NotImplementedError, match="GatedDeltaNet"):
        build_qwen3_5(_args(flavor=None))
    with pytest.raises(NotImplementedError, match="full_attention_interval: 1"):
        build_qwen3_5(_args(config_overrides={"full_attention_interval": 2}))


def test_overrides_can_fix_the_default_config_and_args_may_omit_fields():
    args = NS(
        model=NS(config_overrides={"full_attention_interval": 1, "num_hidden_layers": 1, "vocab_size": 64})
    )
    with torch.device("meta"):
        model = build_qwen3_5(args)
    assert model.config.layer_types == ["full_attention"] and model.config.hidden_size == 1024


# -------------------------------------------------------------------------- registry


def test_registry_and_discovery():
    spec = discover_model_spec("qwen3_5")
    assert spec is get_spec("qwen3_5") and isinstance(spec, ModelSpec)
    assert spec.build_model_fn is build_qwen3_5 and spec.parallelize_fn is parallelize_qwen3_5
    assert spec.state_dict_adapter is Qwen3_5StateDictAdapter
    assert spec.clip_grad_fn is None and spec.pipelining_fn is None
    assert isinstance(Qwen3_5StateDictAdapter(), StateDictAdapter)
    with pytest.raises(ValueError, match="already registered"):
        register_spec("qwen3_5", spec)
    with pytest.raises(KeyError, match="qwen3_5"):
        get_spec("nope")


def test_discovery_of_unknown_model_lists_builtin_packages():
    with pytest.raises(ImportError, match=r"model\.name='nope'.*\['qwen3_5'\]"):
        discover_model_spec("nope")


def test_dotted_name_must_register_that_name():
    with pytest.raises(KeyError, match="did not register"):
        discover_model_spec("hyper_parallel.models.qwen3_5")


def test_reimport_does_not_double_register():
    import hyper_parallel.models.qwen3_5 as pkg

    importlib.reload(pkg)
    assert list_specs().count("qwen3_5") == 1


# ----------------------------------------------------------------------- module tree


def test_registration_order_and_tied_weight_once():
    model = build_qwen3_5(_args())
    layer = [
        "self_attn.q_proj.weight",
        "self_attn.k_proj.weight",
        "self_attn.v_proj.weight",
        "self_attn.o_proj.weight",
        "self_attn.q_norm.weight",
        "self_attn.k_norm.weight",
        "mlp.gate_proj.weight",
        "mlp.up_proj.weight",
        "mlp.down_proj.weight",
        "input_layernorm.weight",
        "post_attention_layernorm.weight",
    ]
    expected = (
        ["model.embed_tokens.weight"]
        + [f"model.layers.{i}.{n}" for i in range(2) for n in layer]
        + ["model.norm.weight"]
    )
    assert [n for n, _ in model.named_parameters()] == expected
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert dict(model.named_parameters())["model.layers.0.self_attn.q_proj.weight"].shape == (2 * 4 * 32, 128)
    assert [n for n, _ in model.named_buffers()] == ["model.rotary_emb.inv_freq"]
    assert "model.rotary_emb.inv_freq" not in model.state_dict()  # non-persistent
    assert all(torch.count_nonzero(m.weight) == 0 for n, m in model.named_modules() if n.endswith("norm"))


def test_untied_and_biased_variant():
    model = build_qwen3_5(_args(config_overrides={"tie_word_embeddings": False, "attention_bias": True}))
    names = [n for n, _ in model.named_parameters()]
    assert names[-1] == "lm_head.weight" and "model.layers.0.self_attn.q_proj.bias" in names
    assert model.lm_head.weight is not model.model.embed_tokens.weight


def test_forwarding_properties_and_tie_weights():
    model = build_qwen3_5(_args())
    assert model.layers is model.model.layers and model.embed_tokens is model.model.embed_tokens
    assert model.norm is model.model.norm and model.rotary_emb is model.model.rotary_emb
    sentinel = torch.nn.Identity()
    original = model.layers[1]
    model.layers[1] = sentinel
    assert model.model.layers[1] is sentinel
    model.layers[1] = original
    model.lm_head.weight = torch.nn.Parameter(torch.zeros(V, 128))
    model.tie_weights()
    assert model.lm_head.weight is model.model.embed_tokens.weight


def test_meta_build_then_reset_inv_freq_matches_eager_build():
    eager = build_qwen3_5(_args())
    with torch.device("meta"):
        meta = build_qwen3_5(_args())
    assert meta.rotary_emb.inv_freq.is_meta
    meta.to_empty(device="cpu")
    for buf in meta.buffers():
        buf.zero_()
    meta.rotary_emb.reset_inv_freq()
    expected = 1.0 / (1e7 ** (torch.arange(0, 8, 2).float() / 8))
    assert torch.equal(_bits(meta.rotary_emb.inv_freq), _bits(expected))
    assert torch.equal(_bits(eager.rotary_emb.inv_freq), _bits(expected))


# --------------------------------------------------------------------------- forward


def test_loss_is_cross_entropy_on_right_padded_shifted_labels():
    model = _debug_model()
    ids = _ids()
    labels = ids.clone()
    labels[0, :5] = -100
    labels[1, -3:] = -100
    out = model(input_ids=ids, labels=labels, attention_mask=torch.ones_like(ids), use_cache=False)
    assert set(out) == {"loss", "logits"} and out["logits"].shape == (2, 17, V)
    logits = out["logits"].float()
    manual = F.cross_entropy(
        logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1), ignore_index=-100, reduction="mean"
    )
    torch.testing.assert_close(out["loss"], manual, rtol=1e-6, atol=0)
    shift = torch.cat([labels[:, 1:], torch.full((2, 1), -100)], dim=1)
    exact = F.cross_entropy(logits.view(-1, V), shift.reshape(-1), ignore_index=-100)
    assert torch.equal(_bits(out["loss"]), _bits(exact))
    assert model(input_ids=ids)["loss"] is None


def test_forward_logits_is_bit_identical_to_forward():
    model = _debug_model()
    ids = _ids()
    a = model(ids, labels=ids)["logits"]
    b = model.forward_logits(ids)
    assert torch.equal(_bits(a), _bits(b))


def test_position_ids_default_and_broadcast():
    model = _debug_model()
    ids = _ids()
    base = model.forward_logits(ids)
    one_d = model.forward_logits(ids, position_ids=torch.arange(17))
    two_d = model.forward_logits(ids, position_ids=torch.arange(17).expand(2, 17))
    assert torch.equal(_bits(base), _bits(one_d)) and torch.equal(_bits(base), _bits(two_d))
    shifted = model.forward_logits(ids, position_ids=torch.arange(17) + 5)
    assert not torch.equal(base, shifted)
    with pytest.raises(NotImplementedError, match="mRoPE"):
        model.forward_logits(ids, position_ids=torch.zeros(3, 2, 17, dtype=torch.long))


def test_attention_is_causal():
    model = _debug_model()
    ids = _ids()
    changed = ids.clone()
    changed[:, -1] = (changed[:, -1] + 1) % V
    a, b = model.forward_logits(ids), model.forward_logits(changed)
    assert torch.equal(a[:, :-1], b[:, :-1]) and not torch.equal(a[:, -1], b[:, -1])


# ------------------------------------------------------------------------ parallelize


@pytest.fixture
def mesh(gloo_world):
    """A 1-rank gloo group (``gloo_world``) and the trainer's 1-D mesh with its aliases."""
    from torch.distributed.device_mesh import init_device_mesh

    m = init_device_mesh("cpu", (1,), mesh_dim_names=("dp_shard",))
    m["dp_shard"]._flatten("fsdp")
    m["dp_shard"]._flatten("dp")
    m["dp_shard"]._flatten("loss")
    return m


def _train_args(**sections) -> NS:
    train = NS(
        accelerator=NS(
            **{"tp": 1, "ep": 1, "cp": 1, "reshard_after_forward": True, **sections.pop("accelerator", {})}
        ),
        mixed_precision=NS(**{"enabled": False, **sections.pop("mixed_precision", {})}),
        gradient_checkpointing=NS(activation_checkpoint=sections.pop("ac", "off")),
    )
    return NS(
        model=NS(name="qwen3_5", flavor="debug", freeze_modules=sections.pop("freeze", None)), train=train
    )


@pytest.mark.parametrize("ac", ["off", False, "full"])
def test_parallelize_fsdp2_matches_unsharded_forward_backward(mesh, ac):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.tensor import DTensor

    reference = _debug_model()
    model = _debug_model()
    ids = _ids()
    ref_out = reference(ids, labels=ids)
    ref_out["loss"].backward()

    out_model = parallelize_qwen3_5(model, mesh, _train_args(ac=ac))
    assert out_model is model and isinstance(model, FSDPModule)
    assert all(isinstance(layer, FSDPModule) for layer in model.layers)
    assert all(isinstance(layer, CheckpointWrapper) for layer in model.layers) == (ac == "full")
    params = dict(model.named_parameters())
    assert all(isinstance(p, DTensor) for p in params.values())
    assert next(iter(params.values())).device_mesh.mesh_dim_names == ("fsdp",)
    if ac == "full":
        assert "model.layers.0._checkpoint_wrapped_module.self_attn.q_proj.weight" in params
    assert model.lm_head.weight is model.model.embed_tokens.weight

    out = model(ids, labels=ids)
    out["loss"].backward()
    assert torch.equal(_bits(out["logits"]), _bits(ref_out["logits"]))
    assert torch.equal(_bits(out["loss"]), _bits(ref_out["loss"]))
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters(), strict=True):
        assert torch.equal(_bits(p.grad.full_tensor()), _bits(q.grad)), name
    # forward_logits is an FSDP forward method too: the root params are gathered when called directly.
    with torch.no_grad():
        assert torch.equal(_bits(model.forward_logits(ids)), _bits(ref_out["logits"]))


@pytest.mark.parametrize("degree", ["tp", "ep", "cp"])
def test_parallelize_rejects_tp_ep_cp(degree):
    with pytest.raises(NotImplementedError, match=rf"train\.accelerator\.{degree}=2"):
        parallelize_qwen3_5(build_qwen3_5(_args()), None, _train_args(accelerator={degree: 2}))


def test_parallelize_rejects_unknown_mixed_precision_dtype():
    args = _train_args(mixed_precision={"enabled": True, "param_dtype": "bfloat16", "reduce_dtype": "half"})
    with pytest.raises(ValueError, match=r"train\.mixed_precision\.reduce_dtype='half'"):
        parallelize_qwen3_5(build_qwen3_5(_args()), None, args)


def test_mixed_precision_policy_and_frozen_downcast(mesh):
    model = _debug_model()
    for name, p in model.named_parameters():
        if "mlp" in name:
            p.requires_grad_(False)
    args = _train_args(
        mixed_precision={
            "enabled": True,
            "param_dtype": "bf16",
            "reduce_dtype": "fp32",
            "output_dtype": None,
        },
        freeze=["mlp"],
    )
    parallelize_qwen3_5(model, mesh, args)
    dtypes = {n: p.dtype for n, p in model.named_parameters()}
    assert dtypes["model.layers.0.mlp.up_proj.weight"] == torch.bfloat16
    assert dtypes["model.layers.0.self_attn.q_proj.weight"] == torch.float32
    policy = model._get_fsdp_state()._mp_policy
    assert (policy.param_dtype, policy.reduce_dtype, policy.output_dtype) == (
        torch.bfloat16,
        torch.float32,
        None,
    )
    ids = _ids()
    out = model(ids, labels=ids)
    assert out["logits"].dtype == torch.bfloat16
    out["loss"].backward()


def test_parallelize_without_named_aliases_uses_whole_mesh(mesh):
    from torch.distributed.device_mesh import init_device_mesh

    plain = init_device_mesh("cpu", (1,), mesh_dim_names=("other",))
    model = parallelize_qwen3_5(_debug_model(), plain, _train_args())
    assert next(model.parameters()).device_mesh.mesh_dim_names == ("other",)
