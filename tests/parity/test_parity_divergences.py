"""Planted divergences, one per artifact kind: the comparator must fail and point at the right place."""

from __future__ import annotations

import pytest

from hyper_parallel.platform import get_platform
from parity import canonical
from parity.compare import LAYOUT, STRUCTURE, VALUES, compare
from tests.parity import parity_synthetic as synth


def _first(expected, actual, root):
    diffs = compare(expected, actual, root)
    assert diffs, "the planted divergence was not detected"
    return diffs[0], diffs


@pytest.mark.parametrize(
    "producer",
    [
        synth.param_groups,
        synth.lr_curve,
        synth.batches,
        synth.token_ids,
        synth.checkpoint,
        synth.metrics,
        synth.losses,
    ],
)
def test_identical_artifacts_compare_equal(producer):
    assert compare(producer(), producer(), "x") == []


def test_changed_eps_in_a_param_group():
    first, diffs = _first(synth.param_groups(), synth.param_groups(eps=1e-6), "param_groups")
    assert (first.path, first.kind, first.phase) == ("param_groups[0].eps", "value", VALUES)
    assert [d.path for d in diffs] == ["param_groups[0].eps", "param_groups[1].eps"]
    assert first.expected == (1e-8).hex() and first.actual == (1e-6).hex()


def test_dropped_decay_keyword_moves_params_between_groups():
    # Without the "norm" keyword, norm.weight leaves the no-decay group for the decay group.
    first, diffs = _first(synth.param_groups(), synth.param_groups(decay_keywords=("bias",)), "param_groups")
    assert first.phase == STRUCTURE
    assert (first.kind, first.path, first.index) == ("extra", "param_groups[0].params[2:3]", 2)
    assert [(d.kind, d.path, d.expected, d.actual) for d in diffs[1:]] == [
        ("missing", "param_groups[1].params[2:3]", "3", "2"),
        ("value", "param_groups[1].params[1]", "'norm.weight'", "'norm.bias'"),
    ]


def test_warmup_floor_instead_of_ceil():
    first, diffs = _first(synth.lr_curve(), synth.lr_curve(rounding="floor"), "lr_curve")
    assert (first.path, first.kind) == ("lr_curve[1]", "value")  # step 0 is lr 0 either way
    assert first.expected == (0.1 / 3).hex() and first.actual == (0.1 / 2).hex()
    assert first.max_ulp is not None and first.max_ulp > 0


def test_shifted_label_in_a_batch():
    first, diffs = _first(synth.batches(seq_len=6), synth.batches(seq_len=6, shift="roll"), "batches")
    assert (first.path, first.kind, first.index) == ("batches[0].labels", "bits", 5)
    assert first.count == 2  # the last label of both rows
    assert first.expected.startswith("-100 ")


def test_different_pad_id_in_token_ids():
    first, _ = _first(synth.token_ids(), synth.token_ids(pad_id=2), "token_ids")
    assert (first.path, first.kind, first.index) == ("token_ids", "bits", 3)
    assert first.count == 5 and first.max_abs_diff == 2.0


def test_one_flipped_bit_in_one_checkpoint_tensor():
    first, diffs = _first(synth.checkpoint(), synth.checkpoint(flip=True), "checkpoint")
    assert len(diffs) == 1
    assert (first.path, first.kind, first.index) == (
        'checkpoint.state.model["proj.weight"]',
        "bits",
        synth.FLIP_INDEX,
    )
    assert first.count == 1 and first.max_ulp == 8


def test_one_flipped_bit_in_a_large_streamed_tensor():
    first, _ = _first(synth.checkpoint(large=True), synth.checkpoint(large=True, flip=True), "checkpoint")
    assert (first.path, first.index, first.count, first.max_ulp) == (
        "checkpoint.state.model.big",
        synth.LARGE_FLIP_INDEX,
        1,
        8,
    )


def test_renamed_metric_key():
    first, diffs = _first(synth.metrics(), synth.metrics(tokens_key="num_tokens"), "metrics")
    assert (first.kind, first.path) == ("missing", "metrics.keys.tokens")
    assert diffs[1].kind == "extra" and diffs[1].path == "metrics.keys.num_tokens"
    assert all(d.phase == STRUCTURE for d in diffs)


def test_positive_vs_negative_zero():
    first, diffs = _first(synth.losses(), synth.losses(zero=-0.0), "losses")
    assert (first.path, first.expected, first.actual, first.max_ulp) == (
        "losses[1]",
        "0x0.0p+0",
        "-0x0.0p+0",
        0,
    )
    tensor_diff = diffs[1]
    assert (tensor_diff.path, tensor_diff.index, tensor_diff.count, tensor_diff.max_ulp) == (
        "losses[2]",
        0,
        1,
        0,
    )
    assert tensor_diff.max_abs_diff == 0.0  # numerically equal, bitwise different


def test_structure_is_reported_before_dtype_shape_and_bits():
    import torch

    expected = canonical.canonicalise({"a": torch.zeros(2), "b": torch.zeros(2), "c": 1.0, "gone": 1})
    actual = canonical.canonicalise({"a": torch.ones(2), "b": torch.zeros(3), "c": 1, "new": 1})
    phases = [(d.phase, d.kind, d.path) for d in compare(expected, actual, "x")]
    assert phases == [
        (STRUCTURE, "missing", "x.gone"),
        (STRUCTURE, "extra", "x.new"),
        (STRUCTURE, "type", "x.c"),
        (LAYOUT, "shape", "x.b"),
        (VALUES, "bits", "x.a"),
    ]


def test_dtype_change_is_reported_without_reading_bits():
    import torch

    diffs = compare(
        canonical.canonicalise(torch.zeros(4)),
        canonical.canonicalise(torch.zeros(4, dtype=torch.float64)),
        "t",
    )
    assert [(d.kind, d.expected, d.actual) for d in diffs] == [("dtype", "float32", "float64")]


def test_nan_payloads_differ_and_have_no_ulp():
    import torch

    a = torch.tensor([float("nan"), 1.0])
    b = a.clone()
    b.view(torch.int32)[0] += 1  # another NaN payload
    diffs = compare(canonical.canonicalise(a), canonical.canonicalise(b), "t")
    assert len(diffs) == 1 and diffs[0].nan_count == 1 and diffs[0].max_ulp is None and diffs[0].index == 0


def test_comparing_reads_only_the_differing_pair(monkeypatch):
    """Equal hashes short-circuit: only the one differing tensor pair is read back."""
    import torch

    platform = get_platform()
    tensors = {f"w{i}": torch.full((100_000,), float(i)) for i in range(8)}
    other = {k: v.clone() for k, v in tensors.items()}
    other["w3"][12_345] = -1.0
    expected, actual = canonical.checkpoint(tensors), canonical.checkpoint(other)
    calls = []
    original = platform.int_view_numpy
    monkeypatch.setattr(platform, "int_view_numpy", lambda t: calls.append(t.numel()) or original(t))
    diffs = compare(expected, actual, "checkpoint")
    assert [(d.path, d.index) for d in diffs] == [("checkpoint.state.w3", 12_345)]
    assert calls == [100_000, 100_000]
