"""Loss components against the legacy in-forward loss.

Legacy vs new runs through the parity harness (the registered cases of
``parity/suites/components_loss_tokenizer.py``); the direct tests below pin what the harness
cases rely on: integer-view equality with ``F.cross_entropy`` on hand-shifted labels, the NaN of
an all-ignored batch, the chunked loss's exactness and memory bound, the token count on unshifted
labels, and planted divergences that the comparator must catch.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from hyper_parallel.components.loss import (
    BaseLoss,
    ChunkedCELoss,
    CrossEntropyLoss,
    count_loss_tokens,
    shift_labels,
)
from parity import assert_bitwise_equal, canonical
from parity.cases import REGISTRY
from parity.compare import VALUES, compare
from parity.pytest_plugin import case_params, run_case
from parity.suites import components_loss_tokenizer as suite


@pytest.mark.parametrize(("case", "backend"), case_params(REGISTRY, tag="loss"))
def test_parity_case(case, backend, request):
    """Legacy in-forward loss vs component (tier A) and the component's goldens (tier B)."""
    run_case(request, REGISTRY, case, backend)


def test_registered_cases_cover_the_issue_table():
    ids = [c.id for c in REGISTRY.select(tags=("loss",))]
    tiers = {REGISTRY.get(i).tier for i in ids}
    assert tiers == {"A", "B"}
    assert any("ignore=all" in i for i in ids) and any("chunks=3" in i for i in ids)
    assert any("bfloat16" in i for i in ids)


# ----------------------------------------------------------------------------- CrossEntropyLoss


def _hand_shift(labels: torch.Tensor) -> torch.Tensor:
    pad = torch.full((*labels.shape[:-1], 1), -100, dtype=labels.dtype)
    return torch.cat([labels[..., 1:], pad], dim=-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_ce_equals_f_cross_entropy_on_hand_shifted_labels(dtype):
    g = torch.Generator().manual_seed(3)
    logits = (torch.randn(3, 17, 50, generator=g) * 4).to(dtype)
    labels = torch.randint(0, 50, (3, 17), generator=g)
    labels[1, :5] = -100
    got = CrossEntropyLoss.Config().build()(logits, labels)
    want = F.cross_entropy(logits.float().view(-1, 50), _hand_shift(labels).reshape(-1), ignore_index=-100)
    assert_bitwise_equal(want, got, "loss")
    assert got.dtype == torch.float32


def test_ce_equals_legacy_forward_value_and_every_gradient():
    """The issue's core check written out: forward(input_ids, labels) vs loss(forward_logits(...), labels)."""
    model = suite.cached_debug_model(0)
    ids, labels = suite.model_batch(batch=2, seq=24, data_seed=11, ignore="prompt")
    legacy = suite._legacy_forward_loss(model, ids, labels)
    new = suite._component_loss(model, ids, labels, chunks=0)
    assert_bitwise_equal(legacy["loss"], new["loss"], "loss")
    assert legacy["grads"].keys() == new["grads"].keys()
    for name in legacy["grads"]:
        assert_bitwise_equal(legacy["grads"][name], new["grads"][name], "grad")


def test_fully_ignored_row_gets_zero_gradient():
    logits = torch.randn(2, 6, 11, requires_grad=True)
    labels = torch.randint(0, 11, (2, 6))
    labels[0] = -100
    CrossEntropyLoss.Config().build()(logits, labels).backward()
    assert_bitwise_equal(torch.zeros(6, 11), logits.grad[0], "grad")  # +0.0, not -0.0
    # The last position of every row predicts nothing (its shifted label is padding).
    assert not logits.grad[1, -1].any() and logits.grad[1, :-1].any()


def test_all_ignored_batch_is_nan_with_the_legacy_payload():
    """Mean over zero tokens is 0/0 in the NLL kernel; the component keeps the legacy NaN bits."""
    model = suite.cached_debug_model(0)
    ids, labels = suite.model_batch(batch=2, seq=8, data_seed=1, ignore="all")
    legacy = suite._legacy_forward_loss(model, ids, labels)
    for chunks in (0, 1, 3):
        new = suite._component_loss(model, ids, labels, chunks=chunks)
        assert torch.isnan(new["loss"])
        assert_bitwise_equal(legacy["loss"], new["loss"], "loss")
        for name, grad in legacy["grads"].items():
            assert_bitwise_equal(grad, new["grads"][name], "grad")
            assert not grad.any()


def test_custom_ignore_index_and_sum_reduction():
    logits = torch.randn(2, 9, 13)
    labels = torch.randint(0, 13, (2, 9))
    for ignore in (-1, 0, 5):
        for reduction in ("mean", "sum", "none"):
            got = CrossEntropyLoss.Config(ignore_index=ignore, reduction=reduction).build()(logits, labels)
            shifted = F.pad(labels, (0, 1), value=ignore)[..., 1:].reshape(-1)
            want = F.cross_entropy(logits.view(-1, 13), shifted, ignore_index=ignore, reduction=reduction)
            assert_bitwise_equal(want, got, "loss")


def test_shift_labels_pads_and_never_slices():
    labels = torch.tensor([[1, 2, 3], [4, -100, 6]])
    assert shift_labels(labels).tolist() == [[2, 3, -100], [-100, 6, -100]]
    assert shift_labels(labels).shape == labels.shape


# ----------------------------------------------------------------------------- ChunkedCELoss


@st.composite
def _loss_inputs(draw):
    batch, seq, vocab = draw(st.integers(1, 3)), draw(st.integers(1, 40)), draw(st.integers(2, 70))
    seed = draw(st.integers(0, 2**16))
    dtype = draw(st.sampled_from([torch.float32, torch.bfloat16]))
    ignore = draw(st.sampled_from([-100, -1, 0, 3]))
    pct = draw(st.sampled_from([0, 20, 60, 100]))
    g = torch.Generator().manual_seed(seed)
    logits = (torch.randn(batch, seq, vocab, generator=g) * 5).to(dtype)
    labels = torch.randint(0, vocab, (batch, seq), generator=g)
    labels[torch.rand(batch, seq, generator=g) * 100 < pct] = ignore
    return logits, labels, ignore


@given(inputs=_loss_inputs(), chunks=st.integers(1, 9), reduction=st.sampled_from(["mean", "sum", "none"]))
def test_chunked_equals_unchunked_bits(inputs, chunks, reduction):
    """Value and gradient bit-exact for every chunk count (tolerance table of the loss module)."""
    logits, labels, ignore = inputs
    a = logits.clone().requires_grad_(True)
    b = logits.clone().requires_grad_(True)
    want = CrossEntropyLoss.Config(ignore_index=ignore, reduction=reduction).build()(a, labels)
    got = ChunkedCELoss.Config(chunks=chunks, ignore_index=ignore, reduction=reduction).build()(b, labels)
    assert_bitwise_equal(want, got, "loss")
    want.sum().backward()
    got.sum().backward()
    assert_bitwise_equal(a.grad, b.grad, "grad")


def test_chunked_keeps_no_float32_activation_of_the_full_logits():
    """Recompute: nothing of size [rows, V] is saved except views of the logits themselves."""
    logits = torch.randn(4, 32, 64, requires_grad=True)
    labels = torch.randint(0, 64, (4, 32))
    rows, vocab = 4 * 32, 64

    def big_saved(loss_fn) -> list[int]:
        found: list[int] = []

        def pack(t):
            if (
                t.numel() >= rows * vocab // 8
                and t.untyped_storage().data_ptr() != logits.untyped_storage().data_ptr()
            ):
                found.append(t.numel())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss_fn(logits, labels)
        return found

    assert big_saved(CrossEntropyLoss.Config().build())  # the log-softmax [rows, V] is kept
    assert big_saved(ChunkedCELoss.Config(chunks=8).build()) == []


def test_chunked_without_grad_skips_recompute():
    logits = torch.randn(2, 5, 7)
    labels = torch.randint(0, 7, (2, 5))
    with torch.no_grad():
        got = ChunkedCELoss.Config(chunks=2).build()(logits, labels)
    assert_bitwise_equal(CrossEntropyLoss.Config().build()(logits, labels), got, "loss")


# ----------------------------------------------------------------------------- token count


def test_token_count_on_unshifted_labels_matches_legacy():
    from hyper_parallel.trainer.utils.loss import count_loss_token

    for ignore in ("none", "prompt", "random", "firstcol", "all"):
        _, labels = suite.model_batch(batch=3, seq=10, data_seed=5, ignore=ignore)
        mb = {"input_ids": labels.clamp(min=0), "labels": labels}
        assert count_loss_tokens(labels) == count_loss_tokens(mb) == count_loss_token(mb)
        assert CrossEntropyLoss.Config().build().count_tokens(labels) == count_loss_token(mb)
    assert count_loss_tokens(None) == count_loss_tokens({"input_ids": labels}) == count_loss_token({}) == 0


def test_unshifted_count_differs_from_the_tokens_the_mean_averages_over():
    """The hazard: legacy weights by unshifted labels; the mean runs over shifted ones."""
    _, labels = suite.model_batch(batch=3, seq=10, data_seed=5, ignore="prompt")
    shifted = int((shift_labels(labels) != -100).sum())
    first_kept = int((labels[:, 0] != -100).sum())
    assert count_loss_tokens(labels) == shifted + first_kept
    assert first_kept == 2  # row 0's prompt is masked, rows 1 and 2 start with a real label


# ----------------------------------------------------------------------------- config and errors


def test_base_loss_is_abstract():
    with pytest.raises(TypeError, match="BaseLoss is abstract"):
        BaseLoss.Config().build()


def test_base_config_field_accepts_concrete_losses():
    assert isinstance(ChunkedCELoss.Config(chunks=2).build(), BaseLoss)
    assert ChunkedCELoss.Config().to_dict() == {"ignore_index": -100, "reduction": "mean", "chunks": 8}
    assert CrossEntropyLoss.Config().to_dict() == {"ignore_index": -100, "reduction": "mean"}


@pytest.mark.parametrize(
    ("make", "error", "field"),
    [
        (lambda: CrossEntropyLoss.Config(reduction="avg"), ValueError, "loss.reduction"),
        (lambda: ChunkedCELoss.Config(reduction="avg"), ValueError, "loss.reduction"),
        (lambda: ChunkedCELoss.Config(chunks=0), ValueError, "loss.chunks"),
        (lambda: ChunkedCELoss.Config(chunks=2.0), ValueError, "loss.chunks"),
        (lambda: CrossEntropyLoss.Config(ignore_index="x"), TypeError, "loss.ignore_index"),
        (lambda: CrossEntropyLoss.Config().replace(reduction="avg"), ValueError, "loss.reduction"),
    ],
)
def test_bad_config_names_the_field(make, error, field):
    with pytest.raises(error, match=field):
        make()


# ----------------------------------------------------------------------------- planted divergences

_PARAMS = dict(seed=0, dtype="float32", batch=2, seq=32, data_seed=7, ignore="random", chunks=0)


def _planted(loss_fn):
    ids, labels = suite.model_batch(**{k: _PARAMS[k] for k in ("batch", "seq", "data_seed", "ignore")})
    model = suite.cached_debug_model(0)
    suite._clear_grads(model)
    return suite._loss_and_grads(model, loss_fn(model.forward_logits(ids), labels))


def _legacy_tree():
    return canonical.canonicalise(suite.legacy_loss(**_PARAMS), "losses")


def test_planted_sliced_logits_that_drop_the_first_position_are_caught():
    """Slicing one position too many (logits[:, 1:-1] vs labels[:, 2:]) drops real tokens.

    A plant must diverge on every CPU: an equivalent slicing (logits[:, :-1]) only changes the
    reduction order, which some kernels (AVX-512) do not show.
    """

    def sliced(logits, labels):
        v = logits.shape[-1]
        return F.cross_entropy(
            logits[:, 1:-1].float().reshape(-1, v), labels[:, 2:].reshape(-1), ignore_index=-100
        )

    diffs = compare(_legacy_tree(), canonical.canonicalise(_planted(sliced), "losses"), "losses")
    assert diffs, "the planted divergence was not detected"
    by_path = {d.path: d for d in diffs}
    loss = by_path["losses.loss"]
    assert (loss.kind, loss.phase, loss.index) == ("bits", VALUES, 0)
    assert loss.max_ulp > 1000  # a real divergence, far beyond any rounding difference


def test_planted_unshifted_labels_are_caught():
    def unshifted(logits, labels):
        return F.cross_entropy(
            logits.float().view(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100
        )

    diffs = compare(_legacy_tree(), canonical.canonicalise(_planted(unshifted), "losses"), "losses")
    assert diffs
    paths = [d.path for d in diffs]
    assert "losses.loss" in paths
    assert diffs[0].path.startswith("losses.grads") and diffs[0].kind == "bits"


def test_planted_divergence_through_the_engine_names_the_case():
    """A new side built with reduction="sum" fails the engine with the loss path in its report."""
    from parity.cases import Registry
    from parity.engine import Engine

    def summed(**params):
        ids, labels = suite.model_batch(**{k: params[k] for k in ("batch", "seq", "data_seed", "ignore")})
        model = suite.cached_debug_model(params["seed"], params["dtype"])
        suite._clear_grads(model)
        loss = CrossEntropyLoss.Config(reduction="sum").build()(model.forward_logits(ids), labels)
        return suite._loss_and_grads(model, loss)

    registry = Registry(source="test")
    case = registry.pair("planted", kind="losses", params=_PARAMS, legacy=suite.legacy_loss, new=summed)
    outcome = Engine(registry, report_dir=None).check(case, "torch")
    assert outcome.status == "fail"
    assert any(d.path == "losses.loss" for d in outcome.report.differences)
    assert "losses.planted" in outcome.message
