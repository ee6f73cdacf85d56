"""``parity.assert_bitwise_equal``: passes on equal trees, fails like a parity report otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from parity import assert_bitwise_equal, canonical
from parity.assertions import is_canonical
from parity.canonical import TensorLeaf


def _tree(weight: torch.Tensor, lr: float = 1e-3) -> dict:
    return {"model": {"layers.0.weight": weight}, "lr": [lr, lr / 2], "step": 3, "name": "adamw"}


def _failure(expected, actual, root="value", **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        assert_bitwise_equal(expected, actual, root, **kwargs)
    return str(info.value)


def test_equal_trees_pass_raw_and_canonical():
    weight = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 7
    assert_bitwise_equal(_tree(weight), _tree(weight.clone()))
    assert_bitwise_equal(canonical.canonicalise(_tree(weight)), _tree(weight.clone()), "state")
    batches = [{"input_ids": torch.arange(4), "labels": torch.arange(4)}]
    assert_bitwise_equal(batches, [{k: v.clone() for k, v in b.items()} for b in batches], kind="batches")
    assert_bitwise_equal([0.1, 0.2], canonical.lr_curve([0.1, 0.2]), "lr_curve", kind="lr_curve")


def test_one_bit_float32_change_fails_naming_path_index_hex_and_ulp():
    weight = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 7
    moved = weight.clone()
    moved.view(torch.int32)[1, 1] += 1  # the last bit of element 4
    message = _failure(_tree(weight), _tree(moved), "state")
    assert message.splitlines()[0] == "state: expected and actual differ bitwise"
    # The first difference in the tensor's own shape, as torch.testing says it, and flat.
    assert 'first difference [bits/bits]: state.model["layers.0.weight"]  (index (1, 1), flat 4)' in message
    assert "1 of 6 elements differ bitwise; first at flat index 4" in message
    expected_hex, actual_hex = (float.hex(float(t.reshape(-1)[4])) for t in (weight, moved))
    assert f"expected: {expected_hex}" in message and f"actual  : {actual_hex}" in message
    assert "mismatches: 1 element(s)" in message
    assert "max ULP: 1 " in message


def test_signed_zero_fails_for_floats_and_tensors():
    message = _failure({"x": 0.0}, {"x": -0.0})
    assert "value.x" in message and "0x0.0p+0" in message and "-0x0.0p+0" in message
    assert "max ULP: 0 " in message  # equal numbers, different bits
    message = _failure(torch.zeros(3), torch.tensor([0.0, -0.0, 0.0]), "grad")
    assert "grad  (flat index 1)" in message


def test_hash_only_tensor_difference_fails():
    def leaf(sha: str) -> TensorLeaf:
        return TensorLeaf(dtype="float32", shape=(128,), sha256=sha)  # above the inline size: no values

    message = _failure({"w": leaf("a" * 64)}, {"w": leaf("b" * 64)}, "checkpoint")
    assert "checkpoint.w" in message
    assert "1 tensor(s) differing by hash" in message


def test_structure_difference_fails():
    weight = torch.ones(2)
    expected, actual = _tree(weight), _tree(weight)
    del actual["step"]
    actual["extra"] = 1
    message = _failure(expected, actual, "state")
    assert "first difference [structure/missing]: state.step" in message
    assert "[structure] extra   state.extra" in message
    message = _failure([1, 2, 3], [1, 2], "ids", kind="token_ids")
    assert "ids[2:3]" in message and "length changed: expected 3 items, got 2" in message


def test_kind_is_checked_and_canonical_trees_are_recognised():
    with pytest.raises(ValueError, match="unknown artifact kind 'lr'"):
        assert_bitwise_equal([1.0], [1.0], kind="lr")
    assert is_canonical(canonical.checkpoint({"w": torch.ones(2), "lr": 0.1}))
    assert not is_canonical({"lr": 0.1}) and not is_canonical((1, 2)) and not is_canonical({1: "a"})


def test_kind_kwargs_reach_the_kind_function():
    """``dtype`` goes to ``canonical.losses``: one float32 ULP apart is reported as 1 ULP, not 2**29."""
    one = 1.0
    next_f32 = float(torch.nextafter(torch.tensor(one), torch.tensor(2.0)))
    assert_bitwise_equal([one], [one], "losses", kind="losses", dtype="float32")
    message = _failure([one], [next_f32], "losses", kind="losses", dtype="float32")
    assert "losses[0]" in message and "float (float32) changed" in message and "max ULP: 1 " in message


def test_the_assertion_hides_its_own_frame_from_pytest():
    """A failing ``assert_bitwise_equal`` points at the caller's line (``__tracebackhide__``)."""
    with pytest.raises(AssertionError) as info:
        assert_bitwise_equal({"x": 1.0}, {"x": 2.0})
    shown = [Path(str(entry.path)).name for entry in info.traceback.filter(info)]
    assert shown == [Path(__file__).name], shown
