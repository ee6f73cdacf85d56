"""Canonical artifacts: bit-faithful leaves, inline vs hashed tensors, FQNs, stable JSON."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch

from parity import canonical
from parity.fileio import canonical_json
from tests.parity import parity_synthetic as synth


def test_float_leaf_is_hex_plus_repr():
    leaf = canonical.canonicalise(0.1)
    assert leaf == canonical.FloatLeaf(hex=(0.1).hex(), repr="0.1")
    assert canonical.canonicalise(-0.0) != canonical.canonicalise(0.0)


def test_signed_zero_and_nan_payload_change_the_tensor_hash():
    zero, neg_zero = torch.tensor([0.0]), torch.tensor([-0.0])
    assert canonical.tensor_leaf(zero).sha256 != canonical.tensor_leaf(neg_zero).sha256
    nan = torch.tensor([float("nan")])
    other_nan = nan.clone()
    other_nan.view(torch.int32)[0] += 1
    assert canonical.tensor_leaf(nan).sha256 != canonical.tensor_leaf(other_nan).sha256


def test_small_tensors_are_inlined_as_integer_views_and_hex():
    leaf = canonical.tensor_leaf(torch.tensor([[1.0, -0.0]], dtype=torch.bfloat16))
    assert (leaf.dtype, leaf.shape) == ("bfloat16", (1, 2))
    assert leaf.values == [0x3F80, -32768]  # signed int16 view: -0.0 is 0x8000
    assert leaf.hex == [(1.0).hex(), (-0.0).hex()]
    assert leaf.sha256 == hashlib.sha256(bytes([0x80, 0x3F, 0x00, 0x80])).hexdigest()


def test_large_tensors_are_hash_only():
    leaf = canonical.tensor_leaf(torch.zeros(canonical.INLINE_MAX_NUMEL + 1))
    assert leaf.values is None and leaf.hex is None
    assert "values" not in leaf.to_json()


def test_non_contiguous_and_zero_dim_tensors_hash_their_logical_bytes():
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert canonical.tensor_leaf(base.t()).sha256 == canonical.tensor_leaf(base.t().contiguous()).sha256
    scalar = canonical.tensor_leaf(torch.tensor(2.0))
    assert (scalar.shape, scalar.values) == ((), [0x40000000])
    flags = canonical.tensor_leaf(torch.tensor([True, False]))
    assert (flags.dtype, flags.values) == ("bool", [1, 0])


def test_json_round_trip_keeps_every_leaf():
    tree = synth.checkpoint()
    text = canonical_json(canonical.to_json(tree))
    back = canonical.from_json(json.loads(text))
    assert canonical_json(canonical.to_json(back)) == text
    assert text.endswith("}\n") and json.loads(text)["keys"]["model/proj.weight"] == "tensor"


def test_param_groups_use_fqns_and_keep_tied_names_once():
    emb = torch.nn.Embedding(4, 2)
    head = torch.nn.Linear(2, 4, bias=False)
    head.weight = emb.weight  # tied
    model = torch.nn.ModuleDict({"emb": emb, "head": head})
    groups = canonical.param_groups(
        [{"params": list(model.parameters()), "lr": 0.5}], model.named_parameters()
    )
    assert groups[0]["params"] == ["emb.weight"]
    assert groups[0]["lr"] == canonical.float_leaf(0.5)


def test_param_not_in_named_parameters_is_a_clear_error():
    stray = torch.nn.Parameter(torch.zeros(3))
    with pytest.raises(ValueError, match=r"param_groups\[0\]\.params\[0\] \(shape \[3\]\)"):
        canonical.param_groups([{"params": [stray]}], [])


def test_unsupported_values_name_their_path():
    with pytest.raises(TypeError, match=r"\$\.a\[1\]: cannot canonicalise a builtins.set"):
        canonical.canonicalise({"a": [1, {2}]})
    with pytest.raises(ValueError, match="collide"):
        canonical.canonicalise({1: 0, "1": 0})


def test_metrics_keep_values_only_for_deterministic_keys():
    tree = synth.metrics()
    assert tree["keys"] == {"loss": "float", "lr": "float", "time_s": "float", "tokens": "int"}
    assert set(tree["values"][0]) == {"loss", "lr", "tokens"}


def test_token_ids_must_be_integers():
    with pytest.raises(TypeError, match="token ids must be ints"):
        canonical.token_ids([[1, 2.5]])
