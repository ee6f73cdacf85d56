"""OptimizersContainer / OptimizersInBackwardContainer vs the legacy ``_build_optimizer``.

Every comparison goes through the parity harness: both sides are canonicalised (parameters named
by FQN, floats by hex, tensors by integer views) and ``parity.compare.compare`` must report
nothing. The planted-divergence tests prove that the same check fails where it should.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hyper_parallel.components.optimizer import (
    DEFAULT_DECAY_KEYWORDS,
    OptimizersContainer,
    OptimizersInBackwardContainer,
)
from parity import assert_bitwise_equal, canonical
from parity.compare import STRUCTURE, VALUES, compare
from parity.pytest_plugin import case_params, run_case
from parity.suites import REGISTRY
from parity.suites import components_optim as suite
from tests.torch.ut.components._legacy import bare_trainer, debug_model, legacy_args

NORM_NAMES = {
    "model.layers.0.self_attn.q_norm.weight",
    "model.layers.0.self_attn.k_norm.weight",
    "model.layers.0.input_layernorm.weight",
    "model.layers.0.post_attention_layernorm.weight",
    "model.layers.1.self_attn.q_norm.weight",
    "model.layers.1.self_attn.k_norm.weight",
    "model.layers.1.input_layernorm.weight",
    "model.layers.1.post_attention_layernorm.weight",
    "model.norm.weight",
}


@pytest.fixture(scope="module")
def model():
    return debug_model(seed=0)


def legacy_groups(model, *overrides: str):
    trainer = bare_trainer(legacy_args(*overrides), model=model)
    trainer._build_optimizer()
    return trainer.optimizer, canonical.param_groups(trainer.optimizer.param_groups, model.named_parameters())


def new_groups(model_parts, named, **fields):
    container = OptimizersContainer.Config(**fields).build(model_parts=model_parts)
    return container, canonical.param_groups(container.param_groups, named)


# ----------------------------------------------------------------------------- Config / build


def test_config_defaults_and_build_protocol(model):
    cfg = OptimizersContainer.Config()
    assert dataclasses.asdict(cfg) == {
        "lr": 1e-4,
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0.01,
        "foreach": None,
        "fused": None,
        "decay_keywords": ("bias", "layernorm", "norm", "rmsnorm"),
        "loss_aggregation": "token_weighted",
    }
    assert DEFAULT_DECAY_KEYWORDS == ("bias", "layernorm", "norm", "rmsnorm")
    container = cfg.build(model_parts=[model])
    assert (
        isinstance(container, OptimizersContainer) and container.config == cfg and container.config is not cfg
    )
    assert len(container) == 1 and list(container) == [container.optimizer]
    assert isinstance(container.optimizer, torch.optim.AdamW)
    assert OptimizersInBackwardContainer.Config().build(model_parts=[debug_model(0)]).__class__ is (
        OptimizersInBackwardContainer
    )


def test_yaml_lists_become_tuples():
    cfg = OptimizersContainer.Config(betas=[0.8, 0.95], decay_keywords=["bias"])
    assert cfg.betas == (0.8, 0.95) and cfg.decay_keywords == ("bias",)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"lr": -1.0}, r"OptimizersContainer.Config.lr: expected a finite number >= 0"),
        ({"eps": float("nan")}, r"\.eps: expected a finite number >= 0"),
        ({"weight_decay": True}, r"\.weight_decay: expected"),
        ({"betas": (0.9,)}, r"\.betas: expected a pair of numbers in \[0, 1\)"),
        ({"betas": (0.9, 1.0)}, r"\.betas: expected"),
        ({"foreach": "yes"}, r"\.foreach: expected True, False or None"),
        ({"foreach": True, "fused": True}, r"foreach=True and fused=True are mutually exclusive"),
        ({"decay_keywords": "norm"}, r"\.decay_keywords: expected a list of non-empty lowercase strings"),
        ({"decay_keywords": ("LayerNorm",)}, r"\.decay_keywords: expected"),
        ({"decay_keywords": ("",)}, r"\.decay_keywords: expected"),
        (
            {"loss_aggregation": "mean"},
            r"\.loss_aggregation: expected one of 'token_weighted', 'rank_average'",
        ),
    ],
)
def test_bad_fields_name_the_field(fields, match):
    with pytest.raises(ValueError, match=match):
        OptimizersContainer.Config(**fields)


def test_model_parts_must_be_a_list(model):
    with pytest.raises(
        TypeError, match=r"model_parts: expected a non-empty list of modules \(e.g. \[model\]\)"
    ):
        OptimizersContainer.Config().build(model_parts=model)
    with pytest.raises(TypeError, match=r"model_parts: expected a non-empty list"):
        OptimizersContainer.Config().build(model_parts=[])
    with pytest.raises(TypeError, match=r"model_parts\[1\]: expected a module"):
        OptimizersContainer.Config().build(model_parts=[model, "x"])


# ----------------------------------------------------------------------------- groups vs legacy


def test_debug_model_groups_equal_legacy(model):
    _, expected = legacy_groups(model)
    container, actual = new_groups([model], model.named_parameters(), lr=1e-3, weight_decay=0.01)
    assert_bitwise_equal(expected, actual, "param_groups")
    # FQNs per group: norms in no_decay, everything else in decay, the tied lm_head counted once.
    decay, no_decay = (group["params"] for group in actual)
    assert set(no_decay) == NORM_NAMES and len(no_decay) == len(NORM_NAMES)
    assert decay[0] == "model.embed_tokens.weight" and "lm_head.weight" not in decay + no_decay
    assert len(decay) + len(no_decay) == len(list(model.parameters())) == 24
    assert container.param_names == [decay, no_decay]


def test_hyperparameters_reach_adamw(model):
    container, groups = new_groups(
        [model],
        model.named_parameters(),
        lr=3e-4,
        betas=(0.8, 0.95),
        eps=1e-6,
        weight_decay=0.1,
        foreach=True,
    )
    assert [g["weight_decay"] for g in container.param_groups] == [0.1, 0.0]
    for group in container.param_groups:
        assert (group["lr"], group["betas"], group["eps"], group["foreach"], group["fused"]) == (
            3e-4,
            (0.8, 0.95),
            1e-6,
            True,
            None,  # fused is not passed unless set, as in the legacy builder
        )
    fused = OptimizersContainer.Config(fused=False).build(model_parts=[model])
    assert [g["fused"] for g in fused.param_groups] == [False, False]


def test_state_dict_layout_equals_legacy_and_round_trips(model):
    legacy_optimizer, _ = legacy_groups(model, "--train.optimizer.lr=0.001")
    container = OptimizersContainer.Config(lr=1e-3).build(model_parts=[model])
    # Un-stepped: the raw (index-keyed) state dicts are the same tree, as saved in optimizer_rank{r}.pt.
    assert_bitwise_equal(
        canonical.checkpoint(legacy_optimizer.state_dict()),
        canonical.checkpoint(container.state_dict()),
        "checkpoint",
    )
    legacy_optimizer.zero_grad()


# This file's harness cases (the lr scheduler's, tag lr_scheduler, run in test_lr_scheduler.py).
@pytest.mark.parametrize(("case", "backend"), case_params(REGISTRY, tag="optimizer"))
def test_harness_case(case, backend, request):
    """The registered tier A pairs (groups, state after 3 steps) and tier B goldens."""
    run_case(request, REGISTRY, case, backend)


# ----------------------------------------------------------------------------- hypothesis

# Name pieces that put "norm"/"bias" in odd places, in both cases.
_PIECES = (
    "w",
    "proj",
    "Norm",
    "LayerNorm",
    "rmsnorm",
    "enormous",
    "abnormal",
    "bias",
    "unbiased",
    "Bias",
    "x_norm",
)
_NAME = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=2).map("_".join)


@st.composite
def synthetic_models(draw):
    """A two-level module tree with drawn names, shapes, frozen flags and tied parameters."""
    root = torch.nn.Module()
    params: list[torch.nn.Parameter] = []
    for i in range(draw(st.integers(1, 8))):
        module_name = f"m{i}_{draw(_NAME)}"
        child = torch.nn.Module()
        setattr(root, module_name, child)
        for j in range(draw(st.integers(1, 3))):
            name = f"{draw(_NAME)}_{j}"
            if params and draw(st.booleans()) and draw(st.booleans()):
                param = draw(st.sampled_from(params))  # tied: the same object under a second name
            else:
                shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=2)))
                param = torch.nn.Parameter(torch.randn(shape), requires_grad=draw(st.integers(0, 4)) != 0)
                params.append(param)
            setattr(child, name, param)
    return root


_OPT_FIELDS = st.fixed_dictionaries(
    {
        "lr": st.floats(0.0, 1.0, allow_nan=False),
        "eps": st.sampled_from((0.0, 1e-8, 1e-6, 1e-3)),
        "weight_decay": st.floats(0.0, 1.0, allow_nan=False),
        "beta1": st.floats(0.0, 0.99),
        "beta2": st.floats(0.0, 0.9999),
        "foreach": st.sampled_from((None, True, False)),
        "fused": st.sampled_from((None, False)),
    }
)


@settings()  # the registered profile (dev / ci / nightly / repro)
@given(model=synthetic_models(), fields=_OPT_FIELDS)
def test_groups_equal_legacy_on_synthetic_models(model, fields):
    overrides = suite.optimizer_overrides(
        lr=fields["lr"],
        eps=fields["eps"],
        weight_decay=fields["weight_decay"],
        beta1=fields["beta1"],
        beta2=fields["beta2"],
    )
    trainer = bare_trainer(legacy_args(*overrides), model=model)
    trainer._build_optimizer()
    expected = canonical.param_groups(trainer.optimizer.param_groups, model.named_parameters())
    # foreach/fused do not exist in the legacy schema: the new groups record the configured value.
    for group in expected:
        group["foreach"] = fields["foreach"]
        group["fused"] = fields["fused"]
    _, actual = new_groups(
        [model],
        model.named_parameters(),
        lr=fields["lr"],
        eps=fields["eps"],
        weight_decay=fields["weight_decay"],
        betas=(fields["beta1"], fields["beta2"]),
        foreach=fields["foreach"],
        fused=fields["fused"],
    )
    assert_bitwise_equal(expected, actual, "param_groups")
    backward = OptimizersInBackwardContainer.Config(
        lr=fields["lr"],
        eps=fields["eps"],
        weight_decay=fields["weight_decay"],
        betas=(fields["beta1"], fields["beta2"]),
    ).build(model_parts=[model])
    backward.remove_hooks()
    for group in expected:
        group["foreach"] = group["fused"] = None
    assert_bitwise_equal(
        expected, canonical.param_groups(backward.param_groups, model.named_parameters()), "param_groups"
    )


@settings()
@given(first=synthetic_models(), second=synthetic_models(), share=st.booleans())
def test_model_parts_in_order_with_shared_parameters(first, second, share):
    """Several parts: one model holding them as children gives the legacy order; shared params once."""
    if share:
        second.shared = next(iter(first.parameters()))
    whole = torch.nn.Sequential(first, second)
    trainer = bare_trainer(legacy_args(), model=whole)
    trainer._build_optimizer()
    expected = canonical.param_groups(trainer.optimizer.param_groups, whole.named_parameters())
    _, actual = new_groups([first, second], whole.named_parameters(), lr=1e-3)
    assert_bitwise_equal(expected, actual, "param_groups")


# ----------------------------------------------------------------------------- training state


def _build(model, *, in_backward=False, foreach=None):
    container_cls = OptimizersInBackwardContainer if in_backward else OptimizersContainer
    container = container_cls.Config(lr=1e-3, foreach=foreach).build(model_parts=[model])
    return container, suite.new_schedulers(container, training_steps=20, **suite.debug_scheduler_fields())


def _trained(foreach=None, *, in_backward=False, steps=3):
    model = debug_model(seed=0)
    container, schedulers = _build(model, in_backward=in_backward, foreach=foreach)
    suite.train(model, container, schedulers, suite.batches(0, steps), clip=None)
    return model, container


def _state_and_params(model, container):
    named = suite.named_optimizer_state(container.state_dict(), container.param_groups, [model])
    return canonical.checkpoint({"state": named["state"], "model": dict(model.named_parameters())})


def test_foreach_true_false_none_give_identical_bits_on_cpu():
    results = {foreach: _state_and_params(*_trained(foreach)) for foreach in (None, True, False)}
    assert_bitwise_equal(results[None], results[True], "checkpoint")
    assert_bitwise_equal(results[None], results[False], "checkpoint")


def test_in_backward_matches_the_plain_container_bit_for_bit():
    """Without clipping, stepping per parameter in backward is the same AdamW update."""
    plain_model, plain = _trained(steps=4)
    backward_model, backward = _trained(steps=4, in_backward=True)
    assert_bitwise_equal(
        canonical.checkpoint({"optimizer": plain.state_dict(), "model": plain_model.state_dict()}),
        canonical.checkpoint({"optimizer": backward.state_dict(), "model": backward_model.state_dict()}),
        "checkpoint",
    )
    assert all(p.grad is None for p in backward_model.parameters())


def test_state_dicts_move_between_the_two_containers():
    """Save after 2 steps from one container, load into the other, run a 3rd step: both agree."""
    batches = suite.batches(5, 3)
    runs = {}
    for first, second in ((False, True), (True, False)):
        model = debug_model(seed=0)
        container, schedulers = _build(model, in_backward=first)
        suite.train(model, container, schedulers, batches[:2], clip=None)
        saved_optim, saved_sched = container.state_dict(), schedulers.state_dict()
        if first:
            container.remove_hooks()
        resumed, resumed_sched = _build(model, in_backward=second)
        resumed.load_state_dict(saved_optim)
        resumed_sched.load_state_dict(saved_sched)
        suite.train(model, resumed, resumed_sched, batches[2:], clip=None)
        runs[first] = canonical.checkpoint(
            {
                "optimizer": resumed.state_dict(),
                "scheduler": resumed_sched.state_dict(),
                "model": model.state_dict(),
            }
        )
    assert_bitwise_equal(runs[False], runs[True], "checkpoint")


def test_in_backward_load_rejects_a_wrong_layout():
    model = debug_model(seed=0)
    backward = OptimizersInBackwardContainer.Config().build(model_parts=[model])
    with pytest.raises(ValueError, match=r"expected 2 param groups of sizes \[15, 9\], got \[15\]"):
        backward.load_state_dict({"state": {}, "param_groups": [{"params": list(range(15))}]})
    with pytest.raises(AttributeError, match="one optimizer per parameter"):
        _ = backward.optimizer


# ----------------------------------------------------------------------------- planted divergences


def test_planted_changed_eps_is_reported_at_the_group_eps(model):
    _, expected = legacy_groups(model)
    _, actual = new_groups([model], model.named_parameters(), lr=1e-3, eps=1e-6)
    differences = compare(expected, actual, "param_groups")
    assert [(d.path, d.phase) for d in differences] == [
        ("param_groups[0].eps", VALUES),
        ("param_groups[1].eps", VALUES),
    ]
    assert (differences[0].expected, differences[0].actual) == ((1e-8).hex(), (1e-6).hex())


def test_planted_dropped_decay_keyword_moves_norms_to_decay(model):
    _, expected = legacy_groups(model)
    keywords = tuple(k for k in DEFAULT_DECAY_KEYWORDS if k != "norm")
    _, actual = new_groups([model], model.named_parameters(), lr=1e-3, decay_keywords=keywords)
    differences = compare(expected, actual, "param_groups")
    first = differences[0]
    # q_norm, k_norm (x2 layers) and model.norm join the decay group after its 15 parameters.
    assert (first.phase, first.kind, first.path, first.index) == (
        STRUCTURE,
        "extra",
        "param_groups[0].params[15:20]",
        15,
    )
    assert differences[1].path == "param_groups[1].params[4:9]" and differences[1].kind == "missing"


def test_planted_changed_eps_changes_the_trained_state():
    expected = suite.legacy_trained(seed=0, steps=2, clip=True)
    model = debug_model(seed=0)
    container = OptimizersContainer.Config(lr=1e-3, eps=1e-6).build(model_parts=[model])
    schedulers = suite.new_schedulers(container, training_steps=20, **suite.debug_scheduler_fields())
    suite.train(model, container, schedulers, suite.batches(0, 2), clip=suite.MAX_GRAD_NORM)
    differences = compare(expected, suite.trained_state(model, container, schedulers), "checkpoint")
    assert differences and all(d.phase == VALUES for d in differences)
    # Sorted keys: the first model tensor is the first to move; the eps entries are reported too.
    assert differences[0].path == 'checkpoint.state.model["lm_head.weight"]' and differences[0].kind == "bits"
    paths = {d.path for d in differences}
    assert {
        "checkpoint.state.optimizer.param_groups[0].eps",
        "checkpoint.state.optimizer.param_groups[1].eps",
    } <= paths
