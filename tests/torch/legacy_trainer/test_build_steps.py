"""Unit tests of individual legacy build steps: LR lambda, AdamW groups, ParallelDims."""

from __future__ import annotations

import math
from types import SimpleNamespace as NS

import pytest
import torch
from torch import nn

from hyper_parallel.trainer.base import BaseTrainer, TrainerState
from hyper_parallel.trainer.parallel_dims import ParallelDims


def _bare_trainer(optimizer_cfg, max_steps=20, model=None):
    trainer = BaseTrainer.__new__(BaseTrainer)
    trainer.args = NS(train=NS(optimizer=optimizer_cfg))
    trainer.state = TrainerState(max_steps=max_steps)
    trainer.model = model
    return trainer


def _lr_curve(ratio=0.1, style="cosine", lr=1e-3, lr_min=1e-4, total=20, steps=25):
    trainer = _bare_trainer(NS(lr=lr, lr_min=lr_min, lr_warmup_ratio=ratio, lr_decay_style=style), total)
    trainer.optimizer = torch.optim.AdamW([nn.Parameter(torch.zeros(1))], lr=lr)
    trainer._build_lr_scheduler()
    curve = [trainer.lr_scheduler.get_last_lr()[0]]
    for _ in range(steps):
        trainer.optimizer.step()
        trainer.lr_scheduler.step()
        curve.append(trainer.lr_scheduler.get_last_lr()[0])
    return curve


def test_lr_first_step_is_zero_and_warmup_uses_ceil():
    curve = _lr_curve(ratio=0.1, total=20)  # W = ceil(2.0) = 2
    assert curve[0] == 0.0
    assert curve[1] == 1e-3 * (1 / 2)
    assert curve[2] == 1e-3  # cosine at progress 0
    curve = _lr_curve(ratio=0.11, total=20)  # W = ceil(2.2) = 3, floor would give 2
    assert curve[2] == 1e-3 * (2 / 3)


def test_lr_cosine_reaches_lr_min_at_T_and_rises_after():
    curve = _lr_curve(ratio=0.1, total=20, steps=25)
    assert math.isclose(curve[20], 1e-4, rel_tol=0, abs_tol=1e-18)
    assert curve[21] > curve[20]  # no clamp past T


def test_lr_constant_and_unknown_styles():
    constant = _lr_curve(style="constant")
    assert constant[5:] == [1e-3] * (len(constant) - 5)
    assert _lr_curve(style="linear") == _lr_curve(style="cosine")  # only "constant" is special-cased


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(8, 4)
        self.proj = nn.Linear(4, 4, bias=True)
        self.input_layernorm = nn.Parameter(torch.ones(4))
        self.frozen = nn.Linear(4, 4, bias=False)
        self.frozen.weight.requires_grad_(False)
        self.head = nn.Linear(4, 8, bias=False)
        self.head.weight = self.embed.weight  # tied


def test_adamw_two_groups_with_tied_dedup_and_frozen_skip():
    model = _Tied()
    trainer = _bare_trainer(NS(lr=1e-3, weight_decay=0.05, eps=1e-7, betas=[0.8, 0.9]), model=model)
    trainer._build_optimizer()
    opt = trainer.optimizer
    assert isinstance(opt, torch.optim.AdamW)
    decay, no_decay = opt.param_groups
    assert [id(p) for p in decay["params"]] == [id(model.embed.weight), id(model.proj.weight)]
    # own parameters come before children in named_parameters()
    assert [id(p) for p in no_decay["params"]] == [id(model.input_layernorm), id(model.proj.bias)]
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert decay["betas"] == (0.8, 0.9) and isinstance(decay["betas"], tuple)
    assert decay["eps"] == 1e-7 and decay["foreach"] is None and not decay.get("fused")


def test_adamw_empty_group_still_present():
    model = nn.Linear(2, 2, bias=False)
    trainer = _bare_trainer(NS(lr=1e-3, weight_decay=0.01, eps=1e-8, betas=(0.9, 0.999)), model=model)
    trainer._build_optimizer()
    assert [len(g["params"]) for g in trainer.optimizer.param_groups] == [1, 0]


@pytest.mark.parametrize(
    ("acc", "world", "message"),
    [
        (NS(tp=0), 1, "train.accelerator.tp must be an integer >= 1"),
        (NS(dp_shard=0), 1, "dp_shard must be -1"),
        (NS(dp_shard=None), 2, "Set train.accelerator.dp_shard=-1 to auto-infer"),
        (NS(dp_shard=-1, tp=3), 4, "not divisible"),
        (NS(dp_shard=2, tp=2), 2, "= 4 != world size 2"),
    ],
)
def test_parallel_dims_validation_messages(acc, world, message):
    with pytest.raises(ValueError, match=message):
        ParallelDims.from_config(acc, world_size=world)


def test_parallel_dims_auto_fill_and_legacy_dp():
    dims = ParallelDims.from_config(NS(dp_shard=-1, tp=2), world_size=8)
    assert (dims.dp_shard, dims.dp_size, dims.non_dp_size) == (4, 4, 2)
    assert dims.summary() == "dp_replicate=1 dp_shard=4 cp=1 tp=2 pp=1 ep=1 etp=2 | dp=4 world=8"
    assert ParallelDims.from_config(NS(dp=2), world_size=2).dp_shard == 2
    with pytest.raises(NotImplementedError):
        ParallelDims.from_config(NS(dp_shard=1, pp=2), world_size=2)


def test_validate_against_model_names_field():
    dims = ParallelDims(tp=2, dp_shard=1, world_size=2)
    model = NS(config=NS(num_attention_heads=3, num_key_value_heads=2))
    with pytest.raises(ValueError, match="model.num_attention_heads=3"):
        dims.validate_against_model(model, seq_len=64)


def test_corrupt_dcp_weights_folder_is_a_runtime_error(tmp_path):
    """DCP raises CheckpointException (a BaseException): it must still become the promised RuntimeError."""
    from tests.torch.ut.components._legacy import bare_trainer, debug_model, legacy_args

    folder = tmp_path / "weights"
    folder.mkdir()
    (folder / ".metadata").write_bytes(b"not a pickle")
    trainer = bare_trainer(legacy_args(), model=debug_model())
    with pytest.raises(RuntimeError, match=f"Failed to load weights from {folder}"):
        trainer._load_weights(str(folder))
