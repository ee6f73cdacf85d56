"""LRSchedulersContainer vs the legacy ``_build_lr_scheduler``, bit for bit.

LR curves are canonicalised as hex floats (``parity.canonical.lr_curve``) and compared with
``parity.compare.compare``; the planted divergences (warmup floor instead of ceil, the ratio
resolved against the YAML ``max_steps`` instead of the dataset's) must be reported at the first
step where the lr differs.
"""

from __future__ import annotations

import dataclasses
import logging
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hyper_parallel.components.lr_scheduler import LRSchedulersContainer, lr_factor
from hyper_parallel.components.optimizer import OptimizersContainer, OptimizersInBackwardContainer
from parity import assert_bitwise_equal, assets, canonical
from parity.compare import VALUES, compare
from parity.pytest_plugin import case_params, run_case
from parity.suites import REGISTRY
from parity.suites import components_optim as suite
from tests.torch.ut.components._legacy import bare_trainer, debug_model, legacy_args, llm_wrapper


def legacy_scheduler(max_steps: int, *overrides: str, optimizer=None):
    trainer = bare_trainer(legacy_args(f"--train.max_steps={max_steps}", *overrides))
    trainer.optimizer = optimizer or suite.one_param_optimizer(trainer.args.train.optimizer.lr)
    trainer._build_lr_scheduler()
    return trainer


def new_curve(training_steps: int, *, lr: float = suite.DEBUG_LR, **fields) -> list:
    optimizer = suite.one_param_optimizer(lr)
    schedulers = LRSchedulersContainer.Config(**fields).build(
        optimizers=optimizer, training_steps=training_steps
    )
    return suite.lr_curve_of(schedulers, optimizer, training_steps)


# ----------------------------------------------------------------------------- Config / build


def test_config_defaults_and_build_protocol():
    cfg = LRSchedulersContainer.Config()
    assert dataclasses.asdict(cfg) == {
        "warmup_steps": None,
        "lr_warmup_ratio": 0.0,
        "decay_style": "cosine",
        "lr_min": 0.0,
        "lr_max": None,
    }
    optimizers = OptimizersContainer.Config(lr=1e-3).build(model_parts=[torch.nn.Linear(2, 2)])
    schedulers = LRSchedulersContainer.Config(lr_warmup_ratio=0.25).build(
        optimizers=optimizers, training_steps=10
    )
    assert isinstance(schedulers, LRSchedulersContainer) and len(schedulers) == 1
    assert (schedulers.training_steps, schedulers.warmup_steps) == (10, 3)  # ceil(2.5)
    assert isinstance(next(iter(schedulers)), torch.optim.lr_scheduler.LambdaLR)
    assert schedulers.get_last_lr() == [0.0, 0.0]  # the first step runs at lr 0


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"warmup_steps": -1}, r"LRSchedulersContainer.Config.warmup_steps: expected an int >= 0 or None"),
        ({"warmup_steps": 2.0}, r"\.warmup_steps: expected an int"),
        ({"lr_warmup_ratio": -0.1}, r"\.lr_warmup_ratio: expected a finite number >= 0"),
        ({"warmup_steps": 3, "lr_warmup_ratio": 0.1}, r"warmup_steps=3 and lr_warmup_ratio=0.1 are both set"),
        ({"decay_style": ""}, r"\.decay_style: expected a non-empty string"),
        ({"lr_min": float("inf")}, r"\.lr_min: expected a finite number >= 0"),
        ({"lr_max": -1.0}, r"\.lr_max: expected a finite number >= 0 or None"),
    ],
)
def test_bad_fields_name_the_field(fields, match):
    with pytest.raises(ValueError, match=match):
        LRSchedulersContainer.Config(**fields)


def test_bad_build_kwargs():
    optimizer = suite.one_param_optimizer(1e-3)
    with pytest.raises(
        ValueError, match=r"training_steps: expected an int >= 0 \(max_steps after the dataset step\)"
    ):
        LRSchedulersContainer.Config().build(optimizers=optimizer, training_steps=-1)
    with pytest.raises(TypeError, match=r"optimizers: expected an optimizers container"):
        LRSchedulersContainer.Config().build(optimizers=object(), training_steps=3)
    with pytest.raises(ValueError, match=r"repeat config field\(s\) warmup_steps"):
        LRSchedulersContainer.Config().build(optimizers=optimizer, training_steps=3, warmup_steps=2)


def test_unknown_decay_style_is_cosine_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="hyper_parallel.components.lr_scheduler"):
        linear = new_curve(20, decay_style="linear_unknown_style", lr_min=1e-4)
    assert "decay_style='linear_unknown_style' is not one of cosine, constant: using cosine" in caplog.text
    assert_bitwise_equal(new_curve(20, decay_style="cosine", lr_min=1e-4), linear, "lr_curve")


def test_factor_is_a_plain_function_like_legacy():
    """LambdaLR saves None for functions but the __dict__ of other callables: keep legacy's None."""
    factor = lr_factor(warmup=2, total=10, decay_style="cosine", min_ratio=0.1)
    assert type(factor).__name__ == "function"
    assert [factor(0), factor(1), factor(2), factor(10)] == [
        0.0,
        0.5,
        1.0,
        0.1 + (1 - 0.1) * 0.5 * (1 + math.cos(math.pi)),
    ]


# ----------------------------------------------------------------------------- curves vs legacy


def test_debug_recipe_100_steps_bit_exact_with_the_containers():
    """The debug recipe's optimizer section at max_steps=100, on the debug model's two groups."""
    model = debug_model(seed=0)
    legacy = bare_trainer(legacy_args("--train.max_steps=100"), model=model)
    legacy._build_optimizer()
    legacy._build_lr_scheduler()
    optimizers = OptimizersContainer.Config(lr=suite.DEBUG_LR, weight_decay=0.01).build(model_parts=[model])
    schedulers = LRSchedulersContainer.Config(**suite.debug_scheduler_fields()).build(
        optimizers=optimizers, training_steps=100
    )
    expected = suite.lr_curve_of(legacy.lr_scheduler, legacy.optimizer, 100)
    actual = suite.lr_curve_of(schedulers, optimizers, 100)
    assert len(actual) == 106 and len(actual[0]) == 2
    assert_bitwise_equal(expected, actual, "lr_curve")
    assert_bitwise_equal(
        canonical.canonicalise(legacy.lr_scheduler.state_dict()),
        canonical.canonicalise(schedulers.state_dict()),
        "lr_scheduler",
    )
    # Step 1 at lr 0; lr_min exactly at T; past T the cosine rises again (no clamp).
    assert actual[0][0].value == 0.0 and actual[100][0].value == suite.DEBUG_LR_MIN
    assert actual[105][0].value > actual[100][0].value


@pytest.mark.filterwarnings("error")  # no "lr_scheduler.step() before optimizer.step()" warning
def test_in_backward_optimizers_follow_the_same_schedule():
    model = debug_model(seed=0)
    optimizers = OptimizersInBackwardContainer.Config(lr=suite.DEBUG_LR).build(model_parts=[model])
    schedulers = LRSchedulersContainer.Config(**suite.debug_scheduler_fields()).build(
        optimizers=optimizers, training_steps=20
    )
    assert len(schedulers) == len(optimizers.optimizers) == 25  # the group record + 24 parameters
    suite.train(model, optimizers, schedulers, suite.batches(0, 3), clip=None)
    lrs = {group["lr"] for optimizer in optimizers.optimizers for group in optimizer.param_groups}
    assert (
        lrs
        == {schedulers.get_last_lr()[0]}
        == {
            suite.DEBUG_LR
            * lr_factor(
                warmup=2, total=20, decay_style="cosine", min_ratio=suite.DEBUG_LR_MIN / suite.DEBUG_LR
            )(3)
        }
    )
    optimizers.remove_hooks()


@settings()  # the registered profile
@given(
    steps=st.integers(0, 300),
    warmup_ratio=st.floats(0.0, 1.2, allow_nan=False),
    decay_style=st.sampled_from(("cosine", "constant", "linear")),
    lr_min=st.sampled_from((0.0, 1e-6, 1e-5, 1e-4, 5e-4, 1e-3, 2e-3)),
    data=st.data(),
)
def test_curves_equal_legacy(steps, warmup_ratio, decay_style, lr_min, data):
    """Any (steps, ratio, style, lr_min), with the dataset shrinking, resetting or keeping max_steps."""
    change = data.draw(st.sampled_from(("keep", "shrink", "reset")), label="dataset")
    # shrink: hf/json (min(max_steps, rows // gbs)); reset: preset_pt from a stale state value.
    data_steps = {"keep": -1, "shrink": data.draw(st.integers(0, steps), label="data_steps"), "reset": -1}[
        change
    ]
    stale = data.draw(st.integers(0, 300), label="stale") if change == "reset" else None
    kwargs = {"steps": steps, "warmup_ratio": warmup_ratio, "decay_style": decay_style, "lr_min": lr_min}
    if change == "reset":
        args = legacy_args(
            f"--train.max_steps={steps}",
            f"--train.optimizer.lr_warmup_ratio={warmup_ratio!r}",
            f"--train.optimizer.lr_decay_style={decay_style}",
            f"--train.optimizer.lr_min={lr_min!r}",
        )
        trainer = bare_trainer(args, max_steps=stale)
        if steps:  # the preset_pt rule: reset when train.max_steps is truthy
            trainer.state.max_steps = int(args.train.max_steps)
        trainer.optimizer = suite.one_param_optimizer(args.train.optimizer.lr)
        trainer._build_lr_scheduler()
        expected = suite.lr_curve_of(trainer.lr_scheduler, trainer.optimizer, trainer.state.max_steps)
        training_steps = steps if steps else stale
    else:
        expected = suite.legacy_lr_curve(**kwargs, data_steps=data_steps)
        training_steps = steps if data_steps < 0 else data_steps
    actual = new_curve(training_steps, lr_warmup_ratio=warmup_ratio, decay_style=decay_style, lr_min=lr_min)
    assert_bitwise_equal(expected, actual, "lr_curve")
    # The same W given in steps gives the same curve.
    warmup = math.ceil(training_steps * warmup_ratio)
    assert_bitwise_equal(
        expected,
        new_curve(training_steps, warmup_steps=warmup, decay_style=decay_style, lr_min=lr_min),
        "lr_curve",
    )


def test_hf_dataset_shrinks_max_steps_before_the_schedule():
    """A real json_file dataset: 198 non-empty rows // 8 = 24 steps instead of the YAML's 100."""
    import json

    args = legacy_args(
        "--data.type=json_file",
        f"--data.train_path={assets.text_jsonl()}",
        f"--model.tokenizer_path={assets.tokenizer_dir()}",
        "--train.max_steps=100",
        "--train.optimizer.lr_warmup_ratio=0.1",
    )
    trainer = bare_trainer(args)
    wrapper = llm_wrapper(trainer)
    wrapper._build_model_assets()
    wrapper._build_data_transform()
    wrapper._build_dataset()
    trainer.optimizer = suite.one_param_optimizer(args.train.optimizer.lr)
    trainer._build_lr_scheduler()
    expected = suite.lr_curve_of(trainer.lr_scheduler, trainer.optimizer, trainer.state.max_steps)
    # The new path's count: non-empty text rows (empty ones tokenise to nothing and are dropped).
    with open(assets.text_jsonl(), encoding="utf-8") as f:
        rows = sum(1 for line in f if json.loads(line)["text"])
    training_steps = min(100, rows // args.train.global_batch_size)
    assert training_steps == trainer.state.max_steps == 24
    assert_bitwise_equal(expected, new_curve(training_steps, **suite.debug_scheduler_fields()), "lr_curve")


@pytest.mark.parametrize(("case", "backend"), case_params(REGISTRY, tag="lr_scheduler"))
def test_harness_case(case, backend, request):
    """The registered tier A pairs (grid, dataset shrink/reset, hypothesis) and tier B goldens."""
    run_case(request, REGISTRY, case, backend)


# ----------------------------------------------------------------------------- state dict


@pytest.mark.parametrize("k", [0, 1, 2, 7, 20, 23])
def test_state_dict_round_trip_mid_run(k):
    """Save at step k, load into fresh containers, continue: identical to the uninterrupted run."""
    total, extra = 20, 5

    def build():
        optimizer = suite.one_param_optimizer(suite.DEBUG_LR)
        schedulers = LRSchedulersContainer.Config(**suite.debug_scheduler_fields()).build(
            optimizers=optimizer, training_steps=total
        )
        return optimizer, schedulers

    optimizer, schedulers = build()
    uninterrupted = suite.lr_curve_of(schedulers, optimizer, total)

    optimizer, schedulers = build()
    curve = [schedulers.get_last_lr()]
    for _ in range(k):
        optimizer.step()
        schedulers.step()
        curve.append(schedulers.get_last_lr())
    saved_optimizer, saved = optimizer.state_dict(), schedulers.state_dict()
    assert saved["lr_lambdas"] == [None] and saved["last_epoch"] == k

    optimizer, schedulers = build()
    optimizer.load_state_dict(saved_optimizer)
    schedulers.load_state_dict(saved)
    for _ in range(total + extra - k):
        optimizer.step()
        schedulers.step()
        curve.append(schedulers.get_last_lr())
    assert_bitwise_equal(uninterrupted, canonical.lr_curve(curve), "lr_curve")


def test_legacy_scheduler_state_loads_into_the_container_and_back():
    legacy = legacy_scheduler(20)
    for _ in range(5):
        legacy.optimizer.step()
        legacy.lr_scheduler.step()
    optimizer = suite.one_param_optimizer(suite.DEBUG_LR)
    optimizer.load_state_dict(legacy.optimizer.state_dict())
    schedulers = LRSchedulersContainer.Config(**suite.debug_scheduler_fields()).build(
        optimizers=optimizer, training_steps=20
    )
    schedulers.load_state_dict(legacy.lr_scheduler.state_dict())
    assert_bitwise_equal(
        canonical.canonicalise(legacy.lr_scheduler.state_dict()),
        canonical.canonicalise(schedulers.state_dict()),
        "lr_scheduler",
    )
    assert_bitwise_equal(
        suite.lr_curve_of(legacy.lr_scheduler, legacy.optimizer, 20),
        suite.lr_curve_of(schedulers, optimizer, 20),
        "lr_curve",
    )


# ----------------------------------------------------------------------------- planted divergences


def test_planted_warmup_floor_instead_of_ceil():
    # 100 * 0.07 == 7.000000000000001 in floats: the legacy ceil gives 8 warmup steps, floor 7.
    expected = suite.legacy_lr_curve(steps=100, warmup_ratio=0.07, decay_style="cosine", lr_min=0.0)
    floor = math.floor(100 * 0.07)
    actual = new_curve(100, warmup_steps=floor, decay_style="cosine", lr_min=0.0)
    differences = compare(expected, actual, "lr_curve")
    assert differences, "the planted divergence was not detected"
    first = differences[0]
    assert (first.path, first.kind, first.phase) == (
        "lr_curve[1][0]",
        "value",
        VALUES,
    )  # step 0 is 0 either way
    assert (first.expected, first.actual) == ((1e-3 * (1 / 8)).hex(), (1e-3 * (1 / 7)).hex())
    assert_bitwise_equal(
        expected, new_curve(100, lr_warmup_ratio=0.07, decay_style="cosine", lr_min=0.0), "lr_curve"
    )


def test_planted_ratio_resolved_against_the_yaml_max_steps():
    """The hazard: W from the YAML's 100 steps (10) instead of the dataset's 24 (3)."""
    expected = suite.legacy_lr_curve(
        steps=100, data_steps=24, warmup_ratio=0.1, decay_style="cosine", lr_min=1e-5
    )
    actual = new_curve(24, warmup_steps=math.ceil(100 * 0.1), decay_style="cosine", lr_min=1e-5)
    first = compare(expected, actual, "lr_curve")[0]
    assert (first.path, first.expected, first.actual) == (
        "lr_curve[1][0]",
        (1e-3 * (1 / 3)).hex(),
        (1e-3 * (1 / 10)).hex(),
    )
    # Resolved at build time from training_steps, the ratio gives the legacy curve.
    assert_bitwise_equal(
        expected, new_curve(24, lr_warmup_ratio=0.1, decay_style="cosine", lr_min=1e-5), "lr_curve"
    )


def test_planted_lr_min_relative_to_another_lr():
    """lr_max changes the cosine floor ratio: the first decay step differs, warmup does not."""
    expected = suite.legacy_lr_curve(steps=20, warmup_ratio=0.1, decay_style="cosine", lr_min=1e-4)
    actual = new_curve(20, lr_warmup_ratio=0.1, decay_style="cosine", lr_min=1e-4, lr_max=2e-3)
    first = compare(expected, actual, "lr_curve")[0]
    assert first.path == "lr_curve[3][0]"  # W = 2: steps 0-2 are warmup / peak, step 3 decays
    assert_bitwise_equal(
        expected,
        new_curve(20, lr_warmup_ratio=0.1, decay_style="cosine", lr_min=1e-4, lr_max=1e-3),
        "lr_curve",
    )
