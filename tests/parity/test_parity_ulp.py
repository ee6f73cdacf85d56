"""ULP distance on known pairs, and the signed-zero convention (ULP 0, still a bit mismatch)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from parity import canonical
from parity.compare import compare
from parity.ulp import float_hex, float_values, ulp_distance_bits, ulp_distance_floats


def _bits(values, dtype):
    return canonical.canonicalise(torch.tensor(values, dtype=dtype)).int_bits()


def _ulp(a, b, dtype):
    name = str(dtype).removeprefix("torch.")
    return [int(x) for x in ulp_distance_bits(_bits(a, dtype), _bits(b, dtype), name)]


def test_fp32_known_pairs():
    one_next = float(np.nextafter(np.float32(1.0), np.float32(2.0)))
    assert _ulp([1.0, 1.0, -1.0, 0.0], [one_next, 1.0 + 2**-22, 1.0, 1e-45], torch.float32) == [
        1,
        2,
        2 * 0x3F800000,
        1,
    ]


def test_fp64_known_pairs_including_the_overflow_range():
    big = np.finfo(np.float64).max
    assert _ulp([1.0, 5e-324, -big], [np.nextafter(1.0, 2.0), -5e-324, big], torch.float64) == [
        1,
        2,
        2 * 0x7FEFFFFFFFFFFFFF,  # > int64 max: computed in uint64 without overflow
    ]


def test_bf16_known_pairs():
    a = torch.tensor([1.0, 1.0], dtype=torch.bfloat16)
    b = torch.tensor([1.0078125, 1.015625], dtype=torch.bfloat16)  # 1 + 2^-7, 1 + 2^-6
    bits_a, bits_b = canonical.canonicalise(a).int_bits(), canonical.canonicalise(b).int_bits()
    assert bits_a.dtype == np.int16  # numpy has no bf16: an int16 view
    assert ulp_distance_bits(bits_a, bits_b, "bfloat16").tolist() == [1, 2]
    assert float_values(bits_b, "bfloat16").tolist() == [1.0078125, 1.015625]


def test_fp16_known_pair():
    assert _ulp([1.0], [1.0009765625], torch.float16) == [1]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_signed_zeros_are_ulp_zero_but_a_bit_mismatch(dtype):
    assert _ulp([0.0], [-0.0], dtype) == [0]
    diffs = compare(
        canonical.canonicalise(torch.tensor([0.0], dtype=dtype)),
        canonical.canonicalise(torch.tensor([-0.0], dtype=dtype)),
        "z",
    )
    assert len(diffs) == 1 and diffs[0].count == 1 and diffs[0].max_ulp == 0


def test_python_float_pairs():
    assert ulp_distance_floats(0.0, -0.0) == 0
    assert ulp_distance_floats(1.0, np.nextafter(1.0, 0.0)) == 1
    assert ulp_distance_floats(float("nan"), 1.0) is None


def test_nan_hex_keeps_sign_and_payload():
    assert float_hex(float("nan")) != float_hex(-float("nan"))
    assert float_hex(1.5) == "0x1.8000000000000p+0"


# A ULP count between values of different signs counts every float in between, and to an infinity
# every float up to the largest: such pairs show a relative difference instead, in the comparator,
# the report line and the update review.
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_a_sign_change_has_a_relative_difference_and_no_ulp_count(dtype):
    diffs = compare(
        canonical.canonicalise(torch.tensor([1.0, 2.0, 4.0], dtype=dtype)),
        canonical.canonicalise(torch.tensor([-1.0, 2.0, 4.0], dtype=dtype)),
        "t",
    )
    assert len(diffs) == 1 and diffs[0].max_ulp is None and diffs[0].max_rel_diff == 2.0


def test_ulp_covers_the_same_sign_elements_and_rel_diff_the_others():
    one_next = float(np.nextafter(np.float32(1.0), np.float32(2.0)))
    diffs = compare(
        canonical.canonicalise(torch.tensor([1.0, 3.0, 5.0, 0.0], dtype=torch.float32)),
        canonical.canonicalise(torch.tensor([one_next, -1.0, float("inf"), 1e-45], dtype=torch.float32)),
        "t",
    )
    (diff,) = diffs
    assert diff.count == 4 and diff.max_ulp == 1  # 1.0 -> next, and 0.0 -> the smallest subnormal
    assert diff.max_rel_diff == float("inf")  # 5.0 -> inf (and 3.0 -> -1.0: 4/3)
    assert diff.to_dict()["max_rel_diff"] == "inf"


def test_a_python_float_that_changes_sign_is_reported_without_ulp():
    from parity.canonical import FloatLeaf
    from parity.report import difference_lines

    def _leaf(x: float) -> FloatLeaf:
        return FloatLeaf(x.hex(), repr(x))

    (diff,) = compare(_leaf(0.5), _leaf(-0.25), "loss")
    assert diff.max_ulp is None and diff.max_rel_diff == 1.5
    text = "\n".join(difference_lines([diff]))
    assert "max ULP: n/a" in text and "max rel diff: 1.5 (sign changed or infinite" in text
    (same_sign,) = compare(_leaf(0.5), _leaf(float(np.nextafter(0.5, 1.0))), "loss")
    assert same_sign.max_ulp == 1 and same_sign.max_rel_diff is None


def test_the_update_review_prints_no_ulp_figure_for_a_sign_change():
    import json

    from parity.canonical import MARK
    from parity.review import review

    def golden(loss: float, weights: list[float]) -> str:
        values = canonical.canonicalise(torch.tensor(weights, dtype=torch.float64)).int_bits().tolist()
        leaf = {
            MARK: "tensor",
            "dtype": "float64",
            "shape": [len(weights)],
            "sha256": str(weights),
            "values": values,
        }
        loss_leaf = {MARK: "float", "hex": loss.hex(), "repr": repr(loss), "dtype": "float64"}
        return json.dumps({"artifacts": {"loss": loss_leaf, "w": leaf}, "fingerprint": {}})

    lines = review(golden(1.0, [1.0, 2.0]), golden(-1.0, [-1.0, 2.0]))
    text = "\n".join(lines)
    assert "ULP" not in text, text  # ~2**63 steps across zero: noise, not a figure
    assert text.count("rel diff 2 where the sign changed") == 2, text
    lines = review(golden(1.0, [1.0, 2.0]), golden(float(np.nextafter(1.0, 2.0)), [1.0, 2.0]))
    assert "1 ULP f64" in "\n".join(lines)
