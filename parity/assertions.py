"""``assert_bitwise_equal``: the harness's bit-for-bit check as a test assertion.

Tests that compare two results outside a registered case (a direct call of the legacy builder
and of the component, a resumed run against an uninterrupted one) assert with this helper rather
than with their own canonicalise + compare + message code::

    from parity import assert_bitwise_equal

    assert_bitwise_equal(legacy_batches, new_batches, "batches", kind="batches")
    assert_bitwise_equal(expected_tree, actual_tree, "lr_curve")

A failure raises ``AssertionError`` whose message is a parity report's difference block (artifact
path, first differing index, both values in hex, counts, max |diff| and max ULP).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parity import canonical
from parity.canonical import FloatLeaf, TensorLeaf
from parity.compare import compare
from parity.report import difference_lines

__all__ = ["KINDS", "assert_bitwise_equal", "is_canonical"]

# The artifact kinds whose ``parity.canonical`` function takes the raw artifact as its one
# positional argument (``param_groups`` also takes the named parameters: pass them as a kwarg
# when both sides share one model, else canonicalise each side with its own model first).
KINDS: dict[str, Callable[..., Any]] = {
    "param_groups": canonical.param_groups,
    "lr_curve": canonical.lr_curve,
    "losses": canonical.losses,
    "token_ids": canonical.token_ids,
    "batches": canonical.batches,
    "checkpoint": canonical.checkpoint,
    "metrics": canonical.metrics,
}


def is_canonical(tree: Any) -> bool:
    """True when ``tree`` is made only of canonical nodes (str-keyed dicts, lists, scalars, leaves)."""
    if tree is None or isinstance(tree, (str, int, FloatLeaf, TensorLeaf)):  # bool is an int
        return True
    if isinstance(tree, dict):
        return all(isinstance(k, str) and k != canonical.MARK and is_canonical(v) for k, v in tree.items())
    if isinstance(tree, list):
        return all(is_canonical(v) for v in tree)
    return False  # floats, tuples, tensors, numpy scalars, other mappings


def _canonical_side(value: Any, root: str, kind: str | None, kind_kwargs: dict[str, Any]) -> Any:
    if is_canonical(value):
        return value
    if kind is None:
        return canonical.canonicalise(value, root)
    return KINDS[kind](value, **kind_kwargs)


def assert_bitwise_equal(
    expected: Any, actual: Any, root: str = "value", *, kind: str | None = None, **kind_kwargs: Any
) -> None:
    """Assert that two results are equal bit for bit, as the parity harness compares them.

    Each side that is not a canonical tree yet is canonicalised: with ``parity.canonical.<kind>``
    (``kind_kwargs`` passed on, e.g. ``dtype="float32"`` for losses) when ``kind`` is given, else
    with ``canonicalise``; a side that already is one is compared as it is. (So give both sides in
    the same form for the kinds that wrap their input, ``checkpoint``, ``metrics`` and
    ``param_groups``: a raw state dict without floats or tensors is already canonical and stays
    unwrapped.) ``root`` names the artifact in the paths of the message. Structure, dtype, shape
    and every bit count: +0.0 and -0.0 differ, and so do NaN payloads.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown artifact kind {kind!r}; expected one of {', '.join(KINDS)}")
    differences = compare(
        _canonical_side(expected, root, kind, kind_kwargs),
        _canonical_side(actual, root, kind, kind_kwargs),
        root,
    )
    if differences:
        label = f" ({kind})" if kind is not None else ""
        header = f"{root}{label}: expected and actual differ bitwise"
        raise AssertionError("\n".join([header, *difference_lines(differences, more="")]))
