"""``init_device``: a closed set, and the same initial weights whichever device the model is built on.

A user probe found any ``init_device`` other than ``meta`` (``cpu``, ``cuda``, even ``banana``)
accepted on both trainers, and the model then kept its constructors' init (``nn.Linear``'s
``kaiming_uniform_(a=sqrt(5))``, ``nn.Embedding``'s normal): a first loss of 126 instead of 8.7.
Now the value is one of ``meta`` and the device types (checked where it enters: the legacy YAML
schema, ``TrainingConfig``, so both command lines), a device type this machine has not is refused
at build, and a model built on a real device is initialised exactly as a meta one (same bits).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

from hyper_parallel.config import TrainingConfig
from hyper_parallel.platform import get_platform
from tests._subprocess import child_env
from tests.torch.legacy_trainer._recipes import DEBUG_YAML, REPO_ROOT, debug_args

pytestmark = pytest.mark.filterwarnings(
    "ignore:torch.distributed is disabled:UserWarning",
    "ignore:'set_vital' is deprecated:UserWarning",
)

ALLOWED = r"expected one of 'meta', 'cpu', 'cuda', 'npu', got 'banana'"


@pytest.fixture(autouse=True)
def _no_leaked_process_group():
    yield
    platform = get_platform()
    if platform.is_distributed():
        platform.destroy_process_group()


# ------------------------------------------------------------------ where the value enters
def test_legacy_schema_refuses_an_unknown_init_device(tmp_path):
    with pytest.raises(ValueError, match=r"Invalid value for 'train\.init_device': " + ALLOWED):
        debug_args(tmp_path, "--train.init_device=banana")


def test_training_config_refuses_an_unknown_init_device():
    with pytest.raises(ValueError, match=r"TrainingConfig\.init_device: " + ALLOWED):
        TrainingConfig(init_device="banana")


@pytest.mark.parametrize("value", ["meta", "cpu", "cuda", "npu"])
def test_the_device_types_are_accepted_where_the_value_enters(tmp_path, value):
    assert TrainingConfig(init_device=value).init_device == value
    assert debug_args(tmp_path, f"--train.init_device={value}").train.init_device == value


def _cli(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    head = [str(REPO_ROOT / argv[0]), *argv[1:]] if argv[0].endswith(".py") else list(argv)
    env = child_env(COLUMNS="250")
    env.pop("HYPER_PARALLEL_DEBUG", None)
    return subprocess.run(
        [sys.executable, *head], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )


@pytest.mark.parametrize(
    ("argv", "prog"),
    [
        (["scripts/train_lm.py", str(DEBUG_YAML), "--train.init_device=banana"], "train_lm.py"),
        (["-m", "hyper_parallel.train", str(DEBUG_YAML), "--train.init_device=banana"], "hyper_parallel.train"),
    ],
    ids=["legacy", "new-yaml"],
)  # fmt: skip
def test_the_command_lines_print_one_line_and_exit_2(tmp_path, argv, prog):
    proc = _cli(tmp_path, *argv)
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    expected = rf"{prog}: error: Invalid value for 'train\.init_device': {ALLOWED}"
    assert re.match(expected, errors[0]), errors[0]


def test_the_recipe_command_line_names_the_field_and_the_choices(tmp_path):
    """The recipe route refuses in one line naming the flag and the allowed values, exit 2."""
    proc = _cli(tmp_path, "-m", "hyper_parallel.train", "--module", "qwen3_5", "--config", "debug",
                "--training.init_device", "banana")  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if "init_device" in line]
    assert len(lines) == 1 and lines[0].startswith("hyper_parallel.train: error: --training.init_device: ")
    assert re.search(ALLOWED, lines[0]), proc.stderr


# ---------------------------------------------------------- a device this machine has not
def _missing_device() -> str:
    present = get_platform().device_type()
    for kind in ("cuda", "npu"):
        if kind != present:
            return kind
    raise AssertionError("unreachable")


def test_legacy_refuses_a_device_type_this_machine_has_not(tmp_path):
    from hyper_parallel.trainer import LLMTrainer

    missing = _missing_device()
    args = debug_args(tmp_path, f"--train.init_device={missing}", "--train.checkpoint.save_steps=0")
    with pytest.raises(
        ValueError, match=rf"train\.init_device='{missing}': this machine has no {missing} device"
    ):
        LLMTrainer(args)


def test_new_path_refuses_a_device_type_this_machine_has_not(tmp_path):
    missing = _missing_device()
    config = _new_config(tmp_path, f"--train.init_device={missing}")
    with pytest.raises(
        Exception, match=rf"training\.init_device='{missing}': this machine has no {missing} device"
    ):
        config.build()


# ------------------------------------------------------------------ the same initial weights
def _bits(model) -> dict[str, str]:
    """Every parameter and buffer of ``model`` as the sha256 of its full tensor's bytes."""
    import hashlib

    out = {}
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        full = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor
        raw = full.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()
        out[name] = hashlib.sha256(raw).hexdigest()
    return out


def _legacy(tmp_path, device: str):
    from hyper_parallel.trainer import LLMTrainer

    args = debug_args(
        tmp_path / device,
        f"--train.init_device={device}",
        "--train.max_steps=1",
        "--train.checkpoint.save_steps=0",
        "--train.checkpoint.save_hf_weights=false",
    )
    return LLMTrainer(args)


def _new_config(tmp_path, *overrides: str):
    from hyper_parallel.trainer.legacy_mapping import legacy_to_trainer_config

    args = debug_args(
        tmp_path,
        "--train.max_steps=1",
        "--train.checkpoint.save_steps=0",
        "--train.checkpoint.save_hf_weights=false",
        *overrides,
    )
    return legacy_to_trainer_config(args)


def _first_loss(trainer) -> float:
    losses = []

    class Recorder:
        def __getattr__(self, name):
            return lambda state, **kwargs: losses.append(kwargs["loss"]) if name == "on_step_end" else None

    trainer.add_callback(Recorder())
    trainer.train()
    return losses[0]


def test_legacy_weights_are_the_same_bits_on_every_init_device(tmp_path):
    meta = _legacy(tmp_path, "meta")
    meta_bits = _bits(meta.model)
    meta_loss = _first_loss(meta)
    cpu = _legacy(tmp_path, "cpu")
    assert _bits(cpu.model) == meta_bits
    assert _first_loss(cpu) == meta_loss
    assert meta_loss < 20  # ln(vocab) territory, not the constructors' init (126)


def test_new_path_weights_are_the_same_bits_on_every_init_device(tmp_path):
    meta = _new_config(tmp_path / "meta", "--train.init_device=meta").build()
    meta_bits = _bits(meta.model)
    meta_loss = _first_loss(meta)
    cpu = _new_config(tmp_path / "cpu", "--train.init_device=cpu").build()
    assert _bits(cpu.model) == meta_bits
    assert _first_loss(cpu) == meta_loss
    assert meta_loss < 20


def test_the_two_trainers_agree_on_a_cpu_built_model(tmp_path):
    legacy = _legacy(tmp_path / "legacy", "cpu")
    new = _new_config(tmp_path / "new", "--train.init_device=cpu").build()
    assert _bits(new.model) == _bits(legacy.model)


def test_a_real_device_build_leaves_the_generators_where_they_were(tmp_path):
    """The constructors' own draws are undone: what follows the build sees the meta path's RNG."""
    from hyper_parallel.trainer import init_helpers

    def build():
        return torch.nn.Linear(8, 8)

    torch.manual_seed(3)
    init_helpers.build_model(build, init_device="meta", field="training.init_device")
    after_meta = torch.get_rng_state()
    torch.manual_seed(3)
    model = init_helpers.build_model(build, init_device="cpu", field="training.init_device")
    assert not model.weight.is_meta
    assert torch.equal(torch.get_rng_state(), after_meta)
