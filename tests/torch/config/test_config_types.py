"""Value configs of the new path: defaults, validation messages, to_dict, slots and kw_only."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from hyper_parallel.config import (
    DTYPE_NAMES,
    ActivationCheckpointConfig,
    CommConfig,
    CompileConfig,
    DebugConfig,
    ParallelismConfig,
    TrainingConfig,
    effective_seed,
)
from hyper_parallel.protocols import ConfigMixin
from hyper_parallel.protocols.configurable import validate_config_class

ALL_CONFIGS = (
    TrainingConfig,
    ParallelismConfig,
    ActivationCheckpointConfig,
    CompileConfig,
    CommConfig,
    DebugConfig,
)

EXPECTED_DEFAULTS = {
    TrainingConfig: {
        "steps": 100,
        "seq_len": 2048,
        "global_batch_size": 8,
        "local_batch_size": 1,
        "num_train_epochs": 1,
        "seed": 42,
        "max_norm": 1.0,
        "init_device": "meta",
        "enable_mixed_precision": False,
        "mixed_precision_param": "bfloat16",
        "mixed_precision_reduce": "float32",
        "mixed_precision_output": None,
        "weights_path": None,
        "freeze_modules": None,
    },
    ParallelismConfig: {
        "data_parallel_replicate_degree": 1,
        "data_parallel_shard_degree": -1,
        "tensor_parallel_degree": 1,
        "context_parallel_degree": 1,
        "pipeline_parallel_degree": 1,
        "expert_parallel_degree": 1,
        "expert_tensor_parallel_degree": 1,
        "ulysses_degree": None,
        "reshard_after_forward": True,
    },
    ActivationCheckpointConfig: {"mode": "none"},
    CompileConfig: {"enable": False, "components": ["model", "loss"]},
    CommConfig: {"backend": None, "init_timeout_seconds": 300},
    DebugConfig: {
        "deterministic": False,
        "deterministic_warn_only": False,
        "check_nan_inf": False,
        "gc_steps": 0,
        "seed": None,
    },
}


@pytest.mark.parametrize("cls", ALL_CONFIGS, ids=lambda c: c.__name__)
def test_defaults_and_to_dict(cls):
    cfg = cls()
    assert cfg.to_dict() == EXPECTED_DEFAULTS[cls]
    assert [f.name for f in dataclasses.fields(cls)] == list(EXPECTED_DEFAULTS[cls])


@pytest.mark.parametrize("cls", ALL_CONFIGS, ids=lambda c: c.__name__)
def test_slotted_and_kw_only(cls):
    validate_config_class(cls, cls.__name__)
    assert isinstance(cls(), ConfigMixin)
    cfg = cls()
    with pytest.raises(AttributeError):
        cfg.not_a_field = 1
    first = dataclasses.fields(cls)[0].name
    with pytest.raises(TypeError):
        cls(getattr(cfg, first))  # positional arguments are not accepted


def test_compile_components_default_is_not_shared():
    a, b = CompileConfig(), CompileConfig()
    assert a.components is not b.components


# -------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (TrainingConfig, {"steps": -1}, r"TrainingConfig\.steps: expected an int >= 0, got -1 \(int\)"),
        (TrainingConfig, {"steps": "100"}, r"TrainingConfig\.steps: expected an int >= 0, got '100' \(str\)"),
        (TrainingConfig, {"steps": True}, r"TrainingConfig\.steps: .*got True \(bool\)"),
        (TrainingConfig, {"seq_len": 1}, r"TrainingConfig\.seq_len: expected an int >= 2"),
        (
            TrainingConfig,
            {"global_batch_size": 0},
            r"TrainingConfig\.global_batch_size: expected an int >= 1",
        ),
        (TrainingConfig, {"local_batch_size": 0}, r"TrainingConfig\.local_batch_size: expected an int >= 1"),
        (TrainingConfig, {"num_train_epochs": 0}, r"TrainingConfig\.num_train_epochs: expected an int >= 1"),
        (TrainingConfig, {"seed": 1.5}, r"TrainingConfig\.seed: expected an int, got 1\.5"),
        (TrainingConfig, {"max_norm": 0.0}, r"TrainingConfig\.max_norm: expected a number > 0"),
        (TrainingConfig, {"max_norm": float("nan")}, r"TrainingConfig\.max_norm: expected a number > 0"),
        (
            TrainingConfig,
            {"init_device": ""},
            r"TrainingConfig\.init_device: expected one of 'meta', 'cpu', 'cuda', 'npu', got ''",
        ),
        # Each rank builds on its own local device: an index is not a choice.
        (
            TrainingConfig,
            {"init_device": "cuda:1"},
            r"TrainingConfig\.init_device: expected one of .*got 'cuda:1'",
        ),
        (
            TrainingConfig,
            {"enable_mixed_precision": "yes"},
            r"TrainingConfig\.enable_mixed_precision: expected True or False",
        ),
        (
            TrainingConfig,
            {"mixed_precision_param": "float64"},
            r"TrainingConfig\.mixed_precision_param: expected one of 'bfloat16'.*'fp32', got 'float64'",
        ),
        (
            TrainingConfig,
            {"mixed_precision_reduce": None},
            r"TrainingConfig\.mixed_precision_reduce: expected one of",
        ),
        (
            TrainingConfig,
            {"mixed_precision_output": "int8"},
            r"TrainingConfig\.mixed_precision_output: expected one of .* or None",
        ),
        (
            ParallelismConfig,
            {"data_parallel_replicate_degree": 0},
            r"ParallelismConfig\.data_parallel_replicate_degree: expected an int >= 1",
        ),
        (
            ParallelismConfig,
            {"data_parallel_shard_degree": 0},
            r"ParallelismConfig\.data_parallel_shard_degree: expected an int >= 1 or one of -1, got 0",
        ),
        (ParallelismConfig, {"data_parallel_shard_degree": -2}, r"data_parallel_shard_degree: .*got -2"),
        (ParallelismConfig, {"tensor_parallel_degree": 0}, r"ParallelismConfig\.tensor_parallel_degree"),
        (ParallelismConfig, {"context_parallel_degree": -1}, r"ParallelismConfig\.context_parallel_degree"),
        (ParallelismConfig, {"pipeline_parallel_degree": 0}, r"ParallelismConfig\.pipeline_parallel_degree"),
        (ParallelismConfig, {"expert_parallel_degree": 0}, r"ParallelismConfig\.expert_parallel_degree"),
        (
            ParallelismConfig,
            {"expert_tensor_parallel_degree": 0},
            r"ParallelismConfig\.expert_tensor_parallel_degree",
        ),
        (
            ParallelismConfig,
            {"ulysses_degree": 0},
            r"ParallelismConfig\.ulysses_degree: expected an int >= 1 or None",
        ),
        (
            ParallelismConfig,
            {"reshard_after_forward": 1},
            r"ParallelismConfig\.reshard_after_forward: expected True or False",
        ),
        (
            ActivationCheckpointConfig,
            {"mode": "off"},
            r"ActivationCheckpointConfig\.mode: expected one of 'none', 'full', 'selective', got 'off'",
        ),
        (CompileConfig, {"enable": None}, r"CompileConfig\.enable: expected True or False"),
        (
            CompileConfig,
            {"components": ["model", "optimizer"]},
            r"CompileConfig\.components: expected a list drawn from 'model', 'loss'",
        ),
        (CompileConfig, {"components": "model"}, r"CompileConfig\.components: expected a list"),
        (
            CommConfig,
            {"backend": "mpi"},
            r"CommConfig\.backend: expected one of 'gloo', 'nccl', 'hccl' or None, got 'mpi'",
        ),
        (CommConfig, {"init_timeout_seconds": 0}, r"CommConfig\.init_timeout_seconds: expected an int >= 1"),
        (DebugConfig, {"deterministic": 1}, r"DebugConfig\.deterministic: expected True or False"),
        (DebugConfig, {"deterministic_warn_only": "no"}, r"DebugConfig\.deterministic_warn_only"),
        (DebugConfig, {"check_nan_inf": None}, r"DebugConfig\.check_nan_inf"),
        (DebugConfig, {"gc_steps": -1}, r"DebugConfig\.gc_steps: expected an int >= 0"),
        (DebugConfig, {"seed": "1"}, r"DebugConfig\.seed: expected an int or None"),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else None,
)
def test_validation_errors_name_field_and_expectation(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


def test_accepted_edge_values():
    assert TrainingConfig(steps=0).steps == 0
    assert TrainingConfig(max_norm=float("inf")).max_norm == float("inf")
    assert TrainingConfig(max_norm=2).max_norm == 2
    assert TrainingConfig(seed=-3).seed == -3
    for device in ("meta", "cpu", "cuda", "npu"):
        assert TrainingConfig(init_device=device).init_device == device
    for name in DTYPE_NAMES:
        TrainingConfig(mixed_precision_param=name, mixed_precision_reduce=name, mixed_precision_output=name)
    assert ParallelismConfig(context_parallel_degree=4, ulysses_degree=2).ulysses_degree == 2
    # Ulysses splits inside CP, and ETP lives under EP: without them the values mean nothing.
    with pytest.raises(ValueError, match="ulysses_degree=2 must divide context_parallel_degree=1"):
        ParallelismConfig(data_parallel_shard_degree=4, ulysses_degree=2)
    with pytest.raises(ValueError, match="expert_tensor_parallel_degree=2 has no effect"):
        ParallelismConfig(expert_tensor_parallel_degree=2)
    for mode in ("none", "full", "selective"):
        assert ActivationCheckpointConfig(mode=mode).mode == mode
    assert CompileConfig(enable=True, components=[]).components == []
    for backend in ("gloo", "nccl", "hccl", None):
        assert CommConfig(backend=backend).backend == backend
    assert DebugConfig(seed=0).seed == 0


def test_replace_validates_and_rejects_unknown_fields():
    cfg = TrainingConfig()
    assert cfg.replace(steps=5).steps == 5
    with pytest.raises(ValueError, match=r"TrainingConfig\.steps"):
        cfg.replace(steps=-5)
    with pytest.raises(TypeError, match=r"unknown field\(s\) max_steps"):
        cfg.replace(max_steps=5)


def test_effective_seed():
    assert effective_seed(TrainingConfig(seed=7), DebugConfig()) == 7
    assert effective_seed(TrainingConfig(seed=7), DebugConfig(seed=0)) == 0


def test_config_package_does_not_import_trainer_or_frameworks():
    code = (
        "import sys, hyper_parallel.config, hyper_parallel.protocols\n"
        "bad = [m for m in ('hyper_parallel.trainer', 'torch', 'tyro') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
