"""Legacy config schema and parser."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from hyper_parallel.trainer.config import (
    LegacyAcceleratorArgs,
    LegacyCheckpointArgs,
    LegacyDataArgs,
    LegacyDebugArgs,
    LegacyEvalArgs,
    LegacyGradientCheckpointingArgs,
    LegacyLoggingArgs,
    LegacyMemoryMonitorArgs,
    LegacyMixedPrecisionArgs,
    LegacyModelArgs,
    LegacyMoEMonitorArgs,
    LegacyOptimizerArgs,
    LegacyProfileArgs,
    LegacyTensorBoardArgs,
    LegacyTrainArgs,
    LegacyTrainerArgs,
    LegacyWandbArgs,
    config_to_dict,
    legacy_field_paths,
    parse_args,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
DEBUG_YAML = REPO_ROOT / "examples" / "debug" / "train.yaml"
CONFIG_LOGGER = "hyper_parallel.trainer.config"


@pytest.fixture(autouse=True)
def _no_local_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_RANK", raising=False)


def _write(tmp_path: Path, text: str, name: str = "cfg.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _defaults(cls: type) -> dict:
    return dataclasses.asdict(cls())


# ------------------------------------------------------------------------------------------------
# Schema defaults
# ------------------------------------------------------------------------------------------------

EXPECTED_DEFAULTS = {
    LegacyModelArgs: dict(
        name="qwen3_5",
        flavor=None,
        weights_path=None,
        tokenizer_path=None,
        trust_remote_code=False,
        freeze_modules=None,
        tp_plan=None,
        cp_modules=None,
        ep_modules=None,
        num_hidden_layers=None,
        hidden_size=None,
        intermediate_size=None,
        num_attention_heads=None,
        num_key_value_heads=None,
        vocab_size=None,
        max_position_embeddings=None,
        config_overrides=None,
    ),
    LegacyDataArgs: dict(
        type="dummy",
        train_path=None,
        subset=None,
        train_size=None,
        streaming=False,
        max_seq_len=2048,
        text_key="text",
        template="empty",
        image_key="image",
        messages_key="messages",
        image_token_id=151655,
        vl_grid_t=2,
        vl_grid_h=2,
        vl_grid_w=2,
        num_workers=0,
        prefetch_factor=None,
        pin_memory=True,
        shuffle=True,
    ),
    LegacyAcceleratorArgs: dict(
        dp=None,
        dp_replicate=1,
        dp_shard=None,
        tp=1,
        cp=1,
        pp=1,
        ep=1,
        etp=1,
        zero_stage=0,
        reshard_after_forward=True,
        async_cp=False,
        ulysses_degree=None,
        comm_fusion=True,
    ),
    LegacyMixedPrecisionArgs: dict(
        enabled=False, param_dtype="bfloat16", reduce_dtype="float32", output_dtype=None
    ),
    LegacyGradientCheckpointingArgs: dict(activation_checkpoint="off"),
    LegacyOptimizerArgs: dict(
        type="adamw",
        lr=1e-4,
        lr_min=1e-5,
        lr_decay_style="cosine",
        lr_warmup_ratio=0.1,
        loss_aggregation="token_weighted",
        weight_decay=0.01,
        max_grad_norm=1.0,
        bsz_warmup_ratio=0.0,
        eps=1e-8,
        betas=(0.9, 0.999),
    ),
    LegacyCheckpointArgs: dict(
        output_dir="outputs",
        save_steps=500,
        save_hf_weights=True,
        load_path=None,
        save_async=False,
        overwrite=False,
        allow_unverified=False,
        resume_config_changes="refuse",
        allow_partial_weights=False,
    ),
    LegacyLoggingArgs: dict(
        report_to="none",
        report_global_loss=False,
        log_steps=10,
        report_throughput=True,
        model_flops_per_token=None,
        peak_tflops=None,
    ),
    LegacyTensorBoardArgs: dict(enabled=False, output_dir="tb_traces", log_steps=1),
    LegacyWandbArgs: dict(enabled=False, project="hyper-parallel", run_name=None, log_steps=1),
    LegacyProfileArgs: dict(
        enabled=False, output_dir="profiler_traces", wait_steps=1, warmup_steps=1, active_steps=3
    ),
    LegacyMemoryMonitorArgs: dict(enabled=False, log_steps=50, reset_peak_each_step=False),
    LegacyMoEMonitorArgs: dict(enabled=False, lr=1e-3, num_recomputations=1),
    LegacyEvalArgs: dict(eval_steps=0, eval_dataset=None),
    LegacyDebugArgs: dict(
        deterministic=False, deterministic_warn_only=False, check_nan_inf=False, gc_steps=0
    ),
}

TRAIN_SECTIONS = {
    "accelerator": LegacyAcceleratorArgs,
    "mixed_precision": LegacyMixedPrecisionArgs,
    "gradient_checkpointing": LegacyGradientCheckpointingArgs,
    "optimizer": LegacyOptimizerArgs,
    "checkpoint": LegacyCheckpointArgs,
    "logging": LegacyLoggingArgs,
    "tensorboard": LegacyTensorBoardArgs,
    "wandb": LegacyWandbArgs,
    "profile": LegacyProfileArgs,
    "memory_monitor": LegacyMemoryMonitorArgs,
    "moe_monitor": LegacyMoEMonitorArgs,
    "eval": LegacyEvalArgs,
    "debug": LegacyDebugArgs,
}


@pytest.mark.parametrize("cls", list(EXPECTED_DEFAULTS), ids=lambda c: c.__name__)
def test_section_defaults(cls: type) -> None:
    assert _defaults(cls) == EXPECTED_DEFAULTS[cls]
    # Field order is part of the (positional, not kw_only) dataclass contract.
    assert [f.name for f in dataclasses.fields(cls)] == list(EXPECTED_DEFAULTS[cls])


@pytest.mark.parametrize(
    "cls", [*EXPECTED_DEFAULTS, LegacyTrainArgs, LegacyTrainerArgs], ids=lambda c: c.__name__
)
def test_plain_dataclasses(cls: type) -> None:
    assert dataclasses.is_dataclass(cls)
    assert not hasattr(cls, "__slots__")
    assert all(not f.kw_only for f in dataclasses.fields(cls))


def test_train_defaults_and_sections() -> None:
    train = LegacyTrainArgs()
    flat = {f.name: getattr(train, f.name) for f in dataclasses.fields(train) if f.name not in TRAIN_SECTIONS}
    assert flat == dict(
        max_steps=100,
        num_train_epochs=1,
        global_batch_size=8,
        micro_batch_size=1,
        seed=42,
        backend="torch",
        init_device="meta",
        comm_backend=None,
        local_rank=0,
    )
    for name, cls in TRAIN_SECTIONS.items():
        assert isinstance(getattr(train, name), cls), name
    assert LegacyTrainArgs().optimizer is not train.optimizer  # default_factory, not shared


def test_root_defaults_and_train_steps() -> None:
    cfg = LegacyTrainerArgs()
    assert isinstance(cfg.model, LegacyModelArgs) and isinstance(cfg.data, LegacyDataArgs)
    assert cfg.train_steps == cfg.train.max_steps == 100
    assert LegacyTrainerArgs(train=LegacyTrainArgs(max_steps=7)).train_steps == 7
    assert "train_steps" not in {f.name for f in dataclasses.fields(LegacyTrainerArgs) if f.init}


def test_betas_default_is_tuple() -> None:
    assert LegacyOptimizerArgs().betas == (0.9, 0.999)
    assert isinstance(LegacyOptimizerArgs().betas, tuple)


# ------------------------------------------------------------------------------------------------
# Debug recipe
# ------------------------------------------------------------------------------------------------


def test_debug_recipe_exact_content() -> None:
    expected = (
        "model: {name: qwen3_5, flavor: debug}\n"
        "data: {type: dummy, max_seq_len: 64}\n"
        "train:\n"
        "  max_steps: 20\n"
        "  global_batch_size: 8\n"
        "  micro_batch_size: 2\n"
        "  seed: 42\n"
        "  init_device: meta\n"
        "  accelerator: {dp_shard: -1}\n"
        "  optimizer: {lr: 1.0e-3, lr_min: 1.0e-4, lr_warmup_ratio: 0.1, weight_decay: 0.01, max_grad_norm: 1.0}\n"
        "  checkpoint: {output_dir: outputs/debug, save_steps: 10, save_hf_weights: true}\n"
        "  logging: {log_steps: 1}\n"
        "  debug: {deterministic: true}\n"
    )
    assert DEBUG_YAML.read_text(encoding="utf-8") == expected


def test_debug_recipe_parses() -> None:
    cfg = parse_args(argv=[str(DEBUG_YAML)])
    assert isinstance(cfg, LegacyTrainerArgs)
    assert (cfg.model.name, cfg.model.flavor) == ("qwen3_5", "debug")
    assert (cfg.data.type, cfg.data.max_seq_len) == ("dummy", 64)
    t = cfg.train
    assert (t.max_steps, t.global_batch_size, t.micro_batch_size, t.seed, t.init_device) == (
        20,
        8,
        2,
        42,
        "meta",
    )
    assert cfg.train_steps == 20
    assert t.accelerator.dp_shard == -1 and t.accelerator.dp is None
    assert (t.optimizer.lr, t.optimizer.lr_min, t.optimizer.lr_warmup_ratio) == (1.0e-3, 1.0e-4, 0.1)
    assert (t.optimizer.weight_decay, t.optimizer.max_grad_norm) == (0.01, 1.0)
    assert t.optimizer.betas == (0.9, 0.999) and isinstance(t.optimizer.betas, tuple)
    assert (t.checkpoint.output_dir, t.checkpoint.save_steps, t.checkpoint.save_hf_weights) == (
        "outputs/debug",
        10,
        True,
    )
    assert t.logging.log_steps == 1
    assert t.debug.deterministic is True
    # Untouched sections keep their schema defaults.
    assert t.wandb == LegacyWandbArgs() and t.mixed_precision == LegacyMixedPrecisionArgs()
    assert t.local_rank == 0


def test_yaml_betas_list_stays_list(tmp_path: Path) -> None:
    path = _write(tmp_path, "train:\n  optimizer:\n    betas: [0.9, 0.95]\n")
    betas = parse_args(argv=[path]).train.optimizer.betas
    assert betas == [0.9, 0.95] and isinstance(betas, list)


def test_no_config_file_gives_defaults() -> None:
    cfg = parse_args(argv=[])
    assert cfg == LegacyTrainerArgs()


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n"])
def test_empty_file_is_refused(tmp_path: Path, content: str) -> None:
    # It used to give the defaults (a run of another model than meant, or an unrelated error).
    with pytest.raises(ValueError, match=r"Config file '.*' is empty .*expected a mapping with model:"):
        parse_args(argv=[_write(tmp_path, content)])


def test_no_file_gives_defaults() -> None:
    assert parse_args(argv=[]) == LegacyTrainerArgs()


def test_empty_sections_give_defaults(tmp_path: Path) -> None:
    cfg = parse_args(argv=[_write(tmp_path, "model:\ntrain:\n  optimizer:\n")])
    assert cfg == LegacyTrainerArgs()


def test_yaml_string_numbers_coerced(tmp_path: Path) -> None:
    # PyYAML reads `1e-3` (no dot) as a string; numeric fields coerce it.
    path = _write(tmp_path, "train:\n  max_steps: '30'\n  optimizer: {lr: 1e-3, max_grad_norm: 2}\n")
    cfg = parse_args(argv=[path])
    assert cfg.train.max_steps == 30 and cfg.train_steps == 30
    assert cfg.train.optimizer.lr == 1e-3
    assert cfg.train.optimizer.max_grad_norm == 2.0 and isinstance(cfg.train.optimizer.max_grad_norm, float)


def test_yaml_string_bools_coerced(tmp_path: Path) -> None:
    path = _write(tmp_path, "train:\n  debug: {deterministic: 'Yes', check_nan_inf: 'off'}\n")
    debug = parse_args(argv=[path]).train.debug
    assert debug.deterministic is True and debug.check_nan_inf is False


# ------------------------------------------------------------------------------------------------
# CLI override coercion
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "getter", "expected"),
    [
        ("--train.max_steps=5", lambda c: c.train.max_steps, 5),
        ("--train.optimizer.lr=3e-4", lambda c: c.train.optimizer.lr, 3e-4),
        ("--train.optimizer.lr=1", lambda c: c.train.optimizer.lr, 1.0),
        ("--train.accelerator.dp_shard=-1", lambda c: c.train.accelerator.dp_shard, -1),
        ("--model.name=123", lambda c: c.model.name, "123"),
        ("--data.text_key=true", lambda c: c.data.text_key, "true"),
        ("--data.template=1.5", lambda c: c.data.template, "1.5"),
        ("--train.checkpoint.output_dir=a=b", lambda c: c.train.checkpoint.output_dir, "a=b"),
        ("--train.optimizer.betas=[0.9,0.95]", lambda c: c.train.optimizer.betas, [0.9, 0.95]),
        ("--model.freeze_modules=[embed, norm]", lambda c: c.model.freeze_modules, ["embed", "norm"]),
        ("--model.tp_plan={a: colwise}", lambda c: c.model.tp_plan, {"a": "colwise"}),
        ("--model.config_overrides.rope_theta=1e6", lambda c: c.model.config_overrides, {"rope_theta": 1e6}),
        ("--model.config_overrides.tie=true", lambda c: c.model.config_overrides, {"tie": True}),
        ("--model.config_overrides.act=silu", lambda c: c.model.config_overrides, {"act": "silu"}),
        ("--model.config_overrides.n=null", lambda c: c.model.config_overrides, {"n": "null"}),
        ("--model.vocab_size=512", lambda c: c.model.vocab_size, 512),
        ("--train.logging.peak_tflops=989.5", lambda c: c.train.logging.peak_tflops, 989.5),
    ],
)
def test_cli_coercion(token: str, getter, expected) -> None:
    value = getter(parse_args(argv=[token]))
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize("spelling", ["null", "None", "NONE", "~"])
@pytest.mark.parametrize(
    ("key", "getter"),
    [
        ("train.accelerator.dp_shard", lambda c: c.train.accelerator.dp_shard),
        ("model.flavor", lambda c: c.model.flavor),
        ("train.checkpoint.load_path", lambda c: c.train.checkpoint.load_path),
        ("train.logging.peak_tflops", lambda c: c.train.logging.peak_tflops),
        ("model.freeze_modules", lambda c: c.model.freeze_modules),
    ],
)
def test_cli_optional_null(tmp_path: Path, key: str, getter, spelling: str) -> None:
    path = _write(
        tmp_path,
        "model: {flavor: debug, freeze_modules: [x]}\n"
        "train:\n  accelerator: {dp_shard: 2}\n  checkpoint: {load_path: ckpt}\n  logging: {peak_tflops: 1.0}\n",
    )
    assert getter(parse_args(argv=[path, f"--{key}={spelling}"])) is None


def test_cli_null_for_non_optional_str_is_verbatim() -> None:
    assert parse_args(argv=["--data.template=none"]).data.template == "none"


@pytest.mark.parametrize("spelling", ["true", "TRUE", "yes", "Y", "on", "1", "t"])
def test_cli_bool_true_spellings(spelling: str) -> None:
    assert parse_args(argv=[f"--train.debug.deterministic={spelling}"]).train.debug.deterministic is True


@pytest.mark.parametrize("spelling", ["false", "False", "no", "N", "OFF", "0", "f"])
def test_cli_bool_false_spellings(spelling: str) -> None:
    assert parse_args(argv=[f"--data.shuffle={spelling}"]).data.shuffle is False


@pytest.mark.parametrize("bad", ["maybe", "2", "", "truthy"])
def test_cli_bool_bad_spelling(bad: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_args(argv=[f"--data.shuffle={bad}"])
    message = str(err.value)
    assert "data.shuffle" in message
    assert "true/yes/y/on/1/t" in message and "false/no/n/off/0/f" in message


@pytest.mark.parametrize(
    ("token", "field_path", "type_name"),
    [
        ("--train.max_steps=abc", "train.max_steps", "int"),
        ("--train.max_steps=1.5", "train.max_steps", "int"),
        ("--train.max_steps=true", "train.max_steps", "int"),
        ("--train.optimizer.lr=fast", "train.optimizer.lr", "float"),
        ("--train.accelerator.dp_shard=auto", "train.accelerator.dp_shard", "int"),
    ],
)
def test_cli_wrong_type(token: str, field_path: str, type_name: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_args(argv=[token])
    assert field_path in str(err.value) and type_name in str(err.value)


def test_cli_bad_yaml_list_value() -> None:
    with pytest.raises(ValueError, match=r"train\.optimizer\.betas"):
        parse_args(argv=["--train.optimizer.betas=[0.9,"])


def test_cli_list_field_given_scalar() -> None:
    with pytest.raises(ValueError, match=r"model\.freeze_modules.*list"):
        parse_args(argv=["--model.freeze_modules=embed"])


def test_cli_section_as_yaml_mapping() -> None:
    cfg = parse_args(argv=["--train.optimizer={lr: 0.5, eps: 1.0e-6}"])
    assert (cfg.train.optimizer.lr, cfg.train.optimizer.eps) == (0.5, 1e-6)
    assert cfg.train.optimizer.weight_decay == 0.01


def test_cli_local_rank_tokens_ignored() -> None:
    cfg = parse_args(argv=["--local-rank=3", "--local_rank=3", "--train.seed=7"])
    assert cfg.train.seed == 7 and cfg.train.local_rank == 0


@pytest.mark.parametrize(
    "token",
    [
        "--train.max_steps",
        "train.max_steps=3",
        "-train.max_steps=3",
        "--=3",
        "--train..max_steps=3",
        "--.x=1",
    ],
)
def test_cli_malformed_token(tmp_path: Path, token: str) -> None:
    path = _write(tmp_path, "train: {seed: 1}\n")
    with pytest.raises(ValueError) as err:
        parse_args(argv=[path, "--train.seed=2", token])
    message = str(err.value)
    assert repr(token) in message
    assert "--dotted.key=value" in message


def test_cli_conflicting_overrides() -> None:
    with pytest.raises(ValueError, match=r"'train\.optimizer'"):
        parse_args(argv=["--train.optimizer=3", "--train.optimizer.lr=1"])


def test_cli_later_override_wins() -> None:
    assert parse_args(argv=["--train.seed=1", "--train.seed=2"]).train.seed == 2


# ------------------------------------------------------------------------------------------------
# Merge, validation, environment
# ------------------------------------------------------------------------------------------------


def test_deep_merge_cli_over_yaml(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "train:\n  max_steps: 20\n  optimizer: {lr: 1.0e-3, weight_decay: 0.5}\n"
        "model:\n  config_overrides: {a: 1, b: 2}\n",
    )
    cfg = parse_args(argv=[path, "--train.optimizer.lr=0.25", "--model.config_overrides.b=3"])
    assert cfg.train.optimizer.lr == 0.25
    assert cfg.train.optimizer.weight_decay == 0.5  # sibling kept
    assert cfg.train.max_steps == 20 and cfg.train_steps == 20
    assert cfg.model.config_overrides == {"a": 1, "b": 3}


def test_cli_override_order_independent_of_file_position(tmp_path: Path) -> None:
    path = _write(tmp_path, "train: {max_steps: 20}\n")
    cfg = parse_args(argv=["--train.max_steps=9", path])
    assert cfg.train.max_steps == 9 and cfg.train_steps == 9


def test_forbidden_top_level_keys_listed_with_hints(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "model: {}\nparallel: {tp: 2}\noptim: {lr: 1}\nmemory: {}\nprofiler: {}\nruntime: {}\nseed: 1\n"
        "mixed_precision: {}\ncheckpoint: {}\nlogging: {}\ntensorboard: {}\nwandb: {}\n"
        "memory_monitor: {}\nmoe_monitor: {}\neval: {}\ndebug: {}\nbogus: 1\n",
    )
    with pytest.raises(ValueError) as err:
        parse_args(argv=[path, "--alsobad.x=1"])
    message = str(err.value)
    expected_hints = {
        "parallel": "train.accelerator",
        "optim": "train.optimizer",
        "memory": "train.gradient_checkpointing",
        "profiler": "train.profile",
        "runtime": "train (flatten init_device / backend / comm_backend)",
        "seed": "train.seed",
        "mixed_precision": "train.mixed_precision",
        "checkpoint": "train.checkpoint",
        "logging": "train.logging",
        "tensorboard": "train.tensorboard",
        "wandb": "train.wandb",
        "memory_monitor": "train.memory_monitor",
        "moe_monitor": "train.moe_monitor",
        "eval": "train.eval",
        "debug": "train.debug",
    }
    for key, hint in expected_hints.items():
        assert f"'{key}': moved to '{hint}'" in message, key
    assert "'bogus': not allowed" in message
    assert "'alsobad': not allowed" in message
    assert "'model'" in message and "'data'" in message and "'train'" in message


def test_forbidden_top_level_key_from_cli_only() -> None:
    with pytest.raises(ValueError, match=r"optim.*train\.optimizer"):
        parse_args(argv=["--optim.lr=1"])


def test_local_rank_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOCAL_RANK", "3")
    path = _write(tmp_path, "train: {local_rank: 7}\n")
    assert parse_args(argv=[path, "--train.local_rank=9"]).train.local_rank == 3
    assert parse_args(argv=[]).train.local_rank == 3


def test_local_rank_env_not_int(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "x")
    with pytest.raises(ValueError, match="LOCAL_RANK"):
        parse_args(argv=[])


def test_unknown_nested_key_warns_with_match(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _write(tmp_path, "train:\n  optimizer: {lrr: 0.5, weight_decay: 0.2}\n  zzzz_unrelated: 1\n")
    with caplog.at_level(logging.WARNING, logger=CONFIG_LOGGER):
        cfg = parse_args(argv=[path])
    assert cfg.train.optimizer.lr == 1e-4  # unknown key ignored
    assert cfg.train.optimizer.weight_decay == 0.2
    messages = [r.getMessage() for r in caplog.records if r.name == CONFIG_LOGGER]
    lrr = [m for m in messages if "lrr" in m]
    assert len(lrr) == 1
    assert (
        "train.optimizer.lrr" in lrr[0] and "LegacyOptimizerArgs" in lrr[0] and "did you mean 'lr'?" in lrr[0]
    )
    other = [m for m in messages if "zzzz_unrelated" in m]
    assert len(other) == 1 and "LegacyTrainArgs" in other[0] and "did you mean" not in other[0]


@pytest.mark.parametrize(
    ("token", "match"),
    [
        ("--train.max_step=3", r"'train\.max_step' .*LegacyTrainArgs\); did you mean 'train\.max_steps'\?"),
        ("--train.optimizer.lrr=3", r"'train\.optimizer\.lrr' .*did you mean 'train\.optimizer\.lr'\?"),
        ("--train.optimizer={lrr: 1}", r"'train\.optimizer\.lrr' .*did you mean 'train\.optimizer\.lr'\?"),
        ("--train.max_steps.x=1", r"'train\.max_steps\.x' .*'train\.max_steps' is a value, not a section"),
        ("--data.zzz=1", r"'data\.zzz' .*not a field of LegacyDataArgs\); fields: type, "),
    ],
)
def test_unknown_nested_key_from_cli_is_an_error(token: str, match: str) -> None:
    # It used to warn and run with the default (a typo trained 100 steps instead of 3).
    with pytest.raises(ValueError, match=match):
        parse_args(argv=[token])


def test_free_form_mapping_fields_take_any_key_from_cli() -> None:
    assert parse_args(argv=["--model.config_overrides.any_name=1"]).model.config_overrides == {"any_name": 1}


def test_unknown_nested_key_from_yaml_still_warns(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    with caplog.at_level(logging.WARNING, logger=CONFIG_LOGGER):
        cfg = parse_args(argv=[_write(tmp_path, "train: {max_step: 3}\n")])
    assert cfg.train.max_steps == 100
    assert any("did you mean 'max_steps'?" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------------------------------------
# File errors and wrong types in YAML
# ------------------------------------------------------------------------------------------------


def test_missing_config_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(FileNotFoundError, match="nope.yaml"):
        parse_args(argv=[missing])


def test_malformed_yaml_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "train: {max_steps: 3\n  bad: [\n", name="broken.yaml")
    with pytest.raises(ValueError, match="broken.yaml"):
        parse_args(argv=[path])


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_non_mapping_top_level(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, text, name="list.yaml")
    with pytest.raises(ValueError, match=r"list\.yaml.*mapping"):
        parse_args(argv=[path])


@pytest.mark.parametrize(
    ("text", "field_path", "expected"),
    [
        ("train: {max_steps: abc}\n", "train.max_steps", "int"),
        ("train: {max_steps: 2.5}\n", "train.max_steps", "int"),
        ("train: {max_steps: null}\n", "train.max_steps", "int"),
        ("train: {optimizer: {eps: tiny}}\n", "train.optimizer.eps", "float"),
        ("data: {shuffle: maybe}\n", "data.shuffle", "bool"),
        ("data: {shuffle: 3}\n", "data.shuffle", "bool"),
        ("model: {freeze_modules: embed}\n", "model.freeze_modules", "list"),
        ("model: {config_overrides: [1]}\n", "model.config_overrides", "mapping"),
        ("train: {optimizer: 3}\n", "train.optimizer", "mapping"),
        ("train: 5\n", "train", "mapping"),
    ],
)
def test_yaml_wrong_type(tmp_path: Path, text: str, field_path: str, expected: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_args(argv=[_write(tmp_path, text)])
    assert f"'{field_path}'" in str(err.value) and expected in str(err.value)


# ------------------------------------------------------------------------------------------------
# Helpers for W&B and the legacy -> new mapping
# ------------------------------------------------------------------------------------------------


def test_config_to_dict() -> None:
    cfg = parse_args(argv=[str(DEBUG_YAML)])
    data = config_to_dict(cfg)
    assert data["train"]["optimizer"]["betas"] == [0.9, 0.999]
    assert data["train"]["max_steps"] == 20 and data["train_steps"] == 20
    assert data["model"]["flavor"] == "debug"
    assert data["train"]["accelerator"]["dp_shard"] == -1

    def no_tuples(value) -> bool:
        if isinstance(value, dict):
            return all(no_tuples(v) for v in value.values())
        if isinstance(value, list):
            return all(no_tuples(v) for v in value)
        return not isinstance(value, tuple)

    assert no_tuples(data)


def test_legacy_field_paths() -> None:
    paths = legacy_field_paths()
    assert paths == sorted(paths) and len(paths) == len(set(paths))
    assert "train.optimizer.lr" in paths
    assert "train.optimizer.betas" in paths
    assert "model.config_overrides" in paths
    assert "train.local_rank" in paths
    assert "train_steps" not in paths
    assert not any(p in ("train", "train.optimizer", "model", "data") for p in paths)
    expected = [f"model.{n}" for n in EXPECTED_DEFAULTS[LegacyModelArgs]]
    expected += [f"data.{n}" for n in EXPECTED_DEFAULTS[LegacyDataArgs]]
    expected += [
        "train.max_steps",
        "train.num_train_epochs",
        "train.global_batch_size",
        "train.micro_batch_size",
        "train.seed",
        "train.backend",
        "train.init_device",
        "train.comm_backend",
        "train.local_rank",
    ]
    for section, cls in TRAIN_SECTIONS.items():
        expected += [f"train.{section}.{n}" for n in EXPECTED_DEFAULTS[cls]]
    assert paths == sorted(expected)


def test_quoted_override_with_spaces_is_not_the_config_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "train: {seed: 3}\n")
    cfg = parse_args(argv=["--train.optimizer.betas=[0.8, 0.9]", path])
    assert cfg.train.seed == 3 and cfg.train.optimizer.betas == [0.8, 0.9]


def test_second_positional_is_malformed(tmp_path: Path) -> None:
    path = _write(tmp_path, "train: {seed: 3}\n")
    with pytest.raises(ValueError, match=r"'extra\.yaml'.*--dotted\.key=value"):
        parse_args(argv=[path, "extra.yaml"])


def test_argv_defaults_to_sys_argv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", ["train_lm.py", str(DEBUG_YAML), "--train.max_steps=4"])
    cfg = parse_args()
    assert cfg.model.flavor == "debug" and cfg.train_steps == 4


def test_yaml_bare_off_in_str_field_is_kept(tmp_path: Path) -> None:
    """YAML reads a bare ``off`` as False; the activation-checkpoint switch accepts it."""
    path = tmp_path / "ac.yaml"
    path.write_text("train: {gradient_checkpointing: {activation_checkpoint: off}}\n")
    args = parse_args(argv=[str(path)])
    assert args.train.gradient_checkpointing.activation_checkpoint is False


# ------------------------------------------------------------------------------------------------
# Values that wreck a run (each used to be accepted: a run with another meaning, or NaN losses)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "match"),
    [
        (
            "--train.optimizer.loss_aggregation=bogus",
            r"'train\.optimizer\.loss_aggregation': expected one of 'token_weighted', 'rank_average', got 'bogus'",
        ),
        ("--train.optimizer.type=sgd", r"'train\.optimizer\.type': expected one of 'adamw', got 'sgd'"),
        (
            "--train.optimizer.lr_decay_style=linear",
            r"'train\.optimizer\.lr_decay_style': expected one of 'cosine', 'constant', got 'linear'",
        ),
        (
            "--train.gradient_checkpointing.activation_checkpoint=selective",
            r"'train\.gradient_checkpointing\.activation_checkpoint': expected one of .*'full'.*got 'selective'",
        ),
        (
            "--train.mixed_precision.param_dtype=int8",
            r"'train\.mixed_precision\.param_dtype': expected one of 'bfloat16', .*got 'int8'",
        ),
        (
            "--train.mixed_precision.output_dtype=half",
            r"'train\.mixed_precision\.output_dtype': expected one of .*got 'half'",
        ),
        (
            "--train.optimizer.lr_warmup_ratio=5",
            r"'train\.optimizer\.lr_warmup_ratio': expected a fraction of train\.max_steps in \[0, 1\], got 5\.0",
        ),
        ("--train.optimizer.lr_warmup_ratio=1.0000001", r"'train\.optimizer\.lr_warmup_ratio'"),
        (
            "--train.optimizer.lr_min=0.01",
            r"'train\.optimizer\.lr_min': expected a number <= train\.optimizer\.lr=0\.0001 .*got 0\.01",
        ),
        ("--data.max_seq_len=1", r"'data\.max_seq_len': expected an int >= 2, got 1"),
    ],
)
def test_values_that_wreck_a_run_are_refused(token: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_args(argv=[token])


@pytest.mark.parametrize(
    "tokens",
    [
        ["--train.optimizer.lr_warmup_ratio=1", "--train.optimizer.lr_warmup_ratio=0"],
        ["--train.optimizer.lr_min=1e-4"],  # == lr
        ["--train.optimizer.lr=0", "--train.optimizer.lr_min=1e-3"],  # lr 0: the schedule stays at 0
        ["--train.gradient_checkpointing.activation_checkpoint=FULL"],
        ["--train.gradient_checkpointing.activation_checkpoint=none"],
        ["--train.mixed_precision.param_dtype=BF16", "--train.optimizer.type=AdamW"],
        ["--train.optimizer.lr_decay_style=constant", "--data.max_seq_len=2"],
    ],
)
def test_the_edges_of_those_ranges_are_accepted(tokens: list[str]) -> None:
    parse_args(argv=tokens)


def test_run_checks_off_lets_the_builders_see_any_value() -> None:
    # The parity harness pins the LR builder on the whole range it accepts (legacy_driver).
    argv = ["--train.optimizer.lr_warmup_ratio=1.5", "--train.optimizer.lr_decay_style=linear"]
    args = parse_args(argv=argv, run_checks=False)
    assert (args.train.optimizer.lr_warmup_ratio, args.train.optimizer.lr_decay_style) == (1.5, "linear")
    with pytest.raises(ValueError, match="lr_decay_style"):
        parse_args(argv=argv)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (
            "train: {max_steps: 3}\nmodel: {name: qwen3_5}\ntrain: {seed: 1}\n",
            r"key 'train' is given twice .*\(line 1 and line 3\)",
        ),
        (
            "train:\n  optimizer:\n    lr: 1.0e-3\n    lr: 1.0e-2\n",
            r"key 'lr' is given twice .*\(line 3 and line 4\)",
        ),
        ("train: {seed: 1, seed: 2}\n", r"key 'seed' is given twice"),
    ],
)
def test_duplicate_yaml_keys_are_refused(tmp_path: Path, content: str, match: str) -> None:
    with pytest.raises(ValueError, match=r"Config file '.*cfg\.yaml': " + match):
        parse_args(argv=[_write(tmp_path, content)])


def test_duplicate_keys_in_a_cli_mapping_are_refused() -> None:
    with pytest.raises(ValueError, match=r"'train\.optimizer': key 'lr' is given twice"):
        parse_args(argv=["--train.optimizer={lr: 1, lr: 2}"])


def test_yaml_merge_keys_may_repeat_a_merged_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "train:\n  optimizer:\n    <<: {lr: 1.0e-3, eps: 1.0e-6}\n    lr: 2.0e-3\n")
    assert parse_args(argv=[path]).train.optimizer.lr == 2e-3
